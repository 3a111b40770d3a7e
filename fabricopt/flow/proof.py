r"""What proves one end of a throughput bracket, and how a proof re-checks itself.

A **lower proof** is something that carries the traffic scaled by theta (a flow, the root
flows of a symmetric solve, a two-phase rate, an intact fabric's flow sent around what a
failed one lost, a routing through the planes); an **upper proof** is something no flow can
beat (arc lengths through the distance bound, a cut). Each is a small frozen record kept by
:class:`~fabricopt.flow.result.FlowCertificate` (``lower_proof``, ``upper_proof``: the better
proof of each end, as the engine's bracket keeps it) and each re-proves its bound from the
fabric alone with ``check(fab, traffic)``, returning a :class:`ProofCheck` in the caller's
units. :func:`~fabricopt.check_certificate` calls that and nothing else, so it knows no
stage: a proof class lives beside the stage that makes it.

=====================  ============================================  =============================
proof                  what it re-proves                             module
=====================  ============================================  =============================
``FlowProof``          the full LP's point, lifted and re-conserved  ``flow/lp_proof.py``
``RootFlowProof``      one flow per endpoint orbit, spread by the    ``flow/lp_proof.py``
                       (re-verified) group
``HoseFloor``          a two-phase rate's hose holds the traffic     ``flow/two_phase/check.py``
``ReroutedFlow``       an intact fabric's flow sent around the       ``failures/reroute.py``
                       failed arcs
``PlaneProof``         all-to-all routed through the planes          ``failures/plane_routing.py``
``ArcLengths``         the distance bound of arc lengths (an LP's    here
                       duals, hop counts) and the cut around each
                       endpoint
``HierarchyCut``       the best hierarchy cut, as its arcs' lengths  ``flow/bounds.py``
``LeafRunCut``         a cut around a run of leaves and their        ``failures/leaf_run_cuts.py``
                       servers, as its arcs' lengths
=====================  ============================================  =============================

This module holds the protocols, the check record, the upper proof every stage can give
(:class:`ArcLengths`; the cuts are its subclasses, named after their stages), and the
re-check helpers the proofs share. It imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidParameterError
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .distance_sums import demand_distance
from .units import in_units

#: Relative slack with which a re-proven bound still proves a result's end (rounding).
CHECK_RTOL = 1e-9

__all__ = ["CHECK_RTOL", "ArcLengths", "CertificateCheck", "LowerProof", "ProofCheck",
           "UpperProof", "endpoint_cut_bound", "explicit_distance_bound", "graph_of",
           "same_graph", "smallest_demand", "solve_units"]


@dataclass(frozen=True)
class ProofCheck:
    """What one proof re-proved: the bound ``value`` (theta, in the traffic's units), the
    busiest arc's load over its capacity ``overload`` and the flow's conservation
    ``residual`` (both 0 for an upper proof)."""

    value: float
    overload: float = 0.0
    residual: float = 0.0

    def proves_lower(self, claim: float) -> bool:
        """Whether ``value`` is at least the lower end ``claim`` (to rounding).

        >>> ProofCheck(0.5).proves_lower(0.5), ProofCheck(0.4).proves_lower(0.5)
        (True, False)
        """
        return self.value >= claim * (1 - CHECK_RTOL) - 1e-15

    def proves_upper(self, claim: float) -> bool:
        """Whether ``value`` is at most the upper end ``claim`` (to rounding); an infinite
        bound, claimed or re-proven, proves nothing.

        >>> ProofCheck(0.5).proves_upper(0.5), ProofCheck(np.inf).proves_upper(np.inf)
        (True, False)
        """
        return bool(np.isfinite(self.value) and np.isfinite(claim)) and \
            self.value <= claim * (1 + CHECK_RTOL) + 1e-15


@dataclass(frozen=True)
class CertificateCheck:
    """What :func:`~fabricopt.check_certificate` found.

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


@runtime_checkable
class LowerProof(Protocol):
    """Something that carries theta times the traffic, re-checked from the fabric alone."""

    #: The engine's stages that yield this proof (as ``result.stages`` names them).
    STAGES: ClassVar[tuple[str, ...]]

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The theta it proves for ``traffic`` on ``fab`` (0 when it proves nothing)."""
        ...


@runtime_checkable
class UpperProof(Protocol):
    """Something no flow of theta times the traffic beats, re-checked from the fabric."""

    STAGES: ClassVar[tuple[str, ...]]

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The bound on theta it proves for ``traffic`` on ``fab`` (inf when none)."""
        ...


def same_graph(fab: Any, arcs_of: GraphArrays, who: str = "check_certificate") -> GraphArrays:
    """``fab``'s arrays, once they are the graph a result was computed on (else a clear
    error naming ``who``)."""
    ga = GraphArrays.from_fabric(fab)
    for part in ("arcs", "nodes"):  # a stray node leaves the arcs alone, not the symmetry
        if getattr(arcs_of, part) != getattr(ga, part):
            raise InvalidParameterError(f"{who}(): the result was computed on a "
                                        f"different graph ({part} differ)")
    return ga


def graph_of(fab: Any, arcs_of: GraphArrays) -> GraphArrays | None:
    """``fab``'s arrays when they are ``arcs_of``'s graph, else None (a proof made on
    another graph proves nothing on this one)."""
    try:
        return same_graph(fab, arcs_of)
    except InvalidParameterError:
        return None


def solve_units(traffic: Traffic, ga: GraphArrays, traffic_scale: float,
                capacity_unit: float) -> tuple[Traffic, GraphArrays]:
    """``traffic`` and ``ga`` in the units a solve ran in (:mod:`fabricopt.flow.units`):
    the traffic times ``traffic_scale / capacity_unit``, capacities over ``capacity_unit``;
    a bound proven there is multiplied by ``traffic_scale`` back."""
    if traffic_scale != capacity_unit:
        traffic = traffic.scaled(traffic_scale / capacity_unit)
    return traffic, in_units(ga, capacity_unit)


def explicit_distance_bound(fab: Any, traffic: Traffic, lengths: np.ndarray,
                            ga: GraphArrays | None = None) -> float:
    """``sum c l / sum D dist_l`` with distances over the whole graph, evaluated exactly
    without an endpoint-by-endpoint matrix (:mod:`fabricopt.flow.distance_sums`).

    >>> import fabricopt as fo
    >>> fab = fo.ring(6)                      # 12 arcs of 1 Gb/s at length 1: 12 / 54
    >>> round(explicit_distance_bound(fab, fo.all_to_all(fab), np.ones(12)), 6)
    0.222222
    """
    ga = ga or GraphArrays.from_fabric(fab)
    lengths = np.clip(lengths, 0.0, None)
    numerator = float(ga.capacity @ lengths)
    denominator = demand_distance(ga, lengths, traffic)
    if np.isinf(denominator):
        return 0.0
    return numerator / denominator if denominator > 0 else np.inf


def endpoint_cut_bound(fab: Any, traffic: Traffic, ga: GraphArrays) -> float:
    """``min`` over endpoints of (capacity leaving it / demand it sends) and (capacity
    entering it / demand it receives): the cut around one endpoint bounds theta.

    >>> import fabricopt as fo
    >>> fab = fo.ring(6)                      # 2 Gb/s out of each, 5 Gb/s sent
    >>> endpoint_cut_bound(fab, fo.all_to_all(fab), GraphArrays.from_fabric(fab))
    0.4
    """
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


def smallest_demand(traffic: Traffic) -> float:
    """The smallest positive demand of ``traffic`` (Gb/s per unit theta).

    >>> import fabricopt as fo
    >>> smallest_demand(fo.all_to_all(fo.ring(4), gbps=3.0))
    3.0
    """
    if traffic.uniform_gbps:
        return float(traffic.uniform_gbps)
    positive = [d for d in traffic.pairs.values() if d > 0]
    return float(min(positive)) if positive else np.inf


@dataclass(frozen=True)
class ArcLengths:
    """The upper proof every stage can give: arc lengths ``lengths`` (one per arc of ``ga``,
    in the solve's units) through the distance bound ``sum c l / sum D dist_l``, and, with
    ``endpoint_cut``, the cut around each endpoint; the smaller proves theta's upper end.

    ``lengths`` None: no distance bound (``hops``: hop counts, every arc of length one, the
    bound of a result whose traffic has a pair with no path: 0). The lengths are an LP's
    duals, or the lengths of a hierarchy cut, a leaf-run cut or the routed stage's bound.

    >>> import fabricopt as fo
    >>> fab = fo.ring(6)
    >>> proof = ArcLengths(GraphArrays.from_fabric(fab), np.ones(12))
    >>> round(proof.check(fab, fo.all_to_all(fab)).value, 6)   # 12 / 54
    0.222222
    """

    ga: GraphArrays
    lengths: np.ndarray | None
    traffic_scale: float = 1.0
    capacity_unit: float = 1.0
    endpoint_cut: bool = True
    hops: bool = False

    STAGES: ClassVar[tuple[str, ...]] = (
        "full LP", "symmetric LP", "approximate rounds", "routed bounds", "orbit roots routed",
        "hierarchy cut", "hop lengths", "planes", "intact flow rerouted")

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The upper bound the lengths (and endpoint cuts) prove for ``traffic`` on
        ``fab``; inf when they were taken on another graph."""
        ga = graph_of(fab, self.ga)
        if ga is None:
            return ProofCheck(np.inf)
        traffic, ga = solve_units(traffic, ga, self.traffic_scale, self.capacity_unit)
        upper = np.inf
        if self.lengths is not None:
            upper = explicit_distance_bound(fab, traffic, self.lengths, ga)
        elif self.hops:
            upper = explicit_distance_bound(fab, traffic, np.ones(ga.n_arcs), ga)
        if self.endpoint_cut:
            upper = min(upper, endpoint_cut_bound(fab, traffic, ga))
        return ProofCheck(upper * self.traffic_scale)
