"""The main job's report half: ``write_report`` on the comparison of topologies/ (23 designs,
their charts, bars and diagrams), in CPU seconds, beside the package before that work.

``python benchmarks/run.py --only report`` runs :func:`case_report` in a process of its own
for this checkout's package and for ``git archive`` of :data:`BEFORE_REPORT`, twice each in
turns (the least CPU of each package kept; the machine is shared): each computes
the comparison once (not timed), keeps every row's fabric (as ``fabricopt compare -o`` does,
so no design is built again), then writes the report :data:`REPEATS` times into fresh folders
and keeps the least CPU time of each part: the Pareto charts (SVG), the bars (PNG), the
diagrams' drawing (``draw``: grouping and artists) and their PNGs (layout and rendering).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

#: The commit before the report was made faster (issue 45 point 3, its report half).
BEFORE_REPORT = "8d80f81"

#: Reports written per package; the least CPU time of each part is kept (a shared machine).
REPEATS = 3

#: The target: the whole report in at most this many CPU seconds.
TARGET_CPU_S = 3.0


def case_report(designs: str, tree: str = "") -> dict:
    """``write_report`` on ``compare(designs)`` with the package from ``tree`` (empty: this
    checkout's): CPU seconds of the whole report and of each part, least of
    :data:`REPEATS`; the files written are counted."""
    if tree:
        sys.path.insert(0, tree)
    import matplotlib

    matplotlib.use("Agg")
    import fabricopt as fo
    from fabricopt.plot import report

    assert not tree or fo.__file__.startswith(tree), fo.__file__
    table = fo.compare([designs])
    kept = {i: table.fabric(i) for i, row in enumerate(table.rows)
            if not row.get("error") and row.get("key") in table.tasks}
    table.fabric = kept.__getitem__  # each row's fabric, as compare() in this process hands it

    parts: dict[str, float] = {}
    in_bars = [False]

    def timed(name: str, part: str) -> None:
        original = getattr(report, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            if part == "png" and in_bars[0]:
                return original(*args, **kwargs)  # the bars' own PNG: counted in "bars"
            in_bars[0] = part == "bars"
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                parts[part] = parts.get(part, 0.0) + time.process_time() - start
                in_bars[0] = False

        setattr(report, name, wrapper)

    for name, part in (("_charts", "charts"), ("_bars", "bars"), ("draw", "diagrams: draw"),
                       ("_png", "png")):
        timed(name, part)
    best: dict[str, float] = {}
    files = 0
    for _ in range(REPEATS):
        parts.clear()
        out = Path(tempfile.mkdtemp(prefix="fabricopt-report-"))
        start = time.process_time()
        report.write_report(table, out)
        parts["report"] = time.process_time() - start
        files = sum(1 for _ in out.rglob("*") if _.is_file())
        shutil.rmtree(out, ignore_errors=True)
        for key, value in parts.items():
            best[key] = min(best.get(key, value), value)
    best["diagrams: PNG"] = best.pop("png", 0.0)
    shown = ", ".join(f"{k} {v:.2f}" for k, v in best.items() if k != "report")
    return {"seconds": best["report"], "cpu": best["report"],
            "value": f"{best['report']:.2f} s CPU ({shown}); {len(table)} rows, {files} files; "
                     f"load {os.getloadavg()[0]:.1f}"}


def report_rows(rows: list, quick: bool, run_case, package_at) -> None:
    """The report row, beside the package of :data:`BEFORE_REPORT` (``run_case`` and
    ``package_at`` are run.py's): each package's case run twice, in turns (now, before, now,
    before), the run with the least CPU kept, so that both see the machine's load alike.
    The seconds column is CPU seconds."""
    topologies = str(Path(__file__).resolve().parent.parent / "topologies")
    tree = package_at(BEFORE_REPORT)
    runs: dict[str, list[dict]] = {"now": [], "before": []}
    for _ in range(1 if quick else 2):
        runs["now"].append(run_case("case_report", topologies))
        if tree:
            runs["before"].append(run_case("case_report", topologies, tree))

    def least(outs: list[dict]) -> dict:
        return min(outs, key=lambda o: o.get("cpu", float("inf")))

    now = least(runs["now"])
    met = now.get("cpu", float("inf")) <= TARGET_CPU_S
    rows.append(("write_report, compare(topologies/) (CPU s)", now,
                 f"<= {TARGET_CPU_S:g} s CPU", "met" if met else "not met"))
    if runs["before"]:
        before = least(runs["before"])
        ratio = before.get("cpu", float("nan")) / now.get("cpu", float("nan"))
        rows.append((f"  before ({BEFORE_REPORT})", before, f"before/now {ratio:.2f}x", ""))
