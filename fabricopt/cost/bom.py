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
* **Scale-up silicon in the system price.** NVSwitch chips built into a server (a DGX or HGX
  baseboard: a switch whose GPUs over NVLink are one server, see
  :func:`fabricopt.cost.layout.in_server_switches`) are part of the server price, and the
  NVLink Switch trays of a GB200 NVL72 (switches with a ``tray`` that reach GPUs) part of the
  rack's. Their rows and their NVLink copper carry ``section = "in_server"`` and add up to
  ``scale_up_in_server_usd`` and ``_w``, out of ``capex_usd`` and ``power_w`` unless
  ``include_in_server``, so per-GPU network cost compares like with like. External NVLink
  switches are network.
* **NICs.** A node with role ``"nic"`` is one NIC. A GPU with scale-out links (any tech but
  NVLink/UALink) to a switch or another GPU, and no NIC node, gets NICs at its end: the NIC model
  and count that cost least for its link count at its link rate, so two 400G planes per GPU use
  one dual-port NIC where the catalog has one (one NIC per GPU, one port per link). GPU-to-NIC
  links are PCIe inside the server and cost nothing here. NICs are priced once: those of a GPU
  inside a system (a DGX's eight ConnectX-7, a GB200 NVL72's; the GPUs its in-server switches
  reach) come with the system's price, in section ``"in_server"`` like its NVSwitch chips,
  never again as network.
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
import io
import math
import os
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_path, did_you_mean, fail
from ..catalog import Catalog, Entry
from ..fabric import Fabric
from ..tiers import tier_rank
from .layout import Layout
from .media import LENGTH_BUCKETS_M, LinkMedium, MediaSelector, Policy, length_bucket
from .parts import (
    CableRun,
    DeviceChooser,
    LinkKind,
    Part,
    SwitchGroup,
    cage_use,
    end_kind,
    idle_port_counts,
    link_kinds,
    link_parts,
    nic_parts,
    switch_groups,
    switch_parts,
)
from .reading import FabricReading, read_fabric
from .reference import default_policy, policy_name


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
    #: Totals at the low and high ends of the catalog's ranges for the row's figures.
    low_usd: float = 0.0
    high_usd: float = 0.0
    low_w: float = 0.0
    high_w: float = 0.0


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
        Parts in the system price (NVSwitch chips on DGX/HGX baseboards, NVLink Switch trays
        of a GB200 NVL72 rack, and the NICs of the systems' GPUs; rows of section
        ``"in_server"``): out of ``capex_usd`` and ``power_w`` unless ``include_in_server``,
        the same way in every design. External NVLink switches are network.
    include_in_server : bool
        Whether ``capex_usd`` and ``power_w`` include the in-server silicon.
    cages : dict
        For every switch whose catalog entry gives its pluggable cages: ``(cages used,
        cages)``, the modules and cable ends its links put in it (twin-port ones count one
        cage for two ports). :meth:`over_cages` lists the switches given more than they have.
    policy_name : str
        How the links were priced: the reference build of the design family
        (:mod:`fabricopt.cost.reference`) when no policy was given, else the preset's name or
        ``"custom"``.
    capex_usd_range, power_w_range : tuple of float
        ``(low, high)`` of ``capex_usd`` and ``power_w`` over the catalog's ranges of its
        estimated figures (each figure at its low end, then at its high end).
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
    policy_name: str = ""
    capex_usd_range: tuple[float, float] = (0.0, 0.0)
    power_w_range: tuple[float, float] = (0.0, 0.0)
    #: For a fabric with parts removed (:meth:`~fabricopt.Fabric.without`, a failure): how
    #: they were priced (:func:`estimate_cost`); empty for an intact fabric.
    removed_parts: str = ""

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
        keys = {e.key for e in (self.catalog or Catalog.default())}
        if not isinstance(component, str) or component not in keys:  # a typo would count 0
            raise fail("CostEstimate.count", "component", "a catalog key"
                       + did_you_mean(component, keys), component)
        if kind is not None:
            check_choice("CostEstimate.count", "kind", kind, tuple(_KIND_ORDER))
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
        holds 8). A system's price already includes its NVSwitch chips and the NICs of its
        GPUs, which the estimate keeps out of the network by default (section ``"in_server"``),
        so nothing is counted twice.

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
        if (not isinstance(system, str) or system not in cat.systems
                or cat.systems[system].get(field_name) is None):
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
        (lo, hi), (wlo, whi) = self.capex_usd_range, self.power_w_range
        lines = [f"capex    {self.capex_usd:,.0f} USD ({self.per_endpoint_usd:,.0f} USD per GPU, "
                 f"{self.n_endpoints} GPUs; range {lo:,.0f} to {hi:,.0f})",
                 f"power    {self.power_w:,.0f} W ({self.per_endpoint_w:,.1f} W per GPU; range "
                 f"{wlo:,.0f} to {whi:,.0f})"]
        if self.policy_name:
            lines.append(f"priced   {self.policy_name}")
        if self.removed_parts:
            lines.append(f"removed  {self.removed_parts}")
        if self.scale_up_in_server_usd or self.scale_up_in_server_w:
            where = "included above" if self.include_in_server else \
                "in the server price, not in capex or power above"
            lines.append(f"in the system price (scale-up silicon, NICs) "
                         f"{self.scale_up_in_server_usd:,.0f} USD, "
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
    lay.check_tiers(fab, func)
    pol.check_against(cat, func, fab)
    return cat, lay, pol


# -- the estimate -------------------------------------------------------------------------------
def estimate_cost(fab: Fabric, *, catalog: Catalog | str | os.PathLike[str] | None = None,
                  layout: Layout | Mapping[str, Any] | None = None,
                  policy: Policy | str | Mapping[str, Any] | None = None,
                  include_in_server: bool = False) -> CostEstimate:
    """Bill of materials, capex and power of a fabric's network.

    Parameters
    ----------
    fab : Fabric
        The fabric (validated first). One with parts removed (a failure, ``without``) is
        priced as built, its recipe's intact fabric: failed parts are installed hardware
        (``removed_parts`` says so).
    catalog : Catalog or path, optional
        Hardware figures (default: :meth:`Catalog.default`, with the ``[catalog]`` table of
        the fabric's design file merged over it when there is one; a path is merged over the
        default).
    layout : Layout or mapping, optional
        Physical layout giving link lengths (default: the ``[layout]`` table of the fabric's
        design file, else ``Layout()``).
    policy : Policy, str or mapping, optional
        Media and switch choices: a :class:`Policy`, a preset name (``"cost"``, ``"power"``,
        ``"all_optics"``, ``"lpo"``, ``"cpo"``, ``"aec_in_row"``, ``"reference"``) or Policy
        fields. Default: the reference build of the fabric's design family
        (:mod:`fabricopt.cost.reference`), named in ``policy_name``.
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
    if fab.removed:
        # Failed links and switches are installed hardware, bought and cabled: the fabric is
        # priced as built, from its recipe, when it has one.
        built = fab.as_built()
        if built is not None:
            est = estimate_cost(built, catalog=catalog, layout=layout, policy=policy,
                                include_in_server=include_in_server)
            est.fabric = fab.name
            est.removed_parts = (f"{_removed_text(fab)} priced as built (installed "
                                 "hardware; the estimate is of the intact fabric)")
            return est
    # Validation, placement, port use and bundles do not depend on the policy: read once per
    # fabric content and layout, shared by every policy the fabric is priced under.
    reading = read_fabric(fab, lay)
    given = policy if policy is not None else (getattr(fab, "design", None) or {}).get("policy")
    if given is None:
        name, pol = default_policy(reading)
        pol.check_against(cat, func)
    else:
        name = policy_name(given)
    chooser = DeviceChooser(cat, pol, func)
    groups, group_of = switch_groups(reading, chooser)
    end_values: list[float | None] = [None]
    end_code = np.zeros(len(reading.nodes), dtype=np.int64)
    for g in groups:
        end = end_kind(g.entry)
        if end not in end_values:
            end_values.append(end)
        end_code[g.members] = end_values.index(end)
    kinds, kind_of, kind_links = link_kinds(reading, end_code, end_values)
    # The shipped catalog's choices are kept across estimates (MediaSelector.shipped).
    shipped = catalog is None and not (getattr(fab, "design", None) or {}).get("catalog")
    selector = MediaSelector.shipped(pol) if shipped else MediaSelector(cat, pol)
    media = [selector.choose(k.rate_gbps, k.length_m, k.tech, k.tier, k.switch_ends, k.in_row)
             for k in kinds]
    runs: list[CableRun] = []
    parts: list[Part] = []
    for kind, links, lm in zip(kinds, kind_links.tolist(), media, strict=True):
        run, link_items = link_parts(kind, links, lm)
        runs.append(run)
        parts += link_items
    parts += switch_parts(groups, group_of)
    parts += nic_parts(reading, chooser)
    est = _assemble(fab, cat, lay, pol, parts, runs, include_in_server)
    est.policy_name = name
    est.cages = _cages(reading, groups, group_of, kinds, kind_of, media)
    est.idle_ports = idle_port_counts(groups, include_in_server)
    if fab.removed:  # no recipe to build the intact fabric from: said, not hidden
        est.removed_parts = (f"{_removed_text(fab)} not priced (the fabric has no recipe "
                             "to build it intact; price the fabric as built)")
    return est


def _removed_text(fab: Fabric) -> str:
    r = fab.removed
    parts = [f"{r.physical_links:,} failed link{'s' if r.physical_links != 1 else ''}"
             ] if r.physical_links else []
    if r.switches:
        parts.append(f"{len(r.switches):,} failed switch{'es' if len(r.switches) != 1 else ''}")
    return " and ".join(parts)


def _cages(reading: FabricReading, groups: list[SwitchGroup], group_of: list[int],
           kinds: list[LinkKind], kind_of: np.ndarray, media: list[LinkMedium]
           ) -> dict[Hashable, tuple[float, float]]:
    """``(cages used, cages)`` of every switch whose catalog entry gives its cages."""
    # Cages one link of each kind takes at each end (none at a GPU or NIC end).
    per_link = np.array([[cage_use(lm, end, k.rate_gbps, k.switch_ends[end])
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
    groups = _pooled(parts)
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
        lo_usd, hi_usd, lo_w, hi_w = _unit_range(kind, entry, bucket, usd, w)
        bom.append(BomRow(key, kind, detail, count, usd, w, count * usd, count * w,
                          entry.source, entry.confidence_of(*fields), entry.name, section,
                          count * lo_usd, count * hi_usd, count * lo_w, count * hi_w))
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
    est = CostEstimate(fab.name, capex, power, bom, by_tier, by_medium, n,
                       capex / n if n else math.nan, power / n if n else math.nan,
                       links, cat, pol, lay, in_server_usd, in_server_w, include_in_server)
    network = [r for r in bom if r.section in counted]
    est.capex_usd_range = (sum(r.low_usd for r in network), sum(r.high_usd for r in network))
    est.power_w_range = (sum(r.low_w for r in network), sum(r.high_w for r in network))
    return est


def _pooled(parts: list[Part]) -> dict[tuple[str, str, str, str, float], list[Any]]:
    """Parts alike (section, tier, kind, component, length) pooled, keys in the order first
    met: ``[units, unit price, unit power, entry]``, the units summed in the order given
    (one float addition per part, as a loop adds them), the rest the first part's.

    Devices priced alike share their list of parts (a class's, repeated per device: tens of
    thousands of parts, a few dozen distinct ones), so each distinct part is read once and
    the sums are made by ``np.bincount``, which adds in input order.
    """
    ids = list(map(id, parts))
    distinct = dict(zip(ids, parts, strict=True))  # every part object once
    code: dict[int, int] = {}  # part object -> its key's place
    keys: dict[tuple[str, str, str, str, float], int] = {}
    groups: dict[tuple[str, str, str, str, float], list[Any]] = {}
    for i in dict.fromkeys(ids):  # in the order first met, so keys are too
        p = distinct[i]
        key = (p.section, p.tier, p.kind, p.entry.key, p.bucket_m)
        if key not in keys:
            keys[key] = len(keys)
            groups[key] = [0.0, p.unit_usd, p.unit_w, p.entry]
        code[i] = keys[key]
    n = len(parts)
    unit_of = {i: distinct[i].units for i in code}
    sums = np.bincount(np.fromiter(map(code.__getitem__, ids), dtype=np.int64, count=n),
                       weights=np.fromiter(map(unit_of.__getitem__, ids), dtype=float, count=n),
                       minlength=len(keys))
    for group, total in zip(groups.values(), sums.tolist(), strict=True):
        group[0] = total
    return groups


#: The price and power figures of each kind of row.
_PRICE_POWER = {"switch": (("price_usd",), "power_w"), "nic": (("price_usd",), "power_w"),
                "transceiver": (("price_usd_per_end",), "power_w_per_end"),
                "cable": (("cable_usd", "cable_usd_per_m"), "power_w_per_end"),
                "fibre": (("cable_usd", "cable_usd_per_m"), None)}


def _unit_range(kind: str, entry: Entry, bucket: float, usd: float, w: float,
                ) -> tuple[float, float, float, float]:
    """One unit's ``(low USD, high USD, low W, high W)``: the unit figures scaled by the
    catalog's range of the fields they come from (a cable or fibre by its fixed and per-metre
    prices at its length bucket)."""
    price_fields, power_field = _PRICE_POWER[kind]

    def ratio(values: list[float], lows: list[float], highs: list[float]) -> tuple[float, float]:
        total = sum(values)
        return (1.0, 1.0) if total <= 0 else (sum(lows) / total, sum(highs) / total)

    scale = [1.0, bucket] if len(price_fields) == 2 else [1.0]
    prices = [entry.get(f, 0.0) * k for f, k in zip(price_fields, scale, strict=True)]
    p_lo, p_hi = ratio(prices, [entry.range_of(f)[0] * k for f, k in
                                zip(price_fields, scale, strict=True)],
                       [entry.range_of(f)[1] * k for f, k in zip(price_fields, scale, strict=True)])
    w_lo, w_hi = (1.0, 1.0) if power_field is None else ratio(
        [entry.get(power_field, 0.0)], [entry.range_of(power_field)[0]],
        [entry.range_of(power_field)[1]])
    return usd * p_lo, usd * p_hi, w * w_lo, w * w_hi


__all__ = ["LENGTH_BUCKETS_M", "BomRow", "CostEstimate", "DeliveredCost", "Totals",
           "estimate_cost", "length_bucket"]
