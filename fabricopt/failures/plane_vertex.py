"""An interior point of an LP carried to a vertex by crossover, without solving it again.

The planes' LP (:mod:`fabricopt.failures.plane_lp`) is solved by an interior point stopped at
a loose tolerance. Where that point proves a rate just short of a cut the LP's optimum may
meet, HiGHS's crossover, begun from the point itself, finds the optimal vertex for a fraction
of what a second interior point at a tight tolerance takes (0.24 s against 1.9 s CPU, the
least of three runs each, on a failed 1,024-GPU SuperPOD's LP of 145,052 nonzeros:
``fail_random(superpod(4), 0.05, seed=3)``). The vertex is not trusted: the caller proves
the flow it describes, as it proves the interior point's.
"""

from __future__ import annotations

import numpy as np

from ..flow.backends import highs_model, quiet_highs
from ..flow.lp import LinearProgram, LPSolution


def crossed_over(lp: LinearProgram, point: LPSolution, time_limit: float | None = None
                 ) -> np.ndarray | None:
    """The columns of the vertex HiGHS's crossover reaches from ``point`` (an interior
    point of ``lp``, its row duals with it), or None: highspy missing, no point or duals,
    ``time_limit`` (seconds) spent, or no finite vertex.

    >>> import numpy as np, scipy.sparse as sp
    >>> from fabricopt.flow.backends import highspy_available, solve_lp
    >>> lp = LinearProgram(np.array([-1.0, -2.0]), sp.csr_matrix([[1.0, 1.0], [0.0, 1.0]]),
    ...                    np.array([2.0, 1.5]), sp.csr_matrix((0, 2)), np.zeros(0),
    ...                    np.zeros(2), np.full(2, np.inf))
    >>> if highspy_available():   # stopped early: short of the optimum, 3.5 at (0.5, 1.5)
    ...     inside = solve_lp(lp, "highspy", solver="ipm", run_crossover="off",
    ...                       ipm_optimality_tolerance=1e-2)
    ...     vertex = [float(v) for v in crossed_over(lp, inside)]
    ... else:
    ...     vertex = [0.5, 1.5]
    >>> vertex
    [0.5, 1.5]
    """
    h = quiet_highs()
    if (h is None or point.x is None or point.dual_ub is None or point.dual_eq is None
            or (time_limit is not None and time_limit <= 0)):
        return None
    import highspy

    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    model, a = highs_model(lp)
    h.passModel(model)
    start = highspy.HighsSolution()
    # The primal point and its duals, every array sized to the model: HiGHS 1.16's
    # crossover from a point without duals stopped the process (a segmentation fault).
    x = np.asarray(point.x, dtype=float)
    row_dual = np.concatenate([point.dual_ub, point.dual_eq])
    start.col_value, start.row_value = x.tolist(), (a @ x).tolist()
    start.col_dual, start.row_dual = (lp.c - a.T @ row_dual).tolist(), row_dual.tolist()
    start.value_valid, start.dual_valid = True, True
    if h.crossover(start) == highspy.HighsStatus.kError:
        return None
    sol = h.getSolution()
    out = np.asarray(sol.col_value, dtype=float) if sol.value_valid else None
    return out if out is not None and len(out) == lp.n_cols and np.isfinite(out).all() else None


__all__ = ["crossed_over"]
