"""Independent cross-checks of clusters, SuperPODs, design files and the cost model.

Counts are recomputed from the graph (switches by layer, links per tier) and compared with
NVIDIA's SuperPOD table (hardware reference section 2.2, B200 RA, V); bills of materials are
recomputed by hand from the shipped catalog (fabricopt/data/catalog.toml). The tests named
after a bug pin down what review found (now fixed).
"""

import math
import os
from collections import Counter

import pytest
from small_fabrics import nvswitch_like

import fabricopt as fo
from fabricopt.cost import Catalog, MediaSelector, Policy
from fabricopt.errors import DesignFileError, FabricOptError

nvs = nvswitch_like  # a small NVSwitch-style node (twin GPUs)


def network_switches_by_layer(fab):
    """Scale-out switches (not inside a node copy) counted by layer."""
    g = fab.graph
    return Counter(d["layer"] for v, d in g.nodes(data=True)
                   if d["role"] == "switch" and not str(v).startswith("n"))


def links_up_by_tier(fab):
    """Physical links per tier, counted from arcs that go up a layer (each link once)."""
    g = fab.graph
    out = Counter()
    for u, v, d in g.edges(data=True):
        if g.nodes[v]["layer"] > g.nodes[u]["layer"]:
            out[d["tier"]] += d["links"]
    return out


# -- SuperPOD against NVIDIA's table -----------------------------------------------------------

# docs/hardware.md#dgx-superpod (V): SU -> leaf, spine, core; cables node-leaf = leaf-spine = GPUs
# (= SU x 32 nodes x 8 rails); spine-core = GPUs from 16 SU, none below.
TABLE = [(2, 16, 8, 0), (4, 32, 16, 0), (8, 64, 32, 0), (16, 128, 128, 64),
         (32, 256, 256, 128), (64, 512, 512, 256)]


@pytest.mark.parametrize(("su", "leaf", "spine", "core"), TABLE)
def test_superpod_switches_and_cables_match_nvidia_table(su, leaf, spine, core):
    fab = fo.superpod(su)
    gpus = su * 32 * 8
    layers = network_switches_by_layer(fab)
    assert (layers[1], layers[2], layers[3]) == (leaf, spine, core)
    tiers = links_up_by_tier(fab)
    assert tiers["gpu-leaf"] == gpus and tiers["leaf-spine"] == gpus
    assert tiers["spine-core"] == (gpus if core else 0)
    # DGX H100: 18 NVLinks per GPU (docs/hardware.md#nvlink-generations, V), 4 NVSwitch per node.
    assert tiers["gpu-nvswitch"] == 18 * gpus


@pytest.mark.parametrize("su", [2, 16])
def test_superpod_every_gpu_nvlinks_one_nic_rail_aligned_no_switch_over_radix(su):
    fab = fo.superpod(su)
    g = fab.graph
    for v in fab.endpoints:
        nv = sum(d["links"] for d in g.succ[v].values() if d["tier"] == "gpu-nvswitch")
        nic = [(w, d) for w, d in g.succ[v].items() if d["tier"] == "gpu-leaf"]
        assert nv == 18
        assert len(nic) == 1 and nic[0][1]["links"] == 1 and nic[0][1]["capacity"] == 400.0
        leaf = nic[0][0]
        # Rail alignment, and every leaf holds one SU's rail (docs/hardware.md#dgx-superpod).
        assert g.nodes[leaf]["rail"] == g.nodes[v]["rail"]
        assert g.nodes[leaf]["su"] == g.nodes[v]["su"]
    for v, d in g.nodes(data=True):
        if d["role"] == "switch":
            assert sum(a["links"] for a in g.succ[v].values()) <= d["radix"]


# -- odd inputs ------------------------------------------------------------------------------

def test_dgx_b200_cluster_counts():
    # 4 DGX B200: 8 GPUs x 18 NVLink 5 each (docs/hardware.md#nvlink-generations); one 400G
    # NIC per GPU; one 64-port leaf per rail (8), 32 uplinks each over 4 spines (rail_plan:
    # smallest divisor S of 32 with 64 S >= 8 x 32).
    fab = fo.cluster("dgx_b200", 4).validate()
    assert fab.summary().links_by_tier == {"gpu-nvswitch": 4 * 8 * 18, "gpu-leaf": 32,
                                           "leaf-spine": 8 * 32}
    assert network_switches_by_layer(fab) == Counter({1: 8, 2: 4})


