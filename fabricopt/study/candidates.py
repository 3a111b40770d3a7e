"""The candidates of a design search, and what their plans prove before anything is built.

:func:`candidates` enumerates the points of a search space; :func:`sketch` sizes each from its
generator's plan alone (the same sizing rules the generators build by) and bounds its capex from
below and its all-to-all bandwidth from above (the bounds are derived in
:mod:`fabricopt.study.optimize`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import (
    check_choice,
    check_int,
    check_label,
    check_positive,
    check_radix,
    did_you_mean,
    fail,
)
from ..cost import Catalog
from ..errors import FabricOptError
from ..generators import make
from ..generators.cluster import NODES_PER_SU, read_domain, superpod_plan
from ..generators.wiring import RailPlan, clos_plan, clos_reach, rail_plan

__all__ = ["DEFAULT_SPACE", "FAMILIES", "Candidate", "Sketch", "candidates", "sketch"]

#: The space searched when none is given: a rail-optimized or Clos cluster of DGX H100 on
#: 64-port 400G switches, from non-blocking to 4:1, priced as its design family's reference
#: build (policy None, as :func:`~fabricopt.estimate_cost` and :func:`~fabricopt.compare`
#: price it). ``spine`` [True, False] adds the rail-only designs of the SuperPOD and
#: rail-optimized families ("How to Build Low-cost Networks for Large Language Models
#: (without Sacrificing Performance)": rails meet only inside the nodes, each rail a leaf or
#: a Clos of its own); a Clos has no rails and is searched with a spine only.
DEFAULT_SPACE: dict[str, list[Any]] = {
    "family": ["superpod", "rail_optimized", "clos"],
    "scale_up": ["dgx_h100"],
    "leaf_radix": [64],
    "oversubscription": [1.0, 2.0, 3.0, 4.0],
    "tiers": [None],
    "spine": [True],
    "planes": [1],
    "nic_gbps": [400],
    "switch_model": [None],
    "policy": [None],
}
FAMILIES = ("superpod", "rail_optimized", "clos")


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
        family, kwargs = self.design()
        return make(family, kwargs, caller="optimize")


def candidates(gpus: int, space: Mapping[str, Any]) -> list[Candidate]:
    """Every point of ``space`` (keys of :data:`DEFAULT_SPACE`, lists of values) that applies
    to ``gpus`` GPUs, as candidates; a misnamed key is an error with a suggestion."""
    func = "optimize"
    keys = list(DEFAULT_SPACE)
    unknown = sorted(set(space) - set(keys))
    if unknown:
        raise fail(func, "space", "a mapping with keys among " + ", ".join(keys)
                   + did_you_mean(unknown[0], keys), unknown)
    for k, values in space.items():
        if not isinstance(values, list | tuple):  # a string would be read letter by letter
            raise fail(func, f"space[{k!r}]", "a list of values", values)
    grid = {k: list(space.get(k, DEFAULT_SPACE[k])) for k in keys}
    for k, values in grid.items():
        if not values:
            raise fail(func, f"space[{k!r}]", "a non-empty list", values)
        for i, value in enumerate(values):  # each value before the search, not in a worker
            _check_space_value(func, f"space[{k!r}][{i}]", k, value)
    for f in grid["family"]:
        check_choice(func, "space['family']", f, FAMILIES)
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
        spine = point["spine"]
        if not spine and (point["family"] == "clos"
                          or (nodes * len(dom.servers) <= point["leaf_radix"]
                              and s != float(grid["oversubscription"][0]))):
            continue  # no rails to keep apart; one leaf per rail has no ratio to vary
        if not spine:
            common["spine"] = False
        if point["family"] == "superpod":
            if point["planes"] != 1 or nodes % NODES_PER_SU or len(dom.servers) != 1:
                continue  # SuperPODs are built of whole SUs, one plane, one server a node
            kwargs = {"scalable_units": nodes // NODES_PER_SU, "node": su, "leaf_radix":
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
                + ("" if spine else " rail-only")
                + (f" {point['planes']}pl" if point["planes"] != 1 else "")
                + (f" t{point['tiers']}" if point["tiers"] else "")
                + (f" {point['switch_model']}" if point["switch_model"] else "")
                + f" {_policy_label(point['policy'])}")
        out.append(Candidate(point["family"], kwargs, point["policy"], name))
    return out


def _check_space_value(func: str, name: str, key: str, value: Any) -> None:
    """Refuse a value no candidate could be built with (the generators would fail on it
    deep inside the search, or divide by it)."""
    if key in ("oversubscription", "nic_gbps"):
        check_positive(func, name, value)
    elif key == "leaf_radix":
        check_radix(func, name, value)
    elif key == "planes":
        check_int(func, name, value, minimum=1)
    elif key == "tiers" and value is not None:
        check_int(func, name, value, minimum=2, maximum=3)
    elif key == "spine" and not isinstance(value, bool):
        raise fail(func, name, "True or False", value)
    elif key == "switch_model":
        check_label(func, name, value)


def _policy_label(policy: Any) -> str:
    """How a candidate's name shows its optics policy: ``"default"`` for none given, the
    default build of the fabric's family, which pricing decides (``pricing`` names it: a
    Clos of whole servers is priced top-of-rack, a SuperPOD by its reference build); not
    ``"reference"``, the preset of that name.

    >>> _policy_label(None), _policy_label("reference"), _policy_label({"lpo": True})
    ('default', 'reference', 'policy')
    """
    if policy is None:
        return "default"
    return policy if isinstance(policy, str) else "policy"


@dataclass
class Sketch:
    """What a candidate's plan says before anything is built."""

    ok: bool
    reason: str = ""
    switches: int = 0
    capex_usd_bound: float = 0.0  # no build of the plan costs less
    a2a_upper_gbps: float = math.inf
    tiers: int = 0
    symmetric: bool = True

    @property
    def capex_lower_usd(self) -> float:
        """:attr:`capex_usd_bound`, its name of a release ago."""
        return self.capex_usd_bound


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
                      aligned: bool, unit: int = 1) -> float:
    """All-to-all bound per GPU from the uplinks of leaves ``0..L-1`` of a Clos whose leaves
    hold units of ``unit`` endpoints spread evenly (leaf ``i`` holds units ``[i M // k,
    (i + 1) M // k)`` of ``M = N / unit``, as
    :meth:`~fabricopt.generators.wiring.ClosPlan.leaf_endpoints`), taken over every ``L``
    whose endpoints are whole scale-up domains (``aligned``: domains are numbered in
    endpoint order, so ``[0, G)`` with ``d | G`` is whole domains).

    >>> _leaf_group_bound(80, 2, 20 * 400, 8, True, unit=8)  # 40 GPUs: 8,000 x 79 / 40 / 40
    395.0
    """
    best = math.inf
    if not aligned:
        return best
    n = endpoints
    for count in range(1, leaves):
        group = count * (n // unit) // leaves * unit
        if group % d_gpus == 0 and 0 < group < n:
            best = min(best, count * up_gbps * (n - 1) / (group * (n - group)))
    return best


def sketch(c: Candidate, gpus: int, shared: dict[Any, Any] | None = None) -> Sketch:
    """Size a candidate from its plan and bound its capex and all-to-all bandwidth.

    ``shared`` (one dict for every candidate of a search) keeps the shipped catalog and each
    scale-up domain named by its generator, read once instead of once per candidate (a
    210-candidate search read them 210 times: a fifth of its enumeration).
    """
    shared = {} if shared is None else shared
    unit = c.kwargs.get("scale_up", c.kwargs.get("node"))
    if isinstance(unit, str):
        key = ("domain", unit)
        if key not in shared:
            shared[key] = read_domain("optimize", unit)
        dom = shared[key]
    else:  # a fabric or a table: read as given
        dom = read_domain("optimize", unit)
    d_gpus = len(dom.gpus)
    k = c.kwargs
    nic = float(k["nic_gbps"])
    try:
        if c.family == "clos":
            s = k["oversubscription"]
            tiers = k["tiers"] or (2 if gpus <= clos_reach("optimize", k["radix"], 2, s) else 3)
            # Sized as cluster() builds it: whole domains under a leaf when they fit.
            per_leaf_unit = d_gpus if k.get("whole_servers", True) else 1
            plan: Any = clos_plan("optimize", gpus, k["radix"], tiers, s, unit=per_leaf_unit)
            planes = 1
            group = len(plan.leaf_endpoints(0))
            group_up = plan.up * nic
            whole = group % d_gpus == 0
        else:
            servers = gpus // d_gpus * len(dom.servers)
            radix = k["leaf_radix"]
            spine = k.get("spine", True)
            if c.family == "superpod":
                n = NODES_PER_SU
                plan = superpod_plan("optimize", k["scalable_units"], dom.rails, radix, spine,
                                     k["oversubscription"], n)
                planes = 1
            else:
                plan = rail_plan("optimize", servers, dom.rails, radix, spine,
                                 k["oversubscription"], k["planes"], k["tiers"])
                planes = k["planes"]
            per_leaf = len(plan.leaf_nodes(0)) if isinstance(plan, RailPlan) else n
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
    else:
        # A rail-only plan's tiers above the leaves are one rail's: every rail has its own.
        copies = dom.rails if getattr(plan, "per_rail", False) else 1
        if upper.tiers == 2:
            spines, cores = copies * upper.spines, 0
            up_links, core_links = leaves * upper.up, 0
        else:
            spines = copies * upper.spines * upper.pods
            cores = copies * upper.spines * upper.cores_per_group
            up_links, core_links = leaves * upper.up, spines * upper.spine_up
    switches = planes * (leaves + spines + cores)
    if "catalog" not in shared:
        shared["catalog"] = Catalog.default()
    cat = shared["catalog"]
    per_port = nic / planes
    nic_usd = min(e["price_usd"] for e in cat.nics.values()
                  if any(g >= per_port for _, g in e["modes"]))
    if dom.fab.switches:
        # GPUs in a system (its scale-up switches reach them) come with their NICs in its
        # price, not the network's (fabricopt.cost.bom): none to bound from below.
        nic_usd = 0.0
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
        bound = min(bound, _leaf_group_bound(gpus, leaves, plan.up * nic, d_gpus, True,
                                             plan.unit))
    return Sketch(True, "", switches, capex_lb, bound, tiers, bool(plan.symmetric))
