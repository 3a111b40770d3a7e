"""The metric registry: what a row of :func:`~fabricopt.compare` or
:func:`~fabricopt.optimize` holds, computed one way and spelled one way.

Each :class:`Metric` turns a fabric into columns. A figure with a certified bracket is spelled
once, by its **certified lower end** (what the fabric is proven to deliver: a feasible flow, a
schedule that exists, a cut proven minimal), with the upper end beside it under the same name
and ``_upper``. Constraints of the optimizer read the lower end, so a design never passes on a
figure no schedule reaches.

=====================================  ======================================================
column                                 meaning
=====================================  ======================================================
``gpus``                               endpoints (``summary``)
``network_switches``                   switches of the network between scale-up domains
``scale_up_switches``                  switch chips with a scale-up link (NVSwitch, UALink)
``links``, ``links_<tier>``            physical links, in total and per tier
``all_to_all_status``, ``_method``     status and method of the all-to-all solve
``all_to_all_theta``, ``_upper``       the certified bracket of theta
``all_to_all_gbps_per_gpu``, ``_upper``  Gb/s each GPU delivers in all-to-all, certified
                                       lower end and upper end
``all_to_all_network_gbps_per_gpu``,   the part of it that crosses the network (between
``_upper``                             scale-up domains), to read against a NIC's speed:
                                       each end times :meth:`~fabricopt.Traffic.crossing_share`
``all_to_all_exact``                   whether the two ends meet
``all_to_all_proven_by``               the stage that proved each end (``result.stages``):
                                       one name, or ``"lower / upper"``
``binding_tier``                       the tier whose links limit the all-to-all
``any_traffic_gbps_per_gpu``           certified rate at which *every* traffic is carried
                                       (two-phase routing, :func:`~fabricopt.valiant_rate`):
                                       a lower bound on the worst-case permutation rate
``bisection_gbps``, ``_upper``         certified lower bound and best cut found
``bisection_gbps_per_gpu``, ``_upper``  the same per GPU; ``bisection_exact``,
                                       ``full_bisection_ratio``
``message_bytes``                      buffer size of the collective figures
``all_reduce_busbw_GBps``              busbw of the best all-reduce schedule known to exist
``all_reduce_busbw_GBps_upper``        the best busbw the fabric allows (a bound)
``all_reduce_busbw_GBps_expected``     a calibrated estimate of what nccl-tests measures
                                       (an estimate, neither bound)
``capex_usd``, ``power_w``             network capex and power (:func:`~fabricopt.estimate_cost`)
``capex_per_gpu_usd``, ``power_per_gpu_w``  the same per GPU; ``idle_ports``; ``pricing``
                                       names how the links were priced (the design family's
                                       reference build by default); ``capex_usd_low`` and
                                       ``_high``: the range from the catalog's price ranges
``in_server_usd``                      scale-up silicon in the server price (a DGX's
                                       NVSwitch chips), not in ``capex_usd``
``system``                             the catalog server the GPUs sit in
                                       (:func:`server_system`), or empty
``in_system_only``                     every link stays inside one server or rack-scale
                                       system (a DGX, an NVL72): no scale-out network
``network_share``,                     the network's share of network plus servers, in
``network_power_share``                capex and in power (where the catalog prices the
                                       server; :meth:`~fabricopt.CostEstimate.network_share`)
``usd_per_delivered_gbps``,            per GPU per all-to-all Gb/s proven delivered
``w_per_delivered_gbps``               (``all_to_all_gbps_per_gpu``)
=====================================  ======================================================

The ``failures`` metric (asked for by name) fails every single switch, one orbit of the
fabric's symmetry at a time (:func:`~fabricopt.single_failures`):
``n1_switch_worst_gbps_per_gpu`` is the all-to-all no single switch failure goes below
(certified), ``_upper`` what the worst one leaves at most; ``failure_p5_gbps_per_gpu`` and
``failure_mean_gbps_per_gpu`` are certified lower bounds of the 5th percentile and the mean
over those failures.

The ``tco`` metric (asked for by name) adds ``tco_usd``, ``tco_per_gpu_year_usd`` and its
parts (:func:`~fabricopt.estimate_tco` at its defaults), ``expected_failed_links`` (down at any
moment, from the optics' annual failure rates) and
``all_to_all_gbps_per_gpu_at_expected_failures``: the certified all-to-all with the most
likely number of links between switches down (the worst of :data:`EXPECTED_FAILURE_DRAWS`
random draws; the intact figure where that number is 0).

The ``training`` metric (asked for by name) runs a training job on the fabric
(:func:`~fabricopt.training_metrics`): the context's ``job``, else the design file's ``[job]``
table. ``training_step_s`` and ``training_tokens_per_s`` are expected figures (bounds over
calibrated efficiencies: estimates, neither end of a bracket); ``training_step_s_lower`` is
the certified lower bound on the step of the modelled schedule, and
``training_tokens_per_s_upper`` the throughput it caps; ``training_mfu``,
``training_usd_per_million_tokens``, ``training_binding_dimension`` and
``training_binding_tier`` follow the expected step; ``training_plan`` names the plan. A
:class:`~fabricopt.PlanSearch` as the job (or a table with ``plan = "best"``) judges each
fabric by its own best plan (:func:`~fabricopt.best_plan`): the columns are that plan's.

The ``goodput`` metric (asked for by name) puts the same job under failures
(:func:`~fabricopt.training_goodput` with the shipped failure rates, ``docs/goodput.md``):
``goodput`` (expected tokens per day over the intact job's), ``goodput_ettr``,
``goodput_interruptions_per_day``, ``goodput_tokens_per_day`` (and ``_upper``, from the
step's certified lower bound) and ``usd_per_million_tokens_with_downtime``, the training
cost per million tokens over the goodput.

The ``serving`` metric (asked for by name) serves a model on the fabric within latency
targets (:func:`~fabricopt.serving_capacity`, ``docs/serving.md``): the context's ``serving``
workload (``compare(serving=...)``: ``model``, ``ttft_s``, ``tpot_s``, optionally
``percentile``, ``prompt_len``, ``output_len``, ``precision``, ``plan``...).
``serving_rate`` is the highest request rate within the targets (simulated, an estimate),
``serving_ttft_p99_s`` and ``serving_tpot_p99_s`` the latencies there (at the workload's
percentile), ``serving_tokens_per_s`` the output tokens, ``serving_usd_per_million_tokens``
their cost, ``serving_plan`` the plan.

The ``routing`` metric (asked for by name) adds ``routing_<policy>_theta`` and
``routing_<policy>_efficiency`` for ECMP, WCMP and static tables, and the median and 5th
percentile of ``routing_trials`` draws of per-flow hashing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from .._gc import frozen_gc, paused_gc
from .._unchanged import forget, unchanged
from ..analysis.bisection import bisection_bandwidth
from ..collectives import collective_bounds
from ..cost import Catalog, estimate_cost
from ..cost.systems import server_system
from ..cost.tco import tco_metrics
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..failures.engine import max_concurrent_flow  # with the failure floor's stages
from ..failures.study import failure_metrics
from ..failures.sweep import failure_sweep
from ..flow.api import cheap_bracket
from ..flow.bounds import structural_cut_lengths
from ..flow.two_phase.rate import valiant_rate
from ..graph_arrays import GraphArrays
from ..routing import routed_flow
from ..tiers import IN_SYSTEM_TIERS, SCALE_UP_TIERS, is_scale_up_arc, tier_of
from ..traffic import all_to_all
from ..workload.goodput import training_goodput
from ..workload.metrics import training_metrics
from ..workload.plan import TrainingJob
from ..workload.plan_search import PlanSearch, job_or_search, plan_label, search_metrics
from ..workload.serving_capacity import serving_capacity, serving_workload

__all__ = ["CONSTRAINTS", "DEFAULT_METRICS", "METRICS", "Metric", "MetricContext",
           "compute_metrics", "delivered_cost", "ecmp_bracket", "plain", "server_system"]

#: Most GPU pairs at which :func:`ecmp_bracket` computes the distance bound (its arrays hold
#: every pair: 1.2 GB and 4 s at 4,096 GPUs, 16.8 million pairs; above the limit the caller's
#: plan bound is the upper end, and at those sizes it is the tighter one).
CHEAP_BRACKET_PAIRS = 4_200_000
#: Random draws of the links expected down at any time, behind the ``tco`` metric's
#: throughput at that failure level (the row keeps the worst).
EXPECTED_FAILURE_DRAWS = 3


@dataclass
class MetricContext:
    """The options every metric of one row reads, and what they share (the all-to-all flow
    is solved once per fabric).

    Rows do not depend on how busy the machine is: ``work_limit`` caps the all-to-all solve
    in solver iterations (recorded in the row as ``all_to_all_work_limit``), and no solve
    has a wall-clock limit unless ``time_limit`` (seconds) is given.

    ``all_to_all_method`` is ``"flow"`` (the certified max-concurrent-flow, stopping at
    ``gap``) or ``"ecmp bracket"`` (no LP: :func:`ecmp_bracket`, for fabrics too large for
    one). ``policy`` is the optics policy the ``cost`` metric prices with; ``job`` the
    :class:`~fabricopt.TrainingJob` (or a table of its keys) of the ``training`` metric, or a
    :class:`~fabricopt.PlanSearch` (a table with ``plan = "best"``) that finds each fabric's.
    """

    message_bytes: float = 2.0**30
    routing_trials: int = 20
    routing_seed: int = 0
    time_limit: float | None = None
    work_limit: int | None = None
    gap: float = 0.01
    all_to_all_method: str = "flow"
    policy: Any = None
    job: Any = None
    serving: Any = None
    shared: dict[str, Any] = field(default_factory=dict)

    def flow(self, fab: Fabric) -> Any:
        """The all-to-all max-concurrent-flow result, solved once per fabric."""
        if "flow" not in self.shared:
            self.shared["flow"] = max_concurrent_flow(fab, self.unit_all_to_all(fab),
                                                      time_limit=self.time_limit, gap=self.gap,
                                                      work_limit=self.work_limit)
        return self.shared["flow"]

    def unit_all_to_all(self, fab: Fabric) -> Any:
        """The all-to-all of 1 Gb/s per pair, made once per fabric: the flow solves it and
        the network's share is read off it."""
        if "all_to_all" not in self.shared:
            self.shared["all_to_all"] = all_to_all(fab, gbps=1.0)
        return self.shared["all_to_all"]


