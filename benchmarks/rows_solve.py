"""The flow metrics of a comparison row, one by one, beside the package before issue 45's
rows-solve work: ``all_to_all`` (the certified max-concurrent-flow), ``any_traffic`` (the
two-phase rate), ``bisection`` and ``all_reduce`` (the collective bounds), in CPU seconds,
on the slowest designs of ``topologies/``, each computed as a row computes it (in the row's
order, inside one ``unchanged`` block, so what one metric reads the next shares).

``python benchmarks/run.py --only rows-solve`` runs each design in a fresh process, the
package of this checkout then the one of :data:`BEFORE_ROWS_SOLVE` (``git archive``), and
keeps the fewest CPU seconds of :data:`REPEATS` rows of each metric (each row on a fresh
build: the machine is shared, and CPU seconds move with what runs beside them). Each case
also reports a digest of the four metrics' columns as ``results.csv`` writes them (six
significant digits), so that a row says whether the package before gave the same answers,
and the whole row as ``fabricopt compare`` runs it (``study.compare._evaluate``: build,
validation and the default metrics), its CPU seconds and its own ``seconds`` column; then
the same row in a worker of the package's own process pool (``study.local_pool``, as
``fabricopt compare -j 2`` runs it): its CPU seconds, the part spent in the kernel and the
page faults it took.
"""

from __future__ import annotations

