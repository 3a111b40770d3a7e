"""method="approx": the certified bracket contains the exact optimum and re-checks."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.flow.approx import solve_approx

# A loose gap keeps these fast; the bracket must contain the exact value whatever the gap.
GAP = 0.05


def _sparse_random(fab, seed, pairs=12):
    rng = np.random.default_rng(seed)
    eps = list(fab.endpoints)
    demands = {}
    while len(demands) < pairs:
        s, t = rng.choice(len(eps), size=2, replace=False)
        demands[(eps[s], eps[t])] = float(rng.integers(1, 4))
    return fo.Traffic(demands, name="sparse")


def _first_link(fab, tier=None):
    """A link between two switches (both ends not endpoints)."""
    eps = set(fab.endpoints)
    for u, v, d in fab.graph.edges(data=True):
        if u not in eps and v not in eps and (tier is None or d.get("tier") == tier):
            return (u, v)
    raise AssertionError("no switch-to-switch link")


def _torus_minus_link():
    fab = fo.torus((4, 4))
    u, v = next(iter(fab.graph.edges()))
    return fab.without_links([(u, v)])


JELLY = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=3)
FAT = fo.fat_tree(4, link_gbps=1.0)
CASES = [
    ("jellyfish all-to-all", JELLY, lambda f: fo.all_to_all(f)),
    ("jellyfish permutation", JELLY, lambda f: fo.permutation(f, seed=1)),
    ("jellyfish sparse", JELLY, lambda f: _sparse_random(f, 2)),
    ("torus minus a link", _torus_minus_link(), lambda f: fo.all_to_all(f)),
    ("fat_tree(4) minus a link", FAT.without_links([_first_link(FAT)]),
     lambda f: fo.all_to_all(f)),
    ("fat_tree(4) minus a link, permutation", FAT.without_links([_first_link(FAT)]),
     lambda f: fo.permutation(f, seed=4)),
]


@pytest.mark.parametrize("name,fab,make", CASES, ids=[c[0] for c in CASES])
def test_bracket_contains_exact_lp_and_rechecks(name, fab, make):
    traffic = make(fab)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    assert exact.exact
    r = fo.max_concurrent_flow(fab, traffic, method="approx", gap=GAP)
    assert r.method == "approx" and r.status in ("inexact", "optimal")
    tol = 1e-9 * exact.theta
    assert r.lower - tol <= exact.theta <= r.upper + tol
    assert r.upper - r.lower <= GAP * r.upper * (1 + 1e-9)
    check = fo.check_certificate(fab, r, traffic)
    assert check.ok, check
    assert check.max_overload <= 1 + 1e-9


# Closed forms with unit links and unit all-to-all (see tests/flow/test_flow.py for sources):
# ring C_n, n even: 8/n^2; hypercube Q_d: 2^(1-d); complete K_n: 1.
@pytest.mark.parametrize("fab,closed", [(fo.ring(8), 8 / 8**2),
                                        (fo.hypercube(3), 2.0 ** (1 - 3)),
                                        (fo.complete(5), 1.0)], ids=["ring", "cube", "K5"])
def test_bracket_contains_closed_form(fab, closed):
    r = fo.max_concurrent_flow(fab, method="approx", gap=GAP)
    assert r.lower * (1 - 1e-9) <= closed <= r.upper * (1 + 1e-9)
    assert fo.check_certificate(fab, r).ok


@pytest.mark.parametrize("gap", [0, 1, -0.1, 1.5, True, "0.1", float("nan")])
def test_gap_outside_open_unit_interval_is_an_error(gap):
    with pytest.raises(InvalidParameterError, match="gap"):
        fo.max_concurrent_flow(fo.ring(4), method="approx", gap=gap)
    model = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4)))
    with pytest.raises(InvalidParameterError, match="solve_approx.*gap"):
        solve_approx(model, gap=gap)


def test_time_limit_stops_with_a_proven_bracket():
    fab = JELLY
    exact = fo.max_concurrent_flow(fab, method="lp").theta
    # A gap no first-order method reaches in a millisecond: the clock stops it.
    r = fo.max_concurrent_flow(fab, method="approx", gap=1e-9, time_limit=1e-3)
    assert r.status == "time_limit" and r.theta is None
    assert 0 < r.lower <= exact * (1 + 1e-9) and exact <= r.upper * (1 + 1e-9)
    assert fo.check_certificate(fab, r).ok


def test_solution_uses_the_lp_layout():
    fab = JELLY
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    sol = solve_approx(model, gap=GAP)
    m = len(model.core_arcs)
    assert sol.x.shape == (model.n_commodities * m + 1,)
    assert np.all(sol.x >= 0)
    # The flow conserves: residual only from rounding, far below the smallest demand.
    assert model.conservation_residual(sol.x) <= 1e-9 * model.min_demand
    assert sol.dual_ub.shape == (m + len(model.ep_rows_arc),) and np.all(sol.dual_ub <= 0)


def test_disconnected_pair_gives_zero():
    fab = fo.ring(4).without_links([("n0", "n1"), ("n2", "n3")])
    r = fo.max_concurrent_flow(fab, method="approx")
    assert r.upper == 0 and r.lower == 0 and r.unreachable is not None


def test_auto_picks_approx_when_the_lp_is_too_large(monkeypatch):
    import fabricopt.flow.plan as api

    monkeypatch.setattr(api, "MAX_AUTO_NONZEROS", 10)
    fab = JELLY
    r = fo.max_concurrent_flow(fab, method="auto", gap=GAP, bounds_first=False)
    assert r.method == "approx" and fo.check_certificate(fab, r).ok


def test_a_bounds_bracket_within_the_gap_needs_no_rounds(monkeypatch):
    # Too large for the LP (by the monkeypatched limit), so the approximate method would
    # run; the bounds stage's bracket on this jellyfish is already within a 50% gap, so it
    # is the answer, certified, and no round runs. At a gap of 1e-9 the rounds do run.
    import fabricopt.flow.plan as api

    monkeypatch.setattr(api, "MAX_AUTO_NONZEROS", 10)
    monkeypatch.setattr(api, "solve_approx", lambda *a, **k: pytest.fail("rounds ran"))
    r = fo.max_concurrent_flow(JELLY, method="auto", gap=0.5)
    assert r.method == "bounds" and "no approximate rounds" in r.message
    assert r.upper - r.lower <= 0.5 * r.upper and fo.check_certificate(JELLY, r).ok
    monkeypatch.undo()
    monkeypatch.setattr(api, "MAX_AUTO_NONZEROS", 10)
    ran = []
    real = api.solve_approx
    monkeypatch.setattr(api, "solve_approx", lambda *a, **k: ran.append(1) or real(*a, **k))
    fo.max_concurrent_flow(JELLY, method="auto", gap=1e-9, work_limit=3)
    assert ran


# -- column generation over routing trees and paths (fabricopt.flow.approx.colgen) ----------------
@pytest.mark.parametrize("name,fab,make", CASES, ids=[c[0] for c in CASES])
def test_column_generation_bracket_contains_exact_lp(name, fab, make):
    traffic = make(fab)
    exact = fo.build_flow_lp(fab, traffic)
    theta = fo.solve_flow_model(exact).theta
    sol = solve_approx(exact, gap=GAP, strategy="column_generation")
    lower, upper = sol.info["lower"], sol.info["upper"]
    assert lower * (1 - 1e-9) <= theta <= upper * (1 + 1e-9)
    assert upper - lower <= GAP * upper * (1 + 1e-9)
    # The point conserves flow by construction (residual from rounding only) and fits.
    assert exact.conservation_residual(sol.x) <= 1e-9 * exact.min_demand
    load = exact.full_load(sol.x)[exact.constrained]
    assert np.all(load <= exact.ga.capacity[exact.constrained] * (1 + 1e-7))


@pytest.mark.parametrize("name,fab,make", CASES[1:3] + CASES[5:],
                         ids=[c[0] for c in CASES[1:3] + CASES[5:]])
def test_auto_takes_column_generation_for_sparse_traffic_and_rechecks(name, fab, make):
    traffic = make(fab)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp").theta
    r = fo.max_concurrent_flow(fab, traffic, method="approx", gap=GAP)
    assert "column generation" in r.message
    tol = 1e-9 * exact
    assert r.lower - tol <= exact <= r.upper + tol
    check = fo.check_certificate(fab, r, traffic)
    assert check.ok, check


def test_column_generation_closes_to_the_exact_value_on_a_small_fabric():
    # Asked for a gap far below any first-order method's reach, column generation is exact
    # up to its pricing tolerance: the bracket is the LP optimum.
    fab = JELLY
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    theta = fo.solve_flow_model(model).theta
    sol = solve_approx(model, gap=1e-6, strategy="column_generation")
    assert sol.info["upper"] - sol.info["lower"] <= 1e-6 * sol.info["upper"]
    assert sol.info["lower"] * (1 - 1e-9) <= theta <= sol.info["upper"] * (1 + 1e-9)


def test_column_generation_time_limit_stops_with_a_proven_bracket():
    model = fo.build_flow_lp(JELLY, fo.all_to_all(JELLY))
    theta = fo.solve_flow_model(model).theta
    sol = solve_approx(model, gap=1e-9, time_limit=1e-3, strategy="column_generation")
    assert sol.status == "time_limit"
    assert sol.info["lower"] <= theta * (1 + 1e-9) <= sol.info["upper"] * (1 + 1e-9)


def test_unknown_strategy_is_an_error():
    model = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4)))
    with pytest.raises(InvalidParameterError, match="solve_approx.*strategy"):
        solve_approx(model, strategy="simplex")


def test_column_generation_disconnected_pair_gives_zero():
    fab = fo.ring(4).without_links([("n0", "n1"), ("n2", "n3")])
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    sol = solve_approx(model, strategy="column_generation")
    assert sol.info["lower"] == 0 and sol.info["upper"] == 0


def test_a_long_solve_shows_its_bracket_closing_when_asked(capsys):
    # progress=True draws a bar on stderr whose last line holds the certified bracket;
    # progress=False (and a non-terminal stderr by default) draws nothing.
    fab = fo.jellyfish(switches=12, network_ports=3, endpoints_per_switch=2, seed=3,
                       link_gbps=1.0)
    shown = fo.max_concurrent_flow(fab, method="approx", gap=0.05, progress=True)
    err = capsys.readouterr().err
    assert "approx" in err and "theta in [" in err
    quiet = fo.max_concurrent_flow(fab, method="approx", gap=0.05, progress=False)
    assert capsys.readouterr().err == ""
    assert (quiet.lower, quiet.upper) == (shown.lower, shown.upper)
    with pytest.raises(fo.InvalidParameterError, match="progress"):
        fo.max_concurrent_flow(fab, method="approx", progress="yes")


def _thin_ring():
    """A ring of 8 unit links with one link at a tenth: the hop lengths are not the optimal
    duals (the thin link must be priced higher), so fewest-hop routing cannot close."""
    fab = fo.ring(8)
    g = fab.graph.copy()
    u, v = next(iter(nx_edges(g)))
    for a, b in ((u, v), (v, u)):
        g[a][b]["capacity"] = 0.1
    return fo.from_networkx(g, name="thin ring")


def nx_edges(g):
    return ((u, v) for u, v in g.edges() if u < v)


@pytest.mark.parametrize("fab", [fo.jellyfish(switches=16, network_ports=4,
                                              endpoints_per_switch=2, seed=5), _thin_ring()],
                         ids=["jellyfish", "ring with a thin link"])
def test_fewest_hop_phase_keeps_the_bracket_whether_or_not_hops_are_optimal(fab,
                                                                            monkeypatch):
    # Enter the fewest-hop phase at the first chance: on the jellyfish it may close the gap,
    # on the thin ring it must stall or see the bound move and hand back to free routing;
    # either way the bracket is certified and contains the exact LP value.
    import fabricopt.flow.approx.frank_wolfe as approx

    monkeypatch.setattr(approx, "FREE_STALL", (1, 1.0))
    traffic = fo.all_to_all(fab)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    model = fo.build_flow_lp(fab, traffic)
    sol = solve_approx(model, gap=GAP, strategy="frank_wolfe", time_limit=60)
    lower, upper = sol.info["lower"], sol.info["upper"]
    tol = 1e-9 * exact.theta
    assert lower - tol <= exact.theta <= upper + tol
    assert sol.status == "optimal" and upper - lower <= GAP * upper * (1 + 1e-9)
    r = fo.max_concurrent_flow(fab, traffic, method="approx", gap=GAP)
    assert fo.check_certificate(fab, r, traffic).ok



@pytest.mark.slow
def test_column_generation_on_a_failed_superpod_with_nearly_free_nvlink():
    # 5% of all links of superpod(2) failed (seed 1): the master's soft-maximum lengths make
    # the uncongested GPU-NVSwitch links about 1e-10 of the longest, below the tie tolerance,
    # and ECMP columns once spread flow around GPU-NVSwitch cycles that did not conserve
    # (the certificate caught it: lower 0). Every column must conserve, so the bracket closes.
    from fabricopt.flow.approx import CoreGraph
    from fabricopt.flow.approx.colgen import ColumnGeneration

    fab = fo.fail_random(fo.superpod(2), 0.05, seed=1)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    run = ColumnGeneration(model, 0.01, 120)
    sol = run.run()
    g = CoreGraph.of(model)
    for k, arcs, loads in zip(run.col_k, run.col_arcs, run.col_load, strict=True):
        net = (np.bincount(g.tail[arcs], weights=loads, minlength=g.n)
               - np.bincount(g.head[arcs], weights=loads, minlength=g.n))
        supply = -g.demand[k].copy()
        supply[g.sources[k]] += g.demand[k].sum()
        assert np.allclose(net, supply, atol=1e-9 * g.demand[k].sum())
    r = fo.max_concurrent_flow(fab, method="approx", gap=0.01)
    assert r.lower > 0 and r.upper - r.lower <= 0.01 * r.upper
    assert sol.status == "optimal" and fo.check_certificate(fab, r).ok


def test_a_stalled_master_hands_over_to_frank_wolfe(monkeypatch):
    # Column generation's master may stall (dense columns); with strategy="auto" the run
    # goes on by Frank-Wolfe and keeps the better proof of each side. Force the stall with
    # a master that never finishes within its round limit.
    import fabricopt.flow.approx.colgen as colgen

    def stalls(self):
        self.stalled = True
        return None

    monkeypatch.setattr(colgen.ColumnGeneration, "_solve_master", stalls)
    fab, make = CASES[5][1], CASES[5][2]  # fat_tree(4) minus a link, a permutation
    traffic = make(fab)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    model = fo.build_flow_lp(fab, traffic)
    sol = solve_approx(model, gap=GAP, strategy="auto", time_limit=60)
    assert "stalled" in sol.message  # sparse traffic: auto took column generation first
    lower, upper = sol.info["lower"], sol.info["upper"]
    assert lower - 1e-9 <= exact.theta <= upper + 1e-9
    assert upper - lower <= GAP * upper * (1 + 1e-9)


def test_unreachable_gap_stalls_the_rounds_and_the_proofs_still_close():
    # fat_tree(4) missing a leaf-spine and a spine-core link: the LP gives theta exactly, but
    # Frank-Wolfe's distance bound stands still a few 1e-5 above it, so a gap of 1e-5 is out
    # of reach. The rounds stop by the stall test (counted in rounds) with status "stalled";
    # certifying their point and lengths (with the hierarchy cut among the lengths) closes
    # the bracket to 1e-6 all the same, so the result is optimal with theta proven.
    fab = fo.fat_tree(4)
    fab = fab.without_links([_first_link(fab, "leaf-spine"), _first_link(fab, "spine-core")])
    exact = fo.max_concurrent_flow(fab, method="lp")
    sol = solve_approx(fo.build_flow_lp(fab, fo.all_to_all(fab)), gap=1e-5)
    assert sol.status == "stalled" and "stopped closing" in sol.message
    assert sol.info["upper"] - sol.info["lower"] > 1e-5 * sol.info["upper"]
    r = fo.max_concurrent_flow(fab, method="approx", gap=1e-5)
    assert r.status == "optimal" and r.exact, r.message
    assert "stopped closing" in r.message and "theta is proven" in r.message
    assert r.theta == pytest.approx(exact.theta, rel=1e-6)
    assert fo.check_certificate(fab, r).ok


def test_work_limit_gives_the_same_bracket_twice():
    # A limit on rounds, not seconds: two runs stop at the same round with the same bracket,
    # status "iteration_limit", and the result records the limit.
    fab = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=3)
    runs = [fo.max_concurrent_flow(fab, method="approx", gap=1e-4, work_limit=5)
            for _ in range(2)]
    assert runs[0].status == "iteration_limit" and runs[0].work_limit == 5
    assert (runs[0].lower, runs[0].upper) == (runs[1].lower, runs[1].upper)
    assert fo.check_certificate(fab, runs[0]).ok


def test_work_limit_caps_the_lp_iterations():
    # One simplex iteration cannot solve a 12-switch jellyfish's LP: status iteration_limit,
    # and whatever bracket is reported re-checks.
    fab = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=3)
    r = fo.max_concurrent_flow(fab, method="lp", work_limit=1)
    assert r.status == "iteration_limit" and r.theta is None and r.work_limit == 1
    check = fo.check_certificate(fab, r)
    assert check.lower_ok and check.upper_ok
    with pytest.raises(fo.InvalidParameterError, match="work_limit"):
        fo.max_concurrent_flow(fab, method="lp", work_limit=0)


def test_a_master_solve_is_capped_in_simplex_iterations():
    # The master's cap is work, not seconds: at one simplex iteration per solve, the second
    # master (the first one's columns plus the new ones; it needs more than one iteration to
    # be optimal) stops, the run has stalled (the same round on any machine), and what it
    # proved so far still holds.
    from fabricopt.flow.approx.colgen import ColumnGeneration

    fab = JELLY
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    run = ColumnGeneration(model, 1e-6, None, master_iterations=1)
    sol = run.run()
    assert run.stalled and sol.status == "stalled"
    assert "used up its 1 simplex iterations" in sol.message
    assert sol.info["master_iterations"] == run.master_work >= 1
    exact = fo.max_concurrent_flow(fab, method="lp").theta
    assert sol.info["lower"] <= exact * (1 + 1e-9) and sol.info["upper"] >= exact * (1 - 1e-9)


def test_a_capped_master_hands_over_to_frank_wolfe(monkeypatch):
    # With strategy="auto", a master solve past MASTER_ROUND_ITERATIONS hands over to
    # Frank-Wolfe, which closes the gap: the same answer twice (counted in work).
    import fabricopt.flow.approx.solve as front  # where solve_approx reads the cap

    monkeypatch.setattr(front, "MASTER_ROUND_ITERATIONS", 1)
    # A permutation: auto takes column generation, whose second master needs more than one
    # simplex iteration.
    model = fo.build_flow_lp(JELLY, fo.permutation(JELLY, seed=1))
    sols = [solve_approx(model, gap=GAP, strategy="auto") for _ in range(2)]
    assert "stalled in its master LP" in sols[0].message
    assert sols[0].info == sols[1].info
    assert sols[0].info["upper"] - sols[0].info["lower"] <= GAP * sols[0].info["upper"]


def test_without_limits_the_approximate_method_stops_after_its_default_rounds(monkeypatch):
    # No time_limit and no work_limit: the net is DEFAULT_MAX_ROUNDS rounds (here 3, so a gap
    # of 1e-9 is out of reach), status iteration_limit, and the result records the rounds.
    import fabricopt.flow.approx.core as approx

    monkeypatch.setattr(approx, "DEFAULT_MAX_ROUNDS", 3)
    model = fo.build_flow_lp(JELLY, fo.all_to_all(JELLY))
    sol = solve_approx(model, gap=1e-9, strategy="frank_wolfe")
    assert sol.status == "iteration_limit" and sol.info["iterations"] == 3
    r = fo.max_concurrent_flow(JELLY, method="approx", gap=1e-9)
    assert r.status == "iteration_limit" and r.work_limit == 3
    assert fo.check_certificate(JELLY, r).ok


def test_the_default_rounds_shrink_with_the_model(monkeypatch):
    # The net is DEFAULT_WORK nonzeros x rounds: the jellyfish (30,560 nonzeros) keeps 10,000
    # rounds; with the work cut to 5 x its nonzeros, it gets 5 rounds, and at least
    # DEFAULT_MIN_ROUNDS of them when the work would allow fewer.
    import fabricopt.flow.approx.core as approx

    model = fo.build_flow_lp(JELLY, fo.all_to_all(JELLY))
    nonzeros = model.lp_size["nonzeros"]
    assert approx.default_max_rounds(nonzeros) == 10_000
    monkeypatch.setattr(approx, "DEFAULT_MIN_ROUNDS", 2)
    monkeypatch.setattr(approx, "DEFAULT_WORK", 5 * nonzeros)
    assert approx.default_max_rounds(nonzeros) == 5
    sol = solve_approx(model, gap=1e-9, strategy="frank_wolfe")
    assert sol.status == "iteration_limit" and sol.info["iterations"] == 5
    r = fo.max_concurrent_flow(JELLY, method="approx", gap=1e-9)
    assert r.status == "iteration_limit" and r.work_limit == 5
    assert fo.check_certificate(JELLY, r).ok
    monkeypatch.setattr(approx, "DEFAULT_WORK", 1)
    assert approx.default_max_rounds(nonzeros) == 2


@pytest.mark.parametrize("strategy", ["frank_wolfe", "column_generation"])
def test_a_known_lower_bound_ends_the_rounds_sooner(strategy):
    # The jellyfish's exact theta (50/3: its LP), given as proven elsewhere: the rounds stop
    # as soon as the run's own upper bound is within the 1% gap of it, never later than
    # without it (Frank-Wolfe alone never gets its own bracket within 1% here: its lower
    # end stalls near 16.54 under an upper end of 16.72), and the run's bracket still holds
    # theta (its point proves its own lower bound only).
    fab, traffic = JELLY, fo.all_to_all(JELLY)
    model = fo.build_flow_lp(fab, traffic)
    theta = fo.solve_flow_model(model).theta
    alone = fo.flow.approx.solve_approx(model, gap=0.01, strategy=strategy, max_rounds=2000)
    helped = fo.flow.approx.solve_approx(model, gap=0.01, strategy=strategy, max_rounds=2000,
                                         known_lower=theta)
    assert helped.status == "optimal"
    assert helped.info["iterations"] <= alone.info["iterations"]
    assert helped.info["upper"] - theta <= 0.01 * helped.info["upper"]
    assert helped.info["lower"] <= theta * (1 + 1e-9) <= helped.info["upper"] * (1 + 2e-9)


def test_a_loose_approximate_bracket_is_capped_by_the_hierarchy_cut():
    """At gap 0.5 the rounds stop early, but the upper end is never above the best cut of
    the hierarchy: on fat_tree(4) a host's own 400 Gb/s link over its 15 peers at 1 Gb/s
    each, theta <= 400 / 15 (it was 30.77 before the cut was offered)."""
    fab = fo.fat_tree(4)
    r = fo.max_concurrent_flow(fab, method="approx", gap=0.5)
    assert r.method == "approx"
    assert r.upper <= 400 / 15 * (1 + 1e-9)
    check = fo.check_certificate(fab, r)
    assert check.ok and check.upper <= 400 / 15 * (1 + 1e-9)
