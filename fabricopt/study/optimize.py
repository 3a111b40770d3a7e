"""Design-space search: the cheapest fabric that meets a target, and the trade-offs around it.

:func:`optimize` enumerates candidate clusters over a declared space, sizes each one from its
plan alone (no graph built), prunes what provably cannot win, evaluates the rest with the
public calls (:func:`~fabricopt.estimate_cost`, :func:`~fabricopt.max_concurrent_flow`,
:func:`~fabricopt.bisection_bandwidth`, :func:`~fabricopt.collective_bounds`,
:func:`~fabricopt.fail_random`), and returns every candidate's row, the Pareto front over
capex and all-to-all bandwidth, and the best design meeting every constraint.

Pruning never drops a candidate that could win. Two cheap bounds are proven before a fabric
is built:

* **capex lower bound**: every GPU needs a NIC port at its rate and every switch of the plan
  is a catalog switch, so ``GPUs x cheapest NIC + switches x cheapest switch`` is below any
  bill of materials (links and optics only add);
* **all-to-all upper bound** per GPU: traffic leaving a scale-up domain of ``D`` GPUs crosses
  its NICs, ``bw x (N - D) / (N - 1) <= nic``; and traffic leaving the servers under one rail
  (or Clos) leaf index crosses those leaves' uplinks, ``bw x G (N - G) / (N - 1) <= uplinks``
  for a group of ``G`` GPUs whose scale-up domains it holds whole.

A candidate is pruned when its bound fails a constraint (capex, all-to-all), or, with the
capex objective, when a design proven to meet every constraint costs less than its capex
bound (it cannot be the best, and the front is reported up to the best), or costs no more
and an evaluated design delivers at least its throughput bound (``full_front``: it could be
neither on the front nor the best). Candidates are evaluated cheapest bound first; the
candidates that differ only in optics policy share one build and one flow solve. A built
fabric is priced before it is solved: when it costs more than a design already proven
feasible under every policy of its group, its rows are pruned with their capex and no flow
is solved (a 16,384-GPU solve can take a minute, its pricing a second).

A candidate whose plan has no symmetry (unequal leaves or bundles) with more GPUs than the
flow LP handles (:data:`ASYMMETRIC_GPUS_LIMIT`) is decided by a certified bracket of its
all-to-all rate, without an LP (:func:`ecmp_bracket`): ECMP routing's exact throughput is a
feasible flow, so a lower bound, and the least of the plan's bound, the distance bound and
the endpoint-link bound is an upper one. Its row says ``flow_method = "ecmp bound"`` and
holds both ends; ``all_to_all_gbps_per_gpu >= X`` is met when the lower end reaches ``X``,
missed when the upper end is below it, and undecided otherwise. On the front a bracketed
candidate counts its certified lower end.

A candidate with no certified throughput (a solve stopped or failed, or a bracket holding
the all-to-all target) is ``"unsolved"``: never on the front, never the best.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_bool, check_choice, check_int, check_positive, did_you_mean, fail
from ..errors import FabricOptError

#: The space searched when none is given: a rail-optimized or Clos cluster of DGX H100 on
#: 64-port 400G switches, from non-blocking to 4:1.
DEFAULT_SPACE: dict[str, list[Any]] = {
    "family": ["superpod", "rail_optimized", "clos"],
    "scale_up": ["dgx_h100"],
    "leaf_radix": [64],
    "oversubscription": [1.0, 2.0, 3.0, 4.0],
    "tiers": [None],
    "planes": [1],
    "nic_gbps": [400],
    "switch_model": [None],
    "policy": ["cost"],
}
FAMILIES = ("superpod", "rail_optimized", "clos")
CONSTRAINTS = ("all_to_all_gbps_per_gpu", "all_reduce_busbw_GBps", "bisection_gbps_per_gpu",
               "capex_usd", "power_w", "failure_fraction", "all_to_all_after_failure_gbps")
_LOWER_IS_BETTER = ("capex_usd", "power_w")
_TOL = 1e-9
#: Relative gap the approximate flow method stops at for a candidate without symmetry (its
#: certified lower bound is what the row reports).
FLOW_GAP = 0.02
#: Largest GPU count at which a candidate whose plan has no symmetry (unequal leaves or
#: bundles) is solved: its flow LP has a commodity per source and every GPU pair's demand
#: (268 million pairs at 16,384 GPUs, more memory than a workstation has; at 1,024 GPUs the
#: approximate method takes minutes to a wide bracket), where a
#: symmetric plan's root-flow LP stays small at any size. Above it the candidate is decided by
#: its ECMP bracket (:func:`ecmp_bracket`), or reported unsolved when the bracket holds the
#: target.
ASYMMETRIC_GPUS_LIMIT = 256
#: Most GPU pairs at which :func:`ecmp_bracket` computes the distance bound (its arrays hold
#: every pair: 1.2 GB and 4 s at 4,096 GPUs, 16.8 million pairs; above the limit the plan's
#: all-to-all bound is the upper end, and at those sizes it is the tighter one: 222 against
#: 1,649 Gb/s per GPU for a 2:1 rail-optimized cluster of 4,096 GPUs).
CHEAP_BRACKET_PAIRS = 4_200_000
#: Seeds of the random link failures a candidate is tried under; the row keeps the worst.
FAILURE_SEEDS = (1, 2, 3)


@dataclass
class Candidate:
    """One point of the space: the generator, its arguments and the optics policy."""

    family: str
    kwargs: dict[str, Any]
    policy: Any
    name: str

    def design(self) -> tuple[str, dict[str, Any]]:
        """The generator family and keyword arguments a design file gives."""
        if self.family == "superpod":
            return "superpod", dict(self.kwargs)
        return "cluster", dict(self.kwargs)

    def build(self) -> Any:
        from ..generators import GENERATORS

        family, kwargs = self.design()
        return GENERATORS[family](**kwargs)


def _candidates(gpus: int, space: Mapping[str, Any]) -> list[Candidate]:
    func = "optimize"
    keys = list(DEFAULT_SPACE)
    unknown = sorted(set(space) - set(keys))
    if unknown:
        raise fail(func, "space", "a mapping with keys among " + ", ".join(keys)
                   + did_you_mean(unknown[0], keys), unknown)
    grid = {k: list(space.get(k, DEFAULT_SPACE[k])) for k in keys}
    for k, values in grid.items():
        if not values:
            raise fail(func, f"space[{k!r}]", "a non-empty list", values)
    for f in grid["family"]:
        check_choice(func, "space['family']", f, FAMILIES)
    from ..generators.cluster import read_domain

    out = []
    domains: dict[Any, Any] = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo, strict=True))
        su = point["scale_up"]
        key = repr(su)
        if key not in domains:
            domains[key] = read_domain(func, su, "space['scale_up']")
        dom = domains[key]
        per = len(dom.gpus)
        if gpus % per:
            continue  # whole domains only
        nodes = gpus // per
        s = float(point["oversubscription"])
        common = {"nic_gbps": point["nic_gbps"], "switch_model": point["switch_model"]}
        if point["family"] == "superpod":
            if point["planes"] != 1 or nodes % 32 or len(dom.servers) != 1:
                continue  # SuperPODs are built of 32-node SUs, one plane, one server a node
            kwargs = {"scalable_units": nodes // 32, "node": su, "leaf_radix":
                      point["leaf_radix"], "oversubscription": s, **common}
            if kwargs["switch_model"] is None:
                kwargs.pop("switch_model")
        elif point["family"] == "rail_optimized":
            kwargs = {"scale_up": su, "nodes": nodes, "scale_out": "rail_optimized",
                      "leaf_radix": point["leaf_radix"], "oversubscription": s,
                      "planes": point["planes"], "tiers": point["tiers"], **common}
        else:
            if point["planes"] != 1:
                continue
            kwargs = {"scale_up": su, "nodes": nodes, "scale_out": "clos",
                      "radix": point["leaf_radix"], "oversubscription": s,
                      "tiers": point["tiers"], **common}
        shown = (su if isinstance(su, str) else su.get("family", "domain")
                 if isinstance(su, Mapping) else getattr(su, "name", "domain"))
        name = (f"{point['family']} {shown} r{point['leaf_radix']} {s:g}:1"
                + (f" {point['planes']}pl" if point["planes"] != 1 else "")
                + (f" t{point['tiers']}" if point["tiers"] else "")
                + (f" {point['switch_model']}" if point["switch_model"] else "")
                + f" {point['policy'] if isinstance(point['policy'], str) else 'policy'}")
        out.append(Candidate(point["family"], kwargs, point["policy"], name))
    return out


@dataclass
class Sketch:
    """What a candidate's plan says before anything is built."""

    ok: bool
    reason: str = ""
    switches: int = 0
    capex_lower_usd: float = 0.0
    a2a_upper_gbps: float = math.inf
    tiers: int = 0
    symmetric: bool = True


