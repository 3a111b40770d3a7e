"""The numeric core against independent brute-force computations.

Every reference value here is computed from scratch on the networkx graph, with none of the
package's reductions: the textbook max-concurrent-flow LP (one commodity per ordered pair,
solved with scipy's linprog), bisection by enumerating every balanced endpoint split (each
completed by an exact networkx minimum cut), and collective cut ratios by enumerating every
node subset. The last section pins, on minimal inputs, properties that such comparisons
exposed: bounds on switches with unequal ingress and egress, the cheap bracket on a lone
demand, and a symmetry claim carried over to other endpoints.
"""

import itertools
import math
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import fabricopt as fo
from fabricopt.collectives.problem import (
    collective_problem,
    forestcoll_ratio,
    reversed_problem,
    scatter_ratio,
)
from fabricopt.collectives.results import GBPS_TO_BYTES

pytestmark = pytest.mark.fast

RTOL = 1e-6


# -- independent references -----------------------------------------------------------------
def textbook_theta(G, demands, free_arcs=()):
    """max theta s.t. theta * demands routes in DiGraph G: one commodity per ordered pair,
    a capacity row per arc (except ``free_arcs``), every node may forward."""
    nodes = list(G.nodes)
    idx = {v: i for i, v in enumerate(nodes)}
    arcs = list(G.edges)
    m, n = len(arcs), len(nodes)
    pairs = [(s, t, d) for (s, t), d in demands.items() if d > 0]
    K = len(pairs)
    nv = K * m + 1
    rows, cols, vals = [], [], []
    for k, (s, t, d) in enumerate(pairs):
        for a, (u, v) in enumerate(arcs):
            rows += [k * n + idx[u], k * n + idx[v]]
            cols += [k * m + a, k * m + a]
            vals += [1.0, -1.0]
        rows += [k * n + idx[s], k * n + idx[t]]
        cols += [K * m, K * m]
        vals += [-d, d]
    A_eq = sp.csr_matrix((vals, (rows, cols)), shape=(K * n, nv))
    free = set(free_arcs)
    capped = [a for a, e in enumerate(arcs) if e not in free]
    r_ub = [i for i, _ in enumerate(capped) for _ in range(K)]
    c_ub = [k * m + a for a in capped for k in range(K)]
    A_ub = sp.csr_matrix((np.ones(len(r_ub)), (r_ub, c_ub)), shape=(len(capped), nv))
    b_ub = np.array([G.edges[arcs[a]]["capacity"] for a in capped], dtype=float)
    c = np.zeros(nv)
    c[-1] = -1.0
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.zeros(K * n), bounds=(0, None),
                  method="highs")
    assert res.status == 0, res.message
    return -res.fun


def single_homed(fab):
    """Endpoint -> its switch, for endpoints with one link and that to a non-endpoint."""
    g, eps, out = fab.graph, set(fab.endpoints), {}
    for e in fab.endpoints:
        succ, pred = list(g.successors(e)), list(g.predecessors(e))
        if len(succ) == 1 and pred == succ and succ[0] not in eps:
            out[e] = succ[0]
    return out


def textbook_fabric(fab, traffic, include_endpoint_links=True):
    """The textbook LP; without endpoint links, single-homed endpoints' links are free and
    pairs under the same switch are dropped (the fabric-only view of docs/throughput.md)."""
    demands, free = dict(traffic.pairs), []
    if not include_endpoint_links:
        sh = single_homed(fab)
        demands = {(s, t): d for (s, t), d in demands.items()
                   if not (s in sh and t in sh and sh[s] == sh[t])}
        for e, w in sh.items():
            free += [(e, w), (w, e)]
    return textbook_theta(fab.graph, demands, free)


