"""Link-capacity planning: closed forms on a leaf-spine, certificates, bad input."""

import math

import pulp
import pytest

import fabricopt as fo


def closed_form_links(theta, gbps, per_leaf, n, spines, link_gbps):
    """Leaf-spine uplinks per leaf-spine pair for all-to-all: each leaf sends
    ``theta * gbps * per_leaf * (n - per_leaf)`` Gb/s to other leaves, spread evenly over its
    ``spines`` bundles (the cut of the leaf is also what the even split achieves)."""
    return math.ceil(theta * gbps * per_leaf * (n - per_leaf) / (spines * link_gbps) - 1e-9)


@pytest.mark.parametrize("model", ["orbit", "full"])
@pytest.mark.parametrize("theta, expected", [
    # 4 leaves x 4 GPUs, 2 spines, 400G links, 10 Gb/s per pair: a leaf sends
    # theta x 10 x 4 x 12 = 480 theta Gb/s over 2 bundles: theta 2 -> 960 / 800 -> 2 links;
    # theta 1 -> 1 link; theta 2.6 -> 1248 / 800 -> 2 links. A GPU sends 150 theta <= 400.
    (1.0, 1), (2.0, 2), (2.6, 2),
])
def test_leaf_spine_needs_the_closed_form_uplinks(model, theta, expected):
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=4)
    tm = fo.all_to_all(fab, gbps=10)
    assert closed_form_links(theta, 10, 4, 16, 2, 400) == expected
    plan = fo.plan_capacity(fab, tm, target_theta=theta, model=model)
    assert plan.status == "optimal" and plan.gap == 0 and plan.model == model
    if model == "orbit":
        # Every bundle alike: the closed form. 16 GPU links, 4 x 2 bundles of that size.
        ls = {n for (u, v), n in plan.links.items() if str(v).startswith("spine")}
        assert ls == {expected}
        assert plan.cost == 16 + 8 * expected
    else:
        # Bundles may differ: each leaf still needs ceil(480 theta / 400) uplinks (its cut),
        # and the best plan costs no more than the best plan of equal bundles.
        for i in range(4):
            up = sum(n for (u, v), n in plan.links.items() if u == f"leaf{i}"
                     and str(v).startswith("spine"))
            assert up >= math.ceil(480 * theta / 400 - 1e-9)
        assert plan.cost <= 16 + 8 * expected
    # The certificate: the planned fabric carries the traffic at the target, proven.
    assert plan.verified and plan.flow.lower >= theta * (1 - 1e-6)
    assert fo.check_certificate(plan.fabric, plan.flow, tm).ok
    # One link fewer on every bundle would not do: the leaf's cut is below the demand.
    assert 480 * theta > 2 * 400 * (expected - 1)


def test_per_bundle_plan_may_use_fewer_links_than_equal_bundles():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=4)
    tm = fo.all_to_all(fab, gbps=10)
    # theta 2: a leaf sends 960 Gb/s, 3 uplinks of 400 (2 + 1) suffice where equal bundles
    # take 2 + 2: 16 + 4 x 3 = 28 against 16 + 8 x 2 = 32.
    full = fo.plan_capacity(fab, tm, target_theta=2.0, model="full")
    assert full.cost == 28 and full.verified


def test_costs_by_tier_and_relaxation():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=4)
    tm = fo.all_to_all(fab, gbps=10)
    plan = fo.plan_capacity(fab, tm, target_theta=2.5,
                            cost={"gpu-leaf": 100.0, "leaf-spine": 1000.0})
    # 16 GPU links at 100 and 8 bundles of 2 links at 1000 (1200 / 800 = 1.5 -> 2).
    assert plan.cost == 16 * 100 + 8 * 2 * 1000
    relaxed = fo.plan_capacity(fab, tm, target_theta=2.5, integral=False,
                               cost={"gpu-leaf": 100.0, "leaf-spine": 1000.0})
    # Fractional links: 1.5 per bundle exactly; GPU links 150 x 2.5 / 400 = 0.9375 each.
    assert relaxed.cost == pytest.approx(16 * 100 * 0.9375 + 8 * 1.5 * 1000)
    assert relaxed.cost <= plan.cost


