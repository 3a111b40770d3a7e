"""Bad input to the job layer, refused before any work: the GPU a job names against the one
its fabric carries, models whose fields contradict each other, a PUE below 1 and figures that
overflow (issue 44, "Hardening, third pass", rows 5, 9 and 11)."""

from __future__ import annotations

import math

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError


def _job(**kw):
    return fo.TrainingJob("llama3-8b", **{"tp": 8, "global_batch": 8, "seq_len": 1024, **kw})


def _tiny(**kw):
    """A model of 2 layers, hidden 64 over 4 heads of 16."""
    return {"name": "tiny", "layers": 2, "hidden": 64, "ffn": 256, "heads": 4, "vocab": 1000,
            **kw}


def _unnamed_dgx_h100() -> fo.Fabric:
    """A DGX H100 whose GPUs name no model: its NVSwitch gen 3 chips alone say DGX H100."""
    fab = fo.dgx_h100()
    for gpu in fab.endpoints:
        del fab.graph.nodes[gpu]["gpu_model"]
    return fab


# -- row 5: the GPU a job names is the GPU its fabric carries --------------------------------

def test_a_misspelt_gpu_is_refused_with_a_suggestion():
    # was accepted: gpu was only checked to be a string, and priced as the fabric's servers
    with pytest.raises(InvalidParameterError, match=r"token_cost\(\): gpu must be one of .*"
                                                    r"did you mean 'b200'"):
        fo.token_cost(fo.dgx_h100(), 1e6, gpu="b201")


@pytest.mark.parametrize("call", [
    lambda: fo.token_cost(fo.superpod(1), 1e6, gpu="b200"),
    lambda: fo.training_step(fo.dgx_h100(), _job(gpu="b200")),
    lambda: fo.training_metrics(fo.dgx_h100(), _job(gpu="b200")),
    lambda: fo.serving_estimate(fo.dgx_h100(), "llama3-8b", gpu="b200"),
    lambda: fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=8, seq_len=1024,
                         constraints={"gpu": "b200"}),
])
def test_a_gpu_the_fabric_does_not_carry_is_refused(call):
    # Was: B200 speeds (2,250 dense BF16 TFLOP/s) on DGX H100 servers, priced as DGX H100.
    with pytest.raises(InvalidParameterError,
                       match=r"gpu must be the GPU the fabric's nodes carry, 'h100_sxm' .*"
                             r"got 'b200'"):
        call()


def test_the_gpu_the_fabric_carries_is_the_default_and_may_be_named():
    # token_cost's gpu defaulted to "h100_sxm" whatever the fabric: now the fabric's own.
    # One DGX B200 is the catalog's $515,000 system.
    assert fo.token_cost(fo.dgx_b200(), 1e6).servers_capex_usd == pytest.approx(515_000)
    assert fo.token_cost(fo.dgx_b200(), 1e6, gpu="b200").servers_capex_usd == \
        pytest.approx(515_000)
    # A GB200 NVL72 is one rack of 72 GPUs: the catalog's $2,500,000 rack.
    assert fo.token_cost(fo.gb200_nvl72(), 1e6).servers_capex_usd == pytest.approx(2_500_000)


def test_on_gpus_that_name_no_model_the_price_follows_the_gpu_used():
    fab = _unnamed_dgx_h100()
    # Its chips say DGX H100 ($270,000 in the catalog); run as H200 it is a DGX H200
    # ($340,000), not a DGX H100 holding H200s (was priced as one).
    h200 = fo.token_cost(fab, 1e6, gpu="h200_sxm")
    assert h200.servers_capex_usd == pytest.approx(340_000)
    assert any("servers priced as dgx_h200" in n for n in h200.notes)
    # Its own GPUs by the chips: H100, priced as the DGX H100 it is.
    assert fo.token_cost(fab, 1e6).servers_capex_usd == pytest.approx(270_000)
    # A job may name the GPU of a fabric whose GPUs name none.
    assert fo.training_step(fab, _job(gpu="h200_sxm")).gpu.key == "h200_sxm"


def test_on_a_fabric_of_two_models_one_of_them_may_be_named():
    fab = fo.dgx_h100()
    fab.graph.nodes["gpu3"]["gpu_model"] = "h200_sxm"
    assert fo.training_step(fab, _job(gpu="h200_sxm")).gpu.key == "h200_sxm"
    with pytest.raises(InvalidParameterError, match=r"'h100_sxm' or 'h200_sxm'"):
        fo.training_step(fab, _job(gpu="b200"))


