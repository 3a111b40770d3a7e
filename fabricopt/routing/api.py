"""``routed_flow``: what a fabric carries under the routing it is deployed with."""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from itertools import chain
from operator import methodcaller
from typing import Any

import networkx as nx
import numpy as np

from .._checks import as_rng, check_bool, check_choice, check_int, check_positive
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..flow import max_concurrent_flow
from ..flow.backends import BACKENDS
from ..flow.memory import check_fits, gb, shortfall
from ..graph_arrays import GraphArrays
from ..traffic import Traffic, checked_traffic
from .fluid import FluidRouting, destination_rank
from .hashing import HashedWalk, walk_bytes
from .networks import NETWORK_NAMES, Network, Networks
from .result import RoutedFlowResult
from .uniform import add_uniform

ROUTINGS = ("ecmp", "wcmp", "hash", "static")

#: Pairs of a uniform traffic spelled out at once.
PAIR_BLOCK = 2_000_000

_SPLIT = {"ecmp": "equal", "wcmp": "capacity", "static": "static", "hash": "equal"}


#: Most flows (demand pairs times ``flows_per_pair``) hashed in one trial: each is walked
#: hop by hop in every trial, and 250 million of them take hours. Memory does not grow with
#: them (:mod:`fabricopt.routing.hashing` walks a block at a time).
MAX_ROUTING_ENTRIES = 250_000_000
#: Bytes of the loads kept per arc and trial: what each arc carries and its port-equivalent
#: load, per member link while hashing, and their per-arc reductions (five 8-byte arrays).
LOAD_BYTES_PER_ARC = 40


def check_routing_size(func: str, trials: int, flows_per_pair: int, arcs: int,
                       pairs: int) -> None:
    """Refuse before any work what cannot fit in memory, one load per arc per trial
    (:data:`LOAD_BYTES_PER_ARC` bytes each, against
    :func:`~fabricopt.flow.memory.available_memory`), or more flows per trial than
    :data:`MAX_ROUTING_ENTRIES`.

    >>> check_routing_size("routed_flow", 100, 1, 64, 56)
    """
    need = LOAD_BYTES_PER_ARC * trials * arcs
    memory = shortfall(need)
    if memory is not None:
        raise InvalidParameterError(
            f"{func}(): trials must keep trials x arcs within the memory available, {memory} "
            f"(one load per arc per trial, {LOAD_BYTES_PER_ARC} bytes each), got "
            f"trials={trials:,} with {arcs:,} arcs: about {gb(need)}. Ask for fewer trials.")
    if flows_per_pair * pairs > MAX_ROUTING_ENTRIES:
        raise InvalidParameterError(
            f"{func}(): flows_per_pair must keep flows_per_pair x pairs <= "
            f"{MAX_ROUTING_ENTRIES:,} (flows hashed in each trial), got "
            f"flows_per_pair={flows_per_pair} with {pairs:,} pairs")


def check_walk_memory(func: str, networks: list[Network], classes: list[int], pairs: list[int],
                      links: np.ndarray, trials: int, flows_per_pair: int) -> None:
    """Refuse hashing on ``networks`` (towards ``classes`` destination classes and with
    ``pairs`` pairs on each) when its hop tables, loads and walk
    (:func:`~fabricopt.routing.hashing.walk_bytes`) would not fit in memory, before any is
    allocated."""
    need = sum(walk_bytes(network.n_nodes, c, int(links[network.arc].sum()), trials,
                          min(n, PAIR_BLOCK), flows_per_pair,
                          int(np.diff(network.indptr).max(initial=1)))
               for network, c, n in zip(networks, classes, pairs, strict=True))
    tables = " and ".join(f"{network.n_nodes:,} nodes x {c:,} destination classes"
                          for network, c in zip(networks, classes, strict=True))
    check_fits(func, "routing='hash'", need,
               f"about {gb(need)}: hop tables of {tables}, loads of {trials:,} trials",
               "Ask for fewer trials, or routing='ecmp' (hashing's many-flow limit).")


