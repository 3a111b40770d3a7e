"""Serving in the studies: the ``serving`` metric of compare and the optimizer's serving
objective with latency targets as constraints."""

from __future__ import annotations

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError

#: A small workload: Llama 3 8B in FP8 on one fixed plan, short requests (a few seconds).
WORKLOAD = {"model": "llama3-8b", "ttft_s": 0.5, "tpot_s": 0.05, "prompt_len": 256,
            "output_len": 16, "precision": "fp8", "requests": 200,
            "plan": {"tp": 8, "batch": 16, "precision": "fp8"}}


def test_compare_serves_the_workload_on_every_design():
    row = fo.compare([fo.dgx_h100()], metrics=["serving"], serving=WORKLOAD).to_records()[0]
    assert row["serving_rate"] > 0
    assert row["serving_ttft_p99_s"] <= 0.5 and row["serving_tpot_p99_s"] <= 0.05
    assert row["serving_plan"].startswith("tp=8, batch=16")
    # Without a workload the metric's row says what it needs (the batch goes on).
    bare = fo.compare([fo.dgx_h100()], metrics=["serving"]).to_records()[0]
    assert "needs a workload" in bare["error"]


def test_a_serving_workload_is_checked_before_any_work():
    with pytest.raises(InvalidParameterError, match=r"compare\(\): serving: .*needs tpot_s"):
        fo.compare([fo.dgx_h100()], metrics=["serving"],
                   serving={"model": "llama3-8b", "ttft_s": 0.5})
    with pytest.raises(InvalidParameterError, match=r"unknown key 'ttft' \(did you mean"):
        fo.compare([fo.dgx_h100()], metrics=["serving"],
                   serving={**WORKLOAD, "ttft": 1.0})
    with pytest.raises(InvalidParameterError, match=r"optimize\(\): constraints .*serving_tpot_s"):
        fo.optimize(16, objective="serving_usd_per_million_tokens",
                    constraints={"serving_ttft_s": 0.5}, serving=WORKLOAD)
    with pytest.raises(InvalidParameterError, match=r"optimize\(\): serving"):
        fo.optimize(16, objective="serving_usd_per_million_tokens",
                    constraints={"serving_ttft_s": 0.5, "serving_tpot_s": 0.05})


@pytest.mark.slow
def test_optimize_minimises_the_cost_per_token_within_the_latency_targets():
    workload = {k: v for k, v in WORKLOAD.items() if k not in ("ttft_s", "tpot_s")}
    res = fo.optimize(16, space={"family": ["rail_optimized"], "scale_up": ["dgx_h100"],
                                 "leaf_radix": [16], "oversubscription": [1.0, 2.0]},
                      constraints={"serving_ttft_s": 0.5, "serving_tpot_s": 0.05},
                      objective="serving_usd_per_million_tokens", serving=workload)
    evaluated = [r for r in res.rows if r.get("serving_usd_per_million_tokens")]
    assert res.best is not None and len(evaluated) == 2
    # the best is the cheapest per token of those meeting the targets
    assert res.best["serving_usd_per_million_tokens"] == min(
        r["serving_usd_per_million_tokens"] for r in evaluated if r["meets"])
    assert res.best["serving_tpot_p99_s"] <= 0.05


def test_compare_on_the_command_line_takes_a_serving_workload(capsys):
    from fabricopt.cli import main

    words = [f"--serving={k}={v}" for k, v in WORKLOAD.items() if k != "plan"]
    assert main(["compare", "dgx_h100", "--metrics", "summary", *words,
                 "--serving=plan={'tp': 8, 'batch': 16, 'precision': 'fp8'}",
                 "--columns", "name,serving_rate,serving_plan"]) == 0
    out = capsys.readouterr().out
    assert "tp=8, batch=16" in out
    assert main(["compare", "dgx_h100", "--serving", "model=llama3-8b",
                 "--serving", "ttft=1"]) == 2
    assert "--serving: unknown key 'ttft'" in capsys.readouterr().err


SEARCH_FILE = """name = "16 GPUs serving Llama 3 8B"
gpus = 16
objective = "serving_usd_per_million_tokens"
[space]
family = ["rail_optimized"]
scale_up = ["dgx_h100"]
leaf_radix = [16]
oversubscription = [1.0]
[constraints]
serving_ttft_s = 0.5
serving_tpot_s = 0.05
[serving]
model = "llama3-8b"
prompt_len = 256
output_len = 16
precision = "fp8"
requests = 200
plan = {tp = 8, batch = 16, precision = "fp8"}
"""


def test_a_search_file_carries_the_serving_workload(tmp_path, capsys, monkeypatch):
    from fabricopt.cli import main
    from fabricopt.io import load_search

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "serve.toml"
    path.write_text(SEARCH_FILE)
    spec = load_search(path)
    assert spec["serving"]["model"] == "llama3-8b" and spec["serving"]["plan"]["batch"] == 16
    # fabricopt optimize FILE minimises the cost per million output tokens within the
    # targets: the one candidate meets them on the file's plan, and its best design is written.
    assert main(["optimize", str(path)]) == 0
    out = capsys.readouterr().out
    assert "best by serving_usd_per_million_tokens" in out and "plan tp=8, batch=16" in out
    assert (tmp_path / "serve-best.toml").exists()
    # A [serving] that is not a table is refused naming the file and key; a misspelt key of
    # the workload is refused before any candidate is built.
    bad = tmp_path / "bad.toml"
    bad.write_text("gpus = 16\nserving = 3\n")
    assert main(["optimize", str(bad)]) == 2
    assert "bad.toml: key 'serving' must be a table ([serving])" in capsys.readouterr().err
    bad.write_text(SEARCH_FILE.replace('model = "llama3-8b"', 'modle = "llama3-8b"'))
    assert main(["optimize", str(bad)]) == 2
    assert "unknown key 'modle' (did you mean 'model'?)" in capsys.readouterr().err


def test_a_design_file_carries_a_serving_workload_for_serve(tmp_path, capsys):
    from fabricopt.cli import main

    path = tmp_path / "dgx.toml"
    table = SEARCH_FILE[SEARCH_FILE.index("[serving]"):]
    path.write_text('family = "dgx_h100"\n' + table + "ttft_s = 0.5\ntpot_s = 0.05\n")
    assert fo.load_design(path).design["serving"]["model"] == "llama3-8b"
    # fabricopt serve FILE serves the file's workload at its targets, on its plan; a flag
    # replaces one of its keys (here the TTFT target, the TPOT target still the file's).
    assert main(["serve", str(path)]) == 0
    out = capsys.readouterr().out
    assert "llama3-8b on DGX H100" in out and "TTFT p99 <= 0.5 s and TPOT p99 <= 0.05 s" in out
    assert "tp=8, batch=16" in out
    assert main(["serve", str(path), "--ttft", "1"]) == 0
    assert "TTFT p99 <= 1 s and TPOT p99 <= 0.05 s" in capsys.readouterr().out
    # A misspelt key is named with the file; no model anywhere is said before any work.
    path.write_text('family = "dgx_h100"\n[serving]\nmodel = "llama3-8b"\nttft = 1\n')
    assert main(["serve", str(path)]) == 2
    assert "dgx.toml: [serving]: unknown key 'ttft' (did you mean 'ttft_s'?)" in \
        capsys.readouterr().err
    assert main(["serve", "dgx_h100"]) == 2
    assert "name a model with --model, or give the design file a [serving] table" in \
        capsys.readouterr().err
