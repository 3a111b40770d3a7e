"""A comparison written out: a verdict, tables, plots, one diagram per design, one HTML page.

:func:`write_report` turns a :class:`~fabricopt.study.compare.Comparison` into files a colleague can
open without Python: ``results.csv``, ``results.md``, ``results.json``; the Pareto charts as
SVG, per GPU, clusters apart from single systems (``pareto.svg``: network capex per GPU against
the all-to-all bandwidth each GPU delivers; ``pareto-systems.svg``: the same for single
scale-up systems; ``pareto-power.svg``: network power per GPU; ``training.svg`` with a job:
cost per million tokens against tokens per second per GPU); ``bars.png`` (a few metrics per
design), ``diagrams/*.png`` and ``index.html``, a single self-contained page.

The page opens with the verdict (:func:`~fabricopt.study.verdict.verdict`: the cheapest
cluster per delivered Gb/s per GPU, what binds it, the runner-up and the margin; the single
systems apart; with a job, the cheapest per token), then the charts at the page's full width
(inline SVG, each label placed clear of every other), a training section when the table has a
job's columns (and a serving one where serving columns exist), and the table of every design.
Every image is inline or a ``data:`` URI and the tables sort by a click on their headings
through an inline script, so the page can be mailed or attached alone and needs no server.
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import contextlib
import html
import io
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._checks import fail
from .._gc import frozen_gc
from ..fabric import Fabric
from ..study.compare import Comparison
from ..study.verdict import is_single_system, verdict
from .charts import NAMED_POINTS, plot_metric_bars, plot_pareto
from .diagram import draw

#: The columns of the page's table, with their headings: what a reader compares first.
HEADLINE = (
    ("name", "design"),
    ("gpus", "GPUs"),
    ("network_switches", "network switches"),
    ("scale_up_switches", "scale-up switch chips"),
    # A batch saved before the two were counted apart (read back with Comparison.read).
    ("switches", "switches (network and scale-up chips)"),
    ("all_to_all_gbps_per_gpu", "all-to-all per GPU, incl. NVLink-local (Gb/s)"),
    ("all_to_all_network_gbps_per_gpu", "of which over the network (Gb/s)"),
    ("any_traffic_gbps_per_gpu", "any traffic per GPU (Gb/s)"),
    ("bisection_gbps_per_gpu", "bisection per GPU (Gb/s)"),
    ("all_reduce_busbw_GBps", "all-reduce busbw achievable (GB/s)"),
    ("all_reduce_busbw_GBps_expected", "all-reduce busbw expected (GB/s)"),
    ("all_reduce_busbw_GBps_upper", "all-reduce busbw bound (GB/s)"),
    ("capex_usd", "network capex (USD)"),
    ("capex_per_gpu_usd", "capex per GPU (USD)"),
    ("power_per_gpu_w", "power per GPU (W)"),
    ("usd_per_delivered_gbps", "USD per GPU per Gb/s"),
    ("network_share", "network share of capex"),
    ("pricing", "pricing"),
    ("binding_tier", "binding tier"),
)
#: The metrics of ``bars.png``.
BAR_METRICS = ("all_to_all_gbps_per_gpu", "capex_per_gpu_usd", "power_per_gpu_w",
               "usd_per_delivered_gbps")
#: What each figure of the page says, one sentence a column.
COLUMN_NOTES = (
    "<b>all-to-all per GPU</b>: what each GPU is proven to send when every GPU sends to every "
    "other at once (a feasible flow; a range where the solver left a bracket open). It "
    "counts the traffic between GPUs of one scale-up domain, which stays on NVLink inside "
    "the server, so on a cluster of DGX it reads a little above the NIC's speed (1,023 / "
    "1,016 of it on 1,024 GPUs), and a small cluster gains more from it than a large one.",
    "<b>any traffic per GPU</b>: a rate proven for every traffic pattern at once (two-phase "
    "routing), so a floor under the worst-case permutation.",
    "<b>all-reduce busbw achievable</b>: the busbw of a schedule shown to exist on this "
    "fabric; <b>expected</b>: a calibrated estimate of what nccl-tests measures (protocol "
    "and launch overheads), neither bound; <b>bound</b>: no schedule on this fabric can "
    "beat it.",
    "<b>network capex</b> and power cover switches, NICs, transceivers and cables at the "
    "<b>pricing</b> named (which optics each link gets); <b>network share</b> "
    "is the network's part of network plus servers, where the catalog prices the server.",
)
#: The script that sorts the table when a heading is clicked (numbers by value, text by
#: word; a second click reverses), inline so the page needs no server and no network.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0];
    var up = th.getAttribute('aria-sort') !== 'ascending';
    th.closest('tr').querySelectorAll('th').forEach(function (h) {
      h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
    var key = function (tr) { var c = tr.cells[col];
      return c ? (c.getAttribute('data-v') || c.textContent) : ''; };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : (x === '' ? 1 : y === '' ? -1 :
              x.localeCompare(y, undefined, {numeric: true}));
      return up ? r : -r; });
    rows.forEach(function (tr) { body.appendChild(tr); });
  });
});
"""


