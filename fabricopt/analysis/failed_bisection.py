r"""A failed fabric's bisection, bounded below by how much of the intact fabric's flow its
failed links can really stop.

Every cut of a fabric with failed links is the intact cut less the failed capacity crossing
it, so the intact bisection less *all* the failed capacity is a lower bound. It is loose when
no split can load every failed link fully at once (two failed links of one pod, one above a
leaf whose hosts are all on one side and one that carries only traffic of the other side).
This bound weighs each failed link by the flow a split really sends over it.

* **A flow for every split.** In the intact fabric, two-phase routing at a certified rate
  :math:`r` (fewest-hop WCMP phase-1 flows to the hubs, phase 2 their reverse,
  :mod:`fabricopt.flow.two_phase.bounds`) carries, for any split of the :math:`N` endpoints
  into halves :math:`A, B` of :math:`N/2`, a flow :math:`f^A` from :math:`A` to :math:`B` of
  value :math:`v = r N/2`: each endpoint of :math:`A` sends :math:`r` to the hubs, the hubs
  pass it on to :math:`B`. It is linear in :math:`A`:
  :math:`f^A_a = r\,(\sum_{h \in A} \alpha_a(h) + \sum_{h \in B} \alpha_{\bar a}(h))`, with
  :math:`\alpha_a(h)` the share of :math:`h`'s phase-1 flow on arc :math:`a` and
  :math:`\bar a` the reverse arc.
* **A cut of the failed fabric.** For any node set :math:`S` holding :math:`A` and not
  :math:`B`, with failed capacities :math:`c' \le c`, since
  :math:`\sum_{\delta^+ S} f - \sum_{\delta^- S} f = v`:
  :math:`c'(\delta^+ S) = v + \sum_{a \in \delta^+ S} (c'_a - f^A_a)
  + \sum_{a \in \delta^- S} f^A_a`. An arc that did not fail adds at least 0 either way
  (:math:`c'_a = c_a \ge f^A_a`), so keeping only the arcs between the nodes the failed
  links touch (every failed arc among them) bounds the cut below.
* **The worst split.** Each side of the :math:`t` touched nodes (:math:`2^t` of them) fixes
  which kept arcs leave or enter :math:`S` and which touched endpoints are in :math:`A`;
  what is left is linear in :math:`A`, so the worst :math:`A` takes the rest of its half
  where the flow stopped grows most. The least over sides and splits bounds the failed
  bisection: a failed link stops a full link's worth only where the split loads it fully,
  and links that meet at a node cannot all be loaded from one side.

Since :math:`f^A \le c`, the bound is never below the intact one less every failed link.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..flow.two_phase.arrays import hub_levels, hub_shares
from ..flow.two_phase.bounds import hops_to_hubs, wcmp_phase_one
from ..flow.two_phase.rate import best_hub_level
from ..graph_arrays import GraphArrays, arc_labels
from .cuts import hose_ceiling

#: Most failed links weighed together (every side of the nodes they touch is tried).
MAX_FAILED_LINKS = 8
#: Most choices x endpoints held at once.
MAX_CHOICE_ENTRIES = 20_000_000


def capacity_lost(intact: Fabric, degraded: Fabric) -> float | None:
    """Gb/s that any cut can lose going from ``intact`` to ``degraded``: per physical link,
    the larger of its two directions' lost capacity (a cut crosses a link one way), summed;
    None unless ``degraded`` is ``intact`` with capacity taken away (same endpoints, every
    node and arc present in ``intact`` with at least as much capacity).

    A removed switch loses all its links: placing it on either side of a cut of the degraded
    fabric gives a cut of the intact one that is larger by at most what its links carried
    across, so the same per-link sum bounds it.

    >>> import fabricopt as fo
    >>> ring = fo.ring(6)
    >>> capacity_lost(ring, ring.without(links=[("n0", "n1")]))
    1.0
    """
    gi, gd = intact.graph, degraded.graph
    if set(intact.endpoints) != set(degraded.endpoints) or any(v not in gi for v in gd):
        return None
    for u, v, c in gd.edges(data="capacity"):
        if not gi.has_edge(u, v) or c > gi[u][v]["capacity"] * (1 + 1e-12):
            return None
    lost: dict[frozenset, float] = {}
    for u, v, c in gi.edges(data="capacity"):
        kept = gd[u][v]["capacity"] if gd.has_edge(u, v) else 0.0
        key = frozenset((u, v))
        lost[key] = max(lost.get(key, 0.0), float(c) - float(kept))
    return float(sum(lost.values()))


def failed_links_lower(intact: Fabric, failed: Fabric, eps: tuple[Hashable, ...],
                       ) -> tuple[float, str] | None:
    """Lower bound on the bisection of ``failed`` (``intact`` with capacity taken away, the
    same endpoints) among ``eps``, and how it was proven; None when it does not apply (an
    odd number of endpoints, one-way links, no failed link or too many of them, a
    capacity ``failed`` adds).

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)                          # 16 hosts, 400 Gb/s links: B = 3,200
    >>> bound, how = failed_links_lower(ft, ft.without(links=[("leaf0", "spine0.0"),
    ...     ("core0.0", "spine0.0")]), ft.endpoints)
    >>> bound    # not 3,200 - 2 x 400: the two links meet at spine0.0, one full link at most
    2800.0
    """
    if len(eps) % 2 or len(eps) < 2:
        return None
    ga = GraphArrays.from_fabric(intact)
    rev = _reverse(ga)
    kept = np.array([failed.graph[u][v]["capacity"] if failed.graph.has_edge(u, v) else 0.0
                     for u, v in ga.arcs])
    if rev is None or np.any(kept > ga.capacity * (1 + 1e-12)):
        return None
    lost = np.flatnonzero(kept < ga.capacity)
    links = sorted({(min(a, int(rev[a])), max(a, int(rev[a]))) for a in lost})
    if not links or len(links) > MAX_FAILED_LINKS:
        return None
    ep_idx = np.array([ga.index[e] for e in eps])
    best: tuple[float, str] | None = None
    for level, hubs in hub_levels(intact, eps).items():
        hub_idx = np.array([ga.index[h] for h in hubs])
        share = hub_shares(ga, hub_idx, ep_idx)
        routed = wcmp_phase_one(ga, rev, ep_idx, hub_idx, share)
        if routed is None:
            continue
        rate, _ = routed.rate(ga.capacity, float(share[share > 0].min()))
        if not rate > 0:
            continue
        ends = np.zeros(ga.n_nodes, dtype=bool)
        ends[ga.tail[lost]] = ends[ga.head[lost]] = True
        arcs = np.flatnonzero(ends[ga.tail] & ends[ga.head])
        partner = np.searchsorted(arcs, rev[arcs])
        alpha = _phase_one_shares(ga, hub_idx, share, ep_idx, arcs)
        worst = _worst_split_loss(ga, ep_idx, arcs, partner, alpha * rate, kept[arcs])
        if worst is None:
            return None
        bound = rate * (len(eps) // 2) - worst
        if best is None or bound > best[0]:
            best = (bound, f"the intact fabric's two-phase flows (hubs {level} hops out, "
                           f"{rate:.6g} Gb/s) less what {len(links)} failed links can stop "
                           f"of them, at most {worst:.6g} Gb/s")
    return best


def _reverse(ga: GraphArrays) -> np.ndarray | None:
    """Index of each arc's reverse, or None when some arc has none."""
    where = {arc: i for i, arc in enumerate(ga.arcs)}
    out = [where.get((v, u), -1) for u, v in ga.arcs]
    return None if min(out, default=0) < 0 else np.array(out)


