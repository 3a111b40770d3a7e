"""The two-phase rate as a plan of named stages (fabricopt/flow/two_phase/plan.py): what the
plan prints, which stage each result names for each end, and that the named proof re-proves
the rate on the fabric."""

import math

import pytest

import fabricopt as fo
from fabricopt.flow.problem import Budget
from fabricopt.flow.stages import Bracket, Plan
from fabricopt.flow.two_phase import plan as plan_module
from fabricopt.flow.two_phase.plan import PASSED_OVER, plan, run
from fabricopt.flow.two_phase.problem import TwoPhaseProblem


def _jellyfish():
    # 8 switches of 3 network ports, 2 endpoints each: no closed form, and neither the cut nor
    # WCMP meets the rate at level 1, so the merged LP runs.
    return fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=2, seed=2)


def test_the_plan_prints_every_stage_and_why_one_is_skipped():
    text = str(plan(TwoPhaseProblem.of(fo.fat_tree(4))))
    names = ["hierarchy cut", "WCMP phase-1 flows", "merged LP", "spent budget",
             "symmetry search", "symmetric LP", "per-endpoint LP"]
    assert all(f"{name}:" in text for name in names)
    assert "spent budget: skipped (no time limit)" in text
    # fat_tree(4) carries its generator's claim: no search.
    assert "symmetry search: skipped (the fabric carries a symmetry claim)" in text
    off = str(plan(TwoPhaseProblem.of(fo.fat_tree(4), bounds_first=False)))
    assert "hierarchy cut: skipped (the bounds stage is off (bounds_first=False))" in off


def test_the_named_methods_are_fixed_plans():
    lp = plan(TwoPhaseProblem.of(fo.ring(6), method="lp"))
    assert isinstance(lp, Plan) and [s.name for s in lp.solvers] == ["per-endpoint LP"]
    assert "symmetry search" not in [s.name for s in lp.stages]
    sym = plan(TwoPhaseProblem.of(fo.ring(6), method="symmetric"))
    assert [s.name for s in sym.solvers] == ["symmetric LP"]
    # With a named method the bounds run only when asked.
    assert "skipped (the bounds stage is off: method='lp'" in str(lp)


def test_a_bad_problem_is_refused_before_any_work():
    with pytest.raises(fo.InvalidParameterError, match="method must be one of"):
        TwoPhaseProblem.of(fo.ring(4), method="fast")
    with pytest.raises(fo.InvalidParameterError, match="hubs must be nodes"):
        TwoPhaseProblem.of(fo.ring(4), hubs=["nowhere"])
    with pytest.raises(fo.InvalidParameterError, match="bounds_first"):
        TwoPhaseProblem.of(fo.ring(4), bounds_first="yes")


@pytest.mark.parametrize(("make", "kw", "stages", "method"), [
    # A non-blocking fat tree: WCMP through the cores meets the cut at the link rate.
    (fo.fat_tree, {}, {"lower": "WCMP phase-1 flows", "upper": "hierarchy cut"}, "bounds"),
    (_jellyfish, {"hubs": 1}, {"lower": "merged LP", "upper": "merged LP"}, "bounds"),
    (fo.ring, {"method": "lp"}, {"lower": "per-endpoint LP", "upper": "none"}, "lp"),
    (fo.ring, {"bounds_first": False}, {"lower": "symmetric LP", "upper": "none"},
     "symmetric"),
])
def test_each_end_names_the_stage_that_proved_it_and_that_proof_holds(make, kw, stages,
                                                                     method):
    fab = make(4) if make is not _jellyfish else make()
    result = fo.valiant_rate(fab, **kw)
    assert result.stages == stages and result.method == method
    assert result.rate_gbps > 0
    check = fo.check_certificate(fab, result)
    # The named lower proof re-proves the rate; a named upper proof re-proves the bound.
    assert check.lower >= result.rate_gbps * (1 - 1e-9)
    if stages["upper"] != "none":
        assert check.upper <= result.upper_gbps * (1 + 1e-9)
        assert result.rate_gbps >= result.upper_gbps * (1 - 1e-6)   # they met: "bounds"


def test_the_fat_tree_rate_is_the_link_rate():
    # k=4 fat tree at 400 Gb/s links, non-blocking: any hose traffic at 400 Gb/s per host.
    result = fo.valiant_rate(fo.fat_tree(4))
    assert result.rate_gbps == pytest.approx(400.0, rel=1e-9)
    assert result.upper_gbps == pytest.approx(400.0, rel=1e-9)


def test_not_solved_keeps_the_bounds_rate_and_names_it(monkeypatch):
    # The per-endpoint LP made "too large" (10 nonzeros) on a fabric with no claim: the
    # answer is not_solved, with the WCMP rate and the cut the bounds proved, each named.
    monkeypatch.setattr(plan_module, "MAX_RATE_LP_NONZEROS", 10)
    fab = fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=2)
    result = fo.valiant_rate(fab, hubs=1)
    assert result.status == "not_solved" and "too large" in result.message
    assert result.stages["upper"] != "none" and result.stages["lower"] != "none"
    assert 0 < result.rate_gbps < result.upper_gbps
    assert fo.check_certificate(fab, result).lower >= result.rate_gbps * (1 - 1e-9)


def test_a_level_whose_cut_is_no_higher_than_the_rate_to_beat_is_passed_over():
    fab = fo.fat_tree(4)
    # The leaves (level 1) as hubs: their cut is at most the 400 Gb/s link rate, far below
    # a rate of 1e9 to beat; with nothing to beat the same level answers.
    beaten = TwoPhaseProblem.of(fab, hubs=1)
    beaten.beat = 1e9
    steps = plan(beaten)
    assert run(steps, beaten) is None
    free = TwoPhaseProblem.of(fab, hubs=1)
    assert run(plan(free), free).rate_gbps > 0
    assert PASSED_OVER == "passed over"


def test_a_spent_budget_answers_with_the_bounds_bracket_said_stopped(monkeypatch):
    # A limit already spent when the plan runs (its start one hour ago): the bounds still
    # run (they are not interrupted; on this fabric they do not meet, see
    # test_not_solved_keeps_the_bounds_rate_and_names_it), no LP over every endpoint
    # begins, and their bracket is the answer.
    from fabricopt.flow.two_phase import lp

    monkeypatch.setattr(lp, "solve_lp", lambda *a, **k: pytest.fail("an LP was begun"))
    fab = fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=2)
    problem = TwoPhaseProblem.of(fab, hubs=1, time_limit=1.0)
    problem.budget = Budget(1.0, problem.budget.start - 3600.0)
    result = run(plan(problem), problem)
    assert result.status == "time_limit" and result.method == "bounds"
    assert 0 < result.rate_gbps < result.upper_gbps
    assert result.stages["lower"] != "none" and result.stages["upper"] != "none"


def test_the_bracket_keeps_the_better_proof_of_each_end():
    b = Bracket()
    assert b.stages == {"lower": "none", "upper": "none"}
    assert b.prove_upper(math.inf, "cut")  # nothing proven yet: kept, even unbounded
    assert b.prove_upper(5.0, "LP") and not b.prove_upper(6.0, "other")
    assert b.prove_lower(0.0, "flows") and b.prove_lower(4.0, "LP")
    assert not b.prove_lower(3.0, "flows")
    assert (b.lower, b.upper) == (4.0, 5.0) and b.stages == {"lower": "LP", "upper": "LP"}
