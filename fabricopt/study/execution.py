"""Running a batch: in this process or on an executor, with capped threads and one meaning of
``progress``.

:func:`compare` and :func:`optimize` both hand their evaluations to :func:`run`: one after
another in this process when no executor is given, else on a
:class:`concurrent.futures.Executor` (a process pool, or a Dask cluster through
``distributed.Client(...).get_executor()``), where every task caps its BLAS/OpenMP pools at one
thread (:func:`limit_threads`) so tasks side by side do not oversubscribe the cores, and a Dask
worker gets back the heap glibc would have given it (:func:`roomy_heap`).

``progress`` means the same everywhere: None shows a bar when stderr is a terminal, True
always, False never, and a function is called as ``progress(done, total)`` after each task.
Under a bar, a status line shows the stage of the evaluation running in this process and its
bracket so far (:mod:`fabricopt._stages`); tasks on an executor report no stages.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._checks import fail
from .._progress import progress_bar, stage_status
from .._stages import listening
from ..catalog import Catalog

__all__ = ["THREAD_ENV", "Progress", "check_executor", "check_progress", "limit_threads",
           "load_for_workers", "roomy_heap", "run", "worker_count"]

#: Environment variables that cap the threads of BLAS and OpenMP pools in a worker, so tasks
#: running side by side do not each start one thread per core.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

#: glibc's own ceiling for its sliding mmap threshold on 64-bit machines
#: (``DEFAULT_MMAP_THRESHOLD_MAX``, 4 MiB x sizeof(long)): blocks below it come from the heap.
MMAP_THRESHOLD = 32 * 2**20
#: The trim threshold glibc pairs with a raised mmap threshold (twice it): the top of the heap
#: is given back only above this.
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_heap_set: list[bool] = []


def _glibc() -> Any:
    import ctypes

    return ctypes.CDLL("libc.so.6")


def roomy_heap(always: bool = False) -> bool:
    """Let this process's heap serve blocks up to :data:`MMAP_THRESHOLD` again, once, where
    ``MALLOC_TRIM_THRESHOLD_`` is set or ``always`` (True when it did, or had).

    A Dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (to give memory
    back to the system). Setting any glibc threshold freezes its sliding mmap threshold at
    128 KiB, so every array above 128 KiB is mapped, faulted in page by page and unmapped
    afresh: a 16,384-GPU candidate's ECMP bracket took 9.7 s of CPU so, 4.8-5.1 s in a
    plain process. This sets the two thresholds glibc's own sliding rule reaches (``mallopt``
    on glibc; nothing elsewhere, or without that variable unless ``always``).

    A worker of the command's own process pool (:func:`~fabricopt.study.local_pool.process_pool`)
    sets them ``always`` as it starts: with glibc's sliding thresholds a row still gave pages
    back at the heap's top and faulted them in again (the 24,576-GPU Meta row: 65,000-80,000
    page faults and 0.14-0.2 s of system CPU a row; with the thresholds set from the start,
    half the faults and half that system time). The process is the pool's, so the heap it
    keeps (up to :data:`TRIM_THRESHOLD` free at its top) is nobody else's memory; its peak
    is larger (one worker through the 23 rows of ``compare topologies/``: 458 MB, 412 MB
    with glibc's sliding thresholds).

    >>> isinstance(roomy_heap(), bool)
    True
    """
    if _heap_set or not (always or "MALLOC_TRIM_THRESHOLD_" in os.environ):
        return bool(_heap_set)
    _heap_set.append(True)  # tried once, whatever comes of it
    try:
        libc = _glibc()
        m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
        return bool(libc.mallopt(m_mmap_threshold, MMAP_THRESHOLD)
                    and libc.mallopt(m_trim_threshold, TRIM_THRESHOLD))
    except (OSError, AttributeError):  # not glibc: its allocator is not the one frozen
        return False


@contextlib.contextmanager
def limit_threads(threads: int = 1) -> Iterator[None]:
    """Cap BLAS/OpenMP pools (and HiGHS, through them) at ``threads`` while the block runs.

    Sets :data:`THREAD_ENV` for libraries loaded inside the block, and resizes the pools
    already loaded (``threadpoolctl``). The environment is restored afterwards. Every task
    on an executor runs inside it, so it also gives a Dask worker its heap back
    (:func:`roomy_heap`).

    >>> import os
    >>> with limit_threads(1):
    ...     os.environ["OMP_NUM_THREADS"]
    '1'
    """
    from threadpoolctl import threadpool_limits

    roomy_heap()
    saved = {name: os.environ.get(name) for name in THREAD_ENV}
    os.environ.update({name: str(threads) for name in THREAD_ENV})
    try:
        with threadpool_limits(threads):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_for_workers(executor: Any) -> bool:
    """Load in this process, once, what a row loads on its first use, before ``executor``
    (a process pool) forks its workers: each then finds it loaded (the pages are shared)
    instead of loading it on its first row. True when it did (a process pool).

    That is the LP solver's modules, the bisection's stages (loaded on a first bisection),
    the memory probe (``psutil``, where installed) and the default catalog's data: 0.05 s of
    CPU here, where each worker's first heavy row paid it. A Dask executor's workers are
    other processes: nothing is loaded for them.

    >>> load_for_workers(None)
    False
    """
    if not isinstance(executor, cf.ProcessPoolExecutor):
        return False
    # Loaded by name: a preload for the workers, not a use (the bisection's stages load
    # lazily in the package, and `import fabricopt` should not pay for them).
    for module in ("scipy.optimize", "fabricopt.analysis.bisection_plan"):
        importlib.import_module(module)
    for optional in ("psutil", "highspy"):
        with contextlib.suppress(ImportError):
            importlib.import_module(optional)
    Catalog.default()
    return True


def check_executor(func: str, executor: Any) -> cf.Executor | None:
    """``executor`` if it is None or a :class:`concurrent.futures.Executor`, else an error."""
    if executor is not None and not isinstance(executor, cf.Executor):
        raise fail(func, "executor", "a concurrent.futures.Executor or None",
                   type(executor).__name__)
    return executor


def check_progress(func: str, progress: Any) -> bool | Callable[[int, int], Any] | None:
    """``progress`` if it is None, a bool or a function ``progress(done, total)``."""
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise fail(func, "progress", "None, True, False or a function progress(done, total)",
                   progress)
    return progress


class Progress:
    """Reports finished tasks: a bar on stderr, a callback, or nothing (see the module).

    >>> seen = []
    >>> p = Progress(lambda done, total: seen.append((done, total)), "demo", total=2)
    >>> p.advance("a"); p.advance("b"); p.close()
    >>> seen
    [(1, 2), (2, 2)]
    """

    def __init__(self, progress: bool | Callable[[int, int], Any] | None, desc: str,
                 total: int, initial: int = 0, unit: str = "design") -> None:
        self.total, self.done = total, initial
        self.callback = progress if callable(progress) and not isinstance(progress, bool) \
            else None
        self.bar = None if self.callback else progress_bar(
            progress, desc=desc, unit=unit, total=total, initial=initial)
        self.line: Any = None

    def watched(self, work: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``work`` with the stages of each task shown on a line under the bar (for tasks
        run in this process; ``work`` itself when no bar is shown)."""
        if self.bar is None:
            return work
        line = self.line = self.line or stage_status(True, position=1)
        if line is None:
            return work

        def watched_work(task: Any) -> Any:
            with listening(line):
                return work(task)

        return watched_work

    def advance(self, label: str = "", count: int = 1) -> None:
        self.done += count
        if self.bar is not None:
            self.bar.set_postfix_str(str(label)[:40])
            self.bar.update(count)
        if self.callback is not None:
            self.callback(self.done, self.total)

    def close(self) -> None:
        if self.line is not None:
            self.line.close()
        if self.bar is not None:
            self.bar.close()


def worker_count(executor: cf.Executor) -> int:
    """Tasks an executor runs at once: a pool's workers, a Dask client's threads, else 2."""
    count = getattr(executor, "_max_workers", None)
    client = getattr(executor, "_client", None)
    if count is None and client is not None:
        try:
            count = sum(client.nthreads().values())
        except Exception:  # noqa: BLE001 - a client that cannot say: the default
            count = None
    return max(int(count or 2), 1)


def run(tasks: Iterable[Any], work: Callable[[Any], Any], finish: Callable[[Any, Any], None],
        *, executor: cf.Executor | None = None, window: int | None = None,
        admit: Callable[[Any], Any] | None = None,
        lost: Callable[[Any, BaseException], Any] | None = None) -> None:
    """Run ``work(task)`` for every task and hand each result to ``finish(task, result)``.

    Parameters
    ----------
    tasks : iterable
        What to run, in order.
    work : callable
        Module-level (it pickles), run in this process or on the executor.
    finish : callable
        Called in this process as each result comes in (in task order without an executor,
        in finishing order with one).
    executor : concurrent.futures.Executor, optional
        Where ``work`` runs; None runs it here.
    window : int, optional
        With an executor, at most this many tasks in flight (default: all at once). A
        window lets each finished task change what is sent next, through ``admit``.
    admit : callable, optional
        ``admit(task)`` just before a task is sent: a falsy return skips it, anything else
        is the task to send (so the caller may trim it).
    lost : callable, optional
        ``lost(task, exc)`` gives the result of a task whose worker raised (a worker that
        died, not a design that failed: ``work`` turns those into results itself); without
        it the exception propagates.

    On an interrupt or an error, tasks not yet started are cancelled; results already handed
    to ``finish`` stay with the caller.

    >>> out = []
    >>> run([1, 2, 3], abs, lambda t, r: out.append(r), admit=lambda t: t != 2 and t)
    >>> out
    [1, 3]
    """
    queue = list(tasks)
    if executor is None:
        for task in queue:
            task = admit(task) if admit is not None else task
            if task:
                finish(task, work(task))
        return
    limit = window if window is not None else max(len(queue), 1)
    pending: dict[cf.Future, Any] = {}
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                task = queue.pop(0)
                task = admit(task) if admit is not None else task
                if task:
                    pending[executor.submit(work, task)] = task
            if not pending:
                continue
            done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                try:
                    result = future.result()
                except Exception as exc:
                    if lost is None:
                        raise
                    result = lost(task, exc)
                finish(task, result)
    finally:
        for future in pending:
            future.cancel()  # after an interrupt, start nothing new
