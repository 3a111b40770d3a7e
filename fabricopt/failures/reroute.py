r"""A failed fabric's flow from its intact fabric's: each lost arc's load sent around it.

Let :math:`f` be a flow proven on the intact fabric: every commodity conserved, carrying
:math:`\theta_0` times the traffic, with :math:`L_e` Gb/s on arc :math:`e`. Take away some arcs.
For each lost arc :math:`a = (u, v)` with load, pick a *detour*: a unit flow :math:`g_a` from
:math:`u` to :math:`v` on the arcs that remain. In every commodity, replace what it sent over
:math:`a` by that much of :math:`g_a`: the commodity still conserves at every node (what
entered :math:`u` for :math:`a` leaves :math:`u` along the detour and arrives at :math:`v`),
and it now avoids every lost arc. Its load on a remaining arc :math:`e` is at most

.. math:: T_e = L_e + \sum_a L_a\, g_a(e),

so the failed fabric carries :math:`\theta_0 / \max(1, \max_e T_e / c_e)` times the traffic.
An arc that lost some of its parallel links keeps part of its load: the same argument with
a fraction :math:`\rho_a` of every commodity's flow on it sent around, so that
:math:`T_e = (1 - \rho_e) L_e + \sum_a \rho_a L_a\, g_a(e)`; it sends around what would
not fit at the overload the caller aims for (an NVLink bundle one link short seldom sends
anything).
The proof needs only the intact flow (re-proven on the intact fabric) and one detour per lost
arc, however many commodities there are: on a 4,096-GPU SuperPOD the per-commodity flow of
the failed fabric would have 400 million entries; its detours have a few thousand.

Each lost arc's detour runs on the arcs of its shortest detours (in hops), first spread evenly
over those paths. Where that leaves an arc above the aimed overload, two ways lower it and
the better is kept: every detour's spread steered off the busiest arcs (each path weighed by
how loaded its arcs are: a few rounds of sparse products for all detours at once), and a
small LP that chooses again the detours crossing such an arc, minimising the largest
:math:`T_e / c_e` over the even spread of the others. A detour that leaves (or
reaches) a crowded node, one whose first (last) arcs have too little room for what its
detours carry, may also take the shortest way that avoids those arcs, if at most two hops
longer: a leaf that lost uplinks sends their load down to its servers, across their NVLink
and up through their other rails' leaves. Where the LP's answer is held by arcs that carry
the intact flow (a crowded leaf's other uplinks), those arcs may send a share of their own
load round too (the proof treats them as shrunk bundles): through a server that spans a
neighbouring leaf and up that leaf's link to the same spine.

Where a failure's cost is local (a server that lost NICs, a leaf that lost some uplinks) this
meets the failed fabric's cut: on ``superpod(16)`` with 1% of its links failed, the server
that lost three of its eight NICs sends its traffic over the other five, and :math:`\theta`
is 5/8 of the intact one, as the cut around that server says. Every detour keeps the
waypoints of the flow it moves (what crossed a node still crosses it), so where the failed
fabric's optimum sends less through a switch from the start (a plane whose links are all
full), the bound is below it and the caller's other methods close the gap.

A lost node is not handled (its arcs' loads are not arc-to-arc: the proof is then declined).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..flow.backends import solve_lp
from ..flow.lp import LinearProgram
from ..flow.lp_proof import ProvenFlow
from ..flow.proof import ProofCheck, smallest_demand
from ..flow.time_budget import left_now
from ..graph_arrays import GraphArrays

#: Loads below this fraction of the largest are not sent around (a detour of nothing).
ZERO_LOAD_RTOL = 1e-12

#: Relative slack when comparing capacities (a file's figures may differ in the last digit).
CAPACITY_RTOL = 1e-9

#: The most columns (a detour's arcs) the detour LP takes: a few seconds of HiGHS's interior
#: point method. Detours beyond it keep their even spread over their shortest paths.
MAX_DETOUR_COLUMNS = 100_000

#: Searches for detours stop at this many hops (then search again, whole, for the few pairs
#: not found so near).
NEAR_HOPS = 4

#: How much longer than a detour's shortest paths its second way round a crowded node may be
#: (down to a server, across its scale-up switch and up another rail is two hops more).
WIDER_EXTRA_HOPS = 2

#: Arcs within this fraction of the detour LP's overload count as binding when it sheds.
SHED_RTOL = 1e-7

#: Shares of a binding arc's load below this are not sent round.
SHED_MIN_SHARE = 1e-9

#: Detour LPs with more columns than this use HiGHS's interior point method.
IPM_COLUMNS = 30_000

#: Rounds that steer the detours' spread off the busiest arcs, and how sharply a round's
#: weights avoid them (a path through an arc at the largest load over capacity weighs
#: exp(-SPREAD_SHARPNESS) of one through idle arcs).
SPREAD_ROUNDS = 30
SPREAD_SHARPNESS = 20.0

#: Rounds in which the arcs the detour LP finds binding send part of their own load around,
#: and the most columns their ways round add to the LP in a round (a round that lowers
#: nothing ends them: on a failed 4,096-GPU Clos, 1,250 crowded arcs and 50,000 more columns
#: took 14 s for no gain).
SHED_ROUNDS = 4
SHED_MAX_COLUMNS = 20_000

#: The longest way round an arc that sheds load: down from a leaf to a server, across its
#: scale-up switch, up another leaf and on to the arc's head is five hops.
SHED_HOPS = 5


@dataclass(frozen=True)
class ReroutedFlow:
    """The proof of a failed fabric's lower bound by :mod:`fabricopt.failures.reroute`.

    Attributes
    ----------
    intact : Fabric
        The fabric the flow was proven on (it contains the failed one's nodes).
    result : FlowResult
        Its answer, whose certificate proves the flow (re-checked by
        :func:`~fabricopt.check_certificate`).
    lost : ndarray of int
        The arcs of ``intact`` (indices into its arcs) whose load is sent around, in part or
        whole.
    share : ndarray of float
        The part of each one's load sent around: 1 for an arc the failed fabric lacks.
    detours : scipy.sparse.csr_matrix
        Row ``i``: a unit flow from the tail of ``lost[i]`` to its head, on the failed
        fabric's arcs.
    """

    intact: object
    result: object
    lost: np.ndarray
    share: np.ndarray
    detours: sp.csr_matrix

    #: The failure floor hands this stage in (it names it ``"intact flow rerouted"``).
    STAGES: ClassVar[tuple[str, ...]] = ("intact flow rerouted",)

    def check(self, fab: Any, traffic: Any) -> ProofCheck:
        """The theta this proves for ``traffic`` on the failed fabric ``fab``: the intact
        flow re-proven on its own fabric (by its own lower proof), then sent around the lost
        arcs; 0 when that flow proves nothing or an endpoint is not in the intact fabric."""
        proof = getattr(getattr(self.result, "certificate", None), "lower_proof", None)
        graph = getattr(self.intact, "graph", None)
        if not hasattr(proof, "proven") or graph is None or any(
                e not in graph for e in traffic.endpoints):
            return ProofCheck(0.0)
        base = proof.proven(self.intact, traffic)
        if base is None:
            return ProofCheck(0.0)
        got = rerouted(base, self.lost, self.share, self.detours,
                       GraphArrays.from_fabric(fab), smallest_demand(traffic))
        return ProofCheck(0.0) if got is None else ProofCheck(got.lower, got.overload,
                                                               got.residual)


@dataclass(frozen=True)
class Rerouted:
    """What a :class:`ReroutedFlow` proves on the failed fabric: theta ``lower`` (traffic
    units), the load ``load`` (Gb/s per arc) at the intact flow's theta, its worst
    ``overload`` and the detours' conservation ``residual`` (Gb/s)."""

    lower: float
    load: np.ndarray
    overload: float
    residual: float


def arc_map(base: GraphArrays, ga: GraphArrays) -> np.ndarray:
    """Index in ``ga`` of each arc of ``base`` (-1 where ``ga`` lacks it)."""
    position = {arc: a for a, arc in enumerate(ga.arcs)}
    return np.fromiter((position.get(arc, -1) for arc in base.arcs), dtype=np.int64,
                       count=base.n_arcs)


def rerouted(base: ProvenFlow, lost: np.ndarray, share: np.ndarray, detours: sp.csr_matrix,
             ga: GraphArrays, min_demand: float) -> Rerouted | None:
    """Theta the failed fabric ``ga`` carries with ``base``'s flow, ``share`` of each
    ``lost`` arc's load sent along its detour, every figure recomputed (None when an arc the
    flow uses is missing from ``ga`` and not wholly sent around, a lost arc's end is not a
    node of ``ga``, a share is outside [0, 1], or a detour has a negative entry).

    ``min_demand`` is the traffic's smallest positive demand (Gb/s per unit theta): a detour
    that does not quite conserve (solver rounding) charges its residual, as a flow's does.
    """
    where = arc_map(base.ga, ga)
    tiny = ZERO_LOAD_RTOL * max(float(base.load.max(initial=0.0)), 1e-300)
    lost = np.asarray(lost, dtype=np.int64)
    share = np.asarray(share, dtype=float)
    if (detours.shape != (len(lost), ga.n_arcs) or share.shape != lost.shape
            or len(np.unique(lost)) != len(lost) or (detours.data < 0).any()
            or not np.all((share >= 0) & (share <= 1))
            or (len(lost) and not 0 <= lost.min() <= lost.max() < base.ga.n_arcs)):
        return None
    sent = np.zeros(base.ga.n_arcs)
    sent[lost] = share
    if np.any((where < 0) & (base.load > tiny) & (sent < 1)):
        return None  # a lost arc's flow left where it was
    tails = [base.ga.nodes[i] for i in base.ga.tail[lost]]
    heads = [base.ga.nodes[i] for i in base.ga.head[lost]]
    if any(v not in ga.index for v in (*tails, *heads)):
        return None
    moved = base.load[lost] * share
    kept = where >= 0
    load = np.zeros(ga.n_arcs)
    np.add.at(load, where[kept], (base.load * (1 - sent))[kept])
    load += detours.T @ moved
    # Each detour must leave its tail once and reach its head once, nothing else.
    k, rows = len(lost), np.arange(len(lost))
    ends = np.concatenate([np.fromiter((ga.index[v] for v in tails), np.int64, k),
                           np.fromiter((ga.index[v] for v in heads), np.int64, k)])
    want = sp.csr_matrix((np.concatenate([np.ones(k), -np.ones(k)]),
                          (np.concatenate([rows, rows]), ends)), shape=(k, ga.n_nodes))
    net = (ga.incidence() @ detours.T).T.tocsr() - want
    off = np.asarray(abs(net).sum(axis=1)).ravel()
    residual = float(off @ moved)
    overload = float(np.max(load / ga.capacity)) if ga.n_arcs else 0.0
    kept_theta = max(base.theta - residual / min_demand, 0.0) if min_demand > 0 else 0.0
    return Rerouted(kept_theta / max(1.0, overload), load, overload, residual)


#: What :func:`detour_flows` is told of the time left: seconds (0 when spent), None
#: without a limit.
SecondsLeft = Callable[[], "float | None"]


def _no_limit() -> float | None:
    return None


def detour_flows(base: ProvenFlow, ga: GraphArrays, enough: float = 1.0,
                 seconds_left: SecondsLeft = _no_limit
                 ) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix] | None:
    """The arcs of ``base`` lost or shrunk on ``ga``, the share of each one's load to send
    around, and a detour for each (see the module docstring),
    chosen to keep the largest load over capacity low; None when a lost arc's end is gone,
    a detour does not exist, or the LP is too large or fails.

    Each detour first spreads evenly over its shortest paths; when that leaves some arc
    above ``enough`` times its capacity (the overload at which the caller's bound is met),
    the spread steered off the busiest arcs or the detour LP's choice (with the arcs that
    bind shedding), whichever loads its busiest arc less.

    ``seconds_left`` (a callable: seconds, 0 when spent, None without a limit) stops the
    search early: no step is begun once it says 0, each LP gets what is left, and the best
    detours found so far are returned (every one a sound proof, only a weaker bound)."""
    where = arc_map(base.ga, ga)
    tiny = ZERO_LOAD_RTOL * max(float(base.load.max(initial=0.0)), 1e-300)
    left = np.zeros(base.ga.n_arcs)  # the capacity each arc kept
    left[where >= 0] = ga.capacity[where[where >= 0]]
    # A lost arc sends all of its load around; a shrunk one what would not fit at ``enough``
    # times its capacity (an NVLink bundle one link short seldom sends anything).
    with np.errstate(divide="ignore", invalid="ignore"):
        over = np.where(base.load > tiny, 1.0 - max(enough, 1.0) * left / base.load, 0.0)
    shrunk = left < base.ga.capacity * (1 - CAPACITY_RTOL)
    lost = np.flatnonzero(shrunk & (base.load > tiny) & (over > CAPACITY_RTOL))
    share = np.where(left[lost] > 0, np.clip(over[lost], 0.0, 1.0), 1.0)
    if len(lost) == 0:
        return lost, share, sp.csr_matrix((0, ga.n_arcs))
    try:
        u = np.array([ga.index[base.ga.nodes[i]] for i in base.ga.tail[lost]], np.int64)
        v = np.array([ga.index[base.ga.nodes[i]] for i in base.ga.head[lost]], np.int64)
    except KeyError:
        return None
    # A shrunk arc sends its share around, not back over itself: detours avoid those arcs.
    usable = np.ones(ga.n_arcs, dtype=bool)
    usable[where[lost][where[lost] >= 0]] = False
    found = _shortest_detour_arcs(ga, u, v, usable)
    if found is None:
        return None
    columns, hops = found
    kept = where >= 0
    sent = np.zeros(base.ga.n_arcs)
    sent[lost] = share
    background = np.zeros(ga.n_arcs)
    np.add.at(background, where[kept], (base.load * (1 - sent))[kept])
    moved = base.load[lost] * share

    def carried(rows, arcs, x):  # each arc's load, detour ``rows`` carrying ``x`` on ``arcs``
        return background + np.bincount(arcs, weights=x * moved[rows], minlength=ga.n_arcs)

    rows = np.repeat(np.arange(len(lost)), [len(c) for c in columns])
    arcs = np.concatenate(columns)
    x = np.concatenate([_even_over_paths(ga, u[i], v[i], c) for i, c in enumerate(columns)])
    loads = carried(rows, arcs, x)
    if np.all(loads <= enough * ga.capacity):
        return lost, share, _as_matrix(rows, arcs, x, len(lost), ga.n_arcs)
    # Some arc is above ``enough``. Two ways lower it, and the better is kept: every
    # detour's spread steered off the loaded arcs (no budget: a few sparse products a
    # round), and an LP that chooses again the detours crossing such an arc, and those
    # given a second way round a crowded node, over the even spread of the rest (a fraction
    # of the LP over all of them).
    steered = _rebalanced_spread(ga, u, v, columns, int(hops.max()), moved, background, x,
                                 enough, seconds_left)
    peak = float(np.max(carried(rows, arcs, steered) / ga.capacity))
    spread = (lost, share, _as_matrix(rows, arcs, steered, len(lost), ga.n_arcs))
    if peak <= enough or seconds_left() == 0:
        return spread
    ways = _wider_detours(ga, u, v, columns, hops, usable, moved,
                          np.maximum(enough * ga.capacity - background, 0.0), seconds_left)
    free = _detours_to_choose(ga, rows, arcs, loads, enough, columns, ways)
    mine = np.isin(rows, free)
    fixed = carried(rows[~mine], arcs[~mine], x[~mine])
    # The detours the LP leaves out may hold as much on their own as the steered spread
    # (on the failed Meta 24K design only 9 of 1,200 fit its columns): it would gain nothing.
    if (not len(free) or float(np.max(fixed / ga.capacity)) >= peak * (1 - CAPACITY_RTOL)
            or seconds_left() == 0):
        return spread
    lp = _least_overload(ga, u[free], v[free], [ways[i] for i in free], moved[free], fixed,
                         time_limit=seconds_left())
    if lp is None:  # the spread stands: a weaker bound, as sound
        return spread
    keep, blocks = ~mine, [ways[i] for i in free]
    rows = np.concatenate([rows[keep], np.repeat(free, [len(c) for c in blocks])])
    arcs = np.concatenate([arcs[keep], *blocks])
    shed = None
    if lp.overload > enough * (1 + CAPACITY_RTOL) and len(lp.binding) and seconds_left() != 0:
        shed = _shed_binding_arcs(base, ga, where, usable, u[free], v[free], blocks,
                                  moved[free], fixed, enough, lp, seconds_left)
    if min(lp.overload, np.inf if shed is None else shed[0].overload) >= peak:
        return spread
    if shed is None:
        x = np.concatenate([x[keep], lp.flow])
        return lost, share, _as_matrix(rows, arcs, x, len(lost), ga.n_arcs)
    lp, by, columns_shed = shed
    # Arcs that shed join the lost ones, each with the share of its load it sends round.
    use = lp.share > SHED_MIN_SHARE
    block = np.repeat(np.arange(len(by)), [len(c) for c in columns_shed])
    on = use[block]
    n_free = len(arcs) - int(keep.sum())
    rows = np.concatenate([rows, len(lost) + (np.cumsum(use) - 1)[block[on]]])
    arcs = np.concatenate([arcs, np.concatenate(columns_shed)[on]])
    x = np.concatenate([x[keep], lp.flow[:n_free],
                        lp.flow[n_free:][on] / lp.share[block[on]]])  # unit flows
    lost = np.concatenate([lost, _base_arcs(where, by[use], ga.n_arcs)])
    share = np.concatenate([share, lp.share[use]])
    return lost, share, _as_matrix(rows, arcs, x, len(lost), ga.n_arcs)


