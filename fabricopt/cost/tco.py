"""Total cost of ownership of a fabric's network, and of the whole cluster around it: capex,
energy at the facility's PUE, maintenance, and the optics and cables that fail and are
replaced, per GPU per year.

The defaults of ``years``, ``usd_per_kwh``, ``pue`` and ``maintenance`` are the cost model's
one set of assumptions (:mod:`fabricopt.cost.assumptions`), shared with the cost per token.

Over ``years``, for the network:

* **energy** = network power (W) x 8,766 h a year x ``years`` x ``pue`` x ``usd_per_kwh`` / 1000;
* **maintenance** = ``maintenance`` (a fraction of capex a year: support contracts and spares)
  x capex x ``years``;
* **replacements** = for every module and cable of the bill of materials, its units x its
  annual failure rate (:data:`ANNUAL_FAILURE_RATES`, by medium type) x ``years`` x its unit
  price.

For the whole cluster, the servers (or racks) the GPUs come in are added: the catalog system
the fabric's scale-up domains are (:func:`~fabricopt.cost.systems.server_system`, or the
``system`` given), ``n_endpoints / gpus`` of them at its price, its maximum power drawn
around the clock (an upper end) at the same PUE and price, and the same maintenance fraction
of its price a year (support contracts cover the servers' failed parts). The network's share
is its total over the cluster's. A system's price holds its NICs and scale-up switches, which
the network estimate leaves out (section ``"in_server"``), so nothing is counted twice.

The same rates give the links down at any moment: a link is down while a module at either
end, or its cable, waits ``mttr_hours`` for replacement, so the expected number of failed
links is ``sum over links of (2 AFR_module or AFR_cable) x mttr_hours / 8766``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_positive, fail
from ..catalog import TRANSCEIVER_TYPES, Catalog, Entry
from ..errors import InvalidParameterError
from ..fabric import Fabric
from .assumptions import DEFAULT_ASSUMPTIONS, assumptions_for
from .bom import CostEstimate, estimate_cost
from .systems import server_system

HOURS_PER_YEAR = 8766.0  # 365.25 days

#: Annual failure rate (fraction of units a year) per medium type, with its low-high range.
#: Pluggable optics: field MTBF of 0.5 to 2 million hours for 400G/800G modules ("Reliability
#: Engineering for 800G Optical Modules in AI Data Centers", LuxOptX), i.e. 8766 h / MTBF =
#: 0.44% to 1.75% a year; 0.9% (MTBF about 1 million hours) taken for DSP modules. LPO and CPO
#: drop the DSP, the largest single contributor in that note's FIT budget: estimate 0.5%. An AOC
#: carries a pair of optical engines: 0.9% for the cable (estimate). Copper: passive DAC and
#: linear ACC have no active parts, estimate 0.1%; an AEC has two retimers, estimate 0.5%.
#: NVLink copper is part of the system and not replaced as network spares.
ANNUAL_FAILURE_RATES: dict[str, tuple[float, float, float]] = {
    "sr": (0.009, 0.0044, 0.0175), "dr": (0.009, 0.0044, 0.0175),
    "fr": (0.009, 0.0044, 0.0175), "lpo": (0.005, 0.002, 0.01), "cpo": (0.005, 0.002, 0.01),
    "aoc": (0.009, 0.0044, 0.0175), "aec": (0.005, 0.002, 0.01),
    "acc": (0.001, 0.0005, 0.003), "dac": (0.001, 0.0005, 0.003), "nvlink": (0.0, 0.0, 0.0),
}

#: Annual maintenance as a fraction of capex when none is given (the sourced default of
#: :mod:`fabricopt.cost.assumptions`).
DEFAULT_MAINTENANCE = DEFAULT_ASSUMPTIONS.maintenance


@dataclass
class TcoEstimate:
    """What :func:`estimate_tco` returns (USD unless named).

    The network: ``capex_usd``, ``energy_usd``, ``maintenance_usd``, ``replacement_usd``,
    ``total_usd`` and ``per_gpu_per_year_usd`` (the total over the years, per GPU, per
    year); ``replacements`` gives units replaced over the years per catalog component;
    ``expected_failed_links`` the links down at any moment.

    The whole cluster (None where the GPUs are in no catalog system with a price): ``system``
    and ``servers`` (how many), ``servers_capex_usd``, ``servers_energy_usd``,
    ``servers_maintenance_usd``, ``cluster_total_usd`` (network and servers),
    ``cluster_per_gpu_per_year_usd`` and ``network_share`` (the network's total over the
    cluster's).
    """

    fabric: str
    years: float
    pue: float
    usd_per_kwh: float
    maintenance: float
    mttr_hours: float
    capex_usd: float
    energy_usd: float
    maintenance_usd: float
    replacement_usd: float
    total_usd: float
    per_gpu_per_year_usd: float
    capex_usd_range: tuple[float, float]
    network_kwh_per_year: float
    expected_failed_links: float
    n_endpoints: int
    policy_name: str
    replacements: dict[str, float] = field(default_factory=dict)
    cost: CostEstimate | None = field(default=None, repr=False)
    network_links: int = 0
    system: str | None = None
    servers: float = 0.0
    servers_capex_usd: float | None = None
    servers_energy_usd: float | None = None
    servers_maintenance_usd: float | None = None
    cluster_total_usd: float | None = None
    cluster_per_gpu_per_year_usd: float | None = None
    network_share: float | None = None

    @property
    def failed_link_fraction(self) -> float:
        """Expected share of the network's physical links down at any moment: the fraction
        to give :func:`~fabricopt.failure_sweep` for the throughput at that failure level."""
        return self.expected_failed_links / self.network_links if self.network_links else 0.0

    def __str__(self) -> str:
        lo, hi = self.capex_usd_range
        return "\n".join([
            f"TCO of {self.fabric} over {self.years:g} years (network; {self.policy_name})",
            f"  capex        {self.capex_usd:,.0f} USD (range {lo:,.0f} to {hi:,.0f})",
            f"  energy       {self.energy_usd:,.0f} USD ({self.network_kwh_per_year:,.0f} kWh "
            f"a year drawn, x PUE {self.pue:g}, at {self.usd_per_kwh:g} USD/kWh)",
            f"  maintenance  {self.maintenance_usd:,.0f} USD ({self.maintenance:.0%} of capex "
            "a year)",
            f"  replacements {self.replacement_usd:,.0f} USD (optics and cables at their "
            "annual failure rates)",
            f"  total        {self.total_usd:,.0f} USD, {self.per_gpu_per_year_usd:,.0f} USD "
            "per GPU per year",
            f"  links down at any time: {self.expected_failed_links:.3g} expected "
            f"({self.mttr_hours:g} h to replace a part)", *self._cluster_lines()])

    def _cluster_lines(self) -> list[str]:
        if self.cluster_total_usd is None:
            return ["  whole cluster: the GPUs are in no catalog system with a price "
                    "(pass system=)"]
        return [
            f"whole cluster ({self.servers:,.4g} x {self.system} and the network)",
            f"  servers      {self.servers_capex_usd:,.0f} USD capex, "
            f"{self.servers_energy_usd:,.0f} USD energy, {self.servers_maintenance_usd:,.0f} "
            "USD maintenance",
            f"  total        {self.cluster_total_usd:,.0f} USD, "
            f"{self.cluster_per_gpu_per_year_usd:,.0f} USD per GPU per year; the network "
            f"{self.network_share:.1%} of it"]


def estimate_tco(fab: Fabric, years: float | None = None, usd_per_kwh: float | None = None,
                 pue: float | None = None, maintenance: float | None = None,
                 mttr_hours: float = 24.0, *, estimate: CostEstimate | None = None,
                 system: str | None = None, **cost_options: Any) -> TcoEstimate:
    """Total cost of ownership of ``fab``'s network, and of the cluster, over ``years``
    (module notes).

    Parameters
    ----------
    fab : Fabric
    years : float, optional
        Service life, > 0. Default (like ``usd_per_kwh``, ``pue`` and ``maintenance``) the
        cost model's assumptions (:func:`~fabricopt.cost_assumptions`: 5 years, $0.08 per
        kWh, PUE 1.3, 10% a year).
    usd_per_kwh : float, optional
        Electricity price, >= 0.
    pue : float, optional
        Power usage effectiveness of the facility, >= 1 (the watts drawn times ``pue`` come
        from the grid).
    maintenance : float, optional
        Support and spares a year as a fraction of capex, >= 0 (network and servers alike).
    mttr_hours : float
        Hours from a part's failure to its replacement, > 0 (for the links down at once).
    estimate : CostEstimate, optional
        A cost estimate of ``fab`` already made; default :func:`~fabricopt.estimate_cost`
        with ``cost_options`` (``catalog``, ``layout``, ``policy``, ``include_in_server``).
    system : str, optional
        Catalog system the GPUs come in, for the whole-cluster figures; default the one the
        fabric's scale-up domains are (a DGX H100 for a SuperPOD), none for a bare network.

    Returns
    -------
    TcoEstimate

    Raises
    ------
    InvalidParameterError
        On a bad argument (a ``pue`` below 1 among them), or years, prices and rates whose
        total overflows a float (an infinite TCO is refused, naming them).

    Examples
    --------
    >>> import fabricopt as fo
    >>> tco = fo.estimate_tco(fo.ring(4, link_gbps=400), years=5, usd_per_kwh=0.1, pue=1.3)
    >>> tco.total_usd > tco.capex_usd > 0
    True

    A SuperPOD of one SU: 32 DGX H100 at the catalog's $270k each, the network a small part.

    >>> pod = fo.estimate_tco(fo.superpod(1))
    >>> pod.system, pod.servers, pod.servers_capex_usd
    ('dgx_h100', 32.0, 8640000.0)
    >>> 0 < pod.network_share < 0.2
    True
    """
    func = "estimate_tco"
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    a = assumptions_for(func, years, usd_per_kwh, pue, maintenance)
    years, usd_per_kwh, pue, maintenance = a.years, a.usd_per_kwh, a.pue, a.maintenance
    mttr_hours = check_positive(func, "mttr_hours", mttr_hours)
    if system is not None and not isinstance(system, str):
        raise fail(func, "system", "None or a catalog system key", system)
    if estimate is None:
        estimate = estimate_cost(fab, **cost_options)
    elif not isinstance(estimate, CostEstimate) or cost_options:
        raise fail(func, "estimate", "a CostEstimate (and no cost options beside it)",
                   type(estimate).__name__)
    est = estimate
    cat = est.catalog
    counted = {"network", "in_server"} if est.include_in_server else {"network"}
    replacements: dict[str, float] = {}
    replacement_usd = 0.0
    for r in est.bom:
        if r.kind not in ("transceiver", "cable") or r.section not in counted:
            continue
        medium = cat.media[r.component] if cat is not None else None
        afr = ANNUAL_FAILURE_RATES.get(medium["type"], (0.0,))[0] if medium else 0.0
        units = r.count * afr * years
        replacements[r.component] = replacements.get(r.component, 0.0) + units
        replacement_usd += units * r.unit_usd
    failed_links = 0.0
    network_links = 0
    for run in est.links:
        medium = cat.media.get(run["medium"]) if cat is not None else None
        if medium is None:
            continue
        afr = ANNUAL_FAILURE_RATES.get(medium["type"], (0.0,))[0]
        network_links += run["links"] if medium["type"] != "nvlink" else 0
        per_link = 2 * afr if medium["type"] in TRANSCEIVER_TYPES else afr
        failed_links += run["links"] * per_link * mttr_hours / HOURS_PER_YEAR
    kwh_year = est.power_w / 1000 * HOURS_PER_YEAR
    energy = kwh_year * years * pue * usd_per_kwh
    maint = maintenance * est.capex_usd * years
    total = est.capex_usd + energy + maint + replacement_usd
    if not math.isfinite(total):
        parts = {"energy": energy, "maintenance": maint, "replacements": replacement_usd}
        grown = ", ".join(k for k, v in parts.items() if not math.isfinite(v)) or "the sum"
        raise InvalidParameterError(
            f"{func}(): the total cost overflows a float ({grown} at years={years!r}, "
            f"usd_per_kwh={usd_per_kwh!r}, pue={pue!r}, maintenance={maintenance!r}, on "
            f"${est.capex_usd:,.0f} of capex and {est.power_w:,.0f} W): give the years, "
            "prices and rates of a real facility")
    n = est.n_endpoints
    tco = TcoEstimate(est.fabric, years, pue, usd_per_kwh, maintenance, mttr_hours,
                      est.capex_usd, energy, maint, replacement_usd, total,
                      total / n / years if n else math.nan, est.capex_usd_range, kwh_year,
                      failed_links, n, est.policy_name, replacements, est, network_links)
    key = system if system is not None else server_system(fab)
    entry = _system_entry(func, est, key, system is not None)
    if entry is not None and n:
        add_servers(tco, entry)
        if not math.isfinite(tco.cluster_total_usd or 0.0):
            raise InvalidParameterError(
                f"{func}(): the whole cluster's total cost overflows a float (years={years!r}, "
                f"usd_per_kwh={usd_per_kwh!r}, pue={pue!r}, maintenance={maintenance!r}): "
                "give the years, prices and rates of a real facility")
    return tco


def _system_entry(func: str, est: CostEstimate, key: str | None, given: bool) -> Entry | None:
    """The catalog system ``key`` with a price and GPU count, or None (a key given and not in
    the catalog is refused)."""
    if key is None:
        return None
    systems = (est.catalog or Catalog.default()).systems
    entry = systems.get(key)
    if entry is None and given:
        raise fail(func, "system", "a catalog system (" + ", ".join(sorted(systems)) + ")",
                   key, word=key, choices=sorted(systems))
    if entry is None or entry.get("price_usd") is None:
        return None
    return entry


def add_servers(tco: TcoEstimate, entry: Entry) -> None:
    """Fill the whole-cluster figures of ``tco`` with ``n_endpoints / gpus`` systems of
    ``entry`` (its price, its maximum power at the TCO's PUE and price, the same
    maintenance fraction), as the module notes say."""
    servers = tco.n_endpoints / entry["gpus"]
    capex = servers * float(entry["price_usd"])
    watts = servers * float(entry.get("power_w") or 0.0)
    energy = watts / 1000 * HOURS_PER_YEAR * tco.years * tco.pue * tco.usd_per_kwh
    upkeep = tco.maintenance * capex * tco.years
    total = tco.total_usd + capex + energy + upkeep
    tco.system, tco.servers = entry.key, servers
    tco.servers_capex_usd, tco.servers_energy_usd = capex, energy
    tco.servers_maintenance_usd, tco.cluster_total_usd = upkeep, total
    tco.cluster_per_gpu_per_year_usd = total / tco.n_endpoints / tco.years
    tco.network_share = tco.total_usd / total if total else 0.0


def tco_metrics(fab: Fabric, **options: Any) -> dict[str, float]:
    """Row values for a TCO column of a comparison: :func:`estimate_tco` with ``options``.

    >>> import fabricopt as fo
    >>> row = tco_metrics(fo.ring(4, link_gbps=400))
    >>> sorted(row)[:3]
    ['cluster_tco_per_gpu_year_usd', 'cluster_tco_usd', 'expected_failed_links']
    >>> row["cluster_tco_usd"] is None    # a ring of GPUs in no catalog system
    True
    """
    t = estimate_tco(fab, **options)
    return {"tco_usd": t.total_usd, "tco_per_gpu_year_usd": t.per_gpu_per_year_usd,
            "tco_energy_usd": t.energy_usd, "tco_maintenance_usd": t.maintenance_usd,
            "tco_replacement_usd": t.replacement_usd,
            "expected_failed_links": t.expected_failed_links,
            "cluster_tco_usd": t.cluster_total_usd,
            "cluster_tco_per_gpu_year_usd": t.cluster_per_gpu_per_year_usd,
            "tco_network_share": t.network_share}
