"""The design search behind :func:`~fabricopt.optimize`, in named steps.

:class:`DesignSearch` runs ``enumerate`` (candidates, their plan bounds, pruning by bound),
``evaluate`` (topologies cheapest bound first, priced before solved, each judged against the
constraints as it finishes so it prunes the ones not yet sent), and ``result`` (the front, the
best design, the nearest misses). Every figure a row holds comes from the metric registry
(:mod:`fabricopt.study.metrics`) under the same name :func:`~fabricopt.compare` gives it, and
every floor constraint reads a certified lower end. The rules are derived in
:mod:`fabricopt.study.optimize`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._gc import frozen_gc, paused_gc
from .._unchanged import unchanged
from ..failures.sweep import fail_random
from .candidates import Candidate, Sketch, candidates, sketch
from .execution import Progress, limit_threads, run, worker_count
from .metrics import CONSTRAINTS, MetricContext, compute_metrics, delivered_cost, ecmp_bracket
from .pareto import REL_TOL, pareto_front

__all__ = ["ASYMMETRIC_GPUS_LIMIT", "FAILURE_SEEDS", "DesignSearch", "GroupTask",
           "after_failure", "evaluate_group", "shortfalls"]

#: Relative tolerance of every comparison of figures in the search (floors, ceilings, ties,
#: the best pick): the front's (:data:`~fabricopt.study.pareto.REL_TOL`), so a faster or
#: different solve path that changes a throughput's last bits changes no decision.
TOL = REL_TOL
#: Largest GPU count at which a candidate whose plan has no symmetry (unequal leaves or
#: bundles) is solved: its flow has a commodity per source and every GPU pair's demand (268
#: million pairs at 16,384 GPUs, more memory than a workstation has). Up to 1,024 GPUs the
#: engine closes such candidates in seconds (the found symmetry and the bounds stage: the
#: shipped 1,024-GPU search decides its rail 3:1 and 4:1 designs in 6-9 s each); at 16,384 a
#: symmetric solve of a 3-tier Clos ran past 400 s at 7.8 GB. Above the limit the candidate is
#: decided by its ECMP bracket (:func:`~fabricopt.study.metrics.ecmp_bracket`); where that
#: bracket holds the target, by the flow engine within :data:`CLOSING_SECONDS` (or the
#: search's time limit), and reported unsolved only if the engine leaves it open too.
ASYMMETRIC_GPUS_LIMIT = 1024
#: Seconds the flow solve of an undecided candidate (its ECMP bracket holds the target) may
#: take when the search has no time limit: the engine returns its certified bracket at the
#: limit, so the search never waits without end (a 2,048-GPU rail 2:1 cluster closes in
#: about 7 s).
CLOSING_SECONDS = 60.0
#: Seeds of the random link failures a candidate is tried under; the row keeps the worst.
FAILURE_SEEDS = (1, 2, 3)
#: The constraints that are not a column of the registry.
FAILURE_KEYS = ("all_to_all_after_failure_gbps", "failure_fraction")

Entry = tuple[Sketch, Candidate, dict[str, Any]]


@dataclass(frozen=True)
class GroupTask:
    """One topology to build and evaluate under each candidate's optics policy (picklable)."""

    candidates: tuple[Candidate, ...]
    constraints: tuple[tuple[str, float], ...]
    time_limit: float | None = None
    cap_threads: bool = False
    ecmp_bound: bool = False
    capex_ceiling: float | None = None
    job: Any = None
    serving: Any = None
    #: ``"both"`` (price, then solve unless priced out), ``"price"`` (the rows' cost
    #: columns only) or ``"solve"`` (the shared metrics only, in a one-row list).
    stage: str = "both"