def test_gb200_fat_tree_is_valid_and_claims_nothing():
    # 144 GPUs on radix-64 leaves of 32 down: ceil(144 / 32) = 5 leaves, spread 28, 29, 29,
    # 29, 29 (5 does not divide 144), and a 72-GPU rack straddles leaves: no claim.
    fab = fo.cluster("gb200_nvl72", 2, scale_out="fat_tree").validate()
    assert fab.symmetry is None
    assert network_switches_by_layer(fab)[1] == math.ceil(144 / 32)
    nic = Counter(sum(d["links"] for d in fab.graph.succ[v].values() if d["tier"] == "gpu-leaf")
                  for v in fab.endpoints)
    assert nic == Counter({1: 144})


def test_two_planes_give_two_nic_links_of_half_rate():
    fab = fo.cluster("dgx_h100", 2, planes=2).validate()
    g = fab.graph
    for v in fab.endpoints:
        nic = [d for d in g.succ[v].values() if d["tier"] == "gpu-leaf"]
        assert [d["capacity"] for d in nic] == [200.0, 200.0]  # 400 Gb/s NIC over 2 planes
        planes = {g.nodes[w]["plane"] for w, d in g.succ[v].items() if d["tier"] == "gpu-leaf"}
        assert planes == {0, 1}


def test_nodes_not_dividing_among_leaves_claim_nothing():
    # 3 nodes on leaves of 2 down ports: ceil(3 / 2) = 2 leaves per rail holding 1 and 2.
    assert fo.cluster(nvs(2), 3, leaf_radix=4).symmetry is None


SMALL = [
    lambda: fo.cluster(nvs(2), 4, leaf_radix=6, oversubscription=2.0),
    lambda: fo.cluster(nvs(2), 2, leaf_radix=4, planes=2, oversubscription=3.0),
    lambda: fo.cluster(nvs(4, (2, 2), [0, 1, 0, 1]), 2, leaf_radix=4, planes=2),
    lambda: fo.cluster(nvs(2), 4, scale_out="clos", radix=4, oversubscription=3.0),
    lambda: fo.superpod(4, node=nvs(2), nodes_per_su=1, leaf_radix=4),
]


@pytest.mark.parametrize("make", SMALL)
def test_auto_equals_lp_and_claims_are_proven(make):
    fab = make().validate()
    if fab.symmetry is not None:
        fo.verify_symmetry(fab)
    auto = fo.max_concurrent_flow(fab, method="auto")
    lp = fo.max_concurrent_flow(fab, method="lp")
    assert auto.theta == pytest.approx(lp.theta, rel=1e-6)


# -- design files ----------------------------------------------------------------------------

BAD_DESIGNS = [
    ("", "family"),
    ('family = "ring"\nbogus = 1\n', "bogus"),
    ('family = ["ring"]\n', "family"),
    ('family = "rng"\n', "family"),
    ('family = "ring"\nname = 3\n', "name"),
    ('family = "ring"\nparams = [1]\n', "params"),
    ('family = "ring"\n[params]\nm = 4\n', "'m'"),
    ('family = "ring"\n[params]\nn = "four"\n', "n must"),
    ('family = "ring"\n[sweep]\nn = 4\n', "'n'"),
    ('family = "ring"\n[sweep]\nn = []\n', "'n'"),
    ('family = "ring"\nsweep = [4]\n', "sweep"),
    ('family = "ring"\n[params]\nn = 4\n[sweep]\nn = [4, 8]\n', "'n'"),
    ('family = "ring\n', "TOML"),
    ('family = "cluster"\n[params]\nscale_up = "dgx_h10"\nnodes = 2\n', "scale_up"),
    ('family = "cluster"\n[params]\nscale_up = {family = "ring", x = 1}\nnodes = 2\n',
     "scale_up"),
    ('family = "cluster"\n[params]\nscale_up = "dgx_h100"\nnodes = 2\nleaf_radx = 4\n',
     "leaf_radx"),
    ('family = "superpod"\n[params]\nscalable_units = 0\n', "scalable_units"),
    ('family = "clos"\n[params]\nendpoints = 4\n', "radix"),
]


