r"""Cost per million tokens: capex amortised over years, plus energy
(``docs/workload.md#cost-per-token``).

``usd_per_s = (network capex + servers x system price) / (years x 365.25 x 86400)
+ (network W + servers x system W) x PUE x usd_per_kwh / 3.6e6``, and per million tokens
``1e6 usd_per_s / tokens_per_s``. Network figures come from :func:`fabricopt.estimate_cost`,
servers from the catalog's ``[system]`` entry of the GPU (its maximum power: an upper end).

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

from .._checks import check_positive, fail
from ..catalog import Catalog
from ..cost import estimate_cost
from ..cost.systems import SYSTEMS_BY_GPU_MODEL, server_system
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
    """Capex, power and the cost of a million tokens at a rate."""

    network_capex_usd: float
    servers_capex_usd: float
    power_w: float
    usd_per_s: float
    usd_per_million_tokens: float
    years: float
    notes: tuple[str, ...] = ()


def token_cost(fab: Fabric, tokens_per_s: float, gpu: str | None = None, *,
               years: float = 4.0, usd_per_kwh: float = 0.08, pue: float = 1.2,
               catalog: Catalog | None = None) -> TokenCost:
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
    years : float
        Years the capex is amortised over, > 0.
    usd_per_kwh : float
        Energy price, >= 0.
    pue : float
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
    >>> c.servers_capex_usd       # 32 DGX H100 at the catalog's $199k
    6368000.0
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
    years = check_positive(func, "years", years)
    usd_per_kwh = check_positive(func, "usd_per_kwh", usd_per_kwh, allow_zero=True)
    pue = check_positive(func, "pue", pue)
    if pue < 1:
        raise fail(func, "pue", "a power usage effectiveness >= 1 (a facility draws at least "
                   "its IT load)", pue)
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
    servers_usd = servers_w = 0.0
    if system is None:
        notes.append(f"no catalog system for GPU {gpu!r}: servers left out of the cost")
    else:
        if by_domain is not None and key != by_domain:
            notes.append(f"the fabric's scale-up domains are {by_domain}'s, its GPUs {gpu}: "
                         f"servers priced as {key}")
        count = len(fab.endpoints) / system.values["gpus"]
        if "price_usd" in system.values:
            servers_usd = count * float(system.values["price_usd"])
        else:
            notes.append(f"the catalog gives no price for {system.key}: servers' capex left out")
        servers_w = count * float(system.values.get("power_w", 0.0))
    power = net.power_w + servers_w
    per_s = ((net.capex_usd + servers_usd) / (years * SECONDS_PER_YEAR)
             + power * pue * usd_per_kwh / 3.6e6)
    per_million = 1e6 * per_s / tokens_per_s
    if not math.isfinite(per_million):
        raise InvalidParameterError(
            f"{func}(): the cost per million tokens overflows a float (capex "
            f"${net.capex_usd + servers_usd:,.4g} over years={years!r}, {power:,.4g} W x "
            f"pue={pue!r} x usd_per_kwh={usd_per_kwh!r}, at tokens_per_s={tokens_per_s!r}): "
            "give years, usd_per_kwh and tokens_per_s of a real facility and job")
    return TokenCost(net.capex_usd, servers_usd, power, per_s, per_million, years,
                     tuple(notes))


__all__ = ["GPUS_BY_SYSTEM", "SYSTEM_BY_GPU", "TokenCost", "token_cost"]