# -- row 9: a model's fields, and the sequence under sequence parallelism ---------------------

@pytest.mark.parametrize(("extra", "match"), [
    # "no" is a non-empty string: read as True (a gated MLP) before; named ModelConfig()
    ({"gated_mlp": "no"}, r"model\(\): gated_mlp must be True or False, got 'no'"),
    # hidden // heads = 4 // 8 = 0: heads of width 0, attention of no weights, accepted
    ({"hidden": 4, "heads": 8}, r"model\(\): head_dim must be given \(> 0\) when heads \(8\) "
                                r"does not divide hidden \(4\)"),
    # 66 / 4 = 16.5: heads of 16 silently
    ({"hidden": 66}, r"head_dim must be given .* hidden \(66\)"),
    # top_k on a dense model (experts=0): accepted and ignored
    ({"top_k": 2}, r"model\(\): top_k=2 is for a mixture of experts, but experts=0 makes "
                   r"'tiny' dense"),
    ({"shared_experts": 1}, r"shared_experts=1 is for a mixture of experts"),
    ({"dense_layers": 1}, r"dense_layers=1 is for a mixture of experts"),
    # rope_head_dim without MLA: counted in the attention FLOPs, not in the weights
    ({"rope_head_dim": 8}, r"rope_head_dim=8 is for multi-head latent attention, which "
                           r"kv_lora_rank > 0 turns on"),
    ({"v_head_dim": 8}, r"v_head_dim=8 is for multi-head latent attention"),
])
def test_contradicting_model_fields_are_refused(extra, match):
    with pytest.raises(InvalidParameterError, match=match):
        fo.model(_tiny(**extra))


def test_a_job_names_itself_for_its_model_s_fields():
    with pytest.raises(InvalidParameterError,
                       match=r"TrainingJob\(\): model: model\(\): gated_mlp must be True"):
        fo.TrainingJob(_tiny(gated_mlp="no"))


def test_head_dim_zero_means_hidden_over_heads():
    # Documented: 0 (TOML has no None) is the default, hidden / heads = 64 / 4 = 16.
    assert fo.model(_tiny(head_dim=0)).head_dim == 16
    assert fo.model(_tiny(head_dim=24)).head_dim == 24  # given, it stands
    # Given, it may be anything heads do not divide into: 66 over 4 heads of 24.
    assert fo.model(_tiny(hidden=66, head_dim=24)).head_dim == 24


def test_the_sequence_splits_over_tp_under_sequence_parallelism():
    # 1001 tokens over 8 tensor ranks: 125.125 each; was accepted
    with pytest.raises(InvalidParameterError,
                       match=r"TrainingJob\(\): seq_len=1001 must split over tp=8 under "
                             r"sequence parallelism.*a multiple of cp x tp = 8"):
        _job(seq_len=1001)
    # With context parallelism a context rank holds seq_len / cp = 4096 / 2 = 2048 tokens,
    # which 8 tensor ranks split; 4100 / 2 = 2050 they do not (2050 / 8 = 256.25).
    assert _job(seq_len=4096, cp=2).seq_len == 4096
    with pytest.raises(InvalidParameterError, match=r"multiple of cp x tp = 16"):
        _job(seq_len=4100, cp=2)
    # Without sequence parallelism every tensor rank holds the whole sequence.
    assert not _job(seq_len=1001, sequence_parallel=False).sequence_parallel
    # One tensor rank splits nothing.
    assert _job(seq_len=1001, tp=1).tp == 1


# -- row 11: PUE at least 1, and no figure that overflows --------------------------------------

@pytest.mark.parametrize("call", [
    lambda: fo.token_cost(fo.dgx_h100(), 1e6, pue=0.5),  # was accepted: energy at half
    lambda: fo.estimate_tco(fo.ring(4, link_gbps=400), pue=0.5),
    lambda: fo.training_metrics(fo.dgx_h100(), _job(), pue=0.5),
    lambda: fo.PlanSearch("llama3-8b", global_batch=8, seq_len=1024, pue=0.5),
    lambda: fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=8, seq_len=1024, pue=0.5),
])
def test_a_pue_below_one_is_refused(call):
    with pytest.raises(InvalidParameterError, match=r"pue must be a power usage effectiveness "
                                                    r">= 1.*got 0.5"):
        call()


