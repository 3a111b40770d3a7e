"""Training jobs on a fabric: models, plans, memory, messages per dimension and step time."""

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.communication import bytes_per_gpu, step_transfers
from fabricopt.workload.memory import memory_per_gpu


# -- models ---------------------------------------------------------------------------------
def test_catalogue_parameter_counts_match_the_papers():
    # Published totals: GPT-3 175B, Llama 3 8B / 70B / 405B, Mixtral 46.7B total and 12.9B
    # active (Mixtral of Experts, section 2), DeepSeek-V3 671B total and 37B active (its
    # technical report, abstract); within 1% (norms and biases are left out here).
    published = {"gpt3-175b": (175e9, 175e9), "llama3-8b": (8.0e9, 8.0e9),
                 "llama3-70b": (70.6e9, 70.6e9), "llama3-405b": (405e9, 405e9),
                 "mixtral-8x7b": (46.7e9, 12.9e9), "deepseek-v3": (671e9, 37e9)}
    assert set(published) <= set(fo.models)
    for name, (total, active) in published.items():
        m = fo.model(name)
        assert m.params == pytest.approx(total, rel=0.01), name
        assert m.active_params == pytest.approx(active, rel=0.02), name


def test_gpt3_parameters_are_12_L_h_squared_plus_embeddings():
    # GPT-3: 4h^2 attention + 8h^2 MLP per layer, tied embedding V h.
    m = fo.model("gpt3-175b")
    assert m.params == 12 * 96 * 12288**2 + 50257 * 12288


def test_user_model_and_bad_names():
    tiny = fo.model({"name": "tiny", "layers": 2, "hidden": 64, "ffn": 256, "heads": 4,
                     "vocab": 1000})
    # 2 x (4 h^2 attention + 3 h f MLP) + 2 V h = 2 x (16384 + 49152) + 128000
    assert tiny.params == 259072
    with pytest.raises(InvalidParameterError, match="did you mean 'llama3-405b'"):
        fo.model("llama3-405")
    with pytest.raises(InvalidParameterError, match="unknown model key 'layer'"):
        fo.model({"name": "x", "layer": 2})


# -- messages per dimension: GPT-3 175B at TP 8, PP 16, DP 8 -----------------------------------
def gpt3_job(**kw):
    # The Megatron-LM paper's GPT-3 configuration (Efficient Large-Scale Language Model
    # Training on GPU Clusters Using Megatron-LM, Table 1): t=8, p=16, 1024 GPUs so d=8,
    # batch 1536, sequence 2048, micro-batch 1.
    return fo.TrainingJob("gpt3-175b", tp=8, pp=16, dp=8, micro_batch=1, global_batch=1536,
                          seq_len=2048, **kw)


def test_gpt3_bytes_per_gpu_match_hand_formulas():
    got = bytes_per_gpu(gpt3_job())
    s_act = 1 * 2048 * 12288 * 2        # b s h x 2 bytes = 50,331,648
    m, layers = 1536 // 8, 96 // 16     # 192 micro-batches, 6 layers per stage
    # Tensor: per layer and pass (forward, backward) 2 all-gathers + 2 reduce-scatters of
    # S, each GPU sending 7/8 S per collective.
    assert got["tp"] == pytest.approx(m * layers * 2 * 4 * 7 / 8 * s_act)
    # Pipeline: per micro-batch one send forward and one backward of b s h x 2 / t.
    assert got["pp"] == pytest.approx(2 * m * s_act / 8)
    # Data (ZeRO-1): reduce-scatter of the gradients (FP32, 4 bytes: Megatron-Core's default)
    # and all-gather of the weights (BF16, 2 bytes) of a GPU's share of the first stage:
    # (6 layers x 12 h^2 + V h) / t weights, 7/8 of each message sent.
    params = (6 * 12 * 12288**2 + 50257 * 12288) / 8
    assert got["dp"] == pytest.approx(7 / 8 * (4 + 2) * params)
    # With BF16 gradients the reduce-scatter halves.
    bf16 = bytes_per_gpu(gpt3_job(grad_precision="bf16"))["dp"]
    assert bf16 == pytest.approx(7 / 8 * (2 + 2) * params)


