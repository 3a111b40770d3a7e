"""Scale-out traffic routed between *classes* of servers, relayed over the scale-up links at
both ends.

A GPU of a DGX hangs from one leaf. NCCL's PXN sends a pair over NVLink to the source
server's GPU on the target's rail, so the pair enters the network at that rail's leaf and
leaves it at the target's own leaf. When a leaf has lost uplinks, all of its scalable unit's
traffic for that rail still crosses it. On a 2,048-GPU rail 2:1 cluster with 1 % of its links
failed, that routing stops 10 % short of the scalable unit's uplink cut, which the network
as a whole could still carry.

Here an LP chooses where a pair enters and leaves, on the server's side of both ends.
Servers that hang from the same switches with the same NIC capacities form a *class*: every
healthy server of a scalable unit, or a server that lost a NIC on its own. Each class is one
root and one sink of the attach-switch LP of
:mod:`fabricopt.flow.bounds_first.tor_routing`, which routes
between them over the switch arcs. A virtual arc runs from a root to each of its switches
(the class's NIC capacity there) and from each switch to a sink.

The LP's flow is spread back to GPU pairs. A pair from class ``c`` to class ``d`` takes its
share of the ``c -> d`` flow: its demand over the demand between the classes. It enters at
each GPU of its source's server in the share the flow enters that GPU's switch, after an
NVLink hop from the source. It leaves at each GPU of its target's server in the share the
flow leaves that GPU's switch, then crosses the server's NVLink along fewest-hop WCMP paths
to the target. Each part conserves, so the whole is a flow of the full LP, commodity by
commodity. Scaled to fit its most loaded arc (NVLink included), it is a feasible point.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..approx import CoreGraph, ecmp_columns
from .tor_routing import attach_points, route_by_attach_lp

#: Most server classes routed (each is a root and a sink of the LP): a failed NIC makes its
#: server a class of its own, and the LP grows with the classes times the switch arcs (whose
#: own limit, ``ATTACH_LP_MAX_COLUMNS``, binds first: a 2,048-GPU rail cluster with 5 % of
#: its links failed has 58 to 67 classes and 75,000 to 89,000 columns).
MAX_CLASSES = 128


def route_between_domains(g: CoreGraph, up: np.ndarray, domain: np.ndarray,
                          demand: np.ndarray, flows: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Add to ``flows`` (K x core arcs) the scale-out ``demand`` (K x n, pairs in two
    scale-up domains) routed between server classes, and the exit hops over the target
    servers' scale-up arcs ``up``. Returns the entry hops ``(k, relay, amount)`` still to be
    routed over the source servers' scale-up arcs (the caller adds them to commodity ``k``'s
    scale-up demand). None when it does not apply (a server with a GPU on two switches, an
    endpoint of no server with a live NIC, too many classes) or its LP declines: ``flows`` is
    then partly written, to be discarded.

    ``domain`` labels each local node with its scale-up domain (connected over ``up``).
    """
    servers = _Servers.of(g, up, domain, demand)
    if servers is None:
        return None
    K, n, C = len(g.sources), g.n, servers.n_classes
    # Demand from each commodity to each sink class; its root is its source's class.
    ends = np.flatnonzero(servers.node_class >= 0)
    to_class = np.asarray(demand @ sp.csr_matrix(
        (np.ones(len(ends)), (ends, servers.node_class[ends])), shape=(n, C)))
    root = servers.node_class[g.sources]
    if np.any((root < 0) & (to_class.sum(axis=1) > 0)):
        return None
    k_e, d_e = np.nonzero(to_class)
    # The LP's graph: the switch arcs, then root -> switch and switch -> sink arcs.
    switch = np.flatnonzero(~up & ~servers.nic_arc)
    m_s, m_c = len(switch), len(servers.arc_class)
    tail = np.r_[g.tail[switch], n + servers.arc_class, servers.arc_switch]
    head = np.r_[g.head[switch], servers.arc_switch, n + C + servers.arc_class]
    h = replace(g, nodes=np.r_[g.nodes, np.full(2 * C, -1)], tail=tail, head=head,
                capacity=np.r_[g.capacity[switch], servers.arc_up, servers.arc_down],
                arc_key=np.zeros(0, dtype=np.int64), arc_of_key=np.zeros(0, dtype=np.int64),
                arc_table=None)
    between = np.zeros((K, len(tail)))
    entries = (k_e, n + C + d_e, n + root[k_e], to_class[k_e, d_e])
    if not route_by_attach_lp(h, np.ones(len(tail), dtype=bool), np.zeros((1, h.n)), between,
                              entries=entries):
        return None
    flows[:, switch] += between[:, :m_s]
    hops = servers.enter(g, between[:, m_s:m_s + m_c], flows)
    if not servers.leave(g, up, domain, between[:, m_s + m_c:], to_class, demand, flows):
        return None
    return hops


