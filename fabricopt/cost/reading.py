"""What pricing reads off a fabric before any policy or catalog is applied, read once.

:func:`~fabricopt.estimate_cost` prices one fabric under a policy; a design optimizer prices
the same fabric under several (cost, all optics, LPO). Everything here depends only on the
fabric and the layout, so it is read in array form once and kept:

* the validation of the data model (:meth:`fabricopt.Fabric.validate`), checked on arrays;
* the placement (:func:`fabricopt.cost.layout.place`) and the switches built into a server;
* the port use of every device (how many ports per tier, at what rate, which techs), one shared
  record for devices whose links are alike (the 16,384 GPUs of a SuperPOD have two records);
* every physical bundle (each link once, not per direction) with its tier, tech, rate per link,
  length, row and section, grouped into classes of bundles priced alike up to the kind of
  switch at each end, which the policy decides.

The reading is cached per fabric, keyed by the fabric's content: the node and arc attributes
pricing reads (roles, models, radices, positions; capacities, link counts, techs, tiers), the
node and arc order and the endpoints. A fabric changed in any of these after it was priced (an
attribute edited in place included) is read and validated afresh; reading the key is one pass
over the arcs, far cheaper than the analysis it guards.

Inside ``with unchanged(fab):`` (:mod:`fabricopt._unchanged`: a comparison row, an optimizer's
topology priced under each policy) the fabric is promised not to change, so no key is read:
the reading is kept with the block's other readings and made on the fabric's arrays
(:class:`~fabricopt.graph_arrays.GraphArrays`, read once for every metric of the row).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from operator import methodcaller
from typing import Any

import networkx as nx
import numpy as np

from .._unchanged import once
from ..fabric import Fabric
from ..graph_arrays import GraphArrays, arc_labels, link_counts, small_unique
from ..tiers import DEFAULT_TIER, IN_SYSTEM_TIERS, is_scale_up
from .layout import Layout, Placement, _Arcs, _in_server, _place

#: Node attributes pricing reads (validation, switch and NIC choice, placement).
NODE_FIELDS = ("role", "model", "radix", "node", "su", "pod", "tray", "layer")

_ABSENT = object()
"""Stands for an arc's ``links`` attribute when it is not set (validation tells the two
apart: an absent count is one link, a set one must be a whole number >= 1)."""


@dataclass(frozen=True)
class PortUse:
    """The ports a device uses: how many per tier, at what rate (its fastest), which techs."""

    by_tier: dict[str, int]
    rate_gbps: float
    techs: frozenset[str]

    @property
    def used(self) -> int:
        return sum(self.by_tier.values())


@dataclass(frozen=True)
class _Content:
    """Everything of a fabric that pricing reads, as plain lists (compared with ``==``)."""

    nodes: list[Hashable]
    endpoints: tuple[Hashable, ...]
    node_fields: tuple[list[Any], ...]
    degree: list[int]
    heads: list[Hashable]
    capacity: list[Any]
    capacity_types: list[type]
    links: list[Any]
    links_types: list[type]
    tech: list[str]
    tier: list[str]

    @classmethod
    def of(cls, fab: Fabric) -> _Content:
        # networkx's edge views cost microseconds per arc; the successor dicts of the
        # DiGraph, read with map, chain and dict.get (all C-level), cost a small fraction.
        adj = fab.graph._adj
        nodes = list(adj)
        node_data = list(map(fab.graph._node.__getitem__, nodes))
        node_fields = tuple(_column(node_data, f, None) for f in NODE_FIELDS)
        arcs = list(itertools.chain.from_iterable(nbrs.values() for nbrs in adj.values()))
        heads = list(itertools.chain.from_iterable(adj.values()))
        capacity = _column(arcs, "capacity", None)
        links = _column(arcs, "links", _ABSENT)
        tech = _column(arcs, "tech", "")
        tier = _column(arcs, "tier", DEFAULT_TIER)
        # tier_of() and the techs of a port use are str() of the attribute.
        if not set(map(type, tech)) <= {str}:
            tech = list(map(str, tech))
        if not set(map(type, tier)) <= {str}:
            tier = list(map(str, tier))
        return cls(nodes, tuple(fab.endpoints), node_fields, list(map(len, adj.values())),
                   heads, capacity, list(map(type, capacity)), links, list(map(type, links)),
                   tech, tier)


def _column(dicts: list[Mapping[str, Any]], key: str, default: Any) -> list[Any]:
    """``[d.get(key, default) for d in dicts]``, at C speed for plain dicts (networkx's
    default attribute containers)."""
    try:
        return list(map(dict.get, dicts, itertools.repeat(key), itertools.repeat(default)))
    except TypeError:  # a graph class with other mappings for its attributes
        return [d.get(key, default) for d in dicts]


@dataclass(frozen=True)
class Bundles:
    """The physical bundles of a fabric, each once (PCIe GPU-NIC links left out), in arc order.

    Arrays are indexed by bundle: ``u``, ``v`` the node indices of its ends (``u`` first in
    arc order), ``links`` its physical links, ``kind`` its class among ``classes``. Bundles of
    one class are priced alike once the kinds of switch at their ends are known: a class is
    ``(tier, tech, rate_gbps, length_m, in_row, section)`` (see
    :class:`fabricopt.cost.parts.LinkKind`).
    """

    u: np.ndarray
    v: np.ndarray
    links: np.ndarray
    kind: np.ndarray
    classes: list[tuple[str, str, float, float, bool, str]]


@dataclass(frozen=True)
class FabricReading:
    """The policy-free reading of a fabric under a layout (see the module notes).

    ``nodes`` are in graph order (the order of :class:`~fabricopt.cost.layout.Placement`);
    ``port_use[i]`` is the port use of node ``i`` over all its arcs and ``nic_port_use[i]``
    over the arcs a NIC serves (None for nodes that are neither GPU nor NIC, and for GPUs with
    no scale-out link: they get no NIC). Equal port uses are one shared object.
    ``nic_in_system[i]`` is True for a GPU (or a NIC node on its PCIe) inside a system whose
    price holds its NICs: a GPU that a switch of ``in_server`` reaches over an in-system link
    (a DGX's GPUs and their ConnectX adapters, a GB200 NVL72's).
    """

    nodes: list[Hashable]
    node_data: list[Mapping[str, Any]]
    roles: list[Any]
    switches: list[int]
    port_use: list[PortUse]
    nic_port_use: list[PortUse | None]
    placement: Placement
    in_server: frozenset[Hashable]
    bundles: Bundles
    nic_in_system: np.ndarray

    # Devices alike for pricing whatever the policy (an optimizer prices one reading under
    # several: each policy then chooses once per class, not once per device).
    @cached_property
    def switch_classes(self) -> tuple[list[int], list[str], list[int], list[list[int]]]:
        """Switches priced alike: the same ``model`` and ``radix`` attributes, port use and
        section. The first switch and the section of each class (classes in the order of
        their first switch), the class of every switch (in switch order), and each class's
        switches."""
        seen: dict[tuple[Any, ...], int] = {}
        firsts: list[int] = []
        sections: list[str] = []
        members: list[list[int]] = []
        class_of = []
        for i in self.switches:
            node = self.node_data[i]
            section = "in_server" if self.nodes[i] in self.in_server else "network"
            key = (repr(node.get("model")), repr(node.get("radix")), id(self.port_use[i]),
                   section)
            k = seen.setdefault(key, len(firsts))
            if k == len(firsts):
                firsts.append(i)
                sections.append(section)
                members.append([])
            members[k].append(i)
            class_of.append(k)
        return firsts, sections, class_of, members

    @cached_property
    def nic_classes(self) -> tuple[list[int], list[str], list[int]]:
        """NICs priced alike (a NIC node, or a GPU's NIC: see ``nic_port_use``): the same
        role, ``model`` attribute, port use and section. The first node and the section of
        each class, and the class of every node with a NIC, in node order."""
        seen: dict[tuple[Any, ...], int] = {}
        firsts: list[int] = []
        sections: list[str] = []
        sequence = []
        for i, use in enumerate(self.nic_port_use):
            if use is None:
                continue
            section = "in_server" if self.nic_in_system[i] else "network"
            key = (self.roles[i], repr(self.node_data[i].get("model")), id(use), section)
            k = seen.setdefault(key, len(firsts))
            if k == len(firsts):
                firsts.append(i)
                sections.append(section)
            sequence.append(k)
        return firsts, sections, sequence


_CACHE: weakref.WeakKeyDictionary[Fabric, tuple[_Content, list[tuple[Layout,
                                                                     FabricReading]]]] = \
    weakref.WeakKeyDictionary()


def read_fabric(fab: Fabric, layout: Layout) -> FabricReading:
    """The reading of ``fab`` under ``layout``, validated; cached while the fabric's content
    is unchanged (see the module notes).

    Raises :class:`~fabricopt.InvalidFabricError` as :meth:`Fabric.validate` does.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.superpod(scalable_units=1)
    >>> r = read_fabric(fab, fo.Layout())
    >>> read_fabric(fab, fo.Layout()) is r, len({id(u) for u in r.port_use})
    (True, 5)
    >>> fab.graph.nodes["s0"]["model"] = "q3400"  # a spine named as another model
    >>> read_fabric(fab, fo.Layout()) is r
    False
    """
    # Inside ``with unchanged(fab):`` (a study row, an optimizer's topology priced under
    # each policy) the fabric cannot change: its readings are kept with the block's, and the
    # content is read once, not compared again for every policy.
    held = once(fab, "cost_readings", list)
    if held is once(fab, "cost_readings", list):  # the same list: inside such a block
        for lay, reading in held:
            if lay == layout:
                return reading
        fab.validate()  # its rules on arrays, read once in the block
        columns = once(fab, "cost_columns", lambda: _Columns.of_fabric(fab))
        reading = _read(fab, layout, columns)
        held.append((layout, reading))
        return reading
    content = _Content.of(fab)
    cached = _CACHE.get(fab)
    if cached is None or cached[0] != content:
        fab.validate()  # its rules on arrays, read once in a study row
        cached = (content, [])
        _CACHE[fab] = cached
    for lay, reading in cached[1]:
        if lay == layout:
            return reading
    reading = _read(fab, layout, _Columns.of_content(content))
    cached[1].append((layout, reading))
    return reading


# -- the content as arrays ----------------------------------------------------------------------
def _arc_index(content: _Content) -> tuple[dict[Hashable, int], np.ndarray, np.ndarray]:
    index = {v: i for i, v in enumerate(content.nodes)}
    n = len(content.nodes)
    tail = np.repeat(np.arange(n, dtype=np.int64), np.asarray(content.degree, dtype=np.int64))
    head = np.fromiter(map(index.__getitem__, content.heads), dtype=np.int64,
                       count=len(content.heads))
    return index, tail, head


def _link_counts(links: list[Any], types: list[type] | set[type]) -> np.ndarray:
    if object in set(types):
        links = [1 if x is _ABSENT else x for x in links]
    return np.asarray(links, dtype=np.int64).reshape(len(links))


@dataclass(frozen=True)
class _Columns:
    """What :func:`_read` reads: nodes in graph order, arcs in graph order as index arrays,
    each arc's physical links, capacity, tier and tech (``str``), each node's role."""

    nodes: list[Hashable]
    index: dict[Hashable, int]
    tail: np.ndarray
    head: np.ndarray
    roles: list[Any]
    links: np.ndarray
    capacity: np.ndarray
    tier: list[str] | tuple[str, ...]
    tech: list[str] | None
    #: The tiers and techs coded (:func:`_codes`) when read off the row's arc labels.
    coded: tuple[tuple[np.ndarray, list[str]], tuple[np.ndarray, list[str]]] | None = None
    #: Each arc's reverse (its index), when the arrays found it already (validation asks).
    reverse: np.ndarray | None = None

    def tier_codes(self) -> tuple[np.ndarray, list[str]]:
        return self.coded[0] if self.coded else _codes(self.tier)

    def tech_codes(self) -> tuple[np.ndarray, list[str]]:
        return self.coded[1] if self.coded else _codes(self.tech or [])

    @classmethod
    def of_content(cls, content: _Content) -> _Columns:
        index, tail, head = _arc_index(content)
        return cls(content.nodes, index, tail, head, content.node_fields[0],
                   _link_counts(content.links, content.links_types),
                   np.asarray(content.capacity, dtype=float).reshape(len(content.heads)),
                   content.tier, content.tech)

    @classmethod
    def of_fabric(cls, fab: Fabric) -> _Columns:
        """The columns on the fabric's arrays (read once in a study row: nodes, arcs,
        capacities and tiers, in the same graph order), the rest by C-level maps; a graph
        the arrays do not read as is (not a plain DiGraph) by its content."""
        if type(fab.graph) is not nx.DiGraph:
            return cls.of_content(_Content.of(fab))
        ga = GraphArrays.from_fabric(fab)
        roles = list(map(methodcaller("get", "role"), fab.graph._node.values()))
        counts, coded = link_counts(fab), _label_codes(fab, ga)
        if counts is not None and coded is not None:  # the row's shared readings
            return cls(ga.nodes, ga.index, ga.tail, ga.head, roles, counts, ga.capacity,
                       ga.tiers, None, coded, ga.reverse)
        arcs = list(itertools.chain.from_iterable(map(dict.values, fab.graph._succ.values())))
        links = _column(arcs, "links", _ABSENT)
        tech = _column(arcs, "tech", "")
        if not set(map(type, tech)) <= {str}:
            tech = list(map(str, tech))
        return cls(ga.nodes, ga.index, ga.tail, ga.head, roles,
                   _link_counts(links, set(map(type, links))), ga.capacity, ga.tiers, tech)


def _label_codes(fab: Fabric, ga: GraphArrays
                 ) -> tuple[tuple[np.ndarray, list[str]], tuple[np.ndarray, list[str]]] | None:
    """:func:`_codes` of every arc's tier and tech, from the arc labels a row reads once
    (:func:`~fabricopt.graph_arrays.arc_labels`: a few distinct ``(tier, tech)`` pairs), so
    no pass over the arcs here: each name coded in the order the arcs first meet it. None
    where a tech is not a string (pricing reads ``str`` of it, ``""`` where unset)."""
    labels = arc_labels(fab, ga)
    if not all(type(tech) is str for _, tech in labels.labels):
        return None
    m, k = len(labels.code), len(labels.labels)
    first = np.full(k, m, dtype=np.int64)  # the first arc of each label
    np.minimum.at(first, labels.code, np.arange(m, dtype=np.int64))
    out = []
    for part in (0, 1):
        seen: dict[str, int] = {}  # each name's first arc: the least over its labels
        for label, at in zip(labels.labels, first.tolist(), strict=True):
            seen[label[part]] = min(seen.get(label[part], m), at)
        names = sorted(seen, key=seen.__getitem__)
        of_label = np.array([names.index(label[part]) for label in labels.labels],
                            dtype=np.int64).reshape(k)
        out.append((of_label[labels.code] if m else np.zeros(0, dtype=np.int64), names))
    return out[0], out[1]


# -- the reading --------------------------------------------------------------------------------
def _codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Integer code of every value (first seen, first coded) and the values by code."""
    table = {x: i for i, x in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(table.__getitem__, values), dtype=np.int64, count=len(values))
    return codes, list(table)