def test_gpt3_without_sequence_parallelism_sends_the_same_as_all_reduce():
    # An all-reduce sends 2(n-1)/n S: exactly an all-gather and a reduce-scatter.
    assert bytes_per_gpu(gpt3_job(sequence_parallel=False))["tp"] == pytest.approx(
        bytes_per_gpu(gpt3_job())["tp"])
    kinds = {t.collective for t in step_transfers(gpt3_job(sequence_parallel=False))
             if t.dimension == "tp"}
    assert kinds == {"all_reduce"}


def test_zero3_gathers_weights_every_micro_batch():
    # ZeRO-3: per micro-batch 2 all-gathers of the weights (2 bytes each) and 1 reduce-scatter
    # of the gradients (4 bytes), against one of each per step under ZeRO-1:
    # (2 m x 2 + m x 4) / (4 + 2) = 4 m / 3 with m = 192.
    ratio = bytes_per_gpu(gpt3_job(zero=3))["dp"] / bytes_per_gpu(gpt3_job())["dp"]
    assert ratio == pytest.approx(4 * 192 / 3)
    # ZeRO-2 keeps the gradients sharded, so it reduce-scatters them every micro-batch:
    # (m x 4 + 2) / (4 + 2).
    ratio = bytes_per_gpu(gpt3_job(zero=2))["dp"] / bytes_per_gpu(gpt3_job())["dp"]
    assert ratio == pytest.approx((192 * 4 + 2) / 6)


# -- memory ---------------------------------------------------------------------------------
def test_405b_on_one_gpu_is_refused_with_the_memory_it_needs():
    fab = fo.superpod(1)
    job = fo.TrainingJob("llama3-405b", tp=1, pp=1, global_batch=256, seq_len=8192)
    m = fo.model("llama3-405b")
    h, f, s = 16384, 53248, 8192
    # Per token and layer (no recomputation, FlashAttention, no dropout): norms' inputs 2 x 2h;
    # attention: projections' input 2h, queries 2h, keys and values 2 x 2 x 8 heads x 128,
    # output 2h, softmax statistics 4 bytes x 128 heads; SwiGLU MLP: input 2h, gate and up
    # 4f, their product 2f.
    per_token = 4 * h + (6 * h + 4 * 8 * 128 + 4 * 128) + (2 * h + 6 * f)
    # The one pipeline rank also holds a micro-batch's logits in BF16 and FP32.
    acts = 126 * per_token * s + s * 128256 * 6
    est = memory_per_gpu(job.with_gpus(256), 80)
    assert est.activations_gb == pytest.approx(acts / 1e9)
    # Weights 2 bytes, FP32 gradients 4, Adam 12 sharded over 256 ranks (ZeRO-1).
    assert est.weights_gb == pytest.approx(2 * m.params / 1e9)
    assert est.gradients_gb == pytest.approx(4 * m.params / 1e9)
    assert est.optimizer_gb == pytest.approx(12 * m.params / 256 / 1e9)
    # And the 3 GB the runtime holds (CUDA context, NCCL buffers, the allocator's slack).
    total = (6 + 12 / 256) * m.params / 1e9 + acts / 1e9 + 3  # 3,000.9 GB
    with pytest.raises(InvalidParameterError, match=rf"needs {total:,.1f} GB per GPU.*of 80 GB "
                       rf"HBM: {total - 80:,.1f} GB"):
        fo.training_step(fab, job)


def test_memory_shrinks_with_zero_stage_and_recomputation():
    job = gpt3_job()
    base = memory_per_gpu(job, 80)
    assert memory_per_gpu(gpt3_job(zero=3), 80).weights_gb == pytest.approx(
        base.weights_gb / 8)                         # weights sharded over the 8 dp ranks
    assert memory_per_gpu(gpt3_job(recompute="full"), 80).activations_gb < base.activations_gb


