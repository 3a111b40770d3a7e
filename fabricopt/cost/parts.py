"""The items an estimate is made of: parts (a share of catalog units in one tier), the kinds
of links priced alike with their modules, cables and fibres, and the devices (the switch and NIC
models chosen for each node, grouped).

What is counted and why is in :mod:`fabricopt.cost.bom`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from .._checks import fail
from ..catalog import TRANSCEIVER_TYPES, Catalog, Entry
from ..tiers import SCALE_UP_FAMILIES, require_tech_family, tech_family
from .media import LinkMedium, Policy, length_bucket
from .reading import FabricReading, PortUse


# -- the items the estimate is made of ----------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A share of catalog units that one kind of link or one device puts in one tier.

    ``units`` may be fractional (a twin-port module pooled by two links, a switch whose ports
    serve two tiers); the bill of materials rounds them to whole units. ``bucket_m`` is the length
    bought for cables and fibres, 0 for the rest.
    """

    tier: str
    kind: str          # switch, nic, transceiver, cable or fibre
    entry: Entry
    bucket_m: float
    units: float
    unit_usd: float
    unit_w: float
    section: str = "network"


@dataclass(frozen=True)
class LinkKind:
    """Physical links priced alike: same tier, tech, rate per link, length and kind of ends."""

    tier: str
    tech: str
    rate_gbps: float
    length_m: float
    switch_ends: tuple[float | None, float | None]  # see fabricopt.cost.media.EndKind
    in_row: bool
    section: str = "network"


@dataclass(frozen=True)
class CableRun:
    """Physical links of one tier on one medium, cut to one standard length."""

    tier: str
    medium: str
    length_m: float
    links: int


