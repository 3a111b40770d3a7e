r"""Link-capacity planning: the fewest (cheapest) links per bundle that carry a traffic.

Given a *skeleton* fabric, whose bundles say which devices may be linked and how many links at
most (an arc attribute ``max_links``, else ``links``), at ``capacity / links`` Gb/s per link,
:func:`plan_capacity` chooses the link count :math:`x_b` of every bundle :math:`b` at least
cost such that the traffic :math:`D` fits at scale ``target_theta``. It is a mixed-integer
program on the arc formulation with source aggregation (one flow vector per source, as in
:mod:`fabricopt.flow.formulation`):

.. math::

    \min \sum_b w_b x_b \quad\text{s.t.}\quad
    \sum_{a \in \delta^+(v)} f_{k,a} - \sum_{a \in \delta^-(v)} f_{k,a}
        = \theta^* b_k(v) \;\forall k, v, \qquad
    \sum_k f_{k,a} \le g_b\, x_b \;\forall a \in b, \qquad
    0 \le x_b \le u_b,\; x_b \in \mathbb{Z},\; f \ge 0,

with :math:`w_b` the cost of one link, :math:`g_b` its rate, :math:`u_b` the bound and
:math:`b_k(v)` the supply of commodity :math:`k` (what source :math:`k` sends, less what node
:math:`v` receives from it).

**Per orbit.** When the fabric carries a symmetry claim and the traffic is uniform
all-to-all, every bundle of one orbit of the group gets the same count. The plan is then one
root's flow :math:`f_i` per orbit :math:`O_i` of the group on the endpoints, with one capacity
row per arc orbit :math:`O` (the symmetric LP of :mod:`fabricopt.flow.symmetric`),
:math:`\sum_i \tfrac{|O_i|}{|O|}\sum_{a\in O} f_{i,a} \le g_O x_O`, and one integer per orbit
of bundles: a handful of integers for any size. This restricts the plans to
those the group preserves; since the constraints are convex and invariant, averaging any plan
over the group gives an invariant fractional plan of the same cost, so the restriction loses
nothing in the relaxation, and integer plans may cost a little more than the best
unrestricted one (the price of keeping every bundle of a tier alike, which is how fabrics are
built).

Every plan is checked with :func:`~fabricopt.max_concurrent_flow` on the planned fabric:
``verified`` says its certified lower bound reaches ``target_theta``.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .._checks import check_bool, check_choice, check_positive, fail
from ..errors import TrafficError
from ..fabric import Fabric
from ..symmetry.claim import Symmetry
from ..traffic import Traffic

Bundle = tuple[Hashable, Hashable]

#: pulp's solution status, in the vocabulary of the flow results.
_SOL_STATUS = {1: "optimal", 2: "feasible", 0: "not_solved", -1: "infeasible",
               -2: "unbounded", -3: "not_solved"}
_TOL = 1e-6


@dataclass
class CapacityPlan:
    """What :func:`plan_capacity` returns.

    Attributes
    ----------
    status : str
        ``"optimal"`` (proven, gap 0), ``"feasible"`` (a plan, stopped before the proof:
        see ``gap``), ``"infeasible"`` (no plan within the bounds carries the traffic),
        ``"not_solved"``.
    links : dict
        Links of every bundle ``(u, v)`` of the skeleton (one key per bundle, in the direction
        of its first arc); empty unless a plan was found.
    orbit_links : dict or None
        Per orbit: links per bundle of the orbit, keyed by the orbit's label (the per-orbit
        model only).
    cost : float
        ``sum of links x cost per link`` of the plan (NaN without a plan).
    cost_bound : float
        A proven lower bound on the cost of any plan of the model: the solver's when it
        proves optimality, else the linear relaxation's.
    gap : float
        ``(cost - cost_bound) / cost``: 0 when proven optimal (NaN without a plan).
    target_theta : float
        The scale of the traffic planned for.
    model : {"orbit", "full"}
        One integer per orbit of bundles, or one per bundle.
    fabric : Fabric or None
        The planned fabric: the skeleton with the planned links (bundles of 0 links removed),
        and the symmetry claim restricted to the arcs kept in the per-orbit model.
    flow : FlowResult or None
        :func:`~fabricopt.max_concurrent_flow` of the traffic on the planned fabric.
    verified : bool
        True when ``flow.lower >= target_theta`` (within 1e-6 relative): the certificate
        proves the plan carries the traffic.
    seconds : float
        Wall time of the whole call.
    n_integers, n_variables, n_rows : int
        Size of the program solved.
    """

    status: str
    links: dict[Bundle, int]
    orbit_links: dict[str, int] | None
    cost: float
    cost_bound: float
    gap: float
    target_theta: float
    model: str
    fabric: Fabric | None = None
    flow: Any = None
    verified: bool = False
    seconds: float = 0.0
    n_integers: int = 0
    n_variables: int = 0
    n_rows: int = 0
    solver: str = ""
    message: str = field(default="", repr=False)

    def __repr__(self) -> str:
        head = (f"CapacityPlan({self.status}, cost={self.cost:,.6g}, gap={self.gap:.3g}, "
                f"model={self.model}, verified={self.verified}")
        if self.orbit_links is not None:
            head += ", " + ", ".join(f"{k}: {v}" for k, v in self.orbit_links.items())
        return head + ")"

    def to_records(self) -> list[dict[str, Any]]:
        """One row per bundle: its ends and planned links.

        >>> import fabricopt as fo
        >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1, links_per_pair=2)
        >>> plan = fo.plan_capacity(fab, fo.all_to_all(fab, gbps=300), target_theta=1.0)
        >>> [r["links"] for r in plan.to_records()]
        [1, 1, 1, 1]
        """
        return [{"u": u, "v": v, "links": n} for (u, v), n in self.links.items()]


def _bundles(fab: Fabric) -> tuple[list[Bundle], dict[Bundle, dict[str, Any]]]:
    """Each bundle once (the direction of its first arc) and its first arc's data."""
    seen: set[Bundle] = set()
    order: list[Bundle] = []
    data: dict[Bundle, dict[str, Any]] = {}
    for u, v, d in fab.graph.edges(data=True):
        if (v, u) in seen:
            continue
        seen.add((u, v))
        order.append((u, v))
        data[(u, v)] = d
    return order, data


