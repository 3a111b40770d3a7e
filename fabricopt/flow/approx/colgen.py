r"""A certified max-concurrent-flow solver by column generation over routing trees.

The source-aggregated LP of :mod:`fabricopt.flow.formulation` is, by Dantzig-Wolfe
decomposition, the LP over *routing trees*: every flow of one commodity (its source to all its
targets) is dominated by a convex combination of shortest-path-tree flows (the vertices of the
uncapacitated transshipment polytope), so

.. math::

    \max \theta \quad\text{s.t.}\quad \sum_{k, T} \lambda_{k,T}\, \ell_T(a) \le c_a \;\;
    \forall a, \qquad \sum_T \lambda_{k,T} = \theta \;\; \forall k, \qquad \lambda \ge 0,

with :math:`\ell_T(a)` the demand tree :math:`T` of commodity :math:`k` puts on arc :math:`a`
at theta = 1. For a commodity with one target (a permutation) a tree is a path, and this is
path-based column generation.

The *master* LP holds only the trees found so far and is re-solved by HiGHS's simplex method
from its last basis after each round of new columns. Its capacity-row duals are arc lengths
:math:`y`: the *pricing* step is one :func:`scipy.sparse.csgraph.dijkstra` search from every
source at once, which gives each commodity's shortest-path tree (a new column when it is
shorter than the commodity's dual) and, for free, the distance bound

.. math:: \theta \le \frac{\sum_a c_a y_a}{\sum_{s,t} D(s,t)\, \mathrm{dist}_y(s,t)}

of :mod:`fabricopt.flow.certificate`, valid at every round. The master's point, summed into
per-commodity arc flows, is a feasible flow in the LP's column layout (it conserves by
construction). The best bound and the latest point go back as an
:class:`~fabricopt.flow.lp.LPSolution` that the one certify path re-proves.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..backends import _stdout_silenced, highspy_available
from ..formulation import FlowModel
from ..lp import LPSolution
from .core import HOP_TIE_BREAK, ApproxRun, CoreGraph

#: Sharpness of the soft maximum of utilisation relative to the gap asked.
SOFT_SHARPNESS = 0.05

#: Weight of the best lengths so far when pricing (Wentges dual smoothing).
SMOOTHING = 0.5

#: Most simplex iterations one master solve may take when the caller has another method to
#: fall back on (:func:`fabricopt.flow.approx.solve_approx` with ``strategy="auto"``); past
#: it the master has stalled. Counted in iterations, not seconds, so a run hands over at the
#: same round on a busy machine and an idle one. On a superpod(2) with 2% of its links failed
#: one master solve of 2,552 dense columns once ran past 60 s, where Frank-Wolfe closed 1% in
#: 28 s; measured on 2 loaded cores, such dense masters (1,032 columns, 5,782 rows) run about
#: 100 iterations a second, while the sparse masters of a 30-switch jellyfish all-to-all need
#: at most about 600 iterations a round at 4,000 a second. 2,000 iterations is some 20 s of
#: the dense kind and never binds on the sparse one.
MASTER_ROUND_ITERATIONS = 2_000

#: A column enters when it is shorter than its commodity's dual by this relative amount.
PRICE_TOL = 1e-9


#: Relative slack under which an arc counts as on a shortest path (for ECMP columns).
TIE_TOL = 1e-9

#: Largest commodities x core arcs for which ECMP columns are built; above it pricing returns
#: one shortest-path tree per commodity. Below the bounds stage's
#: :data:`~fabricopt.flow.bounds.ECMP_MAX_ENTRIES` (50 million), which limits something else:
#: that ECMP point keeps one flow per entry and routes commodities in chunks, where these
#: columns hold two dense distance arrays of every entry at once (640 MB at this size), and
#: again at every pricing round.
ECMP_COLUMNS_MAX_ENTRIES = 40_000_000


def ecmp_columns(g: CoreGraph, lengths: np.ndarray, weights: np.ndarray | None = None
                 ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Every commodity's demand split over *all* its shortest paths at ``lengths`` (> 0).

    Returns ``(arcs, loads, cost)``: per commodity the core arcs its flow uses and the Gb/s on
    each (at theta = 1), and ``cost[k] = sum_t D(k, t) dist(k, t)``. The flow is built from
    the farthest nodes back: what reaches a node (its demand plus what it forwards) arrives
    in equal shares over its shortest-path in-arcs (in shares proportional to ``weights``,
    one per core arc, when given: WCMP), so it conserves by construction. Such a column
    spreads over equal-cost routes at once, where a tree takes one of them.
    """
    n, K = g.n, len(g.sources)
    M = sp.csr_matrix((lengths, (g.tail, g.head)), shape=(n, n))
    dist = dijkstra(M, directed=True, indices=g.sources)
    with np.errstate(invalid="ignore"):
        cost = np.einsum("kv,kv->k", g.demand, np.where(g.demand > 0, dist, 0.0))
    arcs_out: list[np.ndarray] = [np.zeros(0, dtype=np.int32)] * K
    loads_out: list[np.ndarray] = [np.zeros(0)] * K
    if not np.all(np.isfinite(cost)):
        return arcs_out, loads_out, cost
    du, dv = dist[:, g.tail], dist[:, g.head]
    scale = np.where(np.isfinite(dv), dv, 0.0).max(axis=1, keepdims=True)
    # Strictly closer to the source as well: with the tie tolerance, arcs much shorter than
    # it would otherwise close cycles between nodes at (nearly) equal distance, and a flow
    # spread along a cycle does not conserve.
    on = np.isfinite(du) & (du + lengths[None, :] <= dv + TIE_TOL * scale) & (du < dv)
    del du, dv
    k_idx, a_idx = np.nonzero(on)
    del on
    tail_f = k_idx * n + g.tail[a_idx]
    head_f = k_idx * n + g.head[a_idx]
    # DAG depth of every node (longest shortest-path hop count from the source); at hop
    # lengths it is the distance itself.
    if np.all(lengths == 1.0):
        depth = np.where(np.isfinite(dist), dist, 0).astype(np.int64).ravel()
    else:
        depth = np.zeros(K * n, dtype=np.int64)
        for _ in range(n):
            new = depth.copy()
            np.maximum.at(new, head_f, depth[tail_f] + 1)
            if np.array_equal(new, depth):
                break
            depth = new
    w = np.ones(len(a_idx)) if weights is None else weights[a_idx]
    indeg = np.bincount(head_f, weights=w, minlength=K * n)
    through = g.demand.ravel().copy()
    flow = np.zeros(len(a_idx))
    arc_depth = depth[head_f]
    order = np.argsort(-arc_depth, kind="stable")
    bounds = np.flatnonzero(np.diff(arc_depth[order])) + 1
    for level in np.split(order, bounds):
        share = through[head_f[level]] * w[level] / indeg[head_f[level]]
        flow[level] = share
        np.add.at(through, tail_f[level], share)
    keep = flow > 0
    k_idx, a_idx, flow = k_idx[keep], a_idx[keep], flow[keep]
    cuts = np.searchsorted(k_idx, np.arange(K + 1))
    for k in range(K):
        arcs_out[k] = a_idx[cuts[k]:cuts[k + 1]].astype(np.int32)
        loads_out[k] = flow[cuts[k]:cuts[k + 1]]
    return arcs_out, loads_out, cost


