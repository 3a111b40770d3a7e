"""Clusters of scale-up domains: composition, rail alignment, SuperPOD counts, symmetry."""

import networkx as nx
import pytest
from flow_helpers import certified
from small_fabrics import nvswitch_like

import fabricopt as fo


def tier_arcs(fab, v, tier):
    return [w for w, d in fab.graph.succ[v].items() if d["tier"] == tier]


def switches_with_down(fab, tier):
    """Switches at the upper end of a tier's links."""
    g = fab.graph
    return {v for u, v, d in g.edges(data=True)
            if d["tier"] == tier and g.nodes[v]["layer"] > g.nodes[u]["layer"]}


def links(fab, tier):
    return fab.summary().links_by_tier.get(tier, 0)


# -- composition ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    {"leaf_radix": 4},
    {"leaf_radix": 4, "planes": 2},
    {"leaf_radix": 6, "spine": False},
    {"scale_out": "clos", "radix": 4},
    {"scale_out": "fat_tree", "radix": 4, "tiers": 3},
])
def test_every_gpu_has_its_nvlinks_and_its_nic(kw):
    dom = nvswitch_like(gpus=2, split=(1, 2))
    fab = fo.cluster(dom, nodes=4, **kw).validate()  # no switch over its radix
    planes = kw.get("planes", 1)
    assert len(fab.endpoints) == 4 * 2
    for gpu in fab.endpoints:
        # Both switches of its own domain copy, and one NIC link per plane.
        node = fab.graph.nodes[gpu]["node"]
        assert sorted(tier_arcs(fab, gpu, "gpu-nvswitch")) == [f"n{node}.nvsw0",
                                                               f"n{node}.nvsw1"]
        assert len(tier_arcs(fab, gpu, "gpu-leaf")) == planes
    # Domain copies: 4 x 2 GPUs x 2 switches NVLink bundles of 1 + 2 links.
    assert links(fab, "gpu-nvswitch") == 4 * 2 * (1 + 2)
    assert links(fab, "gpu-leaf") == 4 * 2 * planes


def test_copies_keep_every_attribute_and_get_their_node():
    dom = nvswitch_like(gpus=2)
    fab = fo.cluster(dom, nodes=3, leaf_radix=4)
    g = fab.graph
    for i in range(3):
        for v, d in dom.graph.nodes(data=True):
            assert g.nodes[f"n{i}.{v}"] == {**d, "node": i}
        for u, v, d in dom.graph.edges(data=True):
            assert g[f"n{i}.{u}"][f"n{i}.{v}"] == d
    assert fab.endpoints == tuple(f"n{i}.gpu{r}" for i in range(3) for r in range(2))
    assert fab.params["scale_up"] == "nvs2" and fab.params["nodes"] == 3


@pytest.mark.parametrize("kw", [{"leaf_radix": 4}, {"leaf_radix": 8, "planes": 2},
                                {"leaf_radix": 8, "spine": False}])
def test_rail_alignment_gpu_of_rail_r_on_a_leaf_of_rail_r(kw):
    dom = nvswitch_like(gpus=4, split=(2, 2), rails=[3, 1, 0, 2])
    fab = fo.cluster(dom, nodes=2, **kw).validate()
    g = fab.graph
    # Rails are numbered by sorted rail value: rails 0..3 map to leaf rails 0..3.
    for gpu in fab.endpoints:
        for leaf in tier_arcs(fab, gpu, "gpu-leaf"):
            assert g.nodes[leaf]["rail"] == g.nodes[gpu]["rail"]


