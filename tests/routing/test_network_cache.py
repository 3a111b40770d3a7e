"""`Network.reverse_matrix` caches on a declared field (a review found it set by getattr on an
attribute the class never declared)."""

import dataclasses

import numpy as np

import fabricopt as fo
from fabricopt.routing.networks import Network, Networks


def test_the_reverse_matrix_is_a_declared_cache_built_once():
    [_, _, whole] = Networks.of(fo.superpod(1)).networks
    declared = {f.name: f for f in dataclasses.fields(Network)}
    assert "_reverse" in declared and not declared["_reverse"].init
    assert not declared["_reverse"].repr and not declared["_reverse"].compare
    assert whole._reverse is None                      # nothing built until asked
    reverse = whole.reverse_matrix()
    assert whole.reverse_matrix() is reverse           # built once, then reused
    # Head-to-tail: entry (v, u) for every arc u -> v, one per network arc (the SuperPOD has
    # no two arcs on one pair of nodes in a network: a bundle is one arc).
    assert reverse.nnz == whole.n_arcs
    assert np.array_equal(reverse[whole.head, whole.tail].A1, np.ones(whole.n_arcs))