def _link_cost(func: str, cost: Any) -> Callable[[Hashable, Hashable, Mapping[str, Any]], float]:
    """Cost of one link of a bundle: 1 (count links), a tier mapping, or a callable."""
    if cost is None:
        return lambda u, v, d: 1.0
    if isinstance(cost, Mapping):
        table = dict(cost)

        def by_tier(u: Hashable, v: Hashable, d: Mapping[str, Any]) -> float:
            tier = d.get("tier")
            if tier not in table:
                raise fail(func, "cost", "a mapping with a cost per link for every tier of "
                           "the fabric", f"no entry for tier {tier!r}")
            return float(table[tier])
        return by_tier
    if callable(cost):
        return lambda u, v, d: float(cost(u, v, d))
    raise fail(func, "cost", "None, a mapping tier -> cost per link, or a callable "
               "(u, v, data) -> cost per link", cost)


def _solver(func: str, solver: Any, time_limit: float | None) -> Any:
    import pulp

    if solver is None:
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit)
    if isinstance(solver, str):
        available = pulp.listSolvers(onlyAvailable=True)
        if solver not in available:
            raise fail(func, "solver", "a pulp solver available here (" + ", ".join(available)
                       + ") or a pulp solver object", solver)
        kwargs: dict[str, Any] = {"msg": False}
        if time_limit is not None:
            kwargs["timeLimit"] = time_limit
        return pulp.getSolver(solver, **kwargs)
    if not hasattr(solver, "actualSolve"):
        raise fail(func, "solver", "None, a pulp solver name or a pulp solver object", solver)
    return solver


@dataclass(frozen=True)
class _Model:
    """The program, and how its integers map back to bundles."""

    problem: Any
    x: dict[Hashable, Any]                 # key -> link-count variable
    members: dict[Hashable, list[Bundle]]  # key -> bundles it sets
    label: dict[Hashable, str]
    weight: dict[Hashable, float]          # cost of one unit of x
    n_variables: int
    n_rows: int


def _demand_by_source(traffic: Traffic) -> dict[Hashable, dict[Hashable, float]]:
    out: dict[Hashable, dict[Hashable, float]] = defaultdict(dict)
    for (s, t), d in traffic.items():
        if s != t and d > 0:
            out[s][t] = out[s].get(t, 0.0) + float(d)
    return out