def _cheapest_link_usd(cat: Any, rate_gbps: float) -> float:
    """Least a link at ``rate_gbps`` can cost: the cheapest medium's cable and two ends, shared
    by as many links as its rate holds (twin-port modules pool two 400G links on one 800G
    cable); lengths priced per metre only add."""
    best = math.inf
    for e in cat.media.values():
        if e["type"] == "nvlink":
            continue
        whole = float(e.get("cable_usd") or 0.0) + 2 * float(e.get("price_usd_per_end") or 0.0)
        share = max(int(float(e["rate_gbps"]) // rate_gbps), 1)
        cables = math.ceil(rate_gbps / float(e["rate_gbps"])) if e["rate_gbps"] < rate_gbps else 1
        best = min(best, whole * cables / share)
    return 0.0 if best == math.inf else best


def _cheapest_switch_usd(cat: Any, ports: int, rate_gbps: float, model: str | None) -> float:
    """Least one switch chip with ``ports`` ports at ``rate_gbps`` can cost (any catalog
    switch that holds them, as the cost model picks; the named model when one is given)."""
    best = math.inf
    for key, e in cat.switches.items():
        if e["family"] == "nvlink" or (model is not None and key != model):
            continue
        modes = [(e["radix"], e["port_gbps"])] + list(e.get("breakout") or ())
        if any(p >= ports and g >= rate_gbps for p, g in modes) or model is not None:
            best = min(best, e["price_usd"] / int(e.get("chips") or 1))
    if best == math.inf:  # nothing holds them all: the cheapest chip at the rate is still less
        best = min((e["price_usd"] / int(e.get("chips") or 1) for e in cat.switches.values()
                    if e["family"] != "nvlink"), default=0.0)
    return best


def _leaf_group_bound(endpoints: int, leaves: int, up_gbps: float, d_gpus: int,
                      aligned: bool) -> float:
    """All-to-all bound per GPU from the uplinks of leaves ``0..L-1`` of a Clos whose leaves
    hold endpoints spread evenly (leaf ``i`` holds ``[i N // k, (i + 1) N // k)``), taken over
    every ``L`` whose endpoints are whole scale-up domains (``aligned``: domains are numbered
    in endpoint order, so ``[0, G)`` with ``d | G`` is whole domains)."""
    best = math.inf
    if not aligned:
        return best
    n = endpoints
    for count in range(1, leaves):
        group = count * n // leaves
        if group % d_gpus == 0 and 0 < group < n:
            best = min(best, count * up_gbps * (n - 1) / (group * (n - group)))
    return best


def sketch(c: Candidate, gpus: int) -> Sketch:
    """Size a candidate from its plan and bound its capex and all-to-all bandwidth."""
    from ..cost import Catalog
    from ..generators.cluster import read_domain
    from ..generators.wiring import clos_plan, clos_reach, rail_plan

    dom = read_domain("optimize", c.kwargs.get("scale_up", c.kwargs.get("node")))
    d_gpus = len(dom.gpus)
    k = c.kwargs
    nic = float(k["nic_gbps"])
    try:
        if c.family == "clos":
            s = k["oversubscription"]
            tiers = k["tiers"] or (2 if gpus <= clos_reach("optimize", k["radix"], 2, s) else 3)
            plan: Any = clos_plan("optimize", gpus, k["radix"], tiers, s)
            planes = 1
            group = len(plan.leaf_endpoints(0))
            group_up = plan.up * nic
            whole = group % d_gpus == 0
        else:
            servers = gpus // d_gpus * len(dom.servers)
            radix = k["leaf_radix"]
            if c.family == "superpod":
                n = 32
                su = k["scalable_units"]
                if su * dom.rails <= radix:
                    plan = rail_plan("optimize", servers, dom.rails, radix, True,
                                     k["oversubscription"], down=n)
                else:
                    if su > radix * (radix // 2) // dom.rails:
                        return Sketch(False, "beyond three tiers of the radix")
                    plan = clos_plan("optimize", servers * dom.rails, radix, 3,
                                     k["oversubscription"], down=n)
                planes = 1
            else:
                plan = rail_plan("optimize", servers, dom.rails, radix, True,
                                 k["oversubscription"], k["planes"], k["tiers"])
                planes = k["planes"]
            per_leaf = n if c.family == "superpod" else len(plan.leaf_nodes(0))
            group = per_leaf * dom.rails
            group_up = dom.rails * plan.up * nic
            whole = (per_leaf % len(dom.servers) == 0) if c.family != "superpod" else True
    except FabricOptError as exc:
        return Sketch(False, str(exc))
    upper = getattr(plan, "upper", None)
    leaves = plan.leaves
    tiers = 1 if upper is None else upper.tiers
    if upper is None or upper.tiers == 1:
        spines = cores = 0
        up_links = core_links = 0
    elif upper.tiers == 2:
        spines, cores = upper.spines, 0
        up_links, core_links = leaves * upper.up, 0
    else:
        spines, cores = upper.spines * upper.pods, upper.spines * upper.cores_per_group
        up_links, core_links = leaves * upper.up, spines * upper.spine_up
    switches = planes * (leaves + spines + cores)
    cat = Catalog.default()
    per_port = nic / planes
    nic_usd = min(e["price_usd"] for e in cat.nics.values()
                  if any(g >= per_port for _, g in e["modes"]))
    # Every leaf uses its endpoints' ports and its uplinks at once, so one switch chip must
    # hold them all; spines and cores use at least one port each, so any chip at the rate.
    model = k.get("switch_model")
    leaf_ports = (len(plan.leaf_nodes(0)) if hasattr(plan, "leaf_nodes")
                  else len(plan.leaf_endpoints(0))) + (upper.up if upper else 0)
    leaf_usd = _cheapest_switch_usd(cat, leaf_ports, per_port, model)
    other_usd = _cheapest_switch_usd(cat, 1, per_port, model)
    link_usd = _cheapest_link_usd(cat, per_port)
    # Links: one NIC port per GPU and plane, the leaves' uplinks and the spines' uplinks.
    links = planes * (gpus + up_links + core_links)
    capex_lb = (gpus * nic_usd + planes * (leaves * leaf_usd + (spines + cores) * other_usd)
                + links * link_usd)
    bound = nic * (gpus - 1) / max(gpus - d_gpus, 1) if gpus > d_gpus else math.inf
    if whole and group < gpus:
        bound = min(bound, group_up * (gpus - 1) / (group * (gpus - group)))
    if c.family == "clos" and leaves > 1:
        # Consecutive leaves holding whole domains between them (the leaves of one need not).
        bound = min(bound, _leaf_group_bound(gpus, leaves, plan.up * nic, d_gpus, True))
    return Sketch(True, "", switches, capex_lb, bound, tiers, bool(plan.symmetric))


def evaluate_group(cands: list[Candidate], constraints: Mapping[str, float],
                   time_limit: float | None = None, limit_threads: bool = False,
                   ecmp_bound: bool = False, capex_ceiling: float | None = None
                   ) -> list[dict[str, Any]]:
    """Build one topology and evaluate it under each candidate's optics policy: one row per
    candidate (top-level, so executors can ship it).

    The candidates differ only in their policy, so the fabric is built, solved and bounded
    once and priced once per policy. (The failure constraint is tried later, by
    :func:`optimize`, on the rows that could win.) ``ecmp_bound`` replaces the flow LP by
    its certified bracket without an LP (:func:`ecmp_bracket`), for fabrics too large for it;
    the row's ``flow_method`` is then ``"ecmp bound"``. The fabric is priced first: when
    every candidate's capex exceeds ``capex_ceiling`` (a feasible design's), nothing is
    solved and the rows carry ``priced_out`` instead of throughput.
    """
    import contextlib

    from .compare import limit_threads as cap_threads

    guard = cap_threads(1) if limit_threads else contextlib.nullcontext()
    with guard:
        return _evaluate_group(cands, constraints, time_limit, ecmp_bound, capex_ceiling)


def ecmp_bracket(fab: Any) -> tuple[float, float]:
    """Certified bracket ``(lower, upper)`` of the all-to-all Gb/s per GPU of ``fab`` without
    an LP: ``lower`` is what ECMP routing carries (:func:`~fabricopt.routed_flow`, exact for
    that routing, and a feasible flow, so below the optimum), ``upper`` the hop-length
    distance bound and endpoint-link bound of :func:`~fabricopt.flow.api.cheap_bracket`
    (infinite above :data:`CHEAP_BRACKET_PAIRS` pairs).

    >>> import fabricopt as fo
    >>> [round(x, 6) for x in ecmp_bracket(fo.leaf_spine(leaves=2, spines=2,
    ...                                                  endpoints_per_leaf=2))]
    [400.0, 400.0]
    """
    from ..flow.api import cheap_bracket
    from ..routing import routed_flow
    from ..traffic import all_to_all

    traffic = all_to_all(fab, gbps=1.0)
    n = len(fab.endpoints)
    routed = routed_flow(fab, traffic, routing="ecmp")
    # The distance bound holds an array per pair: beyond CHEAP_BRACKET_PAIRS the caller's
    # bound from the plan stands alone.
    upper = (cheap_bracket(fab, traffic).upper * (n - 1) if n * (n - 1) <= CHEAP_BRACKET_PAIRS
             else math.inf)
    lower = routed.theta * (n - 1) if routed.status == "exact" else 0.0
    return lower, max(upper, lower)


def _evaluate_group(cands: list[Candidate], constraints: Mapping[str, float],
                    time_limit: float | None, ecmp_bound: bool = False,
                    capex_ceiling: float | None = None) -> list[dict[str, Any]]:
    from ..analysis.bisection import bisection_bandwidth
    from ..collectives.bounds import collective_bounds
    from ..cost import estimate_cost
    from ..flow.api import max_concurrent_flow
    from ..traffic import all_to_all

    start = time.perf_counter()
    fab = cands[0].build()
    n = len(fab.endpoints)
    # Priced first: pricing takes a second where a flow solve of 16,384 GPUs can take a
    # minute, and a topology dearer than a feasible design under every policy cannot win.
    rows = []
    for c in cands:
        est = estimate_cost(fab, policy=c.policy)
        rows.append({"capex_usd": est.capex_usd, "power_w": est.power_w,
                     "capex_usd_per_gpu": est.per_endpoint_usd,
                     "idle_ports": sum(est.idle_ports.values())})
    priced_out = (capex_ceiling is not None
                  and min(r["capex_usd"] for r in rows) > capex_ceiling * (1 + _TOL))
    shared: dict[str, Any]
    if priced_out:
        shared = {"priced_out": True}
    elif ecmp_bound:
        lower, upper = ecmp_bracket(fab)
        shared = {"all_to_all_gbps_per_gpu": lower, "all_to_all_upper_gbps_per_gpu": upper,
                  "flow_status": "bracket", "flow_method": "ecmp bound"}
    else:
        r = max_concurrent_flow(fab, all_to_all(fab, gbps=1.0), time_limit=time_limit,
                                gap=FLOW_GAP)
        # Certified: the lower bound of theta, in Gb/s each GPU sends to all others.
        shared = {"all_to_all_gbps_per_gpu": r.lower * (n - 1),
                  "all_to_all_upper_gbps_per_gpu": r.upper * (n - 1),
                  "flow_status": r.status, "flow_method": r.method}
    if not priced_out:
        shared["oversubscription_built"] = fab.params.get("oversubscription_built")
        if "bisection_gbps_per_gpu" in constraints:
            shared["bisection_gbps_per_gpu"] = bisection_bandwidth(fab).lower_gbps / n
        if "all_reduce_busbw_GBps" in constraints:
            shared["all_reduce_busbw_GBps"] = collective_bounds(
                fab, "all_reduce", message_bytes=2**30).busbw_GBps
    for row in rows:
        row.update(shared)
    seconds = time.perf_counter() - start
    for row in rows:
        row["seconds"] = seconds / len(rows)
    return rows


def after_failure(c: Candidate, fraction: float, time_limit: float | None = None,
                  limit_threads: bool = False, ecmp_bound: bool = False) -> float:
    """Certified all-to-all per GPU of ``c`` after ``fraction`` of its links fail: the least
    over :data:`FAILURE_SEEDS` random draws, each the certified lower bound of its solve
    (``ecmp_bound``: of ECMP routing on the failed fabric, no LP)."""
    import contextlib

    from .compare import limit_threads as cap_threads

    with cap_threads(1) if limit_threads else contextlib.nullcontext():
        return _after_failure_gbps(c.build(), fraction, time_limit, ecmp_bound)


def _after_failure_gbps(fab: Any, fraction: float, time_limit: float | None,
                        ecmp_bound: bool = False) -> float:
    """Certified all-to-all per GPU after ``fraction`` of the links fail: the least of
    :data:`FAILURE_SEEDS` random draws, each the certified lower bound of its solve."""
    from ..analysis.failures import fail_random
    from ..flow.api import max_concurrent_flow
    from ..traffic import all_to_all

    n = len(fab.endpoints)
    worst = math.inf
    for seed in FAILURE_SEEDS:
        bad = fail_random(fab, fraction, seed=seed, kind="links")
        if ecmp_bound:
            worst = min(worst, ecmp_bracket(bad)[0])
            continue
        rf = max_concurrent_flow(bad, all_to_all(bad, gbps=1.0), time_limit=time_limit,
                                 gap=FLOW_GAP)
        worst = min(worst, rf.lower * (n - 1))
    return worst


def evaluate(c: Candidate, constraints: Mapping[str, float], time_limit: float | None = None
             ) -> dict[str, Any]:
    """Build and evaluate one candidate (:func:`evaluate_group` of one)."""
    return evaluate_group([c], constraints, time_limit)[0]


def _undecided(row: Mapping[str, Any], constraints: Mapping[str, float]) -> str:
    """Why a row with a bracketed all-to-all (``[lower, upper]``) cannot be decided against
    the all-to-all constraint: the target lies inside the bracket ("" if decided)."""
    target = constraints.get("all_to_all_gbps_per_gpu")
    lower, upper = row["all_to_all_gbps_per_gpu"], row["all_to_all_upper_gbps_per_gpu"]
    if target is None or lower >= target * (1 - _TOL) or upper < target * (1 - _TOL):
        return ""
    return (f"undecided: the all-to-all bracket [{lower:,.1f}, {upper:,.1f}] Gb/s per GPU "
            f"(ECMP lower bound, distance bound) holds the target {target:g}; the flow LP "
            "is too large to close it (no symmetry in the plan)")


def _decided(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row as the constraints see it: a bracketed all-to-all that misses its target
    misses by at least its upper end."""
    if row.get("flow_method") != "ecmp bound":
        return row
    # Decided rows only: either both ends meet the target or both miss it.
    return {**row, "all_to_all_gbps_per_gpu": row["all_to_all_upper_gbps_per_gpu"]}


def _shortfalls(row: Mapping[str, Any], constraints: Mapping[str, float]) -> dict[str, float]:
    """How far a row misses each constraint (relative; only the ones it misses)."""
    out = {}
    for key, target in constraints.items():
        if key == "failure_fraction" or key not in row or row[key] is None:
            continue
        value = float(row[key])
        if key in _LOWER_IS_BETTER:
            if value > target * (1 + _TOL):
                out[key] = (value - target) / target
        elif value < target * (1 - _TOL):
            out[key] = (target - value) / target
    return out


@dataclass
class OptimizeResult:
    """What :func:`optimize` returns.

    Attributes
    ----------
    rows : list of dict
        Every candidate: ``name``, ``family``, ``status`` (``"evaluated"``, ``"pruned"`` or
        ``"unsolved"``: no throughput proven, with the solver's ``flow_status``, or an
        ``"ecmp bound"`` bracket holding the all-to-all target), ``reason``
        (why pruned or unsolved), ``topology`` (the first candidate of the same fabric,
        whose build and solve it shares), the bounds (``capex_lower_usd``,
        ``all_to_all_upper_gbps_per_gpu``) and, when evaluated, the measured figures and
        ``meets`` (every constraint met) with ``shortfall`` (relative, per missed constraint).
    front : list of dict
        Evaluated rows on the Pareto front of capex (lower is better) and certified
        all-to-all Gb/s per GPU (higher is better), by capex; with the capex objective, up
        to the best design unless ``full_front`` was asked. Unsolved rows are never on it.
    best : dict or None
        The evaluated row meeting every constraint with the best objective: the best
        *proven* design. Cheaper candidates left unsolved (a bracket holding a target) may
        meet it too: :meth:`undecided_cheaper` lists them, and the printed report warns.
    nearest : list of dict
        When no candidate meets every constraint: the evaluated rows that miss least
        (smallest total shortfall), with the shortfall of each.
    seconds : float
    """

    gpus: int
    objective: str
    constraints: dict[str, float]
    rows: list[dict[str, Any]]
    front: list[dict[str, Any]]
    best: dict[str, Any] | None
    nearest: list[dict[str, Any]]
    seconds: float
    candidates: dict[str, Candidate] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        evaluated = sum(r["status"] == "evaluated" for r in self.rows)
        best = self.best["name"] if self.best else None
        return (f"OptimizeResult({self.gpus} GPUs, {len(self.rows)} candidates, {evaluated} "
                f"evaluated, front of {len(self.front)}, best={best!r})")

    def __str__(self) -> str:
        """A report: what was searched, the front, and the best design or the nearest
        misses with their shortfalls."""
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        lines = [f"optimize({self.gpus:,} GPUs, minimise {self.objective}): "
                 f"{len(self.rows)} candidates, "
                 + ", ".join(f"{n} {status}" for status, n in counts.items())
                 + f", in {self.seconds:.1f} s"]
        if self.constraints:
            lines.append("constraints: " + ", ".join(
                f"{k} {v:,.0f}" if abs(v) >= 1e4 else f"{k} {v:g}"
                for k, v in self.constraints.items()))
        lines += ["", "Pareto front (capex, certified all-to-all per GPU):", self.to_markdown(),
                  ""]
        if self.best is not None:
            b = self.best
            lines.append(f"best: {b['name']}, {b['capex_usd']:,.0f} USD "
                         f"({b['capex_usd'] / self.gpus:,.0f} per GPU), "
                         f"{b['all_to_all_gbps_per_gpu']:,.1f} Gb/s all-to-all per GPU"
                         + (" (at least: ECMP routing)" if b.get("flow_method") == "ecmp bound"
                            else ""))
            rivals = self.undecided_cheaper()
            if rivals:
                lines.append(f"caution: {len(rivals)} cheaper candidate(s) undecided (their "
                             "certified bracket holds a target), so the best is the cheapest "
                             "proven, not proven cheapest:")
                lines += [f"  {r['name']}: {r['capex_usd']:,.0f} USD, all-to-all "
                          f"[{r['all_to_all_gbps_per_gpu']:,.1f}, "
                          f"{r['all_to_all_upper_gbps_per_gpu']:,.1f}] Gb/s per GPU"
                          for r in rivals]
        else:
            lines.append("no design meets every constraint; nearest:")
            lines += [f"  {r['name']}: " + ", ".join(f"{k} misses by {v:.1%}"
                                                     for k, v in r["shortfall"].items())
                      for r in self.nearest]
        return "\n".join(lines)

    def undecided_cheaper(self) -> list[dict[str, Any]]:
        """Unsolved rows with a certified bracket that cost less than the best design: any of
        them may meet every constraint, so the best is the cheapest *proven* design."""
        if self.best is None or self.objective != "capex_usd":
            return []
        return [r for r in self.rows if r["status"] == "unsolved"
                and r.get("capex_usd") is not None
                and r.get("all_to_all_upper_gbps_per_gpu") is not None
                and r["capex_usd"] < self.best["capex_usd"]]

    def to_records(self) -> list[dict[str, Any]]:
        """Every candidate's row."""
        return [dict(r) for r in self.rows]

    def to_markdown(self, rows: list[dict[str, Any]] | None = None) -> str:
        """The front (or the given rows) as a Markdown table."""
        rows = self.front if rows is None else rows
        head = ["name", "capex USD/GPU", "a2a Gb/s/GPU", "power W/GPU", "meets"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            # A bracketed row shows its certified lower end, marked as such.
            a2a = (f"{r['all_to_all_gbps_per_gpu']:,.1f}"
                   + (" (ECMP, at least)" if r.get("flow_method") == "ecmp bound" else ""))
            lines.append(f"| {r['name']} | {r['capex_usd'] / self.gpus:,.0f} | "
                         f"{a2a} | {r['power_w'] / self.gpus:,.1f} "
                         f"| {'yes' if r.get('meets') else 'no'} |")
        return "\n".join(lines)

    def write_design(self, path: str | os.PathLike[str], row: Mapping[str, Any] | None = None
                     ) -> str:
        """Write the best design (or ``row``) as a design file :func:`load_design` reads.

        Returns the path written. Raises when there is no design to write.
        """
        from .._toml import dumps_toml

        row = row or self.best
        if row is None:
            raise fail("write_design", "row", "a row (no candidate meets the constraints)",
                       None)
        family, kwargs = self.candidates[row["name"]].design()
        params = {k: v for k, v in kwargs.items() if v is not None}
        text = (f"# Found by fabricopt optimize for {self.gpus} GPUs: capex "
                f"{row['capex_usd']:,.0f} USD, all-to-all {row['all_to_all_gbps_per_gpu']:.1f}"
                f" Gb/s per GPU ("
                + ("certified lower bound: ECMP routing" if row.get("flow_method") ==
                   "ecmp bound" else "certified") + ").\n"
                + dumps_toml({"name": row["name"], "family": family,
                              "description": f"optimize({self.gpus}) winner",
                              "params": params}))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return os.fspath(path)


def optimize(gpus: int, *, space: Mapping[str, Any] | None = None,
             constraints: Mapping[str, float] | None = None, objective: str = "capex_usd",
             executor: Any = None, progress: Callable[[int, int], Any] | None = None,
             time_limit: float | None = None, prune: bool = True,
             full_front: bool = False) -> OptimizeResult:
    """Search a design space for the best cluster meeting the constraints.

    Parameters
    ----------
    gpus : int
        GPUs of the cluster, >= 2.
    space : mapping, optional
        Lists of values per key (defaults in :data:`DEFAULT_SPACE`): ``family``
        (``"superpod"``, ``"rail_optimized"``, ``"clos"``), ``scale_up`` (a domain generator
        name, table or Fabric), ``leaf_radix`` (switch radix), ``oversubscription``,
        ``tiers`` (None for the fewest that reach, 2 or 3), ``planes``, ``nic_gbps``,
        ``switch_model`` (catalog key or None), ``policy`` (optics policy preset or fields,
        see :class:`~fabricopt.Policy`). Candidates are their product, points that do not
        apply (a SuperPOD of planes) left out.
    constraints : mapping, optional
        Targets among ``all_to_all_gbps_per_gpu``, ``all_reduce_busbw_GBps``,
        ``bisection_gbps_per_gpu`` (at least), ``capex_usd``, ``power_w`` (at most), and
        ``all_to_all_after_failure_gbps`` with ``failure_fraction`` (the fraction of links
        failed at random, default 0.01).
    objective : {"capex_usd", "power_w"}
        What the best design minimises.
    executor : concurrent.futures.Executor, optional
        Evaluates candidates in parallel, as :func:`~fabricopt.study.compare` does: a process pool,
        or a Dask cluster through ``distributed.Client(...).get_executor()``. One topology
        per worker is in flight at a time (a pool's workers, a Dask client's threads), and
        each finished one prunes those not yet sent; each task caps its BLAS/OpenMP threads
        at one.
    progress : callable, optional
        Called as ``progress(done, total)`` after each evaluation.
    time_limit : float, optional
        Seconds for each flow solve.
    prune : bool
        False evaluates every candidate that can be built (to check what pruning keeps).
    full_front : bool
        With the capex objective, the front is reported up to the best design's capex by
        default, and a candidate whose capex bound exceeds a feasible design's capex is not
        evaluated (it can be neither the best nor on that front). True evaluates those too,
        for the whole front (dearer, faster designs), pruning only what is dominated.

    Returns
    -------
    OptimizeResult
        Every candidate's row (pruned ones with the reason), the Pareto front, the best
        design (or the nearest misses and their shortfalls); ``write_design`` writes it.

    Notes
    -----
    Bounds and pruning rules are in the module docstring of :mod:`fabricopt.study.optimize`.
    All-to-all bandwidth is the certified lower bound of the flow LP times the ``N - 1``
    Gb/s each GPU sends at unit demand; for a candidate without symmetry above
    :data:`ASYMMETRIC_GPUS_LIMIT` GPUs it is the throughput of ECMP routing, a certified
    lower bound (``flow_method = "ecmp bound"``, with the upper end in
    ``all_to_all_upper_gbps_per_gpu``), and a target between the two leaves the candidate
    ``"unsolved"``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> dom = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
    ...        "link_gbps": 200}
    >>> res = fo.optimize(16, space={"family": ["rail_optimized"], "scale_up": [dom],
    ...                              "leaf_radix": [8], "oversubscription": [1.0, 3.0]},
    ...                   constraints={"all_to_all_gbps_per_gpu": 300})
    >>> res.best["name"], round(res.best["all_to_all_gbps_per_gpu"])  # 3:1 is enough
    ('rail_optimized nvswitch_domain r8 3:1 cost', 375)
    >>> [(r["status"], r["reason"][:21]) for r in res.rows]  # 1:1 dearer: priced, not solved
    [('pruned', 'costs more than rail_'), ('evaluated', '')]
    """
    func = "optimize"
    start = time.perf_counter()
    gpus = check_int(func, "gpus", gpus, minimum=2)
    objective = check_choice(func, "objective", objective, _LOWER_IS_BETTER)
    for name, value in (("space", space), ("constraints", constraints)):
        if value is not None and not isinstance(value, Mapping):
            raise fail(func, name, "a mapping (a dict, or a table of a search file) or None",
                       value)
    if executor is not None and not isinstance(executor, cf.Executor):
        raise fail(func, "executor", "a concurrent.futures.Executor or None",
                   type(executor).__name__)
    if progress is not None and not callable(progress):
        raise fail(func, "progress", "a function progress(done, total) or None", progress)
    if time_limit is not None:
        time_limit = check_positive(func, "time_limit", time_limit)
    prune = check_bool(func, "prune", prune)
    full_front = check_bool(func, "full_front", full_front)
    constraints = dict(constraints or {})
    for key, value in constraints.items():
        check_choice(func, "constraints key", key, CONSTRAINTS)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise fail(func, f"constraints[{key!r}]", "a number >= 0", value)
    candidates = _candidates(gpus, space or {})
    if not candidates:
        raise fail(func, "space", f"a space with candidates for {gpus} GPUs (whole scale-up "
                   "domains, SuperPODs of 32-node SUs)", space)

    rows: list[dict[str, Any]] = []
    groups: dict[str, list[tuple[Sketch, Candidate, dict[str, Any]]]] = {}
    bracketed: set[str] = set()
    seen: dict[str, str] = {}
    for c in candidates:
        sk = sketch(c, gpus)
        row = {"name": c.name, "family": c.family, "status": "pruned", "reason": sk.reason,
               "capex_lower_usd": sk.capex_lower_usd,
               "all_to_all_upper_gbps_per_gpu_bound": sk.a2a_upper_gbps}
        rows.append(row)
        if not sk.ok:
            row["reason"] = "cannot be built: " + sk.reason
            continue
        # One fabric under several names (tiers None resolving to the tiers given, a
        # SuperPOD's tiers, which it does not take): evaluated once.
        topology = repr((c.family, sorted((k, repr(v)) for k, v in c.kwargs.items()
                                          if k != "tiers"), sk.tiers))
        same = seen.setdefault(repr((topology, repr(c.policy))), c.name)
        if same != c.name:
            row["reason"] = f"the same design as {same}"
            continue
        # What the bounds prove the candidate misses, at least.
        row["shortfall"] = _shortfalls({"all_to_all_gbps_per_gpu": sk.a2a_upper_gbps,
                                        "capex_usd": sk.capex_lower_usd}, constraints)
        target = constraints.get("all_to_all_gbps_per_gpu")
        if prune and target is not None and sk.a2a_upper_gbps < target * (1 - _TOL):
            row["reason"] = (f"all-to-all bound {sk.a2a_upper_gbps:,.1f} < {target:g} Gb/s "
                             "per GPU")
            continue
        budget = constraints.get("capex_usd")
        if prune and budget is not None and sk.capex_lower_usd > budget * (1 + _TOL):
            row["reason"] = f"capex bound {sk.capex_lower_usd:,.0f} > {budget:,.0f} USD"
            continue
        # No symmetry in the plan (unequal leaves or bundles) and too many GPUs for the flow
        # LP: decided by the certified ECMP bracket instead.
        if not sk.symmetric and gpus > ASYMMETRIC_GPUS_LIMIT:
            bracketed.add(topology)
        groups.setdefault(topology, []).append((sk, c, row))
    # Cheapest bound first, so the first feasible designs prune the most.
    order = sorted(groups.items(), key=lambda g: min(t[0].capex_lower_usd for t in g[1]))
    total = sum(len(g) for _, g in order)
    feasible: list[dict[str, Any]] = []
    evaluated: list[dict[str, Any]] = []
    done = 0
    failure = "all_to_all_after_failure_gbps" in constraints
    others = {k: v for k, v in constraints.items()
              if k not in ("all_to_all_after_failure_gbps", "failure_fraction")}

    def needed(group: list[tuple[Sketch, Candidate, dict[str, Any]]]
               ) -> list[tuple[Sketch, Candidate, dict[str, Any]]]:
        """The group's candidates that could still win, the others marked pruned."""
        keep = []
        for sk, c, row in group:
            why = _cannot_win(sk, feasible, evaluated, objective, full_front) if prune else ""
            if why:
                row["reason"] = why
            else:
                keep.append((sk, c, row))
        return keep

    tried: dict[str, float] = {}
    topology_names: dict[str, str] = {}

    def try_failure(topology: str, c: Candidate, row: dict[str, Any]
                    ) -> dict[str, float] | None:
        """The failure trial of a row meeting every other constraint, when it could be the
        best (it costs less than the best so far); else marked untried."""
        best_so_far = min(feasible, key=lambda r: r[objective]) if feasible else None
        if best_so_far is not None and row[objective] >= best_so_far[objective]:
            row["all_to_all_after_failure_gbps"] = None
            row["reason"] = (f"failure trial not run: {best_so_far['name']} passes it and is "
                             "better")
            return None
        ecmp = topology in bracketed
        if topology not in tried:
            fraction = float(constraints.get("failure_fraction", 0.01))
            if executor is None:
                tried[topology] = after_failure(c, fraction, time_limit, False, ecmp)
            else:
                tried[topology] = executor.submit(after_failure, c, fraction, time_limit,
                                                  True, ecmp).result()
        row["all_to_all_after_failure_gbps"] = tried[topology]
        short = _shortfalls(row, constraints)
        if ecmp and "all_to_all_after_failure_gbps" in short:
            # Only a lower bound after failure: below the target proves nothing.
            row["reason"] = (f"undecided: ECMP after failure carries {tried[topology]:,.1f} "
                             f"< {constraints['all_to_all_after_failure_gbps']:g} Gb/s per "
                             "GPU, a lower bound only")
            return None
        return short

    def ceiling() -> float | None:
        """The capex above which a topology is priced but not solved: the cheapest feasible
        design's, when nothing dearer can be the best or on the reported front."""
        if not prune or full_front or objective != "capex_usd" or not feasible:
            return None
        return min(f["capex_usd"] for f in feasible)

    def finish(topology: str, group: list[tuple[Sketch, Candidate, dict[str, Any]]],
               results: list[dict[str, Any]]) -> None:
        nonlocal done
        for (sk, c, row), res in zip(group, results, strict=True):
            if res.pop("priced_out", False):
                cheapest = min(feasible, key=lambda f: f["capex_usd"])
                row.update(res)
                row["reason"] = (f"costs more than {cheapest['name']} ({res['capex_usd']:,.0f} "
                                 f"> {cheapest['capex_usd']:,.0f} USD; priced, not solved)")
                done += 1
                if progress is not None:
                    progress(done, total)
                continue
            row.update(res)
            row["reason"] = ""
            row["topology"] = topology_names.setdefault(topology, row["name"])
            undecided = ""
            if topology in bracketed:
                # The plan's bound may be tighter than the fabric's cheap ones.
                upper = min(row["all_to_all_upper_gbps_per_gpu"], sk.a2a_upper_gbps)
                row["all_to_all_upper_gbps_per_gpu"] = max(upper,
                                                           row["all_to_all_gbps_per_gpu"])
                undecided = _undecided(row, constraints)
            if undecided:
                row["status"] = "unsolved"
                row["reason"] = undecided
                row["shortfall"], row["meets"] = {}, None
            elif row["all_to_all_gbps_per_gpu"] <= 0 and row["flow_status"] != "optimal":
                # No certified throughput (a time limit, a solver failure): reported with its
                # status, kept off the front and out of the best.
                row["status"] = "unsolved"
                row["reason"] = f"flow solve {row['flow_status']}: no certified throughput"
                row["shortfall"], row["meets"] = {}, None
            else:
                row["status"] = "evaluated"
                evaluated.append(row)
                short: dict[str, float] | None = _shortfalls(_decided(row), others)
                if failure and not short:
                    short = try_failure(topology, c, row)
                row["shortfall"] = short or {}
                row["meets"] = None if short is None else not short
                if row["meets"]:
                    feasible.append(row)
            done += 1
            if progress is not None:
                progress(done, total)

    if executor is None:
        for topology, group in order:
            keep = needed(group)
            if keep:
                finish(topology, keep, evaluate_group([c for _, c, _ in keep], constraints,
                                                      time_limit, False, topology in bracketed,
                                                      ceiling()))
    else:
        # A window of one group per worker: each finished group prunes the ones not yet sent.
        window = _workers(executor)
        pending: dict[Any, tuple[str, list[tuple[Sketch, Candidate, dict[str, Any]]]]] = {}
        queue = list(order)
        try:
            while queue or pending:
                while queue and len(pending) < window:
                    topology, group = queue.pop(0)
                    keep = needed(group)
                    if keep:
                        future = executor.submit(evaluate_group, [c for _, c, _ in keep],
                                                 constraints, time_limit, True,
                                                 topology in bracketed, ceiling())
                        pending[future] = (topology, keep)
                if not pending:
                    continue
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for future in finished:
                    topology, keep = pending.pop(future)
                    finish(topology, keep, future.result())
        finally:
            for future in pending:
                future.cancel()

    front = []
    for r in sorted(evaluated, key=lambda r: (r["capex_usd"], -r["all_to_all_gbps_per_gpu"])):
        if not front or r["all_to_all_gbps_per_gpu"] > front[-1]["all_to_all_gbps_per_gpu"]:
            front.append(r)
    best = min(feasible, key=lambda r: r[objective]) if feasible else None
    if best is not None and not full_front and objective == "capex_usd":
        front = [r for r in front if r["capex_usd"] <= best["capex_usd"] * (1 + _TOL)]
    # No design meets every constraint: the nearest, evaluated or bounded (a bound's shortfall
    # is the least the candidate misses by).
    missed = [r for r in rows if r.get("shortfall")]
    nearest = [] if best else sorted(missed, key=lambda r: sum(r["shortfall"].values()))[:3]
    return OptimizeResult(gpus, objective, constraints, rows, front, best, nearest,
                          time.perf_counter() - start, {c.name: c for c in candidates})


def _workers(executor: cf.Executor) -> int:
    """Tasks an executor runs at once: a pool's workers, a Dask client's threads, else 2."""
    count = getattr(executor, "_max_workers", None)
    client = getattr(executor, "_client", None)
    if count is None and client is not None:
        try:
            count = sum(client.nthreads().values())
        except Exception:  # noqa: BLE001 - a client that cannot say: the default
            count = None
    return max(int(count or 2), 1)


def _cannot_win(sk: Sketch, feasible: list[dict[str, Any]], evaluated: list[dict[str, Any]],
                objective: str, full_front: bool) -> str:
    """Why a candidate with these bounds can be neither the best nor on the front ("" if it
    could be). Only designs proven to meet every constraint count as feasible here."""
    if objective != "capex_usd":
        return ""  # power is not bounded before a build: any candidate could be the best
    cheaper = [f for f in feasible if f["capex_usd"] <= sk.capex_lower_usd * (1 + _TOL)]
    if not cheaper:
        return ""
    cheapest = min(cheaper, key=lambda f: f["capex_usd"])
    if not full_front and cheapest["capex_usd"] < sk.capex_lower_usd * (1 - _TOL):
        # The front stops at the best design, which costs no more than this feasible one.
        return (f"costs more than {cheapest['name']} (capex bound "
                f"{sk.capex_lower_usd:,.0f} > {cheapest['capex_usd']:,.0f} USD)")
    for e in evaluated:  # off the front too: a design as cheap delivers as much
        if (e["capex_usd"] <= sk.capex_lower_usd * (1 + _TOL)
                and e["all_to_all_gbps_per_gpu"] >= sk.a2a_upper_gbps * (1 - _TOL)):
            return f"dominated by {e['name']}"
    return ""


_SPEC_KEYS = ("name", "description", "gpus", "objective", "space", "constraints")


def load_search(path: str | os.PathLike[str]) -> dict[str, Any]:
    r"""Read a search file: the arguments of :func:`optimize` in TOML.

    Format (every key but ``gpus`` optional; ``[space]`` values are lists)::

        name = "16K GPUs, 200 Gb/s all-to-all"
        gpus = 16384
        objective = "capex_usd"
        [space]
        family = ["superpod", "rail_optimized"]
        oversubscription = [1.0, 2.0, 4.0]
        [constraints]
        all_to_all_gbps_per_gpu = 200

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "s.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('gpus = 16\n[constraints]\ncapex_usd = 1e6\n')
    >>> load_search(path)["constraints"]
    {'capex_usd': 1000000.0}
    """
    from .._toml import read_toml
    from ..errors import DesignFileError

    where = os.fspath(path)
    data = read_toml(where, DesignFileError, "search file")
    for key in data:
        if key not in _SPEC_KEYS:
            raise DesignFileError(f"{where}: key {key!r} is not allowed; allowed keys: "
                                  + ", ".join(_SPEC_KEYS))
    if "gpus" not in data:
        raise DesignFileError(f"{where}: key 'gpus' is missing: the GPU count to design for")
    for key in ("space", "constraints"):
        if not isinstance(data.get(key, {}), dict):
            raise DesignFileError(f"{where}: key {key!r} must be a table ([{key}])")
    for key, values in data.get("space", {}).items():
        if not isinstance(values, list):
            raise DesignFileError(f"{where}: [space] key {key!r} must be a list of values, "
                                  f"got {values!r}")
    return {"gpus": data["gpus"], "space": data.get("space", {}),
            "constraints": data.get("constraints", {}),
            "objective": data.get("objective", "capex_usd"), "name": data.get("name", where)}


__all__ = ["DEFAULT_SPACE", "OptimizeResult", "load_search", "optimize"]
