"""The work of a comparison row that is not a flow solve, part by part, beside the package
before issue 45's array-first builder: the build of the design (``io/design_files`` ->
``generators``), ``Fabric.validate``, the ``summary`` metric and the ``cost`` metric, in CPU
seconds, on the largest designs of ``topologies/``; and the same builds, validations and
pricings (three optics policies each) of the 13 topologies ``optimize`` builds at 16,384 GPUs.

``python benchmarks/run.py --only rows-build`` runs each case in a fresh process, the package
of this checkout then the one of :data:`BEFORE_ROWS_BUILD` (``git archive``), and keeps the
fewest CPU seconds of :data:`REPEATS` runs of each part (the machine is shared: CPU seconds
move with what runs beside them, wall seconds more so). Each case also reports a digest of
the fabric (its nodes and arcs with every attribute, sorted) and of the summary and cost
columns, so that a row says whether the package before built and priced the same thing.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: The commit before this work: the tree before the array-first builder (the ones before
#: that, 55b4520 and 8d80f81).
BEFORE_ROWS_BUILD = "c455525"

#: Runs of each part per case; the fewest CPU seconds are kept.
REPEATS = 3

#: The slowest rows of ``fabricopt compare topologies/`` (as their ``seconds`` column had them).
DESIGNS = ("topologies/alibaba-hpn-dual-plane.toml", "topologies/meta-24k-roce.toml",
           "topologies/dgx-h100-superpod-rail-only-16k.toml",
           "topologies/rail-oversubscription-3su-sweep.toml")

#: Issue 45's targets for each part of such a row (CPU seconds).
TARGETS = {"build": 0.3, "validate": 0.1, "summary": 0.1, "cost": 0.15}

#: The topologies ``optimize(16384, space=OPTIMIZE_SPACE)`` (benchmarks/run.py) builds and
#: prices, each under three optics policies (captured from a run at 8d80f81: the other
#: candidates are ruled out by their plans' bounds before any build).
_CLUSTER = {"scale_up": "dgx_h100", "nodes": 2048, "tiers": None, "nic_gbps": 400,
            "switch_model": None}
OPTIMIZE_TOPOLOGIES = (
    [("cluster", {**_CLUSTER, "scale_out": "clos", "radix": 64, "oversubscription": s})
     for s in (3.0, 2.0, 1.5, 1.0)]
    + [("cluster", {**_CLUSTER, "scale_out": "rail_optimized", "leaf_radix": 64,
                    "oversubscription": s, "planes": p})
       for s, p in ((2.0, 1), (1.5, 1), (2.0, 2), (1.5, 2), (1.0, 1), (1.0, 2))]
    + [("superpod", {"scalable_units": 64, "node": "dgx_h100", "leaf_radix": 64,
                     "oversubscription": s, "nic_gbps": 400}) for s in (2.0, 1.5, 1.0)])
OPTIMIZE_POLICIES = ("cost", "all_optics", "lpo")


def _fabric_digest(fab) -> str:
    """Nodes and arcs with every attribute, sorted: the same fabric, whatever the order."""
    h = hashlib.sha256()
    for v, d in sorted(fab.graph.nodes(data=True), key=lambda x: repr(x[0])):
        h.update(repr((v, sorted(d.items(), key=repr))).encode())
    for u, v, d in sorted(fab.graph.edges(data=True), key=lambda x: repr(x[:2])):
        h.update(repr((u, v, sorted(d.items(), key=repr))).encode())
    h.update(repr(fab.endpoints).encode())
    return h.hexdigest()[:10]


def _parts(build: Callable, policies: tuple, summary: bool = True
           ) -> tuple[dict[str, float], str, str]:
    """CPU seconds of each part of one row (build, validate, the summary unless ``summary``
    is False, cost under each of ``policies``), as a comparison row (or an optimizer's
    topology, which has no summary) runs them, and the digests of the fabric and rows."""
    from fabricopt._gc import frozen_gc, paused_gc
    from fabricopt._unchanged import unchanged
    from fabricopt.study import metrics

    cpu = time.process_time
    start = cpu()
    with paused_gc():
        fab = build()
    seconds = {"build": cpu() - start}
    with frozen_gc(), unchanged(fab):
        start = cpu()
        fab.validate()
        seconds["validate"] = cpu() - start
        row = {}
        if summary:
            start = cpu()
            row = metrics._summary(fab, metrics.MetricContext())
            seconds["summary"] = cpu() - start
        start = cpu()
        for policy in policies:
            row.update({f"{k} {policy}": v for k, v in
                        metrics._cost(fab, metrics.MetricContext(policy=policy)).items()})
        seconds["cost"] = cpu() - start
    digest = _fabric_digest(fab)
    del fab
    gc.collect()
    rows = hashlib.sha256(repr(sorted(row.items())).encode()).hexdigest()[:10]
    return seconds, digest, rows


def case_rows_build(tree: str, what: str) -> dict:
    """Per-part CPU seconds of ``what`` (a design file, or ``"optimize"``: the topologies of
    :data:`OPTIMIZE_TOPOLOGIES` summed), the package imported from ``tree`` (empty: this
    checkout's); the fewest of :data:`REPEATS` runs of each part."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, tree or str(root))
    import fabricopt as fo
    from fabricopt.generators import make
    from fabricopt.io.design_files import load_design

    assert fo.__file__.startswith(tree or str(root)), fo.__file__
    if what == "optimize":
        jobs = [(lambda f=family, k=kwargs: make(f, k), OPTIMIZE_POLICIES)
                for family, kwargs in OPTIMIZE_TOPOLOGIES]
    else:
        path = str(root / what)

        def first_point():  # a sweep's first point (the largest of the 3 SU rail sweep's)
            got = load_design(path)
            return got[0] if isinstance(got, list) else got

        jobs = [(first_point, (None,))]
    best: dict[str, float] = {}
    digests = []
    for _ in range(REPEATS):
        total: dict[str, float] = {}
        digests = []
        for build, policies in jobs:
            seconds, fabric, rows = _parts(build, policies, what != "optimize")
            for part, s in seconds.items():
                total[part] = total.get(part, 0.0) + s
            digests.append(fabric + rows)
        best = {p: min(best.get(p, float("inf")), s) for p, s in total.items()}
    fabrics = hashlib.sha256("".join(d[:10] for d in digests).encode()).hexdigest()[:10]
    rows = hashlib.sha256("".join(d[10:] for d in digests).encode()).hexdigest()[:10]
    parts = ", ".join(f"{p} {s:.3f}" for p, s in best.items())
    return {"seconds": sum(best.values()), "parts": best, "fabrics": fabrics, "rows": rows,
            "value": f"{parts} s CPU; fabrics {fabrics}, rows {rows}; load "
                     f"{os.getloadavg()[0]:.1f}"}


def rows_build_rows(rows: list, quick: bool, run_case: Callable[..., dict],
                    package_at: Callable[[str], str]) -> None:
    """Each design, then the optimize topologies, beside the package of
    :data:`BEFORE_ROWS_BUILD` (same run, fresh processes, alternating)."""
    before = package_at(BEFORE_ROWS_BUILD)
    for what in (DESIGNS[:2] if quick else DESIGNS) + ("optimize",):
        now = run_case("case_rows_build", "", what)
        name = ("optimize 16,384 GPUs: 13 builds, 39 pricings" if what == "optimize" else
                Path(what).stem)
        missed = [f"{p} {now['parts'][p]:.2f} > {t:g}" for p, t in TARGETS.items()
                  if p in now.get("parts", {}) and now["parts"][p] > t]
        target = ("build <= 0.3, validate <= 0.1, summary <= 0.1, cost <= 0.15 s CPU"
                  if what != "optimize" else "")
        verdict = ("" if what == "optimize" else "met" if not missed else
                   "not met (" + ", ".join(missed) + ")")
        rows.append((name, now, target, verdict))
        if before:
            was = run_case("case_rows_build", before, what)
            # The fabrics apart from the rows: a row's columns may change by design (a
            # column added to the summary) while the fabrics must not.
            same = ", ".join(f"{'same' if was.get(k) == now.get(k) else 'DIFFERENT'} {k}"
                             for k in ("fabrics", "rows"))
            ratio = (f"now/before {now['seconds'] / was['seconds']:.2f}, {same}"
                     if was.get("seconds") else same)
            rows.append((f"  before ({BEFORE_ROWS_BUILD})", was, ratio, ""))
