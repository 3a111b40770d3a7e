"""``max_concurrent_flow``: check, build, solve, certify, read back.

Each step is public so a power user can stop after building and inspect or export the LP::

    model = build_flow_lp(fab, traffic)        # the LP and its inverse maps
    export_mps(model.lp, "fabric.mps")         # any solver
    result = solve_flow_model(model)           # solve, certify, read back
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .._progress import progress_bar
from .._stages import SILENT, stage_report
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import GraphArrays
from ..symmetry.search import FoundSymmetry, SymmetrySearch, search_symmetry, with_symmetry
from ..tiers import is_scale_up_arc, tier_of
from ..traffic import Traffic
from .approx import default_max_rounds, solve_approx
from .arguments import check_stage_and_work, checked_arguments
from .backends import check_solve_args, solve_lp
from .bounds import (
    ECMP_MAX_ENTRIES,
    ecmp_point,
    rail_labels,
    structural_cut_lengths,
)
from .brackets import closed, hose_floor, tighter_bracket, unsolved, with_hose_floor
from .budget import approx_fits, check_lp_memory, now, search_budget, seconds_left, stage_fits
from .certificate import EXACT_RTOL
from .certified import certified_result, lp_size_of
from .formulation import Collapse, CollapsedDemand, FlowModel, build_flow_lp, flow_lp_size
from .from_intact import acceptable, answer_from_intact
from .lp import LPSolution
from .memory import gb, shortfall
from .model import ThroughputModel
from .plane_bracket import narrowed, plane_bracket
from .result import FlowCertificate, FlowResult
from .symmetric import build_symmetric_lp
from .tier_routing import TIER_MAX_ENTRIES, node_layers, symmetric_tier_point, tier_point
from .units import check_capacity_spread, in_units, solve_units
from .warm import ball_cut_lengths, warm_lengths

#: What the stage line (:mod:`fabricopt._stages`) calls each method's solve.
_STAGE_NAMES = {"lp": "LP", "symmetric": "symmetric LP", "approx": "approximate rounds"}

#: Above this many nonzeros ``method="auto"`` does not build the full LP but takes the
#: approximate method. Measured on 2 cores: superpod(1) with 1% of all its links failed (NVLink
#: lanes included, so no group is left) has a full LP of 2.0 million nonzeros that stopped at
#: its 20 s time limit with the bracket [0.64, 6.47], where the approximate method closed the
#: bracket exactly in 1.1 s; fat_tree(8)'s full LP (49,152 nonzeros) takes about 1.2 s.
MAX_AUTO_NONZEROS = 500_000
#: Above this many nonzeros of the full LP, ``method="auto"`` looks for the symmetry of a
#: fabric that carries no claim. Measured on 2 cores: the full LP of fat_tree(8) rebuilt by
#: hand (49,152 nonzeros) takes 2.2 s and superpod(1)'s (2.0 million) does not finish in
#: 180 s, while the search takes under 0.2 s on both; below this size the LP answers in
#: about a second and its result keeps the plain ``"lp"`` certificate.
FIND_SYMMETRY_NONZEROS = 50_000
#: Search nodes ``method="auto"`` lets the symmetry search visit (a work limit, so the same
#: fabric gets the same group on a busy machine; seconds only when ``time_limit`` is given).
#: Measured: a failed fat_tree(16) needs 71 nodes (0.4 s), superpod(4) minus a link 77,
#: superpod(16) minus a link 150 (2.9 s, about 20 ms a node): 1,000 nodes is some 20 s at
#: that size, and a small fabric's nodes cost about a millisecond.
FIND_SYMMETRY_NODES = 1_000
#: A found group with several orbits on the endpoints is used by ``method="auto"`` only when
#: its symmetric LP (one root flow of about three nonzeros per arc for each orbit, before
#: colour refinement shrinks it) is at least this many times smaller than the full LP; the
#: search stops as soon as it proves more orbits than that allows, so a fabric with little
#: symmetry costs what colour refinement costs. A failed superpod(4) (13 orbits) solves in
#: about a second this way, where its full LP has 35 million nonzeros.
SYMMETRIC_SIZE_ADVANTAGE = 4


def symmetric_applicable(fab: Fabric, traffic: Traffic) -> tuple[bool, str]:
    """Whether the symmetric method is exact for this fabric and traffic, and why not."""
    if fab.symmetry is None:
        why = ("the fabric carries no symmetry claim" if fab._symmetry is None and
               not fab.params.get("edited") else
               "the fabric was changed after it was generated (or has no symmetry claim)")
        return False, why
    return traffic_invariant(fab, traffic)


def traffic_invariant(fab: Fabric, traffic: Traffic) -> tuple[bool, str]:
    """Whether ``traffic`` is invariant under every permutation of the endpoints (uniform
    all-to-all over all of them), and why not."""
    if set(traffic.endpoints) != set(fab.endpoints):
        return False, "the traffic does not involve every endpoint, so it is not invariant"
    if traffic.is_uniform:
        return True, ""
    n = len(fab.endpoints)
    values = set(traffic.pairs.values())
    if len(traffic) == n * (n - 1) and len(values) == 1:
        return True, ""
    return False, "the traffic is not uniform all-to-all, so it is not invariant"


def _uniform_gbps(traffic: Traffic) -> float:
    return traffic.uniform_gbps or next(iter(traffic.pairs.values()))


def useful_endpoint_orbits(fab: Fabric, traffic: Traffic, ga: GraphArrays | None = None) -> int:
    """Most orbits on the endpoints a found group may have for ``method="auto"`` to solve
    by the symmetric method (see :data:`SYMMETRIC_SIZE_ADVANTAGE`); at least 1."""
    per_root = 3 * max(fab.graph.number_of_edges(), 1)
    return max(1, lp_size_estimate(fab, traffic, ga) // (SYMMETRIC_SIZE_ADVANTAGE * per_root))


def useful_symmetry(fab: Fabric, traffic: Traffic) -> SymmetrySearch | None:
    """The search's proven symmetry of ``fab`` when the symmetric method is exact with it
    and its LP beats the full one (:func:`useful_endpoint_orbits`), within the search
    budget of ``method="auto"`` (:data:`FIND_SYMMETRY_NODES` nodes, no clock); None
    otherwise (a claim already made, traffic it does not keep, or nothing useful found)."""
    if fab.symmetry is not None or not traffic_invariant(fab, traffic)[0]:
        return None
    useful = useful_endpoint_orbits(fab, traffic)
    found = search_symmetry(fab, max_endpoint_orbits=useful, max_nodes=FIND_SYMMETRY_NODES)
    if found.symmetry is None or found.symmetry.n_endpoint_orbits > useful:
        return None
    return found


def lp_size_estimate(fab: Fabric, traffic: Traffic, ga: GraphArrays | None = None) -> int:
    """Nonzeros the full LP would have (computed without building it; ``ga``, the fabric's
    arrays, spares reading them again: 5 s on 128,000 GPUs)."""
    ga = ga or GraphArrays.from_fabric(fab)
    collapse = Collapse.of(ga, fab, traffic.endpoints)
    position = {e: i for i, e in enumerate(traffic.endpoints)}
    if traffic.is_uniform:
        k = len(np.unique(collapse.attach))
    else:
        src = np.array([position[s] for s, _ in traffic.pairs], dtype=np.int64)
        k = len(np.unique(collapse.attach[src]))
    return int(3 * k * collapse.core_arc.sum())


def max_concurrent_flow(fab: Fabric, traffic: Traffic | None = None, *, method: str = "auto",
                        backend: str = "highs", time_limit: float | None = None,
                        include_endpoint_links: bool = True, gap: float = 0.01,
                        progress: bool | None = None, warm_start: FlowResult | None = None,
                        bounds_first: bool | None = None, work_limit: int | None = None,
                        **backend_options: Any) -> FlowResult:
    """Largest fraction theta of ``traffic`` that ``fab`` carries at once, with proof.

    Parameters
    ----------
    fab : Fabric
    traffic : Traffic or str, optional
        Demands in Gb/s per ordered endpoint pair; None means :func:`all_to_all` at 1 Gb/s.
        A name stands for its pattern, as on the command line: ``"all-to-all"``,
        ``"permutation"`` or ``"permutation:SEED"``, ``"longest-matching"``.
    method : {"auto", "lp", "symmetric", "approx"}
        ``"lp"``: the exact LP with source aggregation and endpoint collapse.
        ``"symmetric"``: the exact root-flow LP (one root per orbit of the group on the
        endpoints) for fabrics whose generator attached a symmetry claim, or whose symmetry
        :func:`~fabricopt.find_symmetry` finds, with uniform all-to-all traffic over all
        endpoints.
        ``"approx"``: the same LP solved to a certified relative ``gap`` by
        :mod:`fabricopt.flow.approx` (any fabric, any traffic, thousands of switches); the
        answer is the bracket, with status ``"inexact"`` (``"time_limit"`` if stopped).
        ``"auto"``: symmetric when there is a claim; without one, symmetric when the full LP
        would exceed ``FIND_SYMMETRY_NONZEROS`` nonzeros and a symmetry the method can use
        is found whose LP beats the full one (at most :func:`useful_endpoint_orbits` orbits
        on the endpoints; the message says so); else the full LP while it has at most
        ``MAX_AUTO_NONZEROS`` nonzeros, else approx.
    backend : {"highs", "highspy", "pulp"}
        See :mod:`fabricopt.flow.backends`; ``backend_options`` go to it.
    time_limit : float, optional
        Seconds for the whole call, counted from its start: the symmetry search and the
        solver get what is left, and when nothing is left after the bounds stage its
        bracket is the answer. A step expected to take longer than what is left (from its
        size: the routed stage above a second, the approximate method's first round) is not
        begun; the hierarchy cuts and the two-phase floor then make the bracket (a failed
        2,048-GPU cluster at 0.001 s: 0.4 s, where the stage alone took 22 s). On expiry
        the status says so and the bracket is what was proven. ``backend="highspy"``
        enforces it with a wall-clock interrupt as well; with the default backend, HiGHS's
        interior-point solver (used above 20,000 nonzeros) can overrun a limit shorter than
        HiGHS's presolve, and then returns a proven answer late. A point the limit stopped
        is certified as it stands, not polished (that took a second more).
    include_endpoint_links : bool
        True (default): the links of endpoints that hang off one switch (NIC links) are
        capacity constraints and pairs under one switch count. False: the fabric-only view
        (``docs/throughput.md``) — those links are free and same-switch pairs are dropped.

    gap : float
        For ``method="approx"``: stop once ``(upper - lower) / upper <= gap``, 0 < gap < 1.
    progress : bool, optional
        A progress bar on stderr for the approximate method's rounds, with the certified
        bracket as it closes; default: when stderr is a terminal. Whatever it is, each stage
        (bounds, symmetry search, LP, each approximate round) and the bracket so far are
        reported to the listener of :mod:`fabricopt._stages` when there is one (the stage
        line of ``fabricopt solve`` and ``compare``), at no cost when there is none.
    warm_start : FlowResult, optional
        A result for a fabric that contains this one (the intact fabric of a failed one:
        every node and arc of ``fab`` in it, no capacity larger), for any traffic. Its
        certificate's arc lengths, restricted to the arcs of ``fab``, still prove an upper
        bound here (removing arcs lowers ``sum c l`` and lengthens distances), offered to the
        certificate besides the solver's own, and so is the best single cut they are made of
        (:func:`~fabricopt.flow.warm.ball_cut_lengths`: on a failed SuperPOD, the server
        that lost NIC links); the approximate method also prices its first columns at them.
        Not used by the symmetric method, whose bound needs invariant lengths. The answer is
        proven on ``fab`` as always. A result of another fabric is an
        :class:`~fabricopt.InvalidParameterError`.
    work_limit : int, optional
        A cap on the solver's work rather than its seconds, so the answer is the same on a
        busy and an idle machine: iterations of HiGHS (``maxiter`` of the ``"highs"``
        backend; simplex and interior-point iteration limits of ``"highspy"``) or rounds of
        the approximate method. On expiry the status is ``"iteration_limit"`` with the bracket
        proven; the result records the limit (``result.work_limit``). The approximate method
        without either limit stops after
        :func:`~fabricopt.flow.approx.default_max_rounds` rounds (10,000 on small models,
        fewer on large ones), recorded the same way.
    bounds_first : bool, optional
        Before any solve, prove the bounds of :mod:`fabricopt.flow.bounds` (hierarchy cuts
        above, ECMP fluid routing below; while the full LP has at most
        :data:`~fabricopt.flow.bounds.ECMP_MAX_ENTRIES` flow variables). When they meet (to
        1e-6), that is the answer, with method ``"bounds"``; otherwise the result is never a
        wider bracket than the bounds alone (the cut's lengths join the solver's). Default:
        with ``method="auto"`` on a fabric whose own symmetry claim does not already make it
        exact and fast (a named method is solved as named). A large fabric made by
        ``without`` or ``fail_random`` (which keep the generator's recipe) is first answered
        from the intact fabric the recipe rebuilds, its flow sent around what failed
        (:mod:`fabricopt.flow.from_intact`; ``docs/failures.md``): exact or within ``gap``,
        that is the answer; on a fabric too large for the routed bounds, so is its bracket.

    Returns
    -------
    FlowResult

    Examples
    --------
    Unit-capacity ring of 8 nodes, unit all-to-all: theta = 8 / n^2 = 0.125
    (``docs/throughput.md``).

    >>> import fabricopt as fo
    >>> r = fo.max_concurrent_flow(fo.ring(8))
    >>> round(r.theta, 9), r.method, r.exact
    (0.125, 'symmetric', True)
    """
    start, report = now(), stage_report()
    traffic, include_endpoint_links, gap, progress = checked_arguments(
        fab, traffic, method, backend, time_limit, include_endpoint_links, gap, progress)
    bounds_first, work_limit, backend_options = check_stage_and_work(
        backend, bounds_first, work_limit, backend_options)
    check_solve_args("max_concurrent_flow", backend, time_limit, backend_options)
    ga = GraphArrays.from_fabric(fab)  # the symmetry found below shares fab's graph
    check_capacity_spread("max_concurrent_flow", ga, fab.name)
    check_lp_memory("max_concurrent_flow", fab, traffic, include_endpoint_links, ga, method)
    warm = (None if warm_start is None
            else warm_lengths("max_concurrent_flow", ga, warm_start))
    ok, why = symmetric_applicable(fab, traffic)
    own_claim = ok  # exact and fast by its claim: method="auto" skips the bounds stage
    stage_on = (method == "auto" and not own_claim) if bounds_first is None else bounds_first
    # Solve for theta near 1 and capacities near 1: solvers' tolerances (and CBC's printed
    # digits) are absolute, so a theta of 0.02 would lose relative precision in the
    # certificate, and duals of capacities in bit/s would drown in the tolerance.
    scale, unit, scaled, ga_solve = solve_units(fab, traffic, ga)
    early, too_large, hose = None, False, None
    if stage_on and method == "auto" and warm is None:
        # A failed fabric from the intact one it was made from, else bounds before the
        # symmetry search: where they close, no group is looked for.
        too_large = lp_size_estimate(fab, traffic, ga) // 3 > ECMP_MAX_ENTRIES
        first = _answer_from_intact(fab, traffic, ga, gap, too_large, time_limit, start)
        if first is not None:
            return _finished(first, traffic, work_limit, start, report)
        early = _bounds_stage_first(fab, scaled, ga_solve, warm, report,
                                    include_endpoint_links=include_endpoint_links,
                                    traffic_scale=scale, capacity_unit=unit,
                                    time_left=seconds_left(time_limit, start))
        if early is not None and early[2] is not None and early[2].exact:
            return _finished(early[2], traffic, work_limit, start, report)
        hose = _floor_under(fab, traffic, time_limit, start, too_large)
    # No claim: find the symmetry when the full LP would be slow (or "symmetric" is asked).
    fab, ok, why, found = _search_if_useful(fab, traffic, ga, method,
                                            search_budget(time_limit, start), ok, why,
                                            report)
    if method == "symmetric" and not ok:
        raise InvalidParameterError(f"max_concurrent_flow(): method='symmetric' is not exact "
                                    f"here: {why}")
    if method == "auto":
        method = "symmetric" if ok else "approx" if lp_size_estimate(
            fab, traffic, ga) > MAX_AUTO_NONZEROS else "lp"
        short = None if method != "approx" else _approx_out_of_memory(
            fab, traffic, scaled, ga, ga_solve, early, include_endpoint_links, scale, unit)
        if short is not None:
            return _finished(short, traffic, work_limit, start, report, hose)
    ga = ga_solve
    # A warm start (a larger fabric's lengths: a failure trial) already bounds an exact
    # solve from above, and that solve (symmetric, or an LP small enough for one) is exact
    # in about a second: the stage, which routes the whole fabric, would cost several (7 s
    # against 1.3 s on a failed 16-SU SuperPOD, 2.5-5.8 s against 1.4 s on a failed
    # fat_tree(8)). It stays for the approximate method, whose start its cut lengths speed.
    stage_now = stage_on and not (warm is not None and method in ("symmetric", "lp"))
    model, warm_candidates, first = _build_and_bound(
        fab, scaled, ga, method, warm, include_endpoint_links=include_endpoint_links,
        bounds_first=stage_now, traffic_scale=scale, capacity_unit=unit, early=early,
        report=report, out_of_time=lambda: seconds_left(time_limit, start) == 0,
        time_left=lambda: seconds_left(time_limit, start))
    if first is not None and too_large:
        first = with_hose_floor(first, hose, traffic)
    if first is not None and (first.exact or (
            method == "approx" and first.upper - first.lower <= gap * first.upper)):
        # Closed, or already as close as the approximate method was asked to get: only a
        # gap left open goes to a solver.
        if not first.exact:
            if first.status == "not_solved" and first.upper > 0:
                first.status = "inexact"  # a proven bracket, within the gap asked
            first.message = (f"bounds first: certified bracket [{first.lower:.9g}, "
                             f"{first.upper:.9g}], within the asked gap {gap:.3%}: no "
                             "approximate rounds")
        return _finished(first, traffic, work_limit, start, report, hose)
    left = seconds_left(time_limit, start)
    if first is not None and method == "approx" and left is not None and model is not None:
        # Its first round cannot stop halfway: one that would not end in time is not begun.
        left = left if approx_fits(lp_size_of(model).get("nonzeros", 0), left) else 0.0
    if first is not None and (model is None or left == 0):
        # The budget went on the bounds: their bracket is the answer, said to be stopped.
        first.status = "time_limit"
        first.message = f"{first.message}; time limit reached before the solver started"
        return _finished(first, traffic, work_limit, start, report, hose)
    left = None if left is None else max(left, 1e-3)
    report(_STAGE_NAMES[method], detail=f"{lp_size_of(model).get('nonzeros', 0):,} nonzeros")
    if method == "approx":
        if work_limit is None and time_limit is None:
            # Its net, in rounds (fewer on a larger model): recorded like a caller's.
            work_limit = default_max_rounds(lp_size_of(model).get("nonzeros", 0))
        sol = _solve_approx(model, warm_candidates, gap=gap, time_limit=left,  # type: ignore
                            progress=progress, scale=scale, work_limit=work_limit,
                            report=report,
                            known_lower=0.0 if first is None else first.lower / scale)
        backend = "approx"
    else:
        sol = solve_lp(model.lp, backend, left, **backend_options)
    # A solve the clock stopped is not polished: that takes seconds more (an interior
    # point's on a failed superpod(1): 1 s of LSQR past a 5 s limit) and gains little so
    # far from the optimum. A work limit is no clock: its point is polished as always.
    result = certified_result(model, sol, method=method, backend=backend, fabric_name=fab.name,
                              tiers=arc_tiers(fab, model.ga), traffic_scale=scale,
                              capacity_unit=unit,
                              polish=method != "approx" and sol.status != "time_limit",
                              extra_lengths=warm_candidates)
    if method == "approx" and result.unreachable is None and result.upper > 0:
        result.message = _approx_message(result, sol, gap)
    if first is not None:
        result = tighter_bracket(result, first)
    if (found is not None and found.symmetry is not None and method == "symmetric"
            and result.certificate is not None):
        result.message = "; ".join(m for m in (found.message, result.message) if m)
        result.certificate = replace(result.certificate, symmetry=found.symmetry)
    return _finished(result, traffic, work_limit, start, report, hose)


#: A bracket from the intact flow whose lower end is at least this fraction of its upper one
#: is not lifted by the two-phase floor (which would seldom reach it, at a cost).
HOSE_FLOOR_REACH = 0.5


def _answer_from_intact(fab: Fabric, traffic: Traffic, ga: GraphArrays, gap: float,
                        too_large: bool, time_limit: float | None, start: float
                        ) -> FlowResult | None:
    """:func:`~fabricopt.flow.from_intact.answer_from_intact`, what it leaves open narrowed
    through the fabric's planes (:mod:`fabricopt.flow.plane_bracket`), a bracket still
    returned (the fabric too large) lifted by the two-phase floor where that is higher."""
    first = answer_from_intact(fab, traffic, gap, too_large)
    if first is None or first.upper - first.lower > gap * first.upper:
        # A failed Clos of servers: its planes narrow what the intact flow left open.
        planes = _through_planes(fab, traffic, ga, time_limit, start)
        if planes is not None and first is not None:
            first = narrowed(first, planes)
            acceptable(first, gap, too_large)  # says how the gap now stands
        elif planes is not None and acceptable(planes, gap, too_large):
            first = planes
    if first is None or first.exact or first.lower >= HOSE_FLOOR_REACH * first.upper:
        # Two-phase routing crosses the fabric twice: its floor seldom reaches half the cut,
        # and on a failed 24,576-GPU fabric with no claim its symmetry search took minutes.
        return first
    return with_hose_floor(first, _floor_under(fab, traffic, time_limit, start, too_large),
                           traffic)


def _through_planes(fab: Fabric, traffic: Traffic, ga: GraphArrays,
                    time_limit: float | None, start: float) -> FlowResult | None:
    """The bracket through the planes (:mod:`fabricopt.flow.plane_bracket`) of a failed
    (edited) fabric too large for a quick LP of its own; None for any other, and when
    ``time_limit`` is spent."""
    left = seconds_left(time_limit, start)
    if not fab.params.get("edited") or left == 0 or lp_size_estimate(fab, traffic, ga) <= \
            FIND_SYMMETRY_NONZEROS:
        return None  # (a spent time limit begins no LP)
    return plane_bracket(fab, traffic, left)


def _floor_under(fab: Fabric, traffic: Traffic, time_limit: float | None, start: float,
                 too_large: bool) -> Any:
    """The two-phase rate as a floor (:mod:`fabricopt.flow.brackets`): anytime, under what a
    ``time_limit`` leaves (from at most a quarter of it); and under a fabric too large for
    the routed bounds, whose approximate rounds take minutes. None when neither."""
    if time_limit is None and not too_large:
        return None
    return hose_floor(fab, traffic, None if time_limit is None
                      else max(seconds_left(time_limit, start) / 4, 1e-3))


def _search_if_useful(fab: Fabric, traffic: Traffic, ga: GraphArrays, method: str,
                      time_limit: float | None, ok: bool, why: str, report: Any
                      ) -> tuple[Fabric, bool, str, Any]:
    """``(fab, ok, why, found)`` after looking for the fabric's symmetry when it carries no
    claim and the full LP would be slow (or ``"symmetric"`` is asked): ``fab`` carries the
    group found when the symmetric method can use it; ``found`` is the search (None when
    none ran)."""
    found = None
    if (not ok and fab.symmetry is None and traffic_invariant(fab, traffic)[0]
            and (method == "symmetric" or (method == "auto" and lp_size_estimate(fab, traffic, ga)
                                           > FIND_SYMMETRY_NONZEROS))):
        report("symmetry search")
        auto = method == "auto"
        useful = useful_endpoint_orbits(fab, traffic, ga) if auto else None
        found = search_symmetry(fab, time_limit=time_limit, max_endpoint_orbits=useful,
                                max_nodes=FIND_SYMMETRY_NODES if auto else None)
        if found.symmetry is not None:
            claimed = with_symmetry(fab, found.symmetry)
            found_ok, found_why = symmetric_applicable(claimed, traffic)
            k = found.symmetry.n_endpoint_orbits
            if found_ok and useful is not None and k > useful:
                # A search stopped by its time limit returns a subgroup that may have up
                # to one orbit per endpoint: its LP would outgrow the full one.
                found_ok, found_why = False, (
                    f"it has {k} orbits on the endpoints, too many for its LP to beat the "
                    f"full one (at most {useful})")
            if found_ok:
                fab, ok = claimed, True
            else:
                why = f"{why}, and {found.message}, but {found_why}"
        else:
            why = f"{why}, and {found.message}"
    return fab, ok, why, found


def _approx_message(result: FlowResult, sol: LPSolution, gap: float) -> str:
    """An approximate result's bracket, gap and rounds, and whether the proofs met."""
    wide = (result.upper - result.lower) / result.upper
    text = (f"approximate: certified bracket [{result.lower:.9g}, {result.upper:.9g}] "
            f"(gap {wide:.3%}, asked {gap:.3%}); {sol.message}")
    if result.status == "optimal" and sol.status != "optimal":  # stopped, yet closed
        text += f"; closed to {EXACT_RTOL:g} relative, so theta is proven"
    return text


def _approx_out_of_memory(fab: Fabric, traffic: Traffic, scaled: Traffic, ga: GraphArrays,
                          ga_solve: GraphArrays, early: Any, include_endpoint_links: bool,
                          traffic_scale: float, capacity_unit: float) -> FlowResult | None:
    """``method="auto"``'s answer when the approximate method's flows do not fit in memory:
    the bracket proven without them (``early``'s stage, the cuts; solve units); else None."""
    need = flow_lp_size(fab, traffic, include_endpoint_links, ga).approx_bytes
    memory = shortfall(need)
    if memory is None:
        return None
    cut = cut_bracket(fab, scaled, ga_solve, include_endpoint_links=include_endpoint_links,
                      traffic_scale=traffic_scale, capacity_unit=capacity_unit)
    return unsolved([None if early is None else early[2], cut], lambda: cheap_bracket(
        fab, traffic, include_endpoint_links=include_endpoint_links),
        f"the approximate method would need about {gb(need)}, more than the {memory} "
        "available")


def _finished(result: FlowResult, traffic: Traffic, work_limit: int | None,
              start: float, report: Any, hose: Any = None) -> FlowResult:
    """``result`` as the answer, over the hose floor when one was proven: its traffic,
    limit and time, and the last stage reported."""
    result = with_hose_floor(result, hose, traffic)
    result.traffic_name, result.work_limit = traffic.name, work_limit
    result.seconds = now() - start
    report("done", result.lower, result.upper, result.status)
    return result


def _bounds_stage_first(fab: Fabric, traffic: Traffic, ga: GraphArrays,
                        warm: np.ndarray | None, report: Any, *, include_endpoint_links: bool,
                        traffic_scale: float, capacity_unit: float,
                        time_left: float | None = None,
                        ) -> tuple[FlowModel, list[np.ndarray], FlowResult | None] | None:
    """The full model, the lengths for its certificate and the bounds stage's result, when
    the stage's flow fits (:data:`ECMP_MAX_ENTRIES`, and
    :func:`~fabricopt.flow.budget.stage_fits` the time left); None otherwise (``traffic``
    and ``ga`` in solve units)."""
    entries = lp_size_estimate(fab, traffic, ga) // 3
    if entries > ECMP_MAX_ENTRIES or not stage_fits(entries, time_left):
        return None
    model, candidates, first = _build_and_bound(
        fab, traffic, ga, "lp", warm, include_endpoint_links=include_endpoint_links,
        bounds_first=True, traffic_scale=traffic_scale, capacity_unit=capacity_unit,
        report=report)
    return model, candidates, first  # type: ignore[return-value]


def _build_and_bound(fab: Fabric, traffic: Traffic, ga: GraphArrays, method: str,
                     warm: np.ndarray | None, *, include_endpoint_links: bool,
                     bounds_first: bool, traffic_scale: float, capacity_unit: float,
                     early: tuple[FlowModel, list[np.ndarray], FlowResult | None] | None = None,
                     out_of_time: Callable[[], bool] = lambda: False,
                     time_left: Callable[[], float | None] = lambda: None,
                     report: Any = SILENT
                     ) -> tuple[ThroughputModel | None, list[np.ndarray], FlowResult | None]:
    """The model ``method`` solves (``traffic`` and ``ga`` in solve units), the lengths
    offered to its certificate besides the solver's (a larger fabric's, and the cuts they
    and the hierarchy make), and the bounds stage's result (None when not run). ``early``
    is what :func:`_bounds_stage_first` already built and proved, reused as it is; the
    stage and its bracket go to ``report`` (:mod:`fabricopt._stages`). When
    ``out_of_time()``, the orbit roots are not routed and the symmetric LP is not built
    (the model may be None): the stage's bracket is the answer."""
    units = {"traffic_scale": traffic_scale, "capacity_unit": capacity_unit}
    if early is not None:
        flow_model, warm_candidates, first = early
        if method != "symmetric":
            return flow_model, warm_candidates, first
        if (first is not None and not first.exact and not out_of_time()
                and flow_model.n_commodities * len(flow_model.core_arcs) > TIER_MAX_ENTRIES):
            # The full layout was too large for the tier routing; the orbit roots are not.
            first = _with_root_routing(fab, traffic, ga, first, include_endpoint_links,
                                       **units)
        if first is not None and (first.exact or out_of_time()):
            return None, [], first
        return build_symmetric_lp(fab, _uniform_gbps(traffic),
                                  include_endpoint_links=include_endpoint_links, ga=ga,
                                  symmetry=fab._symmetry), [], first
    entries = lp_size_estimate(fab, traffic, ga) // 3  # flow variables of the full LP
    # A time limit too short for the routed stage gets the cuts (the stage cannot stop
    # halfway: a 2,048-GPU failed cluster took 22 s at time_limit=0.001 before this).
    run_bounds = (bounds_first and entries <= ECMP_MAX_ENTRIES
                  and stage_fits(entries, time_left()))
    # The symmetric method builds no full model: its cost is the routing from one root per
    # endpoint orbit (209 of 4,096 on a 3-tier Clos: 8 s to exact, where this branch once
    # answered with the cut under a 30 s limit).
    work = (getattr(fab._symmetry, "n_endpoint_orbits", 1) * ga.n_arcs
            if method == "symmetric" else entries)
    if bounds_first and not run_bounds and (out_of_time() or not stage_fits(
            work, time_left())):
        # Too large for the stage's routed point, and no budget left to build the full model
        # for a solver (92 s on a 16,384-GPU cluster): the cut is the stage's bracket.
        first = cut_bracket(fab, traffic, ga, include_endpoint_links=include_endpoint_links,
                            traffic_scale=traffic_scale, capacity_unit=capacity_unit)
        if first is not None:
            report("bounds", first.lower, first.upper, "hierarchy cuts only")
            return None, [], first
    flow_model = None
    warm_candidates: list[np.ndarray] = []
    if method != "symmetric" or run_bounds:
        flow_model = build_flow_lp(fab, traffic, include_endpoint_links, ga=ga)
        if warm is not None:
            cut = ball_cut_lengths(flow_model, warm)
            warm_candidates = [warm] if cut is None else [warm, cut]
        if method in ("approx", "lp") and not run_bounds:
            # The hierarchy's best cut, found in one pass over the arcs: an approximate
            # bracket, or an LP that stops short (superpod(1)'s: 4.7e7), is never looser.
            bound, lengths = structural_cut_lengths(fab, traffic, ga, include_endpoint_links)
            if np.isfinite(bound):
                warm_candidates = [*warm_candidates, lengths]
    first = None
    if bounds_first:
        report("bounds", detail="hierarchy cuts above, routed flows below" if run_bounds
               else "hierarchy cuts")
    if run_bounds and flow_model is not None:
        first, cut_lengths = bounds_stage(fab, flow_model, traffic,
                                          tiers=arc_tiers(fab, ga),
                                          traffic_scale=traffic_scale,
                                          capacity_unit=capacity_unit,
                                          extra_lengths=warm_candidates,
                                          # A failure trial's approximate solve starts
                                          # from the intact lengths: the extra routing
                                          # (about 1 s on a failed superpod(1)) buys it
                                          # little.
                                          tiered=warm is None)
        warm_candidates = warm_candidates + cut_lengths
    elif bounds_first:
        # Too large for the ECMP flow: the cut alone still caps the solver's upper bound.
        first = cut_bracket(fab, traffic, ga, include_endpoint_links=include_endpoint_links,
                            traffic_scale=traffic_scale, capacity_unit=capacity_unit)
        if method == "symmetric" and not out_of_time():
            first = _with_root_routing(fab, traffic, ga, first, include_endpoint_links,
                                       **units)
    if first is not None:
        report("bounds", first.lower, first.upper, "proven")
    if first is not None and out_of_time():
        return flow_model, warm_candidates, first  # no budget left to build a solve
    if method == "symmetric" and not (first is not None and first.exact):
        # The claim was checked against the graph by symmetric_applicable; its distance
        # bound holds for invariant lengths only, so no other lengths are offered to it.
        model = build_symmetric_lp(fab, _uniform_gbps(traffic),
                                   include_endpoint_links=include_endpoint_links, ga=ga,
                                   symmetry=fab._symmetry)
        return model, [], first
    return flow_model, warm_candidates, first  # type: ignore[return-value]


def _with_root_routing(fab: Fabric, traffic: Traffic, ga: GraphArrays,
                       first: FlowResult | None, include_endpoint_links: bool, *,
                       traffic_scale: float, capacity_unit: float) -> FlowResult | None:
    """``first`` (the stage's bracket) tightened by :func:`root_routing_bracket` when
    ``fab`` carries a found symmetry: a point of the symmetric method's LP from one root per
    endpoint orbit, at the cost of 209 sources rather than 4,096 on the 3-tier Clos of
    ``docs/bounds-first.md``."""
    if not isinstance(fab._symmetry, FoundSymmetry):
        return first
    roots = root_routing_bracket(fab, traffic, ga, include_endpoint_links=include_endpoint_links,
                                 traffic_scale=traffic_scale, capacity_unit=capacity_unit)
    if roots is None:
        return first
    return roots if first is None else closed(tighter_bracket(roots, first))


def root_routing_bracket(fab: Fabric, traffic: Traffic, ga: GraphArrays, *,
                         include_endpoint_links: bool, traffic_scale: float,
                         capacity_unit: float) -> FlowResult | None:
    """The level-by-level routing of :mod:`fabricopt.flow.tier_routing` from one root per
    endpoint orbit of ``fab``'s symmetry (found, so the certificate carries it), proven as a
    point of the unreduced symmetric LP: a lower bound with the hop-length upper bound
    (``traffic`` and ``ga`` in solve units). None when it cannot route, or the fabric has
    no scale-up links (no servers to relay over)."""
    symmetry = fab._symmetry  # checked by the caller (symmetric_applicable)
    scale_up = np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in ga.arcs], dtype=bool)
    if not scale_up.any():
        return None  # no servers to relay over: fewest-hop WCMP is already this routing
    model = build_symmetric_lp(fab, _uniform_gbps(traffic), reduce=False,
                               include_endpoint_links=include_endpoint_links, ga=ga,
                               symmetry=symmetry, assemble=False)
    point = symmetric_tier_point(model, node_layers(fab, ga), scale_up)
    if point is None:
        return None
    sol = LPSolution("not_solved", "bounds first: each orbit root routed below the lowest tier "
                     "that joins its pairs, spread over the orbits", x=point)
    result = certified_result(model, sol, method="bounds", backend="none",
                              fabric_name=fab.name, tiers=arc_tiers(fab, ga),
                              traffic_scale=traffic_scale, capacity_unit=capacity_unit,
                              polish=False)
    if result.certificate is not None:
        result.certificate = replace(result.certificate, symmetry=symmetry)
    return result


