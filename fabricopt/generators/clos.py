"""Folded Clos networks: the k-ary fat-tree, Clos fabrics sized from a switch radix, leaf-spine.

Every fabric here is a tree of switch tiers above the endpoints. Tiers and layers:

=========  =====  =============================================
node       layer  links up to the next layer (arc ``tier``)
=========  =====  =============================================
GPU        0      ``"gpu-leaf"``
leaf       1      ``"leaf-spine"``
spine      2      ``"spine-core"`` (three tiers only)
core       3      --
=========  =====  =============================================

Fat-tree vocabulary maps onto it: edge = leaf, aggregation = spine. The sizing of a Clos from
the switch radix lives in :func:`clos_plan` and the wiring in :func:`add_clos`, so a cluster
builder can hang the same scale-out fabric below GPUs that already sit in scale-up domains.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import check_choice, check_int, check_int_sequence, check_positive, fail
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ._builder import FabricBuilder, default_tech

# Ratios such as 1/3 are not exact in binary; without this slack floor(64 * s / (1 + s)) would
# give 15 down ports for s = 1/3 instead of the 16 the user means.
_RATIO_SLACK = 1e-9


def check_label(func: str, name: str, value: Any) -> str | None:
    """Return ``value`` if it is None or a non-empty string (a tech label or switch model).

    >>> check_label("clos", "tech", "ndr")
    'ndr'
    """
    if value is not None and (not isinstance(value, str) or not value):
        raise fail(func, name, "None or a non-empty string", value)
    return value


def split_ports(func: str, radix: int, oversubscription: float) -> tuple[int, int]:
    """Leaf ports towards endpoints (down) and towards spines (up) for a down:up ratio.

    ``down = floor(radix * s / (1 + s))`` and ``up = radix - down``: every port is used and the
    ratio built, ``down / up``, never exceeds the ``s`` asked for.

    >>> split_ports("clos", 64, 1.0), split_ports("clos", 64, 3.0), split_ports("clos", 64, 2.0)
    ((32, 32), (48, 16), (42, 22))
    """
    down = math.floor(radix * oversubscription / (1 + oversubscription) + _RATIO_SLACK)
    if down < 1:
        raise InvalidParameterError(
            f"{func}(): radix={radix} at oversubscription={oversubscription!r} leaves no leaf "
            f"port for endpoints (down = floor(radix * s / (1 + s)) = 0)")
    return down, radix - down


def smallest_divisor_at_least(n: int, m: float) -> int:
    """The smallest divisor of ``n`` that is ``>= m`` (``n`` itself when ``m >= n``).

    Used to pick how many upper switches a set of uplinks spreads over: fewest switches, every
    lower switch joined to each by the same number of links.

    >>> smallest_divisor_at_least(32, 3), smallest_divisor_at_least(7, 2)
    (4, 7)
    """
    for d in range(max(1, math.ceil(m)), n + 1):
        if n % d == 0:
            return d
    return n


@dataclass(frozen=True)
class ClosPlan:
    """The sizes of a folded Clos, as :func:`clos_plan` derives them.

    Attributes
    ----------
    endpoints, radix, down, up : int
        Endpoint count, leaf radix, and leaf ports down (to endpoints) and up (to spines).
    tiers : int
        Switch tiers built: 1 (one leaf alone), 2 (leaf-spine) or 3 (pods and a core).
    leaves : int
        ``ceil(endpoints / down)``; leaf ``i`` holds endpoints ``leaf_endpoints(i)``, the
        endpoints spread evenly, so a leaf may use fewer than ``down`` ports.
    leaves_per_pod, pods : int
        Three tiers: the spine's down ports (``spine_radix // 2`` at 1:1) leaves per pod (the
        last pod may hold fewer). Otherwise
        ``leaves`` and 1.
    spines : int
        Two tiers: the spine count. Three tiers: spines per pod (``up``).
    leaf_spine_links : int
        Parallel links between each leaf and each spine (of its pod).
    cores_per_group, spine_core_links : int
        Three tiers: spine ``j`` of every pod joins the ``cores_per_group`` core switches of
        group ``j`` with ``spine_core_links`` links each. Otherwise 0.
    symmetric : bool
        True when every leaf and pod is alike (the leaf count divides the endpoints, and every
        pod is full: ``leaves_per_pod`` divides the leaves), so pod, leaf, spine, core and
        endpoint permutations act transitively on the endpoints.
    spine_radix, core_radix : int
        Ports of spine and core switches (``radix`` unless given per tier; 0 where the tier
        is not built).
    """

    endpoints: int
    radix: int
    down: int
    up: int
    tiers: int
    leaves: int
    leaves_per_pod: int
    pods: int
    spines: int
    leaf_spine_links: int
    cores_per_group: int
    spine_core_links: int
    symmetric: bool
    spine_radix: int = 0
    core_radix: int = 0

    def leaf_endpoints(self, i: int) -> range:
        """The endpoints under leaf ``i``: spread evenly over the leaves (counts differ by at
        most one), as a cabling plan balances them.

        >>> p = clos_plan("clos", 100, 64, 2, 2.0)  # 42 down: 3 leaves
        >>> [len(p.leaf_endpoints(i)) for i in range(p.leaves)]
        [33, 33, 34]
        """
        n, k = self.endpoints, self.leaves
        return range(i * n // k, (i + 1) * n // k)

    @property
    def switches(self) -> int:
        """Total switch count."""
        if self.tiers == 3:
            return self.leaves + self.pods * self.spines + self.up * self.cores_per_group
        return self.leaves + self.spines


def max_endpoints(radix: int, tiers: int, down: int) -> int:
    """Largest endpoint count ``tiers`` tiers of radix-``radix`` switches reach.

    Two tiers: ``radix`` leaves (one spine port each) of ``down`` endpoints. Three tiers:
    ``radix`` pods (one core port each) of ``radix // 2`` leaves of ``down`` endpoints; at 1:1
    with an even radix that is ``radix**3 / 4``.

    >>> max_endpoints(64, 2, 32), max_endpoints(64, 3, 32) == 64**3 // 4
    (2048, True)
    """
    return radix * down if tiers == 2 else radix * (radix // 2) * down


def per_tier(radix: int | Sequence[int], tiers: int, oversubscription: float | Sequence[float]
             ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Radix of each tier and oversubscription of each tier but the top, from either form.

    A single radix serves every tier; a single oversubscription applies at the leaf, the
    spine of a three-tier fabric being 1:1. Arguments are assumed checked.

    >>> per_tier(64, 3, 2.0), per_tier([32, 220, 64], 3, [1.0, 7.0])
    (((64, 64, 64), (2.0, 1.0)), ((32, 220, 64), (1.0, 7.0)))
    """
    radices = (radix,) * tiers if isinstance(radix, int) else tuple(radix)
    if isinstance(oversubscription, int | float):
        overs = (float(oversubscription),) + (1.0,) * (tiers - 2)
    else:
        overs = tuple(float(x) for x in oversubscription)
    return radices, overs


