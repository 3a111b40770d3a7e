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

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from .._checks import check_choice, check_int, check_positive, fail
from ..errors import BackendUnavailableError
from .backends import highspy_available
from .formulation import FlowModel
from .lp import LPSolution

#: Relative weight of a uniform length added to every arc when pricing: it breaks ties
#: between equally long routes in favour of fewer hops and keeps zero-dual arcs from being
#: used for free detours. The bound is evaluated at the perturbed lengths, so it stays valid.
HOP_TIE_BREAK = 1e-4

#: Largest node count squared for which arcs are looked up in a dense table.
DENSE_LOOKUP_MAX = 1 << 24

#: Sharpness of the soft maximum relative to the gap still to close.
BETA_SCALE = 0.5

#: While routing on fewest-hop paths, the distance bound at the soft-maximum lengths is
#: evaluated every this many iterations (it costs one more shortest-path search).
RESTRICTED_BOUND_EVERY = 10

#: Routing has stalled when the last ``window`` iterations closed less than ``fraction`` of
#: the gap left: free routing after (10, 0.1), fewest-hop routing after (30, 0.05).
FREE_STALL = (10, 0.1)
FEWEST_HOP_STALL = (30, 0.05)

#: The certified bracket has stalled (status ``"stalled"``) when, after at least
#: ``STALL_MIN_ROUNDS`` rounds, its relative gap is still above ``STALL_RATIO`` times what it
#: was at half as many rounds. Frank-Wolfe closes its gap like 1/rounds (a ratio near 0.5)
#: while it makes progress, and a 12-switch jellyfish all-to-all, slow with plateaus, still
#: keeps it under 0.92; a gap the rounds no longer shrink (a fat tree missing two links at a
#: gap of 1e-5: the upper bound stands still) keeps it at 1. The first rounds are exempt:
#: on a fat_tree(16) missing 5% of its switch links, routing on fewest-hop paths holds the gap
#: near 37% from round 30 to 80 before it falls to 1% by round 111. Counted in rounds, not
#: seconds, so the same run stops at the same round on a busy machine.
STALL_MIN_ROUNDS = 200
STALL_RATIO = 0.99
#: Rounds the approximate method runs when the caller sets neither ``time_limit`` nor
#: ``max_rounds``: a safety net under the stall test, reported as status
#: ``"iteration_limit"`` with the bracket proven so far. Counted in rounds, not seconds, so
#: the answer is the same on a busy machine (a wall clock applies only when the caller asks
#: for one). Frank-Wolfe on a 40-switch jellyfish all-to-all runs about 340 rounds a second
#: on 2 loaded cores (84,458 in 249 s at a gap of 0.1%): 10,000 rounds is some 30 s there.
DEFAULT_MAX_ROUNDS = 10_000
#: The net shrinks with the model: at most this many nonzeros times rounds, and never fewer
#: than ``DEFAULT_MIN_ROUNDS``. A round costs about its model's nonzeros; on a 2,048-GPU rail
#: cluster with 5 % of its links failed (140 million nonzeros) one takes 20 to 30 s, so
#: 10,000 of them would run for days, and 14 take a few minutes. The jellyfish above (30,560
#: nonzeros) keeps its 10,000.
DEFAULT_WORK = 2_000_000_000
DEFAULT_MIN_ROUNDS = 10


