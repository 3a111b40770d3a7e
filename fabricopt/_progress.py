"""Progress on standard error (tqdm): a bar for a batch or a method's rounds, and a status line
of the stage an evaluation is in (:mod:`fabricopt._stages`); shown when stderr is a terminal,
switchable, never required (without tqdm nothing is shown)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from ._stages import listening


def _tqdm(progress: bool | None, **options: Any) -> Any:
    """A tqdm on stderr when ``progress`` is True, or None and stderr is a terminal; else
    None (also without tqdm, which is optional)."""
    shown = progress if progress is not None else bool(
        getattr(sys.stderr, "isatty", None) and sys.stderr.isatty())
    if not shown:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(file=sys.stderr, **options)


def progress_bar(progress: bool | None, *, desc: str, unit: str, total: int | None = None,
                 initial: int = 0) -> Any:
    """A tqdm bar, or None when ``progress`` is False, or None and stderr is no terminal.

    >>> progress_bar(False, desc="solve", unit="round") is None
    True
    """
    return _tqdm(progress, total=total, initial=initial, desc=desc, unit=unit)


class StageLine:
    """A one-line status of the current stage on stderr (a tqdm line showing text only),
    below a batch bar when ``position`` is 1; redrawn at most every ``interval`` seconds
    unless the stage changes. Use as a listener of :mod:`fabricopt._stages`."""

    def __init__(self, bar: Any, interval: float = 0.2) -> None:
        self.bar, self.interval = bar, interval
        self.last_stage, self.last_time = "", 0.0

    def __call__(self, event: Any) -> None:
        now = time.monotonic()
        if event.stage == self.last_stage and now - self.last_time < self.interval:
            return
        self.last_stage, self.last_time = event.stage, now
        self.bar.set_description_str(event.describe()[:120], refresh=True)

    def close(self) -> None:
        self.bar.close()


def stage_status(progress: bool | None, position: int = 0) -> StageLine | None:
    """A :class:`StageLine` on stderr when ``progress`` is True, or None and stderr is a
    terminal; else None (also without tqdm).

    >>> stage_status(False) is None
    True
    """
    bar = _tqdm(progress, total=0, bar_format="{desc}", position=position, leave=False)
    return None if bar is None else StageLine(bar)


@contextlib.contextmanager
def stage_line(progress: bool | None, position: int = 0) -> Iterator[StageLine | None]:
    """Show the stages of evaluations run inside the block on one line of stderr (see
    :func:`stage_status`; when nothing is shown, the engine's reports cost nothing);
    ``position=1`` puts it under a batch bar.

    >>> with stage_line(False) as line:
    ...     line is None
    True
    """
    line = stage_status(progress, position)
    if line is None:
        yield None
        return
    try:
        with listening(line):
            yield line
    finally:
        line.close()
