"""Bill of materials, capex and power of a fabric.

What is counted, per device and link of the fabric:

* **Switches**, by catalog model. A switch node's ``model`` names its entry; with ``model``
  None, the policy's ``switch_model`` or else the cheapest catalog switch (least power under the
  power objective) with at least the node's ``radix`` ports (or the ports it uses) at its port
  rate (``capacity / links`` of its fastest arc), breakout modes included. The switch is always
  of the technology family of its links (:func:`fabricopt.tiers.tech_family`: InfiniBand,
  Ethernet, NVLink or UALink, read from explicit tables of ``tech`` labels): an NDR link never
  gets an Ethernet switch. Links of a generic label (``"400g"``) name no family; their switch
  needs a ``model`` or the policy's ``switch_model``, else the estimate stops with an error
  naming the label and the allowed ones; a model of another family than the links is refused.
  Power is the switch's typical power without optics; optics are counted per module.
* **In-server scale-up silicon.** NVSwitch chips built into a server (a DGX or HGX baseboard:
  a switch whose GPUs over NVLink are one server, see
  :func:`fabricopt.cost.layout.in_server_switches`) are part of the server price. Their rows
  and their NVLink copper carry ``section = "in_server"`` and add up to
  ``scale_up_in_server_usd`` and ``_w``, out of ``capex_usd`` and ``power_w`` unless
  ``include_in_server``. NVLink Switch trays (GB200 NVL72) and external NVLink switches are
  network.
* **NICs.** A node with role ``"nic"`` is one NIC. A GPU with scale-out links (any tech but
  NVLink/UALink) to a switch or another GPU, and no NIC node, gets NICs at its end: the NIC model
  and count that cost least for its link count at its link rate, so two 400G planes per GPU use
  one dual-port NIC where the catalog has one (one NIC per GPU, one port per link). GPU-to-NIC
  links are PCIe inside the server and cost nothing here.
* **UALink** links are scale-up (no NIC); their switches are of the catalog's ``ualink``
  family.
* **Links**, by medium (see :mod:`fabricopt.cost.media`) and length (:mod:`.layout`): per
  medium, modules (two ends per optical link, pooled on twin-port modules within a tier and
  rounded up), cables and fibres by standard length bucket.

* **Cages.** A switch whose catalog entry gives ``cages`` has a ledger of the cages its links'
  modules and cable ends take (twin-port modules hold two ports in one cage), in
  ``CostEstimate.cages``; :meth:`CostEstimate.over_cages` lists any switch given more than it
  has. The media selection puts cage-filling modules at switch ends
  (:mod:`fabricopt.cost.media`), so the shipped catalog and designs never overfill one.

Switch and NIC costs are split over tiers by the ports each tier uses, so ``by_tier`` sums to
``capex_usd`` and ``power_w``. GPUs and servers are not counted: the estimate is the network.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_path, fail
from ..catalog import TRANSCEIVER_TYPES, Catalog, Entry
from ..fabric import Fabric
from ..tiers import (
    SCALE_UP_FAMILIES,
    require_tech_family,
    tech_family,
    tier_rank,
)
from .layout import Layout
from .media import LENGTH_BUCKETS_M, LinkMedium, MediaSelector, Policy, length_bucket
from .reading import FabricReading, PortUse, read_fabric


@dataclass(frozen=True)
class BomRow:
    """One line of the bill of materials.

    ``component`` is the catalog key, ``kind`` one of switch, nic, transceiver, cable, fibre;
    ``detail`` the length bucket of cables and fibres; ``section`` is ``"network"``, or
    ``"in_server"`` for scale-up silicon built into a server (NVSwitch chips on a DGX/HGX
    baseboard) and its links. Units: USD and W.
    """

    component: str
    kind: str
    detail: str
    count: int
    unit_usd: float
    unit_w: float
    total_usd: float
    total_w: float
    source: str
    confidence: str
    name: str = ""
    section: str = "network"


@dataclass(frozen=True)
class Totals:
    """Capex, power and physical link count of one tier or medium."""

    usd: float
    w: float
    links: int


@dataclass(frozen=True)
class DeliveredCost:
    """Dollars and watts per GPU, per Gb/s each GPU delivers in the flow result."""

    usd_per_gbps: float
    w_per_gbps: float
    per_endpoint_gbps: float


@dataclass
class CostEstimate:
    """What :func:`estimate_cost` returns.

    Attributes
    ----------
    fabric : str
        Name of the fabric.
    capex_usd, power_w : float
        Network capital cost (USD) and power (W): switches, NICs, modules, cables and fibres.
    bom : list of BomRow
        The bill of materials, one row per component (and length bucket).
    by_tier, by_medium : dict of str to Totals
        Capex, power and link count per tier and per catalog medium (module keys included).
    n_endpoints : int
        Endpoints (GPUs) of the fabric.
    per_endpoint_usd, per_endpoint_w : float
        ``capex_usd`` and ``power_w`` divided by ``n_endpoints`` (NaN without endpoints).
    links : list of dict
        The cable plan: tier, medium, length bucket (m) and physical link count.
    scale_up_in_server_usd, scale_up_in_server_w : float
        Scale-up silicon built into servers (NVSwitch chips on DGX/HGX baseboards; rows of
        section ``"in_server"``): part of the server price, so out of ``capex_usd`` and
        ``power_w`` unless ``include_in_server``. NVLink Switch trays of rack-scale systems
        (GB200 NVL72) and external NVLink switches are network.
    include_in_server : bool
        Whether ``capex_usd`` and ``power_w`` include the in-server silicon.
    cages : dict
        For every switch whose catalog entry gives its pluggable cages: ``(cages used,
        cages)``, the modules and cable ends its links put in it (twin-port ones count one
        cage for two ports). :meth:`over_cages` lists the switches given more than they have.
    idle_ports : dict of str to int
        Ports bought but not cabled, per switch model: the ports a unit offers at the rate
        its links run (the most its port modes give at that rate, per chip of a multi-chip
        unit) less the ports the fabric uses. ``fat_tree(8)`` priced as 64-port switches
        leaves 56 of 64 idle on each of its 80 switches. Scale-up silicon built into a server
        (a DGX's NVSwitch chips, whose spare ports serve the server's own cages) counts only
        with ``include_in_server``.
    """

    fabric: str
    capex_usd: float
    power_w: float
    bom: list[BomRow]
    by_tier: dict[str, Totals]
    by_medium: dict[str, Totals]
    n_endpoints: int
    per_endpoint_usd: float
    per_endpoint_w: float
    links: list[dict[str, Any]] = field(default_factory=list)
    catalog: Catalog | None = field(default=None, repr=False)
    policy: Policy | None = None
    layout: Layout | None = None
    scale_up_in_server_usd: float = 0.0
    scale_up_in_server_w: float = 0.0
    include_in_server: bool = False
    cages: dict[Hashable, tuple[float, float]] = field(default_factory=dict, repr=False)

    def over_cages(self) -> list[tuple[Hashable, float, float]]:
        """Switches given more modules or cable ends than they have cages: ``(switch, used,
        cages)``; empty for a bill of materials that can be built.

        >>> import fabricopt as fo
        >>> fo.estimate_cost(fo.superpod(scalable_units=1)).over_cages()
        []
        """
        return [(v, used, cages) for v, (used, cages) in self.cages.items()
                if used > cages + 1e-9]
    idle_ports: dict[str, int] = field(default_factory=dict)

    def count(self, component: str, kind: str | None = None) -> int:
        """Units of a catalog component in the bill of materials (all kinds unless named).

        >>> import fabricopt as fo
        >>> fo.estimate_cost(fo.ring(4, link_gbps=400)).count("cx7")
        0
        """
        return sum(r.count for r in self.bom
                   if r.component == component and (kind is None or r.kind == kind))

    def per_delivered_gbps(self, result: Any) -> DeliveredCost:
        """Per-GPU dollars and watts per Gb/s of the bandwidth each GPU delivers.

        Parameters
        ----------
        result : object with ``per_endpoint_gbps``
            A flow result (all-to-all throughput): a number, or one number per endpoint
            (their mean is used).

        Examples
        --------
        >>> from types import SimpleNamespace
        >>> import fabricopt as fo
        >>> est = fo.estimate_cost(fo.ring(4, link_gbps=400))
        >>> d = est.per_delivered_gbps(SimpleNamespace(per_endpoint_gbps=200.0))
        >>> round(d.usd_per_gbps * 200.0) == round(est.per_endpoint_usd)
        True
        """
        value = getattr(result, "per_endpoint_gbps", None)
        if value is None:
            raise fail("per_delivered_gbps", "result", "an object with per_endpoint_gbps",
                       type(result).__name__)
        if isinstance(value, Mapping):
            value = list(value.values())
        gbps = float(np.mean(np.asarray(value, dtype=float)))
        if not math.isfinite(gbps) or gbps <= 0:
            raise fail("per_delivered_gbps", "result.per_endpoint_gbps", "a number > 0", value)
        return DeliveredCost(self.per_endpoint_usd / gbps, self.per_endpoint_w / gbps, gbps)

    def network_share(self, system: str, of: str = "capex") -> float:
        """The network's share of network plus systems, in capex or power.

        The fabric's GPUs are counted as ``n_endpoints / system gpus`` catalog systems (a DGX H100
        holds 8). A system's list price already includes its NVSwitch chips, which the estimate
        keeps out of the network by default, and its NICs, which it counts as network, so the
        share is slightly overstated.

        Parameters
        ----------
        system : str
            Catalog system key, e.g. ``"dgx_h100"``.
        of : {"capex", "power"}
            Compare prices (``price_usd``) or powers (``power_w``).

        Examples
        --------
        >>> import fabricopt as fo
        >>> est = fo.estimate_cost(fo.ring(8, link_gbps=400))
        >>> 0 < est.network_share("dgx_h100") < 1, 0 < est.network_share("dgx_h100", "power") < 1
        (True, True)
        """
        check_choice("network_share", "of", of, ("capex", "power"))
        field_name, own = ("price_usd", self.capex_usd) if of == "capex" else \
            ("power_w", self.power_w)
        cat = self.catalog or Catalog.default()
        if system not in cat.systems or cat.systems[system].get(field_name) is None:
            known = sorted(k for k, e in cat.systems.items() if e.get(field_name) is not None)
            raise fail("network_share", "system", f"a catalog system with {field_name} ("
                       + ", ".join(known) + ")", system)
        entry = cat.systems[system]
        systems = self.n_endpoints / entry["gpus"] * entry[field_name]
        return own / (own + systems)

    # -- output ---------------------------------------------------------------------------
    def _rows(self) -> list[list[str]]:
        def detail(r: BomRow) -> str:
            if r.section == "network":
                return r.detail
            return f"{r.detail}, in server" if r.detail else "in server"

        return [[r.component, r.kind, detail(r), f"{r.count:,}", f"{r.unit_usd:,.0f}",
                 f"{r.unit_w:,.1f}", f"{r.total_usd:,.0f}", f"{r.total_w:,.0f}", r.confidence]
                for r in self.bom]

    _HEAD = ["component", "kind", "detail", "count", "unit USD", "unit W", "total USD",
             "total W", "confidence"]

    def _summary_lines(self) -> list[str]:
        lines = [f"capex    {self.capex_usd:,.0f} USD ({self.per_endpoint_usd:,.0f} USD per GPU, "
                 f"{self.n_endpoints} GPUs)",
                 f"power    {self.power_w:,.0f} W ({self.per_endpoint_w:,.1f} W per GPU)"]
        if self.scale_up_in_server_usd or self.scale_up_in_server_w:
            where = "included above" if self.include_in_server else \
                "in the server price, not in capex or power above"
            lines.append(f"in-server scale-up silicon {self.scale_up_in_server_usd:,.0f} USD, "
                         f"{self.scale_up_in_server_w:,.0f} W ({where})")
        over = self.over_cages()
        if over:
            v, used, cages = over[0]
            lines.append(f"WARNING  {len(over)} switches given more modules than cages "
                         f"(e.g. {v!r}: {used:g} in {cages:g}); this plan cannot be built")
        idle = {k: v for k, v in self.idle_ports.items() if v}
        if idle:
            lines.append("idle     " + ", ".join(
                f"{v:,} {k} ports ({v / max(self.count(k, 'switch'), 1):,.1f} per unit)"
                for k, v in idle.items()))
        return lines

    def to_table(self) -> str:
        """The estimate as a plain-text table (bill of materials, totals, tiers, media).

        >>> import fabricopt as fo
        >>> print(fo.estimate_cost(fo.ring(4, link_gbps=400)).to_table().splitlines()[2])
        component  kind   detail  count  unit USD  unit W  total USD  total W  confidence
        """
        def table(head: list[str], rows: list[list[str]]) -> list[str]:
            widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
            fmt = lambda row: "  ".join(  # noqa: E731
                c.ljust(w) if i < 3 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            return [fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]

        out = [f"bill of materials: {self.fabric}", ""]
        out += table(self._HEAD, self._rows())
        out += ["", *self._summary_lines(), ""]
        out += table(["tier", "", "", "links", "USD", "W"],
                     [[t, "", "", f"{v.links:,}", f"{v.usd:,.0f}", f"{v.w:,.0f}"]
                      for t, v in self.by_tier.items()])
        out.append("")
        out += table(["medium", "", "", "links", "USD", "W"],
                     [[m, "", "", f"{v.links:,}", f"{v.usd:,.0f}", f"{v.w:,.0f}"]
                      for m, v in self.by_medium.items()])
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_table()

    def __repr__(self) -> str:
        # One line: the bill of materials, with a source per row, runs to pages.
        return (f"<CostEstimate {self.fabric}: {self.capex_usd:,.0f} USD, {self.power_w:,.0f} W"
                f", {len(self.bom)} BOM rows; print() for the table>")

    def to_csv(self) -> str:
        """The bill of materials as CSV, one row per line, with sources.

        >>> import fabricopt as fo
        >>> fo.estimate_cost(fo.ring(4, link_gbps=400)).to_csv().splitlines()[0]
        'component,kind,detail,count,unit_usd,unit_w,total_usd,total_w,confidence,source,section'
        """
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["component", "kind", "detail", "count", "unit_usd", "unit_w", "total_usd",
                    "total_w", "confidence", "source", "section"])
        for r in self.bom:
            w.writerow([r.component, r.kind, r.detail, r.count, f"{r.unit_usd:.2f}",
                        f"{r.unit_w:.3f}", f"{r.total_usd:.2f}", f"{r.total_w:.3f}",
                        r.confidence, r.source, r.section])
        return buf.getvalue()

    def to_markdown(self) -> str:
        """The estimate as Markdown: bill of materials, totals, tiers, media and sources.

        >>> import fabricopt as fo
        >>> print(fo.estimate_cost(fo.ring(4, link_gbps=400)).to_markdown().splitlines()[4])
        | cx8 | nic |  | 4 | 1,779 | 30.0 | 7,116 | 120 | estimate |
        """
        def table(head: list[str], rows: list[list[str]]) -> list[str]:
            return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
                ["| " + " | ".join(r) + " |" for r in rows]

        out = [f"### Bill of materials: {self.fabric}", ""]
        out += table(self._HEAD, self._rows())
        out += ["", *[f"- {line}" for line in self._summary_lines()], ""]
        out += table(["tier", "links", "USD", "W"],
                     [[t, str(v.links), f"{v.usd:,.0f}", f"{v.w:,.0f}"]
                      for t, v in self.by_tier.items()])
        out.append("")
        out += table(["medium", "links", "USD", "W"],
                     [[m, str(v.links), f"{v.usd:,.0f}", f"{v.w:,.0f}"]
                      for m, v in self.by_medium.items()])
        out += ["", "Sources:", ""]
        seen: dict[str, str] = {}
        for r in self.bom:
            seen.setdefault(r.component, f"- `{r.component}` ({r.confidence}): {r.source}")
        out += list(seen.values())
        return "\n".join(out)


def _coerce_catalog(catalog: Any) -> Catalog:
    if catalog is None:
        return Catalog.default()
    if isinstance(catalog, Catalog):
        return catalog
    if isinstance(catalog, str | os.PathLike):
        return Catalog.load(check_path("estimate_cost", "catalog", catalog))
    raise fail("estimate_cost", "catalog", "None, a Catalog or a path to a catalog file",
               catalog)


def _inputs(func: str, fab: Fabric, catalog: Any, layout: Any,
            policy: Any) -> tuple[Catalog, Layout, Policy]:
    """The catalog, layout and policy to price ``fab`` with: the arguments checked, the design
    file's ``[catalog]``, ``[layout]`` and ``policy`` filling what the caller left out."""
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    design = getattr(fab, "design", None) or {}
    cat = _coerce_catalog(catalog)
    if catalog is None and design.get("catalog"):
        cat = cat.merged(design["catalog"], origin=str(design.get("file", "design file")))
    if layout is None and design.get("layout"):
        layout = design["layout"]
    if policy is None and design.get("policy"):
        policy = design["policy"]
    lay = Layout.coerce(layout, func)
    pol = Policy.coerce(policy, func)
    pol.check_against(cat, func)
    return cat, lay, pol


