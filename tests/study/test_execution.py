"""How a batch reaches an executor: the heap a Dask worker is given back, and optimize's tasks
(one topology each, priced and solved as tasks of their own)."""

import concurrent.futures as cf
import importlib

import fabricopt as fo

execution = importlib.import_module("fabricopt.study.execution")

# The small space of tests/study/test_optimize.py: rail and Clos clusters of 2-GPU domains.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized", "clos"], "scale_up": [DOMAIN], "leaf_radix": [4, 8],
         "oversubscription": [1.0, 2.0, 3.0], "policy": ["cost", "lpo"]}


class _Libc:
    def __init__(self):
        self.calls = []

    def mallopt(self, option, value):
        self.calls.append((option, value))
        return 1


def test_a_dask_worker_gets_glibc_heap_back(monkeypatch):
    libc = _Libc()
    monkeypatch.setattr(execution, "_glibc", lambda: libc)
    monkeypatch.setattr(execution, "_heap_set", [])
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert execution.roomy_heap() is False and libc.calls == []  # glibc slides its own
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # what a Dask nanny sets
    with execution.limit_threads(1):
        pass
    # M_MMAP_THRESHOLD is -3 and M_TRIM_THRESHOLD -1 in glibc's malloc.h; 32 MiB is its
    # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit (4 MiB x 8) and the trim threshold twice that.
    assert libc.calls == [(-3, 32 * 2**20), (-1, 64 * 2**20)]
    with execution.limit_threads(1):
        pass
    assert len(libc.calls) == 2  # once per process


def test_optimize_sends_one_topology_and_one_step_per_task(monkeypatch):
    # On an executor each task is the pricing, the solve, or both of one topology (its
    # candidates differ only in optics policy: one build), never two topologies' work; a
    # topology is priced once (alone or with its solve) and solved at most once; and the
    # rows are one process's.
    from fabricopt.study.search import GroupTask

    sent: list[GroupTask] = []

    class Recording(cf.Executor):
        _max_workers = 2

        def submit(self, fn, /, *args, **kwargs):
            sent.append(args[0])
            future = cf.Future()
            future.set_result(fn(*args, **kwargs))
            return future

    constraints = {"all_to_all_gbps_per_gpu": 300}
    alone = fo.optimize(16, space=SPACE, constraints=constraints)
    shared = fo.optimize(16, space=SPACE, constraints=constraints, executor=Recording())

    def rows(res):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in res.rows]

    assert rows(shared) == rows(alone)
    assert sent and all(t.stage in ("both", "price", "solve") and t.cap_threads for t in sent)
    # The first undecided topology is priced and solved in one task (one build), others
    # priced ahead by the free worker (and solved on their own once needed).
    assert {"both", "price"} <= {t.stage for t in sent}
    topologies = [{c.name.rsplit(" ", 1)[0] for c in t.candidates} for t in sent]
    assert all(len(names) == 1 for names in topologies)  # the name less its policy
    steps = [(t.candidates[0].name.rsplit(" ", 1)[0], t.stage) for t in sent]
    assert len(steps) == len(set(steps))
    priced = [name for name, stage in steps if stage in ("price", "both")]
    assert len(priced) == len(set(priced))
    solved = {name for name, stage in steps if stage in ("solve", "both")}
    assert {name for name, stage in steps if stage == "solve"} <= set(priced)
    # Two policies per topology: a priced task holds both, and the rows of a solved
    # topology are evaluated (the solve was needed), of a priced-only one not.
    assert all(len(t.candidates) == 2 for t in sent if t.stage == "price")
    outcome = {r["name"].rsplit(" ", 1)[0]: r["outcome"] for r in shared.rows
               if r.get("capex_usd") is not None}
    assert {n for n, o in outcome.items() if o == "evaluated"} <= solved


def test_workers_of_a_process_pool_find_what_a_row_loads_already_loaded():
    # In a fresh interpreter (this one may have loaded them through other tests): a worker
    # forked after load_for_workers has the bisection's stages, the LP solver's modules and
    # the default catalog before its first row; one forked before it would not.
    import subprocess
    import sys

    code = (
        "import concurrent.futures as cf, multiprocessing as mp, sys\n"
        "import fabricopt.study.compare\n"
        "from fabricopt.study.execution import load_for_workers\n"
        "def loaded():\n"
        "    from fabricopt.catalog import _default_data\n"
        "    return ('fabricopt.analysis.bisection_plan' in sys.modules,\n"
        "            'scipy.optimize' in sys.modules, _default_data.cache_info().currsize)\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('fork')\n"
        "    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:\n"
        "        before = pool.submit(loaded).result()\n"
        "    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:\n"
        "        print(before, load_for_workers(pool), pool.submit(loaded).result())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "(False, False, 0) True (True, True, 1)"


def test_compare_loads_for_a_process_pool_only(monkeypatch):
    compare_module = importlib.import_module("fabricopt.study.compare")
    seen = []
    monkeypatch.setattr(compare_module, "load_for_workers",
                        lambda executor: seen.append(executor))
    with cf.ThreadPoolExecutor(1) as pool:
        fo.compare([fo.ring(4)], metrics=["summary"], executor=pool, progress=False)
    fo.compare([fo.ring(4)], metrics=["summary"], progress=False)  # in this process
    assert seen == [pool]
    assert execution.load_for_workers(pool) is False  # threads share this process already
    assert execution.load_for_workers(None) is False
