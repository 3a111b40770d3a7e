"""The systems published training runs used: DGX A100, HGX H800, DGX H200, and the GPU
model every generated GPU carries (``gpu_model``) through the clusters built from them."""

import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.generators import make
from fabricopt.generators.recipe import replay
from fabricopt.tiers import is_scale_up_arc, tech_family


def links_from(fab, gpu):
    return sum(d["links"] for _, _, d in fab.graph.out_edges(gpu, data=True))


def ports_used(fab, switch):
    return sum(d["links"] for _, _, d in fab.graph.out_edges(switch, data=True))


def gpu_models(fab):
    return {fab.graph.nodes[g].get("gpu_model") for g in fab.endpoints}


# -- the three new systems -----------------------------------------------------------------

def test_dgx_a100():
    fab = fo.dgx_a100().validate()
    assert fab.name == "DGX A100"
    # 8 A100 on 6 NVSwitch gen 2 chips (DGX A100 system architecture white paper).
    assert len(fab.endpoints) == 8 and len(fab.switches) == 6
    # 12 NVLink 3 links per GPU x 200 Gb/s (25 GB/s) = 2400 Gb/s = 300 GB/s per direction,
    # the A100 datasheet's "600 GB/s" bidirectional.
    assert all(links_from(fab, g) == 12 for g in fab.endpoints)
    assert all(fab.injection_gbps(g) == 12 * 200 == 2400 for g in fab.endpoints)
    # 2 links from every GPU to each chip (the DGX A100 topology in NVIDIA/nccl issue 1505):
    # a chip uses 8 x 2 = 16 of its 36 ports.
    assert {fab.graph["gpu0"][s]["links"] for s in fab.switches} == {2}
    assert [ports_used(fab, s) for s in fab.switches] == [16] * 6
    nodes = fab.graph.nodes
    assert {(nodes[s]["model"], nodes[s]["radix"], nodes[s]["reduce"])
            for s in fab.switches} == {("nvswitch2", 36, False)}  # no NVLink SHARP on gen 2
    assert {d["tech"] for _, _, d in fab.graph.edges(data=True)} == {"nvlink3"}
    assert gpu_models(fab) == {"a100_sxm_80gb"}
    assert gpu_models(fo.dgx_a100(gpu="a100_sxm_40gb")) == {"a100_sxm_40gb"}
    # Node total 8 x 300 GB/s = 2.4 TB/s per direction, 4.8 TB/s bidirectional (V).
    assert 2 * fab.summary().capacity_gbps_by_tier["gpu-nvswitch"] / 8 / 1000 == 4.8


def test_hgx_h800():
    fab = fo.hgx_h800().validate()
    assert fab.name == "HGX H800"
    assert len(fab.endpoints) == 8 and len(fab.switches) == 4
    # 400 GB/s bidirectional = 200 GB/s per direction = 8 NVLink 4 links x 25 GB/s:
    # 8 x 200 = 1600 Gb/s per GPU per direction.
    assert all(links_from(fab, g) == 8 for g in fab.endpoints)
    assert all(fab.injection_gbps(g) == 8 * 200 == 1600 for g in fab.endpoints)
    # 2 links to each of the 4 chips: 8 x 2 = 16 of the NVSwitch gen 3's 64 ports.
    assert [ports_used(fab, s) for s in fab.switches] == [16] * 4
    nodes = fab.graph.nodes
    assert {(nodes[s]["model"], nodes[s]["radix"], nodes[s]["reduce"])
            for s in fab.switches} == {("nvswitch3", 64, True)}
    assert fab.graph["gpu0"]["nvsw0"]["tech"] == "nvlink4"
    assert gpu_models(fab) == {"h800_sxm"}
    plain = fo.hgx_h800(in_network_reduction=False)
    assert {plain.graph.nodes[s]["reduce"] for s in plain.switches} == {False}