def evaluate_group(task: GroupTask) -> list[dict[str, Any]]:
    """Build the task's topology and evaluate it: one row per candidate (runs in a worker).

    The fabric is priced first under every candidate's policy: when every capex exceeds
    ``capex_ceiling`` (a feasible design's), nothing is solved and the rows carry
    ``priced_out``. Otherwise the all-to-all (or its ECMP bracket, ``ecmp_bound``) and the
    metric of every other constraint are computed once and shared. ``task.stage`` asks for
    the pricing alone or the solve alone (a search on several workers prices every topology
    side by side before it knows which it must solve).
    """
    guard = limit_threads(1) if task.cap_threads else contextlib.nullcontext()
    with guard, contextlib.ExitStack() as held:
        start = time.perf_counter()
        with paused_gc():
            fab = task.candidates[0].build()
            # Frozen before the collector wakes, as a compare row is (its passes would walk
            # the graph just built); nothing edits the fabric from here on, so its arrays,
            # shape and pricing reading are read once for every policy and metric below.
            held.enter_context(frozen_gc())
        held.enter_context(unchanged(fab))
        # Priced first: pricing takes a second where a flow solve of 16,384 GPUs can take a
        # minute, and a topology dearer than a feasible design under every policy cannot win.
        rows = [compute_metrics(fab, ["cost"], MetricContext(policy=c.policy))
                for c in task.candidates] if task.stage != "solve" else [{}]
        if task.stage == "price":
            for row in rows:
                row["seconds"] = (time.perf_counter() - start) / len(rows)
            return rows
        shared: dict[str, Any]
        if (task.stage == "both" and task.capex_ceiling is not None
                and min(r["capex_usd"] for r in rows) > task.capex_ceiling * (1 + TOL)):
            shared = {"priced_out": True}
        else:
            ctx = MetricContext(time_limit=task.time_limit, job=task.job, serving=task.serving,
                                all_to_all_method="ecmp bracket" if task.ecmp_bound else "flow")
            names = ["all_to_all"] + sorted({CONSTRAINTS[k][0] for k, _ in task.constraints
                                             if k in CONSTRAINTS} - {"all_to_all", "cost"})
            if task.job is not None and "training" not in names:
                names.append("training")  # a job given is always run: its row shows it
            shared = compute_metrics(fab, names, ctx)
            shared["oversubscription_built"] = fab.params.get("oversubscription_built")
        seconds = time.perf_counter() - start
        if task.stage == "solve":
            return [{**shared, "seconds": seconds}]
        for row in rows:
            row.update(shared)
            if "priced_out" not in row:
                delivered_cost(row)
            row["seconds"] = seconds / len(rows)
        return rows


def _cheapest(rows: list[dict[str, Any]]) -> float:
    return min(r["capex_usd"] for r in rows)


def _solved(rows: list[dict[str, Any]], shared: dict[str, Any]) -> list[dict[str, Any]]:
    """A group's priced rows completed by its solve, as :func:`evaluate_group` completes
    them in one task (the seconds of both tasks shared out)."""
    seconds = sum(r.get("seconds", 0.0) for r in rows) + shared.get("seconds", 0.0)
    out = []
    for row in rows:
        row = {k: v for k, v in row.items() if k != "seconds"}
        row.update({k: v for k, v in shared.items() if k != "seconds"})
        delivered_cost(row)
        row["seconds"] = seconds / len(rows)
        out.append(row)
    return out


def closed_all_to_all(c: Candidate, time_limit: float | None = None,
                      cap_threads: bool = False) -> dict[str, Any]:
    """The all-to-all columns of ``c`` by the flow engine (bounds, symmetry, LP as it
    plans), within ``time_limit`` seconds: what closes a candidate its ECMP bracket left
    undecided."""
    guard = limit_threads(1) if cap_threads else contextlib.nullcontext()
    with guard:
        fab = c.build()
        return compute_metrics(fab, ["all_to_all"], MetricContext(time_limit=time_limit))


def after_failure(c: Candidate, fraction: float, time_limit: float | None = None,
                  cap_threads: bool = False, ecmp_bound: bool = False) -> float:
    """Certified all-to-all Gb/s per GPU of ``c`` after ``fraction`` of its links fail: the
    least over :data:`FAILURE_SEEDS` random draws, each the certified lower end of its solve
    (``ecmp_bound``: of ECMP routing on the failed fabric, no LP)."""
    guard = limit_threads(1) if cap_threads else contextlib.nullcontext()
    with guard:
        fab = c.build()
        worst = math.inf
        for seed in FAILURE_SEEDS:
            bad = fail_random(fab, fraction, seed=seed, kind="links")
            if ecmp_bound:
                worst = min(worst, ecmp_bracket(bad)[0])
                continue
            row = compute_metrics(bad, ["all_to_all"], MetricContext(time_limit=time_limit))
            worst = min(worst, row["all_to_all_gbps_per_gpu"])
        return worst


