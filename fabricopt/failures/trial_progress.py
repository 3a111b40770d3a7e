"""The progress of a batch of failure trials, with the one meaning ``progress`` has across
the package (as :func:`~fabricopt.compare`'s): None a bar on stderr when it is a terminal,
True always, False never, a function told ``progress(done, total)`` after each trial."""

from __future__ import annotations

from typing import Any

from .._checks import fail
from .._progress import progress_bar

__all__ = ["TrialProgress"]


class TrialProgress:
    """A sweep's ``progress``: a bar of trials on stderr, a function told
    ``(done, total)`` after each trial, or nothing (see
    :func:`~fabricopt.failures.sweep.failure_sweep`).

    >>> seen = []
    >>> tell = TrialProgress("demo", lambda done, total: seen.append((done, total)), 2)
    >>> tell.start(); tell.advance(); tell.advance(); tell.close()
    >>> seen
    [(1, 2), (2, 2)]
    """

    def __init__(self, func: str, progress: Any, total: int) -> None:
        if progress is not None and not isinstance(progress, bool) and not callable(progress):
            raise fail(func, "progress", "None, True, False or a function "
                       "progress(done, total)", progress)
        self.progress, self.total, self.done = progress, total, 0
        self.callback = progress if callable(progress) else None
        self.bar: Any = None

    def start(self) -> None:
        """Show the bar (when asked for), once the arguments are checked."""
        if self.callback is None:
            self.bar = progress_bar(self.progress, desc="failure sweep", unit="trial",
                                    total=self.total)

    def advance(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.callback is not None:
            self.callback(self.done, self.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
