"""Serving as deployed: memory, precision, parallelism across servers, the fabric's phases,
continuous batching under load, and the capacity within latency targets."""

from __future__ import annotations

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.serving_capacity import balance, throughput
from fabricopt.workload.serving_load import Requests, poisson_requests, read_trace, run_engines
from fabricopt.workload.serving_replica import ServingPlan, replica

# Llama 3 70B: 80 layers x 2 (K and V) x 8 KV heads x 128 x 2 bytes = 327,680 bytes a token.
LLAMA70_KV = 80 * 2 * 8 * 128 * 2


# -- the replica as deployed: what it holds ---------------------------------------------------
def test_kv_cache_is_split_over_the_kv_heads_and_kept_whole_with_latent_attention():
    r8 = replica(fo.dgx_h100(), fo.model("llama3-70b"), ServingPlan(tp=8))
    assert r8.kv_bytes_per_token == LLAMA70_KV / 8
    # FP8 halves it
    r8f = replica(fo.dgx_h100(), fo.model("llama3-70b"), ServingPlan(tp=8, precision="fp8"))
    assert r8f.kv_bytes_per_token == LLAMA70_KV / 8 / 2
    # 16 GPUs cannot split 8 KV heads further: each head is kept by two GPUs.
    r16 = replica(fo.superpod(1), fo.model("llama3-70b"), ServingPlan(tp=16))
    assert r16.kv_bytes_per_token == LLAMA70_KV / 8
    # DeepSeek-V3's latent cache: 61 layers x (512 + 64) values, whole on every GPU.
    ds = replica(fo.superpod(1), fo.model("deepseek-v3"),
                 ServingPlan(tp=1, ep=32, precision="fp8"))
    assert ds.kv_bytes_per_token == 61 * (512 + 64) * 1


def test_the_largest_batch_is_the_last_that_fits():
    r = replica(fo.dgx_h100(), fo.model("llama3-70b"), ServingPlan(tp=8, precision="fp8"))
    most = r.max_batch(2304)
    assert r.memory_bytes(most, 2304) <= 80e9 < r.memory_bytes(most + 1, 2304)


def test_what_does_not_fit_is_refused_with_the_largest_batch_or_the_weights():
    # 70B on one 80 GB GPU in BF16: 141 GB of weights.
    with pytest.raises(InvalidParameterError, match=r"weights 141.1 GB .*the weights alone do "
                                                    r"not fit"):
        fo.serving_estimate(fo.dgx_h100(), "llama3-70b", tp=1)
    # 405B in BF16 on eight 80 GB GPUs: 811e9 x 2 / 8 = 101 GB each.
    with pytest.raises(InvalidParameterError, match="weights alone"):
        fo.serving_estimate(fo.dgx_h100(), "llama3-405b", tp=8)
    # DeepSeek-V3 in FP8 on eight H100: 671 GB of weights against 640.
    with pytest.raises(InvalidParameterError, match="weights alone"):
        fo.serving_estimate(fo.dgx_h100(), "deepseek-v3", tp=1, ep=8, precision="fp8")
    # A batch whose KV cache needs more than the HBM left: the message names the largest.
    r = replica(fo.dgx_h100(), fo.model("llama3-70b"), ServingPlan(tp=8, batch=4096))
    with pytest.raises(InvalidParameterError,
                       match=rf"the largest batch that fits is {r.max_batch(2304)}\b"):
        fo.serving_estimate(fo.dgx_h100(), "llama3-70b", tp=8, batch=4096)


def test_a_plan_the_model_cannot_take_is_refused():
    with pytest.raises(InvalidParameterError, match=r"tp=3 must divide llama3-70b's 64"):
        fo.serving_estimate(fo.superpod(1), "llama3-70b", tp=3)
    with pytest.raises(InvalidParameterError, match=r"ep=3 needs a mixture of experts whose"):
        fo.serving_estimate(fo.superpod(1), "deepseek-v3", tp=1, ep=3, precision="fp8")
    with pytest.raises(InvalidParameterError, match=r"ep=2 needs a mixture of experts"):
        fo.serving_estimate(fo.superpod(1), "llama3-70b", ep=2)


