"""Re-check a throughput result against the fabric, independently of how it was solved.

The lower bound is re-proven from the stored flow (conservation and capacities recomputed
from the fabric's own arcs); the upper bound is recomputed from the stored arc lengths with
shortest paths between endpoints over the whole graph — no endpoint collapse of the model, no
aggregation, no symmetry — so the distance bound is evaluated exactly as stated in
``docs/throughput.md`` (its sum of distances by :mod:`fabricopt.flow.distance_sums`, which
searches from the switches endpoints attach to, never holding an endpoint-by-endpoint
matrix); where endpoint links count, the cut around each endpoint (its link
capacity over what it sends or receives) bounds theta too.

For results of the symmetric method the lower bound is re-proven for the root flows (one per
orbit of the group on the endpoints) and spread over the arc orbits. With a generator's
symmetry claim this relies on the claim (the upper bound does not): prove a claim on a small
instance with :func:`fabricopt.verify_symmetry`. With a symmetry found by
:func:`fabricopt.find_symmetry` (carried by the certificate) nothing is taken on trust: its
generators are re-verified as automorphisms of the fabric and its orbits recomputed from them
first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidFabricError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..graph_arrays import GraphArrays
from ..symmetry.search import FoundSymmetry, verify_found_symmetry, with_symmetry
from ..symmetry_claim import Symmetry
from ..traffic import Traffic, all_to_all
from .certificate import certified_lower
from .distance_sums import demand_distance
from .formulation import build_flow_lp
from .model import ThroughputModel
from .result import FlowResult
from .symmetric import build_symmetric_lp
from .units import in_units


@dataclass(frozen=True)
class CertificateCheck:
    """What :func:`check_certificate` found.

    ``lower`` and ``upper`` are the bounds recomputed here; ``lower_ok``/``upper_ok`` say
    whether they prove the result's bracket (to 1e-9 relative); an infinite upper bound,
    claimed or recomputed, proves nothing (``upper_ok`` False).
    """

    lower: float
    upper: float
    max_overload: float
    residual_l1: float
    lower_ok: bool
    upper_ok: bool

    @property
    def ok(self) -> bool:
        return self.lower_ok and self.upper_ok


def explicit_distance_bound(fab: Fabric, traffic: Traffic, lengths: np.ndarray,
                            ga: GraphArrays | None = None) -> float:
    """``sum c l / sum D dist_l`` with distances over the whole graph, evaluated exactly
    without an endpoint-by-endpoint matrix (:mod:`fabricopt.flow.distance_sums`)."""
    ga = ga or GraphArrays.from_fabric(fab)
    lengths = np.clip(lengths, 0.0, None)
    numerator = float(ga.capacity @ lengths)
    denominator = demand_distance(ga, lengths, traffic)
    if np.isinf(denominator):
        return 0.0
    return numerator / denominator if denominator > 0 else np.inf


def endpoint_cut_bound(fab: Fabric, traffic: Traffic, ga: GraphArrays) -> float:
    """``min`` over endpoints of (capacity leaving it / demand it sends) and (capacity
    entering it / demand it receives): the cut around one endpoint bounds theta."""
    out_cap = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    in_cap = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)
    best = np.inf
    for demand, cap in ((traffic.out_gbps(), out_cap), (traffic.in_gbps(), in_cap)):
        node = np.fromiter((ga.index[e] for e in demand), np.int64, count=len(demand))
        gbps = np.fromiter(demand.values(), float, count=len(demand))
        sends = gbps > 0
        if sends.any():
            best = min(best, float(np.min(cap[node[sends]] / gbps[sends])))
    return best


def _with_proven_symmetry(fab: Fabric, found: Symmetry | None) -> Fabric | None:
    """``fab`` itself when it carries a claim; else ``fab`` carrying the found symmetry once
    its generators are re-verified, or None when nothing was found (a generator's claim the
    fabric lost) or they are not automorphisms of ``fab`` or do not give the found orbits
    (then the lower bound cannot be re-proven)."""
    if fab.symmetry is not None:
        return fab
    if not isinstance(found, FoundSymmetry):
        return None  # a generator's claim that no longer holds (endpoints changed): no lift
    try:
        verify_found_symmetry(fab, found)
    except InvalidFabricError:
        return None
    return with_symmetry(fab, found)


def check_certificate(fab: Fabric, result: FlowResult, traffic: Traffic | None = None,
                      ) -> CertificateCheck:
    """Re-prove ``result.lower`` and ``result.upper`` on ``fab`` for ``traffic``.

    Parameters
    ----------
    fab : Fabric
        The fabric the result was computed on.
    result : FlowResult
        From :func:`max_concurrent_flow`.
    traffic : Traffic, optional
        The traffic it was computed for (default: all-to-all at 1 Gb/s).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(6)
    >>> check = fo.check_certificate(fab, fo.max_concurrent_flow(fab))
    >>> check.ok, round(check.upper, 6)   # 8 / 6**2
    (True, 0.222222)
    """
    check_fabric("check_certificate", fab)
    if not isinstance(result, FlowResult):
        raise InvalidParameterError(f"check_certificate(): result must be a FlowResult (from "
                                    f"max_concurrent_flow), got {type(result).__name__}")
    if traffic is not None and not isinstance(traffic, Traffic):
        raise InvalidParameterError(f"check_certificate(): traffic must be None or a Traffic, "
                                    f"got {type(traffic).__name__}")
    if traffic is not None:
        traffic.check_endpoints(fab, "check_certificate")
    traffic = traffic or all_to_all(fab)
    cert = result.certificate
    if cert is None:  # nothing proves any bound: an infinite upper bound is no proof either
        return CertificateCheck(0.0, np.inf, 0.0, 0.0, result.lower <= 0.0, False)
    # The solve ran on traffic scaled so theta is near one and on capacities divided by a
    # unit near their size (fabricopt.flow.units); re-prove in those units.
    scale, unit = cert.traffic_scale, cert.capacity_unit
    if scale != unit:
        traffic = traffic.scaled(scale / unit)
    ga = GraphArrays.from_fabric(fab)
    for part in ("arcs", "nodes"):  # a stray node leaves the arcs alone, not the symmetry
        if getattr(cert.ga, part) != getattr(ga, part):
            raise InvalidParameterError(f"check_certificate(): the result was computed on a "
                                        f"different graph ({part} differ)")
    ga = in_units(ga, unit)
    lower, overload, residual = 0.0, 0.0, 0.0
    symmetric_fab = (_with_proven_symmetry(fab, cert.symmetry)
                     if result.method == "symmetric" else fab)
    if cert.flow is not None and cert.theta is not None and symmetric_fab is not None:
        # Rebuild the model without reductions beyond the one the flow lives in, and lift.
        model: ThroughputModel
        if result.method == "symmetric":
            gbps = traffic.uniform_gbps or next(iter(traffic.pairs.values()))
            # The claim was just checked against the graph (or the found group re-verified):
            # hand it over rather than check it again (4 s on 128,000 GPUs).
            model = build_symmetric_lp(symmetric_fab, gbps, reduce=False,
                                       include_endpoint_links=cert.include_endpoint_links,
                                       ga=ga, symmetry=symmetric_fab._symmetry)
            point = np.append(cert.flow, cert.theta)
        else:
            model = build_flow_lp(fab, traffic, cert.include_endpoint_links, ga=ga)
            point = cert.flow
        lifted = model.lift(point)
        cons = model.constrained
        residual = lifted.residual_l1
        lower, overload = certified_lower(lifted.theta, lifted.load[cons], ga.capacity[cons],
                                          residual, model.min_demand)
    upper = np.inf
    if cert.lengths is not None:
        upper = explicit_distance_bound(fab, traffic, cert.lengths, ga)
    elif result.unreachable is not None:
        upper = explicit_distance_bound(fab, traffic, np.ones(ga.n_arcs), ga)
    if cert.include_endpoint_links:
        upper = min(upper, endpoint_cut_bound(fab, traffic, ga))
    lower, upper = lower * scale, upper * scale
    tol = 1e-9
    # An infinite upper bound proves nothing: a result that claims none, or whose lengths
    # give none, fails the check.
    return CertificateCheck(lower, upper, overload, residual,
                            lower >= result.lower * (1 - tol) - 1e-15,
                            bool(np.isfinite(upper) and np.isfinite(result.upper))
                            and upper <= result.upper * (1 + tol) + 1e-15)
