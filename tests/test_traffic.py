"""Traffic matrices: constructors, restriction and the errors on bad demands."""

import math

import pytest

import fabricopt as fo


def test_all_to_all_is_implicit_and_counts_pairs():
    fab = fo.torus((4, 4))
    tm = fo.all_to_all(fab, gbps=2.0)
    # 16 endpoints: 16 x 15 ordered pairs of 2 Gb/s each.
    assert tm.is_uniform and len(tm) == 240 and tm.total_gbps == 480.0
    assert tm.out_gbps()["n0.0"] == 30.0


def test_all_to_all_on_a_group_and_restrict():
    fab = fo.ring(6)
    group = ["n0", "n2", "n4"]
    tm = fo.all_to_all(fab, endpoints=group)
    assert len(tm) == 6  # 3 x 2 ordered pairs
    perm = fo.permutation(fab, seed=4)
    sub = fo.all_to_all(fab).restrict(group)
    assert set(sub.pairs) == set(tm.pairs)
    kept = {(s, t) for s, t in perm.pairs if s in group and t in group}
    if kept:
        assert set(perm.restrict(group).pairs) == kept
    else:
        with pytest.raises(fo.TrafficError, match="no demand"):
            perm.restrict(group)


def test_permutation_is_a_reproducible_derangement():
    fab = fo.hypercube(4)
    a = fo.permutation(fab, seed=7)
    b = fo.permutation(fab, seed=7)
    c = fo.permutation(fab, seed=8)
    assert a.pairs == b.pairs and a.pairs != c.pairs
    sources = [s for s, _ in a.pairs]
    targets = [t for _, t in a.pairs]
    assert sorted(sources) == sorted(targets) == sorted(fab.endpoints)
    assert all(s != t for s, t in a.pairs)


def test_longest_matching_pairs_antipodes():
    # Ring of 8: the farthest node is 4 hops away and unique, so the maximum-weight
    # assignment sends each node to its antipode. Hypercube: the complement, d hops.
    ring = fo.longest_matching(fo.ring(8))
    assert all((int(t[1:]) - int(s[1:])) % 8 == 4 for s, t in ring.pairs)
    cube = fo.longest_matching(fo.hypercube(3))
    assert all(int(s[1:]) ^ int(t[1:]) == 7 for s, t in cube.pairs)


def test_longest_matching_refuses_huge_inputs():
    with pytest.raises(fo.InvalidParameterError, match="max_endpoints"):
        fo.longest_matching(fo.ring(20), max_endpoints=10)


@pytest.mark.parametrize("demands, match", [
    ({("a", "b"): -1.0}, "finite number >= 0"),
    ({("a", "b"): math.nan}, "finite number >= 0"),
    ({("a", "b"): math.inf}, "finite number >= 0"),
    ({("a", "a"): 1.0}, "to itself"),
    ({("a", "b"): 0.0}, "empty"),
    ({}, "empty"),
    ({"ab": 1.0}, "pairs"),
])
def test_bad_demands(demands, match):
    with pytest.raises(fo.TrafficError, match=match):
        fo.Traffic(demands)


def test_unknown_endpoints_and_bad_gbps():
    fab = fo.ring(4)
    with pytest.raises(fo.TrafficError, match="unknown"):
        fo.all_to_all(fab, endpoints=["n0", "q"])
    with pytest.raises(fo.InvalidParameterError, match="gbps"):
        fo.all_to_all(fab, gbps=0)
    with pytest.raises(fo.TrafficError, match="not endpoints"):
        fo.Traffic({("n0", "q"): 1.0}).check_endpoints(fab)


def test_select_endpoints_groups():
    # 4 nodes x 2 GPUs: rail 1 is GPU 1 of each node; node 2 is one server's 2 GPUs.
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4)
    rail = fo.select_endpoints(fab, rail=1)
    assert rail == ("n0.g1", "n1.g1", "n2.g1", "n3.g1")
    assert fo.select_endpoints(fab, node=2) == ("n2.g0", "n2.g1")
    with pytest.raises(fo.TrafficError, match="no endpoint"):
        fo.select_endpoints(fab, rail=7)
    with pytest.raises(fo.InvalidParameterError, match="at least one"):
        fo.select_endpoints(fab)
    # A data-parallel all-reduce over one rail: 4 GPUs on one leaf at 400 Gb/s each.
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, endpoints=rail)
    assert c.n_endpoints == 4 and c.busbw_GBps == pytest.approx(400 / 8)


def test_errors_name_the_function_and_the_rule():
    fab = fo.ring(4)
    with pytest.raises(fo.InvalidParameterError, match=r"all_to_all\(\): fab must be a Fabric"):
        fo.all_to_all(None)
    with pytest.raises(fo.InvalidParameterError, match=r"permutation\(\): fab must be"):
        fo.permutation(None)
    with pytest.raises(fo.TrafficError, match="must not repeat, got 'n0'"):
        fo.all_to_all(fab, endpoints=["n0", "n0", "n1"])
    with pytest.raises(fo.InvalidParameterError, match=r"bisection_bandwidth\(\): time_limit"):
        fo.bisection_bandwidth(fab, time_limit=0)
    with pytest.raises(fo.InvalidParameterError, match="injection_gbps.*'nope'"):
        fab.injection_gbps("nope")
    with pytest.raises(fo.InvalidParameterError,
                       match=r"Fabric\(\): name must be None or a non-empty string"):
        fo.Fabric(fab.graph, name=5)


