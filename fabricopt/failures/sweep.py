"""Random failures and failure sweeps: what a fabric carries once parts of it are gone.

Three kinds of failure unit, each drawn uniformly without replacement:

* ``"links"``: physical links. A bundle of ``links`` parallel links between two devices counts
  that many times, and losing some of them shrinks its capacity in proportion
  (:meth:`Fabric.without` with a count).
* ``"switches"``: switches (nodes whose role is ``"switch"``), each with all its links.
* ``"groups"``: shared-risk groups, things that fail together (see :func:`risk_groups`): those
  the fabric declares, else the groups derived from its structure.

The number failed is ``round(fraction * eligible)`` with halves rounded up
(``floor(fraction * eligible + 0.5)``), so ``fraction=0.01`` of 300 links fails 3, of 250 fails
3 and of 249 fails 2. ``tiers=`` restricts the eligible units to those touching a link of the
given tiers (for links: links of those tiers).
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import os
import statistics
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import (
    MAX_SOLVES,
    as_rng,
    check_bool,
    check_choice,
    check_int,
    check_path,
    check_positive,
    did_you_mean,
    fail,
)
from .._stages import stage_report
from ..errors import DesignFileError, InvalidParameterError
from ..fabric import Fabric, Removed
from ..flow.api import (
    FIND_SYMMETRY_NONZEROS,
    cheap_bracket,
    lp_size_estimate,
    useful_symmetry,
)
from ..flow.arguments import METHODS
from ..flow.bounds import ECMP_MAX_ENTRIES
from ..flow.brackets import with_stage_ends
from ..flow.from_intact import acceptable
from ..flow.lp_proof import roots_carrying
from ..flow.result import FlowResult
from ..flow.time_budget import active_budget, expect_solves
from ..flow.warm import lengths_only
from ..graph_arrays import GraphArrays
from ..symmetry.search import with_symmetry
from ..traffic import Traffic, all_to_all, traffic_named
from .engine import max_concurrent_flow
from .intact_flow import IntactFlow, rerouted_answer
from .orbits import FailureSymmetry, Pattern
from .plane_bracket import narrowed, plane_bracket, planes_follow
from .risk_groups import RiskGroup, _bundles, risk_groups
from .trial_progress import TrialProgress
from .trial_routed import routed_when_cheap

KINDS = ("links", "switches", "groups")

def _check_fraction(func: str, fraction: Any, name: str = "fraction") -> float:
    if (isinstance(fraction, bool) or not isinstance(fraction, numbers.Real)
            or not 0.0 <= float(fraction) <= 1.0):  # NaN fails both comparisons
        raise fail(func, name, "a number from 0 to 1", fraction)
    return float(fraction)


def check_tier_names(func: str, tiers: Any) -> list[str] | None:
    """``tiers`` as a list of names (None stays None), checked for its form alone: a tier
    name or an iterable of them (a number, NaN or an object is refused where it is given,
    before any fabric is read).

    >>> check_tier_names("EverySingle", "leaf-spine")
    ['leaf-spine']
    >>> check_tier_names("EverySingle", float("nan"))
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: EverySingle(): tiers must be a tier name or a \
list of them, got nan
    """
    if tiers is None:
        return None
    names = [tiers] if isinstance(tiers, str) else tiers
    if isinstance(names, Mapping) or not isinstance(names, Iterable) \
            or not all(isinstance(t, str) for t in names):
        raise fail(func, "tiers", "a tier name or a list of them", tiers)
    return list(names)


def _check_tiers(func: str, fab: Fabric, tiers: Any) -> frozenset[str] | None:
    names = check_tier_names(func, tiers)
    if names is None:
        return None
    present = sorted({str(t) for _, _, t in fab.graph.edges(data="tier", default="link")})
    if not names:
        raise fail(func, "tiers", "a non-empty list of tiers (None for all), one of "
                   + ", ".join(present), tiers)
    unknown = [t for t in names if t not in present]
    if unknown:
        raise fail(func, "tiers", "tiers of the fabric, one of " + ", ".join(present)
                   + did_you_mean(str(unknown[0]), present), tiers)
    return frozenset(names)


def failure_count(fraction: float, eligible: int) -> int:
    """How many of ``eligible`` units fail at ``fraction``: round half up.

    >>> failure_count(0.01, 250), failure_count(0.01, 249), failure_count(0.5, 3)
    (3, 2, 2)
    """
    return int(math.floor(fraction * eligible + 0.5))


@dataclass(frozen=True)
class _Pool:
    """The eligible failure units of one fabric, kind and tier filter, computed once."""

    kind: str
    units: tuple[Any, ...]         # bundles (u, v), switches, or RiskGroups
    weights: np.ndarray            # physical links per bundle (links), else ones

    @property
    def eligible(self) -> int:
        return int(self.weights.sum())

    @classmethod
    def of(cls, fab: Fabric, kind: str, tiers: frozenset[str] | None) -> _Pool:
        g = fab.graph

        def touches(nodes: Iterable[Hashable]) -> bool:
            return any(str(d.get("tier", "link")) in tiers  # type: ignore[operator]
                       for w in nodes for _, _, d in g.out_edges(w, data=True))

        if kind == "links":
            bundles = [(u, v, n) for u, v, n, t in _bundles(fab) if tiers is None or t in tiers]
            return cls(kind, tuple((u, v) for u, v, _ in bundles),
                       np.array([n for _, _, n in bundles], dtype=np.int64))
        if kind == "switches":
            units: tuple[Any, ...] = tuple(w for w in fab.switches
                                           if tiers is None or touches([w]))
        else:
            units = tuple(
                grp for grp in risk_groups(fab)
                if tiers is None or touches(grp.switches) or any(
                    str(g[u][v].get("tier", "link")) in tiers
                    for u, v in (tuple(pair) for pair in grp.links) if g.has_edge(u, v)))
        return cls(kind, units, np.ones(len(units), dtype=np.int64))

    def draw(self, fab: Fabric, fraction: float, rng: np.random.Generator) -> Removed:
        """What fails in one draw, as :meth:`Fabric.without` would record it (no copy of
        the graph: a sweep copies it only for patterns it has not solved yet)."""
        count = failure_count(fraction, self.eligible)
        if count == 0:
            return Removed()
        picks = rng.choice(self.eligible, size=count, replace=False)
        if self.kind == "links":
            # Physical link i belongs to the bundle whose cumulative count first exceeds i.
            owner = np.searchsorted(np.cumsum(self.weights), picks, side="right")
            lost = np.bincount(owner, minlength=len(self.units))
            return Removed(tuple((*self.units[b], int(lost[b])) for b in np.flatnonzero(lost)))
        chosen = [self.units[i] for i in np.sort(picks)]
        if self.kind == "switches":
            return Removed((), tuple(chosen))
        switches = tuple(dict.fromkeys(w for grp in chosen for w in grp.switches))
        gone = set(switches)
        g = fab.graph
        links = []
        for pair in dict.fromkeys(p for grp in chosen for p in grp.links if not p & gone):
            u, v = tuple(pair)
            arc = g[u][v] if g.has_edge(u, v) else g[v][u]
            links.append((u, v, int(arc.get("links", 1))))  # the whole bundle
        return Removed(tuple(links), switches)

    def fail(self, fab: Fabric, fraction: float, rng: np.random.Generator) -> Fabric:
        return apply_removed(fab, self.draw(fab, fraction, rng))


def apply_removed(fab: Fabric, removed: Removed) -> Fabric:
    """``fab`` without what ``removed`` names (an unchanged copy when it names nothing)."""
    if not removed:
        return fab.copy()
    return fab.without(links={(u, v): n for u, v, n in removed.links},
                       switches=removed.switches)


def fail_random(fab: Fabric, fraction: float, *, seed: Any = None, kind: str = "links",
                tiers: str | Sequence[str] | None = None) -> Fabric:
    """``fab`` with a random ``fraction`` of its links, switches or shared-risk groups failed.

    Parameters
    ----------
    fab : Fabric
    fraction : float
        From 0 to 1: the share of eligible units that fail, ``round(fraction * eligible)``
        of them with halves rounded up (see the module docstring).
    seed : None, int or numpy.random.Generator
        The same seed fails the same units.
    kind : {"links", "switches", "groups"}
        Physical links (a bundle of n parallel links is n units), switches with their links,
        or shared-risk groups (:func:`risk_groups`).
    tiers : str or list of str, optional
        Only units of these tiers fail: links of the tiers, or switches and groups that touch
        a link of the tiers (``"leaf-spine"`` fails leaf and spine switches).

    Returns
    -------
    Fabric
        From :meth:`Fabric.without`: no symmetry claim, and :attr:`Fabric.removed` says what
        failed. With nothing to fail (``round(...) == 0``) an unchanged copy.

    Examples
    --------
    A fat-tree(4) has 16 leaf-spine links; 25% of them is 4:

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> failed = fail_random(fab, 0.25, seed=1, tiers="leaf-spine")
    >>> failed.removed.physical_links
    4
    """
    func = "fail_random"
    fraction = _check_fraction(func, fraction)
    check_choice(func, "kind", kind, KINDS)
    _check_fabric(func, fab)

    pool = _Pool.of(fab, kind, _check_tiers(func, fab, tiers))
    return pool.fail(fab, fraction, as_rng(seed, "fail_random"))


def _check_fabric(func: str, fab: Any) -> None:
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)


@dataclass(frozen=True)
class FailureTrial:
    """One failed fabric and what it carries.

    ``theta`` is None unless proven (``lower <= theta <= upper`` always holds for the true
    value); ``failed`` lists what was removed, ``removed_links``/``removed_switches`` count
    it (physical links named, switches).
    """

    fraction: float
    trial: int
    removed_links: int
    removed_switches: int
    failed: str
    theta: float | None
    lower: float
    upper: float
    status: str
    method: str
    binding_tier: str | None
    seconds: float
    #: Index (in the sweep's trials) of the trial whose solve this one shares: its failures
    #: are the same, or proven equivalent under the fabric's symmetry. None: solved itself.
    same_as: int | None = None


@dataclass(frozen=True)
class FractionSummary:
    """Trials of one fraction: theta's min, median and max over the trials that proved it,
    and the certified extremes ``lower_min <= theta <= upper_max`` over all of them.

    ``proven`` trials are exact, the others bracketed; ``lower_median`` is the median over
    all trials of what each proves carried (its theta, else its bracket's lower end), so no
    more than half the trials carry less; ``widest_gap`` the widest bracket,
    ``(upper - lower) / upper`` (0 when every trial is exact)."""

    fraction: float
    trials: int
    proven: int
    theta_min: float | None
    theta_median: float | None
    theta_max: float | None
    lower_min: float
    upper_max: float
    binding_tiers: dict[str, int]
    lower_median: float = 0.0
    widest_gap: float = 0.0

    @property
    def bracketed(self) -> int:
        """Trials left as a certified bracket (not exact)."""
        return self.trials - self.proven


@dataclass
class FailureSweep:
    """What :func:`failure_sweep` returns: every trial, and per fraction a summary.

    ``seed`` is the entropy of the root :class:`numpy.random.SeedSequence`: passing it back as
    ``seed=`` reproduces every trial. ``intact_theta`` (with its bracket ``intact_lower``,
    ``intact_upper``) is the intact fabric's theta, solved once; no failed fabric carries more
    (``upper`` of every trial is at most ``intact_upper``).
    """

    fabric_name: str
    kind: str
    tiers: tuple[str, ...] | None
    eligible: int
    seed: int
    trials: list[FailureTrial] = field(default_factory=list)
    #: Theta of the intact fabric (None unless proven) and its certified bracket: the warm
    #: start of every trial, and the reference to read each failed theta against.
    intact_theta: float | None = None
    intact_lower: float = 0.0
    intact_upper: float = math.inf
    #: Solves the sweep ran: one per distinct failure pattern up to symmetry.
    solves: int = 0
    #: Demand per endpoint (Gb/s) of the traffic at theta = 1: theta times this is Gb/s per GPU.
    mean_out_gbps: float | None = None

    @property
    def summary(self) -> list[FractionSummary]:
        """One :class:`FractionSummary` per fraction, in the order given."""
        out = []
        for fraction in dict.fromkeys(t.fraction for t in self.trials):
            rows = [t for t in self.trials if t.fraction == fraction]
            proven = [t.theta for t in rows if t.theta is not None]
            tiers: dict[str, int] = {}
            for t in rows:
                if t.binding_tier is not None:
                    tiers[t.binding_tier] = tiers.get(t.binding_tier, 0) + 1
            out.append(FractionSummary(
                fraction, len(rows), len(proven),
                min(proven) if proven else None,
                statistics.median(proven) if proven else None,
                max(proven) if proven else None,
                min(t.lower for t in rows), max(t.upper for t in rows), tiers,
                statistics.median(t.lower if t.theta is None else t.theta for t in rows),
                max(_gap(t) for t in rows)))
        return out

    def of_intact(self, theta: float) -> float | None:
        """``theta`` as a share of the intact fabric's theta (of its certified upper end when
        the intact one is a bracket, so a lower end stays a lower bound); None without one.

        >>> FailureSweep("f", "links", None, 4, 1, intact_theta=2.0).of_intact(1.5)
        0.75
        """
        theta = check_positive("FailureSweep.of_intact", "theta", theta, allow_zero=True)
        intact = self.intact_theta if self.intact_theta is not None else self.intact_upper
        return theta / intact if intact is not None and 0 < intact < math.inf else None

    def to_records(self) -> list[dict[str, Any]]:
        """Every trial as a dict (one row per trial)."""
        return [asdict(t) for t in self.trials]

    def to_csv(self, path: str | None = None) -> str:
        """Every trial as CSV text; also written to ``path`` when given."""
        if path is not None:
            check_path("FailureSweep.to_csv", "path", path)
        buffer = io.StringIO()
        names = list(FailureTrial.__dataclass_fields__)
        writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.to_records())
        text = buffer.getvalue()
        if path is not None:
            try:
                with open(path, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
            except OSError as exc:  # a missing folder, a full disk: the file's error
                raise DesignFileError(f"{os.fspath(path)}: cannot be written: "
                                      f"{exc.strerror or exc}") from None
        return text

    def __str__(self) -> str:
        def fmt(x: float | None) -> str:
            return "-" if x is None else f"{x:.6g}"

        lines = [f"failure sweep    {self.fabric_name}: {self.kind}"
                 + (f" of tiers {', '.join(self.tiers)}" if self.tiers else "")
                 + f", {self.eligible} eligible, seed {self.seed}",
                 f"intact           theta {fmt(self.intact_theta)}" + (
                     "" if self.intact_theta is not None else
                     f" (certified range [{self.intact_lower:.4g}, {self.intact_upper:.4g}])"),
                 f"solves           {self.solves} for {len(self.trials)} trials (equal or "
                 "symmetric failures solved once)",
                 "share of intact: median and worst over the trials (each trial's theta, "
                 "else its proven lower end)",
                 f"{'fraction':>9}  {'trials':>6}  {'exact':>5}  {'bracketed':>9}  "
                 f"{'median':>8}  {'worst':>8}  {'widest bracket':>14}  "
                 f"{'worst Gb/s per GPU':>18}  binding tier"]
        per_gpu = self.mean_out_gbps

        def share(theta: float, exact: bool) -> str:
            ratio = self.of_intact(theta)
            return "-" if ratio is None else f"{'' if exact else '>= '}{ratio:.1%}"

        for s in self.summary:
            tier = max(s.binding_tiers, key=s.binding_tiers.__getitem__) \
                if s.binding_tiers else "-"
            exact = s.proven == s.trials and self.intact_theta is not None
            worst = "-" if per_gpu is None else f"{'' if exact else '>= '}" \
                f"{s.lower_min * per_gpu:.4g}"
            lines.append(f"{s.fraction:>9.4g}  {s.trials:>6}  {s.proven:>5}  "
                         f"{s.bracketed:>9}  {share(s.lower_median, exact):>8}  "
                         f"{share(s.lower_min, exact):>8}  "
                         f"{'-' if not s.bracketed else f'{s.widest_gap:.2%}':>14}  "
                         f"{worst:>18}  {tier}")
        return "\n".join(lines)


def _gap(trial: FailureTrial) -> float:
    """A trial's bracket, relative to its upper end: 0 when exact."""
    if trial.theta is not None or trial.upper <= trial.lower:
        return 0.0
    return 1.0 if not 0 < trial.upper < math.inf else (trial.upper - trial.lower) / trial.upper


