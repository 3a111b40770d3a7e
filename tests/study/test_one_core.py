"""compare and optimize on one core: the same figure under the same name, constraints on
certified figures, one meaning of progress."""

import pytest

import fabricopt as fo
from fabricopt.study.metrics import CONSTRAINTS, METRICS, MetricContext, compute_metrics

# 8 servers of 2 GPUs (one NVSwitch each), 400G NICs, radix-8 rail leaves: 16 GPUs.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized"], "scale_up": [DOMAIN], "leaf_radix": [8],
         "oversubscription": [1.0, 3.0]}
CONSTRAINED = {"all_to_all_gbps_per_gpu": 1.0, "bisection_gbps_per_gpu": 1.0,
               "all_reduce_busbw_GBps": 1.0}


def test_compare_and_optimize_give_the_same_figures_under_the_same_names():
    res = fo.optimize(16, space=SPACE, constraints=CONSTRAINED, prune=False, full_front=True)
    for row in res.rows:
        c = res.candidates[row["name"]]
        [ref] = fo.compare(c.build(), metrics=["all_to_all", "bisection", "all_reduce",
                                               "cost"]).rows
        for column in ("all_to_all_gbps_per_gpu", "all_to_all_gbps_per_gpu_upper",
                       "bisection_gbps_per_gpu", "all_reduce_busbw_GBps", "capex_usd",
                       "power_w", "capex_per_gpu_usd", "usd_per_delivered_gbps"):
            assert row[column] == pytest.approx(ref[column]), column


def test_every_constraint_reads_a_column_its_metric_computes():
    fab = fo.dgx_h100()
    ctx = MetricContext(job=fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=4096),
                        serving={"model": "llama3-8b", "ttft_s": 0.5, "tpot_s": 0.05,
                                 "prompt_len": 128, "output_len": 8, "requests": 100,
                                 "plan": {"tp": 8, "batch": 8}})
    for key, (metric, column, sense) in CONSTRAINTS.items():
        assert metric in METRICS and sense in ("at least", "at most")
        assert column in compute_metrics(fab, [metric], ctx), key


def test_floor_constraints_read_the_certified_lower_end():
    # ring(8) of 400G links: the all-reduce bound (any-scheme cut) is above what the best
    # known schedule achieves, so a target between them must fail: a design passes only on a
    # figure some schedule reaches.
    fab = fo.ring(8, link_gbps=400)
    row = compute_metrics(fab, ["all_reduce"], MetricContext())
    achievable, bound = row["all_reduce_busbw_GBps"], row["all_reduce_busbw_GBps_upper"]
    assert achievable <= bound
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    assert achievable == pytest.approx(c.achievable_busbw_GBps)
    assert bound == pytest.approx(c.busbw_GBps)


def test_one_meaning_of_progress():
    seen_compare, seen_optimize = [], []
    fo.compare([fo.ring(4), fo.ring(6)], metrics=["summary"],
               progress=lambda done, total: seen_compare.append((done, total)))
    assert seen_compare == [(1, 2), (2, 2)]
    res = fo.optimize(16, space=SPACE, progress=lambda d, t: seen_optimize.append((d, t)))
    decided = [r for r in res.rows if r["outcome"] != "pruned" or "priced" in r["reason"]]
    assert seen_optimize and seen_optimize[-1][0] == len(decided)
    for bad in ("yes", 3):
        with pytest.raises(fo.InvalidParameterError, match="progress"):
            fo.compare(fo.ring(4), progress=bad)
        with pytest.raises(fo.InvalidParameterError, match="progress"):
            fo.optimize(16, space=SPACE, progress=bad)


def test_the_written_design_keeps_its_optics_policy(tmp_path):
    space = {**SPACE, "policy": ["power"]}
    res = fo.optimize(16, space=space, constraints={"all_to_all_gbps_per_gpu": 300})
    path = res.write_design(tmp_path / "best.toml")
    fab = fo.load_design(path)
    assert fab.design["policy"] == "power"
    # Priced with the same policy as in the search, so the capex is the row's.
    assert fo.estimate_cost(fab).capex_usd == pytest.approx(res.best["capex_usd"])


