"""An impossible serving target says what the plans reach: the fastest TPOT and TTFT, their
plans, and the least target the capacity search can meet."""

from __future__ import annotations

import json
import math

import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.workload.serving_targets import TARGET_SPARE

#: A short request shape and few simulated requests: the figures come from the analytic
#: steady state; the simulation only confirms a plan at the boundary.
SHAPE = {"prompt_len": 512, "output_len": 32, "requests": 200}


@pytest.fixture(scope="module")
def impossible():
    # 0.1 ms per output token: a decode step of an 8B model in bf16 (16 GB of weights) at
    # tp=8 still reads 2 GB per GPU at the H100's 3.35 TB/s, 0.6 ms: no plan comes near it.
    return fo.serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=2.0, tpot_s=1e-4, **SHAPE)


def test_the_fastest_tpot_is_the_boundary_of_what_the_search_meets(impossible):
    f = impossible.fastest
    assert impossible.plan is None and impossible.rate == 0.0
    assert math.isfinite(f.tpot_s) and f.tpot_plan and f.ttft_plan
    # Its own check: a target just past the fastest TPOT over the search's spare (0.9) is
    # met by a plan whose simulated p99 TPOT is within it; just short of it, by none.
    reachable = f.tpot_s / TARGET_SPARE
    met = fo.serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=2.0,
                              tpot_s=reachable * 1.001, **SHAPE)
    assert met.plan is not None and met.rate > 0 and met.tpot_p99_s <= reachable * 1.001
    short = fo.serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=2.0,
                                tpot_s=reachable * 0.999, **SHAPE)
    assert short.plan is None and short.fastest == f  # the same plans tried, the same fastest


def test_the_printout_names_the_fastest_plans_and_the_targets_to_ask(impossible):
    text = str(impossible)
    assert "no plan meets TTFT p99 <= 2 s and TPOT p99 <= 0.0001 s" in text
    f = impossible.fastest
    assert f"TPOT {f.tpot_s * 1e3:.3g} ms ({f.tpot_plan})" in text
    assert f"TTFT {f.ttft_s * 1e3:.3g} ms ({f.ttft_plan})" in text
    # --tpot: the least reachable target rounded up to 3 digits; --ttft 2 s is reachable.
    least = math.ceil(f.tpot_s / TARGET_SPARE * 1e5 - 1e-9) / 100  # ms, 3 digits (x.yz ms)
    assert f"--tpot {least:.3g}ms or more" in text and "--ttft 2s is reachable" in text


def test_serve_json_carries_the_fastest(capsys):
    code = main(["serve", "dgx_h100", "--model", "llama3-8b", "--ttft", "2s", "--tpot",
                 "0.1ms", "--prompt-len", "512", "--output-len", "32", "--requests", "200",
                 "--format", "json"])
    row = json.loads(capsys.readouterr().out)
    # No plan meets the targets: exit code 1 (the request cannot be met), as solve's.
    assert code == 1 and row["plan"] is None
    assert row["fastest_tpot_s"] > 1e-4 and row["fastest_tpot_plan"].startswith("tp=")


def test_serve_exits_0_when_a_plan_meets_the_targets(capsys):
    # The doctest's plan of serving_capacity: tp=8, batch 64 meets TTFT 0.5 s and TPOT 50 ms
    # (an 8B model decodes a step in about 2 ms on a DGX H100), so the answer has a plan.
    code = main(["serve", "dgx_h100", "--model", "llama3-8b", "--ttft", "0.5s", "--tpot",
                 "50ms", "--tp", "8", "--batch", "64", "--prompt-len", "512",
                 "--output-len", "32", "--requests", "200", "--format", "json"])
    row = json.loads(capsys.readouterr().out)
    assert code == 0 and row["plan"] is not None and row["rate"] > 0


# -- the latency floor: a target below it is missed at any load, without a simulation --

FIXED_PLAN = fo.ServingPlan(tp=8, batch=64)


def _replica(plan=FIXED_PLAN):
    from fabricopt.workload.models import model
    from fabricopt.workload.serving_replica import replica
    return replica(fo.dgx_h100(), model("llama3-8b"), plan)


@pytest.mark.parametrize("lengths", ["fixed", "exponential"])
@pytest.mark.parametrize("rate", [1.0, 400.0])  # about one request at a time; a queue
def test_no_simulated_request_is_faster_than_the_floor(lengths, rate):
    from fabricopt.workload.serving_targets import latency_floor
    ttft, tpot = latency_floor(_replica(), 512, 32, lengths)
    load = fo.simulate_serving(fo.dgx_h100(), "llama3-8b", FIXED_PLAN, rate=rate,
                               requests=300, prompt_len=512, output_len=32, lengths=lengths)
    # Every request, not only a percentile: the floor holds for each one.
    assert 0 < ttft <= load.ttft_all_s.min() and 0 < tpot <= load.tpot_all_s.min()


