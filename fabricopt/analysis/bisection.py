"""Bisection bandwidth: the least capacity crossing, in one direction, any split of the
endpoints into two halves — with the cut that proves the upper bound and a certified lower
bound.

* **Upper bound**: a concrete split and the arcs crossing it. Candidate endpoint splits come
  from the generator's structure (pods, scalable units, planes, rails, groups, nodes, torus
  halves), from the spectral (Fiedler) order and from Kernighan–Lin on small graphs; for each
  split, the best place for the switches is an exact minimum cut (one max-flow per direction),
  so every candidate is as good as its endpoint split allows.
* **Lower bound**: the best of the proofs below. (1) The certified two-phase hose rate ``r`` of
  :func:`~fabricopt.valiant_rate`: every traffic in which no endpoint sends or receives more
  than ``r`` is routable, a matching of ``floor(N/2)`` pairs crosses any split, so every
  bisection carries at least ``r floor(N/2)``: exact on non-blocking Clos fabrics and
  SuperPODs of any size, and on oversubscribed ones when the cheapest split follows leaf
  boundaries (4 leaves of 16 split 2 + 2, not 3 leaves split 1.5 + 1.5). (2) Every
  bisection must carry theta x the all-to-all demand between the halves
  (``docs/bisection.md#from-the-all-to-all-throughput``: theta <= 4 BB / N^2), with theta
  certified by
  :func:`~fabricopt.max_concurrent_flow`; this alone proves only about half of a
  non-blocking fabric's bisection. (3) On small graphs an exact MILP (pulp, CBC). Where
  these leave the bracket open: the hose matching plus the pairs a split leaves inside
  units (:mod:`~fabricopt.analysis.local_pairs`), a flow whose top-tier part is chosen per
  split profile (:mod:`~fabricopt.analysis.profile_flow`), and on a failed fabric the
  intact fabric's flows less what the failed links stop
  (:mod:`~fabricopt.analysis.failed_bisection`), and the flow per profile and the hose
  bound proven with the failed scale-out links given back, less what those can carry.
  On a layered fabric (a Clos or fat tree, failed links and all) every choice of the top
  tier's sides is tried where they are few (exact), else its planes' exact bisections are
  summed (:mod:`~fabricopt.analysis.layered_bisection`).
  Above: the best cut with whole groups of the hierarchy swapped across it
  (:mod:`~fabricopt.analysis.split_search`).
  ``exact`` is True only when the lower and upper bounds meet.
"""

from __future__ import annotations

import json
import math
import time
import weakref
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from operator import methodcaller
from typing import Any

import numpy as np

from .._checks import check_bool, check_int, check_positive
from .._stages import stage_report
from .._unchanged import unchanged
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_endpoint_group
from ..flow.bounds import hierarchy_partitions, structural_cut_lengths
from ..flow.budget import now
from ..flow.time_budget import TimeBudget, active_budget, spending
from ..flow.two_phase.rate import ValiantBound, best_hub_level
from ..generators.recipe import try_replay
from ..graph_arrays import GraphArrays, arc_labels
from .cuts import Cut, SplitCuts, min_cut, to_integers
from .failed_bisection import capacity_lost, failed_links_lower

#: Node attributes whose values group endpoints into natural halves, most telling first.
STRUCTURE_ATTRIBUTES = ("pod", "su", "zone", "plane", "group", "tray", "node", "rail")


@dataclass(frozen=True)
class BisectionCut:
    """A split of the nodes: ``side_a`` holds half the endpoints; ``links`` cross from A to B."""

    side_a: frozenset[Hashable]
    endpoints_a: tuple[Hashable, ...]
    endpoints_b: tuple[Hashable, ...]
    links: tuple[tuple[Hashable, Hashable], ...]
    capacity_gbps: float
    found_by: str
    #: Physical links in ``links`` (a bundle of n parallel links counts n).
    physical_links: int = 0


