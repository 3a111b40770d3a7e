"""``method="auto"`` as a printable plan of stages over one problem record, the stages a
caller hands in, and the stage that proved each end of a result (``result.stages``)."""

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
