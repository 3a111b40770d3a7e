r"""Volume bounds of collectives over a partition of the fabric into *parts*.

A part is a set of nodes that may compute anything on the data it holds (GPUs that take part
in a collective, switches that reduce in the network, and whatever lies between them inside a
scale-up domain). Every other node only forwards: it neither combines nor copies data. The
bounds then count the bytes that must cross part boundaries, whatever the parts do inside:

* **All-reduce** over ``m`` parts holding participants: at least ``2(m-1) S`` bytes are
  delivered from one part to another (the one-way gossip count of Harary and Schwenk applied
  to the volume argument of Patarasuk and Yuan), so
  ``T >= 2(m-1) S / min(sum of part egress, sum of part ingress)``.
* **All-gather** (reduce-scatter): a part holding ``h`` of a group's ``n`` GPUs must receive
  (send) the ``(n - h) S / n`` bytes of the GPUs outside it.

With several groups running at once (``concurrent`` in :func:`fabricopt.collective_bounds`)
their volumes add on the same boundaries. The proofs are in ``docs/collectives.md``
(section "Volume over reducing parts").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graph_arrays import GraphArrays


@dataclass(frozen=True)
class Partition:
    """A labelling of nodes into parts: ``label[v]`` is the part of node ``v``, or -1 for a
    node that only forwards. ``egress_gbps`` / ``ingress_gbps`` hold each part's capacity
    leaving / entering it."""

    name: str
    label: np.ndarray
    egress_gbps: np.ndarray
    ingress_gbps: np.ndarray

    @property
    def n_parts(self) -> int:
        return len(self.egress_gbps)


def partition(ga: GraphArrays, combining: np.ndarray, joining: np.ndarray, name: str,
              ) -> Partition:
    """Parts: the connected components, through the arcs ``joining`` (a mask over arcs), that
    hold at least one ``combining`` node (a mask over nodes). Nodes of components without one
    forward only and belong to no part.

    >>> import fabricopt as fo
    >>> import networkx as nx
    >>> fab = fo.from_networkx(nx.star_graph(3), endpoints=[1, 2, 3])
    >>> ga = GraphArrays.from_fabric(fab)
    >>> gpus = np.isin(np.arange(ga.n_nodes), [ga.index[e] for e in fab.endpoints])
    >>> part = partition(ga, gpus, gpus[ga.tail] & gpus[ga.head], "GPUs")
    >>> part.n_parts, sorted(part.label.tolist())
    (3, [-1, 0, 1, 2])
    """
    n = ga.n_nodes
    arcs = np.flatnonzero(joining)
    graph = sp.csr_matrix((np.ones(len(arcs)), (ga.tail[arcs], ga.head[arcs])), shape=(n, n))
    _, comp = connected_components(graph, directed=True, connection="weak")
    keep = np.unique(comp[combining])
    relabel = np.full(comp.max() + 1, -1)
    relabel[keep] = np.arange(len(keep))
    label = relabel[comp]
    crossing = label[ga.tail] != label[ga.head]
    out_arcs = crossing & (label[ga.tail] >= 0)
    in_arcs = crossing & (label[ga.head] >= 0)
    egress = np.bincount(label[ga.tail[out_arcs]], weights=ga.capacity[out_arcs],
                         minlength=len(keep))
    ingress = np.bincount(label[ga.head[in_arcs]], weights=ga.capacity[in_arcs],
                          minlength=len(keep))
    return Partition(name, label, egress, ingress)


def _time_s(bytes_: float, gbps: float) -> float:
    if bytes_ <= 0:
        return 0.0
    return math.inf if gbps <= 0 else bytes_ / (gbps * 1e9 / 8)


def all_reduce_volume_s(part: Partition, groups: Sequence[np.ndarray], size: float) -> float:
    """Least time for every group to all-reduce ``size`` bytes at once: ``sum_j 2(m_j-1) S``
    bytes cross part boundaries, ``m_j`` the number of parts holding group ``j``'s GPUs.

    Every participant must lie in a part. Capacity is every part's egress (each byte delivered
    was sent across its sender's boundary once: nothing outside the parts copies) and, as a
    separate bound, every part's ingress (holds even if switches copied).

    >>> import networkx as nx, fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(4), endpoints=[1, 2, 3, 4])
    >>> ga = GraphArrays.from_fabric(fab)
    >>> gpus = np.array([ga.index[e] for e in fab.endpoints])
    >>> mask = np.isin(np.arange(ga.n_nodes), gpus)
    >>> part = partition(ga, mask, mask[ga.tail] & mask[ga.head], "GPUs")
    >>> all_reduce_volume_s(part, [gpus], 1e9)   # 2 x 3 x 1e9 bytes over 4 Gb/s = 0.5e9 B/s
    12.0
    """
    volume = sum(2 * (len(np.unique(part.label[g])) - 1) for g in groups) * size
    return max(_time_s(volume, float(part.egress_gbps.sum())),
               _time_s(volume, float(part.ingress_gbps.sum())))


def part_cut_s(part: Partition, groups: Sequence[np.ndarray], size: float,
               collective: str) -> tuple[float, int]:
    """Largest per-part bound and the part that gives it.

    All-reduce: a part that separates ``s`` groups must let ``size`` bytes of each out and in.
    All-gather / reduce-scatter: a part holding ``h`` of group ``j``'s ``n_j`` GPUs (``0 < h <
    n_j``) receives / sends ``(n_j - h) size / n_j`` bytes of it.
    """
    counts = [np.bincount(part.label[g], minlength=part.n_parts) for g in groups]
    sizes = np.array([len(g) for g in groups], dtype=float)
    held = np.array(counts, dtype=float)                       # groups x parts
    separated = (held > 0) & (held < sizes[:, None])
    if collective == "all_reduce":
        need_out = need_in = separated.sum(axis=0) * size
    else:
        missing = np.where(held > 0, (sizes[:, None] - held) / sizes[:, None], 0.0)
        need = missing.sum(axis=0) * size
        need_out = need if collective == "reduce_scatter" else np.zeros_like(need)
        need_in = need if collective == "all_gather" else np.zeros_like(need)
    best, where = 0.0, -1
    for q in range(part.n_parts):
        t = max(_time_s(float(need_out[q]), float(part.egress_gbps[q])),
                _time_s(float(need_in[q]), float(part.ingress_gbps[q])))
        if t > best:
            best, where = t, q
    return best, where


__all__ = ["Partition", "all_reduce_volume_s", "part_cut_s", "partition"]
