"""The bisection as a plan of named stages: the printed plan says what runs and why not,
and a result names the stage that proved each end, whose bound it is."""

import pytest

import fabricopt as fo
from fabricopt.analysis.bisection_plan import STAGES, BisectionProblem, plan, run


def test_the_plan_passes_over_the_failed_copy_stages_on_an_intact_fabric():
    lines = str(plan(BisectionProblem.of(fo.fat_tree(4)))).splitlines()
    assert lines[0] == "plan for method='auto':"
    assert len(lines) == 1 + len(STAGES)
    assert lines[1] == ("  1. intact fabric less lost: skipped (not a failed copy of a "
                        "generated fabric)")
    assert lines[9].startswith("  9. whole groups: runs")
    # fat_tree(4): 36 nodes, at most milp_max_nodes=60, so the MILP would run.
    assert lines[16].startswith("  16. exact MILP: runs (36 binary sides")


def test_a_failed_copy_tries_its_whole_groups_with_the_candidate_cuts():
    failed = fo.fail_random(fo.fat_tree(4), 0.1, seed=0)
    said = str(plan(BisectionProblem.of(failed)))
    assert "1. intact fabric less lost: runs" in said
    assert "9. whole groups: skipped (tried with the candidate cuts)" in said


def test_each_stage_says_its_own_cost():
    # A failed fat_tree(4) runs every stage but whole groups and the MILP's size check aside:
    # each says what it would do, not one line shared by all (the plan is read to know
    # what a bisection will cost before it runs).
    problem = BisectionProblem.of(fo.fail_random(fo.fat_tree(4), 0.1, seed=0))
    costs = [stage.cost(problem) for stage in STAGES]
    assert len(set(costs)) == len(STAGES)
    assert "minimum cut" in costs[1] and "given back" in costs[3]


@pytest.mark.parametrize("fab, lower, upper", [
    # A ring of 8 unit links: the hose rate 1/2 proves 4 x 1/2 = 2, the first cut found.
    (fo.ring(8), "two-phase rate", "candidate cuts"),
    # 32 DGX H100 on rails minus 1 % (seed 1: a NIC among the failed links): the hose
    # rate with the NIC given back, 51,200 less its 400, meets the cut (test_failed_bisection).
    (fo.fail_random(fo.cluster(fo.dgx_h100(), nodes=32, scale_out="rail_optimized",
                               oversubscription=2), 0.01, seed=1),
     "two-phase rate, failed links given back", "candidate cuts"),
    # fat_tree(8) minus 5 % (seed 0): its top tier's sides enumerated, both ends
    # (test_layered_bisection).
    (fo.fail_random(fo.fat_tree(8), 0.05, seed=0), "top tier's sides enumerated",
     "top tier's sides enumerated"),
    # fat_tree(16) minus 5 % (seed 0): too many choices of its cores' sides; its planes
    # merged with their cores counted below (166,400), the swapped cut then its cores'
    # sides descended above (test_counted_planes).
    pytest.param(fo.fail_random(fo.fat_tree(16), 0.05, seed=0),
                 "planes merged, tops counted", "top tier's sides descended",
                 marks=pytest.mark.slow),
], ids=["ring", "rail-failed-nic", "fat-tree-failed", "fat-tree-16-failed"])
def test_a_result_names_the_stage_of_each_end(fab, lower, upper):
    b = fo.bisection_bandwidth(fab)
    assert b.stages == {"lower": lower, "upper": upper}
    # The upper end is the capacity of the cut the result carries, read from the links.
    assert sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(
        b.upper_gbps)


def test_run_gives_the_bracket_and_its_proofs():
    # fat_tree(4): the hose rate proves 8 x 400 = 3,200 and the first cut crosses as much.
    problem = BisectionProblem.of(fo.fat_tree(4))
    bracket = run(plan(problem), problem)
    assert bracket.lower == pytest.approx(3_200.0) == bracket.upper
    assert bracket.upper_proof is problem.cut
    assert "two-phase hose rate" in bracket.lower_proof


def test_a_spent_time_limit_keeps_the_best_certified_bracket():
    # fat_tree(8) minus 5 % (seed 0) is exactly 20,000 Gb/s (test_layered_bisection). With
    # no time at all the stages stop once the candidate cuts are in hand: a bracket that
    # holds it, its upper end the cut it carries, read from the links.
    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=0)
    b = fo.bisection_bandwidth(fab, time_limit=1e-3)
    assert b.lower_gbps <= 20_000 <= b.upper_gbps
    assert b.stages["upper"] == "candidate cuts"
    assert sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(
        b.upper_gbps)
