"""A simple physical layout: GPUs in servers, servers in racks, racks in rows, switches placed.

The model, every step of which a :class:`Layout` parameter controls:

1. **Servers.** GPUs joined through NVSwitches (arcs of an in-system tier,
   :data:`fabricopt.tiers.IN_SYSTEM_TIERS`: ``"gpu-nvswitch"``) form one
   scale-up unit (a DGX, an NVL72 rack); otherwise GPUs sharing the node attribute ``node``
   (with ``pod``/``su`` when set) form a server; otherwise consecutive endpoints form servers of
   ``gpus_per_server``.
2. **Racks.** Units fill racks in endpoint order, ``gpus_per_rack`` GPUs at most; a unit is
   never split, and a unit larger than a rack (a rack-scale system such as NVL72) gets a rack of
   its own. Racks fill rows of ``racks_per_row``. The default of 32 GPUs is four 8-GPU servers
   per rack (four DGX H100 at 10.2 kW max each is about 41 kW per rack).
3. **Switches.** A switch with a scale-up arc (NVLink, UALink) to a GPU sits in that GPU's unit.
   A leaf (a switch with a scale-out arc to a GPU or NIC) sits on top of the rack holding most of
   its GPUs (``leaf_placement="top_of_rack"``), at the end of that rack's row (``"end_of_row"``)
   or in the central network row (``"central"``). Every other switch (spine, core, second-level
   NVLink switches) sits in the central network row, which runs through the middle of the hall,
   ``switches_per_network_rack`` to a rack. NICs sit with their GPU.
4. **Lengths.** A link inside one unit is ``in_node_m`` long, inside one rack ``in_rack_m``;
   any other link runs the Manhattan distance between the two racks plus a slack per tier for
   the runs up to and down from the cable tray and service loops (``slack_m``, refined by
   ``slack_m_by_tier``). ``length_m_by_tier`` sets the length of every link of a tier outright.

The distances are a modelling default, not a measurement. The project's hardware reference
suggests 0.5-3 m in rack, 3-30 m in a row, 20-100 m leaf to spine and 50-500 m spine to core
for a large hall; change the parameters to match a real floor plan.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import check_choice, check_int, check_positive, dataclass_from_mapping, fail
from ..fabric import Fabric
from ..graph_arrays import small_unique
from ..tiers import IN_SYSTEM_TIERS, check_tier_names, is_scale_up_arc, tier_of

LEAF_PLACEMENTS = ("top_of_rack", "end_of_row", "central")


def _check_tier_map(name: str, value: Any, allow_zero: bool) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise fail("Layout", name, "a mapping from tier name to metres", value)
    out = {}
    for tier, metres in value.items():
        if not isinstance(tier, str):
            raise fail("Layout", name, "a mapping with tier names (str) as keys", value)
        out[tier] = check_positive("Layout", f"{name}[{tier!r}]", metres, allow_zero)
    return out


@dataclass(frozen=True)
class Layout:
    """Where devices sit and how long the links between them are (see the module notes).

    Parameters
    ----------
    gpus_per_server : int
        GPUs per server when GPUs carry neither NVSwitch links nor a ``node`` attribute.
    gpus_per_rack : int
        Most GPUs one rack holds (default 32: four 8-GPU servers).
    racks_per_row : int
        Racks in one row.
    rack_pitch_m, row_pitch_m : float
        Distance between neighbouring racks in a row, and between rows (aisle included).
    leaf_placement : {"top_of_rack", "end_of_row", "central"}
        Where leaves (first scale-out switches) go.
    switches_per_network_rack : int
        Switches per rack in the central network row.
    in_node_m, in_rack_m : float
        Length of a link inside one server or scale-up unit, and inside one rack.
    slack_m : float
        Added to the Manhattan distance of links between racks.
    slack_m_by_tier : mapping of str to float
        Slack per tier, overriding ``slack_m``.
    length_m_by_tier : mapping of str to float
        Length of every link of a tier, overriding the layout.

    Examples
    --------
    >>> import fabricopt as fo
    >>> lay = fo.Layout(leaf_placement="end_of_row", length_m_by_tier={"leaf-spine": 30.0})
    >>> lay.length_m_by_tier["leaf-spine"], lay.leaf_placement
    (30.0, 'end_of_row')
    >>> fo.Layout(in_rack_m=-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: Layout(): in_rack_m must be a finite number > 0, ...
    """

    gpus_per_server: int = 8
    gpus_per_rack: int = 32
    racks_per_row: int = 16
    rack_pitch_m: float = 0.6
    row_pitch_m: float = 3.0
    leaf_placement: str = "top_of_rack"
    switches_per_network_rack: int = 16
    in_node_m: float = 0.5
    in_rack_m: float = 2.0
    slack_m: float = 4.0
    slack_m_by_tier: Mapping[str, float] = field(default_factory=dict)
    length_m_by_tier: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        func = "Layout"
        for name in ("gpus_per_server", "gpus_per_rack", "racks_per_row",
                     "switches_per_network_rack"):
            object.__setattr__(self, name, check_int(func, name, getattr(self, name), 1))
        for name in ("rack_pitch_m", "row_pitch_m", "in_node_m", "in_rack_m"):
            object.__setattr__(self, name, check_positive(func, name, getattr(self, name)))
        object.__setattr__(self, "slack_m",
                           check_positive(func, "slack_m", self.slack_m, allow_zero=True))
        check_choice(func, "leaf_placement", self.leaf_placement, LEAF_PLACEMENTS)
        object.__setattr__(self, "slack_m_by_tier",
                           _check_tier_map("slack_m_by_tier", self.slack_m_by_tier, True))
        object.__setattr__(self, "length_m_by_tier",
                           _check_tier_map("length_m_by_tier", self.length_m_by_tier, False))

    def check_tiers(self, fab: Fabric, func: str = "estimate_cost") -> None:
        """Raise for a tier in ``length_m_by_tier`` or ``slack_m_by_tier`` that ``fab`` has
        not and no generator builds (a typo would be ignored), with a suggestion.

        >>> Layout(length_m_by_tier={"ring": 1.0}).check_tiers(__import__("fabricopt").ring(4))
        """
        for name in ("length_m_by_tier", "slack_m_by_tier"):
            check_tier_names(func, f"layout.{name}", getattr(self, name), fab)

    @classmethod
    def coerce(cls, value: Any, func: str = "estimate_cost") -> Layout:
        """``value`` as a Layout: None gives the defaults, a mapping gives ``Layout(**value)``.

        >>> Layout.coerce({"racks_per_row": 8}).racks_per_row
        8
        """
        if value is None:
            return cls()
        if isinstance(value, Layout):
            return value
        if isinstance(value, Mapping):
            return dataclass_from_mapping(func, "layout", cls, value,
                                          "a Layout or a mapping of Layout fields")
        raise fail(func, "layout", "None, a Layout or a mapping of Layout fields", value)


@dataclass
class Placement:
    """The outcome of placing a fabric: a position per device and a length per link.

    Arrays are indexed like ``nodes``. ``unit`` is the server or scale-up unit (-1 for switches
    outside one), ``rack`` the rack id (racks of the central row and row ends included), ``row``
    the row (-1 for the central network row), ``x_m``/``y_m`` the rack position in metres.
    """

    nodes: list[Hashable]
    index: dict[Hashable, int]
    unit: np.ndarray
    rack: np.ndarray
    row: np.ndarray
    x_m: np.ndarray
    y_m: np.ndarray
    racks: int
    rows: int

    def lengths_m(self, u: np.ndarray, v: np.ndarray, tiers: list[str],
                  layout: Layout) -> np.ndarray:
        """Length of the links between node indices ``u`` and ``v`` (tier per link)."""
        # Per distinct tier, not per link: a 16K-GPU fabric has 10^5 links and four tiers.
        names = {t: i for i, t in enumerate(dict.fromkeys(tiers))}
        code = np.fromiter(map(names.__getitem__, tiers), dtype=np.int64, count=len(tiers))
        return self._lengths_m(u, v, code, list(names), layout)

    def _lengths_m(self, u: np.ndarray, v: np.ndarray, code: np.ndarray, names: list[str],
                   layout: Layout) -> np.ndarray:
        """:meth:`lengths_m` with the tier of link ``k`` given as ``names[code[k]]``."""
        dist = np.abs(self.x_m[u] - self.x_m[v]) + np.abs(self.y_m[u] - self.y_m[v])
        slack = np.array([layout.slack_m_by_tier.get(t, layout.slack_m) for t in names],
                         dtype=float).reshape(len(names))[code]
        out = dist + slack
        same_rack = self.rack[u] == self.rack[v]
        out[same_rack] = layout.in_rack_m
        same_unit = (self.unit[u] == self.unit[v]) & (self.unit[u] >= 0)
        out[same_unit] = layout.in_node_m
        for tier, metres in layout.length_m_by_tier.items():
            if tier in names:
                out[code == names.index(tier)] = metres
        return out


@dataclass(frozen=True)
class _Arcs:
    """What placement reads of a fabric, as arrays: nodes in graph order, arcs in graph order
    (so the successors of a node, in order, are one run of arcs), and per arc whether its tier
    is an in-system one and whether it is a scale-up link."""

    nodes: list[Hashable]
    index: dict[Hashable, int]
    node_data: list[Mapping[str, Any]]
    roles: list[Any]
    tail: np.ndarray
    head: np.ndarray
    in_system: np.ndarray
    scale_up: np.ndarray
    # Each role's nodes, read on the first role_is (False: a role that is no dict key).
    _role_masks: dict[Any, np.ndarray] | bool | None = field(default=None, repr=False,
                                                             compare=False)

    @classmethod
    def of(cls, fab: Fabric) -> _Arcs:
        g = fab.graph
        nodes = list(g.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        node_data = [g.nodes[v] for v in nodes]
        edges = list(g.edges(data=True))
        m = len(edges)
        return cls(nodes, index, node_data, [d.get("role") for d in node_data],
                   np.fromiter((index[u] for u, _, _ in edges), dtype=np.int64, count=m),
                   np.fromiter((index[v] for _, v, _ in edges), dtype=np.int64, count=m),
                   np.fromiter((tier_of(d) in IN_SYSTEM_TIERS for _, _, d in edges), dtype=bool,
                               count=m),
                   np.fromiter((is_scale_up_arc(d) for _, _, d in edges), dtype=bool, count=m))

    def role_is(self, *roles: str) -> np.ndarray:
        """Mask of the nodes whose role is one of ``roles`` (a new array)."""
        masks = self._role_masks
        if masks is None:  # one pass over the roles for every question (asked six times)
            masks = _role_masks(self.roles)
            object.__setattr__(self, "_role_masks", masks)
        out = np.zeros(len(self.roles), dtype=bool)
        for role in roles:
            if masks is False:  # a role that cannot be a key: asked node by node
                out |= np.array([r == role for r in self.roles], dtype=bool).reshape(len(out))
            elif role in masks:
                out |= masks[role]
        return out


def _role_masks(roles: list[Any]) -> dict[Any, np.ndarray] | bool:
    """A mask of the nodes of each distinct role (``==`` as ``in`` compares them), or False
    when a role cannot be a dict key."""
    try:
        seen: dict[Any, int] = {}
        code = np.fromiter(map(seen.setdefault, roles, itertools.count()), dtype=np.int64,
                           count=len(roles))
    except TypeError:
        return False
    return {role: code == first for role, first in seen.items()}


def _units(arcs: _Arcs, layout: Layout, gpus: list[int]) -> list[int]:
    """Server or scale-up unit of every GPU (node indices ``gpus``), numbered in that order."""
    n = len(arcs.nodes)
    sel = np.flatnonzero(arcs.in_system)
    # A GPU on in-system links is in the unit of its connected component over them (units are
    # numbered in GPU order below, so only which GPUs share one matters).
    domain = [-1] * n
    if len(sel):
        joined = sp.coo_matrix((np.ones(len(sel)), (arcs.tail[sel], arcs.head[sel])),
                               shape=(n, n))
        _, comp = connected_components(joined, directed=False)
        member = np.zeros(n, dtype=bool)
        member[arcs.tail[sel]] = True
        member[arcs.head[sel]] = True
        of_gpu = np.where(member, comp, -1)[np.asarray(gpus, dtype=np.int64)]
        if len(of_gpu) and of_gpu.min() >= 0:
            # Every GPU in a domain (a cluster of servers): the domains numbered in order of
            # first appearance, on arrays (the loop below took a tenth of a 24,576-GPU
            # estimate).
            _, first, inverse = np.unique(of_gpu, return_index=True, return_inverse=True)
            rank = np.empty(len(first), dtype=np.int64)
            rank[np.argsort(first, kind="stable")] = np.arange(len(first))
            return rank[inverse.reshape(-1)].tolist()
        domain = np.where(member, comp, -1).tolist()
    number: dict[Any, int] = {}
    out = []
    for k, i in enumerate(gpus):
        if domain[i] >= 0:
            label: Any = ("domain", domain[i])
        else:
            d = arcs.node_data[i]
            label = (("node", d.get("su"), d.get("pod"), d.get("node"))
                     if d.get("node") is not None else ("chunk", k // layout.gpus_per_server))
        out.append(number.setdefault(label, len(number)))
    return out


def in_server_switches(fab: Fabric, layout: Layout | None = None) -> frozenset[Hashable]:
    """Switches built into one server: the NVSwitch chips of a DGX/HGX baseboard.

    A switch is in a server when it reaches GPUs over links of an in-system tier
    (:data:`fabricopt.tiers.IN_SYSTEM_TIERS`) and those GPUs are one server: they share their
    ``node`` (with ``su`` and ``pod``) attribute, or, for GPUs without one, they are at most
    ``layout.gpus_per_server``. A switch with a ``tray`` attribute is a unit of its own (the
    NVLink Switch trays of a GB200 NVL72, whose chips reach GPUs of 18 compute trays), not in
    a server; nor is a second-level NVLink switch, which reaches no GPU directly.

    Examples
    --------
    >>> import fabricopt as fo
    >>> len(in_server_switches(fo.dgx_h100())), len(in_server_switches(fo.gb200_nvl72()))
    (4, 0)
    """
    return _in_server(_Arcs.of(fab), layout or Layout())


def _in_server(arcs: _Arcs, layout: Layout) -> frozenset[Hashable]:
    """:func:`in_server_switches` on the arrays of a fabric."""
    n = len(arcs.nodes)
    is_gpu = arcs.role_is("gpu")
    reach = arcs.role_is("switch")[arcs.tail] & is_gpu[arcs.head] & arcs.in_system
    t, h = arcs.tail[reach], arcs.head[reach]
    gpus = np.bincount(t, minlength=n)
    # The server of each GPU reached, coded; and whether it names no node.
    # By C-level maps over the GPUs reached (a loop per GPU was a tenth of a 24,576-GPU
    # cluster's pricing): each (su, pod, node) coded densely in order of first appearance.
    reached = small_unique(h, n)[0]
    datas = list(map(arcs.node_data.__getitem__, reached.tolist()))
    get = operator.methodcaller
    names = list(map(get("get", "node"), datas))
    keys = list(zip(map(get("get", "su"), datas), map(get("get", "pod"), datas), names,
                    strict=True))
    servers: dict[tuple[Any, Any, Any], int] = {}
    first = np.fromiter(map(servers.setdefault, keys, itertools.count()), dtype=np.int64,
                        count=len(keys))
    server = np.zeros(n, dtype=np.int64)
    server[reached] = np.searchsorted(np.fromiter(servers.values(), dtype=np.int64,
                                                  count=len(servers)), first)
    unnamed = np.zeros(n, dtype=bool)
    unnamed[reached] = np.fromiter(map(operator.is_, names, itertools.repeat(None)), dtype=bool,
                                   count=len(names))
    any_unnamed = np.zeros(n, dtype=bool)
    any_unnamed[t[unnamed[h]]] = True
    width = max(len(servers), 1)
    distinct = np.bincount(np.unique(t * width + server[h]) // width, minlength=n)
    out = set()
    for i in np.flatnonzero(gpus).tolist():
        if arcs.node_data[i].get("tray") is not None:
            continue
        if (gpus[i] <= layout.gpus_per_server) if any_unnamed[i] else distinct[i] == 1:
            out.add(arcs.nodes[i])
    return frozenset(out)


def place(fab: Fabric, layout: Layout | None = None) -> Placement:
    """Place every device of ``fab`` on the floor (see the module notes for the rules).

    Examples
    --------
    >>> import fabricopt as fo
    >>> p = place(fo.ring(40), fo.Layout(gpus_per_server=8, gpus_per_rack=16))
    >>> p.racks, int(p.rack[p.index["n39"]])
    (3, 2)
    """
    return _place(fab, layout or Layout(), _Arcs.of(fab))


def _place(fab: Fabric, layout: Layout, arcs: _Arcs) -> Placement:
    """:func:`place` on the arrays of a fabric."""
    nodes, index = arcs.nodes, arcs.index
    n = len(nodes)
    role = arcs.roles
    endpoint_set = set(fab.endpoints)
    gpus = [index[v] for v in fab.endpoints] + [
        i for i, (v, r) in enumerate(zip(nodes, role, strict=True))
        if r == "gpu" and v not in endpoint_set]
    unit_of = _units(arcs, layout, gpus)
    unit = np.full(n, -1, dtype=np.int64)
    rack = np.full(n, -1, dtype=np.int64)

    # Racks: fill with whole units in order; a unit larger than a rack gets its own.
    unit_size = Counter(unit_of)
    unit_rack: dict[int, int] = {}
    racks, fill = 0, 0
    for u in sorted(unit_size):
        size = unit_size[u]
        if racks == 0 or fill + size > layout.gpus_per_rack:
            racks, fill = racks + 1, 0
        unit_rack[u] = racks - 1
        fill += size
        if size > layout.gpus_per_rack:
            fill = layout.gpus_per_rack  # a rack-scale unit closes its rack
    if gpus:
        unit[gpus] = unit_of
        rack[gpus] = [unit_rack[u] for u in unit_of]
    rows = max(1, math.ceil(racks / layout.racks_per_row))
    central = (rows + 1) // 2  # the network row goes between compute rows central-1 and central
    row = np.where(rack >= 0, rack // layout.racks_per_row, -1)
    slot = np.where(rack >= 0, rack % layout.racks_per_row, 0).astype(float)

    def row_y(r: np.ndarray | int) -> np.ndarray:
        r = np.asarray(r)
        return np.where(r >= central, r + 1, r) * layout.row_pitch_m

    x = slot * layout.rack_pitch_m
    y = row_y(row).astype(float)

    # NICs and scale-up switches sit with their first GPU neighbour; then leaves; then the
    # rest. (Only GPUs are copied from, and they are placed: one step for all.)
    is_gpu, is_nic = arcs.role_is("gpu"), arcs.role_is("nic")
    to_gpu = is_gpu[arcs.head]
    first_gpu = np.full(n, -1, dtype=np.int64)
    tails, first = np.unique(arcs.tail[to_gpu], return_index=True)
    first_gpu[tails] = arcs.head[to_gpu][first]
    up_to_gpu = np.zeros(n, dtype=bool)
    up_to_gpu[arcs.tail[to_gpu & arcs.scale_up]] = True
    with_gpu = ~is_gpu & (first_gpu >= 0) & (is_nic | up_to_gpu)
    j = first_gpu[with_gpu]
    unit[with_gpu], rack[with_gpu], row[with_gpu] = unit[j], rack[j], row[j]
    x[with_gpu], y[with_gpu] = x[j], y[j]
    pending = [(int(arcs.node_data[i].get("layer") or 0), i)
               for i in np.flatnonzero(~is_gpu & ~with_gpu).tolist()]
    # A NIC's switch neighbours count as GPUs for leaf placement: look through NICs. The home
    # of a node is the rack most of its GPU-like neighbours are in (ties: the first met).
    gpu_like = (rack >= 0) & (is_gpu | is_nic)
    near = gpu_like[arcs.head]
    width = max(int(rack.max()) + 1 if n else 1, 1)
    pairs, first, count = np.unique(arcs.tail[near] * width + rack[arcs.head[near]],
                                    return_index=True, return_counts=True)
    best = np.lexsort((first, -count, pairs // width))
    owners, at = np.unique((pairs // width)[best], return_index=True)
    home = np.full(n, -1, dtype=np.int64)
    home[owners] = (pairs % width)[best][at]
    # Switches in order of layer (graph order within one), each placed by its home rack.
    queue = np.array([i for _, i in sorted(pending, key=lambda li: li[0])], dtype=np.int64)
    homed = home[queue] >= 0 if layout.leaf_placement != "central" else \
        np.zeros(len(queue), dtype=bool)
    leaves, to_central = queue[homed], queue[~homed]
    h = home[leaves]
    r = h // layout.racks_per_row
    next_rack = racks
    if layout.leaf_placement == "top_of_rack":
        rack[leaves], row[leaves] = h, r
        x[leaves], y[leaves] = (h % layout.racks_per_row) * layout.rack_pitch_m, row_y(r)
    else:  # end_of_row: one network rack before slot 0 of each row, numbered as rows are met
        met, first = np.unique(r, return_index=True)
        end_rack = np.zeros(int(met.max()) + 1 if len(met) else 0, dtype=np.int64)
        end_rack[met[np.argsort(first, kind="stable")]] = next_rack + np.arange(len(met))
        next_rack += len(met)
        rack[leaves], row[leaves] = end_rack[r], r
        x[leaves], y[leaves] = -layout.rack_pitch_m, row_y(r)
    k = np.arange(len(to_central)) // layout.switches_per_network_rack
    rack[to_central], row[to_central] = next_rack + k, -1
    x[to_central], y[to_central] = k * layout.rack_pitch_m, central * layout.row_pitch_m
    total_racks = next_rack + math.ceil(len(to_central) / layout.switches_per_network_rack)
    return Placement(nodes, index, unit, rack, row, x, y, total_racks, rows)

