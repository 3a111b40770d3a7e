"""``max_concurrent_flow``: check, build, solve, certify, read back.

Each step is public so a power user can stop after building and inspect or export the LP::

    model = build_flow_lp(fab, traffic)        # the LP and its inverse maps
    export_mps(model.lp, "fabric.mps")         # any solver
    result = solve_flow_model(model)           # solve, certify, read back
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy.sparse.csgraph import dijkstra

from .._checks import check_bool, check_choice, check_positive, fail
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..traffic import Traffic, all_to_all
from .approx import solve_approx
from .backends import BACKENDS, solve_lp
from .certificate import DistanceBound, certified_lower, distance_bound
from .formulation import Collapse, FlowModel, aggregate_demand, build_flow_lp
from .graph_arrays import GraphArrays
from .polish import polish, polish_duals, residual
from .result import FlowResult
from .symmetric import SymmetricModel, build_symmetric_lp

METHODS = ("auto", "lp", "symmetric", "approx")

#: Relative width of the certified bracket up to which a solve counts as exact.
EXACT_RTOL = 1e-6

#: Above this many nonzeros ``method="auto"`` does not build the full LP.
MAX_AUTO_NONZEROS = 6_000_000


def symmetric_applicable(fab: Fabric, traffic: Traffic) -> tuple[bool, str]:
    """Whether the symmetric method is exact for this fabric and traffic, and why not."""
    if fab.symmetry is None:
        why = ("the fabric carries no symmetry claim" if fab._symmetry is None and
               not fab.params.get("edited") else
               "the fabric was changed after it was generated (or has no symmetry claim)")
        return False, why
    if set(traffic.endpoints) != set(fab.endpoints):
        return False, "the traffic does not involve every endpoint, so it is not invariant"
    if traffic.is_uniform:
        return True, ""
    n = len(fab.endpoints)
    values = set(traffic.pairs.values())
    if len(traffic) == n * (n - 1) and len(values) == 1:
        return True, ""
    return False, "the traffic is not uniform all-to-all, so it is not invariant"


def _uniform_gbps(traffic: Traffic) -> float:
    return traffic.uniform_gbps or next(iter(traffic.pairs.values()))


def lp_size_estimate(fab: Fabric, traffic: Traffic) -> int:
    """Nonzeros the full LP would have (computed without building it)."""
    ga = GraphArrays.from_fabric(fab)
    col = Collapse.of(ga, fab, traffic.endpoints)
    position = {e: i for i, e in enumerate(traffic.endpoints)}
    if traffic.is_uniform:
        k = len(np.unique(col.attach))
    else:
        src = np.array([position[s] for s, _ in traffic.pairs], dtype=np.int64)
        k = len(np.unique(col.attach[src]))
    return int(3 * k * col.core_arc.sum())


def max_concurrent_flow(fab: Fabric, traffic: Traffic | None = None, *, method: str = "auto",
                        backend: str = "highs", time_limit: float | None = None,
                        include_endpoint_links: bool = True, gap: float = 0.01,
                        **backend_options: Any) -> FlowResult:
    """Largest fraction theta of ``traffic`` that ``fab`` carries at once, with proof.

    Parameters
    ----------
    fab : Fabric
    traffic : Traffic, optional
        Demands in Gb/s per ordered endpoint pair; None means :func:`all_to_all` at 1 Gb/s.
    method : {"auto", "lp", "symmetric", "approx"}
        ``"lp"``: the exact LP with source aggregation and endpoint collapse.
        ``"symmetric"``: the exact root-flow LP for fabrics whose generator attached a
        symmetry claim, with uniform all-to-all traffic over all endpoints.
        ``"approx"``: the same LP solved to a certified relative ``gap`` by
        :mod:`fabricopt.flow.approx` (any fabric, any traffic, thousands of switches);
        the answer is the bracket, status ``"inexact"`` (``"time_limit"`` if stopped).
        ``"auto"``: symmetric when valid, else the full LP while it has at most
        ``MAX_AUTO_NONZEROS`` nonzeros, else approx.
    backend : {"highs", "highspy", "pulp"}
        See :mod:`fabricopt.flow.backends`; ``backend_options`` go to it.
    time_limit : float, optional
        Seconds for the solver; on expiry the status says so and the bracket is what was
        proven. ``backend="highspy"`` enforces it with a wall-clock interrupt as well; with
        the default backend, HiGHS's interior-point solver (used above 20,000 nonzeros) can
        overrun a limit shorter than HiGHS's presolve, and then returns a proven answer late.
    include_endpoint_links : bool
        True (default): the links of endpoints that hang off one switch (NIC links) are
        capacity constraints and pairs under one switch count. False: the fabric-only view of
        ``reference/bounds.md`` — those links are free and same-switch pairs are dropped.
    gap : float
        For ``method="approx"``: stop once ``(upper - lower) / upper <= gap``, 0 < gap < 1.

    Returns
    -------
    FlowResult

    Examples
    --------
    Unit-capacity ring of 8 nodes, unit all-to-all: theta = 8 / n^2 = 0.125
    (``reference/bounds.md``).

    >>> import fabricopt as fo
    >>> r = fo.max_concurrent_flow(fo.ring(8))
    >>> round(r.theta, 9), r.method, r.exact
    (0.125, 'symmetric', True)
    """
    start = time.perf_counter()
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"max_concurrent_flow(): fab must be a Fabric, "
                                    f"got {type(fab).__name__}")
    check_choice("max_concurrent_flow", "method", method, METHODS)
    check_choice("max_concurrent_flow", "backend", backend, BACKENDS)
    include_endpoint_links = check_bool("max_concurrent_flow", "include_endpoint_links",
                                        include_endpoint_links)
    if time_limit is not None:
        check_positive("max_concurrent_flow", "time_limit", time_limit)
    if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not 0 < gap < 1:
        raise fail("max_concurrent_flow", "gap", "must be a number with 0 < gap < 1", gap)
    if traffic is None:
        traffic = all_to_all(fab)
    if not isinstance(traffic, Traffic):
        raise InvalidParameterError(f"max_concurrent_flow(): traffic must be a Traffic, "
                                    f"got {type(traffic).__name__}")
    traffic.check_endpoints(fab)
    ok, why = symmetric_applicable(fab, traffic)
    if method == "symmetric" and not ok:
        raise InvalidParameterError(f"max_concurrent_flow(): method='symmetric' is not exact "
                                    f"here: {why}")
    if method == "auto":
        if ok:
            method = "symmetric"
        elif lp_size_estimate(fab, traffic) > MAX_AUTO_NONZEROS:
            method = "approx"
        else:
            method = "lp"
    # Solve for theta near 1: solvers' tolerances (and CBC's printed digits) are absolute,
    # so a theta of 0.02 would lose relative precision in the certificate.
    scale = theta_scale(fab, traffic)
    scaled = traffic.scaled(scale) if scale != 1.0 else traffic
    if method == "symmetric":
        result = solve_symmetric(fab, scaled, backend, time_limit,
                                 include_endpoint_links=include_endpoint_links,
                                 **backend_options)
    elif method == "approx":
        model = build_flow_lp(fab, scaled, include_endpoint_links)
        left = None if time_limit is None else max(
            time_limit - (time.perf_counter() - start), 1e-3)
        sol = solve_approx(model, gap=gap, time_limit=left)
        result = certify_flow_model(model, sol, "approx", "numpy", fabric_name=fab.name,
                                    tiers=_tiers(fab, model.ga))
    else:
        model = build_flow_lp(fab, scaled, include_endpoint_links)
        result = solve_flow_model(model, backend, time_limit, fabric_name=fab.name,
                                  tiers=_tiers(fab, model.ga), **backend_options)
    result.traffic_name = traffic.name
    if scale != 1.0:
        result.lower *= scale
        result.upper *= scale
        if result.theta is not None:
            result.theta *= scale
    result.extra["traffic_scale"] = scale
    if result.method == "approx" and result.unreachable is None:
        wide = (result.upper - result.lower) / result.upper if result.upper > 0 else 0.0
        result.message = (f"approximate: certified bracket [{result.lower:.9g}, "
                          f"{result.upper:.9g}] (gap {wide:.3%}, asked {gap:.3%}); "
                          f"{sol.message}")
    result.seconds = time.perf_counter() - start
    return result


def _endpoint_pair(col: Collapse, ga: GraphArrays, agg: tuple, pair: Any) -> Any:
    """The unreachable pair named by endpoints rather than the switches they hang off."""
    if pair is None:
        return None
    s, t = ga.index[pair[0]], ga.index[pair[1]]
    eps = col.endpoints
    src = next((eps[i] for i in np.flatnonzero(col.attach == s)), pair[0])
    dst = next((eps[i] for i in np.flatnonzero(col.attach == t)), pair[1])
    return (src, dst)


def _endpoint_cut(col: Collapse, ga: GraphArrays, cut: Any) -> Any:
    """The reachable set with the collapsed endpoints of its switches added back."""
    if cut is None:
        return None
    inside = np.zeros(ga.n_nodes, dtype=bool)
    inside[[ga.index[v] for v in cut]] = True
    extra = [col.endpoints[i] for i in np.flatnonzero(inside[col.attach])]
    return frozenset(cut) | frozenset(extra)


def _polished(lp: Any, sol: Any) -> Any:
    """The solution with its point polished (see :mod:`fabricopt.flow.polish`) when the
    solver's own residual is above machine precision."""
    if sol.x is not None and residual(lp, sol.x) > 1e-12:
        sol.x = polish(lp, sol.x)
    return sol


