"""Symmetry found by search: proven automorphisms, exact symmetric throughput, honest Nones."""

import random

import networkx as nx
import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow import plan as api
from fabricopt.symmetry.search import (
    FoundSymmetry,
    find_symmetry,
    search_symmetry,
    verify_found_symmetry,
    with_symmetry,
)


def rebuilt(fab, shuffle_seed=None):
    """``fab`` rebuilt by hand through from_networkx: same graph and attributes, no claim.

    With a seed, nodes, arcs and endpoints are also inserted in a shuffled order, so the
    search cannot lean on the generator's regular numbering.
    """
    graph = fab.graph
    endpoints = list(fab.endpoints)
    if shuffle_seed is not None:
        rng = random.Random(shuffle_seed)
        nodes, arcs = list(graph.nodes(data=True)), list(graph.edges(data=True))
        rng.shuffle(nodes)
        rng.shuffle(arcs)
        rng.shuffle(endpoints)
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from(arcs)
    out = fo.from_networkx(graph, endpoints=endpoints, name=fab.name + " by hand")
    assert out.symmetry is None
    return out


def is_automorphism(fab, mapping):
    """Independent check: arcs to arcs of equal capacity, endpoints to endpoints."""
    g = fab.graph
    eps = set(fab.endpoints)
    if sorted(mapping.values(), key=repr) != sorted(mapping, key=repr):
        return False
    if any((v in eps) != (mapping[v] in eps) for v in g):
        return False
    return all(g.has_edge(mapping[u], mapping[v])
               and g[mapping[u]][mapping[v]]["capacity"] == c
               for u, v, c in g.edges(data="capacity"))


def as_mapping(fab, sym, gen):
    """A generator (positions moved, their images) as a node -> node dict on ``fab``."""
    s, i = gen
    moved = {sym.nodes[a]: sym.nodes[b] for a, b in zip(s, i, strict=True)}
    return {**{v: v for v in fab.graph}, **moved}


def partition(labels):
    """The classes of a labelling ``{item: label}`` as a set of frozensets."""
    classes = {}
    for item, label in labels.items():
        classes.setdefault(label, set()).add(item)
    return {frozenset(c) for c in classes.values()}


def endpoint_partition(sym):
    """A symmetry's orbits on the endpoints (one orbit when it is transitive)."""
    if sym.endpoint_orbit is None:
        return {frozenset(sym.endpoints)}
    return partition(sym.endpoint_orbit)


def true_orbits(fab):
    """Orbits of the full automorphism group on the endpoints and on the arcs, from every
    automorphism VF2 enumerates (independent of the search; tiny graphs only)."""
    from networkx.algorithms.isomorphism import DiGraphMatcher

    eps = set(fab.endpoints)
    g = nx.DiGraph()
    g.add_nodes_from((v, {"endpoint": v in eps}) for v in fab.graph)
    g.add_edges_from((u, v, {"capacity": c}) for u, v, c in fab.graph.edges(data="capacity"))
    node_orbit = {v: {v} for v in g}
    arc_orbit = {a: {a} for a in g.edges}
    for m in DiGraphMatcher(g, g, node_match=lambda a, b: a["endpoint"] == b["endpoint"],
                            edge_match=lambda a, b: a["capacity"] == b["capacity"]
                            ).isomorphisms_iter():
        for v in g:
            node_orbit[v].add(m[v])
        for u, v in g.edges:
            arc_orbit[(u, v)].add((m[u], m[v]))
    # The images of one item under the whole group are its orbit.
    return ({frozenset(node_orbit[e]) for e in eps},
            {frozenset(o) for o in arc_orbit.values()})


def assert_refines(sub, full):
    """Every orbit of ``sub`` (a subgroup's) lies inside one orbit of ``full``."""
    for fine, coarse in ((endpoint_partition(sub), endpoint_partition(full)),
                         (partition(sub.arc_orbit), partition(full.arc_orbit))):
        assert all(any(o <= big for big in coarse) for o in fine)