def test_several_gpus_per_rail_form_servers():
    # 4 GPUs on rails 0, 1, 0, 1 (like NVL72 trays): servers {gpu0, gpu1} and {gpu2, gpu3}.
    dom = nvswitch_like(gpus=4, split=(2, 2), rails=[0, 1, 0, 1])
    fab = fo.cluster(dom, nodes=2, leaf_radix=4).validate()
    # 2 domains x 2 servers = 4 servers, leaf down ports 2 at 1:1 -> 2 leaves per rail.
    leaves = switches_with_down(fab, "gpu-leaf")
    assert len(leaves) == 4
    assert sorted(tier_arcs(fab, "n0.gpu0", "gpu-leaf") + tier_arcs(fab, "n0.gpu2", "gpu-leaf")
                  ) == ["r0.l0", "r0.l0"]
    assert tier_arcs(fab, "n1.gpu3", "gpu-leaf") == ["r1.l1"]


def test_rail_only_reaches_other_rails_through_nvlink():
    dom = nvswitch_like(gpus=2)
    fab = fo.cluster(dom, nodes=3, leaf_radix=4, spine=False)
    net = fab.graph.copy()
    net.remove_edges_from([(u, v) for u, v, t in fab.graph.edges(data="tier")
                           if t == "gpu-nvswitch"])
    # Rails meet only inside the domains: without NVLink rail 0 of node 0 cannot reach rail 1
    # of node 1; with it, every pair is joined and all-to-all gets a positive rate.
    assert not nx.has_path(net, "n0.gpu0", "n1.gpu1")
    assert nx.has_path(fab.graph, "n0.gpu0", "n1.gpu1")
    r = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert r.theta > 0


def test_no_scale_out_is_just_the_copies():
    fab = fo.cluster(nvswitch_like(), nodes=3, scale_out=None)
    assert fab.summary().links_by_tier == {"gpu-nvswitch": 3 * 2 * 3}
    assert len(fab.switches) == 3 * 2


def test_clos_tiers_default_to_the_fewest_that_reach():
    dom = nvswitch_like(gpus=2)
    # radix 4 at 1:1: two tiers reach 4 x 2 = 8 GPUs (clos_reach: radix x down); 16 need three.
    assert "spine-core" not in fo.cluster(dom, 4, "clos", radix=4).summary().links_by_tier
    assert links(fo.cluster(dom, 8, "clos", radix=4), "spine-core") == 16


def test_rail_optimized_with_scale_up_is_a_cluster():
    dom = nvswitch_like(gpus=2)
    a = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, scale_up=dom)
    b = fo.cluster(dom, nodes=4, leaf_radix=4)
    assert nx.utils.graphs_equal(a.graph, b.graph)
    assert a.symmetry is not None


# -- symmetry -----------------------------------------------------------------------------------

SYMMETRIC = [
    lambda: fo.cluster(nvswitch_like(2), nodes=4, leaf_radix=4),
    lambda: fo.cluster(nvswitch_like(3, split=(2, 1, 2)), nodes=2, leaf_radix=4),
    lambda: fo.cluster(nvswitch_like(2), nodes=4, leaf_radix=4, planes=2),
    lambda: fo.cluster(nvswitch_like(2), nodes=3, leaf_radix=6, spine=False),
    lambda: fo.cluster(nvswitch_like(4, split=(2, 2), rails=[0, 1, 0, 1]), nodes=2,
                       leaf_radix=4),
    lambda: fo.cluster(nvswitch_like(2), nodes=4, scale_out="clos", radix=4),
    lambda: fo.cluster(nvswitch_like(4, split=(2, 2)), nodes=2, scale_out="clos", radix=4),
    lambda: fo.cluster(nvswitch_like(2), nodes=8, scale_out="fat_tree", radix=4, tiers=3),
    lambda: fo.superpod(1, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4),
    lambda: fo.superpod(3, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4),
    lambda: fo.superpod(2, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4, spine=False),
    lambda: fo.cluster(fo.nvswitch_domain(gpus=2, switches=2, links_per_gpu=3, link_gbps=200),
                       nodes=4, leaf_radix=4),
    lambda: fo.cluster({"family": "nvswitch_domain", "gpus": 3, "switches": 1,
                        "links_per_gpu": 2, "link_gbps": 200}, nodes=2, scale_out="clos",
                       radix=6),
    # Evenly spread leaves: 12 GPUs, radix 8 at 2:1 has 5 down ports, so 3 leaves of 4 GPUs
    # (2 domains each); 6 servers over 2 leaves per rail of 4 down ports: 3 + 3.
    lambda: fo.cluster(nvswitch_like(2), nodes=6, scale_out="clos", radix=8,
                       oversubscription=2.0),
    lambda: fo.cluster(nvswitch_like(2), nodes=6, leaf_radix=5, oversubscription=4.0),
]