def test_dgx_h200_is_a_dgx_h100_with_h200_gpus():
    fab = fo.dgx_h200().validate()
    h100 = fo.dgx_h100()
    assert fab.name == "DGX H200" and len(fab.endpoints) == 8 and len(fab.switches) == 4
    # 18 x 200 = 3600 Gb/s per direction (900 GB/s bidirectional, H200 datasheet), 5/4/4/5.
    assert all(fab.injection_gbps(g) == 18 * 200 == 3600 for g in fab.endpoints)
    assert [ports_used(fab, s) for s in fab.switches] == [40, 32, 32, 40]
    assert sorted(fab.graph.edges(data=True)) == sorted(h100.graph.edges(data=True))
    assert gpu_models(fab) == {"h200_sxm"}


@pytest.mark.parametrize("make, links", [
    (fo.dgx_a100, 8 * 12), (fo.hgx_h800, 8 * 8), (fo.dgx_h200, 8 * 18),
])
def test_tiers_are_nvlink_scale_up(make, links):
    fab = make()
    assert fab.summary().links_by_tier == {"gpu-nvswitch": links}
    assert all(is_scale_up_arc(d) and tech_family(d["tech"]) == "nvlink"
               for _, _, d in fab.graph.edges(data=True))


@pytest.mark.parametrize("make, model", [
    (fo.dgx_h100, "h100_sxm"), (fo.dgx_b200, "b200"), (fo.gb200_nvl72, "gb200"),
    (fo.dgx_a100, "a100_sxm_80gb"), (fo.hgx_h800, "h800_sxm"), (fo.dgx_h200, "h200_sxm"),
])
def test_every_system_names_its_gpu_by_catalog_key(make, model):
    fab = make()
    assert gpu_models(fab) == {model}
    assert model in fo.Catalog.default().gpus
    # The switches keep their own catalog key in "model", which the cost model reads.
    assert all(fab.graph.nodes[s]["model"] in fo.Catalog.default().switches
               for s in fab.switches)


def test_nvswitch_domain_gpu_model_is_optional():
    plain = fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4, link_gbps=200)
    assert gpu_models(plain) == {None} and "gpu_model" not in plain.params
    named = fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4, link_gbps=200,
                               gpu_model="h100_sxm")
    assert gpu_models(named) == {"h100_sxm"} and named.params["gpu_model"] == "h100_sxm"


