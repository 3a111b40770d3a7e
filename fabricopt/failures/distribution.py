"""What a fabric carries under a failure model: the distribution, in Gb/s per GPU.

:func:`failure_distribution` draws patterns from a :class:`~fabricopt.failures.models.
FailureModel` (or lists them all, with their probabilities, when the model can), solves each
distinct pattern once up to the fabric's symmetry (:mod:`~fabricopt.failures.orbits`),
warm-started from the intact solve, and reports per pattern the certified all-to-all bracket
among the GPUs still up, plus any other metric asked for (ECMP-routed throughput, bisection,
or a function of the failed fabric), and weighted percentiles of each.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import (
    MAX_SOLVES,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    did_you_mean,
    fail,
)
from .._stages import stage_report
from ..analysis.bisection import bisection_bandwidth
from ..fabric import Fabric
from ..flow.arguments import METHODS
from ..flow.time_budget import active_budget, expect_solves
from ..routing import routed_flow
from ..traffic import all_to_all
from .models import Draw, FailureModel
from .orbits import FailureSymmetry
from .sweep import intact_solve, reroutable, solve_failed

#: A trial measure: ``f(failed_fabric, gpus_up) -> Gb/s per GPU``, applied to every failed
#: fabric of a distribution (its ``metrics=`` argument); not a comparison row's metric.
TrialMeasure = Callable[[Fabric, Sequence[Hashable]], float]
#: Its name of a release ago, kept for a release.
Metric = TrialMeasure
#: Built-in metrics besides the certified all-to-all ("throughput", always computed).
BUILTIN_METRICS = ("routed", "bisection")
#: Percentiles :meth:`FailureDistribution.__str__` prints.
SHOWN_PERCENTILES = (1, 5, 50)


@dataclass(frozen=True)
class FailureOutcome:
    """One drawn (or listed) pattern: ``weight`` its probability share, ``lower <= theta <=
    upper`` the certified all-to-all among the ``gpus_up``, ``gbps_lower``/``gbps_upper``
    the same per GPU, ``metrics`` the others (Gb/s per GPU), ``same_as`` the outcome whose
    solve it shares (equal or symmetric failures)."""

    label: str
    weight: float
    gpus_up: int
    theta: float | None
    lower: float
    upper: float
    gbps_lower: float
    gbps_upper: float
    status: str
    metrics: Mapping[str, float]
    same_as: int | None
    seconds: float


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` (0..1) of the total.

    Monotone in every value, so quantiles of certified lower (upper) bounds bound the
    quantile of the true values from below (above).

    >>> weighted_quantile([3.0, 1.0, 2.0], [1, 1, 2], 0.25)
    1.0
    """
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    i = int(np.searchsorted(cum, q * cum[-1] * (1 - 1e-12)))
    return float(v[order][min(i, len(v) - 1)])


