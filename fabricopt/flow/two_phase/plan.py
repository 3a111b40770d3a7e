"""The two-phase rate for one set of hubs as a plan of named stages, on the engine's types:
the :class:`~fabricopt.flow.stages.Stage` protocol, the
:class:`~fabricopt.flow.stages.Bracket` that keeps the better proof of each end, the
printable :class:`~fabricopt.flow.stages.Plan` and the call's
:class:`~fabricopt.flow.problem.Budget`, as ``max_concurrent_flow`` uses them. The table of
``docs/throughput.md`` ("What the two-phase rate does") says the same in words:

1. :class:`HierarchyCut` (upper) — the best cut of the fabric's hierarchy; with a rate to
   beat (another hub level's), a level whose cut is no higher is passed over.
2. :class:`WcmpFlows` (lower) — WCMP phase-1 flows (:mod:`fabricopt.flow.two_phase.bounds`).
3. :class:`MergedLP` (both) — when 1 and 2 do not meet, the LP with alike scale-up domains
   merged (:mod:`fabricopt.flow.two_phase.domains`).
   Whenever the ends meet (to :data:`~fabricopt.flow.certificate.EXACT_RTOL`), that is the
   answer (method ``"bounds"``).
4. :class:`SpentBudget` — the bracket of 1-3, said to be stopped, when the time limit went on
   them.
5. :class:`FindSymmetry` — the fabric's group, for ``auto`` on a fabric with no claim whose
   per-endpoint LP is above :data:`MAX_RATE_LP_NONZEROS`.
6. The first solver that answers: :class:`SymmetricRateLP` (a claim, own or found),
   :class:`PerEndpointLP` (at most :data:`MAX_RATE_LP_NONZEROS`); none: ``not_solved``
   with what the bounds proved.

Stages 1-4 run with the bounds stage on (by default with ``method="auto"``).

>>> import fabricopt as fo
>>> from fabricopt.flow.two_phase.problem import TwoPhaseProblem
>>> print(plan(TwoPhaseProblem.of(fo.fat_tree(4), bounds_first=False)))
plan for method='auto':
  1. hierarchy cut: skipped (the bounds stage is off (bounds_first=False))
  2. WCMP phase-1 flows: skipped (the bounds stage is off (bounds_first=False))
  3. merged LP: skipped (the bounds stage is off (bounds_first=False))
  4. spent budget: skipped (the bounds stage is off (bounds_first=False))
  5. symmetry search: skipped (the fabric carries a symmetry claim)
  then the first solver that applies:
     - symmetric LP: runs (one root flow per endpoint orbit over 96 arcs)
     - per-endpoint LP: runs (4,624 nonzeros)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidParameterError
from ...symmetry.search import search_symmetry, with_symmetry
from ..backends import solve_lp
from ..budget import now
from ..certificate import certify
from ..stages import Bracket, Plan
from .bounds import HoseProof, best_cut, closes, wcmp_phase_one
from .domains import DomainPhaseOne
from .lp import _FullPhaseOne, _solve, _SymmetricPhaseOne
from .problem import TwoPhaseProblem
from .result import ValiantBound, per_arc

__all__ = ["MAX_RATE_LP_NONZEROS", "PASSED_OVER", "FindSymmetry", "HierarchyCut", "MergedLP",
           "PerEndpointLP", "SpentBudget", "SymmetricRateLP", "WcmpFlows", "plan", "run"]

#: Largest per-endpoint two-phase LP built, in nonzeros; above it only the symmetric LP is
#: tried, after a symmetry search. Not the throughput engine's ``MAX_AUTO_NONZEROS``
#: (500,000, :mod:`fabricopt.flow.plan`), which limits something else: the exact LP before
#: the approximate method takes over and still answers within its gap. The two-phase rate
#: has no approximate method (above this the answer is the bounds' bracket, or
#: ``not_solved``), so its limit stays where it was set, and answers do not move. Measured on
#: 2 cores under load: the per-endpoint LP of a 128-endpoint jellyfish (172,160 nonzeros)
#: solves in 5 s, of a 192-endpoint one (442,560) in 78 s.
MAX_RATE_LP_NONZEROS = 1_000_000
#: The answer of a plan whose hubs are passed over: their cut is no higher than ``beat``.
PASSED_OVER = "passed over"
#: Slack under which a cut counts as no higher than the rate to beat.
_BEAT_RTOL = 1e-9
_OFF = "the bounds stage is off"
#: What a message calls the stage behind each end of a bounds answer.
_SAID_LOWER = {"WCMP phase-1 flows": "WCMP phase-1 flows", "merged LP": "the merged LP's point"}
_SAID_UPPER = {"hierarchy cut": "a hierarchy cut", "merged LP": "the merged LP's duals"}


@dataclass(frozen=True)
class RateFlows:
    """The lower proof of a bounds stage: the two-phase ``load`` per arc (Gb/s at the rate
    proven), the worst ``overload`` and conservation ``residual`` of the point it came from,
    and the ``hose`` proof :func:`~fabricopt.check_certificate` re-proves."""

    load: np.ndarray
    overload: float
    residual: float
    hose: HoseProof


@dataclass(frozen=True)
class RateBound:
    """The upper proof of a bounds stage: one side of a cut (a mask over the nodes), or the
    arc lengths whose two-phase distance bound it is."""

    side: np.ndarray | None = None
    lengths: np.ndarray | None = None


def _bounds_off(p: TwoPhaseProblem) -> tuple[bool, str]:
    """Whether the bounds stages run, and why not."""
    if p.stage_on:
        return True, ""
    if p.bounds_first is False:
        return False, f"{_OFF} (bounds_first=False)"
    return False, f"{_OFF}: method={p.method!r} is solved as named"


def _settle(p: TwoPhaseProblem, bracket: Bracket) -> None:
    """The bounds' answer once their ends meet: the rate (its load scaled down when rounding
    put it an ulp above the bound), method ``"bounds"``."""
    if not closes(bracket.lower, bracket.upper):
        return
    flows = bracket.lower_proof
    if flows is not None and bracket.lower > bracket.upper:
        scaled = RateFlows(flows.load * (bracket.upper / bracket.lower), flows.overload,
                           flows.residual, flows.hose)
        bracket.lower, bracket.lower_proof = bracket.upper, scaled
    said = (f"bounds first: {_SAID_LOWER.get(bracket.lower_by, 'no routing')} and "
            f"{_SAID_UPPER.get(bracket.upper_by, 'a hierarchy cut')} meet")
    out = ValiantBound(0.0, "optimal", "bounds", p.hubs, len(p.eps), message=said,
                       level=p.level)
    bracket.answer = with_bounds(p, bracket, out, replace_rate=True)


def with_bounds(p: TwoPhaseProblem, bracket: Bracket, result: ValiantBound,
                replace_rate: bool = False) -> ValiantBound:
    """``result`` with the bounds' upper end (and its cut or lengths), and their rate (with
    its load) where the solve proved less; the stage behind each end and the seconds."""
    ga = p.ga
    if p.stage_on:
        result.upper_gbps = bracket.upper
        bound = bracket.upper_proof
        if bound is not None and bound.side is not None:
            result.cut = frozenset(ga.nodes[i] for i in np.flatnonzero(bound.side))
        if bound is not None and bound.lengths is not None:
            result.lengths = per_arc(ga, bound.lengths)
        flows = bracket.lower_proof
        if flows is not None and (replace_rate or bracket.lower > result.rate_gbps):
            result.rate_gbps, result.max_overload = bracket.lower, flows.overload
            result.max_residual, result.proof = flows.residual, flows.hose
            result.load_gbps = per_arc(ga, flows.load)
            if not replace_rate:
                result.method = "bounds"  # the rate is the stage's proof, not the solve's
                result.message = (f"{result.message}; the bounds stage's WCMP rate is "
                                  "higher and is kept").lstrip("; ")
            result.stages = {**result.stages, "lower": bracket.lower_by}
        result.stages = {**result.stages, "upper": bracket.stages["upper"]}
    result.seconds = now() - p.budget.start
    return result


class HierarchyCut:
    """Upper: the best cut of the fabric's hierarchy
    (:func:`~fabricopt.flow.two_phase.bounds.best_cut`); with a rate to ``beat``, hubs whose
    cut is no higher are passed over before any routing."""

    name = "hierarchy cut"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        return _bounds_off(p)

    def cost(self, p: TwoPhaseProblem) -> str:
        return "one cut per group of each partition of the hierarchy"

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        beat = None if p.beat is None else p.beat * (1 + _BEAT_RTOL)
        cut = best_cut(p.ga, p.arrays.hierarchy(p.fab), p.ep_idx, p.hub_idx, p.share, beat,
                       p.arrays.hierarchy_capacities(p.fab, p.ep_idx))
        if cut is not None:
            bracket.prove_upper(cut.rate_gbps, self.name, RateBound(side=cut.side))
        if beat is not None and bracket.upper <= beat:
            bracket.answer = PASSED_OVER


class WcmpFlows:
    """Lower: WCMP phase-1 flows (:func:`~fabricopt.flow.two_phase.bounds.wcmp_phase_one`),
    each endpoint's spread over its shortest paths to the hubs by capacity."""

    name = "WCMP phase-1 flows"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        return _bounds_off(p)

    def cost(self, p: TwoPhaseProblem) -> str:
        return (f"one phase-1 flow per endpoint (per endpoint orbit with a claim) over "
                f"{p.ga.n_arcs:,} arcs")

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        routed = wcmp_phase_one(p.ga, p.arrays.rev, p.ep_idx, p.hub_idx, p.share,
                                p.arrays.claim_orbits(p.fab, p.ep_idx))
        if routed is not None:
            rate, overload = routed.rate(p.ga.capacity, p.min_share)
            bracket.prove_lower(rate, self.name, RateFlows(
                routed.load * rate, overload, routed.residual_l1, HoseProof("wcmp", p.eps)))
        _settle(p, bracket)