@dataclass
class BisectionResult:
    """What :func:`bisection_bandwidth` returns (Gb/s, one direction).

    ``per_endpoint_gbps`` is the bisection divided by the number of endpoints; full bisection is
    half the injection bandwidth per endpoint, so ``full_bisection_ratio`` is 1 for a
    non-blocking fabric. In clusters the injection counted is the scale-out one (NIC links,
    not NVLink): a bisection that keeps scale-up domains whole never crosses NVLink.
    ``two_phase_rate_gbps`` is the certified rate at which any traffic is carried (see
    :func:`~fabricopt.valiant_rate`; ``hose_rate_gbps`` is its older name, kept for a
    release).
    """

    lower_gbps: float
    upper_gbps: float
    exact: bool
    cut: BisectionCut
    n_endpoints: int
    injection_gbps: float
    lower_from: str
    seconds: float = 0.0
    candidates: dict[str, float] = field(default_factory=dict)
    two_phase_rate_gbps: float = 0.0
    #: Whether the two-phase rate was sought (False when the bound below came from
    #: elsewhere, such as the intact fabric's, and ``two_phase_rate_gbps`` is 0 for that
    #: reason).
    hose_tried: bool = True
    #: The stage that proved each end, ``{"lower": ..., "upper": ...}`` (the names of
    #: :mod:`~fabricopt.analysis.bisection_plan`'s stages; ``"none"`` for nothing proven).
    stages: dict[str, str] = field(default_factory=dict)
    #: Why a bracket left open stopped short, where more time or work may narrow it: "time
    #: limit" (the call's time limit ran out), "work cap" (a search stopped at its cap with
    #: no time limit), or "" (exact, or every stage that applies ran to its end).
    stopped_short: str = ""
    #: The stages the time limit left out, not begun as not expected to end within it
    #: (names of :mod:`~fabricopt.analysis.bisection_plan`'s stages).
    not_begun: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """``"optimal"`` (the bounds meet), ``"time_limit"`` (the limit cut the stages short:
        the bracket is the best certified by then), ``"work_limit"`` (a search at its cap)
        or ``"bracket"`` (every stage that applies ran to its end, the bounds apart).

        >>> import fabricopt as fo
        >>> fo.bisection_bandwidth(fo.ring(8)).status
        'optimal'
        """
        return "optimal" if self.exact else {"time limit": "time_limit", "work cap": (
            "work_limit")}.get(self.stopped_short, "bracket")

    @property
    def per_endpoint_gbps(self) -> float:
        return self.upper_gbps / self.n_endpoints

    @property
    def hose_rate_gbps(self) -> float:
        """The older name of :attr:`two_phase_rate_gbps` (read-only, kept for a release)."""
        return self.two_phase_rate_gbps

    @property
    def full_bisection_ratio(self) -> float:
        """Bisection over full bisection ``N/2 x injection``."""
        full = self.n_endpoints / 2 * self.injection_gbps
        return self.upper_gbps / full if full > 0 else math.nan

    def __str__(self) -> str:
        state = "exact" if self.exact else "bracket"
        return "\n".join([
            f"bisection        {_gbps(self.lower_gbps)} <= B <= {_gbps(self.upper_gbps)} Gb/s "
            f"({state}; lower from {self.lower_from}, cut from {self.cut.found_by})",
            self._per_endpoint_line(),
            f"cut              {self.cut.physical_links} links in {len(self.cut.links)} "
            f"bundles, from "
            f"{len(self.cut.endpoints_a)} to {len(self.cut.endpoints_b)} endpoints",
            (f"any traffic      {_gbps(self.two_phase_rate_gbps)} Gb/s per GPU in and out is "
             f"carried (two-phase routing, certified)" if self.two_phase_rate_gbps > 0 else
             "any traffic      no rate proven (two-phase routing)" if self.hose_tried else
             "any traffic      not sought here (the bound below came from elsewhere); "
             "valiant_rate gives it"),
            *(["time limit       cut short: the bracket is the best certified by then"
               + (f"; not begun: {', '.join(self.not_begun)}" if self.not_begun else "")]
              if self.stopped_short == "time limit" else []),
        ])

    def _per_endpoint_line(self) -> str:
        """Per endpoint and against full bisection: one number when exact, else the
        certified bracket (the best cut found alone would read as proven)."""
        n, full = self.n_endpoints, self.n_endpoints / 2 * self.injection_gbps
        # Above 1 x full bisection, halves of equal size split a scale-up domain (an odd
        # number of servers): the cut crosses NVLink, counted at its own rate.
        why = ("; equal halves split a scale-up domain" if self.full_bisection_ratio > 1 + 1e-9
               else "")
        if self.exact:
            return (f"per endpoint     {_gbps(self.per_endpoint_gbps)} Gb/s "
                    f"({self.full_bisection_ratio:.3g} x full bisection{why})")
        low = self.lower_gbps / full if full > 0 else math.nan
        return (f"per endpoint     {_gbps(self.lower_gbps / n)} to "
                f"{_gbps(self.per_endpoint_gbps)} Gb/s ({low:.3g} to "
                f"{self.full_bisection_ratio:.3g} x full bisection; bracket{why})")

    def __repr__(self) -> str:
        # Short: the cut's node sets and links run to thousands of entries on a cluster.
        return (f"<BisectionResult {_gbps(self.lower_gbps)} <= B <= {_gbps(self.upper_gbps)} "
                f"Gb/s, {'exact' if self.exact else 'bracket'}, {self.n_endpoints:,} endpoints,"
                f" cut of {self.cut.physical_links:,} links>")


def _gbps(value: float) -> str:
    """Gb/s as a reader takes them in: ``3,276,800``, ``411.29``; never an exponent.

    >>> _gbps(3.2768e6), _gbps(411.29), _gbps(0.666667)
    ('3,276,800', '411.29', '0.666667')
    """
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:,.6g}"