class ColumnGeneration(ApproxRun):
    """Column generation over routing trees (see the module docstring).

    ``seed_lengths`` (one per core arc, then one per endpoint row; or several such rows) are
    lengths to price the first columns at, besides hop counts: a good guess (duals of a
    similar solve) saves rounds.

    Examples
    --------
    A ring of 8 unit links under a permutation (every source's paths are its columns):

    >>> import fabricopt as fo
    >>> fab = fo.ring(8)
    >>> model = fo.build_flow_lp(fab, fo.permutation(fab, seed=1))
    >>> sol = ColumnGeneration(model, 0.01, None).run()
    >>> sol.info["upper"] - sol.info["lower"] <= 0.01 * sol.info["upper"]
    True
    """

    def __init__(self, model: FlowModel, gap: float, time_limit: float | None,
                 progress: Callable[[dict[str, float]], None] | None = None,
                 seed_lengths: np.ndarray | None = None,
                 master_iterations: int | None = None) -> None:
        import highspy

        super().__init__(model, gap, time_limit, progress)
        self.master_iterations = master_iterations
        self.stalled = False  # a master solve used up master_iterations
        self.master_work = 0  # simplex iterations of every master solve
        self.ep_gbps = np.asarray(model.ep_rows_gbps, dtype=float)
        self.E = len(self.ep_cap)
        self.seed_lengths = seed_lengths
        # Columns found so far: commodity, arcs and loads of each tree.
        self.col_k: list[int] = []
        self.col_arcs: list[np.ndarray] = []
        self.col_load: list[np.ndarray] = []
        self.lam = np.zeros(0)
        self.theta = 0.0
        self.iterations = 0
        self.h = self._master(highspy)

    # -- the master LP ---------------------------------------------------------------------
    def _master(self, highspy):  # type: ignore[no-untyped-def]
        """Rows: capacity of each core arc, each endpoint row, then one row per commodity
        (its trees' weights sum to theta). Column 0 is theta."""
        with _quiet():
            h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("solver", "simplex")
        inf = highspy.kHighsInf
        m, E, K = self.m, self.E, self.K
        lower = np.concatenate([np.full(m + E, -inf), np.zeros(K)])
        upper = np.concatenate([self.g.capacity, self.ep_cap, np.zeros(K)])
        h.addRows(m + E + K, lower, upper, 0, np.array([], dtype=np.int32),
                  np.array([], dtype=np.int32), np.array([]))
        rows = np.concatenate([m + np.arange(E), m + E + np.arange(K)]).astype(np.int32)
        vals = np.concatenate([self.ep_gbps, -np.ones(K)])
        h.addCols(1, np.array([-1.0]), np.array([0.0]), np.array([inf]), len(rows),
                  np.array([0], dtype=np.int32), rows, vals)
        return h

    def _add_columns(self, ks: np.ndarray, arc: list[np.ndarray],
                     load: list[np.ndarray]) -> None:
        """Add the columns of commodities ``ks`` (arcs and loads from the pricing)."""
        import highspy

        starts, index, value = [], [], []
        pos = 0
        for k in ks:
            a, ld = arc[k], load[k]
            self.col_k.append(int(k))
            self.col_arcs.append(a)
            self.col_load.append(ld)
            starts.append(pos)
            index.append(np.concatenate([a, np.array([self.m + self.E + k], dtype=np.int32)]))
            value.append(np.concatenate([ld, [1.0]]))
            pos += len(a) + 1
        n = len(ks)
        if not n:
            return
        self.h.addCols(n, np.zeros(n), np.zeros(n), np.full(n, highspy.kHighsInf), pos,
                       np.array(starts, dtype=np.int32), np.concatenate(index),
                       np.concatenate(value))

    def _solve_master(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Solve the master; returns ``(arc lengths, endpoint-row lengths, commodity duals)``
        or None when HiGHS gives no optimal basis (the time or its iterations ran out inside
        it; the latter sets ``stalled``)."""
        import highspy

        if self.deadline is not None:  # wall clock only when the caller asked for it
            self.h.setOptionValue("time_limit",
                                  max(self.deadline - time.perf_counter(), 1e-3))
        if self.master_iterations is not None:  # counted per solve
            self.h.setOptionValue("simplex_iteration_limit", self.master_iterations)
        self.h.run()
        self.master_work += int(self.h.getInfo().simplex_iteration_count)
        status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            self.stalled = status == highspy.HighsModelStatus.kIterationLimit
            return None
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        self.theta = float(x[0])
        self.lam = np.clip(x[1:], 0.0, None)
        dual = np.asarray(sol.row_dual)
        m, E = self.m, self.E
        # HiGHS's duals are d(objective)/d(row bound) of min -theta: <= 0 on capacity rows.
        return (np.clip(-dual[:m], 0.0, None), np.clip(-dual[m:m + E], 0.0, None),
                dual[m + E:])

    # -- pricing and the bound -------------------------------------------------------------
    def _price(self, core: np.ndarray, ep: np.ndarray, spread: bool = False
               ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
        """Columns at ``core`` lengths (made positive) and the distance bound there: ECMP
        columns with ``spread`` (when small enough), else shortest-path trees."""
        scale = float(core.mean()) if self.m and core.max() > 0 else 1.0
        core = core + HOP_TIE_BREAK * 1e-3 * scale
        if spread and self.K * self.m <= ECMP_COLUMNS_MAX_ENTRIES:
            arc, load, cost = ecmp_columns(self.g, core)
        else:
            tree_arc, tree_load, cost = self.g.trees(core)
            keep = (tree_arc >= 0) & (tree_load > 0)
            arc = [tree_arc[k][keep[k]] for k in range(self.K)]
            load = [tree_load[k][keep[k]] for k in range(self.K)]
        numerator = float(self.g.capacity @ core + self.ep_cap @ ep)
        denominator = float(cost.sum() + self.ep_gbps @ ep)
        upper = numerator / denominator if denominator > 0 else np.inf
        if upper < self.upper:
            self.upper, self.best_lengths = upper, np.concatenate([core, ep])
        return arc, load, cost

    def run(self) -> LPSolution:
        K, m, E = self.K, self.m, self.E
        arc, load, cost = self._price(np.ones(m), np.zeros(E), spread=True)
        if not np.all(np.isfinite(cost)):
            return self.unreachable()
        self._add_columns(np.arange(K), arc, load)
        seeds = () if self.seed_lengths is None else np.atleast_2d(self.seed_lengths)
        for seed in seeds:
            arc, load, _ = self._price(seed[:m], seed[m:])
            self._add_columns(np.arange(K), arc, load)
        status = "time_limit"
        while True:
            duals = self._solve_master()
            if duals is None:
                status = "stalled" if self.stalled else status
                break
            self.iterations += 1
            self.lower = max(self.lower, self.theta)
            core, ep, z = duals
            if self.best_lengths is not None and self.iterations > 1:
                # Wentges smoothing: price between the best lengths so far and the new
                # duals (both scaled to the same capacity-weighted sum), which damps the
                # duals' oscillation; columns still enter by their reduced cost at the duals.
                best = self.best_lengths
                here = np.concatenate([core, ep])
                caps = np.concatenate([self.g.capacity, self.ep_cap])
                here_w, best_w = float(caps @ here), float(caps @ best)
                if here_w > 0 and best_w > 0:
                    mix = SMOOTHING * best / best_w + (1 - SMOOTHING) * here / here_w
                    core, ep = mix[:m], mix[m:]
            arc, load, _ = self._price(core, ep)
            y = duals[0]
            cost = np.array([float(load[k] @ y[arc[k]]) for k in range(K)])
            self.report(self.iterations, columns=len(self.col_k))
            reason = self.stop_reason()
            if reason is not None:
                status = reason
                break
            # Reduced cost of commodity k's new tree: its length minus the commodity's dual.
            tol = PRICE_TOL * max(float(np.abs(z).max()), 1e-300)
            enter = np.flatnonzero(cost - z < -tol)
            if not len(enter) and self.iterations > 1:
                # Nothing enters at the smoothed lengths: price at the duals themselves
                # before concluding that the master is optimal.
                arc, load, cost = self._price(duals[0], duals[1])
                enter = np.flatnonzero(cost - z < -tol)
            if not len(enter) or self.out_of_time():
                status = "optimal" if not len(enter) else status
                break
            self._add_columns(enter, arc, load)
            # The duals of a degenerate master are zero on most arcs, so their trees ignore
            # congestion; trees at a soft maximum of the master's utilisation spread the
            # flow over equally short routes (and their bound may be the better one).
            soft = self._soft_lengths()
            if soft is not None:
                arc, load, cost = self._price(soft[:m], soft[m:], spread=True)
                self._add_columns(np.arange(K), arc, load)
        why = (f"a master solve used up its {self.master_iterations:,} simplex iterations"
               if self.stalled else "")
        sol = self.answer(status, f"column generation over routing trees: "
                          f"{self.iterations} rounds, {len(self.col_k)} columns, "
                          f"{self.master_work:,} simplex iterations", self.flows(),
                          self.iterations, why)
        sol.info["master_iterations"] = self.master_work
        return sol

    def _soft_lengths(self) -> np.ndarray | None:
        """Lengths ``exp(beta * utilisation) / capacity`` of the master's point (core arcs,
        then endpoint rows), sharp enough to tell the saturated arcs apart."""
        if self.theta <= 0:
            return None
        load = np.zeros(self.m)
        for j in np.flatnonzero(self.lam > 0):
            np.add.at(load, self.col_arcs[j], self.lam[j] * self.col_load[j])
        util = np.concatenate([load / self.g.capacity, self.theta * self.ep_gbps / self.ep_cap])
        top = float(util.max())
        beta = SOFT_SHARPNESS * np.log(len(util)) / max(self.gap, 1e-3) / max(top, 1e-300)
        lengths = np.exp(beta * (util - top)) / np.concatenate([self.g.capacity, self.ep_cap])
        return lengths / lengths.max()

    def flows(self) -> np.ndarray:
        """The master's point as the LP's columns: per-commodity arc flows, then theta."""
        K, m = self.K, self.m
        x = np.zeros(K * m + 1)
        flat = x[:-1]
        for j in np.flatnonzero(self.lam > 0):
            np.add.at(flat, self.col_k[j] * m + self.col_arcs[j], self.lam[j] * self.col_load[j])
        x[-1] = self.theta
        return x


def _quiet():  # type: ignore[no-untyped-def]
    return _stdout_silenced()


__all__ = ["ColumnGeneration", "highspy_available"]
