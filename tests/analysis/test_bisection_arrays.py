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


def _one_way_link(fab):
    u, v = next(iter(fab.graph.edges()))
    fab.graph[u][v]["capacity"] *= 3  # one direction only: no longer reversible
    return fab


@pytest.mark.parametrize("make, whole", [
    (lambda: fo.superpod(1), True), (lambda: fo.fat_tree(4), True),
    (lambda: fo.leaf_spine(3, 2, 5, link_gbps=100.5), False),   # not whole Gb/s
    (lambda: _one_way_link(fo.fat_tree(4)), False)])
def test_a_reversible_whole_graph_searches_one_direction(make, whole):
    # On a graph whose every arc has a reverse of its capacity, in whole Gb/s, the B->A
    # minimum cut has the A->B capacity exactly (a set's complement takes in what it sends
    # out), so the one-way search returns what the two-way search does: the A->B cut.
    from fabricopt.analysis.bisection import _best_cut, _reversible_whole

    fab = make()
    ga = GraphArrays.from_fabric(fab)
    assert _reversible_whole(ga) is whole
    ep = np.array([ga.index[e] for e in fab.endpoints])
    rng = np.random.default_rng(3)
    for _ in range(4):
        mask = np.zeros(len(ep), dtype=bool)
        mask[rng.permutation(len(ep))[: len(ep) // 2]] = True
        two, won = _best_cut(ga, ep, mask)
        one, _ = _best_cut(ga, ep, mask, one_way=whole)
        if whole:
            assert won and one.capacity == two.capacity
            assert np.array_equal(one.side, two.side)