def spine_ports(func: str, radix: int, oversubscription: float) -> tuple[int, int]:
    """Spine ports towards leaves (one per leaf of the pod) and towards the core.

    ``down = floor(r * s / (1 + s))`` as at a leaf, and ``up = min(r - down, ceil(down / s))``:
    no more up ports than the ratio needs, so at 1:1 an odd radix leaves a port unused.

    >>> spine_ports("clos", 64, 1.0), spine_ports("clos", 220, 7.0), spine_ports("clos", 5, 1.0)
    ((32, 32), (192, 28), (2, 2))
    """
    down, rest = split_ports(func, radix, oversubscription)
    return down, min(rest, math.ceil(down / oversubscription - _RATIO_SLACK))


def clos_reach(func: str, radix: int | Sequence[int], tiers: int,
               oversubscription: float | Sequence[float]) -> int:
    """Largest endpoint count ``tiers`` tiers reach (see :func:`clos`).

    >>> clos_reach("clos", 64, 2, 1.0), clos_reach("clos", [32, 220, 64], 3, [1.0, 7.0])
    (2048, 196608)
    """
    radices, overs = per_tier(radix, tiers, oversubscription)
    down, _ = split_ports(func, radices[0], overs[0])
    if tiers == 2:
        return radices[1] * down
    return radices[2] * spine_ports(func, radices[1], overs[1])[0] * down


