"""Classic generators: ring, torus, hypercube, complete, dragonfly, jellyfish.

Each generator is checked for closed-form counts, the attribute schema, isomorphism to a known
graph for degenerate parameters, its symmetry claim (proved by ``verify_symmetry``) and a clear
error for every bad argument.
"""

import itertools
import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

import fabricopt as fo
from fabricopt.cli import main


def undirected(fab):
    """The fabric as a simple undirected graph (each link's two arcs become one edge)."""
    return nx.Graph(fab.graph)


def links(fab, tier=None):
    """Number of physical links, counting each link once (arcs / 2)."""
    return sum(d["links"] for _, _, d in fab.graph.edges(data=True)
               if tier is None or d["tier"] == tier) // 2


def check_schema(fab):
    """Every node and arc carries the attributes of the data model, with consistent values."""
    fab.validate()
    g = fab.graph
    assert set(fab.endpoints) == set(fab.gpus)
    for v, d in g.nodes(data=True):
        assert d["role"] in ("gpu", "switch"), v
        if d["role"] == "gpu":
            assert d["layer"] == 0, v
        else:
            assert d["layer"] >= 1, v
            assert isinstance(d["radix"], int) and d["radix"] >= 1, v
            assert "model" in d and d["reduce"] is False, v
    for u, v, d in g.edges(data=True):
        assert isinstance(d["capacity"], float) and 0 < d["capacity"] < math.inf
        assert isinstance(d["links"], int) and d["links"] >= 1
        assert isinstance(d["tech"], str) and d["tech"]
        assert isinstance(d["tier"], str) and d["tier"]
        back = g[v][u]
        assert (back["capacity"], back["links"], back["tech"], back["tier"]) == \
            (d["capacity"], d["links"], d["tech"], d["tier"])


# -- ring ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 7, 16])
def test_ring_counts(n):
    fab = fo.ring(n)
    check_schema(fab)
    # n nodes on a cycle: n links; for n = 2 both neighbours are the same node, so one link.
    assert len(fab.endpoints) == n
    assert links(fab, "ring") == (1 if n == 2 else n)
    degrees = {d for _, d in undirected(fab).degree()}
    assert degrees == {1 if n == 2 else 2}
    assert fab.params == {"n": n, "link_gbps": 1.0}
    assert all(d["capacity"] == 1.0 and d["tech"] == "generic"
               for _, _, d in fab.graph.edges(data=True))


@pytest.mark.parametrize("n", [3, 5, 8])
def test_ring_is_cycle_and_equals_1d_torus(n):
    assert nx.is_isomorphic(undirected(fo.ring(n)), nx.cycle_graph(n))
    assert nx.is_isomorphic(undirected(fo.torus((n,))), undirected(fo.ring(n)))


def test_ring_capacity_and_tech():
    fab = fo.ring(4, link_gbps=200, tech="nvlink4")
    assert {(d["capacity"], d["tech"]) for _, _, d in fab.graph.edges(data=True)} == \
        {(200.0, "nvlink4")}


# -- torus -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [(2,), (5,), (2, 2), (2, 3), (3, 3), (4, 4), (2, 2, 2),
                                  (3, 4, 5)])
