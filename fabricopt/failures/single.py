"""Every single failure, one solve per orbit: the N-1 table and the criticality ranking.

:func:`single_failures` fails each eligible unit alone (one physical link, one switch, or one
shared-risk group), groups the units the fabric's symmetry maps onto each other
(:mod:`~fabricopt.failures.orbits`), solves one representative per orbit from the
intact solve's warm start, and reports each orbit's multiplicity and certified theta bracket.
:func:`criticality` orders the same orbits by the throughput their failure costs, solving them
in the order the intact solve's arc lengths (the LP duals) predict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_int, fail
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..flow.arguments import METHODS
from ..flow.result import FlowResult
from ..flow.time_budget import expect_solves
from ..flow.warm import CAPACITY_RTOL
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .engine import max_concurrent_flow
from .intact_flow import IntactFlow, rerouted_answer
from .orbits import FailureSymmetry, Pattern
from .sweep import (
    KINDS,
    RiskGroup,
    _check_fabric,
    _check_tiers,
    _Pool,
    checked_traffic,
    exact_shortcut,
    intact_solve,
    reroutable,
    risk_groups,
)

#: Relative slack for comparing two certified bounds computed in floating point (a ring's
#: 1/9 against half of its 8/36 differ in the last bits).
ROUNDING = 1e-9
#: What one failure unit of each kind is called in a table's title.
UNIT_NAMES = {"links": "link", "switches": "switch", "groups": "risk group"}


@dataclass(frozen=True)
class FailureOrbit:
    """One orbit of single failures and what the fabric carries with one of them failed.

    ``members`` are the units of the orbit (bundles as node pairs, switches, or risk-group
    names); ``multiplicity`` counts the failures it stands for (physical links for links).
    ``theta`` is None unless proven; ``lower <= theta <= upper`` always. ``gbps_lower`` and
    ``gbps_upper`` are the bracket in Gb/s per GPU; ``lost_lower <= lost <= lost_upper`` the
    certified share of the intact throughput lost. ``screen`` is the first-order loss the
    intact solve's arc lengths predict (the order the work was done in).
    """

    representative: str
    members: tuple[Any, ...]
    multiplicity: int
    tier: str | None
    theta: float | None
    lower: float
    upper: float
    status: str
    method: str
    gbps_lower: float | None
    gbps_upper: float | None
    lost_lower: float
    lost_upper: float
    screen: float
    binding_tier: str | None
    seconds: float

    @property
    def lost(self) -> float:
        """The share of throughput lost: exact when theta is proven, else the bracket's
        midpoint."""
        return 0.5 * (self.lost_lower + self.lost_upper)


@dataclass
class FailureTable:
    """What :func:`single_failures` and :func:`criticality` return: one row per orbit.

    ``intact_*`` is the intact fabric's bracket, ``mean_out_gbps`` the traffic's demand per
    GPU at theta 1 (theta times it is Gb/s per GPU), ``solves`` the failed fabrics solved
    (one per orbit), ``units`` the single failures the rows stand for (sum of
    multiplicities).
    """

    fabric_name: str
    kind: str
    tiers: tuple[str, ...] | None
    intact_theta: float | None
    intact_lower: float
    intact_upper: float
    mean_out_gbps: float | None
    symmetry: str
    order: str
    rows: list[FailureOrbit] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def solves(self) -> int:
        return len(self.rows)

    @property
    def units(self) -> int:
        return sum(r.multiplicity for r in self.rows)

    @property
    def worst(self) -> FailureOrbit | None:
        """The orbit whose failure leaves the least (smallest upper bound)."""
        return min(self.rows, key=lambda r: (r.upper, r.lower), default=None)

    def worst_gbps(self) -> tuple[float, float] | None:
        """Certified bracket of the N-1 worst case in Gb/s per GPU: no single failure leaves
        less than the first number, and one leaves at most the second."""
        if not self.rows or self.mean_out_gbps is None:
            return None
        return (min(r.lower for r in self.rows) * self.mean_out_gbps,
                min(r.upper for r in self.rows) * self.mean_out_gbps)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row (members as text)."""
        out = []
        for r in self.rows:
            rec = asdict(r)
            rec["members"] = len(r.members)
            rec["lost"] = r.lost
            out.append(rec)
        return out

    def __str__(self) -> str:
        def gbps(r: FailureOrbit) -> str:
            if r.gbps_lower is None or r.gbps_upper is None:
                return "-"
            if r.theta is not None:
                return f"{r.gbps_lower:.4g}"
            return f"[{r.gbps_lower:.4g}, {r.gbps_upper:.4g}]"

        title = "criticality" if self.order == "lost" else "single failures"
        out = self.mean_out_gbps
        if out is None:
            intact = "-"
        elif self.intact_theta is not None:
            intact = f"{self.intact_theta * out:.4g} Gb/s per GPU (theta {self.intact_theta:.6g})"
        else:  # not proven: the bracket, never its lower end alone as if exact
            intact = (f"[{self.intact_lower * out:.4g}, {self.intact_upper * out:.4g}] Gb/s "
                      f"per GPU (theta in [{self.intact_lower:.6g}, {self.intact_upper:.6g}])")
        lines = [f"{title:<17}{self.fabric_name}: every single {UNIT_NAMES[self.kind]}"
                 + (f" of tiers {', '.join(self.tiers)}" if self.tiers else "")
                 + f", {self.units} failures in {self.solves} orbits, {self.seconds:.1f} s",
                 f"{'intact':<17}{intact}",
                 f"{'symmetry':<17}{self.symmetry}",
                 f"{'orbit':<34}{'count':>6}  {'Gb/s per GPU':>20}  {'lost':>7}  tier"]
        for r in self.rows:
            lost = f"{100 * r.lost:.1f}%" if r.lost_upper - r.lost_lower < 1e-3 else \
                f"{100 * r.lost_lower:.0f}-{100 * r.lost_upper:.0f}%"
            lines.append(f"{r.representative[:33]:<34}{r.multiplicity:>6}  {gbps(r):>20}  "
                         f"{lost:>7}  {r.tier or '-'}")
        return "\n".join(lines)


