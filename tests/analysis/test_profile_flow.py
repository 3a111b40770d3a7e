"""The flow chosen per split profile: never above the least cut, exact where the cheapest
split keeps all units whole but one and the top tier's bundles are uneven."""

import numpy as np
import pytest
import scipy.sparse as sp
from flow_helpers import least_bisection_cut, random_fabric

import fabricopt as fo
from fabricopt.analysis.bisection import _milp
from fabricopt.analysis.profile_flow import (
    _certified_value,
    _vertices,
    profile_flow_lower,
    restored_profile_lower,
)
from fabricopt.graph_arrays import GraphArrays


def test_one_leaf_whole_and_one_cut_through_is_exact():
    # leaf_spine(3, 1, 4) at 100 Gb/s: 3 leaves of 4 hosts, one 100 Gb/s uplink each. Inside
    # a leaf, through the leaf switch (its only node on the top), hosts go at 100 each. The
    # vertices take one leaf whole (it sends what its uplink carries, 100) and 2 hosts of
    # another (2 pairs inside at 100): 300, the least cut (the hose bound alone is 6 x 25).
    fab = fo.leaf_spine(3, 1, 4, link_gbps=100.0)
    bound, how = profile_flow_lower(fab, GraphArrays.from_fabric(fab), fab.endpoints)
    assert bound == pytest.approx(300.0) == least_bisection_cut(fab)
    assert "3 units" in how


#: Random small fabrics (at most 12 endpoints, every split enumerable) past the ten the
#: bisection's brute-force test draws, failed ones among them: their uneven bundles are
#: what the bound is for.
SEEDS = [s for s in range(120) if len(random_fabric(s).endpoints) <= 12][10:30]


@pytest.mark.parametrize("seed", SEEDS)
def test_never_above_the_least_cut(seed):
    fab = random_fabric(seed)
    got = profile_flow_lower(fab, GraphArrays.from_fabric(fab), fab.endpoints)
    if got is not None:
        assert got[0] <= least_bisection_cut(fab) * (1 + 1e-9) + 1e-9


def test_vertices_keep_every_unit_whole_but_one():
    # Units of 5, 3 and 4 endpoints, 6 in A: every profile sums to 6, at most one unit is
    # split, and all 6 such profiles are there: 5 + 1 of the 3 or of the 4; 3 + 3 of the 5
    # or of the 4; 4 + 2 of the 5 or of the 3 (3 + ... with 5 whole is over 6).
    sizes = np.array([5, 3, 4])
    got = {tuple(v.tolist()) for v in _vertices(sizes, 6)}
    assert got == {(5, 1, 0), (5, 0, 1), (3, 3, 0), (0, 3, 3), (2, 0, 4), (0, 2, 4)}
    assert all(sum(v) == 6 and sum(0 < a < n for a, n in zip(v, sizes, strict=True)) <= 1
               for v in got)


def test_an_imbalance_the_solver_leaves_is_charged():
    # One arc 0 -> 1 of capacity 10 carrying 10; node 0 takes F^A = 10 from its unit and
    # node 1 gives F^B = 9.5 to its own. Rows (out - in - p (F^A - F^B)): node 0, 10 - 10 =
    # 0; node 1, -10 + 9.5 = -0.5: half a unit stuck at node 1, so 10 - 0.5 is proven.
    A = sp.csr_matrix(np.array([[1.0, -1.0, 0.0], [-1.0, 0.0, 1.0]]))
    x = np.array([10.0, 10.0, 9.5])
    assert _certified_value(x, A, np.array([10.0, 10.0, 10.0]), 1, 1) == pytest.approx(9.5)
    # A point above its bounds is held to them first: the arc at 12 counts as 10.
    assert _certified_value(np.array([12.0, 10.0, 10.0]), A, np.full(3, 10.0), 1, 1) \
        == pytest.approx(10.0)


def test_a_partition_that_cannot_help_needs_no_unit_rate(monkeypatch):
    # leaf_spine(4, 1, 4): 4 leaves of 4 hosts, a split of 8 keeps 2 leaves whole on each
    # side, and that cut is 2 uplinks, 200 Gb/s. With 200 already proven no vertex can do
    # better, so no unit's two-phase rate is computed.
    import fabricopt.analysis.profile_flow as profile_flow

    monkeypatch.setattr(profile_flow, "_unit_rate",
                        lambda *a, **k: pytest.fail("a unit's rate was computed"))
    fab = fo.leaf_spine(4, 1, 4, link_gbps=100.0)
    assert profile_flow_lower(fab, GraphArrays.from_fabric(fab), fab.endpoints, 200.0) is None


@pytest.mark.parametrize("oversubscription, expected", [
    # 96 DGX H100 in 3 scalable units of 32 servers, 768 GPUs: a half is one unit whole
    # and 16 servers of another. At 2:1 a rail leaf has 16 uplinks: 8 x 16 = 128 uplinks
    # plus 8 rails x 16 NIC links, 256 x 400 = 102,400; at 1:1, 32 uplinks: (256 + 128) x
    # 400 = 153,600. The leaves' uplinks spread unevenly over the spines (16 over 6), so the
    # hose rate proves less (99,200 and 151,200).
    (2.0, 102_400.0), (1.0, 153_600.0)])
