"""Goodput under failures: the reliability figures, Young/Daly, ETTR and tokens per day."""

import math
from functools import cache

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.workload.goodput import DAY_S, young_daly_interval

JOB = fo.TrainingJob("llama3-8b", tp=8, global_batch=32, seq_len=8192)


@cache
def pod(planes: int) -> fo.Fabric:
    return fo.cluster(scale_up=fo.dgx_h100(), nodes=4, scale_out="rail_optimized",
                      nic_gbps=400, planes=planes, leaf_radix=16)


@cache
def goodput(planes: int) -> fo.Goodput:
    return fo.training_goodput(pod(planes), JOB)


def test_shipped_rates_rebuild_llama3_table5():
    rates = fo.FailureRates.default()
    # The Llama 3 Herd of Models, Table 5: 54 days on 16,384 GPUs in 2,048 servers.
    years = 54 / 365
    gpu_kinds = ("gpu", "hbm", "nic", "software")
    per_gpu = sum(rates[k].failures_per_year for k in gpu_kinds) * 16384 * years
    per_server = sum(rates[k].failures_per_year for k in ("host", "power_supply")) * 2048 * years
    # 196 GPU + 72 HBM + 7 NIC + 63 software; 43 host + 3 power supply.
    assert per_gpu == pytest.approx(196 + 72 + 7 + 63, rel=1e-3)
    assert per_server == pytest.approx(43 + 3, rel=1e-3)
    # Network: 16,384 GPU links and 1,024 rack switches of Meta's RoCE cluster give the 35.
    network = (16384 * rates["cable"].failures_per_year
               + 1024 * rates["switch"].failures_per_year) * years
    assert network == pytest.approx(35, rel=1e-3)
    assert all(r.source and r.confidence for r in rates)


def test_rates_are_overridden_like_the_catalog(tmp_path):
    path = tmp_path / "fleet.toml"
    path.write_text('[reliability.switch]\nfailures_per_year = 0.5\n'
                    'source = "our fleet"\nconfidence = "vendor"\n')
    rates = fo.FailureRates.load(path)
    assert rates["switch"].failures_per_year == 0.5 and rates["switch"].repair_h == 4.0
    # Ten times the switch rate: more interruptions on one plane (a leaf stops the job).
    more = fo.training_goodput(pod(1), JOB, failure_model=rates,
                               failures=goodput(1).failures)
    assert more.interruptions_per_day > goodput(1).interruptions_per_day
    path.write_text('[reliability.switch]\nfailures_per_year = -1\n'
                    'source = "x"\nconfidence = "vendor"\n')
    with pytest.raises(fo.CatalogError, match="failures_per_year"):
        fo.FailureRates.load(path)
    with pytest.raises(fo.CatalogError, match="source and confidence"):
        fo.FailureRates.default().merged({"reliability": {"gpu": {"repair_h": 1.0}}})
    with pytest.raises(fo.CatalogError, match="unknown section"):
        fo.FailureRates.default().merged({"switch": {}})


def test_young_daly_minimises_the_waste():
    # Waste per unit of time: checkpoints delta / (tau + delta) plus, per interruption, half
    # an interval lost: lambda (tau + delta) / 2. Daly's interval sits at its minimum.
    delta, m = 60.0, 11160.0
    tau = young_daly_interval(delta, m)
    grid = np.linspace(100, 5000, 20000)
    waste = delta / (grid + delta) + (grid + delta) / (2 * m)
    best = grid[np.argmin(waste)]
    assert abs(tau - best) / best < 0.05
    assert tau == pytest.approx(math.sqrt(2 * delta * m) - delta, rel=0.02)  # Young, first order
    assert young_daly_interval(500.0, 200.0) == 200.0  # delta >= 2M: every MTBI


def test_interruptions_of_one_server_by_hand():
    # One DGX H100 (8 GPUs, no network): GPU, HBM and software per GPU, host and power
    # supply per server, and the NVSwitch chips run degraded (not an interruption).
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=8192)
    g = fo.training_goodput(fo.dgx_h100(), job)
    r = fo.FailureRates.default()
    by_hand = (8 * (r["gpu"].failures_per_year + r["hbm"].failures_per_year
                    + r["software"].failures_per_year)
               + r["host"].failures_per_year + r["power_supply"].failures_per_year) / 365
    assert g.interruptions_per_day == pytest.approx(by_hand, rel=1e-9)
    assert g.interruptions_per_day == pytest.approx(
        sum(c["interruptions_per_day"] for c in g.components), rel=1e-12)
    # A GPU or a server lost stops a one-replica job until the repair (24 h by default).
    assert g.lost_per_interruption_s > 24 * 3600 * 0.5


def test_ettr_by_hand_for_a_given_interval():
    g = fo.training_goodput(pod(2), JOB, checkpoint_s=1800.0, checkpoint_write_s=30.0,
                            restart_s=300.0, detection_s=60.0,
                            failures=goodput(2).failures)
    lam = g.interruptions_per_day / DAY_S
    # Dual plane: nothing stops the job for a repair here (every loss is a swap, a dropped
    # replica or a slowdown), so time lost is detection + restart + half an interval.
    lost = lam * (60 + 300 + (1800 + 30) / 2)
    assert g.ettr == pytest.approx((1 - lost) * 1800 / 1830, rel=1e-9)
    assert g.checkpoint_from == "given"
    assert g.tokens_per_day <= g.intact_tokens_per_s * DAY_S * g.ettr
    assert g.tokens_per_day <= g.tokens_per_day_upper


