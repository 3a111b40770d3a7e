"""Pictures: layered fabric diagrams and design-comparison plots (matplotlib).

:func:`draw` lays a fabric out in rows: GPUs at the bottom, switches above them by their
``layer`` attribute, scale-up switches (NVSwitch, UALink) in a row of their own just above
the GPUs. Within a row the GPUs are ordered by their ``pod``, ``su``, ``node``, ``rail`` and
``plane`` attributes, and every higher node sits in the order of the mean position of its
neighbours below (the barycentre rule of layered graph drawing, Sugiyama, Tagawa and Toda,
"Methods for Visual Understanding of Hierarchical System Structures", 1981), so links do
not cross where the wiring does not force them to. Large fabrics are drawn as groups.

Every function takes ``ax=`` and returns the Axes; without ``ax`` it makes a new
:class:`matplotlib.figure.Figure` outside pyplot, so nothing is shown and no global figure
list grows. Save with ``ax.figure.savefig("fig.png")``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._checks import check_bool, check_int, fail
from ..fabric import Fabric, format_gbps
from .diagram_graph import (
    ORDER_ATTRS,
    DiagramReading,
    Drawing,
    Grouping,
    build,
    group_labels,
    line_count,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["AUTO_LEVELS", "AUTO_MAX_NODES", "check_axes", "draw", "new_axes"]

#: ``aggregate="auto"`` draws every device up to this many drawn nodes (and twice as many
#: lines), else groups them.
AUTO_MAX_NODES = 300
#: ``aggregate="auto"`` draws a fabric with rails by rail (not by device or server) when a
#: finer drawing would cross more lines than this between servers and rail leaves.
AUTO_MAX_CROSSING_LINES = 160
_ROLE_STYLE = {"gpu": ("s", "#76b900", "GPU"), "switch": ("o", "#1f4e79", "switch"),
               "nic": ("D", "#c55a11", "NIC")}
_UTIL_CMAP = "plasma_r"


def _fits(reading: DiagramReading, grouping: Grouping, max_nodes: int) -> bool:
    """True when a grouping draws at most ``max_nodes`` nodes and ``2 * max_nodes`` lines."""
    if grouping.count > max_nodes:
        return False
    return line_count(reading, grouping) <= 2 * max_nodes


def _tangled(reading: DiagramReading, grouping: Grouping, level: tuple[str, ...] | None,
             varied: set[str]) -> bool:
    """Whether a drawing that does not group by rail crosses its rails into a tangle: the
    fabric has rails, and every server's GPUs reach every rail's leaf (more than
    :data:`AUTO_MAX_CROSSING_LINES` lines). Drawn by rail instead, each rail is a bundle."""
    if "rail" not in varied or (level is not None and "rail" in level):
        return False
    return line_count(reading, grouping) > AUTO_MAX_CROSSING_LINES


def _layout(dr: Drawing) -> list[float]:
    """x in [0, 1] of every drawn node: rows spread evenly, ordered by the barycentre rule."""
    below: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for ln in dr.lines:
        lo, hi = (ln.a, ln.b) if dr.nodes[ln.a].row < dr.nodes[ln.b].row else (ln.b, ln.a)
        if dr.nodes[lo].row < dr.nodes[hi].row:
            below[hi].append((lo, ln.links))
    passed_over: set[int] = set()
    for ln in dr.lines:
        lo, hi = sorted((dr.nodes[ln.a].row, dr.nodes[ln.b].row))
        passed_over.update(range(lo + 1, hi))
    by_row: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(dr.nodes):
        by_row[n.row].append(i)
    x = [0.5] * len(dr.nodes)
    for r in sorted(by_row):
        members = by_row[r]

        def key(i: int) -> tuple:
            nbrs = below.get(i)
            if not nbrs:
                return (1, 0.0, dr.nodes[i].sort_key)
            total = sum(w for _, w in nbrs)
            centre = sum(x[j] * w for j, w in nbrs) / total
            return (0, round(centre, 9), dr.nodes[i].sort_key)

        members.sort(key=key)
        for pos, i in enumerate(members):
            x[i] = (pos + 0.5) / len(members)
        if dr.rows[r][1] == 0 and r in passed_over:
            # A scale-up row under lines that pass it (GPU to leaf) moves right, half a slot
            # at most, so those lines run beside its nodes instead of through them.
            for i in members:
                x[i] += min(0.5 / len(members), 0.025)
    return x


# -- the public drawing function -------------------------------------------------------------

#: The levels ``aggregate="auto"`` tries, finest first; those that keep rails and planes
#: apart come before those that merge them, so a rail-optimized, multi-plane or Clos cluster
#: too large to draw by server is drawn by rail and plane, not as one dot per layer.
AUTO_LEVELS = (("node",), ("su", "rail", "plane"), ("su", "rail"), ("pod", "rail", "plane"),
               ("pod", "rail"), ("rail", "plane"), ("rail",), ("su", "plane"), ("su",),
               ("pod", "plane"), ("pod",), ("plane",), ("layer",))


def _check_level(func: str, fab: Fabric, aggregate: Any) -> tuple[str, ...] | bool | str:
    """``False``, ``True``, ``"auto"`` or a level as a tuple of attribute names."""
    if aggregate is None or aggregate is False:
        return False
    if aggregate is True or aggregate == "auto":
        return aggregate
    rule = ("'auto', True, False, 'layer', or node attributes the fabric carries as a name, "
            "'a+b' or a tuple")
    names = aggregate.split("+") if isinstance(aggregate, str) else aggregate
    if (not isinstance(names, tuple | list) or not names
            or not all(isinstance(a, str) and a for a in names)):
        raise fail(func, "aggregate", rule, aggregate)
    names = tuple(names)
    if names == ("layer",):
        return names
    present = {k for _, d in fab.graph.nodes(data=True) for k, val in d.items()
               if val is not None}
    missing = [a for a in names if a not in present]
    if missing:
        known = sorted(present & set(ORDER_ATTRS + ("tray",)))
        raise fail(func, "aggregate", rule + f" (this one has {', '.join(known) or 'none'}; "
                   f"none has {missing[0]!r})", aggregate)
    return names


def _choose_level(reading: DiagramReading, aggregate: tuple[str, ...] | bool | str,
                  max_nodes: int) -> tuple[tuple[str, ...] | None, Grouping]:
    """The grouping level to draw and the drawn node of every device at it."""
    if aggregate is False or isinstance(aggregate, tuple):
        level = None if aggregate is False else aggregate
        return level, group_labels(reading, level)
    values = {a: reading.values(a) for a in ORDER_ATTRS}
    # An attribute with one value separates nothing (the single plane of a SuperPOD).
    varied = {k for k, vals in values.items() if len(vals) > 1}
    candidates: list[tuple[str, ...] | None] = [] if aggregate is True else [None]
    candidates += [lv for lv in AUTO_LEVELS if lv == ("layer",) or set(lv) <= varied]
    for level in candidates:
        # Devices with different values of one of the level's attributes are drawn apart (so
        # are all devices at level None): more such values than max_nodes cannot fit, and
        # need not be grouped to see it (a 24,576-GPU cluster's 3,072 servers by node).
        at_least = (len(reading.nodes) if level is None
                    else max(len(values.get(a, ())) for a in level))
        if level != ("layer",) and at_least > max_nodes:
            continue
        grouping = group_labels(reading, level)
        if _fits(reading, grouping, max_nodes) and not _tangled(reading, grouping, level,
                                                                 varied):
            return level, grouping
    return ("layer",), grouping


def _row_name(dr: Drawing, r: int) -> str:
    """'GPU', or a switch row named by the tier below it (``gpu-leaf`` gives 'leaf')."""
    roles = Counter(n.role for n in dr.nodes if n.row == r)
    role = roles.most_common(1)[0][0]
    if role != "switch":
        return _ROLE_STYLE.get(role, ("o", "grey", role))[2]
    tiers: Counter = Counter()
    for ln in dr.lines:
        ra, rb = dr.nodes[ln.a].row, dr.nodes[ln.b].row
        if max(ra, rb) == r and min(ra, rb) < r:
            tiers.update(ln.tiers)
    name = "switch"
    if tiers:
        tier = tiers.most_common(1)[0][0]
        if "-" in tier:
            name = tier.split("-", 1)[1]
    models: Counter = Counter()
    for n in dr.nodes:
        if n.row == r:
            models.update(n.models)
    if len(models) == 1:
        name += f" ({next(iter(models))})"
    return name


def _row_label(dr: Drawing, r: int) -> str:
    members = [n for n in dr.nodes if n.row == r]
    total = sum(n.members for n in members)
    text = f"{_row_name(dr, r)}\n{total:,}"
    grouped = [n for n in members if n.group_attr]
    if len(grouped) == 1 and len(members) == 1:
        text += " in one group"
    elif grouped:
        sizes = sorted({n.members for n in grouped})
        attrs = sorted({n.group_attr for n in grouped})
        size = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}-{sizes[-1]:,}"
        text += f"\n{len(grouped)} groups of {size}\nby {', '.join(attrs)}"
    return text


def _tier_label(dr: Drawing, tier: str, media: Mapping[str, Counter] | None) -> str:
    links = dr.tier_links[tier]
    text = f"{tier}: {links:,} links, {format_gbps(dr.tier_capacity_gbps.get(tier, 0.0))}/dir"
    per_line = sorted({ln.links for ln in dr.lines if ln.tier == tier})
    if per_line and per_line[-1] > 1:
        per = (f"{per_line[0]:,}" if len(per_line) == 1
               else f"{per_line[0]:,}-{per_line[-1]:,}")
        text += f", {per} per line"
    if tier in dr.tier_util:
        text += f", max {dr.tier_util[tier]:.0%} used"
    if media and media.get(tier):
        text += "\n    " + ", ".join(f"{m} x{n:,}" for m, n in media[tier].most_common())
    return text


def check_axes(func: str, ax: Any) -> Any:
    """Return ``ax`` if it is None or a matplotlib Axes, else raise naming ``func``.

    >>> check_axes("draw", None) is None
    True
    """
    if ax is None:
        return None
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise fail(func, "ax", "None or a matplotlib Axes", ax)
    return ax


def draw(fab: Fabric, ax: Axes | None = None, *, result: Any = None,
         aggregate: str | bool = "auto", title: str | None = None, legend: bool = True,
         cost: Any = None, max_nodes: int = AUTO_MAX_NODES) -> Axes:
    """Draw a fabric as a layered diagram: GPUs at the bottom, switch tiers upward.

    Parameters
    ----------
    fab : Fabric
        The fabric.
    ax : matplotlib Axes, optional
        Where to draw; by default a new figure sized to the fabric.
    result : FlowResult, optional
        A flow result of this fabric (:func:`fabricopt.max_concurrent_flow`): lines are
        coloured by utilization (load / capacity, the larger of the two directions; for a
        group line the largest over its links), with a colour bar.
    aggregate : {"auto", True, False, "layer"}, str or tuple of str
        ``"auto"`` draws every device when that draws at most ``max_nodes`` nodes and twice
        as many lines, else groups them
        at the first level of :data:`AUTO_LEVELS` that fits: by ``node`` (a server or NVLink
        domain), by ``su`` and ``rail``, by ``su``, by ``pod`` and ``rail``, by ``pod``, then
        ``"layer"`` (one group per row). ``True`` always groups, ``False`` never. Node
        attribute names (``"su"``, ``"rail"``, ``"su+rail"`` or ``("su", "rail")``) force a
        grouping: devices with the same values of the attributes they carry form a group. A
        device carrying none of them stays alone when at most 32 such devices share its row,
        else joins the group of the first coarser attribute among ``node``, ``su``, ``pod``
        it carries, else one group for its row.
    title : str, optional
        Axes title (default: the fabric's name, sizes and the grouping).
    legend : bool
        Show the legend of tiers (link counts, capacity, links per line) and device kinds.
    cost : CostEstimate, optional
        An estimate of this fabric (:func:`fabricopt.estimate_cost`): the legend lists each
        tier's media.
    max_nodes : int
        The drawn-node budget of ``aggregate="auto"`` (default :data:`AUTO_MAX_NODES`).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    One line stands for a link and both its arcs, or for a bundle of parallel links (the
    arc attribute ``links``), labelled with the count when it is more than one and few
    lines carry counts; a group line stands for every link between two groups, its width
    growing with their number. Colours are per ``tier``. Nodes are drawn as one scatter
    collection per role, with ``gid`` ``"fabricopt-nodes-<role>"``; lines as one
    collection with ``gid`` ``"fabricopt-links"``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> ax = fo.draw(fo.dgx_h100())    # 8 GPUs below 4 NVSwitches
    >>> nodes = [c for c in ax.collections if c.get_gid().startswith("fabricopt-nodes")]
    >>> sum(len(c.get_offsets()) for c in nodes)
    12
    """
    func = "draw"
    if not isinstance(fab, Fabric):
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    check_axes(func, ax)
    level_arg = _check_level(func, fab, aggregate)
    legend = check_bool(func, "legend", legend)
    max_nodes = check_int(func, "max_nodes", max_nodes, minimum=1)
    if title is not None and not isinstance(title, str):
        raise fail(func, "title", "None or a string", title)
    util: dict[tuple, float] | None = None
    if result is not None:
        if not hasattr(result, "utilization"):
            raise fail(func, "result", "a FlowResult (with .utilization)", type(result).__name__)
        util = dict(result.utilization)
        other = getattr(result, "fabric_name", "") not in ("", fab.name)
        if other or not all(fab.graph.has_edge(*arc) for arc in util):
            raise fail(func, "result", f"a flow result of fabric {fab.name!r}",
                       getattr(result, "fabric_name", type(result).__name__))
    media: dict[str, Counter] | None = None
    if cost is not None:
        if not hasattr(cost, "links"):
            raise fail(func, "cost", "a CostEstimate (with .links)", type(cost).__name__)
        media = defaultdict(Counter)
        for row in cost.links:
            media[str(row["tier"])][str(row["medium"])] += int(row["links"])

    reading = DiagramReading(fab)
    level, grouping = _choose_level(reading, level_arg, max_nodes)
    dr = build(reading, level, grouping, util)
    x = _layout(dr)
    return _render(fab, dr, x, ax, result=result, util=util, title=title, legend=legend,
                   media=media)


def new_axes(width: float, height: float) -> Axes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig.add_subplot()


def _draw_lines(ax: Axes, dr: Drawing, x: list[float], y: list[float],
                util: Mapping | None, tier_colour: Mapping[str, Any], cmap: Any,
                norm: Any) -> None:
    """Lines: straight between rows, an arc over the row between devices of one row; link
    counts on the lines of tiers whose lines differ in count."""
    from matplotlib.collections import LineCollection

    segments, colours, widths = [], [], []
    max_links = max((ln.links for ln in dr.lines), default=1)
    min_links = min((ln.links for ln in dr.lines), default=1)
    base = min(max(12.0 / math.sqrt(max(len(dr.lines), 1)), 0.3), 1.0)
    # Counts go on the lines of tiers whose lines differ in count; a uniform count is said
    # once, in the legend.
    per_tier: dict[str, set[int]] = defaultdict(set)
    for ln in dr.lines:
        per_tier[ln.tier].add(ln.links)
    counted = [ln for ln in dr.lines if ln.links > 1 and len(per_tier[ln.tier]) > 1]
    show_counts = 0 < len(counted) <= 120
    for ln in dr.lines:
        (xa, ya), (xb, yb) = (x[ln.a], y[ln.a]), (x[ln.b], y[ln.b])
        if ya == yb:
            lo, hi = sorted((xa, xb))
            rise = 0.8 * min(1.0, 2.0 * (hi - lo)) + 0.05
            pts = [(lo + (hi - lo) * t / 24, ya + rise * math.sin(math.pi * t / 24))
                   for t in range(25)]
            segments.append(pts)
        else:
            segments.append([(xa, ya), (xb, yb)])
        if util is not None:
            colours.append(cmap(norm(min(ln.utilization or 0.0, 1.0))))
        else:
            colours.append(tier_colour[ln.tier])
        # Wider for more links, on a log scale from the thinnest line to the thickest.
        grow = (math.log(ln.links / min_links) / math.log(max_links / min_links)
                if max_links > min_links else 0.0)
        widths.append(base * (1.0 + 1.5 * grow))
    alpha = 0.9 if len(dr.lines) < 700 else (0.6 if len(dr.lines) < 1500 else 0.35)
    lc = LineCollection(segments, colors=colours, linewidths=widths, alpha=alpha, zorder=1)
    lc.set_gid("fabricopt-links")
    ax.add_collection(lc)
    if show_counts:
        for ln in counted:
            (xa, ya), (xb, yb) = sorted(((x[ln.a], y[ln.a]), (x[ln.b], y[ln.b])),
                                        key=lambda p: p[1])
            # Stagger the labels by the upper end's position so the labels of lines that
            # fan out from one node do not sit on one height.
            t = 0.2 + 0.55 * (xb if ya != yb else 0.5)
            ty = ya + (yb - ya) * t if ya != yb else ya + 0.8 * min(1.0, 2 * abs(xb - xa)) + 0.05
            ax.text(xa + (xb - xa) * t, ty, f"x{ln.links:,}", fontsize=6, ha="center",
                    va="center", zorder=3,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none",
                          "alpha": 0.8})


def _draw_nodes(ax: Axes, dr: Drawing, x: list[float], y: list[float], widest: int,
                nrows: int) -> bool:
    """Nodes: one scatter per role, groups bigger than single devices, their counts or
    names, and each row's label. Returns whether any node is a group."""
    grouped = any(n.group_attr for n in dr.nodes)
    size = min(max(2600.0 / widest, 6.0), 160.0 if grouped else 90.0)
    for role in sorted({n.role for n in dr.nodes}):
        idx = [i for i, n in enumerate(dr.nodes) if n.role == role]
        marker, colour, _ = _ROLE_STYLE.get(role, ("o", "grey", role))
        sc = ax.scatter([x[i] for i in idx], [y[i] for i in idx], s=size, marker=marker,
                        c=colour, edgecolors="white", linewidths=0.5, zorder=2)
        sc.set_gid(f"fabricopt-nodes-{role}")
    for r in range(nrows):
        members = [i for i, n in enumerate(dr.nodes) if n.row == r]
        if not members:
            continue
        if grouped and len(members) <= 40:
            for i in members:
                if dr.nodes[i].group_attr:
                    ax.text(x[i], y[i] - 0.16, f"{dr.nodes[i].members:,}", fontsize=6.5,
                            ha="center", va="top", zorder=3,
                            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none",
                                  "alpha": 0.8})
        elif not grouped and len(members) <= 16:
            # Names below the bottom row, above the top row, beside the nodes in between.
            above = r == nrows - 1 and r > 0
            for i in members:
                if r == 0 or above:
                    ax.text(x[i], y[i] + (0.13 if above else -0.16), dr.nodes[i].name,
                            fontsize=6.5, ha="center", va="bottom" if above else "top",
                            zorder=3, rotation=0 if len(members) <= 10 else 30)
                else:
                    ax.text(x[i] + 0.008, y[i] + 0.06, dr.nodes[i].name, fontsize=6.5,
                            ha="left", va="bottom", zorder=3)
        ax.text(-0.035, r, _row_label(dr, r), fontsize=7.5, ha="right", va="center")
    return grouped


