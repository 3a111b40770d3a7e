"""The ways a server's traffic reaches a plane of a Clos of servers.

Servers hung from the same leaves with the same NIC capacities are one *class*
(:func:`server_classes`); the LP of :mod:`fabricopt.failures.plane_lp` picks one set of shares per
class, not per server. Each class reaches a plane's switch in its zone over a few *routes*
(:func:`plane_routes`): its own leaf's uplink; a spanning server's NICs to a neighbour leaf's
uplink (a relay, split over the classes that span each hop by :func:`relay_hops`); or, where
its leaf lost the uplink, up another plane and down a neighbour leaf (a bounce,
:func:`bounce_ways`). Both the LP and the routing that rebuilds its flow
(:mod:`fabricopt.failures.plane_routing`) read the routes from here, so they cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .planes import Planes

#: How many neighbour leaves a bounce (up another plane and down a neighbour leaf, for a
#: leaf that lost its uplink to a plane) spreads over, per plane it goes up.
BOUNCE_LEAVES = 4


@dataclass(frozen=True)
class Classes:
    """Servers hung from the same leaves with the same NIC capacities and homes."""

    of_server: np.ndarray  # class of each server
    size: np.ndarray  # servers per class
    leaves: tuple[np.ndarray, ...]  # NIC leaves of each class
    cap_up: tuple[np.ndarray, ...]  # per server, NIC capacity to each of those leaves
    cap_down: tuple[np.ndarray, ...]
    homes: tuple[dict[int, int], ...]  # per server: home leaf -> endpoints homed there
    #: (leaf, leaf) -> the classes spanning both and each one's share of a relay between them
    hops: dict[tuple[int, int], tuple[list[int], np.ndarray]]


def server_classes(pl: Planes) -> Classes:
    """The classes of :class:`Classes`, numbered in order of their first server."""
    ga = pl.ga
    n_srv = pl.n_servers
    up = [defaultdict(float) for _ in range(n_srv)]
    down = [defaultdict(float) for _ in range(n_srv)]
    homes = [defaultdict(int) for _ in range(n_srv)]
    cap = ga.capacity
    for e in range(len(pl.endpoints)):
        s = int(pl.server[e])
        arcs, leaves, backs = pl.nics(e)
        for a, leaf, b in zip(arcs.tolist(), leaves.tolist(), backs.tolist(), strict=True):
            up[s][leaf] += cap[a]
            down[s][leaf] += cap[b]
        homes[s][int(pl.home[e])] += 1
    keys: dict[tuple, int] = {}
    of_server = np.empty(n_srv, dtype=np.int64)
    for s in range(n_srv):
        leaves = sorted(up[s])
        key = (tuple((leaf, up[s][leaf], down[s][leaf]) for leaf in leaves),
               tuple(sorted(homes[s].items())))
        of_server[s] = keys.setdefault(key, len(keys))
    first = np.unique(of_server, return_index=True)[1]
    reps = [int(s) for s in np.arange(n_srv)[first][np.argsort(of_server[first])]]
    size = np.bincount(of_server, minlength=len(keys))
    leaves = tuple(np.array(sorted(up[s]), dtype=np.int64) for s in reps)
    cap_up = tuple(np.array([up[s][x] for x in sorted(up[s])]) for s in reps)
    cap_down = tuple(np.array([down[s][x] for x in sorted(up[s])]) for s in reps)
    return Classes(of_server, size, leaves, cap_up, cap_down,
                   tuple(dict(homes[s]) for s in reps),
                   _hop_splits(leaves, cap_up, cap_down, size))


@dataclass(frozen=True)
class Route:
    """One way from a server of class ``k`` to its zone's port of a plane.

    ``kind`` is ``"direct"`` (its NICs on ``leaf``, then ``leaf``'s uplink), ``"relay"`` (to
    ``leaf``, down to the servers that span it and ``next`` and up their NICs on ``next``, as
    :func:`relay_hops` splits it, then ``next``'s uplink) or ``"bounce"`` (to ``leaf``, up
    each other plane and down to a few leaves with the uplink, evenly)."""

    kind: str
    leaf: int
    next: int = -1


@dataclass(frozen=True)
class PlaneRoutes:
    """Every route of every (class, zone, plane), in a fixed order."""

    keys: tuple[tuple[int, int, int], ...]  # (class, zone, plane) per entry
    routes: tuple[tuple[Route, ...], ...]


def plane_routes(pl: Planes, cl: Classes, relay_leaves: np.ndarray) -> PlaneRoutes:
    """The routes of every class to every plane in the zones of its homes: direct from each
    of its leaves with the uplink; relayed across a spanning server from its leaves in
    ``relay_leaves`` (a mask over leaves); bounced where its leaf lacks the uplink."""
    neighbours = leaf_neighbours(cl)
    keys, routes = [], []
    for k, leaves in enumerate(cl.leaves):
        zones = sorted({int(pl.leaf_zone[h]) for h in cl.homes[k]})
        for z in zones:
            for p in range(pl.n_planes):
                if pl.port[z, p] < 0:
                    continue
                out = []
                own = set(leaves.tolist())
                for leaf in leaves.tolist():
                    if pl.leaf_zone[leaf] != z:
                        continue
                    if pl.up[leaf, p] >= 0 and pl.down[leaf, p] >= 0:
                        out.append(Route("direct", leaf))
                    elif bounce_ways(pl, leaf, p):
                        out.append(Route("bounce", leaf))
                for leaf in leaves.tolist():
                    if not relay_leaves[leaf]:
                        continue
                    for nxt in sorted(neighbours[leaf]):
                        if ( pl.leaf_zone[nxt] == z and nxt not in own
                                and pl.up[nxt, p] >= 0 and pl.down[nxt, p] >= 0):
                            out.append(Route("relay", leaf, next=nxt))
                keys.append((k, z, p))
                routes.append(tuple(out))
    return PlaneRoutes(tuple(keys), tuple(routes))


def bounce_ways(pl: Planes, leaf: int, p: int) -> list[tuple[int, list[int]]]:
    """The ways of a bounce from ``leaf`` to plane ``p``'s port in its zone, taken evenly:
    up each other plane ``q`` it has both links to, down to one of up to
    :data:`BOUNCE_LEAVES` other leaves of the zone with both ``q`` and ``p`` links (evenly),
    up their ``p`` uplink; as ``(q, leaves)`` pairs, empty when there is no such way. The
    way back down is each link's reverse."""
    zone_leaves = np.flatnonzero(pl.leaf_zone == pl.leaf_zone[leaf])
    zone_leaves = zone_leaves[zone_leaves != leaf]
    both = (pl.up[zone_leaves] >= 0) & (pl.down[zone_leaves] >= 0)
    both &= both[:, [p]]  # each candidate needs the p links too
    ways = []
    for q in range(pl.n_planes):
        if q == p or pl.up[leaf, q] < 0 or pl.down[leaf, q] < 0:
            continue
        ok = zone_leaves[both[:, q]][:BOUNCE_LEAVES].tolist()
        if ok:
            ways.append((q, ok))
    return ways