def pattern_of(removed: Removed) -> Pattern:
    """The failure pattern a :class:`~fabricopt.fabric.Removed` record describes."""
    links: dict[frozenset, int] = {}
    for u, v, n in removed.links:
        links[frozenset((u, v))] = links.get(frozenset((u, v)), 0) + int(n)
    return Pattern(links, frozenset(removed.switches))


def _describe(removed: Removed) -> str:
    parts = [f"{u}-{v} x{n}" for u, v, n in removed.links]
    parts += [f"switch {w}" for w in removed.switches]
    return "; ".join(parts)


def checked_traffic(func: str, fab: Fabric, traffic: Any) -> tuple[Traffic, bool]:
    """The traffic to solve (default all-to-all) and whether failures may be grouped by the
    fabric's symmetry: only for uniform all-to-all over every endpoint, which every
    automorphism leaves unchanged."""
    if traffic is None:
        return all_to_all(fab), True
    if isinstance(traffic, str):
        traffic = traffic_named(fab, traffic, f"{func}(): traffic")
    if not isinstance(traffic, Traffic):
        raise fail(func, "traffic", "a Traffic, a pattern's name or None",
                   type(traffic).__name__)
    traffic.check_endpoints(fab)
    invariant = traffic.is_uniform and set(traffic.endpoints) == set(fab.endpoints)
    return traffic, invariant