@pytest.mark.parametrize(("text", "key"), BAD_DESIGNS)
def test_bad_design_file_names_file_and_key(tmp_path, text, key):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(DesignFileError, match="bad.toml") as info:
        fo.load_design(path)
    assert key in str(info.value)


def test_non_utf8_design_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'family = "ring"\nname = "caf\xe9"\n[params]\nn = 4\n')
    with pytest.raises(DesignFileError, match="latin1.toml"):
        fo.load_design(path)


def test_bad_layout_key_is_caught_when_the_file_loads(tmp_path):
    path = tmp_path / "lay.toml"
    path.write_text('family = "ring"\n[params]\nn = 4\n[layout]\nleaf_placment = "central"\n')
    with pytest.raises(DesignFileError, match="lay.toml.*leaf_placment"):
        fo.load_design(path)


def test_shipped_designs_load():
    here = os.path.join(os.path.dirname(__file__), "..", "topologies")
    for f in sorted(os.listdir(here)):
        if f.endswith(".toml") and "16su" not in f and "meta" not in f:
            assert fo.load_design(os.path.join(here, f))


# -- cost: hand-computed bills of materials ---------------------------------------------------

def test_leaf_spine_2_1_2_bom_by_hand():
    # Catalog: qm9700 $30,000 / 747 W (cheapest infiniband-or-ethernet switch with >= 3
    # ports at 400G; sn5600 is $150k); cx7 1 x 400G $1,599 / 20 W.
    # Layout defaults: 4 GPUs in one rack, leaves top of rack -> GPU-leaf links 2.0 m
    # (in_rack_m) -> dac_800g (reach 2 m), half a twin-port cable per 400G link ($125 < dac_400g
    # $150): 4 links -> 2 cables x $250, 0.1 W per end. Spine in the central row 3 m away
    # (row_pitch_m) + 4 m slack = 7 m -> aec_800g (reach 7 m), 2 links -> 1 cable x $800,
    # 2 x 9 W.
    est = fo.estimate_cost(fo.leaf_spine(2, 1, 2))
    rows = {(r.component, r.kind, r.detail): r.count for r in est.bom}
    assert rows == {("qm9700", "switch", ""): 3, ("cx7", "nic", ""): 4,
                    ("dac_800g", "cable", "2 m"): 2, ("aec_800g", "cable", "7 m"): 1}
    assert est.capex_usd == pytest.approx(3 * 30000 + 4 * 1599 + 2 * 250 + 800)
    assert est.power_w == pytest.approx(3 * 747 + 4 * 20 + 2 * 2 * 0.1 + 2 * 9)
    assert est.per_endpoint_usd == pytest.approx(est.capex_usd / 4)
    # Leaves have 2 down + 1 up ports: 2/3 of their price is gpu-leaf.
    assert est.by_tier["gpu-leaf"].usd == pytest.approx(2 * 30000 * 2 / 3 + 4 * 1599 + 500)
    assert est.by_tier["leaf-spine"].usd == pytest.approx(2 * 30000 / 3 + 30000 + 800)


def test_superpod_4su_bom_counts():
    # 4 SU: 32 + 16 QM9700 (docs/hardware.md#dgx-superpod), one cx7 per GPU (1,024), 4 NVSwitch
    # gen 3 per DGX H100 (128 x 4), 18 NVLinks per GPU on baseboard copper.
    est = fo.estimate_cost(fo.superpod(4))
    assert est.count("qm9700") == 48
    assert est.count("cx7") == 1024
    assert est.count("nvswitch3") == 512
    assert est.count("nvlink4_copper") == 1024 * 18


FABRICS = [
    lambda: fo.leaf_spine(2, 1, 2),
    lambda: fo.cluster("dgx_h100", 2, planes=2),
    lambda: fo.cluster("gb200_nvl72", 1, scale_out="fat_tree"),
    lambda: fo.ring(8, link_gbps=400),
]