def test_fp4_only_where_the_gpu_has_it():
    with pytest.raises(InvalidParameterError, match=r"has no FP4 peak .*supports bf16, fp8"):
        fo.serving_estimate(fo.dgx_h100(), "llama3-70b", precision="fp4")
    b8 = fo.serving_estimate(fo.dgx_b200(), "llama3-70b", batch=64, precision="fp8")
    b4 = fo.serving_estimate(fo.dgx_b200(), "llama3-70b", batch=64, precision="fp4")
    # FP4 weights are half the bytes of FP8: decode reads less, so it is faster
    assert b4.decode_memory_s < b8.decode_memory_s and b4.tpot_s < b8.tpot_s


# -- time of a step: bounds and phases on the fabric ------------------------------------------
def test_the_certified_step_is_below_the_expected_one():
    e = fo.serving_estimate(fo.superpod(1), "llama3-70b", tp=8, batch=64, precision="fp8",
                            disaggregated=True)
    assert 0 < e.tpot_s_lower < e.tpot_s and 0 < e.ttft_s_lower < e.ttft_s
    assert 0 < e.kv_transfer_s_lower < e.kv_transfer_s


def test_wide_expert_parallelism_across_servers_is_priced_on_the_scale_out_network():
    # DeepSeek-V3 decode over 32 GPUs of 4 DGX H100: the all-to-all leaves each server, so a
    # scale-out tier binds; halving the NICs (400 -> 200 Gb/s) doubles its certified time.
    plan = ServingPlan(tp=1, ep=32, batch=64, precision="fp8")
    fast = replica(fo.cluster(fo.dgx_h100(), nodes=4, nic_gbps=400), fo.model("deepseek-v3"),
                   plan)
    slow = replica(fo.cluster(fo.dgx_h100(), nodes=4, nic_gbps=200), fo.model("deepseek-v3"),
                   plan)
    ep = fast.phases["ep"]
    assert not ep.binding_tier.startswith("gpu-nvswitch")
    assert slow.phases["ep"].seconds_per_byte == pytest.approx(2 * ep.seconds_per_byte)
    # a dispatch and a combine per MoE layer: 2 x (61 - 3)
    assert ep.count == 2 * 58
    t_fast = fast.step_seconds(64.0, 0.0, 64 * 2048.0, 0.0)
    t_slow = slow.step_seconds(64.0, 0.0, 64 * 2048.0, 0.0)
    assert t_slow > t_fast


def test_tensor_parallel_phase_inside_a_server_stays_on_nvlink():
    r = replica(fo.superpod(1), fo.model("llama3-70b"), ServingPlan(tp=8))
    assert r.phases["tp"].binding_tier == "gpu-nvswitch"
    assert r.phases["tp"].count == 2 * 80   # two all-reduces a layer


# -- continuous batching, disaggregation ------------------------------------------------------
def test_disaggregated_throughput_is_capped_by_its_prefill():
    # The defect: prefill's capacity was ignored. Now the split serves both sides alike.
    r = replica(fo.superpod(1), fo.model("llama3-70b"), ServingPlan(tp=8, batch=64,
                                                                    disaggregated=True))
    th = throughput(r, 2048, 256)
    t_p = float(r.step_seconds(0.0, 2048.0, 0.0, 2048.0 ** 2 / 2))
    mu_p = 2048 / (2048 * t_p)           # prompts per second of one prefill replica
    assert th.rate <= th.prefill_replicas * mu_p * (1 + 1e-9)
    mu_d = 64 / (255 * th.tpot_s)
    assert th.rate <= th.decode_replicas * mu_d * (1 + 1e-9)
    assert th.prefill_replicas + th.decode_replicas == 32


def test_balance_maximises_the_smaller_side():
    n_p, n_d = balance(3.0, 1.0, 32)
    value = min(n_p * 3.0, n_d * 1.0)
    assert all(min(k * 3.0, (32 - k) * 1.0) <= value for k in range(1, 32))


