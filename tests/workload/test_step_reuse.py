"""What makes a failure sweep's steps fast keeps every number: the one-group bounds' cut
search on a shared graph (collectives/problem.py) gives a failed fabric's step exactly as
min_cut does, and the step's cache of a fabric's levels neither outlives the fabric nor
serves one whose links changed."""

import gc
import weakref

import pytest

import fabricopt as fo
from fabricopt.collectives import problem

JOB = fo.TrainingJob("llama3-70b", tp=8, pp=4, global_batch=512, seq_len=8192)


def _failures(fab):
    """A leaf-spine link, a spine switch and an NVLink bundle of the first server."""
    g = fab.graph
    tier = {t: next((u, v) for u, v, d in g.edges(data=True) if d.get("tier") == t)
            for t in ("leaf-spine", "gpu-nvswitch")}
    spine = tier["leaf-spine"][1]
    return [fab.without(links={tier["leaf-spine"]: 1}), fab.without(switches=[spine]),
            fab.without(links=[tier["gpu-nvswitch"]])]


@pytest.mark.slow
@pytest.mark.parametrize("units, which", [(1, 3), (4, 1)])  # superpod(4): the link only
def test_failed_steps_as_with_min_cut(units, which, monkeypatch):
    for failed in _failures(fo.superpod(units))[:which]:
        fast = fo.training_step(failed, JOB)
        with monkeypatch.context() as m:
            m.setattr(problem, "_CutsToOneGpu", lambda *args: None)  # min_cut per GPU
            fresh = failed.without(links={})  # a new fabric: nothing cached for it
            slow = fo.training_step(fresh, JOB)
        assert fast.step_s == slow.step_s and fast.step_s_lower == slow.step_s_lower
        for d, p in fast.phases.items():
            assert (p.lower_s, p.expected_s, p.binding_tier) == \
                (slow.phases[d].lower_s, slow.phases[d].expected_s, slow.phases[d].binding_tier)


def test_levels_cache_lets_the_fabric_go_and_sees_edits():
    fab = fo.superpod(1)
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=256, seq_len=8192)
    first = fo.training_step(fab, job)
    assert fo.training_step(fab, job).step_s == first.step_s  # from the cache
    # Halving every leaf-spine link's capacity is seen (the stamp sums the capacities).
    for _, _, d in fab.graph.edges(data=True):
        if d.get("tier") == "leaf-spine":
            d["capacity"] /= 2
    assert fo.training_step(fab, job).step_s_lower >= first.step_s_lower
    gone = weakref.ref(fab)
    del fab
    gc.collect()
    assert gone() is None  # the cache kept no reference to the fabric
