"""Routing that keeps each pair below the lowest tier joining it
(``flow/bounds_first/tier_routing.py``):
a certified lower bound on oversubscribed multi-tier Clos clusters, in the full LP's layout
and, for fabrics too large for that, as root flows of the symmetric method; and a
``time_limit`` counted from the start of the call."""

import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
import fabricopt.flow.bounds_first.brackets as brackets
import fabricopt.flow.budget as budget
import fabricopt.flow.plan as api
import fabricopt.flow.problem as problem
from fabricopt.flow.bounds import structural_cut_lengths
from fabricopt.flow.bounds_first.tier_routing import node_layers, tier_point
from fabricopt.graph_arrays import GraphArrays
from fabricopt.tiers import is_scale_up_arc


def _cluster(domain, nodes, ratio, radix=8, tiers=3):
    """Small servers (``nvswitch_domain(*domain)``) on an oversubscribed Clos of radix-8
    switches: with 4 GPUs a server and leaves of 6 or 3 hosts, servers span two leaves and
    the last pod or leaf is partly filled."""
    return fo.cluster(fo.nvswitch_domain(*domain), nodes=nodes, scale_out="clos", tiers=tiers,
                      oversubscription=ratio, radix=radix, whole_servers=False)


SMALL = (4, 2, 2, 100.0)   # 4 GPUs, 2 NVSwitches, 2 links each of 100 Gb/s
ONE_SWITCH = (4, 1, 1, 400.0)

# Clusters whose hierarchy cut is the LP's optimum but where WCMP and the attach-switch
# routing stop 25 to 31 % short (measured beside the LP): the optimum relays pairs of one
# group of leaves over the servers that span them, which the tier routing does.
CLOSING = [(SMALL, 7, 3, 8, 3), (SMALL, 7, 3, 8, 2), (ONE_SWITCH, 6, 3, 8, 3),
           (ONE_SWITCH, 7, 3, 8, 3)]
# Sizes and ratios where the cut is not the optimum (or the routing falls short of it): the
# stage's bracket must still contain the LP's theta and the answer be the LP's.
GRID = [(SMALL, n, r, radix, 3) for n in (3, 5, 6) for r in (2, 3) for radix in (8, 12)]


@pytest.mark.parametrize("case", CLOSING, ids=str)
def test_oversubscribed_clusters_close_by_bounds(case):
    fab = _cluster(*case)
    lp = certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=False))
    first = certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True))
    assert first.method == "bounds", first.message
    assert first.theta == pytest.approx(lp.theta, rel=1e-6)


@pytest.mark.parametrize("case", GRID, ids=str)
def test_tier_point_is_feasible_and_below_the_lp(case):
    fab = _cluster(*case)
    traffic = fo.all_to_all(fab)
    lp = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    model = fo.build_flow_lp(fab, traffic)
    ga = model.ga
    up = np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in ga.arcs])
    point = tier_point(model, node_layers(fab, ga), up)
    assert point is not None
    lifted = model.lift(point)  # a flow that conserves and fits: theta is achievable
    assert lifted.residual_l1 <= 1e-9 * traffic.total_gbps
    assert np.all(lifted.load <= ga.capacity * (1 + 1e-9))
    assert point[-1] <= lp * (1 + 1e-9)
    assert structural_cut_lengths(fab, traffic, GraphArrays.from_fabric(fab))[0] >= lp * (1 - 1e-9)
    certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True))


@pytest.fixture
def no_full_point(monkeypatch):
    """As on a fabric too large for a point of the full LP (the 4,096-GPU 3-tier Clos has 186
    million flow variables): the stage cannot route in that layout, and ``method="auto"``
    looks for a symmetry however small the LP."""
    monkeypatch.setattr(problem, "ECMP_MAX_ENTRIES", 0)
    monkeypatch.setattr(api, "FIND_SYMMETRY_NONZEROS", 0)


@pytest.mark.parametrize("case", [(SMALL, 7, 3, 8, 3), (ONE_SWITCH, 6, 3, 8, 3)], ids=str)
def test_orbit_roots_close_without_a_full_point(no_full_point, case):
    fab = _cluster(*case)
    lp = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    r = certified(fab, fo.max_concurrent_flow(fab))
    # The root flows and the symmetry they were found with travel in the certificate; the
    # checker re-verifies the group and spreads the roots over its orbits.
    assert r.method == "bounds" and r.certificate.symmetry is not None, r.message
    assert r.theta == pytest.approx(lp, rel=1e-6)


def test_orbit_roots_after_a_full_stage_that_falls_short(monkeypatch):
    # A full point fits but the tier routing's layout does not (as on a 2,048-GPU cluster):
    # the stage's WCMP falls 25 % short of the cut, and the orbit roots close it.
    import fabricopt.flow.bounds_first.tier_routing as tier_routing

    monkeypatch.setattr(tier_routing, "TIER_MAX_ENTRIES", 0)
    monkeypatch.setattr(brackets, "TIER_MAX_ENTRIES", 0)
    monkeypatch.setattr(api, "FIND_SYMMETRY_NONZEROS", 0)
    fab = _cluster(SMALL, 7, 3, 8, 3)
    lp = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    r = certified(fab, fo.max_concurrent_flow(fab))
    assert r.method == "bounds" and r.certificate.symmetry is not None, r.message
    assert r.theta == pytest.approx(lp, rel=1e-6)


@pytest.mark.parametrize("case", [(SMALL, 5, 3, 8, 3), (SMALL, 3, 2, 12, 3)], ids=str)
def test_orbit_roots_then_the_symmetric_solve(no_full_point, case):
    # The roots' routing falls short here (cut 25 against an LP of 13.3 and 44.4): the
    # symmetric LP closes it, and its answer is the full LP's.
    fab = _cluster(*case)
    lp = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    r = certified(fab, fo.max_concurrent_flow(fab))
    assert r.theta == pytest.approx(lp, rel=1e-6)


