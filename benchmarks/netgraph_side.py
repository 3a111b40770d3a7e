"""The NetGraph side of the table: its ``MaximumSupportedDemand`` search on the same fabric.

NetGraph (``pip install 'fabricopt[bench]'``) finds the largest multiplier alpha at which a
demand set still places fully, by bracketing and bisection over placements. The fabric goes
to it as a scenario: every node by name, every link once with its capacity (NetGraph links
carry both directions), and one pairwise demand set over the GPUs.
"""

from __future__ import annotations

import re
import time


def scenario_yaml(fab) -> str:
    """The NetGraph scenario of ``fab`` with uniform pairwise all-to-all over its GPUs."""
    import yaml

    name = {v: re.sub(r"[^A-Za-z0-9_]", "_", str(v)) for v in fab.graph}
    eps = set(fab.endpoints)
    nodes = {name[v]: {"attrs": {"role": "gpu" if v in eps else "switch"}} for v in fab.graph}
    links, seen = [], set()
    for u, v, d in fab.graph.edges(data=True):
        if frozenset((u, v)) in seen:
            continue
        seen.add(frozenset((u, v)))
        links.append({"source": name[u], "target": name[v], "capacity": float(d["capacity"]),
                      "cost": 1})
    gpus = "^(" + "|".join(re.escape(name[e]) for e in fab.endpoints) + ")$"
    # A pairwise demand's volume is shared by its pairs: 1 Gb/s per ordered pair, so alpha
    # reads as fabricopt's theta of all_to_all (tiny volumes fall under NetGraph's tolerance).
    n = len(fab.endpoints)
    doc = {"network": {"nodes": nodes, "links": links},
           "demands": {"default": [{"source": gpus, "target": gpus,
                                    "volume": float(n * (n - 1)), "mode": "pairwise"}]},
           "workflow": [{"type": "MaximumSupportedDemand", "name": "msd",
                         "demand_set": "default"}]}
    return yaml.safe_dump(doc)


def stop_after(seconds: float | None) -> None:
    """Raise :class:`TimeoutError` in this process ``seconds`` from now (None: never): armed
    when NetGraph's own clock starts, so that building the fabric and importing do not count
    against its limit."""
    import signal

    def stop(signum, frame):
        raise TimeoutError(f"stopped after {seconds:g} s of its own run")

    if seconds is not None:
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def netgraph_msd(fab, limit: float | None = None) -> tuple[float, float]:
    """``(alpha_star, seconds)`` of NetGraph's search on ``fab``: its scenario read from the
    YAML text and run (the text is written before the clock starts: writing it is this
    side's translation, not NetGraph's work); stopped after ``limit`` seconds of it."""
    from ngraph.scenario import Scenario

    text = scenario_yaml(fab)
    start = time.perf_counter()
    stop_after(limit)
    scenario = Scenario.from_yaml(text)
    scenario.run()
    alpha = scenario.results.to_dict()["steps"]["msd"]["data"]["alpha_star"]
    return float(alpha), time.perf_counter() - start


#: What a fresh NetGraph process runs on a scenario file: import, read, search.
NETGRAPH_FRESH = ("import sys\nfrom ngraph.scenario import Scenario\n"
                  "s = Scenario.from_yaml(open(sys.argv[1]).read())\ns.run()\n"
                  "print(s.results.to_dict()['steps']['msd']['data']['alpha_star'])\n")


def fresh_seconds(code: str, *args: str) -> tuple[float, str]:
    """Wall seconds of ``python -c code args`` in a new process (interpreter start and every
    import counted, as a user running one script a second time sees them) and what it
    printed. Compiled modules are cached (in a folder of their own, whatever the
    environment says) and the first run, which fills the cache, is not timed."""
    import os
    import subprocess
    import sys
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "fabricopt-bench-pyc")
    run = [sys.executable, "-c", code, *args]
    subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    start = time.perf_counter()
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - start, out.stdout.strip()
