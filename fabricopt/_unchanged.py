"""Read a fabric once while it cannot change.

Every solver starts from the fabric's arrays (:class:`~fabricopt.graph_arrays.GraphArrays`)
and every symmetric method re-checks the generator's claim against the graph, because a user
may edit a graph between calls. A study row computes several metrics of one fabric in a row,
with nobody editing it in between: inside ``with unchanged(fab):`` those readings are made
once and shared (on a 24,576-GPU design they were a third of the row's time).

>>> import fabricopt as fo
>>> from fabricopt.graph_arrays import GraphArrays
>>> fab = fo.ring(4)
>>> with unchanged(fab):
...     GraphArrays.from_fabric(fab) is GraphArrays.from_fabric(fab)
True
>>> GraphArrays.from_fabric(fab) is GraphArrays.from_fabric(fab)
False
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["forget", "once", "unchanged"]

T = TypeVar("T")

#: The fabric taken as unchanged in this thread, and what was read off it.
_READINGS: ContextVar[tuple[Any, dict[str, Any]] | None] = ContextVar(
    "fabricopt_unchanged", default=None)


@contextmanager
def unchanged(fab: Any) -> Iterator[None]:
    """Within the block, ``fab``'s graph is promised not to change: readings made through
    :func:`once` are made once. Nested blocks for the same fabric share the outer readings."""
    outer = _READINGS.get()
    if outer is not None and outer[0] is fab:
        yield
        return
    token = _READINGS.set((fab, {}))
    try:
        yield
    finally:
        _READINGS.reset(token)


def once(fab: Any, key: str, read: Callable[[], T]) -> T:
    """``read()``, or what it returned before for ``key`` when ``fab`` is the fabric of an
    enclosing :func:`unchanged` block."""
    current = _READINGS.get()
    if current is None or current[0] is not fab:
        return read()
    readings = current[1]
    if key not in readings:
        readings[key] = read()
    return readings[key]


def forget(fab: Any) -> None:
    """Drop what was read off ``fab`` in the enclosing :func:`unchanged` block (after code
    that may have edited it)."""
    current = _READINGS.get()
    if current is not None and current[0] is fab:
        current[1].clear()