def bounce_arcs(pl: Planes, leaf: int, p: int, entry: bool = False
                ) -> list[tuple[int, float]]:
    """The arcs of :func:`bounce_ways` up from ``leaf`` (``entry``: down to it) with the
    share of the route each carries."""
    ways = bounce_ways(pl, leaf, p)
    out: dict[int, float] = defaultdict(float)
    for q, ms in ways:
        w = 1.0 / len(ways)
        out[int(pl.down[leaf, q] if entry else pl.up[leaf, q])] += w
        for m in ms:
            out[int(pl.up[m, q] if entry else pl.down[m, q])] += w / len(ms)
            out[int(pl.down[m, p] if entry else pl.up[m, p])] += w / len(ms)
    return sorted(out.items())


def relay_hops(cl: Classes, path: list[int]
               ) -> list[tuple[tuple[int, int], list[int], np.ndarray]]:
    """The hops of a relay along ``path`` (leaves, each joined to the next by spanning
    servers), each hop ``(x, y)`` split over the classes that span ``x`` and ``y`` in
    proportion to their NIC capacity (down on ``x``, up on ``y``, the smaller), per class in
    total over its servers."""
    return [((x, y), *cl.hops[(x, y)]) for x, y in zip(path[:-1], path[1:], strict=True)]


def _hop_splits(leaves: tuple[np.ndarray, ...], cap_up: tuple[np.ndarray, ...],
                cap_down: tuple[np.ndarray, ...], size: np.ndarray
                ) -> dict[tuple[int, int], tuple[list[int], np.ndarray]]:
    """:func:`relay_hops`'s split of every hop between two leaves a class spans."""
    found: dict[tuple[int, int], tuple[list[int], list[float]]] = {}
    for k, ls in enumerate(leaves):
        for i, x in enumerate(ls.tolist()):
            for j, y in enumerate(ls.tolist()):
                if x != y:
                    classes, weights = found.setdefault((x, y), ([], []))
                    classes.append(k)
                    weights.append(min(cap_down[k][i], cap_up[k][j]) * size[k])
    return {hop: (classes, np.array(w, dtype=float) / np.sum(w))
            for hop, (classes, w) in found.items()}


def leaf_neighbours(cl: Classes) -> dict[int, set[int]]:
    """Per leaf, the leaves a spanning server joins it to."""
    adj: dict[int, set[int]] = defaultdict(set)
    for leaves in cl.leaves:
        for x in leaves.tolist():
            adj[x].update(y for y in leaves.tolist() if y != x)
    return adj


def leaf_path(adj: dict[int, set[int]], a: int, c: int) -> list[int]:
    """A shortest path from leaf ``a`` to leaf ``c`` over the leaves' neighbours ``adj``
    (breadth first, neighbours in order)."""
    prev = {a: a}
    frontier = [a]
    while frontier and c not in prev:
        nxt = []
        for x in frontier:
            for y in sorted(adj[x]):
                if y not in prev:
                    prev[y] = x
                    nxt.append(y)
        frontier = nxt
    path = [c]
    while path[-1] != a:
        path.append(prev[path[-1]])
    return path[::-1]

__all__ = ["BOUNCE_LEAVES", "Classes", "PlaneRoutes", "Route", "bounce_arcs", "bounce_ways",
           "leaf_neighbours", "leaf_path", "plane_routes", "relay_hops", "server_classes"]
