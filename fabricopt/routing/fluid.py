r"""Destination-based routing as a fluid: ECMP, WCMP and static tables, per destination.

A destination-based routing is, for every destination :math:`t` and node :math:`u`, a split
:math:`\phi_t(a)` of what :math:`u` holds for :math:`t` over the arcs :math:`a` leaving
:math:`u` on a shortest path to :math:`t` (the shortest-path DAG: :math:`d_t(u) = d_t(v) + 1`
for arc :math:`a = (u, v)`, hop distances :math:`d_t`). With :math:`X_t(u)` the demand
sourced at :math:`u` for :math:`t`, the flow through :math:`u` is

.. math::

    F_t(u) = X_t(u) + \sum_{a = (w, u)} F_t(w)\, \phi_t(a),

and arc :math:`a = (u, v)` carries :math:`\sum_t F_t(u) \phi_t(a)`. Nodes are settled in
order of falling distance, so one sweep over the distance levels computes :math:`F_t` for a
whole block of destinations at once, as dense (node x destination) arrays and a sparse
head-incidence product per level: no loop over pairs or over destinations.

Splits:

* ``"equal"`` (ECMP): :math:`\phi_t(a) = 1 / |\text{DAG arcs leaving } u|`;
* ``"capacity"`` (WCMP): :math:`\phi_t(a) = c_a / \sum c` over the DAG arcs leaving
  :math:`u`;
* ``"static"``: one physical port per destination, chosen by the destination's index: the
  ``j``-th port with :math:`j = \lfloor r_t / q(u) \rfloor \bmod k_t(u)`, :math:`r_t` the
  destination's rank (destinations numbered leaf by leaf), :math:`k_t(u)` the member links of
  the DAG arcs leaving :math:`u` (a bundle of ``L`` links is ``L`` ports) and :math:`q(u)` the
  product of the up-port counts of the layers below :math:`u` going up, 1 going down (so the
  parallel links of a downward bundle take consecutive destinations in turn). On a fat-tree
  this is D-mod-k (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift
  Permutations on Real Life Fat Trees"), the destination-based scheme of InfiniBand subnet
  managers' fat-tree routing. Loads are then kept per member link and returned
  port-equivalent (the bundle's links times its busiest member's load, as
  :mod:`fabricopt.routing.hashing` does), so a bundle is never a fluid pipe to a table.

A GPU behind one NIC has one arc out of its sending copy and none in: every route it starts
takes that arc. Its demand is pushed onto the arc's head before the sweep, and the sweep and
the distance searches run on the graph without such senders (and without receiving copies,
which only end routes): at 16,384 GPUs a few thousand switch nodes instead of some 40,000.
Uniform traffic under ECMP or WCMP reaches the networks already summed by destination class
(:mod:`fabricopt.routing.uniform`), not as 268 million pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from .hashing import port_equivalent
from .networks import Network

SPLITS = ("equal", "capacity", "static")

#: Entries of the (node x destination) distance block.
DIST_BLOCK = 4_000_000
#: Most (node x destination) entries of a block gathered from several small components.
MERGED_BLOCK = 20_000
#: Entries of the (arc x destination) arrays of one propagation sweep.
SWEEP_BLOCK = 3_000_000
#: Largest (node x column) demand table summed densely.
DENSE_DEMAND = 8_000_000


class FluidRouting:
    """Demand of one network, gathered chunk by chunk, then routed by :meth:`loads`.

    Parameters
    ----------
    network : Network
    per_target : bool
        One column per destination endpoint (static tables, which tell destinations under
        one leaf apart); otherwise one column per destination class (ECMP and WCMP, whose
        splits only depend on distances, the same for every destination of a class).
    """

    def __init__(self, network: Network, per_target: bool) -> None:
        self.network = network
        self.per_target = per_target
        T = len(network.target)
        if per_target:
            self.n_cols = T
            self.col_node = network.target
        else:
            classes, self.col_of_endpoint = np.unique(network.klass, return_inverse=True)
            self.n_cols = len(classes)
            self.col_node = classes
        # Dense sums while the (node x column) table is small, else coordinate lists.
        self._dense = network.n_nodes * self.n_cols <= DENSE_DEMAND
        self._sum = np.zeros(network.n_nodes * self.n_cols if self._dense else 0)
        self._parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.in_gbps = np.zeros(T)
        self.pairs = 0

    def add(self, src: np.ndarray, dst: np.ndarray, gbps: np.ndarray) -> None:
        """Add demands ``gbps[j]`` from endpoint position ``src[j]`` to ``dst[j]``."""
        if not len(src):
            return
        cols = dst if self.per_target else self.col_of_endpoint[dst]
        key = self.network.source[src] * self.n_cols + cols
        if self._dense:
            self._sum += np.bincount(key, weights=gbps, minlength=len(self._sum))
        else:
            # A block of demands comes from a few consecutive sources: summed over its span
            # of keys at once, so a uniform traffic of 268 million pairs (16,384 GPUs) keeps
            # one entry per (source, column) instead of one per pair.
            lo, hi = int(key.min()), int(key.max())
            if hi - lo < 4 * len(key):
                sums = np.bincount(key - lo, weights=gbps, minlength=hi - lo + 1)
                used = np.flatnonzero(sums)
                self._parts.append((used + lo, sums[used]))
            else:
                self._parts.append((key, gbps))
        self.in_gbps += np.bincount(dst, weights=gbps, minlength=len(self.in_gbps))
        self.pairs += len(src)

    def add_table(self, src: np.ndarray, gbps: np.ndarray, in_gbps: np.ndarray,
                  pairs: int) -> None:
        """Add demands already summed by column: ``gbps[j, c]`` from endpoint position
        ``src[j]`` to column ``c``; ``in_gbps`` is what each endpoint receives, ``pairs``
        how many pairs that makes (not for ``per_target``)."""
        rows = self.network.source[src]
        if self._dense and not self._sum.any():
            # Into an empty table: summed by one sparse product, row by row in the order
            # np.add.at adds them (the same floats), a tenth of its time at 16,384 GPUs.
            gather = sp.csr_matrix((np.ones(len(rows)), (rows, np.arange(len(rows)))),
                                   shape=(self.network.n_nodes, len(rows)))
            self._sum += np.asarray(gather @ np.asarray(gbps, dtype=float)).reshape(-1)
        elif self._dense:
            np.add.at(self._sum.reshape(self.network.n_nodes, self.n_cols), rows, gbps)
        else:
            r, c = np.nonzero(gbps)
            self._parts.append((rows[r] * self.n_cols + c, gbps[r, c]))
        self.in_gbps += in_gbps
        self.pairs += pairs

    def supply(self) -> sp.csr_matrix:
        """Gb/s each network node sources for each column."""
        shape = (self.network.n_nodes, self.n_cols)
        if self._dense:
            return sp.csr_matrix(self._sum.reshape(shape))
        key = np.concatenate([k for k, _ in self._parts]) if self._parts else np.zeros(0, int)
        gbps = np.concatenate([g for _, g in self._parts]) if self._parts else np.zeros(0)
        return sp.csr_matrix((gbps, (key // self.n_cols, key % self.n_cols)), shape=shape)

    def loads(self, split: str, rank: np.ndarray | None = None,
              links: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Gb/s on every network arc when the demands are routed with ``split``: carried, and
        port-equivalent (the same but for ``"static"``, whose tables pick one of an arc's
        ``links`` member links; see :func:`~fabricopt.routing.hashing.port_equivalent`)."""
        network = self.network
        load = np.zeros(network.n_arcs)
        if self.pairs == 0:
            return load, load
        links = np.ones(network.n_arcs, dtype=np.int64) if links is None else links
        members = None
        if split == "static":
            first_member = np.cumsum(links) - links
            members = _Members(links, first_member, np.zeros(int(links.sum())))
        X = self.supply().tocsc()
        cols = np.flatnonzero(np.diff(X.indptr) > 0)
        if not self.per_target and split != "static":
            # The last hop of a collapsed destination carries all it receives in this network.
            hit = network.collapsed & (self.in_gbps > 0)
            np.add.at(load, network.last_arc[hit], self.in_gbps[hit])
        # Neighbouring destinations share the nodes their routes visit: keep them in one block.
        cols = cols[np.lexsort((self.col_node[cols], network.component[self.col_node[cols]]))]
        div = up_port_divisors(network, links) if split == "static" else None
        senders = self._pure_senders(X) if split != "static" else np.zeros(0, dtype=np.int64)
        if len(senders):
            self._loads_pushed(load, X, cols, split, senders)
            return load, load
        self._check_components(X)
        for block, rows in self._blocks(cols):
            dist = self._distances(block, rows)
            self._sweep(load, rows, dist, X[:, block][rows].toarray(), split, block, rank, div,
                        members)
        if members is None:
            return load, load
        carried = load + np.add.reduceat(members.load, members.first)
        return carried, load + port_equivalent(members.load, members.links, members.first)

    def _pure_senders(self, X: sp.csc_matrix) -> np.ndarray:
        """Network nodes that source demand, have one arc out and none in, and are no column's
        node (a GPU's sending copy behind its one NIC): no route passes through them and all
        their demand takes their arc, so it is pushed one hop before the sweep, and the sweep
        and the distances skip them. (Senders with several arcs stay in the sweep: splitting
        them per destination first cost more than it saved.)"""
        network = self.network
        has_supply = np.zeros(network.n_nodes, dtype=bool)
        has_supply[np.unique(X.tocoo().row)] = True
        in_degree = np.bincount(network.head, minlength=network.n_nodes)
        out_degree = np.diff(network.indptr)
        pure = has_supply & (in_degree == 0) & (out_degree == 1)
        pure[self.col_node] = False
        # The arc's head must stay in the sweep: not itself a sender, and able to forward.
        head = network.head[network.indptr[:-1][pure]]
        fine = (~pure[head]) & (out_degree[head] > 0)
        nodes = np.flatnonzero(pure)[fine]
        # Worth it when they are a good share of the graph (endpoints at scale).
        return nodes if len(nodes) * 4 >= network.n_nodes else np.zeros(0, dtype=np.int64)

    def _loads_pushed(self, load: np.ndarray, X: sp.csc_matrix, cols: np.ndarray, split: str,
                      senders: np.ndarray) -> None:
        """:meth:`loads` with the demand of ``senders`` pushed over their own arcs first, then
        swept on the graph without them (and without receiving copies no column needs)."""
        network = self.network
        out_degree = np.diff(network.indptr)
        keep = np.ones(network.n_nodes, dtype=bool)
        keep[senders] = False
        # A node with no arc out (a receiving copy) that is no column's node is only ever a
        # last hop, handled apart: dropped.
        keep[out_degree == 0] = False
        keep[self.col_node] = True
        rows = np.flatnonzero(keep)
        n_rows = len(rows)
        local = np.full(network.n_nodes, -1, dtype=np.int64)
        local[rows] = np.arange(n_rows)
        inner = keep[network.tail] & keep[network.head]
        reverse = sp.csr_matrix((np.ones(int(inner.sum())), (local[network.head[inner]],
                                                             local[network.tail[inner]])),
                                shape=(n_rows, n_rows))
        Xr = X.tocsr()
        arcs = network.indptr[senders]
        demand = Xr[senders]
        load[arcs] += np.asarray(demand.sum(axis=1)).ravel()
        onto = sp.csr_matrix((np.ones(len(senders)), (local[network.head[arcs]],
                                                      np.arange(len(senders)))),
                             shape=(n_rows, len(senders)))
        base = (Xr[rows] + onto @ demand).tocsc()
        width = max(1, DIST_BLOCK // max(n_rows, 1))
        for start in range(0, len(cols), width):
            block = cols[start:start + width]
            dist = shortest_path(reverse, directed=True, unweighted=True,
                                 indices=local[self.col_node[block]])
            dist = np.atleast_2d(dist).T  # (kept nodes x block)
            self._sweep(load, rows, dist, base[:, block].toarray(), split, block, None, None)

    def _check_components(self, X: sp.csc_matrix) -> None:
        """Raise when a demand's source lies in another component than its destination: the
        blocks below search each destination's own component only."""
        component = self.network.component
        coo = X.tocoo()
        if np.any(component[coo.row] != component[self.col_node[coo.col]]):
            raise RuntimeError("routing: a demand has no path in its network")

    def _blocks(self, cols: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Blocks of destination columns (in order) with the network nodes their routes can
        use: the nodes of their components. A network of many small components (the NVLink
        domains of 2,048 servers) is searched and swept domain by domain, a few hundred
        (node x column) entries each, not as 40,000 nodes for every column; components are
        merged up to :data:`MERGED_BLOCK` entries and a large one is split by columns."""
        network = self.network
        comp = network.component[self.col_node[cols]]
        sizes = np.bincount(network.component)
        by_comp = np.argsort(network.component, kind="stable")
        first = np.r_[0, np.cumsum(sizes)]
        bounds = np.r_[0, np.flatnonzero(np.diff(comp)) + 1, len(cols)]
        blocks: list[tuple[np.ndarray, np.ndarray]] = []
        lo, comps, n_rows = 0, [], 0  # the components gathered since column lo

        def flush(hi: int) -> None:
            if hi > lo:
                rows = np.sort(np.concatenate([by_comp[first[c]:first[c + 1]] for c in comps]))
                blocks.append((cols[lo:hi], rows))

        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            c = int(comp[start])
            size = int(sizes[c])
            if comps and (n_rows + size) * (stop - lo) > MERGED_BLOCK:
                flush(start)
                lo, comps, n_rows = start, [], 0
            if size * (stop - start) > MERGED_BLOCK:  # a large component: alone, by columns
                rows = by_comp[first[c]:first[c + 1]]
                width = max(1, DIST_BLOCK // size)
                blocks += [(cols[s:min(s + width, stop)], rows)
                           for s in range(start, stop, width)]
                lo = stop
                continue
            comps.append(c)
            n_rows += size
        flush(len(cols))
        return blocks

    def _distances(self, cols: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Hop distances from the nodes ``rows`` to each column's destination."""
        network = self.network
        if not self.per_target:
            return network.distances_to(self.col_node[cols], rows)
        # Routes to a destination are routes to its class node plus the last arc.
        classes, inverse = np.unique(network.klass[cols], return_inverse=True)
        dist = network.distances_to(classes, rows)[:, inverse]
        dist += network.collapsed[cols][None, :]
        dist[np.searchsorted(rows, network.target[cols]), np.arange(len(cols))] = 0.0
        return dist

    def _sweep(self, load: np.ndarray, rows: np.ndarray, dist: np.ndarray, supply: np.ndarray,
               split: str, cols: np.ndarray, rank: np.ndarray | None,
               div: np.ndarray | None, members: _Members | None = None) -> None:
        """Route ``supply`` (rows: the network nodes ``rows``; columns: ``cols``) down the
        distance levels ``dist`` (same shape), adding what each arc carries to ``load`` (to
        ``members``, per member link, for static tables)."""
        network = self.network
        finite = np.isfinite(dist)
        reached = np.flatnonzero(finite.any(axis=1))
        nodes = rows[reached]
        local = np.full(network.n_nodes, -1, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        keep = (local[network.tail] >= 0) & (local[network.head] >= 0)
        arcs = np.flatnonzero(keep)  # still sorted by tail
        tail, head = local[network.tail[arcs]], local[network.head[arcs]]
        n = len(nodes)
        tail_inc = sp.csr_matrix((np.ones(len(arcs)), (tail, np.arange(len(arcs)))),
                                 shape=(n, len(arcs)))
        head_inc = sp.csr_matrix((np.ones(len(arcs)), (head, np.arange(len(arcs)))),
                                 shape=(n, len(arcs)))
        d_all = dist[reached]
        supply_all = supply[reached]
        if np.any(supply_all[~np.isfinite(d_all)] > 0):
            raise RuntimeError("routing: a demand has no path in its network")
        width = max(1, SWEEP_BLOCK // max(len(arcs), 1))
        for start in range(0, len(cols), width):
            sl = slice(start, start + width)
            d = d_all[:, sl]
            d_tail, d_head = d[tail], d[head]
            dag = np.isfinite(d_head) & (d_tail == d_head + 1)
            if split == "capacity":
                weight = dag * network.capacity[arcs][:, None]
            else:
                weight = dag.astype(float)
            out_weight = tail_inc @ weight
            member = None
            if split == "static":
                ports = dag * members.links[arcs][:, None]  # type: ignore[union-attr]
                up = network.layer[network.head[arcs]] > network.layer[network.tail[arcs]]
                weight, member = _static_choice(ports, tail, tail_inc @ ports, rank[cols[sl]],
                                                np.where(up, div[network.tail[arcs]], 1))
                out_weight = np.ones_like(out_weight)
            with np.errstate(invalid="ignore", divide="ignore"):
                frac = np.where(dag, weight / out_weight[tail], 0.0)
            flow = supply_all[:, sl].copy()
            top = d_tail[dag].max(initial=0.0)
            carried = np.zeros(len(arcs))
            for level in range(int(top), 0, -1):
                on_arc = np.where(d_tail == level, flow[tail] * frac, 0.0)
                flow += head_inc @ on_arc
                if member is None:
                    carried += on_arc.sum(axis=1)
                else:
                    a, c = np.nonzero(on_arc)
                    np.add.at(members.load,  # type: ignore[union-attr]
                              members.first[arcs[a]] + member[a, c],  # type: ignore[union-attr]
                              on_arc[a, c])
            load[arcs] += carried


@dataclass
class _Members:
    """Load per member link of the network's arcs: ``first[a]`` is arc ``a``'s first member in
    ``load``, ``links[a]`` its count."""

    links: np.ndarray
    first: np.ndarray
    load: np.ndarray


def _static_choice(ports: np.ndarray, tail: np.ndarray, out_count: np.ndarray,
                   rank: np.ndarray, div: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The D-mod-k port among each node's DAG ports, per destination column: one-hot arc
    weights and the member link taken within the arc.

    ``ports`` (arcs x columns) holds each DAG arc's member links, 0 off the DAG; rows are
    arcs sorted by ``tail``. The j-th port of a node (arcs in order, members in order) is
    taken with ``j = floor(rank / div) mod count``; ``div`` is per arc.
    """
    counts = ports.cumsum(axis=0)
    # Position of each arc among its node's DAG arcs: subtract the count before the node.
    first = np.r_[0, np.flatnonzero(np.diff(tail)) + 1]
    before = np.zeros_like(counts)
    starts = np.repeat(first, np.diff(np.r_[first, len(tail)]))
    has_before = starts > 0
    before[has_before] = counts[starts[has_before] - 1]
    low = counts - before - ports  # ports of the node before this arc
    k = out_count[tail]
    j = np.where(k > 0, (rank[None, :] // div[:, None]) % np.maximum(k, 1).astype(np.int64), -1)
    chosen = (ports > 0) & (low <= j) & (j < low + ports)
    return chosen.astype(float), np.where(chosen, j - low, 0).astype(np.int64)


def up_port_divisors(network: Network, links: np.ndarray | None = None) -> np.ndarray:
    """``q(u)`` of the static split, per network node: the product of the up-port counts of the
    layers below ``u``'s (a layer's up-port count is the most member links any of its nodes
    has to a higher layer)."""
    up = network.layer[network.head] > network.layer[network.tail]
    weights = None if links is None else links[up]
    per_node = np.bincount(network.tail[up], weights=weights, minlength=network.n_nodes)
    layers = np.unique(network.layer)
    ports = {int(L): max(1, int(per_node[network.layer == L].max(initial=0))) for L in layers}
    prod, divisor = 1, {}
    for L in sorted(ports):
        divisor[L] = prod
        prod *= ports[L]
    return np.array([divisor[int(L)] for L in network.layer], dtype=np.int64)


def destination_rank(network: Network) -> np.ndarray:
    """Rank of each destination endpoint in the static tables: endpoints numbered leaf by
    leaf (by their upstream neighbour, then by position), as a subnet manager numbers hosts
    in cabling order."""
    first_up = np.full(network.n_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_up, network.head, network.tail)
    key = first_up[network.target]
    order = np.lexsort((np.arange(len(key)), key))
    rank = np.empty(len(key), dtype=np.int64)
    rank[order] = np.arange(len(key))
    return rank
