"""Overlap as schedules run it, phases at their real size, compute per precision."""

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.compute import stage_flops
from fabricopt.workload.overlap import schedule


def _step(fab, **kw):
    args = {"model": "mixtral-8x7b", "tp": 2, "pp": 2, "cp": 2, "ep": 4, "dp": 2,
            "global_batch": 32, "seq_len": 8192}
    return fo.training_step(fab, fo.TrainingJob(**{**args, **kw}))


@pytest.fixture(scope="module")
def pod():
    return fo.superpod(1)


def test_more_overlap_is_never_slower_and_bounds_hold(pod):
    steps = {how: _step(pod, overlap=how) for how in ("none", "default", "full")}
    assert steps["none"].step_s >= steps["default"].step_s >= steps["full"].step_s
    for s in steps.values():
        assert s.step_s >= s.step_s_lower > 0
        assert set(s.phases) == {"tp", "cp", "ep", "pp", "dp"}
        for p in s.phases.values():
            assert p.expected_s >= p.lower_s > 0
            assert 0 <= p.exposed_lower_s <= p.lower_s * (1 + s.job.bubble_fraction) + 1e-12
    # Without overlap every message is on the critical path (tensor, context and expert ones
    # also stretched by the bubble); the pipeline's 2 (v m + p - 1) sends out of 2 v m.
    none = steps["none"]
    b = none.job.bubble_fraction
    for d in ("tp", "cp", "ep"):
        assert none.phases[d].exposed_s == pytest.approx(none.phases[d].expected_s * (1 + b))
    m = none.job.micro_batches
    assert none.phases["pp"].exposed_s == pytest.approx(
        none.phases["pp"].expected_s * (m + 1) / m)
    assert none.phases["dp"].exposed_s == pytest.approx(none.phases["dp"].expected_s)


def test_schedule_hides_what_each_overlap_names():
    job = dict(model="llama3-8b", tp=8, pp=2, dp=1, global_batch=8)
    comm = {"tp": 0.5, "cp": 0.3, "ep": 0.4, "pp": 0.08, "dp": 0.2}
    kinds = {"dp": [{"collective": "all_reduce", "count": 1, "message_bytes": 4e8,
                     "seconds": 0.2}]}
    # m = 8 micro-batches, p = 2, v = 1: bubble 1/8; compute 1.0 s, attention 0.2 s.
    none = schedule(fo.TrainingJob(**job, overlap="none"), 1.0, 0.2, comm, kinds)
    assert none.step == pytest.approx((1 + 0.5 + 0.3 + 0.4) * 9 / 8 + 0.08 * 18 / 16 + 0.2)
    default = schedule(fo.TrainingJob(**job), 1.0, 0.2, comm, kinds)
    # default: CP under attention (0.3 - 0.2), sends only in the fill and drain (2 of 16), the
    # all-reduce under one micro-batch (0.2 - 1/8, more than its last 40 MB bucket).
    assert default.exposed["cp"] == pytest.approx(0.1 * 9 / 8)
    assert default.step == pytest.approx((1 + 0.5 + 0.1 + 0.4) * 9 / 8 + 0.08 * 2 / 16
                                         + (0.2 - 1 / 8))
    full = schedule(fo.TrainingJob(**job, overlap="full"), 1.0, 0.2, comm, kinds)
    # full: TP pipelined with its GEMMs, one of 8 chunks exposed (0.5 - 0.8 < 0.5 / 8); EP
    # under the compute (0.4 < 1.0): hidden.
    assert full.exposed["tp"] == pytest.approx(0.5 / 8 * 9 / 8)
    assert full.exposed["ep"] == 0
    assert full.step < default.step < none.step


def test_a_dgx_trains_as_fast_alone_as_cabled_into_a_superpod():
    # TP inside one server runs on its NVLink in the expected figure, whatever the NICs add
    # to the certified bound: the same DGX is not faster once it has a network.
    job = fo.TrainingJob("llama3-8b", tp=8, dp=1, global_batch=8, seq_len=4096)
    alone = fo.training_step(fo.dgx_h100(), job)
    cabled = fo.training_step(fo.superpod(1), job)
    assert cabled.phases["tp"].expected_s == pytest.approx(alone.phases["tp"].expected_s)
    assert cabled.step_s == pytest.approx(alone.step_s)
    # 8 x H100: 18 NVLink 4 links of 25 GB/s per GPU at the ring efficiency 370/450 (busbw
    # measured on 8 x H100): an all-gather of S sends 7/8 S per GPU, plus NCCL's ring latency
    # 8.4 + 7 x 3.4 us.
    tp = alone.phases["tp"]
    msg = tp.messages[0]
    per_msg = 7 / 8 * msg["message_bytes"] / 370e9 + (8.4 + 7 * 3.4) * 1e-6
    assert msg["expected_s"] == pytest.approx(msg["count"] * per_msg)


