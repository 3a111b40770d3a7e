"""A failure trial answered from the intact fabric's flow: rerouted below, a cut above.

The intact fabric is solved once per study; its flow, re-proven there, is sent around each
failed fabric's lost arcs (:mod:`fabricopt.failures.reroute`) for a lower bound, and the failed
fabric's hierarchy cuts (:func:`~fabricopt.flow.bounds.structural_cut_lengths`) give the upper
one. Failures whose cost is local close here: on ``superpod(16)`` with 1% of its links failed
the bound is the cut around the server that lost the most NICs, met exactly, in a second where
the failed fabric's own routing would hold 400 million flow entries.

Both bounds are re-proven by :func:`~fabricopt.check_certificate` on the failed fabric (the
intact flow on the intact fabric first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._checks import check_int
from ..fabric import Fabric
from ..flow.api import (
    FIND_SYMMETRY_NONZEROS,
    arc_tiers,
    lp_size_estimate,
    max_concurrent_flow,
    symmetric_applicable,
    useful_symmetry,
)
from ..flow.bounds import ECMP_MAX_ENTRIES, HierarchyCut, structural_cut_lengths
from ..flow.brackets import with_stage_ends
from ..flow.budget import now
from ..flow.certificate import EXACT_RTOL
from ..flow.from_intact import acceptable
from ..flow.lp_proof import ProvenFlow, proven_flow
from ..flow.proof import ArcLengths, endpoint_cut_bound, smallest_demand
from ..flow.result import FlowCertificate, FlowResult
from ..generators.recipe import try_replay
from ..graph_arrays import GraphArrays
from ..symmetry.search import with_symmetry
from ..traffic import Traffic
from .plane_bracket import _without_gap, planes_follow
from .reroute import ReroutedFlow, detour_flows, rerouted

#: How many intact fabrics (by recipe) an :class:`IntactSolves` keeps solved for later
#: failed copies by default: a loop over failure draws of one design solves its intact
#: fabric once (about 9 s each time for a 4,096-GPU 3-tier Clos), and each kept one holds a
#: fabric and its flow in memory.
SOLVED_INTACT_KEPT = 2

#: Under a time limit, the most of what is left the detours' search may take: the rest is
#: for what the engine does next with the bracket (the planes' LP, the two-phase floor).
REROUTE_SHARE = 0.5


def _share_of(budget: Any, share: float) -> Callable[[], float | None]:
    """A callable saying how many seconds are left of ``share`` of what ``budget`` (an
    engine :class:`~fabricopt.flow.problem.Budget`, or None) has left now: None without a
    time limit, 0 once spent.

    >>> _share_of(None, 0.5)() is None
    True
    """
    left = None if budget is None else budget.left()
    if left is None:
        return lambda: None
    stop = now() + share * left
    return lambda: max(stop - now(), 0.0)



@dataclass(frozen=True)
class IntactFlow:
    """The intact fabric, its answer, and that answer's flow re-proven once for a study's
    traffic (every trial reroutes the same flow)."""

    fab: Fabric
    result: FlowResult
    traffic: Traffic
    base: ProvenFlow

    @classmethod
    def of(cls, fab: Fabric, result: FlowResult, traffic: Traffic) -> IntactFlow | None:
        """None when ``result`` stores no flow to reroute (or proves none)."""
        base = proven_flow(fab, result, traffic)
        if base is None or base.theta <= 0:
            return None
        return cls(fab, result, traffic, base)

    def serves(self, traffic: Traffic) -> bool:
        """Whether ``traffic`` is the traffic the flow was proven for."""
        mine = self.traffic
        if traffic is mine:
            return True
        if traffic.is_uniform or mine.is_uniform:
            return (traffic.is_uniform and mine.is_uniform
                    and traffic.uniform_gbps == mine.uniform_gbps
                    and traffic.endpoints == mine.endpoints)
        return traffic.pairs == mine.pairs


def rerouted_answer(failed: Fabric, traffic: Traffic, intact: IntactFlow,
                    budget: Any = None, search: bool = True) -> FlowResult | None:
    """``failed``'s bracket from ``intact``'s flow sent around what failed (method
    ``"bounds"``; status ``"optimal"`` when it meets the hierarchy cut, else
    ``"inexact"``), or None when the detours cannot be built (a lost node, a lost arc with
    no way around it, too large an LP). ``budget`` (the engine's
    :class:`~fabricopt.flow.problem.Budget`, None: no limit): the detours' search takes at
    most :data:`REROUTE_SHARE` of what it has left, and keeps the best detours found by then.
    ``search`` False: no search beyond the even spread over each lost arc's shortest
    detours (a caller whose next stage closes the bracket another way).

    Examples
    --------
    A ring of 6 unit links carries all-to-all at theta = 8/36; without one link it is a path
    whose middle link carries 3 x 3 pairs each way: theta = 1/9. The ring's flow, that
    link's load sent the long way round, proves 1/9. A ring has no hierarchy to cut, so
    above it is only the cut around an end of the path: one link over the 5 units it sends.

    >>> import fabricopt as fo
    >>> ring = fo.ring(6)
    >>> traffic = fo.all_to_all(ring)
    >>> intact = IntactFlow.of(ring, fo.max_concurrent_flow(ring, traffic), traffic)
    >>> path = ring.without_links([("n0", "n1")])
    >>> r = rerouted_answer(path, traffic, intact)
    >>> r.method, round(r.lower, 6), round(r.upper, 6)
    ('bounds', 0.111111, 0.2)
    """
    if not intact.serves(traffic):
        return None
    start = time.perf_counter()
    ga = GraphArrays.from_fabric(failed)
    # The cut's value is its own proof (its lengths' distance bound is never above it; the
    # checker recomputes that bound), so no shortest paths are needed here.
    cut, lengths = structural_cut_lengths(failed, traffic, ga, True)
    upper = min(cut, endpoint_cut_bound(failed, traffic, ga))
    # The overload at which the flow meets the cut: an even spread that stays below it
    # needs no LP.
    enough = intact.base.theta / (upper * (1 - EXACT_RTOL / 2)) if upper > 0 else 1.0
    found = detour_flows(intact.base, ga, enough,
                         _share_of(budget, REROUTE_SHARE) if search else lambda: 0.0)
    if found is None:
        return None
    lost, share, detours = found
    got = rerouted(intact.base, lost, share, detours, ga, smallest_demand(traffic))
    if got is None:
        return None
    lower = min(got.lower, upper)
    closed = np.isfinite(upper) and upper - lower <= EXACT_RTOL * upper
    mean_out = traffic.mean_out_gbps()
    proof = ReroutedFlow(intact.fab, intact.result, lost, share, detours)
    above = HierarchyCut(ga, lengths) if np.isfinite(cut) else ArcLengths(ga, None)
    certificate = FlowCertificate(ga, arc_tiers(failed, ga), load=got.load,
                                  lower_proof=proof, upper_proof=above)
    status = "optimal" if closed else "inexact"
    # ``lost`` holds only the arcs whose intact load no longer fits (a lost link the flow
    # never used needs no detour), so the message says so.
    moved = (f"the load that no longer fits on {len(lost):,} failed or shrunk arcs sent "
             f"around them (busiest arc {got.overload:.4g} x its capacity before scaling)"
             if len(lost) else "every failed or shrunk arc still holds its intact load")
    message = f"below: the intact fabric's flow, {moved}; above: the hierarchy cut"
    return FlowResult(
        theta=lower if closed else None, lower=lower, upper=upper, status=status,
        method="bounds", backend="none", seconds=time.perf_counter() - start,
        per_endpoint_gbps=float(lower * mean_out), message=message,
        fabric_name=failed.name, traffic_name=traffic.name, max_overload=got.overload,
        max_residual=got.residual, mean_out_gbps=mean_out, certificate=certificate)


class IntactSolves:
    """Intact fabrics solved for their failed copies, by recipe: the last ``kept`` stay
    solved, so the next failed copy of the same design reuses its flow. Its owner decides
    how long they live (a sweep, a script, the package face's :data:`FROM_INTACT`).

    >>> solves = IntactSolves(kept=1)
    >>> len(solves), solves.kept
    (0, 1)
    """

    def __init__(self, kept: int = SOLVED_INTACT_KEPT) -> None:
        self.kept = check_int("IntactSolves", "kept", kept, minimum=1)
        self._flows: dict[str, IntactFlow] = {}  # recipe (as JSON) -> flow, oldest first

    def __len__(self) -> int:
        return len(self._flows)

    def __iter__(self) -> Iterator[IntactFlow]:
        """The intact flows kept, oldest first."""
        return iter(list(self._flows.values()))

    def clear(self) -> None:
        """Forget every intact fabric solved (their memory goes with them)."""
        self._flows.clear()

    def kept_for(self, failed: Fabric, traffic: Traffic) -> bool:
        """Whether the intact flow of ``failed``'s design for ``traffic`` is kept."""
        flow = self._flows.get(json.dumps(failed.recipe, sort_keys=True))
        return flow is not None and flow.serves(traffic)

    def flow(self, failed: Fabric, traffic: Traffic, size: int, budget: Any = None,
             intact: Fabric | None = None) -> IntactFlow | None:
        """The intact flow of ``failed``'s design for ``traffic``: kept, or solved now
        (:func:`_solved_intact`, within what ``budget`` has left; ``intact``: the fabric
        its recipe rebuilds, when already rebuilt) and kept; None when it cannot be
        solved exactly."""
        key = json.dumps(failed.recipe, sort_keys=True)
        flow = self._flows.get(key)
        if flow is not None and flow.serves(traffic):
            return flow
        flow = _solved_intact(failed, traffic, size, None if budget is None else budget.left(),
                              intact)
        if flow is not None:
            self._flows.pop(key, None)
            self._flows[key] = flow
            while len(self._flows) > self.kept:
                self._flows.pop(next(iter(self._flows)))
        return flow


def from_recipe(failed: Fabric, traffic: Traffic, solves: IntactSolves | None = None,
                budget: Any = None, search: bool | None = None) -> FlowResult | None:
    """``failed``'s bracket from the intact fabric its recipe rebuilds (a fabric made by
    ``without`` or ``fail_random`` keeps the generator call of the fabric it came from:
    :attr:`Fabric.origin <fabricopt.Fabric.origin>`), when ``failed`` is large enough for the
    detour to beat a solve of its own and the intact fabric is solved exactly at once (by
    its claim) or, where ``failed`` is too large for the routed bounds (whose approximate
    rounds take minutes), by the symmetry found in it; None otherwise. ``solves`` keeps the
    intact fabrics solved (default: one kept for this call alone). ``budget``: the engine's
    :class:`~fabricopt.flow.problem.Budget` (None: no limit); nothing is begun once it is
    spent, and the detours take at most :data:`REROUTE_SHARE` of what is left. ``search``:
    whether the detours search beyond their even spread (None: unless the planes follow,
    :func:`~fabricopt.failures.plane_bracket.planes_follow`)."""
    return _rerouted(failed, traffic, solves, budget, search)[0]


def _rerouted(failed: Fabric, traffic: Traffic, solves: IntactSolves | None, budget: Any,
              search: bool | None, ga: Any = None, intact: Fabric | None = None
              ) -> tuple[FlowResult | None, bool]:
    """:func:`from_recipe`'s answer, and whether its detours were searched (``ga``: the
    failed fabric's arrays, when at hand): the planes are read only once the cheap checks
    pass and the intact flow is at hand."""
    if not failed.origin.from_recipe or (budget is not None and budget.spent()):
        return None, False
    size = lp_size_estimate(failed, traffic, ga)
    if size <= FIND_SYMMETRY_NONZEROS:
        return None, False
    flow = (solves if solves is not None else IntactSolves()).flow(failed, traffic, size,
                                                                    budget, intact)
    if flow is None or (budget is not None and budget.spent()):
        return None, False
    # Where the planes follow (their LP begun: a SuperPOD's units or any Clos of servers
    # small enough), they lift the lower end past what the detours' search finds, which
    # keeps every flow's switches (9 % below the cut on a failed 16,384-GPU SuperPOD): the
    # detours give their even spread only (the search was 16 s of that SuperPOD's answer,
    # 10 s CPU of a failed 4,096-GPU 3-tier Clos's).
    if search is None:
        search = not planes_follow(failed, traffic, None if budget is None else budget.left(),
                                   ga)
    answer = rerouted_answer(failed, traffic, flow, budget, search=search)
    if answer is not None:
        answer.message += f" (intact fabric {flow.fab.name!r}, rebuilt from the recipe)"
    return answer, search


def _detours_apply(problem: Any) -> tuple[bool, str]:
    """Whether ``problem``'s fabric is a failed copy of a generated design, large enough
    for the detours to beat a solve of its own, and why not."""
    if not problem.fab.origin.from_recipe:
        return False, "not a failed copy of a generated fabric (made by without)"
    if lp_size_estimate(problem.fab, problem.traffic,
                        getattr(problem, "ga", None)) <= FIND_SYMMETRY_NONZEROS:
        return False, f"its own LP is small (at most {FIND_SYMMETRY_NONZEROS:,} nonzeros)"
    return True, ""


class RerouteFromIntact:
    """The engine stage that answers a failed fabric from the intact fabric its recipe
    rebuilds (:func:`from_recipe`): handed to :func:`~fabricopt.max_concurrent_flow` by its
    caller, with the :class:`IntactSolves` that keeps the intact fabrics solved.

    >>> stage = RerouteFromIntact()
    >>> stage.name, stage.solves.kept
    ('intact flow rerouted', 2)
    """

    name = "intact flow rerouted"

    def __init__(self, solves: IntactSolves | None = None) -> None:
        self.solves = IntactSolves() if solves is None else solves

    def applies(self, problem: Any) -> tuple[bool, str]:
        """Whether ``problem``'s fabric is a failed copy of a generated design, large
        enough for the detours to beat a solve of its own."""
        return _detours_apply(problem)

    def cost(self, problem: Any) -> str:
        kept = "kept" if len(self.solves) else "none kept yet"
        return (f"the intact fabric solved exactly once ({kept}), then one detour per lost "
                "arc")

    def narrowers_first(self, problem: Any) -> bool:
        """Whether the planes go first (the engine's
        :class:`~fabricopt.flow.plan.FromIntact`): the intact flow is not kept, the
        intact fabric carries no claim (its solve is a symmetry search and a routing: 8 s
        CPU of a failed 4,096-GPU 3-tier Clos, whose planes then close it alone), and the
        planes follow, on a failed fabric too large for the routed bounds (where such an
        intact fabric is solved at all). The intact fabric rebuilt to tell is kept for this
        call."""
        notes = getattr(problem, "notes", None)
        if notes is None or self.solves.kept_for(problem.fab, problem.traffic):
            return False
        ga = getattr(problem, "ga", None)
        if lp_size_estimate(problem.fab, problem.traffic, ga) // 3 <= ECMP_MAX_ENTRIES:
            return False  # an intact fabric without a claim is not solved (_solved_intact)
        intact = notes[REBUILT] = try_replay(problem.fab.recipe)
        if intact is None or symmetric_applicable(intact, problem.traffic)[0]:
            return False
        # Read after the intact fabric, as the detours would: the planes' reading of the
        # fabric is kept for their LP until then (a failed superpod(64) read it twice).
        budget = getattr(problem, "budget", None)
        follow = notes[FOLLOW] = planes_follow(problem.fab, problem.traffic,
                                               None if budget is None else budget.left(), ga)
        notes[PLANES_FIRST] = follow
        return follow

    def run(self, problem: Any, bracket: Any = None) -> FlowResult | None:
        notes = getattr(problem, "notes", {})
        # After the planes (they went first), the detours are searched: nothing follows;
        # otherwise searched unless the planes follow (as read by narrowers_first).
        follow = notes.pop(FOLLOW, None)
        search = True if notes.pop(PLANES_FIRST, False) else (
            None if follow is None else not follow)
        answer, searched = _rerouted(problem.fab, problem.traffic, self.solves,
                                     getattr(problem, "budget", None), search,
                                     getattr(problem, "ga", None), notes.pop(REBUILT, None))
        if answer is not None and not searched and hasattr(problem, "notes"):
            # For SearchedDetours, should the planes not close it (no answer: no intact
            # flow to search, none solved again).
            problem.notes[UNSEARCHED] = True
        return answer

    def answer(self, failed: Fabric, traffic: Traffic, budget: Any = None
               ) -> FlowResult | None:
        """:func:`from_recipe` with this stage's intact solves, within ``budget``."""
        return from_recipe(failed, traffic, self.solves, budget)


def _solved_intact(failed: Fabric, traffic: Traffic, size: int,
                   time_limit: float | None = None, intact: Fabric | None = None
                   ) -> IntactFlow | None:
    """The intact fabric ``failed``'s recipe rebuilds, solved exactly, with its flow
    re-proven; None when it cannot be rebuilt or is not solved exactly (``time_limit``, the
    seconds the caller has left, bounds the solve).

    No wall clock decides it without a time limit (a busy machine gets the same answer as
    an idle one): a fabric without a claim is solved only by the symmetry found in it, or
    not at all. ``intact``: that fabric, when already rebuilt."""
    intact = try_replay(failed.recipe) if intact is None else intact
    if intact is None:
        return None
    limit = {} if time_limit is None else {"time_limit": time_limit}
    if symmetric_applicable(intact, traffic)[0]:
        solved = max_concurrent_flow(intact, traffic, **limit)
        if not solved.exact:
            return None
    elif size // 3 > ECMP_MAX_ENTRIES:
        # A 4,096-GPU 3-tier 2:1 Clos has no claim but is solved exactly in about 10 s (its
        # symmetry found, one root per orbit routed); its failed copies would otherwise go
        # to approximate rounds for minutes. Without a symmetry its own LP would take as
        # long: then the intact fabric is not used.
        # The search has method="auto"'s node budget, not a clock, and the routing of its
        # roots does not stop at one either: under a time limit they are not begun unless
        # expected within it (by the failed fabric's LP size).
        if time_limit is not None and size * INTACT_SECONDS_PER_ENTRY > time_limit:
            return None
        found = useful_symmetry(intact, traffic)
        if found is None:
            return None
        intact = with_symmetry(intact, found.symmetry)
        if not symmetric_applicable(intact, traffic)[0]:
            return None
        solved = max_concurrent_flow(intact, traffic, method="symmetric", bounds_first=True,
                                     **limit)
        if not solved.exact:
            return None
    else:
        return None
    return IntactFlow.of(intact, solved, traffic)


#: Seconds a fabric without a claim takes to be solved intact (its symmetry searched, one
#: root per orbit routed), per entry of the failed fabric's full LP (``lp_size_estimate``):
#: 8.3 s for a 1 %-failed 4,096-GPU 3-tier 2:1 Clos of 556 million entries, with a third
#: in hand.
INTACT_SECONDS_PER_ENTRY = 2e-8
#: The note :class:`RerouteFromIntact` leaves on a problem whose detours it did not search
#: (the planes were to follow).
UNSEARCHED = "detours unsearched"
#: The notes :meth:`RerouteFromIntact.narrowers_first` leaves for its own run: the planes
#: went first, the intact fabric it rebuilt, and whether the planes follow.
PLANES_FIRST = "planes first"
REBUILT = "intact fabric rebuilt"
FOLLOW = "planes follow"


class SearchedDetours:
    """The engine stage that searches the detours :class:`RerouteFromIntact` left at their
    even spread for the planes, when the planes did not close the bracket (their LP larger
    than its estimate, or weaker than the search on a small Clos): the intact flow kept by
    ``solves`` is sent around again with the search, and each end of the answer taken from
    it where tighter. Handed to the engine after the planes
    (:data:`~fabricopt.failures.engine.FAILURE_STAGES`).

    >>> stage = SearchedDetours()
    >>> stage.name
    'detours searched'
    """

    name = "detours searched"

    def __init__(self, solves: IntactSolves | None = None) -> None:
        self.solves = IntactSolves() if solves is None else solves

    def applies(self, problem: Any) -> tuple[bool, str]:
        """Where :class:`RerouteFromIntact` applies."""
        return _detours_apply(problem)

    def cost(self, problem: Any) -> str:
        return "the detours searched, where they were left at their even spread for the planes"

    def run(self, problem: Any, bracket: Any = None) -> FlowResult | None:
        """Nothing alone: this stage only narrows (:meth:`narrow`)."""
        return None

    def narrow(self, problem: Any, answer: FlowResult | None) -> FlowResult | None:
        """``answer`` (None: none yet, the unsearched detours' bracket not acceptable) with
        each end taken from the searched detours where tighter, when the detours were left
        unsearched for the planes; ``answer`` otherwise."""
        if not problem.notes.pop(UNSEARCHED, False) or problem.budget.spent():
            return answer
        searched = from_recipe(problem.fab, problem.traffic, self.solves, problem.budget, True)
        if searched is None:
            return answer
        searched.stages = {"lower": FROM_INTACT.name, "upper": FROM_INTACT.name}
        if answer is None:
            acceptable(searched, problem.gap, problem.too_large)  # says how the gap stands
            return searched
        merged = with_stage_ends(answer, searched)  # the answer's message says why it was open
        if merged.upper - merged.lower <= problem.gap * merged.upper:
            merged = with_stage_ends(replace(answer, message=_without_gap(answer.message)),
                                     searched)
            acceptable(merged, problem.gap, problem.too_large)  # "within gap"
        return merged


#: The stages the package hands the engine (:mod:`fabricopt.failures.engine`), sharing the
#: intact solves kept for the process.
FROM_INTACT = RerouteFromIntact()
SEARCHED_DETOURS = SearchedDetours(FROM_INTACT.solves)


__all__ = ["FROM_INTACT", "REROUTE_SHARE", "SEARCHED_DETOURS", "UNSEARCHED", "IntactFlow",
           "IntactSolves", "RerouteFromIntact", "SearchedDetours", "from_recipe",
           "rerouted_answer"]
