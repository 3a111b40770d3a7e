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


#: Axis titles of the columns a reader plots most; others are read from their unit suffix.
AXIS_TITLES = {
    "capex_usd": "Network capex (USD)",
    "power_w": "Network power (W)",
    "capex_per_gpu_usd": "Network capex per GPU (USD)",
    "power_per_gpu_w": "Network power per GPU (W)",
    "all_to_all_gbps_per_gpu": "All-to-all bandwidth per GPU, certified (Gb/s)",
    "any_traffic_gbps_per_gpu": "Bandwidth per GPU for any traffic (Gb/s)",
    "bisection_gbps_per_gpu": "Bisection bandwidth per GPU (Gb/s)",
    "usd_per_delivered_gbps": "Network capex per GPU per delivered Gb/s (USD)",
    "w_per_delivered_gbps": "Network power per GPU per delivered Gb/s (W)",
    "all_reduce_busbw_GBps": "All-reduce busbw, achievable (GB/s)",
}

#: Most points labelled by name; above it points carry numbers and a key names them.
NAMED_POINTS = 8


def _axis_label(column: str) -> str:
    """A column's axis title: ``"capex_per_gpu_usd"`` -> ``"Network capex per GPU (USD)"``;
    an unknown column's unit suffix becomes a unit (``"latency_s"`` -> ``"latency (s)"``)."""
    if column in AXIS_TITLES:
        return AXIS_TITLES[column]
    for suffix, unit in _UNIT_SUFFIXES.items():
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{column[:-len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def _label_of(r: Mapping[str, Any], label: str, i: int) -> str:
    value = r.get(label)
    return str(value) if value not in (None, "") else f"#{i + 1}"


def _place_labels(ax: Axes, points: list[tuple[float, float, str]]) -> None:
    """Write each label beside its point where it overlaps no label placed before (tried in
    eight directions, then further out), so crowded points stay legible."""
    ax.autoscale_view()  # fixes the limits the placement reads
    to_px = ax.transData.transform
    # The markers are obstacles too: a label must not hide another design's point.
    placed: list[tuple[float, float, float, float]] = [
        (cx - 4.5, cy - 4.5, cx + 4.5, cy + 4.5)
        for cx, cy in (to_px((px, py)) for px, py, _ in points)]
    offsets = [(dx * r, dy * r) for r in (4, 12, 22) for dx, dy in
               ((1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1.4), (0, -1.4), (1.4, 0), (-1.4, 0))]
    for px, py, text in points:
        cx, cy = to_px((px, py))
        # 7 pt text at the figure's dpi, roughly, with a gap so that two numbers never touch
        width, height = 5.5 * len(text) + 7, 11.0
        choice = offsets[0]
        for dx, dy in offsets:
            x0 = cx + dx * 1.4 - (width if dx < 0 else width / 2 if dx == 0 else 0)
            y0 = cy + dy * 1.4 - (height if dy < 0 else 0)
            box = (x0, y0, x0 + width, y0 + height)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                       for b in placed):
                choice = (dx, dy)
                placed.append(box)
                break
        dx, dy = choice
        # A label set further out gets a thin line to its point.
        leader = {"arrowstyle": "-", "lw": 0.4, "color": "0.45"} if max(abs(dx), abs(dy)) > 6 \
            else None
        ax.annotate(text, (px, py), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                    ha="right" if dx < 0 else "center" if dx == 0 else "left",
                    va="top" if dy < 0 else "bottom", zorder=4, arrowprops=leader)


def _round(value: Any) -> float | None:
    v = finite_number(value)
    return float(f"{v:.9g}") if v is not None else None


def _log_or_plain(ax: Axes, axis: Any, values: list[float]) -> bool:
    """A log axis when the positive values span more than a factor 50; else plain, with
    engineering ticks for large numbers. Returns whether the axis is logarithmic."""
    positive = [v for v in values if v > 0]
    if positive and max(positive) > 50 * min(positive):
        (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
        return True
    if values and max(abs(v) for v in values) >= 1e4:
        axis.set_major_formatter(_eng_formatter())
    return False


def plot_pareto(rows: Any, x: str = "capex_usd", y: str = "all_to_all_gbps_per_gpu", *,
                label: str = "name", off_front: str | None = "in_system_only",
                ax: Axes | None = None) -> Axes:
    """Cost against delivered bandwidth: one labelled point per design, the Pareto front as
    a step line (lowest ``x``, highest ``y``).

    Parameters
    ----------
    rows : list of dict, or an object with ``to_records()``
        One record per design (e.g. a comparison table).
    x, y : str
        Columns for the axes; their unit suffixes (``_usd``, ``_gbps``...) name the units.
    label : str
        Column naming each design (rows without it are numbered). Up to
        :data:`NAMED_POINTS` points carry their names, placed so that they do not overlap;
        more carry their row number (from 1), and a key under the chart names them.
    off_front : str or None
        Column marking rows drawn apart (hollow diamonds) and kept off the front: by
        default ``in_system_only``, designs with no network at all (one DGX, one NVL72),
        whose zero network capex would make them the whole front.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Rows whose ``x`` or ``y`` is missing or NaN are not drawn; the legend says how many
        and which. An axis whose positive values span more than a factor 50 is
        logarithmic; a point at zero on it is drawn at the axis' low edge.

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
    if off_front is not None and not isinstance(off_front, str):
        raise fail(func, "off_front", "a column name (str) or None", off_front)
    if check_axes(func, ax) is None:
        ax = new_axes(7.5, 5.0)
    kept, skipped = [], []
    for i, r in enumerate(records):
        px, py = finite_number(r.get(x)), finite_number(r.get(y))
        (kept if px is not None and py is not None else skipped).append((i, px, py))
    apart = {i for i, _, _ in kept if off_front and records[i].get(off_front)}
    # Values equal to 9 digits are one value: a certified lower end may differ from its
    # twin's in the last bits, and a dearer design must not join the front by such noise.
    rounded = [{} if j in apart else {x: _round(r.get(x)), y: _round(r.get(y))}
               for j, r in enumerate(records)]
    front = pareto_front(rounded, x, y) if len(apart) < len(records) else []
    drawn = _draw_points(ax, records, kept, apart, front, x, y)
    numbered = len(kept) > NAMED_POINTS
    _place_labels(ax, [(px, py, str(i + 1) if numbered else _label_of(records[i], label, i))
                       for i, px, py in drawn])
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    ax.grid(True, alpha=0.3, which="both" if ax.get_xscale() == "log" else "major")
    ax.set_title(f"{_axis_label(y).split(' (')[0]} against {_axis_label(x).split(' (')[0]}",
                 fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    from matplotlib.lines import Line2D

    if skipped:
        names = ", ".join(_label_of(records[i], label, i) for i, _, _ in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        handles.append(Line2D([], [], ls=""))
        labels.append(f"not drawn (no {x} or {y}): {names}{more}")
    if numbered:
        for i, _, _ in kept:
            handles.append(Line2D([], [], ls=""))
            labels.append(f"{i + 1}  {_label_of(records[i], label, i)}")
    if handles:
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  ncol=2, frameon=False, handlelength=1.2)
    return ax


def _draw_points(ax: Axes, records: list[dict[str, Any]], kept: list[tuple[int, Any, Any]],
                 apart: set[int], front: list[int], x: str,
                 y: str) -> list[tuple[int, float, float]]:
    """The points (front red, the rest blue, rows kept apart hollow), the front's step line
    and the axis scales; returns where each point was drawn."""
    on_front = set(front)
    log_x = _log_or_plain(ax, ax.xaxis, [p[1] for p in kept])
    log_y = _log_or_plain(ax, ax.yaxis, [p[2] for p in kept])
    floor_x = min((p[1] for p in kept if p[1] > 0), default=1.0) / 3
    floor_y = min((p[2] for p in kept if p[2] > 0), default=1.0) / 3
    drawn = [(i, floor_x if log_x and px <= 0 else px, floor_y if log_y and py <= 0 else py)
             for i, px, py in kept]
    main = [(i, px, py) for i, px, py in drawn if i not in apart]
    ax.scatter([p[1] for p in main], [p[2] for p in main], s=36, zorder=3, label="design",
               c=["#c00000" if i in on_front else "#1f4e79" for i, _, _ in main])
    alone = [(px, py) for i, px, py in drawn if i in apart]
    if alone:
        ax.scatter([p[0] for p in alone], [p[1] for p in alone], s=44, zorder=3, marker="D",
                   facecolors="none", edgecolors="#7f7f7f",
                   label="no network: one server or rack (kept off the front)")
    if front:
        # The line ends at the dearest design on the front: drawn further, it would pass
        # through dearer designs of equal bandwidth, which are not on it.
        fx = [finite_number(records[i][x]) for i in front]
        fy = [finite_number(records[i][y]) for i in front]
        ax.step(fx, fy, where="post", color="#c00000", lw=1.2, zorder=2,
                label=f"Pareto front ({len(front)} design{'s' if len(front) > 1 else ''})")
    return drawn


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
