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
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..errors import InvalidFabricError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..graph_arrays import GraphArrays
from ..symmetry.search import FoundSymmetry, verify_found_symmetry, with_symmetry
from ..symmetry_claim import Symmetry
from ..traffic import Traffic, all_to_all
from .brackets import hose_theta
from .certificate import certified_lower
from .distance_sums import demand_distance
from .formulation import build_flow_lp
from .model import LiftedFlow, ThroughputModel
from .plane_routing import proven_plane_rate
from .reroute import ProvenFlow, Rerouted, ReroutedFlow, rerouted
from .result import FlowResult
from .symmetric import build_symmetric_lp
from .two_phase.bounds import cut_of, wcmp_phase_one
from .two_phase.domains import DomainPhaseOne
from .two_phase.rate import (
    ValiantBound,
    _Arrays,
    _FullPhaseOne,
    _SymmetricPhaseOne,
    hub_shares,
    rate_scale,
)
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


def _same_graph(fab: Fabric, arcs_of: GraphArrays) -> GraphArrays:
    """``fab``'s arrays, once they are the graph a result was computed on."""
    ga = GraphArrays.from_fabric(fab)
    for part in ("arcs", "nodes"):  # a stray node leaves the arcs alone, not the symmetry
        if getattr(arcs_of, part) != getattr(ga, part):
            raise InvalidParameterError(f"check_certificate(): the result was computed on a "
                                        f"different graph ({part} differ)")
    return ga


def _lifted(fab: Fabric, result: FlowResult, traffic: Traffic, ga: GraphArrays
            ) -> tuple[LiftedFlow, ThroughputModel] | None:
    """The result's stored flow lifted onto every arc of ``fab`` (``traffic`` and ``ga`` in
    the solve's units) and the model that lifted it; None when it stores none, or its
    symmetry cannot be re-proven."""
    cert = result.certificate
    # The flow is one root flow per endpoint orbit for the symmetric method, and for any
    # result that carries the symmetry it was found with (the bounds stage's orbit roots).
    root_flows = result.method == "symmetric" or cert.symmetry is not None
    symmetric_fab = _with_proven_symmetry(fab, cert.symmetry) if root_flows else fab
    if cert.flow is None or cert.theta is None or symmetric_fab is None:
        return None
    if root_flows and not (traffic.is_uniform
                           and set(traffic.endpoints) == set(symmetric_fab.endpoints)):
        return None  # root flows carry all-to-all over every endpoint, nothing else
    # Rebuild the model without reductions beyond the one the flow lives in, and lift.
    model: ThroughputModel
    if root_flows:
        gbps = traffic.uniform_gbps
        # The claim was just checked against the graph (or the found group re-verified):
        # hand it over rather than check it again (4 s on 128,000 GPUs).
        model = build_symmetric_lp(symmetric_fab, gbps, reduce=False,
                                   include_endpoint_links=cert.include_endpoint_links,
                                   ga=ga, symmetry=symmetric_fab._symmetry,
                                   assemble=False)
        point = np.append(cert.flow, cert.theta)
    else:
        model = build_flow_lp(fab, traffic, cert.include_endpoint_links, ga=ga)
        point = cert.flow
    return model.lift(point), model


def proven_flow(fab: Fabric, result: FlowResult, traffic: Traffic) -> ProvenFlow | None:
    """The flow ``result``'s certificate stores, re-proven on ``fab`` for ``traffic``: the
    theta it carries with every commodity conserved (what does not conserve is taken off,
    as for the lower bound) and its load on every arc, in Gb/s. None when the result stores
    no flow, or its graph is not ``fab``'s."""
    cert = result.certificate
    if cert is None or cert.flow is None:
        return None
    scale, unit = cert.traffic_scale, cert.capacity_unit
    solved = traffic.scaled(scale / unit) if scale != unit else traffic
    try:
        ga = _same_graph(fab, cert.ga)
    except InvalidParameterError:
        return None
    lifted = _lifted(fab, result, solved, in_units(ga, unit))
    if lifted is None:
        return None
    flow, model = lifted
    kept = flow.theta - flow.residual_l1 / model.min_demand
    # Arcs the model leaves unconstrained carry no commodity's flow but the endpoint rows'.
    return ProvenFlow(ga, max(kept, 0.0) * scale, flow.load * unit)


def _rerouted_lower(fab: Fabric, proof: ReroutedFlow, traffic: Traffic,
                    include_endpoint_links: bool) -> Rerouted | None:
    """What ``proof`` proves on ``fab``: its intact flow re-proven on its own fabric, then
    sent around the lost arcs (:mod:`fabricopt.flow.reroute`)."""
    if not include_endpoint_links or not isinstance(proof.result, FlowResult) \
            or not isinstance(proof.intact, Fabric):
        return None
    if any(e not in proof.intact.graph for e in traffic.endpoints):
        return None
    base = proven_flow(proof.intact, proof.result, traffic)
    if base is None:
        return None
    return rerouted(base, proof.lost, proof.share, proof.detours, GraphArrays.from_fabric(fab),
                    smallest_demand(traffic))


