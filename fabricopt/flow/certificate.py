r"""Certificates: the two proofs behind every throughput bracket.

* **Lower bound (a feasible flow).** A routing of :math:`\theta D` that conserves flow loads
  each arc with :math:`L_a`; scaled by its worst overload it fits, so
  :math:`\theta / \max(1, \max_a L_a / c_a)` is achievable. Solvers conserve flow only to a
  tolerance: if commodity :math:`k` leaves residuals :math:`r_k(v)` (flow created or lost at
  node :math:`v`), a path decomposition still delivers at least
  :math:`\theta D(k, t) - \lVert r_k \rVert_1` from its source to each target, using no
  more than the loads :math:`L`. So
  :math:`(\theta - \max_k \lVert r_k \rVert_1 / \min D) / \max(1, \max_a L_a / c_a)`
  is proven achievable, whatever the solver's tolerance.
* **Upper bound (arc lengths).** For any lengths :math:`l_a \ge 0`,

  .. math:: \theta \le \frac{\sum_a c_a l_a}{\sum_{s,t} D(s,t)\, \mathrm{dist}_l(s,t)}

  because every unit of demand from s to t uses at least :math:`\mathrm{dist}_l(s,t)` of
  "length-capacity". The LP duals of the capacity rows are the best such lengths; hop counts
  (:math:`l = 1`) give a cheap one.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from .graph_arrays import GraphArrays


@dataclass(frozen=True)
class DistanceBound:
    """An upper bound on theta from arc lengths, and the pair that proves theta = 0 if any."""

    upper: float
    numerator: float
    denominator: float
    unreachable: tuple[Hashable, Hashable] | None = None
    cut: frozenset[Hashable] | None = None


def distance_bound(ga: GraphArrays, lengths: np.ndarray, core_arc: np.ndarray,
                   agg_src: np.ndarray, agg_dst: np.ndarray, agg_gbps: np.ndarray,
                   ep_arc: np.ndarray, ep_gbps: np.ndarray) -> DistanceBound:
    """The length bound with demand given between core nodes plus endpoint-link terms.

    ``agg_*`` are demands between core nodes (endpoint traffic moved to its switch);
    ``ep_arc``/``ep_gbps`` are collapsed endpoint links and the demand crossing each.
    """
    lengths = np.clip(np.asarray(lengths, dtype=float), 0.0, None)
    numerator = float(ga.capacity @ lengths)
    core = np.flatnonzero(core_arc)
    n = ga.n_nodes
    M = sp.csr_matrix((lengths[core], (ga.tail[core], ga.head[core])), shape=(n, n))
    sources, k_of = np.unique(agg_src, return_inverse=True)
    denominator = float(ep_gbps @ lengths[ep_arc]) if len(ep_arc) else 0.0
    if len(sources):
        dist = dijkstra(M, directed=True, indices=sources)
        d = dist[k_of, agg_dst]
        bad = np.flatnonzero(np.isinf(d) & (agg_gbps > 0))
        if len(bad):
            # Lengths may be zero on some arcs but dijkstra only returns inf when no path
            # exists at all: theta must be 0, and the reachable set is the cut.
            s, t = int(agg_src[bad[0]]), int(agg_dst[bad[0]])
            reach = np.flatnonzero(np.isfinite(dist[k_of[bad[0]]]))
            return DistanceBound(0.0, numerator, np.inf, (ga.nodes[s], ga.nodes[t]),
                                 frozenset(ga.nodes[i] for i in reach))
        denominator += float(agg_gbps @ d)
    upper = numerator / denominator if denominator > 0 else np.inf
    return DistanceBound(upper, numerator, denominator)


def certified_lower(theta: float | None, load: np.ndarray, capacity: np.ndarray,
                    residual_l1: float, min_demand: float) -> tuple[float, float]:
    """Proven achievable theta from a solver's flow (see the module docstring).

    ``residual_l1`` is the largest per-commodity L1 norm of the conservation residual and
    ``min_demand`` the smallest positive demand of any commodity to any target (Gb/s per
    unit theta). Returns ``(lower, max_overload)``.
    """
    if theta is None or not np.isfinite(theta) or theta <= 0:
        return 0.0, 0.0
    overload = float(np.max(load / capacity)) if len(load) else 0.0
    kept = theta - residual_l1 / min_demand
    return float(max(kept, 0.0) / max(1.0, overload)), overload
