"""Rail-optimized and rail-only scale-out fabrics, single- or multi-plane.

In a rail-optimized fabric GPU ``i`` of every server ("node") connects to a leaf switch of rail
``i``, so GPUs of the same index are one switch apart; NVIDIA's DGX SuperPOD compute fabric is
built this way (``docs/hardware.md#dgx-superpod``, NVIDIA "InfiniBand Cluster Bring-up
Procedure"). Dropping the spine leaves a rail-only fabric (Wang, Ghobadi et al., "How to
Build Low-cost Networks for Large Language Models (without Sacrificing Performance)",
arXiv:2307.12169), where rails meet only inside servers and each rail is a leaf, or a folded
Clos of its own when its servers outnumber a leaf's ports. Splitting each NIC over independent
planes follows Alibaba HPN (SIGCOMM 2024, DOI 10.1145/3651890.3672265).

Sizing (:func:`~fabricopt.generators.wiring.rail_plan`) and wiring
(:func:`~fabricopt.generators.wiring.add_rail_scale_out`) live in a module of their own, which
works on any builder given the NIC-side attachment point of each (node, rail): a cluster
reuses it below the GPUs of its scale-up domains.
"""

from __future__ import annotations

from typing import Any

from .._checks import (
    check_bool,
    check_choice,
    check_int,
    check_label,
    check_positive,
    check_radix,
    check_size,
)
from ..fabric import Fabric
from ._builder import FabricBuilder, default_tech, defaults_of, with_options
from .cluster import build_cluster, check_domain_size, ratio_shown, read_domain
from .wiring import add_rail_scale_out, rail_plan