@pytest.mark.parametrize("call, match", [
    (lambda: fo.dgx_a100(gpu="a100_sxm_80"), "did you mean 'a100_sxm_80gb'"),
    (lambda: fo.dgx_a100(gpu="h100_sxm"), "gpu must be one of"),
    (lambda: fo.hgx_h800(in_network_reduction="yes"), "in_network_reduction"),
    (lambda: fo.dgx_h200(name=3), "name"),
    (lambda: fo.nvswitch_domain(2, 1, 1, 200, gpu_model=5), "gpu_model"),
])
def test_bad_arguments(call, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        call()


def test_registered_exported_and_replayed():
    for name in ("dgx_a100", "hgx_h800", "dgx_h200"):
        assert fo.GENERATORS[name] is getattr(fo, name)
        assert name in fo.__all__
    fab = make("dgx_a100", {"gpu": "a100_sxm_40gb"})  # the door design files go through
    assert fab.recipe == {"generator": "dgx_a100", "arguments": {"gpu": "a100_sxm_40gb"}}
    again = replay(fab.recipe)
    assert gpu_models(again) == {"a100_sxm_40gb"}


# -- symmetry claims against the exact LP ---------------------------------------------------

@pytest.mark.parametrize("build, per_gpu_gbps", [
    # All-to-all at 1 Gb/s per pair: each GPU sends 7 Gb/s and every path is GPU, chip, GPU,
    # so only the GPU's own links bind: theta = injection / 7.
    (fo.dgx_a100, 2400), (fo.hgx_h800, 1600), (fo.dgx_h200, 3600),
], ids=["dgx_a100", "hgx_h800", "dgx_h200"])
def test_symmetry_claims_hold_and_match_the_exact_lp(build, per_gpu_gbps):
    fab = build()
    assert fab.symmetry is not None
    fo.verify_symmetry(fab)
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(full.theta, rel=1e-7)
    assert full.theta == pytest.approx(per_gpu_gbps / 7, rel=1e-7)


def test_orbit_counts():
    # Every chip takes 2 links from every GPU: one GPU-switch orbit each way.
    assert fo.dgx_a100().symmetry.n_orbits == 2
    assert fo.hgx_h800().symmetry.n_orbits == 2
    # 5/4/4/5 as the DGX H100: the 5-link chips share an orbit, the 4-link ones another.
    assert fo.dgx_h200().symmetry.n_orbits == 4


@pytest.mark.parametrize("build", [fo.dgx_a100, fo.hgx_h800])
def test_small_end_to_end(build):
    # What the every-generator check runs: bisection and the collectives with their bounds.
    fab = build()
    b = fo.bisection_bandwidth(fab, milp_max_nodes=0)
    assert 0 <= b.lower_gbps <= b.upper_gbps
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
        c = fo.collective_bounds(fab, coll, message_bytes=2**20)
        assert 0 < c.lower_time_s <= c.achievable_time_s * (1 + 1e-9)


# -- clusters keep the GPU model ------------------------------------------------------------

def test_gpu_model_survives_a_rail_optimized_cluster():
    fab = fo.cluster(fo.dgx_a100(), nodes=4, scale_out="rail_optimized", nic_gbps=200)
    fab.validate()
    assert len(fab.endpoints) == 4 * 8
    assert gpu_models(fab) == {"a100_sxm_80gb"}
    # The claim of the cluster still holds against the exact LP.
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(full.theta, rel=1e-7)


@pytest.mark.parametrize("scale_out", ["fat_tree", None])
def test_gpu_model_survives_other_scale_outs(scale_out):
    fab = fo.cluster(fo.hgx_h800(), nodes=2, scale_out=scale_out)
    assert gpu_models(fab) == {"h800_sxm"}


def test_gpu_model_survives_a_superpod():
    assert gpu_models(fo.superpod(scalable_units=1)) == {"h100_sxm"}
    assert gpu_models(fo.superpod(scalable_units=1, node=fo.dgx_h200())) == {"h200_sxm"}


# -- cost and the collectives' NVLink 3 profile ---------------------------------------------

def test_estimate_cost_on_a_cluster_of_dgx_a100():
    fab = fo.cluster(fo.dgx_a100(), nodes=4, scale_out="rail_optimized", nic_gbps=200)
    cost = fo.estimate_cost(fab)
    assert cost.capex_usd > 0 and cost.power_w > 0
    # 4 nodes x 6 NVSwitch gen 2 chips, priced in the server (catalog switch.nvswitch2).
    assert cost.count("nvswitch2", "switch") == 24
    # 4 nodes x 8 GPUs x 12 NVLink 3 links on the baseboard's copper (medium.nvlink3_copper),
    # never an Ethernet cable.
    assert cost.count("nvlink3_copper", "cable") == 4 * 8 * 12
    # The DGX's own adapters are in its price too: 32 GPUs' NICs (the cheapest catalog NIC
    # for one 200G port, cx7), priced once, with the server, not as network.
    cat = fo.Catalog.default()
    assert cost.count("cx7", "nic") == 32
    assert cost.scale_up_in_server_usd == pytest.approx(
        24 * cat.switches["nvswitch2"]["price_usd"] + 32 * cat.nics["cx7"]["price_usd"])


def test_nvlink3_expected_all_reduce_profile():
    c = fo.collective_bounds(fo.dgx_a100(), "all_reduce", message_bytes=2**33, expected=True)
    # The bound: 300 GB/s busbw, each GPU's 12 x 25 GB/s.
    assert c.busbw_GBps == pytest.approx(300.0)
    # Expected: about 230 GB/s busbw on 8 A100 (an NCCL maintainer, nccl-tests issue 149),
    # 230 / 300 of the bound; NVSwitch gen 2 has no NVLS, so the ring runs.
    assert c.expected["profile"] == "nvlink3"
    assert c.expected["busbw_GBps"] == pytest.approx(230.0, rel=0.01)
    assert "NVLS" not in c.expected["algorithm_times_s"]
