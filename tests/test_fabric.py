"""The Fabric data model: validation, summary, symmetry staleness, export and import."""

import math

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.graph_arrays import GraphArrays
from fabricopt.symmetry_claim import Symmetry


def test_from_networkx_undirected_edge_becomes_two_arcs():
    G = nx.Graph()
    G.add_edge("a", "s", capacity=400.0)
    G.add_edge("b", "s")  # no capacity: takes default_capacity, with a warning
    with pytest.warns(UserWarning, match="1 of 2 edges lack the attribute 'capacity'"):
        fab = fo.from_networkx(G, endpoints=["a", "b"], default_capacity=100.0)
    assert fab.graph["a"]["s"]["capacity"] == fab.graph["s"]["a"]["capacity"] == 400.0
    assert fab.graph["b"]["s"]["capacity"] == 100.0
    assert fab.graph.nodes["s"]["role"] == "switch" and fab.graph.nodes["a"]["role"] == "gpu"
    assert fab.graph.number_of_edges() == 4  # 2 edges x 2 directions
    fab.validate()


def test_from_networkx_multigraph_bundles_parallel_edges():
    G = nx.MultiGraph()
    G.add_edge(0, 1, capacity=2.0)
    G.add_edge(0, 1, capacity=3.0)
    fab = fo.from_networkx(G)
    # Two parallel links of 2 and 3 Gb/s form one bundle of 5 Gb/s and 2 links.
    assert fab.graph[0][1]["capacity"] == 5.0 and fab.graph[0][1]["links"] == 2


def test_from_networkx_callable_capacity_and_every_node_an_endpoint():
    fab = fo.from_networkx(nx.path_graph(3), capacity=lambda u, v, d: 10.0 * (u + v))
    assert fab.endpoints == (0, 1, 2)
    assert fab.graph[1][2]["capacity"] == 30.0  # 10 * (1 + 2)


