"""A certified lower bound from the best routing between the switches the endpoints attach to.

An endpoint with a single link (a GPU's NIC, a host's port) can only send through the switch
it attaches to, so the part of the max-concurrent-flow LP that matters is small: one
commodity per *attach switch* (a leaf, a ToR), carrying the demand of every endpoint under it,
over the switch arcs alone. Beyond a small size each leaf keeps only its fewest-hop arcs
toward its destination leaves (about 6,700 variables on a 2,048-GPU rail-optimized cluster,
against 46 million flow variables in the full LP), and the optimum routes around uneven
leaf-spine bundles and failed links that fixed WCMP shares cannot. A caller may name a
*relay* per pair (the source server's GPU on the target's rail, reached over NVLink as
NCCL's PXN does): the pair's demand then enters the switches at the relay's leaf.

Its flow is then spread back to the endpoints: each leaf's flow is split per destination
leaf (the flow reaching a node leaves it in the proportions it finally ends at each sink,
a linear solve per leaf), and an endpoint takes, toward each destination leaf, its own share
of the leaf pair's demand. The result is a flow of the full LP, commodity by commodity, that
conserves by construction; scaled to fit its most loaded arc it is a feasible point, so its
certificate is checked like any LP's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path
from scipy.sparse.linalg import spsolve

from ..backends import solve_lp
from ..model import max_theta_lp
from ..time_budget import IN_HAND, TimeBudget, left_now

if TYPE_CHECKING:
    from ..approx import CoreGraph

#: Largest attach switches x switch arcs for which the attach-switch LP may use every switch
#: arc: its node-arc form is slow for HiGHS (56 leaves x 1,904 switch arcs took 30 to 80 s on
#: 2 loaded cores; fat_tree(8) minus 5 % of its switch links, 32 leaves x 486 arcs, 10 s,
#: where its fewest-hop arcs give the same optimum in 0.2 s), so above this each leaf keeps
#: its fewest-hop arcs only.
ATTACH_LP_MAX_ENTRIES = 2_000
#: Largest number of (root, fewest-hop arc) variables for which the restricted LP is solved:
#: 6,700 on a 2,048-GPU rail-optimized cluster take 0.1 s; its failed versions, routed
#: between 22 to 28 classes of servers, 24,000 to 31,000 in 1.6 to 3 s (without presolve);
#: with 5 % of its links failed, between 58 classes, 75,000 in 9 to 11 s (exact, where the
#: approximate rounds left a 12 % bracket after 300 s); fat_tree(16) minus 5 % of its switch
#: links (128 leaves, 231,000 variables) closed exactly but took about 55 s (with presolve).
ATTACH_LP_MAX_COLUMNS = 100_000
#: Largest commodities x leaves x destination leaves kept to spread the LP's flow back.
ATTACH_SHARE_MAX_ENTRIES = 20_000_000


def attach_points(g: CoreGraph, arcs_in: np.ndarray, demand: np.ndarray,
                  relays: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(attach, up_arc, down_arc)`` per local node: the node an endpoint with a single
    link on the arcs ``arcs_in`` (a source, a target or a node marked in ``relays``)
    attaches to, and its arcs to and from it (-1 for nodes that are their own attach
    point: switches, multi-homed or transit nodes).

    >>> import fabricopt as fo
    >>> from fabricopt.flow.approx import CoreGraph
    >>> fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=2)   # GPUs with one NIC
    >>> model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    >>> g = CoreGraph.of(model)
    >>> from fabricopt.tiers import is_scale_up_arc
    >>> out = np.array([not is_scale_up_arc(fab.graph[u][v]) for u, v in model.ga.arcs])
    >>> attach, up, down = attach_points(g, out[model.core_arcs], g.demand)
    >>> sorted({model.ga.nodes[i] for i in g.nodes[attach[g.sources]]})   # rails' leaves
    ['r0.l0', 'r1.l0', 'r2.l0', 'r3.l0']
    """
    n = g.n
    keep = np.flatnonzero(arcs_in)
    if keep.size == 0:  # no arc to attach by (a fabric with no links left): each its own
        return np.arange(n), np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    out_deg = np.bincount(g.tail[keep], minlength=n)
    in_deg = np.bincount(g.head[keep], minlength=n)
    up_arc = np.full(n, -1, dtype=np.int64)
    down_arc = np.full(n, -1, dtype=np.int64)
    up_arc[g.tail[keep]] = keep  # the only out-arc where the out-degree is 1
    down_arc[g.head[keep]] = keep
    terminal = np.zeros(n, dtype=bool)
    terminal[g.sources] = True
    terminal |= demand.sum(axis=0) > 0
    if relays is not None:
        terminal |= relays
    single = terminal & (out_deg == 1) & (in_deg == 1)
    single &= g.head[np.where(single, up_arc, 0)] == g.tail[np.where(single, down_arc, 0)]
    attach = np.arange(n)
    attach[single] = g.head[up_arc[single]]
    single &= ~single[attach]  # two single-link endpoints joined to each other stay apart
    attach = np.where(single, attach, np.arange(n))
    return attach, np.where(single, up_arc, -1), np.where(single, down_arc, -1)


