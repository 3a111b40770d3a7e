"""PairCuts (one integer graph for many single-node cuts) against min_cut, which builds its
graph anew for every pair, and pair_cut_min against every GPU pair.

Why they agree: capping an arc above ``limit`` (no pair's cut exceeds it) only changes cuts
that already exceed the minimum, so the minimum cuts, and the one reachable from the source
in the residual graph, are the same (analysis/cuts.py, PairCuts).
"""

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import maximum_flow

import fabricopt as fo
from fabricopt.analysis.cuts import PairCuts, cut_capacity, min_cut
from fabricopt.collectives.problem import collective_problem, pair_cut_min
from fabricopt.graph_arrays import GraphArrays

SMALL = [fo.ring(5), fo.leaf_spine(2, 2, 3), fo.cluster("dgx_h100", 2, "clos", radix=8)]


def _endpoint_pairs(fab, ga, most=40):
    idx = [ga.index[e] for e in fab.endpoints]
    return list(itertools.permutations(idx, 2))[:most]


@pytest.mark.parametrize("fab", SMALL, ids=lambda f: f.name)
def test_the_same_cut_as_min_cut_for_every_pair(fab):
    ga = GraphArrays.from_fabric(fab)
    egress = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    cuts = PairCuts(ga, float(egress.max()))  # no cut out of one node exceeds its egress
    assert cuts.exact  # whole multiples of one unit: the search is exact
    for a, b in _endpoint_pairs(fab, ga):
        ref = min_cut(ga, np.array([a]), np.array([b]))
        got = cuts.cut(a, b)
        assert np.array_equal(got.side, ref.side)
        assert got.capacity == ref.capacity
        # Certificate: a set holding a and not b, whose arcs out add up to the capacity,
        # which the max-flow meets (max-flow min-cut).
        assert got.side[a] and not got.side[b]
        assert cut_capacity(ga, got.side)[0] == got.capacity
        flow = maximum_flow(cuts.graph, a, b).flow_value * cuts.unit
        assert flow == pytest.approx(got.capacity, rel=1e-12)


def test_below_skips_exactly_the_cuts_that_cannot_improve():
    fab = SMALL[2]
    ga = GraphArrays.from_fabric(fab)
    cuts = PairCuts(ga, 1e6)
    for a, b in _endpoint_pairs(fab, ga, most=20):
        value = min_cut(ga, np.array([a]), np.array([b])).capacity
        # Equal is not below: the caller keeps the cut it has.
        assert cuts.cut(a, b, below=value) is None
        assert cuts.cut(a, b, below=value * 1.01).capacity == value


def test_capacities_off_a_common_grid_fall_back_to_min_cut():
    fab = fo.ring(4)
    for u, v in fab.graph.edges:
        fab.graph[u][v]["capacity"] = 1.0 / 3.0  # no whole unit on the 1e-6 grid
    ga = GraphArrays.from_fabric(fab)
    cuts = PairCuts(ga, 10.0)
    assert not cuts.exact and cuts.graph is None
    a, b = ga.index[fab.endpoints[0]], ga.index[fab.endpoints[2]]
    ref = min_cut(ga, np.array([a]), np.array([b]))
    got = cuts.cut(a, b)
    assert np.array_equal(got.side, ref.side) and got.capacity == ref.capacity


def _pair_cut_min_by_min_cut(p, root):
    """pair_cut_min as it was: min_cut per pair (every GPU: limit above their number)."""
    ga, gpus = p.ga, p.gpus
    egress = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)[gpus]
    ingress = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)[gpus]
    best, side = float(min(egress.min(), ingress.min())), None
    for v in gpus[gpus != root]:
        for a, b in ((root, v), (v, root)):
            cut = min_cut(ga, np.array([a]), np.array([b]))
            if cut.capacity < best:
                best, side = cut.capacity, cut.side
    return best, side


