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

from .._checks import check_int, check_path, did_you_mean, fail
from ..errors import DesignFileError, FabricOptError
from ..fabric import Fabric
from .saved import read_rows
from .verdict import verdict

__all__ = ["CSV_FILE", "ROWS_FILE", "TEXT_COLUMNS", "Comparison", "RowStore", "human"]

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
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:.0f}"  # a count or a price in whole dollars, every digit kept
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
        #: The swept or overridden parameters that are columns, in order.
        self.swept = [c for c in dict.fromkeys(swept) if c in self.columns]
        #: The task of each row by ``key`` (when :func:`compare` made the table): what
        #: :meth:`fabric` rebuilds.
        self.tasks: dict[str, Any] = dict(tasks or {})
        self._build = build
        self.rows = [{c: r.get(c) for c in self.columns} for r in raw]
        #: Rows :func:`compare` took from ``out_dir``'s rows file instead of computing them.
        self.reused = 0

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Comparison:
        """The table a batch saved: ``path`` is the ``out_dir`` it wrote (``fabricopt
        compare ... -o OUT``, ``compare(..., out_dir=OUT)``) or one of its results files
        (:mod:`fabricopt.study.saved` says which is read). Its :meth:`verdict`,
        :meth:`to_text` and :func:`~fabricopt.plot.write_report` work as on the table
        :func:`compare` returned, with nothing solved again; :meth:`fabric` does not (the
        designs are not rebuilt).

        >>> import tempfile, fabricopt as fo
        >>> out = tempfile.mkdtemp()
        >>> _ = fo.compare(fo.ring(4), metrics=["summary"], out_dir=out)
        >>> Comparison.read(out).column("gpus")
        [4]
        """
        rows, columns, swept = read_rows(path)
        table = cls(rows, swept)
        table.columns = [c for c in columns if c in table.columns] + [
            c for c in table.columns if c not in columns]
        return table

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
        """The fabric of row ``index``: the one its row was computed on, when :func:`compare`
        ran the row in this process and kept it (handed back once; see
        :data:`~fabricopt.study.compare.KEPT_ARCS`), else built again from its design file
        (or the Fabric given).

        >>> import fabricopt as fo
        >>> fo.compare(fo.ring(4), metrics=["summary"]).fabric(0).name
        'ring(4)'
        """
        index = check_int("Comparison.fabric", "index", index, minimum=-len(self.rows),
                          maximum=len(self.rows) - 1)
        task = self.tasks.get(self.rows[index].get("key"))
        if task is None or self._build is None:
            raise FabricOptError(f"Comparison.fabric(): row {index} has no design to rebuild "
                                 "(the table was not made by compare())")
        return self._build(task)

    def verdict(self) -> list[str]:
        """The sentences a report opens with: which design wins and why
        (:func:`~fabricopt.study.verdict.verdict`).

        >>> import fabricopt as fo
        >>> fo.compare([fo.ring(4)], metrics=["summary"]).verdict()
        []
        """
        return verdict(self.rows)

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as a list of dicts (copies)."""
        return [dict(r) for r in self.rows]

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The table as CSV text (lists as JSON, None as an empty cell); also written to
        ``path`` when given."""
        if path is not None:
            check_path("Comparison.to_csv", "path", path)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([_cell(row[c]) for c in self.columns])
        text = buffer.getvalue()
        if path is not None:
            _write_atomic(path, text)
        return text

    def _checked_columns(self, func: str, columns: Any) -> list[str]:
        """``columns`` as a list of this table's columns, or the standard error."""
        if isinstance(columns, str | bytes) or not isinstance(columns, Iterable):
            raise fail(func, "columns", "None or a sequence of column names", columns)
        cols = list(columns)
        for c in cols:
            if not isinstance(c, str) or c not in self.columns:
                raise fail(func, "columns", "columns of the table"
                           + did_you_mean(str(c), self.columns), c)
        return cols

    def to_markdown(self, columns: Sequence[str] | None = None) -> str:
        """The table as Markdown (``columns``: a subset, default all but the key)."""
        cols = (self._checked_columns("Comparison.to_markdown", columns) if columns is not None
                else [c for c in self.columns if c != "key"])
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for row in self.rows:
            lines.append("| " + " | ".join(_cell(row[c]).replace("|", "\\|") for c in cols)
                         + " |")
        return "\n".join(lines)

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = 1) -> str:
        """The rows as a JSON array (NaN as null); also written to ``path`` when given."""
        if path is not None:
            check_path("Comparison.to_json", "path", path)
        if indent is not None:
            check_int("Comparison.to_json", "indent", indent, minimum=0, maximum=16)
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

    def to_text(self, columns: Sequence[str] | None = None, limit: int = 20) -> str:
        """The table as aligned text with human numbers (``6,378,750``, ``423.3``): the
        ``columns`` given, or the name, swept values and :data:`TEXT_COLUMNS`; the first
        ``limit`` rows.

        >>> print(Comparison([{"name": "a", "capex_usd": 6378750.0}]).to_text())
        <Comparison: 1 design, 0 failed>
        name  capex_usd
        a     6,378,750
        """
        head = (f"<Comparison: {len(self.rows)} design{'s' if len(self.rows) != 1 else ''}"
                f", {len(self.failed)} failed>")
        if columns is None:
            shown = [c for c in ("name", *self.swept, *TEXT_COLUMNS) if c in self.columns
                     and (c != "error" or self.failed)]
        else:
            shown = self._checked_columns("Comparison.to_text", columns)
        limit = check_int("Comparison.to_text", "limit", limit, minimum=0)
        if not shown or not self.rows or not limit:
            return head
        # A missing value is "unknown" (not proven), except in a row that failed: "-".
        # A swept value a row does not have is blank, not unknown.
        cells = [[_short(r[c], bool(r.get("error")) or c in self.swept) for c in shown]
                 for r in self.rows[:limit]]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(shown)]
        right = [any(isinstance(r[c], int | float) and not isinstance(r[c], bool)
                     for r in self.rows) for c in shown]

        def line(values: Sequence[str]) -> str:
            return "  ".join(v.rjust(w) if rj else v.ljust(w)
                             for v, w, rj in zip(values, widths, right, strict=True)).rstrip()

        lines = [head, line(shown)] + [line(row) for row in cells]
        if len(self.rows) > limit:
            lines.append(f"... {len(self.rows) - limit} more")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()


