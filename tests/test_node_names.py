"""Node names are checked by hashing them: any name a dict can hold passes, any other is
named in the error (a tuple holding a list is a tuple, yet unhashable)."""

from __future__ import annotations

import pytest

import fabricopt as fo
from fabricopt._checks import check_node_names


def test_hashable_names_pass_in_order():
    assert check_node_names("f", "endpoints", iter(["a", ("b", 1), 3])) == ("a", ("b", 1), 3)


@pytest.mark.parametrize("bad", [["x"], ("x", ["y"]), {"k": 1}])
def test_unhashable_names_are_named(bad):
    with pytest.raises(fo.InvalidParameterError,
                       match=r"f\(\): endpoints must be node names \(hashable\), got "):
        check_node_names("f", "endpoints", ["a", bad])


def test_a_claim_is_checked_by_its_arc_count():
    fab = fo.fat_tree(4)
    assert fab.symmetry.matches(fab.graph, fab.endpoints)
    g = fab.graph.copy()
    g.remove_edge("g0", "leaf0")        # one arc fewer: the claim no longer describes it
    assert not fab.symmetry.matches(g, fab.endpoints)
