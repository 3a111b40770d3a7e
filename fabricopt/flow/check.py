"""Re-check a throughput result against the fabric, independently of how it was solved.

Each end of a result's bracket is proven by one typed proof its certificate keeps
(:mod:`fabricopt.flow.proof`): the lower end by something that carries the traffic (a flow,
root flows, a two-phase rate, a rerouted intact flow, a routing through the planes), the
upper end by arc lengths or a cut. Each proof re-proves its bound from the fabric alone
(``proof.check(fab, traffic)``: conservation and capacities recomputed from the fabric's own
arcs, distances over the whole graph with no endpoint collapse, no aggregation, no symmetry
taken on trust), and this module only asks them: it knows no stage, and a new stage's proof
is checked without a line here.

A two-phase rate (:func:`~fabricopt.valiant_rate`) re-proves itself the same way
(:func:`~fabricopt.flow.two_phase.check.check_hose_certificate`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._unchanged import unchanged
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..traffic import Traffic, all_to_all
from .proof import CertificateCheck, ProofCheck, same_graph
from .result import FlowResult

__all__ = ["CertificateCheck", "check_certificate"]


def check_certificate(fab: Fabric, result: Any,
                      traffic: Traffic | None = None) -> CertificateCheck:
    """Re-prove ``result.lower`` and ``result.upper`` on ``fab`` for ``traffic``.

    Parameters
    ----------
    fab : Fabric
        The fabric the result was computed on.
    result : FlowResult or ValiantBound
        From :func:`max_concurrent_flow`, or a two-phase rate from
        :func:`~fabricopt.valiant_rate` (re-proven by
        :func:`~fabricopt.flow.two_phase.check.check_hose_certificate`; the bounds are then
        in Gb/s per endpoint).
    traffic : Traffic, optional
        The traffic it was computed for (default: all-to-all at 1 Gb/s); not for a
        two-phase rate, which holds for every traffic of its hose.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(6)
    >>> check = fo.check_certificate(fab, fo.max_concurrent_flow(fab))
    >>> check.ok, round(check.upper, 6)   # 8 / 6**2
    (True, 0.222222)
    """
    check_fabric("check_certificate", fab)
    if not isinstance(result, FlowResult) and callable(getattr(result, "recheck", None)):
        # A two-phase rate re-proves itself (the checker knows no stage).
        if traffic is not None:
            raise InvalidParameterError("check_certificate(): a two-phase rate holds for "
                                        "every traffic of its hose; give no traffic")
        return result.recheck(fab)
    if not isinstance(result, FlowResult):
        raise InvalidParameterError(f"check_certificate(): result must be a FlowResult (from "
                                    f"max_concurrent_flow) or a ValiantBound (from "
                                    f"valiant_rate), got {type(result).__name__}")
    if traffic is not None and not isinstance(traffic, Traffic):
        raise InvalidParameterError(f"check_certificate(): traffic must be None or a Traffic, "
                                    f"got {type(traffic).__name__}")
    if traffic is not None:
        traffic.check_endpoints(fab, "check_certificate")
    traffic = traffic or all_to_all(fab)
    cert = result.certificate
    if cert is None:  # nothing proves any bound: an infinite upper bound is no proof either
        return CertificateCheck(0.0, np.inf, 0.0, 0.0, result.lower <= 0.0, False)
    with unchanged(fab):  # the fabric's arrays read once, for the checker and both proofs
        same_graph(fab, cert.ga)
        # Each end by its own proof, in the traffic's units (a proof made in a solve's units
        # converts itself); no proof proves 0 below and nothing above.
        lower = ProofCheck(0.0) if cert.lower_proof is None else cert.lower_proof.check(
            fab, traffic)
        upper = ProofCheck(np.inf) if cert.upper_proof is None else cert.upper_proof.check(
            fab, traffic)
    return CertificateCheck(lower.value, upper.value, lower.overload, lower.residual,
                            lower.proves_lower(result.lower), upper.proves_upper(result.upper))
