r"""Worst-case permutation throughput: a certified bracket and the pattern that comes closest.

For a fabric and a per-pair demand :math:`g`, the worst case over permutations is
:math:`\theta_{\min} = \min_\pi \theta(\pi)`, the throughput of the hardest way to pair the
endpoints (every endpoint sends :math:`g` to one other and receives :math:`g` from one). An
architect asks it as "what does my fabric guarantee, whatever the job placement?".

Three certified facts bracket it (``docs/throughput.md`` states the distance bound they use):

* **Below**, the two-phase hose rate :math:`r` (:func:`~fabricopt.valiant_rate`): every
  traffic in which no endpoint sends or receives more than :math:`r` is carried, so every
  permutation is carried at :math:`\theta \ge r/g`.
* **Above**, any permutation's own upper bound: :math:`\theta_{\min} \le \theta(\pi)`.
* **Above**, TUB (Namyar et al., "A Throughput-Centric View of the Performance of
  Datacenter Topologies", SIGCOMM 2021): the hop-length distance bound of the permutation
  that maximises the total hop distance,
  :math:`\sum_a c_a / (g \max_\pi \sum_s \mathrm{hops}(s, \pi(s)))`, the smallest
  hop-length bound over all permutations. The maximising permutation is a maximum-weight
  assignment (:func:`~fabricopt.longest_matching`).

The search for a hard pattern starts from that longest matching, then tries the permutation
that sends every pair across the best bisection cut found (its cut caps theta at
:math:`2C/(Ng)`), and improves the best with the dual
lengths of each solve: if lengths :math:`l` prove :math:`\theta(\pi) = \sum c l / (g \sum
\mathrm{dist}_l(\pi))`, the permutation :math:`\pi'` that maximises :math:`\sum
\mathrm{dist}_l` has :math:`\theta(\pi') \le \sum c l / (g \sum \mathrm{dist}_l(\pi')) \le
\theta(\pi)`; so each step's upper bound never rises. It stops when the assignment returns a
pattern already tried, after ``iterations`` solves, or when the bracket closes. A solve cut
short with no lengths is passed over: the next pattern comes from the latest lengths not yet
used, if any.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import MAX_SOLVES, check_choice, check_demand_gbps, check_int
from ..fabric import check_endpoint_group
from ..flow import FlowResult, max_concurrent_flow, valiant_rate
from ..flow.arguments import METHODS
from ..flow.backends import check_solve_args
from ..flow.proof import explicit_distance_bound
from ..flow.time_budget import TimeBudget
from ..graph_arrays import GraphArrays
from ..traffic import Traffic, farthest_matching
from .bisection import bisection_bandwidth

#: The share of the time limit the two-phase rate, the search's lower end, may take first.
HOSE_PART = 0.5


@dataclass
class WorstCasePermutation:
    """What :func:`worst_case_permutation` returns.

    ``lower <= min over permutations of theta <= upper``, both certified. ``pattern`` is the
    hardest permutation found and ``pattern_result`` its own certified throughput (None when
    the time limit ran out before any pattern was solved: ``upper`` is then TUB's, and
    ``pattern`` TUB's own permutation, never solved);
    ``tub_upper`` the TUB bound, ``two_phase_rate_gbps`` the two-phase rate behind ``lower``
    (``hose_rate_gbps``, its older name, is kept for a release). ``tried`` lists the bracket
    of each pattern solved, in order.
    """

    lower: float
    upper: float
    gbps: float
    pattern: Traffic
    pattern_result: FlowResult | None
    tub_upper: float
    two_phase_rate_gbps: float
    n_endpoints: int
    seconds: float = 0.0
    tried: list[tuple[float, float]] = field(default_factory=list)
    #: The whole search's time limit (s; None: none), split across its solves.
    time_limit: float | None = None
    #: The solves the time limit cut short ("two-phase rate", "bisection", "pattern 2"...):
    #: each kept its certified bracket, so the answer holds but may be wider.
    cut_short: list[str] = field(default_factory=list)
    #: Patterns the time limit left unsolved (the search stopped before ``iterations``).
    skipped: int = 0

    @property
    def status(self) -> str:
        """``"optimal"`` (the bracket closes), ``"time_limit"`` (the time limit cut a solve
        short or left patterns unsolved: the bracket is the best certified by then) or
        ``"bracket"`` (the search ended with the bracket open).

        >>> WorstCasePermutation(0.5, 1.0, 1.0, None, None, 1.0, 0.5, 4, skipped=2).status
        'time_limit'
        """
        if self.exact:
            return "optimal"
        return "time_limit" if self.cut_short or self.skipped else "bracket"

    @property
    def exact(self) -> bool:
        """True when the bracket on the worst case closes (to 1e-6 relative)."""
        return self.upper - self.lower <= 1e-6 * max(self.upper, 1e-300)

    @property
    def per_endpoint_gbps(self) -> float:
        """Gb/s every endpoint is guaranteed under any permutation: ``lower`` times ``gbps``."""
        return self.lower * self.gbps

    @property
    def hose_rate_gbps(self) -> float:
        """The older name of :attr:`two_phase_rate_gbps` (read-only, kept for a release)."""
        return self.two_phase_rate_gbps

    def __str__(self) -> str:
        state = "exact" if self.exact else "bracket"
        return "\n".join([
            f"worst permutation {self.lower:.6g} <= theta <= {self.upper:.6g} ({state}; "
            f"{len(self.tried)} pattern(s) solved, {self.seconds:.2f} s; theta: the "
            f"multiple of each pair's {self.gbps:.6g} Gb/s carried)",
            f"guaranteed        {self.per_endpoint_gbps:.6g} Gb/s per endpoint under any "
            f"permutation (two-phase rate {self.two_phase_rate_gbps:.6g} Gb/s)",
            f"TUB upper bound   theta <= {self.tub_upper:.6g} (hop counts alone: the links' "
            "capacity over the farthest permutation's hops; never below the bracket)",
            *([] if self.time_limit is None else [self.time_line()]),
        ])

    def time_line(self) -> str:
        """What the whole search's time limit cut short, in a line.

        >>> w = WorstCasePermutation(0.5, 1.0, 1.0, None, None, 1.0, 0.5, 4, time_limit=10,
        ...                          cut_short=["pattern 2"], skipped=2)
        >>> w.time_line()
        'time limit        10 s for the whole search: cut short: pattern 2; 2 pattern(s) not \
solved'
        """
        parts = ([f"cut short: {', '.join(self.cut_short)}"] if self.cut_short else [])
        parts += [f"{self.skipped} pattern(s) not solved"] if self.skipped else []
        return (f"time limit        {self.time_limit:.3g} s for the whole search: "
                + ("; ".join(parts) if parts else "every solve finished within it"))


def tub_upper_bound(fab: Any, gbps: float = 1.0, endpoints: Iterable[Hashable] | None = None,
                    max_endpoints: int = 4096) -> tuple[float, Traffic]:
    """TUB: an upper bound on the worst-case permutation throughput, and its permutation.

    The hop-length distance bound of the permutation with the largest total hop distance
    (a maximum-weight assignment), which is the smallest such bound over all permutations.

    >>> import fabricopt as fo
    >>> bound, tm = tub_upper_bound(fo.ring(8))   # antipodal pairs, 4 hops apart
    >>> round(bound, 9)   # 16 arcs x 1 Gb/s / (8 pairs x 4 hops x 1 Gb/s)
    0.5
    """
    gbps = check_demand_gbps("tub_upper_bound", "gbps", gbps)
    eps = check_endpoint_group("tub_upper_bound", fab, endpoints)
    tm = farthest_matching("tub_upper_bound", fab, eps, gbps, None, max_endpoints)
    ga = GraphArrays.from_fabric(fab)
    return explicit_distance_bound(fab, tm, np.ones(ga.n_arcs), ga), tm


def _crossing_pattern(fab: Any, eps: tuple[Hashable, ...], gbps: float,
                      clock: TimeBudget) -> Traffic | None:
    """A permutation whose every pair crosses the best bisection cut found (endpoints of side
    A paired with side B, both ways): by the cut, theta <= 2 C / (N g). None when the group is
    not every endpoint or the sides are unequal."""
    if len(eps) != len(fab.endpoints) or len(eps) % 2:
        clock.finished("bisection", False)
        return None
    if clock.out():  # not begun at a floor's share: the patterns' solves come first
        clock.finished("bisection (not begun)", True)
        return None
    share = clock.share()
    found = bisection_bandwidth(fab) if share is None else bisection_bandwidth(
        fab, time_limit=share)
    clock.finished("bisection", found.stopped_short == "time limit")
    cut = found.cut
    a, b = cut.endpoints_a, cut.endpoints_b
    if len(a) != len(b) or not a:
        return None
    pairs = {}
    for x, y in zip(a, b, strict=True):
        pairs[(x, y)] = pairs[(y, x)] = gbps
    return Traffic(pairs)


def worst_case_permutation(fab: Any, gbps: float = 1.0, *,
                           endpoints: Iterable[Hashable] | None = None, iterations: int = 4,
                           method: str = "auto", backend: str = "highs",
                           time_limit: float | None = None, max_endpoints: int = 4096,
                           **solve_options: Any) -> WorstCasePermutation:
    """Certified bracket on the worst-case permutation throughput, and a hard pattern.

    Parameters
    ----------
    fab : Fabric
    gbps : float
        Demand of each pair of the permutation (Gb/s).
    endpoints : iterable, optional
        The endpoints permuted (default: all).
    iterations : int
        Patterns solved at most (the longest matching, then one per improvement step).
    method, backend, **solve_options
        Passed to :func:`~fabricopt.max_concurrent_flow` for each pattern.
    time_limit : float, optional
        Seconds for the whole search, split across its solves (the two-phase rate, the
        bisection cut, each pattern): each solve gets what is left over the solves still to
        come, so time a quick solve leaves passes to the next. A solve it cuts short keeps its
        certified bracket and is named in ``cut_short``; patterns it leaves unsolved are
        counted in ``skipped`` (the first too: once the limit is spent no solve is begun, and
        TUB is the upper end). The answer stays certified, only wider; it arrives within
        the limit's contract (``docs/worst-case.md``), as far as each solve ends at the
        time it is handed.
    max_endpoints : int
        Cap on the endpoint count (each step is an assignment, cubic in it).

    Returns
    -------
    WorstCasePermutation

    Examples
    --------
    A non-blocking fat-tree carries every permutation at full rate (Al-Fares et al., SIGCOMM
    2008): the hose rate proves theta >= 1 and any permutation proves theta <= 1.

    >>> import fabricopt as fo
    >>> w = fo.worst_case_permutation(fo.fat_tree(4), gbps=400)
    >>> round(w.lower, 6), round(w.upper, 6), w.exact
    (1.0, 1.0, True)
    """
    start = time.perf_counter()
    gbps = check_demand_gbps("worst_case_permutation", "gbps", gbps)
    # One flow solve per iteration: more than MAX_SOLVES is a runaway, not a search.
    iterations = check_int("worst_case_permutation", "iterations", iterations, minimum=1,
                           maximum=MAX_SOLVES)
    check_choice("worst_case_permutation", "method", method, METHODS)
    time_limit = check_solve_args("worst_case_permutation", backend, time_limit)
    max_endpoints = check_int("worst_case_permutation", "max_endpoints", max_endpoints,
                              minimum=2)
    eps = check_endpoint_group("worst_case_permutation", fab, endpoints)
    tub, pattern = tub_upper_bound(fab, gbps, eps, max_endpoints)
    clock = TimeBudget(time_limit, solves=iterations + 2, start=start)  # + the rate and the cut
    # The two-phase rate is the search's only lower end: it has first claim, on half the
    # limit (an even share of a 2 s limit, a third of a second, cut it short: 126 Gb/s per
    # GPU where it proves 214 when left to finish).
    hose = valiant_rate(fab, eps, backend=backend, time_limit=clock.share(part=HOSE_PART))
    clock.finished("two-phase rate", hose.status == "time_limit")
    lower = hose.rate_gbps / gbps
    best_result: FlowResult | None = None
    best_pattern = pattern
    tried: list[tuple[float, float]] = []
    seen: set[frozenset[tuple[Hashable, Hashable]]] = set()
    crossing = _crossing_pattern(fab, eps, gbps, clock)
    # The latest dual lengths not yet improved from: a solve the time limit cuts short may
    # return none, and the search then goes on from an earlier solve's (the first
    # pattern's, when the crossing pattern came between) rather than stopping.
    pending: np.ndarray | None = None
    for i in range(iterations):
        if clock.out():
            break  # no solve is begun once the limit is spent (TUB is the upper end)
        seen.add(frozenset(pattern.pairs))
        result = max_concurrent_flow(fab, pattern, method=method, backend=backend,
                                     time_limit=clock.share(), **solve_options)
        lengths = result.certificate.lengths if result.certificate else None
        clock.finished(f"pattern {i + 1}" + ("" if lengths is not None else
                                             " (no lengths to improve from)"),
                       result.status == "time_limit")
        tried.append((result.lower, result.upper))
        if best_result is None or result.upper < best_result.upper:
            best_result, best_pattern = result, pattern
        pending = lengths if lengths is not None else pending
        if min(tub, best_result.upper) <= lower * (1 + 1e-9):
            break
        if crossing is not None and frozenset(crossing.pairs) not in seen:
            pattern = crossing  # the pattern the bisection cut starves, tried once
            continue
        if pending is None:
            break
        pattern = farthest_matching("worst_case_permutation", fab, eps, gbps, pending,
                                    max_endpoints)
        pending = None
        if frozenset(pattern.pairs) in seen:
            break
    best_upper = tub if best_result is None else min(tub, best_result.upper)
    if clock.out() and best_upper > lower * (1 + 1e-9):
        clock.skipped = iterations - len(tried)  # ended early by the limit, not by the bound
    upper = max(best_upper, lower)
    return WorstCasePermutation(lower, upper, gbps, best_pattern, best_result, tub,
                                hose.rate_gbps, len(eps), time.perf_counter() - start, tried,
                                time_limit, clock.cut_short, clock.skipped)