def test_the_analytic_full_load_figures_are_no_floor():
    # Why the floor is its own figure: throughput()'s TPOT is at full load (batch 64), far
    # above what a lone request sees, so a target between the two is met at a light load.
    from fabricopt.workload.serving_capacity import throughput
    from fabricopt.workload.serving_targets import latency_floor
    th = throughput(_replica(), 512, 32)
    assert latency_floor(_replica(), 512, 32, "fixed")[1] < th.tpot_s


def test_a_target_the_floor_allows_is_simulated_and_met():
    # Both verdicts agree where the target is met: the floor does not skip the plan
    # (target_below_floor says nothing) and the simulation finds a rate within it.
    from fabricopt.workload.serving_targets import latency_floor, target_below_floor
    ttft, tpot = latency_floor(_replica(), 512, 32, "fixed")
    assert target_below_floor(_replica(), 512, 32, "fixed", 0.5, 0.05) == ""
    c = fo.serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=0.5, tpot_s=0.05,
                            plan=FIXED_PLAN, **SHAPE)
    assert c.plan is not None and c.rate > 0
    assert ttft <= c.ttft_p50_s <= c.ttft_p99_s <= 0.5
    assert tpot <= c.tpot_p50_s <= c.tpot_p99_s <= 0.05


def test_a_fixed_plan_below_its_floor_is_not_simulated(monkeypatch):
    import importlib

    from fabricopt.workload.serving_targets import latency_floor
    sc = importlib.import_module("fabricopt.workload.serving_capacity")

    def no_search(*args, **kwargs):
        raise AssertionError("simulated a plan whose floor misses the target")

    monkeypatch.setattr(sc, "_search", no_search)
    tpot = latency_floor(_replica(), 512, 32, "fixed")[1]
    # 0.1 ms: a lone decode step reads the 8B model's 2 GB per GPU (bf16, tp=8), ~0.6 ms.
    assert tpot > 1e-4
    c = fo.serving_capacity(fo.dgx_h100(), "llama3-8b", ttft_s=2.0, tpot_s=1e-4,
                            plan=FIXED_PLAN, **SHAPE)
    assert c.plan is None and c.rate == 0.0
    note = next(n for n in c.notes if "not simulated" in n)
    assert note.startswith("tp=8, batch=64") and "TPOT is at least" in note
    assert "TTFT" not in note  # 2 s is far above a 512-token prefill
    assert "note: tp=8, batch=64" in str(c)
    # What it could ask for is the given plan's own floor, not another batch or shape.
    assert c.fastest.fixed and c.fastest.tpot_s == tpot
    assert c.fastest.tpot_plan == FIXED_PLAN.describe() == c.fastest.ttft_plan
    assert "batch=1" not in str(c) and "as given" in str(c)


def test_a_fixed_plans_floor_names_what_it_cannot_meet():
    # Below the floor: the flag and the least figure to ask (rounded up); above it, the
    # floor is not blamed. 2.16 ms and 11.3 ms: the floor serve prints for llama3-8b, tp=8.
    from fabricopt.workload.serving_targets import Fastest
    f = Fastest(0.00216, "tp=8, batch=64", 0.0113, "tp=8, batch=64", fixed=True)
    below, above = f.lines(2.0, 1e-4), f.lines(2.0, 0.003)
    assert "as given" in below[0] and "this plan needs --tpot 2.16ms or more" in below[1]
    assert "--ttft" not in below[1] and "above this plan's floor" in above[1]


@pytest.mark.parametrize(("name", "plan"), [
    ("llama3-8b", fo.ServingPlan(tp=4, pp=2, batch=32)),        # a pipeline of two stages
    ("mixtral-8x7b", fo.ServingPlan(tp=8, batch=16)),           # experts: the concave read
    ("llama3-8b", fo.ServingPlan(tp=4, batch=32, disaggregated=True)),  # KV moved between
])
@pytest.mark.parametrize("rate", [1.0, 400.0])
def test_the_floor_holds_beyond_one_dense_colocated_shape(name, plan, rate):
    # The floor rests on a step's time growing with its work and being subadditive; a
    # pipeline, experts and disaggregated prefill each add terms to the step, and no
    # simulated request of theirs is faster than the floor either.
    from fabricopt.workload.models import model
    from fabricopt.workload.serving_replica import replica
    from fabricopt.workload.serving_targets import latency_floor
    ttft, tpot = latency_floor(replica(fo.dgx_h100(), model(name), plan), 512, 32,
                               "exponential")
    load = fo.simulate_serving(fo.dgx_h100(), name, plan, rate=rate, requests=300,
                               prompt_len=512, output_len=32, lengths="exponential")
    assert 0 < ttft <= load.ttft_all_s.min() and 0 < tpot <= load.tpot_all_s.min()
