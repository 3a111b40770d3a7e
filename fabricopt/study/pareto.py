"""The Pareto front of a table of designs: the rows no other row beats on two columns.

One front for the whole package: :func:`~fabricopt.compare` tables, the optimizer's search and
the report's plot all read it from here.

Figures are compared within a relative tolerance, :data:`REL_TOL`: two throughputs that differ
only in the last bits a solver leaves (another LP path, a worker's BLAS threads) are equal, so
the front does not depend on them.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .._checks import check_bool, fail

__all__ = ["REL_TOL", "check_column", "finite_number", "pareto_front", "records_of"]

#: Relative tolerance of every comparison of figures in a front or a design search. A
#: certified rate's ends agree to about 1e-13 relative between solve paths (presolve or not,
#: one BLAS thread or several), and the LP solver (HiGHS) works to feasibility tolerances of
#: 1e-7: 1e-9 lies between, so last-bit differences are equal and every difference a
#: designer would act on is kept.
REL_TOL = 1e-9


def records_of(func: str, rows: Any) -> list[dict[str, Any]]:
    """Rows as a list of dicts: records, a result with ``to_records()``, or a DataFrame."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        rows = rows.to_dict("records")
    elif hasattr(rows, "to_records"):
        rows = rows.to_records()
        if hasattr(rows, "dtype") and rows.dtype.names:  # a numpy record array
            rows = [dict(zip(rows.dtype.names, r, strict=True)) for r in rows]
    if isinstance(rows, Mapping) or isinstance(rows, str | bytes) or not isinstance(
            rows, Iterable):
        raise fail(func, "rows", "a list of dicts or an object with to_records()",
                   type(rows).__name__)
    out = list(rows)
    for i, r in enumerate(out):
        if not isinstance(r, Mapping):
            raise fail(func, f"rows[{i}]", "a dict", type(r).__name__)
    return [dict(r) for r in out]


def finite_number(value: Any) -> float | None:
    """A finite float, or None for a missing, NaN or non-numeric value."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def check_column(func: str, name: str, column: Any, records: list[dict[str, Any]]) -> str:
    if not isinstance(column, str):
        raise fail(func, name, "a column name (str)", column)
    if records and not any(column in r for r in records):
        columns = sorted({k for r in records for k in r})
        raise fail(func, name, "a column of rows (" + ", ".join(columns[:30]) + ")", column)
    return column


def pareto_front(rows: Any, x: str, y: str, minimize_x: bool = True,
                 maximize_y: bool = True) -> list[int]:
    """Indices of the rows no other row beats on both ``x`` and ``y``.

    Row ``j`` dominates row ``i`` when it is at least as good on both and better on one
    (by default: lower ``x``, higher ``y``), each comparison within the relative tolerance
    :data:`REL_TOL` (better means better by more than it). Rows whose ``x`` or ``y`` is
    missing or NaN are left out; equal points (within the tolerance) are all kept, so a
    last-bit change of a figure never moves a row on or off the front.

    Parameters
    ----------
    rows : list of dict, or an object with ``to_records()``
        One record per design.
    x, y : str
        Column names.
    minimize_x, maximize_y : bool
        The direction that is better on each axis.

    Returns
    -------
    list of int
        Indices into ``rows``, ordered by ``x`` from best to worst (rows of the same ``x``
        in the rows' order).

    Examples
    --------
    >>> rows = [{"c": 1, "b": 1}, {"c": 2, "b": 3}, {"c": 3, "b": 2}, {"c": 4, "b": 5}]
    >>> pareto_front(rows, "c", "b")     # (3, 2) costs more than (2, 3) and delivers less
    [0, 1, 3]
    >>> pareto_front([{"c": 2, "b": 3 + 1e-13}, {"c": 2, "b": 3}], "c", "b")  # equal: both
    [0, 1]
    """
    func = "pareto_front"
    records = records_of(func, rows)
    x = check_column(func, "x", x, records)
    y = check_column(func, "y", y, records)
    minimize_x = check_bool(func, "minimize_x", minimize_x)
    maximize_y = check_bool(func, "maximize_y", maximize_y)
    points = []
    for i, r in enumerate(records):
        px, py = finite_number(r.get(x)), finite_number(r.get(y))
        if px is not None and py is not None:
            # Turn both into "smaller x is better, larger y is better".
            points.append((px if minimize_x else -px, py if maximize_y else -py, i))
    points.sort()
    xs = [p[0] for p in points]
    # best[k]: the largest y among the k cheapest points (a prefix of the order by x).
    best = list(itertools.accumulate((p[1] for p in points), max, initial=-math.inf))
    front: list[tuple[float, int]] = []
    for px, py, i in points:
        slack_x, slack_y = REL_TOL * abs(px), REL_TOL * abs(py)
        # Dominated: some point clearly cheaper at least as good (within the tolerance), or
        # some point as cheap (within it) clearly better.
        clearly_cheaper = bisect.bisect_left(xs, px - slack_x)
        as_cheap = bisect.bisect_right(xs, px + slack_x)
        if best[clearly_cheaper] >= py - slack_y or best[as_cheap] > py + slack_y:
            continue
        front.append((px, i))
    return [i for _, i in sorted(front)]
