"""The linear program as one immutable record, and what a backend returns.

Every formulation in :mod:`fabricopt.flow` produces a :class:`LinearProgram` in the form

    minimise  c @ x   subject to   A_ub @ x <= b_ub,   A_eq @ x == b_eq,   lb <= x <= ub

with sparse matrices; every backend takes that record and returns an :class:`LPSolution`
whose status uses one vocabulary (:data:`STATUSES`) and keeps the solver's own message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

#: The status vocabulary of every backend.
STATUSES = ("optimal", "inexact", "time_limit", "iteration_limit", "stalled", "infeasible",
            "unbounded", "numerical_error", "not_solved", "error")


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