def routed_flow(fab: Fabric, traffic: Traffic | None = None, *, routing: str = "ecmp",
                flows_per_pair: int = 1, trials: int = 1, seed: Any = None,
                optimum: bool = False, backend: str = "highs",
                time_limit: float | None = None) -> RoutedFlowResult:
    """Throughput of ``traffic`` on ``fab`` under a routing policy, exactly.

    A fixed routing puts load :math:`L_a` on each arc per unit of traffic; theta is then
    :math:`\\min_a c_a / L_a`, computed exactly from the loads (no LP). Routes follow the
    fabric's parts (see :mod:`fabricopt.routing.networks`): pairs in one NVLink domain use its
    links, pairs in different domains go out of the source GPU's own NIC and in at the
    destination's, and only pairs neither part connects (rail-only fabrics, direct networks)
    use the whole graph.

    Parameters
    ----------
    fab : Fabric
    traffic : Traffic, optional
        Gb/s per ordered endpoint pair; None means :func:`~fabricopt.all_to_all` at 1 Gb/s.
    routing : {"ecmp", "wcmp", "hash", "static"}
        How the network spreads a pair over its shortest paths (hop count):

        * ``"ecmp"``: equal split over the shortest-path next hops at every node (a fluid:
          per-packet spraying over equal-cost paths, or many flows per pair);
        * ``"wcmp"``: split in proportion to the capacity of each next-hop bundle;
        * ``"hash"``: every flow pinned to one shortest path and one physical port per hop,
          drawn uniformly among the member links of the next-hop bundles (per-flow ECMP
          hashing on RoCE, an ECMP group or LAG listing every member); see
          ``flows_per_pair`` and ``trials``;
        * ``"static"``: destination-based tables, one physical port per destination chosen by
          the destination's index (D-mod-k over ports on fat-trees and rail-optimized
          fabrics, the InfiniBand subnet manager's fat-tree routing).

        ECMP and WCMP are fluids: a bundle of ``L`` links splits like one pipe of ``L`` times
        the capacity. Hashing and static tables load member links one by one: theta is set by
        the busiest member (``port_utilization``), ``link_load`` and ``utilization`` are what
        each bundle carries in all.

        Whatever the policy, traffic inside an NVLink or UALink domain is striped over all of
        a GPU's links in proportion to their count (the links are used at packet grain), so
        the policy governs the network between domains.
    flows_per_pair : int
        ``"hash"`` only: flows per demand pair (queue pairs, or NCCL channels), each carrying
        an equal share and hashed on its own.
    trials : int
        ``"hash"`` only: independent draws of every flow's path; ``thetas`` holds each.
    seed : None, int or numpy.random.Generator
        Seed of the hashed draws.
    optimum : bool
        Also solve :func:`~fabricopt.max_concurrent_flow` (with ``backend`` and
        ``time_limit``) and report ``efficiency`` = routed theta / optimal theta.

    Returns
    -------
    RoutedFlowResult

    Raises
    ------
    InvalidParameterError
        On an unknown routing, ``flows_per_pair`` or ``trials`` below 1, or either above 1
        for a policy that does not hash.

    Notes
    -----
    Every route is a shortest path of its part of the fabric. On a folded Clos (fat-trees,
    leaf-spine, rail-optimized) these are valley-free: a route between two GPUs whose
    highest node sits at layer :math:`h` has at least :math:`2h` hops, with equality only
    when it climbs and then descends; the up-down route through a lowest common ancestor
    has :math:`2h^*` hops, and every route through a higher layer at least
    :math:`2(h^* + 1)`, so a shortest route peaks at :math:`h^*` and has no valley.

    Examples
    --------
    Two leaves joined by two spines, one link each: ECMP splits each leaf's outbound
    traffic evenly, exactly what the optimum needs (theta = 400 / 3 for 4 GPUs).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> r = fo.routed_flow(fab, routing="ecmp")
    >>> round(r.theta, 6), r.status
    (133.333333, 'exact')
    """
    start = time.perf_counter()
    func = "routed_flow"
    check_fabric(func, fab)
    check_choice(func, "routing", routing, ROUTINGS)
    flows_per_pair = check_int(func, "flows_per_pair", flows_per_pair, minimum=1)
    trials = check_int(func, "trials", trials, minimum=1)
    optimum = check_bool(func, "optimum", optimum)
    # Checked whether or not the optimum is asked for: a typo must not wait for the day it is.
    check_choice(func, "backend", backend, BACKENDS)
    if time_limit is not None:
        check_positive(func, "time_limit", time_limit)
    if routing != "hash" and (flows_per_pair != 1 or trials != 1):
        raise InvalidParameterError(
            f"{func}(): flows_per_pair and trials must be 1 unless routing='hash' "
            f"(routing={routing!r} is deterministic), got flows_per_pair={flows_per_pair}, "
            f"trials={trials}")
    rng = as_rng(seed, func)  # checked whatever the routing: a bad seed is never ignored
    rng = rng if routing == "hash" else None
    traffic = checked_traffic(func, fab, traffic)

    ga = GraphArrays.from_fabric(fab)
    # Only hashing keeps a path choice per flow; the fluid policies accumulate the demands a
    # block at a time, so a uniform traffic of any size fits.
    check_routing_size(func, trials, flows_per_pair, ga.n_arcs,
                       len(traffic) if routing == "hash" else 0)
    networks = Networks.of(fab, ga)
    trial_load, port_load, counts, unreachable = route_loads(networks, fab, traffic, routing,
                                                             flows_per_pair, trials, rng)
    tiers = list(ga.tiers)  # str of each arc's tier, "link" where it names none
    result = RoutedFlowResult(
        theta=0.0, status="exact", method=routing, seconds=0.0, per_endpoint_gbps=0.0,
        fabric_name=fab.name, traffic_name=traffic.name, flows_per_pair=flows_per_pair,
        trials=trials, seed=seed,
        pairs_by_network={NETWORK_NAMES[p]: int(c) for p, c in enumerate(counts) if c},
        _ga=ga, _tiers=tiers)
    if unreachable is not None:
        result.status, result.unreachable = "disconnected", unreachable
        result.thetas = np.zeros(trials)
        result._load = np.zeros(ga.n_arcs)
    else:
        # The busiest member link of each bundle binds (port-equivalent loads).
        thetas = theta_of_loads(port_load, ga.capacity)
        pick = int(np.argsort(thetas, kind="stable")[(trials - 1) // 2])
        result.thetas, result.theta = thetas, float(thetas[pick])
        result._load = trial_load[pick] * result.theta
        if not np.array_equal(port_load[pick], trial_load[pick]):
            result._port_load = port_load[pick] * result.theta
    result.per_endpoint_gbps = result.theta * traffic.mean_out_gbps()
    if optimum:
        result.optimum = max_concurrent_flow(fab, traffic, backend=backend,
                                             time_limit=time_limit)
    result.seconds = time.perf_counter() - start
    return result


def arc_links(fab: Fabric, ga: GraphArrays) -> np.ndarray:
    """Member links of every arc of ``ga`` (its ``links`` attribute, 1 where unset).

    Read off the successor dicts the arrays were read from, in their order, by C-level maps
    (a lookup per arc through networkx's views took a second at 16,384 GPUs).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1, links_per_pair=2)
    >>> ga = GraphArrays.from_fabric(fab)
    >>> [(u, v, n) for (u, v), n in zip(ga.arcs, arc_links(fab, ga).tolist()) if n > 1]
    [('leaf0', 'spine0', 2), ('leaf1', 'spine0', 2), ('spine0', 'leaf0', 2), ('spine0', 'leaf1', 2)]
    """
    if type(fab.graph) is nx.DiGraph:
        data = chain.from_iterable(map(dict.values, fab.graph._succ.values()))
        return np.fromiter(map(int, map(methodcaller("get", "links", 1), data)),
                           dtype=np.int64, count=ga.n_arcs)
    return np.array([int(fab.graph[u][v].get("links", 1)) for u, v in ga.arcs], dtype=np.int64)


def theta_of_loads(load: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """``min_a c_a / L_a`` over the loaded arcs, per row of ``load`` (per trial)."""
    load = np.atleast_2d(load)
    with np.errstate(divide="ignore"):
        ratio = np.where(load > 0, capacity[None, :] / load, np.inf)
    return ratio.min(axis=1)


def demand_chunks(traffic: Traffic, position: dict[Hashable, int],
                  ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The demands as arrays ``(source position, target position, gbps)``, a block at a time
    (a uniform traffic is never spelled out whole)."""
    if traffic.is_uniform:
        eps = np.array([position[e] for e in traffic.endpoints], dtype=np.int64)
        gbps = float(traffic.uniform_gbps)  # type: ignore[arg-type]
        rows = max(1, PAIR_BLOCK // len(eps))
        for first in range(0, len(eps), rows):
            src = np.repeat(eps[first:first + rows], len(eps))
            dst = np.tile(eps, len(eps[first:first + rows]))
            keep = src != dst
            yield src[keep], dst[keep], np.full(int(keep.sum()), gbps)
        return
    pairs = traffic.pairs
    src = np.fromiter((position[s] for s, _ in pairs), dtype=np.int64, count=len(pairs))
    dst = np.fromiter((position[t] for _, t in pairs), dtype=np.int64, count=len(pairs))
    yield src, dst, np.fromiter(pairs.values(), dtype=float, count=len(pairs))


def route_loads(networks: Networks, fab: Fabric, traffic: Traffic, routing: str,
                flows_per_pair: int, trials: int, rng: np.random.Generator | None,
                func: str = "routed_flow",
                ) -> tuple[np.ndarray, np.ndarray, list[int], tuple[Hashable, Hashable] | None]:
    """Arc loads (Gb/s at the traffic as given) per trial, carried and port-equivalent
    (:mod:`fabricopt.routing.hashing`), pairs per network, and an unreachable pair if there is
    one.

    The demands come a block at a time (:func:`demand_chunks`). A first pass assigns each
    pair its network and adds the fluid policies' loads; hashing notes the destinations it
    will route, checks that its tables fit (refused by ``func`` otherwise) and walks the
    blocks again, so no list of every flow is ever held."""
    ga = networks.ga
    position = {e: i for i, e in enumerate(fab.endpoints)}
    hashed = routing == "hash"
    fluid: list[FluidRouting | None] = []
    for p, network in enumerate(networks.networks):
        per_target = routing == "static" and p > 0
        fluid.append(FluidRouting(network, per_target) if network is not None else None)
    counts = [0, 0, 0]
    counted = None
    if traffic.is_uniform and routing in ("ecmp", "wcmp"):
        eps = np.array([position[e] for e in traffic.endpoints], dtype=np.int64)
        counted = add_uniform(networks, fluid, eps, float(traffic.uniform_gbps))  # type: ignore[arg-type]
    if counted is not None:
        counts = counted
    # Which destinations hashing routes on each of the networks, and each block's
    # network assignment (one byte a pair) for the second pass.
    bound_for = {p: np.zeros(len(position), dtype=bool) for p in (1, 2)}
    assigned: list[np.ndarray] = []
    for src, dst, gbps in (() if counted is not None else demand_chunks(traffic, position)):
        network_of = networks.assign(src, dst)
        if np.any(network_of < 0):
            j = int(np.flatnonzero(network_of < 0)[0])
            none = np.zeros((trials, ga.n_arcs))
            return none, none, counts, (fab.endpoints[src[j]], fab.endpoints[dst[j]])
        for p in range(3):
            sel = network_of == p
            if not sel.any():
                continue
            counts[p] += int(sel.sum())
            if hashed and p > 0:
                bound_for[p][dst[sel]] = True
            else:
                fluid[p].add(src[sel], dst[sel], gbps[sel])  # type: ignore[union-attr]
        if hashed:
            assigned.append(network_of.astype(np.int8))
    # Member links per arc: hashing and static tables pick one of them per flow or destination.
    links = arc_links(fab, ga)
    base, base_port = np.zeros(ga.n_arcs), np.zeros(ga.n_arcs)
    for p, acc in enumerate(fluid):
        if acc is None or acc.pairs == 0:
            continue
        # NVLink and UALink stripe over all of a GPU's links: capacity-weighted, always.
        split = "capacity" if p == 0 else _SPLIT[routing]
        rank = destination_rank(acc.network) if split == "static" else None
        carried, port = acc.loads(split, rank, links[acc.network.arc])
        base[acc.network.arc] += carried
        base_port[acc.network.arc] += port
    load = np.repeat(base[None, :], trials, axis=0)
    port_load = np.repeat(base_port[None, :], trials, axis=0)
    used = [p for p in (1, 2) if hashed and counts[p]]
    if not used:
        return load, port_load, counts, None
    hashing_networks = [networks.networks[p] for p in used]
    classes = [np.unique(network.klass[np.flatnonzero(bound_for[p])])  # type: ignore[union-attr]
               for p, network in zip(used, hashing_networks, strict=True)]
    check_walk_memory(func, hashing_networks, [len(c) for c in classes],  # type: ignore[arg-type]
                      [counts[p] for p in used], links, trials, flows_per_pair)
    walks = {p: HashedWalk(network, c, trials, links[network.arc])  # type: ignore[union-attr]
             for p, network, c in zip(used, hashing_networks, classes, strict=True)}
    for (src, dst, gbps), network_of in zip(demand_chunks(traffic, position), assigned,
                                          strict=True):
        for p, walk in walks.items():
            sel = network_of == p
            if sel.any():
                walk.add(src[sel], dst[sel], gbps[sel], rng, flows_per_pair)  # type: ignore[arg-type]
    for walk in walks.values():
        carried, port = walk.loads()
        load[:, walk.network.arc] += carried
        port_load[:, walk.network.arc] += port
    return load, port_load, counts, None