def test_three_unit_rail_cluster_closes(oversubscription, expected):
    fab = fo.cluster(fo.dgx_h100(), nodes=96, scale_out="rail_optimized",
                     oversubscription=oversubscription)
    b = fo.bisection_bandwidth(fab, time_limit=None)
    assert b.exact and b.upper_gbps == pytest.approx(expected)
    # The flow per profile alone proves it (the bisection may take the units counted below
    # the spines first): every cut is a multiple of 400 Gb/s, so a bound above
    # expected - 400 proves expected.
    bound, how = profile_flow_lower(fab, GraphArrays.from_fabric(fab), fab.endpoints)
    assert expected - 400 < bound <= expected * (1 + 1e-9)
    assert how.startswith("flows inside 3 units")


@pytest.mark.slow
def test_rail_cluster_of_2048_gpus_closes():
    # 256 DGX H100 at 2:1: 7 units (4 of 37 servers, 3 of 36), leaves of 19 uplinks. The
    # cut: three units of 37 whole, 3 x 8 x 19 = 456 uplinks, and 17 servers of a fourth, 8
    # x 17 = 136 NIC links: 592 x 400 = 236,800. The hose rate proved 233,600.
    fab = fo.cluster(fo.dgx_h100(), nodes=256, scale_out="rail_optimized", oversubscription=2)
    b = fo.bisection_bandwidth(fab, time_limit=None)
    assert b.exact and b.upper_gbps == pytest.approx(236_800.0)
    # The flow per profile alone proves it too (within the 400 Gb/s grid).
    bound, how = profile_flow_lower(fab, GraphArrays.from_fabric(fab), fab.endpoints)
    assert 236_800.0 - 400 < bound <= 236_800.0 * (1 + 1e-9)
    assert how.startswith("flows inside 7 units")


# -- failed links given back and charged --------------------------------------------------------

def test_a_restored_host_link_is_charged_in_full():
    # leaf_spine(3, 1, 4) at 100 Gb/s (bisection 300, above) minus g0's link: with it given
    # back the bound is 300, less its 100 (a link inside a unit, charged whatever the split):
    # 200, the exact bisection (g0, cut off, costs nothing in A beside leaf1 whole, 100 up,
    # and one more host, 100).
    intact = fo.leaf_spine(3, 1, 4, link_gbps=100.0)
    failed = intact.without(links=[("g0", "leaf0")])
    bound, how = restored_profile_lower(failed, intact, failed.endpoints)
    assert bound == pytest.approx(200.0) == least_bisection_cut(failed)
    assert "less 100 Gb/s restored inside units" in how


@pytest.mark.parametrize("seed", range(6))
def test_restored_bound_never_above_the_exact_bisection(seed):
    # fat_tree(4) (16 hosts, 48 links of 400 Gb/s) minus 15 % of its links (7), host links
    # among them: the MILP solves the bisection exactly; the bound may not pass it.
    intact = fo.fat_tree(4)
    fab = fo.fail_random(intact, 0.15, seed=seed)
    ga = GraphArrays.from_fabric(fab)
    exact, _ = _milp(fab, ga, np.array([ga.index[e] for e in fab.endpoints]), None)
    found = restored_profile_lower(fab, intact, fab.endpoints)
    assert found is not None and found[0] <= exact * (1 + 1e-9)


def test_restored_bound_does_not_apply():
    # Not a failed copy of the intact fabric (a switch gone, more capacity, other
    # endpoints), or nothing to give back.
    intact = fo.fat_tree(4)
    assert restored_profile_lower(intact.without(switches=["core0.0"]), intact,
                                  intact.endpoints) is None
    assert restored_profile_lower(intact, intact, intact.endpoints) is None
    assert restored_profile_lower(intact, intact.without(links=[("g0", "leaf0")]),
                                  intact.endpoints) is None
    assert restored_profile_lower(intact.without(links=[("g0", "leaf0")]), intact,
                                  intact.endpoints[:-2]) is None


@pytest.mark.slow
def test_failed_rail_cluster_of_2048_gpus_with_its_nics_given_back():
    # 256 DGX H100 at 2:1 minus 1 % of all links (seed 1: 371 NVLink, 18 NIC, 11 leaf-spine
    # links). Given back, the 18 NICs no longer hold their units' two-phase rate to 340-350
    # Gb/s per GPU (7 NICs for 8 GPUs): at 400, the flow per split profile proves 233,600 on
    # the 200 Gb/s grid, the 11 leaf-spine links paid by the flow over them, less 18 x 400 =
    # 7,200 for the NICs: 226,400. Below the best cut found, whose capacity is read back.
    rail = fo.cluster(fo.dgx_h100(), nodes=256, scale_out="rail_optimized", oversubscription=2)
    bad = fo.fail_random(rail, 0.01, seed=1)
    bound, how = restored_profile_lower(bad, rail, bad.endpoints)
    assert bound == pytest.approx(226_400.0, abs=200.0)
    assert "less 7200 Gb/s restored inside units" in how
    b = fo.bisection_bandwidth(bad)
    assert bound <= b.lower_gbps + 1e-6 <= b.upper_gbps + 1e-6
    assert sum(bad.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(
        b.upper_gbps)