def _split_by_keys(keys: list[Any], half: int) -> np.ndarray | None:
    """Mask of the first ``half`` endpoints after sorting by key (whole groups first)."""
    if len(set(keys)) < 2:
        return None
    if len(set(map(type, keys))) == 1:  # one kind of key: sorted by it, ties in index order
        order = sorted(range(len(keys)), key=keys.__getitem__)
    else:
        order = sorted(range(len(keys)), key=lambda i: (repr(type(keys[i])), keys[i], i))
    mask = np.zeros(len(keys), dtype=bool)
    mask[order[:half]] = True
    return mask


def _structural_splits(fab: Fabric, eps: tuple, half: int) -> dict[str, np.ndarray]:
    g = fab.graph
    out: dict[str, np.ndarray] = {}
    # The endpoints' attribute dicts, each read by a C-level map per attribute (the node
    # view's lookups were a sixth of a second per row on a 24,576-GPU cluster).
    data = list(map(g._node.__getitem__, eps))
    for attr in STRUCTURE_ATTRIBUTES:
        keys = list(map(methodcaller("get", attr), data))
        if any(k is None for k in keys):
            continue
        mask = _split_by_keys(keys, half)
        if mask is not None:
            out[f"structure:{attr}"] = mask
    coords = list(map(methodcaller("get", "coords"), data))
    if all(isinstance(c, list | tuple) for c in coords) and coords:
        for d in range(len(coords[0])):
            mask = _split_by_keys([tuple(c[d:]) + tuple(c[:d]) for c in coords], half)
            if mask is not None:
                out[f"structure:coords[{d}]"] = mask
    return out


def _cut_off_first_splits(fab: Fabric, ga: GraphArrays, eps: tuple, half: int
                          ) -> dict[str, np.ndarray]:
    """Splits that fill one half with the endpoints left with no links first (a failed
    NIC): they cost nothing on either side, so the half they join needs that many fewer
    live endpoints, and the structure decides the rest. Empty when no endpoint is cut off.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(2, 1, 2).without(links=[("g3", "leaf1")])
    >>> ga = GraphArrays.from_fabric(fab)
    >>> [m.tolist() for m in _cut_off_first_splits(fab, ga, fab.endpoints, 2).values()]
    [[True, False, False, True]]
    """
    out_cap = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    dead = [not out_cap[ga.index[e]] > 0 for e in eps]
    if not any(dead) or all(dead):
        return {}
    g = fab.graph
    out: dict[str, np.ndarray] = {}
    for attr in ("index", *STRUCTURE_ATTRIBUTES):
        keys = list(range(len(eps))) if attr == "index" else [g.nodes[e].get(attr)
                                                              for e in eps]
        if attr != "index" and any(k is None for k in keys):
            continue
        mask = _split_by_keys([(not d, k) for d, k in zip(dead, keys, strict=True)], half)
        if mask is not None:
            out[f"cut-off endpoints first, then {attr}"] = mask
    return out


#: Whole-group splits are enumerated for partitions of at most this many groups of endpoints
#: (every subset of them: 2^14 = 16,384 sums, no cut yet).
WHOLE_GROUP_MAX = 14
#: Arcs x cuts one partition's whole-group splits may cost (each split is two max-flows).
WHOLE_GROUP_WORK = 100_000


