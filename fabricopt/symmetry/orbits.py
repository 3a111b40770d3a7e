"""Orbits from generators: the classes a set of permutations joins, as labels.

The group a list of generators generates moves an item only within the connected component of
the graph that joins each item to its images, so orbits are components (union of one sparse
graph's components), never an enumeration of the group.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

Generator = tuple[np.ndarray, np.ndarray]  # (support, image): node i goes to node image[k]


def _merge(labels: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Component labels after joining ``a[i]`` with ``b[i]`` (labels are 0..k-1)."""
    if len(a) == 0:
        return labels
    k = int(labels.max()) + 1
    g = sp.coo_matrix((np.ones(len(a)), (labels[a], labels[b])), shape=(k, k))
    return connected_components(g, directed=False)[1][labels].astype(np.int64)


def _node_labels(n: int, gens: Sequence[Generator]) -> np.ndarray:
    """Node orbits of the group the generators generate (labels 0..k-1)."""
    if not gens:
        return np.arange(n)
    return _merge(np.arange(n), np.concatenate([np.asarray(s, dtype=np.int64) for s, _ in gens]),
                  np.concatenate([np.asarray(i, dtype=np.int64) for _, i in gens]))


def _first_seen_labels(labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered 0, 1, ... in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def _same_partition(labels: np.ndarray, claimed: Sequence[Hashable]) -> bool:
    """Whether two labellings of the same items split them into the same classes."""
    if len(labels) == 0:
        return True
    ids: dict[Hashable, int] = {}
    other = [ids.setdefault(x, len(ids)) for x in claimed]
    pairs = np.unique(np.stack([np.asarray(labels, dtype=np.int64),
                                np.asarray(other, dtype=np.int64)]), axis=1)
    return (len(np.unique(pairs[0])) == pairs.shape[1]
            and len(np.unique(pairs[1])) == pairs.shape[1])
