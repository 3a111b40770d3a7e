r"""Cost per million tokens: capex amortised over years, plus energy
(``docs/workload.md#cost-per-token``).

``usd_per_s = (network capex + servers x system price) / (years x 365.25 x 86400)
+ (network W + servers x system W) x PUE x usd_per_kwh / 3.6e6``, and per million tokens
``1e6 usd_per_s / tokens_per_s``. Network figures come from :func:`fabricopt.estimate_cost`,
servers from the catalog's ``[system]`` entry of the GPU (its maximum power: an upper end).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import check_label, check_positive
from ..catalog import Catalog
from ..cost import estimate_cost
from ..cost.systems import server_system
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric

#: The server (or rack) a GPU comes in, for its price and power.
SYSTEM_BY_GPU = {"a100_sxm_40gb": "dgx_a100", "a100_sxm_80gb": "dgx_a100",
                 "h100_sxm": "dgx_h100", "h800_sxm": "hgx_h800", "h200_sxm": "dgx_h200",
                 "b200": "dgx_b200", "gb200": "gb200_nvl72"}
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


def token_cost(fab: Fabric, tokens_per_s: float, gpu: str = "h100_sxm", *, years: float = 4.0,
               usd_per_kwh: float = 0.08, pue: float = 1.2,
               catalog: Catalog | None = None) -> TokenCost:
    """What a million tokens cost on ``fab`` at ``tokens_per_s``.

    >>> import fabricopt as fo
    >>> c = token_cost(fo.superpod(1), 1e6)
    >>> c.servers_capex_usd       # 32 DGX H100 at the catalog's $199k
    6368000.0
    """
    func = "token_cost"
    check_fabric(func, fab)
    tokens_per_s = check_positive(func, "tokens_per_s", tokens_per_s)
    check_label(func, "gpu", gpu, optional=False)
    if catalog is not None and not isinstance(catalog, Catalog):
        raise InvalidParameterError(f"{func}(): catalog must be None or a Catalog, got "
                                    f"{catalog!r}")
    years = check_positive(func, "years", years)
    usd_per_kwh = check_positive(func, "usd_per_kwh", usd_per_kwh, allow_zero=True)
    pue = check_positive(func, "pue", pue)
    catalog = catalog or Catalog.default()
    net = estimate_cost(fab, catalog=catalog)
    notes = []
    # The system the fabric's scale-up domains are (a GB200 NVL72 rack, not nine DGX B200),
    # else the usual server of the GPU.
    system = catalog.systems.get(server_system(fab) or SYSTEM_BY_GPU.get(gpu, ""))
    servers_usd = servers_w = 0.0
    if system is None:
        notes.append(f"no catalog system for GPU {gpu!r}: servers left out of the cost")
    else:
        count = len(fab.endpoints) / system.values["gpus"]
        if "price_usd" in system.values:
            servers_usd = count * float(system.values["price_usd"])
        else:
            notes.append(f"the catalog gives no price for {system.key}: servers' capex left out")
        servers_w = count * float(system.values.get("power_w", 0.0))
    power = net.power_w + servers_w
    per_s = ((net.capex_usd + servers_usd) / (years * SECONDS_PER_YEAR)
             + power * pue * usd_per_kwh / 3.6e6)
    return TokenCost(net.capex_usd, servers_usd, power, per_s, 1e6 * per_s / tokens_per_s,
                     years, tuple(notes))


__all__ = ["SYSTEM_BY_GPU", "TokenCost", "token_cost"]
