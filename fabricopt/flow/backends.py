"""Solver backends: each translates a :class:`LinearProgram` to one solver and back.

==========  ===========================================================================
backend     what runs
==========  ===========================================================================
"highs"     HiGHS through :func:`scipy.optimize.linprog` (always available):
            ``solver="choose"|"simplex"|"ipm"``; "choose" takes interior point with
            crossover for LPs above ``IPM_ABOVE_NONZEROS`` nonzeros
"highspy"   HiGHS directly (``pip install highspy``): ``solver="simplex"|"ipm"|"pdlp"``,
            ``threads``, time limit
"pulp"      any solver pulp drives (CBC ships with pulp; Gurobi, CPLEX where installed)
==========  ===========================================================================

:func:`export_mps` writes the same LP as an MPS file for any other solver.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._checks import check_path, check_positive, did_you_mean
from ..errors import BackendUnavailableError, InvalidParameterError
from .lp import LinearProgram, LPSolution
from .time_budget import TimeBudget, left_now

BACKENDS = ("highs", "highspy", "pulp")

#: Above this many nonzeros the "highs" backend's automatic choice is interior point with
#: crossover: on multi-commodity flow LPs it beats dual simplex by 2-3x (fat_tree(8): 1.0 s
#: against 2.4 s) and still ends on a basic solution with exact duals.
IPM_ABOVE_NONZEROS = 20_000

#: Above this many nonzeros the automatic choice skips the crossover when ``highspy`` is
#: installed (scipy cannot): on a 2:1 three-tier cluster's symmetric LP (953,000 nonzeros,
#: 209 root flows) interior point alone took 80 s where crossover had not finished after
#: 15 minutes. The certificate then proves the interior point's bracket (the duals are still
#: lengths; the point is polished onto the constraints).
NO_CROSSOVER_ABOVE_NONZEROS = 500_000

#: HiGHS's default feasibility tolerances (1e-7) can leave simplex answers, and above all
#: their duals, a few parts in 1e5 from optimal; the certificates want 1e-6, so ask for more.
TIGHT_TOLERANCES = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def check_solve_args(func: str, backend: Any, time_limit: Any,
                     options: dict[str, Any] | None = None) -> float | None:
    """Check ``backend``, ``time_limit`` and the names of the backend ``options`` for
    ``func`` before any work (a bounds stage that answers alone would otherwise never
    reach the solver that refuses a misspelt one); the time limit back.

    >>> check_solve_args("valiant_rate", "highs", 5)
    5.0
    >>> check_solve_args("valiant_rate", "highs", 5, {"time_limt": 1})
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: valiant_rate(): unknown option 'time_limt' ...
    """
    if not isinstance(backend, str) or backend not in _SOLVERS:
        raise InvalidParameterError(
            f"{func}(): backend must be one of {', '.join(map(repr, BACKENDS))}, "
            f"got {backend!r}")
    unknown = sorted(set(options or ()) - set(SCIPY_HIGHS_OPTIONS))
    if backend == "highs" and unknown:
        allowed = ("time_limit", *SCIPY_HIGHS_OPTIONS)
        raise InvalidParameterError(
            f"{func}(): unknown option {unknown[0]!r} for backend 'highs'"
            f"{did_you_mean(unknown[0], allowed)}; allowed: {', '.join(allowed)} (or "
            "backend='highspy' for any HiGHS option)")
    return None if time_limit is None else check_positive(func, "time_limit", time_limit)


def solve_lp(lp: LinearProgram, backend: str = "highs", time_limit: float | None = None,
             **options: Any) -> LPSolution:
    """Solve ``lp`` with ``backend``; never raises for solver failures, returns a status.

    Parameters
    ----------
    lp : LinearProgram
    backend : {"highs", "highspy", "pulp"}
    time_limit : float, optional
        Seconds the solver may use; inside a call with a time limit
        (:func:`~fabricopt.flow.time_budget.spending`) never more than is left of it.
    **options
        Backend options: ``solver`` and ``threads`` for highspy, ``solver`` (a pulp solver
        object or name) for pulp, anything scipy's HiGHS accepts for highs.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> lp = LinearProgram(np.array([-1.0]), sp.csr_matrix([[1.0]]), np.array([2.0]),
    ...                    sp.csr_matrix((0, 1)), np.zeros(0), np.zeros(1), np.full(1, np.inf))
    >>> sol = solve_lp(lp)
    >>> sol.status, float(sol.x[0])
    ('optimal', 2.0)
    """
    time_limit = check_solve_args("solve_lp", backend, time_limit)
    left = left_now()
    if left is not None:
        # Under a call's time limit every LP, however deep, gets at most what is left of it
        # (at least the budget's floor: a spent limit still asks the solver for a valid one).
        # A caller's own limit below the floor stays its own (a hose floor's 1e-3 s).
        time_limit = (max(left, TimeBudget.FLOOR) if time_limit is None else
                      max(min(time_limit, left), min(time_limit, TimeBudget.FLOOR)))
    start = time.perf_counter()
    sol = _SOLVERS[backend](lp, time_limit, **options)
    sol.seconds = time.perf_counter() - start
    return sol


# -- scipy ----------------------------------------------------------------------------------
_SCIPY_STATUS = {0: "optimal", 1: "iteration_limit", 2: "infeasible", 3: "unbounded",
                 4: "numerical_error"}


#: Options scipy's HiGHS methods take (anything else would be ignored with a warning).
SCIPY_HIGHS_OPTIONS = ("solver", "maxiter", "disp", "presolve", "dual_feasibility_tolerance",
                       "primal_feasibility_tolerance", "ipm_optimality_tolerance",
                       "simplex_dual_edge_weight_strategy")


def _solve_scipy(lp: LinearProgram, time_limit: float | None, **options: Any) -> LPSolution:
    from scipy.optimize import linprog

    unknown = sorted(set(options) - set(SCIPY_HIGHS_OPTIONS))
    if unknown:
        raise InvalidParameterError(
            f"highs backend: unknown option(s) {', '.join(map(repr, unknown))}; allowed: "
            f"{', '.join(SCIPY_HIGHS_OPTIONS)} (or backend='highspy' for any HiGHS option)")
    opts = dict(options)
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    solver = opts.pop("solver", "choose")
    methods = {"choose": "highs", "simplex": "highs-ds", "ipm": "highs-ipm"}
    if solver not in methods:
        raise InvalidParameterError(f"highs backend: solver must be one of "
                                    f"{', '.join(map(repr, methods))}, got {solver!r}")
    method = methods[solver]
    if (solver == "choose" and not set(opts) - {"time_limit"}
            and lp.nnz > NO_CROSSOVER_ABOVE_NONZEROS and highspy_available()):
        sol = _solve_highspy(lp, time_limit, solver="ipm", run_crossover="off")
        sol.message = f"interior point without crossover: {sol.message}"
        return sol
    if solver == "choose" and lp.nnz > IPM_ABOVE_NONZEROS:
        method = "highs-ipm"  # with crossover: exact basic point and duals, faster here
    if (method == "highs-ipm" and time_limit is not None and highspy_available()
            and set(opts) <= {"time_limit", "presolve", *TIGHT_TOLERANCES}):
        # Scipy's HiGHS gives interior point the time left after presolve, and a negative
        # time there means no limit: a limit shorter than presolve was ignored (a two-phase
        # LP given 0.01 s ran 5 s). The same solve with a wall-clock interrupt stops at it.
        extra = {k: v for k, v in opts.items() if k in TIGHT_TOLERANCES}
        if opts.get("presolve") is False:
            extra["presolve"] = "off"
        return _solve_highspy(lp, time_limit, solver="ipm", **extra)
    for key, value in TIGHT_TOLERANCES.items():
        opts.setdefault(key, value)
    res = linprog(lp.c, A_ub=lp.A_ub if lp.A_ub.shape[0] else None,
                  b_ub=lp.b_ub if lp.A_ub.shape[0] else None,
                  A_eq=lp.A_eq if lp.A_eq.shape[0] else None,
                  b_eq=lp.b_eq if lp.A_eq.shape[0] else None,
                  bounds=np.column_stack([lp.lb, lp.ub]), method=method, options=opts)
    status = _SCIPY_STATUS.get(res.status, "error")
    if status == "iteration_limit" and "time" in str(res.message).lower():
        status = "time_limit"
    ok = res.x is not None
    dual_ub = getattr(getattr(res, "ineqlin", None), "marginals", None)
    dual_eq = getattr(getattr(res, "eqlin", None), "marginals", None)
    return LPSolution(status, str(res.message), np.asarray(res.x) if ok else None,
                      float(res.fun) if ok and res.fun is not None else None,
                      None if dual_ub is None else np.asarray(dual_ub, dtype=float),
                      None if dual_eq is None else np.asarray(dual_eq, dtype=float))


# -- highspy --------------------------------------------------------------------------------
def highspy_available() -> bool:
    """Whether the ``highspy`` package is installed (the ``highspy`` backend, column
    generation's master LP and interior point without crossover need it).

    >>> isinstance(highspy_available(), bool)
    True
    """
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def quiet_highs() -> Any:
    """A fresh ``highspy.Highs`` that prints nothing (its banner comes from C++ before any
    option can switch it off), or None when highspy is not installed: for a caller that
    keeps one model and re-solves it as bounds change."""
    if not highspy_available():
        return None
    import highspy

    with _stdout_silenced():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


@contextlib.contextmanager
def _stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null for a moment (for output from C++ code)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def highs_model(lp: LinearProgram) -> tuple[Any, Any]:
    """``lp`` as a ``highspy.HighsLp`` (rows: ``A_ub`` then ``A_eq``; needs highspy), with
    its stacked constraint matrix (CSC).

    >>> import numpy as np, scipy.sparse as sp
    >>> lp = LinearProgram(np.array([-1.0]), sp.csr_matrix([[1.0]]), np.array([2.0]),
    ...                    sp.csr_matrix((0, 1)), np.zeros(0), np.zeros(1), np.full(1, np.inf))
    >>> highs_model(lp)[0].num_row_ if highspy_available() else 1
    1
    """
    import highspy
    import scipy.sparse as sp

    A = sp.vstack([lp.A_ub, lp.A_eq]).tocsc()
    inf = highspy.kHighsInf
    model = highspy.HighsLp()
    model.num_col_ = lp.n_cols
    model.num_row_ = A.shape[0]
    model.col_cost_ = lp.c
    model.col_lower_ = lp.lb
    model.col_upper_ = np.where(np.isinf(lp.ub), inf, lp.ub)
    model.row_lower_ = np.concatenate([np.full(lp.A_ub.shape[0], -inf), lp.b_eq])
    model.row_upper_ = np.concatenate([lp.b_ub, lp.b_eq])
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = A.indptr
    model.a_matrix_.index_ = A.indices
    model.a_matrix_.value_ = A.data
    return model, A


def _solve_highspy(lp: LinearProgram, time_limit: float | None, solver: str = "simplex",
                   threads: int | None = None, **options: Any) -> LPSolution:
    try:
        import highspy
    except ImportError:
        raise BackendUnavailableError(
            "backend 'highspy' needs the highspy package: pip install 'fabricopt[highspy]'"
        ) from None

    if solver not in ("simplex", "ipm", "pdlp", "choose"):
        raise InvalidParameterError(f"highspy backend: solver must be 'simplex', 'ipm', "
                                    f"'pdlp' or 'choose', got {solver!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise InvalidParameterError(f"highspy backend: threads must be a whole number >= 1, "
                                    f"got {threads!r}")
    model, _ = highs_model(lp)
    n_ub = lp.A_ub.shape[0]
    with _stdout_silenced():
        h = highspy.Highs()  # prints a banner from C++ before options can switch it off
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", solver)
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    interrupted = _deadline_callbacks(h, time_limit) if time_limit is not None else None
    settings = dict(options)
    if solver != "pdlp":  # PDLP stops on its own criteria; polishing finishes its point
        for key, value in TIGHT_TOLERANCES.items():
            settings.setdefault(key, value)
    for key, value in settings.items():
        if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
            raise InvalidParameterError(
                f"highspy backend: HiGHS refuses option {key}={value!r} (unknown name, wrong "
                "type or out of range; see the HiGHS option list)")
    h.passModel(model)
    h.run()
    ms = h.getModelStatus()
    text = h.modelStatusToString(ms)
    MS = highspy.HighsModelStatus
    table = {MS.kOptimal: "optimal", MS.kTimeLimit: "time_limit",
             MS.kIterationLimit: "iteration_limit", MS.kInfeasible: "infeasible",
             MS.kUnbounded: "unbounded", MS.kUnboundedOrInfeasible: "infeasible"}
    status = table.get(ms, "error")
    if ms == MS.kInterrupt and interrupted is not None and interrupted[0]:
        status, text = "time_limit", f"time limit of {time_limit:g} s reached (interrupted)"
    sol = h.getSolution()
    has_x = bool(sol.value_valid)
    x = np.asarray(sol.col_value, dtype=float) if has_x else None
    duals = np.asarray(sol.row_dual, dtype=float) if sol.dual_valid else None
    return LPSolution(status, text, x,
                      float(h.getInfo().objective_function_value) if has_x else None,
                      None if duals is None else duals[:n_ub],
                      None if duals is None else duals[n_ub:],
                      info={"solver": solver})


def _deadline_callbacks(h: Any, time_limit: float) -> list[bool]:
    """Set HiGHS's time limit and back it with a wall-clock interrupt.

    HiGHS gives its interior-point solver (IPX) the time left after presolve, and IPX reads a
    negative time as "no limit"; so a limit shorter than presolve would be ignored there.
    The simplex and IPM interrupt callbacks stop the solve at the deadline whatever happened
    before. Returns a flag list that says whether the deadline fired.
    """
    h.setOptionValue("time_limit", float(time_limit))
    deadline = time.monotonic() + float(time_limit)
    fired = [False]

    def stop_at_deadline(event: Any) -> None:
        if time.monotonic() > deadline:
            fired[0] = True
            event.interrupt()

    h.cbSimplexInterrupt += stop_at_deadline
    h.cbIpmInterrupt += stop_at_deadline
    return fired


# -- pulp -----------------------------------------------------------------------------------
def to_pulp(lp: LinearProgram, name: str = "fabricopt") -> tuple[Any, list[Any], list[Any]]:
    """The same LP as a :class:`pulp.LpProblem`; returns it with its variables and rows."""
    import pulp

    prob = pulp.LpProblem(name, pulp.LpMinimize)
    names = lp.col_names or tuple(f"x{j}" for j in range(lp.n_cols))
    xs = [pulp.LpVariable(_safe(n), lowBound=float(lo),
                          upBound=None if np.isinf(hi) else float(hi))
          for n, lo, hi in zip(names, lp.lb, lp.ub, strict=True)]
    prob += pulp.LpAffineExpression([(xs[j], float(v)) for j, v in enumerate(lp.c) if v])
    rows = []
    for A, b, sense, prefix in ((lp.A_ub, lp.b_ub, pulp.LpConstraintLE, "ub"),
                                (lp.A_eq, lp.b_eq, pulp.LpConstraintEQ, "eq")):
        A = A.tocsr()
        for i in range(A.shape[0]):
            lo, hi = A.indptr[i], A.indptr[i + 1]
            expr = pulp.LpAffineExpression(
                [(xs[j], float(v)) for j, v in zip(A.indices[lo:hi], A.data[lo:hi],
                                                   strict=True)])
            con = pulp.LpConstraint(expr, sense, f"{prefix}{i}", float(b[i]))
            prob += con
            rows.append(con)
    return prob, xs, rows


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def _solve_pulp(lp: LinearProgram, time_limit: float | None, solver: Any = None,
                **options: Any) -> LPSolution:
    import pulp

    if solver is None or isinstance(solver, str):
        name = solver or "PULP_CBC_CMD"
        if name not in pulp.listSolvers():
            raise InvalidParameterError(f"pulp backend: solver must be one of "
                                        f"{', '.join(pulp.listSolvers())}, got {name!r}")
        kwargs: dict[str, Any] = {"msg": False, **options}
        if time_limit is not None:
            kwargs["timeLimit"] = float(time_limit)
        try:
            solver = pulp.getSolver(name, **kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"pulp backend: solver {name!r} does not take these "
                                        f"options ({exc})") from None
        except pulp.PulpSolverError as exc:
            raise BackendUnavailableError(f"pulp backend: solver {name!r} is not available "
                                          f"({exc})") from None
    elif not hasattr(solver, "actualSolve"):
        raise InvalidParameterError(f"pulp backend: solver must be a pulp solver name or "
                                    f"object, got {solver!r}")
    if not solver.available():
        raise BackendUnavailableError(
            f"pulp backend: solver {getattr(solver, 'name', solver)!r} is not installed on "
            f"this machine; installed: {', '.join(pulp.listSolvers(onlyAvailable=True))}")
    prob, xs, rows = to_pulp(lp)
    prob.solve(solver)
    text = pulp.LpStatus[prob.status]
    table = {"Optimal": "optimal", "Infeasible": "infeasible", "Unbounded": "unbounded",
             "Not Solved": "not_solved", "Undefined": "error"}
    status = table.get(text, "error")
    if status == "optimal" and getattr(prob, "sol_status", 1) not in (1,):
        status = "time_limit"  # CBC stopped with a feasible but unproven point
    x = np.array([v.varValue if v.varValue is not None else np.nan for v in xs])
    has_x = not np.isnan(x).any()
    # pulp reports pi = d(objective)/d(rhs) for the problem as posed (a minimisation here).
    pis = np.array([c.pi if c.pi is not None else np.nan for c in rows], dtype=float)
    n_ub = lp.A_ub.shape[0]
    duals_ok = not np.isnan(pis).any()
    return LPSolution(status, text, x if has_x else None,
                      float(lp.c @ x) if has_x else None,
                      pis[:n_ub] if duals_ok else None, pis[n_ub:] if duals_ok else None,
                      info={"solver": getattr(solver, "name", str(solver))})


_SOLVERS: dict[str, Callable[..., LPSolution]] = {
    "highs": _solve_scipy, "highspy": _solve_highspy, "pulp": _solve_pulp}


def export_mps(lp: LinearProgram, path: str | os.PathLike[str]) -> None:
    """Write ``lp`` as a (free-format) MPS file that any LP solver reads.

    >>> import os, tempfile, numpy as np, scipy.sparse as sp
    >>> lp = LinearProgram(np.array([-1.0]), sp.csr_matrix([[1.0]]), np.array([2.0]),
    ...                    sp.csr_matrix((0, 1)), np.zeros(0), np.zeros(1), np.full(1, np.inf))
    >>> path = os.path.join(tempfile.mkdtemp(), "lp.mps")
    >>> export_mps(lp, path); os.path.getsize(path) > 0
    True
    """
    if not isinstance(lp, LinearProgram):
        raise InvalidParameterError(f"export_mps(): lp must be a LinearProgram (a model's "
                                    f".lp), got {type(lp).__name__}")
    where = os.fspath(check_path("export_mps", "path", path))
    prob, _, _ = to_pulp(lp)
    try:
        prob.writeMPS(where)
    except OSError as exc:
        raise InvalidParameterError(f"export_mps(): path {where!r} cannot be written: "
                                    f"{exc.strerror or exc}") from None
