"""A certified lower bound from routing that keeps each pair below the lowest tier joining it.

As a multi-tier Clos is operated, a pair of GPUs that the fabric joins below some tier never
climbs above it: two GPUs of one server talk over NVLink, two under the same leaves over the
leaves, two in one pod over the pod's spines. Here each pair is given the lowest *level* at
which it is joined: its scale-up domain, else the first network layer ``L`` such that the
subgraph of nodes at layer ``L`` or below (GPUs, NVSwitches and leaves at level 1; spines too
at level 2; ...) connects the two. The pair is then routed by fewest-hop WCMP (shares
proportional to capacity, :func:`fabricopt.flow.approx.colgen.ecmp_columns`) on that subgraph, or
on the scale-out network alone, in shares a small LP picks per pair of leaves.

This is the routing that meets a leaf group's uplink cut where servers straddle leaves: the
level-1 subgraph joins the leaves a server spans into one group, pairs inside the group relay
over the straddling servers' NVLink and NIC links (as far as those have room: near leaves
relay, far ones climb), and pairs in different groups load only their own leaf's uplinks,
the demand the group's cut counts (``docs/bounds-first.md``).

A point of the symmetric method's root LP is the root flows alone
(:func:`symmetric_tier_point`), one per endpoint orbit: the shares are chosen against the
loads of those flows spread over the arc orbits, which is what
:func:`~fabricopt.check_certificate` recomputes, on fabrics whose full LP is far too large
for a point of its own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ...graph_arrays import FabricShape, GraphArrays
from ..approx import CoreGraph, ecmp_columns
from ..backends import solve_lp
from ..bounds import ECMP_CHUNK_ENTRIES
from ..model import max_theta_lp

#: Largest commodities x core arcs for which :func:`tier_point` routes the full LP's layout:
#: its parts are routed once per option and per group of targets, so the work is several
#: times WCMP's. A 2,048-GPU 3-tier 2:1 cluster (2,048 x 22,622) took 62 s on 2 loaded
#: cores; the small clusters of the tests (under 100 x 1,000) take milliseconds. Above it a
#: fabric with a symmetry is routed from its orbit roots instead (:func:`symmetric_tier_point`).
TIER_MAX_ENTRIES = 5_000_000


def node_layers(fab: Any, ga: GraphArrays) -> np.ndarray:
    """The ``layer`` of every node of ``ga`` (0 where a node has none), as the fabric's shape
    reads it (:attr:`~fabricopt.graph_arrays.FabricShape.layer`, -1 there)."""
    return np.maximum(FabricShape.of(fab, ga).layer, 0).astype(float)


def _components(n: int, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    joined = sp.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
    return connected_components(joined, directed=False)[1]


def tier_levels(g: CoreGraph, layer: np.ndarray, scale_up: np.ndarray) -> list[np.ndarray]:
    """The arcs of each level, lowest first: the scale-up links (when any), then every arc
    among nodes at each layer or below (a server's NVLink included, so a level joins the
    leaves a server spans), then every arc. ``layer`` is the layer of each local node of
    ``g``, ``scale_up`` marks its scale-up arcs (one entry per core arc)."""
    levels: list[np.ndarray] = [scale_up] if scale_up.any() else []
    for level in np.unique(layer[layer > 0]):
        below = layer <= level
        arcs = below[g.tail] & below[g.head]
        if arcs.any() and not arcs.all():
            levels.append(arcs)
    levels.append(np.ones(len(g.tail), dtype=bool))
    return levels


def tier_parts(g: CoreGraph, levels: list[np.ndarray]
               ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Each commodity's demand split by the lowest level whose arcs join the pair:
    ``(level, demand, group)`` per level that joins some pair, ``group`` the component of
    that level holding each commodity's source (the last level, every arc, takes the
    rest)."""
    rest = g.demand.copy()
    parts = []
    for i, arcs in enumerate(levels):
        comp = (np.zeros(g.n, dtype=np.int64) if i == len(levels) - 1
                else _components(g.n, g.tail[arcs], g.head[arcs]))
        joined = comp[None, :] == comp[g.sources][:, None]
        part = np.where(joined, rest, 0.0)
        if part.any():
            parts.append((i, part, comp[g.sources]))
            rest = np.where(joined, 0.0, rest)
    return parts