def default_max_rounds(nonzeros: int) -> int:
    """The approximate method's rounds when the caller gives neither a time nor a work
    limit, for a model of ``nonzeros``: ``DEFAULT_WORK / nonzeros``, between
    ``DEFAULT_MIN_ROUNDS`` and ``DEFAULT_MAX_ROUNDS``.

    >>> default_max_rounds(30_560), default_max_rounds(140_000_000)
    (10000, 14)
    """
    return int(min(DEFAULT_MAX_ROUNDS, max(DEFAULT_MIN_ROUNDS, DEFAULT_WORK // max(nonzeros, 1))))


@dataclass(frozen=True)
class _CoreGraph:
    """The core graph renumbered to the nodes that matter, with an arc lookup."""

    nodes: np.ndarray         # fabric node index of each local node
    tail: np.ndarray          # local tail of each core arc (position in model.core_arcs)
    head: np.ndarray
    capacity: np.ndarray      # of each core arc
    arc_key: np.ndarray       # sorted tail * n + head
    arc_of_key: np.ndarray    # core-arc position of each sorted key
    sources: np.ndarray       # local node of each commodity's source
    demand: np.ndarray        # K x n: demand received at each local node (Gb/s per theta)
    arc_table: np.ndarray | None  # dense n x n lookup of the same (small graphs only)

    @property
    def n(self) -> int:
        return len(self.nodes)

    @classmethod
    def of(cls, model: FlowModel) -> _CoreGraph:
        ga = model.ga
        core = model.core_arcs
        used = np.unique(np.concatenate([ga.tail[core], ga.head[core], model.sources,
                                         model.agg[1]]))
        local = np.full(ga.n_nodes, -1, dtype=np.int64)
        local[used] = np.arange(len(used))
        n = len(used)
        tail, head = local[ga.tail[core]], local[ga.head[core]]
        key = tail * n + head
        order = np.argsort(key, kind="stable")
        K = model.n_commodities
        src, dst, gbps = model.agg
        k_of = np.searchsorted(model.sources, src)
        demand = np.zeros((K, n))
        np.add.at(demand, (k_of, local[dst]), gbps)
        table = None
        if n * n <= DENSE_LOOKUP_MAX:
            table = np.full(n * n, -1, dtype=np.int32)
            table[key] = np.arange(len(key), dtype=np.int32)
        return cls(used, tail, head, ga.capacity[core], key[order], order,
                   local[model.sources], demand, table)

    def trees(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Shortest-path trees of every commodity at ``lengths`` (> 0 on every core arc).

        Returns ``(arc, load, cost)``: ``arc[k, v]`` the core arc entering node ``v`` in
        commodity ``k``'s tree (-1 for its source and unreached nodes), ``load[k, v]`` the
        demand that arc carries, and ``cost[k] = sum_t D(k, t) dist(k, t)`` (inf if a target
        is unreachable).
        """
        n, K = self.n, len(self.sources)
        M = sp.csr_matrix((lengths, (self.tail, self.head)), shape=(n, n))
        dist, pred = dijkstra(M, directed=True, indices=self.sources, return_predecessors=True)
        with np.errstate(invalid="ignore"):
            cost = np.einsum("kv,kv->k", self.demand, np.where(self.demand > 0, dist, 0.0))
        has = pred >= 0
        rows = np.broadcast_to(np.arange(K)[:, None], (K, n))
        parent = np.where(has, pred, 0)
        # Hop depth of every node in its tree, by repeated relaxation (depth <= n).
        depth = np.zeros((K, n), dtype=np.int64)
        for _ in range(n):
            new = np.where(has, depth[rows, parent] + 1, 0)
            if np.array_equal(new, depth):
                break
            depth = new
        # Subtree demand, children before parents: what crosses the arc into each node.
        sub = self.demand.copy()
        flat_parent = (rows * n + parent).ravel()
        flat_depth = depth.ravel()
        sub_flat = sub.ravel()
        for level in range(int(depth.max()), 0, -1):
            at = np.flatnonzero(flat_depth == level)
            np.add.at(sub_flat, flat_parent[at], sub_flat[at])
        if self.arc_table is not None:
            arc = self.arc_table[parent * n + np.arange(n)[None, :]]
        else:
            key = parent * n + np.arange(n)[None, :]
            pos = np.searchsorted(self.arc_key, key)
            arc = self.arc_of_key[np.minimum(pos, len(self.arc_key) - 1)].astype(np.int32)
        arc = np.where(has, arc, -1)
        return arc, np.where(has, sub, 0.0), cost


def check_gap(func: str, gap: Any) -> float:
    """``gap`` as a float, or an error naming ``func`` unless it is a number in (0, 1)."""
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not (0 < gap < 1):
        raise fail(func, "gap", "a number with 0 < gap < 1", gap)
    return float(gap)


#: Strategies of :func:`solve_approx`.
STRATEGIES = ("auto", "frank_wolfe", "column_generation")

#: ``strategy="auto"`` takes column generation when the traffic has at most this many
#: aggregated pairs per source (sparse traffic: permutations, few pairs), else Frank-Wolfe.
SPARSE_PAIRS_PER_SOURCE = 4


def choose_strategy(model: FlowModel) -> str:
    """The strategy ``"auto"`` takes for ``model``: column generation for sparse traffic
    (see :data:`SPARSE_PAIRS_PER_SOURCE`) or when no endpoint is collapsed, else Frank-Wolfe.

    Column generation needs the ``highspy`` package for its master LP; without it, or for
    dense traffic (all-to-all), Frank-Wolfe.
    """
    sparse = len(model.agg[0]) <= SPARSE_PAIRS_PER_SOURCE * max(model.n_commodities, 1)
    # Endpoints that forward traffic (a GPU with NVLink and a NIC is not collapsed) make
    # many equal-cost routes, which ECMP columns take at once: column generation closed a
    # failed superpod(2) all-to-all exactly in 14 s where Frank-Wolfe took 78 s to reach 1%;
    # on a jellyfish all-to-all (collapsed endpoints) Frank-Wolfe is the faster one.
    forwarding = not np.any(model.collapse.out_arc >= 0)
    return ("column_generation" if (sparse or forwarding) and highspy_available()
            else "frank_wolfe")


def solve_approx(model: FlowModel, *, gap: float = 0.01, time_limit: float | None = None,
                 progress: Callable[[dict[str, float]], None] | None = None,
                 strategy: str = "auto", seed_lengths: np.ndarray | None = None,
                 max_rounds: int | None = None, known_lower: float = 0.0) -> LPSolution:
    """Solve ``model``'s LP to a certified relative ``gap`` (see the module docstring).

    Parameters
    ----------
    model : FlowModel
        From :func:`fabricopt.flow.build_flow_lp`.
    gap : float
        Stop once ``(upper - lower) / upper <= gap`` (0 < gap < 1).
    time_limit : float, optional
        Seconds; checked between iterations (one iteration is one shortest-path search from
        every source). None: no wall clock.
    progress : callable, optional
        Called after every iteration with a dict of ``iteration``, ``lower``, ``upper`` and
        ``seconds``.
    strategy : {"auto", "frank_wolfe", "column_generation"}
        ``"frank_wolfe"``: this module's method. ``"column_generation"``: the LP over
        routing trees and paths of :mod:`fabricopt.flow.colgen` (needs ``highspy``).
        ``"auto"``: :func:`choose_strategy`.
    seed_lengths : ndarray, optional
        Guesses at the optimal lengths, one per capacity row of the LP (core arcs, then
        endpoint rows), or several such rows, such as the lengths of an intact fabric's solve
        restricted to a failed one's arcs (:mod:`fabricopt.flow.warm`): the distance bound is
        evaluated at each first, and column generation prices its first columns there. Any
        nonnegative lengths are sound; good ones save rounds.
    max_rounds : int, optional
        A work limit: stop after this many rounds (status ``"iteration_limit"``), so the
        answer does not depend on how busy the machine is. Default, when ``time_limit`` is
        None too: :func:`default_max_rounds` (10,000 on small models, fewer on large
        ones). With ``strategy="auto"``, a master solve of
        column generation that needs more than
        :data:`~fabricopt.flow.colgen.MASTER_ROUND_ITERATIONS` simplex iterations has
        stalled, and Frank-Wolfe goes on with the rounds left.
    known_lower : float, optional
        A lower bound on theta proven elsewhere (the bounds stage's, in the model's units):
        the rounds stop once it and the upper bound are within ``gap`` (the returned point
        still proves only its own lower bound; the caller keeps the better proof).

    Returns
    -------
    LPSolution
        ``x`` in the LP's column layout (a flow that conserves exactly, within capacities)
        and ``dual_ub`` the lengths of the best distance bound (as minus capacity-row duals).
        Status ``"optimal"`` when the gap closed, ``"time_limit"`` when time ran out first,
        ``"stalled"`` when the bracket stopped closing short of ``gap`` (see
        :data:`STALL_RATIO`); the last two carry the best bracket proven.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=1)
    >>> sol = solve_approx(fo.build_flow_lp(fab, fo.all_to_all(fab)), gap=0.05)
    >>> sol.status, sol.info["upper"] - sol.info["lower"] <= 0.05 * sol.info["upper"]
    ('optimal', True)
    """
    gap = check_gap("solve_approx", gap)
    if time_limit is not None:
        check_positive("solve_approx", "time_limit", time_limit)
    check_choice("solve_approx", "strategy", strategy, STRATEGIES)
    if max_rounds is not None:
        max_rounds = check_int("solve_approx", "max_rounds", max_rounds, minimum=1)
    elif time_limit is None:  # the net is work, not seconds
        max_rounds = default_max_rounds(model.lp_size.get("nonzeros", 0))
    if seed_lengths is not None:
        seed_lengths = np.asarray(seed_lengths, dtype=float)
        rows = len(model.core_arcs) + len(model.ep_rows_arc)
        if seed_lengths.ndim == 1:
            seed_lengths = seed_lengths[None, :]
        if (seed_lengths.ndim != 2 or seed_lengths.shape[1] != rows
                or not np.all(np.isfinite(seed_lengths)) or np.any(seed_lengths < 0)):
            raise fail("solve_approx", "seed_lengths",
                       f"None or rows of {rows} finite lengths >= 0 (core arcs, then "
                       "endpoint rows)", f"an array of shape {seed_lengths.shape}")
    if model.n_commodities == 0:
        return _endpoint_rows_only(model)
    auto = strategy == "auto"
    if auto:
        strategy = choose_strategy(model)
    if strategy == "column_generation":
        # colgen builds on this module's runs: importing it at load time would be a cycle.
        from .colgen import MASTER_ROUND_ITERATIONS, ColumnGeneration

        if not highspy_available():
            raise BackendUnavailableError(
                "solve_approx(): strategy='column_generation' needs the highspy package: "
                "pip install 'fabricopt[highspy]'")
        start = time.perf_counter()
        run = ColumnGeneration(model, gap, time_limit, progress, seed_lengths=seed_lengths,
                               master_iterations=MASTER_ROUND_ITERATIONS if auto else None)
        run.max_rounds, run.known_lower = max_rounds, known_lower
        sol = run.run()
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if not run.stalled or (left is not None and left <= 0):
            return sol
        # The master LP stalled: Frank-Wolfe goes on with the time left, and the better
        # proof of each side is kept.
        second = _FrankWolfe(model, gap, left, progress, seed_lengths)
        second.known_lower = known_lower
        if max_rounds is not None:
            second.max_rounds = max(1, max_rounds - run.iterations)
        return _better_of(sol, second.run(), gap)
    fw = _FrankWolfe(model, gap, time_limit, progress, seed_lengths)
    fw.max_rounds, fw.known_lower = max_rounds, known_lower
    return fw.run()


def _endpoint_rows_only(model: FlowModel) -> LPSolution:
    """The answer when no pair crosses the core (every pair under one switch, such as two
    GPUs of one leaf): only the endpoint rows bind, ``theta = min capacity / demand``, and
    the length 1 on that row alone proves it from above (its distance bound is the same
    ratio), so the bracket is closed without a round."""
    start = time.perf_counter()
    # Every pair has both ends collapsed onto one switch (distinct endpoints that are not
    # collapsed enter the core apart), so each endpoint with demand has its row.
    cap, gbps = model.ga.capacity[model.ep_rows_arc], model.ep_rows_gbps
    m = len(model.core_arcs)
    lengths = np.zeros(m + len(cap))
    ratio = cap / gbps
    row = int(np.argmin(ratio))
    theta = float(ratio[row])
    lengths[m + row] = 1.0
    return LPSolution("optimal", "no pair leaves its switch: the endpoint links alone bind",
                      np.array([theta]), -theta, -lengths, None, time.perf_counter() - start,
                      info={"lower": theta, "upper": theta, "iterations": 0})


def _better_of(first: LPSolution, second: LPSolution, gap: float) -> LPSolution:
    """One answer from two runs on the same model: the flow of the better lower bound and
    the lengths of the better upper bound (each is a proof on its own)."""
    lo = max((first, second), key=lambda s: s.info["lower"])
    up = min((first, second), key=lambda s: s.info["upper"])
    lower, upper = lo.info["lower"], up.info["upper"]
    status = ("optimal" if upper - lower <= gap * upper else
              second.status if second.status in ("stalled", "iteration_limit")
              else "time_limit")
    message = (f"column generation stalled in its master LP, then {second.message}; "
               f"best of both: certified gap {(upper - lower) / upper:.3%}")
    return LPSolution(status, message, lo.x, lo.objective, up.dual_ub, None,
                      first.seconds + second.seconds,
                      info={"lower": lower, "upper": upper,
                            "iterations": first.info["iterations"] + second.info["iterations"]})


class ApproxRun:
    """What every approximate method keeps: the model, its core graph, the clock and the best
    bracket proven so far, reported to ``progress`` after each round."""

    def __init__(self, model: FlowModel, gap: float, time_limit: float | None,
                 progress: Callable[[dict[str, float]], None] | None) -> None:
        self.start = time.perf_counter()
        self.deadline = None if time_limit is None else self.start + time_limit
        self.model, self.gap, self.progress = model, gap, progress
        self.g = _CoreGraph.of(model)
        self.m, self.K = len(model.core_arcs), model.n_commodities
        self.ep_cap = model.ga.capacity[model.ep_rows_arc]
        self.lower, self.upper = 0.0, np.inf
        self.best_lengths: np.ndarray | None = None
        self.gaps: list[float] = []  # the relative gap after each round
        self.max_rounds: int | None = None  # a work limit: the same stop on any machine
        #: A lower bound proven elsewhere (the bounds stage's), counted in the stopping test
        #: only: the rounds end once it and this run's upper bound meet the gap.
        self.known_lower = 0.0

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def out_of_work(self) -> bool:
        """Whether the rounds allowed (``max_rounds``) are used up."""
        return self.max_rounds is not None and len(self.gaps) >= self.max_rounds

    def stop_reason(self) -> str | None:
        """The status to stop with after this round, besides the clock: ``"optimal"`` when
        the gap closed, ``"stalled"``, ``"iteration_limit"``; None to go on."""
        if self.upper - max(self.lower, self.known_lower) <= self.gap * self.upper:
            return "optimal"
        if self.bracket_stalled():
            return "stalled"
        return "iteration_limit" if self.out_of_work() else None

    def bracket_stalled(self) -> bool:
        """Whether the bracket has stopped closing (see :data:`STALL_RATIO`)."""
        rounds = len(self.gaps)
        if rounds < STALL_MIN_ROUNDS:
            return False
        return self.gaps[-1] > STALL_RATIO * self.gaps[rounds // 2 - 1]

    def answer(self, status: str, what: str, x: np.ndarray, iterations: int,
               why: str = "") -> LPSolution:
        """The run's answer: flow ``x`` (the LP's column layout) proves the lower bound, the
        best lengths the upper one; ``what`` says how it was found and ``why`` (when given)
        why it stopped."""
        now = (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0
        text = f"{what}, certified gap {now:.3%} (asked {self.gap:.3%})"
        if why:
            text = f"{why}; {text}"
        elif status == "time_limit":
            text = "time limit reached; " + text
        elif status == "iteration_limit":
            text = f"work limit of {self.max_rounds} rounds reached; " + text
        elif status == "stalled":
            text = (f"the bracket stopped closing (gap at round {iterations} above "
                    f"{STALL_RATIO:g} times its gap at round {iterations // 2}); " + text)
        lengths = self.best_lengths
        return LPSolution(status, text, x, -self.lower, None if lengths is None else -lengths,
                          None, time.perf_counter() - self.start,
                          info={"lower": self.lower, "upper": self.upper,
                                "iterations": iterations})

    def unreachable(self) -> LPSolution:
        """Some target cannot be reached at all: theta = 0, which the hop lengths prove."""
        lengths = np.concatenate([np.ones(self.m), np.zeros(len(self.ep_cap))])
        return LPSolution("optimal", "a demand pair is disconnected: theta = 0",
                          np.zeros(self.K * self.m + 1), 0.0, -lengths, None,
                          time.perf_counter() - self.start,
                          info={"lower": 0.0, "upper": 0.0, "iterations": 0})

    def report(self, iteration: int, **more: float) -> None:
        """Record the bracket after round ``iteration`` and tell ``progress``."""
        self.gaps.append((self.upper - self.lower) / self.upper if self.upper > 0 else 0.0)
        if self.progress is not None:
            self.progress({"iteration": iteration, "lower": self.lower, "upper": self.upper,
                           "seconds": time.perf_counter() - self.start, **more})


class _FrankWolfe(ApproxRun):
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
