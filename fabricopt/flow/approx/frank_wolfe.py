r"""A certified approximate max-concurrent-flow solver: conditional gradient over routing trees.

The exact LP of :mod:`fabricopt.flow.formulation` has one flow variable per (source, arc):
hundreds of millions for a fabric of thousands of switches. This module never assembles it.

**Routings are mixes of trees.** A commodity routes all its demand (its source to every
target) at once, and every such flow is dominated by a convex combination of *routing
trees* (the vertices of the uncapacitated transshipment polytope are spanning-tree flows).
The solver keeps one flow per commodity (routing the demand once, theta = 1) and minimises
a soft maximum of the arc utilisations by the Frank-Wolfe method: the gradient of the soft
maximum is a set of arc lengths, the best direction is every commodity's shortest-path
tree at those lengths (one :func:`scipy.sparse.csgraph.dijkstra` call from all sources),
and a line search picks the step.

**Fewest-hop routes when the hop lengths are the best bound.** The first distance bound is
at hop lengths. On uniform fabrics with no symmetry to exploit (random regular graphs) it is
often the optimum, and then complementary slackness says an optimal flow uses fewest-hop
routes only; free routing keeps paying for detours it must later shrink away, step by step.
So when free routing stalls while the hop bound is still the best, the flow starts again from
fewest-hop trees and prices only fewest-hop routes (hop count first, the soft-maximum
lengths among equals). The bound at the soft-maximum lengths is still evaluated every few
iterations; if it beats the hop bound, or the fewest-hop flow stalls in turn, free routing
resumes for good. On a 512-switch jellyfish all-to-all this closed a 1% gap in 52 iterations
where free routing alone stood at 2.4% after 364.

**Every iteration proves a bound.** The flow, scaled by its worst utilisation, is a
feasible flow: theta >= 1 / max utilisation. The same shortest-path search gives the
distance bound :math:`\theta \le \sum_a c_a l_a / \sum D\,\mathrm{dist}_l` of
:mod:`fabricopt.flow.certificate` at the current lengths (while routing on fewest-hop
paths, every few iterations). The best of each is kept; the
flow goes back in the LP's column layout and the lengths as capacity-row duals, so
:func:`fabricopt.flow.certificate.certify` proves both from scratch, exactly as for an
LP solver's answer. The run stops when the certified gap ``(upper - lower) / upper`` is at
most ``gap``, or at the time limit with the best bracket proven so far.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..formulation import FlowModel
from ..lp import LPSolution
from .core import (
    BETA_SCALE,
    FEWEST_HOP_STALL,
    FREE_STALL,
    HOP_TIE_BREAK,
    RESTRICTED_BOUND_EVERY,
    ApproxRun,
)


class FrankWolfe(ApproxRun):
    """Conditional gradient on the soft maximum of the arc utilisations."""

    def __init__(self, model: FlowModel, gap: float, time_limit: float | None,
                 progress: Callable[[dict[str, float]], None] | None,
                 seed_lengths: np.ndarray | None = None) -> None:
        super().__init__(model, gap, time_limit, progress)
        self.seed_lengths = seed_lengths
        # Utilisation of each endpoint row at theta = 1: fixed, whatever the routing.
        self.ep_util = model.ep_rows_gbps / self.ep_cap
        self.best_x: np.ndarray | None = None

    def _bound(self, core: np.ndarray, ep: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
        """Trees at the given lengths (made positive), and the distance bound there."""
        scale = float(core.mean()) if self.m and core.max() > 0 else 1.0
        core = core + HOP_TIE_BREAK * scale
        arc, load, cost = self.g.trees(core)
        numerator = float(self.g.capacity @ core + self.ep_cap @ ep)
        denominator = float(cost.sum() + self.model.ep_rows_gbps @ ep)
        upper = numerator / denominator if denominator > 0 else np.inf
        if upper < self.upper:
            self.upper, self.best_lengths = upper, np.concatenate([core, ep])
        return arc, load, cost

    def _record(self, flows: np.ndarray, util_max: float) -> None:
        """Keep the flow if it proves a better lower bound: scaled to fit, it routes
        ``1 / util_max`` times the demand."""
        theta = 1.0 / util_max if util_max > 0 else 0.0
        if theta > self.lower:
            self.lower = theta
            self.best_x = flows * theta  # a copy, scaled so it fits the capacities

    def run(self) -> LPSolution:
        g, K, m = self.g, self.K, self.m
        c = g.capacity
        n_rows = m + len(self.ep_util)
        arc, load, cost = self._bound(np.ones(m), np.zeros(len(self.ep_util)))
        if not np.all(np.isfinite(cost)):
            return self.unreachable()
        rows = np.broadcast_to(np.arange(K, dtype=np.int64)[:, None], arc.shape)
        flows, total = self._tree_flows((arc, load, cost))
        ep_max = float(self.ep_util.max()) if len(self.ep_util) else 0.0
        # The hop lengths are the first (and often the best) bound. When free routing
        # stalls while they stay the best, route on fewest-hop paths only (see the module
        # docstring); back to free routing for good if that stalls too or the bound moves.
        hop_bound = self.upper
        for seed in () if self.seed_lengths is None else self.seed_lengths:
            self._bound(seed[:m], seed[m:])  # a proven bound at once, often the best
        restricted, tried = False, False
        lowers: list[float] = []
        it, status = 0, "time_limit"
        while True:
            util = total / c
            util_max = max(float(util.max()) if m else 0.0, ep_max)
            self._record(flows, util_max)
            lowers.append(self.lower)
            it += 1
            self.report(it)
            reason = self.stop_reason()
            if reason is not None:
                status = reason
                break
            if self.out_of_time():
                break
            # Soft maximum at a temperature tied to the gap still to close: coarse early
            # (large steps), sharp later (it approximates the maximum to about
            # log(rows) / beta relative).
            now = (self.upper - self.lower) / self.upper
            beta = BETA_SCALE * np.log(n_rows) / max(now, self.gap) / util_max
            expo = np.exp(beta * (np.concatenate([util, self.ep_util]) - util_max))
            lengths = expo / np.concatenate([c, self.ep_cap])
            lengths /= lengths.max()
            if (not tried and self.upper == hop_bound
                    and _stalled(lowers, self.upper, *FREE_STALL)):
                # Start again from the fewest-hop trees: the detours free routing took
                # would take many steps to shrink away.
                restricted, tried, lowers = True, True, lowers[-1:]
                flows, total = self._tree_flows(g.trees(np.full(m, 1.0 + g.n)))
                continue
            if restricted and it % RESTRICTED_BOUND_EVERY == 0:
                self._bound(lengths[:m], lengths[m:])
                restricted = (self.upper == hop_bound
                              and not _stalled(lowers, self.upper, *FEWEST_HOP_STALL))
            if restricted:
                # Fewest hops first, then the soft-maximum lengths (all at most 1): a detour
                # of one more hop costs more than any route's spread of lengths.
                arc, load, _ = g.trees(lengths[:m] + g.n)
            else:
                arc, load, cost = self._bound(lengths[:m], lengths[m:])
            keep = arc >= 0
            tree_total = np.bincount(arc[keep], weights=load[keep], minlength=m)
            step = _line_search(beta, util, tree_total / c, self.ep_util, util_max)
            if step <= 0:
                restricted = False
                continue
            flows *= 1.0 - step
            flows[rows[keep], arc[keep]] += step * load[keep]
            total = (1.0 - step) * total + step * tree_total
        return self._solution(status, it)

    def _tree_flows(self, trees: tuple[np.ndarray, np.ndarray, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-commodity arc flows (K x core arcs) of one tree each, and their total."""
        arc, load, _ = trees
        keep = arc >= 0
        flows = np.zeros((self.K, self.m))
        flows[np.nonzero(keep)[0], arc[keep]] = load[keep]
        return flows, np.bincount(arc[keep], weights=load[keep], minlength=self.m)

    def _solution(self, status: str, it: int) -> LPSolution:
        x = np.zeros(self.K * self.m + 1)
        if self.best_x is not None:
            x[:-1] = self.best_x.ravel()
            x[-1] = self.lower
        return self.answer(status, f"Frank-Wolfe on routing trees: {it} iterations", x, it)


def _stalled(lowers: list[float], upper: float, window: int, fraction: float) -> bool:
    """Whether the lower bound rose by less than ``fraction`` of the gap left over the last
    ``window`` iterations."""
    if len(lowers) <= window:
        return False
    return lowers[-1] - lowers[-1 - window] < fraction * (upper - lowers[-1])


def _line_search(beta: float, util: np.ndarray, tree_util: np.ndarray, ep_util: np.ndarray,
                 util_max: float) -> float:
    """Step in [0, 1] toward the trees that minimises the soft maximum (bisection on its
    derivative, which is increasing: the soft maximum is convex along the segment)."""
    fixed = np.exp(beta * (ep_util - util_max)).sum() if len(ep_util) else 0.0
    diff = tree_util - util

    def slope(step: float) -> float:
        z = beta * (util + step * diff - util_max)
        top = z.max()
        e = np.exp(z - top)
        return float(e @ diff) / (float(e.sum()) + fixed * np.exp(-top))

    if slope(0.0) >= 0:
        return 0.0
    if slope(1.0) <= 0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0:
            hi = mid
        else:
            lo = mid
    return lo
