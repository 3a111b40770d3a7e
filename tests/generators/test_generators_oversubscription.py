"""Oversubscription built as asked, the fewest spines, three-tier rails, and idle ports."""

import glob
import os

import pytest
from flow_helpers import certified
from small_fabrics import nvswitch_like

import fabricopt as fo
from fabricopt.generators.wiring import bundle_links, rail_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def layer_counts(fab):
    return fab.summary().nodes_by_layer


def ports_used(fab, v):
    return sum(d["links"] for d in fab.graph.succ[v].values())


# -- the ratio asked, built with the fewest spines ---------------------------------------------

@pytest.mark.parametrize("s, up, spines", [
    # One SU: 32 DGX H100 on 64-port leaves, one leaf per rail holding all 32 servers, so
    # up = ceil(32 / s); S = ceil(8 leaves x up / 64).
    (1.0, 32, 4),
    (2.0, 16, 2),
    (3.0, 11, 2),    # 88 uplinks on two spines: bundles of 6 and 5
    (4.0, 8, 1),
])
def test_one_su_builds_the_ratio_with_the_fewest_spines(s, up, spines):
    fab = fo.rail_optimized(nodes=32, oversubscription=s)
    assert layer_counts(fab) == {0: 256, 1: 8, 2: spines}
    assert ports_used(fab, "r0.l0") == 32 + up
    assert fab.params["oversubscription_built"] == pytest.approx(32 / up)
    assert all(ports_used(fab, f"s{j}") <= 64 for j in range(spines))


def test_unequal_bundles_differ_by_one():
    fab = fo.rail_optimized(nodes=32, oversubscription=3.0)
    # 11 uplinks over 2 spines: 5 each and one more to spine (rail x 1) mod 2 (rotation
    # step 2 / gcd(2, 8) = 1 per rail).
    bundles = sorted(fab.graph["r0.l0"][s]["links"] for s in ("s0", "s1"))
    assert bundles == [5, 6]
    # The spines take 8 x 11 = 88 links, 44 each.
    assert [ports_used(fab, s) for s in ("s0", "s1")] == [44, 44]
    # Rail rotations with the spines act on the wiring: two orbits of leaf-spine bundles.
    assert fab.symmetry is not None
    assert {n for n in fab.symmetry.orbit_names if n.startswith("leaf-spine")} == {
        "leaf-spine:0:up", "leaf-spine:0:down", "leaf-spine:1:up", "leaf-spine:1:down"}
    # Every lower switch's bundles sum to its uplinks.
    assert all(sum(bundle_links(i, j, 11, 3) for j in range(3)) == 11 for i in range(8))


def test_partly_filled_leaves_take_only_the_uplinks_their_ratio_needs():
    # 100 GPUs on radix 64 at 1:1: 4 leaves of 25, so 25 uplinks each (not 32), 100 uplinks
    # on ceil(100 / 64) = 2 spines, bundles of 13 and 12.
    fab = fo.clos(endpoints=100, radix=64)
    assert layer_counts(fab) == {0: 100, 1: 4, 2: 2}
    assert [ports_used(fab, f"leaf{i}") for i in range(4)] == [50] * 4
    assert fab.params["oversubscription_built"] == 1.0


@pytest.mark.parametrize("su, s, spines, cores", [
    # 16 SU of 32 DGX H100: 128 rail leaves with up = 32 / s uplinks; pods of 32 leaves (4
    # pods), 32 / s spines each; spine j of each pod sends 32 links to core group j of
    # ceil(4 x 32 / 64) = 2 cores. At 1:1 NVIDIA's 128 spines and 64 cores.
    (16, 1.0, 128, 64),
    (16, 2.0, 64, 32),
    (16, 4.0, 32, 16),
    # 4 SU, two tiers: 32 leaves of up = 32 / s uplinks on ceil(32 x up / 64) spines.
    (4, 1.0, 16, 0),
    (4, 2.0, 8, 0),
])
def test_superpod_oversubscription(su, s, spines, cores):
    fab = fo.superpod(su, oversubscription=s)
    counts = layer_counts(fab)
    # Layer 1 holds the 4 NVSwitches of each of the 32 x su nodes and the 8 x su leaves.
    assert counts[1] == 4 * 32 * su + 8 * su
    assert (counts[2], counts.get(3, 0)) == (spines, cores)
    assert fab.params["oversubscription_built"] == s


def test_superpod_ratio_that_needs_more_ports_than_the_leaf_has():
    # 32 nodes per SU at 0.5:1 need 64 uplinks, but a 64-port leaf has 32 left.
    with pytest.raises(fo.InvalidParameterError, match=r"needs 64 uplinks"):
        fo.superpod(2, oversubscription=0.5)


# -- three-tier rail-optimized fabrics ---------------------------------------------------------