# -- time from the fabric ----------------------------------------------------------------------
def test_step_time_never_rises_with_more_bandwidth():
    job = fo.TrainingJob("llama3-70b", tp=8, pp=4, global_batch=64, seq_len=4096)
    slow = fo.training_step(fo.superpod(1, nic_gbps=200), job)
    fast = fo.training_step(fo.superpod(1, nic_gbps=400), job)
    assert fast.step_s <= slow.step_s
    assert fast.step_s_lower <= slow.step_s_lower
    for dim in ("pp", "dp"):
        assert fast.phases[dim].lower_s < slow.phases[dim].lower_s  # they cross the NICs


def test_step_is_at_least_its_lower_bound_and_reports_every_dimension():
    s = fo.training_step(fo.superpod(1), fo.TrainingJob("llama3-70b", tp=8, pp=4,
                                                        global_batch=64, seq_len=4096))
    assert s.step_s >= s.step_s_lower > 0
    assert set(s.phases) == {"tp", "pp", "dp"}
    for p in s.phases.values():
        assert p.expected_s >= p.lower_s > 0 and p.bytes_per_gpu > 0
    assert s.tokens_per_s == pytest.approx(64 * 4096 / s.step_s)
    assert 0 < s.mfu < 1
    assert s.phases["tp"].binding_tier == "gpu-nvswitch"  # tensor traffic stays in a DGX


def test_tensor_parallelism_across_two_servers_is_slower_than_inside_one():
    # Two tensor groups of 8 on two servers (dp=2): each group in its own server, or each
    # split 4 + 4 over both, whose traffic then leaves each server through its 8 x 400G NICs
    # (3,200 Gb/s) instead of NVLink (3,600 Gb/s per GPU).
    fab = fo.superpod(1)
    job = fo.TrainingJob("llama3-8b", tp=8, dp=2, global_batch=8, seq_len=4096)
    inside = fo.training_step(fab, job)
    split = [f"n{n}.gpu{g}" for half in (range(4), range(4, 8)) for n in (0, 1) for g in half]
    across = fo.training_step(fab, job, placement=split)
    assert across.phases["tp"].lower_s > inside.phases["tp"].lower_s
    assert across.step_s > inside.step_s
    assert across.phases["tp"].exposed_lower_s > inside.phases["tp"].exposed_lower_s
    assert across.phases["tp"].binding_tier == "gpu-leaf"
    assert any("crosses scale-up domains" in n for n in across.notes)
    assert not any("crosses scale-up domains" in n for n in inside.notes)


def test_rail_only_trains_a_dense_model_as_fast_as_rail_optimized():
    # TP inside the DGX, DP along the rails (rank stride 8 = the same GPU of every server):
    # no traffic needs a spine.
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=64, seq_len=4096)
    spine = fo.training_step(fo.superpod(1), job)
    rail_only = fo.training_step(fo.superpod(1, spine=False), job)
    assert rail_only.step_s == pytest.approx(spine.step_s, rel=1e-9)
    assert rail_only.step_s_lower == pytest.approx(spine.step_s_lower, rel=1e-9)


def _ep_across_rails(nodes):
    """Expert groups of 8 with one GPU per server and every rail: GPU (i + j) % 8 of server
    i in group j, in blocks of 8 servers."""
    return [f"n{b + i}.gpu{(i + j) % 8}" for b in range(0, nodes, 8) for j in range(8)
            for i in range(8)]


def test_expert_all_to_all_across_rails_needs_nvlink_forwarding_on_rail_only():
    job = fo.TrainingJob("mixtral-8x7b", tp=1, ep=8, dp=32, global_batch=256, seq_len=4096,
                         zero=3)
    order = _ep_across_rails(32)
    spine = fo.training_step(fo.superpod(1), job, placement=order)
    rail_only = fo.training_step(fo.superpod(1, spine=False), job, placement=order)
    # With DGX servers the rail-only fabric forwards cross-rail bytes over NVLink to the GPU
    # of the right rail (rail-only networks rely on it, Wang et al., arXiv:2307.12169): every
    # byte still crosses one NIC each way, so the all-to-all is bound by the NICs on both.
    assert rail_only.phases["ep"].lower_s >= spine.phases["ep"].lower_s * (1 - 1e-6)
    assert rail_only.phases["ep"].binding_tier == "gpu-leaf"
    # Without scale-up links nothing joins the rails: the same plan is refused.
    bare = fo.TrainingJob("mixtral-8x7b", tp=1, ep=8, dp=4, global_batch=32, seq_len=4096,
                          zero=3, gpu="h100_sxm")
    assert fo.training_step(fo.rail_optimized(4), bare).phases["ep"].lower_s > 0
    with pytest.raises(InvalidParameterError, match="ep traffic .* has no path"):
        fo.training_step(fo.rail_optimized(4, spine=False), bare)


