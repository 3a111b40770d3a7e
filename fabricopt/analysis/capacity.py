r"""Link-capacity planning: the fewest (cheapest) links per bundle that carry a traffic.

Given a *skeleton* fabric, whose bundles say which devices may be linked and how many links at
most (an arc attribute ``max_links``, else ``links``), at ``capacity / links`` Gb/s per link,
:func:`plan_capacity` chooses the link count :math:`x_b` of every bundle :math:`b` at least
cost such that the traffic :math:`D` fits at scale ``target_theta``. It is a mixed-integer
program built on the flow package's own throughput LP (:func:`~fabricopt.build_flow_lp`: one
flow vector per source, endpoints that hang off one switch collapsed into rows of their
link), with :math:`\theta` fixed at the target and each capacity row's right-hand side
:math:`c_a` replaced by the capacity of the links chosen:

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
row per arc orbit :math:`O` (the symmetric LP of :mod:`fabricopt.flow.symmetric`, reduced by
colour refinement), :math:`\sum_i \tfrac{|O_i|}{|O|}\sum_{a\in O} f_{i,a} \le g_O x_O`, and one
integer per orbit of bundles: a handful of integers for any size. The refinement stays
exact for every choice of the integers, since it depends only on the orbits, on which the
capacities :math:`g_O x_O` are constant. This restricts the plans to
those the group preserves; since the constraints are convex and invariant, averaging any plan
over the group gives an invariant fractional plan of the same cost, so the restriction loses
nothing in the relaxation, and integer plans may cost a little more than the best
unrestricted one (the price of keeping every bundle of a tier alike, which is how fabrics are
built).

The program goes to a MILP solver through pulp (:func:`fabricopt.flow.backends.to_pulp`, with
the link counts made integer), and pulp's status is read into the package's one status table
(:func:`fabricopt.flow.lp.pulp_status`). Every plan is checked with
:func:`~fabricopt.max_concurrent_flow` on the planned fabric: ``verified`` says its certified
lower bound reaches ``target_theta``. ``docs/optimize.md`` (Capacity planning) has the
derivation and the examples.
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
import scipy.sparse as sp

from .._checks import check_bool, check_choice, check_positive, fail
from ..errors import TrafficError
from ..fabric import Fabric
from ..flow.api import max_concurrent_flow, symmetric_applicable
from ..flow.backends import to_pulp
from ..flow.formulation import build_flow_lp
from ..flow.lp import LinearProgram, pulp_status
from ..flow.symmetric import build_symmetric_lp
from ..graph_arrays import GraphArrays
from ..symmetry_claim import Symmetry
from ..traffic import Traffic

Bundle = tuple[Hashable, Hashable]

_TOL = 1e-6


@dataclass
class CapacityPlan:
    """What :func:`plan_capacity` returns.

    Attributes
    ----------
    status : str
        In the one vocabulary of :data:`fabricopt.flow.lp.STATUS_MEANINGS`: ``"optimal"``
        (proven, gap 0), ``"time_limit"`` (a plan, stopped at the time limit before the
        proof: see ``gap``), ``"infeasible"`` (no plan within the bounds carries the
        traffic), ``"not_solved"`` (stopped without a plan), ``"unbounded"`` or ``"error"``.
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
    """The program, and how its integers map back to bundles.

    ``lp`` is the flow model's LP with theta fixed at the target and one more column per
    key (its link count, the columns ``integers``); ``weight`` is the cost of one unit.
    """

    lp: LinearProgram
    integers: slice
    members: dict[Hashable, list[Bundle]]
    label: dict[Hashable, str]
    weight: dict[Hashable, float]


def _groups(fab: Fabric, bundles: list[Bundle], per_orbit: bool,
            ) -> tuple[dict[Hashable, list[Bundle]], dict[Hashable, str]]:
    """The bundles each integer sets (one per orbit of bundles, or one per bundle), and its
    label."""
    members: dict[Hashable, list[Bundle]] = defaultdict(list)
    label: dict[Hashable, str] = {}
    sym = fab.symmetry if per_orbit else None
    for b in bundles:
        if sym is None:
            key: Hashable = b
            label[b] = f"{b[0]}-{b[1]}"
        else:
            # A bundle's two directions may lie in two arc orbits; the smaller names it
            # (an automorphism maps both directions together, so the pair is consistent).
            key = min(sym.arc_orbit[b], sym.arc_orbit[(b[1], b[0])])
            names = sym.orbit_names
            label[key] = (names[key].rsplit(":", 1)[0] if names and key < len(names)
                          else f"orbit{key}")
        members[key].append(b)
    return dict(members), label


