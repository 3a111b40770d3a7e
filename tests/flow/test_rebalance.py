"""WCMP rebalanced against the load: a feasible, conserving flow of the LP, never below the
fixed WCMP shares it starts from and never above the LP's optimum; on failed fat trees it
reaches the optimum that fixed shares miss."""

import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow.approx import CoreGraph
from fabricopt.flow.bounds import ecmp_point
from fabricopt.flow.bounds_first.rebalance import rebalanced_flows

FAILED = [
    fo.fat_tree(4).without(links={("core0.0", "spine0.0"): 1}),
    fo.fat_tree(4).without(links={("core0.0", "spine0.0"): 1, ("leaf0", "spine0.1"): 1}),
    fo.fat_tree(6).without(links={("core0.0", "spine0.0"): 1}),
    fo.leaf_spine(4, 2, 4, links_per_pair=2).without(links={("leaf0", "spine0"): 1}),
    fo.leaf_spine(5, 3, 3).without_links([("leaf0", "spine1")]),
    fo.jellyfish(8, 3, 1, seed=3).without_links([("s0", "s2")]),
]


@pytest.mark.parametrize("fab", FAILED, ids=[f"{f.name} {i}" for i, f in enumerate(FAILED)])
def test_rebalanced_point_is_feasible_and_between_wcmp_and_the_lp(fab):
    traffic = fo.all_to_all(fab)
    model = fo.build_flow_lp(fab, traffic)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=False).theta
    wcmp = ecmp_point(model)
    point = ecmp_point(model, rebalance_to=np.inf)
    assert point is not None and wcmp is not None
    # A feasible point of the LP: flow conserves, no arc (endpoint rows included) overloaded.
    assert model.conservation_residual(point) <= 1e-9 * point[-1] * model.n_commodities
    load = model.full_load(point)
    assert np.all(load <= model.ga.capacity * (1 + 1e-9))
    # The first round is fixed WCMP, and every round is a feasible flow.
    assert wcmp[-1] * (1 - 1e-12) <= point[-1] <= exact * (1 + 1e-9)


def test_rebalancing_reaches_the_optimum_wcmp_misses():
    # fat_tree(6) missing one spine-to-core link: the spine above it keeps a third of its
    # pod's outbound traffic under fixed WCMP shares, on two uplinks of three, so WCMP stops
    # at 5.93 where the LP carries 7.547 (400/53, from the LP itself below).
    fab = fo.fat_tree(6).without(links={("core0.0", "spine0.0"): 1})
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    exact = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    assert ecmp_point(model)[-1] < 0.8 * exact
    assert ecmp_point(model, rebalance_to=np.inf)[-1] == pytest.approx(exact, rel=1e-6)


def test_an_unreachable_target_declines():
    # Two components: no routing exists, so the rebalancing returns nothing to certify.
    fab = fo.leaf_spine(2, 1, 1).without_links([("leaf0", "spine0")])
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    g = CoreGraph.of(model)
    m = len(g.tail)
    assert rebalanced_flows(g, np.ones(m, dtype=bool), g.demand, np.zeros(m)) is None


def test_bounds_stage_closes_by_rebalancing_where_the_attach_lp_declines(monkeypatch):
    # As on fat_tree(16) minus 20 switch links, where the attach-switch LP is too large:
    # here it is made to decline on fat_tree(6) minus a spine-to-core link, WCMP stops at 79%
    # of the cut (see above), and the rebalanced routing meets it: the stage's answer is
    # exact, method "bounds", and re-checks.
    import fabricopt.flow.bounds_first.tor_routing as tor_routing

    monkeypatch.setattr(tor_routing, "ATTACH_LP_MAX_COLUMNS", 0)
    fab = fo.fat_tree(6).without(links={("core0.0", "spine0.0"): 1})
    r = certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True))
    assert r.method == "bounds" and r.exact
    exact = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    assert r.theta == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("links", [[("core0.0", "spine0.0")],
                                   [("core0.0", "spine0.0"), ("spine1.1", "leaf5")]])
def test_bounds_stage_rebalances_before_the_attach_lp_on_a_failed_fat_tree(monkeypatch, links):
    # Without servers the stage tries WCMP rebalanced first; fat_tree(8) minus one
    # spine-to-core link needs 86 rounds to meet its cut (REBALANCE_ROUNDS), so the
    # attach-switch LP (1.4 s there, against 0.1 s) is never built. The answer is the full
    # LP's optimum, exact and re-checked from the fabric.
    import fabricopt.flow.bounds_first.tor_routing as tor_routing

    def refused(*args, **kwargs):
        raise AssertionError("the attach-switch LP ran although rebalancing met the cut")

    monkeypatch.setattr(tor_routing, "_attach_lp_flow", refused)
    fab = fo.fat_tree(8).without_links(links)
    r = certified(fab, fo.max_concurrent_flow(fab))
    assert r.method == "bounds" and r.exact
    monkeypatch.undo()
    exact = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    assert r.lower <= exact * (1 + 1e-9) and r.upper >= exact * (1 - 1e-9)
    assert r.theta == pytest.approx(exact, rel=1e-6)
