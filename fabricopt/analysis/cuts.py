"""Minimum cuts between node sets, on a fabric's arrays (shared by bisection and collectives).

Capacities are floats (Gb/s); scipy's max-flow wants 32-bit integers. When every capacity
is a whole multiple of a common unit (200, 400, 3600 Gb/s ...) and the total fits, the search
is exact; otherwise capacities are scaled and rounded for the search only. Every value
reported is recomputed exactly from the cut found, so a returned cut's capacity is exact;
rounding can only make the search miss a slightly better cut (``Cut.exact_search`` says
whether it could).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from ..flow.bounds import hierarchy_partitions
from ..flow.symmetric import sorted_unique
from ..graph_arrays import GraphArrays

#: Integer standing for the largest cut the search can return (scipy works in 32-bit
#: integers, and no flow exceeds that cut).
INT_BUDGET = 2**30
#: Arcs out of a pair's two nodes that :meth:`PairCuts.near_flow` looks.
NEAR_RADIUS = 3


@dataclass(frozen=True)
class Cut:
    """A set of nodes ``side`` (a boolean mask over ``ga.nodes``) and the arcs leaving it."""

    side: np.ndarray
    capacity: float
    arcs: np.ndarray
    exact_search: bool = True


def to_integers(values: np.ndarray, limit: float, budget: int = INT_BUDGET,
                ) -> tuple[np.ndarray, int, bool]:
    """Integer capacities for a min-cut search whose answer is at most ``limit``.

    Any capacity above ``limit`` is capped just above it (no minimum cut can use it, and
    a cut through a capped arc stays strictly worse than the minimum), so only the range up
    to ``limit`` needs resolution. Returns ``(ints, cap, exact)``: ``cap`` is the integer
    standing for ``limit`` (use ``cap + 2`` for infinite arcs). Exact when the values
    are whole multiples of a common unit on a grid of 1e-6 and ``limit`` fits the budget in
    that unit; else scaled so that ``limit`` maps to ``budget`` and rounded.

    >>> to_integers(np.array([200.0, 400.0, 3600.0]), limit=600.0)
    (array([1, 2, 4]), 3, True)
    """
    values = np.asarray(values, dtype=float)
    limit = float(limit)
    if not len(values) or float(values.max()) <= 0 or limit <= 0:
        return np.zeros(len(values), dtype=np.int64), 0, True
    if float(values.max()) < 1e12 and limit < 1e12:
        grid = np.rint(values * 1e6).astype(np.int64)
        if np.allclose(grid / 1e6, values, rtol=1e-12, atol=0) and np.any(grid > 0):
            unit = int(np.gcd.reduce(grid[grid > 0]))
            cap = int(np.ceil(limit * 1e6 / unit))
            if cap <= budget:
                return np.minimum(grid // unit, cap + 1), cap, True
    scale = budget / limit
    return np.minimum(np.rint(values * scale), budget + 1).astype(np.int64), budget, False


def cut_capacity(ga: GraphArrays, side: np.ndarray, capacity: np.ndarray | None = None,
                 ) -> tuple[float, np.ndarray]:
    """Exact capacity of the arcs leaving ``side``, and their indices."""
    cap = ga.capacity if capacity is None else capacity
    leaving = np.flatnonzero(side[ga.tail] & ~side[ga.head])
    return float(cap[leaving].sum()), leaving


def _known_cut(ga: GraphArrays, cap: np.ndarray, sources: np.ndarray, sinks: np.ndarray,
               source_caps: np.ndarray | None, sink_caps: np.ndarray | None) -> float:
    """The capacity of some cut between the sources and the sinks: the minimum is no more."""
    options = []
    for side_nodes in (sources, None):
        side = np.zeros(ga.n_nodes, dtype=bool)
        if side_nodes is None:
            side[:] = True
            side[sinks] = False
        else:
            side[side_nodes] = True
        value, _ = cut_capacity(ga, side, cap)
        if source_caps is not None:
            value += float(np.asarray(source_caps)[~side[sources]].sum())
        if sink_caps is not None:
            value += float(np.asarray(sink_caps)[side[sinks]].sum())
        options.append(value)
    if source_caps is not None:
        options.append(float(np.sum(source_caps)))  # leave every source out
    if sink_caps is not None:
        options.append(float(np.sum(sink_caps)))  # keep every sink in
    return max(min(options), 1e-300)


def min_cut(ga: GraphArrays, sources: np.ndarray, sinks: np.ndarray,
            capacity: np.ndarray | None = None, source_caps: np.ndarray | None = None,
            sink_caps: np.ndarray | None = None) -> Cut:
    """Minimum-capacity set of nodes containing ``sources`` and none of ``sinks``.

    ``source_caps`` / ``sink_caps`` (optional, per node) give finite capacities to the arcs
    from the super-source or to the super-sink, which then may be cut too (a source left
    outside, a sink kept inside): the returned ``capacity`` includes them.
    """
    cap = ga.capacity if capacity is None else np.asarray(capacity, dtype=float)
    n = ga.n_nodes
    s, t = n, n + 1
    n_src = 0 if source_caps is None else len(sources)
    finite = np.concatenate([cap, [] if source_caps is None else np.asarray(source_caps),
                             [] if sink_caps is None else np.asarray(sink_caps)])
    ints, top, exact = to_integers(finite, _known_cut(ga, cap, sources, sinks, source_caps,
                                                      sink_caps), INT_BUDGET)
    # "Infinite" arcs only need to exceed every cut a minimum could be: one known cut.
    big = top + 2
    cap_int = ints[: len(cap)]
    src_int = (np.full(len(sources), big) if source_caps is None
               else ints[len(cap): len(cap) + n_src])
    snk_int = np.full(len(sinks), big) if sink_caps is None else ints[len(cap) + n_src:]
    tails = np.concatenate([ga.tail, np.full(len(sources), s), sinks])
    heads = np.concatenate([ga.head, sources, np.full(len(sinks), t)])
    caps = np.concatenate([cap_int, src_int, snk_int]).astype(np.int64)
    graph = sp.csr_matrix((caps, (tails, heads)), shape=(n + 2, n + 2))
    graph.sum_duplicates()
    graph.data = np.minimum(graph.data, big).astype(np.int32)
    res = maximum_flow(graph, s, t, method="dinic")
    # scipy's flow matrix is antisymmetric, so capacity minus flow is the residual graph
    # (reverse arcs included).
    residual = (graph - res.flow).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    order = breadth_first_order(residual, s, directed=True, return_predecessors=False)
    side = np.zeros(n + 2, dtype=bool)
    side[order] = True
    node_side = side[:n]
    value, arcs = cut_capacity(ga, node_side, cap)
    if source_caps is not None:
        value += float(np.asarray(source_caps)[~node_side[sources]].sum())
    if sink_caps is not None:
        value += float(np.asarray(sink_caps)[node_side[sinks]].sum())
    return Cut(node_side, value, arcs, exact)


def hose_ceiling(fab: Any, ga: GraphArrays, ep_idx: np.ndarray) -> float:
    """No hose rate exceeds this (Gb/s per endpoint): a group ``X`` of the fabric's
    hierarchy (a server, a leaf with its endpoints, a pod) holding ``k`` of the ``N``
    endpoints can be asked to send ``r`` from each of them to endpoints outside it, which
    receive at most ``r`` each, so ``r min(k, N - k)`` must cross the capacity leaving
    ``X`` (and the same entering it).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(4, 2, 4, link_gbps=1.0)   # 4 hosts per leaf, 2 uplinks
    >>> ga = GraphArrays.from_fabric(fab)
    >>> hose_ceiling(fab, ga, np.array([ga.index[e] for e in fab.endpoints]))
    0.5
    """
    n = len(ep_idx)
    best = np.inf
    for label in hierarchy_partitions(fab, ga):
        groups = int(label.max()) + 1
        crossing = label[ga.tail] != label[ga.head]
        k = np.bincount(label[ep_idx], minlength=groups)
        share = np.minimum(k, n - k).astype(float)
        for side in (ga.tail, ga.head):
            cap = np.bincount(label[side], weights=ga.capacity * crossing, minlength=groups)
            with np.errstate(divide="ignore", invalid="ignore"):
                best = min(best, float(np.min(np.where(share > 0, cap / share, np.inf))))
    return best


class PairCuts:
    """Minimum cuts between single nodes of one graph, its integer capacities read once.

    :func:`min_cut` rescales the capacities and builds a new sparse graph for every search,
    which on a 24,576-GPU cluster cost ten times the max-flow itself. Here the graph is built
    once with capacities capped above ``limit``, the most any pair's cut can be (the caller's
    bound, e.g. the largest egress or ingress of the nodes it will pair). When the
    capacities are whole multiples of a common unit the search is exact, and the cut
    returned is the one :func:`min_cut` returns: capping only changes cuts above the
    minimum, so the set of minimum cuts, and the one of them reachable from the source in
    the residual graph, stay the same. Otherwise each pair falls back to :func:`min_cut`.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.ring(4))
    >>> a, b = ga.index[fo.ring(4).endpoints[0]], ga.index[fo.ring(4).endpoints[2]]
    >>> PairCuts(ga, limit=2.0).cut(a, b).capacity   # two 1 Gb/s arcs leave either half
    2.0
    """

    def __init__(self, ga: GraphArrays, limit: float) -> None:
        self.ga = ga
        ints, top, self.exact = to_integers(ga.capacity, limit, INT_BUDGET)
        self.graph: sp.csr_matrix | None = None
        uncapped = np.flatnonzero((ints > 0) & (ints <= top))
        self.exact &= len(uncapped) > 0
        if self.exact:
            # Gb/s per integer unit (every uncapped arc is a whole number of units).
            self.unit = float(ga.capacity[uncapped[0]]) / int(ints[uncapped[0]])
            n = ga.n_nodes
            graph = sp.csr_matrix((ints.astype(np.int64), (ga.tail, ga.head)), shape=(n, n))
            graph.sum_duplicates()
            graph.data = graph.data.astype(np.int32)
            self.graph = graph

    def cut(self, source: int, sink: int, below: float = math.inf) -> Cut | None:
        """The minimum cut holding ``source`` and not ``sink`` (as :func:`min_cut` finds), or
        None when its capacity is not below ``below`` (the flow's value, a whole number of
        units, shows it to within rounding of the unit, so the cut itself is not read
        off)."""
        if self.graph is None:
            cut = min_cut(self.ga, np.array([source]), np.array([sink]))
            return cut if cut.capacity < below else None
        return self._flow(source, sink, below)[1]

    def least(self, pairs: list[tuple[int, int]], below: float,
              ) -> tuple[float, np.ndarray | None]:
        """The least cut of the pairs below ``below``, as one search per pair in order finds
        it: ``best = below``, and each pair's ``cut(a, b, below=best)`` that is below
        ``best`` becomes the best (capacity and side). Returns ``(below, None)`` when none
        is below it.

        Most pairs need no search: a flow is a lower bound on a pair's cut, and one is
        read off the graph for every pair, on the arc joining them and the paths through
        one other node (:meth:`two_hop`). Cuts also chain: a cut holding ``a`` and not
        ``c`` either holds ``b`` (it separates ``b`` from ``c``) or not (``a`` from
        ``b``), so ``cut(a, c) >= min(cut(a, b), cut(b, c))``. The searches go to the
        pairs with the least bound first; a pair whose bound reaches the least cut found
        cannot be below it, nor one whose flow on the nodes near it (:meth:`near_flow`, a
        small graph) does. The answer is then the first pair in order whose cut is the
        least (a search settles a pair whose bound ties it), the same cut and side.
        """
        if self.graph is None or not pairs:
            return self._least_one_by_one(pairs, below)
        nodes, where = np.unique(np.asarray(pairs, dtype=np.int64), return_inverse=True)
        where = where.reshape(-1, 2)
        low = _bottleneck_closure(self.two_hop(nodes))
        exact: dict[int, int] = {}
        cuts: dict[int, Cut] = {}

        def search(i: int) -> int:
            units, cut = self._flow(*pairs[i], below)
            exact[i] = units
            if cut is not None:
                cuts[i] = cut
            return units

        least: int | None = None
        while True:
            bound = low[where[:, 0], where[:, 1]]
            open_ = [i for i in range(len(pairs)) if i not in exact
                     and bound[i] * self.unit < below * (1 - 1e-12)
                     and (least is None or bound[i] < least)]
            if not open_:
                break
            i = min(open_, key=lambda j: (bound[j], j))
            a, b = where[i]
            near = None if least is None else self.near_flow(*pairs[i])
            if near is not None and near >= least:  # no search: it cannot be below
                low[a, b] = max(low[a, b], near)
                low = _bottleneck_closure(low)
                continue
            units = search(i)
            least = units if least is None else min(least, units)
            low[a, b] = max(low[a, b], units)
            low = _bottleneck_closure(low)
        if least is None or least * self.unit >= below * (1 - 1e-12):
            return below, None
        for i in range(len(pairs)):  # the first pair whose cut is the least
            if i not in exact and bound[i] > least:
                continue
            if (exact[i] if i in exact else search(i)) == least:
                return cuts[i].capacity, cuts[i].side
        raise AssertionError("a least cut was searched")  # pragma: no cover

    def _least_one_by_one(self, pairs: list[tuple[int, int]], below: float,
                          ) -> tuple[float, np.ndarray | None]:
        best, side = below, None
        for a, b in pairs:
            cut = self.cut(a, b, below=best)
            if cut is not None and cut.capacity < best:
                best, side = cut.capacity, cut.side
        return best, side

    def two_hop(self, nodes: np.ndarray) -> np.ndarray:
        """``T[i, j]``: the units ``nodes[i]`` can send ``nodes[j]`` at once on the arc
        between them plus, through every other node ``s``, the least of the arcs
        ``nodes[i] -> s`` and ``s -> nodes[j]``: those paths share no arc, so this is a flow,
        and no more than the maximum flow (exact graphs only; the diagonal is 0)."""
        graph = self.graph
        assert graph is not None
        k = len(nodes)
        rows = _without_loops(graph[nodes], nodes)         # arcs out of each node
        cols = _without_loops(graph[:, nodes].T, nodes)    # arcs into each node
        out_s, in_s = rows.tocsc(), cols.tocsc()
        hop = np.zeros((k, k), dtype=np.int64)
        both = np.flatnonzero((np.diff(out_s.indptr) > 0) & (np.diff(in_s.indptr) > 0))
        for s in both:  # every node with arcs from one of the nodes and to one of them
            o = slice(out_s.indptr[s], out_s.indptr[s + 1])
            i = slice(in_s.indptr[s], in_s.indptr[s + 1])
            hop[np.ix_(out_s.indices[o], in_s.indices[i])] += np.minimum.outer(
                out_s.data[o].astype(np.int64), in_s.data[i].astype(np.int64))
        hop += rows[:, nodes].toarray()  # the arcs joining two of the nodes
        np.fill_diagonal(hop, 0)
        return hop

    def near_flow(self, source: int, sink: int, radius: int = NEAR_RADIUS) -> int:
        """Units of a maximum flow from ``source`` to ``sink`` on the nodes at most
        ``radius`` arcs out of either (exact graphs only): a flow of the whole graph, so no
        more than its maximum. Two servers' GPUs meet within 3 (GPU, its NVLink switch, the
        other GPUs, their rail leaves): a thousand nodes of the 15,360-GPU pod, a fifth of
        the search's time."""
        graph = self.graph
        assert graph is not None
        seen = np.zeros(graph.shape[0], dtype=bool)
        seen[[source, sink]] = True
        frontier = np.array([source, sink])
        for _ in range(radius):
            reached = graph[frontier].indices
            frontier = sorted_unique(reached[~seen[reached]])
            seen[frontier] = True
        near = np.flatnonzero(seen)
        a, b = np.searchsorted(near, [source, sink])
        return int(maximum_flow(graph[near][:, near], int(a), int(b),
                                method="dinic").flow_value)

    def _flow(self, source: int, sink: int, below: float) -> tuple[int, Cut | None]:
        """The maximum flow's value in units, and the minimum cut if it is below ``below``."""
        ga = self.ga
        res = maximum_flow(self.graph, source, sink, method="dinic")
        if res.flow_value * self.unit >= below * (1 - 1e-12):
            return int(res.flow_value), None
        residual = (self.graph - res.flow).tocsr()
        residual.data[residual.data < 0] = 0
        residual.eliminate_zeros()
        order = breadth_first_order(residual, source, directed=True,
                                    return_predecessors=False)
        side = np.zeros(ga.n_nodes, dtype=bool)
        side[order] = True
        value, arcs = cut_capacity(ga, side)
        return int(res.flow_value), Cut(side, value, arcs, True)


