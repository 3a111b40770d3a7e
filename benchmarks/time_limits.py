"""``max_concurrent_flow(fab, time_limit=T)`` against its limit: wall seconds of the call
beside T, "met" when within the contract of ``docs/throughput.md`` (20 % of T or 0.1 s,
whichever is larger, after the fabric is checked), beside the package before every stage was
held to the limit (:data:`BEFORE_TIME_LIMITS`).

``python benchmarks/run.py --only time-limits`` runs each (fabric, limit) in a fresh process.
The fabric is built and its arrays read before the clock starts (a second call on a fabric
finds them read), and the solver's modules are loaded (the first call in a process loads
them), in both packages alike; CPU seconds are shown beside the wall, which other work on a
shared machine stretches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: The commit before every stage of the engine was held to the time limit.
BEFORE_TIME_LIMITS = "c455525"

#: The fabrics swept, as expressions of ``fo`` (built in the fresh process).
FABRICS = {
    "superpod(16)": "fo.superpod(16)",
    "superpod(16) -1 % leaf-spine":
        "fo.fail_random(fo.superpod(16), 0.01, seed=1, tiers=['leaf-spine'])",
    "superpod(64) -1 % leaf-spine":
        "fo.fail_random(fo.superpod(64), 0.01, seed=1, tiers=['leaf-spine'])",
    "jellyfish(40, 12, 8)": "fo.jellyfish(40, 12, 8, seed=1)",
    "4,096-GPU 3-tier 2:1 Clos -1 %":
        "fo.fail_random(fo.cluster(fo.dgx_h100(), nodes=512, scale_out='clos', tiers=3, "
        "oversubscription=2), 0.01, seed=1)",
    "fat_tree(16)": "fo.fat_tree(16)",
}

#: The limits (seconds) each fabric is given.
LIMITS = (0.05, 0.2, 1.0, 3.0)

#: The least a limit is honoured within (s): the contract's floor.
FLOOR_SECONDS = 0.1


def within(wall: float, limit: float) -> bool:
    """Whether ``wall`` honours ``limit``: at most 20 % over it, or :data:`FLOOR_SECONDS`.

    >>> within(0.09, 0.05), within(1.3, 1.0)
    (True, False)
    """
    return wall <= max(1.2 * limit, limit + FLOOR_SECONDS)


def case_time_limit(expr: str, limit: float) -> dict:
    """``max_concurrent_flow`` of the fabric ``expr`` under ``limit`` seconds: the call's
    wall seconds, its CPU seconds, status and bracket."""
    import scipy.optimize  # noqa: F401  (the first call's module loading, not counted)

    import fabricopt as fo
    from fabricopt.graph_arrays import GraphArrays

    fab = eval(expr, {"fo": fo})  # noqa: S307 - the table's own expressions
    GraphArrays.from_fabric(fab)
    start, cpu = time.perf_counter(), time.process_time()
    r = fo.max_concurrent_flow(fab, time_limit=limit)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": wall,
            "value": f"{r.status} [{r.lower:.6g}, {r.upper:.6g}], {cpu:.2f} s CPU (within "
                     f"the limit by CPU: {'yes' if within(cpu, limit) else 'no'}), load "
                     f"{os.getloadavg()[0]:.1f}"}


def time_limit_rows(rows: list, quick: bool, run_case: Callable[..., dict],
                    package_at: Callable[[str], str]) -> None:
    """Each fabric under each limit, beside the package of :data:`BEFORE_TIME_LIMITS`."""
    before = package_at(BEFORE_TIME_LIMITS)
    fabrics = list(FABRICS.items())[:2] if quick else list(FABRICS.items())
    for name, expr in fabrics:
        for limit in LIMITS:
            target = f"<= {max(1.2 * limit, limit + FLOOR_SECONDS):.3g} s"
            now = run_case("case_time_limit", expr, limit)
            rows.append((f"{name}, time_limit={limit:g}", now, target,
                         "met" if within(now["seconds"], limit) else "not met"))
            if before:
                then = run_case("case_before", before, "case_time_limit", expr, limit)
                rows.append((f"  before ({BEFORE_TIME_LIMITS})", then, target,
                             "met" if within(then["seconds"], limit) else "not met"))


def time_limit_block(run_case: Callable[..., dict], package_at: Callable[[str], str]
                     ) -> tuple[Callable[[list, bool], None], str]:
    """The block of ``benchmarks/run.py`` (its function and its line in ``--help``)."""
    return ((lambda rows, quick: time_limit_rows(rows, quick, run_case, package_at)),
            "max_concurrent_flow under time limits of 0.05 to 3 s on six fabrics, wall "
            f"against the limit, beside the package before ({BEFORE_TIME_LIMITS})")