# Small instances of every family (claims dropped by rebuilding); each is vertex-transitive
# on its endpoints by construction (the generator's own claim says so).
FAMILIES = [
    ("ring", {"n": 6}), ("ring", {"n": 7}),
    ("torus", {"dims": (3, 4)}), ("torus", {"dims": (3, 3, 3)}),
    ("hypercube", {"d": 3}), ("hypercube", {"d": 4}),
    ("complete", {"n": 5}),
    ("dragonfly", {"a": 2, "h": 1, "p": 2}),
    ("fat_tree", {"k": 4}), ("fat_tree", {"k": 6}),
    ("clos", {"endpoints": 24, "radix": 8}), ("clos", {"endpoints": 32, "radix": 8}),
    ("leaf_spine", {"leaves": 3, "spines": 2, "endpoints_per_leaf": 4}),
    ("leaf_spine", {"leaves": 4, "spines": 3, "endpoints_per_leaf": 2, "links_per_pair": 2}),
    ("rail_optimized", {"nodes": 4, "gpus_per_node": 2, "leaf_radix": 4}),
    ("nvswitch_domain", {"gpus": 4, "switches": 2, "links_per_gpu": 4, "link_gbps": 200}),
    ("dgx_h100", {}), ("dgx_b200", {}),
    ("nvlink_switch_system", {"nodes": 2}),
    ("nvl576", {"racks": 2, "gpus_per_rack": 4, "switches_per_rack": 2}),
    ("ualink_pod", {"accelerators": 8, "switches": 2, "ports_per_accelerator": 2}),
]


@pytest.mark.parametrize("shuffle", [None, 1], ids=["in order", "shuffled"])
@pytest.mark.parametrize(("family", "params"), FAMILIES,
                         ids=[f"{f}{sorted(p.items())}" for f, p in FAMILIES])
def test_found_symmetry_is_proven_and_exact(family, params, shuffle):
    made = fo.GENERATORS[family](**params)
    fab = rebuilt(made, shuffle)
    sym = find_symmetry(fab)
    assert isinstance(sym, FoundSymmetry)
    verify_found_symmetry(fab, sym)
    claimed = with_symmetry(fab, sym)
    assert claimed.symmetry is sym
    if fab.graph.number_of_edges() <= 100:  # VF2 takes seconds beyond fat_tree(4)'s 96 arcs
        fo.verify_symmetry(claimed)  # independent of the search
    for gen in sym.generators:
        assert is_automorphism(fab, as_mapping(fab, sym, gen))
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    assert r.method == "symmetric" and r.message.startswith("symmetry found")
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert r.theta == pytest.approx(full.theta, rel=1e-7)


def test_found_on_an_edited_fabric_that_stayed_symmetric():
    # Every leaf-spine bundle of 2 links loses 1: the edit drops the generator's claim, but
    # all leaves are still alike; the found symmetry gives the full LP's theta.
    made = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=3, links_per_pair=2)
    fab = made.without(links={(f"leaf{i}", f"spine{j}"): 1 for i in range(4) for j in range(2)})
    assert fab.symmetry is None
    assert find_symmetry(fab) is not None
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert r.theta == pytest.approx(full.theta, rel=1e-7)


def uneven_clos():
    # 24 endpoints at 2:1 on radix 8: 5 down-ports per leaf, so 5 leaves hold 5+5+5+5+4;
    # the endpoints of the short leaf are unlike the others (and the generator makes no claim).
    return fo.clos(endpoints=24, radix=8, oversubscription=2)


@pytest.mark.parametrize("make", [
    lambda: fo.from_networkx(nx.path_graph(4)),  # ends have one neighbour, middles two
    lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=4)
    .without_links([("leaf0", "spine0")]),  # leaf0's endpoints lost half their uplinks
    uneven_clos,
    lambda: fo.clos(endpoints=30, radix=8),  # 4 down-ports a leaf: 8 leaves hold 6 x 4 + 2 x 3
], ids=["path", "leaf_spine minus a link", "uneven 2:1 clos", "uneven clos"])
def test_no_transitive_symmetry_when_endpoints_are_not_alike(make):
    fab = make()
    found = search_symmetry(fab, max_endpoint_orbits=1)
    assert found.symmetry is None and found.proven
    assert "colour classes" in found.reason
    assert find_symmetry(fab, max_endpoint_orbits=1) is None
    # Without the limit the group comes back with its orbits, proven.
    full = search_symmetry(fab)
    assert full.proven and full.n_endpoint_orbits > 1
    assert full.symmetry.n_endpoint_orbits == full.n_endpoint_orbits
    assert f"{full.n_endpoint_orbits} orbits on the endpoints" in full.message
    verify_found_symmetry(fab, full.symmetry)
    # The symmetric method takes one root flow per orbit: it solves exactly, as the full LP.
    sym = fo.max_concurrent_flow(fab, method="symmetric")
    assert sym.exact and sym.certificate.symmetry is not None
    assert sym.theta == pytest.approx(fo.max_concurrent_flow(fab, method="lp").theta,
                                      rel=1e-7)
    assert fo.check_certificate(fab, sym).ok