def _figure() -> Any:
    from matplotlib.figure import Figure

    return Figure  # no pyplot: nothing global, nothing shown, safe in threads and servers


#: zlib level of the report's PNGs: 1 encodes in a fraction of the default's (6) time; the
#: files of topologies/ came out a tenth smaller than at matplotlib's default.
PNG_COMPRESSION = 1
#: How the report's PNGs hint their glyphs (matplotlib's ``text.hinting``): unhinted glyphs
#: are laid out and rasterized in about two thirds of the time of the default hinting (text
#: is most of a diagram's drawing time), and at 90-110 dpi read the same, a shade softer.
PNG_TEXT_HINTING = "no_hinting"


def _png(fig: Any, path: Path, dpi: float = 110) -> bytes:
    """The figure as PNG, written to ``path`` and returned.

    Drawn once: the layout engine (constrained or tight) runs once, on the renderer the
    picture is drawn with, and is then switched off; no ``bbox_inches="tight"``. Either of
    those made matplotlib lay out and draw every text of the figure again at each save.
    """
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(dpi)
    buffer = io.BytesIO()
    with mpl.rc_context({"text.hinting": PNG_TEXT_HINTING}):  # measured and drawn alike
        # Its renderer measures each text once, for the layout and the drawing alike.
        renderer = FigureCanvasAgg(fig).get_renderer()
        engine = fig.get_layout_engine()
        if engine is not None:
            if len(fig.axes) == 1:
                _fit(fig.axes[0], renderer)
            else:
                engine.execute(fig)
            fig.set_layout_engine(None)
        fig.savefig(buffer, format="png", dpi=dpi,
                    pil_kwargs={"compress_level": PNG_COMPRESSION})
    data = buffer.getvalue()
    path.write_bytes(data)
    return data


def _fit(ax: Any, renderer: Any, pad_points: float = 3.0) -> None:
    """Place a figure's one Axes so that its title, legend and texts fit the figure with
    ``pad_points`` to spare: what constrained layout does for a diagram, measuring only the
    artists that can stand outside the frame instead of every artist, twice. Texts placed
    in data coordinates move with the frame, so the fit is repeated until it settles."""
    fig = ax.figure
    width, height = fig.bbox.width, fig.bbox.height
    pad = pad_points * fig.dpi / 72
    legend = ax.get_legend()
    texts = _TextBoxes([t for t in (ax.title, *ax.texts) if t.get_visible() and t.get_text()],
                       renderer)
    for _ in range(3):
        frame = ax.get_window_extent(renderer)
        boxes = texts.extents()
        if legend is not None:
            b = legend.get_window_extent(renderer)
            boxes.append((b.x0, b.y0, b.x1, b.y1))
        left = max([frame.x0 - x0 for x0, _, _, _ in boxes] + [0.0])
        right = max([x1 - frame.x1 for _, _, x1, _ in boxes] + [0.0])
        bottom = max([frame.y0 - y0 for _, y0, _, _ in boxes] + [0.0])
        top = max([y1 - frame.y1 for _, _, _, y1 in boxes] + [0.0])
        box = ((left + pad) / width, (bottom + pad) / height,
               1 - (left + right + 2 * pad) / width, 1 - (bottom + top + 2 * pad) / height)
        if box[2] <= 0 or box[3] <= 0:  # more text than figure: as constrained layout would
            return
        moved = max(abs(a - b) for a, b in zip(box, ax.get_position().bounds, strict=True))
        ax.set_position(box)
        if moved * max(width, height) < 0.5:  # settled within half a pixel
            return