def random_case(seed, directed=False):
    """A random connected switch graph with integer capacities, endpoints hanging off one
    switch (mode 0), single- or dual-homed (mode 1), or with switches as endpoints too
    (mode 2), and random explicit traffic with absent and zero pairs."""
    rng = np.random.default_rng(seed)
    ns = int(rng.integers(3, 7))
    G = (nx.connected_watts_strogatz_graph(ns, 2, 0.5, seed=int(seed)) if ns > 3
         else nx.path_graph(3))
    G = nx.relabel_nodes(G, {i: f"s{i}" for i in G.nodes})
    for _ in range(int(rng.integers(0, 3))):
        u, v = rng.choice(ns, 2, replace=False)
        G.add_edge(f"s{u}", f"s{v}")
    for u, v in G.edges:
        G.edges[u, v]["capacity"] = float(rng.integers(1, 6))
    eps = []
    mode = int(rng.integers(0, 3))
    for i in range(int(rng.integers(2, 7))):
        e = f"e{i}"
        eps.append(e)
        if mode == 0:
            G.add_edge(e, "s0", capacity=float(rng.integers(1, 6)))
        else:
            k = 1 if rng.random() < 0.5 else 2
            for w in rng.choice(ns, k, replace=False):
                G.add_edge(e, f"s{w}", capacity=float(rng.integers(1, 6)))
    if mode == 2:
        eps += [f"s{i}" for i in range(2)]
    if directed:  # each direction gets its own capacity
        D = nx.DiGraph()
        for u, v in G.edges:
            D.add_edge(u, v, capacity=float(rng.integers(1, 6)))
            D.add_edge(v, u, capacity=float(rng.integers(1, 6)))
        G = D
    fab = fo.from_networkx(G, endpoints=eps, name=f"random({seed})")
    demands = {}
    for s, t in itertools.permutations(eps, 2):
        demands[(s, t)] = 0.0 if rng.random() < 0.3 else float(rng.integers(1, 4))
    if not any(demands.values()):
        demands[(eps[0], eps[1])] = 1.0
    return fab, fo.Traffic(demands)


def nx_min_cut(G, A, B):
    """Least capacity leaving a node set that holds A and none of B (networkx, exact)."""
    H = nx.DiGraph()
    H.add_edges_from((u, v, {"capacity": c}) for u, v, c in G.edges(data="capacity"))
    H.add_edges_from(("__source", a) for a in A)   # no capacity attribute: infinite
    H.add_edges_from((b, "__sink") for b in B)
    return nx.minimum_cut(H, "__source", "__sink")[0]


def brute_bisection(fab, eps=None):
    """Minimum over every split into halves, both directions, of the min cut."""
    eps = list(fab.endpoints if eps is None else eps)
    best = math.inf
    for A in itertools.combinations(eps, len(eps) // 2):
        B = [e for e in eps if e not in A]
        best = min(best, nx_min_cut(fab.graph, A, B), nx_min_cut(fab.graph, B, A))
    return best


def subset_table(fab, gpus):
    """For every node subset X (as a bitmask): GPUs inside, B_out(X), B_in(X), and the
    membership matrix."""
    nodes = list(fab.graph.nodes)
    idx = {v: i for i, v in enumerate(nodes)}
    masks = np.arange(2 ** len(nodes), dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(len(nodes))) & 1).astype(bool)
    inside = bits[:, [idx[g] for g in gpus]].sum(axis=1)
    b_out = np.zeros(len(masks))
    b_in = np.zeros(len(masks))
    for u, v, c in fab.graph.edges(data="capacity"):
        b_out += c * (bits[:, idx[u]] & ~bits[:, idx[v]])
        b_in += c * (bits[:, idx[v]] & ~bits[:, idx[u]])
    return inside, b_out, b_in, bits, idx


def max_ratio(num, den):
    """max num/den with x/0 = inf for x > 0."""
    safe = np.where(den > 0, den, 1.0)
    return float(np.max(np.where(den > 0, num / safe, np.inf)))


def close(a, b, rtol=1e-9):
    return (math.isinf(a) and math.isinf(b)) or abs(a - b) <= rtol * max(abs(b), 1e-300)