def intact_solve(fab: Fabric, traffic: Traffic, method: str, warm_start: bool,
                 options: dict[str, Any], given: FlowResult | None = None,
                 ) -> tuple[FlowResult, FlowResult | None]:
    """The intact fabric's solve (``given``, else solved now) and, when ``warm_start``, the
    lengths every failed solve starts from (only they travel to an executor)."""
    intact = given if given is not None else max_concurrent_flow(fab, traffic, method=method,
                                                                 **options)
    warm = lengths_only(intact) if (warm_start and intact.certificate is not None
                                    and intact.certificate.lengths is not None) else None
    return intact, warm


def reroutable(fab: Fabric, intact: FlowResult, traffic: Traffic, method: str,
               warm_start: bool) -> IntactFlow | None:
    """The intact flow every trial may send around its failures (:func:`solve_failed`):
    with warm starts, for the methods that may answer from bounds, on a large fabric (a
    small one's exact solve is quicker than proving the intact flow)."""
    if not warm_start or method not in ("auto", "approx"):
        return None
    if lp_size_estimate(fab, traffic) <= FIND_SYMMETRY_NONZEROS:
        return None
    return IntactFlow.of(fab, intact, traffic)


#: Solve options under which :func:`solve_failed` may answer from the bounds alone: the
#: bracket's tolerance and the view of the endpoint links (a backend, a time or work limit
#: asks for that solver's run, which is then done as asked).
BOUNDS_ANSWER_OPTIONS = frozenset({"gap", "include_endpoint_links"})


