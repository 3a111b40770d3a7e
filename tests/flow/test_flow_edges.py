"""Edges of max_concurrent_flow: capacities far apart, a GPU cut off in another unit, traffic
that never leaves its switch under the approximate method, and a bracket the approximate
method closes short of the gap asked."""

import networkx as nx
import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow.backends import solve_lp
from fabricopt.flow.certified import certified_result
from fabricopt.flow.units import CENTRED_SPREAD, capacity_unit
from fabricopt.graph_arrays import GraphArrays


def _relay_ring(switches=4, per_switch=4, thin=1.0, fat=4e5):
    """Switches in a ring of ``thin`` links; every GPU joined by ``fat`` links to its switch
    and the next one, so GPUs relay and the fat links carry nearly everything: capacities
    4e5 apart in one LP (valid: a solve accepts 1e9)."""
    g = nx.Graph()
    gpus = []
    for i in range(switches):
        g.add_edge(f"s{i}", f"s{(i + 1) % switches}", capacity=thin)
        for j in range(per_switch):
            gpus.append(f"g{i}_{j}")
            g.add_edge(gpus[-1], f"s{i}", capacity=fat)
            g.add_edge(gpus[-1], f"s{(i + 1) % switches}", capacity=fat)
    return fo.from_networkx(g, endpoints=gpus, name="relay ring")


def test_capacities_4e5_apart_solve_exactly():
    # Solved as given (capacities 1 and 4e5, flows near 4e5), HiGHS's absolute tolerances
    # left the thin arcs' rows under the rounding of the fat ones: status "Unknown", and the
    # result read numerical_error with lower 0 (method="auto": inexact). Centred on the
    # geometric middle of the two ends (2**9 here), the full LP is exact and agrees with the
    # symmetric LP (one root flow per orbit of the ring's rotations, a different and much
    # smaller LP of the same optimum; it found 1,600,001 / 38 = 42,105.289...).
    fab = _relay_ring()
    assert capacity_unit(GraphArrays.from_fabric(fab).capacity) == 2.0 ** 9  # sqrt(4e5) = 632
    symmetric = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    for method in ("lp", "auto"):
        r = certified(fab, fo.max_concurrent_flow(fab, method=method))
        assert r.theta == pytest.approx(symmetric.theta, rel=1e-9), method
    # Any traffic: a permutation and the longest matching, exact as well.
    for traffic in (fo.permutation(fab, seed=1), fo.longest_matching(fab)):
        certified(fab, fo.max_concurrent_flow(fab, traffic, method="lp"), traffic)


def test_capacities_within_the_spread_keep_the_plain_unit():
    # Below CENTRED_SPREAD apart, Gb/s in the plain range are solved as given (unit 1): a
    # fabric of 400 Gb/s NICs and 12,800 Gb/s bundles (32 apart) is not rescaled.
    assert capacity_unit(np.array([400.0, 12_800.0])) == 1.0
    assert capacity_unit(np.array([1.0, CENTRED_SPREAD])) == 1.0
    # Just past it, the middle: sqrt(1 x 2e3) = 44.7, nearest power of two 2**5 = 32.
    assert capacity_unit(np.array([1.0, 2 * CENTRED_SPREAD])) == 32.0


@pytest.mark.parametrize("method", ["lp", "auto", "approx", "symmetric"])
def test_a_gpu_cut_off_in_bit_per_second_is_zero_with_the_pair_named(method):
    # ring(4) minus both links of n0, its capacities then written in bit/s by hand (4e11 for
    # 400 Gb/s): n0 can reach nobody, so theta = 0, proven by the distance bound (the pair
    # has no path). n0 sends nothing the injection bound can scale by; the demands were left
    # in Gb/s beside capacities divided by 2**39, under HiGHS's smallest coefficient (1e-9),
    # which dropped them and called the LP unbounded.
    fab = fo.ring(4).without(links=[("n0", "n1"), ("n0", "n3")])
    for _, _, d in fab.graph.edges(data=True):
        d["capacity"] = 4e11
    r = fo.max_concurrent_flow(fab, method=method)
    # Before: "optimal" with the pair in unreachable; now the status itself says it.
    assert r.status == "disconnected" and r.exact, r.message
    assert (r.theta, r.lower, r.upper) == (0.0, 0.0, 0.0)
    assert "n0" in r.unreachable
    assert "disconnected" in str(r) and "cannot reach" in str(r)
    assert fo.check_certificate(fab, r).ok


