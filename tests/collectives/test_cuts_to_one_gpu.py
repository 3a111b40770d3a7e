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
