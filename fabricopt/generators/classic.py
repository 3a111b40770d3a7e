"""Classic topologies used for validation and comparison.

Direct networks (ring, torus, hypercube, complete graph): every node is an endpoint that also
forwards traffic, so nodes have role ``"gpu"`` and layer 0, and links have tier ``"ring"``,
``"torus"``, ``"hypercube"`` or ``"complete"``. Capacities default to 1 Gb/s per direction so
results read in the unit-capacity convention of ``docs/throughput.md#units-and-conventions``.

Switched networks from the literature (dragonfly, jellyfish): GPUs hang off layer-1 switches
over ``"gpu-leaf"`` links, and links default to 400 Gb/s.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import networkx as nx

from .._checks import (
    as_rng,
    check_int,
    check_int_sequence,
    check_label,
    check_positive,
    check_size,
    fail,
)
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ._builder import FabricBuilder, default_tech, defaults_of, with_options


def _torus_name(coords: Sequence[int]) -> str:
    return "n" + ".".join(str(c) for c in coords)


def torus(dims: Sequence[int], link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """A torus (wrap-around mesh) with the given size in each dimension.

    Parameters
    ----------
    dims : sequence of int
        Size of each dimension, every size >= 2.
    link_gbps : float
        Capacity of every link per direction (Gb/s).
    tech : str
        Technology label of the links.

    Returns
    -------
    Fabric
        ``N = prod(dims)`` endpoints. A dimension of size ``k >= 3`` gives each node two
        neighbours in it and ``N`` links; size 2 gives one neighbour and ``N / 2`` links (the
        two wrap-around links would join the same pair, so there is just one).

    Notes
    -----
    Nodes are named ``"n{c0}.{c1}..."`` by coordinates. Translations, reflections of each
    dimension and permutations of dimensions of equal size are automorphisms; they act
    transitively on the nodes, and their arc orbits are "all arcs along dimensions of size
    k", one orbit per distinct size. The fabric carries that symmetry claim (a large group
    keeps the symmetric flow LP small).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.torus((4, 4))
    >>> len(fab.endpoints), fab.graph.number_of_edges() // 2
    (16, 32)
    """
    func = "torus"
    dims = check_int_sequence(func, "dims", dims, minimum=2)
    nodes = 1
    for k in dims:
        nodes *= k
        check_size(func, nodes, nodes)  # checked as it grows: a product can be astronomic
    check_size(func, nodes, nodes * len(dims))
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    tech = check_label(func, "tech", tech, optional=False)
    b = FabricBuilder(with_options(f"torus({', '.join(map(str, dims))})" if len(dims) > 1
                                   else f"ring({dims[0]})", {"link_gbps": link_gbps,
                                   "tech": tech}, defaults_of(torus)),
                      {"dims": list(dims), "link_gbps": link_gbps})
    for coords in itertools.product(*(range(k) for k in dims)):
        b.gpu(_torus_name(coords), coords=list(coords))
    tier = "torus" if len(dims) > 1 else "ring"
    for coords in itertools.product(*(range(k) for k in dims)):
        for d, k in enumerate(dims):
            nxt = list(coords)
            nxt[d] = (coords[d] + 1) % k
            if k == 2 and coords[d] == 1:
                continue  # the pair was joined from coordinate 0
            b.link(_torus_name(coords), _torus_name(nxt), link_gbps, tier, tech,
                   orbit=(f"k{k}", f"k{k}"))
    return b.build(symmetric=True, group="translations, reflections, equal-size dimension "
                   "permutations")


def ring(n: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """A ring of ``n`` nodes: the one-dimensional torus ``torus((n,))``.

    Nodes are ``"n0" .. "n{n-1}"``; ``n`` links (one for ``n == 2``).

    >>> import fabricopt as fo
    >>> fab = fo.ring(8)
    >>> len(fab.endpoints), fab.graph.number_of_edges()
    (8, 16)
    """
    n = check_int("ring", "n", n, minimum=2)
    check_size("ring", n, n)
    link_gbps = check_positive("ring", "link_gbps", link_gbps)
    tech = check_label("ring", "tech", tech, optional=False)
    fab = torus((n,), link_gbps=link_gbps, tech=tech)
    fab.params = {"n": n, "link_gbps": link_gbps}
    return fab


def hypercube(d: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """The ``d``-dimensional hypercube: ``2**d`` nodes, ``d * 2**(d-1)`` links.

    Node ``"n{i}"`` joins ``"n{i ^ 2**b}"`` for every bit ``b``. XOR translations and
    permutations of the bits act transitively on the nodes and on the arcs (one orbit).

    >>> import fabricopt as fo
    >>> fab = fo.hypercube(3)
    >>> len(fab.endpoints), fab.graph.number_of_edges() // 2
    (8, 12)
    """
    d = check_int("hypercube", "d", d, minimum=1)
    if d > 64:  # 2**d itself takes minutes for an absurd d; check_size speaks for the rest
        raise fail("hypercube", "d", "at most 64 (and 2**d nodes within the size limit)", d)
    check_size("hypercube", 2**d, d * 2 ** max(d - 1, 0))
    link_gbps = check_positive("hypercube", "link_gbps", link_gbps)
    tech = check_label("hypercube", "tech", tech, optional=False)
    b = FabricBuilder(with_options(f"hypercube({d})", {"link_gbps": link_gbps,
                      "tech": tech}, defaults_of(hypercube)), {"d": d, "link_gbps": link_gbps})
    for i in range(2**d):
        b.gpu(f"n{i}")
    for i in range(2**d):
        for bit in range(d):
            j = i ^ (1 << bit)
            if i < j:
                b.link(f"n{i}", f"n{j}", link_gbps, "hypercube", tech,
                       orbit=("all", "all"))
    return b.build(symmetric=True, group="bit flips and bit permutations")


def complete(n: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """The complete graph ``K_n``: every pair of the ``n`` nodes joined by one link.

    ``n * (n - 1) / 2`` links; nodes ``"n0" .. "n{n-1}"``; all arcs form one orbit of the
    symmetric group.

    >>> import fabricopt as fo
    >>> fo.complete(6).graph.number_of_edges() // 2
    15
    """
    n = check_int("complete", "n", n, minimum=2)
    check_size("complete", n, n * (n - 1) // 2)
    link_gbps = check_positive("complete", "link_gbps", link_gbps)
    tech = check_label("complete", "tech", tech, optional=False)
    b = FabricBuilder(with_options(f"complete({n})", {"link_gbps": link_gbps,
                      "tech": tech}, defaults_of(complete)), {"n": n, "link_gbps": link_gbps})
    for i in range(n):
        b.gpu(f"n{i}")
    for i, j in itertools.combinations(range(n), 2):
        b.link(f"n{i}", f"n{j}", link_gbps, "complete", tech, orbit=("all", "all"))
    return b.build(symmetric=True, group="all permutations")


def dragonfly(a: int, h: int, p: int, link_gbps: float = 400.0, global_gbps: float | None = None,
              tech: str | None = None, switch_model: str | None = None) -> Fabric:
    """The dragonfly of Kim, Dally, Scott and Abts (ISCA 2008) at its largest size.

    Groups of ``a`` routers; the routers of a group are fully connected by local links; each
    router serves ``p`` GPUs and has ``h`` global links. With ``g = a * h + 1`` groups every
    pair of groups is joined by exactly one global link.

    Parameters
    ----------
    a : int
        Routers per group, >= 1.
    h : int
        Global links per router, >= 1.
    p : int
        GPUs (endpoints) per router, >= 1.
    link_gbps : float
        Capacity per direction (Gb/s) of every GPU and local link.
    global_gbps : float, optional
        Capacity per direction (Gb/s) of every global link; ``link_gbps`` by default.
    tech : str, optional
        Technology label of every link; by default ``"{rate}g"`` from each link's rate.
    switch_model : str, optional
        Catalog key of the routers; None lets the cost module pick one by radix and rate.

    Returns
    -------
    Fabric
        ``a * p * g`` GPUs and ``a * g`` routers (layer 1, radix ``p + a - 1 + h``); links:
        ``a * p * g`` of tier ``"gpu-leaf"``, ``g * a * (a - 1) / 2`` of tier ``"local"`` and
        ``g * (g - 1) / 2 = a * h * g / 2`` of tier ``"global"``.

    Notes
    -----
    Nodes: router ``r`` of group ``i`` is ``"r{i}.{r}"``; its GPUs are ``"e{i}.{r}.{e}"`` for
    ``e < p``. Every node carries ``group`` (``i``); routers carry ``model`` =
    ``switch_model``.

    Global wiring: the *palm-tree* arrangement (Camarero, Vallejo, Beivide, "Topological
    Characterization of Hamming and Dragonfly Networks and Its Implications on Routing", ACM
    TACO 11(4), 2014). Global port ``k`` of router ``r`` in group ``i`` has index
    ``j = r * h + k`` and joins group ``(i - j - 1) mod g`` at router ``a - 1 - r``, port
    ``h - 1 - k``. Group ``i`` thus reaches groups ``i - 1, ..., i - a * h``, i.e. every other
    group once, and the rotation ``i -> i + 1`` of all groups is an automorphism. The
    absolute ("consecutive") arrangement, where group ``i`` wires its ports to the other
    groups in increasing order, is in general not invariant under that rotation.

    Symmetry is claimed only where a group acting transitively on the GPUs is known:

    - ``a == 1`` or ``h == 1``: router ``r`` of group ``i`` is the ordered pair
      ``(i, i - r - 1)``, its global link joins ``(i, t)`` to ``(t, i)`` and local links join
      pairs with the same first element, so every permutation of the ``g`` groups is an
      automorphism. Arc orbits: GPU up, GPU down, local, global.
    - ``a == 2``: router 0 of group ``i`` joins router 1 of groups ``i - d``, ``d = 1..h``.
      The rotations and the reflection ``(i, r) -> (-i, 1 - r)`` are automorphisms and act
      transitively on routers. Arc orbits: GPU up, GPU down, local, and one orbit per
      ``d`` holding both directions of the global links of that offset.

    With GPU permutations at each router these groups are transitive on the GPUs. For
    ``a >= 3`` and ``h >= 2`` the palm tree is not transitive on the routers of a group (for
    ``a = 4, h = 2`` no automorphism maps router 0 of a group to router 1), so no symmetry is
    claimed there.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.dragonfly(a=4, h=2, p=2)
    >>> len(fab.endpoints), len(fab.switches)
    (72, 36)
    >>> sorted(fab.summary().links_by_tier.items())
    [('global', 36), ('gpu-leaf', 72), ('local', 54)]
    """
    func = "dragonfly"
    a = check_int(func, "a", a, minimum=1)
    h = check_int(func, "h", h, minimum=1)
    p = check_int(func, "p", p, minimum=1)
    routers = a * (a * h + 1)
    check_size(func, routers * (p + 1), routers * (p + h) + routers * (a - 1) // 2)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    given_global = global_gbps
    global_gbps = (link_gbps if global_gbps is None
                   else check_positive(func, "global_gbps", global_gbps))
    tech = check_label(func, "tech", tech)
    switch_model = check_label(func, "switch_model", switch_model)

    g = a * h + 1
    local_tech = tech or default_tech(link_gbps)
    global_tech = tech or default_tech(global_gbps)
    b = FabricBuilder(with_options(f"dragonfly(a={a}, h={h}, p={p})", {
                      "link_gbps": link_gbps, "global_gbps": given_global, "tech": tech,
                      "switch_model": switch_model}, defaults_of(dragonfly)),
                      {"a": a, "h": h, "p": p, "link_gbps": link_gbps,
                       "global_gbps": global_gbps, "tech": tech, "switch_model": switch_model})
    for i in range(g):
        for r in range(a):
            router = b.switch(f"r{i}.{r}", 1, p + a - 1 + h, switch_model, group=i)
            for e in range(p):
                gpu = b.gpu(f"e{i}.{r}.{e}", group=i)
                b.link(gpu, router, link_gbps, "gpu-leaf", local_tech)
    for i in range(g):
        for r, s in itertools.combinations(range(a), 2):
            b.link(f"r{i}.{r}", f"r{i}.{s}", link_gbps, "local", local_tech,
                   orbit=("local", "local"))
    for i in range(g):
        for r in range(a):
            for k in range(h):
                offset = r * h + k + 1
                j, s = (i - offset) % g, a - 1 - r
                if (j, s) < (i, r):
                    continue  # the link was added from its other end
                # For a == 2, router 0 sees offset d and router 1 sees g - d: name by the first.
                label = "global" if a == 1 or h == 1 else f"global:d{min(offset, g - offset)}"
                b.link(f"r{i}.{r}", f"r{j}.{s}", global_gbps, "global", global_tech,
                       orbit=(label, label))
    if a == 1 or h == 1:
        return b.build(symmetric=True, group="group permutations, GPU permutations per router")
    if a == 2:
        return b.build(symmetric=True,
                       group="group rotations and reflection, GPU permutations per router")
    return b.build()


#: Random draws tried before jellyfish() gives up on a connected graph; only two switch-switch
#: ports per switch (a union of cycles) ever needs more than a few.
_JELLYFISH_DRAWS = 1000


def jellyfish(switches: int, network_ports: int, endpoints_per_switch: int, seed: Any = None,
              link_gbps: float = 400.0, tech: str | None = None,
              switch_model: str | None = None) -> Fabric:
    """A Jellyfish network (Singla, Hong, Popa, Godfrey, NSDI 2012): a random regular graph.

    Parameters
    ----------
    switches : int
        Number of switches, >= 2.
    network_ports : int
        Switch-to-switch links per switch (the degree of the random graph), between 1 and
        ``switches - 1``; ``switches * network_ports`` must be even.
    endpoints_per_switch : int
        GPUs attached to each switch, >= 1.
    seed : None, int or numpy.random.Generator
        Source of randomness; the same integer seed gives the same graph.
    link_gbps : float
        Capacity per direction (Gb/s) of every link.
    tech : str, optional
        Technology label of every link; ``"{link_gbps}g"`` by default.
    switch_model : str, optional
        Catalog key of the switches; None lets the cost module pick one by radix and rate.

    Returns
    -------
    Fabric
        ``switches * endpoints_per_switch`` GPUs, ``switches`` switches (layer 1, radix
        ``network_ports + endpoints_per_switch``); links: one ``"gpu-leaf"`` per GPU and
        ``switches * network_ports / 2`` of tier ``"switch-switch"``.

    Notes
    -----
    Nodes: switches ``"s{i}"``, their GPUs ``"e{i}.{e}"`` for ``e < endpoints_per_switch``.

    The switch graph is :func:`networkx.random_regular_graph` with integer seeds drawn from
    ``seed``; draws are repeated until the graph is connected, so the result is a random
    regular graph conditioned on connectivity. For three or more network ports the first draw
    is almost always connected; with two the graph must be a single cycle, which takes more
    draws. No symmetry is claimed: a random graph has, in general, no automorphisms.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.jellyfish(switches=64, network_ports=6, endpoints_per_switch=2, seed=1)
    >>> len(fab.endpoints), fab.summary().links_by_tier["switch-switch"]
    (128, 192)
    """
    func = "jellyfish"
    switches = check_int(func, "switches", switches, minimum=2)
    network_ports = check_int(func, "network_ports", network_ports, minimum=1,
                              maximum=switches - 1)
    endpoints_per_switch = check_int(func, "endpoints_per_switch", endpoints_per_switch,
                                     minimum=1)
    check_size(func, switches * (1 + endpoints_per_switch),
               switches * (endpoints_per_switch + network_ports // 2 + 1))
    if switches * network_ports % 2:
        raise InvalidParameterError(
            f"{func}(): switches * network_ports must be even (every link uses two ports), "
            f"got {switches} * {network_ports} = {switches * network_ports}")
    if network_ports == 1 and switches > 2:
        raise InvalidParameterError(
            f"{func}(): network_ports must be >= 2 when switches > 2 (one port per switch "
            f"only pairs switches up and never connects them all), got {network_ports}")
    try:
        rng = as_rng(seed)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{func}(): {exc}") from None
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    tech = check_label(func, "tech", tech)
    switch_model = check_label(func, "switch_model", switch_model)

    graph = None
    for _ in range(_JELLYFISH_DRAWS):
        draw = nx.random_regular_graph(network_ports, switches, seed=int(rng.integers(2**32)))
        if nx.is_connected(draw):
            graph = draw
            break
    if graph is None:
        raise InvalidParameterError(
            f"{func}(): no connected {network_ports}-regular graph on {switches} switches in "
            f"{_JELLYFISH_DRAWS} random draws; use network_ports >= 3")

    link_tech = tech or default_tech(link_gbps)
    b = FabricBuilder(with_options(
        f"jellyfish({switches}, {network_ports}, {endpoints_per_switch})", {
            "seed": seed if seed is None or isinstance(seed, int) else "generator",
            "link_gbps": link_gbps, "tech": tech, "switch_model": switch_model},
        defaults_of(jellyfish)),
                      {"switches": switches, "network_ports": network_ports,
                       "endpoints_per_switch": endpoints_per_switch,
                       "seed": seed if seed is None or isinstance(seed, int) else repr(seed),
                       "link_gbps": link_gbps, "tech": tech, "switch_model": switch_model})
    for i in range(switches):
        switch = b.switch(f"s{i}", 1, network_ports + endpoints_per_switch, switch_model)
        for e in range(endpoints_per_switch):
            b.link(b.gpu(f"e{i}.{e}"), switch, link_gbps, "gpu-leaf", link_tech)
    for u, v in sorted(tuple(sorted(edge)) for edge in graph.edges()):
        b.link(f"s{u}", f"s{v}", link_gbps, "switch-switch", link_tech)
    return b.build()