def _constant_step(d, c, kv, pairs):
    """A toy engine: 10 ms a step plus 0.01 ms per prefill token."""
    return 0.01 + 1e-5 * np.asarray(c, float)


def test_engine_simulation_at_light_load_takes_one_step_per_token():
    # one request a second: none overlap
    req = Requests(np.arange(100.0), np.full(100, 100), np.full(100, 20))
    first, last = run_engines(req.arrival_s, req.prompt_tokens, req.prompt_tokens,
                              req.output_tokens - 1, np.zeros(100, np.int64), 1, 8, 512,
                              _constant_step)
    # TTFT: one step with the 100-token prompt, 10 + 1 ms; then 19 steps of 10 ms.
    assert np.allclose(first - req.arrival_s, 0.011, atol=1e-8)
    assert np.allclose(last - first, 19 * 0.01, atol=1e-8)


def test_engine_simulation_conserves_requests_and_tokens_under_load():
    req = poisson_requests(200.0, 3000, 300, 50, lengths="exponential", seed=3)
    engine = np.arange(3000) % 4
    first, last = run_engines(req.arrival_s, req.prompt_tokens, req.prompt_tokens,
                              req.output_tokens - 1, engine, 4, 16, 1024, _constant_step)
    assert np.isfinite(first).all() and np.isfinite(last).all()   # every request served
    assert (first >= req.arrival_s + 0.01).all()                   # at least one step
    # a request decodes one token a step, each step at least 10 ms
    assert (last - first >= (req.output_tokens - 1) * 0.01 - 1e-9).all()


def test_overload_grows_the_queue():
    r = replica(fo.dgx_h100(), fo.model("llama3-8b"), ServingPlan(tp=8, batch=8))
    cap = throughput(r, 256, 16).rate
    s = fo.simulate_serving(fo.dgx_h100(), "llama3-8b", ServingPlan(tp=8, batch=8),
                            rate=2 * cap, requests=2000, prompt_len=256, output_len=16)
    # At twice the rate served, the queue (and TTFT) grows with time, about t / 2: the last
    # tenth of the requests wait several times as long as the first tenth after the warm-up.
    early, late = s.ttft_all_s[:180], s.ttft_all_s[-180:]
    assert late.mean() > 4 * early.mean()