def tier_flows(g: CoreGraph, layer: np.ndarray, scale_up: np.ndarray,
               row_loads: Any = None, capacity: np.ndarray | None = None
               ) -> np.ndarray | None:
    """Every commodity's flow (K x core arcs, at theta = 1): each part of
    :func:`tier_parts` routed on its own level or on the scale-out arcs alone, in shares
    that leave the most loaded arc least loaded (a small LP): staying low spares the
    uplinks, the scale-out network spares the relays. Where there is that choice, each
    pair of scale-out groups inside the level (a leaf's GPUs and another leaf's, in one
    group of leaves that servers join) gets its own share, so near pairs can relay and far
    ones climb. None when a part cannot be routed either way.

    ``row_loads(flows, k)`` gives the contribution of each row of ``flows`` (a sparse flow
    of commodity ``k[row]``) to the loads held to ``capacity`` (default: the flows
    themselves and ``g.capacity``); the symmetric method's orbit rows go there.
    """
    levels = tier_levels(g, layer, scale_up)
    if row_loads is None:
        row_loads, capacity = (lambda f, k: f), g.capacity
    out = ~scale_up
    K, m = len(g.sources), len(g.tail)
    routed, columns, keys = [], [], []  # (rows' commodity, flows), loads and key per column
    parts = tier_parts(g, levels)
    for p, (low, demand, group) in enumerate(parts):
        options = [levels[low]]
        if low > 0 and out.any() and not np.array_equal(out, levels[low]):
            options.append(out)
        k_of, t_of = np.nonzero(demand)
        if len(options) > 1 and len(np.unique(group)) > 1:
            # One row per commodity and scale-out group of its targets within this level.
            sub = _components(g.n, g.tail[out & levels[low]], g.head[out & levels[low]])
            rows, row_of = np.unique(k_of * g.n + sub[t_of], return_inverse=True)
            row_k, key = rows // g.n, sub[g.sources[rows // g.n]] * g.n + rows % g.n
        else:
            rows, row_of = np.arange(K), k_of
            row_k, key = rows, np.zeros(K, dtype=np.int64)
        part = np.zeros((len(rows), g.n))
        part[row_of.ravel(), t_of] = demand[k_of, t_of]
        sub_g = replace(g, sources=g.sources[row_k], demand=part)
        for arcs in options:
            flows = _route_sparse(sub_g, arcs)
            if flows is None:
                continue
            loads = row_loads(flows, row_k)
            for c in np.unique(key):
                columns.append(np.asarray(loads[key == c].sum(axis=0)).ravel())
                keys.append((p, int(c), len(routed)))
            routed.append((row_k, key, flows))
    if len({k[0] for k in keys}) < len(parts):
        return None  # a part routed neither way
    share = _best_shares([k[:2] for k in keys], np.array(columns), capacity)
    if share is None:
        return None
    total = np.zeros((K, m))
    for (_, c, r), w in zip(keys, share, strict=True):
        if w > 0:
            row_k, key, flows = routed[r]
            mine = flows[np.flatnonzero(key == c)].tocoo()
            np.add.at(total, (row_k[key == c][mine.row], mine.col), w * mine.data)
    return total


