"""Scale-out generators: fat_tree, clos, leaf_spine, rail_optimized."""

import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.generators._builder import FabricBuilder
from fabricopt.generators.wiring import add_rail_scale_out, clos_plan, rail_plan, split_ports


def layer_counts(fab):
    return fab.summary().nodes_by_layer


def undirected(fab):
    return nx.Graph(fab.graph.to_undirected())


def ports_used(fab, v):
    return sum(d["links"] for _, _, d in fab.graph.out_edges(v, data=True))


# -- attribute schema ---------------------------------------------------------------------

SMALL = [
    lambda: fo.fat_tree(4),
    lambda: fo.clos(endpoints=10, radix=4, tiers=3),
    lambda: fo.clos(endpoints=5, radix=4, tiers=2),
    lambda: fo.clos(endpoints=96, radix=16, oversubscription=3.0),
    lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2, links_per_pair=2),
    lambda: fo.rail_optimized(nodes=5, gpus_per_node=2, leaf_radix=6),
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, planes=2),
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, spine=False),
]


@pytest.mark.parametrize("make", SMALL)
def test_attribute_schema_on_every_node_and_arc(make):
    fab = make()
    fab.validate()  # both arcs of every link, capacities > 0, no switch over its radix
    g = fab.graph
    for _, d in g.nodes(data=True):
        assert d["role"] in ("gpu", "switch")
        assert isinstance(d["layer"], int)
        if d["role"] == "switch":
            assert d["layer"] >= 1 and isinstance(d["radix"], int)
            assert d["model"] is None and d["reduce"] is False
        else:
            assert d["layer"] == 0
    for u, v, d in g.edges(data=True):
        assert d["capacity"] > 0 and d["links"] >= 1
        assert d["tier"] in ("gpu-leaf", "leaf-spine", "spine-core")
        # The default technology is the InfiniBand generation of the link rate (a family the
        # cost model prices), or a generic label for rates no generation has.
        assert d["tech"] == {100.0: "edr", 200.0: "hdr", 400.0: "ndr", 800.0: "xdr"}.get(
            d["capacity"] / d["links"], f"{d['capacity'] / d['links']:g}g")
        # A tier joins adjacent layers.
        assert abs(g.nodes[u]["layer"] - g.nodes[v]["layer"]) == 1
    assert fab.endpoints == tuple(fab.gpus)


@pytest.mark.parametrize("make", [
    lambda **kw: fo.fat_tree(4, **kw),
    lambda **kw: fo.clos(endpoints=8, radix=4, **kw),
    lambda **kw: fo.leaf_spine(2, 2, 2, **kw),
    lambda **kw: fo.rail_optimized(4, 2, 4, **kw),
])
def test_tech_and_switch_model_reach_every_arc_and_switch(make):
    fab = make(tech="ndr", switch_model="qm9700")
    assert {d["tech"] for _, _, d in fab.graph.edges(data=True)} == {"ndr"}
    assert {fab.graph.nodes[s]["model"] for s in fab.switches} == {"qm9700"}


