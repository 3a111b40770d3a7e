"""Bounds first: certified bounds on theta that need no LP, tried before any LP.

* **Upper: structural cuts.** A set of nodes ``S`` bounds theta by the capacity leaving it
  over the demand leaving it (and the same entering it). The sets tried are the fabric's own
  hierarchy: the groups of each hierarchy attribute (a server's ``node``, a ``rail``, a
  scalable unit ``su``, a ``pod``, a ``plane``) and the groups the layers close upward (a
  server; a leaf with everything under it; every leaf over the same servers, which is a
  rail-optimized scalable unit; a pod). Every cut is arc lengths (1 on the arcs leaving
  ``S``), so the best one goes through the distance bound of
  :mod:`fabricopt.flow.certificate` and :func:`~fabricopt.check_certificate` re-proves it
  like any LP's duals. (Every node alone is tried too: an endpoint's own links.)
* **Lower: WCMP fluid routing, as deployed.** Every source's demand split over all its
  fewest-hop paths in shares proportional to arc capacity
  (:func:`fabricopt.flow.approx.colgen.ecmp_columns`), pairs inside a scale-up domain on its links
  and the others on the scale-out network, scaled to fit the most loaded arc, is a feasible
  flow in the LP's own column layout.

On a 2:1 rail-optimized cluster both give the scalable unit's uplink cut; where they meet,
no LP is needed (``docs/bounds-first.md`` lists the families that close this way).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graph_arrays import HIERARCHY_KEYS as HIERARCHY_KEYS  # its home now: the shape
from ..graph_arrays import FabricShape, GraphArrays
from ..traffic import Traffic
from .approx import CoreGraph, ecmp_columns
from .bounds_first.domain_relays import route_between_domains, route_inside_domains
from .bounds_first.rebalance import rebalanced_flows
from .bounds_first.tor_routing import route_by_attach_lp
from .formulation import FlowModel
from .proof import ArcLengths

#: Largest commodities x core arcs for which the ECMP lower bound is built (it keeps one
#: flow per commodity and arc: 8 bytes each, 400 MB at this size).
ECMP_MAX_ENTRIES = 50_000_000
#: Commodities routed at once by ECMP (bounds the temporary arrays to a few hundred MB).
ECMP_CHUNK_ENTRIES = 4_000_000


def hierarchy_partitions(fab: Any, ga: GraphArrays) -> list[np.ndarray]:
    """Partitions of the nodes (a group label per node) from the fabric's hierarchy: every
    node alone, one per attribute of :data:`HIERARCHY_KEYS` present, and one per layer
    closed upward (every network switch of that layer joined with the groups of its
    neighbours below).

    The fabric's shape's (:attr:`~fabricopt.graph_arrays.FabricShape.hierarchy`): read once
    in a study row (the all-to-all, the two-phase rate and the bisection each ask), and
    read-only."""
    return list(FabricShape.of(fab, ga).hierarchy)


def rail_labels(fab: Any, ga: GraphArrays) -> np.ndarray | None:
    """The ``rail`` attribute of each node of ``ga`` as an integer label (-1 for none);
    None when no node has one (:attr:`~fabricopt.graph_arrays.FabricShape.rail`)."""
    return FabricShape(fab, ga).rail


def structural_cut_lengths(fab: Any, traffic: Traffic, ga: GraphArrays,
                           include_endpoint_links: bool = True) -> tuple[float, np.ndarray]:
    """The best hierarchy cut: ``(bound, lengths)``, theta <= capacity over demand crossing
    it (in the units of ``ga`` and ``traffic``), and its arcs as lengths (1 on the arcs that
    cross it). ``(inf, zeros)`` when no cut bounds anything.

    >>> import fabricopt as fo
    >>> from fabricopt.graph_arrays import GraphArrays
    >>> fab = fo.leaf_spine(4, 2, 4, link_gbps=1.0)   # 4 leaves of 4 hosts, 2 uplinks each
    >>> ga = GraphArrays.from_fabric(fab)
    >>> bound, lengths = structural_cut_lengths(fab, fo.all_to_all(fab), ga)
    >>> round(bound, 6), int(lengths.sum())   # a leaf: 2 uplinks over 4 hosts x 12 outside
    (0.041667, 2)
    """
    best, best_len = np.inf, np.zeros(ga.n_arcs)
    if not include_endpoint_links:
        return best, best_len  # the fabric-only view frees endpoint links: other cuts
    pos = np.array([ga.index[e] for e in traffic.endpoints], dtype=np.int64)
    if traffic.is_uniform:
        src = dst = None
        gbps = float(traffic.uniform_gbps)
    else:
        where = {e: ga.index[e] for e in traffic.endpoints}
        src = np.array([where[s] for s, _ in traffic.pairs], dtype=np.int64)
        dst = np.array([where[t] for _, t in traffic.pairs], dtype=np.int64)
        w = np.fromiter(traffic.pairs.values(), float, count=len(src))
    for label in hierarchy_partitions(fab, ga):
        groups = int(label.max()) + 1
        crossing = label[ga.tail] != label[ga.head]
        cap_out = np.bincount(label[ga.tail], weights=ga.capacity * crossing, minlength=groups)
        cap_in = np.bincount(label[ga.head], weights=ga.capacity * crossing, minlength=groups)
        if src is None:
            count = np.bincount(label[pos], minlength=groups).astype(float)
            dem_out = dem_in = count * (len(pos) - count) * gbps
        else:
            apart = label[src] != label[dst]
            dem_out = np.bincount(label[src], weights=w * apart, minlength=groups)
            dem_in = np.bincount(label[dst], weights=w * apart, minlength=groups)
        for cap, dem, side in ((cap_out, dem_out, ga.tail), (cap_in, dem_in, ga.head)):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(dem > 0, cap / np.where(dem > 0, dem, 1.0), np.inf)
            k = int(np.argmin(ratio))
            if ratio[k] < best:
                best = float(ratio[k])
                best_len = (crossing & (label[side] == k)).astype(float)
    return best, best_len


def ecmp_point(model: FlowModel, scale_up: np.ndarray | None = None,
               scale_out_lp: bool = False, rails: np.ndarray | None = None,
               rebalance_to: float | None = None, both_ends: bool = False
               ) -> np.ndarray | None:
    """A feasible point of ``model``'s LP from fewest-hop WCMP fluid routing, scaled to fit
    the most loaded arc (theta is its last entry); None when the model is too large
    (:data:`ECMP_MAX_ENTRIES`) or a target is unreachable.

    ``scale_up`` marks the fabric's scale-up arcs (NVLink): as deployed, a pair inside one
    scale-up domain uses its links only and a pair in two domains the scale-out network only
    (out of the source's own NIC), so each commodity is routed twice, once per part, and the
    two flows add up. Pairs the scale-out network does not join use every arc.
    ``scale_out_lp`` routes the scale-out part by the attach-switch LP of
    :mod:`fabricopt.flow.bounds_first.tor_routing` instead (its optimum over the switches
    the endpoints hang from; None where that LP is too large or has no optimum). With
    ``rails`` (a rail label per node of ``model.ga``, -1 for none) a pair in two domains
    first crosses the source's domain to its member on the target's rail, as NCCL's PXN
    does, so traffic between rails never crosses the spines. ``rebalance_to`` (a theta to
    stop at, in the model's units) routes the last part by WCMP with its splits rebalanced
    against the load (:mod:`fabricopt.flow.bounds_first.rebalance`; plain WCMP where that
    declines). ``both_ends`` (with ``scale_out_lp``) lets the LP choose where a pair enters
    and leaves the network, over its servers' scale-up links at both ends
    (:mod:`fabricopt.flow.bounds_first.domain_relays`).
    """
    K, m = model.n_commodities, len(model.core_arcs)
    if K * m > ECMP_MAX_ENTRIES or K == 0:
        return None
    g = CoreGraph.of(model)
    up = (np.zeros(m, dtype=bool) if scale_up is None
          else np.asarray(scale_up, dtype=bool)[model.core_arcs])
    domain = np.arange(g.n)
    if up.any():
        joined = sp.csr_matrix((np.ones(int(up.sum())), (g.tail[up], g.head[up])),
                               shape=(g.n, g.n))
        domain = connected_components(joined, directed=False)[1]
    inside = domain[None, :] == domain[g.sources][:, None]  # K x n: same domain as source
    # The point is the flows then theta: one array, so returning it copies nothing (a
    # 2,048-GPU cluster's point is 400 MB).
    point = np.zeros(K * m + 1)
    flows = point[:-1].reshape(K, m)
    parts = [(up, np.where(inside, g.demand, 0.0)), (~up, np.where(inside, 0.0, g.demand))]
    if not up.any():
        parts = [(np.ones(m, dtype=bool), g.demand)]
    if scale_out_lp:
        # The scale-out part first: when its LP declines there is no point to finish.
        arcs_in, demand = parts.pop()
        if both_ends and up.any():
            hops = route_between_domains(g, up, domain, demand, flows)
            if hops is None:
                return None
            np.add.at(parts[0][1], (hops[0], hops[1]), hops[2])  # to the GPUs that send on
        elif not _route_pxn(g, up, domain, rails, arcs_in, demand,
                            parts[0][1] if parts else None, flows):
            return None
    ep_util = model.ep_rows_gbps / model.ga.capacity[model.ep_rows_arc]
    for i, (arcs_in, demand) in enumerate(parts):
        if not demand.any():
            continue
        if rebalance_to is not None and i == len(parts) - 1:
            tuned = rebalanced_flows(g, arcs_in, demand, flows.sum(axis=0),
                                     float(ep_util.max()) if len(ep_util) else 0.0,
                                     target=rebalance_to)
            if tuned is not None:
                flows += tuned
                continue
        if i == 0 and up.any() and route_inside_domains(g, up, domain, demand, flows):
            continue  # the pairs inside a server, and the hops to its relays
        if not _route_part(g, arcs_in, demand, flows):
            if arcs_in.all() or not _route_part(g, np.ones(m, dtype=bool), demand, flows):
                return None
    util = flows.sum(axis=0) / g.capacity if m else np.zeros(0)
    top = max(float(util.max()) if m else 0.0, float(ep_util.max()) if len(ep_util) else 0.0)
    if top <= 0:
        return None
    theta = 1.0 / top
    flows *= theta
    point[-1] = theta
    return point


def _route_pxn(g: CoreGraph, up: np.ndarray, domain: np.ndarray, rails: np.ndarray | None,
               arcs_in: np.ndarray, demand: np.ndarray, scale_up_demand: np.ndarray | None,
               flows: np.ndarray) -> bool:
    """Add to ``flows`` the scale-out ``demand`` routed by the attach-switch LP, entering at
    PXN relays where the fabric has ``rails`` (the hops to them added to
    ``scale_up_demand``, the last hops to a stand-in's target to ``flows``); False when the
    LP declines."""
    entries = None
    if rails is not None and scale_up_demand is not None:
        rail = np.asarray(rails)[g.nodes]
        live = (np.bincount(g.tail[arcs_in], minlength=g.n) > 0) & (
            np.bincount(g.head[arcs_in], minlength=g.n) > 0)
        entries, last_hops = pxn_entries(g, domain, rail, live, demand)
        k_of, _, rel, amount = entries
        away = rel != g.sources[k_of]
        # The hop to the relay is scale-up demand of the same commodity.
        np.add.at(scale_up_demand, (k_of[away], rel[away]), amount[away])
        if not _add_last_hops(g, up, flows, last_hops):
            return False
    return not demand.any() or route_by_attach_lp(g, arcs_in, demand, flows, entries=entries)


def rail_relays(g: CoreGraph, domain: np.ndarray, rail: np.ndarray) -> np.ndarray:
    """``relay[k, t]``: the member of commodity ``k``'s source domain on target ``t``'s
    rail (the source itself when the target has no rail or the domain no member on it)."""
    src = g.sources
    on_rail = np.flatnonzero(rail >= 0)
    n_rails = int(rail.max()) + 1 if len(on_rail) else 1
    table = np.full((int(domain.max()) + 1, n_rails), -1, dtype=np.int64)
    table[domain[on_rail[::-1]], rail[on_rail[::-1]]] = on_rail[::-1]  # first member wins
    relay = np.where(rail[None, :] >= 0,
                     table[domain[src]][:, np.maximum(rail, 0)], -1)
    return np.where(relay >= 0, relay, src[:, None])


def pxn_entries(g: CoreGraph, domain: np.ndarray, rail: np.ndarray, live: np.ndarray,
                demand: np.ndarray) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The scale-out ``demand`` (K x n) entry by entry as PXN sends it, around failed links.

    Returns ``(k, t, relay, amount)`` for
    :func:`~fabricopt.flow.bounds_first.tor_routing.route_by_attach_lp` and the last hops
    ``(k, stand_in, t, amount)`` still to go over the scale-up links. A pair enters the
    scale-out network at the member of its source's domain on the target's
    rail (:func:`rail_relays`). Where that member or the target lost its scale-out link
    (``live`` False), the pair is split evenly: over the target domain's live members on
    rails the source's domain kept too (each a *stand-in* the pair reaches, then hops over
    the scale-up links to the target), and, for each, over the source domain's live member
    on the stand-in's rail, or over all its live members when that one is down too. A
    server that lost one NIC of eight then spreads the traffic of that rail over its seven
    others, each carrying 8/7 of its share, which is what the server's own cut allows.
    Pairs with no live member on a side stay as they are.
    """
    relay = rail_relays(g, domain, rail)
    k_of, t_of = np.nonzero(demand)
    amount = demand[k_of, t_of]
    rel = relay[k_of, t_of]
    ok = live[rel] & live[t_of]
    keep = (k_of[ok], t_of[ok], rel[ok], amount[ok])
    if ok.all():
        return keep, tuple(np.zeros(0, dtype=x.dtype) for x in (k_of, t_of, t_of, amount))
    n_dom = int(domain.max()) + 1
    members = [np.flatnonzero(live & (domain == d) & (rail >= 0)) for d in range(n_dom)]
    on_rail = {(int(domain[v]), int(rail[v])): int(v) for v in np.flatnonzero(live & (rail >= 0))}
    split: list[tuple[int, int, int, float]] = []
    hops: list[tuple[int, int, int, float]] = []
    for k, t, a in zip(k_of[~ok], t_of[~ok], amount[~ok], strict=True):
        src = int(g.sources[k])
        dests = [int(t)]
        if not live[t] and members[domain[t]].size:
            # Stand-ins on rails the source's domain kept too, so no pair needs two relays.
            dests = [int(d) for d in members[domain[t]]
                     if (int(domain[src]), int(rail[d])) in on_rail] or list(members[domain[t]])
        for d in dests:
            via = on_rail.get((int(domain[src]), int(rail[d])))
            rels = [via] if via is not None else (members[domain[src]] if
                                                  members[domain[src]].size else [src])
            for r in rels:
                split.append((int(k), int(d), int(r), float(a) / (len(dests) * len(rels))))
            if d != t:
                hops.append((int(k), int(d), int(t), float(a) / len(dests)))
    extra = np.array(split).T
    entries = tuple(np.concatenate([x, e.astype(x.dtype)]) for x, e in zip(keep, extra,
                                                                            strict=True))
    last = (np.array(hops).T if hops else np.zeros((4, 0)))
    return entries, (last[0].astype(np.int64), last[1].astype(np.int64),
                     last[2].astype(np.int64), last[3])


def _add_last_hops(g: CoreGraph, up: np.ndarray, flows: np.ndarray,
                   hops: tuple[np.ndarray, ...]) -> bool:
    """Add to ``flows`` each hop ``(k, stand_in, t, amount)`` of :func:`pxn_entries`, routed
    over the scale-up arcs ``up`` (one unit flow per stand-in and target, scaled per
    commodity); False when a target cannot be reached from its stand-in."""
    k_m, d_m, t_m, amount = hops
    if not len(k_m):
        return True
    pairs, which = np.unique(np.stack([d_m, t_m], axis=1), axis=0, return_inverse=True)
    one = np.zeros((len(pairs), g.n))
    one[np.arange(len(pairs)), pairs[:, 1]] = 1.0
    unit = np.zeros((len(pairs), len(up)))
    if not _route_part(replace(g, sources=pairs[:, 0]), up, one, unit):
        return False
    # Each hop touches the few arcs of one domain: added entry by entry, not as a dense
    # hops x arcs array.
    per_hop = (sp.diags(amount) @ sp.csr_matrix(unit)[which.reshape(-1)]).tocoo()
    np.add.at(flows, (k_m[per_hop.row], per_hop.col), per_hop.data)
    return True


def _route_part(g: CoreGraph, arcs_in: np.ndarray, demand: np.ndarray,
                flows: np.ndarray) -> bool:
    """Add to ``flows`` (K x core arcs) every commodity's ``demand`` routed by fewest-hop
    WCMP on the arcs ``arcs_in`` only; False (``flows`` untouched) when a target of positive
    demand cannot be reached on them."""
    K, m = demand.shape[0], len(arcs_in)
    keep = np.flatnonzero(arcs_in)
    sub = replace(g, tail=g.tail[keep], head=g.head[keep], capacity=g.capacity[keep])
    add = np.zeros((K, m))
    step = max(1, ECMP_CHUNK_ENTRIES // max(len(keep), 1))
    for lo in range(0, K, step):
        part = replace(sub, sources=g.sources[lo:lo + step], demand=demand[lo:lo + step])
        arcs, loads, cost = ecmp_columns(part, np.ones(len(keep)), sub.capacity)
        if not np.all(np.isfinite(cost)):
            return False
        for k, (a, f) in enumerate(zip(arcs, loads, strict=True)):
            add[lo + k, keep[a]] = f
    flows += add
    return True


@dataclass(frozen=True)
class HierarchyCut(ArcLengths):
    """The upper proof of the best hierarchy cut (:func:`structural_cut_lengths`): its arcs
    as lengths, 1 on each arc that crosses it, re-checked as every
    :class:`~fabricopt.flow.proof.ArcLengths` is (their distance bound is never above the
    cut's value: every pair the cut separates is at least 1 apart).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(4, 2, 4, link_gbps=1.0)   # a leaf: 2 uplinks over 4 x 12 sent
    >>> ga = GraphArrays.from_fabric(fab)
    >>> bound, lengths = structural_cut_lengths(fab, fo.all_to_all(fab), ga)
    >>> round(HierarchyCut(ga, lengths).check(fab, fo.all_to_all(fab)).value, 6)
    0.041667
    """

    STAGES: ClassVar[tuple[str, ...]] = ("hierarchy cut", "intact flow rerouted", "planes")


__all__ = ["ECMP_MAX_ENTRIES", "HIERARCHY_KEYS", "HierarchyCut", "ecmp_point",
           "hierarchy_partitions",
           "pxn_entries", "rail_labels", "rail_relays",
           "structural_cut_lengths"]