def test_torus_counts(dims):
    fab = fo.torus(dims)
    check_schema(fab)
    n = math.prod(dims)
    # A dimension of size k >= 3 gives every node two neighbours in it, so N links; size 2
    # gives one neighbour (both wrap-around links join the same pair), so N / 2 links.
    per_dim_links = [n if k >= 3 else n // 2 for k in dims]
    degree = sum(2 if k >= 3 else 1 for k in dims)
    assert len(fab.endpoints) == n
    assert links(fab) == sum(per_dim_links)
    assert {d for _, d in undirected(fab).degree()} == {degree}
    assert all(d["links"] == 1 for _, _, d in fab.graph.edges(data=True))
    tier = "ring" if len(dims) == 1 else "torus"
    assert {d["tier"] for _, _, d in fab.graph.edges(data=True)} == {tier}
    for v, d in fab.graph.nodes(data=True):
        assert v == "n" + ".".join(map(str, d["coords"]))


@pytest.mark.parametrize("dims", [(3, 3), (3, 5), (4, 6)])
def test_torus_2d_is_periodic_grid(dims):
    assert nx.is_isomorphic(undirected(fo.torus(dims)),
                            nx.grid_2d_graph(*dims, periodic=True))


def test_torus_2x2_is_c4():
    # Each size-2 dimension gives one neighbour: 4 nodes of degree 2, connected: the 4-cycle.
    assert nx.is_isomorphic(undirected(fo.torus((2, 2))), nx.cycle_graph(4))


def test_torus_3d_is_product_of_cycles():
    expected = nx.cartesian_product(nx.cartesian_product(nx.cycle_graph(3), nx.cycle_graph(4)),
                                    nx.cycle_graph(5))
    assert nx.is_isomorphic(undirected(fo.torus((3, 4, 5))), expected)


# -- hypercube -------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_hypercube_counts_and_isomorphism(d):
    fab = fo.hypercube(d)
    check_schema(fab)
    # 2**d nodes of degree d: d * 2**d / 2 = d * 2**(d-1) links.
    assert len(fab.endpoints) == 2**d
    assert links(fab, "hypercube") == d * 2 ** (d - 1)
    assert {deg for _, deg in undirected(fab).degree()} == {d}
    assert nx.is_isomorphic(undirected(fab), nx.hypercube_graph(d))


def test_hypercube_2_is_c4_and_4_ring():
    assert nx.is_isomorphic(undirected(fo.hypercube(2)), undirected(fo.torus((4,))))
    assert nx.is_isomorphic(undirected(fo.hypercube(2)), nx.cycle_graph(4))


def test_hypercube_neighbours_differ_in_one_bit():
    fab = fo.hypercube(4)
    for u, v in fab.graph.edges():
        assert bin(int(u[1:]) ^ int(v[1:])).count("1") == 1


# -- complete --------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_complete_counts_and_isomorphism(n):
    fab = fo.complete(n)
    check_schema(fab)
    # Every pair joined once: n (n - 1) / 2 links, degree n - 1.
    assert len(fab.endpoints) == n
    assert links(fab, "complete") == n * (n - 1) // 2
    assert {deg for _, deg in undirected(fab).degree()} == {n - 1}
    assert nx.is_isomorphic(undirected(fab), nx.complete_graph(n))


def test_complete_3_is_ring_3():
    assert nx.is_isomorphic(undirected(fo.complete(3)), undirected(fo.ring(3)))


# -- symmetry of the direct networks ---------------------------------------------------------

@pytest.mark.parametrize("fab, orbits", [
    # Tori: translations, reflections and permutations of equal-size dimensions, so one
    # orbit per distinct dimension size (a reflection maps + arcs onto - arcs).
    (fo.ring(2), 1),             # one link, its two arcs swapped by the reflection
    (fo.ring(5), 1),             # rotations and reflections (dihedral group)
    (fo.torus((2, 3)), 2),       # sizes 2 and 3
    (fo.torus((3, 4)), 2),       # sizes 3 and 4
    (fo.torus((3, 3)), 1),       # the swap of the two dimensions joins them
    (fo.torus((2, 2, 2)), 1),    # one size
    # Hypercube: XOR translations and bit permutations are transitive on arcs.
    (fo.hypercube(1), 1),
    (fo.hypercube(3), 1),
    (fo.hypercube(4), 1),
    (fo.complete(2), 1),
    (fo.complete(5), 1),         # the symmetric group is transitive on ordered pairs
], ids=lambda x: x.name if isinstance(x, fo.Fabric) else str(x))
def test_direct_network_symmetry_claims_hold(fab, orbits):
    fo.verify_symmetry(fab)
    assert fab.symmetry.n_orbits == orbits


# -- dragonfly -------------------------------------------------------------------------------

DRAGONFLY_SIZES = [(1, 1, 1), (1, 3, 2), (2, 1, 1), (2, 3, 2), (3, 2, 1), (4, 2, 2), (5, 3, 2)]


@pytest.mark.parametrize("a, h, p", DRAGONFLY_SIZES)
def test_dragonfly_counts(a, h, p):
    fab = fo.dragonfly(a, h, p)
    check_schema(fab)
    g = a * h + 1  # Kim et al. 2008: the largest dragonfly has a*h + 1 groups
    assert len(fab.endpoints) == a * p * g
    assert len(fab.switches) == a * g
    assert links(fab, "gpu-leaf") == a * p * g                  # one per GPU
    assert links(fab, "local") == g * a * (a - 1) // 2          # a clique per group
    # One global link per pair of groups, and a*h global ports per group: both count the same.
    assert links(fab, "global") == g * (g - 1) // 2 == a * h * g // 2
    assert links(fab) == a * p * g + g * a * (a - 1) // 2 + g * (g - 1) // 2


@pytest.mark.parametrize("a, h, p", DRAGONFLY_SIZES)
def test_dragonfly_ports_groups_and_wiring(a, h, p):
    fab = fo.dragonfly(a, h, p)
    g = fab.graph
    pairs = Counter()
    for r in fab.switches:
        d = g.nodes[r]
        assert d["layer"] == 1 and d["radix"] == p + a - 1 + h and d["model"] is None
        by_tier = Counter(g[r][v]["tier"] for v in g.successors(r))
        assert by_tier == Counter({"gpu-leaf": p, "local": a - 1, "global": h})
        for v in g.successors(r):
            tier = g[r][v]["tier"]
            same_group = g.nodes[v]["group"] == d["group"]
            assert same_group == (tier != "global"), (r, v)
            if tier == "global" and repr(r) < repr(v):
                pairs[frozenset((d["group"], g.nodes[v]["group"]))] += 1
    # Every pair of groups is joined by exactly one global link.
    groups = a * h + 1
    assert len(pairs) == groups * (groups - 1) // 2 and set(pairs.values()) == {1}
    for e in fab.endpoints:
        (router,) = g.successors(e)
        assert g.nodes[e]["group"] == g.nodes[router]["group"]


def test_dragonfly_palm_tree_wiring():
    # a=4, h=2, g=9. Router 0 of group 0, port k has index j = k and joins group
    # (0 - j - 1) mod 9 at router 4 - 1 - 0 = 3: groups 8 and 7.
    fab = fo.dragonfly(4, 2, 1)
    g = fab.graph
    glob = {v for v in g.successors("r0.0") if g["r0.0"][v]["tier"] == "global"}
    assert glob == {"r8.3", "r7.3"}
    # Router 2 of group 5: j = 4, 5 -> groups (5 - 5) = 0 and (5 - 6) mod 9 = 8, router 1.
    glob = {v for v in g.successors("r5.2") if g["r5.2"][v]["tier"] == "global"}
    assert glob == {"r0.1", "r8.1"}


def test_dragonfly_degenerate_shapes():
    # a = 1: one router per group, h + 1 groups all joined: the routers form K_(h+1).
    fab = fo.dragonfly(1, 4, 1)
    assert nx.is_isomorphic(nx.Graph(fab.graph.subgraph(fab.switches)), nx.complete_graph(5))
    # a = 2, h = 1: 3 groups; router 0 of group i joins router 1 of group i - 1, and the two
    # routers of a group are joined: a single 6-cycle.
    fab = fo.dragonfly(2, 1, 1)
    assert nx.is_isomorphic(nx.Graph(fab.graph.subgraph(fab.switches)), nx.cycle_graph(6))


def test_dragonfly_capacities_tech_model_and_params():
    fab = fo.dragonfly(2, 2, 1, link_gbps=200, global_gbps=800, switch_model="sn5600")
    by_tier = {(d["tier"], d["capacity"], d["tech"]) for _, _, d in fab.graph.edges(data=True)}
    # Default tech: the InfiniBand generation of each link rate (HDR 200, XDR 800 Gb/s).
    assert by_tier == {("gpu-leaf", 200.0, "hdr"), ("local", 200.0, "hdr"),
                       ("global", 800.0, "xdr")}
    assert {fab.graph.nodes[s]["model"] for s in fab.switches} == {"sn5600"}
    assert fab.params == {"a": 2, "h": 2, "p": 1, "link_gbps": 200.0, "global_gbps": 800.0,
                          "tech": None, "switch_model": "sn5600"}
    fab = fo.dragonfly(2, 2, 1, tech="800gbe")
    assert {d["tech"] for _, _, d in fab.graph.edges(data=True)} == {"800gbe"}
    # global_gbps defaults to link_gbps (400 Gb/s).
    assert {d["capacity"] for _, _, d in fo.dragonfly(2, 2, 1).graph.edges(data=True)} == {400.0}


# Orbit counts: GPU up + GPU down, then
#   a == 1: one global orbit (no local links)                 -> 3
#   h == 1: local + global (all group permutations)           -> 4
#   a == 2: local + one global orbit per offset d = 1..h      -> 3 + h
@pytest.mark.parametrize("a, h, p, orbits", [
    (1, 1, 1, 3), (1, 2, 2, 3), (1, 3, 1, 3),
    (2, 1, 1, 4), (2, 1, 2, 4), (3, 1, 1, 4),
    (2, 2, 1, 5), (2, 3, 1, 6), (2, 4, 1, 7),
])
def test_dragonfly_symmetry_claims_hold(a, h, p, orbits):
    fab = fo.dragonfly(a, h, p)
    fo.verify_symmetry(fab)
    assert fab.symmetry.n_orbits == orbits


@pytest.mark.parametrize("a, h, p", [(3, 2, 1), (4, 2, 2), (5, 3, 1)])
def test_dragonfly_claims_nothing_when_routers_differ(a, h, p):
    assert fo.dragonfly(a, h, p).symmetry is None


@pytest.mark.parametrize("a, h", [(3, 2), (4, 2)])
def test_dragonfly_palm_tree_not_router_transitive(a, h):
    # Why there is no claim for a >= 3, h >= 2: no automorphism of the router graph maps
    # router 0 of a group to router 1 (the reflection only pairs r with a - 1 - r).
    fab = fo.dragonfly(a, h, 1)
    routers = nx.Graph(fab.graph.subgraph(fab.switches))

    def pinned(node):
        G = routers.copy()
        nx.set_node_attributes(G, {v: v == node for v in G}, "pin")
        return G

    def same(x, y):
        return x["pin"] == y["pin"]

    assert GraphMatcher(pinned("r0.0"), pinned(f"r0.{a - 1}"), node_match=same).is_isomorphic()
    assert not GraphMatcher(pinned("r0.0"), pinned("r0.1"), node_match=same).is_isomorphic()


# -- jellyfish -------------------------------------------------------------------------------

JELLYFISH_SIZES = [(2, 1, 1), (4, 3, 2), (10, 3, 1), (16, 4, 3), (64, 6, 2), (9, 4, 1)]


def switch_graph(fab):
    return nx.Graph([(u, v) for u, v, t in fab.graph.edges(data="tier") if t == "switch-switch"])


def switch_edges(fab):
    return {frozenset(e) for e in switch_graph(fab).edges()}


@pytest.mark.parametrize("n, d, e", JELLYFISH_SIZES)
def test_jellyfish_counts(n, d, e):
    fab = fo.jellyfish(n, d, e, seed=3)
    check_schema(fab)
    assert len(fab.endpoints) == n * e
    assert len(fab.switches) == n
    assert links(fab, "gpu-leaf") == n * e
    assert links(fab, "switch-switch") == n * d // 2   # n switches of degree d, 2 ends a link
    graph = switch_graph(fab)
    assert {deg for _, deg in graph.degree()} == {d}
    assert nx.is_connected(graph) and graph.number_of_nodes() == n
    for s in fab.switches:
        assert fab.graph.nodes[s]["radix"] == d + e and fab.graph.nodes[s]["layer"] == 1
    assert fab.symmetry is None


def test_jellyfish_reproducible_from_seed():
    first = switch_edges(fo.jellyfish(16, 3, 1, seed=1))
    assert switch_edges(fo.jellyfish(16, 3, 1, seed=1)) == first
    # Seeds 1 and 2 give different graphs (they share 4 of their 24 links).
    assert switch_edges(fo.jellyfish(16, 3, 1, seed=2)) != first
    # A numpy Generator in the same state gives the same graph.
    a = fo.jellyfish(16, 3, 1, seed=np.random.default_rng(7))
    b = fo.jellyfish(16, 3, 1, seed=np.random.default_rng(7))
    assert switch_edges(a) == switch_edges(b)


def test_jellyfish_degenerate_shapes():
    # network_ports = switches - 1: the only such regular graph is complete.
    assert nx.is_isomorphic(switch_graph(fo.jellyfish(6, 5, 1, seed=0)), nx.complete_graph(6))
    # Two ports per switch, conditioned on being connected: a single cycle.
    for seed in range(5):
        assert nx.is_isomorphic(switch_graph(fo.jellyfish(12, 2, 1, seed=seed)),
                                nx.cycle_graph(12))


def test_jellyfish_capacity_tech_model():
    fab = fo.jellyfish(8, 3, 2, seed=0, link_gbps=800, switch_model="sn5600")
    assert {(d["capacity"], d["tech"]) for _, _, d in fab.graph.edges(data=True)} == \
        {(800.0, "xdr")}
    assert {fab.graph.nodes[s]["model"] for s in fab.switches} == {"sn5600"}
    assert fab.params["seed"] == 0
    fab = fo.jellyfish(8, 3, 2, seed=0, tech="ndr")
    assert {d["tech"] for _, _, d in fab.graph.edges(data=True)} == {"ndr"}


# -- registry and command line ---------------------------------------------------------------

def test_generators_registered_and_exported():
    for name in ("ring", "torus", "hypercube", "complete", "dragonfly", "jellyfish"):
        assert fo.GENERATORS[name] is getattr(fo, name)
        assert name in fo.__all__


def test_cli_shows_dragonfly_and_jellyfish(capsys):
    assert main(["show", "dragonfly", "a=2", "h=1", "p=1"]) == 0
    assert "dragonfly(a=2, h=1, p=1)" in capsys.readouterr().out
    assert main(["show", "jellyfish", "switches=8", "network_ports=3",
                 "endpoints_per_switch=1", "seed=1"]) == 0
    assert "switch-switch" in capsys.readouterr().out


# -- bad arguments ---------------------------------------------------------------------------

BAD_RATES = [0, -1, math.inf, math.nan, "x", True, None]


@pytest.mark.parametrize("call, match", [
    (lambda: fo.ring(1), r"ring\(\): n must be an integer >= 2, got 1"),
    (lambda: fo.ring(2.5), r"ring\(\): n must be an integer"),
    (lambda: fo.ring("8"), r"ring\(\): n must be an integer"),
    (lambda: fo.ring(4, tech=""), r"ring\(\): tech must be a non-empty string"),
    (lambda: fo.torus(()), r"torus\(\): dims must be a sequence of integers >= 2"),
    (lambda: fo.torus((3, 0)), r"torus\(\): dims must be a sequence of integers >= 2"),
    (lambda: fo.torus((3, 1)), r"torus\(\): dims"),
    (lambda: fo.torus(4), r"torus\(\): dims"),
    (lambda: fo.torus("44"), r"torus\(\): dims"),
    (lambda: fo.torus((3, 3), tech=5), r"torus\(\): tech must be a non-empty string"),
    (lambda: fo.hypercube(0), r"hypercube\(\): d must be an integer >= 1, got 0"),
    (lambda: fo.hypercube(-2), r"hypercube\(\): d"),
    (lambda: fo.complete(1), r"complete\(\): n must be an integer >= 2, got 1"),
    (lambda: fo.dragonfly(0, 2, 2), r"dragonfly\(\): a must be an integer >= 1, got 0"),
    (lambda: fo.dragonfly(2, 0, 2), r"dragonfly\(\): h must be an integer >= 1, got 0"),
    (lambda: fo.dragonfly(2, 2, 0), r"dragonfly\(\): p must be an integer >= 1, got 0"),
    (lambda: fo.dragonfly(2.0, 2, 2), r"dragonfly\(\): a must be an integer"),
    (lambda: fo.dragonfly(2, 2, 2, global_gbps=0), r"dragonfly\(\): global_gbps must be"),
    (lambda: fo.dragonfly(2, 2, 2, global_gbps="x"), r"dragonfly\(\): global_gbps must be"),
    (lambda: fo.dragonfly(2, 2, 2, tech=""),
     r"dragonfly\(\): tech must be None or a non-empty string"),
    (lambda: fo.dragonfly(2, 2, 2, switch_model=3),
     r"dragonfly\(\): switch_model must be None or a non-empty string"),
    (lambda: fo.jellyfish(5, 3, 1), r"jellyfish\(\): switches \* network_ports must be even"
                                     r".*got 5 \* 3 = 15"),
    (lambda: fo.jellyfish(4, 4, 1), r"jellyfish\(\): network_ports must be an integer >= 1 "
                                    r"<= 3, got 4"),
    (lambda: fo.jellyfish(4, 0, 1), r"jellyfish\(\): network_ports must be an integer >= 1"),
    (lambda: fo.jellyfish(1, 1, 1), r"jellyfish\(\): switches must be an integer >= 2"),
    (lambda: fo.jellyfish(4, 1, 1), r"jellyfish\(\): network_ports must be >= 2 when "
                                    r"switches > 2"),
    (lambda: fo.jellyfish(4, 2, 0), r"jellyfish\(\): endpoints_per_switch must be an integer"),
    (lambda: fo.jellyfish(4, 2, 1, seed=-1), r"jellyfish\(\): seed must be None, an integer"),
    (lambda: fo.jellyfish(4, 2, 1, seed=1.5), r"jellyfish\(\): seed must be"),
    (lambda: fo.jellyfish(4, 2, 1, seed="x"), r"jellyfish\(\): seed must be"),
    (lambda: fo.jellyfish(4, 2, 1, seed=True), r"jellyfish\(\): seed must be"),
    (lambda: fo.jellyfish(4, 2, 1, switch_model=""), r"jellyfish\(\): switch_model must be"),
])
def test_bad_arguments(call, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        call()


GENERATOR_CALLS = {
    "ring": lambda **kw: fo.ring(4, **kw),
    "torus": lambda **kw: fo.torus((3, 3), **kw),
    "hypercube": lambda **kw: fo.hypercube(2, **kw),
    "complete": lambda **kw: fo.complete(3, **kw),
    "dragonfly": lambda **kw: fo.dragonfly(2, 1, 1, **kw),
    "jellyfish": lambda **kw: fo.jellyfish(4, 2, 1, seed=0, **kw),
}


@pytest.mark.parametrize("name, rate", list(itertools.product(GENERATOR_CALLS, BAD_RATES)))
def test_bad_link_gbps(name, rate):
    # A number out of range is refused as such; a text that is no rate (a unit may be
    # given: 400G, 1.6T) is refused naming the forms a rate takes.
    allowed = "a rate in Gb/s" if isinstance(rate, str) else "a finite number > 0"
    with pytest.raises(fo.InvalidParameterError,
                       match=rf"{name}\(\): link_gbps must be {allowed}"):
        GENERATOR_CALLS[name](link_gbps=rate)


def test_bad_argument_errors_are_value_errors():
    # Callers that only know ValueError still catch fabricopt's parameter errors.
    with pytest.raises(ValueError):
        fo.dragonfly(0, 1, 1)


@pytest.mark.parametrize("call", [
    lambda: fo.hypercube(d=40), lambda: fo.complete(n=10**6), lambda: fo.fat_tree(k=10**4),
    lambda: fo.dragonfly(a=1000, h=1000, p=1000), lambda: fo.ring(10**12),
    lambda: fo.leaf_spine(leaves=10**6, spines=10**3, endpoints_per_leaf=10),
    lambda: fo.torus((10**6, 10**6)),
    lambda: fo.jellyfish(switches=10**8, network_ports=10, endpoints_per_switch=10, seed=1),
    lambda: fo.nvswitch_domain(gpus=10**9, switches=4, links_per_gpu=18, link_gbps=200),
])
def test_absurd_sizes_are_refused_before_building(call):
    # Each of these would need terabytes; the check runs on the closed-form counts first.
    with pytest.raises(fo.InvalidParameterError, match="would have .* nodes .* GB"):
        call()