def test_errors_for_bad_input():
    with pytest.raises(InvalidParameterError, match="tp=3 must divide the 32 attention heads"):
        fo.TrainingJob("llama3-8b", tp=3)
    with pytest.raises(InvalidParameterError, match="ep=3 needs a mixture of experts"):
        fo.TrainingJob("mixtral-8x7b", ep=3)
    with pytest.raises(InvalidParameterError, match="precision must be one of"):
        fo.TrainingJob("llama3-8b", precision="fp16")
    with pytest.raises(InvalidParameterError, match="global_batch=100 must be a multiple"):
        fo.TrainingJob("llama3-8b", dp=8, global_batch=100)
    with pytest.raises(InvalidParameterError, match="takes .* 512 GPUs but fab has 256"):
        fo.training_step(fo.superpod(1), fo.TrainingJob("llama3-8b", tp=8, dp=64,
                                                        global_batch=512))
    with pytest.raises(InvalidParameterError, match="placement names 'nope'"):
        fo.training_step(fo.dgx_h100(), fo.TrainingJob("llama3-8b", tp=8, global_batch=8),
                         placement=["nope"] * 8)
    with pytest.raises(InvalidParameterError, match="job must be a TrainingJob"):
        fo.training_step(fo.dgx_h100(), "llama3-8b")


# -- serving, cost, design files and the command line ------------------------------------------
def test_serving_decode_is_memory_bound_and_disaggregation_moves_the_kv_cache():
    e = fo.serving_estimate(fo.superpod(1), "llama3-70b", tp=8, batch=16, prompt_len=2048)
    # Decode reads each GPU's 70.55e9 x 2 / 8 = 17.6 GB of weights per token at 3.35 TB/s
    # (5.3 ms) and does 2 x 70.55e9 x 16 / 8 FLOPs at 989e12 x 0.6 (0.48 ms): memory bound.
    assert e.decode_memory_s > e.decode_compute_s
    assert e.tpot_s >= e.decode_memory_s + e.decode_comm_s * (1 - 1e-12)
    assert e.kv_transfer_s == 0
    d = fo.serving_estimate(fo.superpod(1), "llama3-70b", tp=8, batch=16, prompt_len=2048,
                            disaggregated=True)
    # KV cache: 2048 tokens x 80 layers x 2 x 8 KV heads x 128 x 2 bytes = 671 MB, 1/8 per
    # GPU pair, each over one 400G NIC (50 GB/s): 1.68 ms certified; the expected move adds
    # a message's latency and runs the NIC at its calibrated efficiency.
    assert d.kv_transfer_s_lower == pytest.approx(2048 * 80 * 2 * 8 * 128 * 2 / 8 / 50e9)
    assert d.kv_transfer_s > d.kv_transfer_s_lower
    # Disaggregated, the 32 replicas of 8 GPUs split into prefill and decode ones.
    assert d.prefill_replicas + d.decode_replicas == e.replicas == 32


def test_token_cost_spreads_the_clusters_tco_over_its_years():
    fab = fo.superpod(1)
    c = fo.token_cost(fab, 1e6, years=4, usd_per_kwh=0.1, pue=1.0)
    net = fo.estimate_cost(fab)
    tco = fo.estimate_tco(fab, years=4, usd_per_kwh=0.1, pue=1.0)
    # The one cost model: the cluster's TCO (network: capex, energy, 10% a year upkeep,
    # optics replaced; 32 DGX H100 at the catalog's $270k and 10.2 kW, 10% a year upkeep)
    # over 4 years of seconds.
    servers = 32 * 270000.0
    watts = net.power_w + 32 * 10200.0
    by_hand = (net.capex_usd + servers) * (1 + 0.1 * 4) + tco.replacement_usd \
        + watts * 8766 * 4 * 0.1 / 1000
    assert tco.cluster_total_usd == pytest.approx(by_hand)
    assert c.usd_per_s == pytest.approx(by_hand / (4 * 365.25 * 86400))
    assert c.usd_per_million_tokens == pytest.approx(c.usd_per_s * 1e6 / 1e6)
    assert (c.servers_capex_usd, c.power_w) == (pytest.approx(servers), pytest.approx(watts))
    assert fo.token_cost(fab, 2e6).usd_per_million_tokens == pytest.approx(
        fo.token_cost(fab, 1e6).usd_per_million_tokens / 2)


