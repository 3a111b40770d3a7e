r"""Certificates: the two proofs behind every throughput bracket.

* **Lower bound (a feasible flow).** A routing of :math:`\theta D` that conserves flow loads
  each arc with :math:`L_a`; scaled by its worst overload it fits, so
  :math:`\theta / \max(1, \max_a L_a / c_a)` is achievable. Solvers conserve flow only to a
  tolerance: if commodity :math:`k` leaves residuals :math:`r_k(v)` (flow created or lost at
  node :math:`v`), a path decomposition still delivers at least
  :math:`\theta D(k, t) - \lVert r_k \rVert_1` from its source to each target, using no
  more than the loads :math:`L`. So
  :math:`(\theta - \max_k \lVert r_k \rVert_1 / \min D) / \max(1, \max_a L_a / c_a)`
  is proven achievable, whatever the solver's tolerance.
* **Upper bound (arc lengths).** For any lengths :math:`l_a \ge 0`,

  .. math:: \theta \le \frac{\sum_a c_a l_a}{\sum_{s,t} D(s,t)\, \mathrm{dist}_l(s,t)}

  because every unit of demand from s to t uses at least :math:`\mathrm{dist}_l(s,t)` of
  "length-capacity". The LP duals of the capacity rows are the best such lengths; hop counts
  (:math:`l = 1`) give a cheap one.

:func:`certify` applies both proofs to any model that follows
:class:`~fabricopt.flow.model.ThroughputModel`, whichever solver produced the point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..graph_arrays import GraphArrays
from .lp import LPSolution
from .model import DistanceBound, LiftedFlow, ThroughputModel
from .polish import polish, polish_duals, residual

#: Relative width of the certified bracket up to which a solve counts as exact.
EXACT_RTOL = 1e-6
#: A model without an upper proof does not polish its point when the lower end it proves is
#: this close (relative) to the point's theta already: all polishing could still add.
POLISH_GAIN_RTOL = 1e-9


def distance_bound(ga: GraphArrays, lengths: np.ndarray, core_arc: np.ndarray,
                   agg_src: np.ndarray, agg_dst: np.ndarray, agg_gbps: np.ndarray,
                   ep_arc: np.ndarray, ep_gbps: np.ndarray) -> DistanceBound:
    """The length bound with demand given between core nodes plus endpoint-link terms.

    ``agg_*`` are demands between core nodes (endpoint traffic moved to its switch);
    ``ep_arc``/``ep_gbps`` are collapsed endpoint links and the demand crossing each.
    """
    lengths = np.clip(np.asarray(lengths, dtype=float), 0.0, None)
    numerator = float(ga.capacity @ lengths)
    core = np.flatnonzero(core_arc)
    n = ga.n_nodes
    M = sp.csr_matrix((lengths[core], (ga.tail[core], ga.head[core])), shape=(n, n))
    sources, k_of = np.unique(agg_src, return_inverse=True)
    denominator = float(ep_gbps @ lengths[ep_arc]) if len(ep_arc) else 0.0
    if len(sources):
        dist = dijkstra(M, directed=True, indices=sources)
        d = dist[k_of, agg_dst]
        bad = np.flatnonzero(np.isinf(d) & (agg_gbps > 0))
        if len(bad):
            # Lengths may be zero on some arcs but dijkstra only returns inf when no path
            # exists at all: theta must be 0, and the reachable set is the cut.
            s, t = int(agg_src[bad[0]]), int(agg_dst[bad[0]])
            reach = np.flatnonzero(np.isfinite(dist[k_of[bad[0]]]))
            return DistanceBound(0.0, numerator, np.inf, (ga.nodes[s], ga.nodes[t]),
                                 frozenset(ga.nodes[i] for i in reach))
        denominator += float(agg_gbps @ d)
    upper = numerator / denominator if denominator > 0 else np.inf
    return DistanceBound(upper, numerator, denominator)


def certified_lower(theta: float | None, load: np.ndarray, capacity: np.ndarray,
                    residual_l1: float, min_demand: float) -> tuple[float, float]:
    """Proven achievable theta from a solver's flow (see the module docstring).

    ``residual_l1`` is the largest per-commodity L1 norm of the conservation residual and
    ``min_demand`` the smallest positive demand of any commodity to any target (Gb/s per
    unit theta). Returns ``(lower, max_overload)``.
    """
    if theta is None or not np.isfinite(theta) or theta <= 0:
        return 0.0, 0.0
    overload = float(np.max(load / capacity)) if len(load) else 0.0
    kept = theta - residual_l1 / min_demand
    return float(max(kept, 0.0) / max(1.0, overload)), overload


@dataclass(frozen=True)
class Certified:
    """Both proofs for one solver answer: ``lower <= theta* <= upper``.

    ``lifted`` is the point mapped onto the fabric (None without a point), ``lengths`` the
    arc lengths behind ``bound`` (None when the model proves no upper bound).
    """

    lower: float
    upper: float
    max_overload: float
    max_residual: float
    lifted: LiftedFlow | None
    lengths: np.ndarray | None
    bound: DistanceBound | None
    #: The point whose lift proves ``lower`` (the solver's, or its polished copy).
    point: np.ndarray | None = None


def polished(model: ThroughputModel, sol: LPSolution) -> LPSolution:
    """``sol`` with its point polished (see :mod:`fabricopt.flow.polish`) when the solver's
    own residual is above machine precision."""
    if sol.x is not None and residual(model.lp, sol.x) > 1e-12:
        sol.x = polish(model.lp, sol.x)
    return sol


def certify(model: ThroughputModel, sol: LPSolution, polish: bool = True,
            extra_lengths: Sequence[np.ndarray] = ()) -> Certified:
    """Prove a bracket on theta from a solver's answer to ``model``'s LP.

    The point is lifted to the fabric and proves ``lower`` through
    :func:`certified_lower` (polished first when that leaves the bracket wider than
    ``EXACT_RTOL``); the duals (hop counts when the solver gave none) become arc
    lengths that prove ``upper`` through the model's distance bound. When the two do not meet,
    the duals are made consistent with the point by complementary slackness
    (:func:`~fabricopt.flow.polish.polish_duals`) and the better bound is kept. A
    disconnected demand pair proves theta = 0. ``polish=False`` skips both polishing steps,
    which need the LP's matrices (a solver that never built them, whose point conserves flow
    by construction, has nothing to gain from them).

    ``extra_lengths`` (each one length per fabric arc) are further candidates for the upper
    bound, such as the lengths of a solve of a larger fabric (:mod:`fabricopt.flow.warm`):
    their distance bounds are evaluated by the model like the duals' and the best is kept. The
    model's distance bound must hold for any lengths (not only invariant ones, as the
    symmetric model's does).
    """
    ga = model.ga

    def lower_of(x: np.ndarray) -> tuple[float, float, LiftedFlow]:
        lifted = model.lift(x)
        cons = model.constrained
        low, over = certified_lower(lifted.theta, lifted.load[cons], ga.capacity[cons],
                                    lifted.residual_l1, model.min_demand)
        return low, over, lifted

    lower, overload, lifted, point = 0.0, 0.0, None, sol.x
    if sol.x is not None:
        lower, overload, lifted = lower_of(sol.x)
    lengths = (model.arc_lengths(sol.dual_ub) if sol.dual_ub is not None
               else np.ones(ga.n_arcs))
    bound = model.length_bound(lengths)
    closed = (bound is not None and not bound.failure
              and bound.upper - lower <= EXACT_RTOL * bound.upper)
    if bound is None and lifted is not None:
        # No upper proof to meet (the two-phase rate's models): polishing moves the point by
        # its residual only, so it lifts the lower end toward the point's theta at most; one
        # that is there already (to POLISH_GAIN_RTOL) is kept as it is (0.1-0.4 s of LSQR
        # on a 15,360-GPU pod's rate).
        closed = lower >= lifted.theta * (1 - POLISH_GAIN_RTOL)
    if polish and sol.x is not None and not closed and residual(model.lp, sol.x) > 1e-12:
        # The point as given leaves the bracket open: polished onto its active set, it may
        # lose its residual (an interior point's tolerances). Both points prove a lower
        # bound; the better is kept. (Polishing a point that already closes the bracket
        # only costs time: 8 s of LSQR on a 2:1 cluster's 300,000-column LP.)
        sol = polished(model, sol)
        low2, over2, lifted2 = lower_of(sol.x)
        if low2 > lower:
            lower, overload, lifted, point = low2, over2, lifted2, sol.x
    if bound is None:
        return Certified(lower, np.inf, overload, lifted.residual_l1 if lifted else 0.0,
                         lifted, None, None, point)
    if (polish and sol.x is not None and sol.dual_ub is not None and not bound.failure
            and bound.upper - lower > EXACT_RTOL * bound.upper):
        # The solver's duals are off (tolerances, postsolve): make them consistent with the
        # point and keep the better of the two bounds.
        better = polish_duals(model.lp, sol.x, sol.dual_eq, sol.dual_ub)
        if better is not None:
            lengths2 = model.arc_lengths(better)
            bound2 = model.length_bound(lengths2)
            if bound2 is not None and not bound2.failure and bound2.upper < bound.upper:
                lengths, bound = lengths2, bound2
    for extra in extra_lengths:
        if bound.failure:
            break
        extra = np.asarray(extra, dtype=float)
        bound3 = model.length_bound(extra)
        if bound3 is not None and not bound3.failure and bound3.upper < bound.upper:
            lengths, bound = extra, bound3
    if bound.unreachable is not None or bound.failure:
        lower = 0.0
    return Certified(lower, bound.upper, overload, lifted.residual_l1 if lifted else 0.0,
                     lifted, lengths, bound, point)
