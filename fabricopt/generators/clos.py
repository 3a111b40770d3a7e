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
the switch radix (:func:`~fabricopt.generators.wiring.clos_plan`) and its wiring
(:func:`~fabricopt.generators.wiring.add_clos`) live in a module of their own, so that a
cluster hangs the same scale-out fabric below GPUs that already sit in scale-up domains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._checks import check_choice, check_int, check_label, check_positive, check_size
from ..fabric import Fabric
from ._builder import FabricBuilder, default_tech, defaults_of, with_options
from .wiring import ClosPlan, add_clos, check_tiers, clos_plan, wire_complete_bipartite


def _tech(func: str, tech: Any, link_gbps: float) -> str:
    return check_label(func, "tech", tech) or default_tech(link_gbps)


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

    * leaf ports: ``down = floor(r * s / (1 + s))`` endpoint ports at most;
      ``L = ceil(E / down)`` leaves, the endpoints spread evenly over them (counts differ by
      at most one, as a cabling plan balances them); every leaf takes ``up = ceil(d / s)``
      uplinks, ``d`` the fullest leaf's endpoints, so the ratio built ``d / up`` is the
      nearest to ``s`` from below (``params["oversubscription_built"]``); other ports stay
      idle.
    * two tiers: ``S = ceil(L * up / r)`` spines, the fewest that take every uplink; leaf
      ``i`` spreads its ``up`` links over them, ``up // S`` to each and one more to ``up % S``
      of them in turn (:func:`~fabricopt.generators.wiring.bundle_links`), so spines differ
      by at most one port. Largest size ``r * down`` (``r`` leaves): 2048 at ``r = 64``, 1:1.
    * three tiers: spine ports ``h = floor(r * s / (1 + s))`` down and
      ``u = min(r - h, ceil(h / s))`` up (``h = u = r // 2`` at 1:1); pods of ``h`` leaves
      and ``up`` spines (one link per leaf and spine); ``P = ceil(L / h)`` pods, the last one
      possibly partly filled. Spine ``j`` of each pod sends ``u`` links to core group ``j``
      of ``C = ceil(P * u / r)`` switches, spread as leaves spread over spines. Largest size
      ``r * h * down``, ``r**3 / 4`` at 1:1 with an even radix (the k-ary fat-tree).
    * A tier above a single switch of the tier below carries no traffic and is not built:
      one leaf is a lone switch, one pod is a two-tier leaf-spine
      (``params["tiers_built"]`` then records the tiers built).

    Nodes: GPUs ``"g{n}"`` (under the leaf ``i`` with ``n`` in
    ``ClosPlan.leaf_endpoints(i)``); switches as in
    :func:`~fabricopt.generators.wiring.add_clos`, each with the radix of
    its tier. The fabric claims symmetry (the arc orbits of pod, leaf, spine, core and GPU
    permutations: one per tier and direction) when all leaves hold as many endpoints (``L``
    divides ``E``), every pod is full and bundles are equal, or there is a single leaf.

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
    if plan.tiers > 1:
        params["oversubscription_built"] = plan.ratio_built
    if plan.tiers != tiers:  # a tier above a single switch is not built: say so
        params["tiers_built"] = plan.tiers
    ratio = ("/".join(f"{x:g}:1" for x in oversubscription)
             if isinstance(oversubscription, tuple) else f"{oversubscription:g}:1")
    shown = "/".join(map(str, radix)) if isinstance(radix, tuple) else radix
    b = FabricBuilder(with_options(
        f"clos({endpoints}, radix={shown}, tiers={tiers}, {ratio})",
        {"link_gbps": link_gbps, "tech": tech, "switch_model": switch_model},
        {**defaults_of(clos), "tech": _tech(func, None, link_gbps)}), params)
    _add_gpus_and_clos(b, plan, link_gbps, tech, switch_model)
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
    check_size(func, k**3 // 4 + 5 * k**2 // 4, 3 * k**3 // 4)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    tech = _tech(func, tech, link_gbps)
    switch_model = check_label(func, "switch_model", switch_model)
    endpoints = k**3 // 4
    plan = clos_plan(func, endpoints, k, 3, 1.0)
    b = FabricBuilder(with_options(
        f"fat_tree(k={k})", {"link_gbps": link_gbps, "tech": tech, "switch_model": switch_model},
        {**defaults_of(fat_tree), "tech": _tech(func, None, link_gbps)}),
        {"k": k, "link_gbps": link_gbps, "tech": tech, "switch_model": switch_model})
    _add_gpus_and_clos(b, plan, link_gbps, tech, switch_model)
    return b.build(symmetric=True,
                   group="pod, edge, host, aggregation-index and core permutations")


def _add_gpus_and_clos(b: FabricBuilder, plan: ClosPlan, link_gbps: float, tech: str,
                       switch_model: str | None) -> None:
    """The GPUs ``"g{n}"`` and the switches and links of ``plan`` above them: the graph of
    ``add_clos(b, [b.gpu(f"g{n}") ...], plan, ...)``, same nodes, arcs, attributes and order,
    made tier by tier in bulk when the plan has three tiers (a 524,288-GPU fat tree has 3.1
    million arcs: one call of the builder per link took most of a quarter of a minute)."""
    if plan.tiers != 3:
        add_clos(b, [b.gpu(f"g{n}") for n in range(plan.endpoints)], plan, link_gbps, tech,
                 switch_model)
        return
    upper, per_pod = plan.upper, plan.leaves_per_pod
    gpus = [f"g{n}" for n in range(plan.endpoints)]
    leaf_of = [i for i in range(plan.leaves) for _ in plan.leaf_endpoints(i)]
    b.add_nodes(gpus, {"role": "gpu", "layer": 0}, {"pod": [i // per_pod for i in leaf_of]})
    def switch(layer: int, radix: int) -> dict[str, Any]:  # FabricBuilder.switch's schema
        return {"role": "switch", "layer": layer, "radix": radix, "model": switch_model,
                "reduce": False}

    leaves = [f"leaf{i}" for i in range(plan.leaves)]
    b.add_nodes(leaves, switch(1, plan.radix), {"pod": [i // per_pod for i in range(plan.leaves)]})
    b.add_links(gpus, [leaves[i] for i in leaf_of], link_gbps, "gpu-leaf", tech)
    cores = [[f"core{j}.{m}" for m in range(upper.cores_per_group)] for j in range(upper.spines)]
    b.add_nodes([c for group in cores for c in group], switch(3, upper.core_radix))
    for p in range(upper.pods):
        spines = [f"spine{p}.{j}" for j in range(upper.spines)]
        b.add_nodes(spines, {**switch(2, upper.spine_radix), "pod": p})
        pod_leaves = leaves[p * per_pod:(p + 1) * per_pod]
        b.add_links([u for u in pod_leaves for _ in spines], spines * len(pod_leaves),
                    link_gbps, "leaf-spine", tech)
        counts = [upper.spine_core_links_of(p, m) for m in range(upper.cores_per_group)]
        bundles = [(spine, core, n) for spine, group in zip(spines, cores, strict=True)
                   for core, n in zip(group, counts, strict=True) if n]
        b.add_links([u for u, _, _ in bundles], [v for _, v, _ in bundles], link_gbps,
                    "spine-core", tech, [n for _, _, n in bundles])


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
    check_size(func, leaves * (per_leaf + 1) + spines, leaves * (per_leaf + spines))
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    links_per_pair = check_int(func, "links_per_pair", links_per_pair, minimum=1)
    tech = _tech(func, tech, link_gbps)
    switch_model = check_label(func, "switch_model", switch_model)
    params = {"leaves": leaves, "spines": spines, "endpoints_per_leaf": per_leaf,
              "link_gbps": link_gbps, "links_per_pair": links_per_pair, "tech": tech,
              "switch_model": switch_model}
    b = FabricBuilder(with_options(
        f"leaf_spine({leaves}x{spines}, {per_leaf} per leaf)",
        {"link_gbps": link_gbps, "links_per_pair": links_per_pair, "tech": tech,
         "switch_model": switch_model},
        {**defaults_of(leaf_spine), "tech": _tech(func, None, link_gbps)}), params)
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