def theta_scale(fab: Fabric, traffic: Traffic) -> float:
    """A power of two near the injection bound on theta (each endpoint's capacity over what
    it sends), used to solve for a theta of order one."""
    out = traffic.out_gbps()
    ratios = [fab.injection_gbps(e) / d for e, d in out.items() if d > 0]
    est = min(ratios) if ratios else 1.0
    if not (est > 0 and math.isfinite(est)):
        return 1.0
    return float(2.0 ** round(math.log2(est)))


def _tiers(fab: Fabric, ga: GraphArrays) -> list[str]:
    return [str(fab.graph[u][v].get("tier", "link")) for u, v in ga.arcs]


def _finish(result: FlowResult, traffic: Traffic, mean_out_gbps: float | None = None,
            ) -> FlowResult:
    """Reconcile the two proofs with the solver's claim; fill the per-endpoint figure.

    ``mean_out_gbps`` is the demand per sending endpoint that the solve routes (less than the
    traffic's when same-switch pairs are dropped).
    """
    if result.lower > result.upper * (1 + 1e-7) + 1e-12:
        # The two proofs contradict each other beyond rounding: trust neither.
        result.message = (f"certificates disagree (lower {result.lower!r} > upper "
                          f"{result.upper!r}): numerical trouble in the solver")
        result.status, result.theta, result.lower = "numerical_error", None, 0.0
    result.upper = max(result.upper, result.lower)
    if result.theta is not None and result.unreachable is None:
        if result.upper - result.lower > EXACT_RTOL * result.upper:
            # The solver says optimal but its point does not prove it to our tolerance
            # (first-order and interior-point solvers stop early): keep only the bracket.
            result.message = (f"solver reported optimal, but the certified bracket "
                              f"[{result.lower:.9g}, {result.upper:.9g}] is wider than "
                              f"{EXACT_RTOL:g} relative")
            result.status, result.theta = "inexact", None
        else:
            result.theta = min(max(result.theta, result.lower), result.upper)
    best = result.theta if result.theta is not None else result.lower
    if mean_out_gbps is None:
        mean_out_gbps = traffic.mean_out_gbps()
    result.per_endpoint_gbps = float(best * mean_out_gbps)
    result.traffic_name = traffic.name
    return result


