r"""Demand-weighted sums of shortest-path distances between endpoints, exactly, without an
endpoint-by-endpoint matrix.

The distance bound (:mod:`fabricopt.flow.certificate`) divides :math:`\sum_a c_a l_a` by
:math:`\sum_{s,t} D(s,t)\,\mathrm{dist}_l(s,t)`. Evaluated as stated, that is one shortest-path
search per source endpoint and an N-by-N matrix of distances: 130 GiB for the 128,000 GPUs of
``fat_tree(80)``. Two exact reductions keep it to a few searches over the switches:

* **Pendant endpoints.** An endpoint whose only arcs are one out-arc to a node ``x`` and one
  in-arc from it (a GPU's NIC link) is never inside a shortest path between other nodes, so
  for ``t != s``: :math:`\mathrm{dist}(s,t) = l(s\to x) + \mathrm{dist}'(x, \cdot)` where
  :math:`\mathrm{dist}'` is measured on the graph without pendant endpoints, and the target
  side likewise ends with :math:`+\,l(y\to t)`. Sources are searched from their attach
  nodes: one search per switch, not per GPU.
* **Zero-length components.** Nodes joined both ways by paths of length zero are at distance
  zero from each other; each strongly connected component of the zero-length arcs is one
  node (parallel arcs keep their shortest length). Cut lengths (one on the cut's arcs, zero
  elsewhere) shrink a fabric to a handful of nodes this way.

Searches run a few rows at a time (:data:`ROW_BUDGET` distances per batch), so memory stays
bounded at any size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from ..graph_arrays import GraphArrays
from ..traffic import Traffic

__all__ = ["ROW_BUDGET", "demand_distance"]

#: Distances held at once by one batch of searches (8 bytes each: 64 MB).
ROW_BUDGET = 8_000_000


@dataclass(frozen=True)
class _Reduced:
    """The graph the searches run on and how each endpoint reaches it.

    Endpoint ``i`` leaves from node ``row[i]`` after ``out_len[i]`` and arrives through node
    ``col[i]`` after ``in_len[i]`` (its own node and 0 unless it is pendant); nodes are
    those of the quotient graph ``matrix``.
    """

    matrix: sp.csr_matrix
    row: np.ndarray
    col: np.ndarray
    out_len: np.ndarray
    in_len: np.ndarray


def _pendant(ga: GraphArrays, ep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                      np.ndarray]:
    """For each endpoint (node indices ``ep``): whether it is pendant, its neighbour, and
    the arcs out of and into it (valid where pendant)."""
    n = ga.n_nodes
    if ga.n_arcs == 0:
        none = np.zeros(len(ep), dtype=np.int64)
        return np.zeros(len(ep), dtype=bool), none - 1, none, none
    out_deg = np.bincount(ga.tail, minlength=n)
    in_deg = np.bincount(ga.head, minlength=n)
    out_arc = np.full(n, -1, dtype=np.int64)
    in_arc = np.full(n, -1, dtype=np.int64)
    out_arc[ga.tail] = np.arange(ga.n_arcs)  # the only one where the degree is one
    in_arc[ga.head] = np.arange(ga.n_arcs)
    single = (out_deg[ep] == 1) & (in_deg[ep] == 1)
    o, i = out_arc[ep], in_arc[ep]
    nb = np.where(single, ga.head[o], -1)
    single &= nb == np.where(single, ga.tail[i], -2)
    # Two pendants joined only to each other are a path between them: keep both.
    candidate = np.zeros(n, dtype=bool)
    candidate[ep[single]] = True
    single &= ~candidate[np.where(single, nb, 0)]
    return single, nb, o, i


def _reduce(ga: GraphArrays, lengths: np.ndarray, ep: np.ndarray) -> _Reduced:
    """Drop pendant endpoints, then contract zero-length components (see the module)."""
    pendant, nb, o, i = _pendant(ga, ep)
    n = ga.n_nodes
    keep_node = np.ones(n, dtype=bool)
    keep_node[ep[pendant]] = False
    keep_arc = keep_node[ga.tail] & keep_node[ga.head]
    tail, head, length = ga.tail[keep_arc], ga.head[keep_arc], lengths[keep_arc]
    zero = length == 0
    graph = sp.csr_matrix((np.ones(int(zero.sum())), (tail[zero], head[zero])), shape=(n, n))
    _, label = connected_components(graph, directed=True, connection="strong")
    qt, qh = label[tail], label[head]
    across = qt != qh
    qt, qh, length = qt[across], qh[across], length[across]
    # Parallel arcs of the quotient keep their shortest length (a sparse matrix would add).
    order = np.lexsort((length, qh, qt))
    qt, qh, length = qt[order], qh[order], length[order]
    first = np.ones(len(qt), dtype=bool)
    first[1:] = (qt[1:] != qt[:-1]) | (qh[1:] != qh[:-1])
    k = int(label.max()) + 1 if n else 0
    matrix = sp.csr_matrix((length[first], (qt[first], qh[first])), shape=(k, k))
    node = np.where(pendant, nb, ep)
    out_len, in_len = np.zeros(len(ep)), np.zeros(len(ep))
    out_len[pendant], in_len[pendant] = lengths[o[pendant]], lengths[i[pendant]]
    return _Reduced(matrix, label[node], label[node], out_len, in_len)


def demand_distance(ga: GraphArrays, lengths: np.ndarray, traffic: Traffic) -> float:
    r""":math:`\sum_{s \ne t} D(s,t)\,\mathrm{dist}_l(s,t)` over the whole graph (``inf`` when
    a demand pair is not connected), computed as the module describes.

    Examples
    --------
    Unit lengths on a ring of 4: from each node the others are at 1, 1 and 2 hops, so the
    all-to-all sum is 4 * (1 + 1 + 2) = 16.

    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> ga = GraphArrays.from_fabric(fab)
    >>> demand_distance(ga, np.ones(ga.n_arcs), fo.all_to_all(fab))
    16.0
    """
    lengths = np.clip(np.asarray(lengths, dtype=float), 0.0, None)
    eps = traffic.endpoints
    ep = np.array([ga.index[e] for e in eps], dtype=np.int64)
    red = _reduce(ga, lengths, ep)
    if traffic.is_uniform:
        src = np.arange(len(ep))
        weight = np.full(len(ep), float(traffic.uniform_gbps))
        pairs = None
    else:
        pos = {e: j for j, e in enumerate(eps)}
        s = np.array([pos[a] for a, _ in traffic.pairs], dtype=np.int64)
        t = np.array([pos[b] for _, b in traffic.pairs], dtype=np.int64)
        g = np.fromiter(traffic.pairs.values(), float, count=len(s))
        pairs = (s, t, g)
        src = np.unique(s)
    rows = np.unique(red.row[src])
    batch = max(1, ROW_BUDGET // max(red.matrix.shape[0], 1))
    total = 0.0
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        dist = dijkstra(red.matrix, directed=True, indices=chunk)
        where = np.full(red.matrix.shape[0], -1, dtype=np.int64)
        where[chunk] = np.arange(len(chunk))
        if pairs is None:
            total += _uniform_part(red, dist, where, src, weight)
        else:
            s, t, g = pairs
            mine = where[red.row[s]] >= 0
            s, t, g = s[mine], t[mine], g[mine]
            d = red.out_len[s] + dist[where[red.row[s]], red.col[t]] + red.in_len[t]
            total += float(g @ d)
        if np.isinf(total):
            return np.inf
    return total


def _uniform_part(red: _Reduced, dist: np.ndarray, where: np.ndarray, src: np.ndarray,
                  weight: np.ndarray) -> float:
    """The all-to-all sum over the sources whose search row is in ``dist``: every source
    sends to every other endpoint, so each term is a row sum less the source's own."""
    mine = src[where[red.row[src]] >= 0]
    n = len(red.row)
    # Sum over all targets t of dist(row, col[t]) + in_len[t], for each searched row (only
    # the columns some target arrives through: an unreachable other node would give inf * 0).
    cols, counts = np.unique(red.col, return_counts=True)
    to_all = dist[:, cols] @ counts.astype(float) + red.in_len.sum()
    r = where[red.row[mine]]
    own = dist[r, red.col[mine]] + red.in_len[mine]  # the term of t = s, taken back out
    per_source = (n - 1) * red.out_len[mine] + to_all[r] - own
    if np.any(np.isinf(to_all[r])):
        return np.inf
    return float(weight[mine] @ per_source)
