"""Arc labels read once (graph_arrays.arc_labels) against asking each arc
(tiers.is_scale_up_arc), including labels that are missing, None or unhashable."""

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt._unchanged import unchanged
from fabricopt.graph_arrays import arc_labels
from fabricopt.tiers import is_scale_up_arc


def _odd_labels():
    g = nx.DiGraph()
    g.add_edge("a", "s", capacity=1.0, tier=None, tech="nvlink4")      # tech alone: scale-up
    g.add_edge("s", "a", capacity=1.0, tech=["nvlink4"])               # unhashable tech
    g.add_edge("a", "b", capacity=1.0, tier="gpu-nvswitch")            # tier alone: scale-up
    g.add_edge("b", "a", capacity=1.0)                                 # neither
    g.add_edge("s", "b", capacity=1.0, tier="leaf-spine", tech="ndr")  # network
    g.add_edge("b", "s", capacity=1.0, tier="leaf-spine", tech="ndr")
    return fo.Fabric(g, ["a", "b"], "odd labels")


@pytest.mark.parametrize("fab", [fo.dgx_h100(), fo.cluster("dgx_h100", 2, "clos", radix=8),
                                 fo.ualink_pod(8, 2, 2), fo.fat_tree(4), _odd_labels()],
                         ids=lambda f: f.name)
def test_scale_up_mask_is_each_arcs_answer(fab):
    expected = np.array([is_scale_up_arc(d) for _, _, d in fab.graph.edges(data=True)],
                        dtype=bool)
    labels = arc_labels(fab)
    assert np.array_equal(labels.scale_up, expected)
    assert len(labels.labels) == len(set(labels.labels))  # each distinct pair once
    assert not labels.code.flags.writeable  # shared within a study row


def test_odd_labels_are_read_as_is_scale_up_reads_them():
    # a->s by its tech, a->b by its tier; s->a's tech is a list, whose str() names no
    # family; b->a names nothing; s<->b are network links.
    mask = arc_labels(_odd_labels()).scale_up
    arcs = list(_odd_labels().graph.edges)
    assert {arcs[a] for a in np.flatnonzero(mask)} == {("a", "s"), ("a", "b")}


def test_read_once_inside_a_row():
    fab = fo.dgx_h100()
    with unchanged(fab):
        assert arc_labels(fab) is arc_labels(fab)
    assert arc_labels(fab) is not arc_labels(fab)