@dataclass
class FailureDistribution:
    """What :func:`failure_distribution` returns."""

    fabric_name: str
    model: str
    seed: int | None
    exhaustive: bool
    intact_gbps: float
    symmetry: str
    outcomes: list[FailureOutcome] = field(default_factory=list)
    solves: int = 0
    seconds: float = 0.0
    #: Draws (or listed patterns) a command's time limit left unsolved: random draws are
    #: not drawn (the ones drawn are a sample like any other, only smaller); listed patterns
    #: stay, each with the bracket [0, inf) and status ``"time_limit"``, so every
    #: percentile and mean is still a certified bracket.
    not_solved: int = 0

    def percentile(self, p: float, metric: str = "throughput") -> tuple[float, float]:
        """Certified bracket of the ``p``-th percentile (0..100) of Gb/s per GPU: for
        ``"throughput"`` the quantiles of the lower and upper bounds; other metrics are
        exact numbers, returned twice."""
        p = check_positive("FailureDistribution.percentile", "p", p, allow_zero=True)
        if p > 100:
            raise fail("FailureDistribution.percentile", "p", "a percentile from 0 to 100", p)
        self._check_metric("FailureDistribution.percentile", metric)
        if not self.outcomes:  # a time limit that left every draw undrawn: no claim
            return 0.0, math.inf
        w = [o.weight for o in self.outcomes]
        if metric == "throughput":
            return (weighted_quantile([o.gbps_lower for o in self.outcomes], w, p / 100),
                    weighted_quantile([o.gbps_upper for o in self.outcomes], w, p / 100))
        x = weighted_quantile([o.metrics[metric] for o in self.outcomes], w, p / 100)
        return x, x

    def mean(self, metric: str = "throughput") -> tuple[float, float]:
        """Weighted mean (bracket for throughput) in Gb/s per GPU."""
        self._check_metric("FailureDistribution.mean", metric)
        if not self.outcomes:
            return 0.0, math.inf
        w = np.array([o.weight for o in self.outcomes])
        w = w / w.sum()
        if metric == "throughput":
            return (float(w @ [o.gbps_lower for o in self.outcomes]),
                    float(w @ [o.gbps_upper for o in self.outcomes]))
        x = float(w @ [o.metrics[metric] for o in self.outcomes])
        return x, x

    def _check_metric(self, func: str, metric: Any) -> None:
        if not isinstance(metric, str) or metric not in self.metric_names:
            raise fail(func, "metric", "one of " + ", ".join(map(repr, self.metric_names))
                       + did_you_mean(str(metric), self.metric_names), metric)

    @property
    def metric_names(self) -> list[str]:
        return ["throughput"] + (list(self.outcomes[0].metrics) if self.outcomes else [])

    def __str__(self) -> str:
        def fmt(pair: tuple[float, float]) -> str:
            lo, hi = pair
            if math.isinf(hi):  # a time limit left part of the sample unsolved: no claim
                return f"[{lo:.4g}, inf)"
            return f"{lo:.4g}" if hi - lo <= 1e-6 * max(hi, 1e-300) else f"[{lo:.4g}, {hi:.4g}]"

        how = "every pattern, weighted" if self.exhaustive else f"seed {self.seed}"
        cut = "" if not self.not_solved else (
            f"; the time limit left {self.not_solved:,} "
            + ("patterns unsolved, each counted as [0, inf)" if self.exhaustive
               else "draws undrawn"))
        lines = [f"failures         {self.fabric_name}: {self.model}",
                 f"draws            {len(self.outcomes)} ({how}), {self.solves} solves, "
                 f"{self.seconds:.1f} s{cut}",
                 f"symmetry         {self.symmetry}",
                 f"intact           {self.intact_gbps:.4g} Gb/s per GPU",
                 f"{'Gb/s per GPU':<17}" + "".join(f"{'p' + str(p):>18}"
                                                   for p in SHOWN_PERCENTILES)
                 + f"{'mean':>18}"]
        for m in self.metric_names:
            lines.append(f"{m:<17}" + "".join(f"{fmt(self.percentile(p, m)):>18}"
                                              for p in SHOWN_PERCENTILES)
                         + f"{fmt(self.mean(m)):>18}")
        worst = self.worst
        if worst is not None:  # which pattern the low percentiles come from
            alike = sum(o.gbps_upper <= worst.gbps_upper for o in self.outcomes)
            # GPUs still running but split apart (the switches between them failed) carry
            # no all-to-all: said so, not counted as working.
            up = (f"{worst.gpus_up:,} GPUs up, not all connected"
                  if worst.gpus_up >= 2 and worst.gbps_upper <= 0 else
                  f"{worst.gpus_up:,} GPUs up")
            lines.append(f"{'worst':<17}{worst.label}: "
                         f"{fmt((worst.gbps_lower, worst.gbps_upper))} Gb/s per GPU "
                         f"({up}); {alike} of {len(self.outcomes)} "
                         f"{'patterns' if self.exhaustive else 'draws'} leave at most that")
        return "\n".join(lines)

    @property
    def worst(self) -> FailureOutcome | None:
        """The outcome that leaves the least throughput (smallest certified upper bound);
        patterns a time limit left unsolved make no claim and are not among them."""
        return min((o for o in self.outcomes if not _unsolved_outcome(o)),
                   key=lambda o: (o.gbps_upper, o.gbps_lower), default=None)


def _metric_value(name: str, fn: TrialMeasure | None, failed: Fabric, up: Sequence[Hashable],
                  ) -> float:
    if fn is not None:
        return float(fn(failed, up))
    if name == "routed":
        return float(routed_flow(failed).per_endpoint_gbps)
    # Its certified lower end, as the docstring says (the upper end per GPU, which this
    # read before, is no claim once a time limit leaves the bracket open).
    b = bisection_bandwidth(failed)
    return float(b.lower_gbps / b.n_endpoints)


