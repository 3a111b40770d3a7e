"""A study row reads its fabric once: its named metrics share the arrays, and a caller's
metric function (which may edit the fabric) makes the next reading fresh."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt._unchanged import once, unchanged
from fabricopt.graph_arrays import GraphArrays
from fabricopt.study.metrics import MetricContext, compute_metrics


def test_readings_are_shared_inside_the_block_only():
    fab = fo.ring(4)
    with unchanged(fab):
        first = GraphArrays.from_fabric(fab)
        assert GraphArrays.from_fabric(fab) is first
        assert once(fo.ring(4), "x", lambda: 1) == 1  # another fabric: not remembered
    assert GraphArrays.from_fabric(fab) is not first
    # The shared arrays are read-only: a solver cannot change what the next one reads.
    with pytest.raises(ValueError):
        first.capacity[0] = 2.0


def test_a_callers_function_that_edits_the_fabric_is_seen_by_what_follows():
    fab = fo.ring(4)  # 1 Gb/s links
    seen = []

    def look(f):
        seen.append(GraphArrays.from_fabric(f).capacity.copy())
        return {}

    def double(f):
        for _, _, d in f.graph.edges(data=True):
            d["capacity"] *= 2
        return {}

    compute_metrics(fab, ["summary", look, double, look], MetricContext())
    # 8 arcs of 1 Gb/s before the edit, of 2 Gb/s after it.
    assert np.all(seen[0] == 1.0) and np.all(seen[1] == 2.0)


def test_a_new_symmetry_claim_is_checked_anew():
    fab = fo.fat_tree(4)
    claim = fab.symmetry
    with unchanged(fab):
        assert fab.symmetry is claim
        fab._symmetry = type(claim)({}, "empty", 0, 0, frozenset(), ())  # matches nothing
        assert fab.symmetry is None