# -- cases ----------------------------------------------------------------------------------
def generator_cases():
    return {
        "ring(5)": fo.ring(5),
        "torus(3,4)": fo.torus((3, 4)),
        "hypercube(3)": fo.hypercube(3),
        "complete(5)": fo.complete(5),
        "fat_tree(4)": fo.fat_tree(4),
        "leaf_spine(3,2,2)": fo.leaf_spine(3, 2, 2),
        "clos(8,4)": fo.clos(endpoints=8, radix=4, tiers=2),
        "rail_optimized(2x4)": fo.rail_optimized(nodes=2, gpus_per_node=4, leaf_radix=8),
        "dragonfly(2,1,1)": fo.dragonfly(a=2, h=1, p=1),
        "jellyfish(6,3,2)": fo.jellyfish(switches=6, network_ports=3, endpoints_per_switch=2,
                                         seed=1),
        "dgx_h100": fo.dgx_h100(),
        "nvswitch_domain(4,2,4)": fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4,
                                                     link_gbps=200),
        "nvswitch_domain(4,2,3,[2,1])": fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=3,
                                                           link_gbps=200, link_split=[2, 1]),
    }


GENERATORS = generator_cases()


def check_against_textbook(fab, tm, include, method="lp"):
    ref = textbook_fabric(fab, tm, include)
    r = fo.max_concurrent_flow(fab, tm, method=method, include_endpoint_links=include)
    assert r.status == "optimal" and r.theta is not None, r.message
    assert r.theta == pytest.approx(ref, rel=RTOL), (fab.name, method, include)
    assert r.lower <= ref * (1 + RTOL) and r.upper >= ref * (1 - RTOL)
    assert fo.check_certificate(fab, r, tm).ok


# -- 1. max concurrent flow vs the textbook LP ---------------------------------------------
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("include", [True, False])
def test_flow_random_graphs_match_textbook_lp(seed, include):
    # Odd seeds get independent capacities per direction.
    fab, tm = random_case(seed, directed=bool(seed % 2))
    sh = single_homed(fab)
    crossing = [(s, t) for s, t in tm.pairs if not (s in sh and t in sh and sh[s] == sh[t])]
    if not include and not crossing:
        with pytest.raises(fo.errors.TrafficError, match="every pair is under one switch"):
            fo.max_concurrent_flow(fab, tm, include_endpoint_links=False)
        return
    check_against_textbook(fab, tm, include)


@pytest.mark.parametrize("name", list(GENERATORS))
@pytest.mark.parametrize("include", [True, False])
def test_flow_generators_match_textbook_lp(name, include):
    fab = GENERATORS[name]
    tm = fo.all_to_all(fab)
    check_against_textbook(fab, tm, include, "lp")
    if fab.symmetry is not None:
        check_against_textbook(fab, tm, include, "symmetric")
    # Endpoint subsets and a permutation are not invariant: the full LP only.
    check_against_textbook(fab, fo.all_to_all(fab, endpoints=fab.endpoints[::2]), include)
    check_against_textbook(fab, fo.permutation(fab, seed=3), include)


def test_flow_edited_fabrics_match_textbook_lp():
    ring = fo.ring(6).without_links([("n0", "n1")])
    # A path of 6 unit links: the middle link carries 3 x 3 pairs each way, theta = 1/9.
    assert fo.max_concurrent_flow(ring).theta == pytest.approx(1 / 9, rel=RTOL)
    # The edit drops the claim; "symmetric" finds the path's reflection (3 endpoint orbits)
    # and solves one root flow per orbit, which is exact as well.
    sym = fo.max_concurrent_flow(ring, method="symmetric")
    assert sym.certificate.symmetry.n_endpoint_orbits == 3
    assert sym.theta == pytest.approx(1 / 9, rel=RTOL)
    check_against_textbook(ring, fo.all_to_all(ring), True)
    ft = fo.fat_tree(4)
    u, v = next((u, v) for u, v, d in ft.graph.edges(data=True) if d["tier"] == "leaf-spine")
    ft.graph[u][v]["capacity"] = ft.graph[v][u]["capacity"] = 100.0
    assert ft.symmetry is None  # the in-place edit drops the claim
    check_against_textbook(ft, fo.all_to_all(ft), True)
    check_against_textbook(ft, fo.all_to_all(ft), False)