def _phase_one_shares(ga: GraphArrays, hub_idx: np.ndarray, share: np.ndarray,
                      ep_idx: np.ndarray, arcs: np.ndarray) -> np.ndarray:
    """Share of each endpoint's unit phase-1 flow on each of ``arcs`` (endpoints x arcs),
    as :func:`~fabricopt.flow.two_phase.bounds.phase_one_flows` routes it: what reaches a node
    bound for a hub leaves on its arcs one hop closer, in proportion to their capacity. Read
    backwards from each hub: the share of a node's flow that takes an arc is the sum, over
    the node's next hops, of the split times (that arc, or the share from the next node).
    """
    n, k = ga.n_nodes, len(arcs)
    pick = np.zeros((ga.n_arcs, k))
    pick[arcs, np.arange(k)] = 1.0
    out = np.zeros((len(ep_idx), k))
    for j, d in enumerate(hops_to_hubs(ga, hub_idx)):
        nxt = np.flatnonzero(np.isfinite(d[ga.tail]) & (d[ga.head] == d[ga.tail] - 1))
        out_w = np.bincount(ga.tail[nxt], weights=ga.capacity[nxt], minlength=n)
        frac = ga.capacity[nxt] / out_w[ga.tail[nxt]]
        level = d[ga.tail[nxt]]
        through = np.zeros((n, k))
        for hops in np.unique(level):       # the nodes next to the hub first
            at = nxt[level == hops]
            part = frac[level == hops][:, None] * (pick[at] + through[ga.head[at]])
            np.add.at(through, ga.tail[at], part)
        out += share[j] * through[ep_idx]
    return out


