"""``method="auto"`` as a printable plan of stages over one problem record, the stages a
caller hands in, and the stage that proved each end of a result (``result.stages``)."""

import pathlib

import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.flow.plan import FullLP, RoutedBounds, plan
from fabricopt.flow.problem import Budget, FlowProblem
from fabricopt.flow.stages import Bracket, Stage


def test_a_claim_skips_the_bounds_and_says_why():
    # ring(8) carries its generator's claim: exact and fast by the symmetric LP, so every
    # stage before it is skipped with its reason, and the result says which stage proved it.
    p = FlowProblem.of(fo.ring(8))
    text = str(plan(p))
    assert "routed bounds: skipped (the bounds stage is off" in text
    assert "symmetric LP: runs" in text and "full LP: skipped" in text
    r = fo.max_concurrent_flow(fo.ring(8))
    assert r.method == "symmetric" and r.stages == {"lower": "symmetric LP",
                                                    "upper": "symmetric LP"}


def test_without_a_claim_the_routed_bounds_run_and_prove_both_ends():
    # fat_tree(4) read as a bare graph (no claim): 16 hosts, non-blocking, theta = 400 / 15
    # (every host sends 15 pairs over its 400 Gb/s link); the routed bounds meet there.
    bare = fo.from_networkx(fo.fat_tree(4).graph.copy(), endpoints=fo.fat_tree(4).endpoints)
    p = FlowProblem.of(bare)
    ok, why = RoutedBounds().applies(p)
    assert ok and why == "" and "flow variables" in RoutedBounds().cost(p)
    assert "routed bounds: runs" in str(plan(p))
    r = certified(bare, fo.max_concurrent_flow(bare))
    assert r.theta == pytest.approx(400 / 15, rel=1e-6)
    assert r.stages == {"lower": "routed bounds", "upper": "routed bounds"}


def test_the_named_methods_are_fixed_plans():
    p = FlowProblem.of(fo.ring(6), method="lp")
    steps = plan(p)
    assert steps.stages == () and [s.name for s in steps.solvers] == ["full LP"]
    assert FullLP().applies(p) == (True, "")
    # "symmetric" searches first when the fabric has no claim, then refuses if none applies
    # (a permutation is not invariant under the group).
    bare = fo.from_networkx(fo.ring(6).graph.copy())
    with pytest.raises(InvalidParameterError, match="method='symmetric' is not exact"):
        fo.max_concurrent_flow(bare, fo.permutation(bare, seed=1), method="symmetric")


def test_a_spent_budget_and_the_record_read_once():
    # The record counts the full LP once: ring(8) has 8 sources x 16 arcs = 128 flow
    # variables, three nonzeros each.
    p = FlowProblem.of(fo.ring(8), budget=Budget(1.0, start=-1e9))
    assert (p.entries, p.nonzeros) == (128, 384)
    assert p.budget.spent() and p.budget.left() == 0.0


class _Handed:
    """A caller's stage: answers a failed fabric by its own full LP (certified), and says
    it ran."""

    name = "caller's stage"

    def __init__(self, applies: bool = True) -> None:
        self.ran, self._applies = 0, applies

    def applies(self, problem):
        return (self._applies, "" if self._applies else "not this time")

    def cost(self, problem):
        return "one LP"

    def run(self, problem, bracket):
        self.ran += 1
        return fo.max_concurrent_flow(problem.fab, problem.traffic, method="lp")


def test_a_stage_handed_in_answers_a_failed_fabric_first():
    # A failed copy (fail_random keeps the recipe): the handed stage is asked before any
    # routing, its exact answer is the answer, and its name proves both ends.
    failed = fo.fail_random(fo.fat_tree(4), 0.05, seed=3)
    handed = _Handed()
    assert isinstance(handed, Stage)
    r = certified(failed, fo.max_concurrent_flow(failed, stages=[handed]))
    assert handed.ran == 1 and r.exact
    assert r.stages == {"lower": "caller's stage", "upper": "caller's stage"}
    assert r.theta == pytest.approx(fo.max_concurrent_flow(failed, method="lp").theta,
                                    rel=1e-6)
    # One that does not apply is not run, and the plan says why.
    idle = _Handed(applies=False)
    fo.max_concurrent_flow(failed, stages=[idle])
    assert idle.ran == 0