def route_by_attach_lp(g: CoreGraph, arcs_in: np.ndarray, demand: np.ndarray,
                       flows: np.ndarray, relay: np.ndarray | None = None,
                       entries: tuple[np.ndarray, ...] | None = None) -> bool:
    """Add to ``flows`` (K x core arcs) every commodity's ``demand`` routed on the arcs
    ``arcs_in`` by the attach-switch LP; False (``flows`` then partly written: discard it)
    when that LP is too large (:data:`ATTACH_LP_MAX_COLUMNS`), has no optimal point, or
    cannot be spread back.

    ``relay[k, t]`` (local nodes, K x n) is where commodity ``k``'s demand to ``t`` enters
    these arcs (its source by default): a GPU of the source's server on the target's rail,
    which the caller has already reached over the scale-up links. ``entries``, arrays
    ``(k, t, relay, amount)``, give the demand entry by entry instead (``demand`` and
    ``relay`` are then not read for it): one pair may enter at several relays.
    """
    K = len(g.sources)
    if not np.any(arcs_in):
        return False  # nothing to route on
    if entries is None:
        k_of, t_of = np.nonzero(demand)
        amount = demand[k_of, t_of]
        rel = g.sources[k_of] if relay is None else relay[k_of, t_of]
    else:
        k_of, t_of, rel, amount = entries
    terminal = np.zeros(g.n, dtype=bool)
    terminal[rel] = True
    terminal[t_of] = True
    attach, up_arc, down_arc = attach_points(g, arcs_in, demand, terminal)
    attached = up_arc >= 0
    switch = arcs_in.copy()
    switch[up_arc[attached]] = False
    switch[down_arc[attached]] = False
    arcs = np.flatnonzero(switch)
    a_of, b_of = attach[rel], attach[t_of]
    far = a_of != b_of  # the same attach point needs no switch arc
    roots, root_pos = _positions(a_of[far], g.n)
    sink_nodes, sink_pos = _positions(b_of[far], g.n)
    R, S = len(roots), len(sink_nodes)
    if K * R * S > ATTACH_SHARE_MAX_ENTRIES or (R and not len(arcs)):
        return False
    # Demand between attach points (per unit theta), and each commodity's part of it.
    part = np.bincount((k_of[far] * R + root_pos) * S + sink_pos, weights=amount[far],
                       minlength=K * R * S).reshape(K, R, S)
    T = np.zeros((R, g.n))
    T[:, sink_nodes] = part.sum(axis=0)
    add = flows  # written in place: a caller discards it on failure
    if R:
        flow = _attach_lp_flow(g, arcs, roots, T)
        if flow is None:
            return False
        for r in range(R):
            own = np.flatnonzero(T[r, sink_nodes] > 0)
            H = _per_sink(g, arcs, flow[r], T[r], sink_nodes[own])
            if H is None:
                return False
            share = part[:, r, own] / T[r, sink_nodes[own]]
            rows, cols = np.flatnonzero(share.any(axis=1)), np.flatnonzero(H.any(axis=0))
            add[np.ix_(rows, arcs[cols])] += share[rows] @ H[:, cols]
    up = up_arc[rel] >= 0  # into the switches from the relay, out to the target
    down = down_arc[t_of] >= 0
    # Summed in place: a bincount as long as the whole K x arcs array would allocate it twice
    # (1.3 GB on a 2,048-GPU cluster).
    np.add.at(add, (np.r_[k_of[up], k_of[down]], np.r_[up_arc[rel[up]], down_arc[t_of[down]]]),
              np.r_[amount[up], amount[down]])
    return bool(np.all(np.isfinite(add)))