def test_flow_disconnected_graph_has_zero_theta():
    G = nx.Graph()
    G.add_edges_from([("a", "s1"), ("b", "s1"), ("c", "s2"), ("d", "s2")], capacity=2.0)
    fab = fo.from_networkx(G, endpoints=["a", "b", "c", "d"])
    for include in (True, False):
        tm = fo.Traffic({("a", "b"): 1.0, ("c", "a"): 1.0})
        r = fo.max_concurrent_flow(fab, tm, include_endpoint_links=include)
        assert (r.theta, r.lower, r.upper) == (0.0, 0.0, 0.0)
        assert r.unreachable is not None
        assert fo.check_certificate(fab, r, tm).ok
    # Within one component: 2 Gb/s links, a->b crosses a's and b's link once, theta = 2.
    r = fo.max_concurrent_flow(fab, fo.Traffic({("a", "b"): 1.0}))
    assert r.theta == pytest.approx(2.0, rel=RTOL)


# -- 2. bisection vs all balanced splits -----------------------------------------------------
BISECTION_CASES = {k: GENERATORS[k] for k in
                   ["ring(5)", "hypercube(3)", "complete(5)", "leaf_spine(3,2,2)", "clos(8,4)",
                    "rail_optimized(2x4)", "dragonfly(2,1,1)", "jellyfish(6,3,2)", "dgx_h100"]}
BISECTION_CASES["ring(6)"] = fo.ring(6)
BISECTION_CASES["torus(3,3)"] = fo.torus((3, 3))