def _render(fab: Fabric, dr: Drawing, x: list[float], ax: Axes | None, *, result: Any,
            util: Mapping | None, title: str | None, legend: bool,
            media: Mapping[str, Counter] | None) -> Axes:
    import matplotlib as mpl
    from matplotlib.lines import Line2D

    nrows = max(len(dr.rows), 1)
    per_row = Counter(n.row for n in dr.nodes)
    widest = max(per_row.values(), default=1)
    if ax is None:
        ax = new_axes(min(max(7.0, 0.11 * widest + 3.0), 18.0),
                       min(max(3.6, 1.15 * nrows + 2.4), 11.0))
    y = [float(n.row) for n in dr.nodes]

    # Tier colours, ordered from the bottom of the picture up.
    tier_row: dict[str, float] = {}
    for ln in dr.lines:
        low = min(y[ln.a], y[ln.b])
        tier_row[ln.tier] = min(tier_row.get(ln.tier, math.inf), low)
    tiers = sorted(dr.tier_links, key=lambda t: (tier_row.get(t, math.inf), t))
    palette = mpl.colormaps["tab10"].colors
    tier_colour = {t: palette[i % len(palette)] for i, t in enumerate(tiers)}
    cmap = mpl.colormaps[_UTIL_CMAP]
    norm = mpl.colors.Normalize(0.0, 1.0)

    _draw_lines(ax, dr, x, y, util, tier_colour, cmap, norm)
    grouped = _draw_nodes(ax, dr, x, y, widest, nrows)

    ax.set_xlim(-0.25, 1.02)
    top = nrows - 1 + (0.95 if any(y[ln.a] == y[ln.b] for ln in dr.lines) else 0.35)
    ax.set_ylim(-0.45, top)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)

    if title is None:
        gpus = sum(n.members for n in dr.nodes if n.role == "gpu")
        switches = sum(n.members for n in dr.nodes if n.role == "switch")
        title = (f"{fab.name}\n{gpus:,} GPUs, {switches:,} switches, "
                 f"{sum(dr.tier_links.values()):,} links")
        if dr.level is not None:
            title += f"; drawn grouped by {' and '.join(dr.level)}"
        if result is not None and not util:
            title += f"\n(no flow to colour: result status {getattr(result, 'status', '?')})"
    ax.set_title(title, fontsize=10)

    if legend:
        handles = []
        for t in tiers:
            colour = tier_colour[t] if util is None else "0.55"
            handles.append(Line2D([], [], color=colour, lw=2, label=_tier_label(dr, t, media)))
        for role in sorted({n.role for n in dr.nodes}):
            marker, colour, name = _ROLE_STYLE.get(role, ("o", "grey", role))
            label = name + (" group (count below)" if grouped else "")
            handles.append(Line2D([], [], ls="", marker=marker, color=colour, label=label))
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01),
                  ncol=2 if len(handles) > 3 else len(handles), fontsize=7, frameon=False)
    if util is not None:
        sm = mpl.cm.ScalarMappable(norm=norm, cmap=cmap)
        label = "utilization (load / capacity, larger direction"
        label += ", busiest link of a group line)" if dr.level else ")"
        ax.figure.colorbar(sm, ax=ax, label=label, shrink=0.8, pad=0.01)
    return ax
