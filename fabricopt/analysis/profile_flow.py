r"""A bisection lower bound that depends on how a split shares out the units: each unit's
endpoints meet below its boundary by the unit's own two-phase routing, and only what a unit
sends out more than it takes in crosses the top tier, routed there for that split.

The hose bound (:mod:`fabricopt.flow.two_phase.rate`) proves one rate for every traffic; on an
oversubscribed fabric whose top-tier bundles are uneven that rate sits below what the
cheapest split's whole units can send over their own uplinks. Here the top tier's flow is
chosen per split.

* **Units and the top.** A partition of the hierarchy into groups; the groups holding
  endpoints are units :math:`j` (:math:`n_j` endpoints), the rest is the top. The *top
  network* is every arc not inside one unit; unit :math:`j`'s *hubs* :math:`H_j` are its
  nodes on such an arc (its leaves, say).
* **Inside a unit.** The certified two-phase rate :math:`r_j` of the unit alone (its nodes,
  the arcs between them, hubs :math:`H_j`; :func:`~fabricopt.valiant_rate`) comes with
  flows :math:`g_e` by which endpoint :math:`e` sends one unit of rate to the hubs, a share
  :math:`p_{jk}` to hub :math:`k`, the same for every endpoint, and
  :math:`r_j \sum_e (g_e(x) + g_e(\bar x)) \le c(x)` on every arc :math:`x` of the unit.
  For a split with :math:`a_j` of the unit's endpoints in :math:`A`, let each of them send
  :math:`F^A_j / a_j \le r_j` along its :math:`g_e` and each of the other
  :math:`n_j - a_j` receive :math:`F^B_j / (n_j - a_j) \le r_j` along its reversed
  :math:`g_e`: the unit's arcs hold it whatever the split, and hub :math:`k` takes in
  :math:`p_{jk} F^A_j` and gives out :math:`p_{jk} F^B_j`.
* **The top.** A flow on the top network, within capacity, in which hub :math:`k` of unit
  :math:`j` has net supply :math:`p_{jk} (F^A_j - F^B_j)` and every other node none, joins
  these into one flow from :math:`A` to :math:`B` of value :math:`\sum_j F^A_j` (the top
  network shares no arc with a unit). So every cut of every split of profile :math:`a`
  carries at least :math:`\Phi(a)`, the largest :math:`\sum_j F^A_j` of that linear
  program with :math:`0 \le F^A_j \le r_j a_j` and :math:`0 \le F^B_j \le r_j (n_j - a_j)`.
* **The least over splits.** The program's bounds are affine in :math:`a`, so
  :math:`\Phi` is concave (a mix of two programs' optima is feasible for the mixed
  :math:`a`), and its least over :math:`\{\sum_j a_j = |A|,\ 0 \le a_j \le n_j\}` is at a
  vertex: every unit whole on one side but one. One small program per vertex.
* **Solver tolerance.** The programs' flows are read back, held to capacities and bounds,
  and every node's remaining imbalance :math:`\delta_v` is charged: a flow whose nodes
  conserve to within :math:`\delta_v` holds a true flow at most :math:`\sum_v |\delta_v|`
  smaller (the path pieces ending at an imbalance, dropped).

On the 2,048-GPU rail 2:1 cluster the units are the 7 scalable units with their 8 rail
leaves as hubs; inside a unit the NVLink and NIC links carry 400 Gb/s per GPU, and the top
carries what three whole units send over their 456 uplinks, so the least vertex is the
cut itself, 236,800 Gb/s.

* **A failed fabric, its failed links given back.** One failed NIC holds its whole unit's
  two-phase rate down (8 GPUs on 7 NICs: 350 Gb/s per GPU, for every GPU of the unit), and
  the top's flows at fixed hub shares pay for a failed uplink at every hub of its unit. For
  a fabric ``intact`` with capacity taken away, :func:`restored_profile_lower` proves the
  bound on the fabric with its failed scale-out links given back: every cut of the failed
  fabric is that fabric's cut less the restored capacity crossing it, and since a flow's
  value is at most what crosses the cut, the failed cut is at least the value less the
  flow over restored arcs leaving the cut. Restored links inside units are charged in full
  (each at its larger direction: a cut crosses a link one way); restored capacity on the
  top is a column of its own in the top's program, each Gb/s on it paid one for one, so
  the charge stays affine in the profile and the least over splits still sits at a vertex.
  Failed scale-up links (NVLink) stay failed: they rarely hold a unit's rate, and given
  back each would be charged its whole capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..flow.backends import quiet_highs
from ..flow.bounds import hierarchy_partitions
from ..flow.two_phase.arrays import hub_shares
from ..flow.two_phase.bounds import best_cut
from ..flow.two_phase.rate import valiant_rate
from ..graph_arrays import GraphArrays
from .failed_bisection import given_back, restored_charge

#: Partitions with more units than this are not tried (one two-phase rate per unit).
MAX_UNITS = 16
#: Vertices (one top-tier program each) a partition may cost before it is passed over.
MAX_VERTICES = 600
#: Top arcs x vertices a partition's programs may cost (the 2,048-GPU rail cluster's
#: scalable units: 1,904 x 140); above it the partition is passed over.
MAX_WORK = 400_000


def profile_flow_lower(fab: Fabric, ga: GraphArrays, eps: tuple[Hashable, ...],
                       beat: float = 0.0, time_limit: float | None = None,
                       restored: np.ndarray | None = None,
                       ) -> tuple[float, str] | None:
    """The bisection bound of the module docstring, best over the partitions of the
    hierarchy into 2 to :data:`MAX_UNITS` units with at most :data:`MAX_VERTICES` vertices;
    None when none proves more than ``beat`` (a partition stops at its first vertex at or
    below it). ``restored`` (Gb/s per arc of ``ga``, see :func:`restored_profile_lower`) is
    capacity the fabric bounded does not have: charged where it is used.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(3, 1, 4, link_gbps=100.0)   # 3 leaves of 4 hosts, 1 uplink each
    >>> ga = GraphArrays.from_fabric(fab)
    >>> profile_flow_lower(fab, ga, fab.endpoints)[0]    # a leaf's uplink + 2 host links
    300.0
    """
    n, half = len(eps), len(eps) // 2
    ep_idx = np.array([ga.index[e] for e in eps])
    best: tuple[float, str] | None = None
    for label in hierarchy_partitions(fab, ga)[1:]:
        units, unit_of_ep, sizes = np.unique(label[ep_idx], return_inverse=True,
                                             return_counts=True)
        if not 2 <= len(units) <= MAX_UNITS:
            continue
        each = [_vertices(sizes, size) for size in sorted({half, n - half})]
        if any(v is None for v in each):
            continue
        vertices = [v for part in each for v in part]
        inside = np.isin(label, units)[ga.tail] & (label[ga.tail] == label[ga.head])
        if len(vertices) > MAX_VERTICES or (~inside).sum() * len(vertices) > MAX_WORK:
            continue
        floor = max(beat, best[0] if best else 0.0)
        ceiling = _ceilings(ga, ep_idx, label, units, unit_of_ep, vertices)
        if ceiling.min() <= floor * (1 + 1e-9):
            continue   # a cut of some vertex's profile is no better: no rate needed
        found = _partition_bound(fab, ga, eps, label, units, unit_of_ep, sizes,
                                 [vertices[i] for i in np.argsort(ceiling, kind="stable")],
                                 floor, time_limit, restored)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    return best


def restored_profile_lower(fab: Fabric, intact: Fabric, eps: tuple[Hashable, ...],
                           beat: float = 0.0, time_limit: float | None = None,
                           back: tuple[Fabric, GraphArrays, np.ndarray] | None = None,
                           ) -> tuple[float, str] | None:
    """The bound of :func:`profile_flow_lower` for ``fab``, ``intact`` with capacity taken
    away, proven on ``fab`` with its failed scale-out links given back (a failed NIC no
    longer holds its whole unit's two-phase rate down): every cut of ``fab`` is the same
    cut of that fabric less the restored capacity crossing it, so the bound is less the
    restored links inside units (each fully) and the flow the top tier sends over restored
    capacity (the top's program pays for it). Failed scale-up links (NVLink) stay failed:
    they rarely hold a unit's rate, and restoring them would cost their whole capacity.
    None when ``fab`` is not such a fabric, nothing is restored, or nothing beats ``beat``.
    ``back`` is :func:`~fabricopt.analysis.failed_bisection.given_back`'s answer when the
    caller has it.

    >>> import fabricopt as fo
    >>> intact = fo.leaf_spine(3, 1, 4, link_gbps=100.0)   # bisection 300 (profile_flow)
    >>> failed = intact.without(links=[("g0", "leaf0")])
    >>> restored_profile_lower(failed, intact, failed.endpoints)[0]   # 300 less g0's link
    200.0
    """
    found = back or given_back(fab, intact, eps)
    if found is None:
        return None
    plus, ga, restored = found
    return profile_flow_lower(plus, ga, eps, beat=beat, time_limit=time_limit,
                              restored=restored)


def _ceilings(ga: GraphArrays, ep_idx: np.ndarray, label: np.ndarray, units: np.ndarray,
              unit_of_ep: np.ndarray, vertices: list[np.ndarray]) -> np.ndarray:
    """Per vertex, the capacity of one cut of that profile (so :math:`\\Phi` is no more):
    the top on B's side, each unit whole in A sending out all its arcs that leave it, and
    the unit split, if any, with its other nodes on B's side (its ``a`` endpoints of least
    outgoing capacity send theirs) or on A's (its other endpoints of least incoming
    capacity take theirs, and its arcs that leave it cross)."""
    leaving = label[ga.tail] != label[ga.head]
    out_cap = np.bincount(label[ga.tail[leaving]], weights=ga.capacity[leaving],
                          minlength=int(label.max()) + 1)[units]
    sends = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)[ep_idx]
    takes = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)[ep_idx]
    least_out = [np.concatenate([[0.0], np.cumsum(np.sort(sends[unit_of_ep == j]))])
                 for j in range(len(units))]
    least_in = [np.concatenate([[0.0], np.cumsum(np.sort(takes[unit_of_ep == j]))])
                for j in range(len(units))]
    sizes = np.array([len(c) - 1 for c in least_out])
    out = np.empty(len(vertices))
    for i, a in enumerate(vertices):
        whole = a == sizes
        value = float(out_cap[whole].sum())
        for j in np.flatnonzero((a > 0) & ~whole):
            value += min(least_out[j][a[j]], least_in[j][sizes[j] - a[j]] + out_cap[j])
        out[i] = value
    return out


def _vertices(sizes: np.ndarray, size: int, limit: int = MAX_VERTICES,
              ) -> list[np.ndarray] | None:
    """The vertices of :math:`\\{\\sum_j a_j = size,\\ 0 \\le a_j \\le n_j\\}`: every unit
    whole (0 or :math:`n_j` in A) but at most one, each profile once; None when there are
    more than ``limit`` (counted before any is built).

    >>> [v.tolist() for v in _vertices(np.array([2, 2, 2]), 3)]
    [[1, 2, 0], [1, 0, 2], [2, 1, 0], [0, 1, 2], [2, 0, 1], [0, 2, 1]]
    """
    m = len(sizes)
    member = ((np.arange(1 << (m - 1))[:, None] >> np.arange(m - 1)) & 1).astype(bool)
    picks = []
    for j in range(m):
        others = np.delete(np.arange(m), j)
        rest = size - member @ sizes[others]
        picks.append((j, others, rest, np.flatnonzero((rest >= 0) & (rest <= sizes[j]))))
    if sum(len(p[3]) for p in picks) > 2 * limit:
        # A quick count: a profile is found once per unit that could be its split one, so
        # this may pass over a partition near the limit (which costs tightness, not truth).
        return None
    seen: set[tuple[int, ...]] = set()
    out: list[np.ndarray] = []
    for j, others, rest, fits in picks:
        for s in fits:
            a = np.zeros(m, dtype=np.int64)
            a[others] = np.where(member[s], sizes[others], 0)
            a[j] = rest[s]
            key = tuple(a.tolist())
            if key not in seen:
                seen.add(key)
                out.append(a)
    return out if len(out) <= limit else None


def _partition_bound(fab: Fabric, ga: GraphArrays, eps: tuple[Hashable, ...],
                     label: np.ndarray, units: np.ndarray, unit_of_ep: np.ndarray,
                     sizes: np.ndarray, vertices: list[np.ndarray], beat: float,
                     time_limit: float | None, restored: np.ndarray | None = None,
                     ) -> tuple[float, str] | None:
    """Least of :math:`\\Phi` over ``vertices`` for one partition, or None when some vertex
    is at or below ``beat``. With ``restored``: less the restored links inside units (each
    at its larger direction) and the flow the top puts on restored capacity."""
    inside = np.isin(label, units)[ga.tail] & (label[ga.tail] == label[ga.head])
    charge = 0.0
    if restored is not None:
        charge = restored_charge(ga, restored, np.flatnonzero(inside))
        beat += charge
    top = np.flatnonzero(~inside)
    on_top = np.zeros(ga.n_nodes, dtype=bool)
    on_top[ga.tail[top]] = on_top[ga.head[top]] = True
    parts = [_unit_parts(fab, ga, label == u, np.flatnonzero((label == u) & on_top),
                         tuple(e for e, k in zip(eps, unit_of_ep, strict=True) if k == j))
             for j, u in enumerate(units)]
    share = np.array([p[1] for p in parts])   # p_jk, per node k
    if _least_sent(np.array([p[2] for p in parts]), sizes, vertices) <= beat * (1 + 1e-9):
        return None   # the units' rates, at their ceilings, cap some vertex at `beat`
    rates = np.array([_unit_rate(p[0], time_limit) for p in parts])
    if _least_sent(rates, sizes, vertices) <= beat * (1 + 1e-9):
        return None
    # Variables: the flow on each top arc (and on the capacity restored to it, charged one
    # for one), then F^A and F^B per unit. One conservation row per node:
    # out - in - sum_j p_jk (F^A_j - F^B_j) = 0.
    extra = np.zeros(len(top)) if restored is None else restored[top]
    arcs = np.concatenate([top, top[extra > 0]])
    arc_cap = np.concatenate([ga.capacity[top] - extra, extra[extra > 0]])
    m, n_top = len(units), len(arcs)
    rows = np.concatenate([ga.tail[arcs], ga.head[arcs]])
    cols = np.concatenate([np.arange(n_top), np.arange(n_top)])
    vals = np.concatenate([np.ones(n_top), -np.ones(n_top)])
    hub_rows, hub_units = np.nonzero(share.T)
    weight = share.T[hub_rows, hub_units]
    A_eq = sp.csr_matrix((np.concatenate([vals, -weight, weight]),
                          (np.concatenate([rows, hub_rows, hub_rows]),
                           np.concatenate([cols, n_top + hub_units, n_top + m + hub_units]))),
                         shape=(ga.n_nodes, n_top + 2 * m))
    A_eq = A_eq[np.flatnonzero(A_eq.getnnz(axis=1))]   # one row per node the top touches
    charged = np.zeros(n_top + 2 * m)
    charged[len(top):n_top] = 1.0
    cost = np.concatenate([np.zeros(n_top), -np.ones(m), np.zeros(m)]) + charged
    solve = _top_program(cost, A_eq, arc_cap)
    least = np.inf
    for a in vertices:   # least cut first, so a partition that cannot beat `beat` stops early
        upper = np.concatenate([arc_cap, rates * a, rates * (sizes - a)])
        x = solve(upper)
        least = min(least, _certified_value(x, A_eq, upper, n_top, m, charged)
                    if x is not None else 0.0)
        if least <= beat * (1 + 1e-9):
            return None
    if restored is None:
        return float(least), (f"flows inside {m} units at {float(rates.min()):.6g} Gb/s per "
                              f"endpoint or more, joined by a top-tier flow chosen per split")
    return float(least - charge), (
        f"flows inside {m} units at {float(rates.min()):.6g} Gb/s per endpoint or more with "
        f"the failed links between hosts and switches restored, joined by a top-tier flow "
        f"chosen per split; less {charge:.6g} Gb/s restored inside units and what the top "
        f"sends over restored links")


def _top_program(cost: np.ndarray, A_eq: sp.csr_matrix, arc_cap: np.ndarray,
                 ) -> Callable[[np.ndarray], np.ndarray | None]:
    """``solve(upper)``: a point of min ``cost @ x`` subject to ``A_eq @ x = 0`` and
    ``0 <= x <= upper`` (None if none is found). With highspy, one model whose column
    bounds change between vertices, each solve starting from the last basis (a tenth of
    the time of a fresh solve); else a fresh scipy solve each time."""
    h = quiet_highs()
    if h is None:
        # Imported here: scipy.optimize is a fifth of ``import fabricopt``'s time.
        from scipy.optimize import linprog

        def fresh(upper: np.ndarray) -> np.ndarray | None:
            sol = linprog(cost, A_eq=A_eq, b_eq=np.zeros(A_eq.shape[0]),
                          bounds=np.stack([np.zeros(len(upper)), upper], axis=1),
                          method="highs")
            return sol.x
        return fresh
    import highspy

    A = A_eq.tocsc()
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = A.shape[1], A.shape[0]
    model.col_cost_ = cost
    model.col_lower_ = np.zeros(A.shape[1])
    model.col_upper_ = np.concatenate([arc_cap, np.zeros(A.shape[1] - len(arc_cap))])
    model.row_lower_ = model.row_upper_ = np.zeros(A.shape[0])
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_, model.a_matrix_.index_ = A.indptr, A.indices
    model.a_matrix_.value_ = A.data
    h.passModel(model)
    columns = np.arange(len(arc_cap), A.shape[1], dtype=np.int32)

    def warm(upper: np.ndarray) -> np.ndarray | None:
        h.changeColsBounds(len(columns), columns, np.zeros(len(columns)), upper[columns])
        h.run()
        sol = h.getSolution()
        return np.asarray(sol.col_value, dtype=float) if sol.value_valid else None
    return warm


def _certified_value(x: np.ndarray, A_eq: sp.csr_matrix, upper: np.ndarray, n_top: int,
                     m: int, charged: np.ndarray | None = None) -> float:
    """:math:`\\sum_j F^A_j` of the program's point, held to its bounds, less every node's
    conservation imbalance (module docstring, solver tolerance) and the flow on ``charged``
    columns (restored capacity)."""
    held = np.clip(x, 0.0, upper)
    imbalance = np.abs(A_eq @ held).sum()
    spent = 0.0 if charged is None else float(charged @ held)
    return max(0.0, float(held[n_top:n_top + m].sum() - imbalance - spent))


def _least_sent(rates: np.ndarray, sizes: np.ndarray, vertices: list[np.ndarray]) -> float:
    """Least over ``vertices`` of what the units can send and take at ``rates``:
    :math:`\\Phi(a) \\le \\min(\\sum_j r_j a_j, \\sum_j r_j (n_j - a_j))`."""
    return min(min(float(rates @ a), float(rates @ (sizes - a))) for a in vertices)


def _unit_parts(fab: Fabric, ga: GraphArrays, nodes: np.ndarray, hubs: np.ndarray,
                members: tuple[Hashable, ...],
                ) -> tuple[tuple[Fabric, tuple[Hashable, ...]] | None, np.ndarray, float]:
    """A unit alone (its nodes, the arcs between them, its endpoints) with its hubs, each
    hub's share :math:`p_{jk}` (per node of ``ga``), and a ceiling on its two-phase rate
    through them (the least bound of a group of its own hierarchy: cheap, no flow). None
    and rate 0 for a unit with fewer than two endpoints, no hub, or no capacity into one."""
    share = np.zeros(ga.n_nodes)
    if len(members) < 2 or not len(hubs):
        return None, share, 0.0
    names = [ga.nodes[i] for i in np.flatnonzero(nodes)]
    unit = Fabric(fab.graph.subgraph(names).copy(), list(members), name="unit")
    hub_names = tuple(ga.nodes[i] for i in hubs)
    uga = GraphArrays.from_fabric(unit)
    hub_idx = np.array([uga.index[h] for h in hub_names])
    ep_idx = np.array([uga.index[e] for e in members])
    try:
        p = hub_shares(uga, hub_idx, ep_idx)
    except InvalidParameterError:   # no capacity into the hubs
        return None, share, 0.0
    share[hubs] = p
    cut = best_cut(uga, hierarchy_partitions(unit, uga), ep_idx, hub_idx, p)
    return (unit, hub_names), share, cut.rate_gbps if cut is not None else np.inf


def _unit_rate(part: tuple[Fabric, tuple[Hashable, ...]] | None,
               time_limit: float | None) -> float:
    """Certified two-phase rate among a unit's endpoints through its hubs (0 when there is
    no such unit or no two-phase routing, as with one-way links)."""
    if part is None:
        return 0.0
    try:
        return float(valiant_rate(part[0], hubs=part[1], time_limit=time_limit).rate_gbps)
    except InvalidParameterError:
        return 0.0


__all__ = ["MAX_UNITS", "MAX_VERTICES", "profile_flow_lower", "restored_profile_lower"]
