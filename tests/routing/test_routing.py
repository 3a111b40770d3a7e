"""Routing as deployed: ECMP, WCMP, hashing and static tables against hand derivations, the
LP optimum and flow conservation."""

import itertools
import math

import matplotlib
import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.routing import ROUTINGS, rank_order, tree_traffic

matplotlib.use("Agg")


def conservation(fab, tm, r):
    """Node balance of the routed loads: out - in = theta x (sent - received) at every node,
    and no arc (nor member link of a bundle) above its capacity; return the largest
    utilization of a member link."""
    out_minus_in = {v: 0.0 for v in fab.graph}
    for (u, v), gbps in r.link_load.items():
        out_minus_in[u] += gbps
        out_minus_in[v] -= gbps
        assert gbps <= fab.graph[u][v]["capacity"] * (1 + 1e-9)
    expected = {v: 0.0 for v in fab.graph}
    for (s, t), d in tm.items():
        expected[s] += r.theta * d
        expected[t] -= r.theta * d
    scale = max(r.link_load.values())
    for v in fab.graph:
        assert out_minus_in[v] == pytest.approx(expected[v], abs=1e-9 * scale)
    for arc, util in r.port_utilization.items():
        # A bundle's busiest member carries at least the bundle's average.
        assert r.utilization[arc] * (1 - 1e-9) <= util <= 1 + 1e-9
    return max(r.port_utilization.values())


def two_paths(cap_x=2.0, cap_y=1.0):
    """Two switches A, B joined through X (links of cap_x) and through Y (cap_y); GPU a on A
    and b on B with 10 Gb/s links, so only the middle limits a -> b."""
    g = nx.Graph()
    g.add_edge("a", "A", capacity=10.0)
    g.add_edge("b", "B", capacity=10.0)
    for mid, cap in (("X", cap_x), ("Y", cap_y)):
        g.add_edge("A", mid, capacity=cap)
        g.add_edge(mid, "B", capacity=cap)
    return fo.from_networkx(g, endpoints=["a", "b"], name="two paths")


@pytest.mark.parametrize("k", [4, 6])
def test_ecmp_fat_tree_all_to_all_is_optimal(k):
    # k-ary fat-tree, N = k^3/4 GPUs, 400 Gb/s links, unit all-to-all. Per unit of theta:
    # a GPU link carries N - 1; an edge->agg link carries (k/2 GPUs x (N - k/2) destinations
    # outside the edge) / (k/2 up-links) = N - k/2; an agg->core link carries
    # ((k/2)^2 GPUs x (N - k^2/4) outside the pod) / ((k/2)^2 links) = N - k^2/4; down links
    # the same by symmetry. The GPU link is the most loaded: theta = 400 / (N - 1), which is
    # the LP optimum (the GPU link is a cut every GPU's traffic crosses).
    fab = fo.fat_tree(k)
    n = k**3 // 4
    r = fo.routed_flow(fab, routing="ecmp", optimum=True)
    assert r.theta == pytest.approx(400 / (n - 1), rel=1e-12)
    assert r.optimum.theta == pytest.approx(r.theta, rel=1e-6)
    assert r.efficiency == pytest.approx(1.0, rel=1e-6)
    assert r.binding_tier == "gpu-leaf"
    util = conservation(fab, fo.all_to_all(fab), r)
    assert util == pytest.approx(1.0)
    # The edge->agg links at theta: (N - k/2) x theta / 400 = (N - k/2) / (N - 1).
    assert r.tiers["leaf-spine"].max_utilization == pytest.approx((n - k / 2) / (n - 1))


def test_ecmp_below_optimum_on_unequal_paths_and_wcmp_recovers():
    # a -> b over A-X-B (2 Gb/s) and A-Y-B (1 Gb/s), demand 1 Gb/s. Max flow = 2 + 1 = 3, so
    # the optimum is theta = 3. ECMP halves the flow at A: each path carries theta / 2, and
    # Y's 1 Gb/s stops it at theta = 2 (efficiency 2/3). WCMP splits 2:1, loads 2/3 and 1/3
    # per unit: both paths fill at theta = 3.
    fab = two_paths()
    tm = fo.Traffic({("a", "b"): 1.0})
    ecmp = fo.routed_flow(fab, tm, routing="ecmp", optimum=True)
    wcmp = fo.routed_flow(fab, tm, routing="wcmp", optimum=True)
    assert ecmp.optimum.theta == pytest.approx(3.0, rel=1e-9)
    assert ecmp.theta == pytest.approx(2.0, rel=1e-12)
    assert ecmp.efficiency == pytest.approx(2 / 3, rel=1e-9)
    assert set(ecmp.bottlenecks) == {("A", "Y"), ("Y", "B")}
    assert ecmp.link_load[("A", "X")] == pytest.approx(1.0)  # theta / 2, half of X's 2 Gb/s
    assert wcmp.theta == pytest.approx(3.0, rel=1e-12)
    assert wcmp.efficiency == pytest.approx(1.0, rel=1e-9)
    for r in (ecmp, wcmp):
        conservation(fab, tm, r)


