"""The orbits a builder aligns with the graph it made (symmetry_claim.ClaimOrder) give the
same answers as the per-arc lookups they replace: the claim's check (Symmetry.matches) and
the symmetric method's arc orbits, on intact, partial, edited and failed fabrics; and the
faster readings of the arrays and of a fabric's endpoints keep their answers and errors."""

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.flow.symmetric import _relabel, arc_orbits
from fabricopt.graph_arrays import GraphArrays
from fabricopt.symmetry_claim import Symmetry

MAKES = {
    "fat_tree(4)": lambda: fo.fat_tree(4),
    "fat_tree(6)": lambda: fo.fat_tree(6),
    "superpod(1)": lambda: fo.superpod(1),
    "ring(5)": lambda: fo.ring(5),
    # Partial pods: 12 servers of a 3-tier 2:1 Clos, and 6 on rails.
    "partial clos": lambda: fo.cluster(fo.dgx_h100(), nodes=12, scale_out="clos", tiers=3,
                                       oversubscription=2),
    "rails": lambda: fo.cluster(fo.dgx_h100(), nodes=6, scale_out="rail_optimized"),
}


def _bare(claim: Symmetry) -> Symmetry:
    """The same claim without its aligned order: the per-arc path."""
    return Symmetry(claim.arc_orbit, claim.group, claim.n_nodes, claim.n_arcs, claim.endpoints,
                    claim.orbit_names, claim.endpoint_orbit)


def _lookup_orbits(ga: GraphArrays, claim: Symmetry) -> np.ndarray:
    return _relabel(np.fromiter(map(claim.arc_orbit.__getitem__, ga.arcs), dtype=np.int64,
                                count=ga.n_arcs))


@pytest.mark.parametrize("name", list(MAKES))
def test_aligned_orbits_are_the_lookups(name):
    fab = MAKES[name]()
    claim = fab._symmetry
    assert claim is not None and "_order" in claim.__dict__
    ga = GraphArrays.from_fabric(fab)
    assert np.array_equal(arc_orbits(ga, claim), _lookup_orbits(ga, claim))
    assert claim.matches(fab.graph, fab.endpoints) is _bare(claim).matches(fab.graph,
                                                                          fab.endpoints) is True


@pytest.mark.parametrize("name", ["fat_tree(4)", "partial clos"])
def test_an_edited_capacity_fails_the_claim_both_ways(name):
    fab = MAKES[name]()
    u, v = next((u, v) for u, v in fab.graph.edges if u not in fab.endpoints)
    fab.graph[u][v]["capacity"] *= 2  # one arc of its orbit no longer like the others
    claim = fab._symmetry
    assert claim._order.same_arcs(fab.graph)  # the arcs are still those, in order
    assert claim.matches(fab.graph, fab.endpoints) is False
    assert _bare(claim).matches(fab.graph, fab.endpoints) is False
    assert fab.symmetry is None


def test_a_failed_fabric_drops_the_claim_and_its_arrays_read_as_before():
    fab = fo.fat_tree(4)
    failed = fab.without_links([("leaf0", "spine0.0")])
    claim = fab._symmetry
    assert not claim._order.same_arcs(failed.graph)
    assert failed.symmetry is None
    ga = GraphArrays.from_fabric(failed)
    index = {v: i for i, v in enumerate(failed.graph.nodes)}
    assert ga.head.tolist() == [index[v] for _, v in failed.graph.edges]
    # Arrays of another graph do not take the aligned codes: lookups, as before.
    assert not claim._order.fits(ga.nodes, ga.tail, ga.head)


def test_a_rewired_graph_of_the_same_size_is_not_taken_for_the_built_one():
    fab = fo.fat_tree(4)
    claim = fab._symmetry
    g = fab.graph
    d = dict(g["leaf0"]["spine0.0"])
    g.remove_edge("leaf0", "spine0.0")
    g.add_edge("leaf0", "spine1.0", **d)  # a parallel arc: same counts, another graph
    assert not claim._order.same_arcs(g)
    assert claim.matches(g, fab.endpoints) is _bare(claim).matches(g, fab.endpoints)
    ga = GraphArrays.from_fabric(fo.Fabric(g, fab.endpoints, symmetry=claim))
    assert ga.head is not claim._order.head and ga.arcs == list(g.edges)


@pytest.mark.parametrize("name", list(MAKES))
def test_arrays_are_those_of_the_edge_view(name):
    # The tails taken as runs of each node's successors are g.edges' tails, by index.
    fab = MAKES[name]()
    ga = GraphArrays.from_fabric(fab)
    assert ga.head is fab._symmetry._order.head  # read off the claim's order, no lookups
    edges = list(fab.graph.edges(data=True))
    index = {v: i for i, v in enumerate(fab.graph.nodes)}
    assert ga.arcs == [(u, v) for u, v, _ in edges]
    assert ga.tail.tolist() == [index[u] for u, _, _ in edges]
    assert ga.head.tolist() == [index[v] for _, v, _ in edges]
    assert ga.capacity.tolist() == [float(d["capacity"]) for _, _, d in edges]


def test_unknown_and_unhashable_endpoints_are_still_named():
    g = nx.DiGraph()
    g.add_edge("a", "b", capacity=1.0)
    g.add_edge("b", "a", capacity=1.0)
    with pytest.raises(InvalidParameterError, match="unknown \\['z'\\]"):
        fo.Fabric(g, ["a", "z"])
    with pytest.raises(InvalidParameterError, match="unknown \\[\\['a'\\]\\]"):
        fo.Fabric(g, ["a", ["a"]])