def check_bisection(fab, endpoints=None, milp_max_nodes=60):
    """Brute force enumerates C(n, n/2) splits: keep n <= 12."""
    ref = brute_bisection(fab, endpoints)
    b = fo.bisection_bandwidth(fab, endpoints=endpoints, milp_max_nodes=milp_max_nodes)
    assert b.upper_gbps >= ref * (1 - 1e-9)
    assert b.lower_gbps <= ref * (1 + 1e-9)
    if b.exact:
        assert b.upper_gbps == pytest.approx(ref, rel=1e-9)
    side = b.cut.side_a
    crossing = sum(c for u, v, c in fab.graph.edges(data="capacity")
                   if u in side and v not in side)
    assert crossing == pytest.approx(b.upper_gbps, rel=1e-9)
    assert sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links) == pytest.approx(crossing)
    n = len(fab.endpoints if endpoints is None else endpoints)
    assert sorted([len(b.cut.endpoints_a), len(b.cut.endpoints_b)]) == [n // 2, n - n // 2]
    return b


@pytest.mark.parametrize("name", list(BISECTION_CASES))
def test_bisection_generators_match_brute_force(name):
    fab = BISECTION_CASES[name]
    # Graphs of at most 60 nodes get the exact MILP, so the bracket must close.
    assert check_bisection(fab).exact
    check_bisection(fab, milp_max_nodes=0)


@pytest.mark.parametrize("seed", range(20))
def test_bisection_random_graphs_match_brute_force(seed):
    fab, _ = random_case(seed, directed=bool(seed % 2))
    assert check_bisection(fab).exact
    check_bisection(fab, milp_max_nodes=0)


def test_bisection_endpoint_subsets_match_brute_force():
    for fab in (fo.fat_tree(4), fo.torus((3, 3))):
        assert check_bisection(fab, endpoints=fab.endpoints[::2]).exact


# -- 3. collectives vs every node subset -----------------------------------------------------
COLLECTIVE_CASES = {k: GENERATORS[k] for k in
                    ["ring(5)", "hypercube(3)", "complete(5)", "leaf_spine(3,2,2)",
                     "dragonfly(2,1,1)", "dgx_h100", "nvswitch_domain(4,2,3,[2,1])"]}
COLLECTIVE_CASES["torus(3,3)"] = fo.torus((3, 3))
for _seed in range(24):
    _fab = random_case(_seed, directed=bool(_seed % 2))[0]
    if _fab.graph.number_of_nodes() <= 14:
        COLLECTIVE_CASES[_fab.name + (" directed" if _seed % 2 else "")] = _fab


@pytest.mark.parametrize("name", list(COLLECTIVE_CASES))
def test_collective_cut_ratios_match_brute_force(name):
    fab = COLLECTIVE_CASES[name]
    size = 2.0**30
    subsets = [tuple(fab.endpoints)]
    if len(fab.endpoints) >= 4:
        subsets.append(tuple(fab.endpoints[::2]))
    for eps in subsets:
        inside, b_out, b_in, bits, idx = subset_table(fab, eps)
        some = (inside > 0) & (inside < len(eps))
        p = collective_problem(fab, eps)
        # All-gather: max |X cap G| / B_out(X); reduce-scatter: the same with B_in.
        ag, ag_side, _ = forestcoll_ratio(p)
        rs, _, _ = forestcoll_ratio(reversed_problem(p))
        assert close(ag, max_ratio(inside[some], b_out[some]))
        assert close(rs, max_ratio(inside[some], b_in[some]))
        side_ratio = np.array([ag_side[idx[v]] for v in fab.graph.nodes])
        mask = int(np.dot(side_ratio.astype(np.int64), 2 ** np.arange(len(side_ratio))))
        assert close(ag, max_ratio(inside[mask:mask + 1], b_out[mask:mask + 1]))
        # Any-scheme cut: min over GPU-separating X of min(B_out, B_in).
        cut = float(np.min(np.minimum(b_out[some], b_in[some])))
        c = fo.collective_bounds(fab, "all_reduce", message_bytes=size, endpoints=eps,
                                 in_network_reduction=False)
        bounds = {b.name: b for b in c.bounds}
        t_cut = size / (cut * GBPS_TO_BYTES) if cut > 0 else math.inf
        assert close(bounds["any-scheme cut"].time_s, t_cut)
        assert close(bounds["all-gather optimum"].time_s, size / len(eps) * ag / GBPS_TO_BYTES)
        assert c.achievable_time_s is None or c.lower_time_s <= c.achievable_time_s * (1 + 1e-9)
        # Scatter from the first participant: max over X holding it of |G \ X| / B_out(X).
        root = idx[eps[0]]
        has_root = bits[:, root] & (inside < len(eps))
        sc, _, _ = scatter_ratio(p, p.gpus[0])
        assert close(sc, max_ratio(len(eps) - inside[has_root], b_out[has_root]))
        # Broadcast: lower <= achievable; the root cut is a real root-separating cut.
        bc = fo.collective_bounds(fab, "broadcast", message_bytes=size, endpoints=eps)
        root_cut = float(np.min(b_out[has_root]))
        assert bc.bounds[0].time_s <= size / (root_cut * GBPS_TO_BYTES) * (1 + 1e-9)
        assert bc.achievable_time_s is None or bc.lower_time_s <= bc.achievable_time_s * (1 + 1e-9)
        if fab.symmetry is None:  # without a claim every other GPU is tried: exact
            assert close(bc.bounds[0].time_s, size / (root_cut * GBPS_TO_BYTES))


def test_collective_in_network_reduction_ordering():
    for fab in (fo.dgx_h100(), GENERATORS["nvswitch_domain(4,2,4)"]):
        c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
        assert c.in_network_reduction
        assert c.lower_time_s <= c.achievable_time_s


# -- minimal inputs for properties the comparisons exposed ----------------------------------
def asymmetric_star():
    """4 GPUs on one forwarding switch; GPU->switch 1 Gb/s, switch->GPU 10 Gb/s."""
    D = nx.DiGraph()
    for i in range(4):
        D.add_edge(f"g{i}", "sw", capacity=1.0)
        D.add_edge("sw", f"g{i}", capacity=10.0)
    return fo.from_networkx(D, endpoints=[f"g{i}" for i in range(4)]).validate()


def test_allgather_on_a_switch_with_less_ingress_than_egress_claims_no_achievable_time():
    fab = asymmetric_star()
    # S = 8e9 B = 64 Gb, chunk 16 Gb: each GPU must receive 3 x 16 = 48 Gb, 192 Gb in all.
    # Everything arrives from the switch, which only forwards, so all 192 Gb must enter it
    # over its in-arcs of 4 x 1 Gb/s: no all-gather takes less than 48 s (a ring takes 48 s).
    c = fo.collective_bounds(fab, "all_gather", message_bytes=8e9)
    # The cut bound: max over GPU sets X of |X| x 16 Gb / B_out(X); one GPU (1 x 16 / 1) and
    # all four (4 x 16 / 4) both give 16 s. The switch is unbalanced (4 Gb/s in, 40 out), so
    # this bound is not reached (48 s above) and no achievable time is claimed.
    assert c.lower_time_s == pytest.approx(16.0, rel=RTOL)
    assert c.achievable_time_s is None


def test_allreduce_on_a_switch_with_less_ingress_than_egress_claims_nothing_below_its_bound():
    fab = asymmetric_star()
    # Volume bound 2(n-1)/n S per GPU over 1 Gb/s egress: 2 x 3/4 x 64 Gb = 96 s (lower).
    # Reduce-scatter + all-gather cut optima add to 48 + 16 = 64 s < 96 s: on this unbalanced
    # switch they are not a schedule, so no achievable time is claimed.
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=8e9,
                             in_network_reduction=False)
    assert c.lower_time_s == pytest.approx(96.0, rel=RTOL)
    assert c.achievable_time_s is None


