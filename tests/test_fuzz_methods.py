"""The public methods of the public classes, called with bad values of every type.

The same rule as ``test_fuzz.py`` for functions: a bad argument is accepted or raises a
:class:`fabricopt.FabricOptError` (also a ``ValueError``) naming the method and the argument;
never a raw ``TypeError``, ``IndexError``, ``FileNotFoundError``..., a silently wrong answer
(a misspelt component counted as 0 units) or a hang. The list of methods comes from
``fo.__all__``, so a new method must be fuzzed here or exempted with its reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_fuzz import SMALL_SPACE, _fuzz_one

import fabricopt as fo

#: Methods whose arguments are internal types (the arrays of a problem already checked by the
#: public function that builds them), or that take no argument a caller could get wrong.
EXEMPT = {
    "LatencyModel.arc_latency_s": "takes GraphArrays built by collective_bounds",
    "LatencyModel.alphas": "takes the checked problem of collective_bounds",
    # Helpers of estimate_cost: their messages name the function that called them (func=),
    # and estimate_cost's layout and policy arguments fuzz them in test_fuzz.py.
    "Layout.coerce": "estimate_cost(layout=...)", "Policy.coerce": "estimate_cost(policy=...)",
    "Layout.check_tiers": "estimate_cost(layout=...)",
    "Policy.check_against": "estimate_cost(policy=...)",
    "FailureModel.draw": "abstract: each model's own draw is fuzzed",
    "FailureModel.drawer": "the base draws through each model's own draw (fuzzed)",
    "FailureModel.enumerate": "the base returns None (nothing to list); each model's own is "
                              "fuzzed",
    "ServingPlan.with_": "its keywords are ServingPlan's own fields, each checked by "
                         "ServingPlan (fuzzed in test_fuzz.py)",
    "ValiantBound.recheck": "check_certificate(fab, rate) calls it, and checks the fabric "
                            "first (fuzzed in test_fuzz.py)",
}


def _valid_method_calls(tmp_path) -> dict[str, tuple[Callable, dict[str, Any]]]:
    """One small valid call of every fuzzed method: label -> (bound method, keywords)."""
    fab = fo.ring(4, link_gbps=400)
    traffic = fo.all_to_all(fab)
    result = fo.max_concurrent_flow(fab, traffic)
    est = fo.estimate_cost(fab)
    catalog = fo.Catalog.default()
    table = fo.compare([fab], metrics=["summary"])
    saved_catalog = tmp_path / "mine.toml"
    saved_catalog.write_text("")
    sweep = fo.failure_sweep(fab, [0.25], trials=1, seed=0)
    search = fo.optimize(16, space=SMALL_SPACE)
    spread = fo.failure_distribution(fab, fo.EverySingle("links"))
    racks = fo.groups_by(fab, {"n0": "r0", "n1": "r1"})
    models = {"EverySingle": fo.EverySingle("links"),
              "GroupFailures": fo.GroupFailures(racks),
              "Independent": fo.Independent("links", probability=0.5),
              "Mixture": fo.Mixture([(1.0, fo.EverySingle("links")),
                                     (1.0, fo.GroupFailures(racks))])}
    protocol = {f"{name}.{method}": (getattr(m, method), {"fab": fab})
                for name, m in models.items() for method in ("enumerate", "probabilities")
                if method in vars(type(m))}
    protocol |= {f"{name}.draw": (m.draw, {"fab": fab, "rng": np.random.default_rng(0)})
                 for name, m in models.items()}
    protocol |= {f"{name}.drawer": (m.drawer, {"fab": fab})
                 for name, m in models.items() if "drawer" in vars(type(m))}
    saved = tmp_path / "saved"
    fo.compare([fab], metrics=["summary"], out_dir=saved)
    llama = fo.model("llama3-8b")
    job = fo.TrainingJob(llama, tp=2)
    plans = fo.PlanSearch("llama3-8b", global_batch=8, seq_len=1024,
                          constraints={"tp": 8, "pp": 1})
    dgx = fo.dgx_h100()
    best = plans.run(dgx)
    saved_rates = tmp_path / "rates.toml"
    saved_rates.write_text("")
    rates = fo.FailureRates.default()
    group = fo.group_max_flow(fab, "n0", "n1")
    job8 = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=1024)
    on_job = fo.job_failures(dgx, job8, kind="gpus")
    serving = fo.ServingJob("llama3-8b", fo.ServingPlan(tp=8, batch=4))
    on_serving = fo.single_failures(dgx, kind="gpus", job=serving)
    load = fo.simulate_serving(dgx, "llama3-8b", fo.ServingPlan(tp=8, batch=4), rate=5.0,
                               requests=100, prompt_len=128, output_len=4)
    picked = fo.Selected("tier=ring", kind="links")
    return {
        "FailureRates.load": (fo.FailureRates.load, {"path": saved_rates, "merge": True}),
        "Comparison.read": (fo.Comparison.read, {"path": saved}),
        "FailureRates.merged": (rates.merged, {"data": {}, "origin": "test"}),
        "GroupFlow.check": (group.check, {"fab": fab}),
        "JobFailureTable.share": (on_job.share, {"row": on_job.rows[0]}),
        "ServingFailureTable.share": (on_serving.share, {"row": on_serving.rows[0]}),
        "ServingLoad.percentile": (load.percentile, {"q": 99.0}),
        "Selected.units": (picked.units, {"fab": fab}),
        "Selected.enumerate": (picked.enumerate, {"fab": fab}),
        "Selected.draw": (picked.draw, {"fab": fab, "rng": np.random.default_rng(0)}),
        "PlanSearch.run": (plans.run, {"fab": dgx}),
        "PlanSearch.from_mapping": (fo.PlanSearch.from_mapping,
                                    {"table": {"model": "llama3-8b", "plan": "best",
                                               "global_batch": 8, "seq_len": 1024, "tp": 8,
                                               "pp": 1}}),
        "BestPlan.to_table": (best.to_table, {"rows": 3}),
        "Fabric.injection_gbps": (fab.injection_gbps, {"endpoint": "n0"}),
        "Fabric.scale_out_injection_gbps": (fab.scale_out_injection_gbps,
                                            {"endpoint": "n0"}),
        "Fabric.without_links": (fab.without_links, {"links": [("n0", "n1")]}),
        "Fabric.without": (fab.without, {"links": [("n0", "n1")], "switches": []}),
        "Traffic.uniform": (fo.Traffic.uniform, {"endpoints": ["a", "b"], "gbps": 1.0,
                                                 "name": "pair"}),
        "Traffic.restrict": (traffic.restrict, {"endpoints": ["n0", "n1"]}),
        "Traffic.scaled": (traffic.scaled, {"factor": 2.0}),
        "Traffic.check_endpoints": (traffic.check_endpoints, {"fab": fab}),
        "Traffic.crossing_share": (traffic.crossing_share, {"fab": fab}),
        "Catalog.load": (fo.Catalog.load, {"path": saved_catalog, "merge": True}),
        "Catalog.merged": (catalog.merged, {"data": {}, "origin": "test"}),
        "CostEstimate.count": (est.count, {"component": "cx8", "kind": "nic"}),
        "CostEstimate.per_delivered_gbps": (est.per_delivered_gbps, {"result": result}),
        "CostEstimate.network_share": (est.network_share, {"system": "dgx_h100",
                                                          "of": "capex"}),
        "Symmetry.matches": (fab.symmetry.matches, {"graph": fab.graph,
                                                    "endpoints": fab.endpoints}),
        "Comparison.column": (table.column, {"name": "name"}),
        "Comparison.fabric": (table.fabric, {"index": 0}),
        "Comparison.to_csv": (table.to_csv, {"path": tmp_path / "t.csv"}),
        "Comparison.to_markdown": (table.to_markdown, {"columns": ["name"]}),
        "Comparison.to_text": (table.to_text, {"columns": ["name"], "limit": 5}),
        "Comparison.to_json": (table.to_json, {"path": tmp_path / "t.json", "indent": 1}),
        "FailureSweep.to_csv": (sweep.to_csv, {"path": tmp_path / "s.csv"}),
        "FailureSweep.of_intact": (sweep.of_intact, {"theta": 1.0}),
        "TrainingJob.with_gpus": (job.with_gpus, {"n_gpus": 8}),
        "FailureDistribution.mean": (spread.mean, {"metric": "throughput"}),
        "FailureDistribution.percentile": (spread.percentile, {"p": 5, "metric": "throughput"}),
        "ModelConfig.flops_per_token": (llama.flops_per_token, {"seq_len": 4096}),
        "ModelConfig.kv_bytes_per_token": (llama.kv_bytes_per_token, {"bytes_per_value": 2.0}),
        "OptimizeResult.to_markdown": (search.to_markdown, {"rows": search.rows}),
        "OptimizeResult.write_design": (search.write_design, {"path": tmp_path / "best.toml",
                                                              "row": None}),
    } | protocol


#: Parameters that only label a message (the public function calling the method passes its
#: own name), not an input a caller gets wrong.
MESSAGE_LABELS = {"func", "where"}

FUZZED_METHODS = [
    "FailureRates.load", "FailureRates.merged", "GroupFlow.check", "JobFailureTable.share",
    "ServingFailureTable.share", "ServingLoad.percentile", "Selected.units",
    "Selected.enumerate", "Selected.draw",
    "Fabric.injection_gbps", "Fabric.scale_out_injection_gbps", "Fabric.without_links",
    "Fabric.without", "Traffic.uniform", "Traffic.restrict", "Traffic.scaled",
    "Traffic.check_endpoints", "Traffic.crossing_share", "Catalog.load", "Catalog.merged",
    "CostEstimate.count",
    "CostEstimate.per_delivered_gbps", "CostEstimate.network_share", "Symmetry.matches",
    "Comparison.column", "Comparison.fabric", "Comparison.to_csv", "Comparison.to_markdown",
    "Comparison.to_text", "Comparison.to_json", "FailureSweep.to_csv", "FailureSweep.of_intact",
    "OptimizeResult.to_markdown",
    "OptimizeResult.write_design", "TrainingJob.with_gpus", "ModelConfig.flops_per_token",
    "ModelConfig.kv_bytes_per_token", "FailureDistribution.mean",
    "FailureDistribution.percentile", "EverySingle.enumerate", "EverySingle.draw",
    "GroupFailures.enumerate", "GroupFailures.draw", "Independent.probabilities",
    "Independent.draw", "Independent.drawer", "Mixture.enumerate", "Mixture.draw",
    "Mixture.drawer", "Comparison.read", "PlanSearch.run",
    "PlanSearch.from_mapping", "BestPlan.to_table"]


def _public_methods_with_arguments() -> set[str]:
    """``Class.method`` for every public method of a public class that takes an argument."""
    found = set()
    for name in fo.__all__:
        cls = getattr(fo, name)
        if not inspect.isclass(cls) or not cls.__module__.startswith("fabricopt"):
            continue
        for attr, member in vars(cls).items():
            func = member.__func__ if isinstance(member, classmethod | staticmethod) else member
            if attr.startswith("_") or not inspect.isfunction(func):
                continue
            params = [p for p in inspect.signature(func).parameters
                      if p not in ("self", "cls") and p not in MESSAGE_LABELS]
            if params:
                found.add(f"{name}.{attr}")
    return found


def test_every_public_method_with_arguments_is_fuzzed_or_exempt():
    assert _public_methods_with_arguments() - set(EXEMPT) == set(FUZZED_METHODS)


@pytest.mark.parametrize("label", FUZZED_METHODS)
def test_bad_arguments_to_methods_raise_fabricopt_errors(label, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a bad path such as "x" is written here
    method, kwargs = _valid_method_calls(tmp_path)[label]
    method(**kwargs)  # the base call is valid: every problem comes from the bad value
    problems = _fuzz_one(label, method, kwargs, skip=MESSAGE_LABELS)
    assert not problems, "\n".join(problems)
