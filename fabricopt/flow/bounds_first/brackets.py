"""The bounds stage's brackets: the hierarchy's best cut above, routed flows below (ECMP,
WCMP rebalanced, PXN relays, tier routing), proven as a point of the full LP or, with a
found symmetry, of the symmetric LP from one root per endpoint orbit
(``docs/bounds-first.md``).

Each maker returns a certified :class:`~fabricopt.flow.result.FlowResult` with method
``"bounds"`` (or None when it proves nothing); the stages of :mod:`fabricopt.flow.plan`
decide which run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._stages import SILENT
from ...fabric import Fabric
from ...graph_arrays import FabricShape, GraphArrays
from ...symmetry.search import FoundSymmetry
from ...tiers import tier_of
from ...traffic import Traffic
from ..bounds import (
    ECMP_MAX_ENTRIES,
    HierarchyCut,
    ecmp_point,
    rail_labels,
    structural_cut_lengths,
)
from ..brackets import closed, tighter_bracket
from ..budget import ECMP_SECONDS_PER_ENTRY, STAGE_ALWAYS_SECONDS, stage_fits
from ..certified import certified_result
from ..formulation import FlowModel, build_flow_lp
from ..lp import LPSolution
from ..lp_proof import roots_carrying
from ..model import ThroughputModel
from ..problem import full_lp_entries
from ..result import FlowCertificate, FlowResult
from ..symmetric import build_symmetric_lp
from ..time_budget import HONOURED_WITHIN_SECONDS, TimeBudget, left_now, spending
from ..units import in_units
from ..warm import ball_cut_lengths
from .tier_routing import TIER_MAX_ENTRIES, node_layers, symmetric_tier_point, tier_point

__all__ = ["arc_tiers", "bounds_stage", "build_and_bound",
           "cut_bracket", "root_routing_bracket", "uniform_gbps", "with_root_routing"]


def arc_tiers(fab: Fabric, ga: GraphArrays) -> tuple[str, ...]:
    """The ``tier`` of each arc, in the order of ``ga``."""
    if ga.tiers:
        return ga.tiers
    return tuple(tier_of(fab.graph[u][v]) for u, v in ga.arcs)


def uniform_gbps(traffic: Traffic) -> float:
    """The one demand of a uniform all-to-all (Gb/s per ordered pair)."""
    return traffic.uniform_gbps or next(iter(traffic.pairs.values()))


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
    gbps = in_units(ga, 1.0 / unit)
    certificate = FlowCertificate(gbps, arc_tiers(fab, ga), upper_proof=HierarchyCut(
        gbps, lengths, traffic_scale, unit, include_endpoint_links))
    return FlowResult(theta=None, lower=0.0, upper=bound * traffic_scale, status="not_solved",
                      method="bounds", backend="none", seconds=0.0, per_endpoint_gbps=0.0,
                      mean_out_gbps=mean_out / traffic_scale, message="hierarchy cuts only",
                      fabric_name=fab.name, certificate=certificate,
                      stages={"lower": "none", "upper": "hierarchy cut"})


def bounds_stage(fab: Fabric, model: FlowModel, traffic: Traffic, *, tiers: tuple[str, ...],
                 traffic_scale: float, capacity_unit: float,
                 extra_lengths: Sequence[np.ndarray] = (), tiered: bool = True
                 ) -> tuple[FlowResult | None, list[np.ndarray]]:
    """The bounds of :mod:`fabricopt.flow.bounds` for a built ``model`` (in its units), as a
    result with method ``"bounds"`` (None when ECMP cannot route), and the best hierarchy
    cut's lengths (for the solver's certificate). ``tiered=False`` leaves out the tier
    routing of :mod:`fabricopt.flow.bounds_first.tier_routing`."""
    ga = model.ga
    bound, lengths = structural_cut_lengths(fab, traffic, ga, model.include_endpoint_links)
    cut_lengths = [lengths] if np.isfinite(bound) else []
    scale_up = FabricShape.of(fab, ga).scale_up  # read once, not an attribute lookup per arc
    rails = rail_labels(fab, ga)
    entries = model.n_commodities * len(model.core_arcs)
    # A stage expected within STAGE_ALWAYS_SECONDS runs whole, its LPs given at least
    # HONOURED_WITHIN_SECONDS (they are as small): its bracket is the least a limited call
    # returns, whatever the machine's load; an estimate far short (an attach-switch LP of a
    # jellyfish costs a thousand times its entries' share) still ends within the contract.
    # A larger stage begun under a limit stops each LP at what is left.
    left = left_now()
    with (spending(TimeBudget(None if left is None else max(left, HONOURED_WITHIN_SECONDS),
                              solves=1))
          if entries * ECMP_SECONDS_PER_ENTRY <= STAGE_ALWAYS_SECONDS
          else contextlib.nullcontext()):
        point = _routed_point(fab, model, ga, scale_up, rails, bound, tiered)
    if point is None:
        return None, cut_lengths
    sol = LPSolution("optimal", "bounds first: ECMP fluid routing below, hierarchy cuts and "
                     "arc lengths above", x=point)
    result = certified_result(model, sol, method="bounds", backend="none",
                              fabric_name=fab.name, tiers=tiers, traffic_scale=traffic_scale,
                              capacity_unit=capacity_unit, polish=False,
                              extra_lengths=[*extra_lengths, *cut_lengths])
    result.stages = {"lower": "routed bounds", "upper": "routed bounds"}
    return result, cut_lengths


def _open(point: np.ndarray | None, bound: float) -> bool:
    """Whether the bounds stage tries its next routing: the point so far falls short of the
    cut, and the call's time limit (:func:`~fabricopt.flow.time_budget.left_now`) is not
    spent (its LPs stop at it; the routing after one that stopped is not begun)."""
    return (point is None or point[-1] < bound * (1 - 1e-6)) and left_now() != 0


def _routed_point(fab: Fabric, model: FlowModel, ga: GraphArrays, scale_up: np.ndarray,
                  rails: np.ndarray, bound: float, tiered: bool) -> np.ndarray | None:
    """The bounds stage's best routed point of ``model`` (theta last), None when none
    routes: each routing tried while the point falls short of the cut ``bound``."""
    # The best routing between the switches the endpoints attach to first, where servers
    # relay at both ends as the LP chooses; PXN relays (the fabric's rails) where that
    # declines or falls short, and fixed WCMP shares only after both.
    point = None
    if not scale_up.any():
        # Without servers, WCMP rebalanced first: on failed fat trees it meets the cut in
        # milliseconds where the attach-switch LP took 0.3 to 1.6 s (fat_tree(8) minus one
        # link, 1 % and 5 % of its switch links); the LP only where it falls short.
        point = ecmp_point(model, scale_up, rebalance_to=bound)
    if _open(point, bound):
        routed = ecmp_point(model, scale_up, scale_out_lp=True, rails=rails,
                            both_ends=bool(scale_up.any()))
        if routed is not None and (point is None or routed[-1] > point[-1]):
            point = routed
    if scale_up.any() and _open(point, bound):
        pxn = ecmp_point(model, scale_up, scale_out_lp=True, rails=rails)
        if pxn is not None and (point is None or pxn[-1] > point[-1]):
            point = pxn
    if scale_up.any() and _open(point, bound):
        # WCMP, its splits rebalanced against the load (fixed shares are its first round).
        shares = ecmp_point(model, scale_up, rebalance_to=bound)
        if shares is not None and (point is None or shares[-1] > point[-1]):
            point = shares
    if tiered and scale_up.any() and _open(point, bound):
        # Pairs kept below the lowest tier that joins them, with relays over servers that
        # span leaves (tier_routing): the routing that meets a multi-tier Clos's cut. Without
        # servers to relay over, fewest-hop WCMP already stays as low as it can.
        tiered = tier_point(model, node_layers(fab, ga), scale_up)
        if tiered is not None and (point is None or tiered[-1] > point[-1]):
            point = tiered
    return point


def root_routing_bracket(fab: Fabric, traffic: Traffic, ga: GraphArrays, *,
                         include_endpoint_links: bool, traffic_scale: float,
                         capacity_unit: float) -> FlowResult | None:
    """The level-by-level routing of :mod:`fabricopt.flow.bounds_first.tier_routing` from
    one root per
    endpoint orbit of ``fab``'s symmetry (found, so the certificate carries it), proven as a
    point of the unreduced symmetric LP: a lower bound with the hop-length upper bound
    (``traffic`` and ``ga`` in solve units). None when it cannot route, or the fabric has
    no scale-up links (no servers to relay over)."""
    symmetry = fab._symmetry  # checked by the caller (symmetric_applicable)
    scale_up = FabricShape.of(fab, ga).scale_up  # read once, not an attribute lookup per arc
    if not scale_up.any():
        return None  # no servers to relay over: fewest-hop WCMP is already this routing
    model = build_symmetric_lp(fab, uniform_gbps(traffic), reduce=False,
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
        result.certificate = roots_carrying(result.certificate, symmetry)
    result.stages = {"lower": "orbit roots routed", "upper": "orbit roots routed"}
    return result


def with_root_routing(fab: Fabric, traffic: Traffic, ga: GraphArrays,
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


def build_and_bound(fab: Fabric, traffic: Traffic, ga: GraphArrays, method: str,
                     warm: np.ndarray | None, *, include_endpoint_links: bool,
                     bounds_first: bool, traffic_scale: float, capacity_unit: float,
                     early: tuple[FlowModel, list[np.ndarray], FlowResult | None] | None = None,
                     out_of_time: Callable[[], bool] = lambda: False,
                     time_left: Callable[[], float | None] = lambda: None,
                     report: Any = SILENT, entries: int | None = None,
                     routable: bool | None = None
                     ) -> tuple[ThroughputModel | None, list[np.ndarray], FlowResult | None]:
    """The model ``method`` solves (``traffic`` and ``ga`` in solve units), the lengths
    offered to its certificate besides the solver's (a larger fabric's, and the cuts they
    and the hierarchy make), and the bounds stage's result (None when not run). ``early``
    is what the routed bounds stage (:class:`~fabricopt.flow.plan.RoutedBounds`) already
    built and proved, reused as it is; the
    stage and its bracket go to ``report`` (:mod:`fabricopt._stages`). When
    ``out_of_time()``, the orbit roots are not routed and the symmetric LP is not built
    (the model may be None): the stage's bracket is the answer. ``entries`` (the full LP's
    flow variables) and ``routable`` (whether the routing takes them) are the plan's, when
    it has counted them."""
    units = {"traffic_scale": traffic_scale, "capacity_unit": capacity_unit}
    if early is not None:
        flow_model, warm_candidates, first = early
        if method != "symmetric":
            return flow_model, warm_candidates, first
        if (first is not None and not first.exact and not out_of_time()
                and flow_model.n_commodities * len(flow_model.core_arcs) > TIER_MAX_ENTRIES):
            # The full layout was too large for the tier routing; the orbit roots are not.
            first = with_root_routing(fab, traffic, ga, first, include_endpoint_links,
                                       **units)
        if first is not None and (first.exact or out_of_time()):
            return None, [], first
        return build_symmetric_lp(fab, uniform_gbps(traffic),
                                  include_endpoint_links=include_endpoint_links, ga=ga,
                                  symmetry=fab._symmetry), [], first
    if entries is None:  # flow variables of the full LP
        entries = full_lp_entries(fab, traffic, ga)
    # A time limit too short for the routed stage gets the cuts (the stage cannot stop
    # halfway: a 2,048-GPU failed cluster took 22 s at time_limit=0.001 before this).
    if routable is None:  # at most ECMP_MAX_ENTRIES flow variables, unless the plan says
        routable = entries <= ECMP_MAX_ENTRIES
    run_bounds = (bounds_first and routable
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
            first = with_root_routing(fab, traffic, ga, first, include_endpoint_links,
                                       **units)
    if first is not None:
        report("bounds", first.lower, first.upper, "proven")
    if first is not None and out_of_time():
        return flow_model, warm_candidates, first  # no budget left to build a solve
    if method == "symmetric" and not (first is not None and first.exact):
        # The claim was checked against the graph by symmetric_applicable; its distance
        # bound holds for invariant lengths only, so no other lengths are offered to it.
        model = build_symmetric_lp(fab, uniform_gbps(traffic),
                                   include_endpoint_links=include_endpoint_links, ga=ga,
                                   symmetry=fab._symmetry)
        return model, [], first
    return flow_model, warm_candidates, first  # type: ignore[return-value]
