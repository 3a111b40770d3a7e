"""The GPU a job runs on: picked by name, by the fabric's GPU model, by NVLink generation;
its dense peaks and per-precision efficiencies from the catalog."""

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.hardware import GPU_BY_NVLINK, PRECISIONS, gpu_figures


def a100_cluster(nodes=4):
    return fo.cluster(fo.dgx_a100(), nodes=nodes, scale_out="rail_optimized", nic_gbps=200)


# -- which GPU -------------------------------------------------------------------------------

@pytest.mark.parametrize("make, key", [
    (fo.dgx_a100, "a100_sxm_80gb"), (fo.hgx_h800, "h800_sxm"), (fo.dgx_h200, "h200_sxm"),
    (fo.dgx_h100, "h100_sxm"), (fo.dgx_b200, "b200"), (fo.gb200_nvl72, "gb200"),
])
def test_picked_by_the_gpu_model_the_fabric_carries(make, key):
    assert gpu_figures(make(), None, "bf16").key == key


def test_picked_by_the_gpu_model_through_a_cluster():
    g = gpu_figures(a100_cluster(), None, "bf16")
    # A100 80 GB: 80 GB HBM2e at 2.039 TB/s, 312 TFLOP/s dense BF16 (A100 datasheet).
    assert (g.key, g.hbm_gb, g.hbm_tbps, g.peak_tflops) == ("a100_sxm_80gb", 80.0, 2.039, 312.0)
    assert g.name == "NVIDIA A100 SXM4 80GB"
    small = gpu_figures(fo.dgx_a100(gpu="a100_sxm_40gb"), None, "bf16")
    # A100 40 GB: 40 GB HBM2 at 1.555 TB/s, the same 312 TFLOP/s.
    assert (small.hbm_gb, small.hbm_tbps, small.peak_tflops) == (40.0, 1.555, 312.0)


def test_the_job_s_name_comes_first():
    # The job's gpu wins over the NVLink generation: H200 figures on NVLink 4 GPUs that name
    # no model (the generation alone would say H100).
    fab = fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4, link_gbps=200, tech="nvlink4")
    g = gpu_figures(fab, "h200_sxm", "bf16")
    # H200: 141 GB HBM3e at 4.8 TB/s (H200 datasheet), the H100's 989 dense BF16.
    assert (g.key, g.hbm_gb, g.hbm_tbps, g.peak_tflops) == ("h200_sxm", 141.0, 4.8, 989.0)
    # On GPUs that name their model, another is refused (tests/workload/test_hardening.py).
    with pytest.raises(InvalidParameterError, match="gpu must be the GPU the fabric's nodes"):
        gpu_figures(fo.dgx_h100(), "h200_sxm", "bf16")


@pytest.mark.parametrize("tech, key", [("nvlink3", "a100_sxm_80gb"), ("nvlink4", "h100_sxm"),
                                       ("nvlink5", "b200")])
def test_picked_by_nvlink_generation_when_the_gpus_name_none(tech, key):
    fab = fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4, link_gbps=200, tech=tech)
    assert GPU_BY_NVLINK[tech] == key
    assert gpu_figures(fab, None, "bf16").key == key


def test_default_gpu_without_nvlink_or_fabric():
    assert gpu_figures(fo.ring(4), None, "bf16").key == "h100_sxm"
    assert gpu_figures(None, None, "bf16").key == "h100_sxm"


def test_a_misspelt_gpu_is_refused_with_a_suggestion():
    with pytest.raises(InvalidParameterError, match="did you mean 'h100_sxm'"):
        gpu_figures(fo.dgx_h100(), "h100_sxn", "bf16", func="training_step")
    with pytest.raises(InvalidParameterError, match=r"^training_step\(\): gpu must be"):
        gpu_figures(None, "a100", "bf16", func="training_step")


