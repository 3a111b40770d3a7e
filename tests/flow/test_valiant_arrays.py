"""The two-phase rate's arrays: each arc's reverse (sorted arc codes) and the dead-end peeling
(unique link codes), against the plain constructions they replaced."""

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.flow.two_phase.arrays import _dead_ends, _reverse_arcs
from fabricopt.graph_arrays import GraphArrays


def _reverse_by_dict(ga):
    index = {arc: a for a, arc in enumerate(ga.arcs)}
    rev = np.array([index.get((v, u), -1) for u, v in ga.arcs], dtype=np.int64)
    return None if np.any(rev < 0) else rev


def _dead_by_walk(ga, keep):
    """Peel nodes outside ``keep`` with at most one neighbour until none is left."""
    nbrs = {v: set() for v in range(ga.n_nodes)}
    for u, v in zip(ga.tail.tolist(), ga.head.tolist(), strict=True):
        if u != v:
            nbrs[u].add(v)
            nbrs[v].add(u)
    alive, keep = set(range(ga.n_nodes)), set(keep.tolist())
    while drop := {v for v in alive - keep if len(nbrs[v] & alive) <= 1}:
        alive -= drop
    return np.array([v not in alive for v in range(ga.n_nodes)])


def _with_spur():
    fab = fo.leaf_spine(2, 2, 2)
    g = fab.graph.copy()
    for u, v in (("spine0", "x"), ("x", "y")):  # a chain hung off a spine: dead ends
        g.add_edge(u, v, capacity=100.0)
        g.add_edge(v, u, capacity=100.0)
    g.nodes["x"]["role"] = g.nodes["y"]["role"] = "switch"
    return fo.Fabric(g, fab.endpoints, "spur")


@pytest.mark.parametrize("fab", [fo.ring(5), fo.fat_tree(4), _with_spur(),
                                 fo.cluster("dgx_h100", 2, "clos", radix=8)],
                         ids=lambda f: f.name)
def test_reverse_arcs_and_dead_ends_match_the_plain_constructions(fab):
    ga = GraphArrays.from_fabric(fab)
    rev = _reverse_arcs(ga)
    assert np.array_equal(rev, _reverse_by_dict(ga))
    assert np.array_equal(ga.tail[rev], ga.head) and np.array_equal(ga.head[rev], ga.tail)
    keep = np.array([ga.index[e] for e in fab.endpoints])
    assert np.array_equal(_dead_ends(ga, keep), _dead_by_walk(ga, keep))


def test_spur_is_peeled():
    ga = GraphArrays.from_fabric(_with_spur())
    dead = _dead_ends(ga, np.array([ga.index[e] for e in _with_spur().endpoints]))
    assert {ga.nodes[i] for i in np.flatnonzero(dead)} == {"x", "y"}


def test_a_one_way_arc_has_no_reverse():
    g = nx.DiGraph()
    g.add_edge("a", "b", capacity=1.0)
    g.add_edge("b", "a", capacity=1.0)
    g.add_edge("b", "c", capacity=1.0)
    ga = GraphArrays.from_fabric(fo.Fabric(g, ["a", "c"], "one way"))
    assert _reverse_arcs(ga) is None and _reverse_by_dict(ga) is None


@pytest.mark.parametrize("make", [lambda: fo.fat_tree(4), lambda: fo.superpod(1)])
def test_the_rate_loads_read_as_the_dict_of_every_arc(make):
    # load_gbps is an ArcValues (arcs + one array, no dict until a lookup by key): it must
    # read exactly as the dict of every arc it replaced, by key, in order and by value, and
    # arc_array hands back the same numbers; every load within its arc's capacity (the
    # certificate's capacity check).
    from fabricopt.flow.two_phase.result import ArcValues, arc_array

    fab = make()
    h = fo.valiant_rate(fab)
    ga = GraphArrays.from_fabric(fab)
    loads = h.load_gbps
    assert isinstance(loads, ArcValues) and len(loads) == ga.n_arcs
    plain = dict(zip(ga.arcs, list(loads.values()), strict=True))
    assert list(loads) == list(ga.arcs) and dict(loads.items()) == plain and loads == plain
    assert all(loads[a] == plain[a] for a in ga.arcs[::7]) and ga.arcs[0] in loads
    assert ("nowhere", "nothing") not in loads and loads.get(("nowhere", "x"), -1.0) == -1.0
    array = arc_array(loads, ga)
    assert array.tolist() == [plain[a] for a in ga.arcs] and not array.flags.writeable
    assert arc_array(plain, ga).tolist() == array.tolist()
    assert np.all(array <= ga.capacity * (1 + 1e-9))
    with pytest.raises(ValueError, match="values for"):
        ArcValues(ga.arcs, np.zeros(3))