def _unit_pattern(kind: str, unit: Any) -> tuple[Pattern, str, str | None, int, Any]:
    """(pattern, description, tier, weight, member label) of one failure unit."""
    if kind == "links":
        u, v = unit
        return (Pattern({frozenset((u, v)): 1}, frozenset()), f"link {u}-{v}", None, 1, (u, v))
    if kind == "switches":
        return Pattern({}, frozenset([unit])), f"switch {unit}", None, 1, unit
    grp: RiskGroup = unit
    return (Pattern({pair: 0 for pair in grp.links}, grp.switches), grp.name, None, 1,
            grp.name)


def _screen(intact: FlowResult, fab: Fabric, pattern: Pattern) -> float:
    """First-order loss share predicted by the intact arc lengths: the capacity removed,
    weighted by its length, over the total length-weighted capacity (the distance bound's
    denominator, whose derivative is the dual value of each arc's capacity)."""
    lengths = intact.lengths
    if not lengths:
        return 0.0
    g = fab.graph
    total = sum(lengths.get((u, v), 0.0) * c for u, v, c in g.edges(data="capacity"))
    if total <= 0:
        return 0.0
    lost = 0.0
    for pair, n in pattern.links.items():
        u, v = tuple(pair)
        for a, b in ((u, v), (v, u)):
            if g.has_edge(a, b):
                d = g[a][b]
                share = 1.0 if n == 0 else n / int(d.get("links", 1))
                lost += lengths.get((a, b), 0.0) * d["capacity"] * share
    for w in pattern.switches:
        for a, b, c in list(g.out_edges(w, data="capacity")) + list(g.in_edges(w, data="capacity")):
            lost += lengths.get((a, b), 0.0) * c
    return lost / total