def test_infeasible_target_is_reported():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=1)
    tm = fo.all_to_all(fab, gbps=10)
    # One link per pair carries 800 Gb/s out of a leaf: theta 2 needs 960.
    plan = fo.plan_capacity(fab, tm, target_theta=2.0)
    assert plan.status == "infeasible" and plan.links == {} and math.isnan(plan.cost)
    assert not plan.verified


def test_max_links_attribute_bounds_the_bundles():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=1)
    for _u, _v, d in fab.graph.edges(data=True):
        if d["tier"] == "leaf-spine":
            d["max_links"] = 3
    plan = fo.plan_capacity(fab, fo.all_to_all(fab, gbps=10), target_theta=2.0)
    assert plan.status == "optimal" and plan.orbit_links["leaf-spine"] == 2


@pytest.mark.parametrize("kwargs, match", [
    ({"target_theta": 0}, "target_theta must be"),
    ({"target_theta": 1, "model": "x"}, "model must be one of"),
    ({"target_theta": 1, "cost": 5}, "cost must be None, a mapping"),
    ({"target_theta": 1, "cost": {"gpu-leaf": 1}}, "no entry for tier 'leaf-spine'"),
    ({"target_theta": 1, "solver": "nope"}, "solver must be a pulp solver available"),
])
def test_bad_arguments(kwargs, match):
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2)
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.plan_capacity(fab, fo.all_to_all(fab), **kwargs)


def test_orbit_model_needs_a_claim():
    fab = fo.from_networkx(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2).graph)
    with pytest.raises(fo.InvalidParameterError, match="'orbit' only where"):
        fo.plan_capacity(fab, fo.all_to_all(fab), target_theta=1.0, model="orbit")


def test_the_milp_is_the_flow_models_lp_with_link_counts():
    # One LP stack: the program is the throughput LP of the flow package (same columns and
    # rows) with one more column per link count and no row of its own.
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=4)
    tm = fo.all_to_all(fab, gbps=10)
    full = fo.plan_capacity(fab, tm, target_theta=1.0, model="full")
    lp = fo.build_flow_lp(fab, tm).lp
    assert full.n_integers == 16 + 8  # a count per bundle: 16 GPU links, 4 x 2 uplinks
    assert (full.n_variables, full.n_rows) == (lp.n_cols + full.n_integers, lp.n_rows)
    orbit = fo.plan_capacity(fab, tm, target_theta=1.0, model="orbit")
    sym = fo.flow.build_symmetric_lp(fab, 10.0).lp
    assert orbit.n_integers == 2  # a count per orbit of bundles: GPU links, uplinks
    assert (orbit.n_variables, orbit.n_rows) == (sym.n_cols + 2, sym.n_rows)


class StoppedCBC(pulp.PULP_CBC_CMD):
    """CBC that reports a MILP's plan as found but not proven, as it does at a time limit
    (solution status 2); linear programs it reports as solved."""

    def actualSolve(self, lp, **kwargs):
        status = super().actualSolve(lp, **kwargs)
        if lp.isMIP():
            lp.assignStatus(pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible)
        return status


def test_a_plan_stopped_before_its_proof_is_time_limit_with_its_gap():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4, links_per_pair=4)
    tm = fo.all_to_all(fab, gbps=10)
    plan = fo.plan_capacity(fab, tm, target_theta=2.0, model="full",
                            solver=StoppedCBC(msg=False))
    # The same plan as the proven one (cost 28, above), in the flow backends' vocabulary.
    assert plan.status == "time_limit" and plan.cost == 28 and plan.verified
    # The bound is the relaxation's: GPU links 2 x 150 / 400 = 0.75 each (16), and each
    # leaf 2 x 480 / 400 = 2.4 uplinks (4 leaves): 12 + 9.6 = 21.6.
    assert plan.cost_bound == pytest.approx(21.6)
    assert plan.gap == pytest.approx((28 - 21.6) / 28)
