"""Memory as built: activations from each architecture's tensors, recomputation, the pipeline's
in-flight micro-batches, uneven layers and the training state."""

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.activations import layer_activations, layer_input_bytes
from fabricopt.workload.memory import in_flight_chunks, memory_per_gpu

GPT3 = fo.model("gpt3-175b")
S, H, A, T = 2048, 12288, 96, 8     # GPT-3 175B at sequence 2048 on 8 tensor ranks


def gpt3_layer(**kw):
    args = {"tp": T, "seq_len": S, "cp": 1, "micro_batch": 1, "sequence_parallel": True,
            "flash_attention": False, "moe": False}
    return layer_activations(GPT3, **{**args, **kw}).total


def test_gpt3_layer_matches_korthikanti_table_2():
    # "Reducing Activation Recomputation in Large Transformer Models", Table 2 (bytes per
    # layer, b = 1): tensor parallel sbh (10 + 24/t + 5as/(ht)); with sequence parallelism
    # sbh (34/t + 5as/(ht)); with selective recomputation as well 34 sbh / t.
    sbh = S * H
    assert gpt3_layer(sequence_parallel=False) == pytest.approx(
        sbh * (10 + 24 / T + 5 * A * S / (H * T)))
    assert gpt3_layer() == pytest.approx(sbh * (34 / T + 5 * A * S / (H * T)))
    # Selective recomputation of the core attention: the score matrix goes, and FlashAttention
    # keeps only a 4-byte statistic per head and token instead.
    assert gpt3_layer(recompute=frozenset({"core_attn"})) == pytest.approx(34 * sbh / T)
    assert gpt3_layer(flash_attention=True) == pytest.approx(34 * sbh / T + 4 * S * A / T)
    # Full recomputation keeps the layer's input, sharded by sequence parallelism.
    assert layer_input_bytes(GPT3, tp=T, seq_len=S, cp=1, micro_batch=1,
                             sequence_parallel=True) == 2 * sbh / T


def test_llama_layer_has_no_dropout_and_keeps_fewer_keys_and_values():
    llama = fo.model("llama3-70b")            # h 8192, f 28672, 64 heads, 8 KV heads of 128
    got = layer_activations(llama, tp=1, seq_len=4096, cp=1, micro_batch=1,
                            sequence_parallel=True, flash_attention=True, moe=False)
    h, f = 8192, 28672
    # Norms 4h; attention: input 2h, q 2h, k and v 2 x 2 x 8 x 128, output 2h, softmax
    # statistics 4 x 64; SwiGLU: input 2h, gate and up 4f, product 2f. No masks.
    per_token = 4 * h + (6 * h + 4 * 8 * 128 + 4 * 64) + (2 * h + 6 * f)
    assert got.total == pytest.approx(4096 * per_token)
    # Recomputing the norms and the activation function drops the projections' inputs (2 x 2h)
    # and the SwiGLU product (2f).
    lighter = layer_activations(llama, tp=1, seq_len=4096, cp=1, micro_batch=1,
                                sequence_parallel=True, flash_attention=True, moe=False,
                                recompute=frozenset({"layernorm", "activation"}))
    assert got.total - lighter.total == pytest.approx(4096 * (4 * h + 2 * f))


def test_moe_layer_keeps_a_copy_per_routed_expert():
    mixtral = fo.model("mixtral-8x7b")
    args = {"tp": 1, "seq_len": 4096, "cp": 1, "micro_batch": 1, "sequence_parallel": True,
            "flash_attention": True}
    dense = layer_activations(mixtral, moe=False, **args)
    moe = layer_activations(mixtral, moe=True, **args)
    h, f, k, e = 4096, 14336, 2, 8
    # Each token goes to k = 2 experts: its copy (2h) and the expert's SwiGLU (6f) each, the
    # combine buffer (2h each), the router's FP32 logits and probabilities (8 e), instead of
    # one dense MLP's 6f.
    assert moe.mlp - dense.mlp == pytest.approx(4096 * (k * (2 * h + 6 * f) + k * 2 * h
                                                        + 8 * e - 6 * f))