def _port_uses(n: int, tail: np.ndarray, mask: np.ndarray, tier_code: np.ndarray,
               tiers: list[str], tech_code: np.ndarray, techs: list[str], links: np.ndarray,
               rate: np.ndarray) -> list[PortUse]:
    """Port use of every node over its arcs where ``mask`` holds: ports per tier in the order
    the tiers first appear among its arcs, the fastest rate, the techs. Equal uses are one
    object."""
    sel = np.flatnonzero(mask)
    t = tail[sel]
    n_tiers, n_techs = max(len(tiers), 1), max(len(techs), 1)
    pair, first, inverse = small_unique(t * n_tiers + tier_code[sel], n * n_tiers,
                                        return_index=True)
    ports = np.bincount(inverse.reshape(-1), weights=links[sel], minlength=len(pair))
    order = np.argsort(first, kind="stable")  # by node (arcs run node by node), then appearance
    node, tier, ports = pair[order] // n_tiers, pair[order] % n_tiers, ports[order]
    per_node = np.bincount(node, minlength=n)
    slot = np.arange(len(node)) - (np.cumsum(per_node) - per_node)[node]
    width = int(per_node.max()) if n else 0
    # One row per node: (tier, ports) by appearance (-1 past its tiers), the techs it uses
    # (0/1 per tech), its fastest rate. Equal rows are equal port uses.
    rows = np.full((n, 2 * width + n_techs + 1), -1.0)
    rows[node, 2 * slot] = tier
    rows[node, 2 * slot + 1] = ports
    rows[:, 2 * width:-1] = 0.0
    used = small_unique(t * n_techs + tech_code[sel], n * n_techs)[0]
    rows[used // n_techs, 2 * width + used % n_techs] = 1.0
    fastest = np.zeros(n)
    np.maximum.at(fastest, t, rate[sel])
    rows[:, -1] = fastest
    if not n:
        return []
    # Equal rows by one sort of the rows (np.unique over rows sorts them as raw bytes, ten
    # times slower); stable, so each group's first row is its first node, as unique's is.
    order = np.lexsort(rows.T[::-1])
    ranked = rows[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    rep = order[new]
    shared = []
    for r in rep.tolist():
        row = rows[r]
        by_tier = {tiers[int(row[2 * k])]: int(row[2 * k + 1]) for k in range(width)
                   if row[2 * k] >= 0}
        names = frozenset(techs[k] for k in np.flatnonzero(row[2 * width:-1]).tolist())
        shared.append(PortUse(by_tier, float(row[-1]), names))
    return [shared[g] for g in group.reshape(-1).tolist()]


def _read(fab: Fabric, layout: Layout, columns: _Columns) -> FabricReading:
    index, tail, head, nodes = columns.index, columns.tail, columns.head, columns.nodes
    n, m = len(nodes), len(tail)
    roles = columns.roles
    role_code = np.fromiter(map({"gpu": 0, "nic": 1}.get, roles, itertools.repeat(2)),
                            dtype=np.int64, count=n)  # roles validated: hashable
    links = columns.links
    rate = columns.capacity / links
    tier_code, tiers = columns.tier_codes()
    tech_code, techs = columns.tech_codes()
    everything = np.ones(m, dtype=bool)
    port_use = _port_uses(n, tail, everything, tier_code, tiers, tech_code, techs, links, rate)
    # A NIC's ports: not its PCIe links to GPUs; a GPU's: not those either, nor its scale-up
    # links, which are built into it (see fabricopt.cost.bom).
    # is_scale_up_arc() of every (tier, tech) pair; it reads str() of both, as coded here.
    scale_up = np.array([is_scale_up(t, x) for t, x in itertools.product(tiers, techs)],
                        dtype=bool)
    arc_scale_up = scale_up[tier_code * len(techs) + tech_code] if m else np.zeros(0, bool)
    pcie = ((role_code[tail] == 0) & (role_code[head] == 1)) | \
        ((role_code[tail] == 1) & (role_code[head] == 0))
    nic_mask = ~pcie & ~((role_code[tail] == 0) & arc_scale_up)
    nic_use = _port_uses(n, tail, nic_mask, tier_code, tiers, tech_code, techs, links, rate)
    nic_port_use: list[PortUse | None] = [
        use if (r == "nic" or (r == "gpu" and use.used)) else None
        for r, use in zip(roles, nic_use, strict=True)]

    node_data = list(map(fab.graph._node.__getitem__, nodes))
    in_system = np.array([t in IN_SYSTEM_TIERS for t in tiers], dtype=bool)
    arcs = _Arcs(nodes, index, node_data, roles, tail, head,
                 in_system[tier_code] if m else np.zeros(0, bool), arc_scale_up)
    placement = _place(fab, layout, arcs)
    in_server = _in_server(arcs, layout) | _rack_trays(arcs)
    # GPUs of a system (reached by its in-server switches over in-system links), and NIC
    # nodes on their PCIe: the system's price holds their NICs.
    in_system_switch = np.zeros(n, dtype=bool)
    in_system_switch[[index[v] for v in in_server]] = True
    nic_in_system = np.zeros(n, dtype=bool)
    nic_in_system[head[in_system_switch[tail] & (role_code[head] == 0) & arcs.in_system]] = True
    nic_in_system[head[pcie & nic_in_system[tail]]] = True
    return FabricReading(
        nodes, node_data, roles,
        [i for i, r in enumerate(roles) if r == "switch"], port_use, nic_port_use, placement,
        in_server, _bundles(placement, layout, in_server, index, tail, head, pcie,
                            links, rate, tier_code, tiers, tech_code, techs,
                            columns.reverse), nic_in_system)


def _rack_trays(arcs: _Arcs) -> frozenset[Hashable]:
    """NVLink Switch trays of a rack-scale system (a switch with a ``tray`` attribute that
    reaches GPUs over in-system links, as in a GB200 NVL72): part of the rack's price like a
    DGX's NVSwitch chips are part of the server's, so both are reported apart alike."""
    reach = arcs.role_is("switch")[arcs.tail] & arcs.role_is("gpu")[arcs.head] & arcs.in_system
    return frozenset(arcs.nodes[i] for i in np.unique(arcs.tail[reach]).tolist()
                     if arcs.node_data[i].get("tray") is not None)


def _bundles(placement: Placement, layout: Layout,
             in_server: frozenset[Hashable], index: Mapping[Hashable, int], tail: np.ndarray,
             head: np.ndarray, pcie: np.ndarray, links: np.ndarray, rate: np.ndarray,
             tier_code: np.ndarray, tiers: list[str], tech_code: np.ndarray,
             techs: list[str], back: np.ndarray | None = None) -> Bundles:
    """Every bundle once: by the first of its two arcs in arc order (the validated fabric has
    both), PCIe links between a GPU and its NIC left out. ``back`` is each arc's reverse
    when the caller has it (the arrays' :attr:`~fabricopt.graph_arrays.GraphArrays.reverse`:
    found here the same way)."""
    n, m = len(index), len(tail)
    pos = np.arange(m)
    if back is None:
        code = tail * n + head
        order = np.argsort(code, kind="stable")
        back = order[np.searchsorted(code[order], head * n + tail)] if m else pos
    keep = np.flatnonzero((back > pos) & ~pcie)
    u, v = tail[keep], head[keep]
    lengths = placement._lengths_m(u, v, tier_code[keep], tiers, layout)
    in_row = ((placement.row[u] == placement.row[v]) & (placement.row[u] >= 0)
              & (placement.rack[u] != placement.rack[v]))
    server = np.zeros(n, dtype=bool)
    server[[index[w] for w in in_server]] = True
    in_system = np.array([t in IN_SYSTEM_TIERS for t in tiers], dtype=bool)
    section = in_system[tier_code[keep]] & (server[u] | server[v])
    rate_values, rate_code = np.unique(rate[keep], return_inverse=True)
    length_values, length_code = np.unique(lengths, return_inverse=True)
    key, kinds = tier_code[keep], max(len(tiers), 1)
    for c, size in ((tech_code[keep], len(techs)), (rate_code.reshape(-1), len(rate_values)),
                    (length_code.reshape(-1), len(length_values)),
                    (in_row.astype(np.int64), 2), (section.astype(np.int64), 2)):
        key, kinds = key * size + c, kinds * size
    distinct, kind = small_unique(key, kinds)
    classes = []
    for k in distinct.tolist():
        k, sec = divmod(k, 2)
        k, row = divmod(k, 2)
        k, length = divmod(k, len(length_values))
        k, r = divmod(k, len(rate_values))
        tier, tech = divmod(k, len(techs))
        classes.append((tiers[tier], techs[tech], float(rate_values[r]),
                        float(length_values[length]), bool(row),
                        "in_server" if sec else "network"))
    return Bundles(u, v, links[keep], kind.reshape(-1), classes)