def test_rail_three_tier_counts():
    # 512 DGX-like servers of 8 rails on 64-port leaves at 1:1: 16 leaves per rail, 128 per
    # plane; pods of 32 leaves (4 server groups x 8 rails), 4 pods of 32 spines; core group j
    # takes 4 x 32 = 128 links: 2 cores, 64 in all.
    p = rail_plan("rail_optimized", 512, 8, 64, True, 1.0)
    assert (p.tiers, p.leaves, p.pods, p.spines, p.cores_per_group) == (3, 128, 4, 32, 2)
    fab = fo.rail_optimized(nodes=512)
    assert layer_counts(fab) == {0: 4096, 1: 128, 2: 128, 3: 64}
    # A pod holds the 8 rails of 4 server groups: leaf i of every rail, i = 0..3.
    assert {fab.graph.nodes[f"r{r}.l{i}"]["pod"] for r in range(8) for i in range(4)} == {0}
    assert fab.symmetry is not None


SYMMETRIC = [
    # 4 servers of 2 rails on radix-4 leaves: 2 leaves per rail, 4 per plane, pods of 2
    # leaves (the 2 rails of one server group), 2 spines per pod, one core per group.
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, tiers=3),
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, tiers=3, planes=2),
    # 4 rails, pods of 2 leaves: a server group's rails span two pods.
    lambda: fo.rail_optimized(nodes=2, gpus_per_node=4, leaf_radix=4, tiers=3),
    # Oversubscribed: radix 6 at 2:1 has 4 down ports, leaves of 2 servers take 1 uplink.
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=6, tiers=3,
                              oversubscription=2.0),
    # With NVLink between a server's GPUs.
    lambda: fo.cluster(nvswitch_like(2), nodes=4, leaf_radix=4, tiers=3),
    # A scaled-down SuperPOD at 2:1: 2 nodes per SU on radix-4 leaves take 1 uplink each.
    lambda: fo.superpod(2, node=fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=2,
                                                   link_gbps=200),
                        nodes_per_su=2, leaf_radix=4, oversubscription=2.0),
    lambda: fo.superpod(4, node=fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=2,
                                                   link_gbps=200),
                        nodes_per_su=2, leaf_radix=4, oversubscription=2.0),
    lambda: fo.clos(endpoints=16, radix=4, tiers=3, oversubscription=[1.0, 1.0]),
    # Unequal bundles laid out for rotations (rotation_starts). 9 GPUs on radix 6: 3 leaves
    # of 3 up, 9 uplinks on 2 spines (2 + 1 links per leaf, every extra on spine 0: step
    # 2 / gcd(2, 3) = 2).
    lambda: fo.clos(endpoints=9, radix=6),
    lambda: fo.rail_optimized(nodes=3, gpus_per_node=3, leaf_radix=6),
    # 2 rails x 2 leaves of 3 servers, 3 uplinks each on 2 spines: starts 0, 1, 1, 0.
    lambda: fo.rail_optimized(nodes=6, gpus_per_node=2, leaf_radix=6),
    lambda: fo.cluster(nvswitch_like(2), nodes=6, leaf_radix=6),
    lambda: fo.cluster(nvswitch_like(3), nodes=3, leaf_radix=6),
]


@pytest.mark.parametrize("make", SYMMETRIC)
def test_symmetry_claims_hold_and_match_the_lp(make):
    fab = make().validate()
    assert fab.symmetry is not None
    fo.verify_symmetry(fab)
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    lp = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(lp.theta, abs=1e-7)


def test_rail_three_tier_pods_of_partial_groups_claim_nothing():
    # 3 servers over 2 leaves per rail (2 + 1): leaves differ.
    assert fo.rail_optimized(nodes=3, gpus_per_node=2, leaf_radix=4, tiers=3).symmetry is None


# -- idle ports ------------------------------------------------------------------------------

def test_fat_tree_priced_on_64_port_switches_reports_idle_ports():
    est = fo.estimate_cost(fo.fat_tree(8, switch_model="qm9700"))
    # 5 x 8**2 / 4 = 80 switches of radix 8 on 64-port QM9700s: 56 idle ports each.
    assert est.idle_ports == {"qm9700": 80 * 56}
    assert "56.0 per unit" in est.to_table()


# -- every shipped oversubscription sweep ------------------------------------------------------

SWEEPS = sorted(glob.glob(os.path.join(ROOT, "topologies", "*oversubscription*.toml")))


@pytest.mark.parametrize("path", SWEEPS, ids=os.path.basename)
def test_shipped_sweeps_cost_less_as_oversubscription_rises(path):
    fabrics = fo.load_design(path)
    ratios = [fab.params["oversubscription"] for fab in fabrics]
    assert ratios == sorted(ratios) and len(set(ratios)) == len(ratios) > 1
    costs = [fo.estimate_cost(fab).capex_usd for fab in fabrics]
    # An oversubscribed design has fewer uplinks, cables and spines: it must cost less.
    assert all(b < a for a, b in zip(costs, costs[1:], strict=False)), costs
    built = [fab.params["oversubscription_built"] for fab in fabrics]
    assert all(b <= s + 1e-12 for b, s in zip(built, ratios, strict=True))


def test_there_are_shipped_sweeps():
    assert len(SWEEPS) >= 2