def solve_flow_model(model: FlowModel, backend: str = "highs", time_limit: float | None = None,
                     fabric_name: str = "", tiers: list[str] | None = None,
                     **backend_options: Any) -> FlowResult:
    """Solve a built :class:`FlowModel`, certify the answer and read it back."""
    sol = _polished(model.lp, solve_lp(model.lp, backend, time_limit, **backend_options))
    return certify_flow_model(model, sol, "lp", backend, fabric_name, tiers)


def certify_flow_model(model: FlowModel, sol: Any, method: str = "lp", backend: str = "highs",
                       fabric_name: str = "", tiers: list[str] | None = None) -> FlowResult:
    """Prove the bracket of a solution of ``model.lp``: lower from its point ``x``, upper from
    its capacity-row duals as arc lengths; read the answer back."""
    ga = model.ga
    m = len(model.core_arcs)
    theta_x = float(sol.x[-1]) if sol.x is not None else None
    lower, overload, residual, load = 0.0, 0.0, 0.0, None
    if sol.x is not None:
        load = model.full_load(sol.x)
        residual = model.conservation_residual(sol.x)
        lower, overload = certified_lower(theta_x, load[model.constrained],
                                          ga.capacity[model.constrained], residual,
                                          model.min_demand)
    lengths = None
    bound: DistanceBound
    src, dst, gbps = model.agg
    if sol.dual_ub is not None:
        def bound_from(duals: np.ndarray) -> tuple[np.ndarray, DistanceBound]:
            ls = np.zeros(ga.n_arcs)
            ls[model.core_arcs] = np.clip(-duals[:m], 0.0, None)
            np.add.at(ls, model.ep_rows_arc, np.clip(-duals[m:], 0.0, None))
            return ls, distance_bound(ga, ls, model.collapse.core_arc, src, dst, gbps,
                                      model.ep_rows_arc, model.ep_rows_gbps)

        lengths, bound = bound_from(sol.dual_ub)
        if (method == "lp" and sol.x is not None
                and bound.upper - lower > EXACT_RTOL * bound.upper):
            # The solver's duals are off (tolerances, postsolve): make them consistent with
            # the point by complementary slackness and keep the better of the two bounds.
            better = polish_duals(model.lp, sol.x, sol.dual_eq, sol.dual_ub)
            if better is not None:
                lengths2, bound2 = bound_from(better)
                if bound2.upper < bound.upper:
                    lengths, bound = lengths2, bound2
    else:
        bound = distance_bound(ga, np.ones(ga.n_arcs), model.collapse.core_arc, src, dst,
                               gbps, model.ep_rows_arc, model.ep_rows_gbps)
    upper = bound.upper
    if bound.unreachable is not None:
        lower = 0.0
    theta = theta_x if sol.status == "optimal" else None
    if theta is not None and bound.unreachable is not None:
        theta = 0.0
    result = FlowResult(
        theta=theta, lower=lower, upper=upper, status=sol.status, method=method,
        backend=backend, seconds=sol.seconds, per_endpoint_gbps=0.0, message=sol.message,
        fabric_name=fabric_name, cut=_endpoint_cut(model.collapse, ga, bound.cut),
        unreachable=_endpoint_pair(model.collapse, ga, model.agg, bound.unreachable),
        max_overload=overload, max_residual=residual,
        lp_size=model.lp_size, _ga=ga, _load=load, _lengths=lengths, _tiers=tiers,
        extra={"x": sol.x, "model": model,
               "include_endpoint_links": model.include_endpoint_links})
    senders = int(np.count_nonzero(model.out_gbps))
    return _finish(result, model.traffic, model.counted_gbps / max(senders, 1))