def test_a_handed_stage_is_checked_before_any_work():
    with pytest.raises(InvalidParameterError, match="stages must be a sequence of stages"):
        fo.max_concurrent_flow(fo.ring(4), stages=[object()])
    with pytest.raises(InvalidParameterError, match="stages must be"):
        fo.max_concurrent_flow(fo.ring(4), stages=3)


def test_the_bracket_keeps_the_better_proof_of_each_end():
    # The approximate method (forced by a tiny MAX_AUTO_NONZEROS) on a bare leaf-spine whose
    # routed bounds do not close: each end of the answer is named after the stage that
    # proved it, and an approximate bracket never ends wider than the bounds'.
    import fabricopt.flow.plan as plan_module

    fab = fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=2,
                       link_gbps=1.0)
    r = fo.max_concurrent_flow(fab)
    assert set(r.stages) == {"lower", "upper"}
    assert all(v in ("routed bounds", "hierarchy cut", "full LP", "approximate rounds")
               for v in r.stages.values()), r.stages
    assert Bracket.good_enough(r, 0.0, False) == r.exact
    assert plan_module.MAX_AUTO_NONZEROS == 500_000  # the documented threshold


def test_the_row_names_the_proofs():
    from fabricopt.study.metrics import _proven_by

    assert _proven_by({"lower": "full LP", "upper": "full LP"}) == "full LP"
    assert _proven_by({"lower": "two-phase floor", "upper": "hierarchy cut"}) == \
        "two-phase floor / hierarchy cut"
    assert _proven_by({}) is None


DOCS = pathlib.Path(fo.__file__).parent.parent / "docs"


def _table_stages(page: str, section: str) -> list[str]:
    """The stage column, in order, of the table under ``section`` of ``docs/<page>`` (the
    row "none of ..." is what happens when no solver applies, not a stage)."""
    text = (DOCS / page).read_text().split(section, 1)[1]
    table = text[text.index("| # | stage"):].split("\n\n", 1)[0]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    return [row[1] for row in rows if row[0] != "—"]


def _names(steps) -> list[str]:
    return [s.name for s in (*steps.stages, *steps.solvers)]


def test_each_plan_is_the_table_its_page_shows():
    # One table per plan, row for row in the plan's order: a stage added to a plan and not
    # to its page's table (or the other way round) fails here.
    from fabricopt.analysis.bisection_plan import BisectionProblem
    from fabricopt.analysis.bisection_plan import plan as bisection_plan
    from fabricopt.flow.two_phase.plan import plan as two_phase_plan
    from fabricopt.flow.two_phase.problem import TwoPhaseProblem

    fab = fo.fat_tree(4)
    assert _table_stages("throughput.md", "## What auto does") == _names(
        plan(FlowProblem.of(fab)))
    assert _table_stages("throughput.md", "### What the two-phase rate does") == _names(
        two_phase_plan(TwoPhaseProblem.of(fab)))
    assert _table_stages("bisection.md", "## What bisection_bandwidth does") == _names(
        bisection_plan(BisectionProblem.of(fab)))


def test_the_plan_printed_in_the_docs_is_what_plan_prints():
    text = (DOCS / "throughput.md").read_text().split("## What auto does", 1)[1]
    shown = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    fab = fo.fail_random(fo.superpod(1), 0.01, seed=1)  # the page's example
    printed = str(plan(FlowProblem.of(fab))).splitlines()
    assert len(shown) == len(printed)
    for line, said in zip(shown, printed, strict=True):
        # The page shortens long reasons with " ...)": the rest is word for word.
        assert said.startswith(line.split(" ...")[0]), (line, said)


def _bare(k: int):
    """fat_tree(k) as a bare graph: no claim."""
    return fo.from_networkx(fo.fat_tree(k).graph.copy(), endpoints=fo.fat_tree(k).endpoints)


