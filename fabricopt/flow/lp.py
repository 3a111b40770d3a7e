"""The linear program as one immutable record, and what a backend returns.

Every formulation in :mod:`fabricopt.flow` produces a :class:`LinearProgram` in the form

    minimise  c @ x   subject to   A_ub @ x <= b_ub,   A_eq @ x == b_eq,   lb <= x <= ub

with sparse matrices; every backend takes that record and returns an :class:`LPSolution`
whose status uses one vocabulary (:data:`STATUSES`) and keeps the solver's own message.

:data:`STATUS_MEANINGS` is the one status table of the package: every result that carries a
``status`` (throughput, two-phase rate, failure trials, capacity plans, routed flows) takes it
from there, and :func:`pulp_status` reads a pulp (MILP) solve into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

#: The status vocabulary of every backend.
STATUSES = ("optimal", "inexact", "time_limit", "iteration_limit", "stalled", "infeasible",
            "unbounded", "numerical_error", "not_solved", "error")

#: The statuses of a routing evaluated as deployed (no solver: its theta is computed exactly).
ROUTING_STATUSES = ("exact", "disconnected")

#: Every status a result of fabricopt carries, and what it means. Solver statuses first (as in
#: :data:`STATUSES`), then the routing ones. ``docs/throughput.md`` (Statuses) says what each
#: means for the bracket of a throughput result.
STATUS_MEANINGS = {
    "optimal": "solved and proven: the bracket is closed (an LP) or the gap is 0 (a MILP)",
    "inexact": "the solver reports optimal (or ends with a status it does not name), but "
               "its point and duals prove only a wider bracket",
    "time_limit": "the solver stopped at its time limit; what it found is kept, unproven (a "
                  "bracket, or a MILP's plan with its gap)",
    "iteration_limit": "the solver stopped at its iteration limit (or a work_limit); as "
                       "time_limit",
    "stalled": "the approximate method stopped because its certified bracket no longer "
               "narrowed, still open; the best bracket is kept (one that closed is "
               "optimal)",
    "infeasible": "the solver proved there is no solution (for a MILP: no plan within the "
                  "bounds meets the target)",
    "unbounded": "the solver reports the problem unbounded",
    "numerical_error": "the solver failed numerically, or the two proofs contradict each "
                       "other",
    "not_solved": "nothing was solved (the problem was too large to try, or for the "
                  "memory at hand, or the solver stopped without a point)",
    "error": "an unknown solver status with no point that proves a lower bound, or a "
             "symmetry claim that failed its spot check",
    "exact": "a routing evaluated as deployed: theta is its loads' exact value (no solver)",
    "disconnected": "a demand pair has no path at all (a routing's, or a throughput "
                    "result's, named by its unreachable): theta is 0, exactly",
}

#: pulp's problem status (``LpProblem.status``) in :data:`STATUSES`.
_PULP_STATUS = {1: "optimal", 0: "not_solved", -1: "infeasible", -2: "unbounded",
                -3: "error"}


def pulp_status(status: int, sol_status: int | None = None) -> str:
    """A pulp solve's status in :data:`STATUSES`.

    ``status`` and ``sol_status`` are a solved ``pulp.LpProblem``'s attributes. A solver that
    stops at its limit with a feasible but unproven point (CBC's "Optimal" with solution
    status 2, "Solution Found") is ``"time_limit"``, as for every backend.

    >>> pulp_status(1, 1), pulp_status(1, 2), pulp_status(-1), pulp_status(7)
    ('optimal', 'time_limit', 'infeasible', 'error')
    """
    out = _PULP_STATUS.get(status, "error")
    if out == "optimal" and sol_status not in (None, 1):
        out = "time_limit"
    return out


@dataclass(frozen=True)
class LinearProgram:
    """A linear program in sparse matrix form (see the module docstring)."""

    c: np.ndarray
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    col_names: tuple[str, ...] | None = None
    row_names_ub: tuple[str, ...] | None = None
    row_names_eq: tuple[str, ...] | None = None

    @property
    def n_cols(self) -> int:
        return len(self.c)

    @property
    def n_rows(self) -> int:
        return self.A_ub.shape[0] + self.A_eq.shape[0]

    @property
    def nnz(self) -> int:
        return int(self.A_ub.nnz + self.A_eq.nnz)

    def __repr__(self) -> str:
        return (f"<LinearProgram: {self.n_cols} columns, {self.A_ub.shape[0]} <= rows, "
                f"{self.A_eq.shape[0]} == rows, {self.nnz} nonzeros>")


@dataclass
class LPSolution:
    """What a backend returns.

    ``x`` is the primal point (None when the solver has none); ``dual_ub`` and ``dual_eq``
    are the row duals in the convention d(objective)/d(b), so ``dual_ub <= 0`` at a minimum.
    """

    status: str
    message: str
    x: np.ndarray | None = None
    objective: float | None = None
    dual_ub: np.ndarray | None = None
    dual_eq: np.ndarray | None = None
    seconds: float = 0.0
    info: dict[str, object] = field(default_factory=dict)