def exact_shortcut(failed: Fabric, traffic: Traffic, method: str, options: dict[str, Any],
                   warm_start: FlowResult | None = None, ga: GraphArrays | None = None
                   ) -> FlowResult | None:
    """A failed fabric's exact answer by a short way, or None (then solve it as usual).

    * **A GPU cut off** (its only link failed): theta is 0, proven by the distance bound (an
      unreachable pair), where a solve would first route the whole fabric (2 s on
      ``fat_tree(8)``).
    * **A small failed fabric keeps most of its group.** Below ``FIND_SYMMETRY_NONZEROS``
      :func:`~fabricopt.max_concurrent_flow` solves the full LP without looking for one; for
      a failure trial (warm from the intact fabric, all-to-all traffic) the search and the
      symmetric LP are cheaper: on ``fat_tree(8)`` missing one switch link, 0.1 s and a few
      hundredths where the full LP took 1.2 s.

    ``ga`` (the failed fabric's arrays) spares reading them again.
    """
    ga = ga or GraphArrays.from_fabric(failed)
    if not _one_component(ga, traffic):
        bracket = cheap_bracket(failed, traffic, include_endpoint_links=options.get(
            "include_endpoint_links", True))
        if bracket.unreachable is not None:
            return replace(bracket, theta=0.0, status="optimal",
                           message=f"{bracket.unreachable[0]} cannot reach "
                                   f"{bracket.unreachable[1]}: theta = 0")
    if (method == "auto" and warm_start is not None
            and lp_size_estimate(failed, traffic, ga) <= FIND_SYMMETRY_NONZEROS):
        found = useful_symmetry(failed, traffic)
        if found is not None:
            r = max_concurrent_flow(with_symmetry(failed, found.symmetry), traffic,
                                    method="symmetric", **options)
            if r.certificate is not None:  # the group travels with the proof, as in auto
                r.certificate = roots_carrying(r.certificate, found.symmetry)
                r.message = "; ".join(m for m in (found.message, r.message) if m)
            return r
    return None