def solve_symmetric(fab: Fabric, traffic: Traffic, backend: str = "highs",
                    time_limit: float | None = None, spot_checks: int = 2,
                    include_endpoint_links: bool = True,
                    **backend_options: Any) -> FlowResult:
    """The symmetric method (see :mod:`fabricopt.flow.symmetric`), certified."""
    gbps = _uniform_gbps(traffic)
    model: SymmetricModel = build_symmetric_lp(
        fab, gbps, include_endpoint_links=include_endpoint_links)
    sol = _polished(model.lp, solve_lp(model.lp, backend, time_limit, **backend_options))
    ga = model.ga
    theta_x = float(sol.x[-1]) if sol.x is not None else None
    lower, overload, residual, load, f0 = 0.0, 0.0, 0.0, None, None
    if sol.x is not None:
        f0 = model.lift(sol.x)
        load = model.loads(f0)
        residual = model.residual(f0, theta_x)
        lower, overload = certified_lower(theta_x, load[model.constrained],
                                          ga.capacity[model.constrained], residual, gbps)
    lengths = (model.lengths(sol.dual_ub) if sol.dual_ub is not None
               else np.ones(ga.n_arcs))
    upper, unreachable, cut, message = _symmetric_upper(fab, model, lengths, spot_checks)
    if sol.x is not None and sol.dual_ub is not None and upper - lower > EXACT_RTOL * upper:
        better = polish_duals(model.lp, sol.x, sol.dual_eq, sol.dual_ub)
        if better is not None:
            lengths2 = model.lengths(better)
            upper2, _, _, message2 = _symmetric_upper(fab, model, lengths2, spot_checks)
            if not message2 and upper2 < upper:
                lengths, upper = lengths2, upper2
    theta = theta_x if sol.status == "optimal" else None
    status = sol.status
    if message:
        status, theta, lower = "error", None, 0.0
    if unreachable is not None:
        lower = 0.0
        theta = 0.0 if theta is not None else None
    result = FlowResult(
        theta=theta, lower=lower, upper=upper, status=status, method="symmetric",
        backend=backend, seconds=sol.seconds, per_endpoint_gbps=0.0,
        message=message or sol.message, fabric_name=fab.name, cut=cut, unreachable=unreachable,
        max_overload=overload, max_residual=residual,
        lp_size={"columns": model.lp.n_cols, "rows": model.lp.n_rows, "nonzeros": model.lp.nnz,
                 "reduced": int(model.reduced)},
        _ga=ga, _load=load, _lengths=lengths, _tiers=_tiers(fab, ga),
        extra={"f0": f0, "theta": theta_x, "model": model,
               "include_endpoint_links": include_endpoint_links})
    return _finish(result, traffic, gbps * float(model.destinations(0).sum()))


