r"""Bounds first for the two-phase rate: a cut of the hierarchy above, routed phase-1 flows
below, and the LP only when they do not meet.

Two-phase routing with hub shares :math:`p` (:mod:`fabricopt.flow.two_phase.rate`) has a rate
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
* **Lower: WCMP phase-1 flows.** Each endpoint's phase-1 flow forwarded as switches do,
  per destination hub: what reaches a node leaves on its arcs one hop closer to the hub, in
  shares proportional to their capacity. Every endpoint's flow conserves by construction and
  they add up linearly, so one pass per hub gives the load of all of them; scaled to fit the
  most loaded row :math:`L(a) + L(\bar a) \le c(a)`, it proves a rate.

When the two meet (to 1e-6, the exactness tolerance of every solve) the rate is exact with
no LP: on a Clos whose top tier is the hub set and whose bundles are even, the binding cut is
a pod's or leaf's uplinks and WCMP fills them evenly (``docs/bounds-first.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ...graph_arrays import GraphArrays
from ..certificate import EXACT_RTOL, certified_lower
from ..symmetric import sorted_unique

#: Largest hubs x nodes for which the routed lower bound is built (hop distances to every
#: hub, 8 bytes each).
WCMP_MAX_HUB_ENTRIES = 20_000_000
#: Groups of the hierarchy, best first, from which hubs are moved across the cut.
FLIP_STARTS = 8


@dataclass(frozen=True)
class HoseProof:
    """What proves a two-phase rate, for :func:`~fabricopt.check_certificate` to re-prove:
    ``kind`` names the flows (``"wcmp"``: WCMP phase-1 flows, rebuilt from the fabric;
    ``"merged"``, ``"lp"``, ``"symmetric"``: a point ``x`` of that LP, lifted to every
    endpoint), for ``endpoints``; ``symmetry`` is the group a symmetric point lives in."""

    kind: str
    endpoints: tuple
    x: np.ndarray | None = None
    symmetry: object = None


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
    return _cut_with(side, _crossing(ga, side), ep_idx, hub_share)


def _crossing(ga: GraphArrays, side: np.ndarray) -> tuple[float, float]:
    """The capacity leaving ``side`` and the capacity entering it."""
    out = float(ga.capacity[side[ga.tail] & ~side[ga.head]].sum())
    into = float(ga.capacity[~side[ga.tail] & side[ga.head]].sum())
    return out, into


def _cut_with(side: np.ndarray, crossing: tuple[float, float], ep_idx: np.ndarray,
              hub_share: np.ndarray) -> ValiantCut:
    """:func:`cut_of` given the capacities leaving and entering ``side``."""
    out, into = crossing
    inside = float(side[ep_idx].sum())
    p_in = float(hub_share[side].sum())
    p_out = float(hub_share[~side].sum())
    return ValiantCut(side, min(out, into), inside * p_out + (len(ep_idx) - inside) * p_in)


def group_capacities(ga: GraphArrays, label: np.ndarray, ep_idx: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group of ``label``: the capacity leaving it, entering it, and its endpoints of
    ``ep_idx`` (what :func:`best_cut` reads of a partition, whatever the hubs)."""
    groups = int(label.max()) + 1
    crossing = label[ga.tail] != label[ga.head]
    cap_out = np.bincount(label[ga.tail], weights=ga.capacity * crossing, minlength=groups)
    cap_in = np.bincount(label[ga.head], weights=ga.capacity * crossing, minlength=groups)
    count = np.bincount(label[ep_idx], minlength=groups).astype(float)
    return cap_out, cap_in, count


