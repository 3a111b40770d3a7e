"""Reading the project's TOML files (design files, catalogs) with one set of error messages."""

from __future__ import annotations

import os
import tomllib
from typing import Any


def read_toml(path: str | os.PathLike[str], error: type[Exception], kind: str) -> dict[str, Any]:
    """The parsed file, or ``error`` naming the file and what went wrong.

    ``kind`` names the file in messages, e.g. ``"design file"``.
    """
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise error(f"{where}: no such {kind}") from None
    except OSError as exc:
        raise error(f"{where}: cannot read the {kind}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not valid TOML: the file is not UTF-8 ({exc.reason} at byte "
                    f"{exc.start})") from None