def expected_max_bin(k, p):
    """E[most loaded of p bins] for k balls thrown uniformly, by enumerating all p^k throws;
    also its variance."""
    maxima = [max(np.bincount(throw, minlength=p)) for throw in
              itertools.product(range(p), repeat=k)]
    return float(np.mean(maxima)), float(np.var(maxima))


@pytest.mark.parametrize("k, p", [(3, 2), (4, 3), (5, 4)])
def test_hashing_matches_balls_into_bins(k, p):
    # Leaf-spine with 2 leaves, p spines, k GPUs per leaf, all links 400 Gb/s; GPU i of leaf 0
    # sends to GPU i of leaf 1. Each flow's hash picks a spine uniformly at leaf 0 (the
    # way down is unique), so the leaf0->spine links see k balls in p bins; with M flows on
    # the fullest one, theta = 400 / M (a GPU link carries one flow). The mean of 400 / theta
    # over trials estimates E[M]; it must sit within 4 standard errors of the exact value.
    fab = fo.leaf_spine(leaves=2, spines=p, endpoints_per_leaf=k)
    eps = fab.endpoints
    tm = fo.Traffic({(eps[i], eps[k + i]): 1.0 for i in range(k)})
    trials = 3000
    r = fo.routed_flow(fab, tm, routing="hash", trials=trials, seed=7)
    maxima = 400 / r.thetas
    assert np.allclose(maxima, np.round(maxima))  # whole flows collide
    mean, var = expected_max_bin(k, p)
    assert abs(maxima.mean() - mean) <= 4 * math.sqrt(var / trials)
    # Every trial is bracketed: at least ceil(k/p) flows share a spine, at most all k.
    assert maxima.min() >= math.ceil(k / p) and maxima.max() <= k


def test_more_flows_per_pair_smooths_hashing():
    # One pair over p = 4 equal spines, split into f flows of 1/f each: with f = 1 the flow
    # sits on one spine (theta = 400); with f flows the fullest spine holds M/f of the demand
    # and theta = 400 f / M >= 400, reaching 4 x 400 only when the flows spread evenly.
    fab = fo.leaf_spine(leaves=2, spines=4, endpoints_per_leaf=1)
    tm = fo.Traffic({fab.endpoints[:2]: 1.0})
    single = fo.routed_flow(fab, tm, routing="hash", trials=50, seed=3)
    assert np.allclose(single.thetas, 400.0)
    many = fo.routed_flow(fab, tm, routing="hash", flows_per_pair=8, trials=50, seed=3)
    # The GPU link caps theta at 400 whatever the spread.
    assert np.allclose(many.thetas, 400.0)
    # Behind the GPU link: the busiest leaf->spine link carries between 1/4 (even spread) and
    # all of the pair's demand.
    up = [a for a in many.link_load if a[0] == "leaf0" and str(a[1]).startswith("spine")]
    share = max(many.link_load[a] for a in up) / many.theta
    assert 0.25 - 1e-12 <= share <= 1 + 1e-12


FABRICS = [
    ("fat_tree(4)", lambda: fo.fat_tree(4)),
    ("leaf_spine", lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2,
                                         links_per_pair=2)),
    ("ring(6)", lambda: fo.ring(6)),
    ("hypercube(3)", lambda: fo.hypercube(3)),
    ("two paths", two_paths),
    ("rail-only cluster", lambda: fo.cluster(fo.dgx_h100(), nodes=2,
                                             scale_out="rail_optimized", spine=False)),
    ("rail-optimized cluster", lambda: fo.cluster(fo.dgx_h100(), nodes=4,
                                                  scale_out="rail_optimized", leaf_radix=8)),
]