def _base_arcs(where: np.ndarray, arcs: np.ndarray, n_arcs: int) -> np.ndarray:
    """The intact fabric's index of each of the failed fabric's ``arcs`` (of ``n_arcs``)."""
    base_of = np.full(n_arcs, -1, dtype=np.int64)
    base_of[where[where >= 0]] = np.flatnonzero(where >= 0)
    return base_of[arcs]


def _shed_binding_arcs(base: ProvenFlow, ga: GraphArrays, where: np.ndarray,
                       usable: np.ndarray, u: np.ndarray, v: np.ndarray,
                       blocks: list[np.ndarray], moved: np.ndarray, fixed: np.ndarray,
                       enough: float, lp: _Overload, seconds_left: SecondsLeft = _no_limit
                       ) -> tuple[_Overload, np.ndarray, list[np.ndarray]] | None:
    r"""The detour LP again, with the arcs it found binding also sending a share of their
    own load around (None when that lowers nothing).

    A detour must end at the head of the arc it replaces, so a leaf that lost uplinks sends
    their load over its other uplinks, or down to a server spanning another leaf: when
    those bind, the leaf is crowded, while the fabric's optimum sends less up through it from
    the start. Any arc with load may hand a share :math:`\rho_e` of it to a detour of its
    own, exactly as a shrunk bundle does (same proof, same checker): an uplink of the
    crowded leaf goes down to a server that spans a second leaf, across its scale-up switch
    and up that leaf's link to the same spine, so the leaf's load moves to its neighbour's.
    Where those bind in turn, they shed to theirs in the next round. Such a way round avoids
    every arc that binds (at most ``SHED_HOPS`` long); the LP is linear in the detour flows
    :math:`h_e = \rho_e L_e g_e` and the shares."""
    tiny = ZERO_LOAD_RTOL * max(float(base.load.max(initial=0.0)), 1e-300)
    base_of = _base_arcs(where, np.arange(ga.n_arcs), ga.n_arcs)
    own_load = np.where(base_of >= 0, base.load[np.maximum(base_of, 0)], 0.0)
    shed = np.zeros(0, dtype=np.int64)
    columns: list[np.ndarray] = []
    best, latest = None, lp
    crowded = ~usable
    size = sum(len(c) for c in blocks)
    for _ in range(SHED_ROUNDS):
        if seconds_left() == 0:
            break
        # The LP's duals name one set that holds the overload where it is; arcs as loaded
        # elsewhere (another crowded leaf) may hold it just as well, so they shed too.
        load = latest.loads(ga, fixed, blocks + columns, np.r_[moved, own_load[shed]], shed)
        binding = np.union1d(latest.binding, np.flatnonzero(
            load >= latest.overload * ga.capacity * (1 - SHED_RTOL)))
        new = binding[usable[binding] & (own_load[binding] > tiny)
                      & ~np.isin(binding, shed)]
        if len(new) == 0:
            break
        crowded[binding] = True
        found, _ = _shortest_detour_arcs(ga, ga.tail[new], ga.head[new], ~crowded,
                                         longest=np.full(len(new), SHED_HOPS))
        sizes = np.array([len(c) for c in found], dtype=np.int64)
        # The LP's duals first, then the others, within the shedding's own budget.
        first = np.isin(new, latest.binding)
        order = np.r_[np.flatnonzero(first), np.flatnonzero(~first)]
        found, new, sizes = [found[i] for i in order], new[order], sizes[order]
        fits = ((sizes > 0) & (size + np.cumsum(sizes) <= MAX_DETOUR_COLUMNS)
                & (np.cumsum(sizes) <= SHED_MAX_COLUMNS))
        if not fits.any():
            break
        shed = np.concatenate([shed, new[fits]])
        columns += [c for c, f in zip(found, fits, strict=True) if f]
        size += int(sizes[fits].sum())
        again = _least_overload(ga, np.r_[u, ga.tail[shed]], np.r_[v, ga.head[shed]],
                                blocks + columns, np.r_[moved, own_load[shed]], fixed,
                                own=shed, time_limit=seconds_left())
        if again is None:
            break
        latest = again
        if again.overload >= (lp if best is None else best[0]).overload * (1 - 1e-9):
            break  # what binds has no way round that helps
        best = (again, shed.copy(), list(columns))
        if again.overload <= enough * (1 + CAPACITY_RTOL):
            break
    return best