@pytest.mark.parametrize("make", FABRICS)
@pytest.mark.parametrize("policy", [None, "power", "all_optics", "lpo", "cpo", "aec_in_row"])
def test_totals_add_up(make, policy):
    fab = make()
    est = fo.estimate_cost(fab, policy=policy, layout={"leaf_placement": "end_of_row"})
    assert sum(r.total_usd for r in est.bom) == pytest.approx(est.capex_usd)
    assert sum(r.total_w for r in est.bom) == pytest.approx(est.power_w)
    assert sum(t.usd for t in est.by_tier.values()) == pytest.approx(est.capex_usd)
    assert sum(t.w for t in est.by_tier.values()) == pytest.approx(est.power_w)
    # by_medium holds links only: with switches and NICs it makes the whole.
    devices = [r for r in est.bom if r.kind in ("switch", "nic")]
    assert (sum(r.total_usd for r in devices) + sum(t.usd for t in est.by_medium.values())
            == pytest.approx(est.capex_usd))
    assert (sum(r.total_w for r in devices) + sum(t.w for t in est.by_medium.values())
            == pytest.approx(est.power_w))
    assert {t: v.links for t, v in est.by_tier.items() if v.links} == \
        fab.summary().links_by_tier
    assert est.per_endpoint_w * len(fab.endpoints) == pytest.approx(est.power_w)


# Reach boundaries of the shipped catalog: dac_800g 2 m, dac_400g 3 m, acc 5 m, aec 7 m,
# aoc 30 m, sr 50 m, dr 100 m, 2 x DR4 500 m, FR4 2 km (docs/hardware.md#media-reach-and-power).
@pytest.mark.parametrize(("length", "medium"), [
    (2.0, "dac_800g"), (2.01, "dac_400g"), (3.0, "dac_400g"), (3.01, "acc_800g"),
    (5.0, "acc_800g"), (5.01, "aec_800g"), (7.0, "aec_800g"), (7.01, "aoc_800g"),
    (30.0, "aoc_800g"), (30.01, "sr_800g"), (50.0, "sr_800g"), (50.01, "dr_800g"),
    (100.0, "dr_800g"), (100.01, "dr4x2_800g"), (500.0, "dr4x2_800g"), (500.01, "fr_800g"),
])
def test_media_at_reach_boundaries(length, medium):
    sel = MediaSelector(Catalog.default(), Policy())
    lm = sel.choose(400.0, length, "400g", "leaf-spine", (True, True), False)
    assert lm.medium.key == medium
    # Per-link power: two ends; a 400G link takes half of an 800G twin-port part.
    share = 400.0 / lm.medium["rate_gbps"]
    assert lm.w == pytest.approx(2 * share * lm.medium["power_w_per_end"])


def test_every_catalog_entry_has_source_and_confidence():
    for e in Catalog.default():
        assert e.source.strip() and e.confidence in fo.cost.CONFIDENCES


def test_optical_nic_ends_get_a_whole_module_each():
    # leaf_spine(2,1,2) under all_optics: 6 optical links. The 4 cx7 ports (one OSFP cage
    # each) take 4 modules; the 8 switch ends need >= 4 twin-port modules: >= 8 modules.
    est = fo.estimate_cost(fo.leaf_spine(2, 1, 2), policy="all_optics")
    modules = sum(r.count for r in est.bom if r.kind == "transceiver")
    assert modules >= 8


def test_switch_model_must_hold_the_ports_it_carries():
    fab = fo.superpod(1, nodes_per_su=64, leaf_radix=128)
    with pytest.raises(FabricOptError, match="qm9700"):
        fo.estimate_cost(fab)


def test_switch_model_must_carry_the_link_rate():
    fab = fo.superpod(1, nic_gbps=800)
    with pytest.raises(FabricOptError, match="qm9700"):
        fo.estimate_cost(fab)


def test_superpod_tech_label_follows_nic_rate():
    fab = fo.superpod(1, nic_gbps=800)
    assert fab.params["tech"] != "ndr"


def test_nvlink_switch_system_buys_eighteen_1u_switches():
    # DGX H100 SuperPOD NVLink Switch System: 18 x 1U NVLink Switch, 2 NVSwitch chips each
    # (docs/hardware.md#nvswitch-systems, V/V2); the 32 x 4 NVSwitch chips inside the DGX nodes
    # stay chips.
    est = fo.estimate_cost(fo.nvlink_switch_system())
    assert est.count("nvlink4_switch") == 18
