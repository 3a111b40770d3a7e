"""The textbook baseline: one commodity per ordered endpoint pair, written with pulp, CBC.

This is how max-concurrent-flow is usually first written down (one flow variable per pair
and arc, one conservation row per pair and node, built one constraint at a time in Python).
fabricopt's formulation is measured against it in ``run.py``.
"""

from __future__ import annotations

import time

import pulp


def textbook_theta(fab, gbps: float = 1.0, time_limit: float | None = None) -> tuple[float, float]:
    """Solve uniform all-to-all per pair with pulp + CBC; returns (theta, seconds)."""
    start = time.perf_counter()
    g = fab.graph
    arcs = list(g.edges)
    eps = list(fab.endpoints)
    pairs = [(s, t) for s in eps for t in eps if s != t]
    prob = pulp.LpProblem("textbook_mcf", pulp.LpMaximize)
    theta = pulp.LpVariable("theta", lowBound=0)
    prob += theta
    f = {}
    for p in range(len(pairs)):
        for a in range(len(arcs)):
            f[p, a] = pulp.LpVariable(f"f_{p}_{a}", lowBound=0)
    out_arcs = {v: [] for v in g.nodes}
    in_arcs = {v: [] for v in g.nodes}
    for a, (u, v) in enumerate(arcs):
        out_arcs[u].append(a)
        in_arcs[v].append(a)
    for p, (s, t) in enumerate(pairs):
        for v in g.nodes:
            net = (pulp.lpSum(f[p, a] for a in out_arcs[v])
                   - pulp.lpSum(f[p, a] for a in in_arcs[v]))
            rhs = gbps if v == s else (-gbps if v == t else 0)
            prob += net == rhs * theta
    for a, (u, v) in enumerate(arcs):
        prob += pulp.lpSum(f[p, a] for p in range(len(pairs))) <= g[u][v]["capacity"]
    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit)
    prob.solve(solver)
    status = pulp.LpStatus[prob.status]
    value = theta.varValue if status == "Optimal" else float("nan")
    return value, time.perf_counter() - start
