"""Bisection and the worst-case search under a time limit: a stage expected not to fit is not
begun, the candidate cuts stop at the limit with one cut at least, and the bracket returned is
certified (it holds the exact value, its cut's capacity is its upper end), with a status that
says the limit cut it short. No timings: the clock is stood in for, or the estimates are."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis import bisection_plan, worst_case
from fabricopt.analysis.bisection_plan import STAGES
from fabricopt.flow import budget as flow_budget
from fabricopt.flow.time_budget import TimeBudget, spending


@pytest.fixture(scope="module")
def failed():
    """fat_tree(8) minus 5 % of its links (seed 0) and its exact bisection, no limit."""
    fab = fo.fail_random(fo.fat_tree(8), 0.05, seed=0)
    exact = fo.bisection_bandwidth(fab, time_limit=None)
    # 20,000 Gb/s (docs/bisection.md: the failed fat_tree(8) every side of whose top tier is
    # tried); both ends met, so this is the value any bracket must hold.
    assert exact.exact and exact.lower_gbps == pytest.approx(20_000)
    return fab, exact.upper_gbps


def _cut_certified(fab, b):
    """The cut's crossing capacity recomputed from the graph equals the upper end, and its
    sides split the endpoints in halves."""
    side = b.cut.side_a
    crossing = sum(c for u, v, c in fab.graph.edges(data="capacity")
                   if u in side and v not in side)
    assert crossing == pytest.approx(b.upper_gbps)
    assert sorted(map(len, (b.cut.endpoints_a, b.cut.endpoints_b))) == [
        len(fab.endpoints) // 2, len(fab.endpoints) - len(fab.endpoints) // 2]


def _a_day_each(monkeypatch):
    """Every stage expected to take a day (its estimate stood in for)."""
    for stage in STAGES:
        monkeypatch.setattr(stage, "seconds", lambda problem: 86_400.0)


class _Ticking:
    """A clock that moves ``step`` seconds at each reading: a limit is spent in a few."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_a_stage_expected_not_to_fit_is_not_begun(monkeypatch, failed):
    fab, exact = failed
    # Every stage expected to take a day: under a 30 s limit none is begun but the candidate
    # cuts (the floor: a cut is the answer's upper end).
    _a_day_each(monkeypatch)
    begun = []
    for stage in STAGES:
        if stage.name != "candidate cuts":
            monkeypatch.setattr(stage, "run", lambda *a, _n=stage.name: begun.append(_n))
    b = fo.bisection_bandwidth(fab, time_limit=30)
    assert begun == []
    assert "intact fabric less lost" in b.not_begun
    assert "top tier's sides enumerated" in b.not_begun
    assert b.status == "time_limit" and b.stopped_short == "time limit"
    assert b.lower_gbps == 0.0 and b.lower_from == "nothing proven"
    assert b.lower_gbps <= exact <= b.upper_gbps
    _cut_certified(fab, b)
    assert "not begun: intact fabric less lost" in str(b)


def test_without_a_limit_every_stage_is_begun_whatever_its_estimate(monkeypatch, failed):
    fab, exact = failed
    _a_day_each(monkeypatch)
    b = fo.bisection_bandwidth(fab, time_limit=None)
    assert b.not_begun == () and b.status == "optimal"
    assert b.upper_gbps == pytest.approx(exact)


def test_each_estimate_grows_with_the_arcs(failed):
    fab, _ = failed
    small = bisection_plan.BisectionProblem.of(fab)
    big = bisection_plan.BisectionProblem.of(fo.fat_tree(16))
    per_arc = bisection_plan.SECONDS_PER_ARC
    for stage in STAGES:
        if stage.name == "intact fabric less lost":
            # Its own per arc, and twice the candidate cuts' (fixed and per arc) to follow.
            for p in (small, big):
                arcs = p.ga.n_arcs
                assert stage.seconds(p) == pytest.approx(per_arc[stage.name] * arcs + 2 * (
                    bisection_plan.CANDIDATE_SECONDS
                    + bisection_plan.CANDIDATE_SECONDS_PER_ARC * arcs))
        elif stage.name in per_arc:
            # seconds per arc x arcs: fat_tree(16) has 6,144 arcs, the failed fat_tree(8) 730.
            assert stage.seconds(big) == pytest.approx(
                stage.seconds(small) * big.ga.n_arcs / small.ga.n_arcs)