def _build(fab: Fabric, traffic: Traffic, theta: float, per_link: Callable[..., float],
           bound: dict[Bundle, int], rate: dict[Bundle, float], per_orbit: bool,
           integral: bool) -> _Model:
    import pulp

    g = fab.graph
    bundles, data = _bundles(fab)
    arcs = list(g.edges())
    bundle_of = {}
    for b in bundles:
        bundle_of[b] = b
        bundle_of[(b[1], b[0])] = b
    cat = pulp.LpInteger if integral else pulp.LpContinuous
    prob = pulp.LpProblem("plan_capacity", pulp.LpMinimize)
    members: dict[Hashable, list[Bundle]] = defaultdict(list)
    label: dict[Hashable, str] = {}
    if per_orbit:
        sym = fab.symmetry
        assert sym is not None
        names = sym.orbit_names
        for b in bundles:
            o = min(sym.arc_orbit[b], sym.arc_orbit[(b[1], b[0])])
            members[o].append(b)
            label[o] = names[o].rsplit(":", 1)[0] if names and o < len(names) else f"orbit{o}"
    else:
        for b in bundles:
            members[b].append(b)
            label[b] = f"{b[0]}-{b[1]}"
    x: dict[Hashable, Any] = {}
    weight: dict[Hashable, float] = {}
    for i, (key, bs) in enumerate(members.items()):
        x[key] = pulp.LpVariable(f"x{i}", lowBound=0, upBound=min(bound[b] for b in bs),
                                 cat=cat)
        weight[key] = sum(per_link(b[0], b[1], data[b]) for b in bs)
    prob += pulp.lpSum(weight[k] * x[k] for k in x)

    key_of = {b: k for k, bs in members.items() for b in bs}
    n_rows = 0
    flows: dict[Hashable, dict[tuple[Hashable, Hashable], Any]] = {}
    if per_orbit:
        # One root per orbit of the group on the endpoints (one when it is transitive).
        from ..flow.symmetric import endpoint_orbits

        sym = fab.symmetry
        assert sym is not None
        by_source = _demand_by_source(traffic)
        orbit_ids = endpoint_orbits(sym, tuple(fab.endpoints))
        first = np.unique(orbit_ids, return_index=True)[1]
        orbit_members = np.bincount(orbit_ids)
        demand = {fab.endpoints[i]: by_source.get(fab.endpoints[i], {}) for i in first}
    else:
        demand = _demand_by_source(traffic)
    for k, (src, targets) in enumerate(demand.items()):
        f = {a: pulp.LpVariable(f"f{k}_{j}", lowBound=0) for j, a in enumerate(arcs)}
        flows[src] = f
        out_e: dict[Hashable, list[Any]] = defaultdict(list)
        in_e: dict[Hashable, list[Any]] = defaultdict(list)
        for (u, v), var in f.items():
            out_e[u].append(var)
            in_e[v].append(var)
        supply = sum(targets.values())
        for v in g.nodes:
            rhs = theta * (supply if v == src else -targets.get(v, 0.0))
            expr = pulp.LpAffineExpression([(var, 1.0) for var in out_e[v]]
                                           + [(var, -1.0) for var in in_e[v]])
            prob += pulp.LpConstraint(expr, pulp.LpConstraintEQ, rhs=rhs)
            n_rows += 1
    if per_orbit:
        sym = fab.symmetry
        assert sym is not None
        by_orbit: dict[int, list[tuple[Hashable, Hashable]]] = defaultdict(list)
        for a in arcs:
            by_orbit[sym.arc_orbit[a]].append(a)
        for _o, orbit_arcs in by_orbit.items():
            b = bundle_of[orbit_arcs[0]]
            # Root i's endpoint orbit routes like it: (|O_i|/|O|) sum_O f_i on each arc.
            expr = pulp.LpAffineExpression(
                [(f[a], int(n_i) / len(orbit_arcs))
                 for f, n_i in zip(flows.values(), orbit_members, strict=True)
                 for a in orbit_arcs] + [(x[key_of[b]], -rate[b])])
            prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, rhs=0.0)
            n_rows += 1
    else:
        for a in arcs:
            b = bundle_of[a]
            expr = pulp.LpAffineExpression([(f[a], 1.0) for f in flows.values()]
                                           + [(x[key_of[b]], -rate[b])])
            prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, rhs=0.0)
            n_rows += 1
    n_vars = len(x) + sum(len(f) for f in flows.values())
    return _Model(prob, x, dict(members), label, weight, n_vars, n_rows)