def solve_orbits(fab: Fabric, kind: str, tiers: Any, *, traffic: Traffic | None,
                 method: str, warm_start: bool, symmetry: bool, order: str, func: str,
                 solve_options: dict[str, Any], intact: FlowResult | None = None,
                 ) -> FailureTable:
    """The work of :func:`single_failures` and :func:`criticality` (checked arguments)."""
    start = time.perf_counter()
    _check_fabric(func, fab)
    check_choice(func, "kind", kind, KINDS)
    check_choice(func, "method", method, METHODS)
    warm_start = check_bool(func, "warm_start", warm_start)
    symmetry = check_bool(func, "symmetry", symmetry)
    tier_set = _check_tiers(func, fab, tiers)
    traffic, default_traffic = checked_traffic(func, fab, traffic)
    pool = _Pool.of(fab, kind, tier_set)
    if intact is not None:
        check_intact(func, fab, traffic, intact)
    expect_solves(1 + pool.eligible)  # a command's time limit: at most, before the orbits
    intact, warm = intact_solve(fab, traffic, method, warm_start, solve_options, intact)
    around = reroutable(fab, intact, traffic, method, warm_start) if not solve_options else None
    keys = FailureSymmetry(fab, use_symmetry=symmetry and default_traffic)

    orbits: dict[Hashable, dict[str, Any]] = {}
    for unit, weight in zip(pool.units, pool.weights.tolist(), strict=True):
        pattern, text, _, _, member = _unit_pattern(kind, unit)
        orbit = orbits.setdefault(keys.key(pattern), {"pattern": pattern, "text": text,
                                                      "members": [], "count": 0})
        orbit["members"].append(member)
        orbit["count"] += int(weight)
    work = list(orbits.values())
    expect_solves(len(work))
    for o in work:
        o["screen"] = _screen(intact, fab, o["pattern"])
    if order == "lost":
        work.sort(key=lambda o: -o["screen"])
    table = FailureTable(fab.name, kind, tuple(sorted(tier_set)) if tier_set else None,
                         intact.theta, intact.lower, intact.upper, intact.mean_out_gbps,
                         keys.symmetry_note if keys.use_symmetry else
                         "not used (traffic given or symmetry=False): equal patterns only",
                         order)
    out = intact.mean_out_gbps
    for o in work:
        links, switches = o["pattern"].removal(fab)
        failed = fab.without(links=links, switches=switches)
        r = (exact_shortcut(failed, traffic, method, solve_options, warm)
             or _closed_by_reroute(failed, traffic, around)
             or max_concurrent_flow(failed, traffic, method=method, warm_start=warm,
                                    **solve_options))
        tier = _tier_of(fab, o["pattern"])
        table.rows.append(FailureOrbit(
            o["text"], tuple(o["members"]), o["count"], tier, r.theta, r.lower, r.upper,
            r.status, r.method, None if out is None else r.lower * out,
            None if out is None else r.upper * out,
            _lost(r.upper, intact.lower), _lost(r.lower, intact.upper), o["screen"],
            r.binding_tier, r.seconds))
    if order == "lost":
        table.rows.sort(key=lambda r: (-r.lost, r.representative))
    table.seconds = time.perf_counter() - start
    return table


def graph_difference(ga: GraphArrays, other: GraphArrays) -> str | None:
    """How the graph of ``other`` differs from that of ``ga`` (nodes, arcs, capacities), in
    words, or None when they are the same graph.

    The graph's fingerprint is the arrays themselves: node names, each arc's tail and head,
    and its capacity, compared whole (numpy's comparisons, a few milliseconds for a million
    arcs) rather than hashed, so a difference is named, never missed by a collision.
    Capacities agree to :data:`~fabricopt.flow.warm.CAPACITY_RTOL` (a file read back may
    differ in the last digit); node and arc order may differ.

    >>> import fabricopt as fo
    >>> a = GraphArrays.from_fabric(fo.ring(4))
    >>> graph_difference(a, GraphArrays.from_fabric(fo.ring(4))) is None
    True
    >>> graph_difference(a, GraphArrays.from_fabric(fo.ring(4, link_gbps=2)))
    "arc 'n0'->'n1' has 2 Gb/s there and 1 Gb/s here"
    """
    if other is ga:
        return None
    if other.n_nodes != ga.n_nodes or other.n_arcs != ga.n_arcs:
        return (f"it has {other.n_nodes:,} nodes and {other.n_arcs:,} arcs, this fabric "
                f"{ga.n_nodes:,} and {ga.n_arcs:,}")
    if other.nodes == ga.nodes and np.array_equal(other.tail, ga.tail) \
            and np.array_equal(other.head, ga.head):
        where = np.arange(ga.n_arcs)
    else:  # the same graph in another order, or another graph
        missing = next((v for v in other.nodes if v not in ga.index), None)
        if missing is not None:
            return f"its node {missing!r} is not in this fabric"
        position = {arc: a for a, arc in enumerate(other.arcs)}
        where = np.fromiter((position.get(arc, -1) for arc in ga.arcs), dtype=np.int64,
                            count=ga.n_arcs)
        absent = np.flatnonzero(where < 0)
        if len(absent):
            u, v = ga.arcs[absent[0]]
            return f"this fabric's arc {u!r}->{v!r} is not in it"
    theirs = other.capacity[where]
    off = np.flatnonzero(~np.isclose(theirs, ga.capacity, rtol=CAPACITY_RTOL, atol=0.0))
    if len(off):
        a = int(off[0])
        u, v = ga.arcs[a]
        return (f"arc {u!r}->{v!r} has {theirs[a]:g} Gb/s there and {ga.capacity[a]:g} Gb/s "
                "here")
    return None