def test_colour_alike_endpoints_without_an_automorphism():
    # Two triangles and a hexagon share degree 2 everywhere, so colour refinement cannot
    # tell the nodes apart, but no automorphism maps a triangle node into the hexagon:
    # the search must prove it rather than assume it.
    g = nx.disjoint_union(nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)),
                          nx.cycle_graph(6))
    fab = fo.from_networkx(g)
    found = search_symmetry(fab, max_endpoint_orbits=1)
    assert found.symmetry is None and found.proven
    assert "exhaustive search" in found.reason
    # The full search proves the two orbits: the 6 triangle nodes, the 6 hexagon nodes.
    sym = find_symmetry(fab)
    assert sym.n_endpoint_orbits == 2
    assert partition(sym.endpoint_orbit) == {frozenset(range(6)), frozenset(range(6, 12))}


def test_orbits_are_the_generated_group_orbits():
    # fat_tree(4): gpu-leaf, leaf-gpu, leaf-spine, spine-leaf, spine-core, core-spine are
    # the 6 arc orbits of its full automorphism group (as the generator claims).
    fab = rebuilt(fo.fat_tree(4))
    sym = find_symmetry(fab)
    assert sym.n_orbits == 6 == fo.fat_tree(4).symmetry.n_orbits


def tampered(fab, sym):
    """``sym`` with its last generator (a search result: twin swaps come first) changed by
    exchanging two images, chosen so that the independent check says it is no automorphism.
    """
    s, i = sym.generators[-1]
    for a in range(len(s)):
        for b in range(a + 1, len(s)):
            j = i.copy()
            j[[a, b]] = j[[b, a]]
            if not is_automorphism(fab, as_mapping(fab, sym, (s, j))):
                return FoundSymmetry(sym.arc_orbit, sym.group, sym.n_nodes, sym.n_arcs,
                                     sym.endpoints, nodes=sym.nodes,
                                     generators=(*sym.generators[:-1], (s, j)))
    raise AssertionError("every exchange gave an automorphism")


def test_a_wrong_automorphism_is_never_accepted():
    fab = rebuilt(fo.fat_tree(4))
    sym = find_symmetry(fab)
    with pytest.raises(fo.InvalidFabricError, match="not an automorphism"):
        verify_found_symmetry(fab, tampered(fab, sym))
    # A map that is not even a permutation (two nodes to one).
    s, i = sym.generators[-1]
    broken = FoundSymmetry(sym.arc_orbit, sym.group, sym.n_nodes, sym.n_arcs, sym.endpoints,
                           nodes=sym.nodes,
                           generators=(*sym.generators[:-1], (s, np.r_[i[1], i[1:]])))
    with pytest.raises(fo.InvalidFabricError, match="not an automorphism"):
        verify_found_symmetry(fab, broken)


def test_wrong_orbit_labels_are_rejected():
    fab = rebuilt(fo.fat_tree(4))
    sym = find_symmetry(fab)
    labels = dict(sym.arc_orbit)
    first = next(iter(labels))
    labels[first] = max(labels.values()) + 1  # split one arc off its orbit
    bad = FoundSymmetry(labels, sym.group, sym.n_nodes, sym.n_arcs, sym.endpoints,
                        nodes=sym.nodes, generators=sym.generators)
    with pytest.raises(fo.InvalidFabricError, match="orbit labels"):
        verify_found_symmetry(fab, bad)
    # Generators that do not reach every endpoint: keep only the twin swaps.
    few = FoundSymmetry(sym.arc_orbit, sym.group, sym.n_nodes, sym.n_arcs, sym.endpoints,
                        nodes=sym.nodes, generators=sym.generators[:sym.n_twin_swaps])
    with pytest.raises(fo.InvalidFabricError, match="every endpoint"):
        verify_found_symmetry(fab, few)


def test_checker_rejects_a_result_whose_found_symmetry_is_tampered():
    from dataclasses import replace

    fab = rebuilt(fo.fat_tree(4))
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    sym = r.certificate.symmetry
    roots = replace(r.certificate.lower_proof, symmetry=tampered(fab, sym))
    r.certificate = replace(r.certificate, lower_proof=roots)
    check = fo.check_certificate(fab, r)
    assert not check.lower_ok and check.lower == 0.0
    assert check.upper_ok  # the distance bound needs no symmetry


