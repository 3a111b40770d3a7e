"""Rail-optimized and rail-only scale-out fabrics, single- or multi-plane.

In a rail-optimized fabric GPU ``i`` of every server ("node") connects to a leaf switch of rail
``i``, so GPUs of the same index are one switch apart; NVIDIA's DGX SuperPOD compute fabric is
built this way (``docs/hardware.md#dgx-superpod``, NVIDIA "InfiniBand Cluster Bring-up
Procedure"). Dropping the spine leaves a rail-only fabric (Wang, Ghobadi et al.,
arXiv:2307.12169), where rails meet only inside servers. Splitting each NIC over independent
planes follows Alibaba HPN (SIGCOMM 2024, DOI 10.1145/3651890.3672265).

Sizing lives in :func:`rail_plan` and wiring in :func:`add_rail_scale_out`, which works on any
builder given the NIC-side attachment point of each (node, rail): a cluster builder reuses it
below the GPUs of its scale-up domains.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import check_bool, check_int, check_positive
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ._builder import FabricBuilder, default_tech
from .clos import check_label, smallest_divisor_at_least, split_ports, wire_complete_bipartite


@dataclass(frozen=True)
class RailPlan:
    """The sizes of a rail-optimized fabric, as :func:`rail_plan` derives them.

    Attributes
    ----------
    nodes, rails, planes, radix : int
        Servers, GPUs (rails) per server, independent planes, leaf and spine radix.
    down, up : int
        Leaf ports towards GPUs and towards spines (``up = 0`` without a spine).
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

    @property
    def switches(self) -> int:
        """Total switch count over all planes."""
        return self.planes * (self.leaves + self.spines)