def _worst_split_loss(ga: GraphArrays, ep_idx: np.ndarray, arcs: np.ndarray,
                      partner: np.ndarray, flow: np.ndarray, kept: np.ndarray) -> float | None:
    """Max over splits and node sets of what the failed links stop of the flow
    (module docstring): the arcs between the nodes they touch are ``arcs`` (every failed arc
    among them), ``partner[i]`` the position of arc ``i``'s reverse, ``flow`` each endpoint's
    phase-1 flow on them at the rate (endpoints x arcs), ``kept`` their failed capacities.

    Every side of the touched nodes is tried: it fixes which of ``arcs`` leave :math:`S`
    (each stops :math:`f_a - c'_a`), which enter it (each gives back :math:`f_a`: flow that
    crossed the other way must cross again) and which touched endpoints are in :math:`A`;
    the rest of :math:`A` is the free endpoints of largest coefficient. None when the sides
    do not fit :data:`MAX_CHOICE_ENTRIES`."""
    n, half = len(ep_idx), len(ep_idx) // 2
    touched, local = np.unique(np.stack([ga.tail[arcs], ga.head[arcs]]), return_inverse=True)
    local = local.reshape(2, -1)
    if 2 ** len(touched) * n > MAX_CHOICE_ENTRIES:
        return None
    sides = ((np.arange(2 ** len(touched))[:, None] >> np.arange(len(touched))) & 1).astype(bool)
    leaving = sides[:, local[0]] & ~sides[:, local[1]]          # sides x arcs
    entering = ~sides[:, local[0]] & sides[:, local[1]]
    sign = leaving.astype(float) - entering                     # +1 stops flow, -1 returns it
    # f_a = sum_A flow_a + sum_B flow_p (p the reverse) = sum_all flow_p + sum_A (flow_a -
    # flow_p), so what the sides stop is linear in A.
    const = sign @ flow[:, partner].sum(axis=0) - leaving @ kept
    gain = sign @ (flow - flow[:, partner]).T                   # sides x endpoints
    position = {int(v): i for i, v in enumerate(touched)}
    pinned = np.array([position.get(int(e), -1) for e in ep_idx])
    free = np.flatnonzero(pinned < 0)
    fixed = np.flatnonzero(pinned >= 0)
    in_a = sides[:, pinned[fixed]]                              # sides x pinned endpoints
    n_a = in_a.sum(axis=1)
    fits = (n_a <= half) & (len(fixed) - n_a <= n - half)
    worst = -np.inf
    for take in np.unique(n_a[fits]):
        rows = np.flatnonzero(fits & (n_a == take))
        need = half - int(take)
        g = gain[np.ix_(rows, free)]
        top = (np.partition(g, len(free) - need, axis=1)[:, len(free) - need:].sum(axis=1)
               if need else np.zeros(len(rows)))
        pinned_gain = (gain[np.ix_(rows, fixed)] * in_a[rows]).sum(axis=1)
        worst = max(worst, float(np.max(const[rows] + pinned_gain + top)))
    return max(worst, 0.0)


def given_back(fab: Fabric, intact: Fabric, eps: tuple[Hashable, ...],
               ) -> tuple[Fabric, GraphArrays, np.ndarray] | None:
    """``fab`` with its failed scale-out links given back from ``intact`` (failed NVLink
    stays failed), that fabric's arrays, and the capacity given back per arc; None when
    ``fab`` is not ``intact`` with capacity taken away (a node gone, more capacity, other
    endpoints) or nothing is given back. Every cut of ``fab`` is the same cut of the given-back
    fabric less the restored capacity crossing it.

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)
    >>> plus, ga, restored = given_back(ft.without(links=[("g0", "leaf0")]), ft, ft.endpoints)
    >>> plus.graph.number_of_edges() == ft.graph.number_of_edges(), float(restored.sum())
    (True, 800.0)
    """
    gi, gd = intact.graph, fab.graph
    if set(gi) != set(gd) or set(intact.endpoints) != set(eps):
        return None
    graph = gd.copy()
    ga_intact = GraphArrays.from_fabric(intact)
    up = arc_labels(intact).scale_up
    for (u, v), c, is_up in zip(ga_intact.arcs, ga_intact.capacity.tolist(), up.tolist(),
                                strict=True):
        kept = gd[u][v]["capacity"] if gd.has_edge(u, v) else 0.0
        if kept > c * (1 + 1e-12):
            return None   # more capacity than the intact fabric: not a failed copy
        if not is_up and kept < c:
            graph.add_edge(u, v, **gi[u][v])
    plus = Fabric(graph, list(fab.endpoints), name=fab.name)
    ga = GraphArrays.from_fabric(plus)
    restored = ga.capacity - np.array([gd[u][v]["capacity"] if gd.has_edge(u, v) else 0.0
                                       for u, v in ga.arcs])
    if not np.any(restored > 0):
        return None
    return plus, ga, restored


