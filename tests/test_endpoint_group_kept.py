"""check_fabric and check_endpoint_group read a fabric's own endpoints once in a study row
(inside ``unchanged``): the same answers and the same refusals as read anew, and a list of
endpoints replaced inside the block is read again."""

import pytest

import fabricopt as fo
from fabricopt._unchanged import unchanged
from fabricopt.fabric import check_endpoint_group, check_fabric


def test_the_fabrics_own_endpoints_inside_and_outside_a_row():
    fab = fo.superpod(1)
    outside = check_endpoint_group("f", fab, None)
    with unchanged(fab):
        assert check_endpoint_group("f", fab, None) == outside == tuple(fab.endpoints)
        assert check_endpoint_group("f", fab, fab.endpoints) == outside
        assert check_endpoint_group("f", fab, fab.endpoints[:3]) == tuple(fab.endpoints[:3])
        with pytest.raises(fo.InvalidParameterError, match="unknown"):
            check_endpoint_group("f", fab, ["n0.gpu0", "nowhere"])
        with pytest.raises(fo.InvalidParameterError, match="must not repeat"):
            check_endpoint_group("f", fab, ["n0.gpu0", "n0.gpu0"])


def test_endpoints_replaced_inside_a_row_are_read_again():
    fab = fo.ring(4)
    with unchanged(fab):
        assert check_endpoint_group("f", fab, None) == ("n0", "n1", "n2", "n3")
        check_fabric("f", fab)
        fab.endpoints = ["n0", "n1", "n1"]  # a new list: a repeat
        with pytest.raises(fo.InvalidParameterError, match="must not repeat"):
            check_endpoint_group("f", fab, None)
        fab.endpoints = ["n0", "gone"]  # a new list: a name that is no node
        with pytest.raises(fo.InvalidFabricError, match="not nodes of its graph"):
            check_fabric("f", fab)
