"""The cost model's assumptions about the facility and the service life, in one place.

Every figure that turns capex and watts into dollars over time (a network's TCO, a cluster's,
the cost per token of training or serving, the ``tco`` and ``train`` commands) reads its
defaults here, so they never disagree (``docs/cost.md#assumptions``):

* ``years = 5``: the service life over which capex is spread. Public TCO models of GPU clusters
  take 4 to 6 years, and the largest operators depreciate servers over 5 to 6 years in their
  annual reports (estimate: the middle of that range).
* ``usd_per_kwh = 0.08``: the average price of electricity to US industrial customers, about
  8 cents a kWh in 2023 (US Energy Information Administration, Electric Power Monthly; a
  range of 0.05 to 0.15 covers most data-centre sites).
* ``pue = 1.3``: between the about 1.1 of hyperscale fleets (Google) and the 1.56 to 1.58
  industry average (Uptime Institute global surveys, 2023 and 2024); a new liquid-cooled AI
  hall sits near the low end, a colocation cage nearer the average (estimate).
* ``maintenance = 0.10``: support contracts and spares a year, as a fraction of capex
  (estimate: enterprise support is commonly priced at about a tenth of list a year).

Change them for one call by passing the figure (``fo.estimate_tco(fab, years=4)``), or for
every call at once with :func:`set_cost_assumptions`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from .._checks import check_positive, fail
from ..errors import InvalidParameterError


def check_assumptions(func: str, years: Any, usd_per_kwh: Any, pue: Any,
                      maintenance: Any) -> tuple[float, float, float, float]:
    """The four figures checked for ``func``: years > 0, a price >= 0, a PUE >= 1 (a facility
    draws at least its IT load), maintenance >= 0, all finite.

    >>> check_assumptions("f", 4, 0.1, 1.2, 0)
    (4.0, 0.1, 1.2, 0.0)
    """
    years = check_positive(func, "years", years)
    usd_per_kwh = check_positive(func, "usd_per_kwh", usd_per_kwh, allow_zero=True)
    pue = check_positive(func, "pue", pue)
    if pue < 1:
        raise fail(func, "pue", "a power usage effectiveness >= 1 (a facility draws at least "
                   "its IT load)", pue)
    maintenance = check_positive(func, "maintenance", maintenance, allow_zero=True)
    for name, value in (("years", years), ("usd_per_kwh", usd_per_kwh), ("pue", pue),
                        ("maintenance", maintenance)):
        if not math.isfinite(value):
            raise fail(func, name, "a finite number", value)
    return float(years), float(usd_per_kwh), float(pue), float(maintenance)


@dataclass(frozen=True)
class CostAssumptions:
    """Years of service, electricity price, facility PUE and yearly upkeep (module notes).

    >>> CostAssumptions()
    CostAssumptions(years=5.0, usd_per_kwh=0.08, pue=1.3, maintenance=0.1)
    >>> CostAssumptions(pue=0.9)
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: CostAssumptions(): pue must be a power usage ...
    """

    years: float = 5.0
    usd_per_kwh: float = 0.08
    pue: float = 1.3
    maintenance: float = 0.10

    def __post_init__(self) -> None:
        checked = check_assumptions("CostAssumptions", self.years, self.usd_per_kwh, self.pue,
                                    self.maintenance)
        for name, value in zip(("years", "usd_per_kwh", "pue", "maintenance"), checked,
                               strict=True):
            object.__setattr__(self, name, value)


#: The sourced defaults (module notes); :func:`set_cost_assumptions` with no argument
#: returns to them.
DEFAULT_ASSUMPTIONS = CostAssumptions()
_current = [DEFAULT_ASSUMPTIONS]


def cost_assumptions() -> CostAssumptions:
    """The assumptions every cost figure uses when the call gives none (module notes; change
    them with :func:`set_cost_assumptions`).

    >>> import fabricopt as fo
    >>> fo.cost_assumptions()
    CostAssumptions(years=5.0, usd_per_kwh=0.08, pue=1.3, maintenance=0.1)
    """
    return _current[0]


def assumptions_for(func: str, years: float | None = None, usd_per_kwh: float | None = None,
                    pue: float | None = None, maintenance: float | None = None
                    ) -> CostAssumptions:
    """The assumptions in force with the figures a call of ``func`` gives (not None) in
    place of theirs, checked in ``func``'s name: how every cost function reads its defaults.

    >>> assumptions_for("token_cost", years=4).years, cost_assumptions().years
    (4.0, 5.0)
    """
    base = _current[0]
    given = {"years": years, "usd_per_kwh": usd_per_kwh, "pue": pue,
             "maintenance": maintenance}
    values = {k: (getattr(base, k) if v is None else v) for k, v in given.items()}
    return CostAssumptions(*check_assumptions(func, **values))


def set_cost_assumptions(assumptions: CostAssumptions | None = None,
                         **changes: float) -> CostAssumptions:
    """Set the assumptions every cost function uses by default; return the previous ones.

    Parameters
    ----------
    assumptions : CostAssumptions, optional
        The new assumptions; default the ones in force (or, with no ``changes`` either, the
        sourced :data:`DEFAULT_ASSUMPTIONS`).
    **changes
        ``years``, ``usd_per_kwh``, ``pue``, ``maintenance`` to change.

    Examples
    --------
    >>> import fabricopt as fo
    >>> before = fo.set_cost_assumptions(usd_per_kwh=0.12)
    >>> fo.cost_assumptions().usd_per_kwh, before.usd_per_kwh
    (0.12, 0.08)
    >>> _ = fo.set_cost_assumptions(before)   # back as it was
    """
    func = "set_cost_assumptions"
    if assumptions is not None and not isinstance(assumptions, CostAssumptions):
        raise fail(func, "assumptions", "a CostAssumptions or None", type(assumptions).__name__)
    fields = {f.name for f in dataclasses.fields(CostAssumptions)}
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise InvalidParameterError(f"{func}(): {unknown[0]!r} is not an assumption; "
                                    "assumptions: " + ", ".join(sorted(fields)))
    previous = _current[0]
    if assumptions is None:
        assumptions = previous if changes else DEFAULT_ASSUMPTIONS
    figures = {**dataclasses.asdict(assumptions), **changes}
    _current[0] = CostAssumptions(*check_assumptions(func, **figures))
    return previous


__all__ = ["DEFAULT_ASSUMPTIONS", "CostAssumptions", "assumptions_for", "check_assumptions",
           "cost_assumptions", "set_cost_assumptions"]