@pytest.mark.parametrize("name, make", FABRICS, ids=[f[0] for f in FABRICS])
@pytest.mark.parametrize("pattern", ["all-to-all", "permutation"])
def test_routed_theta_never_exceeds_optimum_and_conserves(name, make, pattern):
    # Any routing is a feasible flow at its theta, so theta <= the LP optimum; its loads
    # conserve flow at every node and fill at least one arc exactly.
    fab = make()
    tm = fo.all_to_all(fab) if pattern == "all-to-all" else fo.permutation(fab, seed=2)
    opt = fo.max_concurrent_flow(fab, tm)
    assert opt.theta is not None
    for routing in ROUTINGS:
        trials = 3 if routing == "hash" else 1
        r = fo.routed_flow(fab, tm, routing=routing, trials=trials, seed=0)
        assert r.status == "exact"
        assert r.theta <= opt.theta * (1 + 1e-9)
        assert np.all(r.thetas <= opt.theta * (1 + 1e-9))
        assert conservation(fab, tm, r) == pytest.approx(1.0)
        assert r.per_endpoint_gbps == pytest.approx(r.theta * tm.mean_out_gbps())


@pytest.mark.parametrize("routing", ["ecmp", "hash", "static"])
def test_routes_are_shortest_paths(routing):
    # On a fat-tree every route is a shortest path, so the loads add up to each demand times
    # its hop count: sum_a L_a = sum_(s,t) D(s,t) x hops(s,t) (at theta = 1).
    fab = fo.fat_tree(4)
    tm = fo.permutation(fab, seed=5)
    r = fo.routed_flow(fab, tm, routing=routing, seed=1)
    hops = dict(nx.all_pairs_shortest_path_length(fab.graph))
    expected = sum(d * hops[s][t] for (s, t), d in tm.items())
    assert sum(r.link_load.values()) / r.theta == pytest.approx(expected)


def test_scale_out_uses_the_source_nic_not_nvlink():
    # SuperPOD: GPU n0.gpu0 to n1.gpu3 (another server, another rail). A real cluster sends
    # through the NIC of the source's rail (leaf r0 -> spine -> leaf r3), not over NVLink to
    # n0.gpu3 first (which would be as short). No NVLink arc carries anything; the pair's
    # whole demand leaves on n0.gpu0's NIC link and enters on n1.gpu3's.
    fab = fo.superpod(1)
    tm = fo.Traffic({("n0.gpu0", "n1.gpu3"): 1.0})
    for routing in ROUTINGS:
        r = fo.routed_flow(fab, tm, routing=routing, seed=0)
        assert r.pairs_by_network == {"scale-out": 1}
        load = r.link_load
        nvlink = [a for a in load if fab.graph.edges[a]["tier"] == "gpu-nvswitch"]
        assert all(load[a] == 0 for a in nvlink)
        assert load[("n0.gpu0", "r0.l0")] == pytest.approx(r.theta)
        assert load[("r3.l0", "n1.gpu3")] == pytest.approx(r.theta)
        assert r.theta == pytest.approx(400.0)  # one NIC link per end, nothing shared


def test_same_server_pairs_stay_on_nvlink_striped_by_link_count():
    # Inside a DGX H100, GPU -> GPU goes over the four NVSwitches, striped by link count
    # (5, 4, 4, 5 links of 200 Gb/s: 3.6 Tb/s), whatever the network's routing policy:
    # theta = 3600 for a single pair.
    fab = fo.superpod(1)
    tm = fo.Traffic({("n0.gpu0", "n0.gpu1"): 1.0})
    for routing in ROUTINGS:
        r = fo.routed_flow(fab, tm, routing=routing, seed=0)
        assert r.pairs_by_network == {"scale-up": 1}
        assert r.theta == pytest.approx(3600.0)
        assert r.link_load[("n0.gpu0", "r0.l0")] == 0


def test_rail_only_crosses_rails_over_nvlink():
    # Rail-only: rails meet nowhere in the network, so n0.gpu0 -> n1.gpu3 has no scale-out
    # route; it takes the whole fabric, the shortest routes crossing NVLink at either end
    # (4 hops: NVLink to the rail-3 GPU then its NIC, or the NIC then NVLink).
    fab = fo.cluster(fo.dgx_h100(), nodes=2, scale_out="rail_optimized", spine=False)
    src, dst = fab.endpoints[0], fab.endpoints[8 + 3]
    r = fo.routed_flow(fab, fo.Traffic({(src, dst): 1.0}))
    assert r.pairs_by_network == {"whole fabric": 1}
    nvlink = sum(g for a, g in r.link_load.items()
                 if fab.graph.edges[a]["tier"] == "gpu-nvswitch")
    assert nvlink > 0