# -- the items the estimate is made of ----------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A share of catalog units that one kind of link or one device puts in one tier.

    ``units`` may be fractional (a twin-port module pooled by two links, a switch whose ports
    serve two tiers); :func:`_assemble` rounds them to whole units. ``bucket_m`` is the length
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
def _link_kinds(reading: FabricReading, end_code: np.ndarray, end_values: list[float | None]
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


def _link_parts(kind: LinkKind, links: int, lm: LinkMedium) -> tuple[CableRun, list[Part]]:
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


def _cage_use(lm: LinkMedium, end: int, rate_gbps: float, cage_gbps: float | None) -> float:
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


class _DeviceChooser:
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
            found = _pick([_per_chip(e) for e in cat.switches.values() if e["family"] == family],
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
class _SwitchGroup:
    """Switches alike for pricing (same model and radix attributes, same port use, same
    section): one catalog choice, one set of parts."""

    entry: Entry
    use: PortUse
    section: str
    members: list[int] = field(default_factory=list)

    @property
    def chips(self) -> int:
        return int(self.entry.get("chips") or 1)


def _switch_groups(reading: FabricReading, chooser: _DeviceChooser
                   ) -> tuple[list[_SwitchGroup], list[int]]:
    """The switches of the fabric in groups (in the order of their first member), and the
    group of every switch, in switch order. The model of a group is its first member's:
    a switch the catalog cannot serve is named as the first such in switch order."""
    groups: list[_SwitchGroup] = []
    seen: dict[tuple[Any, ...], int] = {}
    group_of = []
    for i in reading.switches:
        node, use = reading.node_data[i], reading.port_use[i]
        section = "in_server" if reading.nodes[i] in reading.in_server else "network"
        key = (repr(node.get("model")), repr(node.get("radix")), id(use), section)
        if key not in seen:
            seen[key] = len(groups)
            groups.append(_SwitchGroup(chooser.switch(reading.nodes[i], node, use), use,
                                       section))
        groups[seen[key]].members.append(i)
        group_of.append(seen[key])
    return groups, group_of


def _switch_parts(groups: list[_SwitchGroup], group_of: list[int]) -> list[Part]:
    """Every switch, split over the tiers its ports serve; chips built into a server go to
    the ``"in_server"`` section."""
    # A chip node is part of a multi-chip unit: it costs its share of the unit.
    alike = [_device_parts("switch", g.entry, 1.0 / g.chips, g.use, g.section) for g in groups]
    parts: list[Part] = []
    for k in group_of:
        parts += alike[k]
    return parts


def _end_kind(entry: Entry) -> float:
    """The cage rate (Gb/s) of a switch model, 0.0 when the catalog gives no cages."""
    cages = entry.get("cages")
    return entry["radix"] * entry["port_gbps"] / cages if cages else 0.0


def _idle_ports(groups: list[_SwitchGroup], include_in_server: bool) -> dict[str, int]:
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


def _nic_parts(reading: FabricReading, chooser: _DeviceChooser) -> list[Part]:
    """Every NIC: NIC nodes, and the NICs of GPUs with scale-out links and no NIC node (whose
    GPU-NIC links are PCIe and whose scale-up links are built in: see the reading's
    ``nic_port_use``)."""
    alike: dict[tuple[Any, ...], list[Part]] = {}
    parts: list[Part] = []
    for i, use in enumerate(reading.nic_port_use):
        if use is None:
            continue
        node = reading.node_data[i]
        key = (reading.roles[i], repr(node.get("model")), id(use))
        found = alike.get(key)
        if found is None:
            entry, count = chooser.nic(reading.nodes[i], node, use)
            found = alike[key] = _device_parts("nic", entry, count, use)
        parts += found
    return parts



# -- the estimate -------------------------------------------------------------------------------
def estimate_cost(fab: Fabric, *, catalog: Catalog | str | os.PathLike[str] | None = None,
                  layout: Layout | Mapping[str, Any] | None = None,
                  policy: Policy | str | Mapping[str, Any] | None = None,
                  include_in_server: bool = False) -> CostEstimate:
    """Bill of materials, capex and power of a fabric's network.

    Parameters
    ----------
    fab : Fabric
        The fabric (validated first).
    catalog : Catalog or path, optional
        Hardware figures (default: :meth:`Catalog.default`, with the ``[catalog]`` table of
        the fabric's design file merged over it when there is one; a path is merged over the
        default).
    layout : Layout or mapping, optional
        Physical layout giving link lengths (default: the ``[layout]`` table of the fabric's
        design file, else ``Layout()``).
    policy : Policy, str or mapping, optional
        Media and switch choices: a :class:`Policy`, a preset name (``"cost"``, ``"power"``,
        ``"all_optics"``, ``"lpo"``, ``"cpo"``, ``"aec_in_row"``) or Policy fields.
    include_in_server : bool
        Count the scale-up silicon built into servers (NVSwitch chips on a DGX/HGX baseboard)
        in ``capex_usd`` and ``power_w``. By default it is reported apart
        (``scale_up_in_server_usd``, ``scale_up_in_server_w``): the server price includes it.

    Returns
    -------
    CostEstimate
        ``capex_usd``, ``power_w``, ``bom``, ``by_tier``, ``by_medium``, per-endpoint figures;
        readable with ``to_table()``, ``to_csv()``, ``to_markdown()``.

    Notes
    -----
    What is counted and how is in the notes of :mod:`fabricopt.cost.bom`,
    :mod:`fabricopt.cost.media` and :mod:`fabricopt.cost.layout`. Every figure comes from a
    catalog entry whose ``source`` and ``confidence`` the BOM row repeats.

    What does not depend on the policy or catalog (validation, placement, port use, the
    bundles of links) is read once per fabric content and layout and kept
    (:mod:`fabricopt.cost.reading`): pricing one 16,384-GPU fabric under a second policy
    costs a fraction of the first, and a fabric changed in place is read and validated again.

    Examples
    --------
    A ring of four GPUs with 400G links in one server: each GPU has two 400G ports, one
    dual-port ConnectX-8 ($1,779); the four 0.5 m links pool on two twin-port 800G DACs ($250).

    >>> import fabricopt as fo
    >>> est = fo.estimate_cost(fo.ring(4, link_gbps=400))
    >>> [(r.component, r.kind, r.detail, r.count) for r in est.bom]
    [('cx8', 'nic', '', 4), ('dac_800g', 'cable', '0.5 m', 2)]
    >>> est.capex_usd == 4 * 1779 + 2 * 250
    True
    """
    func = "estimate_cost"
    cat, lay, pol = _inputs(func, fab, catalog, layout, policy)
    check_bool(func, "include_in_server", include_in_server)
    # Validation, placement, port use and bundles do not depend on the policy: read once per
    # fabric content and layout, shared by every policy the fabric is priced under.
    reading = read_fabric(fab, lay)
    chooser = _DeviceChooser(cat, pol, func)
    groups, group_of = _switch_groups(reading, chooser)
    end_values: list[float | None] = [None]
    end_code = np.zeros(len(reading.nodes), dtype=np.int64)
    for g in groups:
        end = _end_kind(g.entry)
        if end not in end_values:
            end_values.append(end)
        end_code[g.members] = end_values.index(end)
    kinds, kind_of, kind_links = _link_kinds(reading, end_code, end_values)
    selector = MediaSelector(cat, pol)
    media = [selector.choose(k.rate_gbps, k.length_m, k.tech, k.tier, k.switch_ends, k.in_row)
             for k in kinds]
    runs: list[CableRun] = []
    parts: list[Part] = []
    for kind, links, lm in zip(kinds, kind_links.tolist(), media, strict=True):
        run, link_items = _link_parts(kind, links, lm)
        runs.append(run)
        parts += link_items
    parts += _switch_parts(groups, group_of)
    parts += _nic_parts(reading, chooser)
    est = _assemble(fab, cat, lay, pol, parts, runs, include_in_server)
    est.cages = _cages(reading, groups, group_of, kinds, kind_of, media)
    est.idle_ports = _idle_ports(groups, include_in_server)
    return est


def _cages(reading: FabricReading, groups: list[_SwitchGroup], group_of: list[int],
           kinds: list[LinkKind], kind_of: np.ndarray, media: list[LinkMedium]
           ) -> dict[Hashable, tuple[float, float]]:
    """``(cages used, cages)`` of every switch whose catalog entry gives its cages."""
    # Cages one link of each kind takes at each end (none at a GPU or NIC end).
    per_link = np.array([[_cage_use(lm, end, k.rate_gbps, k.switch_ends[end])
                          if k.switch_ends[end] is not None else 0.0 for end in (0, 1)]
                         for k, lm in zip(kinds, media, strict=True)]).reshape(-1, 2)
    b = reading.bundles
    # bincount adds in input order, bundle by bundle and end 0 before end 1, as a loop would.
    used = np.bincount(np.stack([b.u, b.v], axis=1).reshape(-1),
                       weights=(b.links[:, None] * per_link[kind_of]).reshape(-1),
                       minlength=len(reading.nodes))
    out = {}
    for i, k in zip(reading.switches, group_of, strict=True):
        entry = groups[k].entry
        if entry.get("cages"):
            out[reading.nodes[i]] = (float(used[i]), entry["cages"] / groups[k].chips)
    return out


_KIND_ORDER = {"switch": 0, "nic": 1, "transceiver": 2, "cable": 3, "fibre": 4}
_FIELDS_USED = {"switch": ("price_usd", "power_w"), "nic": ("price_usd", "power_w"),
                "transceiver": ("price_usd_per_end", "power_w_per_end", "reach_m"),
                "cable": ("cable_usd", "cable_usd_per_m", "power_w_per_end", "reach_m"),
                "fibre": ("cable_usd", "cable_usd_per_m", "reach_m")}


def _assemble(fab: Fabric, cat: Catalog, lay: Layout, pol: Policy, parts: list[Part],
              runs: list[CableRun], include_in_server: bool = False) -> CostEstimate:
    """Round the fractional parts to units and sum them into rows and totals."""
    # Parts alike (section, tier, kind, component, length) pool first: twin-port modules pair
    # within a tier, and a device's shares over several tiers add up to whole devices.
    groups: dict[tuple[str, str, str, str, float], list[Any]] = {}
    for p in parts:
        key = (p.section, p.tier, p.kind, p.entry.key, p.bucket_m)
        if key not in groups:
            groups[key] = [0.0, p.unit_usd, p.unit_w, p.entry]
        groups[key][0] += p.units
    counted = {"network", "in_server"} if include_in_server else {"network"}
    rows: dict[tuple[str, str, str, float], list[Any]] = {}
    tier_usd: dict[str, float] = defaultdict(float)
    tier_w: dict[str, float] = defaultdict(float)
    med_usd: dict[str, float] = defaultdict(float)
    med_w: dict[str, float] = defaultdict(float)
    # Switches and NICs are whole devices split over tiers: round per device type, not tier.
    whole: dict[tuple[str, str, str], float] = defaultdict(float)
    for (section, tier, kind, key, bucket), (units, usd, w, entry) in groups.items():
        if kind in ("switch", "nic"):
            whole[(section, kind, key)] += units
            count = units  # the tier carries its share; the row rounds the total below
        else:
            # Pooled modules pair within a tier; a tiny epsilon absorbs float sums like 2.0000001.
            count = math.ceil(units - 1e-9)
        if section in counted:
            tier_usd[tier] += count * usd
            tier_w[tier] += count * w
            if kind not in ("switch", "nic"):
                med_usd[key] += count * usd
                med_w[key] += count * w
        row = rows.setdefault((section, kind, key, bucket), [0.0, usd, w, entry])
        row[0] += count
    bom = []
    for (section, kind, key, bucket), (count, usd, w, entry) in sorted(
            rows.items(), key=lambda kv: (kv[0][0] != "network", _KIND_ORDER[kv[0][1]],
                                          kv[0][2], kv[0][3])):
        count = int(round(count)) if kind not in ("switch", "nic") else \
            int(math.ceil(whole[(section, kind, key)] - 1e-9))
        if count == 0:
            continue
        detail = f"{bucket:g} m" if kind in ("cable", "fibre") else ""
        fields = tuple(f for f in _FIELDS_USED[kind] if f in entry.values)
        bom.append(BomRow(key, kind, detail, count, usd, w, count * usd, count * w,
                          entry.source, entry.confidence_of(*fields), entry.name, section))
    capex = sum(r.total_usd for r in bom if r.section in counted)
    power = sum(r.total_w for r in bom if r.section in counted)
    in_server_usd = sum(r.total_usd for r in bom if r.section == "in_server")
    in_server_w = sum(r.total_w for r in bom if r.section == "in_server")
    links_by_tier: dict[str, int] = defaultdict(int)
    links_by_medium: dict[str, int] = defaultdict(int)
    plan: dict[tuple[str, str, float], int] = defaultdict(int)
    for run in runs:
        links_by_tier[run.tier] += run.links
        links_by_medium[run.medium] += run.links
        plan[(run.tier, run.medium, run.length_m)] += run.links
    # Whole-device rounding can add a fraction of a device to the tiers' split: spread it.
    split_usd, split_w = sum(tier_usd.values()), sum(tier_w.values())
    fix_usd = capex / split_usd if split_usd else 1.0
    fix_w = power / split_w if split_w else 1.0
    tiers = sorted(set(tier_usd) | set(links_by_tier), key=tier_rank)
    by_tier = {t: Totals(tier_usd[t] * fix_usd, tier_w[t] * fix_w, links_by_tier.get(t, 0))
               for t in tiers}
    by_medium = {m: Totals(med_usd[m], med_w[m], links_by_medium.get(m, 0))
                 for m in sorted(set(med_usd) | set(links_by_medium))}
    n = len(fab.endpoints)
    links = [{"tier": t, "medium": m, "length_m": b, "links": c}
             for (t, m, b), c in sorted(plan.items(), key=lambda kv: (tier_rank(kv[0][0]),
                                                                      kv[0][1], kv[0][2]))]
    return CostEstimate(fab.name, capex, power, bom, by_tier, by_medium, n,
                        capex / n if n else math.nan, power / n if n else math.nan,
                        links, cat, pol, lay, in_server_usd, in_server_w, include_in_server)


__all__ = ["LENGTH_BUCKETS_M", "BomRow", "CostEstimate", "DeliveredCost", "Totals",
           "estimate_cost", "length_bucket"]