def cut_bracket(fab: Fabric, traffic: Traffic, ga: GraphArrays, *,
                include_endpoint_links: bool, traffic_scale: float, capacity_unit: float
                ) -> FlowResult | None:
    """The bracket ``[0, best hierarchy cut]`` without building the LP (``traffic`` and
    ``ga`` in solve units); None when no cut bounds anything."""
    bound, lengths = structural_cut_lengths(fab, traffic, ga, include_endpoint_links)
    if not np.isfinite(bound):
        return None
    # The cut's value is itself the proof: its lengths' distance bound is never above it
    # (every pair it separates is at least 1 apart), so the checker's recomputation of them
    # confirms it, and no shortest paths from every endpoint are needed here.
    sent = [d for d in traffic.out_gbps().values() if d > 0]
    mean_out = float(sum(sent)) / max(len(sent), 1) * capacity_unit
    unit = capacity_unit
    certificate = FlowCertificate(in_units(ga, 1.0 / unit), arc_tiers(fab, ga), None, lengths,
                                  None, None, traffic_scale, include_endpoint_links,
                                  capacity_unit=unit)
    return FlowResult(theta=None, lower=0.0, upper=bound * traffic_scale, status="not_solved",
                      method="bounds", backend="none", seconds=0.0, per_endpoint_gbps=0.0,
                      mean_out_gbps=mean_out / traffic_scale, message="hierarchy cuts only",
                      fabric_name=fab.name, certificate=certificate)