def test_cheap_bracket_is_silent_for_an_endpoint_that_only_receives(monkeypatch):
    import fabricopt.flow.api as api
    import fabricopt.flow.plan as plan

    fab = fo.leaf_spine(2, 1, 2)
    a, b = fab.endpoints[0], fab.endpoints[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = api.cheap_bracket(fab, fo.Traffic({(a, b): 1.0}))
        # method="auto" on a fabric too large for the LP takes the approximate method.
        monkeypatch.setattr(plan, "MAX_AUTO_NONZEROS", 0)
        auto = fo.max_concurrent_flow(fab, fo.Traffic({(a, b): 1.0}), bounds_first=False)
        # The bounds stage closes it first (the path's links are the cut), silently too.
        first = fo.max_concurrent_flow(fab, fo.Traffic({(a, b): 1.0}))
    # a sends 1 Gb/s over one 400 Gb/s link, b receives it over another: theta <= 400, and
    # the path a-leaf-spine-leaf-b of 400 Gb/s links carries 400, so 400 is the optimum.
    assert r.status == "not_solved" and r.lower == 0.0 and r.upper == pytest.approx(400.0)
    assert auto.method == "approx"
    assert first.method == "bounds" and first.theta == pytest.approx(400.0)
    assert auto.lower <= 400.0 * (1 + 1e-9) and 400.0 <= auto.upper * (1 + 1e-9)


def test_a_symmetry_claim_for_other_endpoints_is_dropped():
    ft = fo.fat_tree(4)
    fab = fo.Fabric(ft.graph, endpoints=ft.endpoints[:6], symmetry=ft.symmetry)
    assert fab.symmetry is None
    tm = fo.all_to_all(fab)
    ref = textbook_fabric(fab, tm)   # 80: the 6 hosts are not one orbit of any automorphism
    r = fo.max_concurrent_flow(fab, tm)
    assert r.theta == pytest.approx(ref, rel=RTOL)   # the claim's orbits would give 213.33
