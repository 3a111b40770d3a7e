"""Polish a solver's point so that its equalities hold to machine precision.

Some backends return points accurate only to their tolerance or to the digits they print
(CBC writes about eight significant digits; PDLP stops at 1e-7 or so). The lower-bound
certificate pays for every bit of conservation residual, so before certifying, the point
is projected onto its active set: the variables in use and the inequality rows that are
tight keep the same support, and a least-squares correction makes those rows exact. The
polished point is only kept when it is non-negative and has a smaller residual; the
certificate is then computed from it as from any other point.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import lsqr as _lsqr
from threadpoolctl import threadpool_limits

from .lp import LinearProgram

#: Most LSQR iterations a correction takes. Its tolerances (1e-15) are rarely met, so without
#: a cap it runs 20 iterations per column: measured on 2 cores, a 8,531-column symmetric LP
#: with 35 roots took 22 s to polish and reached after 200 iterations (0.1 s) the residual it
#: ends on. A correction is only kept when it helps, so stopping early is always safe.
MAX_LSQR_ITERATIONS = 2_000


def residual(lp: LinearProgram, x: np.ndarray) -> float:
    """Largest violation of the equalities and inequalities at ``x`` (negatives clipped)."""
    x = np.clip(x, 0.0, None)
    eq = np.abs(lp.A_eq @ x - lp.b_eq).max() if lp.A_eq.shape[0] else 0.0
    ub = np.clip(lp.A_ub @ x - lp.b_ub, 0.0, None).max() if lp.A_ub.shape[0] else 0.0
    return float(max(eq, ub))


def lsqr(M: sp.spmatrix, rhs: np.ndarray, **options: float) -> tuple:
    """:func:`scipy.sparse.linalg.lsqr` on one BLAS thread. Its vector norms and dot
    products are too small to share between threads, and on a busy machine the waiting
    threads cost more than the work: on a 2:1 cluster's 300,000-column LP, 2,000 iterations
    took 74 s with the default pool beside another process, 6.6 s on one thread."""
    with threadpool_limits(1, user_api="blas"):
        return _lsqr(M, rhs, **options)


def polish(lp: LinearProgram, x: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """``x`` moved onto its active set with exact equalities, or ``x`` if that fails."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, None)
    scale = max(float(np.abs(x).max()), 1e-300)
    active = np.flatnonzero(x > tol * scale)
    if not len(active):
        return x
    slack = lp.b_ub - lp.A_ub @ x if lp.A_ub.shape[0] else np.zeros(0)
    tight = np.flatnonzero(slack <= tol * np.maximum(np.abs(lp.b_ub), 1.0))
    M = sp.vstack([lp.A_eq, lp.A_ub[tight]], format="csr")[:, active]
    rhs = np.concatenate([lp.b_eq, lp.b_ub[tight]]) - M @ x[active]
    delta = lsqr(M, rhs, atol=1e-15, btol=1e-15, conlim=1e12,
                 iter_lim=min(20 * M.shape[1] + 100, MAX_LSQR_ITERATIONS))[0]
    y = x.copy()
    y[active] += delta
    if np.any(y < 0) or residual(lp, y) >= residual(lp, x):
        return x
    return y


def polish_duals(lp: LinearProgram, x: np.ndarray, dual_eq: np.ndarray | None,
                 dual_ub: np.ndarray | None, tol: float = 1e-6) -> np.ndarray | None:
    """Inequality duals made consistent with the point ``x`` by complementary slackness.

    Columns in use must have zero reduced cost: ``A_eq[:, J]^T y_eq + A_ub[T, J]^T y_T =
    c_J`` over the used columns ``J`` and tight rows ``T`` (other rows get dual 0). A
    least-squares correction of the solver's duals solves it; the result is clipped to the
    sign of a minimisation (``<= 0``). Any such vector gives valid arc lengths, so this can
    only tighten an upper bound computed from it. Returns None when there is nothing to
    polish.
    """
    if dual_ub is None:
        return None
    x = np.clip(np.asarray(x, dtype=float), 0.0, None)
    scale = max(float(np.abs(x).max()), 1e-300)
    used = np.flatnonzero(x > tol * scale)
    slack = lp.b_ub - lp.A_ub @ x
    tight = np.flatnonzero(slack <= tol * np.maximum(np.abs(lp.b_ub), 1.0))
    y_eq = np.zeros(lp.A_eq.shape[0]) if dual_eq is None else np.asarray(dual_eq, float)
    y_t = np.asarray(dual_ub, dtype=float)[tight]
    M = sp.hstack([lp.A_eq[:, used].T, lp.A_ub[tight][:, used].T], format="csr")
    rhs = lp.c[used] - M @ np.concatenate([y_eq, y_t])
    delta = lsqr(M, rhs, atol=1e-15, btol=1e-15, conlim=1e12,
                 iter_lim=min(20 * M.shape[1] + 100, MAX_LSQR_ITERATIONS))[0]
    out = np.zeros(lp.A_ub.shape[0])
    out[tight] = np.minimum(y_t + delta[lp.A_eq.shape[0]:], 0.0)
    return out