def test_a_pue_of_one_is_the_it_load_alone():
    # One DGX H100: 10,200 W at PUE 1 and $0.08/kWh is 10.2 kW x 0.08 / 3600 s = 2.267e-4
    # $/s of energy; at PUE 1.2 it is 1.2 times that.
    at_1 = fo.token_cost(fo.dgx_h100(), 1e6, pue=1.0)
    at_12 = fo.token_cost(fo.dgx_h100(), 1e6, pue=1.2)
    energy_1 = 10_200 * 0.08 / 3.6e6
    assert at_12.usd_per_s - at_1.usd_per_s == pytest.approx(0.2 * energy_1)


@pytest.mark.parametrize(("call", "match"), [
    # capex over 1e-320 years: $inf per million tokens
    (lambda: fo.token_cost(fo.dgx_h100(), 1e6, years=1e-320),
     r"token_cost\(\): the cost per million tokens overflows a float .*years=1e-320"),
    (lambda: fo.token_cost(fo.dgx_h100(), 1e-320),
     r"token_cost\(\): the cost per million tokens overflows .*tokens_per_s=1e-320"),
    # energy, maintenance and total printed as inf USD
    (lambda: fo.estimate_tco(fo.ring(4, link_gbps=400), years=1e308),
     r"estimate_tco\(\): the total cost overflows a float \(energy, maintenance at "
     r"years=1e\+308"),
    (lambda: fo.estimate_tco(fo.ring(4, link_gbps=400), usd_per_kwh=1e308),
     r"estimate_tco\(\): the total cost overflows a float \(energy at .*usd_per_kwh=1e\+308"),
    # the step was inf s and its tokens per second nan
    (lambda: _job(compute_efficiency=1e-320),
     r"TrainingJob\(\): compute_efficiency must be a fraction of the GPU's peak from 0.001 "
     r"to 1, got 1e-320"),
    (lambda: fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=8, seq_len=1024,
                          constraints={"compute_efficiency": 1e-320}),
     r"best_plan\(\): constraints\['compute_efficiency'\] must be a fraction from 0.001 to 1"),
])
def test_figures_that_overflow_are_refused_naming_their_arguments(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_the_least_compute_efficiency_still_runs():
    step = fo.training_step(fo.dgx_h100(), _job(compute_efficiency=1e-3))
    assert all(math.isfinite(v) for v in (step.step_s, step.tokens_per_s, step.mfu))
    assert step.tokens_per_s > 0


def test_a_memory_limit_no_plan_fits_names_the_constraint():
    # was "fits in 1e-320 GB per GPU ... (infx) too much", naming neither
    with pytest.raises(InvalidParameterError) as exc:
        fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=8, seq_len=1024,
                     constraints={"max_memory_gb": 1e-320})
    text = str(exc.value)
    assert "constraints['max_memory_gb'] = 1e-320 GB per GPU (of the GPU's 80)" in text
    assert "infx" not in text


@pytest.mark.filterwarnings("ignore::UserWarning")  # 1e-320 Gb/s is outside the plausible
def test_links_too_slow_for_a_float_are_named():
    # A message of 1 byte over 1e-320 Gb/s overflows: the phase's time is infinite, and the
    # message said only that the traffic had no path.
    with pytest.raises(InvalidParameterError, match=r"or links too slow to carry a byte in "
                                                    r"a time a float holds \(down to 1e-320"):
        fo.training_step(fo.ring(8, link_gbps=1e-320), _job())


# -- serving: what does not fit in HBM ---------------------------------------------------------

def test_a_serving_replica_that_does_not_fit_in_hbm_is_refused():
    # Llama 3 70B on one H100: 70.6e9 weights x 2 bytes = 141.1 GB of an 80 GB GPU; the
    # estimate came back as if the weights fit.
    with pytest.raises(InvalidParameterError,
                       match=r"serving_estimate\(\): llama3-70b at tp=1, ep=1 does not fit in "
                             r"the 80 GB of a h100_sxm GPU: weights 141.1 GB"):
        fo.serving_estimate(fo.dgx_h100(), "llama3-70b", tp=1)
    # A batch whose KV cache outgrows the HBM: 10**12 requests of 2,304 tokens at 327,680
    # bytes a token (80 layers x 2 x 8 KV heads x 128 x 2 bytes) over 8 GPUs.
    with pytest.raises(InvalidParameterError, match=r"KV cache 9.437e\+10 GB \(batch="):
        fo.serving_estimate(fo.dgx_h100(), "llama3-70b", tp=8, batch=10**12)
    # Over 8 GPUs it fits: 17.6 GB of weights + 16 x 2,304 x 327,680 / 8 = 1.5 GB of KV.
    assert fo.serving_estimate(fo.dgx_h100(), "llama3-70b", tp=8, batch=16).tokens_per_s > 0