@pytest.mark.parametrize("make", SYMMETRIC)
def test_symmetry_claim_is_proven_and_symmetric_flow_equals_lp(make):
    fab = make().validate()
    fo.verify_symmetry(fab)
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    lp = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(lp.theta, abs=1e-7)
    assert fo.check_certificate(fab, sym).ok


@pytest.mark.parametrize("make", [
    # GPUs of a ring are linked to each other: not twins.
    lambda: fo.cluster(fo.ring(4), nodes=2, leaf_radix=4),
    # Leaves of 2 GPUs over domains of 3: a leaf straddles two domains (3 and 2 do not nest).
    lambda: fo.cluster(nvswitch_like(3, split=(1, 1, 1)), nodes=2, scale_out="clos", radix=4),
    # Servers of 2 per domain, 3 per leaf: blocks do not nest.
    lambda: fo.cluster(nvswitch_like(4, split=(2, 2), rails=[0, 1, 0, 1]), nodes=3,
                       leaf_radix=4, oversubscription=3.0),
    # 3 servers over ceil(3 / 2) = 2 leaves per rail: 1 and 2 servers, leaves differ.
    lambda: fo.cluster(nvswitch_like(2), nodes=3, leaf_radix=4),
    # A domain without a claim.
    lambda: fo.cluster(fo.from_networkx(nx.star_graph(2), endpoints=[1, 2]), 2, leaf_radix=4),
])
def test_no_claim_where_it_cannot_be_proven(make):
    assert make().symmetry is None


# -- SuperPOD -------------------------------------------------------------------------------

# NVIDIA DGX SuperPOD table (B200 RA, QM9700 NDR; docs/hardware.md#dgx-superpod, V):
# SU -> leaves, spines, cores; cables node-leaf = leaf-spine = GPUs, spine-core = GPUs from
# 16 SU (two tiers below).
SUPERPOD_TABLE = [
    (2, 16, 8, 0),
    (4, 32, 16, 0),
    (8, 64, 32, 0),
    (16, 128, 128, 64),
    (32, 256, 256, 128),
    (64, 512, 512, 256),
]


@pytest.mark.parametrize(("su", "leaves", "spines", "cores"), SUPERPOD_TABLE)
def test_superpod_matches_nvidia_table(su, leaves, spines, cores):
    fab = fo.superpod(su)  # DGX H100 nodes
    gpus = su * 32 * 8  # 32 DGX per SU, 8 GPUs each
    assert len(fab.endpoints) == gpus
    assert len(switches_with_down(fab, "gpu-leaf")) == leaves
    assert len(switches_with_down(fab, "leaf-spine")) == spines
    assert len(switches_with_down(fab, "spine-core")) == cores
    assert links(fab, "gpu-leaf") == gpus and links(fab, "leaf-spine") == gpus
    assert links(fab, "spine-core") == (gpus if cores else 0)
    # DGX H100: 18 NVLinks per GPU (docs/hardware.md#nvlink-generations, V).
    assert links(fab, "gpu-nvswitch") == 18 * gpus
    net = [v for v in fab.switches if fab.graph.nodes[v]["model"] == "qm9700"]
    assert len(net) == leaves + spines + cores
    assert all(fab.graph.nodes[v]["radix"] == 64 for v in net)
    assert {d["tech"] for _, _, d in fab.graph.edges(data=True)} == {"nvlink4", "ndr"}
    assert fab.symmetry is not None


