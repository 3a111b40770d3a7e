"""A worker of the command's own process pool keeps its heap between rows: it sets glibc's
thresholds as it starts (study.execution.roomy_heap), before any row, where a plain pool's
worker leaves glibc's sliding thresholds alone."""

import concurrent.futures as cf
import importlib
import multiprocessing

import pytest

from fabricopt.study.local_pool import process_pool

execution = importlib.import_module("fabricopt.study.execution")

pytestmark = pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                                reason="the recording allocator reaches workers by fork")


class _Libc:
    def __init__(self):
        self.calls = []

    def mallopt(self, option, value):
        self.calls.append((option, value))
        return 1


def _calls_in_worker():
    """What the worker asked of the allocator before this task (its initializer's)."""
    return list(execution._glibc().calls)


@pytest.fixture
def recording(monkeypatch):
    libc = _Libc()
    monkeypatch.setattr(execution, "_glibc", lambda: libc)
    monkeypatch.setattr(execution, "_heap_set", [])
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # not a Dask worker
    return libc


def test_a_pool_worker_sets_the_heap_thresholds_before_its_first_row(recording):
    with process_pool(1) as pool:
        calls = pool.submit(_calls_in_worker).result()
    # M_MMAP_THRESHOLD is -3 and M_TRIM_THRESHOLD -1 in glibc's malloc.h; 32 MiB is its
    # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit (4 MiB x 8) and the trim threshold twice that.
    assert calls == [(-3, 32 * 2**20), (-1, 64 * 2**20)]
    assert recording.calls == []  # the command's own process is left as it was


def test_a_plain_pool_worker_and_this_process_leave_the_heap_alone(recording):
    with cf.ProcessPoolExecutor(1) as pool:
        assert pool.submit(_calls_in_worker).result() == []
    assert execution.roomy_heap() is False and recording.calls == []
    # Asked for always (as the pool's workers ask), once per process.
    assert execution.roomy_heap(always=True) is True
    assert execution.roomy_heap(always=True) is True and len(recording.calls) == 2
