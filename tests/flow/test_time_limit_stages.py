"""Under a time limit each stage no clock stops is begun only when expected (by its size)
to fit in what is left, and every LP, however deep, gets at most what is left.

No test here measures time: a stage's cost per unit is set so large that it cannot fit in a
limit far above the real work (so a busy machine changes nothing), and the stage is then
counted as not begun; unpatched, the same call begins it (so each test can fail). A solver
that runs out of time is played by a backend that says so.
"""

from __future__ import annotations

import pytest

import fabricopt as fo
import fabricopt.flow.backends as backends
import fabricopt.flow.bounds_first.brackets as brackets
import fabricopt.flow.budget as budget
import fabricopt.flow.plan as plan
from fabricopt.flow.lp import LPSolution
from fabricopt.flow.time_budget import TimeBudget, begins, left_now, spending

#: A limit far above the real work of these small fabrics (well under a second each), so
#: only the patched estimates decide what is begun.
LIMIT = 100.0
#: An estimate no stage can fit in LIMIT: begun only when at most two thirds of what is left.
HUGE = 1000.0


def _counting(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper that counts its calls."""
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _bare(fab):
    """``fab`` as a bare graph: no generator's claim, no recipe."""
    return fo.from_networkx(fab.graph.copy(), endpoints=fab.endpoints, name="bare")


def test_begins_keeps_a_third_in_hand():
    # 2/3 of 1.5 s is 1.0 s: a step expected at 1.0 s is begun, one at 1.01 s is not.
    assert begins(1.0, 1.5) and not begins(1.01, 1.5)
    assert begins(HUGE, None)  # no limit: everything is begun


def test_every_lp_gets_at_most_what_is_left(monkeypatch):
    seen = []

    def fake(lp, time_limit, **options):
        seen.append(time_limit)
        return LPSolution("time_limit", "played")

    monkeypatch.setitem(backends._SOLVERS, "highs", fake)
    lp = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4))).lp
    backends.solve_lp(lp, time_limit=1e6)
    with spending(TimeBudget(5.0, solves=1)):
        backends.solve_lp(lp, time_limit=1e6)  # asked for more than is left
        backends.solve_lp(lp)  # asked for no limit
    with spending(TimeBudget(1e-9, solves=1)):  # spent: the budget's floor, still valid
        backends.solve_lp(lp)
    assert seen[0] == 1e6
    assert 0 < seen[1] <= 5.0 and 0 < seen[2] <= 5.0
    assert seen[3] == TimeBudget.FLOOR
    assert left_now() is None  # no budget outside spending()


def test_routed_bounds_not_begun_when_not_expected_to_fit(monkeypatch):
    fab = _bare(fo.fat_tree(4))
    calls = _counting(monkeypatch, brackets, "bounds_stage")
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert calls and r.exact  # fits: begun
    calls.clear()
    monkeypatch.setattr(budget, "ECMP_SECONDS_PER_ENTRY", HUGE)
    exact = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert not calls  # expected HUGE x entries seconds: not begun
    # The full LP still answers within the limit, exactly and as before.
    assert exact.exact and exact.theta == pytest.approx(r.theta, rel=1e-9)
    assert fo.check_certificate(fab, exact).ok


def test_two_phase_floor_not_begun_when_not_expected_to_fit(monkeypatch):
    # A jellyfish: no claim and no hierarchy, so the routed bounds leave it open and the
    # two-phase floor is next under a time limit.
    fab = fo.jellyfish(12, 4, 2, seed=5)
    calls = _counting(monkeypatch, plan, "hose_floor")
    fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert calls
    calls.clear()
    monkeypatch.setattr(plan, "TWO_PHASE_SECONDS_PER_ARC", HUGE)
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert not calls and r.exact
    assert "two-phase floor: skipped (expected to take" in str(
        plan.plan(_problem(fab, LIMIT)))


def test_symmetry_search_not_begun_when_not_expected_to_fit(monkeypatch):
    fab = _bare(fo.fat_tree(4))
    monkeypatch.setattr(plan, "FIND_SYMMETRY_NONZEROS", 10)  # look for the symmetry
    calls = _counting(monkeypatch, plan, "search_symmetry")
    fo.max_concurrent_flow(fab, time_limit=LIMIT, bounds_first=False)
    assert calls
    calls.clear()
    monkeypatch.setattr(plan, "SEARCH_SECONDS_PER_ARC", HUGE)
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT, bounds_first=False)
    assert not calls and r.exact and r.method == "lp"  # the full LP instead
    # Without a limit the search is always begun (no estimate decides).
    fo.max_concurrent_flow(fab, bounds_first=False)
    assert calls