def test_the_candidate_cuts_stop_at_the_limit_with_one_cut(monkeypatch, failed):
    fab, exact = failed
    full = fo.bisection_bandwidth(fab, time_limit=None)
    assert len(full.candidates) > 1  # several splits tried when time allows
    # Each clock reading a second on: a 0.5 s limit is spent before the second split.
    monkeypatch.setattr(flow_budget, "clock", _Ticking(1.0))
    b = fo.bisection_bandwidth(fab, time_limit=0.5)
    assert len(b.candidates) == 1
    assert b.status == "time_limit"
    assert b.lower_gbps <= exact <= b.upper_gbps
    _cut_certified(fab, b)


def test_the_bracket_under_a_tiny_limit_holds_the_exact_value(failed):
    # No stand-in: whatever the machine, a certified bracket with the exact value in it.
    fab, exact = failed
    b = fo.bisection_bandwidth(fab, time_limit=1e-3)
    assert b.lower_gbps <= exact * (1 + 1e-9) and exact <= b.upper_gbps * (1 + 1e-9)
    _cut_certified(fab, b)
    assert b.status in ("optimal", "time_limit")
    if b.status == "time_limit":
        assert not b.exact and b.stopped_short == "time limit"


def test_the_lower_end_is_certified_by_its_proof(failed):
    # The lower end under a limit is one of the stages' proofs: the two-phase rate's matching
    # bound (rate x N/2), checked against valiant_rate's own certificate.
    fab, exact = failed
    b = fo.bisection_bandwidth(fab, time_limit=5)
    if b.lower_from.startswith("two-phase"):
        rate = fo.valiant_rate(fab)
        assert b.lower_gbps <= rate.rate_gbps * len(fab.endpoints) / 2 * (1 + 1e-9)
    assert b.lower_gbps <= exact * (1 + 1e-9) <= b.upper_gbps * (1 + 1e-9)


def test_a_command_budget_gives_the_bisection_its_share(failed):
    fab, exact = failed
    budget = TimeBudget(60.0, solves=2)
    with spending(budget):
        b = fo.bisection_bandwidth(fab)
    assert budget.solved == 1 and budget.left_solves == 1
    assert budget.cut_short == (["bisection"] if b.stopped_short == "time limit" else [])
    assert b.lower_gbps <= exact * (1 + 1e-9) <= b.upper_gbps * (1 + 1e-9)


def test_a_spent_command_budget_still_gives_a_certified_cut(monkeypatch, failed):
    fab, exact = failed
    _a_day_each(monkeypatch)
    budget = TimeBudget(1e-9, solves=1)  # spent at once: the call gets the floor's share
    with spending(budget):
        b = fo.bisection_bandwidth(fab)
    assert budget.cut_short == ["bisection"]
    assert b.status == "time_limit"
    _cut_certified(fab, b)
    assert exact <= b.upper_gbps


class _Spent(TimeBudget):
    """A search budget already spent."""

    def out(self):
        return True


def test_worst_case_begins_no_pattern_once_the_limit_is_spent(monkeypatch):
    fab = fo.fat_tree(4)

    def no_solve(*a, **k):
        raise AssertionError("a pattern was solved after the limit")

    monkeypatch.setattr(worst_case, "TimeBudget", _Spent)
    monkeypatch.setattr(worst_case, "max_concurrent_flow", no_solve)
    w = fo.worst_case_permutation(fab, gbps=400, time_limit=5, iterations=3)
    assert w.tried == [] and w.pattern_result is None
    assert w.skipped == 3 or w.exact
    # TUB is the upper end: every permutation of a non-blocking fat tree is carried at full
    # rate (Al-Fares et al., SIGCOMM 2008), so the exact worst case 1 lies in the bracket.
    assert w.upper == pytest.approx(max(w.tub_upper, w.lower))
    assert w.lower <= 1 + 1e-9 <= w.upper + 1e-9
    assert w.status in ("optimal", "time_limit")


