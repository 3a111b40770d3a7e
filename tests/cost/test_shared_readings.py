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


def _groups_switch_by_switch(reading, chooser):
    """The reference: switches grouped one at a time (model, radix, port use, section)."""
    groups, seen, group_of = [], {}, []
    for i in reading.switches:
        node, use = reading.node_data[i], reading.port_use[i]
        section = "in_server" if reading.nodes[i] in reading.in_server else "network"
        key = (repr(node.get("model")), repr(node.get("radix")), id(use), section)
        if key not in seen:
            seen[key] = len(groups)
            groups.append((chooser.switch(reading.nodes[i], node, use).key, use, section, []))
        groups[seen[key]][3].append(i)
        group_of.append(seen[key])
    return groups, group_of


def _nic_parts_node_by_node(reading, chooser):
    """The reference: every NIC priced by its own key, node by node."""
    from fabricopt.cost.parts import _device_parts

    alike, parts = {}, []
    for i, use in enumerate(reading.nic_port_use):
        if use is None:
            continue
        section = "in_server" if reading.nic_in_system[i] else "network"
        key = (reading.roles[i], repr(reading.node_data[i].get("model")), id(use), section)
        if key not in alike:
            entry, count = chooser.nic(reading.nodes[i], reading.node_data[i], use)
            alike[key] = _device_parts("nic", entry, count, use, section)
        parts += alike[key]
    return parts


@pytest.mark.parametrize("make", [lambda: fo.superpod(2), lambda: fo.cluster(
    fo.gb200_nvl72(), nodes=2), lambda: fo.cluster(fo.dgx_h100(), nodes=4, planes=2)])
@pytest.mark.parametrize("policy", ["cost", "all_optics", "lpo"])
def test_device_classes_price_as_device_by_device(make, policy):
    # Switches and NICs are classed once per reading; each policy chooses once per class.
    # The reference groups and prices them one device at a time.
    from fabricopt.cost.bom import _inputs
    from fabricopt.cost.parts import DeviceChooser, nic_parts, switch_groups
    from fabricopt.cost.reading import read_fabric

    fab = make()
    cat, _, pol = _inputs("test", fab, None, None, policy)
    reading = read_fabric(fab, fo.Layout())
    groups, group_of = switch_groups(reading, DeviceChooser(cat, pol, "test"))
    ref_groups, ref_of = _groups_switch_by_switch(reading, DeviceChooser(cat, pol, "test"))
    assert group_of == ref_of
    assert [(g.entry.key, g.use, g.section, g.members) for g in groups] == ref_groups
    fast = nic_parts(reading, DeviceChooser(cat, pol, "test"))
    slow = _nic_parts_node_by_node(reading, DeviceChooser(cat, pol, "test"))
    assert fast == slow and len(fast) > 0


def _pooled_part_by_part(parts):
    """The reference: every part added to its key's units in turn."""
    groups = {}
    for p in parts:
        key = (p.section, p.tier, p.kind, p.entry.key, p.bucket_m)
        if key not in groups:
            groups[key] = [0.0, p.unit_usd, p.unit_w, p.entry]
        groups[key][0] += p.units
    return groups


def test_parts_pool_as_one_addition_per_part():
    # The pooled units are float sums in the order of the parts (bincount adds in input
    # order); thirds do not add exactly, so any other order could differ in the last bit.
    from fabricopt.cost.bom import _pooled
    from fabricopt.cost.parts import Part

    cat = fo.Catalog.default()
    entries = [cat.media["dr_800g"], cat.media["sr_800g"]]
    made = [Part("leaf-spine", "transceiver", entries[k % 2], 0.0, units, 10.0, 1.0)
            for k, units in enumerate([1 / 3, 0.1, 2 / 3, 0.7, 1e-3])]
    parts = [made[k] for k in [0, 1, 2, 0, 0, 3, 4, 2, 1, 0] * 7]
    fast, slow = _pooled(parts), _pooled_part_by_part(parts)
    assert list(fast) == list(slow)
    assert [g[0] for g in fast.values()] == [g[0] for g in slow.values()]
    assert [g[1:] for g in fast.values()] == [g[1:] for g in slow.values()]
    assert _pooled([]) == {}