@pytest.mark.parametrize("demands,theta", [
    # g0 -> g1 under one leaf: it crosses g0's 400 Gb/s link up and g1's down, once each.
    ({("g0", "g1"): 1.0}, 400.0),
    # g1 also sends 2 back: g1's uplink carries 2 theta <= 400.
    ({("g0", "g1"): 1.0, ("g1", "g0"): 2.0}, 200.0),
])
def test_traffic_inside_one_leaf_by_the_approximate_method(demands, theta):
    # No pair leaves its leaf, so the LP has no commodity on the core; the approximate
    # method raised numpy's "zero-size array" ValueError from its shortest-path trees.
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)  # 400 Gb/s links
    traffic = fo.Traffic(demands)
    r = certified(fab, fo.max_concurrent_flow(fab, traffic, method="approx"), traffic)
    assert r.theta == pytest.approx(theta, rel=1e-12)
    assert r.method == "approx" and "endpoint links alone" in r.message
    assert r.theta == pytest.approx(fo.max_concurrent_flow(fab, traffic, method="lp").theta,
                                    rel=1e-12)
    # Fabric-only, nothing crosses the fabric at all: a traffic error, as for the LP.
    with pytest.raises(fo.TrafficError, match="under one switch"):
        fo.max_concurrent_flow(fab, traffic, method="approx", include_endpoint_links=False)


def test_two_gpus_of_one_dgx_by_the_approximate_method():
    # GPU 0 to GPU 1 of one DGX H100 in a cluster: 18 NVLink 4 links of 200 Gb/s to the
    # NVSwitches and a 400 Gb/s NIC, 4,000 Gb/s out of GPU 0, and each of them leads on to
    # GPU 1 by a route of its own (NVSwitch, or leaf and back), so theta = 4,000.
    fab = fo.cluster(fo.dgx_h100(), nodes=2)
    a, b = fab.endpoints[:2]
    traffic = fo.Traffic({(a, b): 1.0})
    r = certified(fab, fo.max_concurrent_flow(fab, traffic, method="approx"), traffic)
    assert r.theta == pytest.approx(4000.0, rel=1e-9)


def _first_link(fab, tier):
    eps = set(fab.endpoints)
    return next((u, v) for u, v, d in fab.graph.edges(data=True)
                if d.get("tier") == tier and u not in eps and v not in eps)


@pytest.mark.parametrize("gap", [1e-7, 1e-9])
def test_a_bracket_closed_short_of_the_gap_asked_is_optimal(gap):
    # fat_tree(4) (400 Gb/s links) missing one leaf-spine link: that leaf's 2 GPUs send
    # 2 x 14 to the 14 GPUs outside it over one 400 Gb/s uplink, so theta <= 400 / 28 =
    # 100 / 7, and the LP attains it. A gap below 1e-6 is out of the rounds' reach: they
    # stall, but the certified bracket closes to 1e-6, which is exact; the result was
    # labelled "stalled" with no theta.
    fab = fo.fat_tree(4)
    fab = fab.without_links([_first_link(fab, "leaf-spine")])
    r = certified(fab, fo.max_concurrent_flow(fab, method="approx", gap=gap))
    assert r.theta == pytest.approx(100 / 7, rel=1e-6)


@pytest.mark.parametrize("status", ["stalled", "iteration_limit", "time_limit"])
def test_a_stopped_solve_whose_proofs_meet_is_optimal(status):
    # ring(4) (unit links): theta = 8 / 4**2 = 1/2. An optimal point and its duals, labelled
    # as stopped short, still prove [1/2, 1/2]: the result is optimal with theta 1/2.
    fab = fo.ring(4, link_gbps=1.0)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    sol = solve_lp(model.lp)
    sol.status = status
    r = certified_result(model, sol, method="lp", backend="highs")
    assert r.status == "optimal" and r.theta == pytest.approx(0.5, rel=1e-9)
    assert "closed to 1e-06" in r.message
    # A point that proves less stays as the solver said.
    sol.x = sol.x * 0.5
    r = certified_result(model, sol, method="lp", backend="highs", polish=False)
    assert r.status == status and r.theta is None
