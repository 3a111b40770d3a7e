r"""The two-phase LP with alike scale-up domains merged: one small LP whose point lifts to
every endpoint and whose duals bound the full LP.

In a cluster an endpoint's phase-1 flow leaves its scale-up domain (a server: GPUs and
NVSwitches, or a lone host) by the domain's network links, and its GPUs can relay to one
another over NVLink, as NCCL's PXN does. The LP below keeps the network as it is and merges
each *group* of domains attached alike (the same number of endpoints, the same links to the
same network switches: the servers of a rail-optimized scalable unit, the hosts of a leaf)
into one node that sends for all its endpoints: one commodity per group, over the network's
arcs and the group's own links out, with the rows :math:`L(a) + L(\bar a) \le c(a)`
(:mod:`fabricopt.flow.two_phase.rate`). On the 2,048-GPU rail-optimized 2:1 cluster that is 7
commodities and 13,700 columns, against 46 million in the per-endpoint LP.

* **Lower bound (its point, lifted).** Each endpoint of a group takes ``1/E`` of the group's
  network flow; inside its domain it sends, over the scale-up links by fewest-hop WCMP
  (:func:`~fabricopt.flow.two_phase.bounds.phase_one_flows`), what each of the domain's
  network links carries for it: the group's flow on those links in proportion to their
  capacity. Every endpoint's flow conserves, and the loads of all of them are checked against
  every arc of the fabric, NVLink included, by :func:`~fabricopt.flow.certificate.certify`.
* **Upper bound (its duals).** The duals of the capacity rows are lengths on the network and
  domain links (0 inside domains); for any lengths :math:`l \ge 0` the two-phase rate is at
  most :math:`\sum_a c_a l_a / \sum_s \sum_\tau p_\tau\, \mathrm{dist}_{l + l\circ
  \mathrm{rev}}(s, \tau)`, evaluated on the whole fabric from one endpoint per domain (the
  others are at the same distances: inside a domain every length is 0).

When the merged LP's optimum is the full LP's (relays over scale-up links cost nothing but
network capacity, and the network does not care which server of a group sends), the two
meet. Groups need hubs on the network (a level of switches), and every link both ways.

A fat tree that lost three spine-core links, its leaves as hubs (the hosts under a leaf are
one group): WCMP cannot route around the missing links, the merged LP does, and its duals
prove the same rate as the per-endpoint LP (133.33 Gb/s):

>>> import fabricopt as fo
>>> fab = fo.fat_tree(4).without_links([("core1.0", "spine0.1"), ("core1.1", "spine0.1"),
...                                     ("core0.0", "spine2.0")])
>>> b = fo.valiant_rate(fab, hubs=1)
>>> b.method, round(b.rate_gbps, 6), round(b.upper_gbps, 6)
('bounds', 133.333333, 133.333333)
>>> b.message
"bounds first: the merged LP's point and the merged LP's duals meet"
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from ...graph_arrays import GraphArrays
from ..lp import LinearProgram
from ..model import DistanceBound, LiftedFlow, max_theta_lp
from .bounds import hops_to_hubs, phase_one_flows

#: Largest merged LP built, in columns (commodities x arcs it may use).
MAX_DOMAIN_COLUMNS = 400_000


@dataclass(frozen=True)
class _Domains:
    """Scale-up domains (components of the scale-up links holding an endpoint) and their
    groups: ``domain`` per node (-1 for the network), ``group`` per domain, each group's
    endpoints ``group_endpoints`` and its domains ``group_domains``."""

    domain: np.ndarray
    group: np.ndarray
    group_endpoints: np.ndarray
    group_domains: np.ndarray

    @classmethod
    def of(cls, ga: GraphArrays, ep_idx: np.ndarray, up: np.ndarray,
           comp: np.ndarray | None = None) -> _Domains | None:
        """The domains of the scale-up arcs ``up`` (``comp``, their components per node, when
        the fabric's shape read them: :attr:`~fabricopt.graph_arrays.FabricShape.domain`);
        None when an endpoint repeats or links join two domains directly."""
        n = ga.n_nodes
        if comp is None:
            joined = sp.csr_matrix((np.ones(int(up.sum())), (ga.tail[up], ga.head[up])),
                                   shape=(n, n))
            comp = connected_components(joined, directed=False)[1]
        has_ep = np.zeros(int(comp.max()) + 1, dtype=bool)
        has_ep[comp[ep_idx]] = True
        ids = np.full(len(has_ep), -1)
        ids[has_ep] = np.arange(int(has_ep.sum()))
        domain = ids[comp]
        n_dom = int(has_ep.sum())
        endpoints = np.bincount(domain[ep_idx], minlength=n_dom)
        if len(np.unique(ep_idx)) != len(ep_idx) or np.any(endpoints == 0):
            return None
        both_in = (domain[ga.tail] >= 0) & (domain[ga.head] >= 0)
        if np.any(domain[ga.tail[both_in]] != domain[ga.head[both_in]]):
            return None  # links between domains that bypass the network: not this model
        # A domain's signature: its endpoints and its links out to and in from the network
        # (direction, network node, capacity), in a canonical order.
        cross = np.flatnonzero((domain[ga.tail] >= 0) != (domain[ga.head] >= 0))
        out = domain[ga.tail[cross]] >= 0
        dom_of = np.where(out, domain[ga.tail[cross]], domain[ga.head[cross]])
        other = np.where(out, ga.head[cross], ga.tail[cross])
        order = np.lexsort((ga.capacity[cross], other, ~out, dom_of))
        rows = np.stack([~out, other, ga.capacity[cross]], axis=1).astype(float)[order]
        cuts = np.searchsorted(dom_of[order], np.arange(n_dom + 1))
        keys = {d: (int(endpoints[d]), rows[cuts[d]:cuts[d + 1]].tobytes())
                for d in range(n_dom)}
        group_of: dict[tuple, int] = {}
        group = np.array([group_of.setdefault(keys[d], len(group_of)) for d in range(n_dom)])
        return cls(domain, group, np.bincount(group, weights=endpoints).astype(float),
                   np.bincount(group).astype(float))


@dataclass(frozen=True)
class DomainPhaseOne:
    """The merged LP (see the module docstring), following
    :class:`~fabricopt.flow.model.ThroughputModel` with theta the rate in ``scale`` Gb/s."""

    lp: LinearProgram
    ga: GraphArrays
    rev: np.ndarray
    domains: _Domains
    node2: np.ndarray          # merged node of each fabric node
    arc2: np.ndarray           # merged arc of each fabric arc (-1 inside a domain)
    cap2: np.ndarray           # capacity of each merged arc (Gb/s)
    col_commodity: np.ndarray  # per LP flow column: its group
    col_arc: np.ndarray        # per LP flow column: its merged arc
    supply: np.ndarray         # groups x merged nodes, per unit theta (endpoints)
    ep_idx: np.ndarray
    hub_idx: np.ndarray
    share: np.ndarray
    scale: float

    @classmethod
    def build(cls, ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
              hub_idx: np.ndarray, share: np.ndarray, scale_up: np.ndarray,
              components: np.ndarray | None = None) -> DomainPhaseOne | None:
        """The merged LP, or None when it does not apply (a hub inside a domain, links
        between domains, no merging to gain) or exceeds :data:`MAX_DOMAIN_COLUMNS`.
        ``components``: the scale-up arcs' components per node, when read already."""
        dom = _Domains.of(ga, ep_idx, scale_up, components)
        if dom is None or np.any(dom.domain[hub_idx] >= 0):
            return None
        n_groups = len(dom.group_endpoints)
        network = np.flatnonzero(dom.domain < 0)
        node2 = np.empty(ga.n_nodes, dtype=np.int64)
        node2[network] = np.arange(len(network))
        inside = dom.domain >= 0
        node2[inside] = len(network) + dom.group[dom.domain[inside]]
        n2 = len(network) + n_groups
        crossing = ~(inside[ga.tail] & inside[ga.head])
        pairs = node2[ga.tail] * n2 + node2[ga.head]
        keys, arc2 = np.unique(pairs[crossing], return_inverse=True)
        arc2_full = np.full(ga.n_arcs, -1)
        arc2_full[crossing] = arc2
        cap2 = np.bincount(arc2, weights=ga.capacity[crossing], minlength=len(keys))
        tail2, head2 = keys // n2, keys % n2
        # Commodity k uses the network's arcs and its own group's links out: no transit
        # through domains (its lift would need routing inside another group's domains).
        group_node = tail2 - len(network)
        cols_k, cols_a = [], []
        for k in range(n_groups):
            usable = (head2 < len(network)) & ((tail2 < len(network)) | (group_node == k))
            cols_a.append(np.flatnonzero(usable))
            cols_k.append(np.full(len(cols_a[-1]), k))
        col_k, col_a = np.concatenate(cols_k), np.concatenate(cols_a)
        if len(col_a) > MAX_DOMAIN_COLUMNS or n_groups >= len(ep_idx):
            return None
        rev2 = _reverse_of(tail2, head2, n2)
        m2 = len(keys)
        flow_eq = sp.csr_matrix(
            (np.r_[np.ones(len(col_a)), -np.ones(len(col_a))],
             (np.r_[col_k * n2 + tail2[col_a], col_k * n2 + head2[col_a]],
              np.r_[np.arange(len(col_a)), np.arange(len(col_a))])),
            shape=(n_groups * n2, len(col_a)))
        supply = np.zeros((n_groups, n2))
        supply[np.arange(n_groups), len(network) + np.arange(n_groups)] = dom.group_endpoints
        np.subtract.at(supply, (slice(None), node2[hub_idx]),
                       dom.group_endpoints[:, None] * share[None, :])
        # Row of merged arc c: its own load and its reverse's.
        has_rev = rev2[col_a] >= 0
        rows = sp.csr_matrix((np.ones(len(col_a) + int(has_rev.sum())),
                              (np.r_[col_a, rev2[col_a][has_rev]],
                               np.r_[np.arange(len(col_a)), np.flatnonzero(has_rev)])),
                             shape=(m2, len(col_a)))
        scale = float(ga.capacity.max())
        lp = max_theta_lp(flow_eq, supply.ravel(), rows, cap2 / scale)
        return cls(lp, ga, rev, dom, node2, arc2_full, cap2, col_k, col_a, supply, ep_idx,
                   hub_idx, share, scale)

    @property
    def constrained(self) -> np.ndarray:
        return np.ones(self.ga.n_arcs, dtype=bool)

    @property
    def min_demand(self) -> float:
        return self.scale * float(self.share[self.share > 0].min())

    def lift(self, x: np.ndarray) -> LiftedFlow:
        """Both phases' load per fabric arc (Gb/s) when every endpoint routes its share of
        its group's flow, and the largest per-endpoint conservation residual (Gb/s)."""
        ga, dom = self.ga, self.domains
        theta = float(x[-1])
        flow = np.clip(x[:-1], 0.0, None)
        n_groups, n2 = self.supply.shape
        m2 = len(self.cap2)
        per_group = np.zeros((n_groups, m2))
        np.add.at(per_group, (self.col_commodity, self.col_arc), flow)
        tail2 = np.zeros(m2, dtype=np.int64)
        head2 = np.zeros(m2, dtype=np.int64)
        mapped = self.arc2 >= 0
        tail2[self.arc2[mapped]] = self.node2[ga.tail[mapped]]
        head2[self.arc2[mapped]] = self.node2[ga.head[mapped]]
        net = (np.stack([np.bincount(tail2, weights=f, minlength=n2)
                         - np.bincount(head2, weights=f, minlength=n2) for f in per_group])
               - theta * self.supply)
        residual = float((np.abs(net).sum(axis=1) / dom.group_endpoints).max())
        # Fabric arcs outside domains: the merged arc's load split by capacity.
        total2 = per_group.sum(axis=0)
        load = np.zeros(ga.n_arcs)
        load[mapped] = total2[self.arc2[mapped]] * ga.capacity[mapped] / np.where(
            self.cap2[self.arc2[mapped]] > 0, self.cap2[self.arc2[mapped]], 1.0)
        inner, inner_residual = self._inside(per_group, theta, load)
        load += inner
        load *= self.scale
        return LiftedFlow(theta, load + load[self.rev],
                          (residual + inner_residual) * self.scale, load)

    def _inside(self, per_group: np.ndarray, theta: float, exits: np.ndarray,
                ) -> tuple[np.ndarray, float]:
        """Load on the links inside domains: each endpoint sends (per unit of the point's
        theta) to every link out of its domain that link's load over the domain's
        endpoints, by fewest-hop WCMP on the domain's own links."""
        ga, dom = self.ga, self.domains
        load = np.zeros(ga.n_arcs)
        residual = 0.0
        if theta <= 0:
            return load, residual
        d_of = dom.domain
        out_arcs = np.flatnonzero((d_of[ga.tail] >= 0) & (d_of[ga.head] < 0))
        inner = np.flatnonzero((d_of[ga.tail] >= 0) & (d_of[ga.tail] == d_of[ga.head]))
        ep_count = np.bincount(d_of[self.ep_idx], minlength=len(dom.group))
        by_dom_out = _split(d_of[ga.tail[out_arcs]], out_arcs)
        by_dom_in = _split(d_of[ga.tail[inner]], inner)
        by_dom_ep = _split(d_of[self.ep_idx], self.ep_idx)
        for d in range(len(dom.group)):
            arcs_out = by_dom_out.get(d, np.zeros(0, dtype=np.int64))
            if not len(arcs_out):
                continue
            arcs_in = by_dom_in.get(d, np.zeros(0, dtype=np.int64))
            exit_nodes, where = np.unique(ga.tail[arcs_out], return_inverse=True)
            demand = np.bincount(where, weights=exits[arcs_out]) / (theta * ep_count[d])
            if len(exit_nodes) == 1 or not len(arcs_in):
                continue  # one exit: the endpoint is it (a lone host), nothing inside
            nodes = np.unique(np.r_[ga.tail[arcs_in], ga.head[arcs_in], exit_nodes])
            local = {int(v): i for i, v in enumerate(nodes)}
            sub = _SubArrays(np.array([local[int(v)] for v in ga.tail[arcs_in]]),
                             np.array([local[int(v)] for v in ga.head[arcs_in]]),
                             ga.capacity[arcs_in], len(nodes))
            to_exit = hops_to_hubs(sub, np.array([local[int(v)] for v in exit_nodes]))
            injection = np.zeros(len(nodes))
            for e in by_dom_ep[d]:
                injection[local[int(e)]] += theta
            shares = demand / demand.sum() if demand.sum() > 0 else demand
            flow, res = phase_one_flows(sub, to_exit, shares, injection)
            load[arcs_in] += flow
            residual = max(residual, res / max(ep_count[d], 1))
        return load, residual

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        """Each fabric arc's length: its merged arc's dual (0 inside a domain)."""
        y = np.clip(-dual_ub[: len(self.cap2)], 0.0, None)
        return np.where(self.arc2 >= 0, y[np.maximum(self.arc2, 0)], 0.0)

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None:
        """The two-phase distance bound of ``lengths`` on the whole fabric (rate in theta
        units), from one endpoint per domain."""
        ga = self.ga
        lengths = np.clip(np.asarray(lengths, dtype=float), 0.0, None)
        both = lengths + lengths[self.rev]
        numerator = float(ga.capacity @ lengths) / self.scale
        d_of = self.domains.domain[self.ep_idx]
        _, first = np.unique(d_of, return_index=True)
        reps = self.ep_idx[first]
        count = np.bincount(d_of).astype(float)[d_of[first]]
        # Explicit zeros stay arcs of length 0 for the shortest-path search.
        M = sp.csr_matrix((both, (ga.tail, ga.head)), shape=(ga.n_nodes, ga.n_nodes))
        dist = dijkstra(M, directed=True, indices=reps)[:, self.hub_idx]
        if not np.all(np.isfinite(dist)):
            return DistanceBound(np.inf, numerator, np.inf, failure="a hub out of reach")
        denominator = float(count @ (dist @ self.share))
        upper = numerator / denominator if denominator > 0 else np.inf
        return DistanceBound(upper, numerator, denominator)


@dataclass(frozen=True)
class _SubArrays:
    """The arrays :func:`~fabricopt.flow.two_phase.bounds.phase_one_flows` reads, for the
    links inside one domain."""

    tail: np.ndarray
    head: np.ndarray
    capacity: np.ndarray
    n_nodes: int

    @property
    def n_arcs(self) -> int:
        return len(self.tail)


def _split(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` grouped by ``keys``."""
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    cuts = np.flatnonzero(np.diff(keys)) + 1
    return {int(k[0]): v for k, v in zip(np.split(keys, cuts), np.split(values, cuts),
                                          strict=True) if len(k)}


def _reverse_of(tail: np.ndarray, head: np.ndarray, n: int) -> np.ndarray:
    """Position of each arc's reverse among the arcs (-1 when absent)."""
    key = tail * n + head
    order = np.argsort(key)
    want = head * n + tail
    pos = np.searchsorted(key[order], want)
    pos = np.minimum(pos, len(key) - 1)
    found = key[order][pos] == want
    return np.where(found, order[pos], -1)


__all__ = ["MAX_DOMAIN_COLUMNS", "DomainPhaseOne"]