def test_gpus_of_different_models_are_refused():
    fab = fo.dgx_h100()
    fab.graph.nodes["gpu3"]["gpu_model"] = "h200_sxm"
    with pytest.raises(InvalidParameterError, match="different models .*pass gpu="):
        gpu_figures(fab, None, "bf16")
    # Named by the job, the mix no longer matters.
    assert gpu_figures(fab, "h200_sxm", "bf16").key == "h200_sxm"


def test_a_gpu_model_the_catalog_lacks_is_refused():
    fab = fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=2, link_gbps=200,
                             gpu_model="h100_sxmm")
    with pytest.raises(InvalidParameterError, match="does not hold.*did you mean 'h100_sxm'"):
        gpu_figures(fab, None, "bf16")


# -- precisions ------------------------------------------------------------------------------

def test_fp8_on_a100_is_refused_naming_the_gpu_and_what_it_has():
    with pytest.raises(InvalidParameterError,
                       match=r"'a100_sxm_80gb' \(NVIDIA A100 SXM4 80GB\) has no FP8 peak.*"
                             r"it supports bf16"):
        gpu_figures(fo.dgx_a100(), None, "fp8")
    with pytest.raises(InvalidParameterError, match="has no FP4 peak.*bf16, fp8"):
        gpu_figures(None, "h100_sxm", "fp4")


def test_an_unknown_precision_is_refused():
    assert PRECISIONS == ("bf16", "fp8", "fp4")
    with pytest.raises(InvalidParameterError, match="precision must be one of"):
        gpu_figures(None, "h100_sxm", "fp16")


def test_hopper_figures_per_precision():
    bf16 = gpu_figures(None, "h100_sxm", "bf16")
    fp8 = gpu_figures(None, "h100_sxm", "fp8")
    # H100 SXM dense: 989 BF16, 1,979 FP8 TFLOP/s (the datasheet's sparse figures halved).
    assert (bf16.peak_tflops, fp8.peak_tflops) == (989.0, 1979.0)
    assert fp8.bf16_tflops == 989.0 and fp8.precision == "fp8"
    assert fp8.precisions == ("bf16", "fp8")
    # Calibrated on published runs (docs/validation.md): BF16 0.582, FP8 0.463, attention
    # 0.463 of the BF16 peak.
    assert (bf16.compute_efficiency, fp8.compute_efficiency) == (0.582, 0.463)
    assert fp8.attention_efficiency == 0.463
    # FP8 matrix multiplies: 1979 x 0.463 / (989 x 0.582) = 1.59x BF16's; attention stays in
    # BF16, so a step gains less (1.35-1.6x in NVIDIA's published recipes), never 2x.
    speedup = fp8.peak_tflops * fp8.compute_efficiency / (bf16.peak_tflops
                                                          * bf16.compute_efficiency)
    assert 1.3 <= speedup < 2 and speedup == pytest.approx(1.592, abs=1e-3)


def test_blackwell_figures():
    b200 = gpu_figures(None, "b200", "fp4")
    # DGX B200 datasheet: 144 PFLOP/s FP4 with sparsity per 8 GPUs -> 144 / 8 / 2 = 9 dense.
    assert b200.peak_tflops == 9000.0 and b200.precisions == ("bf16", "fp8", "fp4")
    gb200 = gpu_figures(fo.gb200_nvl72(), None, "bf16")
    # GB200 NVL72 datasheet rack totals with sparsity over 72 GPUs, halved for dense:
    # BF16 360 / 72 / 2 = 2.5 PFLOP/s; HBM3e 13.4 TB / 72 = 186 GB at 576 / 72 = 8 TB/s.
    assert (gb200.peak_tflops, gb200.hbm_gb, gb200.hbm_tbps) == (2500.0, 186.0, 8.0)
    # FP8 720 / 72 / 2 = 5, FP4 1440 / 72 / 2 = 10 PFLOP/s.
    assert gpu_figures(None, "gb200", "fp8").peak_tflops == 5000.0
    assert gpu_figures(None, "gb200", "fp4").peak_tflops == 10000.0