def _whole_group_splits(fab: Fabric, ga: GraphArrays, ep_idx: np.ndarray, half: int
                        ) -> dict[str, np.ndarray]:
    """Splits that put whole groups of the hierarchy (pods, scalable units, an endpoint
    cut off) in one half, topped up from one more group: the fewest endpoints taken from a
    group first. The structural splits take the groups in their order; which groups go
    together matters once they differ (a pod with a failed link, a unit of 36 servers
    beside units of 37), and here every subset is tried, as work allows.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(3, 1, 2)        # 3 leaves of 2: one leaf and half of another
    >>> ga = GraphArrays.from_fabric(fab)
    >>> splits = _whole_group_splits(fab, ga, np.array([ga.index[e] for e in fab.endpoints]), 3)
    >>> [m.astype(int).tolist() for m in splits.values()]
    [[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 0], [1, 0, 0, 0, 1, 1]]
    """
    out: dict[str, np.ndarray] = {}
    budget = max(4, WHOLE_GROUP_WORK // max(ga.n_arcs, 1))
    for p, label in enumerate(hierarchy_partitions(fab, ga)[1:]):
        _, group, sizes = np.unique(label[ep_idx], return_inverse=True, return_counts=True)
        n_groups = len(sizes)
        if not 2 < n_groups <= WHOLE_GROUP_MAX:
            continue
        subsets = np.arange(1 << n_groups)
        member = ((subsets[:, None] >> np.arange(n_groups)) & 1).astype(bool)
        totals = member @ sizes
        # A subset and its complement are the same split when both fill a half exactly.
        fits = np.flatnonzero((totals <= half) & ((totals < half) | ~member[:, 0]))
        order = fits[np.argsort(half - totals[fits], kind="stable")]
        taken = 0
        for s in order:
            rest = half - int(totals[s])
            mask = member[s][group]
            if rest:
                # Topped up from the smallest group left that can give `rest` endpoints.
                left = [j for j in np.flatnonzero(~member[s]) if sizes[j] > rest]
                if not left:
                    continue
                j = min(left, key=lambda i: (sizes[i], i))
                mask[np.flatnonzero(group == j)[:rest]] = True
            out[f"whole groups (partition {p + 1}, groups {s:#x}"
                f"{f', {rest} from group {j}' if rest else ''})"] = mask
            taken += 1
            if taken >= budget:
                break
    return out


def _spectral_split(ga: GraphArrays, ep_idx: np.ndarray, half: int) -> np.ndarray | None:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import laplacian
    from scipy.sparse.linalg import eigsh

    n = ga.n_nodes
    if n < 3 or n > 20_000:
        return None
    W = sp.csr_matrix((ga.capacity, (ga.tail, ga.head)), shape=(n, n))
    L = laplacian((W + W.T).astype(float) / 2.0)
    # A fixed start vector: ARPACK's own is random, and where the second eigenvalue is
    # repeated (a jellyfish) the vector it returns, so the split, changed from run to run.
    start = np.random.default_rng(0).random(n)
    try:
        vals, vecs = eigsh(L, k=2, sigma=-1e-6 * float(ga.capacity.max()), which="LM",
                           v0=start)
    except Exception:  # noqa: BLE001 - a failed eigensolve just means no spectral candidate
        return None
    fiedler = vecs[:, int(np.argsort(vals)[1])]
    # An eigenvector's sign is arbitrary: fixed by its largest entry, so a run never mirrors
    # the split.
    if fiedler[int(np.argmax(np.abs(fiedler)))] < 0:
        fiedler = -fiedler
    order = np.argsort(fiedler[ep_idx], kind="stable")
    mask = np.zeros(len(ep_idx), dtype=bool)
    mask[order[:half]] = True
    return mask


def _kernighan_lin_split(fab: Fabric, eps: tuple, half: int, seed: int) -> np.ndarray | None:
    import networkx as nx
    from networkx.algorithms.community import kernighan_lin_bisection

    if fab.graph.number_of_nodes() > 3000:
        return None
    U = nx.Graph()
    U.add_nodes_from(fab.graph.nodes)
    for u, v, c in fab.graph.edges(data="capacity"):
        w = U[u][v]["weight"] + c if U.has_edge(u, v) else c
        U.add_edge(u, v, weight=w)
    a, _ = kernighan_lin_bisection(U, weight="weight", seed=seed)
    in_a = [e in a for e in eps]
    # Rebalance on endpoints: KL balances all nodes, a bisection balances endpoints.
    order = sorted(range(len(eps)), key=lambda i: (not in_a[i], i))
    mask = np.zeros(len(eps), dtype=bool)
    mask[order[:half]] = True
    return mask


def _best_cut(ga: GraphArrays, ep_idx: np.ndarray, mask: np.ndarray,
              one_way: bool = False, cuts: SplitCuts | None = None) -> tuple[Cut, bool]:
    """Least capacity crossing the endpoint split, either direction; True if A->B won.
    ``one_way``: the graph is :func:`_reversible_whole` (the caller checked), so an exact
    A->B cut is the answer without the B->A search. ``cuts``: the graph's
    :class:`~fabricopt.analysis.cuts.SplitCuts` on ``ep_idx`` (the same cuts, its layout
    built once), when the caller keeps one."""
    a, b = ep_idx[mask], ep_idx[~mask]
    ab = min_cut(ga, a, b) if cuts is None else cuts.cut(mask)
    if one_way and ab.exact_search:
        # Every B->A cut is a set whose complement takes in from it what it sends out (each
        # arc's reverse has its capacity): no less than the A->B minimum, and sums of whole
        # Gb/s are exact, so a tie, which A->B wins below anyway.
        return ab, True
    ba = min_cut(ga, b, a) if cuts is None else cuts.cut(~mask)
    return (ab, True) if ab.capacity <= ba.capacity else (ba, False)


def _milp(fab: Fabric, ga: GraphArrays, ep_idx: np.ndarray, time_limit: float | None,
          ) -> tuple[float, np.ndarray] | None:
    """Exact minimum bisection by MILP (pulp + CBC): value and the A side, or None."""
    import pulp

    n_ep = len(ep_idx)
    prob = pulp.LpProblem("bisection", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(ga.n_nodes)]
    y = [pulp.LpVariable(f"y{a}", lowBound=0) for a in range(ga.n_arcs)]
    prob += pulp.lpSum(float(c) * y[a] for a, c in enumerate(ga.capacity))
    for a in range(ga.n_arcs):
        prob += y[a] >= x[int(ga.tail[a])] - x[int(ga.head[a])]
    size = pulp.lpSum(x[int(i)] for i in ep_idx)
    if n_ep % 2 == 0:
        prob += size == n_ep // 2
    else:
        prob += size >= n_ep // 2
        prob += size <= n_ep - n_ep // 2
    prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit))
    if pulp.LpStatus[prob.status] != "Optimal" or getattr(prob, "sol_status", 1) != 1:
        return None
    side = np.array([(v.varValue or 0) > 0.5 for v in x])
    return float(pulp.value(prob.objective)), side