def solve_failed(failed: Fabric, traffic: Traffic, method: str, options: dict[str, Any],
                 warm_start: FlowResult | None = None,
                 intact: IntactFlow | None = None) -> FlowResult:
    """One failed fabric's certified bracket, from the intact one's lengths.

    First :func:`exact_shortcut`. Then a failed fabric large enough that ``method="auto"``
    would look for its symmetry (the full LP over ``FIND_SYMMETRY_NONZEROS`` nonzeros) tries
    the bounds: the hierarchy cuts and the intact lengths' ball cut above, the routed lower
    bounds (WCMP rebalanced against the load among them) below, plus one round of the
    approximate method. When that bracket is within ``gap`` (default 1%, the approximate
    method's own stopping rule) it is the answer, status ``"inexact"`` unless the bounds
    meet; otherwise ``method`` solves it as before. On ``fat_tree(16)`` with 20 failed
    switch links (50 draws, seed 1) the bounds meet in 49 and are within 0.01% in the last.

    With ``intact`` (the intact fabric's flow, re-proven once), the first try is that flow
    sent around what failed (:mod:`~fabricopt.failures.intact_flow`) under the
    hierarchy cut: it closes a failed 4,096-GPU SuperPOD in about two seconds, where the
    failed fabric's own routing would not fit in memory. A bracket it leaves wider than
    ``gap`` is first narrowed through the fabric's planes where it has them
    (:mod:`~fabricopt.failures.plane_bracket`), then kept as the answer (status ``"inexact"``, the
    message says why) when within ``gap`` or the failed fabric is too large for the routed
    bounds, whose place it takes.
    """
    start = time.perf_counter()
    ga = GraphArrays.from_fabric(failed)
    short = exact_shortcut(failed, traffic, method, options, warm_start, ga)
    if short is not None:
        return short
    size = lp_size_estimate(failed, traffic, ga)
    bounds_only = method in ("auto", "approx") and set(options) <= BOUNDS_ANSWER_OPTIONS
    if intact is not None and bounds_only and options.get("include_endpoint_links", True):
        # Where the planes follow, they close what the detours' search would not (see
        # intact_flow.from_recipe), so only the detours' even spread, searched after them
        # when they do not close it.
        # Under a command's one limit (fabricopt failures --time-limit) the options carry
        # none: the planes take this solve's share of it, as the engine's solve would.
        budget, limit = active_budget(), options.get("time_limit")
        limit = budget.share() if limit is None and budget is not None else limit
        follow = planes_follow(failed, traffic, limit, ga)
        around = rerouted_answer(failed, traffic, intact, search=not follow)
        if around is not None:
            around.seconds = time.perf_counter() - start  # the shortcut's look included
            too_large = method == "auto" and size // 3 > ECMP_MAX_ENTRIES
            gap = options.get("gap", 0.01)
            if around.upper - around.lower > gap * around.upper:
                # A failed Clos of servers: its planes narrow what the detours left open.
                planes = plane_bracket(failed, traffic, limit, ga)
                if planes is not None:
                    around = narrowed(around, planes)
            if follow and around.upper - around.lower > gap * around.upper:
                # The planes did not close what the detours' search was skipped for.
                searched = rerouted_answer(failed, traffic, intact, search=True)
                if searched is not None:
                    around = with_stage_ends(around, searched)
                around.seconds = time.perf_counter() - start
            if acceptable(around, gap, too_large, f" ({size // 3:,} flow entries)"):
                # Open within the gap: closed by the routed bounds where they are cheap,
                # as a single solve of this fabric closes it.
                left = None if limit is None else max(limit - (time.perf_counter() - start),
                                                      0.0)  # what the detours left of it
                return routed_when_cheap(failed, traffic, around, options.get(
                    "include_endpoint_links", True), left, ga)
    if bounds_only and size > FIND_SYMMETRY_NONZEROS:
        gap = options.get("gap", 0.01)
        first = max_concurrent_flow(failed, traffic, method="approx", bounds_first=True,
                                    work_limit=1, warm_start=warm_start, **options)
        if first.exact:
            return first
        if first.upper > 0 and first.certificate is not None \
                and first.upper - first.lower <= gap * first.upper:
            return replace(first, status="inexact", work_limit=None,
                           message=f"{first.message}; within gap {gap:.3%} from the bounds "
                                   "and one approximate round")
        # The solve below repeats the bounds stage (a third of a second here): its cut
        # lengths start the approximate method, which took five times as long without them.
    return max_concurrent_flow(failed, traffic, method=method, warm_start=warm_start,
                               **options)


