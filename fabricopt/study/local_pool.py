"""A process pool on this machine for a batch: no more workers than cores (or rows),
workers that end with the process that started them, and keep their heap between rows
(:func:`~fabricopt.study.execution.roomy_heap`).

``compare -j 100000`` forked a thousand processes, and killing the command left them running:
a worker of :class:`concurrent.futures.ProcessPoolExecutor` waits on its queue for ever once
its parent is gone (SIGKILL runs no cleanup).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time

from .execution import roomy_heap

__all__ = ["process_pool"]


def _end_with_parent(parent: int) -> None:
    """Worker initializer: exit when the parent process is gone (killed, not only ended). A
    daemon thread polls the parent's id once a second."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _start_worker(parent: int) -> None:
    """Worker initializer: end with the parent (:func:`_end_with_parent`), and serve the
    rows' arrays from a heap kept between them (the worker is the pool's own process)."""
    _end_with_parent(parent)
    roomy_heap(always=True)


def process_pool(jobs: int, rows: int | None = None) -> concurrent.futures.ProcessPoolExecutor:
    """A pool of ``jobs`` workers, at most one per core (more only queue for them) and one
    per row when the number of rows is known.

    >>> with process_pool(10**5, rows=1) as pool:
    ...     pool._max_workers
    1
    """
    workers = max(1, min(jobs, os.cpu_count() or 1, rows or jobs))
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, initializer=_start_worker, initargs=(os.getpid(),))
