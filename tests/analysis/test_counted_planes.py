"""The planes merged with their tops counted: the bound never above the least cut (the MILP's
on failed fat_tree(4), the top tier's enumeration on failed fat_tree(6) and fat_tree(8)), the
relaxation R(k) never above a cut with those counts, every split built re-summed from the
fabric's links, and the failed fat_tree(16) closed in bisection_bandwidth."""

import random

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.bisection import _milp
from fabricopt.analysis.counted_planes import counted_planes_lower
from fabricopt.analysis.layered_bisection import exact_layered
from fabricopt.graph_arrays import GraphArrays


def _arrays(fab):
    ga = GraphArrays.from_fabric(fab)
    return ga, np.array([ga.index[e] for e in fab.endpoints])


def _crossing(fab, side, ga):
    """The capacity of the fabric's links from the split's sending side to the other, read
    from the graph (not from the arrays the search used)."""
    sending = {ga.nodes[i] for i in np.flatnonzero(side)}
    return sum(d["capacity"] for u, v, d in fab.graph.edges(data=True)
               if u in sending and v not in sending)


def _failed(k, seed):
    """fat_tree(k) minus 1 to 2k random links, host links included."""
    ft = fo.fat_tree(k)
    rng = random.Random(seed)
    links = sorted({tuple(sorted(e)) for e in ft.graph.edges()})
    return ft.without(links=rng.sample(links, rng.randint(1, 2 * k)))


def _check(fab, found, truth):
    """The bound is at most the least cut; a split found is a split into halves whose
    capacity, summed from the links, is what the search says and at least the least cut."""
    ga, ep = _arrays(fab)
    assert found.lower <= truth * (1 + 1e-12)
    if found.split is not None:
        assert int(found.split[ep].sum()) in (len(ep) // 2, len(ep) - len(ep) // 2)
        assert _crossing(fab, found.split, ga) == pytest.approx(found.split_gbps)
        assert found.split_gbps >= truth - 1e-9
    if found.closed and found.split is not None:  # every branch reached the split found
        assert found.lower == pytest.approx(found.split_gbps, rel=1e-8)


@pytest.mark.parametrize("seed", range(4))
def test_never_above_the_milp_on_failed_fat_tree_4(seed):
    # fat_tree(4): 16 hosts, 20 switches, 400 Gb/s links, intact bisection 3,200. The MILP
    # solves each failed copy on its own; given the intact 3,200 as the cut in hand, the
    # search must prove no more than the least cut, and it reaches it (two planes of two
    # cores: every count is tried).
    fab = _failed(4, seed)
    ga, ep = _arrays(fab)
    truth, _ = _milp(fab, ga, ep, None)
    found = counted_planes_lower(ga, ep, upper=3200.0)
    _check(fab, found, truth)
    assert found.lower == pytest.approx(truth, rel=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_never_above_the_enumeration_on_failed_fat_tree_6(seed):
    # fat_tree(6): 54 hosts, 3 planes of 3 cores; the top tier's sides enumerated is exact
    # (test_layered_bisection checks it against the MILP). Given a cut far above, the search
    # ends at the least R, at most the least cut.
    fab = _failed(6, seed)
    ga, ep = _arrays(fab)
    truth, _ = exact_layered(ga, ep)
    found = counted_planes_lower(ga, ep, upper=2 * truth)
    _check(fab, found, truth)
    assert found.lower >= 0.9 * truth


@pytest.mark.parametrize("seed", range(2))
def test_an_odd_group_of_endpoints(seed):
    # 53 of a failed fat_tree(6)'s 54 hosts: halves of 26 and 27, either sending (the mirror
    # of a split is a split then too); the enumeration of the top tier's sides is exact.
    fab = fo.fail_random(fo.fat_tree(6), 0.08, seed=seed)
    ga, ep = _arrays(fab)
    truth, _ = exact_layered(ga, ep[1:])
    found = counted_planes_lower(ga, ep[1:], upper=2 * truth)
    assert found.lower == pytest.approx(truth, rel=1e-8) and found.closed
    assert int(found.split[ep[1:]].sum()) in (26, 27)
    assert _crossing(fab, found.split, ga) == pytest.approx(truth)


@pytest.mark.parametrize("fraction, seed, truth", [(0.1, 13, 6_400), (0.2, 4, 4_400)])
def test_a_partial_count_is_refined_by_its_top_switches(monkeypatch, fraction, seed, truth):
    # Failed fat_tree(6) draws whose least R has a plane's cores split (a partial count):
    # the search then tries every choice of those cores, each bounded with them exactly,
    # and ends on the least cut (the top tier's enumeration: 6,400 and 4,400 Gb/s).
    from fabricopt.analysis import counted_planes as cp

    refined = []
    original = cp._Search._refine
    monkeypatch.setattr(cp._Search, "_refine",
                        lambda self, *a: refined.append(1) or original(self, *a))
    fab = fo.fail_random(fo.fat_tree(6), fraction, seed=seed)
    ga, ep = _arrays(fab)
    assert exact_layered(ga, ep)[0] == truth
    found = counted_planes_lower(ga, ep, upper=2 * truth)
    assert refined and found.closed
    assert found.lower == pytest.approx(truth, rel=1e-8)
    _check(fab, found, truth)


@pytest.mark.parametrize("seed", range(3))
def test_closes_failed_fat_tree_8(seed):
    # fat_tree(8) minus 5 % (seeds 0-2): exact 20,000, 20,400 and 20,800 Gb/s by the top
    # tier's sides; given that cut, every branch reaches it.
    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=seed)
    ga, ep = _arrays(fab)
    truth, _ = exact_layered(ga, ep)
    assert truth == [20_000, 20_400, 20_800][seed]
    found = counted_planes_lower(ga, ep, upper=truth)
    assert found.closed
    _check(fab, found, truth)


@pytest.mark.parametrize("seed", range(4))
def test_counts_relax_every_top_with_those_counts(seed):
    # The relaxation itself: for random sides of the cores of a failed fat_tree(6), R at
    # their counts per plane is at most the least cut with the cores fixed so (every pod
    # placed exactly below them, the layered tables).
    from fabricopt.analysis import counted_planes as cp
    from fabricopt.analysis.layered_bisection import _least_below, _planes, read_layers

    fab = _failed(6, seed)
    ga, ep = _arrays(fab)
    layers = read_layers(ga, ep, max_configs=np.inf)
    planes = _planes(ga, layers)
    tops = cp._plane_tops(ga, layers, planes)
    merged = cp._merged(ga, ep, planes, tops)[-1]
    rng = np.random.default_rng(seed)
    for _ in range(5):
        sending = np.zeros(ga.n_nodes, dtype=bool)
        for top in tops:
            sending[top[rng.random(len(top)) < 0.5]] = True
        counts = np.array([[sending[top].sum() for top in tops]])
        classes = np.array([[sending[c].sum() for c in layers.top_classes]], dtype=float)
        exact, _ = _least_below(ga, ep, layers, classes, {})
        assert cp._least(merged, len(ep), counts)[0] <= exact[0] * (1 + 1e-12)


def test_a_spent_limit_keeps_a_bound_below():
    # No time at all: the least open branch is the planes apart (their relaxed least), a
    # bound below the least cut all the same.
    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=0)
    ga, ep = _arrays(fab)
    found = counted_planes_lower(ga, ep, upper=20_400.0, seconds=0.0)
    assert not found.closed and found.split is None
    assert 0 < found.lower <= 20_000