def _as_matrix(rows: np.ndarray, arcs: np.ndarray, x: np.ndarray, k: int, n_arcs: int
               ) -> sp.csr_matrix:
    """The detours as a (lost arc x arc) matrix of nonnegative flows."""
    detours = sp.csr_matrix((np.clip(x, 0.0, None), (rows, arcs)), shape=(k, n_arcs))
    detours.eliminate_zeros()
    return detours


def _detours_to_choose(ga: GraphArrays, rows: np.ndarray, arcs: np.ndarray, loads: np.ndarray,
                       enough: float, columns: list[np.ndarray], wider: list[np.ndarray]
                       ) -> np.ndarray:
    """The detours the LP chooses again: those that cross an arc above ``enough`` times its
    capacity under the even spread, and those :func:`_wider_detours` widened; the ones
    crossing the most loaded arcs first, up to ``MAX_DETOUR_COLUMNS`` columns (the rest keep
    the even spread)."""
    ratio = loads / ga.capacity
    worst = np.zeros(len(columns))
    np.maximum.at(worst, rows, np.where(ratio[arcs] > enough, ratio[arcs], 0.0))
    widened = np.array([len(w) > len(c) for w, c in zip(wider, columns, strict=True)])
    worst[widened] = np.inf
    candidates = np.flatnonzero(worst > 0)
    candidates = candidates[np.argsort(-worst[candidates], kind="stable")]
    sizes = np.array([len(wider[i]) for i in candidates], dtype=np.int64)
    return np.sort(candidates[np.cumsum(sizes) <= MAX_DETOUR_COLUMNS])