def _one_component(ga: GraphArrays, traffic: Traffic) -> bool:
    """Whether every endpoint of ``traffic`` reaches every other (one strongly connected
    component holds them all): then no demand pair is cut off."""
    n = ga.n_nodes
    arcs = sp.csr_matrix((np.ones(ga.n_arcs), (ga.tail, ga.head)), shape=(n, n))
    label = connected_components(arcs, directed=True, connection="strong")[1]
    return len({int(label[ga.index[e]]) for e in traffic.endpoints}) <= 1


def _solve_trial(failed: Fabric, traffic: Traffic, method: str, options: dict[str, Any],
                 warm_start: FlowResult | None = None,
                 intact: IntactFlow | None = None) -> dict[str, Any]:
    """Solve one failed fabric from the intact one's lengths and flow; only plain numbers
    travel back (executors pickle them)."""

    r = solve_failed(failed, traffic, method, options, warm_start, intact)
    return {"theta": r.theta, "lower": r.lower, "upper": r.upper, "status": r.status,
            "method": r.method, "binding_tier": r.binding_tier, "seconds": r.seconds}


def failure_sweep(fab: Fabric, fractions: Sequence[float], *, trials: int = 10,
                  seed: Any = None, traffic: Traffic | None = None, kind: str = "links",
                  tiers: str | Sequence[str] | None = None, executor: Executor | None = None,
                  method: str = "auto", warm_start: bool = True, symmetry: bool = True,
                  progress: bool | Callable[[int, int], Any] | None = False,
                  **solve_options: Any) -> FailureSweep:
    """Theta of ``trials`` random failures at each fraction: its spread and which tier binds.

    Parameters
    ----------
    fab : Fabric
        The intact fabric.
    fractions : sequence of float
        Each from 0 to 1 (see :func:`fail_random`).
    trials : int
        Failed fabrics per fraction.
    seed : None or int
        Root of a :class:`numpy.random.SeedSequence`; trial ``j`` of fraction ``i`` draws
        from its ``i * trials + j``-th spawned child, so no trial depends on the executor or
        on the order trials finish.
        None draws fresh entropy, recorded in the result's ``seed``.
    traffic : Traffic, optional
        Default: all-to-all at 1 Gb/s over the fabric's endpoints (built once).
    kind, tiers
        As in :func:`fail_random`.
    executor : concurrent.futures.Executor, optional
        Solves run as ``executor.submit`` tasks (threads or processes); None solves in turn.
    method, **solve_options
        Passed to :func:`fabricopt.max_concurrent_flow` (e.g. ``time_limit=``).
    warm_start : bool
        True (default): every trial starts from the intact fabric's arc lengths (see the
        Notes); False: every trial solves from nothing (the answers are proven either way).
    symmetry : bool
        True (default): trials whose failures the fabric's symmetry maps onto each other
        (claimed by its generator, or found) are solved once, with all-to-all traffic
        (:mod:`~fabricopt.failures.orbits`); exact duplicates are solved once always.
    progress : None, bool or callable
        As in :func:`~fabricopt.compare`: None shows a bar of the trials on stderr when it is
        a terminal, True always, False (default: a sweep run inside another evaluation shows
        nothing of its own) never, and a function is called as ``progress(done, total)``
        after each trial (a trial sharing another's solve counts when that solve is done).
        The sweep's own: it is not passed to the solves.

    Returns
    -------
    FailureSweep
        Every trial (theta or bracket, status, binding tier, what failed), a per-fraction
        :attr:`~FailureSweep.summary`, ``to_records()`` and ``to_csv()``.

    Notes
    -----
    The eligible units, the traffic and the rounding are computed once for the intact
    fabric; each trial copies the graph minus its failures and solves it with ``method``.
    A failed fabric has no symmetry claim and is rarely transitive on its endpoints, but it
    keeps most of its group (a failed leaf-spine link leaves the node permutations inside
    each scalable unit): with ``method="auto"``, :func:`~fabricopt.search_symmetry` finds
    that group and its orbits, and the symmetric method solves one root flow per orbit,
    exactly, where the full LP would be far larger. Fabrics with little symmetry left take
    the full LP or the approximate method. Before any of these, a large failed fabric tries
    the bounds (:func:`solve_failed`): a bracket already within ``gap`` is the answer.

    The intact fabric is solved once, with the same traffic and options (its theta is the
    result's ``intact_theta``), and every trial starts from it (``warm_start=`` of
    :func:`~fabricopt.max_concurrent_flow`): the intact certificate's arc lengths,
    restricted to the arcs that remain, still prove an upper bound on the failed fabric, as
    does the best single cut they are made of (the server that lost the most NIC links),
    and the approximate method prices its first columns at them. Only those lengths travel
    to an executor. Every trial's bracket is still proven on the failed fabric itself. On
    ``superpod(2)`` with 1%, 2% and 5% of its links failed (10 trials each, seed 1) the cut
    is the exact upper bound in every trial, and the sweep took 121 s where it took 185 s
    from nothing, its slowest trial 13 s instead of 47 s (2 shared cores). With the default
    ``gap=0.01`` a trial stops once its lower bound is within 1% and then proves no theta;
    ``gap=1e-6`` asked for exact thetas: 28 of 30 exact, 123 s.

    Examples
    --------
    A ring of 6 unit links carries all-to-all at theta = 8/36 (``8 / n**2``); one failed link
    leaves a path of 6 nodes, whose middle link carries 3 x 3 pairs each way: theta = 1/9.

    >>> import fabricopt as fo
    >>> sweep = failure_sweep(fo.ring(6), [0.0, 1 / 6], trials=2, seed=1)
    >>> [(s.fraction, round(s.theta_min, 6)) for s in sweep.summary]
    [(0.0, 0.222222), (0.16666666666666666, 0.111111)]
    """
    func = "failure_sweep"
    _check_fabric(func, fab)
    check_choice(func, "method", method, METHODS)
    warm_start = check_bool(func, "warm_start", warm_start)
    symmetry = check_bool(func, "symmetry", symmetry)
    if isinstance(fractions, str | bytes) or not isinstance(fractions, Sequence | np.ndarray):
        raise fail(func, "fractions", "a sequence of numbers from 0 to 1", fractions)
    if len(fractions) == 0:
        raise fail(func, "fractions", "a non-empty sequence of numbers from 0 to 1", fractions)
    checked = [_check_fraction(func, f, f"fractions[{i}]") for i, f in enumerate(fractions)]
    trials = check_int(func, "trials", trials, minimum=1)
    if trials * len(checked) > MAX_SOLVES:  # one solve per trial and fraction
        raise fail(func, "trials", f"at most {MAX_SOLVES:,} solves in all (trials x "
                   f"{len(checked)} fraction(s))", trials)
    check_choice(func, "kind", kind, KINDS)
    tier_set = _check_tiers(func, fab, tiers)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                             or seed < 0):
        raise fail(func, "seed", "None or an integer >= 0", seed)
    if executor is not None and not isinstance(executor, Executor):
        raise fail(func, "executor", "a concurrent.futures.Executor or None", executor)
    tell = TrialProgress(func, progress, len(checked) * trials)
    traffic, default_traffic = checked_traffic(func, fab, traffic)
    root = np.random.SeedSequence(None if seed is None else int(seed))
    children = root.spawn(len(checked) * trials)
    pool = _Pool.of(fab, kind, tier_set)
    if not pool.eligible:
        raise InvalidParameterError(f"{func}(): fabric {fab.name!r} has no {kind} to fail"
                                    + (f" in tiers {sorted(tier_set)}" if tier_set else ""))

    # The intact fabric, solved once: its arc lengths bound every failed fabric's theta and
    # seed its approximate solve (only the lengths travel to executors).
    expect_solves(1 + len(checked) * trials)  # a command's time limit: the intact + trials
    intact, warm = intact_solve(fab, traffic, method, warm_start, solve_options)
    around = reroutable(fab, intact, traffic, method, warm_start)
    keys = FailureSymmetry(fab, use_symmetry=symmetry and default_traffic)
    jobs: list[tuple[float, int, Removed, int | None]] = []
    outcomes: dict[int, Any] = {}
    report = stage_report()  # a terminal's status line: which trial is being solved
    tell.start()
    try:
        for i, fraction in enumerate(checked):
            for j in range(trials):
                removed = pool.draw(fab, fraction,
                                    np.random.default_rng(children[i * trials + j]))
                same_as = keys.first_equivalent(pattern_of(removed), len(jobs))
                jobs.append((fraction, j, removed, same_as))
                if same_as is None:
                    report("failure sweep", detail=f"fraction {fraction:g}, trial {j + 1:,} "
                           f"of {trials:,}")
                    args = (apply_removed(fab, removed), traffic, method, solve_options, warm,
                            around)
                    outcomes[len(jobs) - 1] = (executor.submit(_solve_trial, *args)
                                               if executor is not None else
                                               _solve_trial(*args))
                if executor is None:  # solved in turn: this trial is done
                    tell.advance()
        return _collected(fab, pool, tier_set, root, intact, kind, jobs, outcomes, executor,
                          tell)
    finally:
        tell.close()