def test_search_honours_its_time_limit():
    # fat_tree(4) needs a search beyond its twin swaps (above: 15 generators, 10 of them
    # twin swaps); a limit that has passed before the first step stops it, and what is left
    # is the group of the twin swaps: the GPUs of each leaf, 8 orbits of 2 (4 pods x 2 leaves).
    fab = rebuilt(fo.fat_tree(4))
    found = search_symmetry(fab, time_limit=1e-9)
    assert not found.proven and "time limit" in found.reason and "time limit" in found.message
    sym = found.symmetry
    verify_found_symmetry(fab, sym)
    assert len(sym.generators) == sym.n_twin_swaps == found.n_twin_swaps
    assert found.n_endpoint_orbits == 8
    assert_refines(sym, find_symmetry(fab))
    # Asked for a transitive group, it cannot say there is none: it gave up.
    gave_up = search_symmetry(fab, time_limit=1e-9, max_endpoint_orbits=1)
    assert gave_up.symmetry is None and not gave_up.proven and "gave up" in gave_up.reason


def test_search_honours_its_work_limit():
    # A limit in search nodes, not seconds: fat_tree(4) needs a search beyond its twin swaps,
    # and one node is not enough, so the search stops with a sound subgroup, the same one on
    # every run (and on any machine).
    fab = rebuilt(fo.fat_tree(4))
    runs = [search_symmetry(fab, max_nodes=1) for _ in range(2)]
    found = runs[0]
    assert not found.proven and "work limit (1 search nodes)" in found.reason
    verify_found_symmetry(fab, found.symmetry)
    assert_refines(found.symmetry, find_symmetry(fab))
    assert found.n_endpoint_orbits == runs[1].n_endpoint_orbits > 1
    assert found.n_generators == runs[1].n_generators
    with pytest.raises(fo.InvalidParameterError, match="max_nodes"):
        search_symmetry(fab, max_nodes=0)


def test_auto_finds_the_symmetry_only_when_the_lp_is_large(monkeypatch):
    fab = rebuilt(fo.fat_tree(4))
    small = fo.max_concurrent_flow(fab)
    # 1,536 nonzeros: below FIND_SYMMETRY_NONZEROS (the bounds stage may answer first)
    assert small.method in ("lp", "bounds")
    monkeypatch.setattr(api, "FIND_SYMMETRY_NONZEROS", 0)
    found = certified(fab, fo.max_concurrent_flow(fab, bounds_first=False))
    assert found.method == "symmetric" and "symmetry found" in found.message
    assert found.theta == pytest.approx(small.theta, rel=1e-7)
    # Traffic that is not uniform all-to-all is not invariant: no search, the full LP.
    t = fo.permutation(fab, seed=1)
    assert fo.max_concurrent_flow(fab, t, bounds_first=False).method == "lp"


def test_auto_on_a_failed_fabric_keeps_the_full_lp(monkeypatch):
    # Several endpoint orbits: the symmetric method takes one, so auto asks the search for a
    # transitive group only (stopping at the colour classes) and solves the full LP as before.
    fab = fo.fat_tree(4).without_links([("leaf0", "spine0.0")])
    plain = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    seen = []
    real = api.search_symmetry

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(api, "FIND_SYMMETRY_NONZEROS", 0)
    monkeypatch.setattr(api, "search_symmetry", spy)
    # Without the bounds stage, which closes this fabric before any search.
    r = certified(fab, fo.max_concurrent_flow(fab, bounds_first=False))
    assert r.method in ("lp", "bounds") and r.certificate.symmetry is None
    assert "symmetry" not in r.message
    assert r.theta == pytest.approx(plain.theta, rel=1e-9)
    assert len(seen) == 1 and seen[0].symmetry is None and "colour classes" in seen[0].reason
    # A search that stopped at its time limit with a subgroup of several orbits is not used.
    monkeypatch.setattr(api, "search_symmetry",
                        lambda f, **kw: real(f, time_limit=1e-9))
    r = certified(fab, fo.max_concurrent_flow(fab))
    assert r.method in ("lp", "bounds") and r.certificate.symmetry is None