# -- links --------------------------------------------------------------------------------------
def link_kinds(reading: FabricReading, end_code: np.ndarray, end_values: list[float | None]
                ) -> tuple[list[LinkKind], np.ndarray, np.ndarray]:
    """Physical links of the fabric by kind, in the order kinds first appear among the bundles
    (each bundle once, not per direction; PCIe links between a GPU and its NIC left out, they
    cost nothing here): the kinds, the kind of every bundle of ``reading.bundles`` and the
    links of every kind.

    ``end_code[i]`` indexes ``end_values`` with the end kind of node ``i``: its cage rate for
    a switch (see :mod:`fabricopt.cost.media`), None for the rest. A link from a GPU to a
    switch built into its server is part of the server (section ``"in_server"``), as the
    bundle classes of the reading say."""
    b = reading.bundles
    if not len(b.kind):
        return [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    e = len(end_values)
    key = (b.kind * e + end_code[b.u]) * e + end_code[b.v]
    distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    kind_of = rank[inverse.reshape(-1)]
    links = np.bincount(kind_of, weights=b.links, minlength=len(order)).round().astype(np.int64)
    kinds = []
    for k in distinct[order].tolist():
        k, ev = divmod(k, e)
        c, eu = divmod(k, e)
        tier, tech, rate, length, in_row, section = b.classes[c]
        kinds.append(LinkKind(tier, tech, rate, length, (end_values[eu], end_values[ev]),
                              in_row, section))
    return kinds, kind_of, links


def link_parts(kind: LinkKind, links: int, lm: LinkMedium) -> tuple[CableRun, list[Part]]:
    """The cable run and the parts (modules, fibres, cables) of ``links`` links of one kind
    on the medium ``lm`` chosen for them."""
    med = lm.medium
    sec = kind.section
    bucket = length_bucket(kind.length_m, med["reach_m"])
    parts = [Part(kind.tier, "transceiver", mod, 0.0, links * sh, mod["price_usd_per_end"],
                  mod["power_w_per_end"], sec)
             for mod, sh in zip(lm.end_modules, lm.shares, strict=True) if mod is not None]
    length_usd = med["cable_usd"] + med["cable_usd_per_m"] * bucket
    if lm.fibre_usd or med["type"] in TRANSCEIVER_TYPES:
        parts.append(Part(kind.tier, "fibre", med, bucket, links, length_usd, 0.0, sec))
    if lm.cable_share:
        parts.append(Part(kind.tier, "cable", med, bucket, links * lm.cable_share, length_usd,
                          2.0 * med["power_w_per_end"], sec))
    return CableRun(kind.tier, med.key, bucket, links), parts


def cage_use(lm: LinkMedium, end: int, rate_gbps: float, cage_gbps: float | None) -> float:
    """Cages one link on ``lm`` takes at its end ``end`` (0 or 1): its share of the module or
    cable there, and at least ``rate_gbps / cage_gbps`` (a cage carries no more than its rate).
    Co-packaged ports and in-system NVLink copper take no pluggable cage."""
    mod = lm.end_modules[end]
    if mod is not None:
        used = 0.0 if mod["type"] == "cpo" else lm.shares[end]
    else:
        used = 0.0 if lm.medium["type"] == "nvlink" else lm.cable_share
    return max(used, rate_gbps / cage_gbps) if used and cage_gbps else used


# -- devices ------------------------------------------------------------------------------------

def _device_parts(kind: str, entry: Entry, count: float, use: PortUse,
                  section: str = "network") -> list[Part]:
    """``count`` units of a switch or NIC, split over the tiers by the ports each uses."""
    total = max(use.used, 1)
    return [Part(tier, kind, entry, 0.0, count * p / total, entry["price_usd"], entry["power_w"],
                 section)
            for tier, p in (use.by_tier.items() or [("unattached", 1)])]


def _switch_family(func: str, v: Hashable, techs: Iterable[str]) -> str | None:
    """The technology family (:func:`fabricopt.tiers.tech_family`) of the links of switch
    ``v``, which is the catalog family of the switch; None when a link names no family.

    >>> _switch_family("f", "s", {"nvlink4"}), _switch_family("f", "s", {"ndr", "xdr"})
    ('nvlink', 'infiniband')
    >>> _switch_family("f", "s", {"ualink"}), _switch_family("f", "s", {"400g"})
    ('ualink', None)
    """
    families = {tech_family(t) for t in techs}
    known = sorted(f for f in families if f is not None)
    if len(known) > 1:
        raise fail(func, f"links of switch {v!r}", "links of one technology family (a switch "
                   "is an NVLink, UALink, InfiniBand or Ethernet device)", sorted(techs))
    return None if None in families or not known else known[0]


def _per_chip(entry: Entry) -> Entry:
    """``entry`` with the radix of one of its chips: a fabric models each chip of a multi-chip
    unit (an NVLink Switch holds two) as a switch of its own."""
    chips = int(entry.get("chips") or 1)
    if chips == 1:
        return entry
    return dataclasses.replace(entry, values={
        **entry.values, "radix": entry["radix"] // chips,
        "price_usd": entry["price_usd"] / chips, "power_w": entry["power_w"] / chips})


def _fitting(entry: Entry, ports: int, rate: float, node: Hashable, func: str) -> Entry:
    """``entry`` if one of its port modes holds ``ports`` ports at ``rate`` Gb/s, else an
    error naming the switch: a named model must be able to carry what the fabric asks."""
    if _pick([_per_chip(entry)], ports, rate, "cost", "switch") is None:
        modes = [(entry["radix"], entry["port_gbps"])] + list(entry.get("breakout") or ())
        raise fail(func, f"model of switch {node!r}", f"a switch with {ports} ports at "
                   f">= {rate:g} Gb/s; {entry.key} offers "
                   + ", ".join(f"{p} x {g:g} Gb/s" for p, g in modes), entry.key)
    return entry


def _pick(entries: list[Entry], ports: int, rate: float, objective: str,
          kind: str) -> tuple[Entry, int] | None:
    """Cheapest (or least power) entry and unit count giving ``ports`` ports at ``rate``.

    A switch (``kind="switch"``) must hold them all in one unit, in one of its port modes; NICs
    are counted ``ceil(ports / ports per unit)``.
    """
    best: tuple[tuple[float, float, str], Entry, int] | None = None
    for e in entries:
        modes = ([(e["radix"], e["port_gbps"])] + list(e.get("breakout") or ())
                 if kind == "switch" else list(e["modes"]))
        for m_ports, m_gbps in modes:
            if m_gbps < rate:
                continue
            if kind == "switch":
                if m_ports < ports:
                    continue
                n = 1
            else:
                n = math.ceil(ports / m_ports)
            usd, w = n * e["price_usd"], n * e["power_w"]
            score = (usd, w, e.key) if objective == "cost" else (w, usd, e.key)
            if best is None or score < best[0]:
                best = (score, e, n)
    return None if best is None else (best[1], best[2])


class DeviceChooser:
    """Catalog switches and NICs for what devices need, under a policy; cached by need."""

    def __init__(self, catalog: Catalog, policy: Policy, func: str) -> None:
        self.catalog, self.policy, self.func = catalog, policy, func
        self._switches: dict[tuple[Any, ...], Entry] = {}
        self._nics: dict[tuple[int, float], tuple[Entry, int]] = {}

    def switch(self, v: Hashable, node: Mapping[str, Any], use: PortUse) -> Entry:
        """The switch model of node ``v``: its own, the policy's or the best that fits, always
        of the technology family of its links (an NDR link needs an InfiniBand switch)."""
        cat, pol, func = self.catalog, self.policy, self.func
        model = node.get("model")
        family = _switch_family(func, v, use.techs)
        unknown = sorted(t for t in use.techs if tech_family(t) is None)

        def checked(key: str, what: str) -> Entry:
            entry = cat.switches[key]
            if family is not None and entry["family"] != family:
                raise fail(func, what, f"a switch of family {family!r}: the links of switch "
                           f"{v!r} are {', '.join(sorted(use.techs))} ({family}); {key} is "
                           f"{entry['family']}", key)
            return _fitting(entry, use.used, use.rate_gbps, v, func)

        if model is not None:
            if model not in cat.switches:
                raise fail(func, f"model of switch {v!r}", "a switch key of the catalog ("
                           + ", ".join(sorted(cat.switches)) + ")", model)
            return checked(model, f"model of switch {v!r}")
        scale_up = family in SCALE_UP_FAMILIES
        if pol.switch_model is not None and not scale_up:
            return checked(pol.switch_model, "policy.switch_model")
        if family is None:
            require_tech_family(func, f"tech of the links of switch {v!r} (to choose its "
                                "family; or set the switch's model or policy.switch_model)",
                                unknown[0] if unknown else "")
        needed = int(node.get("radix") or use.used)
        key = (family, needed, use.rate_gbps)
        if key not in self._switches:
            # Same family, and the same link generation where the entry names one (an NVLink 4
            # switch is not priced as an NVLink 3 chip of the same port rate).
            found = _pick([_per_chip(e) for e in cat.switches.values() if e["family"] == family
                           and e.values.get("tech", next(iter(use.techs), "")) in use.techs],
                          needed, use.rate_gbps, pol.objective, "switch")
            if found is None:
                raise fail(func, "catalog", f"a catalog with a {family} switch of >= "
                           f"{needed} ports at >= {use.rate_gbps:g} Gb/s (for switch {v!r}); "
                           "add one (Catalog.load) or set the switch's model", "none")
            self._switches[key] = cat.switches[found[0].key]
        return self._switches[key]

    def nic(self, v: Hashable, node: Mapping[str, Any], use: PortUse) -> tuple[Entry, int]:
        """NIC model and count of node ``v``: a NIC node is one NIC (its own model if named);
        a GPU gets the NICs that cost least for its ports."""
        cat, func = self.catalog, self.func
        model = node.get("model")
        if node.get("role") == "nic" and model is not None:
            if model not in cat.nics:
                raise fail(func, f"model of NIC {v!r}", "a NIC key of the catalog ("
                           + ", ".join(sorted(cat.nics)) + ")", model)
            return cat.nics[model], 1
        key = (max(use.used, 1), use.rate_gbps)
        if key not in self._nics:
            found = _pick(list(cat.nics.values()), key[0], key[1], self.policy.objective, "nic")
            if found is None:
                raise fail(func, "catalog", f"a catalog with a NIC of >= {use.rate_gbps:g} Gb/s "
                           f"ports (for {v!r}); add one (Catalog.load)", "none")
            self._nics[key] = found
        entry, count = self._nics[key]
        return entry, (1 if node.get("role") == "nic" else count)


@dataclass
class SwitchGroup:
    """Switches alike for pricing (same model and radix attributes, same port use, same
    section): one catalog choice, one set of parts."""

    entry: Entry
    use: PortUse
    section: str
    members: list[int] = field(default_factory=list)

    @property
    def chips(self) -> int:
        return int(self.entry.get("chips") or 1)


def switch_groups(reading: FabricReading, chooser: DeviceChooser
                   ) -> tuple[list[SwitchGroup], list[int]]:
    """The switches of the fabric in groups (in the order of their first member), and the
    group of every switch, in switch order. The model of a group is its first member's:
    a switch the catalog cannot serve is named as the first such in switch order."""
    firsts, sections, class_of, members = reading.switch_classes  # read once per reading
    groups = [SwitchGroup(chooser.switch(reading.nodes[i], reading.node_data[i],
                                         reading.port_use[i]), reading.port_use[i], section,
                          list(alike))
              for i, section, alike in zip(firsts, sections, members, strict=True)]
    return groups, list(class_of)


def switch_parts(groups: list[SwitchGroup], group_of: list[int]) -> list[Part]:
    """Every switch, split over the tiers its ports serve; chips built into a server go to
    the ``"in_server"`` section."""
    # A chip node is part of a multi-chip unit: it costs its share of the unit.
    alike = [_device_parts("switch", g.entry, 1.0 / g.chips, g.use, g.section) for g in groups]
    parts: list[Part] = []
    for k in group_of:
        parts += alike[k]
    return parts


def end_kind(entry: Entry) -> float:
    """The cage rate (Gb/s) of a switch model, 0.0 when the catalog gives no cages."""
    cages = entry.get("cages")
    return entry["radix"] * entry["port_gbps"] / cages if cages else 0.0


def idle_port_counts(groups: list[SwitchGroup], include_in_server: bool) -> dict[str, int]:
    """Ports bought but not cabled, per switch model (see :class:`CostEstimate`)."""
    idle: dict[str, int] = defaultdict(int)
    for g in groups:
        if g.section == "in_server" and not include_in_server:
            continue  # part of the server, not bought as a switch
        entry, use = g.entry, g.use
        modes = [(entry["radix"], entry["port_gbps"])] + list(entry.get("breakout") or ())
        offered = max((p for p, gbps in modes if gbps >= use.rate_gbps), default=use.used)
        idle[entry.key] += len(g.members) * max(offered // g.chips - use.used, 0)
    return dict(idle)


def nic_parts(reading: FabricReading, chooser: DeviceChooser) -> list[Part]:
    """Every NIC: NIC nodes, and the NICs of GPUs with scale-out links and no NIC node (whose
    GPU-NIC links are PCIe and whose scale-up links are built in: see the reading's
    ``nic_port_use``). The NICs of a GPU inside a system (a DGX's ConnectX-7 adapters, see
    the reading's ``nic_in_system``) are part of the system's price: section
    ``"in_server"``, priced once, with the system, never again as network."""
    firsts, sections, sequence = reading.nic_classes  # read once per reading
    alike = []
    for i, section in zip(firsts, sections, strict=True):
        use = reading.nic_port_use[i]
        entry, count = chooser.nic(reading.nodes[i], reading.node_data[i], use)
        alike.append(_device_parts("nic", entry, count, use, section))
    return list(chain.from_iterable(map(alike.__getitem__, sequence)))



