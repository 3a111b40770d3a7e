"""The planes of a multi-tier Clos of servers, read off its graph.

A cluster of NVSwitch servers on a multi-tier Clos (``cluster(..., scale_out="clos")``, Meta's
24K design) has a shape that its routing can use, found here from the graph alone:

* **servers**: the scale-up domains (GPUs and NVSwitches joined by scale-up links);
* **leaves**: the switches the GPUs' NIC links reach; a GPU's *home* is the leaf of its NIC
  (for a GPU whose NIC failed, the leaf its server reaches with the most capacity);
* **groups**: leaves joined by servers that span them (a server with NICs on two leaves);
* **planes**: the connected parts of the switches above the leaves (spine ``i`` of every pod
  with the cores above it is plane ``i``);
* **zones**: leaves with the switches they reach one hop up (a pod);
* **ports**: the one switch of each plane in each zone (spine ``i`` of the pod).

Above the leaves, traffic between zones crosses a plane's *hubs* (its switches above the
ports). :mod:`fabricopt.failures.plane_routing` routes every pair through these: the share of
each plane per pair is an LP's choice. The structure is declined (None, with the reason)
where the fabric has no such shape: a switch joined to a leaf that is not above it, a zone
with two switches of one plane, a server without a NIC, a GPU cut off from its server's
NVSwitches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graph_arrays import FabricShape, GraphArrays


@dataclass(frozen=True)
class Planes:
    """The plane structure of a fabric, as arrays over the nodes and arcs of ``ga``.

    Leaves, zones, groups and planes are numbered from 0; ``-1`` means "none".
    """

    ga: GraphArrays
    #: Node of each endpoint, in the traffic's order.
    endpoints: np.ndarray
    #: Server of each endpoint.
    server: np.ndarray
    #: Home leaf of each endpoint.
    home: np.ndarray
    #: Node of each leaf.
    leaf_node: np.ndarray
    #: Zone and group of each leaf.
    leaf_zone: np.ndarray
    leaf_group: np.ndarray
    #: ``port[z, p]``: the node of plane ``p`` in zone ``z``.
    port: np.ndarray
    #: ``up[l, p]`` / ``down[l, p]``: the arc from leaf ``l`` to its zone's port of plane
    #: ``p`` and back (-1 where the link is missing).
    up: np.ndarray
    down: np.ndarray
    #: ``hubs[p]``: per plane, ``(hub, arc port->hub per zone, arc hub->port per zone)``
    #: rows, -1 where a zone's port is not joined to that hub.
    hubs: tuple[tuple[tuple[int, np.ndarray, np.ndarray], ...], ...]
    #: NVSwitch nodes of each server.
    server_switches: tuple[np.ndarray, ...]
    #: ``nic[e]``: arcs endpoint -> leaf, as (arc, leaf) pairs in CSR form over endpoints.
    nic_ptr: np.ndarray
    nic_arc: np.ndarray
    nic_leaf: np.ndarray
    #: The same links from the leaf down to the endpoint (arc per entry of ``nic_arc``).
    nic_back: np.ndarray

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_node)

    @property
    def n_zones(self) -> int:
        return self.port.shape[0]

    @property
    def n_planes(self) -> int:
        return self.port.shape[1]

    @property
    def n_servers(self) -> int:
        return len(self.server_switches)

    def nics(self, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(arcs up, leaves, arcs down)`` of endpoint ``e``'s NIC links."""
        lo, hi = self.nic_ptr[e], self.nic_ptr[e + 1]
        return self.nic_arc[lo:hi], self.nic_leaf[lo:hi], self.nic_back[lo:hi]


