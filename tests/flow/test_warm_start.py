"""Warm starts: a failed fabric solved from what the intact fabric's solve proved."""

import pickle
from dataclasses import replace

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.flow.approx import solve_approx
from fabricopt.flow.proof import explicit_distance_bound
from fabricopt.flow.warm import lengths_only, warm_lengths
from fabricopt.graph_arrays import GraphArrays

FAILED = [
    pytest.param(lambda: fo.fat_tree(4), 0.25, "leaf-spine", id="fat_tree4-leaf-spine"),
    pytest.param(lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2,
                                       links_per_pair=2), 0.3, None, id="leaf_spine-bundles"),
    pytest.param(lambda: fo.torus((3, 3)), 0.15, None, id="torus3x3"),
    # GPUs with NVLink and a NIC forward traffic: the approximate method takes column
    # generation, which prices its first columns at the warm lengths.
    pytest.param(lambda: fo.cluster(scale_up=fo.dgx_h100(), nodes=2,
                                    scale_out="rail_optimized"), 0.05, None, id="dgx-cluster"),
]


def _exact(fab, traffic):
    r = fo.max_concurrent_flow(fab, traffic, method="lp")
    assert r.exact and fo.check_certificate(fab, r, traffic).ok
    return r.theta


@pytest.mark.parametrize("make, fraction, tiers", FAILED)
def test_warm_bracket_contains_the_exact_value_and_rechecks_on_the_failed_fabric(
        make, fraction, tiers):
    fab = make()
    traffic = fo.all_to_all(fab)
    intact = fo.max_concurrent_flow(fab, traffic)
    failed = fo.fail_random(fab, fraction, seed=3, tiers=tiers)
    assert failed.removed.physical_links > 0
    exact = _exact(failed, traffic)
    for gap in (0.01, 0.5):
        r = fo.max_concurrent_flow(failed, traffic, method="approx", gap=gap,
                                   warm_start=intact)
        assert r.lower * (1 - 1e-9) <= exact <= r.upper * (1 + 1e-9)
        assert r.upper - r.lower <= gap * r.upper
        assert fo.check_certificate(failed, r, traffic).ok
        # Removing links never raises theta; the intact lengths prove it on the failed
        # fabric, and the certificate keeps the better bound.
        assert exact <= intact.lower * (1 + 1e-9)
        ga = GraphArrays.from_fabric(failed)
        warm_bound = explicit_distance_bound(failed, traffic, warm_lengths("t", ga, intact),
                                             ga)
        assert r.upper <= warm_bound * (1 + 1e-9) and warm_bound <= intact.upper * (1 + 1e-9)


def test_warm_lengths_are_the_bound_when_the_failure_misses_the_binding_arcs():
    # fat_tree(4) at 400 Gb/s is NIC-bound (theta = 400 / 15: each GPU sends 15 units
    # through one 400 Gb/s link), so its lengths sit on the GPU links. A failed core link
    # leaves every GPU link, and the intact lengths still prove 400 / 15 on the failed
    # fabric at once. The hierarchy's cut, offered to the approximate method too, proves
    # more: pod 0 keeps 3 of its 4 core links, 1,200 Gb/s for its 4 hosts' 4 x 12 units to
    # the other pods, theta <= 1200 / 48 = 25, the failed fabric's exact theta.
    fab = fo.fat_tree(4)
    intact = fo.max_concurrent_flow(fab)
    assert intact.theta == pytest.approx(400 / 15)
    lengths = intact.certificate.lengths
    tiers = np.array(intact.certificate.tiers)
    assert lengths[tiers == "spine-core"].max() == 0
    failed = fab.without(links=[("spine0.0", "core0.0")])
    cold = fo.max_concurrent_flow(failed, method="approx", gap=0.5)
    warm = fo.max_concurrent_flow(failed, method="approx", gap=0.5, warm_start=intact)
    assert warm.upper == pytest.approx(25.0, rel=1e-9)
    assert fo.max_concurrent_flow(failed, method="lp").theta == pytest.approx(25.0)
    assert warm.upper <= cold.upper * (1 + 1e-12)
    assert fo.check_certificate(failed, warm).ok