def test_bad_arguments():
    with pytest.raises(fo.InvalidParameterError, match="find_symmetry.*fab"):
        find_symmetry(nx.path_graph(3))
    with pytest.raises(fo.InvalidParameterError, match="time_limit"):
        find_symmetry(fo.ring(4), time_limit=-1)
    for bad in (0, 1.5, "one", True):
        with pytest.raises(fo.InvalidParameterError, match="search_symmetry.*max_endpoint_orbits"):
            search_symmetry(fo.ring(4), max_endpoint_orbits=bad)


@pytest.mark.parametrize("graph", [
    nx.petersen_graph(),              # vertex-transitive but not a Cayley graph
    nx.dodecahedral_graph(),          # 20 nodes, arc-transitive
    nx.circulant_graph(12, [1, 5]),   # rotations of Z_12 at least
], ids=["petersen", "dodecahedron", "circulant"])
def test_found_on_classic_vertex_transitive_graphs(graph):
    fab = fo.from_networkx(graph)
    sym = find_symmetry(fab)
    assert sym is not None
    fo.verify_symmetry(with_symmetry(fab, sym))
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert r.theta == pytest.approx(full.theta, rel=1e-7)


def test_random_regular_graph_has_no_symmetry():
    # Every node has degree 3, so colour refinement alone cannot split the endpoints; the
    # search proves no automorphism maps the first node onto the second (a random cubic
    # graph on 20 nodes has, with this seed, no such symmetry).
    fab = fo.from_networkx(nx.random_regular_graph(3, 20, seed=1))
    found = search_symmetry(fab, max_endpoint_orbits=1)
    assert found.symmetry is None and found.proven and "exhaustive search" in found.reason
    # Its orbits, proven one exhaustive search at a time, are those VF2 finds.
    sym = find_symmetry(fab)
    truth_endpoints, truth_arcs = true_orbits(fab)
    assert partition(sym.endpoint_orbit) == truth_endpoints
    assert partition(sym.arc_orbit) == truth_arcs


def _capacity_bump(graph, u, v, capacity=2.0):
    """``graph`` (undirected, unit capacities) with the link ``u - v`` at ``capacity``."""
    g = nx.Graph(graph)
    nx.set_edge_attributes(g, 1.0, "capacity")
    g[u][v]["capacity"] = capacity
    return g


def _two_leaf_gpus():
    # Two GPUs under each of three leaves, two spines; one leaf-spine link fails.
    return fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2).without_links(
        [("leaf0", "spine0")])


IRREGULAR = [
    ("path", lambda: fo.from_networkx(nx.path_graph(5))),
    ("star, hub too", lambda: fo.from_networkx(nx.star_graph(4))),
    ("ring with a fat link", lambda: fo.from_networkx(_capacity_bump(nx.cycle_graph(8), 0, 1))),
    ("cube minus an edge", lambda: fo.from_networkx(
        nx.restricted_view(nx.hypercube_graph(3), [], [((0, 0, 0), (0, 0, 1))]))),
    ("petersen minus an edge", lambda: fo.from_networkx(
        nx.restricted_view(nx.petersen_graph(), [], [(0, 1)]))),
    ("grid 3x4", lambda: fo.from_networkx(nx.grid_2d_graph(3, 4))),
    ("torus minus a link", lambda: fo.torus((3, 4)).without_links([("n0.0", "n0.1")])),
    ("leaf-spine minus a link", _two_leaf_gpus),
    ("triangles and hexagon", lambda: fo.from_networkx(nx.disjoint_union_all(
        [nx.cycle_graph(3), nx.cycle_graph(3), nx.cycle_graph(6)]))),
    ("some endpoints", lambda: fo.from_networkx(nx.cycle_graph(6), endpoints=[0, 1, 3])),
    ("lollipop", lambda: fo.from_networkx(nx.lollipop_graph(4, 3))),
]


@pytest.mark.parametrize("make", [m for _, m in IRREGULAR], ids=[n for n, _ in IRREGULAR])
def test_orbits_are_the_full_groups_on_irregular_fabrics(make):
    fab = make()
    found = search_symmetry(fab)
    assert found.proven
    sym = found.symmetry
    verify_found_symmetry(fab, sym)
    truth_endpoints, truth_arcs = true_orbits(fab)
    assert endpoint_partition(sym) == truth_endpoints
    assert found.n_endpoint_orbits == len(truth_endpoints) == sym.n_endpoint_orbits
    assert (sym.endpoint_orbit is None) == (len(truth_endpoints) == 1)
    assert partition(sym.arc_orbit) == truth_arcs
    for gen in sym.generators:
        assert is_automorphism(fab, as_mapping(fab, sym, gen))