def shortfalls(row: Mapping[str, Any], constraints: Mapping[str, float]) -> dict[str, float]:
    """How far a row misses each constraint (relative; only the ones it misses).

    >>> shortfalls({"capex_usd": 120.0, "all_to_all_gbps_per_gpu": 300.0},
    ...            {"capex_usd": 100.0, "all_to_all_gbps_per_gpu": 200.0})
    {'capex_usd': 0.2}
    """
    out = {}
    for key, target in constraints.items():
        if key == "failure_fraction" or row.get(key) is None:
            continue
        value = float(row[key])
        at_most = key in CONSTRAINTS and CONSTRAINTS[key][2] == "at most"
        if at_most and value > target * (1 + TOL):
            out[key] = (value - target) / target
        elif not at_most and value < target * (1 - TOL):
            out[key] = (target - value) / target
    return out


def _by_total_shortfall(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows by how far they miss in all (the sum of their relative shortfalls), nearest
    first. Totals within :data:`TOL` of the least total of their group count as equal and
    keep the rows' order; groups are formed from the least total up, so the order is one
    key's, well defined (a comparator "equal within TOL" is not transitive: a chain of totals
    each within TOL of the next would leave the sort's order to chance).

    >>> rows = [{"n": n, "shortfall": {"gbps": s}} for n, s in
    ...         (("c", 0.5 + 1.8e-9), ("b", 0.5 + 0.9e-9), ("d", 0.2), ("a", 0.5))]
    >>> [r["n"] for r in _by_total_shortfall(rows)]   # b and a level: their order kept
    ['d', 'b', 'a', 'c']
    """
    totals = [sum(r["shortfall"].values()) for r in rows]
    key: dict[int, tuple[int, int]] = {}
    group, least = -1, math.nan
    for i in sorted(range(len(rows)), key=totals.__getitem__):
        if not totals[i] - least <= TOL * max(abs(least), abs(totals[i]), 1.0):
            group, least = group + 1, totals[i]  # (nan at first: a group of its own)
        key[i] = (group, i)
    return [rows[i] for i in sorted(range(len(rows)), key=key.__getitem__)]


def _decided(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row as the constraints see it: a bracketed all-to-all that misses its target
    misses by at least its upper end (decided rows only: both ends meet it or both miss)."""
    if row.get("all_to_all_method") != "ecmp bound":
        return row
    return {**row, "all_to_all_gbps_per_gpu": row["all_to_all_gbps_per_gpu_upper"]}


class DesignSearch:
    """One run of :func:`~fabricopt.optimize`: its steps are :meth:`enumerate`,
    :meth:`evaluate` and :meth:`result` (see the module)."""

    def __init__(self, gpus: int, space: Mapping[str, Any], constraints: dict[str, float],
                 objective: str, executor: cf.Executor | None,
                 progress: bool | Callable[[int, int], Any] | None,
                 time_limit: float | None, prune: bool, full_front: bool,
                 job: Any = None, serving: Any = None) -> None:
        self.gpus, self.space, self.constraints = gpus, space, constraints
        self.objective, self.executor, self.progress = objective, executor, progress
        self.time_limit, self.prune, self.full_front = time_limit, prune, full_front
        self.job, self.serving = job, serving
        self.start = time.perf_counter()
        self.candidates: list[Candidate] = []
        self.rows: list[dict[str, Any]] = []
        self.groups: dict[str, list[Entry]] = {}
        self.bracketed: set[str] = set()
        self.feasible: list[dict[str, Any]] = []
        self.evaluated: list[dict[str, Any]] = []
        self.tried: dict[str, float] = {}
        self.closed: dict[str, dict[str, Any]] = {}
        self.topology_names: dict[str, str] = {}
        self.others = {k: v for k, v in constraints.items() if k not in FAILURE_KEYS}
        self.order: dict[str, int] = {}

    def _pick(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The better design of ``rows``: the least objective, then the highest all-to-all,
        each within :data:`TOL` of the best (a solver's last bits are no difference), then
        the space's own order. Ties are real (two oversubscriptions that round to the same
        uplink count build the same fabric), and breaking them by the last bits of a solve
        or by the order in which results came back would make the answer depend on the
        solve path or the executor."""
        pool = rows
        for figure in (lambda r: r[self.objective], lambda r: -r["all_to_all_gbps_per_gpu"]):
            least = min(figure(r) for r in pool)
            pool = [r for r in pool if figure(r) <= least + TOL * abs(least)]
        return min(pool, key=lambda r: self.order[r["name"]])

    def _best(self) -> dict[str, Any] | None:
        return self._pick(self.feasible) if self.feasible else None

    # -- step 1: candidates and their bounds ----------------------------------------------
    def enumerate(self) -> None:
        """Every candidate's row with its plan bounds; the ones that can still win grouped by
        topology (candidates differing only in optics policy share one build and solve)."""
        self.candidates = candidates(self.gpus, self.space)
        self.order = {c.name: i for i, c in enumerate(self.candidates)}
        seen: dict[str, str] = {}
        shared: dict[Any, Any] = {}  # the catalog and scale-up domains, read once
        for c in self.candidates:
            sk = sketch(c, self.gpus, shared)
            row = {"name": c.name, "family": c.family, "outcome": "pruned", "reason": sk.reason,
                   "capex_usd_bound": sk.capex_usd_bound,
                   "capex_lower_usd": sk.capex_usd_bound,  # its name of a release ago
                   "all_to_all_gbps_per_gpu_bound": sk.a2a_upper_gbps}
            self.rows.append(row)
            if not sk.ok:
                row["reason"] = "cannot be built: " + sk.reason
                continue
            # One fabric under several names (tiers None resolving to the tiers given, a
            # SuperPOD's tiers, which it does not take): evaluated once.
            topology = repr((c.family, sorted((k, repr(v)) for k, v in c.kwargs.items()
                                              if k != "tiers"), sk.tiers))
            same = seen.setdefault(repr((topology, repr(c.policy))), c.name)
            if same != c.name:
                row["reason"] = f"the same design as {same}"
                continue
            # What the bounds prove the candidate misses, at least.
            row["shortfall"] = shortfalls({"all_to_all_gbps_per_gpu": sk.a2a_upper_gbps,
                                           "capex_usd": sk.capex_usd_bound}, self.constraints)
            why = self._pruned_by_bounds(sk)
            if why:
                row["reason"] = why
                continue
            # No symmetry in the plan and too many GPUs for the flow LP: decided by the
            # certified ECMP bracket instead.
            if not sk.symmetric and self.gpus > ASYMMETRIC_GPUS_LIMIT:
                self.bracketed.add(topology)
            self.groups.setdefault(topology, []).append((sk, c, row))

    def _pruned_by_bounds(self, sk: Sketch) -> str:
        """Why a candidate's own bounds keep it off what the search returns ("" if they do
        not). The front stops at the capex budget. A throughput bound below the target
        prunes only a search for the best: with ``full_front`` a design cheaper and slower
        than the best is on the front (a 3:1 Clos below the target beside the 2:1 that
        meets it), so it is evaluated; without, it cannot be the best and costs a solve
        (most of a 16,384-GPU space lies below a 150 Gb/s target)."""
        if not self.prune:
            return ""
        target = self.constraints.get("all_to_all_gbps_per_gpu")
        if (not self.full_front and target is not None
                and sk.a2a_upper_gbps < target * (1 - TOL)):
            return f"all-to-all bound {sk.a2a_upper_gbps:,.1f} < {target:g} Gb/s per GPU"
        budget = self.constraints.get("capex_usd")
        if budget is not None and sk.capex_usd_bound > budget * (1 + TOL):
            return f"capex bound {sk.capex_usd_bound:,.0f} > {budget:,.0f} USD"
        return ""

    # -- step 2: evaluation, pruning as results come in -----------------------------------
    def evaluate(self) -> None:
        """Evaluate the groups cheapest bound first (so the first feasible designs prune the
        most), each priced, then solved unless priced out; with an executor, pricing and
        solving are tasks of their own, one per worker in flight, each result pruning what
        is not yet sent (:meth:`_evaluate_split`)."""
        order = sorted(self.groups.items(),
                       key=lambda g: min(t[0].capex_usd_bound for t in g[1]))
        self.shown = Progress(self.progress, "optimize", total=sum(len(g) for _, g in order),
                              unit="candidate")
        kept: dict[int, tuple[str, list[Entry]]] = {}

        def admit(item: tuple[str, list[Entry]]) -> GroupTask | None:
            topology, group = item
            keep = self._needed(group)
            if not keep:
                return None
            task = self._task(topology, keep, "both")
            kept[id(task)] = (topology, keep)
            return task

        def finish(task: GroupTask, results: list[dict[str, Any]]) -> None:
            topology, keep = kept.pop(id(task))
            self._judge(topology, keep, results)

        try:
            if self.executor is not None:
                self._evaluate_split(order)
            else:  # Stages are shown for groups evaluated here, one after another.
                run(order, self.shown.watched(evaluate_group), finish, admit=admit)
        finally:
            self.shown.close()

    def _task(self, topology: str, keep: list[Entry], stage: str) -> GroupTask:
        return GroupTask(tuple(c for _, c, _ in keep), tuple(self.constraints.items()),
                         self.time_limit, self.executor is not None, topology in self.bracketed,
                         self._ceiling(), self.job, self.serving, stage)

    def _evaluate_split(self, order: list[tuple[str, list[Entry]]]) -> None:
        """:meth:`evaluate` on workers, pricing and solving as tasks of their own.

        The topologies are decided in the order one process decides them, each against the
        feasible designs of those before it, so the rows are the rows one process gives.
        The first undecided topology's own work goes first: priced and solved in one task
        (one build; the ceiling it is priced against is final, since every topology before
        it is decided), or its solve when a free worker priced it already. Free workers
        work ahead: first the solve of a priced topology that no undecided one before it can
        price out (each of those costs more under every policy), then the pricing of the
        next topologies their bounds leave (a second each, and nearly always needed: in
        bound order, the largest first once a feasible design is known, the one right after
        the first undecided last, as it is usually priced and solved in one task), and
        only when nothing is left to price the other solves the ceiling leaves, cheapest
        first (seconds to minutes each, and needless once a design before it proves feasible
        and cheaper). A
        task a decision has made needless is not waited for (its result is dropped)."""
        assert self.executor is not None
        window = worker_count(self.executor)
        price: dict[int, list[dict[str, Any]]] = {}  # by position in order: priced rows
        solve: dict[int, dict[str, Any]] = {}        # ... solved metrics
        both: dict[int, tuple[list[str], list[dict[str, Any]]]] = {}  # ... or whole rows
        pending: dict[cf.Future, tuple[int, str, list[str]]] = {}
        flying: set[tuple[int, str]] = set()
        at = 0  # the first topology not yet decided

        def alive(i: int) -> list[Entry]:
            return [e for e in order[i][1] if not self.prune or not self._cannot_win(e[0])]

        def wanted(i: int, stage: str) -> bool:
            if i < at or not alive(i):
                return False
            ceiling = self._ceiling()
            return stage != "solve" or i not in price or ceiling is None or \
                _cheapest(price[i]) <= ceiling * (1 + TOL)

        def certain(i: int) -> bool:
            # Solved whatever the topologies before it turn out to be: no ceiling applies,
            # or every undecided one before it costs more under each of its policies.
            if not self.prune or self.full_front or self.objective != "capex_usd":
                return True
            return all(j in price and _cheapest(price[j]) > _cheapest(price[i]) * (1 + TOL)
                       for j in range(at, i) if alive(j))

        def next_job() -> tuple[int, str] | None:
            if at in price:
                first = [(at, "solve")]
            else:  # priced here unless a worker is pricing it already
                first = [] if (at, "price") in flying else [(at, "both")]
            solves = [i for i in range(at, len(order)) if i in price and i not in solve]
            prices = [i for i in range(at + 1, len(order)) if i not in price]
            if self._ceiling() is not None:
                # A feasible design is known, so the pricings its bound leaves are nearly
                # all needed: the largest first, so that the last tasks are short ones and
                # the workers finish together.
                prices.sort(key=lambda i: -max(sk.switches for sk, _, _ in order[i][1]))
            # The next topology is priced ahead last: left alone, it is priced and solved
            # in one task (one build) once it is the first undecided.
            prices.sort(key=lambda i: i == at + 1)
            # A solve ahead is needless once a cheaper design before it proves feasible:
            # the cheapest first are the likeliest to be needed.
            ahead = sorted(solves, key=lambda i: _cheapest(price[i]))
            jobs = first + [(i, "solve") for i in solves if certain(i)] + \
                [(i, "price") for i in prices] + [(i, "solve") for i in ahead]
            return next((j for j in jobs if j not in flying and wanted(*j)), None)

        try:
            while at < len(order):
                at = self._decide(order, at, price, solve, both)
                while len(pending) < window and at < len(order) and (job := next_job()):
                    i, stage = job
                    # The first undecided topology's task carries what one process sends:
                    # the candidates that can still win.
                    group = self._needed(order[i][1]) if stage == "both" else order[i][1]
                    task = self._task(order[i][0], group, stage)
                    names = [c.name for _, c, _ in group]
                    pending[self.executor.submit(evaluate_group, task)] = (i, stage, names)
                    flying.add(job)
                for future in [f for f, (i, stage, _) in pending.items()
                               if not wanted(i, stage)]:
                    future.cancel()  # needless now: not waited for
                    flying.discard(pending.pop(future)[:2])
                if not pending:
                    continue
                done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i, stage, names = pending.pop(future)
                    flying.discard((i, stage))
                    if stage == "price":
                        price[i] = future.result()
                    elif stage == "solve":
                        solve[i] = future.result()[0]
                    else:
                        both[i] = (names, future.result())
        finally:
            for future in pending:
                future.cancel()

    def _decide(self, order: list[tuple[str, list[Entry]]], at: int,
                price: dict[int, list[dict[str, Any]]], solve: dict[int, dict[str, Any]],
                both: dict[int, tuple[list[str], list[dict[str, Any]]]]) -> int:
        """Decide the topologies from position ``at`` on, in order, as far as their priced
        rows and solves allow (one process's rules: pruned by the bound, priced out above
        the ceiling, else judged on its solve); the first position still waiting."""
        while at < len(order):
            topology, group = order[at]
            keep = self._needed(group)
            if at in both:  # priced and solved in one task, as one process does
                names, rows = both[at]
                # Sent when every topology before it was decided: the same candidates.
                if names != [c.name for _, c, _ in keep]:
                    raise RuntimeError(f"optimize: a task priced {names} where the search "
                                       f"keeps {[c.name for _, c, _ in keep]}")
                self._judge(topology, keep, rows)
                at += 1
                continue
            if keep and at not in price:
                return at
            kept = {id(row) for _, _, row in keep}
            rows = [r for (_, _, row), r in zip(group, price.get(at, []), strict=False)
                    if id(row) in kept]
            ceiling = self._ceiling()
            if keep and ceiling is not None and _cheapest(rows) > ceiling * (1 + TOL):
                self._judge(topology, keep, [{**r, "priced_out": True} for r in rows])
            elif keep and at not in solve:
                return at
            elif keep:
                self._judge(topology, keep, _solved(rows, solve[at]))
            at += 1
        return at

    def _needed(self, group: list[Entry]) -> list[Entry]:
        """The group's candidates that could still win, the others marked pruned."""
        keep = []
        for sk, c, row in group:
            why = self._cannot_win(sk) if self.prune else ""
            if why:
                row["reason"] = why
            else:
                keep.append((sk, c, row))
        return keep

    def _cannot_win(self, sk: Sketch) -> str:
        """Why a candidate with these bounds can be neither the best nor on the front ("" if
        it could be). Only designs proven to meet every constraint count as feasible."""
        if self.objective != "capex_usd":
            return ""  # power is not bounded before a build: any candidate could be the best
        cheaper = [f for f in self.feasible if f["capex_usd"] <= sk.capex_usd_bound * (1 + TOL)]
        if not cheaper:
            return ""
        cheapest = min(cheaper, key=lambda f: f["capex_usd"])
        if not self.full_front and cheapest["capex_usd"] < sk.capex_usd_bound * (1 - TOL):
            # The front stops at the best design, which costs no more than this feasible one.
            return (f"costs more than {cheapest['name']} (capex bound "
                    f"{sk.capex_usd_bound:,.0f} > {cheapest['capex_usd']:,.0f} USD)")
        for e in self.evaluated:  # off the front too: a design as cheap delivers as much
            if (e["capex_usd"] <= sk.capex_usd_bound * (1 + TOL)
                    and e["all_to_all_gbps_per_gpu"] >= sk.a2a_upper_gbps * (1 - TOL)):
                return f"dominated by {e['name']}"
        return ""

    def _ceiling(self) -> float | None:
        """The capex above which a topology is priced but not solved: the cheapest feasible
        design's, when nothing dearer can be the best or on the reported front."""
        if (not self.prune or self.full_front or self.objective != "capex_usd"
                or not self.feasible):
            return None
        return min(f["capex_usd"] for f in self.feasible)

    def _judge(self, topology: str, group: list[Entry], results: list[dict[str, Any]]) -> None:
        """Record a finished group: priced out, unsolved, or evaluated against the
        constraints (the failure trial last, only where it could decide the best)."""
        for (sk, c, row), res in zip(group, results, strict=True):
            self.shown.advance(row["name"])
            if res.pop("priced_out", False):
                cheapest = min(self.feasible, key=lambda f: f["capex_usd"])
                row.update(res)
                label = str(res.get("pricing") or "").split(":")[0]
                build = (f" by the {label}" if " " in label else f" by policy {label!r}"
                         ) if label else ""
                row["reason"] = (f"costs more than {cheapest['name']} ({res['capex_usd']:,.0f}"
                                 f" USD{build} > {cheapest['capex_usd']:,.0f} USD; priced, not "
                                 "solved)")
                continue
            row.update(res)
            row["reason"] = ""
            row["topology"] = self.topology_names.setdefault(topology, row["name"])
            undecided = ""
            if topology in self.bracketed:
                # The plan's bound may be tighter than the fabric's cheap ones.
                upper = min(row["all_to_all_gbps_per_gpu_upper"], sk.a2a_upper_gbps)
                row["all_to_all_gbps_per_gpu_upper"] = max(upper, row["all_to_all_gbps_per_gpu"])
                undecided = self._undecided(row)
                if undecided and self._could_win(row):
                    self._close(topology, c, row)
                    undecided = self._undecided(row)
            if undecided or (row["all_to_all_gbps_per_gpu"] <= 0
                             and row["all_to_all_status"] != "optimal"):
                # No certified throughput (a time limit, a solver failure, a bracket holding
                # the target): reported with its status, off the front and out of the best.
                row["outcome"] = "unsolved"
                row["reason"] = undecided or (f"flow solve {row['all_to_all_status']}: no "
                                              "certified throughput")
                row["shortfall"], row["meets"] = {}, None
                continue
            row["outcome"] = "evaluated"
            self.evaluated.append(row)
            short: dict[str, float] | None = shortfalls(_decided(row), self.others)
            if "all_to_all_after_failure_gbps" in self.constraints and not short:
                short = self._try_failure(topology, c, row)
            row["shortfall"] = short or {}
            row["meets"] = None if short is None else not short
            if row["meets"]:
                self.feasible.append(row)

    def _could_win(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` could still be better than the best feasible design so far."""
        best = self._best()
        return best is None or self._pick([best, dict(row, all_to_all_gbps_per_gpu=row[
            "all_to_all_gbps_per_gpu_upper"])]) is not best

    def _close(self, topology: str, c: Candidate, row: dict[str, Any]) -> None:
        """Narrow an undecided row's ECMP bracket by the flow engine (once per topology,
        within the search's time limit or :data:`CLOSING_SECONDS`). Each end is the better
        of the two certified ones: the higher feasible flow, the lower bound."""
        if topology not in self.closed:
            limit = self.time_limit if self.time_limit is not None else CLOSING_SECONDS
            if self.executor is None:
                self.closed[topology] = closed_all_to_all(c, limit)
            else:
                self.closed[topology] = self.executor.submit(
                    closed_all_to_all, c, limit, True).result()
        flow = self.closed[topology]
        if flow["all_to_all_gbps_per_gpu"] > row["all_to_all_gbps_per_gpu"]:
            keep = row["all_to_all_gbps_per_gpu_upper"]
            row.update(flow)
            row["all_to_all_gbps_per_gpu_upper"] = max(
                min(keep, flow["all_to_all_gbps_per_gpu_upper"]), flow["all_to_all_gbps_per_gpu"])
        row["all_to_all_closing"] = "flow engine"

    def _undecided(self, row: Mapping[str, Any]) -> str:
        """Why a bracketed all-to-all cannot be decided against its target ("" if decided)."""
        target = self.constraints.get("all_to_all_gbps_per_gpu")
        lower, upper = row["all_to_all_gbps_per_gpu"], row["all_to_all_gbps_per_gpu_upper"]
        if target is None or lower >= target * (1 - TOL) or upper < target * (1 - TOL):
            return ""
        if row.get("all_to_all_closing"):
            return (f"undecided: the all-to-all bracket [{lower:,.1f}, {upper:,.1f}] Gb/s per "
                    f"GPU holds the target {target:g}; the flow engine did not close it within "
                    f"{self.time_limit if self.time_limit is not None else CLOSING_SECONDS:g} s")
        return (f"undecided: the all-to-all bracket [{lower:,.1f}, {upper:,.1f}] Gb/s per GPU "
                f"(ECMP lower bound; distance and hierarchy-cut bounds) holds the target "
                f"{target:g}; the flow LP "
                "is too large to close it (no symmetry in the plan)")

    def _try_failure(self, topology: str, c: Candidate, row: dict[str, Any]
                     ) -> dict[str, float] | None:
        """The failure trial of a row meeting every other constraint, when it could be the
        best (it costs less than the best so far); else marked untried (None)."""
        best = self._best()
        if best is not None and self._pick([best, row]) is best:
            row["all_to_all_after_failure_gbps"] = None
            row["reason"] = f"failure trial not run: {best['name']} passes it and is better"
            return None
        ecmp = topology in self.bracketed
        if topology not in self.tried:
            fraction = float(self.constraints.get("failure_fraction", 0.01))
            if self.executor is None:
                self.tried[topology] = after_failure(c, fraction, self.time_limit, False, ecmp)
            else:
                self.tried[topology] = self.executor.submit(
                    after_failure, c, fraction, self.time_limit, True, ecmp).result()
        row["all_to_all_after_failure_gbps"] = self.tried[topology]
        short = shortfalls(row, self.constraints)
        if ecmp and "all_to_all_after_failure_gbps" in short:
            # Only a lower bound after failure: below the target proves nothing.
            row["reason"] = (f"undecided: ECMP after failure carries {self.tried[topology]:,.1f}"
                             f" < {self.constraints['all_to_all_after_failure_gbps']:g} Gb/s "
                             "per GPU, a lower bound only")
            return None
        return short

    # -- step 3: the answer -------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        """The front (the one Pareto front of :mod:`fabricopt.study.pareto`, over capex and
        certified all-to-all), the best design and, when none meets every constraint, the
        nearest misses (evaluated or bounded: a bound's shortfall is the least it misses by)."""
        evaluated = sorted(self.evaluated, key=lambda r: self.order[r["name"]])
        picks = pareto_front(evaluated, "capex_usd", "all_to_all_gbps_per_gpu")
        front = [evaluated[i] for i in picks]
        objective = self.objective
        best = self._best()
        if best is not None and not self.full_front and objective == "capex_usd":
            front = [r for r in front if r["capex_usd"] <= best["capex_usd"] * (1 + TOL)]
        budget = self.constraints.get("capex_usd")
        if budget is not None:  # beyond the budget nothing is bought: the front stops there
            front = [r for r in front if r["capex_usd"] <= budget * (1 + TOL)]
        missed = [r for r in self.rows if r.get("shortfall")]
        nearest = [] if best else _by_total_shortfall(missed)[:3]
        return {"rows": self.rows, "front": front, "best": best, "nearest": nearest,
                "seconds": time.perf_counter() - self.start,
                "candidates": {c.name: c for c in self.candidates}}