def _even_over_paths(ga: GraphArrays, u: int, v: int, arcs: np.ndarray) -> np.ndarray:
    """A unit flow from ``u`` to ``v`` spread evenly over the paths ``arcs`` make (the
    arcs of every shortest path from ``u`` to ``v``): on arc ``(x, y)``, the paths from
    ``u`` to ``x`` times those from ``y`` to ``v``, over all paths."""
    nodes, local = np.unique(np.concatenate([ga.tail[arcs], ga.head[arcs]]),
                             return_inverse=True)
    t, h = local[:len(arcs)], local[len(arcs):]
    step = sp.csr_matrix((np.ones(len(arcs)), (t, h)), shape=(len(nodes), len(nodes)))
    start, end = np.searchsorted(nodes, u), np.searchsorted(nodes, v)
    into = _path_counts(step.T.tocsr(), start, len(nodes))   # paths u -> each node
    out_of = _path_counts(step, end, len(nodes))             # paths each node -> v
    return into[t] * out_of[h] / into[end]


def _rebalanced_spread(ga: GraphArrays, u: np.ndarray, v: np.ndarray,
                       columns: list[np.ndarray], longest: int, moved: np.ndarray,
                       background: np.ndarray, x: np.ndarray, enough: float,
                       seconds_left: SecondsLeft = _no_limit) -> np.ndarray:
    """The detours' flows (``x``: each over its shortest paths ``columns``, in their
    order) steered off the arcs that carry the most, the largest load over capacity as low
    as these rounds get it; stops at ``enough``.

    Each round weighs every arc by ``exp(-SPREAD_SHARPNESS x its load over capacity / the
    largest)`` and spreads each detour over its paths in proportion to the product of their
    arcs' weights (a path through the busiest arcs weighs almost nothing); the detours move
    towards that spread by the step that lowers the largest load over capacity most (a
    line search, as in Frank and Wolfe's method), and stop when no step does. Every round's
    flow is a mix of unit flows from each tail to its head, so each is a sound choice, and
    none is worse than the last. All detours are one block-diagonal graph, so a round is a
    few sparse products whatever their number. No round is begun once ``seconds_left``
    says 0 (the flow so far stands)."""
    k = len(columns)
    block = np.repeat(np.arange(k), [len(c) for c in columns])
    arcs = np.concatenate(columns)
    # One state per (detour, node): the detours' graphs side by side.
    keys = np.concatenate([block * ga.n_nodes + ga.tail[arcs], block * ga.n_nodes + ga.head[arcs]])
    states, inverse = np.unique(keys, return_inverse=True)
    t, h = inverse[:len(arcs)], inverse[len(arcs):]
    start = np.searchsorted(states, np.arange(k) * ga.n_nodes + u)
    end = np.searchsorted(states, np.arange(k) * ga.n_nodes + v)
    forward = sp.csr_matrix((np.arange(1.0, len(arcs) + 1), (h, t)), shape=(len(states),) * 2)
    backward = sp.csr_matrix((np.arange(1.0, len(arcs) + 1), (t, h)), shape=(len(states),) * 2)
    order_f, order_b = forward.data.astype(np.int64) - 1, backward.data.astype(np.int64) - 1

    def sums(step: sp.csr_matrix, origins: np.ndarray) -> np.ndarray:
        front = np.zeros(len(states))
        front[origins] = 1.0
        total = front.copy()
        for _ in range(longest):
            front = step @ front
            total += front
        return total

    def spread(weight: np.ndarray) -> np.ndarray:
        forward.data, backward.data = weight[order_f], weight[order_b]
        into, out_of = sums(forward, start), sums(backward, end)
        return into[t] * weight * out_of[h] / into[end][block]

    def ratio_of(flow: np.ndarray) -> np.ndarray:
        return (background + np.bincount(arcs, weights=flow * moved[block],
                                         minlength=ga.n_arcs)) / ga.capacity

    current, ratio = x, ratio_of(x)
    for _ in range(SPREAD_ROUNDS):
        peak = float(ratio.max())
        if peak <= enough or seconds_left() == 0:
            break
        toward = spread(np.exp(-SPREAD_SHARPNESS * ratio[arcs] / peak))
        target = ratio_of(toward)
        # The step that lowers the largest ratio most: a convex function of the step,
        # piecewise linear, so a ternary search finds it.
        low, high = 0.0, 1.0
        for _ in range(40):
            a, b = low + (high - low) / 3, high - (high - low) / 3
            if np.max(ratio + a * (target - ratio)) <= np.max(ratio + b * (target - ratio)):
                high = b
            else:
                low = a
        step = (low + high) / 2
        if np.max(ratio + step * (target - ratio)) >= peak * (1 - 1e-12):
            break  # no step along this spread lowers it
        current = current + step * (toward - current)
        ratio = ratio_of(current)
    return current


