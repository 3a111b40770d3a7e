"""The Pareto front of a table of designs: the rows no other row beats on two columns.

One front for the whole package: :func:`~fabricopt.compare` tables, the optimizer's search and
the report's plot all read it from here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .._checks import check_bool, fail

__all__ = ["check_column", "finite_number", "pareto_front", "records_of"]

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
    (by default: lower ``x``, higher ``y``). Rows whose ``x`` or ``y`` is missing or NaN
    are left out; equal points are all kept.

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
        Indices into ``rows``, ordered by ``x`` from best to worst.

    Examples
    --------
    >>> rows = [{"c": 1, "b": 1}, {"c": 2, "b": 3}, {"c": 3, "b": 2}, {"c": 4, "b": 5}]
    >>> pareto_front(rows, "c", "b")     # (3, 2) costs more than (2, 3) and delivers less
    [0, 1, 3]
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
    points.sort(key=lambda p: (p[0], -p[1], p[2]))
    front: list[int] = []
    best_y = -math.inf
    last: tuple[float, float] | None = None
    for px, py, i in points:
        if py > best_y or (py == best_y and last == (px, py)):
            front.append(i)
            best_y = py
            last = (px, py)
    return front
