"""Rail-only fabrics at any size: each rail a folded Clos of its own from catalogue switches.

Rail-only ("How to Build Low-cost Networks for Large Language Models (without Sacrificing
Performance)", Wang, Ghobadi et al.) drops the network that joins rails: GPUs of one rail
meet in the rail's own switches, GPUs of different rails only inside a server (NVLink). A
rail whose servers outnumber a leaf's ports is a leaf-spine (or three-tier) Clos of that rail,
never islands and never a made-up switch of as many ports as servers.
"""

import itertools

import networkx as nx
import pytest
from small_fabrics import nvswitch_like

import fabricopt as fo
from fabricopt.generators.wiring import clos_plan, rail_plan


def network_only(fab):
    """The fabric without its scale-up (NVLink) links: what the network alone joins."""
    g = fab.graph.copy()
    g.remove_edges_from([(u, v) for u, v, t in fab.graph.edges(data="tier")
                         if t not in ("gpu-leaf", "leaf-spine", "spine-core")])
    return g


def test_the_issue_case_builds_a_clos_per_rail():
    # 128 DGX H100 on 64-port leaves without a spine (refused before as two islands per rail):
    # 128 > 64 servers, so each rail is a two-tier Clos at 1:1: 32 servers down per leaf,
    # ceil(128 / 32) = 4 leaves of 32 uplinks, fewest_uppers(4, 32, 64) = 2 spines.
    fab = fo.rail_optimized(nodes=128, spine=False, scale_up=fo.dgx_h100())
    switches = [v for v in fab.switches if fab.graph.nodes[v].get("model") != "nvswitch3"]
    assert sum(1 for v in switches if v.startswith("r0.")) == 4 + 2
    assert len(switches) == 8 * (4 + 2)
    net = network_only(fab)
    # Rails never meet in the network; every rail is one connected Clos; NVLink joins them.
    assert nx.has_path(net, "n0.gpu0", "n127.gpu0")
    assert not nx.has_path(net, "n0.gpu0", "n1.gpu1")
    assert nx.is_weakly_connected(fab.graph)
    # No switch is given more ports than the 64 it has (catalogue parts at any size).
    assert max(sum(d["links"] for _, _, d in fab.graph.out_edges(v, data=True))
               for v in switches) <= 64


def test_sixteen_thousand_gpus_from_64_port_switches():
    # 2,048 servers x 8 rails: clos_plan for 2,048 endpoints at radix 64 and 1:1 is 64
    # leaves of 32 down + 32 up and 32 spines (two tiers reach 64 x 32 = 2,048 exactly), per
    # rail: 8 x 64 = 512 leaves, 8 x 32 = 256 spines, 768 switches, against 1,280 (512
    # leaves, 512 spines, 256 cores) for the three-tier SuperPOD of the same GPUs.
    fab = fo.rail_optimized(nodes=2048, spine=False)
    assert fab.summary().nodes_by_layer == {0: 16384, 1: 512, 2: 256}
    assert fab.summary().links_by_tier == {"gpu-leaf": 16384, "leaf-spine": 16384}
    assert fab.symmetry is not None
    assert nx.number_weakly_connected_components(fab.graph) == 8  # one per rail


def test_superpod_without_spine_past_two_su():
    # 3 SU = 96 DGX on 64-port leaves: one SU per rail leaf (32 down, 32 up), 3 leaves and
    # fewest_uppers(3, 32, 64) = 2 spines per rail; 8 x 96 GPU-leaf links, 8 x 3 x 32 up.
    fab = fo.superpod(3, spine=False)
    assert fab.name == "rail-only SuperPOD(3 SU x 32 x DGX H100)"
    tiers = fab.summary().links_by_tier
    assert (tiers["gpu-leaf"], tiers["leaf-spine"]) == (768, 768)
    assert sum(1 for v in fab.switches if str(v).startswith("r5.s")) == 2
    # Leaves hold one SU each, and say which.
    assert {fab.graph.nodes[f"r0.l{i}"]["su"] for i in range(3)} == {0, 1, 2}
    # Two SU still fit one leaf per rail, every port towards GPUs (no spine at all).
    assert "leaf-spine" not in fo.superpod(2, spine=False).summary().links_by_tier


def test_rails_are_clos_networks_of_the_same_plan():
    # Each rail's switches are those clos() builds for its servers: same counts per tier.
    for nodes, radix, tiers in ((6, 4, None), (16, 4, 3), (12, 6, None)):
        plan = rail_plan("t", nodes, 2, radix, False, 1.0, tiers=tiers)
        ref = clos_plan("t", nodes, radix, plan.tiers, 1.0)
        assert (plan.leaves_per_rail, plan.spines, plan.pods) == (ref.leaves, ref.spines,
                                                                 ref.pods)
        fab = fo.rail_optimized(nodes=nodes, gpus_per_node=2, leaf_radix=radix, spine=False,
                                tiers=tiers)
        one = fo.clos(nodes, radix, tiers=plan.tiers)
        assert fab.summary().links_by_tier == {t: 2 * n for t, n in
                                               one.summary().links_by_tier.items()}


