"""Failure numbers for design studies: the row values a comparison shows and the test an
optimizer's constraint applies, each certified.

* :func:`failure_metrics`: the N-1 worst case (every single failure of a kind) and a
  percentile of Gb/s per GPU under a failure model, as a flat dict of numbers.
* :func:`survives_single_failure`: does the fabric keep at least ``min_gbps`` per GPU with any
  single unit of a kind failed? True or False when proven, None when the brackets leave it
  open.
"""

from __future__ import annotations

from typing import Any

from .._checks import check_choice, check_positive, fail
from ..fabric import Fabric, check_fabric
from .distribution import check_distribution_arguments, distribution
from .models import EverySingle, FailureModel
from .single import FailureTable, solve_orbits
from .sweep import KINDS


def _n1_table(func: str, fab: Fabric, kind: str, tiers: Any,
              solve_options: dict[str, Any]) -> FailureTable:
    """:func:`~fabricopt.single_failures` of ``fab``, its messages naming ``func``."""
    options = dict(solve_options)
    return solve_orbits(fab, kind, tiers, traffic=None, method=options.pop("method", "auto"),
                        warm_start=True, symmetry=True, order="fabric", func=func,
                        solve_options=options)


def failure_metrics(fab: Fabric, *, kind: str = "switches", model: FailureModel | None = None,
                    percentile: float = 5.0, trials: int | None = None, seed: int = 1,
                    **solve_options: Any) -> dict[str, float]:
    """Certified failure numbers of ``fab`` for one row of a comparison (Gb/s per GPU).

    Parameters
    ----------
    kind : {"links", "switches", "groups"}
        The N-1 set: every single unit of this kind.
    model : FailureModel, optional
        The model of the percentile column (default: every single ``kind``, listed).
    percentile : float
        Which percentile (0..100) of Gb/s per GPU to report (default 5).
    trials, seed
        Draws of ``model`` (None lists every pattern when the model can).

    Returns
    -------
    dict
        ``n1_worst_gbps`` (no single failure leaves less, proven) and
        ``n1_worst_gbps_upper`` (one leaves at most this); ``failure_p{percentile}_gbps``
        (a certified lower bound of that percentile) and ``failure_mean_gbps`` (lower bound).

    Examples
    --------
    A ring of 6 at 1 Gb/s per link: any failed link leaves 5/9 Gb/s per node.

    >>> import fabricopt as fo
    >>> m = failure_metrics(fo.ring(6), kind="links")
    >>> round(m["n1_worst_gbps"], 4), round(m["failure_p5_gbps"], 4)
    (0.5556, 0.5556)
    """
    func = "failure_metrics"
    check_fabric(func, fab)
    check_choice(func, "kind", kind, KINDS)
    model = model if model is not None else EverySingle(kind)
    check_distribution_arguments(func, fab, model, trials, seed)
    percentile = check_positive(func, "percentile", percentile, allow_zero=True)
    if percentile > 100:
        raise fail(func, "percentile", "a percentile from 0 to 100", percentile)
    table = _n1_table(func, fab, kind, None, solve_options)
    worst = table.worst_gbps() or (float("nan"), float("nan"))
    dist = distribution(func, fab, model, trials=trials, seed=seed, metrics=None,
                        method=solve_options.pop("method", "auto"), warm_start=True,
                        symmetry=True, solve_options=solve_options)
    return {"n1_worst_gbps": worst[0], "n1_worst_gbps_upper": worst[1],
            f"failure_p{percentile:g}_gbps": dist.percentile(percentile)[0],
            "failure_mean_gbps": dist.mean()[0]}


def survives_single_failure(fab: Fabric, min_gbps: float, *, kind: str = "switches",
                            tiers: str | list[str] | None = None,
                            **solve_options: Any) -> dict[str, Any]:
    """Whether ``fab`` keeps ``min_gbps`` per GPU of all-to-all with any one ``kind`` failed
    (of ``tiers``, as in :func:`~fabricopt.single_failures`).

    Returns
    -------
    dict
        ``ok``: True when proven (every single failure's certified lower bound is at least
        ``min_gbps``), False when disproven (some failure's upper bound is below it), None
        when open; ``worst_gbps_lower``/``worst_gbps_upper`` the N-1 worst case's bracket;
        ``worst`` the orbit that decides it.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> survives_single_failure(fab, 250.0)["ok"]   # a failed leaf cuts its GPUs off
    False
    >>> survives_single_failure(fab, 250.0, kind="links", tiers="leaf-spine")["ok"]  # 300 left
    True
    """
    func = "survives_single_failure"
    check_fabric(func, fab)
    min_gbps = check_positive(func, "min_gbps", min_gbps)
    check_choice(func, "kind", kind, KINDS)
    table = _n1_table(func, fab, kind, tiers, solve_options)
    bracket = table.worst_gbps()
    if bracket is None:
        return {"ok": None, "worst_gbps_lower": float("nan"),
                "worst_gbps_upper": float("nan"), "worst": None}
    lower, upper = bracket
    ok = True if lower >= min_gbps else (False if upper < min_gbps else None)
    worst = table.worst
    return {"ok": ok, "worst_gbps_lower": lower, "worst_gbps_upper": upper,
            "worst": worst.representative if worst is not None else None}


__all__ = ["failure_metrics", "survives_single_failure"]
