"""A certified lower bound from the best routing between the switches the endpoints attach to.

An endpoint with a single link (a GPU's NIC, a host's port) can only send through the switch
it attaches to, so the part of the max-concurrent-flow LP that matters is small: one
commodity per *attach switch* (a leaf, a ToR), carrying the demand of every endpoint under it,
over the switch arcs alone. That LP has leaves x switch arcs variables (about 100 thousand
for a 2,048-GPU rail-optimized cluster, against tens of millions for the full LP) and its
optimum routes around uneven leaf-spine bundles that fixed WCMP shares cannot.

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
from scipy.sparse.linalg import spsolve

from .backends import solve_lp
from .model import max_theta_lp

if TYPE_CHECKING:
    from .approx import _CoreGraph

#: Largest attach switches x switch arcs for which the attach-switch LP is solved: its
#: node-arc form is slow for HiGHS's simplex (56 leaves x 1,904 switch arcs took 30 to 80 s
#: on 2 loaded cores), so it runs where it takes well under a second.
ATTACH_LP_MAX_ENTRIES = 20_000


def attach_points(g: _CoreGraph, arcs_in: np.ndarray, demand: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(attach, up_arc, down_arc)`` per local node: the node an endpoint with a single
    link (on the arcs ``arcs_in``) attaches to, and its arcs to and from it (-1 for nodes
    that are their own attach point: switches, multi-homed or transit nodes).

    >>> import fabricopt as fo
    >>> from fabricopt.flow.approx import _CoreGraph
    >>> fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=2)   # GPUs with one NIC
    >>> model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    >>> g = _CoreGraph.of(model)
    >>> from fabricopt.flow.api import is_scale_up_arc
    >>> out = np.array([not is_scale_up_arc(fab.graph[u][v]) for u, v in model.ga.arcs])
    >>> attach, up, down = attach_points(g, out[model.core_arcs], g.demand)
    >>> sorted({model.ga.nodes[i] for i in g.nodes[attach[g.sources]]})   # its rail's leaf
    ['r0.l0', 'r1.l0', 'r2.l0', 'r3.l0']
    """
    n = g.n
    keep = np.flatnonzero(arcs_in)
    out_deg = np.bincount(g.tail[keep], minlength=n)
    in_deg = np.bincount(g.head[keep], minlength=n)
    up_arc = np.full(n, -1, dtype=np.int64)
    down_arc = np.full(n, -1, dtype=np.int64)
    up_arc[g.tail[keep]] = keep  # the only out-arc where the out-degree is 1
    down_arc[g.head[keep]] = keep
    terminal = np.zeros(n, dtype=bool)
    terminal[g.sources] = True
    terminal |= demand.sum(axis=0) > 0
    single = terminal & (out_deg == 1) & (in_deg == 1)
    single &= g.head[np.where(single, up_arc, 0)] == g.tail[np.where(single, down_arc, 0)]
    attach = np.arange(n)
    attach[single] = g.head[up_arc[single]]
    single &= ~single[attach]  # two single-link endpoints joined to each other stay apart
    attach = np.where(single, attach, np.arange(n))
    return attach, np.where(single, up_arc, -1), np.where(single, down_arc, -1)


def route_by_attach_lp(g: _CoreGraph, arcs_in: np.ndarray, demand: np.ndarray,
                       flows: np.ndarray) -> bool:
    """Add to ``flows`` (K x core arcs) every commodity's ``demand`` routed on the arcs
    ``arcs_in`` by the attach-switch LP; False (``flows`` untouched) when that LP is too
    large (:data:`ATTACH_LP_MAX_ENTRIES`), has no optimal point, or cannot be spread back."""
    attach, up_arc, down_arc = attach_points(g, arcs_in, demand)
    attached = up_arc >= 0
    switch = arcs_in.copy()
    switch[up_arc[attached]] = False
    switch[down_arc[attached]] = False
    arcs = np.flatnonzero(switch)
    src_att = attach[g.sources]
    roots, root_of = np.unique(src_att, return_inverse=True)
    R, m2 = len(roots), len(arcs)
    if R * m2 > ATTACH_LP_MAX_ENTRIES:
        return False
    # Demand between attach points (per unit theta); the same attach point needs no switch arc.
    per_att = np.zeros((len(g.sources), g.n))
    np.add.at(per_att.T, attach, demand.T)
    per_att[np.arange(len(g.sources)), src_att] = 0.0
    T = np.zeros((R, g.n))
    np.add.at(T, root_of, per_att)
    if T.any() and m2 == 0:
        return False
    add = np.zeros_like(flows)
    if T.any():
        flow = _attach_lp_flow(g, arcs, roots, T)
        if flow is None:
            return False
        for r in range(R):
            sinks = np.flatnonzero(T[r] > 0)
            H = _per_sink(g, arcs, flow[r], T[r], sinks)
            if H is None:
                return False
            mine = np.flatnonzero(root_of == r)
            share = per_att[np.ix_(mine, sinks)] / T[r, sinks]
            add[np.ix_(mine, arcs)] += share @ H
    leaving = demand.sum(axis=1)
    has_up = up_arc[g.sources] >= 0
    add[np.flatnonzero(has_up), up_arc[g.sources[has_up]]] += leaving[has_up]
    targets = np.flatnonzero(down_arc >= 0)
    add[:, down_arc[targets]] += demand[:, targets]
    if not np.all(np.isfinite(add)):
        return False
    flows += add
    return True


def _attach_lp_flow(g: _CoreGraph, arcs: np.ndarray, roots: np.ndarray, T: np.ndarray
                    ) -> np.ndarray | None:
    """The attach-switch LP's optimal flow per unit theta (roots x switch arcs): root ``r``
    sends ``T[r, v]`` to every node ``v``; None without an optimal point."""
    R, m2, n = len(roots), len(arcs), g.n
    tail, head = g.tail[arcs], g.head[arcs]
    inc = sp.csr_matrix((np.r_[np.ones(m2), -np.ones(m2)],
                         (np.r_[tail, head], np.r_[np.arange(m2), np.arange(m2)])), shape=(n, m2))
    supply = -T.copy()
    supply[np.arange(R), roots] = T.sum(axis=1)
    lp = max_theta_lp(sp.kron(sp.identity(R, format="csr"), inc, format="csr"), supply.ravel(),
                      sp.hstack([sp.identity(m2, format="csr")] * R, format="csr"),
                      g.capacity[arcs])
    # A cost of about 1e-9 of theta on every unit of flow: the optimum carries no
    # circulations (which the split per sink could not spread), at no visible cost in theta.
    cap_out = np.bincount(tail, weights=g.capacity[arcs], minlength=n)[roots]
    theta_cap = float(np.min(cap_out / np.maximum(T.sum(axis=1), 1e-300)))
    c = lp.c.copy()
    c[:-1] = 1e-9 * theta_cap / max(float(g.capacity[arcs].sum()), 1e-300)
    lp = replace(lp, c=c)
    sol = solve_lp(lp, "highs")
    if sol.status != "optimal" or sol.x is None or not sol.x[-1] > 0:
        return None
    return np.clip(sol.x[:-1].reshape(R, m2), 0.0, None) / float(sol.x[-1])


def _per_sink(g: _CoreGraph, arcs: np.ndarray, G: np.ndarray, demand: np.ndarray,
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


__all__ = ["ATTACH_LP_MAX_ENTRIES", "attach_points", "route_by_attach_lp"]