def test_nested_failures_warm_started_in_turn_never_raise_theta():
    fab = fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2, links_per_pair=2)
    first = fo.fail_random(fab, 0.1, seed=1)
    second = fo.fail_random(first, 0.1, seed=2)  # a sub-fabric of first
    r0 = fo.max_concurrent_flow(fab)
    r1 = fo.max_concurrent_flow(first, warm_start=r0)
    r2 = fo.max_concurrent_flow(second, warm_start=r1)
    for f, r in ((first, r1), (second, r2)):
        assert r.exact and fo.check_certificate(f, r).ok
    assert r0.theta >= r1.theta * (1 - 1e-9) and r1.theta >= r2.theta * (1 - 1e-9)


def test_warm_start_of_the_same_fabric_is_allowed():
    fab = fo.ring(8)
    r = fo.max_concurrent_flow(fab)
    again = fo.max_concurrent_flow(fab, warm_start=r)
    assert again.exact and again.theta == pytest.approx(8 / 64)  # 8 / n**2 on a ring


def test_lengths_only_pickles_and_warm_starts_the_same():
    fab = fo.fat_tree(4)
    intact = fo.max_concurrent_flow(fab)
    slim = pickle.loads(pickle.dumps(lengths_only(intact)))
    assert slim.certificate.flow is None and slim.certificate.load is None
    failed = fab.without(links=[("leaf0", "spine0.0")])
    a = fo.max_concurrent_flow(failed, method="approx", gap=0.5, warm_start=intact)
    b = fo.max_concurrent_flow(failed, method="approx", gap=0.5, warm_start=slim)
    assert (a.lower, a.upper) == (b.lower, b.upper)


@pytest.mark.parametrize("warm, match", [
    # ring(6)'s nodes n0..n5 are not in a fat-tree.
    (lambda: fo.max_concurrent_flow(fo.ring(6)), r"warm_start must come from a fabric that "
                                                 r"contains this one, but node"),
    # Same nodes, one link per leaf-spine pair where the target has two: 400 < 800 Gb/s.
    (lambda: fo.max_concurrent_flow(fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)),
     "capacities no smaller"),
    (lambda: 0.5, "warm_start must be None or a FlowResult, got float"),
    (lambda: replace(fo.max_concurrent_flow(fo.ring(4)), certificate=None),
     "must carry the arc lengths"),
])
def test_warm_start_from_another_fabric_is_a_clear_error(warm, match):
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, links_per_pair=2)
    with pytest.raises(fo.InvalidParameterError, match=f"max_concurrent_flow.*{match}"):
        fo.max_concurrent_flow(fab, warm_start=warm())


def test_a_missing_arc_is_named():
    # A leaf-spine link that the warm start's fabric lacks: the arc is named.
    small = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2).without(
        links=[("leaf0", "spine0")])
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    with pytest.raises(fo.InvalidParameterError, match="arc 'leaf0'->'spine0' is not in"):
        fo.max_concurrent_flow(fab, warm_start=fo.max_concurrent_flow(small))


def test_seed_lengths_are_checked():
    fab = fo.ring(4)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    with pytest.raises(fo.InvalidParameterError, match="solve_approx.*seed_lengths"):
        solve_approx(model, seed_lengths=np.ones(3))


@pytest.mark.parametrize("method", ["lp", "approx"])
def test_sweep_with_warm_start_gives_the_answers_of_the_cold_sweep(method):
    fab = fo.fat_tree(4)
    kw = dict(trials=3, seed=5, tiers="leaf-spine", method=method)
    warm = fo.failure_sweep(fab, [0.1, 0.25], **kw)
    cold = fo.failure_sweep(fab, [0.1, 0.25], warm_start=False, **kw)
    # Intact fat_tree(4) at 400 Gb/s: theta = 400 / (N - 1) with N = 16 GPUs (solved by
    # the sweep's method: "approx" may stop with a bracket).
    for sweep in (warm, cold):
        assert sweep.intact_lower * (1 - 1e-9) <= 400 / 15 <= sweep.intact_upper * (1 + 1e-9)
    for w, c in zip(warm.trials, cold.trials, strict=True):
        assert w.failed == c.failed  # the same seeds fail the same links
        # Both brackets hold the one true theta, so they meet.
        assert max(w.lower, c.lower) <= min(w.upper, c.upper) * (1 + 1e-9)
        assert w.upper <= warm.intact_upper * (1 + 1e-9)
        if w.theta is not None and c.theta is not None:
            assert w.theta == pytest.approx(c.theta, rel=1e-6)
    if method == "lp":
        assert warm.intact_theta == pytest.approx(400 / 15)
        assert "intact           theta 26.6667" in str(warm)  # 400 / 15


