r"""Warm starts: what the solve of an intact fabric proves about the same fabric with parts gone.

The arc lengths that certify a :class:`~fabricopt.flow.result.FlowResult`'s upper bound are a
length function on any *sub-fabric* (same nodes or fewer, arcs a subset, capacities no larger):
restricted to the arcs that remain they still prove

.. math:: \theta_{\text{failed}} \le \frac{\sum_a c_a l_a}{\sum D\,\mathrm{dist}_l},

and that bound is no larger than the intact one (removing an arc or shrinking its capacity
lowers the numerator; distances can only grow). They are also a good first guess for the
approximate method's pricing. Nothing is taken on trust: the bound is evaluated on the failed
fabric itself and re-checked by :func:`~fabricopt.check_certificate` there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..errors import InvalidParameterError
from ..graph_arrays import GraphArrays
from .formulation import FlowModel
from .result import FlowResult

#: Relative slack on capacities when checking that a fabric is a sub-fabric (capacities read
#: back from a file may differ in the last digit).
CAPACITY_RTOL = 1e-9


def warm_lengths(func: str, ga: GraphArrays, warm_start: Any) -> np.ndarray:
    """The arc lengths of ``warm_start`` on the arcs of ``ga`` (mapped by node pair).

    Raises :class:`~fabricopt.InvalidParameterError` naming ``func`` and ``warm_start`` when
    it is not a :class:`FlowResult` with arc lengths, or when ``ga``'s fabric is not a
    sub-fabric of the one it was solved on: a node or arc it lacks, or a larger capacity.
    """
    if not isinstance(warm_start, FlowResult):
        raise InvalidParameterError(f"{func}(): warm_start must be None or a FlowResult, got "
                                    f"{type(warm_start).__name__}")
    cert = warm_start.certificate
    if cert is None or cert.lengths is None:
        raise InvalidParameterError(f"{func}(): warm_start must carry the arc lengths of its "
                                    f"certificate (status {warm_start.status!r} proved none)")
    position = {arc: a for a, arc in enumerate(cert.ga.arcs)}
    missing = [v for v in ga.nodes if v not in cert.ga.index]
    if missing:
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric that contains this one, but node "
            f"{missing[0]!r} is not in {warm_start.fabric_name!r} ({len(missing)} such nodes)")
    where = np.fromiter((position.get(arc, -1) for arc in ga.arcs), dtype=np.int64,
                        count=ga.n_arcs)
    absent = np.flatnonzero(where < 0)
    if len(absent):
        u, v = ga.arcs[absent[0]]
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric that contains this one, but arc "
            f"{u!r}->{v!r} is not in {warm_start.fabric_name!r} ({len(absent)} such arcs)")
    larger = np.flatnonzero(ga.capacity > cert.ga.capacity[where] * (1 + CAPACITY_RTOL))
    if len(larger):
        a = int(larger[0])
        u, v = ga.arcs[a]
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric with capacities no smaller, but "
            f"arc {u!r}->{v!r} has {ga.capacity[a]:g} Gb/s here and "
            f"{cert.ga.capacity[where[a]]:g} Gb/s in {warm_start.fabric_name!r}")
    return np.clip(np.asarray(cert.lengths, dtype=float)[where], 0.0, None)


def lengths_only(result: FlowResult) -> FlowResult:
    """``result`` without its flow and loads (its lower end's proof dropped): the lengths
    are all a warm start needs, small to pickle."""
    if result.certificate is None:
        return result
    slim = replace(result.certificate, load=None, lower_proof=None)
    return replace(result, certificate=slim)




#: Lengths at most this fraction of the largest count as zero when growing balls.
ZERO_LENGTH_RTOL = 1e-12

#: Ball-by-demand-pair entries evaluated at once (bounds the temporary memory).
BALL_BLOCK_ENTRIES = 1 << 24


def ball_cut_lengths(model: FlowModel, lengths: np.ndarray) -> np.ndarray | None:
    r"""Lengths of the best *ball cut* of ``lengths`` on ``model``'s fabric: 1 on the arcs of
    one cut, 0 elsewhere (None when no ball has demand across it).

    The intact fabric's lengths are a sum of cuts (on a SuperPOD, each server's NIC links),
    weighted for the intact capacities; after a failure the binding cut is one of them with
    less capacity, which the sum dilutes. So each cut is tried on its own: the *ball* of a
    source is every core node it reaches at length zero (the server its GPU sits in), that of
    a target every node reaching it at length zero, and a ball :math:`S` proves
    :math:`\theta \le c(\delta^+ S) / D(S, \bar S)` (arcs into :math:`S` and demand into it
    for a target's ball). That is the distance bound of the cut's 0/1 lengths, which is what
    the caller offers to the certificate.
    """
    ga, core = model.ga, model.core_arcs
    src, dst, gbps = model.agg
    if not len(core) or not len(gbps):
        return None
    lengths = np.asarray(lengths, dtype=float)
    zero = lengths[core] <= ZERO_LENGTH_RTOL * max(float(lengths[core].max()), 0.0)
    tail, head, cap = ga.tail[core], ga.head[core], ga.capacity[core]
    n = ga.n_nodes
    free = sp.csr_matrix((np.ones(int(zero.sum())), (tail[zero], head[zero])), shape=(n, n))
    best_ratio, best_cut = np.inf, None
    for matrix, roots, into in ((free, np.unique(src), False),
                                (free.T.tocsr(), np.unique(dst), True)):
        # Zero-length reachability from every root: the balls, each counted once.
        reach = np.isfinite(dijkstra(matrix, directed=True, indices=roots, unweighted=True))
        # Distinct rows, as np.unique(reach, axis=0) sorts them, but on their bits packed
        # into bytes: ten times faster on fat_tree(16)'s 128 x 1,344 (0.09 s a failure).
        packed = np.ascontiguousarray(np.packbits(reach, axis=1))
        rows = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        balls = reach[np.unique(rows, return_index=True)[1]]
        block = max(1, BALL_BLOCK_ENTRIES // max(len(gbps), len(core)))
        for lo in range(0, len(balls), block):
            ball = balls[lo:lo + block]
            if into:  # arcs and demand entering the ball of a target
                crossing = ~ball[:, tail] & ball[:, head]
                demand = (~ball[:, src] & ball[:, dst]) @ gbps
            else:
                crossing = ball[:, tail] & ~ball[:, head]
                demand = (ball[:, src] & ~ball[:, dst]) @ gbps
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(demand > 0, (crossing @ cap) / demand, np.inf)
            i = int(np.argmin(ratio))
            if ratio[i] < best_ratio:
                best_ratio, best_cut = float(ratio[i]), crossing[i]
    if best_cut is None:
        return None
    out = np.zeros(ga.n_arcs)
    out[core[best_cut]] = 1.0
    return out


__all__ = ["ball_cut_lengths", "lengths_only", "warm_lengths"]