def restored_charge(ga: GraphArrays, restored: np.ndarray, arcs: np.ndarray | None = None,
                    load: np.ndarray | None = None) -> float:
    """What the restored capacity of ``arcs`` (default: all) can add to any cut, or, given
    the ``load`` a flow puts on each arc, what of that flow it can carry across: per link
    the larger of its two directions (a cut crosses a link one way), summed.

    >>> import fabricopt as fo
    >>> ga = GraphArrays.from_fabric(fo.ring(4))
    >>> restored_charge(ga, np.where(np.arange(ga.n_arcs) < 2, 1.0, 0.0))
    2.0
    """
    arcs = np.flatnonzero(restored > 0) if arcs is None else arcs[restored[arcs] > 0]
    lo = np.minimum(ga.tail[arcs], ga.head[arcs])
    hi = np.maximum(ga.tail[arcs], ga.head[arcs])
    per_link: dict[tuple[int, int], float] = {}
    held = restored[arcs] if load is None else np.minimum(restored[arcs], load[arcs])
    for u, v, x in zip(lo.tolist(), hi.tolist(), held.tolist(), strict=True):
        per_link[(u, v)] = max(per_link.get((u, v), 0.0), x)
    return float(sum(per_link.values()))


def restored_hose_lower(fab: Fabric, intact: Fabric, eps: tuple[Hashable, ...],
                        beat: float = 0.0, time_limit: float | None = None,
                        bounds_first: bool | None = None,
                        back: tuple[Fabric, GraphArrays, np.ndarray] | None = None,
                        ) -> tuple[float, str] | None:
    """The hose bound (a matching of ``N/2`` pairs at the certified two-phase rate crosses
    any split) proven on ``fab`` with its failed scale-out links given back
    (:func:`given_back`), less the capacity given back (:func:`restored_charge`): one failed
    NIC holds the two-phase rate of every endpoint down, given back it holds nothing. None
    when it does not apply or cannot beat ``beat`` (the rate is not sought when a cut of
    the hierarchy caps it below that). ``back`` is :func:`given_back`'s answer when the
    caller has it.

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)                    # 16 hosts at 400: bisection 8 x 400 = 3,200
    >>> restored_hose_lower(ft.without(links=[("g0", "leaf0")]), ft, ft.endpoints)[0]
    2800.0
    """
    found = back or (given_back(fab, intact, eps) if len(eps) >= 2 else None)
    if found is None:
        return None
    plus, ga, restored = found
    half = len(eps) // 2
    ep_idx = np.array([ga.index[e] for e in eps])
    # Without the rate's loads, every restored link may carry its whole capacity across.
    if hose_ceiling(plus, ga, ep_idx) * half - restored_charge(ga, restored) <= beat:
        return None
    try:
        hose = best_hub_level(plus, eps, time_limit=time_limit, arrays=ga,
                              bounds_first=bounds_first)
    except InvalidParameterError:   # one-way links or hubs nothing enters
        return None
    # The matching's flow puts at most the rate's certified load on an arc (any hose
    # traffic's), so a restored link carries no more than that of it across a cut.
    load = np.array([hose.load_gbps.get(arc, np.inf) for arc in ga.arcs])  # none: all
    charge = restored_charge(ga, restored, load=load)
    bound = hose.rate_gbps * half - charge
    if bound <= beat * (1 + 1e-9):
        return None
    return bound, (f"two-phase hose rate with the failed links between hosts and switches "
                   f"restored, {hose.rate_gbps:.6g} Gb/s (hubs {hose.level} hops out), less "
                   f"{charge:.6g} Gb/s restored")


__all__ = ["MAX_FAILED_LINKS", "failed_links_lower", "given_back", "restored_charge",
           "restored_hose_lower"]
