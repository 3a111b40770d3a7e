"""The fabric's shape read once (graph_arrays.FabricShape): its domains, servers, leaves,
rails, layers and hierarchy partitions against the graph read node by node."""

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt._unchanged import unchanged
from fabricopt.graph_arrays import FabricShape
from fabricopt.tiers import is_scale_up_arc


def _same_grouping(labels, groups):
    """Whether the label array puts the nodes together exactly as ``groups`` (sets) do."""
    return {frozenset(np.flatnonzero(labels == x).tolist()) for x in np.unique(labels)} \
        == set(groups)


@pytest.mark.parametrize("fab", [fo.superpod(1), fo.cluster("dgx_h100", 2, "clos", radix=8),
                                 fo.fat_tree(4), fo.gb200_nvl72(), fo.ring(5)],
                         ids=lambda f: f.name)
def test_domains_are_the_components_of_the_scale_up_links(fab):
    shape = FabricShape.of(fab)
    ga = shape.arrays
    up = nx.Graph()
    up.add_nodes_from(range(ga.n_nodes))
    up.add_edges_from((ga.index[u], ga.index[v]) for u, v, d in fab.graph.edges(data=True)
                      if is_scale_up_arc(d))
    assert _same_grouping(shape.domain, map(frozenset, nx.connected_components(up)))
    assert not shape.domain.flags.writeable  # one shape may serve several callers


def test_superpod_counts():
    # One SU of the SuperPOD: 32 DGX H100 of 8 GPUs (one scale-up domain each), 8 rails and
    # one leaf per rail; layers 0 (GPUs and NVSwitches), 1 (leaves), 2 (spines).
    fab = fo.superpod(1)
    shape = FabricShape.of(fab)
    assert len(np.unique(shape.domain[shape.endpoint_index])) == 32
    assert len(np.unique(shape.server[shape.endpoint_index])) == 32
    assert int(shape.leaves.sum()) == 8
    assert {fab.graph.nodes[shape.arrays.nodes[i]]["layer"]
            for i in np.flatnonzero(shape.leaves)} == {1}
    assert sorted(set(shape.rail[shape.endpoint_index].tolist())) == list(range(8))
    assert sorted(set(shape.layer.tolist())) == [0, 1, 2]


def test_leaves_and_hierarchy_of_a_leaf_spine():
    # 4 leaves of 2 hosts under 2 spines: the leaves are what the hosts attach to; the
    # hierarchy is every node alone, then each leaf with its hosts (layer 1 closed upward),
    # then everything (layer 2 joins the leaves through the spines).
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=2)
    shape = FabricShape.of(fab)
    nodes = shape.arrays.nodes
    assert sorted(nodes[i] for i in np.flatnonzero(shape.leaves)) == \
        ["leaf0", "leaf1", "leaf2", "leaf3"]
    alone, by_leaf, whole = shape.hierarchy
    assert len(np.unique(alone)) == len(nodes)
    assert len(np.unique(by_leaf)) == 4 + 2  # 4 leaves with their hosts, 2 spines alone
    assert len(np.unique(whole)) == 1
    assert shape.server is None and shape.rail is None


def test_a_node_without_a_layer_reads_minus_one():
    g = nx.path_graph(3)
    fab = fo.from_networkx(g, endpoints=[0, 2], default_capacity=1.0)
    del fab.graph.nodes[1]["layer"]
    assert FabricShape.of(fab).layer.tolist() == [0, -1, 0]


def test_one_shape_per_unchanged_block():
    fab = fo.ring(4)
    with unchanged(fab):
        assert FabricShape.of(fab) is FabricShape.of(fab)
    assert FabricShape.of(fab) is not FabricShape.of(fab)  # the graph may change in between
