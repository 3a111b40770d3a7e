"""Every public function and command, called with bad values of every type for each argument.

The rule checked is the one every entry point promises: a bad argument either is accepted (it
happens to be allowed) or raises a :class:`fabricopt.FabricOptError` (also a ``ValueError``)
whose message names the function called and the argument (a size limit names the sizes
instead, a file error the file); never a ``TypeError``, ``AttributeError``,
``ZeroDivisionError``, ... from deep inside, and never a hang. The argument lists come from
``inspect.signature``, so a new parameter is fuzzed without editing this file.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import matplotlib
import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.generators import GENERATORS
from fabricopt.workload.plan_search import CONSTRAINT_KEYS

matplotlib.use("Agg")


#: A two-candidate design space for the optimizer (a rail-optimized cluster of 2-GPU NVLink
#: domains on radix-8 leaves at 1:1 and 2:1).
SMALL_SPACE = {"family": ["rail_optimized"],
               "scale_up": [{"family": "nvswitch_domain", "gpus": 2, "switches": 1,
                             "links_per_gpu": 4, "link_gbps": 200}],
               "leaf_radix": [8], "oversubscription": [1.0, 2.0]}


def _tiny() -> fo.Fabric:
    return fo.ring(3)


#: Bad values of every type; some are allowed for some arguments (``None`` for an optional
#: one, ``True`` for a flag), so a call that returns is fine: only the kind of error is checked.
BAD_VALUES: list[tuple[str, Callable[[], Any]]] = [
    ("None", lambda: None), ("-1", lambda: -1), ("0", lambda: 0), ("-0.5", lambda: -0.5),
    ("nan", lambda: math.nan), ("inf", lambda: math.inf), ("'x'", lambda: "x"),
    ("''", lambda: ""), ("[]", lambda: []), ("{}", lambda: {}), ("True", lambda: True),
    ("10**12", lambda: 10**12), ("Fabric", _tiny), ("object()", object),
    ("['x']", lambda: ["x"]), ("{'x': 1}", lambda: {"x": 1}),
    # numeric edges (overflow to inf, underflow to 0) and an unhashable element
    ("1e308", lambda: 1e308), ("1e-320", lambda: 1e-320), ("[[1]]", lambda: [[1]]),
]


def _set_cost_assumptions_and_restore(**changes: Any) -> Any:
    """fo.set_cost_assumptions, the assumptions in force put back after (a fuzzed value that
    is valid must not change the other tests' defaults)."""
    before = fo.cost_assumptions()
    try:
        return fo.set_cost_assumptions(**changes)
    finally:
        fo.set_cost_assumptions(before)


_set_cost_assumptions_and_restore.__name__ = "set_cost_assumptions"


def _valid_calls(tmp_path) -> dict[str, tuple[Callable, dict[str, Any]]]:
    """One small valid call of every fuzzed function: name -> (callable, keyword arguments)."""
    fab = _tiny()
    traffic = fo.all_to_all(fab)
    result = fo.max_concurrent_flow(fab, traffic)
    saved = tmp_path / "ring.json"
    fo.write_json(fab, saved)
    saved_graphml = tmp_path / "ring.graphml"
    fo.write_graphml(fab, saved_graphml)
    design = tmp_path / "ring.toml"
    design.write_text('family = "ring"\n[params]\nn = 3\n')
    model = fo.build_flow_lp(fab, traffic)
    skeleton = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2, link_gbps=100)
    dgx = fo.dgx_h100()  # a training job of 8 GPUs
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=1024)
    routed = fo.routed_flow(fab, traffic, routing="hash", trials=2, seed=0)
    catalog = tmp_path / "catalog.toml"
    catalog.write_text("")
    layers = fo.groups_by(skeleton, "layer")
    rows = [{"name": "a", "capex_usd": 1.0, "tput": 2.0}, {"name": "b", "capex_usd": 2.0,
                                                           "tput": 3.0}]
    calls: dict[str, tuple[Callable, dict[str, Any]]] = {
        # generators, at their smallest
        "clos": (fo.clos, {"endpoints": 8, "radix": 4}),
        "complete": (fo.complete, {"n": 3}),
        "dgx_b200": (fo.dgx_b200, {}),
        "dgx_h100": (fo.dgx_h100, {}),
        "dgx_a100": (fo.dgx_a100, {}),
        "hgx_h800": (fo.hgx_h800, {}),
        "dgx_h200": (fo.dgx_h200, {}),
        "dragonfly": (fo.dragonfly, {"a": 2, "h": 1, "p": 1}),
        "fat_tree": (fo.fat_tree, {"k": 2}),
        "gb200_nvl72": (fo.gb200_nvl72, {}),
        "hypercube": (fo.hypercube, {"d": 2}),
        "jellyfish": (fo.jellyfish, {"switches": 4, "network_ports": 2,
                                     "endpoints_per_switch": 1, "seed": 0}),
        "leaf_spine": (fo.leaf_spine, {"leaves": 2, "spines": 1, "endpoints_per_leaf": 1}),
        "nvl576": (fo.nvl576, {"racks": 2}),
        "nvlink_switch_system": (fo.nvlink_switch_system, {"nodes": 2}),
        "nvswitch_domain": (fo.nvswitch_domain, {"gpus": 2, "switches": 1,
                                                 "links_per_gpu": 1, "link_gbps": 100}),
        "rail_optimized": (fo.rail_optimized, {"nodes": 2, "gpus_per_node": 2,
                                               "leaf_radix": 4}),
        "ring": (fo.ring, {"n": 3}),
        "superpod": (fo.superpod, {"scalable_units": 1, "nodes_per_su": 2}),
        "torus": (fo.torus, {"dims": [2, 2]}),
        "ualink_pod": (fo.ualink_pod, {"accelerators": 2, "switches": 1,
                                       "ports_per_accelerator": 1}),
        "cluster": (fo.cluster, {"scale_up": "dgx_h100", "nodes": 2}),
        # traffic
        "all_to_all": (fo.all_to_all, {"fab": fab}),
        "permutation": (fo.permutation, {"fab": fab, "seed": 0}),
        "longest_matching": (fo.longest_matching, {"fab": fab}),
        "select_endpoints": (fo.select_endpoints, {"fab": fab, "role": "gpu"}),
        "tub_upper_bound": (fo.tub_upper_bound, {"fab": fab}),
        "ring_traffic": (fo.ring_traffic, {"fab": fab}),
        # throughput, bisection, collectives
        "max_concurrent_flow": (fo.max_concurrent_flow, {"fab": fab, "traffic": traffic}),
        "build_flow_lp": (fo.build_flow_lp, {"fab": fab, "traffic": traffic}),
        "check_certificate": (fo.check_certificate, {"fab": fab, "result": result}),
        "valiant_rate": (fo.valiant_rate, {"fab": fab}),
        "worst_case_permutation": (fo.worst_case_permutation, {"fab": fab, "iterations": 1}),
        "bisection_bandwidth": (fo.bisection_bandwidth, {"fab": fab}),
        "collective_bounds": (fo.collective_bounds, {"fab": fab, "collective": "all_reduce",
                                                     "message_bytes": 1e6}),
        "collective_curve": (fo.collective_curve, {"fab": fab, "collective": "all_reduce",
                                                   "sizes": [1e6]}),
        "hierarchical_all_reduce_time": (fo.hierarchical_all_reduce_time,
                                         {"g": 8, "k": 2, "scale_up_gbps": 900,
                                          "nic_gbps": 400, "message_bytes": 1e6}),
        "LatencyModel": (fo.LatencyModel, {}),
        "routed_flow": (fo.routed_flow, {"fab": fab, "traffic": traffic}),
        "routed_collective": (fo.routed_collective, {"fab": fab, "collective": "all_reduce",
                                                     "message_bytes": 1e6}),
        # failures
        "fail_random": (fo.fail_random, {"fab": fab, "fraction": 0.3, "seed": 0}),
        "failure_sweep": (fo.failure_sweep, {"fab": fab, "fractions": [0.3], "trials": 1,
                                             "seed": 0}),
        "risk_groups": (fo.risk_groups, {"fab": fab}),
        # fabric, files, symmetry
        "Fabric": (fo.Fabric, {"graph": fab.graph}),
        "from_networkx": (fo.from_networkx, {"G": nx.path_graph(3)}),
        "Traffic": (fo.Traffic, {"demands": {(0, 1): 1.0}}),
        "verify_symmetry": (fo.verify_symmetry, {"fab": fab}),
        "read_json": (fo.read_json, {"path": saved}),
        "read_graphml": (fo.read_graphml, {"path": saved_graphml}),
        "write_json": (fo.write_json, {"fab": fab, "path": tmp_path / "out.json"}),
        "write_graphml": (fo.write_graphml, {"fab": fab, "path": tmp_path / "out.graphml"}),
        "load_design": (fo.load_design, {"path": design}),
        # cost
        "estimate_cost": (fo.estimate_cost, {"fab": fab}),
        "estimate_tco": (fo.estimate_tco, {"fab": fab, "years": 5, "usd_per_kwh": 0.1,
                                           "pue": 1.3, "maintenance": 0.1, "mttr_hours": 24.0}),
        "Layout": (fo.Layout, {}),
        "Policy": (fo.Policy, {}),
        # comparison and plots
        "pareto_front": (fo.pareto_front, {"rows": rows, "x": "capex_usd", "y": "tput"}),
        "plot_pareto": (fo.plot_pareto, {"rows": rows, "x": "capex_usd", "y": "tput"}),
        "plot_metric_bars": (fo.plot_metric_bars, {"rows": rows, "metric": "tput"}),
        "draw": (fo.draw, {"fab": fab}),
        "compare": (fo.compare, {"designs": [fab], "metrics": ["summary"]}),
        "Catalog.load": (fo.Catalog.load, {"path": catalog}),
        "export_mps": (fo.export_mps, {"lp": model.lp, "path": tmp_path / "out.mps"}),
        "solve_flow_model": (fo.solve_flow_model, {"model": model}),
        "plot_routing_distribution": (fo.plot_routing_distribution, {"result": routed}),
        "RiskGroup": (fo.RiskGroup, {"name": "psu", "switches": frozenset()}),
        "find_symmetry": (fo.find_symmetry, {"fab": fab}),
        "search_symmetry": (fo.search_symmetry, {"fab": fab}),
        "plan_capacity": (fo.plan_capacity, {"fab": skeleton, "traffic": fo.all_to_all(skeleton),
                                             "target_theta": 0.5}),
        "optimize": (fo.optimize, {"gpus": 16, "space": SMALL_SPACE}),
        "model": (fo.model, {"name": "llama3-8b"}),
        "TrainingJob": (fo.TrainingJob, {"model": "llama3-8b", "tp": 2, "global_batch": 8,
                                         "seq_len": 1024}),
        "training_step": (fo.training_step, {"fab": dgx, "job": job}),
        "training_metrics": (fo.training_metrics, {"fab": dgx, "job": job}),
        "best_plan": (fo.best_plan, {"fab": dgx, "model": "llama3-8b", "global_batch": 8,
                                     "seq_len": 1024}),
        "serving_estimate": (fo.serving_estimate, {"fab": dgx, "model_name": "llama3-8b",
                                                   "tp": 8, "batch": 4, "prompt_len": 128,
                                                   "output_len": 16}),
        "token_cost": (fo.token_cost, {"fab": dgx, "tokens_per_s": 1e5}),
        "cost_assumptions": (fo.cost_assumptions, {}),
        "CostAssumptions": (fo.CostAssumptions, {"years": 5.0, "usd_per_kwh": 0.08,
                                                 "pue": 1.3, "maintenance": 0.1}),
        "set_cost_assumptions": (_set_cost_assumptions_and_restore, {"usd_per_kwh": 0.08}),
        "ServingPlan": (fo.ServingPlan, {"tp": 8, "batch": 4}),
        "ServingJob": (fo.ServingJob, {"model": "llama3-8b",
                                       "plan": fo.ServingPlan(tp=8, batch=4),
                                       "prompt_len": 128, "output_len": 16}),
        "simulate_serving": (fo.simulate_serving, {
            "fab": dgx, "model_name": "llama3-8b", "plan": fo.ServingPlan(tp=8, batch=4),
            "rate": 5.0, "requests": 100, "prompt_len": 128, "output_len": 4}),
        "serving_capacity": (fo.serving_capacity, {
            "fab": dgx, "model_name": "llama3-8b", "ttft_s": 0.5, "tpot_s": 0.05,
            "prompt_len": 128, "output_len": 4, "requests": 100,
            "plan": fo.ServingPlan(tp=8, batch=4)}),
        # failure analysis beyond the sweep: every single failure, a cutting set, a
        # distribution under a failure model, risk groups by attribute
        "criticality": (fo.criticality, {"fab": fab}),
        "single_failures": (fo.single_failures, {"fab": fab}),
        "cutting_set": (fo.cutting_set, {"fab": fab, "fraction": 0.5}),
        "failure_distribution": (fo.failure_distribution,
                                 {"fab": fab, "model": fo.EverySingle("links")}),
        "failure_metrics": (fo.failure_metrics, {"fab": fab, "kind": "links"}),
        "survives_single_failure": (fo.survives_single_failure,
                                    {"fab": fab, "min_gbps": 0.5, "kind": "links"}),
        "groups_by": (fo.groups_by, {"fab": skeleton, "key": "layer"}),
        "nest_groups": (fo.nest_groups, {"fab": skeleton, "groups": layers,
                                         "parent": {"layer 0": "hall"}}),
        "all_reduce_metric": (fo.all_reduce_metric, {"message_bytes": 2**20,
                                                     "in_network_reduction": "auto"}),
        "plot_criticality": (fo.plot_criticality, {"table": fo.criticality(fab)}),
        "plot_failure_distribution": (fo.plot_failure_distribution, {
            "dist": fo.failure_distribution(fab, fo.EverySingle("links"))}),
        # what callers build: a model of their own (a mixture of experts, so that its expert
        # fields are valid to start with), a plan search, the failure models
        "ModelConfig": (fo.ModelConfig, {"name": "tiny", "layers": 2, "hidden": 64, "ffn": 256,
                                         "heads": 4, "vocab": 1000, "experts": 4, "top_k": 2,
                                         "expert_ffn": 64}),
        "PlanSearch": (fo.PlanSearch, {"model": "llama3-8b", "global_batch": 8,
                                       "seq_len": 1024}),
        "EverySingle": (fo.EverySingle, {"kind": "links"}),
        "GroupFailures": (fo.GroupFailures, {"groups": layers}),
        "Independent": (fo.Independent, {"kind": "links", "probability": 0.5}),
        "Mixture": (fo.Mixture, {"parts": [(1.0, fo.EverySingle("links"))]}),
        "Selected": (fo.Selected, {"select": "n*", "kind": "switches"}),
        "group_max_flow": (fo.group_max_flow, {"fab": fab, "sources": "n0", "sinks": "n1"}),
        "k_shortest_paths": (fo.k_shortest_paths, {"fab": fab, "source": "n0",
                                                   "target": "n1"}),
        "select_nodes": (fo.select_nodes, {"fab": fab, "selector": "n*"}),
        "select_links": (fo.select_links, {"fab": fab, "selector": "tier=ring"}),
        # a job under failures on one DGX: GPUs lost, a share of its NVLinks, its goodput
        "job_failures": (fo.job_failures, {"fab": dgx, "job": job, "kind": "gpus"}),
        "job_failure_sweep": (fo.job_failure_sweep, {"fab": dgx, "job": job,
                                                     "fractions": [0.1], "trials": 1}),
        "plot_job_failures": (fo.plot_job_failures, {
            "table": fo.job_failures(dgx, job, kind="gpus")}),
        "training_goodput": (fo.training_goodput, {"fab": dgx, "job": job, "solve": False}),
        "young_daly_interval": (fo.young_daly_interval, {"checkpoint_write_s": 60.0,
                                                         "mtbi_s": 3600.0}),
    }
    return calls


