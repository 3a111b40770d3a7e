"""k shortest paths: checked against every simple path listed by brute force."""

import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.analysis.paths import k_shortest_paths


def _all_lengths(graph, source, target, weight=None):
    """Every simple path's length, by brute force (small graphs only)."""
    def length(path):
        return sum(1 if weight is None else graph[u][v].get(weight, 1)
                   for u, v in zip(path, path[1:], strict=False))
    return sorted(length(p) for p in nx.all_simple_paths(graph, source, target))


def test_leaf_spine_paths_by_hand():
    # g0 and g2 sit on different leaves under 2 spines: one 4-hop path through each spine;
    # no other path unless it passes through another GPU.
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=400)
    paths = k_shortest_paths(fab, "g0", "g2", k=5)
    assert [p.nodes for p in paths] == [("g0", "leaf0", "spine0", "leaf1", "g2"),
                                        ("g0", "leaf0", "spine1", "leaf1", "g2")]
    assert [(p.hops, p.bottleneck_gbps) for p in paths] == [(4, 400.0)] * 2
    assert paths[0].tiers == ("gpu-leaf", "leaf-spine", "leaf-spine", "gpu-leaf")


@pytest.mark.parametrize("k", [1, 3, 8])
def test_the_k_shortest_are_the_k_smallest_of_all_simple_paths(k):
    # A 2-D torus of 9 GPUs forwards through its GPUs: many simple paths of many lengths.
    fab = fo.torus((3, 3))
    src, dst = fab.endpoints[0], fab.endpoints[4]
    paths = k_shortest_paths(fab, src, dst, k=k)
    assert [p.length for p in paths] == _all_lengths(fab.graph, src, dst)[:k]
    assert len({p.nodes for p in paths}) == len(paths)


def test_weighted_paths():
    g = nx.Graph()
    for u, v, m in [("a", "x", 1), ("x", "b", 1), ("a", "y", 0.5), ("y", "z", 0.5),
                    ("z", "b", 0.5)]:
        g.add_edge(u, v, capacity=10, length_m=m)
    fab = fo.from_networkx(g, endpoints=["a", "b"])
    # By hops a-x-b (2) first; by length a-y-z-b (1.5 m) before a-x-b (2 m).
    assert k_shortest_paths(fab, "a", "b", k=1)[0].nodes == ("a", "x", "b")
    by_m = k_shortest_paths(fab, "a", "b", k=2, weight="length_m")
    assert [(p.nodes, p.length) for p in by_m] == [(("a", "y", "z", "b"), 1.5),
                                                   (("a", "x", "b"), 2.0)]
    assert [p.length for p in by_m] == _all_lengths(fab.graph, "a", "b", "length_m")


def test_bad_input_and_no_path():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'g2'"):
        k_shortest_paths(fab, "g0", "g22")
    with pytest.raises(fo.InvalidParameterError, match="other than the source"):
        k_shortest_paths(fab, "g0", "g0")
    with pytest.raises(fo.InvalidParameterError, match="weight"):
        k_shortest_paths(fab, "g0", "g2", weight="lenght_m")
    broken = fab.without(switches=["leaf1"])
    with pytest.raises(fo.FabricOptError, match="no path from g0 to g2"):
        k_shortest_paths(broken, "g0", "g2")