def _flow_model(fab: Fabric, traffic: Traffic, per_orbit: bool,
                ) -> tuple[LinearProgram, GraphArrays, np.ndarray]:
    """The throughput LP of the flow package, and an arc of each of its capacity rows.

    Per orbit: the symmetric root LP (one capacity row per arc orbit); else the
    source-aggregated LP (one row per core arc, then one per collapsed endpoint link).
    """
    if per_orbit:
        gbps = traffic.uniform_gbps or next(iter(traffic.pairs.values()))
        sym_model = build_symmetric_lp(fab, float(gbps))
        orbit = sym_model.orbit
        first = np.full(len(sym_model.orbit_size), -1)
        first[orbit[::-1]] = np.arange(len(orbit))[::-1]
        return sym_model.lp, sym_model.ga, first[sym_model.row_orbit]
    model = build_flow_lp(fab, traffic)
    return model.lp, model.ga, np.concatenate([model.core_arcs, model.ep_rows_arc])


def _build(fab: Fabric, traffic: Traffic, theta: float, per_link: Callable[..., float],
           bound: dict[Bundle, int], rate: dict[Bundle, float], per_orbit: bool) -> _Model:
    """The capacity MILP on the flow model's LP: theta fixed at the target, and each
    capacity row ``load <= c_a`` turned into ``load - g_b x_b <= 0`` for the link count
    ``x_b`` of the arc's bundle (or orbit of bundles)."""
    bundles, data = _bundles(fab)
    members, label = _groups(fab, bundles, per_orbit)
    keys = list(members)
    column = {b: j for j, k in enumerate(keys) for b in members[k]}
    column.update({(v, u): j for (u, v), j in list(column.items())})
    lp, ga, row_arc = _flow_model(fab, traffic, per_orbit)
    n, q, rows = lp.n_cols, len(keys), len(row_arc)
    assert rows == lp.A_ub.shape[0], "every <= row of a throughput LP is a capacity row"
    row_bundle = [ga.arcs[a] for a in row_arc]
    row_rate = np.array([rate[b] if b in rate else rate[(b[1], b[0])] for b in row_bundle])
    links = sp.csr_matrix((-row_rate, (np.arange(rows), [column[b] for b in row_bundle])),
                          shape=(rows, q))
    weight = {k: sum(per_link(b[0], b[1], data[b]) for b in members[k]) for k in keys}
    lb = np.concatenate([lp.lb, np.zeros(q)])
    ub = np.concatenate([lp.ub, [min(bound[b] for b in members[k]) for k in keys]])
    lb[n - 1] = ub[n - 1] = theta  # theta is the last column of every throughput LP
    milp = LinearProgram(
        np.concatenate([np.zeros(n), [weight[k] for k in keys]]),
        sp.hstack([lp.A_ub, links], format="csr"), np.zeros(rows),
        sp.hstack([lp.A_eq, sp.csr_matrix((lp.A_eq.shape[0], q))], format="csr"), lp.b_eq,
        lb, ub)
    return _Model(milp, slice(n, n + q), members, label, weight)


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
        Seconds for the solver; a plan found by then is returned with status
        ``"time_limit"`` and its gap.
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

    built = _build(fab, traffic, theta, per_link, bound, rate, per_orbit)
    status, value = _solve(built, pulp_solver, integral)
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
            r_status, r_value = _solve(built, _solver(func, solver, time_limit), False)
            if r_status == "optimal" and r_value is not None:
                cost_bound = float(sum(built.weight[k] * r_value[k] for k in r_value))
        gap = 0.0 if status == "optimal" else (
            (plan_cost - cost_bound) / plan_cost if plan_cost > 0 else math.nan)
        if integral:
            planned = _planned_fabric(fab, {b: int(n) for b, n in links.items()}, rate,
                                      per_orbit)
            flow = max_concurrent_flow(planned, traffic)
            verified = bool(flow.lower >= theta * (1 - _TOL))
    return CapacityPlan(status, links, orbit_links, plan_cost, cost_bound, gap, theta,
                        "orbit" if per_orbit else "full", planned, flow, verified,
                        time.perf_counter() - start, len(built.members), built.lp.n_cols,
                        built.lp.n_rows, type(pulp_solver).__name__)


def _solve(built: _Model, solver: Any, integral: bool,
           ) -> tuple[str, dict[Hashable, float] | None]:
    """Solve the program with pulp (whole link counts when ``integral``); its status and
    the link counts when it found a plan."""
    import pulp

    prob, xs, _ = to_pulp(built.lp, "plan_capacity")
    counts = xs[built.integers]
    if integral:
        for var in counts:
            var.cat = pulp.LpInteger
    prob.solve(solver)
    status = pulp_status(prob.status, getattr(prob, "sol_status", None))
    if status not in ("optimal", "time_limit"):
        return status, None
    values = [var.value() for var in counts]
    if any(v is None for v in values):
        return "not_solved", None
    return status, {k: float(v) for k, v in zip(built.members, values, strict=True)}


__all__ = ["CapacityPlan", "plan_capacity"]
