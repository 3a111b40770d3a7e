"""Reading the project's TOML files (design files, catalogs) with one set of error messages."""

from __future__ import annotations

import os
import tomllib
from typing import Any

import numpy as np

from ._checks import near_file


def read_toml(path: str | os.PathLike[str], error: type[Exception], kind: str) -> dict[str, Any]:
    """The parsed file, or ``error`` naming the file and what went wrong.

    ``kind`` names the file in messages, e.g. ``"design file"``.
    """
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise error(f"{where}: no such {kind}{near_file(where)}") from None
    except OSError as exc:
        raise error(f"{where}: cannot read the {kind}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not valid TOML: the file is not UTF-8 ({exc.reason} at byte "
                    f"{exc.start})") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()  # numpy 2 reprs np.float64(1.5) as 'np.float64(1.5)'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"dumps_toml(): cannot write {type(value).__name__} {value!r}")


def dumps_toml(data: dict[str, Any]) -> str:
    """TOML text for a design file: top-level values, then one ``[table]`` per mapping.

    Enough for what fabricopt writes (strings, numbers, booleans, lists and inline tables);
    ``None`` values are left out, as TOML has no null.

    >>> print(dumps_toml({"family": "ring", "params": {"n": 4, "x": None}}))
    family = "ring"
    <BLANKLINE>
    [params]
    n = 4
    <BLANKLINE>
    """
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items()
             if v is not None and not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"]
            lines += [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None]
    return "\n".join(lines) + "\n"
