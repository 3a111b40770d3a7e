"""Minimum cuts between node sets, on a fabric's arrays (shared by bisection and collectives).

Capacities are floats (Gb/s); scipy's max-flow wants 32-bit integers. When every capacity
is a whole multiple of a common unit (200, 400, 3600 Gb/s ...) and the total fits, the search
is exact; otherwise capacities are scaled and rounded for the search only. Every value
reported is recomputed exactly from the cut found, so a returned cut's capacity is exact;
rounding can only make the search miss a slightly better cut (``Cut.exact_search`` says
whether it could).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from .flow.graph_arrays import GraphArrays

#: Largest integer total the max-flow search uses (scipy works in 32-bit integers).
INT_BUDGET = 2**30


@dataclass(frozen=True)
class Cut:
    """A set of nodes ``side`` (a boolean mask over ``ga.nodes``) and the arcs leaving it."""

    side: np.ndarray
    capacity: float
    arcs: np.ndarray
    exact_search: bool = True


def to_integers(values: np.ndarray, budget: int = INT_BUDGET) -> tuple[np.ndarray, bool]:
    """Integers proportional to ``values`` whose sum stays within ``budget``.

    Exact (``True``) when the values are whole multiples of a common unit on a grid of
    1e-6 (Gb/s, say) and the total fits; else rounded after scaling the sum to the budget.

    >>> to_integers(np.array([200.0, 400.0, 3600.0]))
    (array([ 1,  2, 18]), True)
    """
    values = np.asarray(values, dtype=float)
    if not len(values) or float(values.max()) <= 0:
        return np.zeros(len(values), dtype=np.int64), True
    if float(values.max()) < 1e12:
        grid = np.rint(values * 1e6).astype(np.int64)
        if np.allclose(grid / 1e6, values, rtol=1e-12, atol=0) and np.any(grid > 0):
            ints = grid // int(np.gcd.reduce(grid[grid > 0]))
            if int(ints.sum()) <= budget:
                return ints, True
    scale = budget / float(values.sum())
    return np.rint(values * scale).astype(np.int64), False


def cut_capacity(ga: GraphArrays, side: np.ndarray, capacity: np.ndarray | None = None,
                 ) -> tuple[float, np.ndarray]:
    """Exact capacity of the arcs leaving ``side``, and their indices."""
    cap = ga.capacity if capacity is None else capacity
    leaving = np.flatnonzero(side[ga.tail] & ~side[ga.head])
    return float(cap[leaving].sum()), leaving


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
    ints, exact = to_integers(finite, INT_BUDGET // 2)
    # "Infinite" arcs only need to exceed every finite cut.
    big = int(ints.sum()) + 1
    cap_int = ints[: len(cap)]
    src_int = (np.full(len(sources), big) if source_caps is None
               else ints[len(cap): len(cap) + n_src])
    snk_int = np.full(len(sinks), big) if sink_caps is None else ints[len(cap) + n_src:]
    tails = np.concatenate([ga.tail, np.full(len(sources), s), sinks])
    heads = np.concatenate([ga.head, sources, np.full(len(sinks), t)])
    caps = np.concatenate([cap_int, src_int, snk_int]).astype(np.int32)
    graph = sp.csr_matrix((caps, (tails, heads)), shape=(n + 2, n + 2))
    graph.sum_duplicates()
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
