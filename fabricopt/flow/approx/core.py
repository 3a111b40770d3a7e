"""What every approximate run shares: the core graph it prices routes on, the run's bracket,
stall test and stop rules, the default round net, and the choice of strategy.

The two strategies (:mod:`~fabricopt.flow.approx.frank_wolfe`,
:mod:`~fabricopt.flow.approx.colgen`) build on this module;
:func:`~fabricopt.flow.approx.solve_approx` chooses between them, so neither imports the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..._checks import fail
from ..backends import highspy_available
from ..formulation import FlowModel
from ..lp import LPSolution

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
class CoreGraph:
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
    def of(cls, model: FlowModel) -> CoreGraph:
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


#: Strategies of :func:`~fabricopt.flow.approx.solve_approx`.
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


class ApproxRun:
    """What every approximate method keeps: the model, its core graph, the clock and the best
    bracket proven so far, reported to ``progress`` after each round."""

    def __init__(self, model: FlowModel, gap: float, time_limit: float | None,
                 progress: Callable[[dict[str, float]], None] | None) -> None:
        self.start = time.perf_counter()
        self.deadline = None if time_limit is None else self.start + time_limit
        self.model, self.gap, self.progress = model, gap, progress
        self.g = CoreGraph.of(model)
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