@pytest.mark.parametrize(("make", "nvlinks"), [
    # DGX H100, 18 NVLinks per GPU: 2 SU (16 leaves <= 64 ports) in two tiers, 16 SU in three.
    (lambda: fo.superpod(2), 18),
    (lambda: fo.superpod(16), 18),
    # Two GPUs with 1 + 2 links to their two switches: 1 SU x 2 rails on radix-4 leaves fits
    # two tiers, 3 SU x 2 rails = 6 leaves > 4 ports needs three.
    (lambda: fo.superpod(1, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4), 3),
    (lambda: fo.superpod(3, node=nvswitch_like(2), nodes_per_su=2, leaf_radix=4), 3),
])
def test_superpod_gpu_has_its_nvlinks_and_one_nic_on_the_leaf_of_its_rail_and_su(make, nvlinks):
    fab = make().validate()  # no switch over its radix
    g = fab.graph
    for gpu in fab.endpoints:
        assert sum(d["links"] for d in g.succ[gpu].values()
                   if d["tier"] == "gpu-nvswitch") == nvlinks
        ((leaf, nic),) = [(w, d) for w, d in g.succ[gpu].items() if d["tier"] == "gpu-leaf"]
        assert nic["links"] == 1 and nic["capacity"] == fab.params["nic_gbps"]
        # Each leaf holds one rail of the nodes of one SU (docs/hardware.md#dgx-superpod).
        assert g.nodes[leaf]["rail"] == g.nodes[gpu]["rail"]
        assert (g.nodes[leaf]["su"] == g.nodes[gpu]["su"]
                == g.nodes[gpu]["node"] // fab.params["nodes_per_su"])


@pytest.mark.parametrize(("nic_gbps", "tech"),
                         [(400, "ndr"), (800, "xdr"), (200, "hdr"), (300, "300g")])
def test_superpod_link_label_follows_the_nic_rate(nic_gbps, tech):
    # InfiniBand NDR is 400 Gb/s per port, XDR 800, HDR 200; other rates get a generic label.
    assert fo.superpod(1, nic_gbps=nic_gbps).params["tech"] == tech


def test_superpod_rail_only_has_one_leaf_per_rail():
    fab = fo.superpod(2, spine=False)
    # 64 nodes fit one 64-port leaf per rail: 8 leaves, no spine (arXiv:2307.12169).
    assert len(switches_with_down(fab, "gpu-leaf")) == 8
    assert links(fab, "leaf-spine") == 0


# -- bad arguments --------------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "match"), [
    ({"scale_out": "torus"}, r"cluster\(\): scale_out must be one of"),
    ({"nodes": 0}, r"cluster\(\): nodes must be an integer >= 1"),
    ({"nodes": 2.5}, r"nodes must be an integer"),
    ({"scale_up": "dgx_h1000"}, r"scale_up must be a Fabric.*generators: clos, complete"),
    ({"scale_up": 5}, r"scale_up must be a Fabric"),
    ({"scale_up": {"family": "ring", "m": 4}}, r"scale_up must be arguments ring\(\) takes"),
    ({"scale_up": fo.from_networkx(nx.path_graph(2), endpoints=[])},
     r"scale_up must be a Fabric whose endpoints are GPUs"),
    ({"scale_up": nvswitch_like(3, split=(1,), rails=[0, 0, 1])},
     r"rails hold equally many GPUs"),
    ({"nic_gbps": 0}, r"nic_gbps must be a finite number > 0"),
    ({"radix": 4}, r"fabric_options must be options of scale_out='rail_optimized'"),
    ({"scale_out": "clos", "leaf_radix": 4}, r"options of scale_out='clos'"),
    ({"scale_out": None, "leaf_radix": 4}, r"options of scale_out=None \(none\)"),
    ({"leaf_radix": 1}, r"leaf_radix must be an integer >= 2"),
    ({"spine": 1}, r"spine must be True or False"),
    ({"planes": 0}, r"planes must be an integer >= 1"),
    ({"oversubscription": -1}, r"oversubscription must be a finite number > 0"),
    ({"scale_out": "clos", "tiers": 4}, r"tiers must be one of 2, 3"),
    ({"tech": 5}, r"tech must be None or a non-empty string"),
    ({"name": 5}, r"name must be None or a non-empty string"),
    ({"nodes": 100, "leaf_radix": 4, "tiers": 2},
     r"2 tiers of radix-4 switches reach at most 4 nodes"),
    ({"nodes": 100, "leaf_radix": 4}, r"3 tiers of radix-4 switches reach at most 8 nodes"),
])
def test_cluster_bad_arguments(kw, match):
    args = {"scale_up": nvswitch_like(), "nodes": 2, **kw}
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.cluster(**args)


