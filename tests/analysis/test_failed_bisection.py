"""A failed fabric's bisection from the intact fabric's two-phase flows: never above the
exact bisection, and tight where no split loads every failed link fully."""

import random

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.bisection import _milp
from fabricopt.analysis.failed_bisection import (
    MAX_FAILED_LINKS,
    failed_links_lower,
    restored_hose_lower,
)
from fabricopt.analysis.profile_flow import profile_flow_lower
from fabricopt.graph_arrays import GraphArrays


def _switch_links(fab):
    return sorted({tuple(sorted(e)) for e in fab.graph.edges()})


def _exact_bisection(fab):
    """The MILP's minimum bisection, solved on its own (not through the bounds it checks)."""
    ga = GraphArrays.from_fabric(fab)
    value, _ = _milp(fab, ga, np.array([ga.index[e] for e in fab.endpoints]), None)
    return value


@pytest.mark.parametrize("seed", range(16))
def test_never_above_the_exact_bisection(seed):
    # fat_tree(4) (36 nodes, 16 hosts, 400 Gb/s links) minus 1-5 random links, host links
    # included: the MILP solves its bisection exactly, and a lower bound may not pass it.
    ft = fo.fat_tree(4)
    rng = random.Random(seed)
    fab = ft.without(links=rng.sample(_switch_links(ft), rng.randint(1, 5)))
    bound = failed_links_lower(ft, fab, fab.endpoints)
    assert bound is not None
    assert bound[0] <= _exact_bisection(fab) * (1 + 1e-9)
    # Never below the old bound, the intact 3,200 less 400 per failed link.
    lost = sum(1 for u, v in _switch_links(ft) if not fab.graph.has_edge(u, v))
    assert bound[0] >= 3_200 - 400 * lost - 1e-9


def test_two_failed_links_at_one_switch_stop_one_link():
    # leaf0-spine0.0 and spine0.0-core0.0: the first stops a full 400 only with leaf0's two
    # hosts in A and spine0.0 outside S; the second, leaving S, needs spine0.0 inside, and
    # its reverse (core0.0 -> spine0.0) carries 400 only with pod 0's four hosts all in B.
    # So one link's worth: 3,200 - 400 = 2,800, which the exact MILP confirms.
    ft = fo.fat_tree(4)
    fab = ft.without(links=[("leaf0", "spine0.0"), ("core0.0", "spine0.0")])
    bound, how = failed_links_lower(ft, fab, ft.endpoints)
    assert bound == pytest.approx(2_800)
    assert "2 failed links" in how
    assert _exact_bisection(fab) == pytest.approx(2_800)


def test_does_not_apply():
    ft = fo.fat_tree(4)
    links = _switch_links(ft)
    assert failed_links_lower(ft, ft, ft.endpoints) is None              # nothing failed
    many = ft.without(links=links[:MAX_FAILED_LINKS + 1])
    assert failed_links_lower(ft, many, ft.endpoints) is None            # too many links
    odd = ft.endpoints[:-1]
    assert failed_links_lower(ft, ft.without(links=links[:1]), odd) is None  # odd N


@pytest.mark.parametrize("seed", range(8))
def test_failed_fat_tree8_closes(seed):
    # fat_tree(8) minus 1% (fail_random, seeds 0-7, 4 links each): the bound, raised to a
    # multiple of 400, meets the best cut found in every seed (24,000 where a split crosses
    # all four failed links, 24,400 where none can: see test_bisection.py for seed 1).
    b = fo.bisection_bandwidth(fo.fail_random(fo.fat_tree(8), 0.01, seed=seed))
    assert b.exact
    assert b.upper_gbps in (24_000, 24_400)


@pytest.mark.slow
def test_failed_rail_cluster_bound_by_flows_inside_its_units():
    # 256 DGX H100 on rail-optimized 2:1 leaves minus 1 % of all links (seed 1): the hose
    # rate proves 204,200 Gb/s; each scalable unit's own two-phase rate on its failed links,
    # joined by a top-tier flow per split profile, proves more, below the bisection. The
    # bisection itself is exact: 230,400 (every count of each unit's sending rail leaves,
    # test_blocked_bisection; docs/bisection.md gives the cut).
    rail = fo.cluster(fo.dgx_h100(), nodes=256, scale_out="rail_optimized", oversubscription=2)
    bad = fo.fail_random(rail, 0.01, seed=1)
    b = fo.bisection_bandwidth(bad)
    assert b.exact and b.lower_gbps == pytest.approx(230_400.0)
    assert b.stages == {"lower": "units counted below the top",
                        "upper": "units counted below the top"}
    flows, how = profile_flow_lower(bad, GraphArrays.from_fabric(bad), bad.endpoints)
    assert "flows inside 7 units" in how and 204_200 < flows <= b.lower_gbps
    # The upper end is the capacity of the cut it names, read back from the graph.
    crossing = sum(bad.graph[u][v]["capacity"] for u, v in b.cut.links)
    assert crossing == pytest.approx(b.upper_gbps)
    assert len(b.cut.endpoints_a) == len(b.cut.endpoints_b) == 1024


# -- the hose bound with the failed links given back ---------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_restored_hose_bound_never_above_the_exact_bisection(seed):
    # fat_tree(4) minus 15 % of its links (7 of 48, host links among them): the MILP solves
    # the bisection exactly; the hose bound on the fabric given back, less what the given
    # back links can carry across a cut, may not pass it.
    ft = fo.fat_tree(4)
    fab = fo.fail_random(ft, 0.15, seed=seed)
    found = restored_hose_lower(fab, ft, fab.endpoints)
    assert found is None or found[0] <= _exact_bisection(fab) * (1 + 1e-9)


def test_one_failed_nic_no_longer_holds_every_gpu_down():
    # 32 DGX H100 on rail-optimized 2:1 leaves, one unit of 32 servers (n27.gpu2's NIC and
    # the uplink r1.l0-s1 failed, fail_random 1 % seed 1): on the failed links the
    # two-phase rate is 350 per GPU (n27's 8 GPUs on 7 NICs), 128 x 350 = 44,800. Given
    # back, 400 through the rail leaves: 51,200 less the NIC's 400 (the uplink carries
    # nothing of the rate's flows, hubs one hop out): 50,800, the cut of the 127 NIC links
    # of half the servers (n27 among them).
    intact = fo.cluster(fo.dgx_h100(), nodes=32, scale_out="rail_optimized", oversubscription=2)
    fab = fo.fail_random(intact, 0.01, seed=1)
    assert ("n27.gpu2", "r2.l0", 1) in fab.origin.removed.links
    bound, how = restored_hose_lower(fab, intact, fab.endpoints)
    assert bound == pytest.approx(50_800.0)
    assert "less 400 Gb/s restored" in how
    b = fo.bisection_bandwidth(fab)
    assert b.exact and b.upper_gbps == pytest.approx(50_800.0)
    assert sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(50_800.0)