def test_optimize_runs_a_training_job_on_every_candidate():
    job = fo.TrainingJob("llama3-8b", tp=2, pp=1, global_batch=64, seq_len=4096)
    res = fo.optimize(16, space=SPACE, job=job, prune=False, full_front=True)
    for row in res.rows:
        # The same figure compare gives for the same fabric and job.
        ref = compute_metrics(res.candidates[row["name"]].build(), ["training"],
                              MetricContext(job=job))
        assert row["training_tokens_per_s"] == pytest.approx(ref["training_tokens_per_s"])
        assert row["training_step_s"] >= row["training_step_s_lower"]
    # The cheapest per token is the one the objective picks.
    best = fo.optimize(16, space=SPACE, job=job, objective="training_usd_per_million_tokens")
    assert best.best["training_usd_per_million_tokens"] == pytest.approx(
        min(r["training_usd_per_million_tokens"] for r in res.rows))
    # A target above every candidate's expected tokens per second is met by none.
    top = max(r["training_tokens_per_s"] for r in res.rows)
    assert fo.optimize(16, space=SPACE, job=job,
                       constraints={"training_tokens_per_s": top * 1.01}).best is None
    with pytest.raises(fo.InvalidParameterError, match="job"):
        fo.optimize(16, space=SPACE, constraints={"training_tokens_per_s": 1.0})


def test_compare_runs_one_training_job_on_every_design():
    job = {"model": "llama3-8b", "tp": 8, "global_batch": 64, "seq_len": 4096}
    one, two = fo.compare([fo.dgx_h100(), fo.superpod(1)], metrics=["training"], job=job)
    assert one["error"] == two["error"] == ""
    # 32 DGX H100 servers hold 32 times the data-parallel ranks of one: more tokens per second,
    # never more than 32 times (the step only gains communication).
    assert one["training_tokens_per_s"] < two["training_tokens_per_s"]
    assert two["training_tokens_per_s"] <= 32 * one["training_tokens_per_s"] * (1 + 1e-9)
    # Without a job every row would fail alike: refused once, before any work, in words
    # that name the argument and the command line's flags.
    with pytest.raises(fo.InvalidParameterError, match=r"compare\(\): job must be .* "
                       r"--job FILE, or --model NAME .* none: DGX H100"):
        fo.compare(fo.dgx_h100(), metrics=["training"])


def test_a_single_switch_failure_constraint_reads_the_n1_table():
    # At 3:1 the radix-8 rail leaves need one spine: its failure splits the rails (0 Gb/s);
    # at 1:1 the spines are several, and no single failure cuts a GPU off.
    res = fo.optimize(16, space=SPACE, constraints={"n1_switch_worst_gbps_per_gpu": 100},
                      prune=False)
    by_ratio = {r["name"].split()[3]: r for r in res.rows}
    assert by_ratio["3:1"]["n1_switch_worst_gbps_per_gpu"] == 0.0
    assert by_ratio["3:1"]["meets"] is False and by_ratio["1:1"]["meets"] is True
    fab = res.candidates[by_ratio["1:1"]["name"]].build()
    worst = fo.single_failures(fab, kind="switches").worst_gbps()
    assert by_ratio["1:1"]["n1_switch_worst_gbps_per_gpu"] == pytest.approx(worst[0])
    [row] = fo.compare(fo.ring(4), metrics=["failures"]).rows
    assert row["error"] == "" and row["n1_switch_worst_gbps_per_gpu"] is None  # no switch


def test_tco_row_gives_the_throughput_at_the_links_expected_down(monkeypatch):
    import fabricopt.study.metrics as metrics

    real = metrics.tco_metrics
    fab = fo.fat_tree(4, link_gbps=100.0)
    intact = compute_metrics(fab, ["tco"], MetricContext())
    # Under a link down a moment in 200 (the optics' rates): most likely none is down.
    assert intact["expected_failed_links"] < 1
    assert intact["all_to_all_gbps_per_gpu_at_expected_failures"] == pytest.approx(100.0)
    monkeypatch.setattr(metrics, "tco_metrics",
                        lambda f, **k: {**real(f, **k), "expected_failed_links": 2.4})
    row = compute_metrics(fab, ["tco"], MetricContext())
    # Two of the 32 switch-to-switch links down (the mode of the count), worst of 3 draws:
    # the same certified figure failure_sweep gives, and never above the intact 100 Gb/s.
    sweep = fo.failure_sweep(fab, [2 / 32], trials=3, seed=1,
                             tiers=["leaf-spine", "spine-core"])
    expected = sweep.summary[0].lower_min * sweep.mean_out_gbps
    assert row["all_to_all_gbps_per_gpu_at_expected_failures"] == pytest.approx(expected)
    assert expected <= 100.0 + 1e-9