@pytest.mark.parametrize(("kw", "match"), [
    ({"scalable_units": 0}, r"superpod\(\): scalable_units must be an integer >= 1"),
    ({"node": "dgx"}, r"superpod\(\): node must be a Fabric"),
    ({"node": nvswitch_like(4, split=(2,), rails=[0, 1, 0, 1])},
     r"node must be a server with one GPU per rail"),
    ({"nodes_per_su": 4}, r"nodes_per_su must be an integer >= 1 <= 3"),
    # Rail-only past one leaf per rail is a Clos per rail, one SU (2 nodes) per radix-4 leaf:
    # three tiers reach 4 cores x 2 spine ports down x 2 = 16 nodes, 8 SU; 9 SU are 18.
    ({"spine": False, "scalable_units": 9}, r"rail-only \(spine=False\) builds each rail "
                                            r"as a folded Clos .*3 tiers reach at most 16 "
                                            r"nodes .*got nodes=18"),
    ({"scalable_units": 5}, r"scalable_units must be at most 4 \(three tiers"),
    ({"spine": "yes"}, r"spine must be True or False"),
    ({"switch_model": ""}, r"switch_model must be None or a non-empty string"),
])
def test_superpod_bad_arguments(kw, match):
    args = {"scalable_units": 1, "node": nvswitch_like(2), "nodes_per_su": 2,
            "leaf_radix": 4, **kw}
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.superpod(**args)


def test_real_domains_keep_their_claim_and_symmetric_flow_matches_lp():
    # 2 DGX H100 (too big for verify_symmetry; the claim rests on the proofs above): every
    # GPU reaches its 7 node peers over NVLink and the 8 others through its rail leaf.
    fab = fo.cluster(fo.dgx_h100(), nodes=2, leaf_radix=16)
    assert fab.symmetry is not None
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    lp = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(lp.theta, abs=1e-7)


def test_dgx_b200_cluster_counts():
    # 4 DGX B200: 8 GPUs x 18 NVLink 5 each (docs/hardware.md#nvlink-generations); one 400G NIC per
    # GPU; one 64-port leaf per rail (8) holding 4 servers, so 1:1 takes 4 uplinks each
    # (rail_plan: up = ceil(4 / 1)); 8 x 4 = 32 uplinks fit S = ceil(32 / 64) = 1 spine.
    fab = fo.cluster("dgx_b200", 4).validate()
    assert fab.summary().links_by_tier == {"gpu-nvswitch": 4 * 8 * 18, "gpu-leaf": 32,
                                           "leaf-spine": 8 * 4}
    assert len(switches_with_down(fab, "gpu-leaf")) == 8
    assert len(switches_with_down(fab, "leaf-spine")) == 1


def test_gb200_racks_on_a_fat_tree_straddle_leaves_and_claim_nothing():
    # 144 GPUs on radix-64 leaves of 32 down: ceil(144 / 32) = 5 leaves, spread 28, 29, 29,
    # 29, 29 (5 does not divide 144), and a 72-GPU rack straddles leaves: no claim.
    fab = fo.cluster("gb200_nvl72", 2, scale_out="fat_tree").validate()
    assert fab.symmetry is None
    assert len(switches_with_down(fab, "gpu-leaf")) == 5
    assert all(sum(d["links"] for d in fab.graph.succ[gpu].values() if d["tier"] == "gpu-leaf")
               == 1 for gpu in fab.endpoints)


