"""Bisection with the two-phase rate by its bounds stage, against the method before it
(the rate by its LP, the all-to-all solve always tried): the same bracket on random small
fabrics (oversubscribed, partly filled, failed), each side re-proved from the fabric."""

import sys
from pathlib import Path

import pytest

import fabricopt as fo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "flow"))
from test_bounds_first import random_fabric  # noqa: E402


def _recheck(fab, b):
    """The cut's capacity recomputed from its links, its sides a bisection of the
    endpoints, and the lower bound at most the cut."""
    cap = sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links)
    assert cap == pytest.approx(b.upper_gbps, rel=1e-12)
    assert abs(len(b.cut.endpoints_a) - len(b.cut.endpoints_b)) <= 1
    assert all(v in b.cut.side_a for v in b.cut.endpoints_a)
    assert not any(v in b.cut.side_a for v in b.cut.endpoints_b)
    crossing = {(u, v) for u, v in fab.graph.edges()
                if u in b.cut.side_a and v not in b.cut.side_a}
    assert crossing == set(b.cut.links)
    assert b.lower_gbps <= b.upper_gbps


@pytest.mark.parametrize("seed", range(12))
def test_bounds_first_gives_the_same_bracket(seed):
    fab = random_fabric(seed)
    before = fo.bisection_bandwidth(fab, bounds_first=False, time_limit=None)
    now = fo.bisection_bandwidth(fab, time_limit=None)
    _recheck(fab, now)
    assert now.upper_gbps == pytest.approx(before.upper_gbps, rel=1e-9)
    # The lower side is never worse, and exact stays exact.
    assert now.lower_gbps >= before.lower_gbps * (1 - 1e-6)
    assert now.exact or not before.exact


def test_a_non_blocking_fat_tree_is_exact_without_any_lp():
    # fat_tree(4) at 400 Gb/s: 16 hosts, a bisection cuts 8 host-rates: 8 x 400 = 3,200 Gb/s,
    # proved by the two-phase rate 400 (bounds stage: WCMP meets a host's own link) x 8.
    b = fo.bisection_bandwidth(fo.fat_tree(4))
    assert b.exact and b.upper_gbps == pytest.approx(3200.0)
    assert "bounds" in b.lower_from


def test_a_hose_rate_given_is_used_as_computed():
    # A comparison row computes valiant_rate as a metric of its own and hands it over: the
    # bracket is the one the bisection finds by itself (its level search is covered).
    fab = fo.leaf_spine(4, 2, 4)
    alone = fo.bisection_bandwidth(fab)
    given = fo.bisection_bandwidth(fab, hose=fo.valiant_rate(fab))
    assert (given.lower_gbps, given.upper_gbps, given.exact) == (
        alone.lower_gbps, alone.upper_gbps, alone.exact)
    with pytest.raises(fo.InvalidParameterError, match="hose"):
        fo.bisection_bandwidth(fab, hose=400.0)
    with pytest.raises(fo.InvalidParameterError, match="this fabric"):
        fo.bisection_bandwidth(fab, hose=fo.valiant_rate(fo.ring(8)))
    with pytest.raises(fo.InvalidParameterError, match="bounds_first"):
        fo.bisection_bandwidth(fab, bounds_first=1)