class _TextBoxes:
    """The window extents of some texts, laid out once: a text's box about its anchor does
    not change when the frame moves, only where its anchor lands. The same numbers as
    ``Text.get_window_extent`` (its layout box translated to the anchor's display point),
    without laying each text out again at every step of :func:`_fit`; anchors that share a
    transform are transformed together."""

    def __init__(self, texts: list[Any], renderer: Any) -> None:
        self.texts = texts
        # Each layout box's corners, (x0, y0, x1, y1), about the anchor at (0, 0).
        self.boxes = [_box_about_anchor(t, renderer) for t in texts]
        groups: dict[int, tuple[Any, list[int]]] = {}
        for i, t in enumerate(texts):
            groups.setdefault(id(t.get_transform()), (t.get_transform(), []))[1].append(i)
        self.groups = list(groups.values())
        self.anchors = [t.get_unitless_position() for t in texts]

    def extents(self) -> list[tuple[float, float, float, float]]:
        """(x0, y0, x1, y1) of each text where its transform now puts it."""
        out: list[tuple[float, float, float, float]] = [(0.0, 0.0, 0.0, 0.0)] * len(self.texts)
        for transform, members in self.groups:
            points = transform.transform([self.anchors[i] for i in members])
            for i, (x, y) in zip(members, points.tolist(), strict=True):
                x0, y0, x1, y1 = self.boxes[i]
                out[i] = (x0 + x, y0 + y, x1 + x, y1 + y)
        return out


def _box_about_anchor(text: Any, renderer: Any) -> tuple[float, float, float, float]:
    """A text's layout box about its anchor, (x0, y0, x1, y1): matplotlib's private
    ``Text._get_layout`` where it works (one layout), else the public window extent less the
    anchor's display point, the same box by another road (a release that renames or changes
    the private method slows the report down, and does not break it)."""
    try:
        return tuple(text._get_layout(renderer)[0].get_points().ravel())
    except (AttributeError, TypeError, ValueError, IndexError):
        x0, y0, x1, y1 = text.get_window_extent(renderer).get_points().ravel()
        x, y = text.get_transform().transform(text.get_unitless_position())
        return (x0 - x, y0 - y, x1 - x, y1 - y)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "design"


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if abs(value) >= 1e3:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


def _headline_cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if (column == "all_to_all_gbps_per_gpu" and row.get("all_to_all_exact") is False
            and not row.get("error")):
        upper = row.get("all_to_all_gbps_per_gpu_upper")
        if value is not None and upper is not None:
            # Not proven exactly: the certified bracket, never the lower end alone.
            return f"{_number(value)} to {_number(upper)}"
    return _number(value)


def in_server_only(row: dict[str, Any]) -> bool:
    """Whether a row's scale-up silicon is all inside its servers: no network capex, the
    NVSwitch chips priced with the server (a DGX alone)."""
    return not row.get("capex_usd") and bool(row.get("in_server_usd"))