@pytest.mark.parametrize(("make", "asked", "runs"), [
    # A generator's claim (row 5a): the bounds stage is off, the symmetric LP answers.
    (lambda: fo.ring(8), {}, ["symmetric LP"]),
    # No claim, 1,536 nonzeros: routed bounds (2), no search (at most 50,000), full LP (5b).
    (lambda: _bare(4), {}, ["routed bounds", "full LP"]),
    # A time limit adds the two-phase floor (3).
    (lambda: _bare(4), {"time_limit": 600}, ["routed bounds", "two-phase floor", "full LP"]),
    # A permutation is not invariant: no search (4) whatever the size.
    (lambda: _bare(4), {"traffic": "permutation:1"}, ["routed bounds", "full LP"]),
    # No claim, 1,572,864 nonzeros: the search (4), and above 500,000 the approximate
    # rounds (5c) unless it finds a group.
    (lambda: _bare(16), {}, ["routed bounds", "symmetry search", "approximate rounds"]),
    # A failed copy (1): the intact fabric first.
    (lambda: fo.fail_random(fo.superpod(1), 0.01, seed=1), {},
     ["intact fabric", "routed bounds", "symmetry search", "approximate rounds"]),
    # The named methods are fixed plans.
    (lambda: fo.ring(6), {"method": "lp"}, ["full LP"]),
    (lambda: fo.ring(6), {"method": "approx"}, ["approximate rounds"]),
    (lambda: fo.ring(6), {"method": "symmetric"}, ["symmetric LP"]),
    (lambda: fo.from_networkx(fo.ring(6).graph.copy()), {"method": "symmetric"},
     ["symmetry search"]),
])
def test_what_runs_is_what_the_table_says(make, asked, runs):
    asked = dict(asked)
    steps = plan(FlowProblem.of(make(), asked.pop("traffic", None), **asked))
    ran = [s.name for s in steps.stages if s.applies(steps.problem)[0]]
    first = [s.name for s in steps.solvers if s.applies(steps.problem)[0]][:1]
    assert ran + first == runs, str(steps)


def test_a_named_method_says_it_bounds_first_when_asked():
    # With bounds_first=True a named method proves its own bounds before solving, which no
    # stage line shows: its solver's line says so.
    asked = str(plan(FlowProblem.of(fo.fat_tree(4), method="lp", bounds_first=True)))
    assert "full LP: runs (1,536 nonzeros; first its own bounds: the routed bounds" in asked
    assert "first its own bounds" not in str(plan(FlowProblem.of(fo.fat_tree(4),
                                                                 method="lp")))
    # auto runs them as a stage of their own (row 2), so its solver's line does not repeat it.
    assert "first its own bounds" not in str(plan(FlowProblem.of(_bare(4))))


class _ProvesBelow:
    """A new stage, written as the architecture says (one class, nothing registered): it
    proves only the lower end, by the exact LP's flow with its upper proof taken away."""

    name = "a new stage"

    def applies(self, problem):
        return True, ""

    def cost(self, problem):
        return "one exact LP"

    def run(self, problem, bracket):
        from dataclasses import replace

        exact = fo.max_concurrent_flow(problem.fab, problem.traffic, method="lp")
        return replace(exact, upper=float("inf"), theta=None, status="inexact", stages={},
                       certificate=replace(exact.certificate, upper_proof=None))


class _HopLengths:
    """A solver that proves only the hop-length bound above (lower end 0)."""

    name = "hop lengths"

    def applies(self, problem):
        return True, ""

    def cost(self, problem):
        return "nothing"

    def run(self, problem, bracket):
        from fabricopt.flow.plan import cheap_bracket

        bracket.answer = cheap_bracket(problem.fab, problem.traffic)


def test_a_new_stage_proves_an_end_of_the_answer_without_more_code():
    # A bare ring(8) (no claim): 16 arcs of 1 Gb/s, all-to-all at 1 Gb/s crosses 16 hops
    # per source (1+1+2+2+3+3+4), 128 in all: theta = 16 / 128 = 1/8, which hop lengths
    # prove above. The solver here proves nothing below; the new stage's flow proves 1/8,
    # and the answer takes that end with its proof and the stage's name: closed.
    from fabricopt.flow.plan import run
    from fabricopt.flow.stages import Plan

    bare = fo.from_networkx(fo.ring(8).graph.copy())
    p = FlowProblem.of(bare)
    alone = run(Plan("auto", (), (_HopLengths(),), p), p)
    assert alone.lower == 0 and alone.upper == pytest.approx(1 / 8, rel=1e-9)
    got = certified(bare, run(Plan("auto", (_ProvesBelow(),), (_HopLengths(),), p), p))
    assert got.lower == pytest.approx(1 / 8, rel=1e-9) and got.theta is not None
    assert got.stages == {"lower": "a new stage", "upper": "hop lengths"}
    assert type(got.certificate.lower_proof).__name__ == "FlowProof"
    # Closed, a stage's result is the answer itself (the solver is not asked).
    closed_stage = _ProvesBelow()
    closed_stage.run = lambda problem, bracket: fo.max_concurrent_flow(bare, method="lp")
    answer = run(Plan("auto", (closed_stage,), (_HopLengths(),), p), p)
    assert answer.exact and answer.stages == {"lower": "full LP", "upper": "full LP"}