def _path_counts(step: sp.csr_matrix, origin: int, n: int) -> np.ndarray:
    """Paths from ``origin`` along ``step``'s transpose (an acyclic graph), to each node."""
    front = np.zeros(n)
    front[origin] = 1.0
    total = front.copy()
    for _ in range(n):
        front = step @ front
        if not front.any():
            break
        total += front
    return total


#: The length the searches give an arc a detour may not use: longer than any search goes.
AVOIDED = 1e9


@dataclass(frozen=True)
class _ByTail:
    """The arcs of a fabric sorted by tail (``order``), where each node's start
    (``start``), and the same by head (``by_head``, ``head_start``): read once for the many
    searches of one call (an argsort of 400,000 arcs for each of 569 crowded nodes took 11 s
    on a failed 16,384-GPU SuperPOD, and a graph rebuilt without the arcs to avoid for each
    of 1,153 took 33 s on a 32,768-GPU one)."""

    order: np.ndarray
    start: np.ndarray
    by_head: np.ndarray
    head_start: np.ndarray

    @classmethod
    def of(cls, ga: GraphArrays) -> _ByTail:
        order = np.argsort(ga.tail, kind="stable")
        by_head = np.argsort(ga.head, kind="stable")
        nodes = np.arange(ga.n_nodes + 1)
        return cls(order, np.searchsorted(ga.tail[order], nodes),
                   by_head, np.searchsorted(ga.head[by_head], nodes))

    def graphs(self, ga: GraphArrays, usable: np.ndarray
               ) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """The fabric's graph and its reverse (node x node), every arc one hop long but
        those not ``usable``, :data:`AVOIDED` long (no search within a limit takes them)."""
        shape = (ga.n_nodes, ga.n_nodes)
        forward = sp.csr_matrix((np.where(usable[self.order], 1.0, AVOIDED),
                                 ga.head[self.order], self.start), shape=shape)
        reverse = sp.csr_matrix((np.where(usable[self.by_head], 1.0, AVOIDED),
                                 ga.tail[self.by_head], self.head_start), shape=shape)
        return forward, reverse


