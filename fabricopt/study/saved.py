"""A batch's saved output read back: the table :func:`~fabricopt.compare` wrote to its
``out_dir``, as a :class:`~fabricopt.study.table.Comparison`, to print, rank, judge and plot
again without solving anything.

What is read, in order of preference: ``results.json`` (the report's table: the rows in the
order the designs were given, numbers at full precision), else ``results.jsonl`` (the rows a
batch stopped before its report had finished: one per design, a retried row's last line
kept), else ``results.csv`` (numbers as written there, to six significant digits). A folder
is read as the batch's output; a file by its name.

>>> import os, tempfile, fabricopt as fo
>>> out = tempfile.mkdtemp()
>>> first = fo.compare([fo.ring(4), fo.ring(8)], metrics=["summary"], out_dir=out)
>>> again = fo.Comparison.read(out)
>>> again.column("gpus"), again.columns == first.columns
([4, 8], True)
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._checks import check_path, near_file
from ..errors import DesignFileError

__all__ = ["SAVED_FILES", "read_rows", "saved_output", "swept_columns"]

#: The files a batch's output is read from, most faithful first.
SAVED_FILES = ("results.json", "results.jsonl", "results.csv")

_IDENTITY = ("name", "file", "family")
_TEXT = (*_IDENTITY, "error", "key")
_INT = re.compile(r"[+-]?[0-9]+")


def read_rows(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[str],
                                                      list[str]]:
    """The rows, the column order and the swept columns a batch saved at ``path`` (its
    ``out_dir``, or one of :data:`SAVED_FILES`); the column order is ``results.csv``'s
    header where there is one.

    Raises :class:`~fabricopt.DesignFileError` naming the path and what it looked for when
    nothing there reads as a saved table.
    """
    check_path("Comparison.read", "path", path)
    where = Path(path)
    if where.is_dir():
        found = [where / name for name in SAVED_FILES if (where / name).is_file()]
        if not found:
            raise DesignFileError(
                f"{os.fspath(path)}: no saved comparison in this folder (looked for "
                f"{', '.join(SAVED_FILES)}: what fabricopt compare -o or compare(out_dir=) "
                "write)")
        source, csv_file = found[0], where / "results.csv"
    elif where.is_file():
        source, csv_file = where, where.parent / "results.csv"
        if where.suffix not in (".json", ".jsonl", ".csv"):
            raise DesignFileError(f"{os.fspath(path)}: not a saved comparison; give the "
                                  f"folder a batch wrote, or one of {', '.join(SAVED_FILES)}")
    else:
        raise DesignFileError(f"{os.fspath(path)}: no such folder or file{near_file(path)}")
    rows = _read(source)
    header = _csv_header(csv_file) if csv_file.is_file() else []
    seen = dict.fromkeys(c for r in rows for c in r)
    columns = [c for c in header if c in seen] + [c for c in seen if c not in header]
    return rows, columns, swept_columns(rows, columns)


def saved_output(targets: Sequence[str]) -> str | None:
    """``targets`` when they are one batch's output, to be read back and not computed: one
    folder holding one of :data:`SAVED_FILES` and no design file (``*.toml``), or one of
    those files; else None (designs to compute).

    >>> saved_output(["topologies/dgx-h100.toml"]) is None
    True
    """
    if len(targets) != 1:
        return None
    where = Path(targets[0])
    if where.is_file():
        return targets[0] if where.name in SAVED_FILES else None
    if where.is_dir() and not any(where.glob("*.toml")) and any(
            (where / name).is_file() for name in SAVED_FILES):
        return targets[0]
    return None


def _read(source: Path) -> list[dict[str, Any]]:
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DesignFileError(f"{source}: cannot be read: {exc}") from None
    try:
        if source.suffix == ".json":
            rows = json.loads(text)
        elif source.suffix == ".jsonl":
            by_key: dict[Any, dict[str, Any]] = {}
            for n, line in enumerate(text.splitlines()):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line a killed run cut short, as the batch itself skips it
                by_key[row.get("key", n) if isinstance(row, dict) else n] = row
            rows = list(by_key.values())  # a retried design's last row replaces the first
        else:
            # the design's name, source and error are text: empty is '', as compare wrote
            rows = [{k: (v or "") if k in _TEXT else _value(v) for k, v in r.items()}
                    for r in csv.DictReader(text.splitlines())]
    except json.JSONDecodeError as exc:
        raise DesignFileError(f"{source}: not a saved comparison: {exc}") from None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows) or not (
            rows and any("name" in r for r in rows)):
        raise DesignFileError(f"{source}: not a saved comparison (expected rows with a "
                              "'name' column)")
    return [dict(r) for r in rows]


def _csv_header(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError):
        return []


def _value(cell: str | None) -> Any:
    """A CSV cell as the table held it: '' is None, true/false booleans, JSON lists and
    tables, whole numbers ints, other numbers floats, else the text."""
    if cell is None or cell == "":
        return None
    if cell in ("true", "false"):
        return cell == "true"
    if cell[:1] in "[{":
        try:
            return json.loads(cell)
        except json.JSONDecodeError:
            return cell
    if _INT.fullmatch(cell):
        return int(cell)
    try:
        return float(cell)
    except ValueError:
        return cell


def swept_columns(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    """The swept columns of a saved table: they follow the design's name and source, and
    each is named in a row's name (``[oversubscription=2.0]``) or left empty by a row that
    did not fail (a design that does not sweep it); the first column that is neither is
    the first metric.

    >>> swept_columns([{"name": "a [k=4]", "k": 4, "gpus": 16}, {"name": "b", "gpus": 8}],
    ...               ["name", "k", "gpus"])
    ['k']
    """
    out = []
    for c in columns:
        if c in _IDENTITY:
            continue
        named = any(f"{c}=" in str(r.get("name", "")) for r in rows)
        empty = any(r.get(c) is None and not r.get("error") for r in rows)
        if not (named or empty):
            break
        out.append(c)
    return out
