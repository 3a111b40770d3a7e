"""One time limit for a whole command or search, split across its solves: each solve gets
what is left over the solves still to come, so time a quick solve leaves passes to the next,
and the solves it cut short are named.

>>> budget = TimeBudget(10.0, solves=4)
>>> 0 < budget.share() <= 2.5          # a quarter of what is left
True
>>> budget.finished("pattern 1", cut=True); budget.cut_short, budget.left_solves
(['pattern 1'], 3)
>>> TimeBudget(None, solves=4).share() is None   # no limit: no solve is limited
True
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator

__all__ = ["ANYTIME_SECONDS", "IN_HAND", "TimeBudget", "active_budget", "begins",
           "expect_solves", "left_now", "spending"]

#: The part of what is left that a step no clock stops (a symmetry search, a routing, the
#: columns of a routed flow) keeps in hand: it is begun only when its size-based estimate is
#: at most the rest, so an estimate a third short still ends within the limit.
IN_HAND = 1 / 3
#: Seconds a step may be expected to take and still be begun whatever is left (a spent limit
#: included): its bracket is worth more than that, well within the least a limit is honoured
#: within (0.1 s, ``docs/throughput.md``).
ANYTIME_SECONDS = 0.02
#: The least a limit is honoured within (``docs/throughput.md``: 20 % of the limit or this,
#: whichever is larger): what a step expected to be tiny may take however little is left.
HONOURED_WITHIN_SECONDS = 0.1


class TimeBudget:
    """A limit of ``limit`` seconds from now (or from ``start``, a ``time.perf_counter()``
    reading) over ``solves`` solves; None: no limit."""

    #: The least a solve is given (s) once the limit has run out: enough to return the
    #: certified bracket of its first stage rather than nothing.
    FLOOR = 0.01

    def __init__(self, limit: float | None, solves: int, start: float | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock  # the caller's, when it counts time on its own (a test's)
        start = clock() if start is None else start
        self.limit = limit
        self.end = None if limit is None else start + limit
        self.left_solves = solves
        self.cut_short: list[str] = []
        self.skipped = 0
        self.solved = 0

    def out(self) -> bool:
        """Whether the limit has run out."""
        return self.end is not None and self.clock() >= self.end

    def share(self, part: float | None = None) -> float | None:
        """The next solve's time limit: what is left over the solves still to come, or
        ``part`` of what is left for a solve the rest depends on (at least :attr:`FLOOR`);
        None without a limit.

        >>> 4.0 < TimeBudget(10.0, solves=6).share(part=0.5) <= 5.0
        True
        """
        if self.end is None:
            return None
        left = self.end - self.clock()
        return max(left * part if part is not None else left / max(self.left_solves, 1),
                   self.FLOOR)

    def left(self) -> float | None:
        """Seconds left of the limit (never below 0); None without one."""
        return None if self.end is None else max(self.end - self.clock(), 0.0)

    def line(self, whole: float | None = None) -> str:
        """What the limit cut short, in a line (its solves named); ``whole``: the limit
        this one is a share of.

        >>> b = TimeBudget(2.5, solves=2); b.finished("solve 1", True); b.finished("solve 2", False)
        >>> b.line(whole=5)
        "time limit       2.5 s of the command's 5 s: cut short: solve 1 (of 2 solve(s))"
        """
        cut = (f"cut short: {', '.join(self.cut_short)} (of {self.solved} solve(s))"
               if self.cut_short else f"each of its {self.solved} solve(s) finished within it")
        of = "" if whole is None else f" of the command's {whole:.3g} s"
        return f"time limit       {self.limit:.3g} s{of}: {cut}"

    def finished(self, name: str, cut: bool) -> None:
        """A solve is done; ``cut``: the limit cut it short (it is named)."""
        self.left_solves -= 1
        self.solved += 1
        if cut:
            self.cut_short.append(name)


_ACTIVE: contextvars.ContextVar[TimeBudget | None] = contextvars.ContextVar(
    "fabricopt_time_budget", default=None)


def active_budget() -> TimeBudget | None:
    """The budget of the command under way (:func:`spending`), or None."""
    return _ACTIVE.get()


@contextlib.contextmanager
def spending(budget: TimeBudget) -> Iterator[TimeBudget]:
    """Make ``budget`` the one the solves inside draw their time limits from."""
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def left_now() -> float | None:
    """Seconds left of the active budget (:func:`spending`), None when there is none or it
    has no limit: what any solve or step under way may still take.

    >>> left_now() is None
    True
    >>> with spending(TimeBudget(5.0, solves=1)):
    ...     0 < left_now() <= 5.0
    True
    """
    budget = _ACTIVE.get()
    return None if budget is None else budget.left()


def begins(expected: float, left: float | None = None) -> bool:
    """Whether a step expected (from its size) to take ``expected`` seconds, which no clock
    stops, is begun with ``left`` seconds left (default: the active budget's): when it fits
    in what is left with :data:`IN_HAND` of it kept, or within :data:`ANYTIME_SECONDS`;
    always without a limit.

    >>> begins(0.5, None), begins(0.5, 1.0), begins(0.7, 1.0), begins(0.01, 0.0)
    (True, True, False, True)
    """
    left = left_now() if left is None else left
    return left is None or expected <= max((1 - IN_HAND) * left, ANYTIME_SECONDS)


def expect_solves(count: int) -> None:
    """Tell the active budget (if any) how many solves are still to come: its share is split
    over them. A caller that knows only a most (units before their orbits) says that
    first, then the count once known."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.left_solves = max(int(count), 1)
