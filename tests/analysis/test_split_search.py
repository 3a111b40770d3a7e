"""Whole groups swapped across a bisection cut: every cut returned is a real split into
halves whose capacity is the sum of the fabric's arcs leaving its side, never below the
exact bisection, and lower than the cut it started from where a swap helps."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.bisection import _best_cut, _milp
from fabricopt.analysis.cuts import min_cut
from fabricopt.analysis.split_search import swap_groups
from fabricopt.flow.bounds import hierarchy_partitions
from fabricopt.graph_arrays import GraphArrays


def _arrays(fab):
    ga = GraphArrays.from_fabric(fab)
    return ga, np.array([ga.index[e] for e in fab.endpoints])


def _certify(fab, ga, ep_idx, cut):
    """The cut's side holds half the endpoints and its capacity is the links' sum."""
    side = {ga.nodes[i] for i in np.flatnonzero(cut.side)}
    assert sum(e in side for e in fab.endpoints) * 2 in (len(ep_idx), len(ep_idx) + 1)
    crossing = sum(c for u, v, c in fab.graph.edges(data="capacity")
                   if u in side and v not in side)
    assert crossing == pytest.approx(cut.capacity)


def test_a_split_through_every_leaf_becomes_whole_leaves():
    # leaf_spine(4, 1, 2), unit links: hosts alternating between the halves split every
    # leaf, and the least cut of that split is one host link per leaf (4); two whole leaves
    # a side cross only their two uplinks (2), the bisection.
    fab = fo.leaf_spine(4, 1, 2, link_gbps=1.0)
    ga, ep_idx = _arrays(fab)
    start = min_cut(ga, ep_idx[::2], ep_idx[1::2])
    assert start.capacity == pytest.approx(4.0)
    found = swap_groups(ga, ep_idx, start, hierarchy_partitions(fab, ga),
                        lambda mask: _best_cut(ga, ep_idx, mask)[0])
    assert found.capacity == pytest.approx(2.0)
    _certify(fab, ga, ep_idx, found)


@pytest.mark.parametrize("seed", range(6))
def test_never_below_the_exact_bisection(seed):
    # fat_tree(4) (36 nodes, 16 hosts, 48 links of 400 Gb/s) minus 15 % of its links (7),
    # host links included: the MILP solves the bisection exactly; a swap from the endpoint
    # order's cut may meet it but never pass it, and its cut is a real one.
    fab = fo.fail_random(fo.fat_tree(4), 0.15, seed=seed)
    ga, ep_idx = _arrays(fab)
    exact, _ = _milp(fab, ga, ep_idx, None)
    start, _ = _best_cut(ga, ep_idx, np.arange(len(ep_idx)) < len(ep_idx) // 2)
    found = swap_groups(ga, ep_idx, start, hierarchy_partitions(fab, ga),
                        lambda mask: _best_cut(ga, ep_idx, mask)[0])
    _certify(fab, ga, ep_idx, found)
    assert exact * (1 - 1e-9) <= found.capacity <= start.capacity


def test_a_failed_fat_tree8_cut_below_the_structured_candidates(monkeypatch):
    # fat_tree(8) minus 5 % of its links (fail_random seed 0: 19 of 384): the structured
    # splits, spectral and Kernighan-Lin found 20,800 Gb/s (52 links); swapping leaves with
    # their hosts across it reaches 20,400 (51 links). The exact bisection is 20,000
    # (test_layered_bisection.py), so the swaps alone stop above it; the stages that
    # enumerate the top tier's sides are kept out here to see the swaps alone.
    import fabricopt.analysis.bisection_plan as bisection_plan

    monkeypatch.setattr(bisection_plan, "LAYERED_MAX_ARCS", 0)
    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=0)
    b = fo.bisection_bandwidth(fab)
    assert b.upper_gbps <= 20_400 + 1e-6
    assert "groups swapped" in b.cut.found_by
    side = b.cut.side_a
    assert sum(c for u, v, c in fab.graph.edges(data="capacity")
               if u in side and v not in side) == pytest.approx(b.upper_gbps)