def _without_loops(arcs: Any, nodes: np.ndarray) -> sp.csr_matrix:
    """Row ``i`` of ``arcs`` (a row per node) without its entry at ``nodes[i]`` (a loop)."""
    coo = sp.coo_matrix(arcs)
    keep = coo.col != nodes[coo.row]
    return sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=coo.shape)


def _bottleneck_closure(low: np.ndarray) -> np.ndarray:
    """Lower bounds on cuts between pairs of nodes raised along chains: ``low[a, c]`` is at
    least ``min(low[a, b], low[b, c])`` for every ``b`` (the widest path's narrowest link,
    Floyd-Warshall on max and min); a node's cut to itself counts as unbounded."""
    low = low.copy()
    np.fill_diagonal(low, np.iinfo(np.int64).max)
    for b in range(len(low)):
        np.maximum(low, np.minimum(low[:, b:b + 1], low[b:b + 1, :]), out=low)
    return low


@dataclass(frozen=True)
class SuperLayout:
    """The CSR layout of ``ga``'s arcs plus an arc from a super-source (node ``n``) to each
    of ``nodes`` and one from each to a super-sink (``n + 1``), with sorted indices: a
    search that only changes capacities builds its graph on it without sorting again.
    ``arc_pos``, ``src_pos`` and ``snk_pos`` say where each arc, source arc and sink arc
    sits in the matrix's data."""

    indices: np.ndarray
    indptr: np.ndarray
    arc_pos: np.ndarray
    src_pos: np.ndarray
    snk_pos: np.ndarray

    @classmethod
    def of(cls, ga: GraphArrays, nodes: np.ndarray) -> SuperLayout:
        n, m, k = ga.n_nodes, ga.n_arcs, len(nodes)
        tails = np.concatenate([ga.tail, np.full(k, n), nodes])
        heads = np.concatenate([ga.head, nodes, np.full(k, n + 1)])
        order = np.lexsort((heads, tails))  # the layout of a CSR matrix with sorted indices
        pos = np.empty(len(order), dtype=np.int64)
        pos[order] = np.arange(len(order))
        return cls(heads[order].astype(np.int32),
                   np.concatenate([[0], np.cumsum(np.bincount(tails, minlength=n + 2))]),
                   pos[:m], pos[m:m + k], pos[m + k:])

    def source_side(self, data: np.ndarray) -> np.ndarray:
        """The nodes of ``ga`` the super-source reaches in the residual graph of a maximum
        flow with capacities ``data`` (int32, in the layout's order): the source side of the
        minimum cut :func:`min_cut` finds (the same for every maximum flow)."""
        n = len(self.indptr) - 3
        graph = sp.csr_matrix((data, self.indices, self.indptr), shape=(n + 2, n + 2))
        res = maximum_flow(graph, n, n + 1, method="dinic")
        residual = (graph - res.flow).tocsr()
        residual.data[residual.data < 0] = 0
        residual.eliminate_zeros()
        side = np.zeros(n + 2, dtype=bool)
        side[breadth_first_order(residual, n, directed=True, return_predecessors=False)] = True
        return side[:n]


