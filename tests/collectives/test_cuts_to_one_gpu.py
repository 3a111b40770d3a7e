"""ForestColl's cut search builds its graph once per search, every ratio on one layout
(collectives/problem.py, _CutsToOneGpu): every cut it returns must be the one min_cut
returns, which builds the graph anew for every GPU.

Why they agree: both searches run a maximum flow on the same integer capacities (the same
known cut sets the same scale), and the nodes the super-source reaches in the residual
graph of a maximum flow are the same for every maximum flow; arcs of capacity 0 (the unused
source and sink arcs of the shared layout) join no residual graph.
"""

import random

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.cuts import min_cut
from fabricopt.collectives import problem as P
from fabricopt.graph_arrays import GraphArrays


def _odd_capacities(fab, seed=1):
    """Capacities off any common grid: min_cut's rounded (not exact) integer scale."""
    rnd = random.Random(seed)
    for _, _, d in fab.graph.edges(data=True):
        d["capacity"] = d["capacity"] * (1 + rnd.random() / 3)
    return fab


CASES = [(fo.ring(6), slice(None)), (fo.fat_tree(4), slice(None, None, 3)),
         (fo.superpod(1), slice(None, 8)), (fo.superpod(1), slice(None, None, 8)),
         (fo.superpod(1).without(links={("r0.l0", "s0"): 1}), slice(None, None, 8)),
         (_odd_capacities(fo.fat_tree(4)), slice(None, 7))]


@pytest.mark.parametrize("fab, pick", CASES, ids=lambda c: getattr(c, "name", ""))
def test_every_cut_is_min_cuts(fab, pick):
    ga = GraphArrays.from_fabric(fab)
    gpus = np.array([ga.index[e] for e in fab.endpoints[pick]])
    # Two ratios: the least-egress GPU's (where the search starts) and a larger one, the
    # second on the first's layout (as the search's later steps take it).
    shared = None
    for lam in (1.0 / 400, 0.0371846):
        shared = P._CutsToOneGpu(ga, gpus, lam, shared)
        for w in gpus:
            others = gpus[gpus != w]
            want = min_cut(ga, others, np.array([w]),
                           source_caps=np.full(len(others), 1.0 / lam))
            got = shared.cut(int(w))
            assert np.array_equal(got.side, want.side)
            assert got.capacity == want.capacity and got.exact_search == want.exact_search
            assert np.array_equal(got.arcs, want.arcs)


def test_forestcoll_ratio_as_with_min_cut(monkeypatch):
    """The whole search: the same ratio, set and proof with the shared graph as without."""
    fab = fo.superpod(1)
    p = P.collective_problem(fab, list(fab.endpoints[::5]))
    fast = P.forestcoll_ratio(p)
    monkeypatch.setattr(P, "_CutsToOneGpu", lambda *args: None)  # min_cut for every GPU
    slow = P.forestcoll_ratio(p)
    assert fast[0] == slow[0] and fast[2] == slow[2]
    assert np.array_equal(fast[1], slow[1])


def _one_way(fab):
    """``fab`` with one link's capacity doubled in one direction: no longer reversible."""
    u, v = next((u, v) for u, v in fab.graph.edges() if fab.endpoints[0] in (u, v))
    fab.graph[u][v]["capacity"] *= 2
    return fab


@pytest.mark.parametrize("make, reversible", [
    (lambda: fo.superpod(1), True), (lambda: fo.fat_tree(4), True),
    (lambda: _one_way(fo.fat_tree(4)), False)])
def test_all_reduce_searches_the_reversed_graph_only_when_it_differs(monkeypatch, make,
                                                                      reversible):
    # A set of a reversible graph sends out what it takes in: the reversed graph's ForestColl
    # ratio is the same, so all-reduce searches once and its reduce-scatter bound is the
    # all-gather's (same time, same cut read entering). The reversed search, run here anyway,
    # finds that ratio (each arc's reverse has its capacity); with one arc doubled one way
    # the graph is not reversible and both searches run.
    fab = make()
    p = P.collective_problem(fab, list(fab.endpoints))
    assert P.reversible_arcs(p.ga) is reversible
    forward, backward = P.forestcoll_ratio(p), P.forestcoll_ratio(P.reversed_problem(p))
    if reversible:
        assert backward[0] == pytest.approx(forward[0], rel=1e-12)
    searches = []
    real = P.forestcoll_ratio

    def counted(problem, *args, **kwargs):
        searches.append(problem)
        return real(problem, *args, **kwargs)

    from fabricopt.collectives import schemes
    monkeypatch.setattr(schemes, "forestcoll_ratio", counted)
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    assert len(searches) == (1 if reversible else 2)
    by_name = {b.name: b for b in c.bounds}
    rs, ag = by_name["reduce-scatter optimum"], by_name["all-gather optimum"]
    if reversible:
        assert rs.time_s == ag.time_s and rs.cut.direction == "entering"
        assert rs.cut.capacity_gbps == pytest.approx(ag.cut.capacity_gbps, rel=1e-12)
