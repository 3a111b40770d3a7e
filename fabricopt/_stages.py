"""What a long evaluation is doing: stage events, and who listens to them.

The engine announces its stages (``"bounds"``, ``"symmetry search"``, ``"LP"``, each round of
the approximate method...) with the certified bracket on theta proven so far. Nobody listens
by default, and then a report costs one context-variable read. A listener is installed for a
block with :func:`listening` (a terminal status line, :func:`fabricopt._progress.stage_line`,
or any function of a :class:`StageEvent`); it holds for the thread or task that installed it
(a :class:`contextvars.ContextVar`), so threads side by side do not see each other's events,
and a worker process, which starts with no listener, reports nothing.

Each evaluation reports through its own :class:`StageReport`, which keeps the bracket it has
announced: both sides are certified bounds on the same theta, so their intersection is too,
and a listener never sees the bracket widen.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["SILENT", "StageEvent", "StageReport", "listening", "stage_report"]


@dataclass(frozen=True)
class StageEvent:
    """One stage of an evaluation: its name, the certified bracket ``[lower, upper]`` on
    theta so far (``0`` and ``inf`` while nothing is proven) and a short detail."""

    stage: str
    lower: float = 0.0
    upper: float = math.inf
    detail: str = ""
    quantity: str = "theta"

    def describe(self) -> str:
        """One line for a terminal; ``quantity`` names what the bracket bounds.

        >>> StageEvent("LP", 0.5, 0.625, "12,000 columns").describe()
        'LP (12,000 columns): theta in [0.5, 0.625], gap 20.00%'
        >>> StageEvent("bounds").describe()
        'bounds'
        >>> StageEvent("bisection: cuts", 0, 3200, quantity="Gb/s").describe()
        'bisection: cuts: Gb/s in [0, 3200], gap 100.00%'
        """
        text = f"{self.stage} ({self.detail})" if self.detail else self.stage
        if self.lower > 0 or math.isfinite(self.upper):
            gap = (0.0 if self.upper <= self.lower else
                   (self.upper - self.lower) / self.upper if math.isfinite(self.upper) else 1.0)
            text += (f": {self.quantity} in [{self.lower:.6g}, {self.upper:.6g}], "
                     f"gap {gap:.2%}")
        return text


_LISTENER: ContextVar[Callable[[StageEvent], Any] | None] = ContextVar(
    "fabricopt_stage_listener", default=None)


@contextlib.contextmanager
def listening(listener: Callable[[StageEvent], Any] | None) -> Iterator[None]:
    """Send the stage events of evaluations run inside the block to ``listener`` (None:
    to nobody, which also silences an outer listener).

    >>> events = []
    >>> with listening(events.append):
    ...     report = stage_report()
    ...     report("bounds", 0.25, 0.5)
    >>> events
    [StageEvent(stage='bounds', lower=0.25, upper=0.5, detail='', quantity='theta')]
    """
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class StageReport:
    """One evaluation's reports to a listener, with a bracket that never widens.

    >>> seen = []
    >>> report = StageReport(seen.append)
    >>> report("bounds", 0.2, 0.5); report("LP", 0.1, 0.6)
    >>> seen[-1]
    StageEvent(stage='LP', lower=0.2, upper=0.5, detail='', quantity='theta')
    """

    def __init__(self, listener: Callable[[StageEvent], Any], quantity: str = "theta") -> None:
        self.listener = listener
        self.quantity = quantity
        self.lower, self.upper = 0.0, math.inf

    def __bool__(self) -> bool:
        return True

    def __call__(self, stage: str, lower: float | None = None, upper: float | None = None,
                 detail: str = "") -> None:
        # Both sides are certified bounds on one theta: keep the tighter of each.
        if lower is not None and lower > self.lower:
            self.lower = float(lower)
        if upper is not None and upper < self.upper:
            self.upper = float(upper)
        self.listener(StageEvent(stage, self.lower, max(self.upper, self.lower), detail,
                                 self.quantity))


class _Silent:
    """The report when nobody listens: does nothing, and is falsy so a caller can skip
    work done only for the report."""

    def __bool__(self) -> bool:
        return False

    def __call__(self, stage: str, lower: float | None = None, upper: float | None = None,
                 detail: str = "") -> None:
        return None


#: The report of an evaluation nobody listens to.
SILENT = _Silent()


def stage_report(quantity: str = "theta") -> StageReport | _Silent:
    """A new evaluation's report to the current listener (a silent one when none), of
    brackets on ``quantity`` (an all-to-all's theta; a bisection's Gb/s).

    >>> bool(stage_report())
    False
    """
    listener = _LISTENER.get()
    return SILENT if listener is None else StageReport(listener, quantity)
