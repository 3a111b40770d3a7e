"""Sizing and wiring of the scale-out switch tiers, shared by every generator that builds them.

Two plans: a folded Clos (:class:`ClosPlan`, sized by :func:`clos_plan` from the switch radix,
wired by :func:`add_clos`) and a rail-optimized fabric (:class:`RailPlan`, :func:`rail_plan`,
:func:`add_rail_scale_out`). The wiring functions hang the switches above attachment points
already in a builder, so the stand-alone generators (:func:`~fabricopt.clos`,
:func:`~fabricopt.rail_optimized`) and the cluster generators (:func:`~fabricopt.cluster`,
:func:`~fabricopt.superpod`), whose GPUs sit in scale-up domains, build the same network.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import check_int, check_int_sequence, check_positive, fail
from ..errors import InvalidParameterError
from ._builder import FabricBuilder

# Ratios such as 1/3 are not exact in binary; without this slack floor(64 * s / (1 + s)) would
# give 15 down ports for s = 1/3 instead of the 16 the user means.
_RATIO_SLACK = 1e-9


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
    if down >= radix:
        raise InvalidParameterError(
            f"{func}(): radix={radix} at oversubscription={oversubscription!r} leaves no spine "
            f"port (down = floor(radix * s / (1 + s)) = {down} = radix, up = 0)")
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


def needed_uplinks(down_used: int, up: int, oversubscription: float, lower: int,
                   radix: int) -> tuple[int, int]:
    """Uplinks each of ``lower`` switches cables, and the upper switches they spread over.

    A switch with ``down_used`` of its down ports taken needs ``ceil(down_used / s)`` uplinks
    at the down:up ratio ``s`` asked for, not all ``up`` of its free ports. Among the counts
    from that need up to ``up``, the one needing the fewest upper switches (the smallest
    divisor ``S`` of the count with ``S * radix >= lower * count``, so that every pair gets an
    equal bundle) wins, then the fewest uplinks. A full switch keeps ``up``.

    >>> needed_uplinks(32, 32, 1.0, 8, 64)    # full leaves: 32 uplinks on 4 spines
    (32, 4)
    >>> needed_uplinks(29, 32, 1.0, 20, 64)   # 29 needed: 30 uplinks reach 10 spines, 29 needs 29
    (30, 10)
    >>> needed_uplinks(32, 22, 2.0, 8, 64)    # 32 GPUs at 2:1 need 16 of the 22 free ports
    (16, 2)
    """
    need = min(up, max(1, math.ceil(down_used / oversubscription - _RATIO_SLACK)))
    best = min(range(need, up + 1),
               key=lambda u: (smallest_divisor_at_least(u, lower * u / radix), u))
    return best, smallest_divisor_at_least(best, lower * best / radix)


@dataclass(frozen=True)
class ClosPlan:
    """The sizes of a folded Clos, as :func:`clos_plan` derives them.

    Attributes
    ----------
    endpoints, radix, down, up : int
        Endpoint count, leaf radix, and leaf ports down (to endpoints) and up (to spines):
        ``up`` counts the uplinks cabled, which partly filled leaves cut to what their
        endpoints need at the ratio (:func:`needed_uplinks`).
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
    fullest = -(-endpoints // leaves)  # endpoints on the fullest leaf
    if tiers == 2 or pods == 1:
        # Fewest spines such that spine ports suffice and every leaf-spine pair gets the same
        # bundle; a single pod needs no core for the same reason a single leaf needs no spine.
        # Partly filled leaves cable only the uplinks their endpoints need at the ratio.
        up, spines = needed_uplinks(fullest, up, overs[0], leaves, spine_radix)
        return ClosPlan(endpoints, leaf_radix, down, up, 2, leaves, leaves, 1, spines,
                        up // spines, 0, 0, full_leaves, spine_radix)
    # Three tiers: one spine per leaf uplink in each pod, so fewer uplinks are fewer spines.
    up = min(up, max(1, math.ceil(fullest / overs[0] - _RATIO_SLACK)))
    core_radix = radices[2]
    cores = smallest_divisor_at_least(spine_up, pods * spine_up / core_radix)
    return ClosPlan(endpoints, leaf_radix, down, up, 3, leaves, per_pod, pods, up, 1, cores,
                    spine_up // cores, full_leaves and leaves % per_pod == 0, spine_radix,
                    core_radix)


def add_clos(b: FabricBuilder, attach: Sequence[Hashable], plan: ClosPlan, link_gbps: float,
             tech: str, switch_model: str | None = None) -> list[Hashable]:
    """Wire the switches of ``plan`` above the attachment points ``attach``; return the leaves.

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

    Returns
    -------
    list
        The leaves, leaf ``i`` above ``attach[j]`` for ``j`` in ``plan.leaf_endpoints(i)``.

    Notes
    -----
    Switches are ``"leaf{i}"`` (global index), ``"spine{j}"`` (two tiers) or
    ``"spine{p}.{j}"`` (pod ``p``, three tiers) and ``"core{j}.{m}"`` (core ``m`` of group
    ``j``, joined to spine ``j`` of every pod). Leaves sit one layer above the highest attachment
    point. In three tiers, leaves, spines and attachment points
    get ``pod``.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> gpus = [b.gpu(f"g{i}") for i in range(4)]
    >>> add_clos(b, gpus, clos_plan("demo", 4, 4, 2, 1.0), 400.0, "400g")
    ['leaf0', 'leaf1']
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
        leaf = b.switch(f"leaf{i}", base + 1, radix, switch_model, **pod)
        leaves.append(leaf)
        for a in (attach[j] for j in plan.leaf_endpoints(i)):
            if three:
                b.set_attrs(a, pod=pod["pod"])
            b.link(a, leaf, link_gbps, "gpu-leaf", tech)
    if plan.tiers == 1:
        return leaves
    if not three:
        spines = [b.switch(f"spine{j}", base + 2, spine_radix, switch_model)
                  for j in range(plan.spines)]
        wire_complete_bipartite(b, leaves, spines, link_gbps, "leaf-spine", tech,
                                plan.leaf_spine_links)
        return leaves
    cores = [[b.switch(f"core{j}.{m}", base + 3, core_radix, switch_model)
              for m in range(plan.cores_per_group)] for j in range(plan.spines)]
    for p in range(plan.pods):
        spines = [b.switch(f"spine{p}.{j}", base + 2, spine_radix, switch_model,
                           pod=p)
                  for j in range(plan.spines)]
        pod_leaves = leaves[p * plan.leaves_per_pod:(p + 1) * plan.leaves_per_pod]
        wire_complete_bipartite(b, pod_leaves, spines, link_gbps, "leaf-spine", tech,
                                plan.leaf_spine_links)
        for j, spine in enumerate(spines):
            for core in cores[j]:
                b.link(spine, core, link_gbps, "spine-core", tech, links=plan.spine_core_links)
    return leaves


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


@dataclass(frozen=True)
class RailPlan:
    """The sizes of a rail-optimized fabric, as :func:`rail_plan` derives them.

    Attributes
    ----------
    nodes, rails, planes, radix : int
        Servers, GPUs (rails) per server, independent planes, leaf and spine radix.
    down, up : int
        Leaf ports towards GPUs and uplinks cabled towards spines (``up = 0`` without a
        spine; partly filled leaves cable only what they need, :func:`needed_uplinks`).
    leaves_per_rail : int
        ``ceil(nodes / down)`` in each rail and plane; leaf ``i`` of a rail holds nodes
        ``leaf_nodes(i)``: the servers spread evenly, so a leaf may use fewer than ``down``
        ports.
    tiers : int
        Switch tiers built: 1 (leaves only) or 2 (leaves and spines).
    spines : int
        Spines per plane (0 for one tier).
    leaf_spine_links : int
        Parallel links between each leaf and each spine of its plane.
    symmetric : bool
        True when all leaves are alike (the servers divide evenly among a rail's leaves).
    """

    nodes: int
    rails: int
    planes: int
    radix: int
    down: int
    up: int
    leaves_per_rail: int
    tiers: int
    spines: int
    leaf_spine_links: int
    symmetric: bool

    @property
    def leaves(self) -> int:
        """Leaves per plane."""
        return self.rails * self.leaves_per_rail

    def leaf_nodes(self, i: int) -> range:
        """The servers under leaf ``i`` of each rail: the ``nodes`` spread evenly over the
        rail's leaves (counts differ by at most one), as a cabling plan balances them.

        >>> p = rail_plan("rail_optimized", 128, 8, 64, True, 2.0)  # 42 down, 4 leaves
        >>> [len(p.leaf_nodes(i)) for i in range(p.leaves_per_rail)]
        [32, 32, 32, 32]
        """
        n, k = self.nodes, self.leaves_per_rail
        return range(i * n // k, (i + 1) * n // k)


def rail_plan(func: str, nodes: int, rails: int, leaf_radix: int, spine: bool,
              oversubscription: float, planes: int = 1) -> RailPlan:
    """Size a rail-optimized fabric; arguments are assumed checked.

    Leaf ports: with a spine ``down = floor(r * s / (1 + s))`` and ``up = r - down``
    (see :func:`split_ports`); without, ``down = r``. Each rail has
    ``ceil(nodes / down)`` leaves, the servers spread evenly over them. A leaf with ``d``
    servers cables ``ceil(d / s)`` to ``up`` uplinks, whichever needs fewest spines
    (:func:`needed_uplinks`). Spines (radix ``r``) join the ``L = rails * leaves_per_rail``
    leaves of a plane: the smallest divisor ``S`` of the uplinks ``u`` with ``S * r >= L * u``,
    each leaf joined to each spine by ``u / S`` links. Two
    tiers reach ``L <= r``, that is at most ``floor(r / rails) * down`` nodes. One leaf per
    plane needs no spine.

    >>> p = rail_plan("rail_optimized", 32, 8, 64, True, 1.0)
    >>> p.leaves, p.spines, p.leaf_spine_links
    (8, 4, 8)
    """
    if spine:
        down, up = split_ports(func, leaf_radix, oversubscription)
        reach = (leaf_radix // rails) * down
        if nodes > reach:
            raise InvalidParameterError(
                f"{func}(): 2 tiers of radix-{leaf_radix} switches reach at most {reach} nodes "
                f"of {rails} GPUs at oversubscription {oversubscription!r} (the leaves of all "
                f"rails share one spine layer; larger sizes need a core tier), "
                f"got nodes={nodes}")
    else:
        down, up = leaf_radix, 0
    per_rail = -(-nodes // down)
    symmetric = nodes % per_rail == 0  # evenly spread servers: all leaves alike
    leaves = rails * per_rail
    if not spine or leaves == 1:
        return RailPlan(nodes, rails, planes, leaf_radix, down, up, per_rail, 1, 0, 0, symmetric)
    # Partly filled leaves cable only the uplinks their servers need at the ratio asked.
    up, spines = needed_uplinks(-(-nodes // per_rail), up, oversubscription, leaves, leaf_radix)
    return RailPlan(nodes, rails, planes, leaf_radix, down, up, per_rail, 2, spines,
                    up // spines, symmetric)


def add_rail_scale_out(b: FabricBuilder, attach: Sequence[Sequence[Hashable]], plan: RailPlan,
                       nic_gbps: float, tech: str, switch_model: str | None = None
                       ) -> list[list[list[Hashable]]]:
    """Wire the rail-optimized switches of ``plan`` below the attachment points ``attach``;
    return the leaves.

    Parameters
    ----------
    b : FabricBuilder
        Holds the attachment points already; switches and links are added to it.
    attach : sequence of sequences of nodes
        ``attach[node][rail]``: the NIC-side node (a GPU, or a NIC) of each server's rail.
    plan : RailPlan
        From :func:`rail_plan`.
    nic_gbps : float
        Rate of each NIC per direction; each of the ``plan.planes`` planes gets
        ``nic_gbps / planes`` per NIC, and leaf-spine links run at that rate too.
    tech, switch_model
        Label of every link, catalog key of every switch.

    Returns
    -------
    list
        ``leaves[plane][rail][i]``: leaf ``i`` of a rail holds the servers
        ``plan.leaf_nodes(i)``.

    Notes
    -----
    Leaves ``"r{rail}.l{i}"`` and spines ``"s{j}"``, preceded by ``"p{plane}."`` when there are
    several planes. Leaves carry ``rail`` and ``plane``, spines ``plane``;
    leaves sit one layer above the highest attachment point, spines one above the leaves.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> attach = [[b.gpu(f"n{n}.g{r}") for r in range(2)] for n in range(2)]
    >>> add_rail_scale_out(b, attach, rail_plan("demo", 2, 2, 4, True, 1.0), 400.0, "400g")
    [[['r0.l0'], ['r1.l0']]]
    >>> sorted(v for v, d in b.nodes.items() if d["role"] == "switch")
    ['r0.l0', 'r1.l0', 's0']
    """
    if len(attach) != plan.nodes or any(len(row) != plan.rails for row in attach):
        raise InvalidParameterError(
            f"add_rail_scale_out(): attach must be {plan.nodes} rows of {plan.rails} nodes")
    base = max(b.nodes[a]["layer"] for row in attach for a in row)
    gbps = nic_gbps / plan.planes
    out = []
    for plane in range(plan.planes):
        name = f"p{plane}." if plan.planes > 1 else ""
        leaves = []
        for rail in range(plan.rails):
            rail_leaves = []
            for i in range(plan.leaves_per_rail):
                leaf = b.switch(f"{name}r{rail}.l{i}", base + 1, plan.radix, switch_model,
                                rail=rail, plane=plane)
                rail_leaves.append(leaf)
                for node in plan.leaf_nodes(i):
                    b.link(attach[node][rail], leaf, gbps, "gpu-leaf", tech)
            leaves.append(rail_leaves)
        if plan.tiers == 2:
            spines = [b.switch(f"{name}s{j}", base + 2, plan.radix, switch_model, plane=plane)
                      for j in range(plan.spines)]
            wire_complete_bipartite(b, [leaf for row in leaves for leaf in row], spines, gbps,
                                    "leaf-spine", tech, plan.leaf_spine_links)
        out.append(leaves)
    return out