@pytest.mark.parametrize("kwargs, match", [
    ({"endpoints": ["nope"]}, "unknown"),
    ({"default_capacity": 0}, "default_capacity"),
    ({"default_capacity": math.inf}, "default_capacity"),
    ({"capacity": lambda u, v, d: -1.0}, "capacity of edge"),
])
def test_from_networkx_rejects_bad_input(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.from_networkx(nx.path_graph(3), **kwargs)


def test_validate_lists_every_problem():
    g = nx.DiGraph()
    g.add_node("g0", role="gpu", layer=0)
    g.add_node("g1", role="gpu", layer=0)
    g.add_node("s", role="switch", layer=1, radix=1)
    g.add_edge("g0", "s", capacity=1.0, links=1)
    g.add_edge("s", "g0", capacity=1.0, links=1)
    g.add_edge("g1", "s", capacity=0.0, links=1)  # zero capacity and no reverse arc
    with pytest.raises(fo.InvalidFabricError) as info:
        fo.Fabric(g).validate()
    text = str(info.value)
    assert "capacity must be a finite number > 0" in text
    assert "'s'->'g1' is missing" in text
    # s uses one port towards g0 (its only out-arc): within radix 1; now add a second port.
    g.add_edge("s", "g1", capacity=1.0, links=1)
    g["g1"]["s"]["capacity"] = 1.0
    with pytest.raises(fo.InvalidFabricError, match="uses 2 ports, more than its radix 1"):
        fo.Fabric(g).validate()


def test_validate_endpoint_role():
    g = nx.DiGraph()
    g.add_node("x", role="switch", layer=1)
    g.add_node("y", role="gpu", layer=0)
    g.add_edge("x", "y", capacity=1.0)
    g.add_edge("y", "x", capacity=1.0)
    with pytest.raises(fo.InvalidFabricError, match="role must be 'gpu'"):
        fo.Fabric(g, endpoints=["x"]).validate()


def test_fabric_rejects_unknown_or_repeated_endpoints():
    g = nx.DiGraph()
    g.add_node("a", role="gpu")
    with pytest.raises(fo.InvalidParameterError, match="unknown"):
        fo.Fabric(g, endpoints=["b"])
    with pytest.raises(fo.InvalidParameterError, match="repeat"):
        fo.Fabric(g, endpoints=["a", "a"])


def test_symmetry_dropped_when_graph_changes():
    fab = fo.torus((4, 4))
    assert fab.symmetry is not None
    fab.graph["n0.0"]["n0.1"]["capacity"] = 2.0  # an orbit no longer has one capacity
    assert fab.symmetry is None
    fab2 = fo.ring(6)
    fab2.graph.remove_edge("n0", "n1")
    assert fab2.symmetry is None
    assert fo.ring(6).without_links([("n0", "n1")]).symmetry is None
    assert fo.ring(6).copy().symmetry is not None
    # A claim is about one endpoint set: other endpoints, even on the same graph, drop it.
    fab3 = fo.ring(6)
    assert fo.Fabric(fab3.graph, fab3.endpoints[:3], symmetry=fab3.symmetry).symmetry is None


def test_verify_symmetry_rejects_a_wrong_claim():
    fab = fo.torus((3, 4))
    # Merge the two dimensions' orbits: sizes 3 and 4 differ, so no automorphism maps one
    # dimension onto the other and the claim must be refused.
    assert fab.symmetry.n_orbits == 2
    bad = {arc: 0 for arc in fab.symmetry.arc_orbit}
    fab._symmetry = Symmetry(bad, "wrong", fab.graph.number_of_nodes(),
                             fab.graph.number_of_edges(), frozenset(fab.endpoints))
    with pytest.raises(fo.InvalidFabricError, match="share orbit"):
        fo.verify_symmetry(fab)


def test_summary_counts_links_once_per_pair():
    s = fo.torus((4, 4)).summary()
    # 4x4 torus: 16 nodes x 2 dimensions = 32 links of 1 Gb/s; injection 4 links x 1 Gb/s.
    assert s.links_by_tier == {"torus": 32}
    assert s.capacity_gbps_by_tier == {"torus": 32.0}
    assert s.injection_gbps_min == s.injection_gbps_max == 4.0
    assert "torus" in str(s) and "32 Gb/s" in str(s)


def _same_fabric(a, b):
    assert a.name == b.name and a.params == b.params
    assert list(map(str, a.endpoints)) == list(map(str, b.endpoints))
    assert {str(v): d for v, d in a.graph.nodes(data=True)} == \
        {str(v): d for v, d in b.graph.nodes(data=True)}
    assert {(str(u), str(v)): d for u, v, d in a.graph.edges(data=True)} == \
        {(str(u), str(v)): d for u, v, d in b.graph.edges(data=True)}


def test_graphml_round_trip_keeps_every_attribute(tmp_path):
    fab = fo.torus((3, 3))  # nodes carry a list attribute (coords)
    path = tmp_path / "t.graphml"
    fo.write_graphml(fab, path)
    _same_fabric(fab, fo.read_graphml(path))


def test_json_round_trip_keeps_tuple_nodes(tmp_path):
    G = nx.grid_2d_graph(2, 3)  # tuple node names
    fab = fo.from_networkx(G, default_capacity=5.0)
    path = tmp_path / "g.json"
    fo.write_json(fab, path)
    back = fo.read_json(path)
    assert back.endpoints == fab.endpoints  # tuples come back as tuples
    assert dict(back.graph.edges) == dict(fab.graph.edges)


@pytest.mark.parametrize("gbps", [1e300, 1e-300, 4e11, 1e-12])
def test_capacities_no_link_has_are_refused_whatever_the_unit(gbps):
    # fabric.REPRESENTABLE_GBPS is 1 bit/s (1e-9 Gb/s) to 1 Eb/s (1e9 Gb/s); past them the
    # engine's scalings overflow (1e300 * MAX_CAPACITY_SPREAD is inf) even with a unit given.
    fab = fo.from_networkx(nx.cycle_graph(4), default_capacity=gbps, capacity_unit="Gb/s")
    with pytest.raises(fo.InvalidFabricError, match=r"fabric 'networkx': arc 0->1 has capacity "
                       r".* Gb/s \(8 such arc\(s\)\), outside the 1e-09 to 1e\+09 Gb/s"):
        fab.validate()


def test_capacities_a_unit_makes_plausible_are_kept():
    # 1e8 Gb/s (100 Pb/s) is above MAX_LINK_GBPS, taken as stated when the unit is given;
    # both ends of REPRESENTABLE_GBPS are allowed.
    for gbps in (1e8, 1e-9, 1e9):
        fab = fo.from_networkx(nx.cycle_graph(4), default_capacity=gbps, capacity_unit="Gb/s")
        assert fab.validate() is fab


def _mixed_labels_fabric():
    """Two techs in one tier, a link whose arcs differ in links and tech, a one-way arc."""
    g = nx.DiGraph()
    g.add_node("g0", role="gpu", layer=0)
    g.add_node("g1", role="gpu", layer=0)
    g.add_node("s", role="switch", layer=1)
    g.add_edge("g0", "s", capacity=400.0, links=1, tech="ndr", tier="gpu-leaf")
    g.add_edge("s", "g0", capacity=800.0, links=2, tech="xdr", tier="gpu-leaf")
    g.add_edge("g1", "s", capacity=200.0, links=1, tech="hdr", tier="gpu-leaf")
    g.add_edge("s", "g1", capacity=200.0, links=1, tech="hdr", tier="gpu-leaf")
    g.add_edge("s", "g0x", capacity=100.0, links=3, tech="x", tier="odd")
    return fo.Fabric(g, ["g0", "g1"], "mixed")


@pytest.mark.parametrize("make", [_mixed_labels_fabric, lambda: fo.superpod(2),
                                  lambda: fo.cluster(fo.gb200_nvl72(), nodes=2)])
def test_summary_on_labels_is_the_arc_by_arc_count(make):
    # The summary reads tiers, techs and link counts off the row's shared readings (arc
    # labels, link counts); the arc-by-arc count is the reference, tiers in the same order.
    from fabricopt.fabric import _link_totals, _link_totals_on_arrays
    from fabricopt.graph_arrays import _per_tier_on_labels

    fab = make()
    assert _per_tier_on_labels(fab, GraphArrays.from_fabric(fab), np.arange(2)) is not None
    slow, fast = _link_totals(fab), _link_totals_on_arrays(fab)
    for a, b in zip(slow[:3], fast[:3], strict=True):
        assert dict(a) == b and list(a) == list(b)
    assert {v: slow[3][v] for v in fab.graph} == {v: fast[3][v] for v in fab.graph}


def _edited(how):
    fab = fo.superpod(1)
    if how == "capacity":
        fab.graph["r0.l0"]["s0"]["capacity"] = 1.0   # one arc of its orbit unlike the others
    elif how == "arc gone":
        fab.graph.remove_edge("r0.l0", "s0")
    elif how == "arc added":
        fab.graph.add_edge("s0", "s1", capacity=400.0)
    elif how == "endpoints":
        return fo.Fabric(fab.graph, fab.endpoints[:-1], symmetry=fab._symmetry)
    return fab


@pytest.mark.parametrize("how", ["intact", "capacity", "arc gone", "arc added", "endpoints"])
def test_claim_checked_on_a_rows_arrays_as_matches_checks_it(how):
    # In a study row the claim is checked on the arrays every metric reads; the reference is
    # Symmetry.matches on the graph. Each edit breaks the claim; the intact fabric keeps it.
    from fabricopt._unchanged import unchanged

    fab, ref = _edited(how), _edited(how)
    expected = ref._symmetry.matches(ref.graph, ref.endpoints)
    assert expected == (how == "intact")
    if how in ("intact", "capacity"):  # the arcs as built: answered on the arrays alone
        object.__setattr__(fab._symmetry, "matches", None)
    with unchanged(fab):
        assert (fab.symmetry is not None) == expected