def rail_optimized(nodes: int, gpus_per_node: int = 8, leaf_radix: int = 64, spine: bool = True,
                   oversubscription: float = 1.0, planes: int = 1, nic_gbps: float = 400,
                   scale_up: Any = None, tiers: int | None = None, tech: str | None = None,
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
        False: rail-only, rails never meet in the network: a rail is one leaf, every port
        towards GPUs, while ``nodes <= leaf_radix``, else a folded Clos of its own (leaves,
        spines and if need be cores of that rail only; see Notes).
    oversubscription : float
        Leaf down:up port ratio ``s`` > 0 wherever leaves have uplinks (with a spine, or a
        rail-only rail of several leaves); ignored for one leaf per rail. A leaf holding
        ``d`` servers takes ``ceil(d / s)`` uplinks, its other ports idle.
    planes : int
        Independent copies of the network; each NIC splits ``nic_gbps`` evenly over them.
    nic_gbps : float
        NIC rate per GPU per direction (Gb/s), summed over planes.
    scale_up : Fabric, optional
        A scale-up domain per server (e.g. ``fo.dgx_h100()``) with ``gpus_per_node`` GPUs:
        the result is then ``fo.cluster(scale_up, nodes, "rail_optimized", ...)`` with these
        arguments, NVLink and network links in one fabric (see :func:`~fabricopt.cluster`).
    tiers : {None, 2, 3}
        Switch tiers: 2 (rail leaves and spines), 3 (rail leaves, pods of spines, a core),
        or None for the fewest that reach the size; without a spine, the tiers of each
        rail's own Clos.
    tech : str, optional
        Link technology label (default from the per-plane rate, e.g. ``"400g"``).
    switch_model : str, optional
        Catalog key of the switches.

    Returns
    -------
    Fabric
        ``nodes * gpus_per_node`` GPUs; sizes as in
        :func:`~fabricopt.generators.wiring.rail_plan`.

    Raises
    ------
    InvalidParameterError
        On a bad argument, a ``scale_up`` whose GPU count is not ``gpus_per_node``, when
        or when the size does not fit the tiers (the message gives the largest node count
        that does).

    Notes
    -----
    GPUs are ``"n{node}.g{rail}"`` with attributes ``node`` and ``rail``; switches as in
    :func:`~fabricopt.generators.wiring.add_rail_scale_out`. Tiers ``"gpu-leaf"`` and
    ``"leaf-spine"`` (and ``"spine-core"`` in three tiers). ``params["oversubscription_built"]``
    is the leaf ratio built (the fullest leaf's servers over its uplinks). The GPUs of a
    server are not linked to each other here, so without a spine there is no path between
    rails: that is the rail-only fabric alone, to be joined by scale-up domains in a cluster
    (``scale_up``); collectives over GPUs of several rails report it (``busbw_GBps`` 0 with
    the pair that cannot meet). Rail-only with more nodes than ``leaf_radix`` builds each
    rail as the folded Clos :func:`~fabricopt.clos` would build for ``nodes`` endpoints
    (``leaf_radix``-port switches at ratio ``oversubscription``), as "How to Build Low-cost
    Networks for Large Language Models (without Sacrificing Performance)" (Wang, Ghobadi et
    al.) builds it: every switch is a catalogue part whatever the node count, and each
    rail's spines (``"r{rail}.s{j}"``) and cores (``"r{rail}.c{j}.{m}"``) serve that rail
    only. The fabric claims symmetry (rail, leaf, spine, plane and GPU permutations; one
    arc orbit per tier and direction) when all leaves are alike: servers are spread evenly
    over each rail's ``ceil(nodes / down)`` leaves, so this holds whenever that count
    divides ``nodes`` (and, in three tiers, pods are full).

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

    Rail-only at 2,048 nodes (16,384 GPUs) of 64-port switches: each rail a two-tier Clos of
    64 leaves (32 servers down, 32 up) and 32 spines, 8 x 96 = 768 switches in all.

    >>> fo.rail_optimized(nodes=2048, spine=False).summary().nodes_by_layer
    {0: 16384, 1: 512, 2: 256}
    """
    func = "rail_optimized"
    nodes = check_int(func, "nodes", nodes, minimum=1)
    gpus_per_node = check_int(func, "gpus_per_node", gpus_per_node, minimum=1)
    leaf_radix = check_radix(func, "leaf_radix", leaf_radix)
    spine = check_bool(func, "spine", spine)
    if tiers is not None:
        tiers = check_choice(func, "tiers", tiers, (2, 3))
    oversubscription = check_positive(func, "oversubscription", oversubscription)
    planes = check_int(func, "planes", planes, minimum=1)
    nic_gbps = check_positive(func, "nic_gbps", nic_gbps)
    tech = check_label(func, "tech", tech) or default_tech(nic_gbps / planes)
    switch_model = check_label(func, "switch_model", switch_model)
    # At least one leaf per plane, and every GPU has a link in every plane.
    check_size(func, nodes * gpus_per_node + planes, nodes * gpus_per_node * planes)
    if scale_up is not None:
        check_domain_size(func, read_domain(func, scale_up), gpus_per_node)
        return build_cluster(func, scale_up, nodes, "rail_optimized", nic_gbps, None, {
            "leaf_radix": leaf_radix, "spine": spine, "oversubscription": oversubscription,
            "planes": planes, "tiers": tiers, "tech": tech, "switch_model": switch_model})
    plan = rail_plan(func, nodes, gpus_per_node, leaf_radix, spine, oversubscription, planes,
                     tiers)

    params = {"nodes": nodes, "gpus_per_node": gpus_per_node, "leaf_radix": leaf_radix,
              "spine": spine, "oversubscription": oversubscription, "planes": planes,
              "nic_gbps": nic_gbps, "scale_up": None, "tiers": tiers, "tech": tech,
              "switch_model": switch_model}
    if plan.tiers > 1:
        params["oversubscription_built"] = plan.ratio_built
    if tiers is not None and plan.tiers != tiers:  # a tier above one switch is not built
        params["tiers_built"] = plan.tiers
    kind = "rail_optimized" if spine else "rail_only"
    name = (f"{kind}({nodes}x{gpus_per_node}" + (f", {planes} planes" if planes > 1 else "")
            + (ratio_shown(oversubscription) if plan.tiers > 1 else "") + ")")
    b = FabricBuilder(with_options(name, {
        "leaf_radix": leaf_radix, "nic_gbps": nic_gbps, "tiers": tiers, "tech": tech,
        "switch_model": switch_model}, {**defaults_of(rail_optimized),
                                        "tech": default_tech(nic_gbps / planes)}), params)
    attach = [[b.gpu(f"n{n}.g{r}", node=n, rail=r) for r in range(gpus_per_node)]
              for n in range(nodes)]
    add_rail_scale_out(b, attach, plan, nic_gbps, tech, switch_model)
    return b.build(symmetric=plan.symmetric,
                   group="rail, leaf, spine, plane and GPU permutations")
