"""Pause Python's cyclic garbage collector around work that makes millions of small objects
and no reference cycles (building or reading a 100,000-GPU graph): each collection pass walks
every object alive, the whole graph included, and on such fabrics those passes took more time
than the work itself.

>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block; restore its state after (nested blocks and
    a collector the caller turned off are left as they were)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