def clos_plan(func: str, endpoints: int, radix: int | Sequence[int], tiers: int,
              oversubscription: float | Sequence[float]) -> ClosPlan:
    """Size the smallest folded Clos of radix-``radix`` switches for ``endpoints`` endpoints.

    Arguments are assumed checked; ``radix`` and ``oversubscription`` may be given per tier
    (see :func:`per_tier`); ``func`` names the caller in errors. See :func:`clos` for the
    formulas.

    >>> p = clos_plan("clos", 2048, 64, 2, 1.0)
    >>> p.leaves, p.spines, p.leaf_spine_links
    (64, 32, 1)
    """
    radices, overs = per_tier(radix, tiers, oversubscription)
    leaf_radix = radices[0]
    down, up = split_ports(func, leaf_radix, overs[0])
    reach = clos_reach(func, radices, tiers, overs)
    if endpoints > reach:
        shown = radices[0] if len(set(radices)) == 1 else list(radices)
        ratio = overs[0] if len(overs) == 1 or overs[1:] == (1.0,) else list(overs)
        raise InvalidParameterError(
            f"{func}(): {tiers} tiers of radix-{shown} switches reach at most {reach} endpoints "
            f"at oversubscription {ratio!r}, got endpoints={endpoints}")
    leaves = -(-endpoints // down)
    full_leaves = endpoints % leaves == 0  # endpoints spread evenly: all leaves alike
    if leaves == 1:
        # A spine above a single leaf would carry no traffic.
        return ClosPlan(endpoints, leaf_radix, down, up, 1, 1, 1, 1, 0, 0, 0, 0, True)
    spine_radix = radices[1]
    per_pod, spine_up = spine_ports(func, spine_radix, overs[1]) if tiers == 3 else (0, 0)
    pods = -(-leaves // per_pod) if tiers == 3 else 1
    if tiers == 2 or pods == 1:
        # Fewest spines such that spine ports suffice and every leaf-spine pair gets the same
        # bundle; a single pod needs no core for the same reason a single leaf needs no spine.
        spines = smallest_divisor_at_least(up, leaves * up / spine_radix)
        return ClosPlan(endpoints, leaf_radix, down, up, 2, leaves, leaves, 1, spines,
                        up // spines, 0, 0, full_leaves, spine_radix)
    core_radix = radices[2]
    cores = smallest_divisor_at_least(spine_up, pods * spine_up / core_radix)
    return ClosPlan(endpoints, leaf_radix, down, up, 3, leaves, per_pod, pods, up, 1, cores,
                    spine_up // cores, full_leaves and leaves % per_pod == 0, spine_radix,
                    core_radix)


def add_clos(b: FabricBuilder, attach: Sequence[Hashable], plan: ClosPlan, link_gbps: float,
             tech: str, switch_model: str | None = None, prefix: str = "") -> None:
    """Wire the switches of ``plan`` above the attachment points ``attach``.

    Parameters
    ----------
    b : FabricBuilder
        Holds the attachment points already; switches and links are added to it.
    attach : sequence of nodes
        ``plan.endpoints`` nodes (GPUs, or the NIC side of GPUs), in leaf order.
    plan : ClosPlan
        From :func:`clos_plan`.
    link_gbps, tech, switch_model
        Rate and label of every link, catalog key of every switch.
    prefix : str
        Prepended to switch names, to keep them apart from other parts of a larger fabric.

    Notes
    -----
    Switches are ``"leaf{i}"`` (global index), ``"spine{j}"`` (two tiers) or
    ``"spine{p}.{j}"`` (pod ``p``, three tiers) and ``"core{j}.{m}"`` (core ``m`` of group
    ``j``, joined to spine ``j`` of every pod), each with the given prefix. Leaves sit one layer
    above the highest attachment point. In three tiers, leaves, spines and attachment points
    get ``pod``.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> gpus = [b.gpu(f"g{i}") for i in range(4)]
    >>> add_clos(b, gpus, clos_plan("demo", 4, 4, 2, 1.0), 400.0, "400g")
    >>> sorted(v for v, d in b.nodes.items() if d["role"] == "switch")
    ['leaf0', 'leaf1', 'spine0']
    """
    if len(attach) != plan.endpoints:
        raise InvalidParameterError(
            f"add_clos(): attach must hold {plan.endpoints} nodes, got {len(attach)}")
    base = max(b.nodes[a]["layer"] for a in attach)
    radix = plan.radix
    spine_radix, core_radix = plan.spine_radix or radix, plan.core_radix or radix
    three = plan.tiers == 3
    leaves = []
    for i in range(plan.leaves):
        pod = {"pod": i // plan.leaves_per_pod} if three else {}
        leaf = b.switch(f"{prefix}leaf{i}", base + 1, radix, switch_model, **pod)
        leaves.append(leaf)
        for a in (attach[j] for j in plan.leaf_endpoints(i)):
            if three:
                b.nodes[a]["pod"] = pod["pod"]
            b.link(a, leaf, link_gbps, "gpu-leaf", tech)
    if plan.tiers == 1:
        return
    if not three:
        spines = [b.switch(f"{prefix}spine{j}", base + 2, spine_radix, switch_model)
                  for j in range(plan.spines)]
        wire_complete_bipartite(b, leaves, spines, link_gbps, "leaf-spine", tech,
                                plan.leaf_spine_links)
        return
    cores = [[b.switch(f"{prefix}core{j}.{m}", base + 3, core_radix, switch_model)
              for m in range(plan.cores_per_group)] for j in range(plan.spines)]
    for p in range(plan.pods):
        spines = [b.switch(f"{prefix}spine{p}.{j}", base + 2, spine_radix, switch_model,
                           pod=p)
                  for j in range(plan.spines)]
        pod_leaves = leaves[p * plan.leaves_per_pod:(p + 1) * plan.leaves_per_pod]
        wire_complete_bipartite(b, pod_leaves, spines, link_gbps, "leaf-spine", tech,
                                plan.leaf_spine_links)
        for j, spine in enumerate(spines):
            for core in cores[j]:
                b.link(spine, core, link_gbps, "spine-core", tech, links=plan.spine_core_links)


def wire_complete_bipartite(b: FabricBuilder, lower: Sequence[Hashable],
                            upper: Sequence[Hashable], gbps: float, tier: str, tech: str,
                            links: int) -> None:
    """Join every node of ``lower`` to every node of ``upper`` by a bundle of ``links`` links.

    >>> b = FabricBuilder("demo", {})
    >>> for v in "ab":
    ...     _ = b.switch(v, 1, 4)
    >>> for v in "xy":
    ...     _ = b.switch(v, 2, 4)
    >>> wire_complete_bipartite(b, "ab", "xy", 400.0, "leaf-spine", "400g", 2)
    >>> len(b.arcs), b.arcs[("a", "x")]["capacity"]
    (8, 800.0)
    """
    for u in lower:
        for v in upper:
            b.link(u, v, gbps, tier, tech, links=links)


def _tech(func: str, tech: Any, link_gbps: float) -> str:
    return check_label(func, "tech", tech) or default_tech(link_gbps)


def check_tiers(func: str, radix: Any, tiers: int, oversubscription: Any
                ) -> tuple[int | tuple[int, ...], float | tuple[float, ...]]:
    """Check ``radix`` (an int >= 2 or one per tier) and ``oversubscription`` (a number > 0 or
    one per tier below the top) for ``tiers`` tiers; return them as int/tuple, float/tuple.

    >>> check_tiers("clos", [32, 220, 64], 3, [1, 7])
    ((32, 220, 64), (1.0, 7.0))
    """
    if isinstance(radix, Sequence) and not isinstance(radix, str):
        radix = check_int_sequence(func, "radix", radix, minimum=2, length=tiers)
    else:
        radix = check_int(func, "radix", radix, minimum=2)
    if isinstance(oversubscription, Sequence) and not isinstance(oversubscription, str):
        if len(oversubscription) != tiers - 1:
            raise fail(func, "oversubscription", f"a number > 0 or a sequence of {tiers - 1} "
                       f"(one per tier below the top)", oversubscription)
        oversubscription = tuple(check_positive(func, "oversubscription", x)
                                 for x in oversubscription)
    else:
        oversubscription = check_positive(func, "oversubscription", oversubscription)
    return radix, oversubscription


def clos(endpoints: int, radix: int | Sequence[int], tiers: int = 2,
         oversubscription: float | Sequence[float] = 1.0, link_gbps: float = 400,
         tech: str | None = None, switch_model: str | None = None) -> Fabric:
    """The smallest folded Clos of radix-``radix`` switches that connects ``endpoints`` GPUs.

    Parameters
    ----------
    endpoints : int
        Number of GPUs (endpoints), >= 1.
    radix : int or sequence of int
        Ports per switch, >= 2: one value for every tier, or one per tier (leaf first).
    tiers : {2, 3}
        Switch tiers: leaf-spine, or pods of leaves and spines joined by a core tier.
    oversubscription : float or sequence of float
        Down:up port ratio ``s`` > 0: 1.0 is non-blocking, 3.0 puts three endpoint ports on a
        leaf per spine port. One value applies at the leaf (spines of three tiers are 1:1);
        a sequence gives one per tier below the top: ``[1, 7]`` is non-blocking pods
        joined 7:1 to the core (Meta's AI zones, ``docs/hardware.md#meta-24k-gpu-clusters``).
    link_gbps : float
        Rate of every link per direction (Gb/s).
    tech : str, optional
        Link technology label (default ``"{link_gbps}g"``, e.g. ``"400g"``).
    switch_model : str, optional
        Catalog key of the switches (None lets the cost model pick by radix and rate).

    Returns
    -------
    Fabric
        Named ``"clos(...)"``; ``params`` records the arguments.

    Raises
    ------
    InvalidParameterError
        On a bad argument, or when ``endpoints`` exceeds what ``tiers`` tiers of the radix
        reach (the message gives that largest count).

    Notes
    -----
    Sizing, with ``r`` the radix, ``s`` the oversubscription and ``E`` the endpoints (per
    tier, read ``r`` and ``s`` as the values of the tier concerned):

    * leaf ports: ``down = floor(r * s / (1 + s))``, ``up = r - down`` (all ports used; the
      ratio built never exceeds ``s``); ``L = ceil(E / down)`` leaves, the endpoints spread
      evenly over them (counts differ by at most one, as a cabling plan balances them).
    * two tiers: ``S`` spines, the smallest divisor of ``up`` with ``S * r >= L * up``; every
      leaf joins every spine with ``up / S`` parallel links (one bundle). Largest size
      ``r * down`` (``r`` leaves, ``S = up``): 2048 at ``r = 64``, 1:1.
    * three tiers: spine ports ``h = floor(r * s / (1 + s))`` down and
      ``u = min(r - h, ceil(h / s))`` up (``h = u = r // 2`` at 1:1); pods of ``h`` leaves
      and ``up`` spines (one link per leaf and spine); ``P = ceil(L / h)`` pods, the last one
      possibly partly filled. Spine ``j`` of each pod sends ``u`` links to core group ``j``
      of ``C`` switches, ``C`` the smallest divisor of ``u`` with ``C * r >= P * u``,
      ``u / C`` links per spine-core pair. Largest size ``r * h * down``, ``r**3 / 4`` at
      1:1 with an even radix (the k-ary fat-tree).
    * A tier above a single switch of the tier below carries no traffic and is not built:
      one leaf is a lone switch, one pod is a two-tier leaf-spine.

    Nodes: GPUs ``"g{n}"`` (under the leaf ``i`` with ``n`` in
    ``ClosPlan.leaf_endpoints(i)``); switches as in :func:`add_clos`, each with the radix of
    its tier. The fabric claims symmetry (the arc orbits of pod, leaf, spine, core and GPU
    permutations: one per tier and direction) when all leaves hold as many endpoints (``L``
    divides ``E``) and every pod is full, or there is a single leaf.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.clos(endpoints=2048, radix=64, tiers=2)
    >>> s = fab.summary()
    >>> s.nodes_by_layer     # 2048 GPUs, 64 leaves of 32 + 32 ports, 32 spines
    {0: 2048, 1: 64, 2: 32}
    >>> fo.clos(endpoints=96, radix=16, oversubscription=3.0).summary().nodes_by_layer
    {0: 96, 1: 8, 2: 2}

    Two pods of 5 leaves (2 GPUs down, 2 up) under 5:1 spines of radix 6 (5 down, 1 up),
    each spine index joined to its own core:

    >>> fo.clos(endpoints=20, radix=[4, 6, 4], tiers=3, oversubscription=[1, 5]
    ...         ).summary().nodes_by_layer
    {0: 20, 1: 10, 2: 4, 3: 2}
    """
    func = "clos"
    endpoints = check_int(func, "endpoints", endpoints, minimum=1)
    tiers = check_choice(func, "tiers", tiers, (2, 3))
    radix, oversubscription = check_tiers(func, radix, tiers, oversubscription)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    tech = _tech(func, tech, link_gbps)
    switch_model = check_label(func, "switch_model", switch_model)
    plan = clos_plan(func, endpoints, radix, tiers, oversubscription)

    params = {"endpoints": endpoints,
              "radix": list(radix) if isinstance(radix, tuple) else radix, "tiers": tiers,
              "oversubscription": list(oversubscription)
              if isinstance(oversubscription, tuple) else oversubscription,
              "link_gbps": link_gbps, "tech": tech, "switch_model": switch_model}
    ratio = ("/".join(f"{x:g}:1" for x in oversubscription)
             if isinstance(oversubscription, tuple) else f"{oversubscription:g}:1")
    shown = "/".join(map(str, radix)) if isinstance(radix, tuple) else radix
    b = FabricBuilder(f"clos({endpoints}, radix={shown}, tiers={tiers}, {ratio})", params)
    gpus = [b.gpu(f"g{n}") for n in range(endpoints)]
    add_clos(b, gpus, plan, link_gbps, tech, switch_model)
    return b.build(symmetric=plan.symmetric,
                   group="pod, leaf, spine, core and GPU permutations")


def fat_tree(k: int, link_gbps: float = 400, tech: str | None = None,
             switch_model: str | None = None) -> Fabric:
    """The three-tier k-ary fat-tree of Al-Fares, Loukissas and Vahdat (SIGCOMM 2008).

    Parameters
    ----------
    k : int
        Switch radix, an even integer >= 2.
    link_gbps : float
        Rate of every link per direction (Gb/s).
    tech : str, optional
        Link technology label (default ``"{link_gbps}g"``).
    switch_model : str, optional
        Catalog key of the switches.

    Returns
    -------
    Fabric
        ``k`` pods of ``k/2`` edge (leaf) and ``k/2`` aggregation (spine) switches,
        ``(k/2)**2`` core switches: ``5 k**2 / 4`` switches of radix ``k``, ``k**3 / 4`` GPUs,
        ``k**3 / 4`` GPU links and ``k**3 / 2`` switch-to-switch links.

    Notes
    -----
    This is ``clos(k**3 // 4, radix=k, tiers=3)`` and uses its names: GPUs ``"g{n}"``, edge
    switches ``"leaf{i}"``, aggregation switches ``"spine{p}.{j}"``, core switches
    ``"core{j}.{m}"``; core ``(j, m)`` joins aggregation switch ``j`` of every pod. Tiers
    ``"gpu-leaf"``, ``"leaf-spine"``, ``"spine-core"``, layers 0 to 3; GPUs, edge and
    aggregation switches carry ``pod``. The fabric claims the symmetry of pod, edge, host,
    aggregation-index and core permutations, whose arc orbits are the three tiers in each
    direction. ``k = 2`` gives a path of two GPUs through five switches.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> len(fab.endpoints), len(fab.switches), fab.summary().links_by_tier
    (16, 20, {'gpu-leaf': 16, 'leaf-spine': 16, 'spine-core': 16})
    """
    func = "fat_tree"
    k = check_int(func, "k", k, minimum=2, even=True)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    tech = _tech(func, tech, link_gbps)
    switch_model = check_label(func, "switch_model", switch_model)
    endpoints = k**3 // 4
    plan = clos_plan(func, endpoints, k, 3, 1.0)
    b = FabricBuilder(f"fat_tree(k={k})", {"k": k, "link_gbps": link_gbps, "tech": tech,
                                           "switch_model": switch_model})
    gpus = [b.gpu(f"g{n}") for n in range(endpoints)]
    add_clos(b, gpus, plan, link_gbps, tech, switch_model)
    return b.build(symmetric=True,
                   group="pod, edge, host, aggregation-index and core permutations")


def leaf_spine(leaves: int, spines: int, endpoints_per_leaf: int, link_gbps: float = 400,
               links_per_pair: int = 1, tech: str | None = None,
               switch_model: str | None = None) -> Fabric:
    """A leaf-spine fabric: every leaf joined to every spine by ``links_per_pair`` links.

    Parameters
    ----------
    leaves, spines : int
        Switch counts, each >= 1.
    endpoints_per_leaf : int
        GPUs under each leaf, >= 1.
    link_gbps : float
        Rate of every link per direction (Gb/s).
    links_per_pair : int
        Parallel links between each leaf and each spine (one bundle), >= 1.
    tech : str, optional
        Link technology label (default ``"{link_gbps}g"``).
    switch_model : str, optional
        Catalog key of the switches.

    Returns
    -------
    Fabric
        ``leaves * endpoints_per_leaf`` GPUs. Switch radix is the ports used: leaves
        ``endpoints_per_leaf + spines * links_per_pair``, spines ``leaves * links_per_pair``.
        The leaf down:up ratio is ``endpoints_per_leaf / (spines * links_per_pair)``.

    Notes
    -----
    GPUs ``"g{n}"`` (under leaf ``n // endpoints_per_leaf``), leaves ``"leaf{i}"``, spines
    ``"spine{j}"``; layers 0, 1, 2; tiers ``"gpu-leaf"`` and ``"leaf-spine"``. The fabric
    claims the symmetry of leaf, spine and GPU permutations (one arc orbit per tier and
    direction).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=8, spines=4, endpoints_per_leaf=8)
    >>> len(fab.endpoints), fab.summary().links_by_tier
    (64, {'gpu-leaf': 64, 'leaf-spine': 32})
    """
    func = "leaf_spine"
    leaves = check_int(func, "leaves", leaves, minimum=1)
    spines = check_int(func, "spines", spines, minimum=1)
    per_leaf = check_int(func, "endpoints_per_leaf", endpoints_per_leaf, minimum=1)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    links_per_pair = check_int(func, "links_per_pair", links_per_pair, minimum=1)
    tech = _tech(func, tech, link_gbps)
    switch_model = check_label(func, "switch_model", switch_model)
    params = {"leaves": leaves, "spines": spines, "endpoints_per_leaf": per_leaf,
              "link_gbps": link_gbps, "links_per_pair": links_per_pair, "tech": tech,
              "switch_model": switch_model}
    b = FabricBuilder(f"leaf_spine({leaves}x{spines}, {per_leaf} per leaf)", params)
    gpus = [b.gpu(f"g{n}") for n in range(leaves * per_leaf)]
    leaf_radix = per_leaf + spines * links_per_pair
    leaf_nodes = []
    for i in range(leaves):
        leaf = b.switch(f"leaf{i}", 1, leaf_radix, switch_model)
        leaf_nodes.append(leaf)
        for gpu in gpus[i * per_leaf:(i + 1) * per_leaf]:
            b.link(gpu, leaf, link_gbps, "gpu-leaf", tech)
    spine_nodes = [b.switch(f"spine{j}", 2, leaves * links_per_pair, switch_model)
                   for j in range(spines)]
    wire_complete_bipartite(b, leaf_nodes, spine_nodes, link_gbps, "leaf-spine", tech,
                            links_per_pair)
    return b.build(symmetric=True, group="leaf, spine and GPU permutations")
