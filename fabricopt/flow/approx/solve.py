"""``solve_approx``: the approximate method's front, which picks Frank-Wolfe or column
generation (:func:`~fabricopt.flow.approx.core.choose_strategy`) and hands a stalled column
generation on to Frank-Wolfe, keeping the better proof of each side."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..._checks import check_choice, check_int, check_positive, fail
from ...errors import BackendUnavailableError
from ..backends import highspy_available
from ..formulation import FlowModel
from ..lp import LPSolution
from .colgen import MASTER_ROUND_ITERATIONS, ColumnGeneration
from .core import STRATEGIES, check_gap, choose_strategy, default_max_rounds
from .frank_wolfe import FrankWolfe


def solve_approx(model: FlowModel, *, gap: float = 0.01, time_limit: float | None = None,
                 progress: Callable[[dict[str, float]], None] | None = None,
                 strategy: str = "auto", seed_lengths: np.ndarray | None = None,
                 max_rounds: int | None = None, known_lower: float = 0.0) -> LPSolution:
    """Solve ``model``'s LP to a certified relative ``gap`` (see the module docstring).

    Parameters
    ----------
    model : FlowModel
        From :func:`fabricopt.flow.build_flow_lp`.
    gap : float
        Stop once ``(upper - lower) / upper <= gap`` (0 < gap < 1).
    time_limit : float, optional
        Seconds; checked between iterations (one iteration is one shortest-path search from
        every source). None: no wall clock.
    progress : callable, optional
        Called after every iteration with a dict of ``iteration``, ``lower``, ``upper`` and
        ``seconds``.
    strategy : {"auto", "frank_wolfe", "column_generation"}
        ``"frank_wolfe"``: this module's method. ``"column_generation"``: the LP over
        routing trees and paths of :mod:`fabricopt.flow.approx.colgen` (needs ``highspy``).
        ``"auto"``: :func:`choose_strategy`.
    seed_lengths : ndarray, optional
        Guesses at the optimal lengths, one per capacity row of the LP (core arcs, then
        endpoint rows), or several such rows, such as the lengths of an intact fabric's solve
        restricted to a failed one's arcs (:mod:`fabricopt.flow.warm`): the distance bound is
        evaluated at each first, and column generation prices its first columns there. Any
        nonnegative lengths are sound; good ones save rounds.
    max_rounds : int, optional
        A work limit: stop after this many rounds (status ``"iteration_limit"``), so the
        answer does not depend on how busy the machine is. Default, when ``time_limit`` is
        None too: :func:`default_max_rounds` (10,000 on small models, fewer on large
        ones). With ``strategy="auto"``, a master solve of
        column generation that needs more than
        :data:`~fabricopt.flow.approx.colgen.MASTER_ROUND_ITERATIONS` simplex iterations has
        stalled, and Frank-Wolfe goes on with the rounds left.
    known_lower : float, optional
        A lower bound on theta proven elsewhere (the bounds stage's, in the model's units):
        the rounds stop once it and the upper bound are within ``gap`` (the returned point
        still proves only its own lower bound; the caller keeps the better proof).

    Returns
    -------
    LPSolution
        ``x`` in the LP's column layout (a flow that conserves exactly, within capacities)
        and ``dual_ub`` the lengths of the best distance bound (as minus capacity-row duals).
        Status ``"optimal"`` when the gap closed, ``"time_limit"`` when time ran out first,
        ``"stalled"`` when the bracket stopped closing short of ``gap`` (see
        :data:`~fabricopt.flow.approx.core.STALL_RATIO`); the last two carry the best
        bracket proven.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=1)
    >>> sol = solve_approx(fo.build_flow_lp(fab, fo.all_to_all(fab)), gap=0.05)
    >>> sol.status, sol.info["upper"] - sol.info["lower"] <= 0.05 * sol.info["upper"]
    ('optimal', True)
    """
    gap = check_gap("solve_approx", gap)
    if time_limit is not None:
        check_positive("solve_approx", "time_limit", time_limit)
    check_choice("solve_approx", "strategy", strategy, STRATEGIES)
    if max_rounds is not None:
        max_rounds = check_int("solve_approx", "max_rounds", max_rounds, minimum=1)
    elif time_limit is None:  # the net is work, not seconds
        max_rounds = default_max_rounds(model.lp_size.get("nonzeros", 0))
    if seed_lengths is not None:
        seed_lengths = np.asarray(seed_lengths, dtype=float)
        rows = len(model.core_arcs) + len(model.ep_rows_arc)
        if seed_lengths.ndim == 1:
            seed_lengths = seed_lengths[None, :]
        if (seed_lengths.ndim != 2 or seed_lengths.shape[1] != rows
                or not np.all(np.isfinite(seed_lengths)) or np.any(seed_lengths < 0)):
            raise fail("solve_approx", "seed_lengths",
                       f"None or rows of {rows} finite lengths >= 0 (core arcs, then "
                       "endpoint rows)", f"an array of shape {seed_lengths.shape}")
    if model.n_commodities == 0:
        return _endpoint_rows_only(model)
    auto = strategy == "auto"
    if auto:
        strategy = choose_strategy(model)
    if strategy == "column_generation":
        if not highspy_available():
            raise BackendUnavailableError(
                "solve_approx(): strategy='column_generation' needs the highspy package: "
                "pip install 'fabricopt[highspy]'")
        start = time.perf_counter()
        run = ColumnGeneration(
            model, gap, time_limit, progress, seed_lengths=seed_lengths,
            master_iterations=MASTER_ROUND_ITERATIONS if auto else None)
        run.max_rounds, run.known_lower = max_rounds, known_lower
        sol = run.run()
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if not run.stalled or (left is not None and left <= 0):
            return sol
        # The master LP stalled: Frank-Wolfe goes on with the time left, and the better
        # proof of each side is kept.
        second = FrankWolfe(model, gap, left, progress, seed_lengths)
        second.known_lower = known_lower
        if max_rounds is not None:
            second.max_rounds = max(1, max_rounds - run.iterations)
        return _better_of(sol, second.run(), gap)
    fw = FrankWolfe(model, gap, time_limit, progress, seed_lengths)
    fw.max_rounds, fw.known_lower = max_rounds, known_lower
    return fw.run()


def _endpoint_rows_only(model: FlowModel) -> LPSolution:
    """The answer when no pair crosses the core (every pair under one switch, such as two
    GPUs of one leaf): only the endpoint rows bind, ``theta = min capacity / demand``, and
    the length 1 on that row alone proves it from above (its distance bound is the same
    ratio), so the bracket is closed without a round."""
    start = time.perf_counter()
    # Every pair has both ends collapsed onto one switch (distinct endpoints that are not
    # collapsed enter the core apart), so each endpoint with demand has its row.
    cap, gbps = model.ga.capacity[model.ep_rows_arc], model.ep_rows_gbps
    m = len(model.core_arcs)
    lengths = np.zeros(m + len(cap))
    ratio = cap / gbps
    row = int(np.argmin(ratio))
    theta = float(ratio[row])
    lengths[m + row] = 1.0
    return LPSolution("optimal", "no pair leaves its switch: the endpoint links alone bind",
                      np.array([theta]), -theta, -lengths, None, time.perf_counter() - start,
                      info={"lower": theta, "upper": theta, "iterations": 0})


def _better_of(first: LPSolution, second: LPSolution, gap: float) -> LPSolution:
    """One answer from two runs on the same model: the flow of the better lower bound and
    the lengths of the better upper bound (each is a proof on its own)."""
    lo = max((first, second), key=lambda s: s.info["lower"])
    up = min((first, second), key=lambda s: s.info["upper"])
    lower, upper = lo.info["lower"], up.info["upper"]
    status = ("optimal" if upper - lower <= gap * upper else
              second.status if second.status in ("stalled", "iteration_limit")
              else "time_limit")
    message = (f"column generation stalled in its master LP, then {second.message}; "
               f"best of both: certified gap {(upper - lower) / upper:.3%}")
    return LPSolution(status, message, lo.x, lo.objective, up.dual_ub, None,
                      first.seconds + second.seconds,
                      info={"lower": lower, "upper": upper,
                            "iterations": first.info["iterations"] + second.info["iterations"]})