def test_h800_has_h100_compute_and_a_cut_nvlink():
    h800 = fo.Catalog.default().gpus["h800_sxm"]
    h100 = fo.Catalog.default().gpus["h100_sxm"]
    for k in ("hbm_gb", "hbm_tbps", "bf16_tflops", "fp8_tflops", "tdp_w"):
        assert h800[k] == h100[k], k
    # 400 GB/s bidirectional = 8 links x 25 GB/s x 2 directions.
    assert h800["nvlink_links"] * h800["nvlink_gbps_per_link"] / 8 * 2 == 400


def test_every_catalog_gpu_has_what_a_job_needs():
    cat = fo.Catalog.default()
    assert set(cat.gpus) >= {"a100_sxm_40gb", "a100_sxm_80gb", "h100_sxm", "h800_sxm",
                             "h200_sxm", "b200", "gb200"}
    for key, entry in cat.gpus.items():
        g = gpu_figures(None, key, "bf16")
        assert g.peak_tflops == g.bf16_tflops > 0 and 0 < g.compute_efficiency <= 1
        assert 0 < g.attention_efficiency <= 1
        # The efficiencies are calibrated estimates, and the catalog says so.
        eff = [k for k in entry.values if k.endswith("_efficiency")]
        assert eff and entry.confidence_of(*eff) == "estimate", key
        assert "compute_efficiency" not in entry.values  # the shipped catalog uses the new keys


# -- the older single compute_efficiency -----------------------------------------------------

def test_a_user_catalog_s_compute_efficiency_is_the_bf16_efficiency():
    cat = fo.Catalog.default().merged({"gpu": {"h100_sxm": {
        "compute_efficiency": 0.5, "source": "our runs", "confidence": "vendor"}}})
    assert gpu_figures(None, "h100_sxm", "bf16", catalog=cat).compute_efficiency == 0.5
    # FP8 keeps its own key (0.463, calibrated).
    assert gpu_figures(None, "h100_sxm", "fp8", catalog=cat).compute_efficiency == 0.463


def test_an_old_style_gpu_reads_as_before():
    cat = fo.Catalog.default().merged({"gpu": {"mygpu": {
        "hbm_gb": 96.0, "hbm_tbps": 4.0, "bf16_tflops": 1000.0, "fp8_tflops": 2000.0,
        "compute_efficiency": 0.6, "source": "our sheet", "confidence": "vendor"}}})
    bf16 = gpu_figures(None, "mygpu", "bf16", catalog=cat)
    fp8 = gpu_figures(None, "mygpu", "fp8", catalog=cat)
    # One efficiency for every precision, and attention at the BF16 one, as before.
    assert (bf16.compute_efficiency, fp8.compute_efficiency) == (0.6, 0.6)
    assert bf16.attention_efficiency == 0.6 and bf16.name == "mygpu"


def test_a_gpu_without_an_efficiency_is_refused_naming_the_key():
    cat = fo.Catalog.default().merged({"gpu": {"bare": {
        "hbm_gb": 96.0, "hbm_tbps": 4.0, "bf16_tflops": 1000.0,
        "source": "our sheet", "confidence": "vendor"}}})
    with pytest.raises(InvalidParameterError, match=r"'bare' lacks bf16_efficiency; add them "
                                                    r"to its \[gpu.bare\] table"):
        gpu_figures(None, "bare", "bf16", catalog=cat)


# -- the server a GPU comes in ----------------------------------------------------------------

def test_token_cost_prices_dgx_a100_servers():
    # NVSwitch gen 2 domains are no system the cost layer reads off the switches, so the
    # GPU's system prices them: 4 DGX A100 at the catalog's $199k.
    c = fo.token_cost(a100_cluster(), 1e6, gpu="a100_sxm_80gb")
    assert c.servers_capex_usd == pytest.approx(4 * 199_000)
    assert not c.notes