def _collected(fab: Fabric, pool: _Pool, tier_set: frozenset[str] | None,
               root: np.random.SeedSequence, intact: FlowResult, kind: str,
               jobs: list[tuple[float, int, Removed, int | None]], outcomes: dict[int, Any],
               executor: Executor | None, tell: TrialProgress) -> FailureSweep:
    """The sweep's result: every trial with its (or its equivalent's) solve, in order."""
    sweep = FailureSweep(fab.name, kind, tuple(sorted(tier_set)) if tier_set else None,
                         pool.eligible, int(root.entropy),  # type: ignore[arg-type]
                         intact_theta=intact.theta, intact_lower=intact.lower,
                         intact_upper=intact.upper, solves=len(outcomes),
                         mean_out_gbps=intact.mean_out_gbps)
    for fraction, j, removed, same_as in jobs:
        outcome = outcomes[len(sweep.trials) if same_as is None else same_as]
        solved = outcome.result() if executor is not None else outcome
        sweep.trials.append(FailureTrial(
            fraction, j, removed.physical_links, len(removed.switches), _describe(removed),
            **solved, same_as=same_as))
        if executor is not None:  # solved on the executor: done once its result is in
            tell.advance()
    return sweep


__all__ = ["FailureSweep", "FailureTrial", "FractionSummary", "RiskGroup", "fail_random",
           "failure_count", "failure_sweep", "risk_groups"]