def test_a_trace_is_read_and_served_like_the_same_poisson_arrivals(tmp_path):
    req = poisson_requests(20.0, 300, 200, 10, lengths="lognormal", seed=5)
    path = tmp_path / "trace.csv"
    rows = ["arrival_s,prompt_tokens,output_tokens,user"] + [
        f"{float(a)!r},{p},{o},x" for a, p, o in zip(req.arrival_s, req.prompt_tokens,
                                              req.output_tokens, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    back = read_trace(path)
    assert np.array_equal(back.prompt_tokens, req.prompt_tokens)
    plan = ServingPlan(tp=8, batch=16)
    a = fo.simulate_serving(fo.dgx_h100(), "llama3-8b", plan, trace=path)
    b = fo.simulate_serving(fo.dgx_h100(), "llama3-8b", plan, trace=req)
    assert a.ttft_s == b.ttft_s and a.tpot_s == b.tpot_s


def test_a_bad_trace_is_refused_with_its_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0.1,100,10\n0.2,1.5,10\n")
    with pytest.raises(InvalidParameterError,
                       match=r"simulate_serving\(\): trace: .*line 3, column prompt_tokens"):
        fo.simulate_serving(fo.dgx_h100(), "llama3-8b", ServingPlan(tp=8), trace=path)
    path.write_text("time,prompt\n0.1,100\n")
    with pytest.raises(InvalidParameterError, match="lacks column"):
        fo.simulate_serving(fo.dgx_h100(), "llama3-8b", ServingPlan(tp=8), trace=path)


# -- capacity within targets ------------------------------------------------------------------
def test_capacity_meets_its_targets_and_prices_its_tokens_with_token_cost():
    fab = fo.dgx_h100()
    plan = ServingPlan(tp=8, batch=32, precision="fp8")
    c = fo.serving_capacity(fab, "llama3-8b", ttft_s=0.3, tpot_s=0.02, prompt_len=512,
                            output_len=32, plan=plan, requests=400)
    assert c.rate > 0 and c.plan == plan
    assert c.ttft_p99_s <= 0.3 and c.tpot_p99_s <= 0.02
    assert c.ttft_p50_s <= c.ttft_p90_s <= c.ttft_p99_s
    # the one cost model: token_cost at the output tokens per second
    assert c.usd_per_million_tokens == pytest.approx(
        fo.token_cost(fab, c.rate * 32).usd_per_million_tokens)
    # never beyond what the plan sustains (its analytic steady state)
    r = replica(fab, fo.model("llama3-8b"), plan)
    assert c.rate <= throughput(r, 512, 32).rate


def test_capacity_reports_no_plan_when_targets_are_out_of_reach():
    # A 70B decode step reads at least 8.8 GB per GPU at 3.35 TB/s: 2.6 ms > 1 ms.
    c = fo.serving_capacity(fo.dgx_h100(), "llama3-70b", ttft_s=1.0, tpot_s=0.001,
                            prompt_len=512, output_len=32, precision="fp8", requests=200)
    assert c.rate == 0 and c.plan is None
    assert all(row["lost"] for row in c.table)


# -- the command line -------------------------------------------------------------------------
def test_serve_on_the_command_line_answers_each_question(capsys):
    import json

    from fabricopt.cli import main

    common = ["serve", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--batch", "16",
              "--prompt-len", "256", "--output-len", "8", "--precision", "fp8",
              "--format", "json"]
    assert main(common) == 0                                  # one batch
    one = json.loads(capsys.readouterr().out)
    e = fo.serving_estimate(fo.dgx_h100(), "llama3-8b", tp=8, batch=16, prompt_len=256,
                            output_len=8, precision="fp8")
    assert one["tpot_s"] == pytest.approx(e.tpot_s)
    assert main([*common, "--rate", "20", "--requests", "200"]) == 0       # a load
    load = json.loads(capsys.readouterr().out)
    assert load["requests"] == 200 and load["ttft_p99_s"] >= load["ttft_p50_s"] > 0
    assert main([*common, "--ttft", "0.3", "--tpot", "0.02", "--requests", "200"]) == 0
    cap = json.loads(capsys.readouterr().out)                 # the capacity within targets
    assert cap["rate"] > 0 and cap["ttft_p99_s"] <= 0.3 and cap["tpot_p99_s"] <= 0.02
    assert cap["plan"].startswith("tp=8, batch=16")
    # The targets take units: 300ms and 20ms are the same search, the same answer.
    assert main([*common, "--ttft", "300ms", "--tpot", "20ms", "--requests", "200"]) == 0
    assert json.loads(capsys.readouterr().out) == cap
    with pytest.raises(SystemExit) as stop:  # argparse's own exit, the flag named
        main([*common, "--ttft", "2x", "--tpot", "20ms"])
    assert stop.value.code == 2
    assert "argument --ttft: '2x' is not a duration > 0" in capsys.readouterr().err


def test_goodput_past_saturation_is_what_is_served_not_what_arrives(capsys):
    # 1,000 requests/s offered to one DGX H100 serving llama3-70b in fp8, which serves
    # about 9/s (2,168 output tokens/s over 256 tokens a request): with no targets every
    # request counts, so goodput is the rate they are served at. The arrivals of the kept
    # requests span 0.3 s; counting over that read 866/s.
    load = fo.simulate_serving(fo.dgx_h100(), "llama3-70b", fo.ServingPlan(precision="fp8"),
                               rate=1000, requests=300)
    served = load.tokens_per_s / 256  # the whole run's rate, first arrival to last token
    assert load.attainment == 1.0 and 0.8 * served <= load.goodput <= 1.2 * served
    assert main(["serve", "dgx_h100", "--model", "llama3-70b", "--precision", "fp8",
                 "--rate", "1000", "--requests", "300"]) == 0
    assert "served (no --ttft or --tpot given" in capsys.readouterr().out
