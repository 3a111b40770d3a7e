"""What every fresh process pays before it does anything: ``import fabricopt`` and
``fabricopt --help``, beside the package before the heavy imports were deferred.

``python benchmarks/run.py --only import`` runs each command five times in fresh processes
(the package from this checkout, then from ``git archive`` of :data:`BEFORE_IMPORT`) and keeps
the fastest wall and CPU seconds. Each is measured twice: as this environment runs it (with
``PYTHONDONTWRITEBYTECODE`` set, every process compiles the package's modules again) and with
the bytecode cached in a temporary folder, as an installed package runs.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: The commit before scipy.optimize moved into the functions that solve with it.
BEFORE_IMPORT = "b7a1227"

#: Fresh processes per measurement; the fastest is kept (the machine is shared).
REPEATS = 5

COMMANDS = {"import fabricopt": ["-c", "import fabricopt"],
            "fabricopt --help": ["-m", "fabricopt", "--help"]}


def case_import(command: str, tree: str, cached: bool) -> dict:
    """The fastest of :data:`REPEATS` runs of ``command`` (a key of :data:`COMMANDS`) with the
    package from ``tree`` (empty: this checkout's), bytecode ``cached`` or compiled each time:
    wall seconds, and CPU seconds in the value."""
    tree = tree or str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=tree)
    cache = tempfile.mkdtemp(prefix="fabricopt-pyc-") if cached else ""
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    walls, cpus = [], []
    try:
        for _ in range(REPEATS + int(cached)):  # a cached run's first process writes the cache
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, *COMMANDS[command]], env=env, cwd=tempfile.gettempdir(),
                           check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    walls, cpus = walls[int(cached):], cpus[int(cached):]
    return {"seconds": min(walls),
            "value": f"best of {REPEATS}: {min(cpus):.2f} s CPU "
                     f"(median wall {sorted(walls)[REPEATS // 2]:.2f} s), "
                     f"load {os.getloadavg()[0]:.1f}"}


def import_rows(rows: list, quick: bool, run_case: Callable[..., dict],
                package_at: Callable[[str], str]) -> None:
    """Each command, compiled and cached, beside the package of :data:`BEFORE_IMPORT`."""
    before = package_at(BEFORE_IMPORT)
    for command in COMMANDS:
        for cached in (False, True):
            how = "bytecode cached" if cached else "compiled each process"
            rows.append((f"{command} ({how})", run_case("case_import", command, "", cached),
                         "", ""))
            if before:
                rows.append((f"  before ({BEFORE_IMPORT})",
                             run_case("case_import", command, before, cached), "", ""))