def test_intact_fabric_not_begun_when_not_expected_to_fit(monkeypatch):
    fab = fo.fail_random(fo.superpod(1), 0.01, seed=1, tiers=["leaf-spine"])
    calls = _counting(monkeypatch, plan, "answer_from_intact")
    monkeypatch.setattr(plan, "FROM_INTACT_SECONDS_PER_ARC", HUGE)
    monkeypatch.setattr(budget, "ECMP_SECONDS_PER_ENTRY", HUGE)  # and the routing
    monkeypatch.setattr(plan, "TWO_PHASE_SECONDS_PER_ARC", HUGE)
    monkeypatch.setattr(plan, "SEARCH_SECONDS_PER_ARC", HUGE)
    monkeypatch.setattr(budget, "APPROX_SECONDS_PER_NONZERO", HUGE)
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert not calls
    # Nothing fits: the cheapest certified bracket, [0, the hierarchy's cut], said to be
    # stopped by the limit.
    assert r.status == "time_limit" and r.lower == 0 and r.upper > 0
    assert r.stages["upper"] == "hierarchy cut"
    assert fo.check_certificate(fab, r).ok
    monkeypatch.setattr(plan, "FROM_INTACT_SECONDS_PER_ARC", 0.0)
    fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert calls


def test_a_solver_out_of_time_leaves_a_certified_bracket_around_the_optimum(monkeypatch):
    fab = fo.jellyfish(12, 4, 2, seed=5)
    exact = fo.max_concurrent_flow(fab)  # no limit: the exact optimum, with its proof
    assert exact.exact and fo.check_certificate(fab, exact).ok
    original = backends._SOLVERS["highs"]

    def out_of_time(lp, time_limit, **options):
        # A solver given a limit runs out of it, with no point; unlimited LPs (the routed
        # stage's own, small enough to run whole) solve as always.
        if time_limit is not None:
            return LPSolution("time_limit", "time limit reached (played)")
        return original(lp, time_limit, **options)

    monkeypatch.setitem(backends._SOLVERS, "highs", out_of_time)
    r = fo.max_concurrent_flow(fab, time_limit=1e-6)
    assert r.status == "time_limit" and not r.exact
    assert r.lower * (1 - 1e-9) <= exact.theta <= r.upper * (1 + 1e-9)
    assert r.lower > 0  # the routed stage's bracket, kept
    assert fo.check_certificate(fab, r).ok


def _problem(fab, limit):
    from fabricopt.flow.problem import FlowProblem

    return FlowProblem.of(fab, time_limit=limit)


def test_no_memory_and_no_time_for_the_approximate_method_says_time_limit(monkeypatch):
    # The approximate method is the only solver left (the full LP made "too large") and its
    # flows do not fit in memory (played): without time for its first round either, the
    # bracket proven so far is said to be stopped by the limit; with time, by memory alone.
    fab = fo.jellyfish(12, 4, 2, seed=5)
    monkeypatch.setattr(plan, "MAX_AUTO_NONZEROS", 10)
    monkeypatch.setattr(plan, "shortfall", lambda need: "0 GB (played)")
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert r.status == "not_solved" and fo.check_certificate(fab, r).ok
    monkeypatch.setattr(budget, "APPROX_SECONDS_PER_NONZERO", HUGE)
    r = fo.max_concurrent_flow(fab, time_limit=LIMIT)
    assert r.status == "time_limit" and "nor would its first round" in r.message
    assert fo.check_certificate(fab, r).ok


def test_a_small_routed_stage_under_a_limit_gives_its_lps_the_contracts_floor(monkeypatch):
    # A routed stage expected within STAGE_ALWAYS_SECONDS runs whole, but its LPs are not
    # unlimited: under a spent limit each is given what is left of at least
    # HONOURED_WITHIN_SECONDS, the least a limit is honoured within (an attach-switch LP of
    # a jellyfish took 1.6 s CPU given 0.05 s when they were unlimited).
    import fabricopt.flow.bounds_first.tor_routing as tor_routing
    from fabricopt.flow.time_budget import HONOURED_WITHIN_SECONDS

    seen = []
    solve = backends.solve_lp

    def spy(lp, backend="highs", time_limit=None, **options):
        seen.append(left_now())  # what a solver inside the call may still take
        return solve(lp, backend, time_limit, **options)

    monkeypatch.setattr(tor_routing, "solve_lp", spy)
    fab = fo.jellyfish(34, 10, 6, seed=0)
    r = fo.max_concurrent_flow(fab, time_limit=0.05)
    assert r.lower <= r.upper
    assert seen, "the attach-switch LP of the small routed stage ran"
    assert all(s is not None and s <= HONOURED_WITHIN_SECONDS + 1e-9 for s in seen)


def test_a_callers_own_limit_below_the_floor_stays_its_own(monkeypatch):
    # Inside a call's budget a solve gets at most what is left, at least the budget's floor
    # (0.01 s) when the budget is spent; a caller that asks for less (1e-3 s) keeps its own.
    seen = []

    def fake(lp, time_limit, **options):
        seen.append(time_limit)
        return LPSolution("time_limit", "fake")

    monkeypatch.setitem(backends._SOLVERS, "highs", fake)
    lp = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4))).lp
    with spending(TimeBudget(0.0, solves=1)):  # spent
        backends.solve_lp(lp, "highs", 1e-3)
        backends.solve_lp(lp, "highs", 5.0)
        backends.solve_lp(lp, "highs")
    assert seen == [1e-3, TimeBudget.FLOOR, TimeBudget.FLOOR]