class MergedLP:
    """Both ends: the two-phase LP with alike scale-up domains merged
    (:class:`~fabricopt.flow.two_phase.domains.DomainPhaseOne`), its point lifted to every
    endpoint and its duals a distance bound; when the cut and WCMP do not meet."""

    name = "merged LP"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        return _bounds_off(p)

    def cost(self, p: TwoPhaseProblem) -> str:
        return ("one commodity per group of alike scale-up domains, when the cut and the "
                "WCMP flows do not meet")

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        ga, scale_up = p.ga, p.arrays.scale_up
        shape = p.arrays.shape
        merged = DomainPhaseOne.build(ga, p.arrays.rev, p.ep_idx, p.hub_idx, p.share,
                                      scale_up, None if shape is None else shape.domain)
        if merged is None:
            return
        left = p.budget.left()
        sol = solve_lp(merged.lp, "highs", None if left is None else max(left, 1e-3))
        if sol.status == "time_limit" and p.budget.spent():
            # Stopped with nothing of the limit left: its proof (a distance bound over every
            # hub, 0.3 s on a failed 4,096-GPU SuperPOD) is not begun either.
            return
        # A stopped solve still proves what its point and duals prove.
        cert = certify(merged, sol)
        if cert.upper * merged.scale < bracket.upper:
            bracket.prove_upper(cert.upper * merged.scale, self.name,
                                RateBound(lengths=cert.lengths))
        if cert.lifted is not None and cert.lower * merged.scale > bracket.lower:
            bracket.prove_lower(cert.lower * merged.scale, self.name, RateFlows(
                cert.lifted.load * (cert.lower / cert.lifted.theta), cert.max_overload,
                cert.max_residual, HoseProof("merged", p.eps, cert.point)))
        _settle(p, bracket)