#: Intact bisections already proven, by recipe, endpoints and time limit: a failure study
#: asks for the same intact fabric's bisection once per failed fabric.
_INTACT_BISECTIONS: dict[tuple[str, tuple, float | None], BisectionResult] = {}
_INTACT_CACHE_SIZE = 8


def _degraded_lower(fab: Fabric, eps: tuple, time_limit: float | None,
                    ) -> tuple[float, str, BisectionResult, Fabric] | None:
    """A lower bound from the fabric the generator built before links or switches were
    removed: its certified bisection less :func:`capacity_lost`, with that bisection (its
    best cut, less the failed links crossing it, is a candidate for the failed fabric's), and
    the intact fabric itself. None when there is no such fabric to compare with (not
    generated, not edited, or not a sub-fabric of it)."""
    if not fab.origin.from_recipe:
        return None
    base = (json.dumps(fab.recipe, sort_keys=True, default=repr), eps)
    key = (*base, time_limit)
    # An exact bisection of the intact fabric serves any limit (a command's shares differ
    # on every call, and each failed copy would pay for the intact fabric again).
    ref = _INTACT_BISECTIONS.get(key) or _INTACT_BISECTIONS.get((*base, "exact"))
    intact = try_replay(fab.recipe)
    if intact is None:
        return None
    lost = capacity_lost(intact, fab)
    if lost is None:
        return None
    if ref is None:
        ref = bisection_bandwidth(intact, endpoints=eps, time_limit=time_limit)
        if len(_INTACT_BISECTIONS) >= _INTACT_CACHE_SIZE:
            _INTACT_BISECTIONS.pop(next(iter(_INTACT_BISECTIONS)))
        _INTACT_BISECTIONS[key] = ref
        if ref.exact:
            _INTACT_BISECTIONS[(*base, "exact")] = ref
    bound = (ref.lower_gbps - lost,
             f"the intact fabric's bound ({ref.lower_from}) less {lost:.6g} Gb/s of links lost")
    weighed = failed_links_lower(intact, fab, eps)
    if weighed is not None and weighed[0] > bound[0]:
        bound = weighed
    return (*bound, ref, intact)


def _physical_links(fab: Fabric, arcs: Iterable[tuple[Hashable, Hashable]]) -> int:
    """Physical links in ``arcs`` (a bundle of n counts n), read from the successor dicts
    (networkx's views cost microseconds per arc: half a second on a 65,536-GPU cut).

    >>> import fabricopt as fo
    >>> _physical_links(fo.leaf_spine(2, 1, 2, links_per_pair=3), [("leaf0", "spine0")])
    3
    """
    succ = fab.graph._succ
    return sum(int(succ[u][v].get("links", 1)) for u, v in arcs)


def _on_capacity_grid(ga: GraphArrays, lower: float) -> tuple[float, float]:
    """``lower`` raised to the next multiple of the unit every capacity is a whole multiple
    of (every cut is a sum of capacities, so no bisection lies in between), and that unit;
    ``(lower, 0)`` when the capacities have no such unit. A margin of 1e-6 units keeps a
    bound that rounding put a hair above a multiple on that multiple.

    >>> import fabricopt as fo
    >>> _on_capacity_grid(GraphArrays.from_fabric(fo.fat_tree(4)), 2_650.0)  # 400 Gb/s links
    (2800.0, 400.0)
    """
    if not lower > 0 or not len(ga.capacity):
        return lower, 0.0
    ints, _, exact = to_integers(ga.capacity, float(ga.capacity.sum()))
    if not exact or not ints.max() > 0:
        return lower, 0.0
    unit = float(ga.capacity.max()) / float(ints.max())
    return max(lower, unit * math.ceil(lower / unit - 1e-6)), unit


def _hose_rate(fab: Fabric, eps: tuple, enough_gbps: float, time_limit: float | None,
               ga: GraphArrays, bounds_first: bool | None) -> Any:
    """The certified two-phase hose rate (best hub level, stopping once it proves
    ``enough_gbps``), or None when the fabric has one-way links or hubs nothing enters (no
    two-phase routing)."""
    try:
        return best_hub_level(fab, eps, enough_gbps=enough_gbps, time_limit=time_limit,
                              arrays=ga, bounds_first=bounds_first)
    except InvalidParameterError:
        return None


def _all_to_all_may_help(fab: Fabric, traffic: Any, ga: GraphArrays, lower: float,
                         half: int, n: int) -> bool:
    """False when a cut of the hierarchy already caps the all-to-all throughput below what
    its bound would need to beat ``lower`` (theta x half x (n - half)): no solve then."""
    if lower <= 0:
        return True
    theta_cap, _ = structural_cut_lengths(fab, traffic, ga)
    return bool(theta_cap * half * (n - half) > lower * (1 + 1e-9))