def _symmetric_upper(fab: Fabric, model: SymmetricModel, lengths: np.ndarray,
                     spot_checks: int) -> tuple[float, Any, Any, str]:
    """Distance bound for invariant lengths: T x (root's distance sum), spot-checked."""
    ga = model.ga
    eps = np.array([ga.index[e] for e in fab.endpoints])
    T = len(eps)
    picks = [0] + sorted({int(i) for i in np.linspace(0, T - 1, spot_checks + 2)[1:-1]} |
                         {T - 1})[:spot_checks]
    dist = dijkstra(ga.matrix(lengths), directed=True, indices=eps[picks])
    sums = np.array([dist[j, eps[model.destinations(i)]].sum() for j, i in enumerate(picks)])
    if np.isinf(sums[0]):
        t = int(np.flatnonzero(np.isinf(dist[0, eps]))[0])
        reach = frozenset(ga.nodes[i] for i in np.flatnonzero(np.isfinite(dist[0])))
        return 0.0, (fab.endpoints[0], fab.endpoints[t]), reach, ""
    if not np.allclose(sums, sums[0], rtol=1e-9, atol=0):
        return np.inf, None, None, (
            "symmetry claim failed a spot check: endpoints see different distance sums "
            f"{sums.tolist()}; the claim is wrong for this fabric")
    numerator = float(ga.capacity @ lengths)
    denominator = T * model.gbps * float(sums[0])
    return (numerator / denominator if denominator > 0 else np.inf), None, None, ""


def cheap_bracket(fab: Fabric, traffic: Traffic, backend: str = "none",
                  include_endpoint_links: bool = True) -> FlowResult:
    """A certified bracket without an LP: ``lower = 0`` and the hop-length distance bound."""
    ga = GraphArrays.from_fabric(fab)
    eps = traffic.endpoints
    col = Collapse.of(ga, fab, eps)
    src, dst, gbps, out, inc = aggregate_demand(traffic, {e: i for i, e in enumerate(eps)},
                                                col.attach)
    collapsed = (col.out_arc >= 0) & include_endpoint_links
    ep_arc = np.concatenate([col.out_arc[collapsed], col.in_arc[collapsed]])
    ep_gbps = np.concatenate([out[collapsed], inc[collapsed]])
    used = ep_gbps > 0  # an endpoint that only sends (or only receives) bounds nothing
    ep_arc, ep_gbps = ep_arc[used], ep_gbps[used]
    bound = distance_bound(ga, np.ones(ga.n_arcs), col.core_arc, src, dst, gbps, ep_arc,
                           ep_gbps)
    # Endpoint links alone also bound theta: theta * out(e) <= its link capacity.
    ep_limit = np.min(ga.capacity[ep_arc] / ep_gbps) if len(ep_arc) else np.inf
    result = FlowResult(theta=None, lower=0.0, upper=float(min(bound.upper, ep_limit)),
                        status="not_solved", method="bounds", backend=backend, seconds=0.0,
                        per_endpoint_gbps=0.0, fabric_name=fab.name,
                        cut=_endpoint_cut(col, ga, bound.cut),
                        unreachable=_endpoint_pair(col, ga, (src, dst, gbps),
                                                   bound.unreachable),
                        _ga=ga, _tiers=_tiers(fab, ga))
    return _finish(result, traffic)


__all__ = ["max_concurrent_flow", "solve_flow_model", "solve_symmetric"]