def best_cut(ga: GraphArrays, partitions: list[np.ndarray], ep_idx: np.ndarray,
             hub_idx: np.ndarray, share: np.ndarray, enough: float | None = None,
             capacities: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
             ) -> ValiantCut | None:
    """The least bound over the groups of ``partitions`` (a group label per node each, as
    :func:`~fabricopt.flow.bounds.hierarchy_partitions` gives), the best
    :data:`FLIP_STARTS` of them then improved by moving hubs across; None when no set
    bounds the rate. A group whose bound is at most ``enough`` (what a caller needs to
    know) is returned as it is, without the moves, which only lower it. ``capacities`` are
    :func:`group_capacities` of each partition when the caller keeps them (one reading for
    every hub level).

    >>> import fabricopt as fo
    >>> from fabricopt.flow.bounds import hierarchy_partitions
    >>> fab = fo.leaf_spine(2, 1, 2, link_gbps=100)   # 2 leaves of 2 hosts, one spine
    >>> ga = GraphArrays.from_fabric(fab)
    >>> ep = np.array([ga.index[e] for e in fab.endpoints])
    >>> hub = np.array([ga.index["spine0"]])
    >>> cut = best_cut(ga, hierarchy_partitions(fab, ga), ep, hub, np.array([1.0]))
    >>> cut.rate_gbps, [ga.nodes[i] for i in np.flatnonzero(cut.side)]  # 4 hosts, 200 in
    (50.0, ['spine0'])
    """
    n, N = ga.n_nodes, len(ep_idx)
    hub_share = np.zeros(n)
    hub_share[hub_idx] = share
    # A genuine crossing is at least the smallest share (one endpoint, one hub apart);
    # anything below is the rounding of shares that sum to one.
    tiny = 0.5 * float(share[share > 0].min())
    starts: list[tuple[float, np.ndarray, int]] = []
    if capacities is None:
        capacities = [group_capacities(ga, label, ep_idx) for label in partitions]
    for label, (cap_out, cap_in, count) in zip(partitions, capacities, strict=True):
        groups = len(count)
        p_in = np.bincount(label, weights=hub_share, minlength=groups)
        den = count * (1.0 - p_in) + (N - count) * p_in
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(den > tiny, np.minimum(cap_out, cap_in) / np.where(den > tiny,
                                                                                den, 1.0), np.inf)
        for k in np.argsort(rate, kind="stable")[:FLIP_STARTS]:
            if np.isfinite(rate[k]):
                starts.append((float(rate[k]), label, int(k)))
    starts.sort(key=lambda s: s[0])
    if starts and enough is not None and starts[0][0] <= enough:
        _, label, k = starts[0]
        return cut_of(ga, label == k, ep_idx, hub_share)
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
    # Only the arcs out of (into) a hub add to a hub's sums: bincount adds each bin's
    # weights in arc order, so over those arcs alone the sums are the same, bit for bit.
    is_hub = np.zeros(n, dtype=bool)
    is_hub[hub_idx] = True
    t_arcs, h_arcs = np.flatnonzero(is_hub[ga.tail]), np.flatnonzero(is_hub[ga.head])
    t_tail, t_head, t_cap = ga.tail[t_arcs], ga.head[t_arcs], ga.capacity[t_arcs]
    h_tail, h_head, h_cap = ga.tail[h_arcs], ga.head[h_arcs], ga.capacity[h_arcs]
    cap_out_all = np.bincount(t_tail, weights=t_cap, minlength=n)[hub_idx]
    cap_in_all = np.bincount(h_head, weights=h_cap, minlength=n)[hub_idx]
    crossing = _crossing(ga, side)
    cut = _cut_with(side, crossing, ep_idx, hub_share)
    for _ in range(len(hub_idx)):
        out, into = crossing
        to_side = np.bincount(t_tail, weights=t_cap * side[t_head], minlength=n)[hub_idx]
        from_side = np.bincount(h_head, weights=h_cap * side[h_tail], minlength=n)[hub_idx]
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
        crossing = _crossing(ga, side)  # recomputed exactly, not incrementally
        cut = _cut_with(side, crossing, ep_idx, hub_share)
    return cut


@dataclass(frozen=True)
class RoutedPhaseOne:
    """Phase-1 flows routed by WCMP: ``load`` per arc (both phases, Gb/s per unit rate of
    every endpoint) and the largest L1 conservation residual measured, per hub."""

    load: np.ndarray
    residual_l1: float

    def rate(self, capacity: np.ndarray, min_share: float) -> tuple[float, float]:
        """Certified rate (Gb/s per endpoint; 0 when nothing is loaded) and the worst
        overload at the rate that fills the most loaded row: the rate less what the
        measured conservation residual may have lost
        (:func:`~fabricopt.flow.certificate.certified_lower`)."""
        top = float(np.max(self.load / capacity)) if len(capacity) else 0.0
        if not top > 0:
            return 0.0, 0.0
        return certified_lower(1.0 / top, self.load / top, capacity, self.residual_l1 / top,
                               min_share)