def smallest_demand(traffic: Traffic) -> float:
    """The smallest positive demand of ``traffic`` (Gb/s per unit theta)."""
    if traffic.uniform_gbps:
        return float(traffic.uniform_gbps)
    positive = [d for d in traffic.pairs.values() if d > 0]
    return float(min(positive)) if positive else np.inf


def check_certificate(fab: Fabric, result: FlowResult | ValiantBound,
                      traffic: Traffic | None = None) -> CertificateCheck:
    """Re-prove ``result.lower`` and ``result.upper`` on ``fab`` for ``traffic``.

    Parameters
    ----------
    fab : Fabric
        The fabric the result was computed on.
    result : FlowResult or ValiantBound
        From :func:`max_concurrent_flow`, or a two-phase rate from
        :func:`~fabricopt.valiant_rate` (re-proven by :func:`check_hose_certificate`; the
        bounds are then in Gb/s per endpoint).
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
    if isinstance(result, ValiantBound):
        if traffic is not None:
            raise InvalidParameterError("check_certificate(): a two-phase rate holds for "
                                        "every traffic of its hose; give no traffic")
        return check_hose_certificate(fab, result)
    if not isinstance(result, FlowResult):
        raise InvalidParameterError(f"check_certificate(): result must be a FlowResult (from "
                                    f"max_concurrent_flow) or a ValiantBound (from "
                                    f"valiant_rate), got {type(result).__name__}")
    if traffic is not None and not isinstance(traffic, Traffic):
        raise InvalidParameterError(f"check_certificate(): traffic must be None or a Traffic, "
                                    f"got {type(traffic).__name__}")
    if traffic is not None:
        traffic.check_endpoints(fab, "check_certificate")
    traffic = asked = traffic or all_to_all(fab)
    cert = result.certificate
    if cert is None:  # nothing proves any bound: an infinite upper bound is no proof either
        return CertificateCheck(0.0, np.inf, 0.0, 0.0, result.lower <= 0.0, False)
    # The solve ran on traffic scaled so theta is near one and on capacities divided by a
    # unit near their size (fabricopt.flow.units); re-prove in those units.
    scale, unit = cert.traffic_scale, cert.capacity_unit
    if scale != unit:
        traffic = traffic.scaled(scale / unit)
    ga = _same_graph(fab, cert.ga)
    ga = in_units(ga, unit)
    lower, overload, residual = 0.0, 0.0, 0.0
    lifted = _lifted(fab, result, traffic, ga)
    if lifted is not None:
        flow, model = lifted
        cons = model.constrained
        residual = flow.residual_l1
        lower, overload = certified_lower(flow.theta, flow.load[cons], ga.capacity[cons],
                                          residual, model.min_demand)
    upper = np.inf
    if cert.lengths is not None:
        upper = explicit_distance_bound(fab, traffic, cert.lengths, ga)
    elif result.unreachable is not None:
        upper = explicit_distance_bound(fab, traffic, np.ones(ga.n_arcs), ga)
    if cert.include_endpoint_links:
        upper = min(upper, endpoint_cut_bound(fab, traffic, ga))
    lower, upper = max(lower * scale, _hose_floor(fab, cert.hose, asked)), upper * scale
    if cert.reroute is not None:
        around = _rerouted_lower(fab, cert.reroute, asked, cert.include_endpoint_links)
        if around is not None and around.lower > lower:
            lower, overload, residual = around.lower, around.overload, around.residual
    if cert.plane is not None and cert.include_endpoint_links:
        planes = proven_plane_rate(fab, asked, cert.plane)
        if planes.theta > lower:
            lower, overload, residual = planes.theta, planes.overload, 0.0
    tol = 1e-9
    # An infinite upper bound proves nothing: a result that claims none, or whose lengths
    # give none, fails the check.
    return CertificateCheck(lower, upper, overload, residual,
                            lower >= result.lower * (1 - tol) - 1e-15,
                            bool(np.isfinite(upper) and np.isfinite(result.upper))
                            and upper <= result.upper * (1 + tol) + 1e-15)


def _hose_floor(fab: Fabric, hose: ValiantBound | None, traffic: Traffic) -> float:
    """The theta a carried two-phase rate proves for ``traffic`` once re-proven here (0
    without one, or when its hose leaves out an endpoint of the traffic)."""
    if hose is None or hose.proof is None or not set(traffic.endpoints) <= set(
            hose.proof.endpoints):
        return 0.0
    return hose_theta(check_hose_certificate(fab, hose).lower, traffic)


def check_hose_certificate(fab: Fabric, result: ValiantBound) -> CertificateCheck:
    """Re-prove a two-phase rate (:func:`~fabricopt.valiant_rate`) on ``fab``, in Gb/s per
    endpoint.

    Below: the flows of ``result.proof`` rebuilt from the fabric (WCMP phase-1 flows routed
    again, or the LP's point lifted to one flow per endpoint, a symmetric point through its
    re-verified group), their conservation residual and their two-phase load
    ``L(a) + L(reverse a)`` recomputed against every arc's capacity. Above: the cut
    ``result.cut`` (its capacity over the phase-1 rate that must cross it) or the two-phase
    distance bound of ``result.lengths``, with one shortest-path search from every endpoint.

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> check = check_certificate(fab, fo.valiant_rate(fab))
    >>> check.ok, round(check.lower, 6), round(check.upper, 6)
    (True, 400.0, 400.0)
    """
    proof = result.proof
    # The endpoints of the hose: the proof's, else (a rate of 0, proven by nothing) all.
    eps = tuple(fab.endpoints) if proof is None else proof.endpoints
    if any(v not in fab.graph for v in (*result.hubs, *eps)):
        return CertificateCheck(0.0, np.inf, 0.0, 0.0, result.rate_gbps <= 0.0, False)
    arrays = _Arrays.of(fab)
    ga, rev = arrays.ga, arrays.rev
    ep_idx = np.array([ga.index[e] for e in eps])
    hub_idx = np.array([ga.index[h] for h in result.hubs])
    share = hub_shares(ga, hub_idx, ep_idx)
    lower, overload, residual = (0.0, 0.0, 0.0) if proof is None else _hose_lower(
        fab, arrays, proof, ep_idx, hub_idx, share)
    hub_share = np.zeros(ga.n_nodes)
    hub_share[hub_idx] = share
    upper = np.inf
    if result.cut is not None:
        side = np.array([v in result.cut for v in ga.nodes])
        upper = cut_of(ga, side, ep_idx, hub_share).rate_gbps
    elif result.lengths is not None:
        upper = _hose_distance_bound(ga, rev, ep_idx, hub_idx, share,
                                     np.array([result.lengths[a] for a in ga.arcs]))
    tol = 1e-9
    return CertificateCheck(lower, upper, overload, residual,
                            lower >= result.rate_gbps * (1 - tol) - 1e-15,
                            bool(np.isfinite(upper) and np.isfinite(result.upper_gbps))
                            and upper <= result.upper_gbps * (1 + tol) + 1e-15)


def _hose_lower(fab: Fabric, arrays: _Arrays, proof, ep_idx: np.ndarray, hub_idx: np.ndarray,
                share: np.ndarray) -> tuple[float, float, float]:
    """The rate (Gb/s), worst overload and residual that ``proof``'s flows prove."""
    ga, rev = arrays.ga, arrays.rev
    min_share = float(share[share > 0].min())
    if proof.kind == "wcmp":
        routed = wcmp_phase_one(ga, rev, ep_idx, hub_idx, share)
        if routed is None:
            return 0.0, 0.0, 0.0
        rate, overload = routed.rate(ga.capacity, min_share)
        return rate, overload, routed.residual_l1
    if proof.x is None:
        return 0.0, 0.0, 0.0
    scale = rate_scale(ga, ep_idx)
    if proof.kind == "merged":
        model = DomainPhaseOne.build(ga, rev, ep_idx, hub_idx, share, arrays.scale_up)
    elif proof.kind == "lp":
        model = _FullPhaseOne.build(ga, rev, ep_idx, hub_idx, scale, share)
    else:
        claimed = _with_proven_symmetry(fab, proof.symmetry)
        if claimed is None or set(proof.endpoints) != set(fab.endpoints):
            return 0.0, 0.0, 0.0
        model = _SymmetricPhaseOne.build(claimed, ga, rev, ep_idx, hub_idx, scale,
                                         claimed._symmetry, share)
    if model is None or len(proof.x) != model.lp.n_cols:
        return 0.0, 0.0, 0.0
    lifted = model.lift(proof.x)
    lower, overload = certified_lower(lifted.theta, lifted.load, ga.capacity,
                                      lifted.residual_l1, model.min_demand)
    return lower * model.scale, overload, lifted.residual_l1


def _hose_distance_bound(ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
                         hub_idx: np.ndarray, share: np.ndarray, lengths: np.ndarray) -> float:
    """``sum c l / sum_s sum_h p(h) dist(s, h)`` with each arc costing its length plus its
    reverse's (phase 2 runs phase 1 backwards), from every endpoint."""
    lengths = np.clip(lengths, 0.0, None)
    both = lengths + lengths[rev]
    graph = sp.csr_matrix((both, (ga.tail, ga.head)), shape=(ga.n_nodes, ga.n_nodes))
    total = 0.0
    for batch in np.array_split(ep_idx, max(1, len(ep_idx) // 256)):
        dist = dijkstra(graph, directed=True, indices=batch)[:, hub_idx]
        if not np.all(np.isfinite(dist)):
            return 0.0
        total += float((dist @ share).sum())
    return float(ga.capacity @ lengths) / total if total > 0 else np.inf
