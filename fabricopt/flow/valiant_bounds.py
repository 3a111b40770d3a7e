r"""Bounds first for the two-phase rate: a cut of the hierarchy above, routed phase-1 flows
below, and the LP only when they do not meet.

Two-phase routing with hub shares :math:`p` (:mod:`fabricopt.flow.valiant`) has a rate
:math:`r^*`, the optimum of an LP with one phase-1 flow per endpoint. Both bounds here need
no LP:

* **Upper: a cut.** For a set of nodes :math:`S` holding :math:`E_S` of the endpoints and
  hubs of total share :math:`p(S)`, every endpoint of :math:`S` sends :math:`r\,p(\bar S)`
  out of it in phase 1 and every endpoint outside sends :math:`r\,p(S)` in, and an arc's row
  counts its own load and its reverse's. So the capacity leaving :math:`S` (and the capacity
  entering it) carries at least :math:`r\,(|E_S|\,p(\bar S) + |E_{\bar S}|\,p(S))`:

  .. math:: r^* \le \frac{\min(c(\delta^+ S), c(\delta^- S))}
                       {|E_S|\,p(\bar S) + |E_{\bar S}|\,p(S)}.

  This is the distance bound of the two-phase LP with length 1 on the arcs leaving
  :math:`S` (a hub on the other side is at least 1 away). The sets tried are the groups of
  :func:`~fabricopt.flow.bounds.hierarchy_partitions` (a server, a leaf with its hosts, a
  scalable unit, a pod, a plane), then, from the best of them, hubs moved across one at a
  time while that lowers the bound (a scalable unit with the spines its leaves favour).
* **Lower: WCMP phase-1 flows.** Each endpoint's phase-1 flow split over all its
  fewest-hop paths to each hub, in shares proportional to arc capacity, as deployed. An
  endpoint all of whose fewest-hop paths leave by one arc (a GPU's NIC toward spines) is
  routed once with the others behind the same arc. The flows conserve by construction;
  scaled to fit the most loaded row :math:`L(a) + L(\bar a) \le c(a)`, they prove a rate.

When the two meet (to 1e-6, the exactness tolerance of every solve) the rate is exact with
no LP: on a Clos whose top tier is the hub set and whose bundles are even, the binding cut is
a pod's or leaf's uplinks and WCMP fills them evenly (``docs/bounds-first.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..graph_arrays import GraphArrays
from .approx import _CoreGraph
from .bounds import ECMP_CHUNK_ENTRIES, hierarchy_partitions
from .certificate import EXACT_RTOL, certified_lower
from .colgen import ecmp_columns

#: Largest hubs x nodes for which the routed lower bound is built (hop distances to every
#: hub, 8 bytes each).
WCMP_MAX_HUB_ENTRIES = 20_000_000
#: Groups of the hierarchy, best first, from which hubs are moved across the cut.
FLIP_STARTS = 8


@dataclass(frozen=True)
class ValiantCut:
    """A set of nodes ``side`` (mask over ``ga.nodes``) and the two-phase rate it bounds:
    ``rate_gbps = capacity_gbps / crossing``, with ``crossing`` the phase-1 rate units that
    must cross it (``|E_S| p(S') + |E_S'| p(S)``) and ``capacity_gbps`` the smaller of the
    capacities leaving and entering it."""

    side: np.ndarray
    capacity_gbps: float
    crossing: float

    @property
    def rate_gbps(self) -> float:
        return self.capacity_gbps / self.crossing if self.crossing > 0 else np.inf


def cut_of(ga: GraphArrays, side: np.ndarray, ep_idx: np.ndarray, hub_share: np.ndarray,
           ) -> ValiantCut:
    """The bound of one set of nodes, computed from scratch (``hub_share`` per node).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(4, 1, 4, link_gbps=100)   # 4 leaves of 4, one spine as hub
    >>> ga = GraphArrays.from_fabric(fab)
    >>> ep = np.array([ga.index[e] for e in fab.endpoints])
    >>> share = np.zeros(ga.n_nodes); share[ga.index["spine0"]] = 1.0
    >>> side = np.zeros(ga.n_nodes, dtype=bool); side[ga.index["leaf0"]] = True
    >>> side[[ga.index[e] for e in fab.endpoints[:4]]] = True
    >>> cut_of(ga, side, ep, share).rate_gbps    # one 100 Gb/s uplink over 4 endpoints
    25.0
    """
    out = float(ga.capacity[side[ga.tail] & ~side[ga.head]].sum())
    into = float(ga.capacity[~side[ga.tail] & side[ga.head]].sum())
    inside = float(side[ep_idx].sum())
    p_in = float(hub_share[side].sum())
    p_out = float(hub_share[~side].sum())
    return ValiantCut(side, min(out, into), inside * p_out + (len(ep_idx) - inside) * p_in)


def best_cut(fab: object, ga: GraphArrays, ep_idx: np.ndarray, hub_idx: np.ndarray,
             share: np.ndarray) -> ValiantCut | None:
    """The least bound over the groups of the fabric's hierarchy, each of the best
    :data:`FLIP_STARTS` then improved by moving hubs across; None when no set bounds the
    rate."""
    n, N = ga.n_nodes, len(ep_idx)
    hub_share = np.zeros(n)
    hub_share[hub_idx] = share
    # A genuine crossing is at least the smallest share (one endpoint, one hub apart);
    # anything below is the rounding of shares that sum to one.
    tiny = 0.5 * float(share[share > 0].min())
    starts: list[tuple[float, np.ndarray, int]] = []
    for label in hierarchy_partitions(fab, ga):
        groups = int(label.max()) + 1
        crossing = label[ga.tail] != label[ga.head]
        cap_out = np.bincount(label[ga.tail], weights=ga.capacity * crossing, minlength=groups)
        cap_in = np.bincount(label[ga.head], weights=ga.capacity * crossing, minlength=groups)
        count = np.bincount(label[ep_idx], minlength=groups).astype(float)
        p_in = np.bincount(label, weights=hub_share, minlength=groups)
        den = count * (1.0 - p_in) + (N - count) * p_in
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(den > tiny, np.minimum(cap_out, cap_in) / np.where(den > tiny,
                                                                                den, 1.0), np.inf)
        for k in np.argsort(rate, kind="stable")[:FLIP_STARTS]:
            if np.isfinite(rate[k]):
                starts.append((float(rate[k]), label, int(k)))
    starts.sort(key=lambda s: s[0])
    best: ValiantCut | None = None
    for _, label, k in starts[:FLIP_STARTS]:
        cut = _move_hubs(ga, label == k, ep_idx, hub_idx, hub_share, tiny)
        if best is None or cut.rate_gbps < best.rate_gbps:
            best = cut
    return best


def _move_hubs(ga: GraphArrays, side: np.ndarray, ep_idx: np.ndarray, hub_idx: np.ndarray,
               hub_share: np.ndarray, tiny: float) -> ValiantCut:
    """``side`` after moving, one at a time, the hub that lowers the bound most, while one
    does; each move is evaluated for every hub at once from the capacities between each hub
    and the side."""
    side = side.copy()
    is_ep = np.zeros(ga.n_nodes)
    is_ep[ep_idx] = 1.0
    n, N = ga.n_nodes, len(ep_idx)
    cap_out_all = np.bincount(ga.tail, weights=ga.capacity, minlength=n)[hub_idx]
    cap_in_all = np.bincount(ga.head, weights=ga.capacity, minlength=n)[hub_idx]
    cut = cut_of(ga, side, ep_idx, hub_share)
    for _ in range(len(hub_idx)):
        out = float(ga.capacity[side[ga.tail] & ~side[ga.head]].sum())
        into = float(ga.capacity[~side[ga.tail] & side[ga.head]].sum())
        to_side = np.bincount(ga.tail, weights=ga.capacity * side[ga.head], minlength=n)[hub_idx]
        from_side = np.bincount(ga.head, weights=ga.capacity * side[ga.tail],
                                minlength=n)[hub_idx]
        inside = side[hub_idx]
        # A hub joining S: its arcs to S leave delta, its other arcs join it (and reverse).
        new_out = np.where(inside, out - (cap_out_all - to_side) + from_side,
                           out - from_side + (cap_out_all - to_side))
        new_in = np.where(inside, into - (cap_in_all - from_side) + to_side,
                          into - to_side + (cap_in_all - from_side))
        sign = np.where(inside, -1.0, 1.0)
        count = float(side[ep_idx].sum()) + sign * is_ep[hub_idx]
        p_in = float(hub_share[side].sum()) + sign * hub_share[hub_idx]
        den = count * (1.0 - p_in) + (N - count) * p_in
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(den > tiny, np.minimum(new_out, new_in) / np.where(
                den > tiny, den, 1.0), np.inf)
        k = int(np.argmin(rate))
        if not rate[k] < cut.rate_gbps * (1 - 1e-12):
            break
        side[hub_idx[k]] = ~side[hub_idx[k]]
        cut = cut_of(ga, side, ep_idx, hub_share)  # recomputed exactly, not incrementally
    return cut


@dataclass(frozen=True)
class RoutedPhaseOne:
    """Phase-1 flows routed by WCMP: ``load`` per arc (both phases, Gb/s per unit rate),
    the WCMP ``sources`` (nodes), each one's ``weight`` (endpoints behind it) and per-source
    flows ``flows`` (sources x arcs, per unit rate of each endpoint behind it), and
    ``first_arc`` per endpoint (the arc it leaves by when routed behind it, else -1)."""

    load: np.ndarray
    sources: np.ndarray
    weight: np.ndarray
    flows: sp.csr_matrix
    first_arc: np.ndarray
    residual_l1: float

    def rate(self, capacity: np.ndarray, min_share: float) -> tuple[float, float]:
        """Certified rate (Gb/s per endpoint; 0 when nothing is loaded) and the worst
        overload at the rate that fills the most loaded row: the rate less what the measured
        conservation residual may have lost (:func:`~fabricopt.flow.certificate.certified_lower`)."""
        top = float(np.max(self.load / capacity)) if len(capacity) else 0.0
        if not top > 0:
            return 0.0, 0.0
        return certified_lower(1.0 / top, self.load / top, capacity, self.residual_l1 / top,
                               min_share)


def wcmp_phase_one(ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray, hub_idx: np.ndarray,
                   share: np.ndarray) -> RoutedPhaseOne | None:
    """Every endpoint's phase-1 flow (unit rate, ``share`` to each hub) by fewest-hop WCMP;
    None when the distances to the hubs would be too large to hold
    (:data:`WCMP_MAX_HUB_ENTRIES`) or a hub is out of some endpoint's reach."""
    n, m = ga.n_nodes, ga.n_arcs
    if len(hub_idx) * n > WCMP_MAX_HUB_ENTRIES:
        return None
    hops = sp.csr_matrix((np.ones(m), (ga.head, ga.tail)), shape=(n, n))
    to_hub = shortest_path(hops, directed=True, unweighted=True, indices=hub_idx)  # H x n
    if not np.all(np.isfinite(to_hub[:, ep_idx])):
        return None
    is_hub = np.zeros(n, dtype=bool)
    is_hub[hub_idx] = True
    # An arc out of an endpoint is on a fewest-hop path to some hub when it gets one closer.
    from_ep = np.flatnonzero(np.isin(ga.tail, ep_idx))
    closer = (to_hub[:, ga.head[from_ep]] == to_hub[:, ga.tail[from_ep]] - 1).any(axis=0)
    used = from_ep[closer]
    n_used = np.bincount(ga.tail[used], minlength=n)
    single = (n_used[ep_idx] == 1) & ~is_hub[ep_idx]
    first_arc = np.full(len(ep_idx), -1)
    arc_of_tail = np.full(n, -1)
    arc_of_tail[ga.tail[used]] = used
    first_arc[single] = arc_of_tail[ep_idx[single]]
    # WCMP sources: the node behind each single-arc endpoint, and the others themselves.
    start = np.where(single, ga.head[np.maximum(first_arc, 0)], ep_idx)
    sources, weight = np.unique(start, return_counts=True)
    demand = np.zeros((len(sources), n))
    demand[:, hub_idx] = weight[:, None] * share[None, :]
    key = ga.tail * n + ga.head
    order = np.argsort(key, kind="stable")
    g = _CoreGraph(np.arange(n), ga.tail, ga.head, ga.capacity, key[order], order, sources,
                   demand, None)
    rows, cols, vals = [], [], []
    step = max(1, ECMP_CHUNK_ENTRIES // max(m, 1))
    for lo in range(0, len(sources), step):
        part = _CoreGraph(g.nodes, g.tail, g.head, g.capacity, g.arc_key, g.arc_of_key,
                          sources[lo:lo + step], demand[lo:lo + step], None)
        arcs, loads, cost = ecmp_columns(part, np.ones(m), ga.capacity)
        if not np.all(np.isfinite(cost)):
            return None
        for k, (a, f) in enumerate(zip(arcs, loads, strict=True)):
            rows.append(np.full(len(a), lo + k))
            cols.append(a)
            vals.append(f / weight[lo + k])   # per endpoint behind the source
    flows = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(len(sources), m))
    load = np.asarray(flows.T @ weight.astype(float)).ravel()
    np.add.at(load, first_arc[single], 1.0)
    # Conservation, measured: each source's flow per endpoint behind it delivers `share`.
    net = (flows @ ga.incidence().T).toarray()
    net[np.arange(len(sources)), sources] -= 1.0
    net[:, hub_idx] += share[None, :]
    residual = float(np.abs(net).sum(axis=1).max()) if len(sources) else 0.0
    return RoutedPhaseOne(load + load[rev], sources, weight, flows, first_arc, residual)


def closes(lower: float, upper: float) -> bool:
    """True when a certified rate meets a cut's bound to the exactness tolerance."""
    return bool(np.isfinite(upper) and upper - lower <= EXACT_RTOL * upper)


__all__ = ["FLIP_STARTS", "WCMP_MAX_HUB_ENTRIES", "RoutedPhaseOne", "ValiantCut", "best_cut",
           "closes", "cut_of", "wcmp_phase_one"]