def test_small_messages_pay_their_latency():
    tiny = fo.model({"name": "tiny", "layers": 4, "hidden": 256, "ffn": 1024, "heads": 8,
                     "vocab": 1000})
    big = fo.TrainingJob("llama3-8b", tp=8, dp=1, global_batch=8, seq_len=8192)
    small = fo.TrainingJob(tiny, tp=8, dp=1, global_batch=8, seq_len=128)
    fab = fo.dgx_h100()
    ratio = {name: s.phases["tp"].expected_s / s.phases["tp"].lower_s
             for name, s in (("big", fo.training_step(fab, big)),
                             ("small", fo.training_step(fab, small)))}
    # 128 x 256 x 2 bytes = 64 kB messages are latency-bound; 8192 x 4096 x 2 = 64 MiB ones
    # run near the bandwidth: 7/8 S at 370 GB/s plus the 8.4 + 7 x 3.4 us ring latency,
    # against the bound's 7/8 S at 450 GB/s.
    assert ratio["small"] > 5 * ratio["big"]
    size = 7 / 8 * 8192 * 4096 * 2
    assert ratio["big"] == pytest.approx((size / 370e9 + 32.2e-6) / (size / 450e9))


def test_fp8_needs_a_gpu_that_has_it():
    job = fo.TrainingJob("llama3-8b", tp=8, dp=1, global_batch=8, precision="fp8")
    with pytest.raises(InvalidParameterError, match="fp8"):
        fo.training_step(fo.dgx_a100(), job)
    assert fo.training_step(fo.dgx_a100(), fo.TrainingJob(**{**job.__dict__,
                                                             "precision": "bf16"})).mfu > 0


def test_recomputation_adds_its_forward_pass():
    base = dict(model="llama3-70b", tp=8, pp=4, dp=1, global_batch=8, seq_len=4096)
    plain = stage_flops(fo.TrainingJob(**base), 1)
    full = stage_flops(fo.TrainingJob(**base, recompute="full"), 1)
    # A forward pass is a third of forward + backward.
    assert full.gemm == pytest.approx(plain.gemm * 4 / 3)
    assert full.attention == pytest.approx(plain.attention * 4 / 3)
    attn = stage_flops(fo.TrainingJob(**base, recompute="selective"), 1)
    assert attn.gemm == plain.gemm and attn.attention == pytest.approx(plain.attention * 4 / 3)
    # Half the layers recomputed: half the extra work.
    half = stage_flops(fo.TrainingJob(**base, recompute="full", recompute_layers=10), 1)
    assert half.gemm == pytest.approx(plain.gemm * 7 / 6)
    # The first rank has no output head; the last has its 6 V h per token.
    last = stage_flops(fo.TrainingJob(**base), 3)
    assert last.head == pytest.approx(6 * 128256 * 8192 * 4096 / 8)


def test_hardware_flops_count_recomputation_and_model_flops_do_not(pod):
    base = dict(model="llama3-70b", tp=8, pp=4, global_batch=64, seq_len=4096)
    plain = fo.training_step(pod, fo.TrainingJob(**base))
    full = fo.training_step(pod, fo.TrainingJob(**base, recompute="full"))
    # Model FLOPs per step are the same; the hardware runs 4/3 of them (PaLM's 6N + 12 L a d s
    # per token counts the output head, which is not recomputed: a little under 4/3).
    assert full.mfu * full.step_s == pytest.approx(plain.mfu * plain.step_s)
    ratio = full.hardware_flops / plain.hardware_flops
    assert 1.3 < ratio < 4 / 3
    assert plain.hardware_flops == pytest.approx(
        plain.job.model.flops_per_token(4096) * 64 * 4096, rel=0.01)
