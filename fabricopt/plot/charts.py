"""Charts that compare designs from a table of records (one dict per design): cost against
delivered bandwidth with its Pareto front, and bars per metric.

Every function takes ``ax=`` and returns the Axes; without ``ax`` it makes a new
:class:`matplotlib.figure.Figure` outside pyplot. Save with ``ax.figure.savefig("fig.png")``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._checks import fail
from ..study.pareto import check_column, finite_number, pareto_front, records_of
from .diagram import check_axes, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["LABEL_GID", "plot_metric_bars", "plot_pareto"]

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


def _renderer(fig: Any) -> Any:
    """A renderer that measures text as the figure will draw it (the figure's own canvas
    when it has one that renders, else an Agg renderer at the figure's size and dpi)."""
    get = getattr(fig.canvas, "get_renderer", None)
    if get is not None:
        return get()
    from matplotlib.backends.backend_agg import RendererAgg

    width, height = fig.get_size_inches() * fig.dpi
    return RendererAgg(int(width), int(height), fig.dpi)


#: Where a label may go, nearest first: eight directions at growing distances (points).
_LABEL_OFFSETS = [(dx * r, dy * r) for r in (4, 9, 15, 23, 33, 45, 60, 80, 105)
                  for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1.4), (0, -1.4),
                                 (1.4, 0), (-1.4, 0), (1, 0.5), (-1, 0.5), (1, -0.5),
                                 (-1, -0.5))]
#: ``gid`` of each label of :func:`plot_pareto`: this prefix and the label's text, so an
#: SVG of the chart names every label (a page can check that none overlaps another).
LABEL_GID = "fabricopt-label-"


def _place_labels(ax: Axes, points: list[tuple[float, float, str]]) -> None:
    """Write each label beside its point where its box, measured as it will be drawn, meets
    no label placed before and no marker: tried in twelve directions at growing distances,
    inside the axes first, then anywhere on the figure; a label set away from its point
    gets a thin line to it.

    The figure's layout is fixed first (labels are placed in display units, so the axes must
    not move afterwards): its layout engine runs once and is then switched off.
    """
    fig = ax.figure
    engine = fig.get_layout_engine()
    if engine is not None:
        if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure: one Agg renderer measures
            from matplotlib.backends.backend_agg import FigureCanvasAgg  # layout and labels

            FigureCanvasAgg(fig)
        engine.execute(fig)  # lays out titles, ticks and the legend (a draw would run it too)
        fig.set_layout_engine("none")
    ax.autoscale_view()
    renderer = _renderer(fig)
    to_px = ax.transData.transform
    frame = ax.get_window_extent(renderer)
    figure_box = fig.bbox
    radius = 4.5 * fig.dpi / 72  # markers of s=36 are 6 pt across, with a little room
    # The markers are obstacles too: a label must not hide another design's point.
    placed = [(cx - radius, cy - radius, cx + radius, cy + radius)
              for cx, cy in (to_px((px, py)) for px, py, _ in points)]
    gap = 1.5 * fig.dpi / 72

    def free(box: Any, within: Any) -> bool:
        if not (box.x0 >= within.x0 and box.x1 <= within.x1 and box.y0 >= within.y0
                and box.y1 <= within.y1):
            return False
        return not any(box.x0 - gap < b[2] and b[0] < box.x1 + gap and box.y0 - gap < b[3]
                       and b[1] < box.y1 + gap for b in placed)

    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    probe = ax.annotate("", (0, 0), xytext=(0, 0), textcoords="offset points", fontsize=7,
                        annotation_clip=False)
    points_px = fig.dpi / 72
    for px, py, text in points:
        probe.set_text(text)
        probe.xy = (px, py)
        probe.set_ha("left")
        probe.set_va("bottom")
        measured = Text.get_window_extent(probe, renderer)
        width, height = measured.width, measured.height  # the same wherever it is put
        cx, cy = to_px((px, py))
        chosen = None
        for within in (frame, figure_box):
            for dx, dy in _LABEL_OFFSETS:
                x0 = cx + dx * points_px - {"left": 0, "center": width / 2,
                                            "right": width}[_ha(dx)]
                y0 = cy + dy * points_px - {"bottom": 0, "center": height / 2,
                                            "top": height}[_va(dy)]
                box = Bbox.from_bounds(x0, y0, width, height)
                if free(box, within):
                    chosen = (dx, dy, box)
                    break
            if chosen:
                break
        if chosen is None:  # nowhere free on the figure: the nearest place
            dx, dy = _LABEL_OFFSETS[0]
            chosen = (dx, dy, Bbox.from_bounds(cx + dx * points_px, cy + dy * points_px,
                                               width, height))
        dx, dy, box = chosen
        placed.append((box.x0, box.y0, box.x1, box.y1))
        leader = ({"arrowstyle": "-", "lw": 0.4, "color": "0.45", "shrinkA": 0, "shrinkB": 3}
                  if max(abs(dx), abs(dy)) > 10 else None)
        ax.annotate(text, (px, py), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                    ha=_ha(dx), va=_va(dy), zorder=4, arrowprops=leader,
                    annotation_clip=False, gid=LABEL_GID + text)
    probe.remove()


