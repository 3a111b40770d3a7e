r"""Cost per million tokens: the whole cluster's total cost of ownership spread over its
service life (``docs/workload.md#cost-per-token``, ``docs/cost.md``).

``usd_per_s = cluster TCO / (years x 365.25 x 86400)`` and per million tokens
``1e6 usd_per_s / tokens_per_s``, where the cluster TCO is :func:`fabricopt.estimate_tco`'s
(network capex, energy, maintenance and replacements, and the servers' price, energy at
their maximum power, an upper end, and maintenance) under the cost model's one set of
assumptions (:func:`fabricopt.cost_assumptions`: years, $/kWh, PUE, maintenance).

The GPU is the one the job runs on (:func:`~fabricopt.workload.hardware.pick_gpu`: ``gpu``,
else the fabric's ``gpu_model``, else its NVLink generation), and a ``gpu`` the fabric's
GPUs do not carry is refused. The servers are the system the fabric's scale-up domains are
(a GB200 NVL72 rack, not nine DGX B200) when that system holds this GPU, else the usual
server of the GPU (:data:`SYSTEM_BY_GPU`): a domain of unnamed GPUs on NVSwitch gen 3 chips
run as H200s is priced as DGX H200, not as the DGX H100 its chips alone suggest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import check_positive
from ..catalog import Catalog
from ..cost import estimate_cost
from ..cost.assumptions import assumptions_for
from ..cost.systems import SYSTEMS_BY_GPU_MODEL, server_system
from ..cost.tco import TcoEstimate, estimate_tco
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .hardware import pick_gpu

#: The server (or rack) a GPU comes in, for its price and power.
SYSTEM_BY_GPU = {"a100_sxm_40gb": "dgx_a100", "a100_sxm_80gb": "dgx_a100",
                 "h100_sxm": "dgx_h100", "h800_sxm": "hgx_h800", "h200_sxm": "dgx_h200",
                 "b200": "dgx_b200", "gb200": "gb200_nvl72"}
#: The GPUs each system holds (the inverse of :data:`SYSTEM_BY_GPU` and of the cost layer's
#: systems by GPU model).
GPUS_BY_SYSTEM: dict[str, frozenset[str]] = {
    system: frozenset(g for g, s in (*SYSTEM_BY_GPU.items(), *SYSTEMS_BY_GPU_MODEL.items())
                      if s == system)
    for system in {*SYSTEM_BY_GPU.values(), *SYSTEMS_BY_GPU_MODEL.values()}}
SECONDS_PER_YEAR = 365.25 * 86400


@dataclass(frozen=True)
class TokenCost:
    """Capex, power and the cost of a million tokens at a rate; ``tco`` is the cluster's
    total cost of ownership it spreads over the years."""

    network_capex_usd: float
    servers_capex_usd: float
    power_w: float
    usd_per_s: float
    usd_per_million_tokens: float
    years: float
    notes: tuple[str, ...] = ()
    tco: TcoEstimate | None = None


def token_cost(fab: Fabric, tokens_per_s: float, gpu: str | None = None, *,
               years: float | None = None, usd_per_kwh: float | None = None,
               pue: float | None = None, catalog: Catalog | None = None) -> TokenCost:
    """What a million tokens cost on ``fab`` at ``tokens_per_s``.

    Parameters
    ----------
    fab : Fabric
        Every GPU of it is paid for (its network by :func:`~fabricopt.estimate_cost`, its
        servers at the catalog's system price).
    tokens_per_s : float
        The rate the fabric trains or serves at, > 0.
    gpu : str, optional
        Catalog key of the GPU (``"h100_sxm"``, ``"b200"``, ...); default the fabric's GPUs
        (their ``gpu_model``), else its NVLink generation. A key the catalog lacks is
        refused with a suggestion, and so is one the fabric's GPUs do not carry.
    years : float, optional
        Years the capex is spread over, > 0. Default (like ``usd_per_kwh`` and ``pue``) the
        cost model's assumptions (:func:`~fabricopt.cost_assumptions`), shared with
        :func:`~fabricopt.estimate_tco`.
    usd_per_kwh : float, optional
        Energy price, >= 0.
    pue : float, optional
        Power usage effectiveness of the facility, >= 1 (a facility draws at least what its
        IT load does).
    catalog : Catalog, optional
        Default :meth:`Catalog.default`.

    Returns
    -------
    TokenCost

    Raises
    ------
    InvalidParameterError
        On a bad argument, a GPU the fabric does not carry, or figures too large for a float
        (an infinite cost per token is refused, naming the arguments that make it).

    Examples
    --------
    >>> import fabricopt as fo
    >>> c = token_cost(fo.superpod(1), 1e6)
    >>> c.servers_capex_usd       # 32 DGX H100 at the catalog's $270k
    8640000.0
    >>> token_cost(fo.superpod(1), 1e6, gpu="b200")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricopt.errors.InvalidParameterError: token_cost(): gpu must be the GPU the fabric's ...
    """
    func = "token_cost"
    check_fabric(func, fab)
    tokens_per_s = check_positive(func, "tokens_per_s", tokens_per_s)
    if catalog is not None and not isinstance(catalog, Catalog):
        raise InvalidParameterError(f"{func}(): catalog must be None or a Catalog, got "
                                    f"{catalog!r}")
    a = assumptions_for(func, years, usd_per_kwh, pue)
    catalog = catalog or Catalog.default()
    gpu = pick_gpu(fab, gpu, catalog, func)
    net = estimate_cost(fab, catalog=catalog)
    notes = []
    # The system the fabric's scale-up domains are, when it holds this GPU; else the usual
    # server of the GPU.
    by_domain = server_system(fab)
    key = by_domain if gpu in GPUS_BY_SYSTEM.get(by_domain or "", ()) else (
        SYSTEM_BY_GPU.get(gpu))
    system = catalog.systems.get(key or "")
    if system is None:
        notes.append(f"no catalog system for GPU {gpu!r}: servers left out of the cost")
    elif "price_usd" not in system.values:
        notes.append(f"the catalog gives no price for {system.key}: servers left out")
        system = None
    elif by_domain is not None and key != by_domain:
        notes.append(f"the fabric's scale-up domains are {by_domain}'s, its GPUs {gpu}: "
                     f"servers priced as {key}")
    try:
        tco = estimate_tco(fab, a.years, a.usd_per_kwh, a.pue, estimate=net,
                           system=system.key if system is not None else None)
    except InvalidParameterError as exc:  # a total that overflows, said in this call's words
        raise InvalidParameterError(str(exc).replace("estimate_tco(): ", f"{func}(): ")
                                    ) from None
    if system is not None and tco.cluster_total_usd is None:  # no GPU: nothing to price
        system = None
    total = tco.cluster_total_usd if system is not None else tco.total_usd
    servers_usd = tco.servers_capex_usd or 0.0
    servers_w = tco.servers * float(system.values.get("power_w", 0.0)) if system else 0.0
    power = net.power_w + servers_w
    per_s = total / (a.years * SECONDS_PER_YEAR)
    per_million = 1e6 * per_s / tokens_per_s
    if not math.isfinite(per_million):
        raise InvalidParameterError(
            f"{func}(): the cost per million tokens overflows a float (capex "
            f"${net.capex_usd + servers_usd:,.4g} over years={a.years!r}, {power:,.4g} W x "
            f"pue={a.pue!r} x usd_per_kwh={a.usd_per_kwh!r}, at tokens_per_s="
            f"{tokens_per_s!r}): give years, usd_per_kwh and tokens_per_s of a real facility "
            "and job")
    return TokenCost(net.capex_usd, servers_usd, power, per_s, per_million, a.years,
                     tuple(notes), tco)


__all__ = ["GPUS_BY_SYSTEM", "SYSTEM_BY_GPU", "TokenCost", "token_cost"]
