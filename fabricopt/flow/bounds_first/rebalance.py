r"""A certified lower bound from WCMP rebalanced: fewest-hop routing with its splits tuned.

Fixed WCMP shares (proportional to each arc's capacity,
:func:`fabricopt.flow.approx.colgen.ecmp_columns`)
do not see load: on a fat tree missing one spine-to-core link, the spine above the failure
still takes an eighth of its pod's outbound traffic over seven uplinks, and theta falls 1 to
10% below the cut that binds. Keeping the same fewest-hop routes and moving traffic between
them closes most of that gap, in a few passes over arrays the size of the WCMP flow.

**The routing.** Per commodity (a source), the fewest-hop arcs form a DAG. What reaches a node
(its demand plus what it forwards) arrives over its in-arcs in fractions :math:`\varphi_e`
that sum to one, so the flow conserves by construction (built from the farthest nodes back,
as WCMP is). WCMP is the start: :math:`\varphi` proportional to capacity.

**The update** (exponentiated gradient on the splits, as in Gallager's minimum-delay routing).
Arc lengths are the gradient of a soft maximum of the utilisations,
:math:`l_a \propto e^{\beta u_a} / c_a`; the marginal cost of bringing one more unit to node
:math:`v` over in-arc :math:`e = (w, v)` is :math:`p_e = P(w) + l_e`, where :math:`P(v) =
\sum_e \varphi_e p_e` is computed from the source outwards. Each split is scaled by
:math:`\exp(-\eta\,(p_e / P(v) - 1))` and renormalised: arcs whose upstream routes are dearer
lose share. A round that lowers theta halves :math:`\eta` and restarts from the best splits.

Every round's flow, scaled to its most loaded arc, is a feasible point of the LP; the best is
kept, and its certificate is checked like any solver's. On ``fat_tree(16)`` missing 20 random
switch links (50 draws), WCMP reached 98.4-99.5% of the binding cut, and 10-20 rounds
reached the cut itself to 1e-7 in 49 of the 50.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

if TYPE_CHECKING:
    from ..approx import CoreGraph

#: Largest commodities x arcs rebalanced at once (the DAG's arrays are a few of this size).
REBALANCE_MAX_ENTRIES = 4_000_000
#: Rounds of the update at most; it stops sooner once :data:`REBALANCE_PATIENCE` rounds
#: have gained less than :data:`REBALANCE_MIN_GAIN` (relative) over the best so far, or once
#: theta reaches the caller's target (to 1e-7, so the bounds stage can call it exact).
#: ``fat_tree(8)`` missing one spine-to-core link reaches its cut in 86 rounds, after
#: stretches of 8 to 15 rounds of small gains (60 rounds with a patience of 8 stopped 0.6 %
#: short, and the bounds stage then took the attach-switch LP, 25 times slower).
REBALANCE_ROUNDS = 100
REBALANCE_MIN_GAIN = 1e-6
REBALANCE_PATIENCE = 20
#: Sharpness of the soft maximum (over the largest utilisation) and the first step size.
#: Tuned on fat_tree(4), fat_tree(6) and leaf-spines missing one link, and on fat_tree(16)
#: missing 20 switch links: a sharper maximum reached the optimum where 30 stopped 0.1-3%
#: short, and steps of 0.1 and above diverged (a round that lowers theta halves the step).
SOFTMAX_SHARPNESS = 100.0
FIRST_STEP = 0.05


def rebalanced_flows(g: CoreGraph, arcs_in: np.ndarray, demand: np.ndarray,
                     background: np.ndarray, fixed_util: float = 0.0,
                     target: float = np.inf) -> np.ndarray | None:
    """Every commodity's ``demand`` (K x local nodes, per unit theta) routed on the fewest-hop
    arcs among ``arcs_in`` with splits rebalanced against the load: K x core arcs, the best
    round's flow at theta = 1; None when a target of positive demand cannot be reached or
    the arrays would pass :data:`REBALANCE_MAX_ENTRIES`.

    ``background`` (per core arc) is load already routed that the update must live with;
    ``fixed_util`` the utilisation of rows outside the core arcs (endpoint links), which
    caps theta whatever the routing. The rounds stop early once theta reaches ``target``.

    A fat_tree(4) missing one spine-to-core link: fixed WCMP shares reach 2/3 of the LP's
    optimum (theta 25 at 1 Gb/s per pair), rebalanced splits 99.5%.

    >>> import fabricopt as fo
    >>> from fabricopt.flow.approx import CoreGraph
    >>> from fabricopt.flow.bounds import ecmp_point
    >>> fab = fo.fat_tree(4).without(links={("core0.0", "spine0.0"): 1})
    >>> model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    >>> g = CoreGraph.of(model)
    >>> m = len(g.tail)
    >>> flows = rebalanced_flows(g, np.ones(m, dtype=bool), g.demand, np.zeros(m))
    >>> util = flows.sum(axis=0) / g.capacity
    >>> round(float(ecmp_point(model)[-1]), 2), round(float(1 / util.max()), 2)
    (16.67, 24.88)
    """
    K, n, m = len(g.sources), g.n, len(g.tail)
    keep = np.flatnonzero(arcs_in)
    if K * m > REBALANCE_MAX_ENTRIES or K == 0 or not len(keep):
        return None
    tail, head, cap = g.tail[keep], g.head[keep], g.capacity[keep]
    hops = sp.csr_matrix((np.ones(len(keep)), (tail, head)), shape=(n, n))
    dist = shortest_path(hops, directed=True, unweighted=True, indices=g.sources)
    if np.any((demand > 0) & ~np.isfinite(dist)):
        return None
    k_of, e_arc = np.nonzero(np.isfinite(dist[:, tail]) & (dist[:, head] == dist[:, tail] + 1))
    # Entries sorted by their head's distance, farthest first: each level is then a slice.
    order, levels = _levels(dist[k_of, head[e_arc]].astype(np.int64))
    del dist
    k_of, e_arc = k_of[order], e_arc[order]
    e_tail, e_head = k_of * n + tail[e_arc], k_of * n + head[e_arc]
    phi = _normalised(cap[e_arc], e_head, K * n)
    dem = demand.ravel()
    bg = background[keep]
    best_theta, best_phi, best_flow, best_util = 0.0, phi, None, None
    step, stale = FIRST_STEP, 0
    for _ in range(REBALANCE_ROUNDS + 1):
        flow = _pull(phi, dem, e_tail, e_head, levels)
        util = (np.bincount(e_arc, weights=flow, minlength=len(keep)) + bg) / cap
        top = max(float(util.max()), fixed_util)
        theta = 1.0 / top if top > 0 else np.inf
        if theta > best_theta:
            stale = stale + 1 if theta < best_theta * (1 + REBALANCE_MIN_GAIN) else 0
            best_theta, best_phi, best_flow, best_util = theta, phi, flow, util
        else:
            stale += 1
            # Overshot: a smaller step from the best splits.
            step, phi, util = step / 2, best_phi, best_util
        if stale >= REBALANCE_PATIENCE or best_theta >= target * (1 - 1e-7):
            break
        peak = float(util.max())
        lengths = np.exp(SOFTMAX_SHARPNESS / peak * (util - peak)) / cap
        cost = _push(phi, lengths[e_arc], e_tail, e_head, levels[::-1], K * n)
        phi = _normalised(phi * np.exp(-step * (cost / np.maximum(
            _mean_cost(phi, cost, e_head, K * n)[e_head], 1e-300) - 1.0)), e_head, K * n)
    out = np.zeros((K, m))
    np.add.at(out, (k_of, keep[e_arc]), best_flow)
    return out


def _levels(depth: np.ndarray) -> tuple[np.ndarray, list[slice]]:
    """The order that sorts the DAG entries by their head's hop distance ``depth``, farthest
    first, and each distance's slice of that order."""
    order = np.argsort(-depth, kind="stable")
    cuts = [0, *(np.flatnonzero(np.diff(depth[order])) + 1).tolist(), len(order)]
    return order, [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def _normalised(weights: np.ndarray, e_head: np.ndarray, size: int) -> np.ndarray:
    """``weights`` scaled to sum to one over each head's in-entries."""
    total = np.bincount(e_head, weights=weights, minlength=size)
    return weights / total[e_head]


def _pull(phi: np.ndarray, dem: np.ndarray, e_tail: np.ndarray, e_head: np.ndarray,
          levels: list[slice]) -> np.ndarray:
    """The flow of splits ``phi``: each node's demand plus what it forwards arrives over its
    in-entries in those fractions, from the farthest nodes back."""
    through = dem.copy()
    flow = np.zeros(len(phi))
    for level in levels:
        f = through[e_head[level]] * phi[level]
        flow[level] = f
        through += np.bincount(e_tail[level], weights=f, minlength=len(through))
    return flow


def _push(phi: np.ndarray, arc_cost: np.ndarray, e_tail: np.ndarray, e_head: np.ndarray,
          levels: list[slice], size: int) -> np.ndarray:
    """Each entry's marginal route cost from its source: the mean cost (weighted by
    ``phi``) of reaching its tail, plus its own arc's, from the source outwards."""
    reach = np.zeros(size)
    cost = np.zeros(len(phi))
    for level in levels:
        cost[level] = reach[e_tail[level]] + arc_cost[level]
        reach += np.bincount(e_head[level], weights=phi[level] * cost[level], minlength=size)
    return cost


def _mean_cost(phi: np.ndarray, cost: np.ndarray, e_head: np.ndarray, size: int) -> np.ndarray:
    """Per node, the split-weighted mean cost of its in-entries."""
    return np.bincount(e_head, weights=phi * cost, minlength=size)


__all__ = ["REBALANCE_MAX_ENTRIES", "rebalanced_flows"]