def test_worst_case_status_without_a_limit_is_optimal_on_a_fat_tree():
    w = fo.worst_case_permutation(fo.fat_tree(4), gbps=400)
    assert w.status == "optimal" and w.pattern_result is not None
    assert np.isclose(w.lower, 1.0) and np.isclose(w.upper, 1.0)


def test_the_group_swaps_begin_no_round_past_their_deadline():
    from fabricopt.analysis.cuts import min_cut
    from fabricopt.analysis.split_search import swap_groups
    from fabricopt.flow.bounds import hierarchy_partitions
    from fabricopt.graph_arrays import GraphArrays

    fab = fo.leaf_spine(4, 1, 2, link_gbps=1.0)  # 4 leaves of 2 hosts, 1 uplink each
    ga = GraphArrays.from_fabric(fab)
    ep = np.array([ga.index[e] for e in fab.endpoints])

    def place(mask):
        return min_cut(ga, ep[mask], ep[~mask])

    bad = place(np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=bool))  # every leaf split: 4 links
    parts = hierarchy_partitions(fab, ga)
    # No deadline: 2 leaves' uplinks (split_search's own example); a deadline passed: the
    # cut it started from, still a cut (its capacity summed from its arcs).
    assert swap_groups(ga, ep, bad, parts, place).capacity == 2.0
    kept = swap_groups(ga, ep, bad, parts, place, deadline=-np.inf)
    assert kept.capacity == 4.0 == float(ga.capacity[kept.arcs].sum())


def test_the_top_descent_begins_no_round_past_its_deadline(monkeypatch):
    from fabricopt.analysis import layered_bisection
    from fabricopt.analysis.layered_bisection import descend_top
    from fabricopt.graph_arrays import GraphArrays

    rounds, real = [], layered_bisection._least_below
    monkeypatch.setattr(layered_bisection, "_least_below",
                        lambda *a: rounds.append(1) or real(*a))

    ft = fo.fat_tree(4)
    ga = GraphArrays.from_fabric(ft)
    ep = np.array([ga.index[e] for e in ft.endpoints])
    bad = np.zeros(ga.n_nodes, dtype=bool)
    bad[ep[::2]] = True  # every other host
    full, _ = descend_top(ga, ep, bad)
    # The split read off, then one round that finds nothing better: two evaluations.
    assert len(rounds) == 2
    rounds.clear()
    stopped, side = descend_top(ga, ep, bad, deadline=-np.inf)
    assert len(rounds) == 1  # the split read off only: no round begun
    # Pods placed whole below the top: 8 x 400 = 3,200 (descend_top's example); stopped
    # before any round, a cut no lower, and its value is its arcs' capacity.
    assert full == 3200.0 and stopped >= full
    crossing = ga.capacity[side[ga.tail] & ~side[ga.head]].sum()
    assert stopped == pytest.approx(crossing)


def test_the_milp_is_not_begun_when_its_start_does_not_fit(monkeypatch):
    # A ring of 8 (8 nodes, at most milp_max_nodes) with the MILP's start taking a day: under a
    # limit it is not begun; the ring's bisection 2 (two unit links cut, the module's example)
    # is still proven by the other stages.
    monkeypatch.setattr(bisection_plan, "MILP_START_SECONDS", 86_400.0)
    calls = []
    monkeypatch.setattr(bisection_plan, "_milp", lambda *a: calls.append(a))
    # The bracket read as open throughout, so every stage is reached.
    monkeypatch.setattr(bisection_plan, "_open", lambda bracket: True)
    monkeypatch.setattr(bisection_plan.BisectionProblem, "closed", lambda self, bracket: False)
    b = fo.bisection_bandwidth(fo.ring(8), time_limit=30)
    assert calls == [] and "exact MILP" in b.not_begun
    b = fo.bisection_bandwidth(fo.ring(8), time_limit=None)
    assert len(calls) == 1
