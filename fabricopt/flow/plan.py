"""``method="auto"`` as a plan: which stages run, in what order, on which fabric.

``plan(problem)`` is the whole decision; :func:`run` follows it. The table of
``docs/throughput.md`` ("What auto does") says the same in words:

1. :class:`FromIntact` — a failed fabric (made by ``without`` or ``fail_random``) answered
   from the intact fabric it was made from (by the stages the caller hands in: the failure
   floor's), what that leaves open narrowed through its planes (also handed in by that
   floor), lifted by the two-phase floor.
2. :class:`RoutedBounds` — the hierarchy's cuts above, routed flows below, on the full
   model; a closed bracket is the answer.
3. :class:`TwoPhaseFloor` — the two-phase rate as a floor, under a time limit or on a
   fabric too large for the routed bounds.
4. :class:`FindSymmetry` — the fabric's symmetry, when it carries no claim and the full
   LP would be slow.
5. The first solver that applies: :class:`SymmetricLP` (a claim, own or found),
   :class:`FullLP` (at most :data:`MAX_AUTO_NONZEROS`), :class:`Approx` (larger, when its
   flows fit in memory); none: the bracket proven so far.

``"lp"``, ``"symmetric"`` and ``"approx"`` are fixed plans of one solver (the symmetric one
after a search when the fabric has no claim).

>>> import fabricopt as fo
>>> from fabricopt.flow.problem import FlowProblem
>>> print(plan(FlowProblem.of(fo.ring(8))))   # a generator's claim: exact and fast
plan for method='auto':
  1. intact fabric: skipped (the bounds stage is off: the fabric's own claim makes it exact)
  2. routed bounds: skipped (the bounds stage is off: the fabric's own claim makes it exact)
  3. two-phase floor: skipped (the bounds stage is off: the fabric's own claim makes it exact)
  4. symmetry search: skipped (the fabric already carries a symmetry the method can use)
  then the first solver that applies:
     - symmetric LP: runs (one root flow per endpoint orbit: 1 orbit(s) x 16 arcs)
     - full LP: skipped (the symmetric LP applies)
     - approximate rounds: skipped (the symmetric LP applies)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._progress import progress_bar
from .._stages import SILENT
from ..errors import InvalidParameterError
from ..symmetry.search import SymmetrySearch, search_symmetry, with_symmetry
from ..traffic import Traffic
from .approx import default_max_rounds, solve_approx
from .backends import solve_lp
from .bounds_first.brackets import arc_tiers, build_and_bound, cut_bracket
from .brackets import hose_floor, tighter_bracket, unsolved, with_hose_floor, with_stage_ends
from .budget import (
    APPROX_SECONDS_PER_NONZERO,
    ECMP_SECONDS_PER_ENTRY,
    approx_fits,
    now,
    stage_fits,
)
from .certificate import EXACT_RTOL
from .certified import certified_result, lp_size_of
from .formulation import CollapsedDemand, FlowModel, flow_lp_size
from .from_intact import answer_from_intact
from .lp import LPSolution
from .lp_proof import roots_carrying
from .memory import gb, shortfall
from .problem import FlowProblem, full_lp_entries, symmetric_applicable, traffic_invariant
from .result import FlowResult
from .stages import Bracket, Plan, Stage
from .time_budget import IN_HAND, begins

__all__ = ["FIND_SYMMETRY_NODES", "FIND_SYMMETRY_NONZEROS", "FROM_INTACT_SECONDS_PER_ARC",
           "HOSE_FLOOR_REACH", "SEARCH_SECONDS_PER_ARC", "MAX_AUTO_NONZEROS",
           "SYMMETRIC_SIZE_ADVANTAGE", "TWO_PHASE_SECONDS_PER_ARC", "WAIT_FOR_ROUTING_SECONDS",
           "Approx", "FromIntact", "FullLP", "RoutedBounds", "SymmetricLP", "FindSymmetry",
           "TwoPhaseFloor", "plan", "run", "useful_endpoint_orbits", "useful_symmetry"]

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
#: Largest symmetric LP (nonzeros) solved without HiGHS's presolve on the default backend.
#: Colour refinement leaves little for presolve to remove, and it cost more than it saved on
#: every symmetric LP measured (2 cores, same optimum to 1e-15; the solver HiGHS picks as
#: before, interior point above 20,000 nonzeros): the 15,360-GPU pod of topologies/ (23,214
#: nonzeros) 0.27 -> 0.17 s, a rail 3:1 cluster of 2,048 GPUs (85,248) 4.6 -> 2.9 s. Not the
#: two-phase LPs: there presolve paid on three of four larger ones.
SYMMETRIC_NO_PRESOLVE_NONZEROS = 200_000
#: A bracket from the intact flow whose lower end is at least this fraction of its upper one
#: is not lifted by the two-phase floor (which would seldom reach it, at a cost).
HOSE_FLOOR_REACH = 0.5
#: An open bracket from the intact fabric, though within the gap, waits for the routed
#: bounds when they are expected (by their flow variables, :data:`ECMP_SECONDS_PER_ENTRY`)
#: within this many seconds: on a small failed fabric they often close it. Measured on 2
#: cores: a 512-GPU rail-optimized 2:1 cluster minus 1 % of its links (2.7 million flow
#: variables, expected 0.4 s) was answered [0.6912, 0.6944] by the detours, where the
#: routed bounds close it exactly in 0.2 s more; the failed 4,096-GPU 3-tier Clos (185
#: million) and SuperPOD(64) are far above it, and too large for the routing anyway. Under
#: a time limit the wait is also held to what the limit leaves
#: (:func:`~fabricopt.flow.time_budget.begins`).
WAIT_FOR_ROUTING_SECONDS = 1.0

#: Seconds the two-phase floor costs per arc of a fabric without a claim before its LP, which
#: stops at the limit (its hierarchy cut, WCMP flows, the merged LP built and begun; a stopped
#: LP with nothing left is not certified), measured with the LP given 1 ms, 2 cores:
#: superpod(16) minus 1 % of its leaf-spine links, 49,582 arcs, 0.29 s CPU (5.8e-6 s per
#: arc); superpod(4) so failed 5.5e-6; the failed 4,096-GPU 3-tier Clos 3.0e-6;
#: jellyfish(40, 12, 8) 4.2e-5, but 0.05 s in all.
TWO_PHASE_SECONDS_PER_ARC = 6e-6

#: Seconds the intact-fabric stage costs per arc of the failed fabric before any clock
#: can stop it (the intact fabric rebuilt, solved by its claim, each lost arc's detour):
#: about 0.5 s CPU on superpod(16) minus 1 % of its leaf-spine links, 49,582 arcs.
FROM_INTACT_SECONDS_PER_ARC = 1e-5
#: Seconds the symmetry search costs per arc before its first node, where its clock is
#: first read (colour refinement, twin swaps): 0.33 s CPU on superpod(64) minus 1 % of its
#: leaf-spine links, about 198,000 arcs.
SEARCH_SECONDS_PER_ARC = 2e-6

#: What the stage line (:mod:`fabricopt._stages`) calls each method's solve.
_STAGE_NAMES = {"lp": "LP", "symmetric": "symmetric LP", "approx": "approximate rounds"}
#: The stage a result's end is named after when no merge named it (``result.stages``).
_PROVEN_BY = {"lp": "full LP", "symmetric": "symmetric LP", "approx": "approximate rounds"}


def useful_endpoint_orbits(fab: Any, traffic: Traffic, ga: Any = None,
                           entries: int | None = None) -> int:
    """Most orbits on the endpoints a found group may have for ``method="auto"`` to solve
    by the symmetric method (see :data:`SYMMETRIC_SIZE_ADVANTAGE`); at least 1.
    ``entries``, the full LP's flow variables when already counted, spares a recount."""
    per_root = 3 * max(fab.graph.number_of_edges(), 1)
    if entries is None:
        entries = full_lp_entries(fab, traffic, ga)
    return max(1, 3 * entries // (SYMMETRIC_SIZE_ADVANTAGE * per_root))


def useful_symmetry(fab: Any, traffic: Traffic) -> SymmetrySearch | None:
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


# -- the stages before a solve ---------------------------------------------------------------

_OFF = "the bounds stage is off"


def _early(p: FlowProblem) -> tuple[bool, str]:
    """Whether ``auto``'s stages before the symmetry search run, and why not."""
    if p.bounds_before_search:
        return True, ""
    if p.method != "auto":
        return False, f"method={p.method!r} is solved as named"
    if p.warm_skips_routing:
        return False, ("a warm start bounds the exact solve already (a failure trial's "
                       "solve is faster than the routing)")
    if p.bounds_first is False:
        return False, f"{_OFF} (bounds_first=False)"
    return False, f"{_OFF}: the fabric's own claim makes it exact"


class FromIntact:
    """A failed fabric answered from the intact fabric it was made from: the ``handed``
    stages (the caller's, e.g. the failure layer's), the first answer exact, within the
    gap, or (on a fabric too large for the routed bounds) any bracket
    (:func:`~fabricopt.flow.from_intact.acceptable`); what is left open narrowed by the
    handed stages that narrow (a ``narrow(problem, answer)`` method: the failure layer's
    planes, :class:`~fabricopt.failures.plane_bracket.ThroughPlanes`), in order.

    What comes of it: an exact answer is the answer. A bracket still open that is not
    acceptable (the fabric not too large for the routed bounds, and wider than the gap) is
    kept (:attr:`Bracket.proven`), with or without a time limit, and the stages after it
    (the routed bounds, the solvers) answer within what the limit leaves, each end taken
    from it where tighter. An acceptable open answer whose lower end is below
    :data:`HOSE_FLOOR_REACH` times its upper one (in practice one on a fabric too large for
    the routed bounds: a gap wide enough is rarely asked) is lifted by the two-phase floor,
    which is computed only under a time limit or on such a fabric (:func:`_floor_under`).
    An open answer within the gap waits for the routed bounds when they are expected within
    :data:`WAIT_FOR_ROUTING_SECONDS` (:func:`waits_for_routing`): kept as
    :attr:`Bracket.held`, it is the answer unless they close the bracket, each end taken
    from them where tighter."""

    name = "intact fabric"

    def __init__(self, handed: Sequence[Stage] = ()) -> None:
        self.handed = tuple(handed)

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        ok, why = _early(p)
        if ok and not p.edited:
            return False, "not a failed fabric (made by without or fail_random)"
        if ok:
            return _fits(p, FROM_INTACT_SECONDS_PER_ARC)
        return ok, why

    def cost(self, p: FlowProblem) -> str:
        # The planes are a handed stage (the failure floor's): this stage names what it
        # runs, not what its caller may hand it.
        return ("an exact solve of the intact fabric (by its claim or a found symmetry, "
                "kept for the next failed copy), one detour per lost arc; then each handed "
                "stage that narrows (the failure floor's planes)"
                + ("; an open answer within the gap waits for the routed bounds (about "
                   f"{p.entries * ECMP_SECONDS_PER_ENTRY:.2g} s)" if waits_for_routing(p)
                   else ""))

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        answering = [s for s in self.handed if not hasattr(s, "narrow")]
        seen: list[FlowResult] = []

        def answer(s: Any) -> FlowResult | None:
            found = _named(s.run(p, bracket), s.name) if s.applies(p)[0] else None
            if found is not None:
                seen.append(found)
            return found

        handed = [(lambda fab, traffic, s=s: answer(s)) for s in answering]
        first = None
        if any(getattr(s, "narrowers_first", None) is not None and s.applies(p)[0]
               and s.narrowers_first(p) for s in answering):
            # An answerer whose answer is costly here and seldom closes it alone (a failed
            # 4,096-GPU Clos: its intact fabric's symmetry search and routing, 8 s CPU,
            # where the planes close it alone) lets the stages that narrow go first; it
            # answers only what they leave open.
            for narrowing in (s for s in self.handed if hasattr(s, "narrow")):
                if narrowing.applies(p)[0]:
                    first = narrowing.narrow(p, first)
            if first is None or first.upper - first.lower > p.gap * first.upper:
                # Open wider than the gap (exact or within it, the intact fabric is not
                # solved: that is what going first saves).
                rest = _or_proven(p, answer_from_intact(p.fab, p.traffic, p.gap,
                                                        p.too_large, handed), seen)
                first = rest if first is None or rest is None else with_stage_ends(first,
                                                                                   rest)
            self._settle(p, bracket, first)
            return None
        first = _or_proven(p, answer_from_intact(p.fab, p.traffic, p.gap, p.too_large,
                                                 handed), seen)
        for narrowing in (s for s in self.handed if hasattr(s, "narrow")):
            # E.g. a failed Clos of servers: its planes narrow what the intact flow left open.
            if ((first is None or first.upper - first.lower > p.gap * first.upper)
                    and narrowing.applies(p)[0]):
                first = narrowing.narrow(p, first)
        self._settle(p, bracket, first)
        return None

    @staticmethod
    def _settle(p: FlowProblem, bracket: Bracket, first: FlowResult | None) -> None:
        """What the handed stages found: the answer, held for the routed bounds, or kept
        for the stages after (see the class notes)."""
        if first is not None and not (first.exact or p.too_large
                                      or first.upper - first.lower <= p.gap * first.upper):
            # Not the answer, but proven: the stages after it (the routed bounds, the
            # approximate rounds) answer, each end taken from it where tighter (a failed
            # 2,048-GPU 3-tier Clos: its planes' 2.2 % against their 15 % at 40 s).
            bracket.proven.append(first)
            return None
        if first is None or first.exact or first.lower >= HOSE_FLOOR_REACH * first.upper:
            # Two-phase routing crosses the fabric twice: its floor seldom reaches half the
            # cut, and on a failed 24,576-GPU fabric with no claim its search took minutes.
            answer = first
        else:
            answer = with_hose_floor(first, _floor_under(p), p.traffic)
        if answer is not None and not answer.exact and waits_for_routing(p):
            # Within the gap, yet open, on a fabric whose routing is cheap: that often
            # closes it (a 512-GPU rail cluster minus 1 %: exact in 0.2 s more).
            bracket.held = answer
            return None
        bracket.answer = answer
        return None


def _or_proven(p: FlowProblem, first: FlowResult | None, seen: list[FlowResult]
               ) -> FlowResult | None:
    """``first``, else under a time limit the last bracket an answerer proved though it was
    not acceptable as the answer: certified all the same, it is kept for the answer's ends
    (the stages that could lift it, such as the two-phase floor, may not fit in what is
    left)."""
    if first is None and seen and p.budget.time_limit is not None:
        return seen[-1]
    return first


def _fits(p: FlowProblem, seconds_per_arc: float) -> tuple[bool, str]:
    """Whether a stage no clock stops, expected to take ``seconds_per_arc`` per arc of the
    fabric, is begun under the time limit (always without one), and why not."""
    left = p.budget.left()
    if left is None or begins(p.ga.n_arcs * seconds_per_arc, left):
        return True, ""
    return False, (f"expected to take about {p.ga.n_arcs * seconds_per_arc:.2g} s, more than "
                   f"two thirds of the {left:.3g} s left")


def waits_for_routing(p: FlowProblem) -> bool:
    """Whether an open answer from the intact fabric waits for the routed bounds: they
    apply and are expected (by their size) within :data:`WAIT_FOR_ROUTING_SECONDS` and
    within what a time limit leaves."""
    expected = p.entries * ECMP_SECONDS_PER_ENTRY
    left = p.budget.left()
    return (RoutedBounds().applies(p)[0] and expected <= WAIT_FOR_ROUTING_SECONDS
            and (left is None or expected <= (1 - IN_HAND) * left))


def _named(result: FlowResult | None, name: str) -> FlowResult | None:
    """``result`` with both ends said to be proven by the stage ``name`` (whatever that
    stage used inside: a handed stage is one proof to the engine)."""
    if result is not None:
        result.stages = {"lower": name, "upper": name}
    return result


def _floor_under(p: FlowProblem) -> Any:
    """The two-phase rate as a floor: anytime, under what a time limit leaves (from at most
    a quarter of it), and under a fabric too large for the routed bounds. None when
    neither."""
    if p.budget.time_limit is None and not p.too_large:
        return None
    left = p.budget.left()
    if left is not None and not begins(p.ga.n_arcs * TWO_PHASE_SECONDS_PER_ARC, left):
        return None  # its routing and LP setup, which no clock stops, would not fit
    return hose_floor(p.fab, p.traffic, None if left is None else max(left / 4, 1e-3))


class RoutedBounds:
    """The bounds stage on the full model: the hierarchy's cuts above, ECMP, PXN relays,
    WCMP rebalanced and tier routing below (:mod:`fabricopt.flow.bounds_first`); a closed
    bracket is the answer, any other caps the solver's."""

    name = "routed bounds"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        ok, why = _early(p)
        if not ok:
            return ok, why
        if not p.routable:
            return False, f"{p.entries:,} flow variables, more than the routing takes"
        if not stage_fits(p.entries, p.budget.left()):
            return False, f"it would take longer than the {p.budget.left():.3g} s left"
        return True, ""

    def cost(self, p: FlowProblem) -> str:
        return (f"{p.entries:,} flow variables, about "
                f"{p.entries * ECMP_SECONDS_PER_ENTRY:.2g} s")

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        bracket.routed = build_and_bound(
            p.fab, p.scaled, p.ga_solve, "lp", p.warm,
            include_endpoint_links=p.include_endpoint_links, bounds_first=True,
            report=p.report, entries=p.entries, routable=p.routable, **p.units())
        first = bracket.routed[2]
        if first is not None and first.exact:
            bracket.answer = first
        elif bracket.held is not None:
            # An answer from the intact fabric waited for this stage: it stands, each end
            # taken from the routing where tighter.
            bracket.answer = bracket.held if first is None else with_stage_ends(
                bracket.held, first)
        return None


class TwoPhaseFloor:
    """The two-phase rate over the traffic's endpoints as a floor on theta
    (:func:`~fabricopt.flow.brackets.hose_floor`), under a time limit or on a fabric too
    large for the routed bounds, whose approximate rounds take minutes."""

    name = "two-phase floor"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        ok, why = _early(p)
        if ok and p.budget.time_limit is None and not p.too_large:
            return False, "no time limit, and the routed bounds fit"
        if ok and p.budget.time_limit is not None:
            return _fits(p, TWO_PHASE_SECONDS_PER_ARC)
        return ok, why

    def cost(self, p: FlowProblem) -> str:
        return "one two-phase rate (cuts and WCMP flows first; well under a second on a Clos)"

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        bracket.hose = _floor_under(p)
        return None


class FindSymmetry:
    """The fabric's symmetry, looked for when it carries no claim, the traffic is uniform
    all-to-all, and the full LP would be slow (above :data:`FIND_SYMMETRY_NONZEROS`), or
    ``method="symmetric"`` is asked; a group found is used when its LP beats the full one
    (:func:`useful_endpoint_orbits`)."""

    name = "symmetry search"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        if p.claim[0]:
            return False, "the fabric already carries a symmetry the method can use"
        if p.fab.symmetry is not None:
            return False, p.claim[1]
        if not p.invariant:
            return False, traffic_invariant(p.fab, p.traffic)[1]
        if p.method == "symmetric":
            return True, ""
        if p.method != "auto":
            return False, f"method={p.method!r} is solved as named"
        if p.nonzeros <= FIND_SYMMETRY_NONZEROS:
            return False, (f"the full LP is small ({p.nonzeros:,} nonzeros, at most "
                           f"{FIND_SYMMETRY_NONZEROS:,})")
        return _fits(p, SEARCH_SECONDS_PER_ARC)

    def cost(self, p: FlowProblem) -> str:
        if p.method == "auto":
            return (f"at most {FIND_SYMMETRY_NODES:,} search nodes (about 20 ms each on "
                    "16 SUs)")
        return "a search to the end"

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        p.report("symmetry search")
        auto = p.method == "auto"
        useful = useful_endpoint_orbits(p.fab, p.traffic, p.ga, p.entries) if auto else None
        found = search_symmetry(p.fab, time_limit=p.budget.search(),
                                max_endpoint_orbits=useful,
                                max_nodes=FIND_SYMMETRY_NODES if auto else None)
        bracket.found = found
        ok, why = p.claim
        if found.symmetry is not None:
            claimed = with_symmetry(p.fab, found.symmetry)
            found_ok, found_why = symmetric_applicable(claimed, p.traffic)
            k = found.symmetry.n_endpoint_orbits
            if found_ok and useful is not None and k > useful:
                # A search stopped by its time limit returns a subgroup that may have up
                # to one orbit per endpoint: its LP would outgrow the full one.
                found_ok, found_why = False, (
                    f"it has {k} orbits on the endpoints, too many for its LP to beat the "
                    f"full one (at most {useful})")
            if found_ok:
                p.fab, p.claim = claimed, (True, why)
            else:
                p.claim = (False, f"{why}, and {found.message}, but {found_why}")
        else:
            p.claim = (False, f"{why}, and {found.message}")
        return None


# -- the solvers -----------------------------------------------------------------------------

def _own_bounds(p: FlowProblem, method: str) -> str:
    """What a solver's line adds when it proves bounds of its own before solving (a named
    method with ``bounds_first=True``, or the approximate method after a warm start), which
    the stages above do not show; "" when they do, or none run."""
    own = p.stage_on and not (p.warm_skips_routing and method in ("symmetric", "lp"))
    if not own or p.bounds_before_search:
        return ""
    return ("; first its own bounds: the routed bounds, or the hierarchy's cut alone when "
            "they do not fit")


class SymmetricLP:
    """The exact root-flow LP, one root per endpoint orbit (:mod:`fabricopt.flow.symmetric`),
    for a fabric with a claim (its generator's, or the search's) and uniform all-to-all."""

    name = "symmetric LP"
    method = "symmetric"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        if p.claim[0]:
            return True, ""
        if p.method == "auto" and FindSymmetry().applies(p)[0]:
            return False, f"{p.claim[1]}; unless the symmetry search finds one"
        return False, p.claim[1]

    def cost(self, p: FlowProblem) -> str:
        orbits = getattr(p.fab._symmetry, "n_endpoint_orbits", 1)
        return (f"one root flow per endpoint orbit: {orbits} orbit(s) x "
                f"{p.ga.n_arcs:,} arcs{_own_bounds(p, self.method)}")

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        _solve(p, bracket, self.method)
        return None


class FullLP:
    """The exact LP with source aggregation and endpoint collapse
    (:mod:`fabricopt.flow.formulation`), for ``auto`` while it has at most
    :data:`MAX_AUTO_NONZEROS` nonzeros."""

    name = "full LP"
    method = "lp"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        if p.method == "lp":
            return True, ""
        if p.claim[0]:
            return False, "the symmetric LP applies"
        if p.nonzeros > MAX_AUTO_NONZEROS:
            return False, (f"{p.nonzeros:,} nonzeros, more than {MAX_AUTO_NONZEROS:,}")
        return True, ""

    def cost(self, p: FlowProblem) -> str:
        return f"{p.nonzeros:,} nonzeros{_own_bounds(p, self.method)}"

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        _solve(p, bracket, self.method)
        return None


class Approx:
    """The full LP solved to a certified gap without assembling it
    (:mod:`fabricopt.flow.approx`), for ``auto`` above :data:`MAX_AUTO_NONZEROS` when its
    flows fit in the memory at hand."""

    name = "approximate rounds"
    method = "approx"

    def applies(self, p: FlowProblem) -> tuple[bool, str]:
        if p.method == "approx":
            return True, ""
        if p.claim[0]:
            return False, "the symmetric LP applies"
        if p.nonzeros <= MAX_AUTO_NONZEROS:
            return False, f"the full LP is small enough ({p.nonzeros:,} nonzeros)"
        need = self.bytes(p)
        memory = shortfall(need)
        if memory is not None:
            return False, (f"the approximate method would need about {gb(need)}, more than "
                           f"the {memory} available")
        return True, ""

    @staticmethod
    def bytes(p: FlowProblem) -> int:
        """Memory the approximate method's flows take (a count, nothing built)."""
        return flow_lp_size(p.fab, p.traffic, p.include_endpoint_links, p.ga).approx_bytes

    def cost(self, p: FlowProblem) -> str:
        return (f"{p.nonzeros:,} nonzeros, about {gb(self.bytes(p))}, a first round of "
                f"about {p.nonzeros * APPROX_SECONDS_PER_NONZERO:.2g} s"
                f"{_own_bounds(p, self.method)}")

    def run(self, p: FlowProblem, bracket: Bracket) -> None:
        _solve(p, bracket, self.method)
        return None


# -- the plan and its run --------------------------------------------------------------------

def plan(problem: FlowProblem, stages: Sequence[Stage] = ()) -> Plan:
    """The stages ``problem.method`` tries, in order, then its solvers; ``stages`` are the
    caller's, asked first for a failed fabric (:class:`FromIntact`). ``print`` it to see
    what each would do on ``problem``, and why not (see the module notes)."""
    solvers = {"lp": (FullLP(),), "symmetric": (SymmetricLP(),), "approx": (Approx(),),
               "auto": (SymmetricLP(), FullLP(), Approx())}[problem.method]
    if problem.method == "auto":
        steps: tuple[Any, ...] = (FromIntact(stages), RoutedBounds(), TwoPhaseFloor(),
                                  FindSymmetry())
    elif problem.method == "symmetric":
        steps = (FindSymmetry(),)
    else:
        steps = ()
    return Plan(problem.method, steps, solvers, problem)


def run(steps: Plan, p: FlowProblem) -> FlowResult:
    """Follow ``steps`` on ``p``: each stage that applies runs until one answers; then the
    first solver that applies; none (the approximate method's flows do not fit in memory):
    the bracket proven so far."""
    bracket = Bracket()
    for stage in steps.stages:
        if stage.applies(p)[0]:
            _kept(bracket, stage.run(p, bracket), stage.name)
        if bracket.done:
            return _finished(p, bracket, bracket.answer)  # type: ignore[arg-type]
        if bracket.held is not None and not isinstance(stage, FromIntact):
            # A held answer waits for one stage only (the routed bounds, which take it).
            return _finished(p, bracket, bracket.held)
    reasons = []
    for solver in steps.solvers:
        ok, why = solver.applies(p)
        if ok:
            solver.run(p, bracket)
            return _finished(p, bracket, bracket.answer)  # type: ignore[arg-type]
        reasons.append(why)
    if p.method == "symmetric":
        raise InvalidParameterError(f"max_concurrent_flow(): method='symmetric' is not "
                                    f"exact here: {p.claim[1]}")
    return _finished(p, bracket, _out_of_memory(p, bracket, reasons[-1]))


def _out_of_memory(p: FlowProblem, bracket: Bracket, why: str) -> FlowResult:
    """``auto``'s answer when the approximate method's flows do not fit in memory: the
    bracket proven without them (the routed stage's, the cuts; solve units)."""
    cut = cut_bracket(p.fab, p.scaled, p.ga_solve,
                      include_endpoint_links=p.include_endpoint_links, **p.units())
    routed = None if bracket.routed is None else bracket.routed[2]
    result = unsolved([routed, cut], lambda: cheap_bracket(
        p.fab, p.traffic, include_endpoint_links=p.include_endpoint_links), why)
    if result.status == "not_solved" and not approx_fits(p.nonzeros, p.budget.left()):
        # Nor would its first round have ended within the time limit: the limit stopped it
        # as much as the memory did.
        result.status = "time_limit"
        result.message += "; nor would its first round end within the time limit"
    return result


def cheap_bracket(fab: Any, traffic: Traffic, backend: str = "none",
                  include_endpoint_links: bool = True) -> FlowResult:
    """A certified bracket without an LP: ``lower = 0``, the hop-length distance bound and
    the endpoint-link bound ``theta <= capacity / demand`` of every collapsed endpoint."""
    demand = CollapsedDemand.of(fab, traffic, include_endpoint_links)
    result = certified_result(demand, LPSolution("not_solved", "no LP was solved"),
                              method="bounds", backend=backend, fabric_name=fab.name,
                              tiers=arc_tiers(fab, demand.ga),
                              upper_cap=demand.endpoint_limit())
    result.traffic_name = traffic.name
    result.stages = {"lower": "none", "upper": "hop lengths"}
    return result


def _kept(bracket: Bracket, found: FlowResult | None, name: str) -> None:
    """What a stage ``name`` returned: closed, the answer; else kept for the answer's ends
    (its ends named after the stage where it names none)."""
    if found is None:
        return
    found.stages = {end: found.stages.get(end, name) for end in ("lower", "upper")}
    if found.exact:
        bracket.answer = found
    else:
        bracket.proven.append(found)


def _finished(p: FlowProblem, bracket: Bracket, result: FlowResult) -> FlowResult:
    """``result`` as the answer, each end tightened by what stages proved on the way
    (:attr:`Bracket.proven`), over the two-phase floor when one was proven: its traffic,
    work limit and time, and the last stage reported."""
    for proven in bracket.proven:
        result = with_stage_ends(result, proven)
    result = with_hose_floor(result, bracket.hose, p.traffic)
    result.traffic_name, result.work_limit = p.traffic.name, p.budget.work_limit
    named = _PROVEN_BY.get(result.method, result.method)
    result.stages = {"lower": result.stages.get("lower", named),
                     "upper": result.stages.get("upper", named)}
    result.seconds = now() - p.budget.start
    p.report("done", result.lower, result.upper, result.status)
    return result


def _solve(p: FlowProblem, bracket: Bracket, method: str) -> None:
    """The solver ``method`` on ``p``: its own bounds first (the routed stage's reused),
    then the solve, certified and never wider than the bounds; the answer in ``bracket``."""
    fab, ga = p.fab, p.ga_solve
    # A warm start (a larger fabric's lengths: a failure trial) already bounds an exact
    # solve from above, and that solve (symmetric, or an LP small enough for one) is exact
    # in about a second: the stage, which routes the whole fabric, would cost several (7 s
    # against 1.3 s on a failed 16-SU SuperPOD, 2.5-5.8 s against 1.4 s on a failed
    # fat_tree(8)). It stays for the approximate method, whose start its cut lengths speed.
    stage_now = p.stage_on and not (p.warm_skips_routing and method in ("symmetric", "lp"))
    model, candidates, first = build_and_bound(
        fab, p.scaled, ga, method, p.warm, include_endpoint_links=p.include_endpoint_links,
        bounds_first=stage_now, early=bracket.routed, report=p.report,
        out_of_time=p.budget.spent, time_left=p.budget.left, entries=p.entries,
        routable=p.routable, **p.units())
    bracket.model, bracket.lengths, bracket.bounds = model, candidates, first
    if first is not None and p.too_large:
        first = bracket.bounds = with_hose_floor(first, bracket.hose, p.traffic)
    if first is not None and Bracket.good_enough(first, p.gap, method == "approx"):
        # Closed, or already as close as the approximate method was asked to get: only a
        # gap left open goes to a solver.
        if not first.exact:
            if first.status == "not_solved" and first.upper > 0:
                first.status = "inexact"  # a proven bracket, within the gap asked
            first.message = (f"bounds first: certified bracket [{first.lower:.9g}, "
                             f"{first.upper:.9g}], within the asked gap {p.gap:.3%}: no "
                             "approximate rounds")
        bracket.answer = first
        return
    left = p.budget.left()
    if first is not None and method == "approx" and left is not None and model is not None:
        # Its first round cannot stop halfway: one that would not end in time is not begun.
        left = left if approx_fits(lp_size_of(model).get("nonzeros", 0), left) else 0.0
    if first is not None and (model is None or left == 0):
        # The budget went on the bounds: their bracket is the answer, said to be stopped.
        first.status = "time_limit"
        first.message = f"{first.message}; time limit reached before the solver started"
        bracket.answer = first
        return
    left = None if left is None else max(left, 1e-3)
    p.report(_STAGE_NAMES[method], detail=f"{lp_size_of(model).get('nonzeros', 0):,} nonzeros")
    backend = p.backend
    if method == "approx":
        if p.budget.work_limit is None and p.budget.time_limit is None:
            # Its net, in rounds (fewer on a larger model): recorded like a caller's.
            p.budget.work_limit = default_max_rounds(lp_size_of(model).get("nonzeros", 0))
        sol = _solve_approx(model, candidates, gap=p.gap, time_limit=left,
                            progress=p.progress, scale=p.traffic_scale,
                            work_limit=p.budget.work_limit, report=p.report,
                            known_lower=0.0 if first is None else first.lower / p.traffic_scale)
        backend = "approx"
    else:
        sol = solve_lp(model.lp, backend, left, **_options(p, method, model.lp))
    # A solve the clock stopped is not polished: that takes seconds more (an interior
    # point's on a failed superpod(1): 1 s of LSQR past a 5 s limit) and gains little so
    # far from the optimum. A work limit is no clock: its point is polished as always.
    result = certified_result(model, sol, method=method, backend=backend, fabric_name=fab.name,
                              tiers=arc_tiers(fab, model.ga), **p.units(),
                              polish=method != "approx" and sol.status != "time_limit",
                              extra_lengths=candidates)
    if method == "approx" and result.unreachable is None and result.upper > 0:
        result.message = _approx_message(result, sol, p.gap)
    result.stages = {"lower": _PROVEN_BY[method], "upper": _PROVEN_BY[method]}
    if first is not None:
        result = tighter_bracket(result, first)
    found = bracket.found
    if (found is not None and found.symmetry is not None and method == "symmetric"
            and result.certificate is not None):
        result.message = "; ".join(m for m in (found.message, result.message) if m)
        # The LP's root flows carry the group (a routed full flow taken instead does not).
        result.certificate = roots_carrying(result.certificate, found.symmetry)
    bracket.answer = result


def _options(p: FlowProblem, method: str, lp: Any) -> dict[str, Any]:
    """The backend options of the solve: the caller's, else for a symmetric LP on the
    default backend up to :data:`SYMMETRIC_NO_PRESOLVE_NONZEROS`, HiGHS without presolve."""
    if (p.backend_options or p.backend != "highs" or method != "symmetric"
            or lp.nnz > SYMMETRIC_NO_PRESOLVE_NONZEROS):
        return p.backend_options
    return {"presolve": False}


def _approx_message(result: FlowResult, sol: LPSolution, gap: float) -> str:
    """An approximate result's bracket, gap and rounds, and whether the proofs met."""
    wide = (result.upper - result.lower) / result.upper
    text = (f"approximate: certified bracket [{result.lower:.9g}, {result.upper:.9g}] "
            f"(gap {wide:.3%}, asked {gap:.3%}); {sol.message}")
    if result.status == "optimal" and sol.status != "optimal":  # stopped, yet closed
        text += f"; closed to {EXACT_RTOL:g} relative, so theta is proven"
    return text


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
