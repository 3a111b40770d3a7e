"""The drawing graph counted with arrays (plot/diagram_graph.py) against a plain walk over the
graph: the same groups, and every link counted once, on a line or inside a group."""

from collections import Counter

import pytest

import fabricopt as fo
from fabricopt.plot.diagram_graph import (
    HIERARCHY,
    KEEP_SMALL_ROW,
    DiagramReading,
    build,
    group_labels,
    line_count,
)


def reference_groups(fab, reading, level):
    """The grouping rule as the draw() docstring states it, one device at a time: a key per
    device; groups of one device are that device."""
    rows = dict(zip(reading.nodes, reading.row.tolist(), strict=True))
    finest = [HIERARCHY.index(a) for a in level if a in HIERARCHY]
    fallback = HIERARCHY[min(finest) + 1:] if finest else ()
    key, loose = {}, Counter()
    for v, d in fab.graph.nodes(data=True):
        values = tuple((a, d[a]) for a in level if d.get(a) is not None)
        key[v] = ("grp", rows[v], d.get("role"), values) if values else None
        loose[rows[v]] += key[v] is None
    for v, d in fab.graph.nodes(data=True):
        if key[v] is None:
            if loose[rows[v]] <= KEEP_SMALL_ROW:
                key[v] = ("dev", v)
            else:
                key[v] = ("grp", rows[v], d.get("role"),
                          next((((a, d[a]),) for a in fallback if d.get(a) is not None), ()))
    sizes = Counter(key.values())
    return [("dev", v) if sizes[k] == 1 else k for v, k in key.items()]


def failed_superpod():
    fab = fo.fail_random(fo.superpod(2), 0.05, seed=1)
    u, v = next(iter(fab.graph.edges))
    fab.graph.remove_edge(v, u)  # one link left with a single arc: counted by that arc
    return fab


@pytest.mark.parametrize("level", [None, ("node",), ("su", "rail"), ("rail",), ("layer",)])
def test_groups_are_the_rule_device_by_device(level):
    fab = failed_superpod()
    reading = DiagramReading(fab)
    grouping = group_labels(reading, level)
    keys = (reference_groups(fab, reading, level) if level is not None
            else [("dev", v) for v in fab.graph])
    # The same partition, numbered in order of first appearance.
    first = {}
    assert grouping.label.tolist() == [first.setdefault(k, len(first)) for k in keys]
    assert grouping.count == len(first)


@pytest.mark.parametrize("level", [("su", "rail"), ("rail",), None])
def test_every_link_counted_once_on_a_line_or_inside_a_group(level):
    fab = failed_superpod()
    reading = DiagramReading(fab)
    grouping = group_labels(reading, level)
    dr = build(reading, level, grouping, None)
    # The plain count: a link by its arc from the node first in graph order, or its only arc.
    g, order = fab.graph, {v: i for i, v in enumerate(fab.graph)}
    label = dict(zip(reading.nodes, grouping.label.tolist(), strict=True))
    links, capacity, inside = Counter(), Counter(), Counter()
    for u, v, d in g.edges(data=True):
        if order[u] < order[v] or not g.has_edge(v, u):
            links[d["tier"]] += d.get("links", 1)
            capacity[d["tier"]] += d["capacity"]
            if label[u] == label[v]:
                inside[d["tier"]] += d.get("links", 1)
    assert dict(dr.tier_links) == dict(links)
    assert dr.tier_capacity_gbps == pytest.approx(dict(capacity), rel=1e-12)
    # Conservation: each tier's links are on its lines or inside a group, none twice.
    on_lines = Counter()
    for ln in dr.lines:
        on_lines.update(ln.tiers)
        assert ln.links == sum(ln.tiers.values()) and ln.a < ln.b
    assert on_lines + inside == links
    assert sum(n.members for n in dr.nodes) == g.number_of_nodes()
    # A line per pair of drawn nodes joined by a link; line_count counts ordered pairs, halved.
    pairs = {(label[u], label[v]) for u, v in g.edges if label[u] != label[v]}
    assert len({frozenset(p) for p in pairs}) == len(dr.lines)
    assert line_count(reading, grouping) == len(pairs) // 2


def test_utilization_is_the_busiest_arc_of_each_line_and_tier():
    fab = fo.fat_tree(4)
    result = fo.max_concurrent_flow(fab)
    reading = DiagramReading(fab)
    grouping = group_labels(reading, ("pod",))
    dr = build(reading, ("pod",), grouping, dict(result.utilization))
    label = dict(zip(reading.nodes, grouping.label.tolist(), strict=True))
    for ln in dr.lines:
        loads = [x for (u, v), x in result.utilization.items()
                 if {label[u], label[v]} == {ln.a, ln.b}]
        assert ln.utilization == max(loads)
    tiers = {fab.graph[u][v]["tier"] for u, v in result.utilization}
    assert set(dr.tier_util) == tiers