def test_a_name_stands_for_its_pattern_in_python_as_on_the_command_line():
    """max_concurrent_flow takes the command line's traffic words: each gives the theta of
    the pattern it names (the same as solving that Traffic), and its certificate re-proves
    against that Traffic."""
    fab = fo.leaf_spine(4, 2, 3)
    for name, pattern in (("all-to-all", fo.all_to_all(fab)),
                          ("all_to_all", fo.all_to_all(fab)),
                          ("permutation:5", fo.permutation(fab, seed=5)),
                          ("longest-matching", fo.longest_matching(fab))):
        named = fo.max_concurrent_flow(fab, name)
        given = fo.max_concurrent_flow(fab, pattern)
        assert named.theta == pytest.approx(given.theta, rel=1e-9)
        assert fo.check_certificate(fab, named, pattern).ok


@pytest.mark.parametrize("spec, says", [
    ("permutaton", "did you mean 'permutation'"),
    ("permutation:x", "seed must be an integer"),
    ("all-to-all:3", "takes no ':' suffix"),
])
def test_a_misspelt_pattern_name_is_named(spec, says):
    with pytest.raises(fo.InvalidParameterError, match=says):
        fo.max_concurrent_flow(fo.ring(4), spec)


def test_crossing_share_counts_pairs_between_scale_up_domains():
    # superpod(1): 32 DGX H100 of 8 GPUs; of a GPU's 255 peers, 7 share its NVLink domain,
    # so 248/255 of a uniform all-to-all crosses the network.
    fab = fo.superpod(1)
    assert fo.all_to_all(fab).crossing_share(fab) == pytest.approx(248 / 255, rel=1e-12)
    # An explicit traffic: two pairs inside DGX n0 (its GPUs share one NVLink domain), one
    # from n0 to n1 at 3x the demand: 3 / (1 + 1 + 3) of it crosses.
    t = fo.Traffic({("n0.gpu0", "n0.gpu1"): 1.0, ("n0.gpu1", "n0.gpu0"): 1.0,
                    ("n0.gpu0", "n1.gpu0"): 3.0})
    assert t.crossing_share(fab) == pytest.approx(3 / 5, rel=1e-12)
    # One NVLink domain: nothing crosses a network.
    box = fo.dgx_h100()
    assert fo.all_to_all(box).crossing_share(box) == 0.0


def test_crossing_share_of_every_endpoint_as_counted_by_domain():
    """A uniform traffic over the fabric's endpoints is counted by one count of the domains'
    sizes; over the same endpoints in another order, or some of them, by a count per GPU:
    the same share where the pairs are the same."""
    fab = fo.superpod(1)  # 32 DGX H100 of 8 GPUs, each DGX one NVLink domain
    eps = list(fab.endpoints)
    everyone = fo.Traffic.uniform(eps).crossing_share(fab)
    assert everyone == fo.Traffic.uniform(eps[::-1]).crossing_share(fab)  # the same pairs
    assert everyone == 248 / 255  # 32 domains of 8: (256 * 255 - 32 * 8 * 7) / (256 * 255)
    some = eps[4:]  # DGX n0 keeps 4 of its 8 GPUs: 252 GPUs
    inside = 4 * 3 + 31 * 8 * 7
    assert fo.Traffic.uniform(some).crossing_share(fab) == (252 * 251 - inside) / (252 * 251)


def test_crossing_share_refuses_endpoints_not_in_the_fabric():
    t = fo.Traffic({("x", "y"): 1.0})
    with pytest.raises(Exception, match="crossing_share"):
        t.crossing_share(fo.ring(4))


def test_all_to_all_metric_over_the_network_reads_against_the_nic():
    # Each GPU of superpod(1) has one 400 Gb/s NIC, and the intact rail-optimized pod is
    # non-blocking: the part of the all-to-all that crosses the network is exactly the
    # NIC's 400 Gb/s (411.29 x 248/255), both ends of the bracket.
    from fabricopt.study.metrics import MetricContext, compute_metrics
    row = compute_metrics(fo.superpod(1), ["all_to_all"], MetricContext())
    assert row["all_to_all_network_gbps_per_gpu"] == pytest.approx(400.0, rel=1e-9)
    assert row["all_to_all_network_gbps_per_gpu_upper"] == pytest.approx(400.0, rel=1e-9)
    assert row["all_to_all_network_gbps_per_gpu"] == pytest.approx(
        row["all_to_all_gbps_per_gpu"] * 248 / 255, rel=1e-12)
