"""The table a batch returns, and the store that keeps its finished rows on disk.

:class:`Comparison` holds one row (a dict) per design with every column in order: the design's
name and source, its swept values, the metrics (:mod:`fabricopt.study.metrics`), bookkeeping
last. :class:`RowStore` appends each finished row to ``results.jsonl`` at once (and rewrites
``results.csv``), so a batch that was killed loses nothing and a rerun repeats nothing.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._checks import did_you_mean, fail
from ..errors import FabricOptError
from ..fabric import Fabric

__all__ = ["CSV_FILE", "ROWS_FILE", "Comparison", "RowStore"]

#: The files a batch writes into ``out_dir``.
ROWS_FILE = "results.jsonl"
CSV_FILE = "results.csv"

_IDENTITY = ("name", "file", "family")
_BOOKKEEPING = ("error", "seconds", "key")


def _columns_of(rows: Iterable[Mapping[str, Any]], swept: Iterable[str] = ()) -> list[str]:
    """Every column: the design's name and source, its swept values, then the metrics in order
    of first appearance (links per tier beside the total), bookkeeping last."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    head = [c for c in _IDENTITY if c in seen]
    head += [c for c in dict.fromkeys(swept) if c in seen and c not in head]
    tail = [c for c in _BOOKKEEPING if c in seen]
    middle = [c for c in seen if c not in head and c not in tail]
    per_tier = [c for c in middle if c.startswith("links_")]
    ordered: list[str] = []
    for c in middle:
        if c in per_tier:
            continue
        ordered.append(c)
        if c == "links":
            ordered += per_tier
    if "links" not in middle:
        ordered += per_tier
    return head + ordered + tail


def _cell(value: Any) -> str:
    """A value as text for CSV and Markdown: compact numbers, JSON for lists, '' for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


class Comparison:
    """What :func:`compare` returns: one row (a dict) per design, in the order given.

    Attributes
    ----------
    rows : list of dict
        The rows; missing cells are None.
    columns : list of str
        Every column, in order of first appearance.

    Examples
    --------
    Rows are dicts; ``swept`` names columns to show right after the design's name.

    >>> table = Comparison([{"name": "a", "gpus": 8}, {"name": "b", "gpus": 16, "error": ""}])
    >>> table.columns, len(table)
    (['name', 'gpus', 'error'], 2)
    >>> print(table.to_csv(), end="")
    name,gpus,error
    a,8,
    b,16,
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], swept: Iterable[str] = (),
                 tasks: Mapping[str, Any] | None = None,
                 build: Callable[[Any], Fabric] | None = None) -> None:
        raw = [dict(r) for r in rows]
        self.columns = _columns_of(raw, swept)
        #: The task of each row by ``key`` (when :func:`compare` made the table): what
        #: :meth:`fabric` rebuilds.
        self.tasks: dict[str, Any] = dict(tasks or {})
        self._build = build
        self.rows = [{c: r.get(c) for c in self.columns} for r in raw]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The rows whose evaluation raised (their ``error`` says why)."""
        return [r for r in self.rows if r.get("error")]

    def column(self, name: str) -> list[Any]:
        """One column's values, row by row."""
        if name not in self.columns:
            raise fail("Comparison.column", "name", "a column" + did_you_mean(name, self.columns),
                       name)
        return [r[name] for r in self.rows]

    def fabric(self, index: int) -> Fabric:
        """Build the fabric of row ``index`` again (from its design file, or the Fabric given).

        >>> import fabricopt as fo
        >>> fo.compare(fo.ring(4), metrics=["summary"]).fabric(0).name
        'ring(4)'
        """
        task = self.tasks.get(self.rows[index].get("key"))
        if task is None or self._build is None:
            raise FabricOptError(f"Comparison.fabric(): row {index} has no design to rebuild "
                                 "(the table was not made by compare())")
        return self._build(task)

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as a list of dicts (copies)."""
        return [dict(r) for r in self.rows]

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The table as CSV text (lists as JSON, None as an empty cell); also written to
        ``path`` when given."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([_cell(row[c]) for c in self.columns])
        text = buffer.getvalue()
        if path is not None:
            _write_atomic(path, text)
        return text

    def to_markdown(self, columns: Sequence[str] | None = None) -> str:
        """The table as Markdown (``columns``: a subset, default all but the key)."""
        cols = list(columns) if columns is not None else [c for c in self.columns if c != "key"]
        for c in cols:
            if c not in self.columns:
                raise fail("Comparison.to_markdown", "columns", "columns of the table"
                           + did_you_mean(c, self.columns), c)
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for row in self.rows:
            lines.append("| " + " | ".join(_cell(row[c]).replace("|", "\\|") for c in cols)
                         + " |")
        return "\n".join(lines)

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = 1) -> str:
        """The rows as a JSON array (NaN as null); also written to ``path`` when given."""
        text = json.dumps(_json_safe(self.rows), indent=indent)
        if path is not None:
            _write_atomic(path, text + "\n")
        return text

    def to_pandas(self) -> Any:
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise FabricOptError("Comparison.to_pandas(): pandas is not installed; "
                                 "pip install pandas, or use to_records()/to_csv()") from None
        return pd.DataFrame(self.rows, columns=self.columns)

    def __repr__(self) -> str:
        head = (f"<Comparison: {len(self.rows)} design{'s' if len(self.rows) != 1 else ''}"
                f", {len(self.failed)} failed>")
        shown = [c for c in ("name", "gpus", "all_to_all_gbps_per_gpu", "capex_usd",
                             "error") if c in self.columns]
        if not shown or not self.rows:
            return head
        # A missing value is "unknown" (not proven), except in a row that failed: "-".
        cells = [[_short(r[c], bool(r.get("error"))) for c in shown] for r in self.rows[:20]]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(shown)]
        lines = [head, "  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True))
                  for row in cells]
        if len(self.rows) > 20:
            lines.append(f"... {len(self.rows) - 20} more")
        return "\n".join(lines)


def _short(value: Any, failed: bool = False) -> str:
    text = ("-" if failed else "unknown") if value is None else _cell(value)
    return text if len(text) <= 48 else text[:45] + "..."


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


# -- the store of finished rows ------------------------------------------------------------------
class RowStore:
    """``results.jsonl`` (append-only, one row per line) and ``results.csv`` in ``out_dir``."""

    def __init__(self, out_dir: str | os.PathLike[str], swept: Sequence[str]) -> None:
        self.swept = swept
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_path = self.dir / ROWS_FILE
        self.rows: dict[str, dict[str, Any]] = {}
        if self.rows_path.exists():
            with open(self.rows_path, encoding="utf-8") as f:
                for line in f:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short when a run was killed mid-write
                    if isinstance(row, dict) and "key" in row:
                        self.rows[row["key"]] = row  # a later run's row replaces a failed one

    def done(self, key: str) -> bool:
        row = self.rows.get(key)
        return row is not None and not row.get("error")

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        with open(self.rows_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(_json_safe(row)) + "\n")
            f.flush()
            os.fsync(f.fileno())
        Comparison(self.rows.values(), self.swept).to_csv(self.dir / CSV_FILE)

    def compact(self) -> None:
        """Rewrite the rows file with one line per key (retried rows leave older lines)."""
        _write_atomic(self.rows_path, "".join(json.dumps(_json_safe(r)) + "\n"
                                              for r in self.rows.values()))
        Comparison(self.rows.values(), self.swept).to_csv(self.dir / CSV_FILE)
