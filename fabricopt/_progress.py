"""Progress bars (tqdm) on standard error: shown when it is a terminal, switchable, never
required (without tqdm there is no bar)."""

from __future__ import annotations

import sys
from typing import Any


def progress_bar(progress: bool | None, *, desc: str, unit: str, total: int | None = None,
                 initial: int = 0) -> Any:
    """A tqdm bar, or None when ``progress`` is False, or None and stderr is no terminal.

    >>> progress_bar(False, desc="solve", unit="round") is None
    True
    """
    show = progress if progress is not None else bool(getattr(sys.stderr, "isatty", None)
                                                      and sys.stderr.isatty())
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: no bar without it
        return None
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr)