@pytest.mark.parametrize("fab", SMALL, ids=lambda f: f.name)
def test_pair_cut_min_is_the_least_cut_between_any_two_gpus(fab):
    p = collective_problem(fab, fab.endpoints)
    root = int(p.gpus[0])
    value, side = pair_cut_min(p, root, limit=len(p.gpus))
    ref_value, ref_side = _pair_cut_min_by_min_cut(p, root)
    assert value == ref_value
    assert (side is None) == (ref_side is None)
    if side is not None:
        assert np.array_equal(side, ref_side)
    # Any cut between two GPUs x, y separates the root from one of them, so the least over
    # every pair is the least over pairs with the root (both directions).
    every = min(min_cut(p.ga, np.array([x]), np.array([y])).capacity
                for x, y in itertools.permutations(p.gpus.tolist(), 2))
    egress = np.bincount(p.ga.tail, weights=p.ga.capacity, minlength=p.ga.n_nodes)[p.gpus]
    assert value == min(every, float(egress.min()))


def test_two_servers_are_split_at_their_nics():
    # Two DGX H100 (8 GPUs, 18 NVLink4 links of 200 Gb/s each, 400 Gb/s NIC per GPU): a
    # server's NICs, 8 x 400 = 3,200 Gb/s, are less than one GPU's 18 x 200 + 400 = 4,000.
    fab = SMALL[2]
    p = collective_problem(fab, fab.endpoints)
    value, side = pair_cut_min(p, int(p.gpus[0]))
    assert value == 3200.0
    assert side is not None and int(side[p.gpus].sum()) == 8


def test_an_uneven_link_is_cut_in_both_directions():
    """Two servers of two GPUs (4 Gb/s each way to their switch) whose switches are joined
    by 3 Gb/s one way and 1 Gb/s back: from the root's server the least cut out is 3, into
    it 1. One direction is enough only where every arc's reverse has its capacity."""
    import networkx as nx

    g = nx.DiGraph()
    for gpu, sw in (("a0", "sa"), ("a1", "sa"), ("b0", "sb"), ("b1", "sb")):
        g.add_node(gpu, role="gpu")
        g.add_node(sw, role="switch")
        g.add_edge(gpu, sw, capacity=4.0)
        g.add_edge(sw, gpu, capacity=4.0)
    g.add_edge("sa", "sb", capacity=3.0)
    g.add_edge("sb", "sa", capacity=1.0)
    fab = fo.Fabric(g, ["a0", "a1", "b0", "b1"], name="uneven")
    p = collective_problem(fab, fab.endpoints)
    value, side = pair_cut_min(p, p.ga.index["a0"])
    assert value == 1.0  # sb -> sa: the cut leaving b's side
    assert side is not None and side[p.ga.index["b0"]] and not side[p.ga.index["a0"]]


def _off_grid(fab):
    """Capacities off any common grid: min_cut rounds them, so SplitCuts hands every split
    to it."""
    for i, (_, _, d) in enumerate(fab.graph.edges(data=True)):
        d["capacity"] = d["capacity"] * (1 + ((i * 7919) % 97) / 291)
    return fab


@pytest.mark.parametrize("make", [lambda: fo.fat_tree(4), lambda: fo.superpod(1),
                                  lambda: fo.jellyfish(12, 4, 2, seed=1),
                                  lambda: fo.leaf_spine(3, 2, 5, link_gbps=100.5),
                                  lambda: _off_grid(fo.fat_tree(4))])
def test_split_cuts_are_min_cuts(make):
    # SplitCuts lays the graph out once for every split; each of its cuts must be the one
    # min_cut returns (same side, capacity, arcs, exactness), both ways round: the source
    # side of a maximum flow's residual graph is the same for every maximum flow, and the
    # zero-capacity arcs of the layout join no residual graph.
    from fabricopt.analysis.cuts import SplitCuts

    fab = make()
    ga = GraphArrays.from_fabric(fab)
    ep = np.array([ga.index[e] for e in fab.endpoints])
    cuts = SplitCuts(ga, ep)
    rng = np.random.default_rng(5)
    for size in (1, len(ep) // 2, len(ep) - 1):
        mask = np.zeros(len(ep), dtype=bool)
        mask[rng.permutation(len(ep))[:size]] = True
        for m in (mask, ~mask):
            want, got = min_cut(ga, ep[m], ep[~m]), cuts.cut(m)
            assert np.array_equal(got.side, want.side) and got.capacity == want.capacity
            assert np.array_equal(got.arcs, want.arcs)
            assert got.exact_search == want.exact_search
