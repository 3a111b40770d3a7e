"""Pricing inside a study row reads tiers, techs and link counts off the row's shared readings
(arc labels, link counts); the reference is the reading of every arc's attributes."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.cost.reading import _codes, _Columns, _Content, _label_codes
from fabricopt.graph_arrays import GraphArrays


def _techs_met_out_of_tier_order() -> fo.Fabric:
    """Tier "b" with tech "y", then tier "a" with "z", then "b" with "x": techs met y, z, x,
    where the (tier, tech) labels, sorted by tier first, list y, x, z."""
    g = nx.DiGraph()
    for v, role in (("g0", "gpu"), ("g1", "gpu"), ("s0", "switch"), ("s1", "switch")):
        g.add_node(v, role=role, layer=int(role == "switch"))
    for u, v, tier, tech in (("g0", "s0", "b", "y"), ("g1", "s1", "a", "z"),
                             ("s0", "s1", "b", "x")):
        g.add_edge(u, v, capacity=100.0, links=1, tier=tier, tech=tech)
        g.add_edge(v, u, capacity=100.0, links=1, tier=tier, tech=tech)
    return fo.Fabric(g, ["g0", "g1"], "out of order")


@pytest.mark.parametrize("make", [_techs_met_out_of_tier_order, lambda: fo.superpod(2),
                                  lambda: fo.cluster(fo.gb200_nvl72(), nodes=2),
                                  lambda: fo.cluster(fo.dgx_h100(), nodes=4, planes=2)])
def test_codes_on_labels_are_the_codes_of_every_arc(make):
    fab = make()
    content = _Content.of(fab)
    coded = _label_codes(fab, GraphArrays.from_fabric(fab))
    assert coded is not None
    for (code, names), column in zip(coded, (content.tier, content.tech), strict=True):
        ref_code, ref_names = _codes(column)
        assert names == ref_names and np.array_equal(code, ref_code)
    # And the columns pricing reads are those of the content, every arc read.
    fast, slow = _Columns.of_fabric(fab), _Columns.of_content(content)
    assert np.array_equal(fast.links, slow.links) and fast.roles == slow.roles
    assert fast.tier_codes()[1] == slow.tier_codes()[1]


def test_a_tech_that_is_not_text_is_read_arc_by_arc():
    # An unset tech reads "" in pricing; the labels hold None for it: left to the reading.
    fab = fo.ring(4)
    del fab.graph["n0"]["n1"]["tech"]
    assert _label_codes(fab, GraphArrays.from_fabric(fab)) is None
    assert _Columns.of_fabric(fab).tech_codes()[1] == _codes(_Content.of(fab).tech)[1]
