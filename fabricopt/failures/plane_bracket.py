"""A failed Clos of servers bracketed through its planes, before any solve of its own.

A failed cluster on a multi-tier Clos is too large for its own LP, and its intact fabric's
flow sent around what failed (:mod:`fabricopt.failures.reroute`) keeps each flow's switches,
which leaves its bracket a few percent open. Where the fabric has planes
(:mod:`fabricopt.failures.planes`), :func:`plane_bracket` brackets it at once: below, the
routing through them that the LP of :mod:`fabricopt.failures.plane_lp` chooses, re-proven by
:mod:`fabricopt.failures.plane_routing`; above, the best of the hierarchy cuts, the cuts around
runs of leaves (:mod:`fabricopt.failures.leaf_run_cuts`) and the endpoints' own links.
:func:`narrowed` merges such a bracket into another.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..fabric import Fabric
from ..flow.api import FIND_SYMMETRY_NONZEROS
from ..flow.bounds import HierarchyCut, structural_cut_lengths
from ..flow.budget import now
from ..flow.certificate import EXACT_RTOL
from ..flow.from_intact import acceptable
from ..flow.proof import ArcLengths, endpoint_cut_bound
from ..flow.result import FlowCertificate, FlowResult
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .leaf_run_cuts import LeafRunCut, leaf_run_cut
from .plane_groups_lp import solve_group_planes, whole_groups
from .plane_lp import IPM_TOLERANCE, BuiltPlaneLP, PlaneSolution, solve_planes, vertex_solution
from .plane_lp_size import IPM_SECONDS_PER_NONZERO, UNTIMED_MAX_NONZEROS, refused, route_nonzeros
from .plane_routes import Classes, PlaneRoutes, plane_routes, server_classes
from .plane_routing import PlaneProof, PlaneRate, proven_plane_rate
from .planes import Planes, plane_structure

#: What the proof of a routing through the planes takes, as a multiple of its LP's build:
#: 1.8x on a failed 16,384-GPU SuperPOD (45 s against 25 s under load), 2.3x on a failed
#: 4,096-GPU one; the LP is given what a time limit leaves after both.
PROOF_PER_BUILD = 2.5

#: CPU seconds the LP's assembly takes per arc of the fabric (6 s for the 410,000 arcs of a
#: failed 16,384-GPU SuperPOD, 1 s for a 4,096-GPU one's 100,000), and the fewest nonzeros
#: its LP has per arc (1.5 on the failed Meta 24K design, 3.6 and 5.9 on those SuperPODs, 5.5
#: on a failed 4,096-GPU 3-tier Clos): nothing of the planes is read when even these low
#: estimates of the assembly, the proof and the LP do not fit.
BUILD_SECONDS_PER_ARC = 1e-5

#: What the proof of a routing of whole groups (:mod:`fabricopt.failures.plane_groups_lp`)
#: takes per endpoint: 4.3 s CPU for a failed 16,384-GPU SuperPOD; its LP is begun only
#: when a time limit leaves this much after it.
GROUP_PROOF_SECONDS_PER_ENDPOINT = 3e-4
LP_NONZEROS_PER_ARC = 1.5

#: Seconds of the planes' LP (its routes' nonzeros times IPM_SECONDS_PER_NONZERO) up to
#: which :func:`planes_follow` lets the detours' search be skipped: a failed 4,096-GPU
#: 3-tier Clos's 63,000 route nonzeros (6 s) follow, a 1 %-failed SuperPOD of 16 SU's
#: 138,000 (14 s; the LP itself ran past 90 s) are searched first.
FOLLOW_SECONDS = 10.0


def plane_bracket(fab: Fabric, traffic: Traffic, time_limit: float | None = None,
                  ga: GraphArrays | None = None) -> FlowResult | None:
    """``fab``'s certified bracket for ``traffic`` through its planes, or None
    (:func:`plane_bracket_why` says why; ``ga``: the fabric's arrays, when at hand).

    >>> import fabricopt as fo
    >>> plane_bracket(fo.ring(6), fo.all_to_all(fo.ring(6))) is None
    True
    """
    return plane_bracket_why(fab, traffic, time_limit, ga)[0]


def plane_bracket_why(fab: Fabric, traffic: Traffic, time_limit: float | None = None,
                      ga: GraphArrays | None = None) -> tuple[FlowResult | None, str]:
    """``fab``'s certified bracket for ``traffic`` through its planes (method
    ``"bounds"``; status ``"optimal"`` when the two ends meet, else ``"inexact"``); None
    when the traffic is not uniform all-to-all over every endpoint, the fabric has no
    planes (:func:`~fabricopt.failures.planes.plane_structure` says why), ``time_limit`` is
    spent (0) or the LP stops with no point within it; with the bracket, "" or why there
    is none (what was not begun for lack of time, and about how long it would take).

    ``time_limit`` (seconds) is for the whole bracket: the LP gets what is left once it is
    built, less what the proof of its routing is expected to take
    (:data:`PROOF_PER_BUILD` times the build), and is not begun when that leaves less than
    it is expected to take; nothing is read when the fabric's arcs alone say so
    (:data:`BUILD_SECONDS_PER_ARC`, :data:`LP_NONZEROS_PER_ARC`), nor, without a time limit,
    when they say its LP has more than
    :data:`~fabricopt.failures.plane_lp_size.UNTIMED_MAX_NONZEROS` nonzeros; nor is the LP
    assembled when its routes' own nonzeros
    (:func:`~fabricopt.failures.plane_lp_size.route_nonzeros`) already say it is not begun.
    ``ga``: the fabric's arrays, when the caller has them.

    Examples
    --------
    >>> import fabricopt as fo
    >>> base = fo.cluster(fo.nvswitch_domain(4, 2, 4, 400.0), nodes=12, scale_out="clos",
    ...                   tiers=3, oversubscription=2, radix=8, whole_servers=False)
    >>> fab = fo.fail_random(base, 0.05, seed=2)
    >>> r, why = plane_bracket_why(fab, fo.all_to_all(fab))
    >>> why, r.status, round(r.per_endpoint_gbps, 2)   # the full LP's optimum, 50/11 x 47 GPUs
    ('', 'optimal', 213.64)
    >>> fo.check_certificate(fab, r).ok
    True
    """
    why = _not_asked(fab, traffic, time_limit)
    if why:
        return None, why
    start, cpu = now(), time.process_time()
    ga = ga if ga is not None else GraphArrays.from_fabric(fab)
    kept = _Reading.kept(fab, ga)
    pl, why = (kept.pl, "") if kept is not None else plane_structure(fab, ga)
    if pl is None:
        return None, why
    # Whole groups (a SuperPOD's units) have a small LP of their own; any other Clos of
    # servers the general one, whose size the arcs say before it is read.
    grouped = not whole_groups(pl)
    why = "" if grouped else _not_begun(ga.n_arcs, time_limit, start)
    if why:
        return None, why
    cut, lengths = structural_cut_lengths(fab, traffic, ga, True)
    run, run_lengths = leaf_run_cut(pl, float(traffic.uniform_gbps))
    if run < cut:
        cut, lengths = run, run_lengths
    upper = min(cut, endpoint_cut_bound(fab, traffic, ga))
    left = None if time_limit is None else time_limit - (now() - start)
    if left is not None and left <= 0:
        return None, "the planes' LP was not begun: the time limit was spent on its cuts"
    if grouped:
        # Under a limit the estimates (CPU seconds) are scaled by the wall seconds this
        # call has taken per CPU second so far: on a busy machine the proof, which cannot
        # stop half-way, takes several times its CPU (a 20 s limit ended at 25 s so).
        pace = 1.0 if time_limit is None else _pace(start, cpu)
        proof_s = GROUP_PROOF_SECONDS_PER_ENDPOINT * len(pl.endpoints) * pace
        found = solve_group_planes(pl, left, proof_s, pace)
        if found.proof is None:
            return None, (f"the planes' LP of whole groups: {found.why} (its proof about "
                          f"{proof_s:.0f} s more, {_left(time_limit, start)} left)")
        proof, columns, how = found.proof, found.lp_size["columns"], (
            "each unit's pairs on two rails turned at leaves the LP picks, ")
    else:
        sol, built = solve_planes(pl, time_limit=left, reserve=PROOF_PER_BUILD,
                                  read=None if kept is None else (kept.cl, kept.routes))
        if sol is None or built is None:
            least = _least_seconds(ga.n_arcs)
            return None, (f"the planes' LP was not begun or stopped without a point (with "
                          f"its assembly and proof at least about {least:.0f} s, "
                          f"{_left(time_limit, start)} left)")
        proof, columns, how = PlaneProof.of(sol), sol.lp_size["columns"], ""
    rate = proven_plane_rate(fab, traffic, proof, ga, pl)
    if not grouped and _near(rate.theta, upper):
        proof, rate = _polished(fab, traffic, ga, built, sol, proof, rate, time_limit, start)
    lower = min(rate.theta, upper)
    closed = bool(np.isfinite(upper)) and upper - lower <= EXACT_RTOL * upper
    mean_out = traffic.mean_out_gbps()
    load = rate.load / rate.overload if rate.load is not None and rate.overload > 0 else None
    above = ArcLengths if not np.isfinite(cut) else LeafRunCut if run <= cut else HierarchyCut
    certificate = FlowCertificate(ga, ga.tiers, load=load, lower_proof=proof,
                                  upper_proof=above(ga, lengths if np.isfinite(cut) else None))
    message = (f"below: all-to-all routed through the fabric's {pl.n_planes} planes ({how}an "
               f"LP of {columns:,} columns chose each pair's planes, busiest arc "
               f"{rate.overload:.4g} x its capacity before scaling); above: "
               + ("a cut around leaves of one group and their servers" if run <= cut
                  else "the hierarchy cut"))
    return FlowResult(
        theta=lower if closed else None, lower=lower, upper=upper,
        status="optimal" if closed else "inexact", method="bounds", backend="none",
        seconds=now() - start, per_endpoint_gbps=float(lower * mean_out),
        message=message, fabric_name=fab.name, traffic_name=traffic.name,
        max_overload=rate.overload, max_residual=0.0, mean_out_gbps=mean_out,
        certificate=certificate), ""


def _near(theta: float, upper: float) -> bool:
    """Whether a lower end ``theta`` short of ``upper`` by more than :data:`EXACT_RTOL` is
    within what the interior point's stopping tolerance leaves (ten times it): the LP's
    optimum may well be the cut."""
    return bool(np.isfinite(upper)) and (
        EXACT_RTOL * upper < upper - theta <= 10 * IPM_TOLERANCE * upper)


def _polished(fab: Fabric, traffic: Traffic, ga: GraphArrays, built: BuiltPlaneLP,
              sol: PlaneSolution, proof: PlaneProof, rate: PlaneRate, time_limit: float | None,
              start: float) -> tuple[PlaneProof, PlaneRate]:
    """The vertex crossover reaches from the planes' LP point ``sol`` (the LP ``built`` kept,
    neither built nor solved again), when the time a limit leaves allows as much again as
    the bracket has taken: its proof where it proves more (a failed small Clos whose LP
    meets the cut stopped 2e-6 under it at the usual tolerance; a failed 1,024-GPU SuperPOD
    1.4e-6 under it, where solving the LP again at 1e-8 takes 1.9 s CPU and its crossover
    0.24 s: :mod:`~fabricopt.failures.plane_vertex`)."""
    left = None if time_limit is None else time_limit - (now() - start)
    if left is not None and left < 2 * (now() - start):
        return proof, rate
    again = vertex_solution(built, sol, left)
    if again is None:
        return proof, rate
    vertex = PlaneProof.of(again)
    better = proven_plane_rate(fab, traffic, vertex, ga, built.pl)
    return (vertex, better) if better.theta > rate.theta else (proof, rate)


def planes_follow(fab: Fabric, traffic: Traffic, time_limit: float | None = None,
                  ga: GraphArrays | None = None) -> bool:
    """Whether :func:`plane_bracket` would read ``fab``'s planes and begin their LP within
    ``time_limit`` (seconds, None: none): the traffic uniform all-to-all, the planes found,
    and whole groups or an LP begun as far as the arcs and its routes' own nonzeros
    (:func:`~fabricopt.failures.plane_lp_size.route_nonzeros`, read in well under a second
    where the LP's assembly takes seconds) tell. A stage before it whose own search only
    narrows what the planes close (the detours' search: 10 s CPU of a failed 4,096-GPU
    3-tier Clos, whose planes then lift the lower end past it) skips that search. ``ga``:
    the fabric's arrays, when the caller has them.

    >>> import fabricopt as fo
    >>> base = fo.cluster(fo.nvswitch_domain(4, 2, 4, 400.0), nodes=12, scale_out="clos",
    ...                   tiers=3, oversubscription=2, radix=8, whole_servers=False)
    >>> fab = fo.fail_random(base, 0.05, seed=2)
    >>> planes_follow(fab, fo.all_to_all(fab)), planes_follow(fab, fo.all_to_all(fab), 0)
    (True, False)
    >>> planes_follow(fo.ring(6), fo.all_to_all(fo.ring(6)))
    False
    """
    if _not_asked(fab, traffic, time_limit):
        return False
    start = now()
    ga = ga if ga is not None else GraphArrays.from_fabric(fab)
    pl, _ = plane_structure(fab, ga)
    if pl is None:
        return False
    if not whole_groups(pl):
        return True
    if _not_begun(ga.n_arcs, time_limit, start):
        return False
    # As solve_planes reads them: its routes' nonzeros refuse its LP before any row. The
    # search is skipped only for an LP expected within FOLLOW_SECONDS: on a larger one it
    # pays to search first (a 1 %-failed 4,096-GPU SuperPOD's search closes in about a
    # second what its planes' LP of 138,000 route nonzeros took over 90 s to).
    cl = server_classes(pl)
    routes = plane_routes(pl, cl, ((pl.up < 0) | (pl.down < 0)).any(axis=1))
    nonzeros = route_nonzeros(pl, cl, routes)
    follows = (not refused(nonzeros, time_limit, now() - start, PROOF_PER_BUILD)
               and nonzeros * IPM_SECONDS_PER_NONZERO <= FOLLOW_SECONDS)
    if follows:   # kept only for the plane_bracket_why that follows, not held otherwise
        _Reading.keep(fab, ga, pl, cl, routes)
    return follows


@dataclass(frozen=True)
class _Reading:
    """The planes, server classes and routes (over the leaves that lost an uplink) that
    :func:`planes_follow` read off a fabric's arrays, kept (the last one only, by weak
    reference to the fabric and its arrays) for :func:`plane_bracket_why` of the very same
    objects, which the engine and a failure sweep call right after it: the routes are
    read once (0.1 s of a failed 4,096-GPU Clos). Kept per thread (a failure sweep may run
    its trials on threads), and only when the planes follow."""

    fab: weakref.ref
    ga: weakref.ref
    pl: Planes
    cl: Classes
    routes: PlaneRoutes

    @staticmethod
    def keep(fab: Fabric, ga: GraphArrays, pl: Planes, cl: Classes,
             routes: PlaneRoutes) -> None:
        _LAST.reading = _Reading(weakref.ref(fab), weakref.ref(ga), pl, cl, routes)

    @staticmethod
    def kept(fab: Fabric, ga: GraphArrays) -> _Reading | None:
        """What was kept for ``fab`` and ``ga`` (these objects, not equal ones), handed over
        once (not held after it), or None."""
        last = getattr(_LAST, "reading", None)
        if last is None or last.fab() is not fab or last.ga() is not ga:
            return None
        _LAST.reading = None
        return last


#: The last :class:`_Reading` kept, on this thread (its ``reading`` attribute).
_LAST = threading.local()


def _not_asked(fab: Fabric, traffic: Traffic, time_limit: float | None) -> str:
    """Why the planes are not read for ``traffic`` within ``time_limit`` at all (the
    traffic not uniform all-to-all over every endpoint, or no time left); "" when they
    are."""
    if not traffic.is_uniform or not traffic.uniform_gbps or set(
            traffic.endpoints) != set(fab.endpoints):
        return "the traffic is not uniform all-to-all over every endpoint"
    if time_limit == 0:
        return "the planes were not read: the time limit was spent"
    return ""


def _not_begun(n_arcs: int, time_limit: float | None, start: float) -> str:
    """Why the general planes' LP of a fabric of ``n_arcs`` arcs is not begun under
    ``time_limit`` (counted from ``start``), as the arcs alone say; "" when it is."""
    least = _least_seconds(n_arcs)
    if time_limit is not None and least > time_limit - (now() - start):
        return (f"the planes' LP was not begun: with its assembly and proof it would "
                f"take at least about {least:.0f} s, {_left(time_limit, start)} left")
    if time_limit is None and n_arcs * LP_NONZEROS_PER_ARC > UNTIMED_MAX_NONZEROS:
        # Its LP would not be begun: no assembly either.
        return (f"the planes' LP (above {UNTIMED_MAX_NONZEROS:,} nonzeros) was not "
                f"begun: at least about {least:.0f} s; give a time_limit above that "
                "to run it")
    return ""


def _least_seconds(n_arcs: int) -> float:
    """The fewest seconds the general planes' LP of ``n_arcs`` arcs takes with its
    assembly and proof, as the arcs alone say."""
    return n_arcs * (BUILD_SECONDS_PER_ARC * (1 + PROOF_PER_BUILD)
                     + LP_NONZEROS_PER_ARC * IPM_SECONDS_PER_NONZERO)


def _pace(start: float, cpu: float) -> float:
    """Wall seconds per CPU second since ``start`` (the engine's clock) and ``cpu``
    (:func:`time.process_time`), at least 1; 1 after too little work to tell."""
    used = time.process_time() - cpu
    return max(1.0, (now() - start) / used) if used > 0.05 else 1.0


def _left(time_limit: float | None, start: float) -> str:
    """What a time limit begun at ``start`` has left, in words.

    >>> _left(None, 0.0)
    'no time limit'
    """
    if time_limit is None:
        return "no time limit"
    return f"{max(time_limit - (now() - start), 0.0):.1f} s of the time limit"


def narrowed(result: FlowResult, planes: FlowResult) -> FlowResult:
    """``result`` with each end of its bracket taken from ``planes`` (a
    :func:`plane_bracket` of the same fabric and traffic) where that is tighter, the proof
    of that end with it."""
    cert, other = result.certificate, planes.certificate
    if result.exact or cert is None or other is None or (
            (cert.traffic_scale, cert.capacity_unit) != (1.0, 1.0)):
        return result
    lower, upper, notes = result.lower, result.upper, []
    stages = dict(result.stages)
    overload = result.max_overload
    if planes.lower > lower:
        lower, overload = planes.lower, planes.max_overload
        cert = replace(cert, lower_proof=other.lower_proof, load=other.load)
        stages["lower"] = "planes"
        notes.append("below: routed through the planes")
    if planes.upper < upper:
        upper = planes.upper
        cert = replace(cert, upper_proof=other.upper_proof)
        stages["upper"] = "planes"
        notes.append("above: " + planes.message.rsplit("above: ", 1)[-1])
    if not notes:
        return result
    closed = bool(np.isfinite(upper)) and upper - lower <= EXACT_RTOL * upper
    return replace(result, theta=lower if closed else None, lower=lower, upper=upper,
                   status="optimal" if closed else result.status, max_overload=overload,
                   per_endpoint_gbps=float(lower * (result.mean_out_gbps or 0.0)),
                   message="; ".join([*notes, f"before: [{result.lower:.9g}, "
                                      f"{result.upper:.9g}], {_without_gap(result.message)}"]),
                   certificate=cert, seconds=result.seconds + planes.seconds, stages=stages)


def _without_gap(message: str) -> str:
    """``message`` without what it said of the asked gap (no longer so once narrowed)."""
    return message.split("; not within gap")[0].split("; within gap")[0]


class ThroughPlanes:
    """The engine stage that narrows a failed fabric's answer through its planes: handed
    to :func:`~fabricopt.max_concurrent_flow` by the failure floor
    (:data:`~fabricopt.failures.engine.FAILURE_STAGES`), after the intact flow rerouted;
    the engine's :class:`~fabricopt.flow.plan.FromIntact` calls :meth:`narrow` with what
    the stages before it left open (or None).

    >>> stage = ThroughPlanes()
    >>> stage.name
    'planes'
    """

    name = "planes"

    def applies(self, problem: Any) -> tuple[bool, str]:
        """Whether ``problem``'s fabric is a failed one too large for a quick LP of its
        own (where its planes could pay)."""
        if not problem.edited:
            return False, "not a failed fabric (made by without or fail_random)"
        if problem.nonzeros <= FIND_SYMMETRY_NONZEROS:
            return False, (f"its own LP is small (at most {FIND_SYMMETRY_NONZEROS:,} "
                           "nonzeros)")
        return True, ""

    def cost(self, problem: Any) -> str:
        return ("the planes read off the graph, an LP choosing each pair's planes, its "
                "routing re-proven")

    def run(self, problem: Any, bracket: Any = None) -> FlowResult | None:
        """The bracket through the planes alone (None when there is none)."""
        return self.narrow(problem, None)

    def narrow(self, problem: Any, answer: FlowResult | None) -> FlowResult | None:
        """``answer`` (None: none yet) narrowed by the bracket through the planes within
        what the time limit leaves (none begun once it is spent): each end taken where
        tighter (:func:`narrowed`); without an answer, that bracket (the engine's answer
        when :func:`~fabricopt.flow.from_intact.acceptable`, else a bracket whose ends the
        stages after it may tighten); with no bracket, the answer's message says why."""
        p, left = problem, problem.budget.left()
        if left == 0:
            planes, why = None, "the planes' LP was not begun: the time limit was spent before it"
        else:
            planes, why = plane_bracket_why(p.fab, p.traffic, left, p.ga)
        if planes is not None and answer is not None:
            answer = narrowed(answer, planes)
            acceptable(answer, p.gap, p.too_large)  # says how the gap now stands
        elif planes is not None:  # the answer when acceptable, else a bracket to keep
            acceptable(planes, p.gap, p.too_large)  # says how the gap stands
            planes.stages = {"lower": self.name, "upper": self.name}
            answer = planes
        elif answer is not None and why:  # what was not begun, not approx's minutes
            answer.message = (f"{_without_gap(answer.message)}; not within gap "
                              f"{p.gap:.3%}: {why}")
        return answer


#: The stage the failure floor hands the engine (:mod:`fabricopt.failures.engine`).
THROUGH_PLANES = ThroughPlanes()


__all__ = ["BUILD_SECONDS_PER_ARC", "GROUP_PROOF_SECONDS_PER_ENDPOINT", "LP_NONZEROS_PER_ARC",
           "PROOF_PER_BUILD", "THROUGH_PLANES", "ThroughPlanes", "narrowed", "plane_bracket",
           "plane_bracket_why", "planes_follow"]