def test_design_file_job_table_and_train_command(tmp_path, capsys):
    from fabricopt.cli import main

    path = tmp_path / "pod.toml"
    path.write_text('family = "superpod"\n[params]\nscalable_units = 1\n'
                    '[job]\nmodel = "llama3-8b"\ntp = 8\nglobal_batch = 64\nseq_len = 4096\n')
    fab = fo.load_design(path)
    assert fab.design["job"]["model"] == "llama3-8b"
    assert main(["train", str(path)]) == 0
    out = capsys.readouterr().out
    assert "llama3-8b: TP 8, PP 1, DP 32" in out and "per million tokens" in out
    assert main(["train", str(path), "--tp", "4"]) == 0  # a flag replaces the table's key
    assert "TP 4," in capsys.readouterr().out
    path.write_text('family = "superpod"\n[params]\nscalable_units = 1\n[job]\nmodel = '
                    '"llama3-8b"\nmicrobatch = 2\n')
    assert main(["train", str(path)]) == 2
    assert "unknown key 'microbatch' (did you mean 'micro_batch'?)" in capsys.readouterr().err


def test_compare_reads_the_training_metric_from_design_files(tmp_path):
    for name, ratio in (("full", 1), ("half", 2)):
        (tmp_path / f"{name}.toml").write_text(
            f'family = "superpod"\n[params]\nscalable_units = 1\noversubscription = {ratio}\n'
            '[job]\nmodel = "llama3-8b"\ntp = 8\nglobal_batch = 64\nseq_len = 4096\n')
    table = fo.compare(tmp_path, metrics=["summary", "training"], progress=False)
    rows = {r["file"].rsplit("/", 1)[-1]: r for r in table}
    assert sorted(rows) == ["full.toml", "half.toml"] and not table.failed
    for r in rows.values():
        assert r["training_step_s"] >= r["training_step_s_lower"] > 0
        assert r["training_tokens_per_s"] <= r["training_tokens_per_s_upper"]
    # One SU: the 2:1 leaves' uplinks carry nothing this job sends (tp in the server, dp
    # along each rail's leaf), so the two steps are equal.
    assert rows["half.toml"]["training_step_s"] == pytest.approx(
        rows["full.toml"]["training_step_s"])


def test_dp_from_the_fabric_that_does_not_split_the_batch_says_what_to_give():
    # 256 GPUs / (tp 8 x pp 4) = dp 8, and 100 sequences are not a multiple of 8.
    job = fo.TrainingJob("llama3-70b", tp=8, pp=4, global_batch=100)
    with pytest.raises(InvalidParameterError, match=r"dp = 8 \(the 256 GPUs of fab .* multiple "
                                                    r"of 8"):
        fo.training_step(fo.superpod(1), job)


def test_a_gb200_rack_is_priced_as_one_rack_not_nine_dgx_b200():
    from fabricopt.workload.cost import token_cost

    c = token_cost(fo.gb200_nvl72(), 1e5)  # its GPUs' own model: gb200
    # One NVL72 rack of 72 GPUs is the catalog's gb200_nvl72 system: its power (120 kW, the
    # rack's own figure), where nine DGX B200 (72 / 8) would draw 9 x 14.3 kW = 128.7 kW.
    rack = fo.Catalog.default().systems["gb200_nvl72"].values["power_w"]
    assert c.power_w == pytest.approx(rack)  # the switch trays are in the rack figure
    assert c.power_w < 9 * 14_300
