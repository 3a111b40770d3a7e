"""bisection_bandwidth's checks on arrays: the hose's loads (every arc, in the arrays' order)
and every GPU's scale-out injection at once, against the per-arc and per-GPU readings."""

import dataclasses

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.bisection import _hose_fits, _scale_out_injection
from fabricopt.errors import InvalidParameterError
from fabricopt.graph_arrays import GraphArrays


@pytest.mark.parametrize("fab", [fo.ring(4), fo.dgx_h100(), fo.cluster("dgx_h100", 2, "clos",
                                                                        radix=8)],
                         ids=lambda f: f.name)
def test_injection_of_every_node_is_the_methods(fab):
    ga = GraphArrays.from_fabric(fab)
    got = _scale_out_injection(fab, ga)
    assert [got[ga.index[e]] for e in fab.endpoints] == [
        fab.scale_out_injection_gbps(e) for e in fab.endpoints]


def test_a_hose_is_checked_in_either_order():
    fab = fo.cluster("dgx_h100", 2, "clos", radix=8)
    ga = GraphArrays.from_fabric(fab)
    hose = fo.valiant_rate(fab)
    n = len(fab.endpoints)
    assert _hose_fits(fab, ga, hose, n)  # the arrays' order: checked on arrays
    shuffled = dict(reversed(list(hose.load_gbps.items())))  # another order: arc by arc
    assert _hose_fits(fab, ga, dataclasses.replace(hose, load_gbps=shuffled), n)
    # One arc over its capacity is refused by both checks.
    (u, v), _ = next(iter(hose.load_gbps.items()))
    over = dict(hose.load_gbps)
    over[(u, v)] = fab.graph[u][v]["capacity"] * 1.01
    for loads in (over, dict(reversed(list(over.items())))):
        assert not _hose_fits(fab, ga, dataclasses.replace(hose, load_gbps=loads), n)
    with pytest.raises(InvalidParameterError, match="hose must be valiant_rate's answer"):
        fo.bisection_bandwidth(fab, hose=dataclasses.replace(hose, load_gbps=over))


def test_hose_loads_are_what_valiant_rate_lists():
    fab = fo.leaf_spine(2, 2, 2)
    hose = fo.valiant_rate(fab)
    assert list(hose.load_gbps) == GraphArrays.from_fabric(fab).arcs  # the fast path's key
    assert np.isfinite(list(hose.load_gbps.values())).all()