#: Seconds per arc of the spectral split (3.7e-6 CPU on fat_tree(8) and a 40-switch Jellyfish)
#: and of Kernighan-Lin (1.1e-5 on fat_tree(8)), with a third in hand: under a time limit
#: each is begun only when expected to end within it.
SPECTRAL_SECONDS_PER_ARC, KERNIGHAN_LIN_SECONDS_PER_ARC = 5e-6, 1.5e-5


def _fits(seconds: float, deadline: float | None) -> bool:
    """Whether a step expected to take ``seconds`` ends before ``deadline`` (a reading of
    :func:`~fabricopt.flow.budget.now`; None: no limit)."""
    return deadline is None or now() + seconds <= deadline


def _candidate_splits(fab: Fabric, ga: GraphArrays, eps: tuple, ep_idx: np.ndarray, seed: int,
                      intact: BisectionResult | None, deadline: float | None = None,
                      ) -> dict[str, np.ndarray]:
    """The endpoint splits whose best switch placement is tried for the upper bound: by
    endpoint order, by structure, cut-off endpoints first, spectral, Kernighan-Lin, and, for
    a failed fabric, whole groups in every combination and the endpoint split of the
    ``intact`` fabric's best cut. ``deadline``: the spectral split and Kernighan-Lin are
    begun only when expected to end before it (by the arcs)."""
    half = len(eps) // 2
    masks: dict[str, np.ndarray] = {"endpoint order": np.arange(len(eps)) < half}
    masks.update(_structural_splits(fab, eps, half))
    masks.update(_cut_off_first_splits(fab, ga, eps, half))
    if intact is not None:   # a failed fabric: its bound below is known before any cut
        masks.update(_whole_group_splits(fab, ga, ep_idx, half))
    spectral = (_spectral_split(ga, ep_idx, half)
                if _fits(SPECTRAL_SECONDS_PER_ARC * ga.n_arcs, deadline) else None)
    if spectral is not None:
        masks["spectral"] = spectral
    kl = (_kernighan_lin_split(fab, eps, half, seed)
          if _fits(KERNIGHAN_LIN_SECONDS_PER_ARC * ga.n_arcs, deadline) else None)
    if kl is not None:
        masks["kernighan-lin"] = kl
    if intact is not None:
        in_a = set(intact.cut.endpoints_a)
        masks[f"the intact fabric's cut ({intact.cut.found_by})"] = np.array(
            [e in in_a for e in eps])
    return masks


def _best_candidate(ga: GraphArrays, ep_idx: np.ndarray, masks: dict[str, np.ndarray],
                    proven: float, deadline: float | None = None,
                    ) -> tuple[dict[str, float], tuple[float, str, Cut] | None]:
    """Every split's best cut (capacity by name) and the least (capacity, name, cut);
    stops once a cut is down to ``proven``, a bound below, or once ``deadline`` (a reading
    of :func:`~fabricopt.flow.budget.now`) has passed with a cut in hand."""
    candidates: dict[str, float] = {}
    best: tuple[float, str, Cut] | None = None
    seen: set[bytes] = set()
    one_way = _reversible_whole(ga)
    cuts = SplitCuts(ga, ep_idx)
    for name, mask in masks.items():
        if best is not None and best[0] <= proven * (1 + 1e-9):
            break
        if best is not None and deadline is not None and now() >= deadline:
            break  # the time limit: the best cut so far (one at least) is the upper end
        key = np.packbits(mask).tobytes()
        if key in seen or key == np.packbits(~mask).tobytes():
            continue
        seen.add(key)
        cut, _ = _best_cut(ga, ep_idx, mask, one_way, cuts)
        candidates[name] = cut.capacity
        if best is None or cut.capacity < best[0]:
            best = (cut.capacity, name, cut)
    return candidates, best


def _reversible_whole(ga: GraphArrays) -> bool:
    """True when every arc has a reverse arc of its capacity and every capacity is a whole
    number of Gb/s (below 2**52): a set then sends out exactly what it takes in. Read once
    per arrays (the last ones asked about are remembered)."""
    global _REVERSIBLE_WHOLE
    ref, out = _REVERSIBLE_WHOLE  # one read of one tuple: threads never mix two answers
    if ref() is not ga:
        out = _read_reversible_whole(ga)
        _REVERSIBLE_WHOLE = (weakref.ref(ga), out)
    return out


def _nothing() -> None:
    return None


#: The arrays :func:`_reversible_whole` read last (a weak reference) and its answer.
_REVERSIBLE_WHOLE: tuple = (_nothing, False)


def _read_reversible_whole(ga: GraphArrays) -> bool:
    if ga.n_arcs == 0:
        return False
    cap = ga.capacity
    if not np.all((cap == np.round(cap)) & (np.abs(cap) < 2.0**52)):
        return False
    n = np.int64(ga.n_nodes)
    code = ga.tail * n + ga.head
    order = np.argsort(code, kind="stable")
    want = ga.head * n + ga.tail
    rev = order[np.minimum(np.searchsorted(code[order], want), ga.n_arcs - 1)]
    return bool(np.all(code[rev] == want) and np.all(cap[rev] == cap))


