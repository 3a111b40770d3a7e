"""A comparison written out: tables, plots, one diagram per design, and one HTML page.

:func:`write_report` turns a :class:`~fabricopt.study.compare.Comparison` into files a colleague can
open without Python: ``results.csv``, ``results.md``, ``results.json``, ``pareto.png`` (capex
against all-to-all bandwidth per GPU, the Pareto front marked), ``bars.png`` (a few metrics per
design), ``diagrams/*.png`` and ``index.html``, a single self-contained page: every image is
embedded as a ``data:`` URI, so the page can be mailed or attached alone.
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
from .charts import plot_metric_bars, plot_pareto
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
    ("all_reduce_busbw_GBps_upper", "all-reduce busbw bound (GB/s)"),
    ("all_reduce_busbw_GBps_expected", "all-reduce busbw expected (GB/s)"),
    ("capex_usd", "network capex (USD)"),
    ("capex_per_gpu_usd", "capex per GPU (USD)"),
    ("power_per_gpu_w", "power per GPU (W)"),
    ("usd_per_delivered_gbps", "USD per GPU per Gb/s"),
    ("binding_tier", "binding tier"),
)
#: The metrics of ``bars.png``.
BAR_METRICS = ("all_to_all_gbps_per_gpu", "capex_per_gpu_usd", "power_per_gpu_w",
               "usd_per_delivered_gbps")


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


def _table_html(table: Comparison) -> str:
    cols = [(c, h) for c, h in HEADLINE if c in table.columns]
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in cols)
    body = []
    for row in table.rows:
        cells = "".join(f"<td>{html.escape(_headline_cell(row, c))}</td>" for c, _ in cols)
        error = row.get("error")
        if error:
            cells += f'<td class="error">{html.escape(str(error))}</td>'
        body.append(f"<tr>{cells}</tr>")
    error_head = "<th>error</th>" if table.failed else ""
    return (f"<table><thead><tr>{head}{error_head}</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


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

    Figure = _figure()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "results.csv")
    (out / "results.md").write_text(table.to_markdown() + "\n", encoding="utf-8")
    table.to_json(out / "results.json")

    images: list[tuple[str, str, bytes]] = []  # (heading, caption, png)
    ok_rows = [r for r in table.rows if not r.get("error")]
    if any(r.get("capex_usd") is not None for r in ok_rows):
        fig = Figure(figsize=(8, 5.5))
        plot_pareto(ok_rows, "capex_usd", "all_to_all_gbps_per_gpu", ax=fig.add_subplot())
        images.append(("Cost against delivered bandwidth", "Network capex against the "
                       "all-to-all bandwidth each GPU delivers; the Pareto front is marked "
                       "(no design is both cheaper and faster than one on it).",
                       _png(fig, out / "pareto.png")))
    metrics = [m for m in BAR_METRICS if any(r.get(m) is not None for r in ok_rows)]
    if metrics:
        height = max(3.0, 0.32 * len(ok_rows) + 1.2)
        fig = Figure(figsize=(13, height * math.ceil(len(metrics) / 2)))
        for i, metric in enumerate(metrics):
            plot_metric_bars(ok_rows, metric, ax=fig.add_subplot(math.ceil(len(metrics) / 2),
                                                                 2, i + 1))
        fig.tight_layout()
        images.append(("Metrics per design", "", _png(fig, out / "bars.png")))

    drawings: list[tuple[str, bytes]] = []
    if diagrams:
        folder = out / "diagrams"
        folder.mkdir(exist_ok=True)
        for index, row in enumerate(table.rows):
            if row.get("error") or row.get("key") not in table.tasks:
                continue
            fab = table.fabric(index)
            ax = draw(fab, title=fab.name)
            name = f"{_slug(fab.name)}-{str(row['key'])[:6]}.png"
            drawings.append((fab.name, _png(ax.figure, folder / name, dpi=90)))
            ax.figure.clf()

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             "</title><style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
             "padding:3px 6px;text-align:right}td:first-child,th:first-child{text-align:left}"
             ".error{color:#a00;text-align:left}img{max-width:100%}figure{margin:1em 0}"
             ".scroll{overflow-x:auto}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p>{len(table)} designs, {len(table.failed)} failed. Bandwidths are Gb/s per "
             "direction per GPU; collective busbw in GB/s as nccl-tests reports it; "
             "'unknown' means the solver did not prove a value, with the certified bracket. "
             "Every column is in results.csv beside this page.</p>",
             f"<div class='scroll'>{_table_html(table)}</div>"]
    for heading, caption, png in images:
        parts.append(f"<h2>{html.escape(heading)}</h2><figure><img alt='{html.escape(heading)}'"
                     f" src='{_data_uri(png)}'><figcaption>{html.escape(caption)}</figcaption>"
                     "</figure>")
    if drawings:
        parts.append("<h2>Diagrams</h2>")
        for name, png in drawings:
            parts.append(f"<h3>{html.escape(name)}</h3><figure><img alt='{html.escape(name)}'"
                         f" src='{_data_uri(png)}'></figure>")
    parts.append("</body></html>")
    page = out / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
