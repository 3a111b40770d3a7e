"""``max_concurrent_flow``: check, read the problem once, follow its plan, read back.

The decision of ``method="auto"`` is :func:`fabricopt.flow.plan.plan` (print it to see what
it will do on a fabric); each step is also public so a power user can stop after building
and inspect or export the LP::

    model = build_flow_lp(fab, traffic)        # the LP and its inverse maps
    export_mps(model.lp, "fabric.mps")         # any solver
    result = solve_flow_model(model)           # solve, certify, read back
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._stages import stage_report
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .arguments import check_stage_and_work, checked_arguments
from .backends import check_solve_args, solve_lp
from .bounds_first.brackets import arc_tiers, bounds_stage, cut_bracket, root_routing_bracket
from .brackets import tighter_bracket
from .budget import check_lp_memory, now
from .certified import certified_result
from .formulation import FlowModel
from .plan import (
    FIND_SYMMETRY_NODES,
    FIND_SYMMETRY_NONZEROS,
    HOSE_FLOOR_REACH,
    MAX_AUTO_NONZEROS,
    SYMMETRIC_SIZE_ADVANTAGE,
    cheap_bracket,
    plan,
    run,
    useful_endpoint_orbits,
    useful_symmetry,
)
from .problem import (
    Budget,
    FlowProblem,
    full_lp_entries,
    symmetric_applicable,
    traffic_invariant,
)
from .result import FlowResult
from .stages import Stage
from .time_budget import TimeBudget, spending
from .units import check_capacity_spread
from .warm import warm_lengths


def lp_size_estimate(fab: Fabric, traffic: Traffic, ga: GraphArrays | None = None) -> int:
    """Nonzeros the full LP would have (computed without building it; ``ga``, the fabric's
    arrays, spares reading them again: 5 s on 128,000 GPUs)."""
    return 3 * full_lp_entries(fab, traffic, ga)


def max_concurrent_flow(fab: Fabric, traffic: Traffic | None = None, *, method: str = "auto",
                        backend: str = "highs", time_limit: float | None = None,
                        include_endpoint_links: bool = True, gap: float = 0.01,
                        progress: bool | None = None, warm_start: FlowResult | None = None,
                        bounds_first: bool | None = None, work_limit: int | None = None,
                        stages: Sequence[Stage] = (), **backend_options: Any) -> FlowResult:
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
        Seconds for the whole call, counted from its start (the first call in a process
        loads the solver's modules before it; the first call on a fabric reads its arrays,
        kept for the next). It is honoured within 20 % or 0.1 s, whichever is larger
        (``docs/throughput.md``, "Under a time limit"): every LP inside, however deep, gets
        at most what is left of it, and each step no clock stops (the intact fabric's
        answer, the routed bounds, the two-phase floor, the symmetry search, the
        approximate method's first round) is begun only when its size-based estimate fits
        two thirds of what is left, else skipped (``print(plan(...))`` says why). On expiry
        the status is ``"time_limit"`` and the bracket is what was proven, at the least
        ``[0, the hierarchy's best cut]``, certified as always. A point the limit stopped is
        certified as it stands, not polished (that took a second more).
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
    if time_limit is not None:
        # The solver's modules, loaded on first use (a few tenths of a second), are loaded
        # before the clock starts: a limit counts the call's own work.
        import scipy.optimize  # noqa: F401
    start, report = now(), stage_report()
    traffic, include_endpoint_links, gap, progress = checked_arguments(
        fab, traffic, method, backend, time_limit, include_endpoint_links, gap, progress)
    bounds_first, work_limit, backend_options = check_stage_and_work(
        backend, bounds_first, work_limit, backend_options)
    check_solve_args("max_concurrent_flow", backend, time_limit, backend_options)
    stages = _checked_stages(stages)
    ga = GraphArrays.from_fabric(fab)  # the symmetry found below shares fab's graph
    check_capacity_spread("max_concurrent_flow", ga, fab.name)
    check_lp_memory("max_concurrent_flow", fab, traffic, include_endpoint_links, ga, method)
    warm = (None if warm_start is None
            else warm_lengths("max_concurrent_flow", ga, warm_start))
    problem = FlowProblem(fab, traffic, method=method, backend=backend, gap=gap,
                          include_endpoint_links=include_endpoint_links, progress=progress,
                          bounds_first=bounds_first, budget=Budget(time_limit, start, work_limit),
                          warm=warm, backend_options=backend_options, report=report, ga=ga)
    if time_limit is None:
        return disconnected(run(plan(problem, stages), problem))
    # The limit is the budget every LP and step inside draws from, however deep (a nested
    # solve of the intact fabric included): each gets at most what is left of it, on the
    # call's own clock.
    with spending(TimeBudget(time_limit, solves=1, start=start, clock=now)):
        return disconnected(run(plan(problem, stages), problem))


def disconnected(result: FlowResult) -> FlowResult:
    """``result`` with status ``"disconnected"`` when a demand pair has no path at all
    (``result.unreachable`` names it): theta is 0, exactly, whichever method proved it."""
    if result.unreachable and result.status == "optimal" and result.upper == 0:
        return replace(result, status="disconnected")
    return result


def _checked_stages(stages: Any) -> tuple[Stage, ...]:
    """``stages`` as a tuple of :class:`~fabricopt.flow.stages.Stage`, or a clear error."""
    try:
        out = tuple(stages)
    except TypeError:
        out = None
    if out is None or not all(isinstance(s, Stage) for s in out):
        raise InvalidParameterError(
            "max_concurrent_flow(): stages must be a sequence of stages (objects with name, "
            f"applies, cost and run: fabricopt.flow.stages.Stage), got {stages!r}")
    return out


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
    if not isinstance(fabric_name, str):
        raise InvalidParameterError(f"solve_flow_model(): fabric_name must be a string (the "
                                    f"name the result carries), got {fabric_name!r}")
    if (not isinstance(tiers, tuple | list) or not all(isinstance(t, str) for t in tiers)
            or len(tiers) not in (0, model.ga.n_arcs)):
        raise InvalidParameterError(f"solve_flow_model(): tiers must be empty or one tier "
                                    f"name per arc of the model ({model.ga.n_arcs}), got "
                                    f"{tiers!r}"[:200])
    tiers = tuple(tiers)
    check_lp_memory("solve_flow_model", model)
    sol = solve_lp(model.lp, backend, time_limit, **backend_options)
    result = certified_result(model, sol, method="lp", backend=backend, fabric_name=fabric_name,
                              tiers=tiers)
    result.traffic_name = model.traffic.name
    return result


__all__ = ["FIND_SYMMETRY_NODES", "FIND_SYMMETRY_NONZEROS", "HOSE_FLOOR_REACH",
           "MAX_AUTO_NONZEROS", "SYMMETRIC_SIZE_ADVANTAGE", "arc_tiers", "bounds_stage",
           "cheap_bracket", "cut_bracket", "lp_size_estimate", "max_concurrent_flow",
           "root_routing_bracket", "solve_flow_model", "symmetric_applicable",
           "tighter_bracket", "traffic_invariant", "useful_endpoint_orbits",
           "useful_symmetry"]