#: Arguments a bad value would turn into a long run rather than an error. None now: a count
#: of solves (failure trials, search iterations) is capped by the work it asks for.
LONG_RUNS: dict[tuple[str, str], str] = {}

#: Seconds one call may take before it counts as a hang (the slowest valid call above takes a
#: tenth of that; a plot's first call about a second).
HANG_S = 5


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang


#: Values no argument takes: a call that returns with one of them accepted it silently.
NEVER_VALID = {"nan", "object()"}
#: ... except where one is a documented meaning: (function, argument, value shown). None now
#: (``inf`` is not in NEVER_VALID: for a latency target or a time limit it means "none").
MEANT: set[tuple[str, str, str]] = set()


def _fuzz_one(label: str, func: Callable, kwargs: dict[str, Any],
              skip: Collection[str] = ()) -> list[str]:
    """Call ``func`` with each bad value in place of each argument (but those in ``skip``);
    the problems found."""
    import matplotlib.pyplot as plt

    problems = []
    short = label.split(".")[-1]
    params = [p for p in inspect.signature(func).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
              and not p.name.startswith("_")  # a leading underscore: not for callers
              and p.name not in skip]
    for p in params:
        for shown, make in BAD_VALUES:
            if (short, p.name) in LONG_RUNS and shown == "10**12":
                continue
            args = dict(kwargs)
            args[p.name] = make()
            where = f"{label}({p.name}={shown})"
            old = signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(HANG_S)
            try:
                func(**args)
                if shown in NEVER_VALID and (short, p.name, shown) not in MEANT:
                    problems.append(f"{where}: accepted without a word")
            except _Hang:
                problems.append(f"{where}: still running after {HANG_S} s")
            except fo.FabricOptError as exc:
                text = str(exc)
                if isinstance(exc, fo.BackendUnavailableError):
                    pass
                elif not isinstance(exc, ValueError):
                    problems.append(f"{where}: {type(exc).__name__} is not a ValueError")
                # File errors start with the path (a catalog's with its origin).
                names_file = isinstance(exc, fo.DesignFileError) and any(
                    isinstance(v, str | os.PathLike) and os.fspath(v)
                    and text.startswith(os.fspath(v)) for v in args.values())
                if short + "(" not in text and not names_file:
                    problems.append(f"{where}: message does not name {short}(): {text[:120]}")
                # A size limit names the sizes it would build rather than one argument.
                elif p.name not in text and "the limit is" not in text and not names_file:
                    problems.append(f"{where}: message does not name {p.name}: {text[:120]}")
            except Exception as exc:  # noqa: BLE001 - the point is to list every other kind
                problems.append(f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
                plt.close("all")
    return problems


FUZZED = ["clos", "complete", "dgx_b200", "dgx_h100", "dgx_a100", "hgx_h800", "dgx_h200",
          "dragonfly", "fat_tree", "gb200_nvl72",
          "hypercube", "jellyfish", "leaf_spine", "nvl576", "nvlink_switch_system",
          "nvswitch_domain", "rail_optimized", "ring", "superpod", "torus", "ualink_pod",
          "cluster", "all_to_all", "permutation", "longest_matching", "select_endpoints",
          "tub_upper_bound", "ring_traffic", "max_concurrent_flow", "build_flow_lp",
          "check_certificate", "valiant_rate", "worst_case_permutation", "bisection_bandwidth",
          "collective_bounds", "collective_curve", "hierarchical_all_reduce_time",
          "LatencyModel", "routed_flow", "routed_collective", "fail_random", "failure_sweep",
          "risk_groups", "Fabric", "from_networkx", "Traffic", "verify_symmetry", "read_json",
          "read_graphml", "write_json", "write_graphml", "load_design", "estimate_cost",
          "estimate_tco", "Layout", "Policy",
          "pareto_front", "plot_pareto", "plot_metric_bars", "draw", "compare",
          "Catalog.load", "export_mps", "solve_flow_model", "plot_routing_distribution",
          "RiskGroup", "find_symmetry", "search_symmetry", "plan_capacity", "optimize",
          "model", "TrainingJob", "training_step", "training_metrics", "best_plan",
          "serving_estimate", "serving_capacity", "simulate_serving", "ServingPlan",
          "token_cost", "job_failures", "job_failure_sweep", "plot_job_failures",
          "training_goodput", "young_daly_interval", "criticality", "single_failures",
          "ServingJob",
          "cutting_set", "failure_distribution",
          "failure_metrics", "survives_single_failure", "groups_by", "nest_groups",
          "plot_criticality", "plot_failure_distribution", "all_reduce_metric",
          "ModelConfig", "PlanSearch", "EverySingle", "GroupFailures", "Independent",
          "Mixture", "Selected", "group_max_flow", "k_shortest_paths", "select_nodes",
          "select_links", "cost_assumptions", "set_cost_assumptions", "CostAssumptions"]

#: Public classes a caller builds, fuzzed as constructors above.
CONSTRUCTORS = {"Fabric", "Traffic", "LatencyModel", "Layout", "Policy", "RiskGroup",
                "TrainingJob", "ModelConfig", "PlanSearch", "EverySingle", "GroupFailures",
                "Independent", "Mixture", "ServingPlan", "Selected", "CostAssumptions",
                "ServingJob"}

#: Public classes callers do not build: what the library returns, and where it comes from.
NOT_BUILT = {
    "BisectionResult": "bisection_bandwidth", "CollectiveBounds": "collective_bounds",
    "Comparison": "compare", "CostEstimate": "estimate_cost", "TcoEstimate": "estimate_tco",
    "FabricSummary": "Fabric.summary", "FlowResult": "max_concurrent_flow",
    "ValiantBound": "valiant_rate", "Symmetry": "a generator's claim, or find_symmetry",
    "CapacityPlan": "plan_capacity", "OptimizeResult": "optimize",
    "WorstCasePermutation": "worst_case_permutation", "FailureSweep": "failure_sweep",
    "FailureTrial": "failure_sweep", "FractionSummary": "FailureSweep.summary",
    "CuttingSet": "cutting_set", "FailureOrbit": "single_failures",
    "FailureTable": "single_failures, criticality",
    "FailureDistribution": "failure_distribution", "FailureOutcome": "failure_distribution",
    "FailureModel": "abstract: its models are built", "RoutedFlowResult": "routed_flow",
    "PhaseTime": "training_step", "TrainingStep": "training_step",
    "Goodput": "training_goodput", "JobFailureTable": "job_failures, single_failures(job=)",
    "JobFailureOrbit": "job_failures", "JobFailureSweep": "job_failure_sweep",
    "FailureRates": "FailureRates.default, FailureRates.load (a TOML file of rates)",
    "ServingEstimate": "serving_estimate", "TokenCost": "token_cost", "BestPlan": "best_plan",
    "ServingCapacity": "serving_capacity", "ServingLoad": "simulate_serving",
    "Catalog": "Catalog.load, Catalog.default, Catalog.merged (Catalog.load is fuzzed)",
    "GroupFlow": "group_max_flow",
    "ServingFailureTable": "single_failures(job=ServingJob(...)), criticality",
    "ServingFailureOrbit": "single_failures(job=ServingJob(...))",
}

#: Defects the fuzz finds in code this file does not own, until they are fixed there: the
#: test is expected to fail (strictly: once fixed it passes, and the entry must go).
KNOWN_DEFECTS: dict[str, str] = {}


@pytest.mark.parametrize("label", [
    pytest.param(label, marks=pytest.mark.xfail(reason=KNOWN_DEFECTS[label], strict=True))
    if label in KNOWN_DEFECTS else label for label in FUZZED])
def test_bad_arguments_raise_fabricopt_errors_naming_function_and_argument(label, tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)  # a bad path such as "x" is written here, not in the repo
    func, kwargs = _valid_calls(tmp_path)[label]
    func(**kwargs)  # the base call is valid: every problem below comes from the bad value
    problems = _fuzz_one(label, func, kwargs)
    assert not problems, "\n".join(problems)


def test_every_public_function_and_generator_is_fuzzed():
    public = {name for name in fo.__all__ if inspect.isfunction(getattr(fo, name))}
    assert public | set(GENERATORS) | CONSTRUCTORS | {"Catalog.load"} == set(FUZZED)


def test_every_public_class_is_fuzzed_or_only_returned():
    # A new public class fails here until it is fuzzed as a constructor or said to be a
    # result callers do not build.
    classes = {name for name in fo.__all__ if inspect.isclass(getattr(fo, name))
               and not issubclass(getattr(fo, name), Exception)}
    assert classes == CONSTRUCTORS | set(NOT_BUILT)
    assert not CONSTRUCTORS & set(NOT_BUILT)


ROOT = Path(__file__).resolve().parents[1]  # run the package of this checkout


# -- the command line, as a separate process: stdout closed or full, exit codes -----------------

def _run_cli(args: list[str], stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabricopt", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120, check=False, cwd=ROOT)


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line, never a traceback
    return lines[0]


def test_cli_missing_solver_is_one_line_and_exit_code_2():
    # pulp cannot find Gurobi here: a BackendUnavailableError, printed as bad input
    proc = _run_cli(["solve", "ring", "n=4", "--backend", "pulp", "--solver", "GUROBI_CMD"])
    assert proc.returncode == 2
    assert "GUROBI_CMD" in _one_error_line(proc)


def test_cli_missing_solver_is_backend_unavailable():
    with pytest.raises(fo.BackendUnavailableError, match="GUROBI_CMD"):
        fo.max_concurrent_flow(fo.ring(4), backend="pulp", solver="GUROBI_CMD")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_cli_full_disk_is_one_line_and_exit_code_74():
    with open("/dev/full", "w") as full:
        proc = _run_cli(["show", "ring", "n=4"], stdout=full)
    assert proc.returncode == 74  # EX_IOERR in BSD sysexits.h
    assert "cannot write standard output" in _one_error_line(proc)


def test_cli_closed_stdout_is_one_line_and_exit_code_74():
    # The shell's `>&-`: the command starts with file descriptor 1 closed.
    proc = subprocess.run(["sh", "-c", f'"{sys.executable}" -m fabricopt show ring n=4 >&-'],
                          stderr=subprocess.PIPE, text=True, timeout=120, check=False, cwd=ROOT)
    assert proc.returncode == 74
    assert "standard output is closed" in _one_error_line(proc)


# -- the command line in process: bad words give one line on stderr and exit code 2 -------------

def _main_error(args: list[str], capsys) -> str:
    """Run ``main(args)``, check exit code 2 and one line on stderr, return that line."""
    code = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, (args, err)
    assert len(err) == 1, (args, err)  # one line, never a traceback
    return err[0]


@pytest.mark.parametrize(("args", "expected"), [
    # 64 * 1e12 / (1 + 1e12) rounds to 64 down ports: none left for the spines
    (["show", "clos", "endpoints=64", "radix=64", "oversubscription=1e12"], "no spine port"),
    (["show", "rail_optimized", "nodes=4", "oversubscription=1e12"], "no spine port"),
    (["show", "ring", "n=10**12"], "n must be"),          # not a literal: the string '10**12'
    (["show", "ring", "n=1000000000000"], "the limit is"),  # 10**12 nodes > 2,000,000
    (["show", "hypercube", "d=40"], "the limit is"),        # 2**40 nodes
    (["solve", "ring", "n=4", "--traffic", "permutation:abc"], "seed must be an integer"),
    (["show", "dgx_h100", "in_network_reduction=maybe"], "dgx_h100(): in_network_reduction"),
    (["show", "gb200_nvl72", "name=5"], "gb200_nvl72(): name"),
])
def test_cli_bad_input_is_one_line_and_exit_code_2(args, expected, capsys):
    assert expected in _main_error(args, capsys)


def test_cli_message_bytes_is_checked_before_any_solve(capsys):
    # argparse reads --message-bytes before the command runs: nothing is printed on stdout.
    with pytest.raises(SystemExit) as exc:
        main(["solve", "ring", "n=4", "--message-bytes", "0"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "--message-bytes" in err


def test_cli_unwritable_output_file_is_one_line_and_exit_code_2(tmp_path, capsys):
    line = _main_error(["draw", "ring", "n=4", "-o", str(tmp_path / "missing" / "x.png")],
                       capsys)
    assert "No such file or directory" in line


#: Bad words for the command line: targets, parameters and option values that argparse
#: accepts as text and the command itself must refuse.
BAD_TARGETS = [["nosuch"], ["ring"], ["ring", "n=x"], ["ring", "n=-1"], ["ring", "n=[]"],
               ["ring", "n=None"], ["ring", "n=3.5"], ["ring", "n=1e400"], ["ring", "k=3"],
               ["ring", "n=3", "n=4", "link_gbps=nan"], ["ring", "n=3", "tech="],
               ["missing.toml"], ["missing.json"], ["missing.graphml"],
               ["ring", "n=3", "tech=x", "nosuch", "n=2"], ["fat_tree", "k=3"]]
#: What a command needs after its target, for the bad word under test to be the only one.
TARGET_COMMANDS = {"show": [], "solve": [], "bom": [], "tco": [], "compare": [],
                   "train": ["--model", "llama3-8b"], "failures": [], "worst-case": [],
                   "serve": ["--model", "llama3-8b"], "maxflow": ["--from", "n0", "--to", "n1"],
                   "paths": ["n0", "n1"]}
BAD_OPTIONS = {
    "tco": [["--years", "1e308"], ["--usd-per-kwh", "1e308"], ["--maintenance", "1e308"],
            ["--pue", "0.5"]],
    "train": [["--pue", "0.5"], ["--years", "1e-320"], ["--gpu", "b201"],
              ["--compute-efficiency", "1e-320"], ["--seq-len", "1001", "--tp", "8"]],
    "solve": [["--traffic", "nope"], ["--traffic", "permutation:-1"], ["--gap", "-1"],
              ["--gap", "nan"], ["--time-limit", "-1"], ["--time-limit", "0"],
              ["--collective", "nope"], ["--collective", ","], ["--routing", "hash",
                                                                 "--trials", "0"],
              ["--routing", "hash", "--seed", "-1"], ["--solver", "NOSUCH"]],
    "bom": [["--catalog", "missing.toml"]],
    "draw": [["--aggregate", "nope"], ["--dpi", "-1"], ["--time-limit", "-1",
                                                          "--utilization"]],
    "compare": [["--jobs", "0"]],
    "serve": [["--ttft", "1", "--tpot", "1", "--pue", "0.5"], ["--ttft", "-1", "--tpot", "1"],
              ["--ttft", "1"], ["--gpu", "b201"], ["--batch", "0"], ["--rate", "nan"],
              ["--trace", "missing.csv"], ["--ttft", "1", "--tpot", "1", "--percentile", "2"],
              ["--model", "nosuch"], ["--prompt-len", "10000000000"]],
}


def _cli_cases() -> list[list[str]]:
    cases = []
    for command, after in TARGET_COMMANDS.items():
        cases += [[command, *target, *after] for target in BAD_TARGETS]
    cases += [["draw", *target, "-o", "x.png"] for target in BAD_TARGETS]
    for command, options in BAD_OPTIONS.items():
        for option in options:
            words = ["ring", "n=8" if command in ("train", "serve") else "n=3"]
            words += TARGET_COMMANDS.get(command, [])
            cases.append([command, *words, *option] + (["-o", "x.png"] if command == "draw"
                                                        else []))
    return cases


def test_every_command_that_reads_fabrics_gets_bad_targets():
    from fabricopt.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    takes_targets = {name for name, p in sub.choices.items()
                     if any(a.dest in ("targets", "target") for a in p._actions)}
    # optimize reads search files, not fabrics: test_fuzz_cli.py gives it bad ones
    assert takes_targets - {"optimize"} == set(TARGET_COMMANDS) | {"draw"}


@pytest.mark.parametrize("args", _cli_cases(), ids=" ".join)
def test_cli_fuzz_bad_words_exit_2_with_one_line(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # missing.toml and friends are missing here
    _main_error(args, capsys)


# -- the cases the fuzz found, each pinned by name -----------------------------------------------

@pytest.mark.parametrize(("call", "match"), [
    # 16 * 1e12 / (1 + 1e12) rounds to 16 = radix down ports: up = 0 (was ZeroDivisionError)
    (lambda: fo.clos(endpoints=96, radix=16, oversubscription=1e12),
     r"clos\(\): radix=16 at oversubscription=1000000000000.0 leaves no spine port"),
    (lambda: fo.clos(endpoints=96, radix=16, tiers=3, oversubscription=[1.0, 1e12]),
     "clos.*no spine port"),
    (lambda: fo.rail_optimized(nodes=4, oversubscription=1e12),
     r"rail_optimized\(\).*no spine port"),
    (lambda: fo.cluster("dgx_h100", nodes=4, oversubscription=1e12), r"cluster\(\).*no spine"),
    # a number for capacity was silently ignored (every edge got default_capacity)
    (lambda: fo.from_networkx(nx.path_graph(3), capacity=5),
     r"from_networkx\(\): capacity must be the name of an edge attribute"),
    # was named nvswitch_domain(), the function dgx_h100 calls
    (lambda: fo.dgx_h100(in_network_reduction="x"), r"dgx_h100\(\): in_network_reduction"),
    (lambda: fo.dgx_b200(in_network_reduction="x"), r"dgx_b200\(\): in_network_reduction"),
    # file descriptor 1 is a valid argument to open(): it wrote to standard output, then
    # closed it
    (lambda: fo.write_json(fo.ring(3), 1), r"write_json\(\): path must be a file path"),
    # allocating 10**12 x 6 loads raised MemoryError; named routed_flow() before
    (lambda: fo.routed_collective(fo.ring(3), "all_reduce", 1e6, trials=10**12),
     r"routed_collective\(\): trials must keep trials x arcs"),
    # was a raw TypeError from tuple(-1)
    (lambda: fo.all_to_all(fo.ring(3), endpoints=-1), r"all_to_all\(\): endpoints must be"),
    # was solve_lp(): the function valiant_rate calls
    (lambda: fo.valiant_rate(fo.ring(3), time_limit=-1), r"valiant_rate\(\): time_limit"),
    # the uplink search loops over every port count up to the radix: hours for 10**12
    (lambda: fo.rail_optimized(nodes=2, leaf_radix=10**12),
     r"rail_optimized\(\): leaf_radix must be at most 65,536"),
    (lambda: fo.cluster("dgx_h100", nodes=2, leaf_radix=10**12),
     r"cluster\(\): leaf_radix must be at most 65,536"),
    # 2**(10**12) alone took minutes
    (lambda: fo.hypercube(10**12), r"hypercube\(\): d must be at most 64"),
])
def test_found_by_fuzzing(call, match):
    with pytest.raises(fo.FabricOptError, match=match) as exc:
        call()
    assert isinstance(exc.value, ValueError)


def test_write_errors_name_the_file(tmp_path):
    missing = tmp_path / "missing" / "ring.json"
    with pytest.raises(fo.DesignFileError, match=r"ring\.json: cannot be written"):
        fo.write_json(fo.ring(3), missing)
    with pytest.raises(fo.DesignFileError, match=r"ring\.graphml: cannot be written"):
        fo.write_graphml(fo.ring(3), missing.with_suffix(".graphml"))


# -- the second pass: typos, raw exceptions from numeric edges, runaway inputs -----------------

def _ring_of_400g_with(attribute: str) -> nx.Graph:
    graph = nx.cycle_graph(4)
    nx.set_edge_attributes(graph, 400.0, attribute)
    return graph


def _without_endpoint() -> fo.Fabric:
    fab = fo.ring(4)
    fab.graph.remove_node("n0")  # the endpoint tuple still names it
    return fab


def _ring_with_capacity(gbps: float) -> fo.Fabric:
    fab = fo.ring(4)
    for _, _, data in fab.graph.edges(data=True):
        data["capacity"] = gbps
    return fab


def _certificate_of_ring_with_stray_node():
    result = fo.max_concurrent_flow(fo.ring(4))
    fab = fo.ring(4)
    fab.graph.add_node("stray", role="switch")
    return fo.check_certificate(fab, result)


@pytest.mark.parametrize(("call", "match"), [
    # every link got default_capacity 1 Gb/s: theta 0.5 instead of 200, problems() == []
    (lambda: fo.from_networkx(_ring_of_400g_with("capacity"), capacity="capacty"),
     r"from_networkx\(\): capacity must name an edge attribute.*did you mean 'capacity'"),
    # an unknown tier was ignored: capex priced without the 30 m runs
    (lambda: fo.estimate_cost(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2),
                              layout=fo.Layout(length_m_by_tier={"leaf_spine": 30.0})),
     r"estimate_cost\(\): layout.length_m_by_tier key .*did you mean 'leaf-spine'"),
    (lambda: fo.estimate_cost(fo.ring(4), layout=fo.Layout(slack_m_by_tier={"rnig": 1.0})),
     r"layout.slack_m_by_tier key .*did you mean 'ring'"),
    (lambda: fo.estimate_cost(fo.ring(4), policy=fo.Policy(exclude=("dacc",))),
     r"policy.exclude\[0\] must be a medium key or type.*did you mean 'dac'"),
    (lambda: fo.collective_bounds(fo.ring(4), "all_reduce", message_bytes=1e6,
                                  latency=fo.LatencyModel(length_m_by_tier={"rign": 2.0})),
     r"LatencyModel\(\): length_m_by_tier key .*did you mean 'ring'"),
    # KeyError: 'n0' from problems(), validate() and the solvers
    (lambda: _without_endpoint().validate(), r"endpoint 'n0': not a node of the graph"),
    (lambda: fo.max_concurrent_flow(_without_endpoint()),
     r"max_concurrent_flow\(\): fab has endpoints that are not nodes of its graph"),
    (lambda: fo.write_json(_without_endpoint(), "never.json"),  # read_json refused it
     r"write_json\(\): fab has endpoints that are not nodes"),
    # OverflowError: radix * 1e308 is inf
    (lambda: fo.clos(16, 8, oversubscription=1e308), r"clos\(\).*leaves no spine port"),
    # OverflowError: down / 1e-320 is inf
    (lambda: fo.superpod(1, nodes_per_su=2, oversubscription=1e-320),
     r"superpod\(\): a leaf with 2 endpoint ports needs inf uplinks"),
    # ZeroDivisionError: a time of 0 s
    (lambda: fo.collective_bounds(fo.ring(4), "all_reduce", message_bytes=1e-320),
     r"collective_bounds\(\): message_bytes must be a size of at least 1 byte"),
    (lambda: fo.routed_collective(fo.ring(4), "all_reduce", 1e-320),
     r"routed_collective\(\): message_bytes must be a size of at least 1 byte"),
    # numpy ValueError (1e-320) and PulpError (1e308) from inside the LP
    (lambda: fo.plan_capacity(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2),
                              fo.all_to_all(fo.leaf_spine(leaves=2, spines=1,
                                                          endpoints_per_leaf=2)),
                              target_theta=1e-320),
     r"plan_capacity\(\): target_theta must be a value whose largest demand"),
    (lambda: fo.plan_capacity(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2),
                              fo.all_to_all(fo.leaf_spine(leaves=2, spines=1,
                                                          endpoints_per_leaf=2)),
                              target_theta=1e308),
     r"plan_capacity\(\): target_theta must be a value whose largest demand"),
    # IndexError from networkx's Kernighan-Lin on infinite cut weights
    # (the generators now refuse 1e308 Gb/s links: a fabric edited after it was built)
    (lambda: fo.bisection_bandwidth(_ring_with_capacity(1e308)),
     r"bisection_bandwidth\(\): fab's capacities must sum to a finite number"),
    # AttributeError: the generator's claim no longer held on the fabric given
    (_certificate_of_ring_with_stray_node,
     r"check_certificate\(\): the result was computed on a different graph \(nodes"),
    # KeyError: 'x'
    (lambda: fo.check_certificate(fo.ring(4), fo.max_concurrent_flow(fo.ring(4)),
                                  fo.Traffic({("n0", "x"): 1.0})),
     r"check_certificate\(\): traffic 'traffic': 1 endpoint\(s\) are not endpoints"),
    # minutes to build, then out of memory (2 * 10**9 nodes: 2,000 bytes each at least, more
    # than any machine holds); the sweep hung spawning 10**12 seeds
    (lambda: fo.torus([2_000_000_000]), r"torus\(\).*about .* GB to build and solve"),
    (lambda: fo.failure_sweep(fo.ring(4), [0.25], trials=10**12),
     r"failure_sweep\(\): trials must be at most 100,000 solves"),
    (lambda: fo.worst_case_permutation(fo.ring(4), iterations=10**12),
     r"worst_case_permutation\(\): iterations must be an integer >= 1 <= 100000"),
    # public methods: raw TypeError, or silently accepted
    (lambda: fo.all_to_all(fo.ring(4)).restrict(5), r"Traffic.restrict\(\): endpoints"),
    (lambda: fo.Traffic.uniform(None), r"Traffic.uniform\(\): endpoints"),
    (lambda: fo.estimate_cost(fo.ring(4)).count("qm9701"),  # counted 0 units
     r"CostEstimate.count\(\): component must be a catalog key.*did you mean 'qm9700'"),
    (lambda: fo.routed_flow(fo.ring(4), backend="nope"), r"routed_flow\(\): backend"),
    (lambda: fo.routed_flow(fo.ring(4), time_limit=-5), r"routed_flow\(\): time_limit"),
    (lambda: fo.Catalog.load("any.toml", merge=None),  # an empty catalog
     r"Catalog.load\(\): merge must be True or False"),
    (lambda: fo.compare(fo.ring(4), metrics=["summary"]).to_csv(5),  # raw TypeError
     r"Comparison.to_csv\(\): path must be a file path"),
    (lambda: fo.compare(fo.ring(4), metrics=["summary"]).to_csv(""),  # FileNotFoundError
     r"Comparison.to_csv\(\): path must be a file path"),
    (lambda: fo.compare(fo.ring(4), metrics=["summary"]).to_csv("missing/t.csv"),  # OSError
     r"missing/t.csv: cannot be written"),
    (lambda: fo.optimize(16, space=SMALL_SPACE).write_design("missing/best.toml"),
     r"missing/best.toml: cannot be written"),
    (lambda: fo.compare(fo.ring(4), metrics=["summary"]).fabric("0"),  # TypeError
     r"Comparison.fabric\(\): index must be an integer >= -1 <= 0"),
    (lambda: fo.compare(fo.ring(4), metrics=["summary"]).fabric(7),  # IndexError
     r"Comparison.fabric\(\): index must be an integer >= -1 <= 0, got 7"),
    # ZeroDivisionError, ValueError, TypeError from inside the search (CLI: traceback)
    (lambda: fo.optimize(16, space={**SMALL_SPACE, "oversubscription": [-1.0]}),
     r"optimize\(\): space\['oversubscription'\]\[0\] must be a finite number > 0"),
    (lambda: fo.optimize(16, space={**SMALL_SPACE, "oversubscription": [math.nan]}),
     r"optimize\(\): space\['oversubscription'\]\[0\] must be a finite number > 0"),
    (lambda: fo.optimize(16, space={**SMALL_SPACE, "oversubscription": [1.0, None]}),
     r"optimize\(\): space\['oversubscription'\]\[1\] must be a finite number > 0"),
    (lambda: fo.optimize(16, space={**SMALL_SPACE, "planes": [0]}),
     r"optimize\(\): space\['planes'\]\[0\] must be an integer >= 1"),
])
def test_found_by_the_second_fuzz(call, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fo.FabricOptError, match=match) as exc:
        call()
    assert isinstance(exc.value, ValueError)


def test_some_edges_without_the_capacity_attribute_warn():
    graph = _ring_of_400g_with("capacity")
    del graph[0][1]["capacity"]
    with pytest.warns(UserWarning, match="1 of 4 edges lack the attribute 'capacity'"):
        fab = fo.from_networkx(graph, default_capacity=100.0)
    assert fab.graph[0][1]["capacity"] == 100.0 and fab.graph[1][2]["capacity"] == 400.0


def test_a_deeply_nested_json_file_is_a_file_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)  # RecursionError in the decoder
    with pytest.raises(fo.DesignFileError, match="deep.json: JSON nested too deeply"):
        fo.read_json(path)


def test_a_design_file_layout_with_an_unknown_tier_is_refused(tmp_path):
    design = tmp_path / "pod.toml"
    design.write_text('family = "leaf_spine"\n[params]\nleaves = 2\nspines = 1\n'
                      'endpoints_per_leaf = 2\n[layout]\nlength_m_by_tier = {leaf_spine = 30.0}\n')
    with pytest.raises(fo.DesignFileError, match=r"pod.toml: \[layout\]:.*'leaf-spine'"):
        fo.load_design(design)


def test_summary_leaves_self_loops_out_and_names_a_missing_capacity():
    fab = fo.ring(4)
    fab.graph.add_edge("n1", "n1", capacity=1e6)  # counted in the injection: 1,000,002
    summary = fab.summary()
    # a ring GPU injects two 1 Gb/s links; the loop is no link of any tier either
    assert summary.injection_gbps_max == 2.0 and summary.links_by_tier == {"ring": 4}
    assert any("self-loop" in p for p in fab.problems())
    del fab.graph["n1"]["n2"]["capacity"]  # was KeyError: 'capacity'
    with pytest.raises(fo.InvalidFabricError, match=r"arc 'n1'->'n2' has capacity None"):
        fab.summary()


def test_a_torn_last_row_is_dropped_before_appending(tmp_path):
    rows = tmp_path / "results.jsonl"
    # A run killed mid-write left a fragment without its newline; the next row was glued to
    # it (one unreadable line), and a second crash lost both.
    rows.write_text('{"key": "old", "name": "x", "error": "boom"}\n{"key": "ha')
    table = fo.compare(fo.ring(4), metrics=["summary"], out_dir=tmp_path)
    lines = rows.read_text().splitlines()
    parsed = [json.loads(line) for line in lines]  # every line is a whole row again
    assert table.rows[0]["key"] in {row["key"] for row in parsed}
    assert rows.read_text().endswith("\n")


def test_a_rerun_says_how_many_rows_it_reused(tmp_path, capsys):
    designs = [fo.ring(4), fo.ring(6)]
    assert fo.compare(designs, metrics=["summary"], out_dir=tmp_path).reused == 0
    assert fo.compare(designs, metrics=["summary"], out_dir=tmp_path).reused == 2
    out = tmp_path / "cli"
    for _ in range(2):
        assert main(["compare", "ring", "n=4", "--no-diagrams", "-o", str(out)]) == 0
    # the second run computed nothing: its one row came from results.jsonl
    assert "1 design (0 failed, 1 reused from an earlier run)" in capsys.readouterr().out


# -- the third pass: a job's fields through a step, a search's constraints -------------------

#: What a TrainingJob field needs beside it for its bad value to be the only thing wrong
#: (the pipeline's fields need pp > 1, the recomputation fields their mode).
JOB_COMPANIONS: dict[str, dict[str, Any]] = {
    "virtual_stages": {"pp": 2}, "first_stage_layers": {"pp": 2},
    "last_stage_layers": {"pp": 2}, "microbatch_group": {"pp": 2, "virtual_stages": 2},
    "recompute_layers": {"recompute": "full"}, "recompute_modules": {"recompute": "selective"}}


def _finite_step_figures(step: Any) -> list[float]:
    return [step.step_s, step.step_s_lower, step.compute_s, step.tokens_per_s, step.mfu,
            step.memory_gb_per_gpu]


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(fo.TrainingJob)])
def test_each_training_job_field_through_a_step(field):
    # A bad value of a field is refused by TrainingJob (naming it) or by training_step, or the
    # step it gives is finite: compute_efficiency=1e-320 built a job whose step was inf s and
    # whose tokens per second were nan.
    dgx = fo.dgx_h100()
    problems = []
    for shown, make in BAD_VALUES:
        kwargs = {"model": "llama3-8b", "tp": 8, "global_batch": 8, "seq_len": 1024,
                  **JOB_COMPANIONS.get(field, {}), field: make()}
        where = f"TrainingJob({field}={shown})"
        try:
            job = fo.TrainingJob(**kwargs)
        except fo.FabricOptError as exc:
            if "TrainingJob(" not in str(exc) or field not in str(exc):
                problems.append(f"{where}: message does not name TrainingJob() and {field}: "
                                f"{str(exc)[:120]}")
            continue
        except Exception as exc:  # noqa: BLE001 - every other kind is the defect
            problems.append(f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        for func in (fo.training_step, fo.training_metrics):
            try:
                out = func(dgx, job)
            except fo.FabricOptError as exc:
                if f"{func.__name__}(" not in str(exc) and "token_cost(" not in str(exc):
                    problems.append(f"{where} -> {func.__name__}: {str(exc)[:120]}")
                continue
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{where} -> {func.__name__}: {type(exc).__name__}: "
                                f"{str(exc)[:120]}")
                continue
            figures = (_finite_step_figures(out) if func is fo.training_step else
                       [v for v in out.values() if isinstance(v, float)])
            if not all(math.isfinite(v) for v in figures):
                problems.append(f"{where} -> {func.__name__}: figures not finite: {figures}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("key", sorted(CONSTRAINT_KEYS))
def test_each_best_plan_constraint_with_bad_values(key):
    # A constraint's bad value is refused naming best_plan() and the key, or the best plan
    # found is finite (compute_efficiency=1e-320 gave an infinite step; max_memory_gb=1e-320
    # a message that named neither the constraint nor a finite ratio: "(infx) too much").
    dgx = fo.dgx_h100()
    problems = []
    for shown, make in [*BAD_VALUES, ("[0]", lambda: [0]), ("[None]", lambda: [None]),
                        ("[nan]", lambda: [math.nan]), ("[-1, 2]", lambda: [-1, 2])]:
        where = f"best_plan(constraints={{{key!r}: {shown}}})"
        try:
            found = fo.best_plan(dgx, "llama3-8b", global_batch=8, seq_len=1024,
                                 constraints={key: make()})
        except fo.FabricOptError as exc:
            text = str(exc)
            if "best_plan(" not in text or key not in text or "(infx)" in text:
                problems.append(f"{where}: {text[:160]}")
            continue
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        if not all(math.isfinite(v) for v in _finite_step_figures(found.step)):
            problems.append(f"{where}: step not finite")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("call", "match"), [
    # gpu names a GPU the fabric's nodes do not carry: B200 figures on DGX H100 servers
    (lambda: fo.serving_estimate(fo.dgx_h100(), "llama3-8b", gpu="b200"),
     r"serving_estimate\(\): gpu must be the GPU the fabric's nodes carry, 'h100_sxm'"),
    (lambda: fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=8, seq_len=1024,
                          constraints={"gpu": "b200"}),
     r"best_plan\(\): gpu must be the GPU the fabric's nodes carry"),
    # read as True ("no" is a non-empty string), or named ModelConfig() inside model()
    (lambda: fo.model({"name": "t", "layers": 2, "hidden": 64, "ffn": 256, "heads": 4,
                       "vocab": 1000, "gated_mlp": "no"}),
     r"model\(\): gated_mlp must be True or False, got 'no'"),
    # PUE below 1 passed to token_cost inside the search
    (lambda: fo.PlanSearch("llama3-8b", global_batch=8, seq_len=1024, pue=0.5),
     r"PlanSearch\(\): pue must be a power usage effectiveness >= 1"),
    # a misspelt cost option was a raw TypeError from token_cost
    (lambda: fo.training_metrics(fo.dgx_h100(), fo.TrainingJob("llama3-8b", tp=8,
                                                                global_batch=8, seq_len=1024),
                                 yeers=4),
     r"training_metrics\(\): 'yeers' is not a cost option \(did you mean 'years'\?\)"),
    # named training_step(), the function training_metrics calls
    (lambda: fo.training_metrics(fo.dgx_h100(), fo.TrainingJob("llama3-8b", tp=8,
                                                                global_batch=8, seq_len=1024,
                                                                gpu="x")),
     r"training_metrics\(\): gpu must be one of"),
    # the step was inf s, its tokens per second and MFU nan
    (lambda: fo.TrainingJob("llama3-8b", compute_efficiency=1e-320),
     r"TrainingJob\(\): compute_efficiency must be a fraction of the GPU's peak from 0.001"),
])
def test_found_by_the_third_fuzz(call, match):
    with pytest.raises(fo.FabricOptError, match=match) as exc:
        call()
    assert isinstance(exc.value, ValueError)