def _shortest_detour_arcs(ga: GraphArrays, u: np.ndarray, v: np.ndarray, usable: np.ndarray,
                          longest: np.ndarray | None = None, by: _ByTail | None = None
                          ) -> tuple[list[np.ndarray], np.ndarray] | None:
    """For each pair ``u[i] -> v[i]``, the ``usable`` arcs on its shortest paths over them
    (in hops), and their length (None when a pair is disconnected; given ``longest``, no
    arcs for a pair whose shortest path is longer than ``longest[i]`` or missing). ``by``:
    the arcs by tail, when the caller searches many times."""
    by = _ByTail.of(ga) if by is None else by
    adjacency, reverse = by.graphs(ga, usable)
    us, u_row = np.unique(u, return_inverse=True)
    vs, v_row = np.unique(v, return_inverse=True)
    # Detours are short: searches stop at NEAR_HOPS (a thousand whole searches took 5 s on
    # a 24,576-GPU fabric); a pair not found so near is searched again, as far as it takes
    # without an arc to avoid.
    from_u = dijkstra(adjacency, indices=us, limit=NEAR_HOPS)
    to_v = dijkstra(reverse, indices=vs, limit=NEAR_HOPS)
    far = ~np.isfinite(from_u[u_row, v])
    if far.any():
        for rows, ends, graph, found in ((u_row, us, adjacency, from_u),
                                         (v_row, vs, reverse, to_v)):
            again = np.unique(rows[far])
            found[again] = dijkstra(graph, indices=ends[again], limit=AVOIDED / 2)
    # Arcs by tail, so that each pair looks only at the arcs out of the nodes on its
    # shortest paths (not at every arc: 1,200 lost arcs of a 24,576-GPU fabric took 10 s so).
    by_tail, start = by.order, by.start
    columns, lengths = [], np.zeros(len(u))
    for i in range(len(u)):
        du, dv = from_u[u_row[i]], to_v[v_row[i]]
        length = lengths[i] = du[v[i]]
        if longest is not None and not length <= longest[i]:
            columns.append(np.zeros(0, dtype=np.int64))
            continue
        if not np.isfinite(length):
            return None
        on = np.flatnonzero(du + dv == length)
        count = start[on + 1] - start[on]
        arcs = by_tail[np.repeat(start[on] - np.cumsum(count) + count, count)
                       + np.arange(count.sum())]
        keep = usable[arcs] & (du[ga.tail[arcs]] + 1 + dv[ga.head[arcs]] == length)
        columns.append(np.sort(arcs[keep]))
    return columns, lengths