#: The columns :meth:`Comparison.to_text` shows by default, after the name and swept values.
TEXT_COLUMNS = ("gpus", "all_to_all_gbps_per_gpu", "all_reduce_busbw_GBps",
                "capex_per_gpu_usd", "power_per_gpu_w", "usd_per_delivered_gbps", "capex_usd",
                "error")


#: From this magnitude on, :func:`human` writes a number with its exponent.
HUMAN_EXPONENT_FROM = 1e15


def human(value: Any) -> str:
    """A number as a reader takes it in: thousands separators, four significant digits
    below 1,000, no exponent; other values as in CSV. A magnitude of 10^15 or more (only a
    fabric given in absurd units reaches it) keeps four significant digits with its exponent,
    not a row of digits no reader counts.

    >>> human(6378750.0), human(3.2768e6), human(423.33333), human(0.00012), human(12)
    ('6,378,750', '3,276,800', '423.3', '0.00012', '12')
    >>> human(1.5e300), human(10**20)
    ('1.5e+300', '1e+20')
    """
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and abs(value) >= HUMAN_EXPONENT_FROM:
        return f"{float(value):.4g}"
    if isinstance(value, float) and math.isfinite(value):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return _cell(value)


def _short(value: Any, failed: bool = False) -> str:
    text = ("-" if failed else "unknown") if value is None else human(value)
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
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:  # a missing folder, a full disk: the file's error, as write_json's
        raise DesignFileError(f"{os.fspath(path)}: cannot be written: "
                              f"{exc.strerror or exc}") from None


# -- the store of finished rows ------------------------------------------------------------------
def _drop_torn_line(path: Path) -> None:
    """Cut a last line without its newline (a run killed mid-write): appended to, it would
    glue the next row to the fragment, and both would be lost."""
    with open(path, "rb+") as f:
        pos = f.seek(0, os.SEEK_END)
        if pos == 0 or (f.seek(pos - 1) >= 0 and f.read(1) == b"\n"):
            return
        while pos > 0:  # back to the last newline, a block at a time
            step = min(1 << 16, pos)
            pos -= step
            f.seek(pos)
            newline = f.read(step).rfind(b"\n")
            if newline >= 0:
                f.truncate(pos + newline + 1)
                return
        f.truncate(0)


class RowStore:
    """``results.jsonl`` (append-only, one row per line) and ``results.csv`` in ``out_dir``."""

    def __init__(self, out_dir: str | os.PathLike[str], swept: Sequence[str]) -> None:
        self.swept = swept
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_path = self.dir / ROWS_FILE
        self.rows: dict[str, dict[str, Any]] = {}
        if self.rows_path.exists():
            _drop_torn_line(self.rows_path)
            with open(self.rows_path, encoding="utf-8") as f:
                for line in f:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short when a run was killed mid-write
                    if isinstance(row, dict) and "key" in row:
                        self.rows[row["key"]] = row  # a later run's row replaces a failed one

    @staticmethod
    def finished(out_dir: str | os.PathLike[str]) -> int:
        """Whole rows in ``out_dir``'s rows file (a torn last line is none); 0 without one."""
        try:
            with open(Path(out_dir) / ROWS_FILE, encoding="utf-8") as f:
                return sum(1 for line in f if line.endswith("\n"))
        except OSError:
            return 0

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