def check_intact(func: str, fab: Fabric, traffic: Traffic, intact: Any) -> None:
    """Raise unless ``intact`` is a :class:`FlowResult` of ``fab``'s graph with ``traffic``.

    The fabric is recognised by its graph (:func:`graph_difference` against the arrays the
    result's certificate was proven on), not by its name: two fabrics of one generator with
    other rates share a name, and a result of the other one would make every loss wrong.
    """
    rule = f"{func}(): intact must be None or the FlowResult of this fabric ({fab.name!r})"
    if not isinstance(intact, FlowResult):
        raise fail(func, "intact", f"None or the FlowResult of this fabric ({fab.name!r})",
                   type(intact).__name__)
    if intact.certificate is None:
        raise InvalidParameterError(f"{rule}, with the certificate that names the graph it "
                                    f"was solved on; the one given (of "
                                    f"{intact.fabric_name!r}) has none")
    why = graph_difference(GraphArrays.from_fabric(fab), intact.certificate.ga)
    if why is not None:
        raise InvalidParameterError(f"{rule}; the one given (of {intact.fabric_name!r}) was "
                                    f"solved on another graph: {why}")
    if intact.traffic_name != traffic.name:
        raise InvalidParameterError(f"{rule} with traffic {traffic.name!r}; the one given was "
                                    f"solved with traffic {intact.traffic_name!r}")


def _closed_by_reroute(failed: Fabric, traffic: Traffic, around: IntactFlow | None
                       ) -> FlowResult | None:
    """``failed``'s exact answer from the intact flow sent around what failed, or None."""
    if around is None:
        return None
    r = rerouted_answer(failed, traffic, around)
    return r if r is not None and r.exact else None


def _lost(failed: float, intact: float) -> float:
    """1 - failed / intact, clipped to [0, 1] (0 when the intact fabric carries nothing)."""
    if intact <= 0 or not math.isfinite(intact):
        return 0.0
    return min(1.0, max(0.0, 1.0 - failed / intact))


def _tier_of(fab: Fabric, pattern: Pattern) -> str | None:
    tiers = {str(fab.graph[u][v].get("tier", "link"))
             for u, v in (tuple(p) for p in pattern.links)}
    tiers |= {str(d.get("tier", "link")) for w in pattern.switches
              for _, _, d in fab.graph.out_edges(w, data=True)}
    return ", ".join(sorted(tiers)) or None