def test_two_planes_give_each_gpu_a_half_rate_link_into_each_plane():
    fab = fo.cluster("dgx_h100", 2, planes=2).validate()
    g = fab.graph
    for gpu in fab.endpoints:
        nic = {w: d for w, d in g.succ[gpu].items() if d["tier"] == "gpu-leaf"}
        assert [d["capacity"] for d in nic.values()] == [200.0, 200.0]  # 400 Gb/s over 2
        assert {g.nodes[w]["plane"] for w in nic} == {0, 1}


@pytest.mark.parametrize("make", [
    lambda: fo.cluster(nvswitch_like(2), 4, leaf_radix=6, oversubscription=2.0),
    lambda: fo.cluster(nvswitch_like(2), 2, leaf_radix=4, planes=2, oversubscription=3.0),
    lambda: fo.cluster(nvswitch_like(4, (2, 2), [0, 1, 0, 1]), 2, leaf_radix=4, planes=2),
    lambda: fo.cluster(nvswitch_like(2), 4, scale_out="clos", radix=4, oversubscription=3.0),
    lambda: fo.superpod(4, node=nvswitch_like(2), nodes_per_su=1, leaf_radix=4),
])
def test_auto_method_equals_the_lp_and_claims_are_proven(make):
    fab = make().validate()
    if fab.symmetry is not None:
        fo.verify_symmetry(fab)
    auto = fo.max_concurrent_flow(fab, method="auto")
    lp = fo.max_concurrent_flow(fab, method="lp")
    assert auto.theta == pytest.approx(lp.theta, rel=1e-6)


def test_gb200_racks_are_servers_of_four_rails():
    # gb200_nvl72 GPUs carry rail = GPU in tray (0-3): 18 servers (trays) of 4 rails per rack.
    fab = fo.cluster("gb200_nvl72", nodes=2, leaf_radix=72, oversubscription=1.0)
    # 2 racks x 18 trays = 36 servers per rail on one 36-down leaf each: 4 leaves.
    assert len(switches_with_down(fab, "gpu-leaf")) == 4
    assert fab.symmetry is not None  # 18 servers per rack divide 36 per leaf


def test_rail_optimized_scale_up_must_have_gpus_per_node():
    with pytest.raises(fo.InvalidParameterError, match=r"gpus_per_node must equal the GPUs"):
        fo.rail_optimized(nodes=4, gpus_per_node=8, leaf_radix=4, scale_up=nvswitch_like(2))


def test_default_names_tell_oversubscribed_clusters_apart():
    # Two clusters that differ only in oversubscription are two rows of a comparison: their
    # default names must differ (non-blocking keeps the short name; per-tier ratios in order).
    dom = fo.dgx_h100()
    assert fo.cluster(dom, nodes=4).name == "cluster(4 x DGX H100, rail_optimized)"
    assert fo.cluster(dom, nodes=4, oversubscription=2).name == \
        "cluster(4 x DGX H100, rail_optimized, 2:1)"
    assert fo.cluster(dom, nodes=4, scale_out="clos", radix=8, oversubscription=[1, 4]).name \
        == "cluster(4 x DGX H100, clos, 1:1/4:1, radix=8)"  # radix away from its 64 shown
    assert fo.cluster(dom, nodes=4, oversubscription=2, name="mine").name == "mine"


@pytest.mark.parametrize(("kwargs", "suggestion"), [
    ({"nodes": 2, "oversubscripton": 2}, "did you mean 'oversubscription'"),
])
def test_a_misspelt_cluster_word_gets_a_suggestion(kwargs, suggestion):
    # A scale-up domain named one letter short, and a scale-out option misspelt: the error
    # names the closest word (the CLI passes these straight through).
    with pytest.raises(fo.InvalidParameterError, match=suggestion):
        fo.cluster(fo.dgx_h100(), **kwargs)
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'dgx_h100'"):
        fo.cluster("dgx_h10", nodes=2)