class SplitCuts:
    """Minimum cuts between the two halves of endpoint splits of one graph:
    ``cut(mask)`` is ``min_cut(ga, endpoints[mask], endpoints[~mask])``, the same cut.

    :func:`min_cut` puts the capacities on a grid and builds a new sparse graph for every
    search (two thirds of a bisection candidate's cut on a 15,360-GPU pod). Here the grid is
    read once and the graph's layout (the arcs, an arc from the super-source to every
    endpoint and one from every endpoint to the super-sink) built once; a split sets the
    endpoints' arcs (the ones on the other side to 0) and the grid's cap. The side returned is
    the one :func:`min_cut` finds: the nodes the super-source reaches in the residual graph of
    a maximum flow are the same for every maximum flow, and an arc of capacity 0 joins no
    residual graph. Capacities off a common grid (:func:`to_integers` not exact) fall back
    to :func:`min_cut` for every split.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(2, 1, 2, link_gbps=100.0)   # two leaves of 2 hosts, one spine
    >>> ga = GraphArrays.from_fabric(fab)
    >>> ep = np.array([ga.index[e] for e in fab.endpoints])
    >>> SplitCuts(ga, ep).cut(np.array([True, True, False, False])).capacity
    100.0
    """

    def __init__(self, ga: GraphArrays, endpoints: np.ndarray) -> None:
        self.ga, self.endpoints = ga, np.asarray(endpoints)
        cap = ga.capacity
        self.grid: np.ndarray | None = None
        if len(cap) and float(cap.max()) > 0 and float(cap.max()) < 1e12:
            grid = np.rint(cap * 1e6).astype(np.int64)  # to_integers' grid, read once
            if np.allclose(grid / 1e6, cap, rtol=1e-12, atol=0) and np.any(grid > 0):
                self.unit = int(np.gcd.reduce(grid[grid > 0]))
                self.grid = grid // self.unit
        self.layout = SuperLayout.of(ga, self.endpoints)

    def cut(self, mask: np.ndarray) -> Cut:
        ga, lay = self.ga, self.layout
        sources, sinks = self.endpoints[mask], self.endpoints[~mask]
        limit = float(_known_cut(ga, ga.capacity, sources, sinks, None, None))
        top = None if self.grid is None or limit >= 1e12 else int(np.ceil(limit * 1e6 / self.unit))
        if top is None or top > INT_BUDGET or len(np.unique(sources)) != len(sources) or (
                len(np.unique(sinks)) != len(sinks)):
            return min_cut(ga, sources, sinks)
        big = top + 2
        data = np.zeros(len(lay.indices), dtype=np.int64)
        data[lay.arc_pos] = np.minimum(self.grid, top + 1)
        data[lay.src_pos[mask]] = big
        data[lay.snk_pos[~mask]] = big
        side = lay.source_side(np.minimum(data, big).astype(np.int32))
        value, arcs = cut_capacity(ga, side)
        return Cut(side, value, arcs, True)
