"""The graph a diagram draws: devices or groups of devices (drawn nodes), and the lines
between them, read off a fabric as arrays.

A fabric's nodes and arcs are read once (:class:`DiagramReading`: a row, a role and the
ordering attributes per node; ends, tier, link count and capacity per arc), then each
grouping the diagram tries is a label per node (:func:`group_labels`) and the drawing is
counted with numpy (:func:`build`): a 24,576-GPU cluster's 300,000 arcs were walked in Python
once per grouping level tried and once more to draw, a second of the report per large design.

>>> import fabricopt as fo
>>> reading = DiagramReading(fo.superpod(1))
>>> grouping = group_labels(reading, ("rail",))
>>> drawing = build(reading, ("rail",), grouping, None)
>>> # 8 rails of 32 GPUs, the 128 NVSwitches as one group, 8 leaves and 4 spines alone
>>> len(drawing.nodes), [n.members for n in drawing.nodes][:9]
(21, [32, 32, 32, 32, 32, 32, 32, 32, 128])
>>> line_count(reading, grouping), drawing.tier_links["gpu-leaf"]   # 256 GPUs, one NIC each
(48, 256)
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import chain, count
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

from ..fabric import SCALE_UP_TIERS, Fabric

#: Attributes that order devices in a row, outermost first (see the Fabric attribute schema).
ORDER_ATTRS = ("pod", "su", "node", "rail", "plane")
#: Grouping levels from fine to coarse: a device without the level's attribute falls back
#: to the next coarser one it has (a leaf has no ``node`` but has an ``su``).
HIERARCHY = ("node", "su", "pod")
#: A row whose devices lack the grouping attribute stays ungrouped up to this many devices.
KEEP_SMALL_ROW = 32


@dataclass
class DrawnNode:
    row: int
    role: str
    members: int
    sort_key: tuple
    name: str
    models: Counter = field(default_factory=Counter)
    group_attr: str | None = None


@dataclass
class Line:
    a: int
    b: int
    tiers: Counter = field(default_factory=Counter)
    links: int = 0
    bundles: int = 0
    capacity_gbps: float = 0.0
    utilization: float | None = None

    @property
    def tier(self) -> str:
        return self.tiers.most_common(1)[0][0]


@dataclass
class Drawing:
    nodes: list[DrawnNode]
    lines: list[Line]
    rows: list[tuple[int, int]]
    level: tuple[str, ...] | None
    tier_links: Counter
    tier_capacity_gbps: dict[str, float]
    tier_util: dict[str, float]


def _codes(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """A code per value (-1 for None; equal values, by ``==``, one code) and the distinct
    values in order of first appearance."""
    seen: dict[Any, int] = {}
    # C-level: each value's first position, then its rank among the first positions.
    first = np.fromiter(map(seen.setdefault, values, count()), dtype=np.int64,
                        count=len(values))
    code = np.searchsorted(np.fromiter(seen.values(), dtype=np.int64, count=len(seen)),
                           first)
    distinct = list(seen)
    if None in seen:
        k = distinct.index(None)
        code[code == k] = -1
        code[code > k] -= 1
        del distinct[k]
    return code, distinct


def _arc_values(arcs: list[dict[str, Any]], key: str, default: Any) -> list[Any]:
    """Attribute ``key`` of every arc (``default`` where one has none): read by a C-level
    getter, twice as fast as ``dict.get`` when every arc has it (a fabric's usually do)."""
    try:
        return list(map(itemgetter(key), arcs))
    except KeyError:
        return list(map(methodcaller("get", key, default), arcs))


def _sortable(value: Any) -> tuple:
    if value is None:
        return (2, 0.0)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (0, float(value))
    return (1, str(value))


def _natural(name: Hashable) -> tuple:
    """Sort ``"n10"`` after ``"n9"``: digit runs compare as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p)
                 for p in re.split(r"(\d+)", str(name)) if p)


def node_sort_key(v: Hashable, d: Mapping[str, Any]) -> tuple:
    return tuple(_sortable(d.get(a)) for a in ORDER_ATTRS) + (_natural(v),)


class DiagramReading:
    """A fabric's nodes and arcs as arrays, in the graph's order (``nodes``; the arcs as
    each node's adjacency lists them), read once for every grouping a diagram tries.

    ``row[i]`` indexes ``rows``, the sorted row keys ``(layer, 0)`` for a switch whose links
    are all scale-up, ``(layer, 1)`` otherwise (NVSwitches get a row below the leaves of the
    same layer). Per arc: ``tail``, ``head`` (node indices), ``tier`` (indexing ``tiers``,
    ``str`` of the attribute, ``"link"`` when absent), ``links`` and ``capacity``;
    ``canonical`` marks the arc a link is counted by (the one whose ends come first in
    graph order, or its only arc).
    """

    def __init__(self, fab: Fabric) -> None:
        g = fab.graph
        self.fab = fab
        self.nodes = list(g.nodes)
        self.data = [d for _, d in g.nodes(data=True)]
        n = len(self.nodes)
        index = {v: i for i, v in enumerate(self.nodes)}
        adjacency = list(g.adjacency())  # plain dicts: far faster than the views
        owner = np.fromiter((index[v] for v, _ in adjacency), dtype=np.int64, count=n)
        out_degree = np.fromiter((len(nbrs) for _, nbrs in adjacency), dtype=np.int64,
                                 count=n)
        self.tail = np.repeat(owner, out_degree)
        heads = list(chain.from_iterable(nbrs for _, nbrs in adjacency))
        self.head = np.fromiter(map(index.__getitem__, heads), dtype=np.int64,
                                count=len(heads))
        arcs = list(chain.from_iterable(nbrs.values() for _, nbrs in adjacency))
        m = len(arcs)
        # Tiers coded on the attribute as it is (str() of the few distinct ones after).
        raw, distinct = _codes(_arc_values(arcs, "tier", "link"))
        as_text, self.tiers = _codes([str(t) for t in [None, *distinct]])  # None: tier=None
        self.tier = as_text[raw + 1]
        self.links = np.array(_arc_values(arcs, "links", 1), dtype=np.int64).reshape(m)
        self.capacity = np.array(_arc_values(arcs, "capacity", 0.0), dtype=float).reshape(m)
        key = np.sort(self.tail * max(n, 1) + self.head)
        reverse = self.head * max(n, 1) + self.tail
        at = np.minimum(np.searchsorted(key, reverse), max(m - 1, 0))
        self.canonical = (self.tail < self.head) | (key[at] != reverse if m else True)
        self.roles = [d.get("role") for d in self.data]
        # Rows: a switch whose every arc is scale-up sits in a row of its own.
        up = np.array([t in SCALE_UP_TIERS for t in distinct] + [False], dtype=bool)[raw]
        degree = np.bincount(self.tail, minlength=n)
        not_up = np.bincount(self.tail[~up], minlength=n)
        only_up = (degree > 0) & (not_up == 0)
        switch = np.fromiter(map("switch".__eq__, self.roles), dtype=bool, count=n)
        layers = list(map(methodcaller("get", "layer"), self.data))
        if set(map(type, layers)) <= {int}:  # the generators' layers: plain ints
            layer = np.array(layers, dtype=np.int64).reshape(n)
        else:  # a number's int; GPUs 0 and the rest 1 where none is given
            layer = np.array([int(x) if isinstance(x, numbers.Real) else (0 if r == "gpu"
                                                                            else 1)
                              for x, r in zip(layers, self.roles, strict=True)],
                             dtype=np.int64).reshape(n)
        key = 2 * layer + np.where(switch & only_up, 0, 1)  # sorts as (layer, 0 or 1)
        codes, self.row = np.unique(key, return_inverse=True)
        self.row = self.row.reshape(n)
        self.rows = [(int(k) // 2, int(k) % 2) for k in codes.tolist()]
        self._attr: dict[str, tuple[np.ndarray, list[Any]]] = {}

    def attribute(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """The codes of node attribute ``name`` (-1 where missing) and its values."""
        if name not in self._attr:
            self._attr[name] = _codes(list(map(methodcaller("get", name), self.data)))
        return self._attr[name]

    def values(self, name: str) -> set[Any]:
        """The distinct values of node attribute ``name`` (None left out)."""
        return set(self.attribute(name)[1])


def _relabel(label: np.ndarray) -> np.ndarray:
    """Labels 0..k-1 in order of first appearance."""
    _, first, inverse = np.unique(label, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _combine(label: np.ndarray, code: np.ndarray) -> np.ndarray:
    """One label per distinct pair (label, code)."""
    return _relabel(label * (int(code.max(initial=-1)) + 2) + code + 1)


@dataclass
class Grouping:
    """Drawn node of every device at a grouping level (``label``, 0.. in order of first
    appearance) and what each drawn node groups by (None: a device drawn alone; "layer"
    for a row's one group)."""

    label: np.ndarray
    group_attr: list[str | None]

    @property
    def count(self) -> int:
        return len(self.group_attr)


def group_labels(reading: DiagramReading, level: tuple[str, ...] | None) -> Grouping:
    """The drawn node of every device at a grouping level (None: every device alone).

    A device is grouped by the values of the level's attributes it carries. One carrying
    none stays alone when at most :data:`KEEP_SMALL_ROW` such devices share its row, else
    falls back to the first coarser attribute of :data:`HIERARCHY` it has, else joins one
    group per row. Groups of one device are drawn as that device.
    """
    n = len(reading.nodes)
    if level is None:
        return Grouping(np.arange(n, dtype=np.int64), [None] * n)
    finest = [HIERARCHY.index(a) for a in level if a in HIERARCHY]
    fallback = HIERARCHY[min(finest) + 1:] if finest else ()
    role = _codes(reading.roles)[0]
    codes = [reading.attribute(a)[0] for a in level]
    present = np.zeros(n, dtype=np.int64)   # which of the level's attributes, as bits
    for bit, code in enumerate(codes):
        present |= (code >= 0).astype(np.int64) << bit
    loose = present == 0
    # Loose devices: alone in a small row; else by the first fallback attribute they carry.
    per_row = np.bincount(reading.row[loose], minlength=len(reading.rows))
    alone = loose & (per_row[reading.row] <= KEEP_SMALL_ROW)
    chosen = np.full(n, -1, dtype=np.int64)     # which fallback attribute, -1 none
    value = np.full(n, -1, dtype=np.int64)
    for j, a in enumerate(fallback):
        code = reading.attribute(a)[0]
        take = loose & ~alone & (chosen < 0) & (code >= 0)
        chosen[take], value[take] = j, code[take]
    label = _combine(_combine(reading.row, role), np.where(loose, -1, present))
    for code in codes:
        label = _combine(label, np.where(loose, -1, code))
    label = _combine(_combine(label, chosen), value)
    label = np.where(alone, label.max(initial=-1) + 1 + np.arange(n), label)
    label = _relabel(label)
    sizes = np.bincount(label)
    first = np.full(len(sizes), n, dtype=np.int64)
    np.minimum.at(first, label, np.arange(n))
    attrs: list[str | None] = []
    for k, v in enumerate(first.tolist()):
        if sizes[k] == 1:
            attrs.append(None)
        elif loose[v]:
            attrs.append(fallback[chosen[v]] if chosen[v] >= 0 else "layer")
        else:
            attrs.append("+".join(a for a, c in zip(level, codes, strict=True) if c[v] >= 0))
    return Grouping(label, attrs)


def line_count(reading: DiagramReading, grouping: Grouping) -> int:
    """Lines a grouping draws (a pair of drawn nodes joined by any link)."""
    a, b = grouping.label[reading.tail], grouping.label[reading.head]
    between = a != b
    pairs = np.unique(a[between] * grouping.count + b[between])
    return len(pairs) // 2  # each line seen from both ends


def build(reading: DiagramReading, level: tuple[str, ...] | None, grouping: Grouping,
          util: Mapping[tuple, float] | None) -> Drawing:
    """The drawn nodes and lines of a grouping, with each tier's links, capacity and (with
    ``util``, the load over capacity of some arcs) its largest utilization."""
    label, count = grouping.label, grouping.count
    first = np.full(count, len(label), dtype=np.int64)
    np.minimum.at(first, label, np.arange(len(label)))
    members = np.bincount(label, minlength=count)
    nodes = []
    for k, v in enumerate(first.tolist()):
        d = reading.data[v]
        nodes.append(DrawnNode(int(reading.row[v]), str(d.get("role")), int(members[k]),
                               node_sort_key(reading.nodes[v], d), str(reading.nodes[v]),
                               group_attr=grouping.group_attr[k]))
    model, models = _codes([str(m) if m else None
                            for m in map(methodcaller("get", "model"), reading.data)])
    has = model >= 0
    if has.any():
        pair, times = np.unique(label[has] * len(models) + model[has], return_counts=True)
        for p, c in zip(pair.tolist(), times.tolist(), strict=True):
            nodes[p // len(models)].models[models[p % len(models)]] = c

    tier, tiers, canon = reading.tier, reading.tiers, reading.canonical
    counted = tier[canon]
    by_tier = np.unique(counted).tolist()
    links_of = np.bincount(counted, weights=reading.links[canon], minlength=len(tiers))
    cap = np.bincount(counted, weights=reading.capacity[canon], minlength=len(tiers))
    tier_links = Counter({tiers[t]: int(links_of[t]) for t in by_tier})
    tier_cap = {tiers[t]: float(cap[t]) for t in by_tier}
    load = np.full(len(tier), np.nan)
    if util:
        index = {v: i for i, v in enumerate(reading.nodes)}
        n = len(reading.nodes)
        at = {index[u] * n + index[v]: x for (u, v), x in util.items() if x is not None}
        keys = reading.tail * n + reading.head
        load = np.fromiter((at.get(k, np.nan) for k in keys.tolist()), dtype=float,
                           count=len(keys))
    tier_util: dict[str, float] = {}
    for t in np.unique(tier[~np.isnan(load)]).tolist():
        tier_util[tiers[t]] = float(np.max(load[(tier == t) & ~np.isnan(load)]))

    a, b = label[reading.tail], label[reading.head]
    between = np.flatnonzero(a != b)
    lo, hi = np.minimum(a[between], b[between]), np.maximum(a[between], b[between])
    pair = _relabel(lo * count + hi)   # lines in order of their first arc
    ok = canon[between]
    n_lines = int(pair.max(initial=-1)) + 1
    links = np.bincount(pair[ok], weights=reading.links[between][ok], minlength=n_lines)
    bundles = np.bincount(pair[ok], minlength=n_lines)
    capacity = np.bincount(pair[ok], weights=reading.capacity[between][ok],
                           minlength=n_lines)
    ends = np.zeros((n_lines, 2), dtype=np.int64)
    ends[pair, 0], ends[pair, 1] = lo, hi
    lines = [Line(int(x), int(y), links=int(k), bundles=int(c), capacity_gbps=float(cp))
             for (x, y), k, c, cp in zip(ends.tolist(), links.tolist(), bundles.tolist(),
                                         capacity.tolist(), strict=True)]
    # Each line's tiers, in the order their first counted arc comes.
    line_tier = pair[ok] * len(tiers) + tier[between][ok]
    kinds, at_first = np.unique(line_tier, return_index=True)
    sums = np.bincount(np.searchsorted(kinds, line_tier), weights=reading.links[between][ok],
                       minlength=len(kinds))
    for j in np.argsort(at_first, kind="stable").tolist():
        k = int(kinds[j])
        lines[k // len(tiers)].tiers[tiers[k % len(tiers)]] = int(sums[j])
    loaded = ~np.isnan(load[between])
    if loaded.any():
        most = np.full(n_lines, -np.inf)
        np.maximum.at(most, pair[loaded], load[between][loaded])
        for k in np.flatnonzero(np.isfinite(most)).tolist():
            lines[k].utilization = float(most[k])
    return Drawing(nodes, [ln for ln in lines if ln.tiers], reading.rows, level, tier_links,
                   tier_cap, tier_util)