@pytest.mark.parametrize("servers_per_domain", [1, 2, 3])
def test_never_islands(servers_per_domain):
    # Brute force over small sizes: every rail-only cluster is one connected fabric (rails
    # joined inside domains), and a rail is connected in the network alone.
    dom = nvswitch_like(2 * servers_per_domain, split=(1,), rails=[0, 1] * servers_per_domain)
    for domains, radix in itertools.product(range(1, 7), range(2, 6)):
        servers = domains * servers_per_domain
        if servers > radix * (radix // 2) * (radix // 2):  # beyond three tiers: refused
            continue
        fab = fo.cluster(dom, nodes=domains, leaf_radix=radix, spine=False)
        assert nx.is_weakly_connected(fab.graph), (domains, radix)
        net = network_only(fab)
        rail0 = [v for v in fab.endpoints if fab.graph.nodes[v]["rail"] == 0]
        assert all(nx.has_path(net, rail0[0], v) for v in rail0[1:]), (domains, radix)


def test_beyond_the_tiers_is_refused_with_the_reach():
    # Radix 4 at 1:1: two tiers reach 4 x 2 = 8 servers per rail, three 4 x 2 x 2 = 16.
    with pytest.raises(fo.InvalidParameterError, match=r"2 tiers reach at most 8 nodes.*"
                                                       r"three tiers \(tiers=3\) reach 16"):
        fo.rail_optimized(nodes=9, gpus_per_node=2, leaf_radix=4, spine=False, tiers=2)
    with pytest.raises(fo.InvalidParameterError, match=r"3 tiers reach at most 16 nodes"):
        fo.rail_optimized(nodes=17, gpus_per_node=2, leaf_radix=4, spine=False)


# Rail-only clusters past one leaf per rail whose claims are proven (fo.verify_symmetry, an
# isomorphism search: the 12-GPU sizes keep it to seconds) and whose symmetric LP equals the
# full LP; larger and three-tier ones are checked by the LP alone.
PROVEN = [
    # 6 servers on radix 4 (2 down): 3 leaves of 2 servers and 2 spines per rail (unequal
    # bundles of 1 and 1 from fewest_uppers(3, 2, 4) = 2: one link to each).
    lambda: fo.cluster(nvswitch_like(2), nodes=6, leaf_radix=4, spine=False),
    # A rail-only SuperPOD past its one-leaf size: 3 SU of 2 nodes on radix-4 switches.
    lambda: fo.superpod(3, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4, spine=False),
]
SOLVED = [
    # Two tiers per rail: 8 servers on radix 4, 4 leaves and 2 spines per rail.
    lambda: fo.cluster(nvswitch_like(2), nodes=8, leaf_radix=4, spine=False),
    # Three tiers per rail: 16 servers, 8 leaves in 4 pods of 2; servers per domain 1,
    # per leaf 2, per pod 4 nest.
    lambda: fo.cluster(nvswitch_like(2), nodes=16, leaf_radix=4, spine=False),
    # Domains of 2 servers, 2 servers per leaf: blocks nest (2 | 2).
    lambda: fo.cluster(nvswitch_like(4, split=(2, 2), rails=[0, 1, 0, 1]), nodes=4,
                       leaf_radix=4, spine=False),
    # 2:1 inside each rail: radix 6 gives 4 down, 2 up; 8 servers: 2 leaves, 1 spine.
    lambda: fo.cluster(nvswitch_like(2), nodes=8, leaf_radix=6, spine=False,
                       oversubscription=2.0),
]


@pytest.mark.parametrize("make", PROVEN)
def test_symmetry_claim_is_proven(make):
    fab = make().validate()
    assert fab.symmetry is not None
    fo.verify_symmetry(fab)


@pytest.mark.parametrize("make", PROVEN + SOLVED)
def test_symmetric_flow_equals_lp(make):
    fab = make().validate()
    assert fab.symmetry is not None
    sym = fo.max_concurrent_flow(fab, method="symmetric")
    lp = fo.max_concurrent_flow(fab, method="lp")
    assert sym.theta == pytest.approx(lp.theta, abs=1e-7)
    assert fo.check_certificate(fab, sym).ok and fo.check_certificate(fab, lp).ok


def test_no_claim_where_leaves_differ():
    # 5 servers on 2 down ports: 3 leaves of 2, 2 and 1 servers: leaves differ.
    assert fo.rail_optimized(nodes=5, gpus_per_node=2, leaf_radix=4, spine=False
                             ).symmetry is None
