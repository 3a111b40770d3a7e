"""The bisection as a plan of named stages on the engine's types: the
:class:`~fabricopt.flow.stages.Stage` protocol, the :class:`~fabricopt.flow.stages.Bracket`
that keeps the better proof of each end, the printable :class:`~fabricopt.flow.stages.Plan`
and the call's :class:`~fabricopt.flow.problem.Budget`. ``docs/bisection.md`` ("What
bisection_bandwidth does") says the same in words. Every stage runs while the bracket is
open and passes once it closes; ``result.stages`` names the stage that proved each end.

1. :class:`IntactLessLost` (lower) — a failed copy of a generated fabric: the intact
   fabric's bound less what its failed links can stop (before any cut: it stops them).
2. :class:`CandidateCuts` (upper) — structural, spectral, Kernighan–Lin and (failed) whole
   group splits, each placed by a minimum cut.
3. :class:`GivenBackProfile`, 4. :class:`GivenBackHose` (lower) — a failed copy: the flow
   per split profile and the hose bound with the failed scale-out links given back.
5. :class:`HoseRate` (lower) — the certified two-phase rate's matching.
6. :class:`UnitsCounted` (both) — servers below rail leaves below spines: every count of
   each unit's sending leaves, its servers tried every way.
7. :class:`TopSides` (both) — a layered fabric (a Clos or fat tree, failed links and all):
   every side of its top tier's alike classes tried, exact.
8. :class:`PlaneBisections` (lower; each plane's split above) — the sum of its planes'
   exact bisections.
9. :class:`WholeGroups` (upper) — whole groups in every combination (an intact fabric).
10. :class:`PairsInsideUnits`, 11. :class:`ProfileFlow` (lower).
12. :class:`GroupSwaps` (upper) — the best cut with whole groups swapped across it.
13. :class:`TopDescent` (upper) — a layered fabric: from the best cut, the top tier's sides
    changed a class at a time, every pod placed exactly below them.
14. :class:`CountedPlanes` (lower; a split above when it reaches one) — a layered fabric:
    its planes merged one by one, each plane's top counted on the sending side, searched
    best first.
15. :class:`AllToAll` (lower), 16. :class:`ExactMILP` (both).

>>> import fabricopt as fo
>>> print(plan(BisectionProblem.of(fo.ring(8), milp_max_nodes=0)))  # doctest: +ELLIPSIS
plan for method='auto':
  1. intact fabric less lost: skipped (not a failed copy of a generated fabric)
  2. candidate cuts: runs (a minimum cut per candidate split (structural, ...) on 16 arcs)
  ...
  16. exact MILP: skipped (8 nodes > milp_max_nodes=0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..flow import max_concurrent_flow
from ..flow.bounds import hierarchy_partitions
from ..flow.budget import now
from ..flow.problem import Budget, full_lp_entries, symmetric_applicable
from ..flow.stages import Bracket, Plan
from ..graph_arrays import GraphArrays
from ..traffic import all_to_all
from . import bisection as _helpers  # _hose_rate read at call time (tests stand in for it)
from .bisection import (
    _all_to_all_may_help,
    _best_candidate,
    _best_cut,
    _candidate_splits,
    _checked_arguments,
    _degraded_lower,
    _milp,
    _on_capacity_grid,
    _whole_group_splits,
)
from .blocked_bisection import blocked_lower
from .counted_planes import counted_planes_lower
from .cuts import Cut, cut_capacity, hose_ceiling
from .failed_bisection import given_back, restored_hose_lower
from .layered_bisection import descend_top, exact_layered, plane_lower, read_layers
from .local_pairs import local_pairs_lower
from .profile_flow import profile_flow_lower, restored_profile_lower
from .split_search import swap_groups

__all__ = ["BisectionProblem", "plan", "run"]

#: Most arcs of a fabric read as layered (the two stages that enumerate its sides).
LAYERED_MAX_ARCS = 200_000

#: Under a time limit, a stage no clock stops is begun only when expected to end within what
#: is left: its seconds per arc of the fabric, the most measured (CPU, 2 cores) on the
#: fabrics named, with a third in hand. They decide only what is begun, never a number.
SECONDS_PER_ARC = {
    # The intact fabric rebuilt and its links compared (its own bisection then takes half the
    # limit): 7.5e-6 on a SuperPOD of 16 units minus 1 %. Twice the candidate cuts' are
    # added (the intact's and the failed fabric's own, still to come).
    "intact fabric less lost": 1e-5,
    # The stages below hand their solves what is left, but read the fabric first (units,
    # profiles, the fabric with its failed links given back): a SuperPOD of 4 units minus
    # 1 % (seeds 1, 2), 2.8e-5, 4.4e-5 and 1.4e-5.
    "flow per profile, failed links given back": 3.7e-5,
    "units counted below the top": 5.9e-5,
    "flow per split profile": 1.9e-5,
    # fat_tree(8) minus 5 %: 1.3e-4 (every side of a few classes).
    "top tier's sides enumerated": 1.7e-4,
    # fat_tree(16) minus 5 %: 1.4e-4 (16 planes, each bisected exactly).
    "planes' exact bisections": 1.9e-4,
    # A 4,096-GPU 3-tier 2:1 Clos: 1.5e-6.
    "whole groups": 2e-6,
    # A 4,096-GPU 3-tier 2:1 Clos: 3.2e-5 (a two-phase rate per unit).
    "pairs inside units": 4.2e-5,
    # fat_tree(16) minus 5 %: 2.1e-5.
    "groups swapped": 2.9e-5,
    # fat_tree(16) minus 5 %: 4.8e-5.
    "top tier's sides descended": 6.4e-5,
}
#: Seconds of the candidate cuts, fixed and per arc (they always run, one cut at least, so the
#: answer has an upper end and its proof): 0.11 s on fat_tree(8) minus 5 % (730 arcs) and on
#: a SuperPOD of 4 units minus 1 % (11,244), 0.16 s on 16 units minus 1 % (49,582), with a
#: third in hand.
CANDIDATE_SECONDS, CANDIDATE_SECONDS_PER_ARC = 0.13, 1.7e-6
#: Seconds the all-to-all throughput costs per flow variable of its full LP where no symmetry
#: claim solves it (:func:`~fabricopt.flow.problem.full_lp_entries`): a 40-switch Jellyfish,
#: 19,200 entries, 7.7 s CPU (4e-4), with a third in hand.
ALL_TO_ALL_SECONDS_PER_ENTRY = 5.4e-4
#: Seconds before the exact MILP's solver reads its clock (its process started, the model
#: written and read back): 0.07 s wall for an 8-node ring on a quiet machine, with a third in
#: hand; the solver then stops at the wall-clock time it is handed.
MILP_START_SECONDS = 0.1


@dataclass
class BisectionProblem:
    """One bisection asked: the fabric read once (arrays, endpoints), the options, the
    budget, and what the stages hand on (the intact fabric's proof, the fabric given back,
    the two-phase rate, the best cut and every candidate's capacity)."""

    fab: Any
    eps: tuple[Hashable, ...]
    ga: GraphArrays
    milp_max_nodes: int = 60
    time_limit: float | None = 30.0
    seed: int = 0
    bounds_first: bool | None = None
    hose: Any = None
    budget: Budget = field(default_factory=lambda: Budget(None))
    report: Callable[..., Any] = field(default=lambda *a, **k: None, repr=False)
    hose_tried: bool = False
    degraded: tuple | None = None
    back: tuple | None = None
    candidates: dict[str, float] = field(default_factory=dict)
    cut: Cut | None = None
    found_by: str = ""
    #: The best cut before a better one from another source replaced it: the group swaps
    #: start from both (each search stops at its own local best).
    runner_up: tuple[Cut, str] | None = None
    #: Why the stages stopped short of their end, where more time or work may narrow the
    #: bracket: "time limit" (the budget spent), "work cap" (a search at its cap with no
    #: time limit), or "" (every stage that applies ran to its end).
    stopped_short: str = ""
    #: The stages the time limit left out: not begun, as not expected to end within it.
    not_begun: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ep_idx = np.array([self.ga.index[e] for e in self.eps])
        self.n, self.half = len(self.eps), len(self.eps) // 2
        self.hose_tried = self.hose is not None

    @classmethod
    def of(cls, fab: Any, endpoints: Any = None, *, milp_max_nodes: int = 60,
           time_limit: float | None = 30.0, seed: int = 0, bounds_first: bool | None = None,
           hose: Any = None) -> BisectionProblem:
        """The problem :func:`~fabricopt.bisection_bandwidth` would solve, its arguments
        checked as it checks them."""
        milp_max_nodes, time_limit, seed, bounds_first, eps, ga = _checked_arguments(
            fab, endpoints, milp_max_nodes, time_limit, seed, bounds_first, hose)
        return cls(fab, eps, ga, milp_max_nodes, time_limit, seed, bounds_first, hose,
                   Budget(time_limit, now()))

    @cached_property
    def grid_unit(self) -> float:
        """The unit every arc's capacity is a whole multiple of (so every cut is one too), 0
        when there is none: read once, every stage's bracket is tested against it."""
        return _on_capacity_grid(self.ga, 1.0)[1]

    def closed(self, bracket: Bracket) -> bool:
        """Whether ``bracket`` is closed once its lower end is raised to the capacities' grid
        (no cut lies between two multiples of the unit)."""
        if bracket.upper_by is None:
            return False
        lower, unit = bracket.lower, self.grid_unit
        if unit > 0 and lower > 0:
            lower = max(lower, unit * math.ceil(lower / unit - 1e-6))
        return lower >= bracket.upper * (1 - 1e-9)

    def deadline(self) -> float | None:
        """The reading of :func:`~fabricopt.flow.budget.now` at which the time limit runs
        out; None without one."""
        left = self.budget.left()
        return None if left is None else now() + left

    def fits(self, stage: Any) -> bool:
        """Whether ``stage`` is expected (:meth:`_Stage.seconds`) to end within the time
        left; always without a limit."""
        left = self.budget.left()
        return left is None or stage.seconds(self) <= left

    def left(self) -> float | None:
        """Seconds of the call's time limit left (at least a millisecond; None without a
        limit): what a stage hands the solver it calls, so the call ends near its limit."""
        left = self.budget.left()
        return None if left is None else max(left, 1e-3)

    @property
    def failed_copy(self) -> bool:
        """Whether the fabric is a generated one with something removed (its intact fabric
        can be built again)."""
        return bool(self.fab.origin.from_recipe)


def _open(bracket: Bracket) -> bool:
    return bracket.lower < bracket.upper * (1 - 1e-9)


def _raise(bracket: Bracket, found: tuple[float, str] | None, by: str) -> None:
    """Keep a lower bound that beats the bracket's by more than rounding."""
    if found is not None and found[0] > bracket.lower * (1 + 1e-9):
        bracket.prove_lower(found[0], by, found[1])


def _lower_cut(problem: BisectionProblem, bracket: Bracket,
               found: tuple[float, str, Cut] | None, by: str) -> None:
    """Keep a cut below the bracket's upper end as its proof."""
    if found is not None and found[0] < bracket.upper:
        problem.cut, problem.found_by = found[2], found[1]
        bracket.prove_upper(found[0], by, found[2])


class _Stage:
    """A stage that runs on every problem while the bracket is open; each says its own
    cost."""

    name = ""

    def applies(self, problem: BisectionProblem) -> tuple[bool, str]:
        return True, ""

    def seconds(self, problem: BisectionProblem) -> float:
        """Seconds the stage is expected to take (by the fabric's arcs, :data:`SECONDS_PER_ARC`);
        0 for a stage that ends at the time limit by itself (it is handed what is left)."""
        return SECONDS_PER_ARC.get(self.name, 0.0) * problem.ga.n_arcs


class _OnFailedCopy(_Stage):
    """A stage for a failed copy of a generated fabric only."""

    def applies(self, problem: BisectionProblem) -> tuple[bool, str]:
        return (True, "") if problem.failed_copy else (
            False, "not a failed copy of a generated fabric")


class IntactLessLost(_OnFailedCopy):
    name = "intact fabric less lost"

    def cost(self, problem: BisectionProblem) -> str:
        return ("the intact fabric's bisection (kept for the next failed copy), then one "
                "two-phase rate per hub level less what the failed links stop")

    def seconds(self, problem: BisectionProblem) -> float:
        arcs = problem.ga.n_arcs
        return SECONDS_PER_ARC[self.name] * arcs + 2 * (CANDIDATE_SECONDS +
                                                        CANDIDATE_SECONDS_PER_ARC * arcs)

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Half the call's limit for the intact fabric (the same for every failed copy of
        # it, so its bisection is kept and read again), the rest for the failed one.
        limit = None if problem.time_limit is None else problem.time_limit / 2
        problem.degraded = _degraded_lower(problem.fab, problem.eps, limit)
        if problem.degraded is not None and problem.degraded[0] > 0:
            bracket.prove_lower(problem.degraded[0], self.name, problem.degraded[1])


class CandidateCuts(_Stage):
    name = "candidate cuts"

    def cost(self, problem: BisectionProblem) -> str:
        return (f"a minimum cut per candidate split (structural, spectral, Kernighan-Lin) "
                f"on {problem.ga.n_arcs:,} arcs")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        p, ga = problem, problem.ga
        # A cut down to what is proven below already (on the capacity grid) cannot be
        # beaten; so is the caller's two-phase rate's matching bound (a comparison row's
        # Alibaba pod: one split of six).
        proven = _on_capacity_grid(ga, p.degraded[0])[0] if p.degraded else 0.0
        if p.hose is not None:
            proven = max(proven, _on_capacity_grid(ga, p.hose.rate_gbps * p.half)[0])
        # Under a time limit: the splits tried while it lasts (one at least), the spectral
        # and Kernighan-Lin ones begun only when expected to end within it. With nothing
        # proven below yet, half of what is left is kept for the stages that prove it (the
        # cuts took all of it and the bracket fell to [0, cut] with more time, not less).
        deadline = p.deadline()
        left = p.budget.left()
        if deadline is not None and bracket.lower <= 0 and left is not None:
            deadline = now() + left / 2
        p.candidates, best = _best_candidate(ga, p.ep_idx, _candidate_splits(
            p.fab, ga, p.eps, p.ep_idx, p.seed, p.degraded[2] if p.degraded else None,
            deadline), proven, deadline)
        assert best is not None
        p.cut, p.found_by = best[2], best[1]
        bracket.prove_upper(best[0], self.name, best[2])


class _OnLayered(_Stage):
    """A stage for a fabric small enough to be read as layered (its arcs)."""

    def applies(self, problem: BisectionProblem) -> tuple[bool, str]:
        arcs = problem.ga.n_arcs
        return (True, "") if arcs <= LAYERED_MAX_ARCS else (
            False, f"{arcs:,} arcs > {LAYERED_MAX_ARCS:,}")


class TopSides(_OnLayered):
    name = "top tier's sides enumerated"

    def cost(self, problem: BisectionProblem) -> str:
        return ("a layered fabric: every count of each class of alike top switches on the "
                "sending side, every side of each pod's middle switches")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Exact where the top's alike classes are few: a failed fat_tree(8) (cores that
        # lost no link are alike), 20,000 Gb/s on minus 5 % seed 0, where the flows proved
        # 18,000 and the cuts 20,400.
        p = problem
        if not _open(bracket):
            return
        layers = read_layers(p.ga, p.ep_idx)
        solved = None if layers is None else exact_layered(p.ga, p.ep_idx, layers=layers)
        if solved is None:
            return
        value, side = solved
        # Every choice was tried: both ends, kept below even when equal to what is proven.
        bracket.lower_by = None
        bracket.prove_lower(max(bracket.lower, value), self.name, (
            f"exact: {layers.configs:,.0f} choices of the top tier's sides, each pod's "
            "middle switches every way"))
        cut = Cut(side, value, np.flatnonzero(side[p.ga.tail] & ~side[p.ga.head]))
        _lower_cut(p, bracket, (value, self.name, cut), self.name)


class PlaneBisections(_OnLayered):
    name = "planes' exact bisections"

    def cost(self, problem: BisectionProblem) -> str:
        return ("a layered fabric: each plane of its middle and top tiers, with a share of "
                "each endpoint link, bisected exactly; each plane's split placed by a "
                "minimum cut")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Where the top has too many classes to enumerate (a failed fat_tree(16)): the
        # planes' bisections sum to a bound below (155,050 Gb/s on minus 5 % seed 0, where
        # the flows proved 143,200).
        p = problem
        if not _open(bracket):
            return
        found = plane_lower(p.ga, p.ep_idx)
        if found is None:
            return
        bound, splits = found
        _raise(bracket, (bound, f"the sum of {len(splits)} planes' exact bisections"),
               self.name)
        before = (p.cut, p.found_by)
        for split in splits:
            cut = _best_cut(p.ga, p.ep_idx, split[p.ep_idx])[0]
            _lower_cut(p, bracket, (cut.capacity, "a plane's least split", cut), self.name)
        if p.cut is not before[0] and before[0] is not None:
            p.runner_up = before


class UnitsCounted(_OnLayered):
    name = "units counted below the top"

    def cost(self, problem: BisectionProblem) -> str:
        return ("servers below rail leaves below spines: each unit's exact cost per count of "
                "its sending leaves, every count of every unit tried")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # The 2,048-GPU rail 2:1 cluster minus 1 % (seed 1): exact, 230,400 Gb/s, where the
        # flows below proved 226,400 and the cuts 231,200.
        p = problem
        if not _open(bracket):
            return
        left = p.budget.left()
        found = blocked_lower(p.ga, p.ep_idx, beat=bracket.upper,
                              deadline=None if left is None else now() + left)
        if found is None:
            return
        value, side = found
        _raise(bracket, (value, "every count of each unit's sending leaves, its servers "
                         "every way"), self.name)
        if side is not None:
            capacity, arcs = cut_capacity(p.ga, side)
            _lower_cut(p, bracket, (capacity, self.name, Cut(side, capacity, arcs)),
                       self.name)


class GivenBackProfile(_OnFailedCopy):
    name = "flow per profile, failed links given back"

    def cost(self, problem: BisectionProblem) -> str:
        return ("the fabric with its failed links given back: a two-phase rate per unit, "
                "then one LP over the split profiles of the top tier")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # First, as the hose rate and the pairs inside units then rarely beat it (the
        # 2,048-GPU rail 2:1 cluster minus 1 %: 226,400 Gb/s, where they proved 204,200 and
        # the flow per split on the failed links alone 214,400).
        p = problem
        if p.degraded is None or not _open(bracket):
            return
        p.back = given_back(p.fab, p.degraded[3], p.eps)
        if p.back is not None:
            _raise(bracket, restored_profile_lower(
                p.fab, p.degraded[3], p.eps, beat=bracket.lower, time_limit=p.left(),
                back=p.back), self.name)


class GivenBackHose(_OnFailedCopy):
    name = "two-phase rate, failed links given back"

    def cost(self, problem: BisectionProblem) -> str:
        return "one two-phase rate on the fabric with its failed links given back"

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # A rail cluster of one unit: one failed NIC holds every GPU's rate to 350, given
        # back 400 less its link.
        p = problem
        if p.back is not None and _open(bracket):
            _raise(bracket, restored_hose_lower(
                p.fab, p.degraded[3], p.eps, beat=bracket.lower, back=p.back,
                time_limit=p.left(), bounds_first=p.bounds_first), self.name)


class HoseRate(_Stage):
    name = "two-phase rate"

    def cost(self, problem: BisectionProblem) -> str:
        return ("one two-phase rate per hub level tried (none when a hierarchy cut caps it "
                "at the bound in hand)")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        p = problem
        if (p.hose is None and _open(bracket) and (p.bounds_first is False or hose_ceiling(
                p.fab, p.ga, p.ep_idx) * p.half > bracket.lower)):
            # Skipped where a group's own links already hold any hose rate to a bisection
            # bound below the intact one's less the failed links: on fat_tree(8) minus four
            # switch links, two LPs of 13 s each that could not tighten the bracket.
            p.hose, p.hose_tried = _helpers._hose_rate(
                p.fab, p.eps, bracket.upper / max(p.half, 1), p.left(), p.ga,
                p.bounds_first), True
        if p.hose is not None and p.hose.rate_gbps * p.half > bracket.lower:
            bracket.prove_lower(p.hose.rate_gbps * p.half, self.name, (
                f"two-phase hose rate, hubs {p.hose.level} hops out ({p.hose.method}, "
                f"{p.hose.status})"))


class WholeGroups(_Stage):
    name = "whole groups"

    def cost(self, problem: BisectionProblem) -> str:
        return "a minimum cut per balanced split of whole groups of the hierarchy"

    def applies(self, problem: BisectionProblem) -> tuple[bool, str]:
        # A failed fabric's are among the candidate cuts (its bound below is known first).
        return (False, "tried with the candidate cuts") if problem.failed_copy else (True, "")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        p = problem
        if p.degraded is not None or not _open(bracket):
            return
        more, better = _best_candidate(
            p.ga, p.ep_idx, _whole_group_splits(p.fab, p.ga, p.ep_idx, p.half),
            _on_capacity_grid(p.ga, bracket.lower)[0], p.deadline())
        p.candidates.update(more)
        _lower_cut(p, bracket, better, self.name)


class PairsInsideUnits(_Stage):
    name = "pairs inside units"

    def cost(self, problem: BisectionProblem) -> str:
        return ("a two-phase rate per unit on what the hose load leaves, then a subset sum "
                "over the units")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Where the hose rate is held by a unit's uplinks and the cheapest split cuts
        # through a unit, the pairs it leaves inside units add what they carry below them.
        p = problem
        if p.hose is not None and _open(bracket):
            _raise(bracket, local_pairs_lower(p.fab, p.ga, p.eps, p.hose, beat=bracket.lower),
                   self.name)


class ProfileFlow(_Stage):
    name = "flow per split profile"

    def cost(self, problem: BisectionProblem) -> str:
        return "a two-phase rate per unit, then one LP over the split profiles of the top tier"

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Where the top tier's bundles are uneven the hose rate sits below what a split's
        # whole units send over their own uplinks: the top's flow chosen per split.
        p = problem
        if _open(bracket):
            _raise(bracket, profile_flow_lower(p.fab, p.ga, p.eps, beat=bracket.lower,
                                               time_limit=p.left()), self.name)


class GroupSwaps(_Stage):
    name = "groups swapped"

    def cost(self, problem: BisectionProblem) -> str:
        return "a minimum cut per group of the hierarchy swapped across the best cut"

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # The best cut with whole groups exchanged across it (a failed fat tree's leaves
        # and cut-off hosts: 20,800 -> 20,400 Gb/s on fat_tree(8) minus 5 %, seed 0).
        # From a plane's least split too where one replaced the candidates' best (fat_tree(16)
        # minus 5 %, seed 0: 170,400 from the plane's, 169,600 from the candidates').
        p = problem
        if not _open(bracket) or p.cut is None:
            return
        partitions = hierarchy_partitions(p.fab, p.ga)
        for start, found_by in [(p.cut, p.found_by)] + ([p.runner_up] if p.runner_up else []):
            swapped = swap_groups(p.ga, p.ep_idx, start, partitions,
                                  lambda mask: _best_cut(p.ga, p.ep_idx, mask)[0],
                                  deadline=p.deadline())
            _lower_cut(p, bracket, (swapped.capacity, f"{found_by}, groups swapped", swapped),
                       self.name)


class TopDescent(_OnLayered):
    name = "top tier's sides descended"

    def cost(self, problem: BisectionProblem) -> str:
        return ("a layered fabric: rounds of every one-class change of the top tier's sides "
                "from the best cut, every pod placed exactly below each")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # fat_tree(16) minus 5 %, seed 0: 169,600 -> 166,400 Gb/s from the swapped cut.
        p = problem
        if not _open(bracket) or p.cut is None:
            return
        found = descend_top(p.ga, p.ep_idx, p.cut.side, deadline=p.deadline())
        if found is not None:
            value, side = found
            cut = Cut(side, value, np.flatnonzero(side[p.ga.tail] & ~side[p.ga.head]))
            _lower_cut(p, bracket, (value, f"{p.found_by}, top tier's sides descended", cut),
                       self.name)


class CountedPlanes(_OnLayered):
    name = "planes merged, tops counted"

    def cost(self, problem: BisectionProblem) -> str:
        return ("a layered fabric with two planes or more: the planes merged one by one, "
                "each plane's top switches counted on the sending side, every pod exact, "
                "best first until the best cut or the time limit")

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        # Where the planes bisected apart choose different leaves (fat_tree(16) minus 5 %,
        # seed 0: 155,200 from the planes, 166,400 the best cut): closed on the cut.
        p = problem
        if not _open(bracket) or p.cut is None:
            return
        found = counted_planes_lower(p.ga, p.ep_idx, bracket.upper, p.left())
        if found is None:
            return
        if found.capped:
            p.stopped_short = p.stopped_short or "work cap"
        _raise(bracket, (found.lower, (
            f"the planes merged with their top switches counted: {found.branches:,} "
            f"choices of counts bounded, {found.left_open:,} left open")), self.name)
        if found.split is not None:
            cut = Cut(found.split, found.split_gbps,
                      np.flatnonzero(found.split[p.ga.tail] & ~found.split[p.ga.head]))
            _lower_cut(p, bracket, (found.split_gbps, self.name, cut), self.name)


class AllToAll(_Stage):
    name = "all-to-all throughput"

    def cost(self, problem: BisectionProblem) -> str:
        return (f"max_concurrent_flow on {problem.n:,} endpoints (its own plan), unless a "
                "hierarchy cut shows it cannot raise the bound")

    def seconds(self, problem: BisectionProblem) -> float:
        # A symmetry claim solves it on one orbit (milliseconds); else its full LP's size.
        traffic = all_to_all(problem.fab, endpoints=problem.eps)
        if symmetric_applicable(problem.fab, traffic)[0]:
            return 0.0
        return ALL_TO_ALL_SECONDS_PER_ENTRY * full_lp_entries(problem.fab, traffic, problem.ga)

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        p = problem
        if not _open(bracket):
            return
        traffic = all_to_all(p.fab, endpoints=p.eps)
        if p.bounds_first is not False and not _all_to_all_may_help(
                p.fab, traffic, p.ga, bracket.lower, p.half, p.n):
            return
        flow = max_concurrent_flow(p.fab, traffic, time_limit=p.left())
        pairs = p.half * (p.n - p.half)
        if flow.lower * pairs > bracket.lower:
            bracket.prove_lower(flow.lower * pairs, self.name,
                                f"all-to-all throughput ({flow.method}, {flow.status})")


class ExactMILP(_Stage):
    name = "exact MILP"

    def applies(self, problem: BisectionProblem) -> tuple[bool, str]:
        n, most = problem.ga.n_nodes, problem.milp_max_nodes
        return (True, "") if n <= most else (False, f"{n:,} nodes > milp_max_nodes={most}")

    def cost(self, problem: BisectionProblem) -> str:
        return f"{problem.ga.n_nodes:,} binary sides, {problem.ga.n_arcs:,} arcs"

    def seconds(self, problem: BisectionProblem) -> float:
        return MILP_START_SECONDS

    def run(self, problem: BisectionProblem, bracket: Bracket) -> None:
        p = problem
        if not _open(bracket):
            return
        solved = _milp(p.fab, p.ga, p.ep_idx, p.left())
        if solved is None:
            return
        value, side = solved
        # The solve's optimum is both ends: kept below even when equal to what is proven.
        bracket.lower_by = None
        bracket.prove_lower(max(bracket.lower, value), self.name, "exact MILP")
        cut = Cut(side, value, np.flatnonzero(side[p.ga.tail] & ~side[p.ga.head]))
        _lower_cut(p, bracket, (value, "exact MILP", cut), self.name)


STAGES = (IntactLessLost(), CandidateCuts(), GivenBackProfile(), GivenBackHose(), HoseRate(),
          UnitsCounted(), TopSides(), PlaneBisections(), WholeGroups(),
          PairsInsideUnits(), ProfileFlow(), GroupSwaps(), TopDescent(), CountedPlanes(),
          AllToAll(), ExactMILP())


def plan(problem: BisectionProblem) -> Plan:
    """The stages :func:`~fabricopt.bisection_bandwidth` tries on ``problem``, in order
    (printable: what each would do, or why it is passed over)."""
    return Plan("auto", STAGES, (), problem)


def run(plan: Plan, problem: BisectionProblem) -> Bracket:
    """Every stage of ``plan`` that applies, in order, on one bracket (each passes once the
    bracket is closed); the bracket with the proof of each end."""
    bracket = Bracket()
    for stage in plan.stages:
        # Closed on the capacities' grid (fat_tree(8) minus 1 %: 24,200 proven below, a cut
        # of 24,400 above, every cut a multiple of 400): nothing later can move either end.
        if problem.closed(bracket):
            break
        # Out of time once a cut is in hand: the best certified bracket so far.
        if problem.budget.spent() and bracket.upper_by is not None:
            break
        if stage.applies(problem)[0]:
            # Under a time limit, a stage expected to outlast it is not begun once a cut is
            # in hand (the candidate cuts always run: their first cut is the upper end).
            if (bracket.upper_by is not None or stage.name == IntactLessLost.name) and (
                    _open(bracket) and not problem.fits(stage)):
                problem.not_begun.append(stage.name)
                continue
            if _open(bracket) or bracket.upper_by is None:
                problem.report(f"bisection: {stage.name}", bracket.lower, bracket.upper)
            stage.run(problem, bracket)
    if problem.budget.spent() or problem.not_begun:
        # Out of time: a stage not begun, skipped, or cut short at the limit.
        problem.stopped_short = "time limit"
    return bracket