def bounds_stage(fab: Fabric, model: FlowModel, traffic: Traffic, *, tiers: tuple[str, ...],
                 traffic_scale: float, capacity_unit: float,
                 extra_lengths: Sequence[np.ndarray] = (), tiered: bool = True
                 ) -> tuple[FlowResult | None, list[np.ndarray]]:
    """The bounds of :mod:`fabricopt.flow.bounds` for a built ``model`` (in its units), as a
    result with method ``"bounds"`` (None when ECMP cannot route), and the best hierarchy
    cut's lengths (for the solver's certificate). ``tiered=False`` leaves out the tier
    routing of :mod:`fabricopt.flow.tier_routing`."""
    ga = model.ga
    bound, lengths = structural_cut_lengths(fab, traffic, ga, model.include_endpoint_links)
    cut_lengths = [lengths] if np.isfinite(bound) else []
    scale_up = np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in ga.arcs], dtype=bool)
    # The best routing between the switches the endpoints attach to first, where servers
    # relay at both ends as the LP chooses; PXN relays (the fabric's rails) where that
    # declines or falls short, and fixed WCMP shares only after both.
    rails = rail_labels(fab, ga)
    point = ecmp_point(model, scale_up, scale_out_lp=True, rails=rails,
                       both_ends=bool(scale_up.any()))
    if scale_up.any() and (point is None or point[-1] < bound * (1 - 1e-6)):
        pxn = ecmp_point(model, scale_up, scale_out_lp=True, rails=rails)
        if pxn is not None and (point is None or pxn[-1] > point[-1]):
            point = pxn
    if point is None or point[-1] < bound * (1 - 1e-6):
        # WCMP, its splits rebalanced against the load (fixed shares are its first round).
        shares = ecmp_point(model, scale_up, rebalance_to=bound)
        if shares is not None and (point is None or shares[-1] > point[-1]):
            point = shares
    if tiered and scale_up.any() and (point is None or point[-1] < bound * (1 - 1e-6)):
        # Pairs kept below the lowest tier that joins them, with relays over servers that
        # span leaves (tier_routing): the routing that meets a multi-tier Clos's cut. Without
        # servers to relay over, fewest-hop WCMP already stays as low as it can.
        tiered = tier_point(model, node_layers(fab, ga), scale_up)
        if tiered is not None and (point is None or tiered[-1] > point[-1]):
            point = tiered
    if point is None:
        return None, cut_lengths
    sol = LPSolution("optimal", "bounds first: ECMP fluid routing below, hierarchy cuts and "
                     "arc lengths above", x=point)
    result = certified_result(model, sol, method="bounds", backend="none",
                              fabric_name=fab.name, tiers=tiers, traffic_scale=traffic_scale,
                              capacity_unit=capacity_unit, polish=False,
                              extra_lengths=[*extra_lengths, *cut_lengths])
    return result, cut_lengths