def rail_plan(func: str, nodes: int, rails: int, leaf_radix: int, spine: bool,
              oversubscription: float, planes: int = 1) -> RailPlan:
    """Size a rail-optimized fabric; arguments are assumed checked.

    Leaf ports: with a spine ``down = floor(r * s / (1 + s))`` and ``up = r - down``
    (see :func:`~fabricopt.generators.clos.split_ports`); without, ``down = r``. Each rail has
    ``ceil(nodes / down)`` leaves, the servers spread evenly over them. Spines (radix ``r``)
    join the ``L = rails * leaves_per_rail`` leaves of a plane: the smallest divisor ``S`` of
    ``up`` with ``S * r >= L * up``, each leaf joined to each spine by ``up / S`` links. Two
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
    spines = smallest_divisor_at_least(up, leaves * up / leaf_radix)
    return RailPlan(nodes, rails, planes, leaf_radix, down, up, per_rail, 2, spines,
                    up // spines, symmetric)


def add_rail_scale_out(b: FabricBuilder, attach: Sequence[Sequence[Hashable]], plan: RailPlan,
                       nic_gbps: float, tech: str, switch_model: str | None = None,
                       prefix: str = "") -> None:
    """Wire the rail-optimized switches of ``plan`` below the attachment points ``attach``.

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
    prefix : str
        Prepended to switch names.

    Notes
    -----
    Leaves ``"r{rail}.l{i}"`` and spines ``"s{j}"``, preceded by ``"p{plane}."`` when there are
    several planes and by ``prefix``. Leaves carry ``rail`` and ``plane``, spines ``plane``;
    leaves sit one layer above the highest attachment point, spines one above the leaves.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> attach = [[b.gpu(f"n{n}.g{r}") for r in range(2)] for n in range(2)]
    >>> add_rail_scale_out(b, attach, rail_plan("demo", 2, 2, 4, True, 1.0), 400.0, "400g")
    >>> sorted(v for v, d in b.nodes.items() if d["role"] == "switch")
    ['r0.l0', 'r1.l0', 's0']
    """
    if len(attach) != plan.nodes or any(len(row) != plan.rails for row in attach):
        raise InvalidParameterError(
            f"add_rail_scale_out(): attach must be {plan.nodes} rows of {plan.rails} nodes")
    base = max(b.nodes[a]["layer"] for row in attach for a in row)
    gbps = nic_gbps / plan.planes
    for plane in range(plan.planes):
        name = f"{prefix}p{plane}." if plan.planes > 1 else prefix
        leaves = []
        for rail in range(plan.rails):
            for i in range(plan.leaves_per_rail):
                leaf = b.switch(f"{name}r{rail}.l{i}", base + 1, plan.radix, switch_model,
                                rail=rail, plane=plane)
                leaves.append(leaf)
                for node in plan.leaf_nodes(i):
                    b.link(attach[node][rail], leaf, gbps, "gpu-leaf", tech)
        if plan.tiers == 2:
            spines = [b.switch(f"{name}s{j}", base + 2, plan.radix, switch_model, plane=plane)
                      for j in range(plan.spines)]
            wire_complete_bipartite(b, leaves, spines, gbps, "leaf-spine", tech,
                                    plan.leaf_spine_links)


def rail_optimized(nodes: int, gpus_per_node: int = 8, leaf_radix: int = 64, spine: bool = True,
                   oversubscription: float = 1.0, planes: int = 1, nic_gbps: float = 400,
                   scale_up: Any = None, tech: str | None = None,
                   switch_model: str | None = None) -> Fabric:
    """A rail-optimized (or rail-only) scale-out fabric for ``nodes`` multi-GPU servers.

    Parameters
    ----------
    nodes : int
        Servers, >= 1.
    gpus_per_node : int
        GPUs per server, one NIC and one rail each (8 for DGX H100,
        ``docs/hardware.md#dgx-superpod``).
    leaf_radix : int
        Ports per leaf and per spine switch at the per-plane link rate, >= 2.
    spine : bool
        True: a spine layer joins the leaves of all rails (two-tier rail-optimized fat-tree).
        False: rail-only, leaves use all ports for GPUs and rails never meet in the network.
    oversubscription : float
        Leaf down:up port ratio (> 0) when ``spine`` is True; ignored without a spine.
    planes : int
        Independent copies of the network; each NIC splits ``nic_gbps`` evenly over them.
    nic_gbps : float
        NIC rate per GPU per direction (Gb/s), summed over planes.
    scale_up : Fabric, optional
        A scale-up domain per server (e.g. ``fo.dgx_h100()``) with ``gpus_per_node`` GPUs:
        the result is then ``fo.cluster(scale_up, nodes, "rail_optimized", ...)`` with these
        arguments, NVLink and network links in one fabric (see :func:`~fabricopt.cluster`).
    tech : str, optional
        Link technology label (default from the per-plane rate, e.g. ``"400g"``).
    switch_model : str, optional
        Catalog key of the switches.

    Returns
    -------
    Fabric
        ``nodes * gpus_per_node`` GPUs; sizes as in :func:`rail_plan`.

    Raises
    ------
    InvalidParameterError
        On a bad argument, a ``scale_up`` whose GPU count is not ``gpus_per_node``, or when
        the size does not fit two tiers (the message gives the largest node count that does).

    Notes
    -----
    GPUs are ``"n{node}.g{rail}"`` with attributes ``node`` and ``rail``; switches as in
    :func:`add_rail_scale_out`. Tiers ``"gpu-leaf"`` and ``"leaf-spine"``. The GPUs of a
    server are not linked to each other here, so without a spine there is no path between
    rails (nor between leaves of one rail): that is the rail-only fabric alone, to be joined
    by scale-up domains in a cluster. The fabric claims symmetry (rail, leaf, spine, plane and
    GPU permutations; one arc orbit per tier and direction) when all leaves are alike: servers
    are spread evenly over each rail's ``ceil(nodes / down)`` leaves, so this holds whenever
    that count divides ``nodes``.

    With the default 64-port leaves at 1:1 and 8 GPUs per node this reproduces the NVIDIA
    SuperPOD two-tier table (``docs/hardware.md#dgx-superpod``): 64 nodes give 16 leaves and
    8 spines, 256 nodes 64 leaves and 32 spines.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.rail_optimized(nodes=32)   # one 32-port-down leaf per rail, 4 spines
    >>> fab.summary().nodes_by_layer
    {0: 256, 1: 8, 2: 4}
    >>> fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, planes=2).graph.number_of_nodes()
    20
    """
    func = "rail_optimized"
    nodes = check_int(func, "nodes", nodes, minimum=1)
    gpus_per_node = check_int(func, "gpus_per_node", gpus_per_node, minimum=1)
    leaf_radix = check_int(func, "leaf_radix", leaf_radix, minimum=2)
    spine = check_bool(func, "spine", spine)
    oversubscription = check_positive(func, "oversubscription", oversubscription)
    planes = check_int(func, "planes", planes, minimum=1)
    nic_gbps = check_positive(func, "nic_gbps", nic_gbps)
    tech = check_label(func, "tech", tech) or default_tech(nic_gbps / planes)
    switch_model = check_label(func, "switch_model", switch_model)
    if scale_up is not None:
        # Imported here: the cluster module builds on this one.
        from .cluster import check_domain_size, cluster, read_domain

        check_domain_size(func, read_domain(func, scale_up), gpus_per_node)
        return cluster(scale_up, nodes, "rail_optimized", nic_gbps, leaf_radix=leaf_radix,
                       spine=spine, oversubscription=oversubscription, planes=planes,
                       tech=tech, switch_model=switch_model)
    plan = rail_plan(func, nodes, gpus_per_node, leaf_radix, spine, oversubscription, planes)

    params = {"nodes": nodes, "gpus_per_node": gpus_per_node, "leaf_radix": leaf_radix,
              "spine": spine, "oversubscription": oversubscription, "planes": planes,
              "nic_gbps": nic_gbps, "scale_up": None, "tech": tech,
              "switch_model": switch_model}
    kind = "rail_optimized" if spine else "rail_only"
    b = FabricBuilder(f"{kind}({nodes}x{gpus_per_node}"
                      + (f", {planes} planes)" if planes > 1 else ")"), params)
    attach = [[b.gpu(f"n{n}.g{r}", node=n, rail=r) for r in range(gpus_per_node)]
              for n in range(nodes)]
    add_rail_scale_out(b, attach, plan, nic_gbps, tech, switch_model)
    return b.build(symmetric=plan.symmetric,
                   group="rail, leaf, spine, plane and GPU permutations")
