"""``bisection_bandwidth``, ``worst_case_permutation`` and ``fabricopt failures`` against their
time limit: wall seconds of the call beside T, "met" when within the contract of
``docs/bisection.md`` ("Under a time limit": 20 % of T or 0.1 s, whichever is larger, once
the fabric is checked), beside the package before their stages were held to the limit
(:data:`BEFORE_TIME_LIMITS_CUTS`).

``python benchmarks/run.py --only time-limits-cuts`` runs each (call, fabric, limit) in a fresh
process. The fabric is built and its arrays read before the clock starts, and the solver's
modules are loaded, in both packages alike; the failures command is timed from its start
(its fabric built inside, as a user runs it). CPU seconds are shown beside the wall, which
other work on a shared machine stretches.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from time_limits import FLOOR_SECONDS, LIMITS, within  # noqa: F401  (one contract, one sweep)

#: The commit before bisection, the worst-case search and the failures command were held to
#: the time limit.
BEFORE_TIME_LIMITS_CUTS = "c455525"

#: The fabrics whose bisection is swept, as expressions of ``fo`` (built in the fresh process).
BISECTION_FABRICS = {
    "jellyfish(40, 12, 8)": "fo.jellyfish(40, 12, 8, seed=1)",
    "superpod(16) -1 % leaf-spine":
        "fo.fail_random(fo.superpod(16), 0.01, seed=1, tiers=['leaf-spine'])",
    "fat_tree(16) -5 %": "fo.fail_random(fo.fat_tree(16), 0.05, seed=1)",
    "4,096-GPU 3-tier 2:1 Clos -1 %":
        "fo.fail_random(fo.clos(4096, 32, tiers=3, oversubscription=2), 0.01, seed=1)",
}

#: The fabrics whose worst permutation is searched.
WORST_CASE_FABRICS = {
    "jellyfish(40, 12, 8)": "fo.jellyfish(40, 12, 8, seed=1)",
    "fat_tree(16) -5 %": "fo.fail_random(fo.fat_tree(16), 0.05, seed=1)",
}

#: The failures commands run (their arguments before ``--time-limit``).
FAILURES_COMMANDS = {
    "superpod(4) random 1 %, 5 draws, bisection": [
        "failures", "superpod", "scalable_units=4", "--mode", "random", "--probability",
        "0.01", "--trials", "5", "--metrics", "bisection"],
    "fat_tree(16) sweep 5 %, 3 trials": [
        "failures", "fat_tree", "k=16", "--mode", "sweep", "--fraction", "0.05", "--trials",
        "3"],
}

def case_cuts(kind: str, what: str | list, limit: float) -> dict:
    """One call under ``limit`` seconds: ``kind`` is "bisection" or "worst-case" (``what``
    an expression of the fabric) or "failures" (``what`` the command's arguments); its wall
    and CPU seconds, status and bracket."""
    import contextlib
    import io

    import scipy.optimize  # noqa: F401  (the first call's module loading, not counted)

    import fabricopt as fo
    import fabricopt.cli as cli
    from fabricopt.graph_arrays import GraphArrays

    if kind != "failures":
        fab = eval(what, {"fo": fo})  # noqa: S307 - the table's own expressions
        GraphArrays.from_fabric(fab)
    out = io.StringIO()
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "bisection":
        r = fo.bisection_bandwidth(fab, time_limit=limit)
        status = getattr(r, "status", None) or (
            "exact" if r.exact else (r.stopped_short or "bracket"))  # the package before
        said = f"{status} [{r.lower_gbps:.6g}, {r.upper_gbps:.6g}] Gb/s"
    elif kind == "worst-case":
        r = fo.worst_case_permutation(fab, time_limit=limit)
        status = getattr(r, "status", None) or ("exact" if r.exact else "bracket")
        said = f"{status} [{r.lower:.4g}, {r.upper:.4g}], {len(r.tried)} pattern(s)"
    else:
        with contextlib.redirect_stdout(out):
            code = cli.main([*what, "--time-limit", f"{limit:g}"])
        said = f"exit {code}"
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": wall,
            "value": f"{said}, {cpu:.2f} s CPU; {'met' if within(wall, limit) else 'not met'}"}


def time_limits_cuts_rows(rows: list, quick: bool, run_case: Callable[..., dict],
                          package_at: Callable[[str], str]) -> None:
    """Each call on each fabric under each limit, beside :data:`BEFORE_TIME_LIMITS_CUTS`."""
    before = package_at(BEFORE_TIME_LIMITS_CUTS)
    cases = ([("bisection", n, e) for n, e in BISECTION_FABRICS.items()]
             + [("worst-case", n, e) for n, e in WORST_CASE_FABRICS.items()]
             + [("failures", n, a) for n, a in FAILURES_COMMANDS.items()])
    if quick:
        cases = cases[:1]
    for kind, name, what in cases:
        for limit in LIMITS:
            target = f"<= {max(1.2 * limit, limit + FLOOR_SECONDS):.3g} s"
            now = run_case("case_cuts", kind, what, limit)
            rows.append((f"{kind} {name}, time limit {limit:g} s", now, target,
                         "met" if within(now["seconds"], limit) else "not met"))
            if before:
                then = run_case("case_before", before, "case_cuts", kind, what, limit)
                rows.append((f"  before ({BEFORE_TIME_LIMITS_CUTS})", then, target,
                             "met" if within(then["seconds"], limit) else "not met"))


def time_limits_cuts_block(run_case: Callable[..., dict], package_at: Callable[[str], str]
                           ) -> tuple[Callable[[list, bool], None], str]:
    """The block of ``benchmarks/run.py`` (its function and its line in ``--help``)."""
    return ((lambda rows, quick: time_limits_cuts_rows(rows, quick, run_case, package_at)),
            "bisection_bandwidth, worst_case_permutation and fabricopt failures under time "
            "limits of 0.05 to 3 s, wall against the limit, beside the package before "
            f"({BEFORE_TIME_LIMITS_CUTS})")
