r"""A bisection lower bound that adds, to the hose rate's matching, the pairs a split leaves
inside one unit of the hierarchy (a scalable unit, a pod).

The hose bound routes a matching of :math:`\lfloor N/2 \rfloor` pairs across the split at the
certified two-phase rate :math:`r` (:func:`~fabricopt.valiant_rate`). On an oversubscribed
fabric :math:`r` is held by a unit's uplinks, but the cheapest split cuts through a unit,
and there the endpoints on either side meet below the uplinks, at their leaves' full rate.

* **Two flows at once.** The two-phase load of rate :math:`r` (``load_gbps``, phase 1 plus
  phase 2 with every endpoint sending and receiving :math:`r`) bounds the load of any
  traffic within that hose. What it leaves, :math:`c - \text{load}`, is capacity of its own:
  inside each unit :math:`j` (the nodes of one group of a partition of the hierarchy, with
  only the arcs between them) the certified two-phase rate :math:`\rho_j` on that residual
  carries any traffic in which no endpoint of the unit sends or receives more than
  :math:`\rho_j` to other endpoints of the unit. Units share no arcs, so all of these and the
  hose traffic fit together.
* **Every split.** For a split :math:`(A, B)` with :math:`a_j` of unit :math:`j`'s
  :math:`n_j` endpoints in :math:`A`: a perfect matching across at rate :math:`r`, plus
  :math:`\min(a_j, n_j - a_j)` pairs across inside each unit at :math:`\rho_j`, is one flow
  from :math:`A` to :math:`B`, so every cut of the split carries
  :math:`r \lfloor N/2 \rfloor + \sum_j \rho_j \min(a_j, n_j - a_j)`.
* **The least over splits.** Each term is concave in :math:`a_j`, so over
  :math:`\{\sum_j a_j = |A|,\ 0 \le a_j \le n_j\}` the least is at a vertex: every unit
  whole on one side but one. A subset sum over the other units finds it.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..flow.bounds import hierarchy_partitions
from ..flow.two_phase.rate import ValiantBound, valiant_rate
from ..flow.two_phase.result import arc_array
from ..graph_arrays import GraphArrays

#: Partitions with more units than this are not tried (one two-phase rate per unit).
MAX_UNITS = 16


def local_pairs_lower(fab: Fabric, ga: GraphArrays, eps: tuple[Hashable, ...],
                      hose: ValiantBound, beat: float = 0.0) -> tuple[float, str] | None:
    """The bisection bound of the module docstring, from ``hose`` (``valiant_rate`` of
    ``fab`` among ``eps``, with its loads), best over the partitions of the hierarchy into
    2 to :data:`MAX_UNITS` units; None when there is no load or no such partition. A
    partition whose bound cannot exceed ``beat`` (a bound already proven), even with each
    unit's rate at its ceiling (the least residual capacity an endpoint has toward its own
    unit), is passed over without its two-phase rates.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(3, 1, 4, link_gbps=100.0)   # 3 leaves of 4 hosts, 1 uplink each
    >>> hose = fo.valiant_rate(fab)
    >>> ga = GraphArrays.from_fabric(fab)
    >>> hose.rate_gbps, hose.rate_gbps * 6                   # a leaf's uplink: 4 r <= 100
    (25.0, 150.0)
    >>> local_pairs_lower(fab, ga, fab.endpoints, hose)[0]   # + 2 pairs in a leaf at 75
    300.0
    """
    if not hose.load_gbps or not hose.rate_gbps > 0:
        return None
    n, half = len(eps), len(eps) // 2
    ep_idx = np.array([ga.index[e] for e in eps])
    load = arc_array(hose.load_gbps, ga)  # the rate's own array when read on these arcs
    residual = np.maximum(ga.capacity - load, 0.0)
    best: tuple[float, str] | None = None
    for label in hierarchy_partitions(fab, ga)[1:]:
        units, sizes = np.unique(label[ep_idx], return_counts=True)
        if not 2 <= len(units) <= MAX_UNITS:
            continue
        if min(_least_local(sizes, np.ones(len(units)), size) for size in {half, n - half}) <= 0:
            # Some split keeps every unit whole: no pair inside a unit crosses it, so this
            # partition adds nothing, and its two-phase rates (one per unit) are not needed
            # (5 s on the dual-plane pod of topologies/, whose pods split evenly).
            continue
        # An endpoint sends at most its residual capacity toward its own unit.
        same = label[ga.tail] == label[ga.head]
        toward = np.bincount(ga.tail[same], weights=residual[same], minlength=ga.n_nodes)
        ceiling = np.array([toward[ep_idx[label[ep_idx] == u]].min() for u in units])
        if hose.rate_gbps * half + min(_least_local(sizes, ceiling, size)
                                       for size in {half, n - half}) <= beat * (1 + 1e-9):
            continue
        rho = np.array([_unit_rate(fab, ga, residual, label == u, eps, label[ep_idx] == u)
                        for u in units])
        least = min(_least_local(sizes, rho, size) for size in {half, n - half})
        bound = hose.rate_gbps * half + least
        if best is None or bound > best[0]:
            best = (bound, f"two-phase hose rate {hose.rate_gbps:.6g} Gb/s plus pairs inside "
                           f"{len(units)} units at {float(rho.min()):.6g} Gb/s or more")
    return best


def _unit_rate(fab: Fabric, ga: GraphArrays, residual: np.ndarray, nodes: np.ndarray,
               eps: tuple[Hashable, ...], members: np.ndarray) -> float:
    """Certified two-phase rate among a unit's endpoints on the residual capacity of the
    arcs between its nodes (0 when it has fewer than two endpoints or none routes)."""
    if members.sum() < 2:
        return 0.0
    inside = np.flatnonzero(nodes[ga.tail] & nodes[ga.head] & (residual > 0))
    sub = fab.graph.subgraph([ga.nodes[i] for i in np.flatnonzero(nodes)]).copy()
    sub.remove_edges_from(list(sub.edges()))
    for a in inside:
        u, v = ga.arcs[a]
        sub.add_edge(u, v, **{**fab.graph[u][v], "capacity": float(residual[a])})
    unit = Fabric(sub, [e for e, m in zip(eps, members, strict=True) if m], name="unit")
    try:
        return float(valiant_rate(unit).rate_gbps)
    except InvalidParameterError:   # no hubs, one-way links: nothing proven inside
        return 0.0


def _least_local(sizes: np.ndarray, rho: np.ndarray, size: int) -> float:
    """Least of :math:`\\sum_j \\rho_j \\min(a_j, n_j - a_j)` over :math:`\\sum_j a_j =`
    ``size``: every unit whole but one (module docstring), the whole ones by subset sum.

    >>> _least_local(np.array([4, 4, 4]), np.array([75.0, 75.0, 75.0]), 6)  # 4 + 2 of 4
    150.0
    """
    best = np.inf
    for j in range(len(sizes)):
        reach = np.zeros(size + 1, dtype=bool)
        reach[0] = True
        for i, n_i in enumerate(sizes):
            if i != j and n_i <= size:
                reach[n_i:] |= reach[: size + 1 - n_i].copy()
        part = size - np.flatnonzero(reach)          # endpoints of unit j in A
        part = part[part <= sizes[j]]
        if len(part):
            best = min(best, float(rho[j] * np.minimum(part, sizes[j] - part).min()))
    return best


__all__ = ["MAX_UNITS", "local_pairs_lower"]