def plane_structure(fab, ga: GraphArrays | None = None) -> tuple[Planes | None, str]:
    """``(planes, "")`` for a cluster of NVSwitch servers on a Clos of planes, else
    ``(None, why)``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.cluster(fo.dgx_h100(), nodes=16, scale_out="clos", tiers=3,
    ...                  oversubscription=2, radix=16, whole_servers=False)
    >>> pl, why = plane_structure(fab)
    >>> pl.n_leaves, pl.n_zones, pl.n_planes, pl.n_servers
    (13, 2, 5, 16)
    >>> plane_structure(fo.ring(6))[1]
    'no scale-up domain with a switch: the endpoints are not in servers of NVSwitches'
    """
    ga = GraphArrays.from_fabric(fab) if ga is None else ga
    n = ga.n_nodes
    eps = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
    is_ep = np.zeros(n, dtype=bool)
    is_ep[eps] = True
    shape = FabricShape.of(fab, ga)  # its scale-up arcs and their components, read once
    su = shape.scale_up
    found = _servers(ga, su, eps, is_ep, shape.domain)
    if isinstance(found, str):
        return None, found
    in_domain, server, switches = found
    tail, head = ga.tail, ga.head
    # NIC links: scale-out arcs from an endpoint; their heads are the leaves.
    nic = ~su & is_ep[tail]
    if (~su & is_ep[head] & ~is_ep[tail] & in_domain[tail]).any() or (
            ~su & is_ep[tail] & is_ep[head]).any():
        return None, "an endpoint has a scale-out link that is not a NIC link to a switch"
    leaf_nodes = np.unique(head[nic])
    if len(leaf_nodes) == 0:
        return None, "no endpoint has a NIC link"
    if in_domain[leaf_nodes].any():
        return None, "a NIC link reaches a scale-up switch"
    leaf_of = np.full(n, -1, dtype=np.int64)
    leaf_of[leaf_nodes] = np.arange(len(leaf_nodes))
    other = ~is_ep & ~in_domain & (leaf_of < 0)  # the switches above the leaves
    # Every arc out of a leaf goes to an endpoint or above; none joins two leaves.
    leaf_tail = leaf_of[tail] >= 0
    if (leaf_tail & (leaf_of[head] >= 0)).any():
        return None, "two leaves are joined directly"
    if (leaf_tail & in_domain[head] & ~is_ep[head]).any():
        return None, "a leaf is joined to an NVSwitch"
    if (other[tail] & (is_ep[head] | in_domain[head])).any():
        return None, "a switch above the leaves is joined to a server"
    # Planes: components of the switches above the leaves.
    above = other[tail] & other[head]
    joined = sp.csr_matrix((np.ones(int(above.sum())), (tail[above], head[above])),
                           shape=(n, n))
    _, pcomp = connected_components(joined, directed=False)
    uplink = leaf_tail & other[head]
    spines = np.unique(head[uplink])
    if len(spines) == 0:
        return None, "no switch above the leaves"
    plane_ids, plane_of_spine = np.unique(pcomp[spines], return_inverse=True)
    plane_of = np.full(n, -1, dtype=np.int64)
    plane_of[spines] = plane_of_spine
    node_plane = np.full(n, -1, dtype=np.int64)
    node_plane[other] = np.searchsorted(plane_ids, pcomp[other])
    node_plane[other & ~np.isin(pcomp, plane_ids)] = -1
    # Zones: components of leaves and spines joined by uplinks.
    spine_of = np.full(n, -1, dtype=np.int64)
    spine_of[spines] = np.arange(len(spines))
    nl, ns = len(leaf_nodes), len(spines)
    bip = sp.csr_matrix((np.ones(int(uplink.sum())),
                         (leaf_of[tail[uplink]], nl + spine_of[head[uplink]])),
                        shape=(nl + ns, nl + ns))
    _, zcomp = connected_components(bip, directed=False)
    zone_ids, zone = np.unique(zcomp, return_inverse=True)
    leaf_zone, spine_zone = zone[:nl], zone[nl:]
    n_zones, n_planes = len(zone_ids), len(plane_ids)
    port = np.full((n_zones, n_planes), -1, dtype=np.int64)
    for s, z, p in zip(spines, spine_zone, plane_of_spine, strict=True):
        if port[z, p] >= 0:
            return None, (f"zone {z} has two switches of one plane ({ga.nodes[port[z, p]]!r} "
                          f"and {ga.nodes[s]!r})")
        port[z, p] = s
    up = np.full((nl, n_planes), -1, dtype=np.int64)
    down = np.full((nl, n_planes), -1, dtype=np.int64)
    arcs_up = np.flatnonzero(uplink)
    up[leaf_of[tail[arcs_up]], plane_of[head[arcs_up]]] = arcs_up
    downlink = (other[tail]) & (leaf_of[head] >= 0)
    arcs_down = np.flatnonzero(downlink)
    if (spine_of[tail[arcs_down]] < 0).any():
        return None, "a leaf is reached from a switch it does not reach"
    down[leaf_of[head[arcs_down]], plane_of[tail[arcs_down]]] = arcs_down
    hubs = _plane_hubs(ga, port, node_plane, spine_of)
    # Endpoints' NIC links, and their homes.
    nic_arcs = np.flatnonzero(nic)
    order = np.argsort(tail[nic_arcs], kind="stable")
    nic_arcs = nic_arcs[order]
    ep_of = np.full(n, -1, dtype=np.int64)
    ep_of[eps] = np.arange(len(eps))
    counts = np.bincount(ep_of[tail[nic_arcs]], minlength=len(eps))
    nic_ptr = np.concatenate([[0], np.cumsum(counts)])
    nic_leaf = leaf_of[head[nic_arcs]]
    back = _reverse_arcs(ga, nic_arcs)
    if (back < 0).any():
        return None, "a NIC link has no way back down"
    home = _homes(ga, server, nic_ptr, nic_arcs, nic_leaf, nl)
    if (home < 0).any():
        return None, "a server has no NIC link left"
    # Groups: leaves joined by a server that has NICs on both.
    ep_nic = np.repeat(np.arange(len(eps)), counts)
    links = sp.csr_matrix((np.ones(len(nic_arcs)), (server[ep_nic], nic_leaf)),
                          shape=(len(switches), nl))
    _, leaf_group = connected_components(links.T @ links, directed=False)
    return Planes(ga, eps, server, home, leaf_nodes, leaf_zone, leaf_group, port, up, down,
                  hubs, switches, nic_ptr, nic_arcs, nic_leaf, back), ""