def _wider_detours(ga: GraphArrays, u: np.ndarray, v: np.ndarray, columns: list[np.ndarray],
                   hops: np.ndarray, usable: np.ndarray, moved: np.ndarray, room: np.ndarray,
                   seconds_left: SecondsLeft = _no_limit) -> list[np.ndarray]:
    """``columns`` (the arcs of shortest detours, ``hops`` long), with the detours that leave
    (or reach) a crowded node given a second way: the shortest detours that avoid the arcs
    their shortest ones leave (reach) it by.

    A node is crowded when the load its detours must send out of it (into it) exceeds
    ``room`` on those first (last) arcs: a leaf that lost uplinks cannot send their load
    over its other uplinks, but can down to its servers, across their scale-up links and
    out through their other NICs' leaves. The second way is at most ``WIDER_EXTRA_HOPS``
    longer than the first (a fat tree's leaf has no such way; a long one through other pods
    only makes the LP larger). Once ``seconds_left`` says 0, the rest keep their first
    way."""
    wider = list(columns)
    by = _ByTail.of(ga)
    for side, ends in ((ga.tail, u), (ga.head, v)):
        hop = [c[side[c] == e] for c, e in zip(columns, ends, strict=True)]
        for w in np.unique(ends):
            if seconds_left() == 0:
                return wider
            mine = np.flatnonzero(ends == w)
            first = np.unique(np.concatenate([hop[i] for i in mine]))
            if moved[mine].sum() <= room[first].sum() * (1 + CAPACITY_RTOL):
                continue
            avoid = usable.copy()
            avoid[first] = False
            around, _ = _shortest_detour_arcs(ga, u[mine], v[mine], avoid,
                                              longest=hops[mine] + WIDER_EXTRA_HOPS, by=by)
            for i, extra in zip(mine, around, strict=True):
                wider[i] = np.union1d(wider[i], extra)
    return wider


@dataclass(frozen=True)
class _Overload:
    """The detour LP's answer: each column's ``flow`` (in units of its detour's load), the
    ``share`` each shedding arc sends round, the least largest load over capacity
    ``overload``, and the arcs whose capacity ``binding`` holds it there (a positive dual)."""

    flow: np.ndarray
    share: np.ndarray
    overload: float
    binding: np.ndarray

    def loads(self, ga: GraphArrays, background: np.ndarray, columns: list[np.ndarray],
              moved: np.ndarray, own: np.ndarray) -> np.ndarray:
        """Each arc's load under this answer, over ``background``."""
        block = np.repeat(np.arange(len(columns)), [len(c) for c in columns])
        load = background + np.bincount(np.concatenate(columns) if columns else
                                        np.zeros(0, np.int64),
                                        weights=self.flow * moved[block], minlength=ga.n_arcs)
        load[own] -= self.share * moved[len(columns) - len(own):]
        return load