def _planned_fabric(fab: Fabric, links: dict[Bundle, int], rate: dict[Bundle, float],
                    per_orbit: bool) -> Fabric:
    """The skeleton with the planned links; zero bundles removed; the claim restricted."""
    g = nx.DiGraph()
    g.add_nodes_from(fab.graph.nodes(data=True))
    for (u, v), n in links.items():
        if n <= 0:
            continue
        for a, b in ((u, v), (v, u)):
            d = dict(fab.graph[a][b])
            d.pop("max_links", None)
            d["links"] = n
            d["capacity"] = n * rate[(u, v)]
            g.add_edge(a, b, **d)
    symmetry = None
    sym = fab.symmetry
    if per_orbit and sym is not None:
        kept = {a: o for a, o in sym.arc_orbit.items() if g.has_edge(*a)}
        symmetry = Symmetry(kept, sym.group + " (planned)", g.number_of_nodes(),
                            g.number_of_edges(), sym.endpoints, sym.orbit_names,
                            sym.endpoint_orbit)
    params = dict(fab.params, planned=True)
    return Fabric(g, fab.endpoints, f"planned {fab.name}", params, symmetry)


def plan_capacity(fab: Fabric, traffic: Traffic, *, target_theta: float,
                  cost: Mapping[str, float] | Callable[..., float] | None = None,
                  integral: bool = True, solver: Any = None, time_limit: float | None = None,
                  model: str = "auto") -> CapacityPlan:
    """Choose the links of every bundle, at least cost, so ``traffic`` fits at ``target_theta``.

    Parameters
    ----------
    fab : Fabric
        The skeleton: its bundles are the device pairs that may be linked; each bundle may
        hold up to its arcs' ``max_links`` attribute (else its ``links``) links of
        ``capacity / links`` Gb/s each.
    traffic : Traffic
        Demands in Gb/s per ordered endpoint pair.
    target_theta : float
        Scale of ``traffic`` that must fit, > 0.
    cost : mapping or callable, optional
        Cost of one link: None counts links; a mapping from tier (``"leaf-spine"``) to cost;
        or ``cost(u, v, data)`` for the bundle ``(u, v)``.
    integral : bool
        True: whole links (a MILP). False: the linear relaxation (fractional links).
    solver : str or pulp solver, optional
        None for CBC (shipped with pulp); a name from ``pulp.listSolvers(onlyAvailable=True)``
        such as ``"HiGHS"``; or a configured pulp solver object.
    time_limit : float, optional
        Seconds for the solver; a plan found by then is returned as ``"feasible"`` with its
        gap.
    model : {"auto", "orbit", "full"}
        One integer per orbit of bundles (needs a symmetry claim and uniform all-to-all
        traffic), one per bundle, or the first that applies.

    Returns
    -------
    CapacityPlan
        Status, links per bundle (and per orbit), cost, proven cost bound and gap, the
        planned fabric and its verification by :func:`~fabricopt.max_concurrent_flow`.

    Raises
    ------
    InvalidParameterError
        On a bad argument, a bundle without a link rate, or ``model="orbit"`` where it does
        not apply.

    Notes
    -----
    The formulation and the per-orbit reduction are in the module docstring of
    :mod:`fabricopt.analysis.capacity`. Only the model's integers decide cost; the flow
    variables are continuous (fractional routing, as the throughput LP assumes).

    Examples
    --------
    Four GPUs on two leaves and one spine: all-to-all at 120 Gb/s per pair sends
    ``2 x 2 x 120 = 480`` Gb/s out of each leaf, two 400G links (each GPU sends
    ``3 x 120 = 360``, within its link); at half the load one.

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2, links_per_pair=4)
    >>> tm = fo.all_to_all(fab, gbps=120)
    >>> plan = fo.plan_capacity(fab, tm, target_theta=1.0)
    >>> plan.status, plan.orbit_links["leaf-spine"], plan.verified
    ('optimal', 2, True)
    >>> fo.plan_capacity(fab, tm, target_theta=0.5).orbit_links["leaf-spine"]
    1
    """
    func = "plan_capacity"
    start = time.perf_counter()
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    if not isinstance(traffic, Traffic):
        raise fail(func, "traffic", "a Traffic (e.g. fo.all_to_all(fab))",
                   type(traffic).__name__)
    try:
        traffic.check_endpoints(fab)
    except TrafficError as exc:
        raise TrafficError(f"{func}(): traffic does not fit fab: {exc}") from None
    theta = check_positive(func, "target_theta", target_theta)
    integral = check_bool(func, "integral", integral)
    model = check_choice(func, "model", model, ("auto", "orbit", "full"))
    if time_limit is not None:
        time_limit = check_positive(func, "time_limit", time_limit)
    per_link = _link_cost(func, cost)
    pulp_solver = _solver(func, solver, time_limit)
    fab.validate()

    from ..flow.api import symmetric_applicable

    applicable, why = symmetric_applicable(fab, traffic)
    if model == "orbit" and not applicable:
        raise fail(func, "model", "'orbit' only where the symmetric method applies", why)
    per_orbit = applicable if model == "auto" else model == "orbit"

    bundles, data = _bundles(fab)
    bound: dict[Bundle, int] = {}
    rate: dict[Bundle, float] = {}
    for b in bundles:
        d, back = data[b], fab.graph[b[1]][b[0]]
        n = int(d.get("links", 1))
        if n < 1:
            raise fail(func, "fab", "bundles of at least one link (the rate is capacity / "
                       "links)", f"bundle {b!r} has links={n}")
        rate[b] = float(d["capacity"]) / n
        most = max(int(d.get("max_links", n)), int(back.get("max_links", n)))
        bound[b] = most

    built = _build(fab, traffic, theta, per_link, bound, rate, per_orbit, integral)
    status, value = _solve(built, pulp_solver)
    links: dict[Bundle, int] = {}
    orbit_links: dict[str, int] | None = None
    plan_cost = math.nan
    cost_bound = math.nan
    gap = math.nan
    planned = flow = None
    verified = False
    if value is not None:
        counts = {k: (round(v) if integral else v) for k, v in value.items()}
        links = {b: counts[k] for k, bs in built.members.items() for b in bs}
        if per_orbit:
            orbit_links = {built.label[k]: counts[k] for k in built.members}
        plan_cost = float(sum(built.weight[k] * counts[k] for k in counts))
        if status == "optimal":
            cost_bound = plan_cost
        else:
            relaxed = _build(fab, traffic, theta, per_link, bound, rate, per_orbit, False)
            r_status, r_value = _solve(relaxed, _solver(func, solver, time_limit))
            if r_status == "optimal" and r_value is not None:
                cost_bound = float(sum(relaxed.weight[k] * r_value[k] for k in r_value))
        gap = 0.0 if status == "optimal" else (
            (plan_cost - cost_bound) / plan_cost if plan_cost > 0 else math.nan)
        if integral:
            from ..flow.api import max_concurrent_flow

            planned = _planned_fabric(fab, {b: int(n) for b, n in links.items()}, rate,
                                      per_orbit)
            flow = max_concurrent_flow(planned, traffic)
            verified = bool(flow.lower >= theta * (1 - _TOL))
    return CapacityPlan(status, links, orbit_links, plan_cost, cost_bound, gap, theta,
                        "orbit" if per_orbit else "full", planned, flow, verified,
                        time.perf_counter() - start, len(built.x), built.n_variables,
                        built.n_rows, type(pulp_solver).__name__)


def _solve(built: _Model, solver: Any) -> tuple[str, dict[Hashable, float] | None]:
    """Run the solver; the status and the integers' values when a solution exists."""
    prob = built.problem
    prob.solve(solver)
    status = _SOL_STATUS.get(getattr(prob, "sol_status", 0), "not_solved")
    if status == "optimal" and prob.status != 1:
        status = "not_solved"
    if status not in ("optimal", "feasible"):
        return status, None
    values = {k: var.value() for k, var in built.x.items()}
    if any(v is None for v in values.values()):
        return "not_solved", None
    return status, {k: float(v) for k, v in values.items()}


__all__ = ["CapacityPlan", "plan_capacity"]