def _table_html(table: Comparison) -> str:
    cols = [(c, h) for c, h in HEADLINE if c in table.columns]
    at = 1 if cols and cols[0][0] == "name" else 0
    cols[at:at] = [(c, c.replace("_", " ")) for c in table.swept]
    head = "<th>#</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in cols)
    body = []
    policies = _policies(table)  # a policy is a sentence: the cell holds its key, a note it
    for index, row in enumerate(table.rows, start=1):
        cells = [f"<td data-v='{index}'>{index}</td>"]
        for c, _ in cols:
            text = _headline_cell(row, c)
            if c == "pricing" and text in policies:
                text = policies[text]
            value = row.get(c)
            if c == "name" and in_server_only(row):
                text += " \u2020"  # the note under the table says why its capex is $0
            sort = (f" data-v='{value!r}'" if isinstance(value, int | float)
                    and not isinstance(value, bool) else "")
            cells.append(f"<td{sort}>{html.escape(text)}</td>")
        error = row.get("error")
        if error:
            cells.append(f'<td class="error">{html.escape(str(error))}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    error_head = "<th>error</th>" if table.failed else ""
    return (f"<table class='sortable'><thead><tr>{head}{error_head}</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


def _same_number(a: Any, b: Any) -> bool:
    return (isinstance(a, int | float) and isinstance(b, int | float) and a > 0
            and abs(a - b) <= 1e-6 * abs(a))  # a certified lower end sits 1e-9 below


def _policies(table: Comparison) -> dict[str, str]:
    """Each pricing policy of the table (a sentence) and its short key, P1, P2..."""
    texts = dict.fromkeys(str(r["pricing"]) for r in table.rows if r.get("pricing"))
    return {text: f"P{i}" for i, text in enumerate(texts, start=1)}


def _notes_html(table: Comparison) -> str:
    """The sentence on each column, and the note on designs whose network capex is $0."""
    notes = [f"<li>{n}</li>" for n in COLUMN_NOTES]
    alone = [r for r in table.rows if in_server_only(r) and not r.get("error")]
    if alone:
        names = ", ".join(html.escape(str(r["name"])) for r in alone)
        notes.append(f"<li>\u2020 {names}: no network capex, because the scale-up switches "
                     "(NVSwitch chips or trays) are in the server or rack and in its price, "
                     "not bought apart; "
                     "the plots draw such designs apart, off the Pareto front.</li>")
    alike = [r for r in table.rows if _same_number(r.get("all_to_all_gbps_per_gpu"),
                                                   r.get("all_reduce_busbw_GBps_upper"))]
    if alike:
        notes.append("<li>Where all-to-all per GPU (Gb/s) and the all-reduce bound (GB/s) show "
                     "the same number (" + ", ".join(html.escape(str(r["name"]))
                                                     for r in alike[:3])
                     + (" ..." if len(alike) > 3 else "") + "), it is no copied column: with "
                     "8 GPUs a server and one NIC a GPU, the server's NICs carry 8 times a "
                     "GPU's Gb/s, which is a GPU's Gb/s in GB/s, and both figures gain the "
                     "same share of traffic that stays inside the server.</li>")
    policies = _policies(table)
    if policies:
        notes.append("<li>Pricing (the table's pricing column): " + "; ".join(
            f"{key} = {html.escape(text)}" for text, key in policies.items()) + ".</li>")
    return "<ul class='notes'>" + "".join(notes) + "</ul>"


STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1400px}"
         "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
         "padding:3px 6px;text-align:right}td:nth-child(2),th:nth-child(2){text-align:left}"
         "th{cursor:pointer;background:#f3f3f3}th[aria-sort=ascending]::after{content:' \\25B2'}"
         "th[aria-sort=descending]::after{content:' \\25BC'}"
         ".error{color:#a00;text-align:left;min-width:28em}img{max-width:100%}figure{margin:1em 0}"
         "figcaption{font-size:13px;color:#333;max-width:900px}.notes{font-size:13px;"
         "max-width:1000px}.scroll{overflow-x:auto}figure.chart{margin:1em 0;width:100%}"
         "#verdict{font-size:16px;line-height:1.45;border-left:4px solid #c00000;"
         "padding:0.2em 1em;background:#fafafa}#verdict p{margin:0.4em 0}")


