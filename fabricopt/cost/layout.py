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

import math
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .._checks import check_choice, check_int, check_positive, dataclass_from_mapping, fail
from ..fabric import Fabric
from ..tiers import IN_SYSTEM_TIERS, is_scale_up_arc, tier_of

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
        dist = np.abs(self.x_m[u] - self.x_m[v]) + np.abs(self.y_m[u] - self.y_m[v])
        # Per distinct tier, not per link: a 16K-GPU fabric has 10^5 links and four tiers.
        names: dict[str, int] = {}
        code = np.fromiter((names.setdefault(t, len(names)) for t in tiers), dtype=np.int64,
                           count=len(tiers))
        slack = np.array([layout.slack_m_by_tier.get(t, layout.slack_m) for t in names],
                         dtype=float)[code]
        out = dist + slack
        same_rack = self.rack[u] == self.rack[v]
        out[same_rack] = layout.in_rack_m
        same_unit = (self.unit[u] == self.unit[v]) & (self.unit[u] >= 0)
        out[same_unit] = layout.in_node_m
        for tier, metres in layout.length_m_by_tier.items():
            if tier in names:
                out[code == names[tier]] = metres
        return out


def _units(fab: Fabric, layout: Layout, gpus: list[Hashable]) -> dict[Hashable, int]:
    """Server or scale-up unit of every GPU, numbered in endpoint order."""
    g = fab.graph
    nvs = nx.Graph()
    nvs.add_edges_from((u, v) for u, v, t in g.edges(data="tier") if t in IN_SYSTEM_TIERS)
    label: dict[Hashable, Any] = {}
    for comp in nx.connected_components(nvs):
        key = ("domain", min(map(repr, comp)))
        for v in comp:
            label[v] = key
    for i, v in enumerate(gpus):
        if v in label:
            continue
        d = g.nodes[v]
        if d.get("node") is not None:
            label[v] = ("node", d.get("su"), d.get("pod"), d.get("node"))
        else:
            label[v] = ("chunk", i // layout.gpus_per_server)
    number: dict[Any, int] = {}
    return {v: number.setdefault(label[v], len(number)) for v in gpus}


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
    layout = layout or Layout()
    g = fab.graph
    out = set()
    for v in fab.switches:
        gpus = [w for w in g.successors(v) if g.nodes[w].get("role") == "gpu"
                and tier_of(g[v][w]) in IN_SYSTEM_TIERS]
        if not gpus or g.nodes[v].get("tray") is not None:
            continue
        servers = {(g.nodes[w].get("su"), g.nodes[w].get("pod"), g.nodes[w].get("node"))
                   for w in gpus}
        if any(key[2] is None for key in servers):
            if len(gpus) <= layout.gpus_per_server:
                out.add(v)
        elif len(servers) == 1:
            out.add(v)
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
    layout = layout or Layout()
    g = fab.graph
    nodes = list(g.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    role = [g.nodes[v].get("role") for v in nodes]
    endpoint_set = set(fab.endpoints)
    gpus = list(fab.endpoints) + [v for v, r in zip(nodes, role, strict=True)
                                  if r == "gpu" and v not in endpoint_set]
    unit_of = _units(fab, layout, gpus)
    unit = np.full(n, -1, dtype=np.int64)
    rack = np.full(n, -1, dtype=np.int64)

    # Racks: fill with whole units in order; a unit larger than a rack gets its own.
    unit_size = Counter(unit_of.values())
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
    for v, u in unit_of.items():
        unit[index[v]] = u
        rack[index[v]] = unit_rack[u]
    rows = max(1, math.ceil(racks / layout.racks_per_row))
    central = (rows + 1) // 2  # the network row goes between compute rows central-1 and central
    row = np.where(rack >= 0, rack // layout.racks_per_row, -1)
    slot = np.where(rack >= 0, rack % layout.racks_per_row, 0).astype(float)

    def row_y(r: np.ndarray | int) -> np.ndarray:
        r = np.asarray(r)
        return np.where(r >= central, r + 1, r) * layout.row_pitch_m

    x = slot * layout.rack_pitch_m
    y = row_y(row).astype(float)

    # NICs and scale-up switches sit with a GPU neighbour; then leaves; then the rest.
    network_slots = 0
    row_end_rack: dict[int, int] = {}
    next_rack = racks
    pending: list[tuple[int, Hashable]] = []
    for i, v in enumerate(nodes):
        if role[i] == "gpu":
            continue
        gpu_nbrs = [w for w in g.successors(v) if g.nodes[w].get("role") == "gpu"]
        if role[i] == "nic" or (gpu_nbrs and any(is_scale_up_arc(g[v][w])
                                                 for w in gpu_nbrs)):
            if gpu_nbrs:
                j = index[gpu_nbrs[0]]
                unit[i], rack[i], row[i], x[i], y[i] = unit[j], rack[j], row[j], x[j], y[j]
                continue
        pending.append((int(g.nodes[v].get("layer") or 0), v))
    # A NIC's switch neighbours count as GPUs for leaf placement: look through NICs.
    gpu_like = {v for v, i in index.items() if rack[i] >= 0 and role[i] in ("gpu", "nic")}
    central_queue: list[int] = []
    for _, v in sorted(pending, key=lambda lv: lv[0]):
        i = index[v]
        nbr_racks = [int(rack[index[w]]) for w in g.successors(v) if w in gpu_like]
        if not nbr_racks or layout.leaf_placement == "central":
            central_queue.append(i)
            continue
        home = Counter(nbr_racks).most_common(1)[0][0]
        if layout.leaf_placement == "top_of_rack":
            r = home // layout.racks_per_row
            rack[i], row[i] = home, r
            x[i], y[i] = (home % layout.racks_per_row) * layout.rack_pitch_m, row_y(r)
        else:  # end_of_row: one network rack before slot 0 of the row
            r = home // layout.racks_per_row
            if r not in row_end_rack:
                row_end_rack[r] = next_rack
                next_rack += 1
            rack[i], row[i], x[i], y[i] = row_end_rack[r], r, -layout.rack_pitch_m, row_y(r)
    for i in central_queue:
        k = network_slots // layout.switches_per_network_rack
        network_slots += 1
        rack[i], row[i] = next_rack + k, -1
        x[i], y[i] = k * layout.rack_pitch_m, central * layout.row_pitch_m
    total_racks = next_rack + math.ceil(network_slots / layout.switches_per_network_rack)
    return Placement(nodes, index, unit, rack, row, x, y, total_racks, rows)

