"""A fabric's graph as flat numpy arrays, the form every solver works on."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class GraphArrays:
    """Nodes and arcs of a fabric as arrays.

    ``nodes[i]`` is node ``i``; arc ``a`` runs from ``tail[a]`` to ``head[a]`` with
    ``capacity[a]`` Gb/s. ``arcs[a]`` is the ``(u, v)`` node pair of arc ``a``.
    """

    nodes: list[Hashable]
    index: dict[Hashable, int]
    arcs: list[tuple[Hashable, Hashable]]
    tail: np.ndarray
    head: np.ndarray
    capacity: np.ndarray

    @classmethod
    def from_fabric(cls, fab: Any) -> GraphArrays:
        """Read the arrays off ``fab.graph`` (one pass over nodes and arcs)."""
        g = fab.graph
        nodes = list(g.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        arcs = list(g.edges)
        m = len(arcs)
        tail = np.fromiter((index[u] for u, _ in arcs), dtype=np.int64, count=m)
        head = np.fromiter((index[v] for _, v in arcs), dtype=np.int64, count=m)
        cap = np.fromiter((c for _, _, c in g.edges(data="capacity")), dtype=float, count=m)
        return cls(nodes, index, arcs, tail, head, cap)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_arcs(self) -> int:
        return len(self.arcs)

    def matrix(self, weights: np.ndarray) -> sp.csr_matrix:
        """Node-by-node sparse matrix with ``weights[a]`` at ``(tail[a], head[a])``.

        Zero weights stay as explicit entries, which scipy's graph routines treat as arcs of
        length zero.
        """
        n = self.n_nodes
        return sp.csr_matrix((np.asarray(weights, dtype=float), (self.tail, self.head)),
                             shape=(n, n))

    def incidence(self) -> sp.csr_matrix:
        """Node-arc incidence: +1 where the arc leaves the node, -1 where it enters."""
        m = self.n_arcs
        rows = np.concatenate([self.tail, self.head])
        cols = np.concatenate([np.arange(m), np.arange(m)])
        vals = np.concatenate([np.ones(m), -np.ones(m)])
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.n_nodes, m))