import gc
import hashlib
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: The commit before this work (the tree the rows engineer of issue 45 point 3 started
#: from this session; the ones before that, 0538ff1 and 8d80f81).
BEFORE_ROWS_SOLVE = "55b4520"

#: Rows per design; the fewest CPU seconds of each metric are kept.
REPEATS = 3

#: The slowest rows of ``fabricopt compare topologies/`` (their ``seconds`` column): a file,
#: and the point of a sweep (0 for a single design).
DESIGNS = (("topologies/alibaba-hpn-dual-plane.toml", 0),
           ("topologies/meta-24k-roce.toml", 0),
           ("topologies/dgx-h100-superpod-rail-only-16k.toml", 0),
           ("topologies/dgx-h100-superpod-16su.toml", 0),
           ("topologies/rail-oversubscription-3su-sweep.toml", 0),
           ("topologies/rail-oversubscription-3su-sweep.toml", 1))

#: The metrics timed, in a row's order; ``summary`` runs first, untimed, as in a row.
FLOW_METRICS = ("all_to_all", "any_traffic", "bisection", "all_reduce")

#: Issue 45's target for each of them on such a row (CPU seconds).
TARGET_S = 0.25

#: And for the whole row (CPU seconds, one thread): a row's ``seconds`` column (wall) is
#: to stay at or under 2 s on a quiet machine, and a row is some 0.1-0.2 s more wall than
#: CPU there.
ROW_TARGET_S = 1.6


def _cell(value) -> str:
    """A value as ``results.csv`` writes it (study/table.py's ``_cell``)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def _row(build: Callable) -> tuple[dict[str, float], dict]:
    """CPU seconds of each flow metric of one row, and the row's columns."""
    from fabricopt._gc import frozen_gc, paused_gc
    from fabricopt._unchanged import unchanged
    from fabricopt.study import metrics

    with paused_gc():
        fab = build()
    seconds: dict[str, float] = {}
    row: dict = {}
    with frozen_gc(), unchanged(fab):
        fab.validate()
        ctx = metrics.MetricContext()
        row.update(metrics.METRICS["summary"].compute(fab, ctx))
        for name in FLOW_METRICS:
            start = time.process_time()
            # As a row computes it (compute_metrics: each package's own collector handling).
            metrics.compute_metrics(fab, [name], ctx, row)
            seconds[name] = time.process_time() - start
    del fab
    gc.collect()
    return seconds, row


def _whole_row(path: str, point: int) -> tuple[float, float]:
    """CPU seconds of one whole row of ``fabricopt compare`` (``study.compare._evaluate``:
    the build, validation and the default metrics, one thread), and the row's own
    ``seconds`` column (wall)."""
    import importlib

    compare = importlib.import_module("fabricopt.study.compare")  # the module, not compare()
    task = compare._tasks_of_file(path)[point]  # as compare reads the file (sweep points)
    job = compare._Job(task=task, metrics=tuple(compare.DEFAULT_METRICS),
                       message_bytes=2.0**30, key="bench", cap_threads=True)
    start = time.process_time()
    row = compare._evaluate(job)
    cpu = time.process_time() - start
    assert not row["error"], row["error"]
    gc.collect()
    return cpu, row["seconds"]


def _pooled_row(path: str, point: int) -> tuple[float, float, int, float]:
    """In a pool worker: one whole row (as :func:`_whole_row`), its CPU seconds, system CPU
    seconds, minor page faults and ``seconds`` column."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.process_time()
    cpu, wall = _whole_row(path, point)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (time.process_time() - start, after.ru_stime - before.ru_stime,
            after.ru_minflt - before.ru_minflt, wall)


def _pool_rows(path: str, point: int, plain: bool = False) -> tuple[float, float, int, float]:
    """:data:`REPEATS` rows in one worker of the package's own process pool (the first
    included, as a worker of ``compare -j`` meets it), or of a plain one (``plain``: glibc's
    heap as it starts): the fewest CPU seconds, system seconds, page faults and ``seconds``
    column of them."""
    import concurrent.futures

    from fabricopt.study.local_pool import process_pool

    with (concurrent.futures.ProcessPoolExecutor(1) if plain else process_pool(1)) as pool:
        got = [pool.submit(_pooled_row, path, point).result() for _ in range(REPEATS)]
    return tuple(min(column) for column in zip(*got, strict=True))  # type: ignore[return-value]


def case_rows_solve(tree: str, path: str, point: int) -> dict:
    """Per-metric CPU seconds of the row of ``path`` (its sweep point ``point``), the
    package imported from ``tree`` (empty: this checkout's); the fewest of :data:`REPEATS`
    rows of each metric."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, tree or str(root))
    import scipy.optimize  # noqa: F401  (both packages solve with it; loaded before the timer)

    import fabricopt as fo
    from fabricopt.io.design_files import load_design

    assert fo.__file__.startswith(tree or str(root)), fo.__file__

    def build():
        got = load_design(str(root / path))
        return got[point] if isinstance(got, list) else got

    best: dict[str, float] = {}
    row: dict = {}
    for _ in range(REPEATS):
        seconds, row = _row(build)
        best = {m: min(best.get(m, float("inf")), s) for m, s in seconds.items()}
    wholes = [_whole_row(str(root / path), point) for _ in range(REPEATS)]
    row_cpu, row_wall = min(c for c, _ in wholes), min(w for _, w in wholes)
    pool_cpu, pool_sys, pool_faults, pool_wall = _pool_rows(str(root / path), point)
    plain = _pool_rows(str(root / path), point, plain=True)
    columns = sorted((k, _cell(v)) for k, v in row.items()
                     if k.startswith(("all_to_all", "any_traffic", "bisection", "all_reduce",
                                      "binding_tier", "full_bisection")))
    digest = hashlib.sha256(repr(columns).encode()).hexdigest()[:10]
    parts = ", ".join(f"{m} {s:.3f}" for m, s in best.items())
    return {"seconds": sum(best.values()), "parts": best, "digest": digest,
            "row_cpu": row_cpu, "row_wall": row_wall, "pool_cpu": pool_cpu,
            "value": f"{parts} s CPU; whole row {row_cpu:.2f} s CPU, seconds column "
                     f"{row_wall:.2f}; in a pool worker {pool_cpu:.2f} s CPU ({pool_sys:.2f} "
                     f"system, {pool_faults:,} page faults), seconds column "
                     f"{pool_wall:.2f}; in a plain pool's worker {plain[0]:.2f} s CPU "
                     f"({plain[1]:.2f} system, {plain[2]:,} page faults), seconds column "
                     f"{plain[3]:.2f}; columns {digest}; load {os.getloadavg()[0]:.1f}"}


def rows_solve_rows(rows: list, quick: bool, run_case: Callable[..., dict],
                    package_at: Callable[[str], str]) -> None:
    """Each design beside the package of :data:`BEFORE_ROWS_SOLVE` (same run, fresh
    processes, alternating)."""
    before = package_at(BEFORE_ROWS_SOLVE)
    for path, point in DESIGNS[:2] if quick else DESIGNS:
        now = run_case("case_rows_solve", "", path, point)
        name = Path(path).stem + (f" [point {point}]" if "sweep" in path else "")
        missed = [f"{m} {s:.2f}" for m, s in now.get("parts", {}).items() if s > TARGET_S]
        if now.get("row_cpu", 0.0) > ROW_TARGET_S:
            missed.append(f"row {now['row_cpu']:.2f}")
        verdict = "met" if not missed else "not met (" + ", ".join(missed) + ")"
        rows.append((name, now, f"each flow metric <= {TARGET_S:g} s CPU, the whole row "
                     f"<= {ROW_TARGET_S:g}", verdict))
        if before:
            was = run_case("case_rows_solve", before, path, point)
            same = ("same columns" if was.get("digest") == now.get("digest") else
                    "DIFFERENT columns")
            pooled = (f", in a pool worker {now['pool_cpu'] / was['pool_cpu']:.2f}"
                      if now.get("pool_cpu") and was.get("pool_cpu") else "")
            ratio = (f"now/before {now['seconds'] / was['seconds']:.2f} (whole row "
                     f"{now['row_cpu'] / was['row_cpu']:.2f}{pooled}), {same}"
                     if was.get("seconds") and was.get("row_cpu") else same)
            rows.append((f"  before ({BEFORE_ROWS_SOLVE})", was, ratio, ""))