def _check_metrics(func: str, metrics: Any) -> dict[str, TrialMeasure | None]:
    if metrics is None:
        return {}
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Mapping | Sequence | set | frozenset):
        raise fail(func, "metrics", "None, a list of " + ", ".join(map(repr, BUILTIN_METRICS))
                   + ", or a mapping name -> function (fabric, GPUs up) -> Gb/s", metrics)
    out: dict[str, TrialMeasure | None] = {}
    items = metrics.items() if isinstance(metrics, Mapping) else ((m, None) for m in metrics)
    for name, fn in items:
        if fn is None:
            check_choice(func, "metrics", name, BUILTIN_METRICS)
        elif not callable(fn):
            raise fail(func, f"metrics[{name!r}]", "a function (fabric, GPUs up) -> Gb/s", fn)
        out[str(name)] = fn
    return out


def failure_distribution(fab: Fabric, model: FailureModel, *, trials: int | None = 100,
                         seed: Any = None, metrics: Any = None, method: str = "auto",
                         warm_start: bool = True, symmetry: bool = True,
                         **solve_options: Any) -> FailureDistribution:
    """All-to-all throughput (and other metrics) under a failure model, per GPU still up.

    Parameters
    ----------
    fab : Fabric
        The intact fabric.
    model : FailureModel
        :class:`EverySingle`, :class:`Independent`, :class:`GroupFailures`, :class:`Mixture`.
    trials : int or None
        Patterns drawn; None lists every pattern with its probability (models that can:
        every single failure, one group at a time, mixtures of these).
    seed : None or int
        Root of a :class:`numpy.random.SeedSequence`; draw ``i`` uses its ``i``-th child.
    metrics : list of str, or mapping name -> function, optional
        Besides the certified all-to-all: ``"routed"`` (ECMP, :func:`~fabricopt.routed_flow`)
        and ``"bisection"`` (:func:`~fabricopt.bisection_bandwidth`, its certified lower
        bound), or ``{name: f}`` with ``f(failed_fabric, gpus_up) -> Gb/s per GPU``, e.g.
        ``{"all_reduce": fo.all_reduce_metric()}`` (the collectives sit above this floor, so
        their metric comes in as a function). Computed once per distinct pattern.
    method, warm_start, symmetry, **solve_options
        As in :func:`~fabricopt.failure_sweep`.

    Returns
    -------
    FailureDistribution
        Every outcome, :meth:`~FailureDistribution.percentile` and
        :meth:`~FailureDistribution.mean` (certified brackets in Gb/s per GPU).

    Examples
    --------
    A ring of 6 (unit links, all-to-all 8/36 per pair, 5 destinations: 10/9 Gb/s per
    node): any one failed link leaves a path carrying 1/9 per pair, 5/9 per node.

    >>> import fabricopt as fo
    >>> from fabricopt.failures.models import EverySingle
    >>> d = failure_distribution(fo.ring(6), EverySingle("links"), trials=None)
    >>> d.solves, [round(x, 4) for x in d.percentile(5)]
    (1, [0.5556, 0.5556])
    """
    return distribution("failure_distribution", fab, model, trials=trials, seed=seed,
                        metrics=metrics, method=method, warm_start=warm_start,
                        symmetry=symmetry, solve_options=solve_options)


def check_distribution_arguments(func: str, fab: Any, model: Any, trials: Any, seed: Any,
                                 ) -> None:
    """The checks of :func:`failure_distribution` that need no solve, as ``func``'s."""
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    if not isinstance(model, FailureModel):
        raise fail(func, "model", "a FailureModel (EverySingle, Independent, GroupFailures, "
                   "Mixture)", type(model).__name__)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                             or seed < 0):
        raise fail(func, "seed", "None or an integer >= 0", seed)
    if trials is not None:
        # One flow solve per draw: more than MAX_SOLVES is a runaway (it hung spawning seeds).
        check_int(func, "trials", trials, minimum=1, maximum=MAX_SOLVES)