class _Servers:
    """The servers (scale-up domains with traffic) of a core graph, their GPUs' NICs, and
    the classes they fall in (the same switches with the same NIC capacities)."""

    def __init__(self, g: CoreGraph, node_domain: np.ndarray, member: np.ndarray,
                 switch_of: np.ndarray, up_arc: np.ndarray, down_arc: np.ndarray,
                 domain_class: np.ndarray) -> None:
        n = g.n
        self.node_domain = node_domain  # per node, -1 outside the servers
        self.member, self.member_domain = member, node_domain[member]  # GPUs with a NIC
        self.up_arc, self.down_arc = up_arc, down_arc
        self.n_classes = int(domain_class.max()) + 1
        self.node_class = np.where(node_domain >= 0, domain_class[node_domain], -1)
        self.nic_arc = np.zeros(len(g.tail), dtype=bool)
        self.nic_arc[up_arc] = True
        self.nic_arc[down_arc] = True
        cap_up, cap_down = g.capacity[up_arc], g.capacity[down_arc]
        # Each GPU's part of its server's NICs on its switch (several GPUs may share one).
        _, where = np.unique(self.member_domain * n + switch_of, return_inverse=True)
        where = where.reshape(-1)
        self.up_share = cap_up / np.bincount(where, weights=cap_up)[where]
        self.down_share = cap_down / np.bincount(where, weights=cap_down)[where]
        # One virtual arc per class and switch, holding the class's NICs there.
        pairs, self.member_arc = np.unique(domain_class[self.member_domain] * n + switch_of,
                                           return_inverse=True)
        self.member_arc = self.member_arc.reshape(-1)
        self.arc_class, self.arc_switch = pairs // n, pairs % n
        self.arc_up = np.bincount(self.member_arc, weights=cap_up)
        self.arc_down = np.bincount(self.member_arc, weights=cap_down)

    @classmethod
    def of(cls, g: CoreGraph, up: np.ndarray, domain: np.ndarray, demand: np.ndarray
           ) -> _Servers | None:
        n = g.n
        in_server = np.zeros(n, dtype=bool)
        in_server[g.tail[up]] = True
        in_server[g.head[up]] = True
        attach, up_arc, down_arc = attach_points(g, ~up, demand, in_server)
        ends = np.zeros(n, dtype=bool)
        ends[g.sources] = True
        ends |= demand.sum(axis=0) > 0
        busy = np.isin(domain, np.unique(domain[ends]))  # every node of a server with traffic
        scale_out = np.zeros(n, dtype=bool)
        scale_out[g.tail[~up]] = True
        scale_out[g.head[~up]] = True
        if np.any(busy & scale_out & (up_arc < 0)):
            return None  # a GPU on two switches, or a switch inside a server
        member = np.flatnonzero(busy & (up_arc >= 0))
        node_domain = np.where(busy, domain, -1)
        if not np.all(np.isin(np.unique(domain[ends]), node_domain[member])):
            return None  # a server with traffic and no live NIC
        switch_of = attach[member]
        # A class per distinct list of (switch, NIC up, NIC down), read server by server.
        cap_up, cap_down = g.capacity[up_arc[member]], g.capacity[down_arc[member]]
        order = np.lexsort((cap_down, cap_up, switch_of, node_domain[member]))
        classes: dict[tuple, int] = {}
        domain_class = np.full(int(domain.max()) + 1, -1, dtype=np.int64)
        for d, rows in _groups(node_domain[member], order):
            key = tuple(zip(switch_of[rows].tolist(), cap_up[rows].tolist(),
                            cap_down[rows].tolist(), strict=True))
            domain_class[d] = classes.setdefault(key, len(classes))
        if len(classes) > MAX_CLASSES:
            return None
        return cls(g, node_domain, member, switch_of, up_arc[member], down_arc[member],
                   domain_class)

    def enter(self, g: CoreGraph, into: np.ndarray, flows: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each commodity's flow ``into`` its class's switches (K x class arcs) put on its
        server's NICs in ``flows``; returns the hops ``(k, GPU, amount)`` from each source to
        the GPUs that send its flow on."""
        k_of, row = _members_of(self.member_domain, self.node_domain[g.sources])
        amount = into[k_of, self.member_arc[row]] * self.up_share[row]
        np.add.at(flows, (k_of, self.up_arc[row]), amount)
        away = (self.member[row] != g.sources[k_of]) & (amount > 0)
        return k_of[away], self.member[row][away], amount[away]

    def leave(self, g: CoreGraph, up: np.ndarray, domain: np.ndarray, out_of: np.ndarray,
              to_class: np.ndarray, demand: np.ndarray, flows: np.ndarray) -> bool:
        """Each commodity's flow ``out_of`` the switches into the sink classes (K x class
        arcs) put on the target servers' NICs and then over their scale-up arcs to each
        target, in ``flows``; False when a target cannot be reached inside its server."""
        wanted = to_class[:, self.arc_class]
        with np.errstate(divide="ignore", invalid="ignore"):
            per_unit = np.where(wanted > 0, out_of / wanted, 0.0)
        inner = _ServerArcs(g, up, domain)
        received = demand.sum(axis=0) > 0
        for d, rows in _groups(self.member_domain):
            targets = np.flatnonzero((self.node_domain == d) & received)
            if not len(targets):
                continue
            # share[k, v]: the part of k's demand into this server that leaves the switches
            # through GPU v's NIC.
            share = per_unit[:, self.member_arc[rows]] * self.down_share[rows]
            into = demand[:, targets]  # K x targets
            flows[:, self.down_arc[rows]] += share * into.sum(axis=1)[:, None]
            unit = inner.unit_flows(d, self.member[rows], targets)
            if unit is None:
                return False
            arcs, arc_share, reach, head = unit
            # What of k's flow leaving from GPU v reaches node w: (into @ reach[v].T)[w],
            # for every v at once; an arc takes its share of what reaches its head.
            K, V, n = len(into), len(rows), reach.shape[1]
            at = (into @ reach.reshape(V * n, -1).T).reshape(K, V, n) * share[:, :, None]
            add = np.zeros((K, len(arcs)))
            for w, into_w in _groups(head):
                add[:, into_w] = at[:, :, w] @ arc_share[:, into_w]
            flows[:, arcs] += add
        return True


class _ServerArcs:
    """Each scale-up domain's nodes and arcs, and fewest-hop WCMP flows inside one."""

    def __init__(self, g: CoreGraph, up: np.ndarray, domain: np.ndarray) -> None:
        self.g = g
        inside = np.flatnonzero(up & (domain[g.tail] == domain[g.head]))
        self.arcs_of = {d: inside[rows] for d, rows in _groups(domain[g.tail[inside]])}
        self.nodes_of = dict(_groups(domain))
        self._unit: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def route(self, d: int, sources: np.ndarray, demand: np.ndarray
              ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]] | None:
        """``(arcs, used, loads)``: domain ``d``'s arcs (core arc positions) and, for each of
        ``sources`` (nodes of ``d``), the positions among them its ``demand`` (one row per
        source, over ``d``'s nodes in order) uses and the flow on each, by fewest-hop WCMP
        inside ``d``; None when a target cannot be reached there."""
        g = self.g
        arcs = self.arcs_of.get(d, np.zeros(0, dtype=np.int64))
        nodes = self.nodes_of[d]
        local = np.full(g.n, -1, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        inside = replace(g, nodes=nodes, tail=local[g.tail[arcs]], head=local[g.head[arcs]],
                         capacity=g.capacity[arcs], sources=local[sources], demand=demand,
                         arc_table=None)
        used, loads, cost = ecmp_columns(inside, np.ones(len(arcs)), inside.capacity)
        return None if not np.all(np.isfinite(cost)) else (arcs, used, loads)

    def unit_flows(self, d: int, sources: np.ndarray, targets: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(arcs, share, reach, head)``: domain ``d``'s arcs, fewest-hop WCMP from every
        source to every target on them as :func:`wcmp_unit_flows` gives it, and each arc's
        head among the domain's nodes; None when a target cannot be reached."""
        nodes = self.nodes_of[d]
        # Servers built alike (the same arcs in the same order, capacities and GPUs) share
        # their flows: one routing for every healthy server of a cluster.
        arcs = self.arcs_of.get(d, np.zeros(0, dtype=np.int64))
        first = nodes[0]
        key = (tuple((self.g.tail[arcs] - first).tolist()), tuple((self.g.head[arcs] -
               first).tolist()), tuple(self.g.capacity[arcs].tolist()),
               tuple((sources - first).tolist()), tuple((targets - first).tolist()))
        if key in self._unit:
            return (arcs, *self._unit[key])
        g = self.g
        local = np.searchsorted(nodes, np.r_[g.tail[arcs], g.head[arcs]])
        flows = wcmp_unit_flows(len(nodes), local[:len(arcs)], local[len(arcs):],
                                g.capacity[arcs], np.searchsorted(nodes, sources),
                                np.searchsorted(nodes, targets))
        if flows is None:
            return None
        self._unit[key] = (flows[0], flows[1], local[len(arcs):])
        return (arcs, *self._unit[key])


def wcmp_unit_flows(n: int, tail: np.ndarray, head: np.ndarray, capacity: np.ndarray,
                    sources: np.ndarray, targets: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Fewest-hop WCMP from every source to every target of a small graph of ``n`` nodes,
    as :func:`~fabricopt.flow.approx.colgen.ecmp_columns` builds it, in factored form: ``(share,
    reach)``, where source ``i``'s unit flow to ``targets[j]`` puts
    ``share[i, a] * reach[i, head[a], j]`` on arc ``a``; None when a target cannot be
    reached.

    What reaches a node arrives over its in-arcs on the source's fewest-hop DAG in shares
    ``share`` of their capacity, so the flow reaching each node solves ``x = e_t + Q x``
    (``Q[u, w]`` the share ``w`` takes from ``u``): one dense solve per source for all its
    targets at once. Routing pair by pair took half a second on a 90-node rack, and the
    flows pair by pair (72 x 72 pairs x 2,600 arcs) were too many to hold.

    >>> share, reach = wcmp_unit_flows(3, np.array([0, 0, 1, 2]), np.array([1, 2, 2, 1]),
    ...                                np.array([1.0, 3.0, 1.0, 1.0]), np.array([0]),
    ...                                np.array([1, 2]))
    >>> share[0] * reach[0][[1, 2, 2, 1]].T   # arc by arc, to node 1 then node 2
    array([[1., 0., 0., 0.],
           [0., 1., 0., 0.]])
    """
    hops = sp.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
    dist = shortest_path(hops, directed=True, unweighted=True, indices=sources)
    if not np.all(np.isfinite(dist[:, targets])):
        return None
    share = np.zeros((len(sources), len(tail)))
    reach = np.zeros((len(sources), n, len(targets)))
    arrive = np.zeros((n, len(targets)))
    arrive[targets, np.arange(len(targets))] = 1.0
    for i, d in enumerate(dist):
        on = np.isfinite(d[tail]) & (d[head] == d[tail] + 1)
        weight = np.where(on, capacity, 0.0)
        into = np.bincount(head, weights=weight, minlength=n)
        share[i] = np.where(on, weight / np.where(into[head] > 0, into[head], 1.0), 0.0)
        Q = np.zeros((n, n))
        np.add.at(Q, (tail, head), share[i])
        reach[i] = np.linalg.solve(np.eye(n) - Q, arrive)
    return share, reach


def route_inside_domains(g: CoreGraph, up: np.ndarray, domain: np.ndarray,
                         demand: np.ndarray, flows: np.ndarray) -> bool:
    """Add to ``flows`` (K x core arcs) every commodity's ``demand`` routed by fewest-hop
    WCMP over the scale-up arcs ``up`` of its source's domain, one domain at a time (a
    server's dozen nodes, where routing over the whole graph searched thousands); False
    (``flows`` untouched) when a target lies outside its source's domain or cannot be reached
    inside it."""
    k_of, t_of = np.nonzero(demand)
    source_domain = domain[g.sources]
    if np.any(domain[t_of] != source_domain[k_of]):
        return False
    servers = _ServerArcs(g, up, domain)
    rows, cols, values = [], [], []
    for d, ks in _groups(source_domain[np.unique(k_of)], None, np.unique(k_of)):
        routed = servers.route(d, g.sources[ks], demand[np.ix_(ks, servers.nodes_of[d])])
        if routed is None:
            return False
        arcs, used, loads = routed
        for k, a, f in zip(ks, used, loads, strict=True):
            rows.append(np.full(len(a), k))
            cols.append(arcs[a])
            values.append(f)
    if rows:
        np.add.at(flows, (np.concatenate(rows), np.concatenate(cols)), np.concatenate(values))
    return True


def _groups(label: np.ndarray, order: np.ndarray | None = None,
            items: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """``(value, positions)`` for each distinct value of ``label``, positions in ``order``
    (sorted by label when not given); ``items[positions]`` instead when ``items`` is given."""
    if order is None:
        order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    for rows in np.split(order, cuts):
        if len(rows):
            yield int(label[rows[0]]), (rows if items is None else items[rows])


def _members_of(member_domain: np.ndarray, wanted: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(i, row)`` for every position ``i`` of ``wanted`` (a domain each, -1 for none) and
    every member ``row`` of that domain."""
    order = np.argsort(member_domain, kind="stable")
    ends = np.searchsorted(member_domain[order], [wanted, wanted + 1], side="left")
    count = np.where(wanted >= 0, ends[1] - ends[0], 0)
    i = np.repeat(np.arange(len(wanted)), count)
    step = np.arange(len(i)) - np.repeat(np.cumsum(count) - count, count)
    return i, order[np.repeat(ends[0], count) + step]


__all__ = ["MAX_CLASSES", "route_between_domains", "route_inside_domains", "wcmp_unit_flows"]