def _route_sparse(g: CoreGraph, arcs_in: np.ndarray) -> sp.csr_matrix | None:
    """Every commodity's demand routed by fewest-hop WCMP on the arcs ``arcs_in`` only, as
    a sparse matrix (commodities x core arcs); None when a target of positive demand cannot
    be reached on them. Each component of those arcs is routed on its own nodes and arcs
    (a group of leaves is a few hundred nodes of thousands)."""
    K = len(g.sources)
    keep = np.flatnonzero(arcs_in)
    comp = _components(g.n, g.tail[keep], g.head[keep])
    rows, cols, vals = [], [], []
    for c in np.unique(comp[g.sources]):
        mine = np.flatnonzero(comp[g.sources] == c)
        arcs = keep[comp[g.tail[keep]] == c]
        nodes = np.flatnonzero(comp == c)
        if g.demand[np.ix_(mine, np.flatnonzero(comp != c))].any():
            return None  # a target outside the source's component
        if not len(arcs):
            continue  # a node alone: nothing to route inside it
        local = np.full(g.n, -1, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        sub = replace(g, nodes=g.nodes[nodes], tail=local[g.tail[arcs]],
                      head=local[g.head[arcs]], capacity=g.capacity[arcs], arc_table=None)
        step = max(1, ECMP_CHUNK_ENTRIES // max(len(arcs), len(nodes), 1))
        for lo in range(0, len(mine), step):
            ks = mine[lo:lo + step]
            chunk = replace(sub, sources=local[g.sources[ks]],
                            demand=g.demand[np.ix_(ks, nodes)])
            on, loads, cost = ecmp_columns(chunk, np.ones(len(arcs)), sub.capacity)
            if not np.all(np.isfinite(cost)):
                return None
            for k, a, f in zip(ks, on, loads, strict=True):
                rows.append(np.full(len(a), k))
                cols.append(arcs[a])
                vals.append(f)
    if not rows:
        return sp.csr_matrix((K, len(arcs_in)))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(K, len(arcs_in)))


def _best_shares(groups: list[tuple[int, int]], loads: np.ndarray, capacity: np.ndarray
                 ) -> np.ndarray | None:
    """The share of each option of its group (the options of a group add up to 1) that
    carries the most theta: ``max theta`` s.t. ``sum_o w_o loads_o <= capacity`` and each
    group's shares add up to theta. None when there is no option or no optimum."""
    if not groups:
        return None
    C = len(groups)
    _, group_of = np.unique(np.array(groups), axis=0, return_inverse=True)
    group_of = group_of.ravel()
    n_groups = int(group_of.max()) + 1
    used = loads.max(axis=0) > 0
    lp = max_theta_lp(sp.csr_matrix((np.ones(C), (group_of, np.arange(C))),
                                    shape=(n_groups, C)),
                      np.ones(n_groups), sp.csr_matrix(loads.T[used]), capacity[used])
    sol = solve_lp(lp, "highs")
    if sol.status != "optimal" or sol.x is None or not sol.x[-1] > 0:
        return None
    w = np.clip(sol.x[:-1], 0.0, None)
    total = np.bincount(group_of, weights=w, minlength=n_groups)
    return w / total[group_of]


def tier_point(model: Any, layer: np.ndarray, scale_up: np.ndarray) -> np.ndarray | None:
    """A point of the full LP ``model`` (a :class:`~fabricopt.flow.formulation.FlowModel`)
    from :func:`tier_flows`, scaled to fit its most loaded arc; None when it cannot route
    or the model is too large for it (:data:`TIER_MAX_ENTRIES`).
    ``layer`` and ``scale_up`` are per node and per arc of ``model.ga``.

    >>> import fabricopt as fo
    >>> from fabricopt.tiers import is_scale_up_arc
    >>> fab = fo.cluster(fo.nvswitch_domain(4, 1, 1, 400.0), nodes=6, scale_out="clos",
    ...                  tiers=3, oversubscription=3, radix=8,
    ...                  whole_servers=False)   # servers span leaves
    >>> model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    >>> up = np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in model.ga.arcs])
    >>> point = tier_point(model, node_layers(fab, model.ga), up)
    >>> round(float(point[-1]), 4)   # the LP's optimum, a group of leaves' uplink cut
    11.1111
    """
    if model.n_commodities * len(model.core_arcs) > TIER_MAX_ENTRIES or not model.n_commodities:
        return None
    g = CoreGraph.of(model)
    flows = tier_flows(g, layer[g.nodes], scale_up[model.core_arcs])
    if flows is None:
        return None
    util = flows.sum(axis=0) / g.capacity
    ep_util = model.ep_rows_gbps / model.ga.capacity[model.ep_rows_arc]
    top = max(float(util.max(initial=0.0)), float(ep_util.max(initial=0.0)))
    if top <= 0:
        return None
    return np.append((flows / top).ravel(), 1.0 / top)


def root_graph(ga: GraphArrays, roots: np.ndarray, dest: np.ndarray, gbps: float
               ) -> CoreGraph:
    """The whole fabric as a core graph whose commodities are the given root endpoints
    (node indices), root ``i`` sending ``gbps`` to each node where ``dest[i]`` is True."""
    n = ga.n_nodes
    key = ga.tail * n + ga.head
    order = np.argsort(key, kind="stable")
    return CoreGraph(np.arange(n), ga.tail, ga.head, ga.capacity, key[order], order,
                      np.asarray(roots, dtype=np.int64), np.where(dest, gbps, 0.0), None)


def symmetric_tier_point(model: Any, layer: np.ndarray, scale_up: np.ndarray
                         ) -> np.ndarray | None:
    """A point of ``model`` (an unreduced symmetric root LP,
    :func:`~fabricopt.flow.symmetric.build_symmetric_lp` with ``reduce=False``): every
    root's flow by :func:`tier_flows`, at theta 1 (the certificate scales it to fit); None
    when a target cannot be reached."""
    ga = model.ga
    roots = np.array([b.node for b in model.roots], dtype=np.int64)
    dest = np.zeros((len(roots), ga.n_nodes), dtype=bool)
    for i, b in enumerate(model.roots):
        dest[i, model.endpoint_idx[b.dest]] = True
    sizes = np.array([b.orbit_size for b in model.roots], dtype=float)
    n_orbits = len(model.orbit_size)

    def orbit_rows(flows: np.ndarray, k: np.ndarray) -> np.ndarray:
        # Root k's part of each arc orbit's load: (|O_k| / |O|) sum_{a in O} f_k(a).
        f = flows.tocoo()
        per = np.bincount(f.row * n_orbits + model.orbit[f.col], weights=f.data,
                          minlength=f.shape[0] * n_orbits)
        return per.reshape(f.shape[0], n_orbits) * (sizes[k][:, None] / model.orbit_size)

    cap = np.zeros(n_orbits)
    cap[model.orbit] = ga.capacity
    flows = tier_flows(root_graph(ga, roots, dest, model.gbps), layer, scale_up,
                       orbit_rows, cap)
    return None if flows is None else np.append(flows.ravel(), 1.0)


__all__ = ["TIER_MAX_ENTRIES", "node_layers", "root_graph", "symmetric_tier_point",
           "tier_flows", "tier_levels", "tier_parts", "tier_point"]