@dataclass(frozen=True)
class Metric:
    """A named group of columns and the function that computes them for one fabric."""

    name: str
    compute: Callable[[Fabric, MetricContext], dict[str, Any]]
    summary: str


def _summary(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    s = fab.summary()
    g = fab.graph
    # A switch with a scale-up link (NVLink, UALink) is a scale-up switch chip, counted apart
    # from the network's switches: a DGX H100 SuperPOD's 560 are 48 + 512 NVSwitch chips.
    scale_up = sum(1 for w, role in g.nodes(data="role") if role == "switch"
                   and any(is_scale_up_arc(d) for _, _, d in g.out_edges(w, data=True)))
    row: dict[str, Any] = {"gpus": s.endpoints,
                           "network_switches": s.nodes_by_role.get("switch", 0) - scale_up,
                           "scale_up_switches": scale_up,
                           "links": sum(s.links_by_tier.values())}
    row.update({f"links_{tier}": n for tier, n in s.links_by_tier.items()})
    return row


def ecmp_bracket(fab: Fabric) -> tuple[float, float]:
    """Certified bracket ``(lower, upper)`` of the all-to-all Gb/s per GPU of ``fab`` without
    an LP: ``lower`` is what ECMP routing carries (:func:`~fabricopt.routed_flow`, exact for
    that routing and a feasible flow, so below the optimum), ``upper`` the least of the
    hop-length distance bound and endpoint-link bound of
    :func:`~fabricopt.flow.api.cheap_bracket` (infinite above :data:`CHEAP_BRACKET_PAIRS`
    pairs) and the fabric's hierarchy cuts
    (:func:`~fabricopt.flow.bounds.structural_cut_lengths`: a leaf with the servers under it,
    a pod, a rail group; what a group sends out crosses its own links), which close a 3:1
    Clos of 16,384 GPUs at its leaf uplinks.

    >>> import fabricopt as fo
    >>> [round(x, 6) for x in ecmp_bracket(fo.leaf_spine(leaves=2, spines=2,
    ...                                                  endpoints_per_leaf=2))]
    [400.0, 400.0]
    """
    traffic = all_to_all(fab, gbps=1.0)
    n = len(fab.endpoints)
    routed = routed_flow(fab, traffic, routing="ecmp")
    upper = (cheap_bracket(fab, traffic).upper * (n - 1) if n * (n - 1) <= CHEAP_BRACKET_PAIRS
             else math.inf)
    cut, _ = structural_cut_lengths(fab, traffic, GraphArrays.from_fabric(fab))
    upper = min(upper, cut * (n - 1))
    lower = routed.theta * (n - 1) if routed.status == "exact" else 0.0
    return lower, max(upper, lower)


def _all_to_all(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    n = len(fab.endpoints)
    per_gpu = max(n - 1, 1)  # at unit demand a GPU sends 1 Gb/s to each of the others
    if ctx.all_to_all_method == "ecmp bracket":
        lower, upper = ecmp_bracket(fab)
        closed = upper <= lower * (1 + 1e-9)
        # No LP was tried: the bracket is proven by routing and bounds alone.
        return {"all_to_all_status": "optimal" if closed else "not_solved",
                "all_to_all_method": "ecmp bound",
                "all_to_all_theta": lower / per_gpu, "all_to_all_theta_upper": upper / per_gpu,
                "all_to_all_gbps_per_gpu": lower, "all_to_all_gbps_per_gpu_upper": upper,
                **_over_network(fab, lower, upper, ctx),
                "all_to_all_exact": closed, "binding_tier": None}
    r = ctx.flow(fab)
    return {"all_to_all_status": r.status, "all_to_all_method": r.method,
            "all_to_all_theta": r.lower, "all_to_all_theta_upper": r.upper,
            "all_to_all_gbps_per_gpu": r.lower * per_gpu,
            "all_to_all_gbps_per_gpu_upper": r.upper * per_gpu,
            **_over_network(fab, r.lower * per_gpu, r.upper * per_gpu, ctx),
            "all_to_all_exact": r.exact, "binding_tier": r.binding_tier,
            "all_to_all_work_limit": r.work_limit,
            "all_to_all_proven_by": _proven_by(r.stages)}


def _over_network(fab: Fabric, lower: float | None, upper: float | None,
                  ctx: MetricContext) -> dict[str, Any]:
    """The part of a GPU's all-to-all bracket that crosses the network (between scale-up
    domains): what its NICs carry, to read against their speed. Each end is its end of the
    whole times the share of the demand that crosses (a fixed share of every pair's flow)."""
    share = ctx.unit_all_to_all(fab).crossing_share(fab) if len(fab.endpoints) > 1 else 0.0
    return {"all_to_all_network_gbps_per_gpu": None if lower is None else lower * share,
            "all_to_all_network_gbps_per_gpu_upper": None if upper is None else upper * share}


def _proven_by(stages: dict[str, str]) -> str | None:
    """Which stage proved each end of the all-to-all bracket, as one cell: the stage's name
    when one proved both ends, else ``"lower / upper"``."""
    if not stages:
        return None
    lower, upper = stages.get("lower", ""), stages.get("upper", "")
    return lower if lower == upper else f"{lower} / {upper}"


def _any_traffic(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    h = valiant_rate(fab, time_limit=ctx.time_limit)
    ctx.shared["hose"] = h  # the bisection's lower bound, searched once per row
    return {"any_traffic_gbps_per_gpu": h.rate_gbps if h.status == "optimal" else None,
            "any_traffic_status": h.status}


def _bisection(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    # No wall-clock limit unless asked: a limit that binds on a busy machine only would
    # make the row depend on the load (leaf_spine(11, 2, 4): 4,400 or the exact 4,800).
    b = bisection_bandwidth(fab, time_limit=ctx.time_limit, hose=ctx.shared.get("hose"))
    n = max(len(fab.endpoints), 1)
    return {"bisection_gbps": b.lower_gbps, "bisection_gbps_upper": b.upper_gbps,
            "bisection_gbps_per_gpu": b.lower_gbps / n,
            "bisection_gbps_per_gpu_upper": b.upper_gbps / n,
            "bisection_exact": b.exact, "full_bisection_ratio": b.full_bisection_ratio}


def _all_reduce(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    c = collective_bounds(fab, "all_reduce", message_bytes=ctx.message_bytes, expected=True)
    return {"message_bytes": ctx.message_bytes,
            "all_reduce_busbw_GBps": c.achievable_busbw_GBps,
            "all_reduce_busbw_GBps_upper": c.busbw_GBps,
            "all_reduce_busbw_GBps_expected": (c.expected or {}).get("busbw_GBps"),
            "all_reduce_expected_algorithm": (c.expected or {}).get("algorithm"),
            "all_reduce_binding": c.binding}


def _routing(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    traffic = all_to_all(fab, gbps=1.0)
    flow = ctx.flow(fab)
    # Efficiency only against a proven optimum: a bracket's ends would flatter or wrong it.
    optimum = flow.theta if flow.status == "optimal" and flow.theta else None

    def efficiency(theta: float) -> float | None:
        return theta / optimum if optimum else None

    row: dict[str, Any] = {}
    for policy in ("ecmp", "wcmp", "static"):
        theta = routed_flow(fab, traffic, routing=policy).theta
        row[f"routing_{policy}_theta"] = theta
        row[f"routing_{policy}_efficiency"] = efficiency(theta)
    hashed = routed_flow(fab, traffic, routing="hash", trials=ctx.routing_trials,
                         seed=ctx.routing_seed).distribution
    for stat in ("median", "p5"):
        row[f"routing_hash_theta_{stat}"] = hashed[stat]
        row[f"routing_hash_{stat}_efficiency"] = efficiency(hashed[stat])
    row.update({"routing_hash_trials": ctx.routing_trials, "routing_seed": ctx.routing_seed})
    return row


def _share(est: Any, system: str | None, of: str) -> float | None:
    if system is None:
        return None
    entry = (est.catalog or Catalog.default()).systems.get(system, {})
    price = entry.get("price_usd" if of == "capex" else "power_w")
    return est.network_share(system, of) if price is not None else None


def _in_system_only(fab: Fabric) -> bool:
    """True when every link stays inside one system. The scan stops at the first link that
    leaves one, which a cluster reaches within its first server."""
    return all(tier_of(d) in IN_SYSTEM_TIERS for _, _, d in fab.graph.edges(data=True))


def _cost(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    est = estimate_cost(fab, policy=ctx.policy)
    system = server_system(fab)
    row = {"capex_usd": est.capex_usd, "power_w": est.power_w,
           "capex_per_gpu_usd": est.per_endpoint_usd, "power_per_gpu_w": est.per_endpoint_w,
           "capex_usd_low": est.capex_usd_range[0], "capex_usd_high": est.capex_usd_range[1],
           "in_server_usd": est.scale_up_in_server_usd,
           "system": system,
           "in_system_only": _in_system_only(fab),
           "network_share": _share(est, system, "capex"),
           "network_power_share": _share(est, system, "power"),
           "idle_ports": sum(est.idle_ports.values()), "pricing": est.policy_name}
    return delivered_cost(row)


def _tco(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    row: dict[str, Any] = tco_metrics(fab, policy=ctx.policy)
    row["all_to_all_gbps_per_gpu_at_expected_failures"] = None
    # The most likely number of links down at a moment (the mode of a Poisson count with the
    # expected number from the optics' failure rates and repair time), failed at random among
    # the links between switches (a failed GPU link takes its GPU out of the job, not of the
    # network): the certified all-to-all the fabric still delivers, the worst of a few draws.
    down = math.floor(row["expected_failed_links"])
    g = fab.graph
    fabric_tiers = sorted({d.get("tier") for u, v, d in g.edges(data=True)
                           if g.nodes[u].get("role") == g.nodes[v].get("role") == "switch"
                           and d.get("tier") not in (None, *SCALE_UP_TIERS)})
    links = sum(n for tier, n in fab.summary().links_by_tier.items() if tier in fabric_tiers)
    if down == 0:  # the intact fabric: the all-to-all flow, solved once per row
        row["all_to_all_gbps_per_gpu_at_expected_failures"] = (
            ctx.flow(fab).lower * max(len(fab.endpoints) - 1, 1))
        return row
    if not links:
        return row
    sweep = failure_sweep(fab, [min(down / links, 1.0)], trials=EXPECTED_FAILURE_DRAWS, seed=1,
                          tiers=fabric_tiers, time_limit=ctx.time_limit)
    [summary] = sweep.summary
    if sweep.mean_out_gbps is not None:
        row["all_to_all_gbps_per_gpu_at_expected_failures"] = (
            summary.lower_min * sweep.mean_out_gbps)
    return row


def _training(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    job = ctx.job if ctx.job is not None else (fab.design or {}).get("job") or None
    if job is None:
        raise InvalidParameterError(
            f"the training metric needs a job for {fab.name}: a [job] table in its design "
            "file, or compare(job=...) (on the command line: --job FILE, or --model NAME "
            "with --tp, --pp...)")
    job = job_or_search(job, "[job]")
    if isinstance(job, PlanSearch):  # each fabric judged by its own best plan
        row = search_metrics(fab, job)
        job = row["job"]
    else:
        row = training_metrics(fab, job)
        row["plan"] = plan_label(job.with_gpus(len(fab.endpoints), "training_metrics"))
    return {"training_step_s": row["step_s"], "training_step_s_lower": row["step_s_lower"],
            "training_tokens_per_s": row["tokens_per_s"],
            "training_tokens_per_s_upper": job.tokens_per_step / row["step_s_lower"],
            "training_mfu": row["mfu"],
            "training_usd_per_million_tokens": row["usd_per_million_tokens"],
            "training_binding_dimension": row["binding_dimension"],
            "training_binding_tier": row["binding_tier"],
            "training_plan": row["plan"]}


def _goodput(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    job = ctx.job if ctx.job is not None else (fab.design or {}).get("job") or None
    job = None if job is None else job_or_search(job, "[job]")
    if not isinstance(job, TrainingJob):
        raise InvalidParameterError(
            f"the goodput metric needs a job for {fab.name} (a TrainingJob, not a plan "
            "search): a [job] table in its design file, or compare(job=...)")
    g = training_goodput(fab, job)
    usd = training_metrics(fab, job)["usd_per_million_tokens"]
    return {"goodput": g.goodput, "goodput_ettr": g.ettr,
            "goodput_interruptions_per_day": g.interruptions_per_day,
            "goodput_tokens_per_day": g.tokens_per_day,
            "goodput_tokens_per_day_upper": g.tokens_per_day_upper,
            "usd_per_million_tokens_with_downtime":
                usd / g.goodput if usd is not None and g.goodput > 0 else None}


def _serving(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    if ctx.serving is None:
        raise InvalidParameterError(
            f"the serving metric needs a workload for {fab.name}: compare(serving={{'model': "
            "..., 'ttft_s': ..., 'tpot_s': ...}) (or optimize(serving=...))")
    c = serving_capacity(fab, **serving_workload(ctx.serving, "serving"))
    return {"serving_rate": c.rate, "serving_ttft_p99_s": c.ttft_p99_s,
            "serving_tpot_p99_s": c.tpot_p99_s, "serving_tokens_per_s": c.tokens_per_s,
            "serving_usd_per_million_tokens":
                c.usd_per_million_tokens if c.rate > 0 else None,
            "serving_plan": c.plan.describe() if c.plan is not None else ""}


def _failures(fab: Fabric, ctx: MetricContext) -> dict[str, Any]:
    columns = ("n1_switch_worst_gbps_per_gpu", "n1_switch_worst_gbps_per_gpu_upper",
               "failure_p5_gbps_per_gpu", "failure_mean_gbps_per_gpu")
    if not any(d.get("role") == "switch" for _, d in fab.graph.nodes(data=True)):
        return dict.fromkeys(columns)  # no switch to fail: nothing to report
    m = failure_metrics(fab, kind="switches")

    def number(value: float) -> float | None:
        return None if value is None or math.isnan(value) else value

    return {"n1_switch_worst_gbps_per_gpu": number(m["n1_worst_gbps"]),
            "n1_switch_worst_gbps_per_gpu_upper": number(m["n1_worst_gbps_upper"]),
            "failure_p5_gbps_per_gpu": number(m["failure_p5_gbps"]),
            "failure_mean_gbps_per_gpu": number(m["failure_mean_gbps"])}


def delivered_cost(row: dict[str, Any]) -> dict[str, Any]:
    """Fill ``usd_per_delivered_gbps`` and ``w_per_delivered_gbps`` from a row's per-GPU
    capex and power and its certified all-to-all (the lower end, so a figure per Gb/s is
    never flattering when a bracket stayed open); None where either is missing."""
    delivered = row.get("all_to_all_gbps_per_gpu")
    ok = delivered is not None and delivered > 0 and row.get("capex_per_gpu_usd") is not None
    row["usd_per_delivered_gbps"] = row["capex_per_gpu_usd"] / delivered if ok else None
    row["w_per_delivered_gbps"] = row["power_per_gpu_w"] / delivered if ok else None
    return row


#: The named metrics, in the order a row shows them.
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("summary", _summary, "GPU, switch and link counts"),
    Metric("all_to_all", _all_to_all, "certified all-to-all throughput"),
    Metric("routing", _routing, "all-to-all routed as deployed (ECMP, WCMP, static, hash)"),
    Metric("any_traffic", _any_traffic, "two-phase rate at which every traffic fits"),
    Metric("bisection", _bisection, "bisection bandwidth, certified bracket"),
    Metric("all_reduce", _all_reduce, "all-reduce busbw: achievable, bound, expected"),
    Metric("cost", _cost, "capex and power of the network"),
    Metric("failures", _failures, "all-to-all with any single switch failed (N-1), certified"),
    Metric("tco", _tco, "total cost of ownership: energy, upkeep, optics replacements"),
    Metric("training", _training, "a training job: step time, tokens/s, MFU, cost per token"),
    Metric("serving", _serving, "a model served within latency targets: requests/s, p99 "
           "latencies, plan, cost per token"),
    Metric("goodput", _goodput, "a training job under failures: ETTR, tokens per day, cost "
           "per token with the downtime"),
)}

#: What :func:`~fabricopt.compare` computes when no metrics are given (``routing`` is asked
#: for by name: its hashed trials cost more than the rest on large designs).
DEFAULT_METRICS = ("summary", "all_to_all", "any_traffic", "bisection", "all_reduce", "cost")

#: What the optimizer may constrain: the metric that computes it, the column it reads and
#: whether the target is a floor (``"at least"``) or a ceiling (``"at most"``). Floors read
#: certified lower ends only.
CONSTRAINTS: dict[str, tuple[str, str, str]] = {
    "all_to_all_gbps_per_gpu": ("all_to_all", "all_to_all_gbps_per_gpu", "at least"),
    "all_reduce_busbw_GBps": ("all_reduce", "all_reduce_busbw_GBps", "at least"),
    "bisection_gbps_per_gpu": ("bisection", "bisection_gbps_per_gpu", "at least"),
    "capex_usd": ("cost", "capex_usd", "at most"),
    "power_w": ("cost", "power_w", "at most"),
    # A training job has no certified floor on its throughput (only a cap, from the step's
    # lower bound): the constraint reads the expected figure, never the cap.
    "training_tokens_per_s": ("training", "training_tokens_per_s", "at least"),
    "n1_switch_worst_gbps_per_gpu": ("failures", "n1_switch_worst_gbps_per_gpu", "at least"),
    # Simulated, like the training figures expected: the rate within the latency targets,
    # and the targets themselves (the percentile of TTFT and TPOT where the rate is found).
    "serving_rate": ("serving", "serving_rate", "at least"),
    "serving_ttft_s": ("serving", "serving_ttft_p99_s", "at most"),
    "serving_tpot_s": ("serving", "serving_tpot_p99_s", "at most"),
    # Expected, like the training throughput: a floor on the share of a day's training kept.
    "goodput": ("goodput", "goodput", "at least"),
}


def compute_metrics(fab: Fabric, names: Mapping[str, Any] | tuple | list,
                    ctx: MetricContext, row: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row: each metric's columns in order; a metric given as a function ``f(fab)`` adds
    what it returns. ``cost`` beside ``all_to_all`` also fills the cost per delivered Gb/s.
    Columns go into ``row`` (a new dict by default) as each metric finishes, so a metric that
    raises leaves the ones before it in place.

    >>> import fabricopt as fo
    >>> row = compute_metrics(fo.ring(4), ["all_to_all", "cost"], MetricContext())
    >>> # 1 Gb/s links: theta 0.5 of 1 Gb/s to each of 3 peers (two cross the ring's cut of 2)
    >>> row["all_to_all_gbps_per_gpu"], row["all_to_all_exact"]
    (1.5, True)
    """
    row = {} if row is None else row
    # The named metrics leave the fabric as it is: one reading of it; and the collector's
    # full passes skip the fabric's objects, alive through the row (fabricopt._gc).
    try:
        with unchanged(fab), frozen_gc():
            for metric in names:
                if isinstance(metric, str):
                    # The default metrics make no reference cycles (none found on the
                    # shipped designs): the collector's passes over what they make and drop
                    # were pure cost (0.07 s of a 24,576-GPU row). The others (hashed
                    # routing's trials, the workload models) keep it running.
                    pause = paused_gc() if metric in DEFAULT_METRICS else nullcontext()
                    with pause:
                        values = METRICS[metric].compute(fab, ctx)
                else:  # a caller's function may edit the fabric: what was read is read again
                    values = dict(metric(fab))
                    forget(fab)
                row.update({str(k): plain(v) for k, v in values.items()})
    finally:  # a metric that raises (a job that does not fit) leaves the cost per Gb/s too
        if "capex_per_gpu_usd" in row and "all_to_all_gbps_per_gpu" in row:
            delivered_cost(row)
    return row


def plain(value: Any) -> Any:
    """Numpy scalars and tuples as plain JSON-able Python values."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str)):
        value = value.item()
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value