# -- fat_tree -----------------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fat_tree_closed_forms(k):
    fab = fo.fat_tree(k).validate()
    s = fab.summary()
    # Al-Fares et al. 2008: k**3/4 hosts; k pods of k/2 edge + k/2 aggregation switches and
    # (k/2)**2 cores, 5k**2/4 switches in all; k**3/4 host links and k**3/4 links in each of
    # the two switch tiers, k**3/2 switch-to-switch links.
    assert s.endpoints == k**3 // 4
    assert len(fab.switches) == 5 * k**2 // 4
    assert s.nodes_by_layer == {0: k**3 // 4, 1: k**2 // 2, 2: k**2 // 2, 3: k**2 // 4}
    assert s.links_by_tier == {"gpu-leaf": k**3 // 4, "leaf-spine": k**3 // 4,
                               "spine-core": k**3 // 4}
    # Every link is a single link (no bundles) and every switch uses all k ports.
    assert {d["links"] for _, _, d in fab.graph.edges(data=True)} == {1}
    assert all(fab.graph.nodes[v]["radix"] == k == ports_used(fab, v) for v in fab.switches)


def test_fat_tree_pods_and_core_wiring():
    k = 6
    fab = fo.fat_tree(k)
    g = fab.graph
    for p in range(k):
        members = [v for v, d in g.nodes(data=True) if d.get("pod") == p]
        layers = [g.nodes[v]["layer"] for v in members]
        # A pod: k/2 edges, k/2 aggregations and (k/2)**2 hosts.
        assert layers.count(0) == (k // 2) ** 2
        assert layers.count(1) == layers.count(2) == k // 2
    # Core (j, m) joins aggregation switch j of every pod (Al-Fares et al., Fig. 3).
    for j in range(k // 2):
        for m in range(k // 2):
            assert set(g.successors(f"core{j}.{m}")) == {f"spine{p}.{j}" for p in range(k)}
    # Edge switches reach every aggregation switch of their own pod only.
    assert {g.nodes[v]["pod"] for v in g.successors("leaf0") if g.nodes[v]["layer"] == 2} == {0}


def test_fat_tree_k2_is_a_path():
    # k = 2: GPU - edge - aggregation - core - aggregation - edge - GPU.
    assert nx.is_isomorphic(undirected(fo.fat_tree(2)), nx.path_graph(7))


@pytest.mark.parametrize("k", [2, 4])
def test_fat_tree_symmetry_claim_holds(k):
    fab = fo.fat_tree(k)
    # Orbits: three tiers, up and down.
    assert fab.symmetry.n_orbits == 6
    fo.verify_symmetry(fab)


def test_fat_tree_is_the_full_three_tier_clos():
    # radix**3/4 endpoints at 1:1 fill every pod of a radix-8 three-tier Clos: the 8-ary
    # fat-tree, switch for switch and link for link.
    a, b = fo.fat_tree(8), fo.clos(endpoints=128, radix=8, tiers=3)
    assert dict(a.graph.nodes(data=True)) == dict(b.graph.nodes(data=True))
    assert sorted(a.graph.edges(data=True)) == sorted(b.graph.edges(data=True))


def test_fat_tree_64_sizes():
    fab = fo.fat_tree(64)
    # 64**3/4 = 65,536 GPUs, 5 * 64**2 / 4 = 5,120 switches; 64**3/4 GPU links plus
    # 64**3/2 = 131,072 switch links = 196,608 links (all single, so 2 arcs each).
    assert len(fab.endpoints) == 65_536 and len(fab.switches) == 5_120
    assert fab.graph.number_of_edges() == 2 * 196_608


# -- clos ---------------------------------------------------------------------------------

@pytest.mark.parametrize("radix, s, down, up", [
    (64, 1.0, 32, 32),    # floor(64 * 1/2) = 32
    (64, 3.0, 48, 16),    # floor(64 * 3/4) = 48
    (64, 2.0, 42, 22),    # floor(42.67) = 42: built ratio 1.91 <= 2
    (64, 1 / 3, 16, 48),  # floor(16) even though 1/3 is inexact in binary
    (5, 1.0, 2, 3),       # odd radix: the odd port goes up
    (2, 1.0, 1, 1),
])
def test_split_ports(radix, s, down, up):
    assert split_ports("clos", radix, s) == (down, up)
    assert down / up <= s + 1e-12


def test_clos_two_tier_full():
    fab = fo.clos(endpoints=2048, radix=64, tiers=2)
    # down = up = 32; 2048 / 32 = 64 leaves, each with one link to each of 32 spines; every
    # spine uses its 64 ports on the 64 leaves: the largest 2-tier size, 64 * 32.
    assert layer_counts(fab) == {0: 2048, 1: 64, 2: 32}
    assert fab.summary().links_by_tier == {"gpu-leaf": 2048, "leaf-spine": 2048}
    assert all(ports_used(fab, v) == 64 for v in fab.switches)
    assert fab.symmetry is not None


def test_clos_two_tier_bundles_when_few_leaves():
    fab = fo.clos(endpoints=96, radix=64)
    # 3 leaves of 32 endpoints and 32 uplinks: spines S = smallest divisor of 32 with
    # 64 S >= 3 * 32, so S = 2 and every leaf-spine pair is a bundle of 32 / 2 = 16 links.
    assert layer_counts(fab) == {0: 96, 1: 3, 2: 2}
    assert fab.graph["leaf0"]["spine1"]["links"] == 16
    assert fab.graph["leaf0"]["spine1"]["capacity"] == 16 * 400
    assert ports_used(fab, "spine0") == 48  # 3 leaves x 16


def test_clos_oversubscribed():
    fab = fo.clos(endpoints=96, radix=16, oversubscription=3.0)
    # down = floor(16 * 3/4) = 12, up = 4; 96 / 12 = 8 leaves; S = smallest divisor of 4 with
    # 16 S >= 8 * 4, so 2 spines and bundles of 2 links.
    assert layer_counts(fab) == {0: 96, 1: 8, 2: 2}
    assert fab.graph["leaf3"]["spine0"]["links"] == 2
    # The 3:1 leaf: 12 x 400 Gb/s down, 4 x 400 Gb/s up.
    assert fab.injection_gbps("leaf3") == 16 * 400


def test_clos_three_tier_matches_superpod_switch_counts():
    fab = fo.clos(endpoints=4096, radix=64, tiers=3)
    # 128 leaves of 32; pods of 32 leaves, so 4 pods of 32 spines = 128 spines; spine j of each
    # pod sends 32 links to core group j of C switches, C = smallest divisor of 32 with
    # 64 C >= 4 * 32, so C = 2 with bundles of 16: 32 groups x 2 = 64 cores. The NVIDIA
    # SuperPOD of 16 SU (4,096 GPUs) lists the same 128 leaf / 128 spine / 64 core
    # (docs/hardware.md#dgx-superpod).
    assert layer_counts(fab) == {0: 4096, 1: 128, 2: 128, 3: 64}
    assert fab.graph["spine0.0"]["core0.1"]["links"] == 16
    assert fab.symmetry is not None


def test_clos_three_tier_maximum_is_radix_cubed_over_four():
    # radix 8 at 1:1: 8 pods x 4 leaves x 4 endpoints = 8**3 / 4 = 128.
    assert len(fo.clos(endpoints=8**3 // 4, radix=8, tiers=3).endpoints) == 128
    with pytest.raises(fo.InvalidParameterError,
                       match=r"3 tiers of radix-8 switches reach at most 128 endpoints"):
        fo.clos(endpoints=129, radix=8, tiers=3)


def test_clos_three_tier_bundled_core():
    fab = fo.clos(endpoints=8, radix=4, tiers=3)
    # down = 2: 4 leaves, 2 per pod, so 2 pods of 2 spines; core group j: C = smallest divisor
    # of 2 with 4 C >= 2 * 2, so one core per group joined to each pod by 2 links.
    assert layer_counts(fab) == {0: 8, 1: 4, 2: 4, 3: 2}
    assert fab.graph["spine1.0"]["core0.0"]["links"] == 2
    fo.verify_symmetry(fab)


def test_clos_partial_leaf_and_pod():
    fab = fo.clos(endpoints=5, radix=4)
    # down = 2: ceil(5 / 2) = 3 leaves, the endpoints spread evenly (i * 5 // 3 = 0, 1, 3, 5):
    # 1, 2, 2 endpoints, plus 2 uplinks each; S = smallest divisor of 2 with 4 S >= 3 * 2,
    # so 2.
    assert layer_counts(fab) == {0: 5, 1: 3, 2: 2}
    assert [ports_used(fab, f"leaf{i}") for i in range(3)] == [3, 4, 4]
    assert fab.symmetry is None
    fab = fo.clos(endpoints=10, radix=4, tiers=3)
    # 5 leaves, 2 per pod: pods of 2, 2, 1 leaves; 3 pods x 2 spines; core groups of
    # C = smallest divisor of 2 with 4 C >= 3 * 2, so 2: 4 cores.
    assert layer_counts(fab) == {0: 10, 1: 5, 2: 6, 3: 4}
    assert fab.symmetry is None


def test_clos_spreads_endpoints_evenly_and_keeps_its_claim():
    # 12 endpoints, radix 8 at 2:1: down = floor(8 x 2 / 3) = 5; ceil(12 / 5) = 3
    # leaves of 4 endpoints (not 5 + 5 + 2), so all leaves are alike; 2:1 on 4 endpoints is
    # up = 2 uplinks (the eighth port idle); S = ceil(3 x 2 / 8) = 1 spine.
    fab = fo.clos(endpoints=12, radix=8, oversubscription=2.0)
    assert layer_counts(fab) == {0: 12, 1: 3, 2: 1}
    assert [ports_used(fab, f"leaf{i}") for i in range(3)] == [6, 6, 6]
    assert fab.params["oversubscription_built"] == 2.0
    fo.verify_symmetry(fab)


def test_clos_one_pod_is_two_tiers_and_one_leaf_is_a_star():
    # 4 endpoints on radix 4 need 2 leaves = one pod: the core would carry nothing.
    a, b = fo.clos(endpoints=4, radix=4, tiers=3), fo.clos(endpoints=4, radix=4, tiers=2)
    assert sorted(a.graph.edges) == sorted(b.graph.edges)
    # Up to 4 endpoints fit one radix-8 leaf at 1:1: a star.
    fab = fo.clos(endpoints=3, radix=8, tiers=3)
    assert nx.is_isomorphic(undirected(fab), nx.star_graph(3))
    fo.verify_symmetry(fab)


@pytest.mark.parametrize("kwargs", [
    {"endpoints": 8, "radix": 4},
    {"endpoints": 6, "radix": 4},                  # 3 full leaves, 2 spines
    {"endpoints": 12, "radix": 4, "oversubscription": 3.0},
    {"endpoints": 24, "radix": 4, "tiers": 3, "oversubscription": 3.0},
])
def test_clos_symmetry_claims_hold(kwargs):
    fo.verify_symmetry(fo.clos(**kwargs))


def test_clos_plan_closed_forms():
    # 2 tiers of radix 64 at 1:1: 64 leaves, 32 spines, one link per pair.
    p = clos_plan("clos", 2048, 64, 2, 1.0)
    assert (p.tiers, p.leaves, p.spines, p.leaf_spine_links) == (2, 64, 32, 1)
    # 3 tiers radix 64 at 1:1 full: 64 pods x 32 leaves, 32 spines per pod, 32 x 32 cores.
    p = clos_plan("clos", 64**3 // 4, 64, 3, 1.0)
    assert (p.pods, p.leaves, p.spines, p.cores_per_group, p.spine_core_links) == (
        64, 2048, 32, 32, 1)
    # Al-Fares et al.: 5 k**2 / 4 switches, the leaves, the spines of every pod and the cores.
    assert p.leaves + p.pods * p.spines + p.spines * p.cores_per_group == 5 * 64**2 // 4


# -- leaf_spine ---------------------------------------------------------------------------

def test_leaf_spine_counts_and_radix():
    fab = fo.leaf_spine(leaves=8, spines=4, endpoints_per_leaf=8, links_per_pair=2)
    # 8 x 8 GPUs; leaf radix 8 + 4 x 2 = 16; spine radix 8 x 2 = 16; 8 x 4 bundles of 2 links.
    assert layer_counts(fab) == {0: 64, 1: 8, 2: 4}
    assert fab.summary().links_by_tier == {"gpu-leaf": 64, "leaf-spine": 64}
    assert fab.graph.nodes["leaf0"]["radix"] == 16 == fab.graph.nodes["spine0"]["radix"]
    assert fab.graph["leaf7"]["spine3"] == {"capacity": 800.0, "links": 2, "tech": "ndr",
                                            "tier": "leaf-spine"}
    # Switches alone: the complete bipartite graph K(8, 4).
    switches = fab.graph.subgraph(fab.switches).to_undirected()
    assert nx.is_isomorphic(switches, nx.complete_bipartite_graph(8, 4))


def test_leaf_spine_one_leaf_is_a_star():
    # One leaf with 2 GPUs and 3 spines: a star with 5 rays.
    assert nx.is_isomorphic(undirected(fo.leaf_spine(1, 3, 2)), nx.star_graph(5))


def test_leaf_spine_symmetry_claim_holds():
    fab = fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2, links_per_pair=2)
    assert fab.symmetry.n_orbits == 4
    fo.verify_symmetry(fab)


# -- rail_optimized -----------------------------------------------------------------------

def test_rail_optimized_32_nodes():
    fab = fo.rail_optimized(nodes=32)
    # 64-port leaves at 1:1: 32 down, 32 up. Each rail needs ceil(32 / 32) = 1 leaf, so 8
    # leaves; spines S = smallest divisor of 32 with 64 S >= 8 x 32, so 4, each leaf joined to
    # each spine by 32 / 4 = 8 links, every spine using 8 x 8 = 64 ports.
    assert layer_counts(fab) == {0: 256, 1: 8, 2: 4}
    assert fab.graph["r3.l0"]["s2"]["links"] == 8
    assert all(ports_used(fab, v) == 64 for v in fab.switches)
    fab.validate()


@pytest.mark.parametrize("nodes, leaves, spines", [(64, 16, 8), (128, 32, 16), (256, 64, 32)])
def test_rail_optimized_matches_superpod_two_tier_table(nodes, leaves, spines):
    # NVIDIA DGX SuperPOD (B200 RA, QM9700): 2, 4, 8 SU of 32 nodes
    # (docs/hardware.md#dgx-superpod), with as many leaf-spine cables as node-leaf cables (= GPUs).
    fab = fo.rail_optimized(nodes=nodes, switch_model="qm9700")
    assert layer_counts(fab) == {0: 8 * nodes, 1: leaves, 2: spines}
    assert fab.summary().links_by_tier == {"gpu-leaf": 8 * nodes, "leaf-spine": 8 * nodes}


def test_rail_optimized_gpus_and_rails():
    fab = fo.rail_optimized(nodes=5, gpus_per_node=2, leaf_radix=6)
    g = fab.graph
    # down = 3: ceil(5 / 3) = 2 leaves per rail, the nodes spread evenly: 0-1 under
    # leaf 0, 2-4 under leaf 1; up = ceil(3 / 1) = 3 uplinks on each of 4 leaves, so
    # S = ceil(4 x 3 / 6) = 2 spines, bundles of 2 and 1 links in turn.
    assert layer_counts(fab) == {0: 10, 1: 4, 2: 2}
    assert g.nodes["n4.g1"] == {"role": "gpu", "layer": 0, "node": 4, "rail": 1}
    assert list(g.successors("n4.g1")) == ["r1.l1"]
    assert g.nodes["r1.l1"]["rail"] == 1 and g.nodes["r1.l1"]["plane"] == 0
    assert all(g.nodes[next(iter(g.successors(e)))]["rail"] == g.nodes[e]["rail"]
               for e in fab.endpoints)
    assert [sum(g.nodes[u]["role"] == "gpu" for u in g.predecessors(f"r0.l{i}"))
            for i in (0, 1)] == [2, 3]
    assert fab.symmetry is None  # leaves of 2 and 3 nodes differ


def test_rail_optimized_two_planes():
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, planes=2)
    g = fab.graph
    # Each NIC splits 400 Gb/s into two 200 Gb/s links, one per plane, same injection.
    assert sorted(g.successors("n0.g0")) == ["p0.r0.l0", "p1.r0.l0"]
    assert {d["capacity"] for _, _, d in g.edges(data=True)} == {200.0}
    assert fab.injection_gbps("n0.g0") == 400.0
    # Each plane: 2 rails x 2 leaves and 2 spines; planes never meet in the network.
    assert layer_counts(fab) == {0: 8, 1: 8, 2: 4}
    for plane in (0, 1):
        spines = [v for v, d in g.nodes(data=True) if d["layer"] == 2 and d["plane"] == plane]
        assert {g.nodes[u]["plane"] for s in spines for u in g.successors(s)} == {plane}


def test_rail_only_leaves_rails_apart():
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, spine=False,
                            oversubscription=3.0)  # ignored with one leaf per rail
    # All 4 leaf ports face GPUs: one leaf per rail, 2 stars of 4 GPUs, no path between.
    # (More servers than a leaf holds make each rail a Clos of its own: test_rail_only.py.)
    assert layer_counts(fab) == {0: 8, 1: 2}
    assert nx.number_weakly_connected_components(fab.graph) == 2
    assert sorted(d for v, d in fab.graph.out_degree() if v.startswith("r")) == [4, 4]
    fo.verify_symmetry(fab)


def test_rail_leaves_share_servers_evenly_and_claim_symmetry_only_when_equal():
    # 128 servers, 64-port leaves at 2:1: down = floor(64 x 2 / 3) = 42, up = 22, so
    # ceil(128 / 42) = 4 leaves per rail holding 32 servers each (not 42 + 42 + 42 + 2).
    fab = fo.rail_optimized(nodes=128, leaf_radix=64, oversubscription=2.0)
    g = fab.graph
    downs = {sum(1 for u in g.predecessors(v) if g.nodes[u]["role"] == "gpu")
             for v, d in g.nodes(data=True) if d["layer"] == 1}
    assert downs == {32} and fab.symmetry is not None
    # 7 servers on 6-port leaves at 1:1: down = 3, ceil(7 / 3) = 3 leaves of 2, 2 and 3
    # servers per rail, so no claim.
    assert fo.rail_optimized(nodes=7, gpus_per_node=2, leaf_radix=6).symmetry is None
    small = fo.rail_optimized(nodes=6, gpus_per_node=2, leaf_radix=5, oversubscription=4.0)
    # down = floor(5 x 4 / 5) = 4, up = 1: ceil(6 / 4) = 2 leaves of 3 servers per rail.
    fo.verify_symmetry(small)


@pytest.mark.parametrize("kwargs", [
    {"spine": False, "leaf_radix": 5},
    {"spine": True, "leaf_radix": 16},
])
def test_rail_optimized_single_rail_single_leaf_is_a_star(kwargs):
    # One GPU per node, 5 nodes, one leaf (5 <= 5 down ports rail-only, 5 <= 8 at 1:1): no
    # spine is built above a single leaf.
    fab = fo.rail_optimized(nodes=5, gpus_per_node=1, **kwargs)
    assert nx.is_isomorphic(undirected(fab), nx.star_graph(5))


@pytest.mark.parametrize("kwargs", [
    {},
    {"spine": False},
    {"planes": 2},
    {"spine": False, "planes": 2},
    {"nodes": 2, "gpus_per_node": 3, "leaf_radix": 8},  # one half-full leaf per rail
])
def test_rail_optimized_symmetry_claims_hold(kwargs):
    args = {"nodes": 4, "gpus_per_node": 2, "leaf_radix": 4, **kwargs}
    fab = fo.rail_optimized(**args)
    assert fab.symmetry is not None
    fo.verify_symmetry(fab)


def test_rail_optimized_too_big_names_largest_size():
    # 64 leaves of 32 down ports: 8 per rail, 8 x 32 = 256 nodes; three tiers hold
    # 64 pods x 32 leaves = 2048 leaves, 256 per rail, 256 x 32 = 8192 nodes.
    with pytest.raises(fo.InvalidParameterError,
                       match=r"reach at most 256 nodes of 8 GPUs at oversubscription 1.0; "
                             r"three tiers \(tiers=3\) reach 8192"):
        fo.rail_optimized(nodes=257, tiers=2)


def test_rail_scale_out_attaches_above_existing_devices():
    # A cluster hangs the rails below the NIC side of GPUs that sit in scale-up domains.
    b = FabricBuilder("demo", {})
    attach = []
    for n in range(2):
        gpus = [b.gpu(f"n{n}.g{r}", node=n, rail=r) for r in range(2)]
        nvs = b.switch(f"n{n}.nvs", 1, 2)
        for gpu in gpus:
            b.link(gpu, nvs, 200.0, "gpu-nvswitch", "nvlink4")
        attach.append(gpus)
    leaves = add_rail_scale_out(b, attach, rail_plan("demo", 2, 2, 4, True, 1.0), 400.0, "400g")
    fab = b.build().validate()
    # One plane, one leaf per rail (2 servers on 2 down ports), one spine above them.
    assert leaves == [[["r0.l0"], ["r1.l0"]]]
    assert fab.graph.nodes["r0.l0"]["layer"] == 1 and fab.graph.nodes["s0"]["layer"] == 2
    assert nx.is_weakly_connected(fab.graph)


def test_rail_optimized_scale_up_must_be_a_domain():
    # A Fabric delegates to fo.cluster (tests/generators/test_generators_cluster.py); a name
    # does not.
    with pytest.raises(fo.InvalidParameterError, match=r"scale_up must be a Fabric"):
        fo.rail_optimized(nodes=4, scale_up="dgx_h1000")


# -- bad arguments ------------------------------------------------------------------------

@pytest.mark.parametrize("func, kwargs, match", [
    (fo.fat_tree, {"k": 5}, r"fat_tree\(\): k must be an even integer >= 2, got 5"),
    (fo.fat_tree, {"k": 0}, "k must be an even integer >= 2"),
    (fo.fat_tree, {"k": 4.0}, "k must be an even integer"),
    (fo.fat_tree, {"k": 4, "link_gbps": 0}, "link_gbps must be a finite number > 0"),
    (fo.fat_tree, {"k": 4, "tech": 3}, "tech must be None or a non-empty string"),
    (fo.clos, {"endpoints": 0, "radix": 8}, "endpoints must be an integer >= 1"),
    (fo.clos, {"endpoints": 8, "radix": 1}, "radix must be an integer >= 2"),
    (fo.clos, {"endpoints": 8, "radix": 8, "tiers": 4}, "tiers must be one of 2, 3"),
    (fo.clos, {"endpoints": 8, "radix": 8, "oversubscription": 0},
     "oversubscription must be a finite number > 0"),
    (fo.clos, {"endpoints": 8, "radix": 8, "oversubscription": -1.0},
     "oversubscription must be a finite number > 0"),
    (fo.clos, {"endpoints": 8, "radix": 4, "oversubscription": 0.2},
     "leaves no leaf port for endpoints"),  # floor(4 * 0.2 / 1.2) = 0
    (fo.clos, {"endpoints": 8, "radix": 8, "link_gbps": -400},
     "link_gbps must be a finite number > 0"),
    (fo.clos, {"endpoints": 8, "radix": 8, "switch_model": ""},
     "switch_model must be None or a non-empty string"),
    (fo.clos, {"endpoints": 5000, "radix": 64},
     r"clos\(\): 2 tiers of radix-64 switches reach at most 2048 endpoints at "
     r"oversubscription 1.0, got endpoints=5000"),
    # 3:1 on radix 64: 48 down, 64 leaves, 3072 endpoints.
    (fo.clos, {"endpoints": 3073, "radix": 64, "oversubscription": 3.0},
     "reach at most 3072 endpoints at oversubscription 3.0"),
    (fo.leaf_spine, {"leaves": 0, "spines": 2, "endpoints_per_leaf": 2},
     "leaves must be an integer >= 1"),
    (fo.leaf_spine, {"leaves": 2, "spines": 0, "endpoints_per_leaf": 2},
     "spines must be an integer >= 1"),
    (fo.leaf_spine, {"leaves": 2, "spines": 2, "endpoints_per_leaf": 0},
     "endpoints_per_leaf must be an integer >= 1"),
    (fo.leaf_spine, {"leaves": 2, "spines": 2, "endpoints_per_leaf": 2, "links_per_pair": 0},
     "links_per_pair must be an integer >= 1"),
    (fo.leaf_spine, {"leaves": 2, "spines": 2, "endpoints_per_leaf": 2, "link_gbps": 0},
     "link_gbps must be a finite number > 0"),
    (fo.rail_optimized, {"nodes": 0}, "nodes must be an integer >= 1"),
    (fo.rail_optimized, {"nodes": 4, "gpus_per_node": 0}, "gpus_per_node must be an integer"),
    (fo.rail_optimized, {"nodes": 4, "leaf_radix": 1}, "leaf_radix must be an integer >= 2"),
    (fo.rail_optimized, {"nodes": 4, "spine": 1}, "spine must be True or False"),
    (fo.rail_optimized, {"nodes": 4, "oversubscription": 0},
     "oversubscription must be a finite number > 0"),
    (fo.rail_optimized, {"nodes": 4, "planes": 0}, "planes must be an integer >= 1"),
    (fo.rail_optimized, {"nodes": 4, "nic_gbps": 0}, "nic_gbps must be a finite number > 0"),
    # 8 rails on 4-port switches: not one leaf per rail fits under a shared spine layer;
    # three tiers hold 4 pods x 2 leaves = 8 leaves, one per rail of 2 down ports: 2 nodes.
    (fo.rail_optimized, {"nodes": 1, "leaf_radix": 4, "tiers": 2},
     "reach at most 0 nodes of 8 GPUs"),
    (fo.rail_optimized, {"nodes": 3, "leaf_radix": 4}, "3 tiers of radix-4 switches reach "
     "at most 2 nodes of 8 GPUs"),
    (fo.rail_optimized, {"nodes": 3, "tiers": 4}, "tiers must be one of"),
])
def test_bad_arguments(func, kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        func(**kwargs)


# -- registry and command line ------------------------------------------------------------

def test_registered_and_exported():
    for name in ("fat_tree", "clos", "leaf_spine", "rail_optimized"):
        assert fo.GENERATORS[name] is getattr(fo, name) and name in fo.__all__


def test_cli_show_fat_tree(capsys):
    assert main(["show", "fat_tree", "k=8"]) == 0
    out = capsys.readouterr().out
    # 8**3/4 = 128 GPUs, 5 * 8**2 / 4 = 80 switches, 8**3/4 = 128 links per tier.
    assert "endpoints   128" in out
    assert "gpu: 128, switch: 80" in out
    assert "layers      0: 128, 1: 32, 2: 32, 3: 16" in out


def test_cli_show_rail_optimized(capsys):
    assert main(["show", "rail_optimized", "nodes=32"]) == 0
    out = capsys.readouterr().out
    # 32 x 8 = 256 GPUs; 8 leaves and 4 spines (derivation in test_rail_optimized_32_nodes).
    assert "endpoints   256" in out
    assert "gpu: 256, switch: 12" in out
    assert "layers      0: 256, 1: 8, 2: 4" in out


def test_cli_show_too_big_clos_fails_cleanly(capsys):
    assert main(["show", "clos", "endpoints=5000", "radix=64"]) == 2
    assert "reach at most 2048 endpoints" in capsys.readouterr().err


# -- per-tier radix and oversubscription ------------------------------------------------------

def test_clos_per_tier_closed_forms():
    # Leaves radix 4 at 1:1 (2 down, 2 up); spines radix 6 at 5:1: down floor(6*5/6) = 5
    # leaves per pod, up min(1, ceil(5/5)) = 1; 20 GPUs = 10 leaves = 2 pods of 2 spines;
    # one core per spine index (C = 1 divides u = 1, C * 4 >= 2 pods * 1).
    fab = fo.clos(endpoints=20, radix=[4, 6, 4], tiers=3, oversubscription=[1, 5]).validate()
    assert fab.summary().nodes_by_layer == {0: 20, 1: 10, 2: 4, 3: 2}
    assert {fab.graph.nodes[v]["radix"] for v in fab.switches if v.startswith("spine")} == {6}
    assert {fab.graph.nodes[v]["radix"] for v in fab.switches if v.startswith("core")} == {4}
    assert fab.summary().links_by_tier == {"gpu-leaf": 20, "leaf-spine": 20, "spine-core": 4}
    fo.verify_symmetry(fab)
    # Meta-style zones: 32 GPUs per 64-port leaf, 96 leaves per 110-port spine (7:1 gives
    # floor(110 * 7 / 8) = 96 down, min(14, ceil(96 / 7)) = 14 up): a zone of 3,072 GPUs;
    # 8 zones, 2 cores per spine index (C * 64 >= 8 * 14), 7 links per spine-core pair.
    p = clos_plan("clos", 8 * 3072, [64, 110, 64], 3, [1.0, 7.0])
    assert (p.down, p.leaves_per_pod, p.pods, p.spines) == (32, 96, 8, 32)
    assert (p.cores_per_group, p.spine_core_links) == (2, 7)


def test_clos_single_values_keep_the_uniform_plan():
    # One radix and one ratio mean the same as the per-tier form with a 1:1 spine.
    a = clos_plan("clos", 10, 4, 3, 1.0)
    b = clos_plan("clos", 10, [4, 4, 4], 3, [1.0, 1.0])
    assert a == b


@pytest.mark.parametrize(("kw", "match"), [
    ({"radix": [4, 4]}, r"radix must be a sequence of integers >= 2 of length 3"),
    ({"radix": [4, 1, 4]}, r"radix must be a sequence of integers >= 2"),
    ({"oversubscription": [1.0]}, r"oversubscription must be a number > 0 or a sequence of 2"),
    ({"oversubscription": [1.0, 0.0]}, r"oversubscription must be a finite number > 0"),
])
def test_clos_per_tier_bad_arguments(kw, match):
    args = {"endpoints": 8, "radix": 4, "tiers": 3, **kw}
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.clos(**args)
def test_a_tier_not_built_is_recorded():
    """tiers=3 over one pod builds a leaf-spine (a core above one pod's spines would carry
    nothing): 64 endpoints at radix 16 are 8 leaves of 8 down, one pod (a radix-16 spine
    takes 8 leaves down), so two tiers are built and params say so."""
    fab = fo.clos(64, radix=16, tiers=3)
    assert fab.params["tiers"] == 3 and fab.params["tiers_built"] == 2
    assert {d["layer"] for _, d in fab.graph.nodes(data=True) if d["role"] == "switch"} == {1, 2}
    # 16 DGX H100 (128 GPUs) at the default radix 64 are one pod too; 4,096 GPUs are not.
    small = fo.cluster(fo.dgx_h100(), nodes=16, scale_out="clos", tiers=3)
    assert small.params["tiers_built"] == 2
    assert "tiers_built" not in fo.clos(64, radix=16, tiers=2).params