def single_failures(fab: Fabric, kind: str = "links", tiers: str | Sequence[str] | None = None,
                    *, traffic: Traffic | None = None, method: str = "auto",
                    warm_start: bool = True, symmetry: bool = True,
                    intact: FlowResult | None = None, **solve_options: Any) -> FailureTable:
    """The N-1 table: every single failure of a kind, one certified solve per orbit.

    Parameters
    ----------
    fab : Fabric
        The intact fabric.
    kind : {"links", "switches", "groups"}
        One physical link (of a bundle of parallel links, one of them), one switch with its
        links, or one shared-risk group (:func:`~fabricopt.risk_groups`).
    tiers : str or list of str, optional
        Only units of these tiers (as in :func:`~fabricopt.fail_random`).
    traffic : Traffic, optional
        Default all-to-all at 1 Gb/s. Symmetry groups failures only for uniform all-to-all
        over every GPU (invariant under the group); other traffic solves every unit.
    method, **solve_options
        Passed to :func:`~fabricopt.max_concurrent_flow`.
    warm_start : bool
        Start every failed solve from the intact solve's arc lengths.
    symmetry : bool
        Group failures the fabric's symmetry maps onto each other (default True).
    intact : FlowResult, optional
        The intact fabric's solve with the same traffic, reused instead of solved again (the
        links table and the switches table of one fabric share it).

    Returns
    -------
    FailureTable
        One :class:`FailureOrbit` per orbit, in the fabric's order: representative, members,
        multiplicity, certified theta bracket, Gb/s per GPU and the share lost.

    Examples
    --------
    A ring of 6 unit links: rotations map every link onto every other, so one solve answers
    for all 6 single-link failures; the path left carries theta = 1/9 (the ring, 8/36).

    >>> import fabricopt as fo
    >>> t = single_failures(fo.ring(6))
    >>> [(r.multiplicity, round(r.theta, 6), round(r.lost, 3)) for r in t.rows]
    [(6, 0.111111, 0.5)]
    """
    return solve_orbits(fab, kind, tiers, traffic=traffic, method=method,
                        warm_start=warm_start, symmetry=symmetry, order="fabric",
                        func="single_failures", solve_options=solve_options, intact=intact)


def criticality(fab: Fabric, kind: str = "links", tiers: str | Sequence[str] | None = None,
                *, traffic: Traffic | None = None, method: str = "auto",
                warm_start: bool = True, symmetry: bool = True,
                intact: FlowResult | None = None, **solve_options: Any) -> FailureTable:
    """Orbits of single failures ordered by the throughput their failure costs, most first.

    The intact solve's arc lengths (the dual values of the capacities) give each orbit a
    first-order loss (``screen``: the length-weighted capacity it removes over the total),
    which orders the work; each orbit is then solved exactly (certified bracket), and the
    rows are sorted by the share lost. Same parameters as :func:`single_failures`.

    Examples
    --------
    A leaf-spine of 2 leaves, 2 spines and 2 GPUs per leaf (400 Gb/s links): a GPU link
    disconnects its GPU (all of all-to-all lost); an uplink leaves its leaf 400 Gb/s up for
    2 GPUs that each send 2/3 of their traffic off the leaf, which caps each GPU at
    400 / 2 / (2/3) = 300 Gb/s of the intact 400: a quarter lost.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> rank = criticality(fab, kind="links")
    >>> [(r.representative, r.multiplicity, round(r.lost, 3)) for r in rank.rows]
    [('link g0-leaf0', 4, 1.0), ('link leaf0-spine0', 4, 0.25)]
    """
    return solve_orbits(fab, kind, tiers, traffic=traffic, method=method,
                        warm_start=warm_start, symmetry=symmetry, order="lost",
                        func="criticality", solve_options=solve_options, intact=intact)


@dataclass(frozen=True)
class CuttingSet:
    """What :func:`cutting_set` found: failures that cut throughput by ``fraction``.

    ``failures`` were chosen greedily (each the worst single failure of what was left);
    ``lower <= theta <= upper`` is the failed fabric's bracket. ``reached`` is True when it is
    proven that they cut throughput by at least ``fraction`` (``upper <= (1 - fraction) *``
    the intact lower bound). ``min_size`` is a proven lower bound on the size of the smallest
    such set: 2 when every single failure is proven to leave more than the target, so the
    greedy set is the smallest when ``len(failures) == min_size``. ``statement`` says it in
    words.
    """

    fraction: float
    failures: tuple[str, ...]
    lower: float
    upper: float
    intact_lower: float
    intact_upper: float
    reached: bool
    min_size: int
    statement: str

    @property
    def smallest(self) -> bool:
        """True when the set is proven to be a smallest one."""
        return self.reached and len(self.failures) == self.min_size