def test_fabrics_that_are_not_layered_or_have_one_plane_are_declined():
    ga, ep = _arrays(fo.ring(8))
    assert counted_planes_lower(ga, ep, upper=2.0) is None
    star = fo.leaf_spine(4, 1, 2)  # one spine: one plane
    ga, ep = _arrays(star)
    assert counted_planes_lower(ga, ep, upper=1e9) is None


@pytest.mark.slow
def test_bisection_bandwidth_closes_failed_fat_tree_16():
    # fat_tree(16) minus 5 % (seed 0): exact 166,400 Gb/s, where the planes apart proved
    # 155,200 (test_layered_bisection) and the descent found the cut; the cut carried is
    # re-summed from the links.
    fab = fo.fail_random(fo.fat_tree(16), 0.05, seed=0)
    b = fo.bisection_bandwidth(fab)
    assert b.exact and b.lower_gbps == pytest.approx(166_400)
    assert b.stages == {"lower": "planes merged, tops counted",
                        "upper": "top tier's sides descended"}
    assert sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(166_400)


def test_with_no_time_limit_the_work_is_capped_and_the_bound_stays_below(monkeypatch):
    # A search with no time limit stops after MAX_BRANCHES branches (here 1: one pass of
    # children), with the least open bound: still below the least cut, 20,000 Gb/s on
    # fat_tree(8) minus 5 % (seed 0, by the top tier's sides, as above).
    from fabricopt.analysis import counted_planes as cp

    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=0)
    ga, ep = _arrays(fab)
    whole = counted_planes_lower(ga, ep, upper=20_400.0)
    monkeypatch.setattr(cp, "MAX_BRANCHES", 1)
    capped = counted_planes_lower(ga, ep, upper=20_400.0)
    assert capped.branches < whole.branches and not capped.closed
    assert 0 < capped.lower <= whole.lower <= 20_000 * (1 + 1e-12)


def test_refinement_takes_the_first_plane_with_few_enough_choices():
    from fabricopt.analysis.counted_planes import CHOICES, _refined_plane

    # Plane 0: 8 of 16 cores sending, C(16, 8) = 12,870 ways, more than CHOICES (64); plane
    # 1: 2 of 4, C(4, 2) = 6. The search refines plane 1 instead of stopping.
    assert CHOICES == 64 and _refined_plane((8, 2), [16, 4]) == 1
    # Counts of 0 or all, and counts past the top (switches already chosen), are not partial.
    assert _refined_plane((0, 4, 9), [4, 4, 4]) is None


def test_no_pod_below_the_merged_top_cuts_nothing():
    # Every endpoint free of the merged planes' pods: R is 0 at every row, no convolution.
    from fabricopt.analysis.counted_planes import _least

    rows = np.zeros((3, 2), dtype=np.int64)
    assert _least(([], 6), 6, rows).tolist() == [0.0, 0.0, 0.0]