@pytest.mark.parametrize("shift", [1, 2, 5, 8, 13])
def test_static_d_mod_k_is_non_blocking_for_shifts_on_a_fat_tree(shift):
    # D-mod-k routes every shift permutation s -> s + shift (mod N) without two flows on one
    # link (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations
    # on Real Life Fat Trees"): theta = the 400 Gb/s link rate. fat_tree(4) numbers its
    # GPUs leaf by leaf, as the tables do.
    fab = fo.fat_tree(4)
    eps = fab.endpoints
    n = len(eps)
    tm = fo.Traffic({(eps[i], eps[(i + shift) % n]): 1.0 for i in range(n)})
    r = fo.routed_flow(fab, tm, routing="static")
    assert r.theta == pytest.approx(400.0)


def test_static_is_a_single_path_per_destination():
    # Destination-based: every switch sends all traffic for one destination out of one
    # port, so in an all-to-all each arc into a GPU's leaf... more simply, a single pair
    # uses exactly one path: 6 arcs loaded on a fat-tree across pods.
    fab = fo.fat_tree(4)
    tm = fo.Traffic({(fab.endpoints[0], fab.endpoints[-1]): 1.0})
    r = fo.routed_flow(fab, tm, routing="static")
    loaded = [a for a, g in r.link_load.items() if g > 0]
    assert len(loaded) == 6