def _positions(values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``values`` (node ids below ``n``), sorted, and each value's position
    among them (``np.unique`` with ``return_inverse``, in linear time)."""
    seen = np.zeros(n, dtype=bool)
    seen[values] = True
    distinct = np.flatnonzero(seen)
    where = np.zeros(n, dtype=np.int64)
    where[distinct] = np.arange(len(distinct))
    return distinct, where[values]


def _forward_arcs(g: CoreGraph, arcs: np.ndarray, roots: np.ndarray, T: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(root, arc)`` positions of the arcs each root may use: fewest-hop arcs (one hop
    farther from the root) that lead on to one of its sinks. Flow on them is acyclic."""
    n, tail, head = g.n, g.tail[arcs], g.head[arcs]
    hops = sp.csr_matrix((np.ones(len(arcs)), (tail, head)), shape=(n, n))
    dist = shortest_path(hops, directed=True, unweighted=True, indices=roots)
    cols_root, cols_arc = [], []
    for r in range(len(roots)):
        d = dist[r]
        forward = np.flatnonzero(np.isfinite(d[tail]) & (d[head] == d[tail] + 1))
        reach = T[r] > 0
        for level in range(int(d[np.isfinite(d)].max()) - 1, -1, -1):
            at = forward[d[tail[forward]] == level]
            np.logical_or.at(reach, tail[at], reach[head[at]])
        keep = forward[reach[head[forward]]]
        cols_root.append(np.full(len(keep), r))
        cols_arc.append(keep)
    return np.concatenate(cols_root), np.concatenate(cols_arc)


def _attach_lp_flow(g: CoreGraph, arcs: np.ndarray, roots: np.ndarray, T: np.ndarray
                    ) -> np.ndarray | None:
    """The attach-switch LP's optimal flow per unit theta (roots x switch arcs) on each
    root's fewest-hop arcs: root ``r`` sends ``T[r, v]`` to every node ``v``; None without
    an optimal point."""
    R, m2, n = len(roots), len(arcs), g.n
    tail, head = g.tail[arcs], g.head[arcs]
    if R * m2 <= ATTACH_LP_MAX_ENTRIES:
        col_root, col_arc = np.repeat(np.arange(R), m2), np.tile(np.arange(m2), R)
    else:
        col_root, col_arc = _forward_arcs(g, arcs, roots, T)
    C = len(col_arc)
    if C > ATTACH_LP_MAX_COLUMNS:
        return None
    supply = -T.copy()
    supply[np.arange(R), roots] = T.sum(axis=1)
    # Conservation rows only where a column or a supply is: the (root, node) rows no column
    # touches are most of them (70,000 of 72,000 on a failed 2,048-GPU cluster), and HiGHS's
    # presolve took 4 s to drop them.
    touch = np.r_[col_root * n + tail[col_arc], col_root * n + head[col_arc],
                  np.flatnonzero(supply.ravel())]
    rows, row_of = np.unique(touch, return_inverse=True)
    row_of = row_of.reshape(-1)
    flow_eq = sp.csr_matrix((np.r_[np.ones(C), -np.ones(C)], (row_of[:2 * C],
                             np.r_[np.arange(C), np.arange(C)])), shape=(len(rows), C))
    lp = max_theta_lp(flow_eq, supply.ravel()[rows],
                      sp.csr_matrix((np.ones(C), (col_arc, np.arange(C))), shape=(m2, C)),
                      g.capacity[arcs])
    # A cost of about 1e-9 of theta on every unit of flow: the optimum carries no
    # circulations (which the split per sink could not spread), at no visible cost in theta.
    cap_out = np.bincount(tail, weights=g.capacity[arcs], minlength=n)[roots]
    theta_cap = float(np.min(cap_out / np.maximum(T.sum(axis=1), 1e-300)))
    c = lp.c.copy()
    c[:-1] = 1e-9 * theta_cap / max(float(g.capacity[arcs].sum()), 1e-300)
    # Without presolve, which on these LPs costs more than the solve (5.9 s of 7.5 on a
    # failed 2,048-GPU cluster's, 24,000 columns). The answer stays a vertex: an interior
    # point alone carries small circulations, which the split per sink cannot spread.
    # Under a time limit it takes at most what is left but a third, kept for the stages
    # after it: stopped, it routes nothing, and the bracket comes from them.
    left = left_now()
    sol = solve_lp(replace(lp, c=c), "highs",
                   None if left is None else max((1 - IN_HAND) * left, TimeBudget.FLOOR),
                   presolve=False)
    if sol.status != "optimal" or sol.x is None or not sol.x[-1] > 0:
        return None
    flow = np.zeros((R, m2))
    flow[col_root, col_arc] = np.clip(sol.x[:-1], 0.0, None) / float(sol.x[-1])
    return flow


def _per_sink(g: CoreGraph, arcs: np.ndarray, G: np.ndarray, demand: np.ndarray,
              sinks: np.ndarray) -> np.ndarray | None:
    """One root's flow ``G`` on the switch arcs split per sink: ``H[j, a]`` what it sends to
    ``sinks[j]`` on ``arcs[a]``. What reaches a node leaves it in the proportions it ends at
    each sink, so each part conserves and delivers ``demand[sinks[j]]`` exactly."""
    n = g.n
    tail, head = g.tail[arcs], g.head[arcs]
    inflow = np.bincount(head, weights=G, minlength=n)
    live = np.flatnonzero(inflow > 0)
    pos = np.full(n, -1)
    pos[live] = np.arange(len(live))
    if np.any(pos[sinks] < 0):
        return None
    used = (G > 0) & (pos[tail] >= 0)
    # inflow[v] p_v(D) = sink_v(D) + sum_{v->w} G p_w(D), for the nodes that receive flow.
    A = (sp.diags(inflow[live]) - sp.csr_matrix(
        (G[used], (pos[tail[used]], pos[head[used]])), shape=(len(live), len(live))))
    S = np.zeros((len(live), len(sinks)))
    S[pos[sinks], np.arange(len(sinks))] = demand[sinks]
    P = np.asarray(spsolve(A.tocsc(), S)).reshape(len(live), len(sinks))
    if not np.all(np.isfinite(P)):
        return None
    at_head = np.zeros((len(arcs), len(sinks)))
    ok = pos[head] >= 0
    at_head[ok] = np.clip(P[pos[head[ok]]], 0.0, None)
    return (G[:, None] * at_head).T


__all__ = ["ATTACH_LP_MAX_COLUMNS", "ATTACH_LP_MAX_ENTRIES", "ATTACH_SHARE_MAX_ENTRIES",
           "attach_points", "route_by_attach_lp"]