def test_sweep_warm_start_switch_is_checked():
    with pytest.raises(fo.InvalidParameterError, match="failure_sweep.*warm_start"):
        fo.failure_sweep(fo.ring(4), [0.1], warm_start="yes")


def test_ball_cut_of_the_intact_lengths_proves_the_failed_server_bound_at_once():
    # Two DGX H100 servers, rail-optimized: intact theta = 400 / 8 = 50 (each GPU's one
    # 400 Gb/s NIC link carries what it sends to the 8 GPUs of the other server). With one
    # NIC link of server 0 gone, server 0 sends 8 x 8 units through 7 x 400 Gb/s:
    # theta = 2800 / 64 = 43.75, which the exact LP confirms. The intact lengths sum every
    # server's NIC cut; the ball of a server-0 GPU (what it reaches at length zero) is its
    # server, whose cut proves 43.75 at once (the cold start stops at a wider bracket).
    fab = fo.cluster(scale_up=fo.dgx_h100(), nodes=2, scale_out="rail_optimized")
    intact = fo.max_concurrent_flow(fab)
    assert intact.theta == pytest.approx(50.0)
    failed = fab.without(links=[("n0.gpu0", "r0.l0")])
    assert _exact(failed, fo.all_to_all(failed)) == pytest.approx(43.75)
    cold = fo.max_concurrent_flow(failed, method="approx", gap=0.5)
    warm = fo.max_concurrent_flow(failed, method="approx", gap=0.5, warm_start=intact)
    assert warm.upper == pytest.approx(43.75, rel=1e-12)
    assert warm.upper <= cold.upper * (1 + 1e-12)
    assert fo.check_certificate(failed, warm).ok


def test_a_warm_start_keeps_the_cheap_routing_on_fabrics_without_scale_up():
    # fat_tree(8) minus 5 switch links (random.Random(0)): with no scale-up links the bounds
    # stage is WCMP rebalanced (hundredths of a second), so a failure trial's warm start no
    # longer sends it to the full LP (4 s): the same certified bracket, from the bounds,
    # with or without it. A SuperPOD (NVLink: scale-up links) still lets the warm start
    # stand in for its routing.
    import random

    from fabricopt.flow.problem import FlowProblem
    from fabricopt.flow.warm import warm_lengths

    ft = fo.fat_tree(8)
    eps = set(ft.endpoints)
    links = sorted({tuple(sorted(e)) for e in ft.graph.edges() if not set(e) & eps})
    failed = ft.without(links=random.Random(0).sample(links, 5))
    warm = fo.max_concurrent_flow(failed, warm_start=fo.max_concurrent_flow(ft))
    cold = fo.max_concurrent_flow(failed)
    assert warm.method == cold.method == "bounds"
    assert (warm.lower, warm.upper) == pytest.approx((cold.lower, cold.upper))
    assert fo.check_certificate(failed, warm).ok
    sp = fo.superpod(1)
    failed_sp = fo.fail_random(sp, 0.01, seed=1)
    ga = GraphArrays.from_fabric(failed_sp)
    lengths = warm_lengths("max_concurrent_flow", ga, fo.max_concurrent_flow(sp))
    problem = FlowProblem(failed_sp, fo.all_to_all(failed_sp), warm=lengths, ga=ga)
    assert problem.warm_skips_routing and not problem.bounds_before_search