@pytest.mark.parametrize("given, want", [({}, {"presolve": False}),
                                         ({"presolve": True}, {"presolve": True})])
def test_a_symmetric_lp_is_solved_without_presolve_unless_asked(monkeypatch, given, want):
    # Colour refinement leaves presolve little to remove (plan.SYMMETRIC_NO_PRESOLVE_NONZEROS):
    # the default backend solves a symmetric LP without it; a caller's options are kept as
    # given. Same certified answer: ring(8) of 1 Gb/s links, theta = 1/8 (the 56 pairs need
    # 128 arc-hops, distances 1,1,2,2,3,3,4 from each of 8 nodes, over 16 arcs: 16 / 128).
    import fabricopt.flow.plan as plan_module

    seen = []
    real = plan_module.solve_lp

    def spy(lp, backend, time_limit, **options):
        seen.append(options)
        return real(lp, backend, time_limit, **options)

    monkeypatch.setattr(plan_module, "solve_lp", spy)
    fab = fo.ring(8)
    r = certified(fab, fo.max_concurrent_flow(fab, **given))
    assert r.method == "symmetric" and seen == [want]
    assert r.exact and r.theta == pytest.approx(1 / 8, rel=1e-9)


class _OpenWithinGap:
    """A caller's stage that answers a failed fabric with a certified bracket open by 0.5 %
    (its own full LP's, the lower end lowered: the flow proves any value below its own)."""

    name = "open within the gap"

    def applies(self, problem):
        return True, ""

    def cost(self, problem):
        return "one LP"

    def run(self, problem, bracket):
        from dataclasses import replace

        r = fo.max_concurrent_flow(problem.fab, problem.traffic, method="lp")
        return replace(r, lower=0.995 * r.upper, theta=None, status="inexact")


def test_an_open_answer_within_the_gap_waits_for_cheap_routing(monkeypatch):
    # A failed 64-GPU rail-optimized 2:1 cluster (2 % of its links, seed 1; 41,728 flow
    # variables, routing expected in about 0.006 s): the handed stage's bracket is within
    # the 1 % gap yet open, so it waits for the routed bounds, which close it at the failed
    # fabric's own LP optimum; the certificate re-proves both ends.
    import fabricopt.flow.plan as plan_module
    from fabricopt.flow import max_concurrent_flow as engine

    failed = fo.fail_random(fo.cluster(fo.dgx_h100(), nodes=8, scale_out="rail_optimized",
                                       oversubscription=2), 0.02, seed=1)
    p = FlowProblem.of(failed)
    assert plan_module.waits_for_routing(p)
    # Not past a time limit: with none of it left, it does not wait.
    assert not plan_module.waits_for_routing(FlowProblem.of(
        failed, budget=Budget(1.0, start=-1e9)))
    assert "waits for the routed bounds" in str(plan(p, [_OpenWithinGap()]))
    lp = fo.max_concurrent_flow(failed, method="lp")
    r = certified(failed, engine(failed, stages=[_OpenWithinGap()]))
    assert r.exact and r.stages == {"lower": "routed bounds", "upper": "routed bounds"}
    assert r.theta == pytest.approx(lp.theta, rel=1e-6)
    # A fabric whose routing is expected to take longer (here: any, the threshold 0) does
    # not wait: the open bracket is the answer, within the gap, and still certified.
    monkeypatch.setattr(plan_module, "WAIT_FOR_ROUTING_SECONDS", 0.0)
    assert not plan_module.waits_for_routing(FlowProblem.of(failed))
    r = certified(failed, engine(failed, stages=[_OpenWithinGap()]), exact=False)
    assert not r.exact and r.stages["lower"] == "open within the gap"
    assert r.lower == pytest.approx(0.995 * lp.theta, rel=1e-6) and "within gap" in r.message
