"""A solver's answer as a :class:`~fabricopt.flow.result.FlowResult`: both proofs of its
bracket (:func:`~fabricopt.flow.certificate.certify`), reconciled with what the solver
claims, in the caller's units. A claim the proofs do not bear out is not reported: an
"optimal" whose bracket stays open is "inexact", and a status the solver does not name is
judged by the proofs alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .certificate import EXACT_RTOL, certify
from .formulation import CollapsedDemand, FlowModel
from .lp import LPSolution
from .lp_proof import FlowProof, RootFlowProof
from .model import ThroughputModel
from .proof import ArcLengths
from .result import FlowCertificate, FlowResult
from .symmetric import SymmetricModel
from .units import in_units

#: Statuses of a solve stopped short of what it was asked (a stalled approximate run, a
#: limit): when their proofs meet all the same, the answer is an optimum
#: (:func:`certified_result`).
STOPPED_SHORT = ("stalled", "iteration_limit", "time_limit")


def lp_size_of(model: ThroughputModel) -> dict[str, int]:
    """The columns, rows and nonzeros of ``model``'s LP (and how much a symmetric one
    reduced it)."""
    if isinstance(model, FlowModel):
        return model.lp_size  # counted without assembling the matrices
    size = {"columns": model.lp.n_cols, "rows": model.lp.n_rows, "nonzeros": model.lp.nnz}
    if isinstance(model, SymmetricModel):
        size["reduced"] = int(model.reduced)
    return size


def certified_result(model: ThroughputModel | CollapsedDemand, sol: LPSolution, *,
                     method: str, backend: str, fabric_name: str = "",
                     tiers: tuple[str, ...] = (), traffic_scale: float = 1.0,
                     capacity_unit: float = 1.0, upper_cap: float = np.inf, polish: bool = True,
                     extra_lengths: Sequence[np.ndarray] = ()) -> FlowResult:
    """The :class:`FlowResult` of a solver's answer: both proofs by
    :func:`~fabricopt.flow.certificate.certify`, reconciled with the solver's claim, in the
    caller's units (the solve ran on the traffic times ``traffic_scale / capacity_unit`` and
    the capacities divided by ``capacity_unit``, see :mod:`fabricopt.flow.units`).

    ``upper_cap`` is a further proven upper bound (in solve units) the caller already has;
    ``polish`` and ``extra_lengths`` (further candidates for the upper bound, each one length
    per fabric arc) go to :func:`~fabricopt.flow.certificate.certify`.
    """
    cert = certify(model, sol, polish, extra_lengths)  # type: ignore[arg-type]
    bound = cert.bound
    status, message = sol.status, sol.message
    lower, upper = cert.lower, min(cert.upper, upper_cap)
    if (status == "error" and cert.lifted is not None and 0 < lower <= upper < np.inf
            and (bound is None or not bound.failure)):
        # The solver ended without a status it names (HiGHS's interior point without
        # crossover on superpod(1): "Unknown" after 160 s), but its point and duals prove a
        # bracket: that proof is the answer, judged like an optimal claim below.
        status = "optimal"
        message = (f"the solver ended with status {sol.message!r}, but its point and duals "
                   "prove the optimum")
    if (status in STOPPED_SHORT and cert.lifted is not None and 0 < lower <= upper < np.inf
            and upper - lower <= EXACT_RTOL * upper
            and (bound is None or (not bound.failure and bound.unreachable is None))):
        # The solver stopped short of what it was asked (an approximate run whose gap is
        # out of reach stalls; a limit ran out), but its proofs meet: theta is proven, and
        # a closed bracket is an optimum whatever stopped the run.
        message = (f"{sol.message}; the certified bracket closed to {EXACT_RTOL:g} "
                   "relative all the same")
        status = "optimal"
    theta = cert.lifted.theta if (cert.lifted is not None and status == "optimal") else None
    if bound is not None and bound.failure:
        status, theta, message = "error", None, bound.failure
    if bound is not None and bound.unreachable is not None and theta is not None:
        theta = 0.0
    if lower > upper * (1 + 1e-7) + 1e-12:
        # The two proofs contradict each other beyond rounding: trust neither.
        message = (f"certificates disagree (lower {lower!r} > upper {upper!r}): numerical "
                   "trouble in the solver")
        status, theta, lower = "numerical_error", None, 0.0
    upper = max(upper, lower)
    if theta is not None and (bound is None or bound.unreachable is None):
        if not np.isfinite(upper) or upper - lower > EXACT_RTOL * upper:
            # The solver says optimal but its point does not prove it to our tolerance
            # (first-order and interior-point solvers stop early): keep only the bracket.
            bracket = (f"[{lower * traffic_scale:.9g}, {upper * traffic_scale:.9g}]")
            message = (f"{sol.message}: certified bracket {bracket}, not closed"
                       if method == "bounds" or sol.status == "error" else
                       f"solver reported optimal, but the certified bracket {bracket} is "
                       f"wider than {EXACT_RTOL:g} relative")
            status, theta = "inexact", None
        else:
            theta = min(max(theta, lower), upper)
    best = theta if theta is not None else lower
    lifted = cert.lifted
    unit = capacity_unit
    ga = in_units(model.ga, 1.0 / unit)
    iel = model.include_endpoint_links
    # A symmetric model's point is one flow per orbit root; any other's, the full LP's.
    point = RootFlowProof if isinstance(model, SymmetricModel) else FlowProof
    certificate = FlowCertificate(
        ga, tiers, lifted.load * unit if lifted else None,
        lower_proof=None if lifted is None else point(
            ga, lifted.flow, lifted.theta, traffic_scale, unit, iel),
        # Without lengths, a pair with no path is proven at 0 by hop counts.
        upper_proof=ArcLengths(ga, cert.lengths, traffic_scale, unit, iel, hops=(
            cert.lengths is None and bound is not None and bound.unreachable is not None)))
    mean_out = model.mean_out_gbps * unit  # so best * mean_out is in Gb/s
    return FlowResult(
        theta=None if theta is None else theta * traffic_scale, lower=lower * traffic_scale,
        upper=upper * traffic_scale, status=status, method=method, backend=backend,
        seconds=sol.seconds, per_endpoint_gbps=float(best * mean_out),
        mean_out_gbps=float(mean_out / traffic_scale),
        message=message, fabric_name=fabric_name,
        cut=bound.cut if bound is not None else None,
        unreachable=bound.unreachable if bound is not None else None,
        max_overload=cert.max_overload, max_residual=cert.max_residual,
        lp_size=lp_size_of(model) if not isinstance(model, CollapsedDemand) else {},
        certificate=certificate)


__all__ = ["certified_result", "lp_size_of"]