def test_a_tiny_limit_keeps_the_stage_bracket(no_full_point):
    # Too short even for the symmetry search: no root is routed and no solve runs, and the
    # answer is still the stage's bracket, the hierarchy cut above (25: a leaf's uplinks
    # over the demand leaving its hosts), proven and containing the LP's theta.
    fab = _cluster(SMALL, 5, 3, 8, 3)
    stopped = certified(fab, fo.max_concurrent_flow(fab, time_limit=1e-9), exact=False)
    exact = fo.max_concurrent_flow(fab, method="lp", bounds_first=False).theta
    cut = structural_cut_lengths(fab, fo.all_to_all(fab), GraphArrays.from_fabric(fab))[0]
    assert stopped.status == "time_limit" and stopped.method == "bounds"
    assert stopped.upper <= cut * (1 + 1e-12)
    assert stopped.lower <= exact * (1 + 1e-9) <= stopped.upper * (1 + 2e-9)


class _Clock:
    """A clock that reads 0 at the start of the call and ``later`` on every reading after."""

    def __init__(self, later):
        self.readings, self.later = 0, later

    def __call__(self):
        self.readings += 1
        return 0.0 if self.readings == 1 else self.later


def test_time_limit_counts_from_the_start_of_the_call(monkeypatch):
    # 30 s went on the work before the solve (the clock says so): of a 100 s limit the solver
    # is given the 70 s left, not 100.
    seen = []
    real = api.solve_lp

    def spy(lp, backend, time_limit=None, **options):
        seen.append(time_limit)
        return real(lp, backend, time_limit, **options)

    monkeypatch.setattr(budget, "clock", _Clock(30.0))
    monkeypatch.setattr(api, "solve_lp", spy)
    fab = fo.jellyfish(12, 4, 2, seed=5)  # the stage does not close it: a solve runs
    certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True, time_limit=100))
    assert seen == [70.0]


def test_a_limit_spent_before_the_solve_returns_the_stage(monkeypatch):
    calls = []
    monkeypatch.setattr(budget, "clock", _Clock(200.0))  # past the 100 s limit at once
    monkeypatch.setattr(api, "solve_lp", lambda *a, **k: calls.append(a))
    fab = fo.jellyfish(12, 4, 2, seed=5)
    r = certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True,
                                              time_limit=100), exact=False)
    monkeypatch.undo()
    stage = fo.max_concurrent_flow(fab, method="lp", bounds_first=True, time_limit=1e-9)
    assert not calls and r.status == "time_limit"
    assert (r.lower, r.upper) == pytest.approx((stage.lower, stage.upper), rel=1e-12)


def test_the_symmetry_search_gets_what_is_left(monkeypatch, no_full_point):
    # The search is given the 70 s left of a 100 s limit after 30 s of work, not 100.
    seen = []
    real = api.search_symmetry

    def spy(fab, time_limit=None, **options):
        seen.append(time_limit)
        return real(fab, time_limit=time_limit, **options)

    monkeypatch.setattr(budget, "clock", _Clock(30.0))
    monkeypatch.setattr(api, "search_symmetry", spy)
    fab = _cluster(SMALL, 7, 3, 8, 3)
    certified(fab, fo.max_concurrent_flow(fab, time_limit=100))
    assert seen == [70.0]


def test_a_spent_limit_keeps_the_hose_floor(monkeypatch):
    # leaf_spine(4, 2, 4) rebuilt by hand (no claim: the bounds stage is on), with the
    # stage's routing left out (ECMP_MAX_ENTRIES 0: the cut alone) and the limit spent at
    # once: nothing but the cut is proven, and the two-phase rate puts the floor. Each leaf
    # has 2 x 400 Gb/s of uplinks for 4 hosts, so the hose rate is 200 Gb/s per host; each
    # host sends 15 pairs x 1 Gb/s, so theta >= 200 / 15. The leaf's cut: its 4 hosts send
    # 4 x 12 theta over 800 Gb/s, theta <= 50 / 3 = 16.67.
    import dataclasses

    fab = fo.from_networkx(fo.leaf_spine(4, 2, 4).graph)
    monkeypatch.setattr(budget, "clock", _Clock(200.0))
    monkeypatch.setattr(problem, "ECMP_MAX_ENTRIES", 0)
    # Out of time before the full model is built: it is not (92 s at 16,384 GPUs).
    monkeypatch.setattr(brackets, "build_flow_lp", lambda *a, **k: pytest.fail("model built"))
    r = certified(fab, fo.max_concurrent_flow(fab, time_limit=100), exact=False)
    assert r.status == "time_limit"
    assert r.lower == pytest.approx(200 / 15, rel=1e-9)
    assert r.upper == pytest.approx(50 / 3, rel=1e-9)
    assert r.certificate.hose is not None and r.certificate.flow is None
    # The floor is re-proven from the two-phase rate's flows, not from the rate it claims:
    # a higher claimed hose rate changes nothing, a higher theta fails.
    hose = r.certificate.hose
    floor = dataclasses.replace(r.certificate.lower_proof, hose=dataclasses.replace(
        hose, rate_gbps=hose.rate_gbps * 1.01))
    raised = dataclasses.replace(r, certificate=dataclasses.replace(r.certificate,
                                                                    lower_proof=floor))
    assert fo.check_certificate(fab, raised).lower_ok
    louder = dataclasses.replace(r, lower=r.lower * 1.01)
    assert not fo.check_certificate(fab, louder).lower_ok
