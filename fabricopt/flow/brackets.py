r"""Certified brackets put together: the tighter side of two, a bracket that has closed, and
the floor any two-phase rate puts under a traffic's throughput.

Both ends of a :class:`~fabricopt.flow.result.FlowResult` are proofs about the same theta,
so the larger lower end and the smaller upper end of two results bound it too, each with its
own proof (:func:`tighter_bracket`).

**The two-phase floor.** A two-phase rate :math:`r` (:func:`~fabricopt.valiant_rate`) carries at
once every traffic in which no endpoint sends or receives more than :math:`r`. A traffic
:math:`D` scaled by :math:`\theta` is such a traffic when
:math:`\theta \max(\max_s \sum_t D_{st}, \max_t \sum_s D_{st}) \le r`, so

.. math:: \theta^* \ge r / \max(\text{largest row sum}, \text{largest column sum}).

It costs one two-phase rate, which on a Clos closes by bounds in well under a second, and is
what a short ``time_limit`` returns below when nothing else was proven: 200 Gb/s per GPU, 4%
under the exact 208.5, on the 4,096-GPU 3-tier 2:1 Clos. :func:`~fabricopt.check_certificate`
re-proves it from the two-phase rate it carries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..traffic import Traffic
from .certificate import EXACT_RTOL
from .result import FlowResult
from .two_phase.check import HoseFloor, hose_theta
from .two_phase.rate import ValiantBound, valiant_rate
from .two_phase.result import arc_array


def hose_floor(fab: Fabric, traffic: Traffic, time_limit: float | None) -> ValiantBound | None:
    """The two-phase rate over ``traffic``'s endpoints within ``time_limit``, or None when
    two-phase routing does not apply (links one way only) or proves nothing."""
    try:
        hose = valiant_rate(fab, endpoints=traffic.endpoints, time_limit=time_limit)
    except InvalidParameterError:
        return None
    return hose if hose.rate_gbps > 0 and hose.proof is not None else None


def with_hose_floor(result: FlowResult, hose: ValiantBound | None, traffic: Traffic
                    ) -> FlowResult:
    """``result`` with its lower end raised to the two-phase floor where that is higher; the
    certificate then carries the two-phase rate in place of a flow, and the load is the
    two-phase load at that rate (at least this traffic's)."""
    if hose is None or result.exact or result.certificate is None:
        return result
    floor = min(hose_theta(hose.rate_gbps, traffic), result.upper)
    if not floor > result.lower:
        return result
    ga = result.certificate.ga
    load = arc_array(hose.load_gbps, ga).copy()
    cert = replace(result.certificate, load=load, lower_proof=HoseFloor(hose))
    return closed(replace(
        result, lower=floor, certificate=cert, max_overload=hose.max_overload,
        stages={**result.stages, "lower": "two-phase floor"},
        max_residual=hose.max_residual,
        per_endpoint_gbps=floor * (result.mean_out_gbps or 0.0),
        message=f"{result.message}; lower end raised to the two-phase rate "
                f"{hose.rate_gbps:.6g} Gb/s per endpoint, which carries any traffic "
                f"within it: theta >= {floor:.9g}".lstrip("; ")))


def tighter_bracket(result: FlowResult, bounds: FlowResult) -> FlowResult:
    """``result`` with each side of its bracket replaced by ``bounds``'s where that is
    tighter (flow and lengths travel with their side, so the certificate still re-checks):
    a solver stopped early never answers worse than the bounds stage."""
    if result.exact or result.certificate is None or bounds.certificate is None:
        return result
    if ((result.certificate.traffic_scale, result.certificate.capacity_unit)
            != (bounds.certificate.traffic_scale, bounds.certificate.capacity_unit)):
        return result  # proofs in different solve units do not mix
    if result.status in ("error", "numerical_error"):
        return bounds
    cert = result.certificate
    lower, upper = result.lower, result.upper
    method = result.method
    stages = dict(result.stages)
    if bounds.lower > lower and bounds.certificate.flow is not None:
        # The flow travels with its model's layout: a symmetric result that takes the
        # stage's flow is re-proven as the stage's (the lengths are checked on the whole
        # graph whatever produced them).
        cert = replace(cert, load=bounds.certificate.load,
                       lower_proof=bounds.certificate.lower_proof)
        method = "bounds" if method == "symmetric" else method
        lower = bounds.lower
        stages["lower"] = bounds.stages.get("lower", bounds.method)
        result.max_overload, result.max_residual = bounds.max_overload, bounds.max_residual
    if bounds.upper < upper:
        cert = replace(cert, upper_proof=bounds.certificate.upper_proof)
        upper = bounds.upper
        stages["upper"] = bounds.stages.get("upper", bounds.method)
    if (lower, upper) == (result.lower, result.upper):
        return result
    mean = result.mean_out_gbps or 0.0
    return replace(result, lower=lower, upper=upper, certificate=cert, method=method,
                   per_endpoint_gbps=lower * mean, stages=stages,
                   message=f"{result.message}; bracket tightened by the bounds stage to "
                           f"[{lower:.9g}, {upper:.9g}]")


def with_stage_ends(result: FlowResult, proven: FlowResult) -> FlowResult:
    """``result`` with each end of its bracket taken from ``proven`` (a stage's certified
    bracket of the same problem, :class:`~fabricopt.flow.stages.Bracket`'s ``proven``)
    where that is tighter, the proof of that end and the stage's name with it; closed when
    the ends then meet. Any proof class mixes: each re-proves itself in its own units.

    >>> import fabricopt as fo
    >>> from dataclasses import replace
    >>> exact = fo.max_concurrent_flow(fo.ring(6), method="lp")
    >>> below = replace(exact, upper=float("inf"), theta=None, status="inexact",
    ...                 stages={"lower": "a stage", "upper": "none"})
    >>> open_ = replace(exact, lower=0.0, theta=None, status="time_limit")
    >>> got = with_stage_ends(open_, below)
    >>> got.exact, got.stages["lower"]
    (True, 'a stage')
    """
    cert, other = result.certificate, proven.certificate
    if result.exact or cert is None or other is None:
        return result
    lower, upper = result.lower, result.upper
    stages = dict(result.stages)
    overload, residual = result.max_overload, result.max_residual
    taken = []
    if proven.lower > lower and other.lower_proof is not None:
        cert = replace(cert, load=other.load, lower_proof=other.lower_proof)
        lower, stages["lower"] = proven.lower, proven.stages.get("lower", proven.method)
        overload, residual = proven.max_overload, proven.max_residual
        taken.append(f"below by {stages['lower']}")
    if proven.upper < upper and other.upper_proof is not None:
        cert = replace(cert, upper_proof=other.upper_proof)
        upper, stages["upper"] = proven.upper, proven.stages.get("upper", proven.method)
        taken.append(f"above by {stages['upper']}")
    if not taken:
        return result
    return closed(replace(
        result, lower=lower, upper=upper, certificate=cert, stages=stages,
        max_overload=overload, max_residual=residual,
        per_endpoint_gbps=lower * (result.mean_out_gbps or 0.0),
        message=f"{result.message}; bracket tightened to [{lower:.9g}, {upper:.9g}] "
                f"({', '.join(taken)})".lstrip("; ")))


def unsolved(candidates: Sequence[FlowResult | None], fallback: Callable[[], FlowResult],
             why: str) -> FlowResult:
    """The answer when nothing more can be solved (``why``: the approximate method's flows
    do not fit in memory): the tightest of the proven ``candidates`` (brackets in the same
    solve units), else ``fallback()``; status ``"not_solved"`` unless it is exact."""
    found = [c for c in candidates if c is not None]
    best = fallback() if not found else found[0]
    for other in found[1:]:
        best = tighter_bracket(best, other)
    if best.exact:
        return best
    return replace(best, status="not_solved", theta=None,
                   message=f"{why}: the bracket proven without it "
                           f"[{best.lower:.9g}, {best.upper:.9g}]")


def closed(result: FlowResult) -> FlowResult:
    """``result`` marked optimal, theta its lower end, when its proven bracket has closed
    (to :data:`~fabricopt.flow.certificate.EXACT_RTOL`); itself otherwise."""
    if (result.certificate is None or not math.isfinite(result.upper) or result.lower <= 0
            or result.upper - result.lower > EXACT_RTOL * result.upper):
        return result
    # Two proofs that meet to rounding: the lower end never claims more than the upper.
    lower = min(result.lower, result.upper)
    return replace(result, status="optimal", theta=lower, lower=lower)


__all__ = ["closed", "hose_floor", "tighter_bracket", "unsolved", "with_hose_floor",
           "with_stage_ends"]