def _least_overload(ga: GraphArrays, u: np.ndarray, v: np.ndarray,
                    columns: list[np.ndarray], moved: np.ndarray, background: np.ndarray,
                    own: np.ndarray | None = None, time_limit: float | None = None
                    ) -> _Overload | None:
    r"""The detours' flows (one block of ``columns`` per detour) minimising :math:`\mu`
    subject to :math:`T_e \le \mu c_e` on every arc a detour may use, with :math:`\mu` no
    less than the largest background load over capacity elsewhere.

    The last ``len(own)`` blocks belong to arcs ``own`` that keep their load but may send a
    share :math:`\rho` of it (``moved``) round: their block is a flow of value
    :math:`\rho` and their own arc's load drops by :math:`\rho` times it. ``time_limit``
    (seconds) stops HiGHS: a stopped LP gives no answer (None), so the caller's detours
    stand."""
    own = np.zeros(0, dtype=np.int64) if own is None else np.asarray(own, dtype=np.int64)
    k, n_own = len(columns), len(own)
    sizes = np.array([len(c) for c in columns])
    arcs = np.concatenate(columns)
    n_x = len(arcs)
    block = np.repeat(np.arange(k), sizes)
    # Conservation: one row per (detour, node it touches); a shedding arc's share rho is a
    # column: net out of its tail minus rho is zero, and at its head plus rho.
    tails, heads = ga.tail[arcs], ga.head[arcs]
    keys = np.concatenate([block * ga.n_nodes + tails, block * ga.n_nodes + heads])
    node_rows, inverse = np.unique(keys, return_inverse=True)
    col = np.arange(n_x)
    shedding = np.arange(k - n_own, k)
    tail_rows = np.searchsorted(node_rows, np.arange(k) * ga.n_nodes + u)
    head_rows = np.searchsorted(node_rows, np.arange(k) * ga.n_nodes + v)
    rho = n_x + 1 + np.arange(n_own)
    a_eq = sp.csr_matrix((np.concatenate([np.ones(n_x), -np.ones(n_x), -np.ones(n_own),
                                          np.ones(n_own)]),
                          (np.concatenate([inverse, tail_rows[shedding],
                                           head_rows[shedding]]),
                           np.concatenate([col, col, rho, rho]))),
                         shape=(len(node_rows), n_x + 1 + n_own))
    b_eq = np.zeros(len(node_rows))
    b_eq[tail_rows[:k - n_own]] = 1.0
    b_eq[head_rows[:k - n_own]] = -1.0
    # Capacity: sum_i moved_i x_ie - c_e mu - (own load shed) <= -background_e, one row per
    # arc used or shedding; in units of the largest capacity so the LP sees numbers near one.
    unit = float(ga.capacity.max())
    used, position = np.unique(np.concatenate([arcs, own]), return_inverse=True)
    arc_row, own_row = position[:n_x], position[n_x:]
    a_ub = sp.csr_matrix((np.concatenate([moved[block] / unit, -ga.capacity[used] / unit,
                                          -moved[shedding] / unit]),
                          (np.concatenate([arc_row, np.arange(len(used)), own_row]),
                           np.concatenate([col, np.full(len(used), n_x), rho]))),
                         shape=(len(used), n_x + 1 + n_own))
    b_ub = -background[used] / unit
    floor = float(np.max(background / ga.capacity))
    if n_own:  # the shedding arcs' own load may drop below the background's worst
        rest = np.ones(ga.n_arcs, dtype=bool)
        rest[own] = False
        floor = float(np.max(background[rest] / ga.capacity[rest], initial=0.0))
    cost = np.zeros(n_x + 1 + n_own)
    cost[n_x] = 1.0
    lower, upper = np.zeros(n_x + 1 + n_own), np.ones(n_x + 1 + n_own)
    lower[n_x], upper[n_x] = floor, np.inf
    # Interior point is several times faster than simplex on these min-max LPs once they
    # have tens of thousands of columns (crossover still returns a vertex); below, simplex.
    left = left_now()
    limit = time_limit if left is None else left if time_limit is None else min(time_limit,
                                                                                left)
    limit = None if limit is None else max(float(limit), 1e-3)
    if n_x > IPM_COLUMNS and limit is not None:
        # Solved as the engine's LPs are: scipy's own interior point ran past a limit shorter
        # than its presolve (1.6 s given 0.1 s on a failed 1,024-GPU SuperPOD).
        sol = solve_lp(LinearProgram(cost, a_ub, b_ub, a_eq, b_eq, lower, upper), "highs",
                       limit, solver="ipm")
        if sol.status != "optimal" or sol.x is None:
            return None
        x, duals = sol.x, sol.dual_ub
    else:
        from scipy.optimize import linprog  # a fifth of import fabricopt's time: here

        out = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                      bounds=np.column_stack([lower, upper]),
                      method="highs-ipm" if n_x > IPM_COLUMNS else "highs",
                      options={} if limit is None else {"time_limit": limit})
        if out.status != 0 or out.x is None:
            return None
        x, duals = out.x, getattr(out.ineqlin, "marginals", None)
    binding = (used[np.asarray(duals) < -1e-9] if duals is not None
               else np.zeros(0, dtype=np.int64))
    return _Overload(x[:n_x], x[n_x + 1:], float(x[n_x]), binding)


__all__ = ["ProvenFlow", "Rerouted", "ReroutedFlow", "arc_map", "detour_flows", "rerouted"]
