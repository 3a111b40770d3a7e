"""Colour refinement for the automorphism search: the coarsest equitable partition of a
coloured graph, with class ids canonical enough to compare two refinements.

:class:`Refinement` holds a graph's arcs grouped by node once, so that the many refinements of
an individualisation-refinement search (:mod:`fabricopt.symmetry.search`) are each a few
vectorised rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..graph_arrays import GraphArrays

_RNG_SEED = 1_969  # fixed: twin hashing and refinement must be reproducible


class Refinement:
    """Colour refinement of one graph whose arcs carry colours (capacity classes)."""

    def __init__(self, ga: GraphArrays, arc_color: np.ndarray) -> None:
        self.n = ga.n_nodes
        # Every arc at each node, out-arcs and in-arcs together, grouped by node: the other
        # end and a key for (direction, capacity).
        key_arc = np.random.default_rng(_RNG_SEED + 1).integers(
            1, 2**63, size=(2, int(arc_color.max(initial=0)) + 1), dtype=np.uint64)
        owner = np.concatenate([ga.tail, ga.head])
        grouped = np.argsort(owner, kind="stable")
        self.inc_other = np.concatenate([ga.head, ga.tail])[grouped]
        self.inc_weight = np.concatenate([key_arc[0][arc_color],
                                          key_arc[1][arc_color]])[grouped]
        count = np.bincount(owner, minlength=self.n)
        self.inc_has = count > 0
        self.inc_start = (np.cumsum(count) - count)[self.inc_has]

    def refine(self, colors: np.ndarray) -> np.ndarray:
        """Coarsest equitable refinement of ``colors``, with canonical class ids.

        The rounds of :func:`fabricopt.flow.symmetric.color_refinement` (sums of random
        64-bit keys over each node's out- and in-arcs), specialised for the many refinements
        of a search: a node's out- and in-arcs are listed together once (an in-arc's key
        differs from an out-arc's of the same capacity), so a round is one segment sum over
        them and one sort by (old class, hash). Ids are a function of the coloured graph's
        isomorphism class (same seed, classes ordered by (old class, hash)), so two
        refinements can be compared.
        A hash collision can only merge classes, never split equivalent nodes.
        """
        rng = np.random.default_rng(_RNG_SEED)
        nc = np.unique(colors, return_inverse=True)[1].ravel().astype(np.int64)
        n_classes = int(nc.max()) + 1
        n = self.n
        while True:
            key_node = rng.integers(1, 2**63, size=n_classes, dtype=np.uint64) | np.uint64(1)
            h = np.zeros(n, dtype=np.uint64)
            if len(self.inc_weight):
                h[self.inc_has] = np.add.reduceat(self.inc_weight * key_node[nc[self.inc_other]],
                                                  self.inc_start)
            order = np.lexsort((h, nc))
            a, b = nc[order], h[order]
            new_class = np.r_[False, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
            ids = np.empty(n, dtype=np.int64)
            ids[order] = np.cumsum(new_class)
            count = int(ids.max()) + 1
            if count == n_classes:
                return ids
            nc, n_classes = ids, count

    def individualise(self, part: np.ndarray, nodes: Sequence[int]) -> np.ndarray:
        """Give each of ``nodes`` a colour of its own (in the given order) and refine."""
        colors = part.copy()
        top = int(part.max()) + 1
        for i, v in enumerate(nodes):
            colors[v] = top + i
        return self.refine(colors)