def _hose_fits(fab: Fabric, ga: GraphArrays, hose: ValiantBound, n_endpoints: int) -> bool:
    """True when ``hose`` can be valiant_rate's answer for ``fab``: as many endpoints, hubs
    that are nodes, and loads on arcs of the graph within their capacities."""
    if hose.n_endpoints != n_endpoints or any(h not in fab.graph for h in hose.hubs):
        return False
    if list(hose.load_gbps) == ga.arcs:  # valiant_rate lists every arc, in the arrays' order
        loads = np.fromiter(hose.load_gbps.values(), dtype=float, count=ga.n_arcs)
        return not bool(np.any(loads > ga.capacity * (1 + 1e-9)))
    return not any(not fab.graph.has_edge(u, v) or load > fab.graph[u][v]["capacity"] *
                   (1 + 1e-9) for (u, v), load in hose.load_gbps.items())


def _scale_out_injection(fab: Fabric, ga: GraphArrays) -> np.ndarray:
    """:meth:`Fabric.scale_out_injection_gbps` of every node at once: the capacity of its
    arcs that are not scale-up, or of all its arcs when it has no other (summed in the
    graph's order, as the method sums them)."""
    out = ~arc_labels(fab).scale_up
    other = np.bincount(ga.tail[out], weights=ga.capacity[out], minlength=ga.n_nodes)
    every = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    return np.where(other > 0, other, every)


def _mean_injection(fab: Fabric, ga: GraphArrays, ep_idx: np.ndarray) -> float:
    """The injection per endpoint that full bisection counts: the scale-out one (NIC
    links) wherever an endpoint has any, so a GPU that lost its NIC adds nothing rather
    than its NVLink rate (which made one lost NIC of 64 read 0.86 x full bisection); the
    whole injection in a fabric with no scale-out links at all (a single server)."""
    out = ~arc_labels(fab).scale_up
    other = np.bincount(ga.tail[out], weights=ga.capacity[out], minlength=ga.n_nodes)[ep_idx]
    if other.any():
        return float(np.mean(other))
    return float(np.mean(_scale_out_injection(fab, ga)[ep_idx]))


def _checked_arguments(fab: Any, endpoints: Any, milp_max_nodes: Any, time_limit: Any,
                       seed: Any, bounds_first: Any, hose: Any,
                       ) -> tuple[int, float | None, int, bool | None, tuple[Hashable, ...],
                                  GraphArrays]:
    """:func:`bisection_bandwidth`'s arguments checked before any work, with the endpoints
    and the fabric's arrays."""
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"bisection_bandwidth(): fab must be a Fabric, "
                                    f"got {type(fab).__name__}")
    milp_max_nodes = check_int("bisection_bandwidth", "milp_max_nodes", milp_max_nodes,
                               minimum=0)
    if time_limit is not None:
        time_limit = check_positive("bisection_bandwidth", "time_limit", time_limit)
    seed = check_int("bisection_bandwidth", "seed", seed, minimum=0)
    if hose is not None and not isinstance(hose, ValiantBound):
        raise InvalidParameterError(f"bisection_bandwidth(): hose must be what valiant_rate "
                                    f"returns, got {type(hose).__name__}")
    if bounds_first is not None:
        bounds_first = check_bool("bisection_bandwidth", "bounds_first", bounds_first)
    eps = check_endpoint_group("bisection_bandwidth", fab, endpoints)
    ga = GraphArrays.from_fabric(fab)
    if hose is not None and not _hose_fits(fab, ga, hose, len(eps)):
        raise InvalidParameterError("bisection_bandwidth(): hose must be valiant_rate's "
                                    "answer for this fabric and these endpoints")
    with np.errstate(over="ignore"):  # the overflow is the answer sought, not a warning
        total = 4 * ga.capacity.sum()  # cut weights and their swaps must stay finite
    if not np.isfinite(total):
        raise InvalidParameterError(
            "bisection_bandwidth(): fab's capacities must sum to a finite number of Gb/s (with "
            f"room for cut arithmetic), got {total / 4:g} Gb/s over {ga.n_arcs} arcs")
    return milp_max_nodes, time_limit, seed, bounds_first, eps, ga