def distribution(func: str, fab: Fabric, model: FailureModel, *, trials: int | None,
                 seed: Any, metrics: Any, method: str, warm_start: bool, symmetry: bool,
                 solve_options: dict[str, Any]) -> FailureDistribution:
    """The work of :func:`failure_distribution`, its messages naming ``func`` (the public
    function that called it)."""
    start = time.perf_counter()
    check_distribution_arguments(func, fab, model, trials, seed)
    check_choice(func, "method", method, METHODS)
    warm_start = check_bool(func, "warm_start", warm_start)
    symmetry = check_bool(func, "symmetry", symmetry)
    chosen = _check_metrics(func, metrics)
    if trials is None:
        listed: list[Draw] | None = model.enumerate(fab)
        if listed is None:
            raise fail(func, "trials", f"a number of draws: {model.name} has too many "
                       "patterns to list", trials)
        count, root_entropy = len(listed), None
        draws = iter(listed)
    else:
        root = np.random.SeedSequence(None if seed is None else int(seed))
        count, root_entropy = trials, int(root.entropy)  # type: ignore[arg-type]
        # Drawn one at a time, so a time limit that runs out leaves the rest undrawn.
        draw = model.drawer(fab)
        draws = (draw(np.random.default_rng(child)) for child in root.spawn(trials))

    # A command's time limit: half of it at most for the intact fabric, then each draw gets
    # all that is left (a draw solved is worth more than many cut short: the draws the
    # limit leaves are not drawn, and those solved are a sample like any other).
    expect_solves(2)
    intact, warm = intact_solve(fab, all_to_all(fab), method, warm_start, solve_options)
    around = reroutable(fab, intact, all_to_all(fab), method, warm_start)
    keys = FailureSymmetry(fab, use_symmetry=symmetry)
    out = FailureDistribution(fab.name, model.name, root_entropy, trials is None,
                              intact.per_endpoint_gbps, "")
    report = stage_report()  # a terminal's status line: which draw is being solved
    budget = active_budget()
    for i, d in enumerate(draws):
        if budget is not None and budget.out():
            out.not_solved = count - i
            if trials is None:  # listed patterns keep their weight, with no claim on them
                out.outcomes.extend(_unsolved(fab, p, chosen) for p in [d, *draws])
            break
        k = keys.first_equivalent(d.key_pattern(), i)
        if k is None:
            report("failure distribution", detail=f"pattern {i + 1:,} of {count:,}")
            expect_solves(1 + len(chosen))  # this draw's flow and its other metrics
        out.outcomes.append(_outcome(fab, d, method, warm, solve_options, chosen, around)
                            if k is None else _shared(out.outcomes[k], d, k))
    out.solves = sum(o.same_as is None and not _unsolved_outcome(o) for o in out.outcomes)
    keys.arc_orbit()  # settles which symmetry the keys used, for the report
    out.symmetry = keys.symmetry_note
    out.seconds = time.perf_counter() - start
    return out


def _outcome(fab: Fabric, d: Draw, method: str, warm: Any, options: dict[str, Any],
             metrics: dict[str, TrialMeasure | None], around: Any = None) -> FailureOutcome:
    failed = d.apply(fab)
    up = [e for e in fab.endpoints if e not in d.down]
    if len(up) < 2:
        return FailureOutcome(d.label, d.weight, len(up), 0.0, 0.0, 0.0, 0.0, 0.0, "optimal",
                              {m: 0.0 for m in metrics}, None, 0.0)
    r = solve_failed(failed, all_to_all(failed), method, options, warm, around)
    mean_out = r.mean_out_gbps if r.mean_out_gbps is not None else math.nan
    values = {m: _metric_value(m, fn, failed, up) for m, fn in metrics.items()}
    return FailureOutcome(d.label, d.weight, len(up), r.theta, r.lower, r.upper,
                          r.lower * mean_out, r.upper * mean_out, r.status, values, None,
                          r.seconds)


def _unsolved_outcome(o: FailureOutcome) -> bool:
    """Whether ``o`` is a pattern a time limit left unsolved (no claim), not one solved and
    cut short (which keeps its certified bracket)."""
    return o.theta is None and math.isinf(o.upper)


def _unsolved(fab: Fabric, d: Draw, metrics: dict[str, TrialMeasure | None]) -> FailureOutcome:
    """A listed pattern the time limit left unsolved: its weight kept, no claim on its
    throughput ([0, inf)), its other metrics not measured (nan)."""
    up = sum(e not in d.down for e in fab.endpoints)
    return FailureOutcome(d.label, d.weight, up, None, 0.0, math.inf, 0.0, math.inf,
                          "time_limit", {m: math.nan for m in metrics}, None, 0.0)


def _shared(solved: FailureOutcome, d: Draw, k: int) -> FailureOutcome:
    return FailureOutcome(d.label, d.weight, solved.gpus_up, solved.theta, solved.lower,
                          solved.upper, solved.gbps_lower, solved.gbps_upper, solved.status,
                          solved.metrics, k, 0.0)


__all__ = ["FailureDistribution", "FailureOutcome", "check_distribution_arguments",
           "distribution", "failure_distribution",
           "weighted_quantile"]
