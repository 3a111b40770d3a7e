"""A comparison written out: tables, plots, one diagram per design, and one HTML page.

:func:`write_report` turns a :class:`~fabricopt.study.compare.Comparison` into files a colleague can
open without Python: ``results.csv``, ``results.md``, ``results.json``, ``pareto.png`` and
``pareto-power.png`` (network capex and power per GPU against the all-to-all bandwidth each GPU
delivers, the Pareto front marked), ``bars.png`` (a few metrics per design), ``diagrams/*.png``
and ``index.html``, a single self-contained page: every image is embedded as a ``data:`` URI
and the table sorts by a click on its headings through an inline script, so the page can be
mailed or attached alone and needs no server.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
from pathlib import Path
from typing import Any

from ..study.compare import Comparison
from .charts import NAMED_POINTS, plot_metric_bars, plot_pareto
from .diagram import draw

#: The columns of the page's table, with their headings: what a reader compares first.
HEADLINE = (
    ("name", "design"),
    ("gpus", "GPUs"),
    ("switches", "switches"),
    ("all_to_all_gbps_per_gpu", "all-to-all per GPU (Gb/s)"),
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
    "other at once (a feasible flow; a range where the solver left a bracket open).",
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


def _png(fig: Any, path: Path, dpi: float = 110) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    data = buffer.getvalue()
    path.write_bytes(data)
    return data


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
         ".error{color:#a00;text-align:left}img{max-width:100%}figure{margin:1em 0}"
         "figcaption{font-size:13px;color:#333;max-width:900px}.notes{font-size:13px;"
         "max-width:1000px}.scroll{overflow-x:auto}")


def _charts(table: Comparison, out: Path) -> list[tuple[str, str, bytes]]:
    """The Pareto plots (capex and power per GPU against delivered bandwidth per GPU) and
    the bars per metric, as (heading, caption, png)."""
    Figure = _figure()
    images: list[tuple[str, str, bytes]] = []
    ok_rows = [r for r in table.rows if not r.get("error")]
    # Numbers in the plots are the table's # column: the row's place among all rows.
    numbered = [{**r, "all_to_all_gbps_per_gpu": None} if r.get("error") else r
                for r in table.rows]
    key_rows = max(0, len(ok_rows) - NAMED_POINTS) // 2 + 1
    for x, file, what in (("capex_per_gpu_usd", "pareto.png", "capex"),
                          ("power_per_gpu_w", "pareto-power.png", "power")):
        if not any(r.get(x) is not None for r in ok_rows):
            continue
        fig = Figure(figsize=(8, 5.5 + 0.14 * key_rows))
        ax = plot_pareto(numbered, x, "all_to_all_gbps_per_gpu", ax=fig.add_subplot())
        ax.set_title(f"Delivered all-to-all bandwidth against network {what}, per GPU",
                     fontsize=10)
        images.append((f"Network {what} per GPU against delivered bandwidth",
                       f"Network {what} per GPU against the all-to-all bandwidth each GPU is "
                       "proven to deliver. Red: the Pareto front (no other design delivers "
                       f"more for less {what}); the cheapest per delivered Gb/s lies on it. "
                       "Hollow diamonds: a single server or rack with no network to buy, "
                       "kept off the front. Numbered points are the table's # column.",
                       _png(fig, out / file)))
    metrics = [m for m in BAR_METRICS if any(r.get(m) is not None for r in ok_rows)]
    if metrics:
        height = max(3.0, 0.32 * len(ok_rows) + 1.2)
        fig = Figure(figsize=(13, height * math.ceil(len(metrics) / 2)))
        for i, metric in enumerate(metrics):
            plot_metric_bars(ok_rows, metric, ax=fig.add_subplot(math.ceil(len(metrics) / 2),
                                                                 2, i + 1))
        fig.tight_layout()
        images.append(("Metrics per design", "Each design's certified all-to-all bandwidth "
                       "per GPU, network capex and power per GPU, and capex per GPU per "
                       "delivered Gb/s (lower is cheaper for what it carries); n/a where a "
                       "figure was not computed or not proven.", _png(fig, out / "bars.png")))
    return images


def write_report(table: Comparison, out_dir: str | os.PathLike[str], *,
                 diagrams: bool = True, title: str = "fabricopt comparison") -> Path:
    """Write the tables, plots, diagrams and ``index.html`` of ``table`` into ``out_dir``.

    Parameters
    ----------
    table : Comparison
        What :func:`fabricopt.study.compare` returned.
    out_dir : path
        Folder to write into (created when missing).
    diagrams : bool
        Draw each design that evaluated (its fabric is built again from its design file or
        the Fabric given); large fabrics are drawn grouped.
    title : str
        Heading of the page.

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

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "results.csv")
    (out / "results.md").write_text(table.to_markdown() + "\n", encoding="utf-8")
    table.to_json(out / "results.json")

    images = _charts(table, out)
    drawings: list[tuple[str, bytes]] = []
    if diagrams:
        folder = out / "diagrams"
        folder.mkdir(exist_ok=True)
        for index, row in enumerate(table.rows):
            if row.get("error") or row.get("key") not in table.tasks:
                continue
            fab = table.fabric(index)
            ax = draw(fab)  # its title says the counts and the grouping drawn
            name = f"{_slug(fab.name)}-{str(row['key'])[:6]}.png"
            drawings.append((fab.name, _png(ax.figure, folder / name, dpi=90)))
            ax.figure.clf()

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p>{len(table)} designs, {len(table.failed)} failed. Bandwidths are Gb/s per "
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