def _svg(fig: Any, path: Path) -> str:
    """The figure as SVG, written to ``path`` and returned as markup to inline in the page
    (full width: the root's fixed size gives way to the page's, its view box kept)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    path.write_text(text, encoding="utf-8")
    root = text[text.index("<svg"):]
    head, rest = root.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return head + ' style="width:100%;height:auto">' + rest


def _split(table: Comparison) -> tuple[list[int], list[int]]:
    """Row indices of the clusters and of the single systems (ranked apart)."""
    systems = [i for i, r in enumerate(table.rows) if is_single_system(r)]
    apart = set(systems)
    return [i for i in range(len(table.rows)) if i not in apart], systems


#: The report's Pareto charts: (file, rows drawn, x column, heading, caption).
def _pareto_specs(table: Comparison) -> list[tuple[str, list[int], str, str, str]]:
    clusters, systems = _split(table)
    front = ("Red: the Pareto front (no other design delivers more for less); the cheapest "
             "per delivered Gb/s lies on it. Numbers are the table's # column.")
    specs = [("pareto.svg", clusters, "capex_per_gpu_usd",
              "Clusters: network capex per GPU against delivered bandwidth per GPU",
              "Each cluster's network capex per GPU against the all-to-all bandwidth each GPU "
              "is proven to deliver. " + front),
             ("pareto-systems.svg", systems, "capex_per_gpu_usd",
              "Single systems: network capex per GPU against delivered bandwidth per GPU",
              "One scale-up system each (a DGX, an NVL72, a UALink pod: every link scale-up, "
              "no network between boxes), ranked apart from the clusters, which they would "
              "otherwise all beat. Hollow diamonds: switches inside the server price (no "
              "network capex), kept off the front. " + front),
             ("pareto-power.svg", clusters, "power_per_gpu_w",
              "Clusters: network power per GPU against delivered bandwidth per GPU",
              "Each cluster's network power per GPU against its delivered all-to-all per "
              "GPU. " + front)]
    return [spec for spec in specs if spec[1]]


def _numbered(table: Comparison) -> list[dict[str, Any]]:
    """The rows as the plots read them: a failed row draws nothing but keeps its number,
    and tokens per second per GPU beside the training columns."""
    out = []
    for r in table.rows:
        row = dict(r)
        if row.get("error"):
            row["all_to_all_gbps_per_gpu"] = None
            row["training_usd_per_million_tokens"] = None
        tokens, gpus = row.get("training_tokens_per_s"), row.get("gpus")
        row["training_tokens_per_s_per_gpu"] = (
            tokens / gpus if isinstance(tokens, int | float) and isinstance(gpus, int)
            and gpus > 0 else None)
        out.append(row)
    return out


def _charts(table: Comparison, out: Path) -> list[tuple[str, str, str]]:
    """The Pareto charts (clusters and single systems apart, per GPU) as (heading, caption,
    inline SVG)."""
    Figure = _figure()
    rows = _numbered(table)
    charts: list[tuple[str, str, str]] = []
    for file, among, x, heading, caption in _pareto_specs(table):
        drawable = [i for i in among if rows[i].get(x) is not None
                    and rows[i].get("all_to_all_gbps_per_gpu") is not None]
        if not drawable:
            continue
        key_rows = math.ceil(len(drawable) / 3) if len(drawable) > NAMED_POINTS else 0
        fig = Figure(figsize=(13, 6.5 + 0.16 * key_rows))
        ax = plot_pareto(rows, x, "all_to_all_gbps_per_gpu", among=among,
                         ax=fig.add_subplot())
        ax.set_title("")  # the page's heading says it
        charts.append((heading, caption, _svg(fig, out / file)))
    if any(r.get("training_usd_per_million_tokens") for r in rows):
        fig = Figure(figsize=(13, 6.5))
        ax = plot_pareto(rows, "training_usd_per_million_tokens",
                         "training_tokens_per_s_per_gpu", off_front=None,
                         ax=fig.add_subplot())
        heading = "Training: cost per million tokens against tokens per second per GPU"
        ax.set_title("")
        charts.append((heading, "The job's expected cost per million tokens (servers, "
                       "network and energy) against the tokens each GPU trains per second. "
                       "Red: the Pareto front.", _svg(fig, out / "training.svg")))
    return charts


def _bars(table: Comparison, out: Path) -> list[tuple[str, str, bytes]]:
    """The bars per metric, as (heading, caption, png)."""
    Figure = _figure()
    ok_rows = [r for r in table.rows if not r.get("error")]
    metrics = [m for m in BAR_METRICS if any(r.get(m) is not None for r in ok_rows)]
    if not metrics:
        return []
    height = max(3.0, 0.32 * len(ok_rows) + 1.2)
    fig = Figure(figsize=(13, height * math.ceil(len(metrics) / 2)), layout="tight")
    for i, metric in enumerate(metrics):
        plot_metric_bars(ok_rows, metric, ax=fig.add_subplot(math.ceil(len(metrics) / 2),
                                                             2, i + 1))
    return [("Metrics per design", "Each design's certified all-to-all bandwidth "
             "per GPU, network capex and power per GPU, and capex per GPU per "
             "delivered Gb/s (lower is cheaper for what it carries); n/a where a "
             "figure was not computed or not proven.", _png(fig, out / "bars.png"))]


def _plots(table: Comparison, out: Path, executor: cf.Executor | None
           ) -> Callable[[], tuple[list[tuple[str, str, str]], list[tuple[str, str, bytes]]]]:
    """The charts and the bars of ``table``, as a function that hands them over: drawn on
    ``executor``'s workers from the rows alone (sent without the kept fabrics), each started
    now; or drawn here when it is called. A plot whose worker failed is drawn here."""
    if executor is None:
        return lambda: (_charts(table, out), _bars(table, out))
    rows = Comparison(table.rows, table.swept)
    started = [(executor.submit(plot, rows, out), plot) for plot in (_charts, _bars)]

    def gathered() -> tuple[Any, Any]:
        done = []
        for future, plot in started:
            try:
                done.append(future.result())
            except Exception:  # noqa: BLE001 - a worker lost or refusing: drawn here instead
                done.append(plot(table, out))
        return done[0], done[1]

    return gathered


#: The training section's columns, with their headings.
TRAINING_COLUMNS = (
    ("name", "design"), ("gpus", "GPUs"), ("training_plan", "plan"),
    ("training_tokens_per_s", "tokens/s (expected)"),
    ("training_tokens_per_s_upper", "tokens/s (bound)"),
    ("training_step_s", "step (s)"), ("training_mfu", "MFU"),
    ("training_usd_per_million_tokens", "USD per million tokens"),
    ("training_binding_dimension", "binding dimension"),
    ("training_binding_tier", "binding tier"))


def _section_table(table: Comparison, columns: list[tuple[str, str]], sort: str) -> str:
    """A sortable table of some columns, rows with a value of ``sort`` first, cheapest first
    (the # column is the main table's)."""
    order = sorted(range(len(table.rows)), key=lambda i: (
        not isinstance(table.rows[i].get(sort), int | float), table.rows[i].get(sort) or 0))
    head = "<th>#</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in columns)
    body = []
    for i in order:
        row = table.rows[i]
        cells = [f"<td data-v='{i + 1}'>{i + 1}</td>"]
        for c, _ in columns:
            value = row.get(c)
            sort_v = (f" data-v='{value!r}'" if isinstance(value, int | float)
                      and not isinstance(value, bool) else "")
            cells.append(f"<td{sort_v}>{html.escape(_number(value))}</td>")
        if row.get(sort) is None and row.get("error"):
            # What stopped it, in the section's own row (the main table has it too).
            cells[2:] = [cells[2], f"<td class='error' colspan='{len(columns) - 1}'>"
                         f"{html.escape(str(row['error']))}</td>"]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f"<div class='scroll'><table class='sortable'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _job_sections(table: Comparison) -> list[str]:
    """The training section (and a serving one, where serving columns exist)."""
    parts = []
    if "training_usd_per_million_tokens" in table.columns:
        cols = [(c, h) for c, h in TRAINING_COLUMNS if c in table.columns]
        parts.append("<h2 id='training'>Training</h2><p>The job run on each design: "
                     "expected tokens per second (a bound over calibrated efficiencies) "
                     "and the bound no schedule beats, MFU, the cost per million tokens of "
                     "servers, network and energy, and the parallel dimension whose "
                     "communication binds the step. Cheapest per token first.</p>"
                     + _section_table(table, cols, "training_usd_per_million_tokens"))
    serving = [c for c in table.columns if c.startswith("serving_")]
    if serving:
        cols = [("name", "design"), *((c, c[len("serving_"):].replace("_", " "))
                                      for c in serving)]
        sort = next((c for c in serving if "usd" in c), serving[0])
        parts.append("<h2 id='serving'>Serving</h2>"
                     + _section_table(table, cols, sort))
    return parts


#: The diagrams drawn into a report's ``diagrams/`` folder, one JSON line each (the row's
#: key, the fabric's name, the file): a rerun into the same folder draws only the others.
DRAWN_FILE = "drawn.jsonl"


def write_diagram(fab: Fabric, row: Mapping[str, Any], *, folder: str | os.PathLike[str]
                  ) -> Path:
    """Draw one row's fabric as the report shows it, into ``folder`` (created when missing):
    ``<name>-<key>.png``, noted in :data:`DRAWN_FILE`. Written whole or not at all (a new
    file renamed into place), so several processes may draw into one folder.

    Parameters
    ----------
    fab : Fabric
        The row's fabric.
    row : mapping
        Its row of :func:`fabricopt.study.compare` (its ``key`` names the file).
    folder : path
        The report's ``diagrams/`` folder.

    Returns
    -------
    pathlib.Path
        The PNG written.

    Examples
    --------
    >>> import tempfile, fabricopt as fo
    >>> path = write_diagram(fo.ring(4), {"key": "0123456789"}, folder=tempfile.mkdtemp())
    >>> path.name, path.read_bytes()[:4] == b"\\x89PNG"
    ('ring-4-012345.png', True)
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_slug(fab.name)}-{str(row['key'])[:6]}.png"
    part = path.with_name(f".{path.name}.{os.getpid()}")
    # The collector's passes would walk every fabric alive (this one, and those a table
    # still keeps for the rows after it) while the drawing makes its objects.
    with frozen_gc():
        ax = draw(fab)  # its title says the counts and the grouping drawn
        _png(ax.figure, part, dpi=90)
        ax.figure.clf()
    os.replace(part, path)
    line = json.dumps({"key": row["key"], "name": fab.name, "file": path.name})
    with open(folder / DRAWN_FILE, "a", encoding="utf-8") as notes:
        notes.write(line + "\n")  # one short write: lines of processes side by side stay whole
    return path


def _drawn(folder: Path) -> dict[str, tuple[str, Path]]:
    """The diagrams already in ``folder``, by row key: (the fabric's name, its file)."""
    found: dict[str, tuple[str, Path]] = {}
    with contextlib.suppress(OSError):
        for line in (folder / DRAWN_FILE).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                note = json.loads(line)
                found[str(note["key"])] = (str(note["name"]), folder / Path(note["file"]).name)
    return found


def write_report(table: Comparison, out_dir: str | os.PathLike[str], *,
                 diagrams: bool = True, title: str = "fabricopt comparison",
                 executor: cf.Executor | None = None) -> Path:
    """Write the tables, plots, diagrams and ``index.html`` of ``table`` into ``out_dir``.

    Parameters
    ----------
    table : Comparison
        What :func:`fabricopt.study.compare` returned.
    out_dir : path
        Folder to write into (created when missing).
    diagrams : bool
        Draw each design that evaluated; large fabrics are drawn grouped. A diagram already
        in ``out_dir/diagrams`` for the row's key (drawn where its row ran, through
        ``compare(..., each_fabric=functools.partial(write_diagram, folder=...))``, or by an
        earlier report into the same folder) is read, not drawn again; the others are drawn
        here from :meth:`Comparison.fabric <fabricopt.study.table.Comparison.fabric>` (the
        fabric kept, or built again from its design file or the Fabric given).
    title : str
        Heading of the page.
    executor : concurrent.futures.Executor, optional
        A process pool on this machine (its workers write into ``out_dir``): the Pareto
        charts and the bars, which read only the rows, are drawn on it while this process
        writes the tables and gathers the diagrams; the command line passes the pool its
        rows ran on. None (default): all drawn here. The files are the same either way.

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

    Examples
    --------
    >>> import tempfile, fabricopt as fo
    >>> table = fo.compare([fo.ring(4), fo.ring(6)], metrics=["summary", "all_to_all", "cost"])
    >>> page = write_report(table, tempfile.mkdtemp(), diagrams=False)
    >>> page.name, "ring(6)" in page.read_text()
    ('index.html', True)
    """

    if executor is not None and not isinstance(executor, cf.Executor):
        raise fail("write_report", "executor", "a concurrent.futures.Executor or None",
                   type(executor).__name__)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(table, out, executor)  # started first: on a pool they draw meanwhile
    table.to_csv(out / "results.csv")
    (out / "results.md").write_text(table.to_markdown() + "\n", encoding="utf-8")
    table.to_json(out / "results.json")

    drawings: list[tuple[str, bytes]] = []
    if diagrams:
        folder = out / "diagrams"
        folder.mkdir(exist_ok=True)
        drawn = _drawn(folder)
        for index, row in enumerate(table.rows):
            if row.get("error") or row.get("key") not in table.tasks:
                continue
            name, path = drawn.get(row["key"], ("", None))
            if path is None or not path.is_file():  # not drawn where its row ran: drawn here
                fab = table.fabric(index)
                name, path = fab.name, write_diagram(fab, row, folder=folder)
                del fab  # dropped before the next is drawn
            drawings.append((name, path.read_bytes()))

    sentences = verdict(table)
    charts, images = plots()
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if sentences:
        parts.append("<section id='verdict'><h2>Verdict</h2>" + "".join(
            f"<p>{html.escape(s)}</p>" for s in sentences) + "</section>")
    for heading, caption, svg in charts:
        parts.append(f"<h2>{html.escape(heading)}</h2><figure class='chart'>{svg}"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    parts += _job_sections(table)
    parts += [f"<h2>Every design</h2><p>{len(table)} designs, {len(table.failed)} failed. "
              "Bandwidths are Gb/s per "
              "direction per GPU; collective busbw in GB/s as nccl-tests reports it; "
              "a range (a to b) is a certified bracket the solver did not close. Click a "
              "heading to sort; # numbers the designs as the plots do. Every column is in "
              "results.csv beside this page.</p>",
              f"<div class='scroll'>{_table_html(table)}</div>", _notes_html(table)]
    for heading, caption, png in images:
        parts.append(f"<h2>{html.escape(heading)}</h2><figure><img alt='{html.escape(heading)}'"
                     f" src='{_data_uri(png)}'><figcaption>{html.escape(caption)}</figcaption>"
                     "</figure>")
    if drawings:
        parts.append("<h2>Diagrams</h2><p>GPUs at the bottom, switch tiers above; large "
                     "fabrics are drawn in groups (by rail, plane, scalable unit or server) so "
                     "that each design's rails and planes stay visible.</p>")
        for name, png in drawings:
            parts.append(f"<h3>{html.escape(name)}</h3><figure><img alt='{html.escape(name)}'"
                         f" src='{_data_uri(png)}'></figure>")
    parts.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    page = out / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