def test_seeds_reproduce_and_differ():
    fab = fo.fat_tree(4)
    tm = fo.permutation(fab, seed=1)
    a = fo.routed_flow(fab, tm, routing="hash", trials=20, seed=11)
    b = fo.routed_flow(fab, tm, routing="hash", trials=20, seed=11)
    c = fo.routed_flow(fab, tm, routing="hash", trials=20, seed=12)
    assert np.array_equal(a.thetas, b.thetas) and a.link_load == b.link_load
    assert not np.array_equal(a.thetas, c.thetas)
    # theta is the (lower) median trial, and the distribution summarises the trials.
    assert a.theta == np.sort(a.thetas)[(20 - 1) // 2]
    d = a.distribution
    assert d["min"] <= d["p5"] <= d["median"] <= d["p95"] <= d["max"]
    assert "over 20 trials" in str(a)


def test_disconnected_pair_gives_zero():
    g = nx.Graph([("a", "b"), ("c", "d")])
    fab = fo.from_networkx(g)
    r = fo.routed_flow(fab, fo.Traffic({("a", "c"): 1.0}))
    assert r.status == "disconnected" and r.theta == 0.0
    assert r.unreachable == ("a", "c")


@pytest.mark.parametrize("kwargs, match", [
    ({"routing": "ospf"}, "routing must be one of"),
    ({"routing": "hash", "flows_per_pair": 0}, "flows_per_pair must be an integer >= 1"),
    ({"routing": "hash", "trials": 0}, "trials must be an integer >= 1"),
    ({"routing": "ecmp", "trials": 5}, "unless routing='hash'"),
    ({"routing": "static", "flows_per_pair": 2}, "unless routing='hash'"),
    ({"routing": "hash", "seed": -1}, "seed must be"),
    ({"optimum": "yes"}, "optimum must be True or False"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.routed_flow(fo.ring(4), **kwargs)


def test_bad_fabric_and_traffic():
    with pytest.raises(fo.InvalidParameterError, match="fab must be a Fabric"):
        fo.routed_flow("ring")
    with pytest.raises(fo.InvalidParameterError, match="traffic must be a Traffic"):
        fo.routed_flow(fo.ring(4), {("n0", "n1"): 1.0})
    with pytest.raises(fo.TrafficError):
        fo.routed_flow(fo.ring(4), fo.Traffic({("x", "n1"): 1.0}))


def test_result_reads_like_flow_result():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    r = fo.routed_flow(fab, routing="wcmp", optimum=True)
    text = str(r)
    for word in ("routing          wcmp", "theta", "optimum theta", "routing efficiency",
                 "binding tier"):
        assert word in text
    assert r.routing == r.method == "wcmp"
    assert r.fabric_name == fab.name and r.traffic_name == "all-to-all"
    assert set(r.tiers) == {"gpu-leaf", "leaf-spine"}


# -- collectives ---------------------------------------------------------------------------

def test_rank_orders():
    fab = fo.rail_optimized(nodes=3, gpus_per_node=2, leaf_radix=4)
    assert rank_order(fab, order="rail_aligned") == (
        "n0.g0", "n0.g1", "n1.g1", "n1.g0", "n2.g0", "n2.g1")
    random = rank_order(fab, order="random", seed=4)
    assert sorted(random) == sorted(fab.endpoints)
    assert random == rank_order(fab, order="random", seed=4)
    with pytest.raises(fo.InvalidParameterError, match="needs endpoints with 'node'"):
        rank_order(fo.ring(4), order="rail_aligned")
    with pytest.raises(fo.InvalidParameterError, match="order must be one of"):
        fo.ring_traffic(fo.ring(4), order="snake")


def test_ring_traffic_is_a_cycle():
    fab = fo.fat_tree(4)
    tm = fo.ring_traffic(fab, order="random", seed=1, gbps=2.0)
    assert len(tm) == 16 and set(tm.pairs.values()) == {2.0}
    assert all(v == 2.0 for v in tm.out_gbps().values())
    assert all(v == 2.0 for v in tm.in_gbps().values())
    assert nx.is_strongly_connected(nx.DiGraph(list(tm.pairs)))


def test_tree_traffic_double_binary_tree():
    # Each of the two trees has n - 1 edges, each loaded g/2 both ways: total demand
    # 2 trees x (n - 1) edges x 2 directions x g/2 = 2 (n - 1) g. Tree one's leaves are the
    # even ranks, so in tree two (shifted by one) the leaves are the odd ranks and every rank
    # is inner in at most one tree: no rank has more than 3 + 1 = 4 tree neighbours.
    n = 8
    fab = fo.complete(n)
    tm = tree_traffic(fab, gbps=1.0)
    assert tm.total_gbps == pytest.approx(2 * (n - 1))
    neighbours = {}
    for s, t in tm.pairs:
        neighbours.setdefault(s, set()).add(t)
    assert max(len(v) for v in neighbours.values()) <= 4
    assert len(neighbours) == n


def test_ring_busbw_equals_edge_rate():
    # Derivation (module docstring of fabricopt.routing.schedules): busbw = theta x 1 Gb/s
    # per ring edge. On complete(5) with 8 Gb/s links every ring edge is a direct link:
    # theta = 8, busbw = 8 Gb/s = 1 GB/s; time = 2 (n - 1)/n x S / (1 GB/s) = 1.6 s for 1 GB.
    g = nx.complete_graph(5)
    fab = fo.from_networkx(g, default_capacity=8.0)
    c = fo.routed_collective(fab, "all_reduce", 1e9, routing="ecmp")
    assert c.busbw_GBps == pytest.approx(1.0)
    assert c.time_s == pytest.approx(2 * 4 / 5 * 1e9 / 1e9)
    assert c.algbw_GBps == pytest.approx(1e9 / c.time_s / 1e9)
    ag = fo.routed_collective(fab, "all_gather", 1e9, routing="ecmp")
    assert ag.busbw_GBps == pytest.approx(1.0) and ag.time_s == pytest.approx(4 / 5)
    # Tree: each edge gets g/2 = 0.5 Gb/s of demand, theta = 16 (edges are direct links and
    # no link carries two tree edges here... unless it does: check against the formula).
    tree = fo.routed_collective(fab, "all_reduce", 1e9, routing="ecmp", schedule="tree")
    assert tree.time_s == pytest.approx(1e9 / (tree.routed.theta * 1e9 / 8))
    assert tree.busbw_GBps == pytest.approx(tree.algbw_GBps * 2 * 4 / 5)


def test_rail_aligned_ring_escapes_hash_collisions():
    # SuperPOD SU: a rail-aligned ring hops between servers on one rail (GPU -> leaf -> GPU,
    # no choice), so hashing cannot collide: busbw = 400 Gb/s / 8 = 50 GB/s in every trial.
    # The server-major ring (n.gpu7 -> n+1.gpu0) crosses rails through the spines, where
    # hashed flows can share a link: never better than 50, and worse in some trials.
    fab = fo.superpod(1)
    aligned = fo.routed_collective(fab, "all_reduce", 2**30, routing="hash",
                                   order="rail_aligned", trials=10, seed=1)
    assert np.allclose(aligned.busbw_GBps_trials, 50.0)
    given = fo.routed_collective(fab, "all_reduce", 2**30, routing="hash", order="given",
                                 trials=10, seed=1)
    assert np.all(given.busbw_GBps_trials <= 50.0 + 1e-9)
    assert given.busbw_GBps_trials.min() < 50.0
    assert "busbw" in str(given)


def test_routed_collective_bad_input():
    with pytest.raises(fo.InvalidParameterError, match="collective must be one of"):
        fo.routed_collective(fo.ring(4), "broadcast", 1e6)
    with pytest.raises(fo.InvalidParameterError, match="schedule='tree' is for"):
        fo.routed_collective(fo.ring(4), "all_gather", 1e6, schedule="tree")
    with pytest.raises(fo.InvalidParameterError, match="message_bytes must be"):
        fo.routed_collective(fo.ring(4), "all_reduce", 0)


def test_collective_bounds_reports_the_routed_ring_apart_from_the_bounds():
    # Four DGX H100 servers, one rail leaf of radix 8 per rail (all four servers on it).
    # A rail-aligned ring hops inside a server over NVLink and between servers on one rail
    # through one leaf (GPU -> leaf -> GPU, no choice to hash): each GPU's 400 Gb/s NIC carries
    # one ring edge, so every trial gives busbw = 400 / 8 = 50 GB/s.
    fab = fo.cluster(fo.dgx_h100(), nodes=4, leaf_radix=8)
    plain = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    aligned = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, routing="hash",
                                   order="rail_aligned", trials=8, seed=1)
    assert plain.routed is None and plain.routed_busbw_GBps is None
    assert aligned.busbw_GBps == plain.busbw_GBps  # the bounds do not move
    assert aligned.routed_busbw_GBps == pytest.approx(50.0)
    assert aligned.routed_busbw_distribution["min"] == pytest.approx(50.0)
    assert aligned.routed_busbw_distribution["max"] == pytest.approx(50.0)
    # A random ring crosses rails through the spines, where hashed flows may share links: the
    # same figures as routed_collective at the same seed, never above the bound.
    rand = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, routing="hash",
                                order="random", trials=8, seed=2)
    same = fo.routed_collective(fab, "all_reduce", 2**30, routing="hash", order="random",
                                trials=8, seed=2)
    assert np.allclose(rand.routed.busbw_GBps_trials, same.busbw_GBps_trials)
    assert rand.routed_busbw_distribution["median"] == pytest.approx(
        np.median(same.busbw_GBps_trials))
    assert np.all(same.busbw_GBps_trials <= rand.busbw_GBps * (1 + 1e-9))
    assert "routed ring" in str(rand) and "not a bound" in str(rand)


@pytest.mark.parametrize("kwargs, match", [
    ({"order": "random"}, "need routing="),
    ({"trials": 4}, "need routing="),
    ({"routing": "spray"}, "routing must be one of"),
    ({"routing": "ecmp", "order": "snake"}, "order must be one of"),
    ({"routing": "ecmp", "collective": "all_to_all"}, "ring schedule of all_reduce"),
    ({"routing": "ecmp", "concurrent": "rails"}, "concurrent must be None"),
])
def test_collective_bounds_routing_bad_input(kwargs, match):
    fab = fo.rail_optimized(nodes=2, gpus_per_node=2, leaf_radix=4)
    args = {"collective": "all_reduce", **kwargs}
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.collective_bounds(fab, args.pop("collective"), message_bytes=2**20, **args)


# -- plot ------------------------------------------------------------------------------------

def test_plot_routing_distribution(tmp_path):
    import matplotlib.pyplot as plt

    fab = fo.leaf_spine(leaves=2, spines=3, endpoints_per_leaf=4)
    tm = fo.Traffic({(fab.endpoints[i], fab.endpoints[4 + i]): 1.0 for i in range(4)})
    r = fo.routed_flow(fab, tm, routing="hash", trials=40, seed=2, optimum=True)
    fig, ax = plt.subplots()
    out = fo.plot_routing_distribution(r, ax=ax)
    assert out is ax
    assert ax.get_xlabel().startswith("routing efficiency")
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == 40  # every trial in the histogram
    fig.savefig(tmp_path / "dist.png")
    assert (tmp_path / "dist.png").stat().st_size > 0
    plt.close(fig)
    with pytest.raises(fo.InvalidParameterError, match="RoutedFlowResult"):
        fo.plot_routing_distribution(fo.max_concurrent_flow(fab, tm))


def test_cli_solve_prints_routed_theta_beside_the_optimum(capsys):
    from fabricopt.cli import main

    # fat_tree(4), permutation: the optimum is the 400 Gb/s link rate (a permutation needs
    # one NIC link each way per GPU); ECMP spreads every pair evenly and reaches it too.
    code = main(["solve", "fat_tree", "k=4", "--traffic", "permutation:1", "--routing", "ecmp",
                 "--throughput-only"])
    out = capsys.readouterr().out
    assert code == 0
    assert "routing          ecmp" in out
    assert "optimum theta    400 (routing efficiency 1)" in out


# -- one physical port per flow or destination ---------------------------------------------------
def test_hashing_and_static_see_member_links_not_a_fluid_bundle():
    # The same 128 GPUs, 16 per leaf, 16 x 400 Gb/s uplinks per leaf: one link to each of 16
    # spines, or 8 links to each of 2. ECMP hashing picks one of the 16 uplink ports per flow
    # either way, and one of the spine's ports to the destination leaf (1 of 1, or 1 of 8 on
    # one of 2 spines: the same 1/16 chance of two flows sharing a port), so the two fabrics
    # agree; static D-mod-k tables give each destination one port in both.
    wide = fo.leaf_spine(leaves=8, spines=16, endpoints_per_leaf=16, links_per_pair=1)
    bundled = fo.leaf_spine(leaves=8, spines=2, endpoints_per_leaf=16, links_per_pair=8)
    tm_wide = fo.permutation(wide, seed=3, gbps=400.0)
    # The same permutation by endpoint position.
    pos = {e: i for i, e in enumerate(wide.endpoints)}
    tm_bundled = fo.Traffic({(bundled.endpoints[pos[s]], bundled.endpoints[pos[t]]): d
                             for (s, t), d in tm_wide.items()}, name="same permutation")
    for routing in ("hash", "static"):
        trials = 50 if routing == "hash" else 1
        a = fo.routed_flow(wide, tm_wide, routing=routing, trials=trials, seed=0)
        b = fo.routed_flow(bundled, tm_bundled, routing=routing, trials=trials, seed=0)
        assert b.theta == pytest.approx(a.theta, rel=0.10), routing
        # Certificate: at theta the busiest member link of some bundle is full, and no member
        # is over (conservation() checks both).
        assert conservation(bundled, tm_bundled, b) == pytest.approx(1.0)
    # ECMP and WCMP stay fluid over a bundle: 16 ports' worth of capacity either way.
    for routing in ("ecmp", "wcmp"):
        a = fo.routed_flow(wide, tm_wide, routing=routing)
        b = fo.routed_flow(bundled, tm_bundled, routing=routing)
        assert b.theta == pytest.approx(a.theta, rel=1e-9)


def test_static_tables_spread_destinations_over_a_bundle():
    # Two leaves of 4 GPUs joined through one spine by bundles of 4 x 400 Gb/s. GPU i of leaf
    # 0 sends 400 Gb/s to GPU i of leaf 1 (destination ranks 4..7). D-mod-k on ports: the
    # leaf's uplink port is rank mod 4 (q = 1 at the leaf), the spine's downlink port rank
    # mod 4 (1 going down): four distinct ports each way, every flow at line rate.
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=4, links_per_pair=4)
    eps = list(fab.endpoints)
    tm = fo.Traffic({(eps[i], eps[4 + i]): 400.0 for i in range(4)}, name="across")
    r = fo.routed_flow(fab, tm, routing="static")
    assert r.theta == pytest.approx(1.0)
    # Hashing 4 flows onto 4 ports collides unless the draw is a permutation of the ports
    # (chance 4!/4^4 = 3/32 per hop): the median over trials is below line rate.
    h = fo.routed_flow(fab, tm, routing="hash", trials=101, seed=1)
    assert h.theta < 1.0 and h.thetas.max() <= 1.0 + 1e-12
    assert conservation(fab, tm, h) == pytest.approx(1.0)