def hops_to_hubs(ga: GraphArrays, hub_idx: np.ndarray) -> np.ndarray | None:
    """Fewest hops from every node to each hub (hubs x nodes); None above
    :data:`WCMP_MAX_HUB_ENTRIES` entries.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.leaf_spine(2, 1, 2, link_gbps=100))
    >>> ga.nodes, hops_to_hubs(ga, np.array([ga.index["spine0"]]))[0].tolist()
    (['g0', 'g1', 'g2', 'g3', 'leaf0', 'leaf1', 'spine0'], [2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 0.0])
    """
    n = ga.n_nodes
    if len(hub_idx) * n > WCMP_MAX_HUB_ENTRIES:
        return None
    back = sp.csr_matrix((np.ones(ga.n_arcs), (ga.head, ga.tail)), shape=(n, n))
    return np.atleast_2d(shortest_path(back, directed=True, unweighted=True, indices=hub_idx))


def phase_one_flows(ga: GraphArrays, to_hub: np.ndarray, share: np.ndarray,
                    injection: np.ndarray) -> tuple[np.ndarray, float]:
    """WCMP phase-1 flow of ``injection`` (endpoints per node, each sending ``share`` of a
    unit rate to each hub): per arc (phase 1 only, not yet with the reverse arcs) and the
    largest L1 conservation residual over the hubs.

    As a switch forwards, per destination: what reaches a node bound for hub ``h`` leaves it
    on its arcs one hop closer to ``h``, in shares proportional to their capacity. Each
    source's flow is that split applied to its own injection, so it conserves by itself and
    the flows add up linearly: the result is the sum of every endpoint's phase-1 flow.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.leaf_spine(2, 1, 2, link_gbps=100))
    >>> to_hub = hops_to_hubs(ga, np.array([ga.index["spine0"]]))
    >>> flow, residual = phase_one_flows(ga, to_hub, np.array([1.0]),
    ...                                  np.array([1.0, 1, 1, 1, 0, 0, 0]))
    >>> flow[ga.arcs.index(("leaf0", "spine0"))], residual   # a leaf's 2 hosts go up
    (np.float64(2.0), 0.0)
    """
    n = ga.n_nodes
    load = np.zeros(ga.n_arcs)
    residual = 0.0
    for j, d in enumerate(to_hub):
        nxt = np.flatnonzero(np.isfinite(d[ga.tail]) & (d[ga.head] == d[ga.tail] - 1))
        out_w = np.bincount(ga.tail[nxt], weights=ga.capacity[nxt], minlength=n)
        frac = ga.capacity[nxt] / out_w[ga.tail[nxt]]
        through = injection * share[j]
        flow = np.zeros(len(nxt))
        level = d[ga.tail[nxt]]
        for hops in np.unique(level)[::-1]:   # the farthest nodes first
            at = np.flatnonzero(level == hops)
            flow[at] = through[ga.tail[nxt[at]]] * frac[at]
            through = through + np.bincount(ga.head[nxt[at]], weights=flow[at], minlength=n)
        load[nxt] += flow
        net = (np.bincount(ga.tail[nxt], weights=flow, minlength=n)
               - np.bincount(ga.head[nxt], weights=flow, minlength=n) - injection * share[j])
        net[int(np.flatnonzero(d == 0)[0])] += float(injection.sum() * share[j])
        residual = max(residual, float(np.abs(net).sum()))
    return load, residual