def _servers(ga: GraphArrays, su: np.ndarray, eps: np.ndarray, is_ep: np.ndarray,
             comp: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | str:
    """The servers: components ``comp`` of the scale-up links ``su`` (each endpoint with its
    NVSwitches; :attr:`~fabricopt.graph_arrays.FabricShape.domain`). Returns the nodes in a
    scale-up domain, each endpoint's server and each server's switches; or why there are
    none."""
    n, tail, head = ga.n_nodes, ga.tail, ga.head
    in_domain = np.zeros(n, dtype=bool)
    in_domain[tail[su]] = True
    in_domain[head[su]] = True
    switch_in_domain = in_domain & ~is_ep
    if not switch_in_domain.any():
        return ("no scale-up domain with a switch: the endpoints are not in servers of "
                "NVSwitches")
    server_ids, server = np.unique(comp[eps], return_inverse=True)
    server_of_comp = np.full(n, -1, dtype=np.int64)
    server_of_comp[server_ids] = np.arange(len(server_ids))
    node_server = np.where(in_domain | is_ep, server_of_comp[comp], -1)
    switches = tuple(np.flatnonzero(switch_in_domain & (node_server == s))
                     for s in range(len(server_ids)))
    if any(len(s) == 0 for s in switches):
        return "a server has no NVSwitch"
    if (switch_in_domain & (node_server < 0)).any():
        return "an NVSwitch serves no endpoint"
    return in_domain, server, switches


def _reverse_arcs(ga: GraphArrays, arcs: np.ndarray) -> np.ndarray:
    """The arc ``v -> u`` of each arc ``u -> v`` (-1 where there is none): the arrays' own
    (:attr:`~fabricopt.graph_arrays.GraphArrays.reverse`, found once per arrays and shared
    with the other readers of the same arrays) where every arc of the graph has one, else
    searched here for ``arcs`` alone."""
    if ga.reverse is not None:
        return ga.reverse[arcs]
    key = ga.tail.astype(np.int64) * ga.n_nodes + ga.head
    order = np.argsort(key)
    want = ga.head[arcs].astype(np.int64) * ga.n_nodes + ga.tail[arcs]
    pos = np.searchsorted(key[order], want)
    pos = np.minimum(pos, len(order) - 1)
    found = key[order][pos] == want
    return np.where(found, order[pos], -1)


def _homes(ga: GraphArrays, server: np.ndarray, nic_ptr: np.ndarray, nic_arcs: np.ndarray,
           nic_leaf: np.ndarray, n_leaves: int) -> np.ndarray:
    """Each endpoint's home leaf: the leaf of its largest NIC link, else the leaf its
    server reaches with the most NIC capacity (-1 when its server reaches none)."""
    n_eps = len(server)
    counts = np.diff(nic_ptr)
    ep_nic = np.repeat(np.arange(n_eps), counts)
    cap = ga.capacity[nic_arcs]
    home = np.full(n_eps, -1, dtype=np.int64)
    if len(nic_arcs):
        order = np.lexsort((-cap, ep_nic))  # per endpoint, its largest link first
        first = np.unique(ep_nic[order], return_index=True)[1]
        home[ep_nic[order][first]] = nic_leaf[order][first]
    per_server = np.zeros((server.max() + 1, n_leaves))
    np.add.at(per_server, (server[ep_nic], nic_leaf), cap)
    best = np.where(per_server.max(axis=1) > 0, per_server.argmax(axis=1), -1)
    return np.where(home >= 0, home, best[server])


def _plane_hubs(ga: GraphArrays, port: np.ndarray, node_plane: np.ndarray,
                spine_of: np.ndarray) -> tuple:
    """Per plane, the hubs (switches of the plane one hop above its ports) with the arcs
    from and to each zone's port."""
    n_zones, n_planes = port.shape
    zone_of_port = np.full(ga.n_nodes, -1, dtype=np.int64)
    for z in range(n_zones):
        ok = port[z] >= 0
        zone_of_port[port[z][ok]] = z
    rows: list[list] = [[] for _ in range(n_planes)]
    hub_index: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
    out = (zone_of_port[ga.tail] >= 0) & (node_plane[ga.head] >= 0) & (spine_of[ga.head] < 0)
    for a in np.flatnonzero(out):
        h = int(ga.head[a])
        if h not in hub_index:
            entry = (h, np.full(n_zones, -1, dtype=np.int64), np.full(n_zones, -1,
                                                                      dtype=np.int64))
            hub_index[h] = entry
            rows[int(node_plane[h])].append(entry)
        hub_index[h][1][zone_of_port[ga.tail[a]]] = a
    back = (node_plane[ga.tail] >= 0) & (spine_of[ga.tail] < 0) & (zone_of_port[ga.head] >= 0)
    for a in np.flatnonzero(back):
        h = int(ga.tail[a])
        if h in hub_index:
            hub_index[h][2][zone_of_port[ga.head[a]]] = a
    return tuple(tuple(r) for r in rows)


__all__ = ["Planes", "plane_structure"]