def bisection_bandwidth(fab: Fabric, *, endpoints: Iterable[Hashable] | None = None,
                        milp_max_nodes: int = 60, time_limit: float | None = 30.0,
                        seed: int = 0, bounds_first: bool | None = None,
                        hose: ValiantBound | None = None) -> BisectionResult:
    """Bisection bandwidth of ``fab`` among ``endpoints`` (default: all), with proof.

    Parameters
    ----------
    fab : Fabric
    endpoints : iterable, optional
        Split only these endpoints into halves (other nodes may sit on either side).
    milp_max_nodes : int
        Solve the exact MILP when the graph has at most this many nodes and the bounds do
        not meet already.
    time_limit : float, optional
        Seconds for each solve: the two-phase LP per hub level tried (at most one per switch
        tier), the all-to-all throughput and the MILP.
    seed : int
        Seed of Kernighan–Lin.
    bounds_first : bool, optional
        The two-phase rate by its bounds stage first (:func:`~fabricopt.valiant_rate`), and
        no all-to-all solve when a hierarchy cut shows it cannot raise the lower bound.
        Default: on; False runs both as they ran before the stage existed.
    hose : ValiantBound, optional
        ``valiant_rate(fab, endpoints=...)`` of this fabric and these endpoints, when the
        caller has it (a comparison row computes it as a metric of its own): used as the
        two-phase rate instead of searching the hub levels again. Its search covers the
        bisection's, so the bound is the same or better.

    Returns
    -------
    BisectionResult
        ``lower_gbps <= bisection <= upper_gbps`` (one direction), ``exact``, the best
        ``cut`` found, ``per_endpoint_gbps`` and ``full_bisection_ratio``.

    Examples
    --------
    A ring of 8 unit links: any bisection cuts at least 2 links, one arc each way; the
    certified two-phase hose rate 1/2 proves it (a matching of 4 pairs at 1/2 each crosses
    any split: 4 x 1/2 = 2), as does the all-to-all throughput 8/8^2 (0.125 x 4 x 4 = 2).

    >>> import fabricopt as fo
    >>> b = fo.bisection_bandwidth(fo.ring(8))
    >>> b.lower_gbps, b.upper_gbps, b.exact
    (2.0, 2.0, True)
    """
    if time_limit is not None:
        time_limit = check_positive("bisection_bandwidth", "time_limit", time_limit)
    outer = active_budget()
    if outer is not None and outer.limit is not None:
        # A command's one limit (fabricopt failures --time-limit): this call takes its share.
        share = outer.share()
        time_limit = share if time_limit is None else min(time_limit, share)
    # The call's own budget: every LP inside gets no more than is left of it. The graph
    # cannot change during the call: its arrays, hierarchy and arc labels are read once
    # for every step (each read them again: a third of fat_tree(64)'s call).
    with spending(TimeBudget(time_limit, solves=1)), unchanged(fab):
        found = _bisection(fab, endpoints, milp_max_nodes, time_limit, seed, bounds_first, hose)
    if outer is not None and outer.limit is not None:
        outer.finished("bisection", found.stopped_short == "time limit")
    return found


def _bisection(fab: Any, endpoints: Any, milp_max_nodes: Any, time_limit: Any, seed: Any,
               bounds_first: Any, hose: Any) -> BisectionResult:
    """:func:`bisection_bandwidth`'s work, its fabric taken as unchanged: the plan of
    :mod:`~fabricopt.analysis.bisection_plan` run on one bracket."""
    # cycle: the stages are built from this module's helpers
    from .bisection_plan import BisectionProblem, plan, run

    start = time.perf_counter()
    problem = BisectionProblem.of(fab, endpoints, milp_max_nodes=milp_max_nodes,
                                  time_limit=time_limit, seed=seed, bounds_first=bounds_first,
                                  hose=hose)
    # Each stage and the bracket so far, for a terminal's status line (free when unseen).
    problem.report = stage_report("bisection Gb/s")
    problem.report("bisection: cuts", detail=f"{problem.n:,} endpoints")
    bracket = run(plan(problem), problem)
    ga, ep_idx, eps, cut = problem.ga, problem.ep_idx, problem.eps, problem.cut
    assert cut is not None
    upper = bracket.upper
    lower, lower_from = ((bracket.lower, str(bracket.lower_proof)) if bracket.lower_by
                         else (0.0, "nothing proven"))
    on_grid = _on_capacity_grid(ga, lower)
    if on_grid[0] > lower * (1 + 1e-9):
        lower, lower_from = on_grid[0], f"{lower_from}, up to a multiple of {on_grid[1]:g} Gb/s"
    lower = min(lower, upper)
    exact = lower >= upper * (1 - 1e-9)

    side = cut.side
    a_eps = tuple(e for e, m in zip(eps, side[ep_idx], strict=True) if m)
    b_eps = tuple(e for e, m in zip(eps, side[ep_idx], strict=True) if not m)
    crossing = tuple(ga.arcs[a] for a in cut.arcs)
    bcut = BisectionCut(frozenset(map(ga.nodes.__getitem__, np.flatnonzero(side).tolist())),
                        a_eps, b_eps, crossing, float(upper), problem.found_by,
                        _physical_links(fab, crossing))
    hose = problem.hose
    return BisectionResult(float(lower), float(upper), bool(exact), bcut, problem.n,
                           _mean_injection(fab, ga, ep_idx), lower_from,
                           time.perf_counter() - start, problem.candidates,
                           hose.rate_gbps if hose is not None else 0.0, problem.hose_tried,
                           bracket.stages, "" if exact else problem.stopped_short,
                           tuple(problem.not_begun))
