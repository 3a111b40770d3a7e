r"""A two-phase rate re-proven from the fabric, and the floor it puts under any traffic.

:func:`check_hose_certificate` re-proves a :class:`~fabricopt.flow.two_phase.rate.ValiantBound`
(what :func:`~fabricopt.check_certificate` does with one). :class:`HoseFloor` is the lower
proof of a throughput result whose lower end is the two-phase floor
(:func:`~fabricopt.flow.brackets.with_hose_floor`): a two-phase rate :math:`r` carries at
once every traffic in which no endpoint sends or receives more than :math:`r`, so

.. math:: \theta^* \ge r / \max(\text{largest row sum}, \text{largest column sum}).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ...graph_arrays import GraphArrays
from ...traffic import Traffic
from ..certificate import certified_lower
from ..lp_proof import with_proven_symmetry
from ..proof import CertificateCheck, ProofCheck
from .arrays import _Arrays, hub_shares, rate_scale
from .bounds import cut_of, wcmp_phase_one
from .domains import DomainPhaseOne
from .lp import _FullPhaseOne, _SymmetricPhaseOne
from .result import ValiantBound

__all__ = ["HoseFloor", "check_hose_certificate", "hose_theta"]


def hose_theta(rate_gbps: float, traffic: Traffic) -> float:
    """The theta a two-phase rate proves for ``traffic`` (see the module notes).

    >>> import fabricopt as fo
    >>> hose_theta(400.0, fo.all_to_all(fo.ring(5), gbps=10.0))   # each sends 4 x 10
    10.0
    """
    out, into = traffic.out_gbps(), traffic.in_gbps()
    most = max(max(out.values(), default=0.0), max(into.values(), default=0.0))
    return rate_gbps / most if most > 0 else math.inf


@dataclass(frozen=True)
class HoseFloor:
    """The lower proof of the two-phase floor: ``hose``, a two-phase rate whose hose holds
    the traffic at theta :func:`hose_theta`, re-proven from the flows it carries.

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> floor = HoseFloor(fo.valiant_rate(fab))
    >>> floor.check(fab, fo.all_to_all(fab)).value   # 400 Gb/s over 15 sent per endpoint
    26.666666666666668
    """

    hose: ValiantBound

    STAGES: ClassVar[tuple[str, ...]] = ("two-phase floor",)

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The theta the re-proven rate gives ``traffic`` (0 when its hose leaves out an
        endpoint of the traffic, or it carries no flows)."""
        proof = self.hose.proof
        if proof is None or not set(traffic.endpoints) <= set(proof.endpoints):
            return ProofCheck(0.0)
        again = check_hose_certificate(fab, self.hose)
        return ProofCheck(hose_theta(again.lower, traffic), again.max_overload,
                          again.residual_l1)


def check_hose_certificate(fab: Any, result: ValiantBound) -> CertificateCheck:
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
    >>> check = check_hose_certificate(fab, fo.valiant_rate(fab))
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
    return CertificateCheck(lower, upper, overload, residual,
                            ProofCheck(lower).proves_lower(result.rate_gbps),
                            ProofCheck(upper).proves_upper(result.upper_gbps))


def _hose_lower(fab: Any, arrays: _Arrays, proof: Any, ep_idx: np.ndarray,
                hub_idx: np.ndarray, share: np.ndarray) -> tuple[float, float, float]:
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
        claimed = with_proven_symmetry(fab, proof.symmetry)
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