def _solve_approx(model: FlowModel, warm_candidates: list[np.ndarray], *, gap: float,
                  time_limit: float | None, progress: bool | None, scale: float,
                  work_limit: int | None, report: Any = SILENT,
                  known_lower: float = 0.0) -> LPSolution:
    """The approximate method on ``model``, its first lengths priced at the candidates, with
    a progress bar of its bracket and each round reported (in the caller's units)."""
    bar = progress_bar(progress, desc="approx", unit="round")
    seed = None
    if warm_candidates:  # the LP's capacity rows: core arcs, then endpoint rows
        seed = np.stack([np.concatenate([w[model.core_arcs], w[model.ep_rows_arc]])
                         for w in warm_candidates])
    try:
        return solve_approx(model, gap=gap, time_limit=time_limit,
                            progress=_bracket_reporter(bar, scale, report),
                            seed_lengths=seed,
                            max_rounds=work_limit, known_lower=known_lower)
    finally:
        if bar is not None:
            bar.close()


def _bracket_reporter(bar: Any, scale: float, stages: Any = SILENT) -> Any:
    """A progress callback that shows each round's certified bracket (caller's units) on
    ``bar`` and reports it to ``stages``; None when neither is shown."""
    if bar is None and not stages:
        return None

    def report(info: dict[str, float]) -> None:
        lower, upper = info["lower"] * scale, info["upper"] * scale
        stages("approximate rounds", lower, upper, f"round {int(info['iteration'])}")
        if bar is not None:
            wide = (upper - lower) / upper if upper > 0 else 0.0
            bar.update(1)
            bar.set_postfix_str(f"theta in [{lower:.6g}, {upper:.6g}], gap {wide:.2%}")

    return report