class SpentBudget:
    """The bracket the bounds proved, said to be stopped, when a time limit was given and
    nothing of it is left: no solve is begun."""

    name = "spent budget"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        ok, why = _bounds_off(p)
        if ok and p.budget.time_limit is None:
            return False, "no time limit"
        return ok, why

    def cost(self, p: TwoPhaseProblem) -> str:
        return "nothing: answers with the bounds' bracket once the limit is spent"

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        if p.budget.spent():
            out = ValiantBound(0.0, "time_limit", "bounds", p.hubs, len(p.eps),
                               level=p.level,
                               message="time limit reached before the solver started")
            bracket.answer = with_bounds(p, bracket, out)


class FindSymmetry:
    """The fabric's group, for ``auto`` with no claim, hubs by level and every endpoint, when
    the per-endpoint LP is above :data:`MAX_RATE_LP_NONZEROS`; a group with at most a
    quarter as many endpoint orbits as endpoints is used."""

    name = "symmetry search"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        if p.method != "auto":
            return False, f"method={p.method!r} is solved as named"
        if p.claim is not None:
            return False, "the fabric carries a symmetry claim"
        if p.level is None or not p.every_endpoint:
            return False, "hubs given as nodes, or not every endpoint: a group says nothing"
        if p.nonzeros <= MAX_RATE_LP_NONZEROS:
            return False, (f"the per-endpoint LP is small enough ({p.nonzeros:,} nonzeros, "
                           f"at most {MAX_RATE_LP_NONZEROS:,})")
        return True, ""

    def cost(self, p: TwoPhaseProblem) -> str:
        return f"a search for at most {max(1, len(p.eps) // 4):,} endpoint orbits"

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        quarter = max(1, len(p.eps) // 4)
        found = search_symmetry(p.fab, time_limit=p.budget.search(),
                                max_endpoint_orbits=quarter)
        if found.symmetry is not None and found.symmetry.n_endpoint_orbits <= len(p.eps) // 4:
            p.fab, p.claim = with_symmetry(p.fab, found.symmetry), found.symmetry


class SymmetricRateLP:
    """One root's phase-1 flow per endpoint orbit, a capacity row per arc orbit
    (:class:`~fabricopt.flow.two_phase.lp._SymmetricPhaseOne`)."""

    name = "symmetric LP"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        if p.method == "lp":
            return False, "method='lp' is solved as named"
        if not p.symmetric_ok:
            return False, ("needs a symmetry claim, every endpoint and hubs given by level; "
                           "unless the symmetry search finds one")
        return True, ""

    def cost(self, p: TwoPhaseProblem) -> str:
        return f"one root flow per endpoint orbit over {p.ga.n_arcs:,} arcs"

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        model = _SymmetricPhaseOne.build(p.fab, p.ga, p.arrays.rev, p.ep_idx, p.hub_idx,
                                         p.scale, p.claim, p.share)
        if model is None:
            if p.method == "symmetric":
                raise InvalidParameterError("valiant_rate(): the symmetry claim does not "
                                            "map reverse arcs to reverse arcs")
            return  # an automorphism maps reverse arcs to reverse arcs; this claim doesn't
        _solved(p, bracket, model, "symmetric", self.name, p.claim)


class PerEndpointLP:
    """One phase-1 flow per endpoint (:class:`~fabricopt.flow.two_phase.lp._FullPhaseOne`),
    at most :data:`MAX_RATE_LP_NONZEROS` nonzeros."""

    name = "per-endpoint LP"

    def applies(self, p: TwoPhaseProblem) -> tuple[bool, str]:
        if p.method == "symmetric":
            return False, "method='symmetric' is solved as named"
        if p.nonzeros > MAX_RATE_LP_NONZEROS:
            return False, f"{p.nonzeros:,} nonzeros, more than {MAX_RATE_LP_NONZEROS:,}"
        return True, ""

    def cost(self, p: TwoPhaseProblem) -> str:
        return f"{p.nonzeros:,} nonzeros"

    def run(self, p: TwoPhaseProblem, bracket: Bracket) -> None:
        model = _FullPhaseOne.build(p.ga, p.arrays.rev, p.ep_idx, p.hub_idx, p.scale,
                                    p.share)
        _solved(p, bracket, model, "lp", self.name)


def _solved(p: TwoPhaseProblem, bracket: Bracket, model: Any, method: str, name: str,
            symmetry: Any = None) -> None:
    """``model`` solved within the budget left, certified; the answer in ``bracket``."""
    out = _solve(model, p.backend, p.budget.search(), p.backend_options)
    load = {} if out["load"] is None else per_arc(p.ga, out["load"])
    result = ValiantBound(float(out["rate"]), out["status"], method, p.hubs, len(p.eps),
                          out["overload"], out["residual"], 0.0, out["message"], load,
                          p.level, proof=HoseProof(method, p.eps, out["x"], symmetry),
                          stages={"lower": name, "upper": "none"})
    bracket.answer = with_bounds(p, bracket, result)


def plan(problem: TwoPhaseProblem) -> Plan:
    """The stages and solvers ``problem.method`` tries, in order; ``print`` it to see what
    each would do on ``problem``, and why not (see the module notes)."""
    stages: tuple[Any, ...] = (HierarchyCut(), WcmpFlows(), MergedLP(), SpentBudget())
    solvers = {"auto": (SymmetricRateLP(), PerEndpointLP()), "lp": (PerEndpointLP(),),
               "symmetric": (SymmetricRateLP(),)}[problem.method]
    if problem.method == "auto":
        stages += (FindSymmetry(),)
    return Plan(problem.method, stages, solvers, problem)


def run(steps: Plan, p: TwoPhaseProblem) -> ValiantBound | None:
    """Follow ``steps`` on ``p``: each stage that applies runs until one answers; then each
    solver that applies until one answers; none: ``not_solved``, with what the bounds
    proved. None when the hubs are passed over (:data:`PASSED_OVER`)."""
    bracket = Bracket()
    for stage in (*steps.stages, *steps.solvers):
        if stage.applies(p)[0]:
            stage.run(p, bracket)
        if bracket.done:
            return None if bracket.answer is PASSED_OVER else bracket.answer
    if p.method == "symmetric":
        raise InvalidParameterError("valiant_rate(): method='symmetric' needs an unchanged "
                                    "fabric with a symmetry claim, all endpoints and hubs "
                                    "given by level")
    out = ValiantBound(0.0, "not_solved", "lp", p.hubs, len(p.eps), level=p.level,
                       message=f"the per-endpoint LP is too large ({p.nonzeros:,} nonzeros "
                               f"> {MAX_RATE_LP_NONZEROS:,}) and no symmetry applies")
    return with_bounds(p, bracket, out)