def hub_orbit_representatives(ga: GraphArrays, hub_idx: np.ndarray, share: np.ndarray,
                              orbit: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """One hub per orbit of a group of automorphisms (its position in ``hub_idx``) and the
    number of hubs in each orbit, from the group's arc orbits ``orbit``; None when the hubs
    are not a union of whole orbits or their shares differ inside one.

    A node's orbit is the set of heads of the orbit of any arc entering it (the images
    ``g(u, v) = (g u, g v)`` of that arc end at every ``g v``), so each hub is labelled by the
    least head of its first entering arc's orbit.

    >>> import fabricopt as fo
    >>> from fabricopt.flow.symmetric import arc_orbits
    >>> fab = fo.leaf_spine(2, 2, 2, link_gbps=100)
    >>> ga = GraphArrays.from_fabric(fab)
    >>> spines = np.array([ga.index["spine0"], ga.index["spine1"]])
    >>> reps, counts = hub_orbit_representatives(ga, spines, np.array([0.5, 0.5]),
    ...                                          arc_orbits(ga, fab.symmetry))
    >>> [ga.nodes[spines[i]] for i in reps], counts.tolist()   # the spines are one orbit
    (['spine0'], [2])
    """
    n_orbits = int(orbit.max()) + 1 if len(orbit) else 0
    first_in = np.full(ga.n_nodes, -1, dtype=np.int64)
    first_in[ga.head[::-1]] = np.arange(ga.n_arcs - 1, -1, -1)
    if np.any(first_in[hub_idx] < 0):
        return None
    least_head = np.full(n_orbits, ga.n_nodes, dtype=np.int64)
    np.minimum.at(least_head, orbit, ga.head)
    label = least_head[orbit[first_in[hub_idx]]]
    labels, first, counts = np.unique(label, return_index=True, return_counts=True)
    # Each orbit must lie wholly among the hubs: as many hubs of a label as heads of its orbit.
    pairs = sorted_unique(orbit.astype(np.int64) * ga.n_nodes + ga.head)
    heads_per_orbit = np.bincount(pairs // ga.n_nodes, minlength=n_orbits)
    if np.any(heads_per_orbit[orbit[first_in[hub_idx[first]]]] != counts):
        return None
    position = np.searchsorted(labels, label)
    if np.any(np.abs(share - share[first][position]) > 1e-12 * np.abs(share).max()):
        return None
    return first, counts


def wcmp_phase_one(ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray, hub_idx: np.ndarray,
                   share: np.ndarray, orbit: np.ndarray | None = None,
                   ) -> RoutedPhaseOne | None:
    """Every endpoint's phase-1 flow (unit rate, ``share`` to each hub) by fewest-hop WCMP
    (:func:`phase_one_flows`), with both phases' load per arc; None when the distances to
    the hubs are too large to hold (:data:`WCMP_MAX_HUB_ENTRIES`) or a hub is out of some
    endpoint's reach.

    >>> import fabricopt as fo
    >>> from fabricopt.flow.two_phase.arrays import _reverse_arcs
    >>> ga = GraphArrays.from_fabric(fo.leaf_spine(2, 1, 2, link_gbps=100))
    >>> ep = np.array([ga.index[e] for e in ("g0", "g1", "g2", "g3")])
    >>> routed = wcmp_phase_one(ga, _reverse_arcs(ga), ep, np.array([ga.index["spine0"]]),
    ...                         np.array([1.0]))
    >>> routed.rate(ga.capacity, 1.0)   # a leaf's one 100 Gb/s uplink carries 2 r
    (50.0, 1.0)

    With ``orbit``, the arc orbits of a group of automorphisms that keeps the endpoints (a
    symmetry claim about all of them), one hub per orbit is routed: WCMP routes by hops and
    capacities, which automorphisms keep, so the hubs of an orbit load the arcs of an arc
    orbit alike in total, and the orbit's load is its size times the representative's load
    averaged over each arc orbit (120 hubs of a 15,360-GPU dual-plane pod route as one).
    """
    counts = None
    if orbit is not None:
        found = hub_orbit_representatives(ga, hub_idx, share, orbit)
        if found is not None:
            hub_idx, share, counts = hub_idx[found[0]], share[found[0]], found[1]
    to_hub = hops_to_hubs(ga, hub_idx)
    if to_hub is None or not np.all(np.isfinite(to_hub[:, ep_idx])):
        return None
    injection = np.bincount(ep_idx, minlength=ga.n_nodes).astype(float)
    if counts is None:
        load, residual = phase_one_flows(ga, to_hub, share, injection)
    else:
        # Each representative stands for its orbit: its share counted once per hub of it
        # (the residual it measures grows alike, which only lowers the rate proven).
        load, residual = phase_one_flows(ga, to_hub, share * counts, injection)
        load = (np.bincount(orbit, weights=load) / np.bincount(orbit))[orbit]
    return RoutedPhaseOne(load + load[rev], residual)


def closes(lower: float, upper: float) -> bool:
    """True when a certified rate meets a bound above to the exactness tolerance.

    >>> closes(1.0, 1.0 + 1e-7), closes(1.0, 1.1), closes(0.0, np.inf)
    (True, False, False)
    """
    return bool(np.isfinite(upper) and upper - lower <= EXACT_RTOL * upper)


__all__ = ["FLIP_STARTS", "WCMP_MAX_HUB_ENTRIES", "HoseProof", "RoutedPhaseOne", "ValiantCut",
           "best_cut", "closes", "cut_of", "hops_to_hubs", "hub_orbit_representatives",
           "phase_one_flows", "wcmp_phase_one"]