def cutting_set(fab: Fabric, fraction: float, kind: str = "links",
                tiers: str | Sequence[str] | None = None, *, max_failures: int = 8,
                method: str = "auto", **solve_options: Any) -> CuttingSet:
    """A small set of failures that cuts all-to-all throughput by at least ``fraction``.

    Greedy: fail the worst single failure (by :func:`criticality`, solved exactly on what is
    left), repeat until the certified upper bound is at most ``(1 - fraction)`` times the
    intact lower bound, or ``max_failures`` are failed. The N-1 table of the intact fabric
    proves a lower bound on the smallest set's size (2 when no single failure can do it).

    Examples
    --------
    A ring of 6: one failed link halves all-to-all (8/36 to 1/9), so 50% takes one failure.

    >>> import fabricopt as fo
    >>> found = cutting_set(fo.ring(6), 0.5)
    >>> found.failures, found.smallest
    (('link n0-n1',), True)
    """
    func = "cutting_set"
    _check_fabric(func, fab)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) \
            or not 0.0 < float(fraction) <= 1.0:
        raise fail(func, "fraction", "a number in (0, 1]", fraction)
    check_int(func, "max_failures", max_failures, minimum=1)
    check_choice(func, "kind", kind, KINDS)
    check_choice(func, "method", method, METHODS)
    _check_tiers(func, fab, tiers)
    current, chosen = fab, []
    intact_lower = intact_upper = math.nan
    min_size, lower, upper = 1, math.nan, math.nan
    while len(chosen) < max_failures:
        # solve_orbits is criticality's work, with this function's name in its messages
        table = solve_orbits(current, kind, tiers, traffic=None, method=method,
                             warm_start=True, symmetry=True, order="lost", func=func,
                             solve_options=solve_options)
        if not chosen:
            intact_lower, intact_upper = table.intact_lower, table.intact_upper
            lower, upper = intact_lower, intact_upper
            above = (1 - fraction) * intact_upper * (1 + ROUNDING)
            if table.rows and all(r.lower > above for r in table.rows):
                min_size = 2
        if not table.rows:
            break
        worst = min(table.rows, key=lambda r: (r.upper, r.lower))
        chosen.append(worst.representative)
        current = _fail_representative(current, kind, worst)
        lower, upper = worst.lower, worst.upper
        if upper <= (1 - fraction) * intact_lower * (1 + ROUNDING):
            break
    reached = bool(chosen) and upper <= (1 - fraction) * intact_lower * (1 + ROUNDING)
    if reached:
        statement = (f"proven: failing {len(chosen)} cuts throughput by at least "
                     f"{100 * fraction:.3g}% (theta <= {upper:.6g}, intact >= "
                     f"{intact_lower:.6g}); no smaller set does it" if len(chosen) == min_size
                     else f"proven: failing {len(chosen)} cuts throughput by at least "
                     f"{100 * fraction:.3g}%; the smallest such set has at least {min_size}")
    else:
        statement = (f"not reached: {len(chosen)} greedy failures leave theta in "
                     f"[{lower:.6g}, {upper:.6g}] (intact [{intact_lower:.6g}, "
                     f"{intact_upper:.6g}]); the smallest set has at least {min_size}")
    return CuttingSet(float(fraction), tuple(chosen), lower, upper, intact_lower,
                      intact_upper, reached, min_size, statement)


def _fail_representative(fab: Fabric, kind: str, row: FailureOrbit) -> Fabric:
    """``fab`` with the first member of ``row`` failed (one physical link for links)."""
    member = row.members[0]
    if kind == "links":
        return fab.without(links={tuple(member): 1})
    if kind == "switches":
        return fab.without(switches=[member])
    grp = next(g for g in risk_groups(fab) if g.name == member)
    links, switches = Pattern({p: 0 for p in grp.links}, grp.switches).removal(fab)
    return fab.without(links=links, switches=switches)


__all__ = ["CuttingSet", "FailureOrbit", "FailureTable", "criticality", "cutting_set",
           "single_failures"]