def test_a_forged_endpoint_orbit_is_rejected():
    fab = _two_leaf_gpus()
    sym = find_symmetry(fab)
    # leaf0 lost an uplink: its 2 GPUs are one orbit, the 4 GPUs of leaf1 and leaf2 another.
    assert endpoint_partition(sym) == {frozenset({"g0", "g1"}),
                                       frozenset({"g2", "g3", "g4", "g5"})}

    def forged(endpoint_orbit):
        return FoundSymmetry(sym.arc_orbit, sym.group, sym.n_nodes, sym.n_arcs, sym.endpoints,
                             endpoint_orbit=endpoint_orbit, nodes=sym.nodes,
                             generators=sym.generators, n_twin_swaps=sym.n_twin_swaps)

    merged = dict.fromkeys(fab.endpoints, 0)            # claims one orbit by label
    split = {**sym.endpoint_orbit, "g5": 7}             # splits an orbit
    for bad in (merged, split):
        with pytest.raises(fo.InvalidFabricError, match="endpoint orbit labels"):
            verify_found_symmetry(fab, forged(bad))
    with pytest.raises(fo.InvalidFabricError, match="every endpoint"):
        verify_found_symmetry(fab, forged(None))        # claims transitive
    missing = {e: o for e, o in sym.endpoint_orbit.items() if e != "g0"}
    with pytest.raises(fo.InvalidFabricError, match="no orbit"):
        verify_found_symmetry(fab, forged(missing))
    # Relabelled alike, the same partition passes.
    verify_found_symmetry(fab, forged({e: f"orbit {o}" for e, o in sym.endpoint_orbit.items()}))


@pytest.mark.parametrize("fmt", ["json", "graphml"])
def test_found_endpoint_orbits_round_trip_through_files(tmp_path, fmt):
    fab = _two_leaf_gpus()
    sym = find_symmetry(fab)
    path = tmp_path / f"failed.{fmt}"
    write, read = ((fo.write_json, fo.read_json) if fmt == "json"
                   else (fo.write_graphml, fo.read_graphml))
    write(with_symmetry(fab, sym), path)
    back = read(path)
    assert isinstance(back.symmetry, FoundSymmetry)  # re-proven from its generators on read
    verify_found_symmetry(back, back.symmetry)
    # GraphML names nodes by strings; these names print as themselves.
    assert endpoint_partition(back.symmetry) == endpoint_partition(sym)
    assert partition(back.symmetry.arc_orbit) == partition(sym.arc_orbit)
    # A file whose graph was edited loses the claim rather than keep a wrong one: a
    # leaf1-spine0 link at another capacity breaks the generator that swaps leaf1 and leaf2.
    text = path.read_text()
    if fmt == "json":
        import json

        data = json.loads(text)
        for edge in data["edges"]:
            if (edge["source"], edge["target"]) in {("leaf1", "spine0"), ("spine0", "leaf1")}:
                edge["capacity"] *= 2
        path.write_text(json.dumps(data))
        assert read(path).symmetry is None


def test_a_search_stopped_midway_returns_a_sound_subgroup(monkeypatch):
    from fabricopt.symmetry import search as symmetry_search

    # A 3 x 4 torus minus a link: the search needs 2 generators (no twins), the first found
    # at its first step.
    fab = rebuilt(fo.torus((3, 4)).without_links([("n0.0", "n0.1")]), shuffle_seed=2)
    full = search_symmetry(fab)
    assert full.proven
    calls = {"n": 0}
    real_tick = symmetry_search._Search.tick

    def tick(self):
        calls["n"] += 1
        if calls["n"] > 1:  # gives up at the second step of the search, as a deadline would
            raise symmetry_search._GiveUp
        real_tick(self)

    monkeypatch.setattr(symmetry_search._Search, "tick", tick)
    part = search_symmetry(fab)
    assert not part.proven and "time limit" in part.reason
    sym = part.symmetry
    verify_found_symmetry(fab, sym)  # its generators are automorphisms, its orbits theirs
    assert sym.n_twin_swaps < len(sym.generators) < len(full.symmetry.generators)
    assert_refines(sym, full.symmetry)
    assert part.n_endpoint_orbits > full.n_endpoint_orbits
