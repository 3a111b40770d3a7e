"""Charts that compare designs from a table of records (one dict per design): cost against
delivered bandwidth with its Pareto front, and bars per metric.

Every function takes ``ax=`` and returns the Axes; without ``ax`` it makes a new
:class:`matplotlib.figure.Figure` outside pyplot. Save with ``ax.figure.savefig("fig.png")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._checks import fail
from ..study.pareto import check_column, finite_number, pareto_front, records_of
from .diagram import check_axes, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_metric_bars", "plot_pareto"]

_UNIT_SUFFIXES = {"_gbps_per_gpu": "Gb/s per GPU", "_per_gpu_usd": "USD per GPU",
                  "_per_gpu_w": "W per GPU", "_usd": "USD", "_gbps": "Gb/s", "_GBps": "GB/s",
                  "_w": "W", "_m": "m",
                  "_s": "s", "_bytes": "bytes"}


def _axis_label(column: str) -> str:
    """``"capex_usd"`` -> ``"capex (USD)"``: the unit suffix becomes a unit."""
    for suffix, unit in _UNIT_SUFFIXES.items():
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{column[:-len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def _label_of(r: Mapping[str, Any], label: str, i: int) -> str:
    value = r.get(label)
    return str(value) if value not in (None, "") else f"#{i}"


def plot_pareto(rows: Any, x: str = "capex_usd", y: str = "all_to_all_gbps_per_gpu", *,
                label: str = "name", ax: Axes | None = None) -> Axes:
    """Cost against delivered bandwidth: one labelled point per design, the Pareto front as
    a step line (lowest ``x``, highest ``y``).

    Parameters
    ----------
    rows : list of dict, or an object with ``to_records()``
        One record per design (e.g. a comparison table).
    x, y : str
        Columns for the axes; their unit suffixes (``_usd``, ``_gbps``...) name the units.
    label : str
        Column naming each design (rows without it are numbered).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Rows whose ``x`` or ``y`` is missing or NaN are not drawn; the legend says how many
        and which. An axis spanning more than a factor 50 is logarithmic.

    Examples
    --------
    >>> rows = [{"name": "a", "capex_usd": 1e6, "all_to_all_gbps_per_gpu": 100},
    ...         {"name": "b", "capex_usd": 2e6, "all_to_all_gbps_per_gpu": 300},
    ...         {"name": "c", "capex_usd": 3e6, "all_to_all_gbps_per_gpu": None}]
    >>> ax = plot_pareto(rows)
    >>> len(ax.collections[0].get_offsets())   # c has no bandwidth: skipped
    2
    """
    func = "plot_pareto"
    records = records_of(func, rows)
    x = check_column(func, "x", x, records)
    y = check_column(func, "y", y, records)
    if not isinstance(label, str):
        raise fail(func, "label", "a column name (str)", label)
    if check_axes(func, ax) is None:
        ax = new_axes(7.5, 5.0)
    kept, skipped = [], []
    for i, r in enumerate(records):
        px, py = finite_number(r.get(x)), finite_number(r.get(y))
        (kept if px is not None and py is not None else skipped).append((i, px, py))
    front = pareto_front(records, x, y)
    on_front = set(front)
    xs = [p[1] for p in kept]
    ys = [p[2] for p in kept]
    colours = ["#c00000" if i in on_front else "#1f4e79" for i, _, _ in kept]
    ax.scatter(xs, ys, c=colours, s=36, zorder=3, label="design")
    middle = (min(xs) + max(xs)) / 2 if xs else 0.0
    for i, px, py in kept:
        # Labels point inward so those of the dearest designs stay inside the axes.
        right = px > middle
        ax.annotate(_label_of(records[i], label, i), (px, py), xytext=(-4 if right else 4, 4),
                    textcoords="offset points", fontsize=7, ha="right" if right else "left")
    if front:
        fx = [finite_number(records[i][x]) for i in front]
        fy = [finite_number(records[i][y]) for i in front]
        right = max(xs)
        if right > fx[-1]:
            fx.append(right)
            fy.append(fy[-1])
        ax.step(fx, fy, where="post", color="#c00000", lw=1.2, zorder=2,
                label=f"Pareto front ({len(front)} design{'s' if len(front) > 1 else ''})")
    for axis, values in ((ax.xaxis, xs), (ax.yaxis, ys)):
        positive = [v for v in values if v > 0]
        if positive and len(positive) == len(values) and max(positive) > 50 * min(positive):
            (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
        elif values and max(abs(v) for v in values) >= 1e4:
            axis.set_major_formatter(_eng_formatter())
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{_axis_label(y)} against {_axis_label(x)}", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    if skipped:
        from matplotlib.lines import Line2D

        names = ", ".join(_label_of(records[i], label, i) for i, _, _ in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        handles.append(Line2D([], [], ls=""))
        labels.append(f"not drawn (no {x} or {y}): {names}{more}")
    if handles:
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12),
                  ncol=2, frameon=False)
    return ax


def _eng_formatter() -> Any:
    """Tick labels such as ``2.5 M`` instead of an offset ``1e7`` in the corner."""
    from matplotlib.ticker import EngFormatter

    return EngFormatter(sep=" ")


def _format_value(value: float) -> str:
    return _eng_formatter()(value) if abs(value) >= 1e4 else f"{value:,.4g}"


def plot_metric_bars(rows: Any, metric: str, *, label: str = "name",
                     ax: Axes | None = None) -> Axes:
    """One horizontal bar per design for one metric, in the order of ``rows``.

    Parameters
    ----------
    rows : list of dict, or an object with ``to_records()``
    metric : str
        The column to draw; a design without a value gets no bar and the text "n/a".
    label : str
        Column naming each design.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> rows = [{"name": "a", "power_w": 1500.0}, {"name": "b", "power_w": 2500.0}]
    >>> ax = plot_metric_bars(rows, "power_w")
    >>> [round(p.get_width()) for p in ax.patches]
    [1500, 2500]
    """
    func = "plot_metric_bars"
    records = records_of(func, rows)
    if not records:  # no bar to draw, and matplotlib would warn of an empty axis
        raise fail(func, "rows", "at least one row", rows)
    metric = check_column(func, "metric", metric, records)
    if not isinstance(label, str):
        raise fail(func, "label", "a column name (str)", label)
    if check_axes(func, ax) is None:
        ax = new_axes(7.0, min(max(2.2, 0.32 * len(records) + 1.4), 14.0))
    names = [_label_of(r, label, i) for i, r in enumerate(records)]
    values = [finite_number(r.get(metric)) for r in records]
    positions = list(range(len(records)))
    drawn = [(p, v) for p, v in zip(positions, values, strict=True) if v is not None]
    ax.barh([p for p, _ in drawn], [v for _, v in drawn], color="#1f4e79", height=0.7)
    top = max((abs(v) for _, v in drawn), default=1.0) or 1.0
    for p, v in zip(positions, values, strict=True):
        text = "n/a" if v is None else _format_value(v)
        ax.text((v if v is not None and v > 0 else 0) + 0.01 * top, p, text, va="center",
                fontsize=7)
    ax.set_yticks(positions, names, fontsize=7)
    ax.set_ylim(len(records) - 0.5, -0.5)
    ax.set_xlim(min(0.0, min((v for _, v in drawn), default=0.0)) * 1.1, top * 1.15)
    ax.set_xlabel(_axis_label(metric))
    if top >= 1e4:
        ax.xaxis.set_major_formatter(_eng_formatter())
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(_axis_label(metric), fontsize=10)
    return ax
