r"""Two-phase (Valiant) routing: a certified rate at which *every* hose traffic is carried.

In the hose model each endpoint sends at most :math:`r` and receives at most :math:`r` Gb/s,
to and from anyone (Duffield et al., SIGCOMM 1999). Two-phase routing (Valiant and Brebner,
STOC 1981; Zhang-Shen and McKeown, HotNets 2004) fixes one flow per endpoint:

* phase 1: endpoint :math:`s` sends :math:`r\,p(\tau)` to each *hub* :math:`\tau`
  (:math:`p` in proportion to the capacity entering each hub), a flow :math:`g_s`;
* phase 2: the same flows reversed, so hub :math:`\tau` delivers :math:`r\,p(\tau)` to
  endpoint :math:`t` along :math:`g_t` backwards.

A pair :math:`(s, t)` with demand :math:`d` sends :math:`d\,p(\tau)` through each hub, on
:math:`d/r` of :math:`g_s` and :math:`d/r` of reversed :math:`g_t`. Summed over any traffic
whose row and column sums are at most :math:`r`, arc :math:`a` carries at most
:math:`L(a) + L(\bar a)` with :math:`L = \sum_s g_s` and :math:`\bar a` the reverse arc. So
the largest :math:`r` with :math:`L(a) + L(\bar a) \le c(a)` on every arc is a certified
rate for the whole hose: every permutation, every all-to-all within it.

Bisection follows: a split into halves :math:`A, B` with :math:`|A| \le |B|` is crossed by a
matching of :math:`|A|` pairs at :math:`r` each, so at least :math:`r\,|A|` Gb/s cross from
A to B. On a non-blocking Clos with the top tier as hubs, :math:`r` is the injection rate and
this bound is the exact bisection (which all-to-all throughput alone proves only to half).

The LP is solved per source (``method="lp"``) or, on fabrics with a symmetry claim, for one
root per endpoint orbit with one capacity row per arc orbit and colour refinement, exactly as
:mod:`fabricopt.flow.symmetric` does for all-to-all. Either way the rate reported is
re-proved from the lifted flows by :func:`~fabricopt.flow.certificate.certify`, as every
throughput answer is: conservation residual charged, then scaled by the worst overload (the
load checked against each arc's capacity being :math:`L(a) + L(\bar a)`).

Before either LP, ``method="auto"`` runs a bounds stage (:mod:`fabricopt.flow.two_phase.bounds`,
:mod:`fabricopt.flow.two_phase.domains`): a cut of the hierarchy above, WCMP phase-1 flows or
the LP with alike scale-up domains merged below. Where they meet, that is the answer (method
``"bounds"``) and no LP over every endpoint is built.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from ..._checks import check_bool
from ...errors import InvalidParameterError
from ...fabric import check_endpoint_group
from ...graph_arrays import GraphArrays, arc_labels
from ...symmetry.search import search_symmetry, with_symmetry
from ..backends import check_solve_args, solve_lp
from ..bounds import hierarchy_partitions
from ..certificate import certify
from ..lp import LinearProgram
from ..model import DistanceBound, LiftedFlow, max_theta_lp
from ..symmetric import (
    OrbitClasses,
    class_conservation_rows,
    conservation_residual,
    endpoint_orbits,
    fabric_arc_orbits,
    invariant_loads,
)
from .bounds import HoseProof, best_cut, closes, wcmp_phase_one
from .domains import DomainPhaseOne

#: Largest full (per-source) LP built, in nonzeros; above it only the symmetric LP is tried.
MAX_FULL_NONZEROS = 1_000_000


@dataclass
class ValiantBound:
    """What :func:`valiant_rate` returns.

    ``rate_gbps`` is certified: every traffic in which no endpoint sends or receives more
    than it is routable at once. ``load_gbps`` is the two-phase load per arc at that rate
    (phase 1 plus phase 2), never above the arc's capacity. ``level`` is the hub level (hops
    from the endpoints) when the hubs were chosen by level.
    """

    rate_gbps: float
    status: str
    method: str
    hubs: tuple[Hashable, ...]
    n_endpoints: int
    max_overload: float = 0.0
    max_residual: float = 0.0
    seconds: float = 0.0
    message: str = ""
    load_gbps: dict[tuple[Hashable, Hashable], float] = field(default_factory=dict, repr=False)
    level: int | None = None
    #: The least bound of the cuts tried by the bounds stage (inf when it did not run): the
    #: best two-phase rate with these hubs is at most this.
    upper_gbps: float = np.inf
    #: The nodes on one side of that cut, when a cut gives it; else the arc lengths whose
    #: two-phase distance bound does (``lengths``).
    cut: frozenset[Hashable] | None = field(default=None, repr=False)
    lengths: dict[tuple[Hashable, Hashable], float] | None = field(default=None, repr=False)
    #: The flows behind ``rate_gbps``, re-proven by :func:`~fabricopt.check_certificate`.
    proof: HoseProof | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return (f"hose rate        {self.rate_gbps:.6g} Gb/s per endpoint, any traffic "
                f"(two-phase via {len(self.hubs)} hubs; {self.method}, {self.status})")


def hub_levels(fab: Any, endpoints: Iterable[Hashable] | None = None,
               ) -> dict[int, tuple[Hashable, ...]]:
    """Candidate hub sets: the network switches at each hop distance from the nearest
    endpoint (1: leaves, 2: spines, 3: cores of a 3-tier Clos), or ``{0: endpoints}`` in a
    direct network with no switches.

    Switches with only scale-up links (NVSwitches; see :func:`fabricopt.tiers.is_scale_up_arc`)
    count only when there is no other switch: in a cluster, detouring through another
    server's NVSwitch would cost scale-out bandwidth twice. Every level is invariant under the
    automorphisms that keep the endpoints, so the symmetric method applies to each.

    >>> import fabricopt as fo
    >>> {level: len(hubs) for level, hubs in hub_levels(fo.fat_tree(4)).items()}
    {1: 8, 2: 8, 3: 4}
    """
    eps = check_endpoint_group("hub_levels", fab, endpoints)
    return _levels(fab, GraphArrays.from_fabric(fab), eps)


def scale_up_arcs(fab: Any, ga: GraphArrays) -> np.ndarray:
    """Mask of the scale-up arcs of ``ga`` (:func:`fabricopt.tiers.is_scale_up_arc`)."""
    return arc_labels(fab).scale_up


def _levels(fab: Any, ga: GraphArrays, eps: tuple[Hashable, ...],
            scale_up: np.ndarray | None = None, dead: np.ndarray | None = None,
            ) -> dict[int, tuple[Hashable, ...]]:
    """:func:`hub_levels` on arrays already read (and their scale-up arcs and
    :func:`_dead_ends`, if known)."""
    ep_idx = np.array([ga.index[e] for e in eps])
    others = np.setdiff1d(np.arange(ga.n_nodes), np.array([ga.index[e] for e in fab.endpoints]))
    network = np.zeros(ga.n_nodes, dtype=bool)
    scale_out = ~(scale_up if scale_up is not None else scale_up_arcs(fab, ga))
    network[ga.tail[scale_out]] = True
    network[ga.head[scale_out]] = True
    if network[others].any():
        # Across servers, a detour through another server's NVSwitch costs scale-out twice:
        # the network's switches are the hubs. Endpoints all in one scale-up domain (one
        # server with its rail leaves) are better served by its own NVSwitches.
        up = ~scale_out
        domain = connected_components(sp.csr_matrix(
            (np.ones(int(up.sum())), (ga.tail[up], ga.head[up])), shape=(ga.n_nodes,) * 2),
            directed=False)[1]
        one = len(np.unique(domain[ep_idx])) == 1 and up.any()
        kept = others[~network[others] & (domain[others] == domain[ep_idx[0]])] if one else []
        others = kept if len(kept) else others[network[others]]
    others = others[~(_dead_ends(ga, ep_idx) if dead is None else dead)[others]]
    # Hop distance from the nearest endpoint: one BFS from a super source.
    n = ga.n_nodes
    tails = np.concatenate([ga.tail, np.full(len(ep_idx), n)])
    heads = np.concatenate([ga.head, ep_idx])
    adj = sp.csr_matrix((np.ones(len(tails)), (tails, heads)), shape=(n + 1, n + 1))
    dist = shortest_path(adj, directed=True, unweighted=True, indices=n)[:n]
    reach = others[np.isfinite(dist[others])]
    if len(reach) == 0:
        return {0: tuple(eps)}
    levels = dist[reach].astype(int) - 1  # the super source adds one hop
    return {int(d): tuple(ga.nodes[i] for i in reach[levels == d]) for d in np.unique(levels)}


def _dead_ends(ga: GraphArrays, keep: np.ndarray) -> np.ndarray:
    """Mask of the nodes on no path between two nodes of ``keep``: peeled off, leaf by leaf,
    as nodes outside ``keep`` with at most one neighbour (a switch hung off a core, say)."""
    a = np.minimum(ga.tail, ga.head)
    b = np.maximum(ga.tail, ga.head)
    # Each link once, as (smaller end, larger end): unique codes, not unique rows (a
    # structured sort, ten times slower on 300,000 arcs); the same pairs in the same order.
    n = np.int64(ga.n_nodes)
    code = np.unique(a[a != b] * n + b[a != b])
    pairs = np.stack([code // n, code % n], axis=1)
    alive = np.ones(ga.n_nodes, dtype=bool)
    kept = np.zeros(ga.n_nodes, dtype=bool)
    kept[keep] = True
    while True:
        live = alive[pairs[:, 0]] & alive[pairs[:, 1]]
        degree = np.bincount(pairs[live].ravel(), minlength=ga.n_nodes)
        drop = alive & ~kept & (degree <= 1)
        if not drop.any():
            return ~alive
        alive &= ~drop


def hub_nodes(fab: Any, endpoints: Iterable[Hashable] | None = None,
              level: int | None = None) -> tuple[Hashable, ...]:
    """The hubs at ``level`` of :func:`hub_levels`; by default the farthest — the top tier
    of a Clos (spines, cores; the rail leaves of a rail-only cluster).

    >>> import fabricopt as fo
    >>> len(hub_nodes(fo.fat_tree(4)))  # the (k/2)^2 core switches
    4
    """
    levels = hub_levels(fab, endpoints)
    return levels[_check_level(levels, level)]


def _check_level(levels: dict[int, tuple[Hashable, ...]], level: int | None) -> int:
    """``level`` (default: the farthest) after checking it is one of ``levels``."""
    if level is None:
        return max(levels)
    if level not in levels:
        raise InvalidParameterError(f"valiant_rate(): hubs, as a level, must be one of "
                                    f"{sorted(levels)} (hops from the endpoints), got {level!r}")
    return level


def _reverse_arcs(ga: GraphArrays) -> np.ndarray | None:
    """The index of each arc's reverse, None when some arc has none (a graph has at most one
    arc per ordered pair, so an arc code ``tail * n + head`` names it)."""
    if ga.n_arcs == 0:
        return np.zeros(0, dtype=np.int64)
    n = np.int64(ga.n_nodes)
    code = ga.tail * n + ga.head
    order = np.argsort(code, kind="stable")
    want = ga.head * n + ga.tail
    rev = order[np.minimum(np.searchsorted(code[order], want), ga.n_arcs - 1)]
    return None if np.any(code[rev] != want) else rev.astype(np.int64)


def valiant_rate(fab: Any, endpoints: Iterable[Hashable] | None = None, *,
                 hubs: int | Iterable[Hashable] | None = None, method: str = "auto",
                 backend: str = "highs", time_limit: float | None = None,
                 bounds_first: bool | None = None, **backend_options: Any) -> ValiantBound:
    """Certified per-endpoint rate at which two-phase routing carries every hose traffic.

    Parameters
    ----------
    fab : Fabric
    endpoints : iterable, optional
        The endpoints of the hose (default: all).
    hubs : int or iterable, optional
        Intermediate nodes of phase 1: a level of :func:`hub_levels` (hops from the
        endpoints) or any nodes. Default: the best of the levels, tried from the top tier
        down until a rate reaches the endpoints' injection.
    method : {"auto", "symmetric", "lp"}
        ``"symmetric"`` solves one root's flow per endpoint orbit (needs a valid symmetry
        claim, all endpoints and hubs given by level); ``"lp"`` one flow per endpoint;
        ``"auto"`` the first that applies, and without a claim, when the per-endpoint LP
        would exceed ``MAX_FULL_NONZEROS``, the group :func:`~fabricopt.search_symmetry`
        finds (when it has at most a quarter as many endpoint orbits as endpoints).
    backend, time_limit, **backend_options
        As for :func:`~fabricopt.max_concurrent_flow`.
    bounds_first : bool, optional
        Before any LP, bound the rate by cuts of the fabric's hierarchy and prove one by
        WCMP phase-1 flows (:mod:`fabricopt.flow.two_phase.bounds`); when they meet (to 1e-6)
        that is the answer, with method ``"bounds"`` and no LP. Default: with
        ``method="auto"`` only.

    Returns
    -------
    ValiantBound
        ``rate_gbps`` (0 with a status when nothing was proven), the per-arc load and,
        after the bounds stage, ``upper_gbps`` and its ``cut``.

    Examples
    --------
    A non-blocking fat-tree carries any traffic at the full link rate through its cores:

    >>> import fabricopt as fo
    >>> round(fo.valiant_rate(fo.fat_tree(4)).rate_gbps, 6)
    400.0
    """
    start = time.perf_counter()
    time_limit, bounds_first = _check_options(method, backend, time_limit, bounds_first,
                                               backend_options)
    eps = check_endpoint_group("valiant_rate", fab, endpoints)
    if hubs is None:
        return best_hub_level(fab, eps, method=method, backend=backend, time_limit=time_limit,
                              bounds_first=bounds_first, **backend_options)
    by_level = isinstance(hubs, int) and not isinstance(hubs, bool)
    level = None
    if by_level:
        levels = hub_levels(fab, eps)
        level = _check_level(levels, hubs)  # type: ignore[arg-type]
        hub_list = levels[level]
    elif isinstance(hubs, str | bool | Mapping) or not isinstance(hubs, Iterable):
        raise InvalidParameterError(f"valiant_rate(): hubs must be None, a level (int) or "
                                    f"an iterable of nodes, got {hubs!r}")
    else:
        given = tuple(hubs)  # type: ignore[arg-type]
        if not all(isinstance(h, Hashable) for h in given):
            raise InvalidParameterError(f"valiant_rate(): hubs must be nodes of the fabric "
                                        f"(node names), got {given!r}")
        hub_list = tuple(dict.fromkeys(given))
    unknown = [h for h in hub_list if h not in fab.graph]
    if unknown or not hub_list:
        raise InvalidParameterError(f"valiant_rate(): hubs must be nodes of the fabric, "
                                    f"got {unknown[:3] if unknown else 'none'}")
    return _rate_for_hubs(fab, eps, hub_list, level, method=method, backend=backend,
                          time_limit=time_limit, bounds_first=bounds_first,
                          options=backend_options, start=start)


def _rate_for_hubs(fab: Any, eps: tuple[Hashable, ...], hub_list: tuple[Hashable, ...],
                   level: int | None, *, method: str, backend: str, time_limit: float | None,
                   bounds_first: bool | None, options: dict[str, Any], start: float,
                   beat: float | None = None, arrays: _Arrays | None = None,
                   ) -> ValiantBound | None:
    """:func:`valiant_rate` for hubs already resolved: the bounds stage first (when asked,
    by default with ``method="auto"``), then the LP for what it leaves open. With ``beat``
    (a rate already proven with other hubs), None when the cut shows these hubs cannot do
    better. ``arrays`` are the fabric's, when the caller read them already."""
    arrays = arrays or _Arrays.of(fab)
    ga, rev = arrays.ga, arrays.rev
    by_level = level is not None
    ep_idx = np.array([ga.index[e] for e in eps])
    hub_idx = np.array([ga.index[h] for h in hub_list])
    share = hub_shares(ga, hub_idx, ep_idx, arrays.dead_ends(ep_idx))
    stage = None
    if bounds_first if bounds_first is not None else method == "auto":
        stage = _bounds_stage(fab, arrays, ep_idx, hub_idx, share, beat,
                              _left(time_limit, start))
        if stage is None:
            return None
        if stage.status == "optimal":
            return _stage_result(stage, ga, hub_list, len(eps), start, level)
        if _left(time_limit, start) == 0:
            # The budget went on the bounds: their bracket is the answer, said to be stopped.
            return _with_stage(ValiantBound(
                0.0, "time_limit", "bounds", hub_list, len(eps),
                seconds=time.perf_counter() - start, level=level,
                message="time limit reached before the solver started"), stage, ga)
    claim = fab.symmetry  # re-checked against the graph at every read: read once
    if (method == "auto" and claim is None and by_level
            and set(eps) == set(fab.endpoints)
            and len(eps) * (3 * ga.n_arcs + 1) > MAX_FULL_NONZEROS):
        # Too large for the per-endpoint LP: find the group instead (one root flow per
        # endpoint orbit), when it has few enough orbits to make the LP much smaller.
        found = search_symmetry(fab, time_limit=_budget(time_limit, start),
                                max_endpoint_orbits=max(1, len(eps) // 4))
        if found.symmetry is not None and found.symmetry.n_endpoint_orbits <= len(eps) // 4:
            fab, claim = with_symmetry(fab, found.symmetry), found.symmetry
    symmetric_ok = (claim is not None and by_level
                    and set(eps) == set(fab.endpoints))
    if method == "symmetric" and not symmetric_ok:
        raise InvalidParameterError("valiant_rate(): method='symmetric' needs an unchanged "
                                    "fabric with a symmetry claim, all endpoints and hubs "
                                    "given by level")
    scale = rate_scale(ga, ep_idx)
    if method == "symmetric" or (method == "auto" and symmetric_ok):
        model = _SymmetricPhaseOne.build(fab, ga, rev, ep_idx, hub_idx, scale, claim, share)
        if model is not None:
            out = _solve(model, backend, _budget(time_limit, start), options)
            out["proof"] = HoseProof("symmetric", eps, out["x"], claim)
            return _with_stage(_valiant_result(out, ga, hub_list, len(eps), "symmetric",
                                               start, level), stage, ga)
        if method == "symmetric":
            raise InvalidParameterError("valiant_rate(): the symmetry claim does not map "
                                        "reverse arcs to reverse arcs")
    nnz = len(eps) * (3 * ga.n_arcs + 1)
    if nnz > MAX_FULL_NONZEROS:
        return _with_stage(ValiantBound(
            0.0, "not_solved", "lp", hub_list, len(eps), seconds=time.perf_counter() - start,
            level=level, message=f"the per-endpoint LP is too large ({nnz:,} nonzeros "
                                 f"> {MAX_FULL_NONZEROS:,}) and no symmetry applies"), stage,
            ga)
    model = _FullPhaseOne.build(ga, rev, ep_idx, hub_idx, scale, share)
    out = _solve(model, backend, _budget(time_limit, start), options)
    out["proof"] = HoseProof("lp", eps, out["x"])
    return _with_stage(_valiant_result(out, ga, hub_list, len(eps), "lp", start, level), stage,
                       ga)




def _left(time_limit: float | None, start: float) -> float | None:
    """Seconds of ``time_limit`` left since ``start``, the start of the call (None without a
    limit): every solve of one call shares one budget, so a longer limit never proves less."""
    return None if time_limit is None else max(time_limit - (time.perf_counter() - start), 0.0)


def _budget(time_limit: float | None, start: float) -> float | None:
    """What a solve may take: :func:`_left`, at least a millisecond (a solver given none
    still returns the point it starts from)."""
    left = _left(time_limit, start)
    return None if left is None else max(left, 1e-3)


def _check_options(method: Any, backend: Any, time_limit: Any, bounds_first: Any,
                   options: dict[str, Any]) -> tuple[float | None, bool | None]:
    """``method`` and the solve arguments checked; the time limit and ``bounds_first``."""
    if method not in ("auto", "symmetric", "lp"):
        raise InvalidParameterError(f"valiant_rate(): method must be 'auto', 'symmetric' or "
                                    f"'lp', got {method!r}")
    if bounds_first is not None:
        bounds_first = check_bool("valiant_rate", "bounds_first", bounds_first)
    return check_solve_args("valiant_rate", backend, time_limit, options), bounds_first


def best_hub_level(fab: Any, endpoints: Iterable[Hashable] | None = None, *,
                   enough_gbps: float | None = None, method: str = "auto",
                   backend: str = "highs", time_limit: float | None = None,
                   bounds_first: bool | None = None, arrays: GraphArrays | None = None,
                   **backend_options: Any) -> ValiantBound:
    """The best :func:`valiant_rate` over the hub levels, from the top tier down (cores,
    spines, leaves): the top usually wins on a Clos, the leaves where GPUs relay over NVLink
    to another rail's NIC.

    Stops at a solve that does not finish, at a rate of ``enough_gbps`` (what the caller
    needs, e.g. to close a bracket) or at the scale-out injection of an endpoint (past which
    no level does better in a cluster of several domains: a permutation across domains
    fills their NICs). With the bounds stage, a level whose cut is no better than the rate
    already proven is passed over without a solve. ``arrays`` are the fabric's
    :class:`~fabricopt.graph_arrays.GraphArrays` when the caller read them already; the other
    arguments are :func:`valiant_rate`'s.
    """
    start = time.perf_counter()
    time_limit, bounds_first = _check_options(method, backend, time_limit, bounds_first,
                                               backend_options)
    eps = check_endpoint_group("valiant_rate", fab, endpoints)
    # Reading the arrays checks every arc first.
    prepared = _Arrays.of(fab, arrays)
    ep_idx = np.array([prepared.ga.index[e] for e in eps])
    levels = _levels(fab, prepared.ga, eps, prepared.scale_up, prepared.dead_ends(ep_idx))
    ceiling = prepared.scale_out_injection(eps)
    if enough_gbps is not None:
        ceiling = min(ceiling, enough_gbps)
    best: ValiantBound | None = None
    for level in sorted(levels, reverse=True):
        tried = _rate_for_hubs(fab, eps, levels[level], level, method=method, backend=backend,
                               time_limit=time_limit, bounds_first=bounds_first,
                               options=backend_options, start=start,
                               beat=None if best is None else best.rate_gbps,
                               arrays=prepared)
        if tried is None:
            continue  # its cut is below the rate proven: no better here
        if best is None or tried.rate_gbps > best.rate_gbps:
            best = tried
        if tried.status != "optimal" or best.rate_gbps >= ceiling * (1 - 1e-9):
            break
    assert best is not None
    best.seconds = time.perf_counter() - start
    return best


def rate_scale(ga: GraphArrays, ep_idx: np.ndarray) -> float:
    """The unit the phase-1 LPs count the rate in: the largest injection of an endpoint
    (:meth:`Fabric.injection_gbps`, for all at once), so their theta is near one."""
    loops = ga.tail != ga.head
    injection = np.bincount(ga.tail[loops], weights=ga.capacity[loops], minlength=ga.n_nodes)
    return float(injection[ep_idx].max()) or 1.0


def hub_shares(ga: GraphArrays, hub_idx: np.ndarray, ep_idx: np.ndarray,
               dead: np.ndarray | None = None) -> np.ndarray:
    """p: each hub's share of phase 1, in proportion to the capacity entering it from nodes
    on endpoint-to-endpoint paths (uniform on a symmetric top tier; 5:4:4:5 over the
    NVSwitches of a DGX H100). Automorphisms keep capacities, so the shares stay invariant.
    ``dead`` is :func:`_dead_ends` of ``ep_idx`` when the caller has it."""
    live = ~(_dead_ends(ga, ep_idx) if dead is None else dead)[ga.tail]
    cap_in = np.bincount(ga.head[live], weights=ga.capacity[live],
                         minlength=ga.n_nodes)[hub_idx]
    if not cap_in.max() > 0:
        raise InvalidParameterError("valiant_rate(): no capacity enters any of the hubs")
    # Round away summation-order noise (relative to the largest) so that symmetric hubs get
    # bitwise-equal shares.
    cap_in = np.round(cap_in / cap_in.max(), 12)
    return cap_in / cap_in.sum()


def _phase_one_supply(n: int, root: int, hub_idx: np.ndarray, share: np.ndarray,
                      scale: float) -> np.ndarray:
    """Net outflow per node of one source's phase-1 flow per unit rate (in ``scale``)."""
    supply = np.zeros(n)
    supply[root] += scale
    np.add.at(supply, hub_idx, -scale * share)
    return supply


@dataclass(frozen=True)
class _FullPhaseOne:
    """One phase-1 flow per endpoint; capacity rows ``L(a) + L(reverse a) <= c(a)``.

    Follows :class:`~fabricopt.flow.model.ThroughputModel` with theta the rate (in
    ``scale``); the lifted flow is the phase-1 load per arc, its load phase 1 plus phase 2.
    """

    lp: LinearProgram
    ga: GraphArrays
    rev: np.ndarray
    supplies: np.ndarray     # (T, n) per unit rate
    scale: float
    min_demand: float

    @classmethod
    def build(cls, ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
              hub_idx: np.ndarray, scale: float, share: np.ndarray) -> _FullPhaseOne:
        T, m = len(ep_idx), ga.n_arcs
        supplies = np.stack([_phase_one_supply(ga.n_nodes, int(s), hub_idx, share, scale)
                             for s in ep_idx])
        both = sp.identity(m, format="csr") + sp.csr_matrix(
            (np.ones(m), (np.arange(m), rev)), shape=(m, m))
        lp = max_theta_lp(sp.kron(sp.identity(T, format="csr"), ga.incidence(), format="csr"),
                          supplies.reshape(-1),
                          sp.kron(sp.csr_matrix(np.ones((1, T))), both, format="csr"),
                          ga.capacity)
        return cls(lp, ga, rev, supplies, scale, scale * float(share[share > 0].min()))

    @property
    def constrained(self) -> np.ndarray:
        return np.ones(self.ga.n_arcs, dtype=bool)

    def lift(self, x: np.ndarray) -> LiftedFlow:
        """Phase-1 load per arc, both phases' load, and the largest per-source L1
        conservation residual."""
        T, m = self.supplies.shape[0], self.ga.n_arcs
        g = np.clip(x[:-1].reshape(T, m), 0.0, None)
        net = (self.ga.incidence() @ g.T).T - x[-1] * self.supplies
        load = g.sum(axis=0)
        return LiftedFlow(float(x[-1]), load + load[self.rev],
                          float(np.abs(net).sum(axis=1).max()), load)

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        return np.clip(-dual_ub[: self.ga.n_arcs], 0.0, None)

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None:
        return None  # a certified rate for every traffic: only the lower side is proven


@dataclass(frozen=True)
class _SymmetricPhaseOne:
    """One root's phase-1 flow per endpoint orbit; arc orbit ``O`` carries
    ``sum_i (|O_i|/|O|) sum_O g_i`` on each arc (invariant flow).

    Follows :class:`~fabricopt.flow.model.ThroughputModel` like :class:`_FullPhaseOne`; the
    lifted flow is the roots' phase-1 flows on every arc, root after root.
    """

    lp: LinearProgram
    ga: GraphArrays
    rev: np.ndarray
    orbit: np.ndarray
    orbit_size: np.ndarray
    supplies: tuple[np.ndarray, ...]      # per root, per unit rate
    classes: tuple[OrbitClasses, ...]     # per root
    columns: tuple[slice, ...]            # per root
    root_orbit_size: np.ndarray           # endpoints per root's orbit
    scale: float
    min_demand: float

    @classmethod
    def build(cls, fab: Any, ga: GraphArrays, rev: np.ndarray, ep_idx: np.ndarray,
              hub_idx: np.ndarray, scale: float, claim: Any, share: np.ndarray,
              ) -> _SymmetricPhaseOne | None:
        sym = claim  # fab.symmetry, as the caller read it
        orbit = fabric_arc_orbits(fab, ga, sym)
        orbit_size = np.bincount(orbit).astype(float)
        n_orb = len(orbit_size)
        rev_orbit = np.full(n_orb, -1)
        rev_orbit[orbit] = orbit[rev]
        if np.any(rev_orbit[orbit] != orbit[rev]):
            return None  # an automorphism maps reverse arcs to reverse arcs; this claim doesn't
        # The caller passes all endpoints, maybe in another order: roots follow fab.endpoints.
        ep_orbit = endpoint_orbits(sym, tuple(fab.endpoints))
        roots = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
        sizes = np.bincount(ep_orbit)
        flow_blocks, rhs, cap_blocks, supplies, classes, columns = [], [], [], [], [], []
        col = 0
        for i, pos in enumerate(np.unique(ep_orbit, return_index=True)[1]):
            supply = _phase_one_supply(ga.n_nodes, int(roots[pos]), hub_idx, share, scale)
            oc = OrbitClasses.from_orbits(ga, orbit, np.round(supply / scale, 12))
            A_flow, rep = class_conservation_rows(ga, oc.node_class, oc.arc_class)
            # Row of orbit O: load on O (phase 1) plus load on its reverse orbit (phase 2);
            # an orbit that is its own reverse gets both terms, which the sparse sum adds up.
            coef = sizes[i] / oc.orbit_size[oc.class_orbit] * oc.class_size
            ids = np.arange(oc.n_classes)
            cap_blocks.append(sp.csr_matrix(
                (np.concatenate([coef, coef]),
                 (np.concatenate([oc.class_orbit, rev_orbit[oc.class_orbit]]),
                  np.concatenate([ids, ids]))), shape=(n_orb, oc.n_classes)))
            flow_blocks.append(A_flow)
            rhs.append(supply[rep])
            supplies.append(supply)
            classes.append(oc)
            columns.append(slice(col, col + oc.n_classes))
            col += oc.n_classes
        lp = max_theta_lp(sp.block_diag(flow_blocks, format="csr"), np.concatenate(rhs),
                          sp.hstack(cap_blocks, format="csr"), classes[0].orbit_cap)
        return cls(lp, ga, rev, orbit, orbit_size, tuple(supplies), tuple(classes),
                   tuple(columns), sizes.astype(float), scale,
                   scale * float(share[share > 0].min()))

    @property
    def constrained(self) -> np.ndarray:
        return np.ones(self.ga.n_arcs, dtype=bool)

    def lift(self, x: np.ndarray) -> LiftedFlow:
        """Both phases' load per arc (every endpoint routing like its orbit's root) and the
        largest root flow's L1 conservation residual on the whole graph (the same for every
        image)."""
        flows = np.stack([oc.lift(x[c]) for oc, c in zip(self.classes, self.columns,
                                                          strict=True)])
        load = invariant_loads(self.orbit, self.orbit_size, self.root_orbit_size, flows)
        residual = max(conservation_residual(self.ga, f, x[-1] * b)
                       for f, b in zip(flows, self.supplies, strict=True))
        return LiftedFlow(float(x[-1]), load + load[self.rev], residual, flows.ravel())

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        return np.zeros(self.ga.n_arcs)  # no upper bound is derived from them

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None:
        return None


def _solve(model: _FullPhaseOne | _SymmetricPhaseOne, backend: str,
           time_limit: float | None, options: dict[str, Any]) -> dict[str, Any]:
    sol = solve_lp(model.lp, backend, time_limit, **options)
    cert = certify(model, sol)
    out: dict[str, Any] = {"model": model, "status": sol.status, "message": sol.message,
                           "x": cert.point,
                           "rate": cert.lower * model.scale, "overload": cert.max_overload,
                           "residual": cert.max_residual, "load": None}
    if cert.lifted is not None:
        theta_x = cert.lifted.theta
        out["load"] = cert.lifted.load * (cert.lower / theta_x) if theta_x > 0 else (
            cert.lifted.load * 0.0)
    return out


def _per_arc(ga: GraphArrays, values: Any) -> dict[tuple[Hashable, Hashable], float]:
    """``values`` (one per arc) keyed by arc, as Python floats (``tolist`` converts them in
    C; a ``float`` call per arc was a tenth of the two-phase rate on a 24,576-GPU cluster)."""
    return dict(zip(ga.arcs, np.asarray(values, dtype=float).tolist(), strict=True))


def _valiant_result(out: dict[str, Any], ga: GraphArrays, hubs: tuple[Hashable, ...], n: int,
           method: str, start: float, level: int | None) -> ValiantBound:
    load = {} if out["load"] is None else _per_arc(ga, out["load"])
    return ValiantBound(float(out["rate"]), out["status"], method, hubs, n, out["overload"],
                        out["residual"], time.perf_counter() - start, out["message"], load,
                        level, proof=out.get("proof"))


@dataclass
class _Arrays:
    """A fabric's arrays, each arc's reverse and (once the bounds stage needs them) the
    partitions of its hierarchy: read once for every hub level tried."""

    ga: GraphArrays
    rev: np.ndarray
    scale_up: np.ndarray
    partitions: list[np.ndarray] | None = None
    dead: tuple[bytes, np.ndarray] | None = None
    orbits: tuple[np.ndarray | None] | None = None

    def claim_orbits(self, fab: Any, ep_idx: np.ndarray) -> np.ndarray | None:
        """Arc orbits of the fabric's symmetry claim (read once), when ``ep_idx`` are all
        of its endpoints (a claim says nothing about a subset); else None."""
        if len(ep_idx) != len(fab.endpoints):
            return None
        if self.orbits is None:
            claim = fab.symmetry
            self.orbits = (None if claim is None else
                           fabric_arc_orbits(fab, self.ga, claim),)
        return self.orbits[0]

    def dead_ends(self, ep_idx: np.ndarray) -> np.ndarray:
        """:func:`_dead_ends` of ``ep_idx``, computed once per set of endpoints."""
        key = np.sort(ep_idx).tobytes()
        if self.dead is None or self.dead[0] != key:
            self.dead = (key, _dead_ends(self.ga, ep_idx))
        return self.dead[1]

    @classmethod
    def of(cls, fab: Any, ga: GraphArrays | None = None) -> _Arrays:
        ga = ga if ga is not None else GraphArrays.from_fabric(fab)
        rev = _reverse_arcs(ga)
        if rev is None:
            raise InvalidParameterError("valiant_rate(): every link needs both directions "
                                        "(phase 2 runs phase 1 backwards); see "
                                        "Fabric.validate()")
        return cls(ga, rev, scale_up_arcs(fab, ga))

    def scale_out_injection(self, eps: tuple[Hashable, ...]) -> float:
        """The least :meth:`~fabricopt.Fabric.scale_out_injection_gbps` of ``eps``, for
        all at once: capacity out on links that are not scale-up, or all of it without."""
        ga, n = self.ga, self.ga.n_nodes
        idx = np.array([ga.index[e] for e in eps])
        out = np.bincount(ga.tail[~self.scale_up], weights=ga.capacity[~self.scale_up],
                          minlength=n)[idx]
        every = np.bincount(ga.tail, weights=ga.capacity, minlength=n)[idx]
        return float(np.where(out > 0, out, every).min())


@dataclass(frozen=True)
class _Stage:
    """What the bounds stage proved: a certified ``rate`` with its two-phase ``load`` (per
    arc, Gb/s at that rate; None without a routing) and what proved it, the bound
    ``upper_gbps`` with the cut's ``side`` or the ``lengths`` behind it, and ``status``
    ("optimal" when they meet)."""

    rate: float
    load: np.ndarray | None
    overload: float
    residual: float
    upper_gbps: float
    side: np.ndarray | None
    lengths: np.ndarray | None
    status: str
    lower_from: str
    upper_from: str
    proof: HoseProof | None = None


def _bounds_stage(fab: Any, arrays: _Arrays, ep_idx: np.ndarray, hub_idx: np.ndarray,
                  share: np.ndarray, beat: float | None = None,
                  time_limit: float | None = None) -> _Stage | None:
    """The cut above and WCMP phase-1 flows below (:mod:`fabricopt.flow.two_phase.bounds`),
    then, when they do not meet, the merged LP of :mod:`fabricopt.flow.two_phase.domains`;
    None, before any routing, when the cut is no more than ``beat``. The merged LP gets
    ``time_limit`` (a stopped solve still proves what its point and duals prove)."""
    ga, rev = arrays.ga, arrays.rev
    if arrays.partitions is None:
        arrays.partitions = hierarchy_partitions(fab, ga)
    cut = best_cut(ga, arrays.partitions, ep_idx, hub_idx, share,
                   None if beat is None else beat * (1 + 1e-9))
    upper = cut.rate_gbps if cut is not None else np.inf
    if beat is not None and upper <= beat * (1 + 1e-9):
        return None
    side, lengths = (None if cut is None else cut.side), None
    routed = wcmp_phase_one(ga, rev, ep_idx, hub_idx, share, arrays.claim_orbits(fab, ep_idx))
    rate, overload, load, residual = 0.0, 0.0, None, 0.0
    lower_from, upper_from = "no routing", "a hierarchy cut"
    eps, proof = tuple(ga.nodes[i] for i in ep_idx), None
    if routed is not None:
        rate, overload = routed.rate(ga.capacity, float(share[share > 0].min()))
        load, residual, lower_from = routed.load * rate, routed.residual_l1, "WCMP phase-1 flows"
        proof = HoseProof("wcmp", eps)
    if not closes(rate, upper):
        merged = DomainPhaseOne.build(ga, rev, ep_idx, hub_idx, share, arrays.scale_up)
        if merged is not None:
            budget = None if time_limit is None else max(time_limit, 1e-3)
            cert = certify(merged, solve_lp(merged.lp, "highs", budget))
            if cert.upper * merged.scale < upper:
                upper, side, lengths = cert.upper * merged.scale, None, cert.lengths
                upper_from = "the merged LP's duals"
            if cert.lifted is not None and cert.lower * merged.scale > rate:
                rate, overload = cert.lower * merged.scale, cert.max_overload
                load = cert.lifted.load * (cert.lower / cert.lifted.theta)
                residual, lower_from = cert.max_residual, "the merged LP's point"
                proof = HoseProof("merged", eps, cert.point)
    # Rounding may put the rate an ulp above the bound: the smaller is proven too.
    if load is not None and rate > upper:
        load, rate = load * (upper / rate), upper
    return _Stage(rate, load, overload, residual, upper, side, lengths,
                  "optimal" if closes(rate, upper) else "not_solved", lower_from, upper_from,
                  proof)


def _stage_result(stage: _Stage, ga: GraphArrays, hubs: tuple[Hashable, ...], n: int,
                  start: float, level: int | None) -> ValiantBound:
    """The bounds stage's answer: a certified rate that meets the bound above."""
    out = {"rate": stage.rate, "status": "optimal", "overload": stage.overload,
           "residual": stage.residual, "load": stage.load,
           "message": f"bounds first: {stage.lower_from} and {stage.upper_from} meet",
           "proof": stage.proof}
    return _with_stage(_valiant_result(out, ga, hubs, n, "bounds", start, level), stage, ga)


def _with_stage(result: ValiantBound, stage: _Stage | None, ga: GraphArrays) -> ValiantBound:
    """``result`` with the stage's cut as its upper bound, and the stage's rate (with its
    load) where the solve proved less."""
    if stage is None:
        return result
    result.upper_gbps = stage.upper_gbps
    if stage.side is not None:
        result.cut = frozenset(ga.nodes[i] for i in np.flatnonzero(stage.side))
    if stage.lengths is not None:
        result.lengths = _per_arc(ga, stage.lengths)
    if stage.load is not None and stage.rate > result.rate_gbps:
        result.rate_gbps, result.max_overload = stage.rate, stage.overload
        result.method = "bounds"  # the rate is the stage's proof, not the solve's
        result.max_residual, result.proof = stage.residual, stage.proof
        result.load_gbps = _per_arc(ga, stage.load)
        result.message = (f"{result.message}; the bounds stage's WCMP rate is higher "
                          "and is kept").lstrip("; ")
    return result