def _ha(dx: float) -> str:
    return "right" if dx < 0 else "center" if dx == 0 else "left"


def _va(dy: float) -> str:
    return "top" if dy < 0 else "bottom" if dy > 0 else "center"


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


def plot_pareto(rows: Any, x: str = "capex_per_gpu_usd", y: str = "all_to_all_gbps_per_gpu",
                *, label: str = "name", off_front: str | None = "in_system_only",
                among: Iterable[int] | None = None, ax: Axes | None = None) -> Axes:
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
    among : iterable of int, optional
        Indices of the rows to draw (default: all); the others are left out silently and
        numbered points keep their place in ``rows`` (a report draws its clusters and its
        single systems on two charts, numbered as its table).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Rows whose ``x`` or ``y`` is missing or NaN are not drawn; the legend says how many
        and which. An axis whose positive values span more than a factor 50 is
        logarithmic; a point at zero on it is drawn at the axis' low edge.

    Notes
    -----
    Labels are placed where their box, measured as drawn, meets no other label and no
    marker; each carries the ``gid`` :data:`LABEL_GID` followed by its text, so an SVG of
    the chart names them. The figure's layout is fixed when the labels are placed.

    Examples
    --------
    >>> rows = [{"name": "a", "capex_per_gpu_usd": 1000, "all_to_all_gbps_per_gpu": 100},
    ...         {"name": "b", "capex_per_gpu_usd": 2000, "all_to_all_gbps_per_gpu": 300},
    ...         {"name": "c", "capex_per_gpu_usd": 3000, "all_to_all_gbps_per_gpu": None}]
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
    if among is not None:
        if isinstance(among, str | bytes) or not isinstance(among, Iterable):
            raise fail(func, "among", "None or row indices", among)
        shown = set()
        for i in among:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(records):
                raise fail(func, "among", f"row indices from 0 to {len(records) - 1}", i)
            shown.add(i)
    else:
        shown = set(range(len(records)))
    if check_axes(func, ax) is None:
        ax = new_axes(7.5, 5.0)
    kept, skipped = [], []
    for i, r in enumerate(records):
        if i not in shown:
            continue
        px, py = finite_number(r.get(x)), finite_number(r.get(y))
        (kept if px is not None and py is not None else skipped).append((i, px, py))
    apart = {i for i, _, _ in kept if off_front and records[i].get(off_front)}
    # Values equal to 9 digits are one value: a certified lower end may differ from its
    # twin's in the last bits, and a dearer design must not join the front by such noise.
    rounded = [{} if j in apart or j not in shown else
               {x: _round(r.get(x)), y: _round(r.get(y))} for j, r in enumerate(records)]
    front = pareto_front(rounded, x, y) if any(rounded) else []
    drawn = _draw_points(ax, records, kept, apart, front, x, y)
    numbered = len(kept) > NAMED_POINTS
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
        wide = ax.figure.get_size_inches()[0] >= 10
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  ncol=3 if wide else 2, frameon=False, handlelength=1.2)
    # Last: the labels are placed around everything else the figure shows.
    _place_labels(ax, [(px, py, str(i + 1) if numbered else _label_of(records[i], label, i))
                       for i, px, py in drawn])
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