def test_dual_plane_trains_more_than_single_plane_on_the_same_gpus():
    single, dual = goodput(1), goodput(2)
    # The leaf and the GPU-leaf link stop the job on one plane and not on two.
    assert dual.interruptions_per_day < single.interruptions_per_day
    assert dual.ettr > single.ettr
    assert dual.tokens_per_day > single.tokens_per_day
    # Same GPUs, same intact throughput: the difference is the fabric's.
    assert dual.intact_tokens_per_s == pytest.approx(single.intact_tokens_per_s)


def test_bad_input():
    with pytest.raises(fo.InvalidParameterError, match="failure_model"):
        fo.training_goodput(pod(1), JOB, failure_model={"gpu": 0.1})
    with pytest.raises(fo.InvalidParameterError, match="checkpoint_s"):
        fo.training_goodput(pod(1), JOB, checkpoint_s=-5)
    with pytest.raises(fo.InvalidParameterError, match="failures must be"):
        fo.training_goodput(pod(1), JOB, failures=goodput(2).failures)


@pytest.mark.slow
def test_published_reliability_figures_and_the_doc():
    # Each figure within the spread its source allows (docs/validation.md#reliability; the
    # rows, their spreads and sources are in published_runs.py), and the doc shows them.
    from pathlib import Path

    from published_runs import RELIABILITY, reliability

    got = reliability()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "validation.md").read_text()
    for row in RELIABILITY:
        assert row.low <= got[row.key] <= row.high, (row.name, got[row.key])
        shown = f"{got[row.key]:.1%}" if row.key in ("ettr", "network_share") \
            else f"{got[row.key]:.3g}"
        assert f"| {shown} |" in doc, (row.name, shown)
    # Llama 3: more than 90 % effective training time (section 3.3.4).
    assert got["ettr"] > 0.90


def test_goodput_metric_in_compare_ranks_dual_plane_above_single():
    rows = fo.compare([pod(1), pod(2)], metrics=["summary", "cost", "goodput"], job=JOB).rows
    single, dual = rows
    assert dual["goodput"] > single["goodput"]
    assert dual["goodput_ettr"] == pytest.approx(goodput(2).ettr)
    # The cost per token with downtime is the training cost over the goodput.
    for r in rows:
        assert r["usd_per_million_tokens_with_downtime"] > 0
        assert r["goodput_tokens_per_day"] <= r["goodput_tokens_per_day_upper"]


def test_optimize_with_a_goodput_floor_and_the_downtime_objective():
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=16, seq_len=8192)
    res = fo.optimize(gpus=16, objective="usd_per_million_tokens_with_downtime", job=job,
                      constraints={"goodput": 0.9})
    met = [r for r in res.rows if r.get("meets")]
    assert res.best is not None and met
    assert res.best["goodput"] >= 0.9
    best = min(r["usd_per_million_tokens_with_downtime"] for r in met)
    assert res.best["usd_per_million_tokens_with_downtime"] == pytest.approx(best)
    with pytest.raises(fo.InvalidParameterError, match="job"):
        fo.optimize(gpus=16, objective="usd_per_million_tokens_with_downtime")


def test_command_line_train_goodput_and_failures_job(capsys, tmp_path):
    from fabricopt.cli import main

    assert main(["train", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--global-batch",
                 "8", "--seq-len", "8192", "--goodput"]) == 0
    out = capsys.readouterr().out
    assert "ETTR" in out and "with downtime" in out
    # A bad reliability file is refused before the step prints; --spares needs --goodput.
    bad = tmp_path / "bad.toml"
    bad.write_text('[reliability.gpu]\nfailures_per_year = "x"\nsource = "a"\n'
                   'confidence = "vendor"\n')
    assert main(["train", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--global-batch",
                 "8", "--goodput", "--reliability", str(bad)]) == 2
    assert "step" not in capsys.readouterr().out
    assert main(["train", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--global-batch",
                 "8", "--spares", "1"]) == 2
    plot = tmp_path / "jobs.png"
    assert main(["failures", "dgx_h100", "--job",
                 "model=llama3-8b,tp=8,global_batch=8,seq_len=8192", "--kind", "all",
                 "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "job failures" in out and "stop" in out and plot.stat().st_size > 0
    assert main(["failures", "dgx_h100", "--mode", "sweep", "--fraction", "0.03", "--trials",
                 "2", "--job", "model=llama3-8b,tp=8,global_batch=8,seq_len=8192"]) == 0
    assert "job failure sweep" in capsys.readouterr().out
    # A job's failure kind without a job, and --spares without one, are refused.
    assert main(["failures", "dgx_h100", "--kind", "gpus"]) == 2
    assert main(["failures", "dgx_h100", "--spares", "1"]) == 2