def arc_tiers(fab: Fabric, ga: GraphArrays) -> tuple[str, ...]:
    """The ``tier`` of each arc, in the order of ``ga``."""
    if ga.tiers:
        return ga.tiers
    return tuple(tier_of(fab.graph[u][v]) for u, v in ga.arcs)


def solve_flow_model(model: FlowModel, backend: str = "highs", time_limit: float | None = None,
                     fabric_name: str = "", tiers: tuple[str, ...] = (),
                     **backend_options: Any) -> FlowResult:
    """Solve a built :class:`FlowModel`, certify the answer and read it back.

    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> r = fo.solve_flow_model(fo.build_flow_lp(fab, fo.all_to_all(fab)))
    >>> round(r.theta, 9)   # 8 / 4**2
    0.5
    """
    if not isinstance(model, FlowModel):
        raise InvalidParameterError(f"solve_flow_model(): model must be a FlowModel (from "
                                    f"build_flow_lp), got {type(model).__name__}")
    time_limit = check_solve_args("solve_flow_model", backend, time_limit)
    check_lp_memory("solve_flow_model", model)
    sol = solve_lp(model.lp, backend, time_limit, **backend_options)
    result = certified_result(model, sol, method="lp", backend=backend, fabric_name=fabric_name,
                              tiers=tiers)
    result.traffic_name = model.traffic.name
    return result


def cheap_bracket(fab: Fabric, traffic: Traffic, backend: str = "none",
                  include_endpoint_links: bool = True) -> FlowResult:
    """A certified bracket without an LP: ``lower = 0``, the hop-length distance bound and
    the endpoint-link bound ``theta <= capacity / demand`` of every collapsed endpoint."""
    demand = CollapsedDemand.of(fab, traffic, include_endpoint_links)
    result = certified_result(demand, LPSolution("not_solved", "no LP was solved"),
                              method="bounds", backend=backend, fabric_name=fab.name,
                              tiers=arc_tiers(fab, demand.ga),
                              upper_cap=demand.endpoint_limit())
    result.traffic_name = traffic.name
    return result


__all__ = ["bounds_stage", "cheap_bracket", "max_concurrent_flow",
           "solve_flow_model", "tighter_bracket"]