def test_meta_llama3_405b_plan_fits_in_80_gb():
    # The Llama 3 Herd of Models, Table 4: TP 8, PP 16, DP 128, 2,048 sequences of 8,192, no
    # activation checkpointing, one layer less on the first and last stage, FSDP sharding
    # gradients and optimizer state (ZeRO-2). Micro-batch 1, v 4 and N 8 are assumed
    # (docs/validation.md).
    job = fo.TrainingJob("llama3-405b", tp=8, pp=16, dp=128, global_batch=2048, seq_len=8192,
                         first_stage_layers=7, last_stage_layers=7, virtual_stages=4,
                         microbatch_group=8, zero=2, recompute="none")
    est = memory_per_gpu(job, 80)
    assert est.fits and 50 < est.total_gb < 80
    # The middle ranks hold 8 layers, the first and last 7: a middle rank is the fullest.
    assert 0 < est.stage < 15 and job.stage_layers[est.stage] == 8
    # Without the micro-batch group (N = p = 16) the interleaved warm-up keeps more in flight.
    wide = fo.TrainingJob(**{**job.__dict__, "microbatch_group": None})
    assert memory_per_gpu(wide, 80).activations_gb > est.activations_gb


def test_in_flight_follows_the_schedules():
    one_f_one_b = fo.TrainingJob("llama3-70b", tp=8, pp=4, dp=1, global_batch=16)
    # 1F1B: rank i holds min(p - i, m) micro-batches of its layers (m = 16).
    assert [in_flight_chunks(one_f_one_b, i)[0] for i in range(4)] == [4, 3, 2, 1]
    inter = fo.TrainingJob("llama3-70b", tp=8, pp=4, dp=1, global_batch=16, virtual_stages=5)
    # Interleaved: 2 (p - i - 1) + (v - 1) p + 1 chunks of L_i / v layers: rank 0 holds
    # 6 + 16 + 1 = 23 chunks of 4 layers; with a group of N = 2, 6 + 8 + 1 = 15.
    assert in_flight_chunks(inter, 0) == (23, 4)
    grouped = fo.TrainingJob(**{**inter.__dict__, "microbatch_group": 2})
    assert in_flight_chunks(grouped, 0) == (15, 4)
    # Never more than the m v chunks of the step.
    few = fo.TrainingJob("llama3-70b", tp=8, pp=4, dp=1, global_batch=2, virtual_stages=5)
    assert in_flight_chunks(few, 0)[0] == 2 * 5


def test_recomputing_more_layers_keeps_less():
    base = {"model": "llama3-70b", "tp": 8, "pp": 4, "dp": 8, "global_batch": 64,
            "seq_len": 8192, "recompute": "full"}
    sizes = [memory_per_gpu(fo.TrainingJob(**base, recompute_layers=r), 80).activations_gb
             for r in (0, 5, 10, 20)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 2 * sizes[-1]
    none = memory_per_gpu(fo.TrainingJob(**{**base, "recompute": "none"}), 80)
    # recompute_layers=0 keeps every layer's activations: as without recomputation.
    assert sizes[0] == pytest.approx(none.activations_gb, rel=0.05)


def test_layers_as_placed():
    job = fo.TrainingJob("llama3-405b", pp=16, first_stage_layers=7, last_stage_layers=7)
    # 126 - 14 = 112 layers over 14 middle ranks: 8 each, no rounding.
    assert job.stage_layers == (7,) + (8,) * 14 + (7,) and sum(job.stage_layers) == 126
    even = fo.TrainingJob("llama3-405b", pp=16)
    # 126 = 16 x 7 + 14: the first 14 ranks take 8, the last two 7.
    assert even.stage_layers == (8,) * 14 + (7,) * 2
    with pytest.raises(InvalidParameterError, match="leave 0 layers"):
        fo.TrainingJob("llama3-8b", pp=3, first_stage_layers=16, last_stage_layers=16)
    with pytest.raises(InvalidParameterError, match="need pp > 1"):
        fo.TrainingJob("llama3-8b", first_stage_layers=4)
    with pytest.raises(InvalidParameterError, match="recompute_layers needs recompute='full'"):
        fo.TrainingJob("llama3-8b", recompute_layers=2)
    with pytest.raises(InvalidParameterError, match="recompute_modules"):
        fo.TrainingJob("llama3-8b", recompute="selective", recompute_modules=["norms"])


def test_gradients_in_fp32_double_their_memory():
    args = {"model": "llama3-70b", "tp": 8, "pp": 4, "dp": 8, "global_batch": 64,
            "zero": 1}
    fp32 = memory_per_gpu(fo.TrainingJob(**args), 80)
    bf16 = memory_per_gpu(fo.TrainingJob(**args, grad_precision="bf16"), 80)
    assert fp32.gradients_gb == pytest.approx(2 * bf16.gradients_gb)
    # ZeRO-2 shards them over the 8 data-parallel ranks.
    z2 = memory_per_gpu(fo.TrainingJob(**{**args, "zero": 2}), 80)
    assert z2.gradients_gb == pytest.approx(fp32.gradients_gb / 8)
