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


def _least_by_searching_each(cuts, pairs, below):
    """PairCuts.least as its docstring defines it: one search per pair, in order."""
    best, side = below, None
    for a, b in pairs:
        cut = cuts.cut(a, b, below=best)
        if cut is not None and cut.capacity < best:
            best, side = cut.capacity, cut.side
    return best, side


def _uneven_servers():
    """Three servers of two GPUs; server b's switch reaches the core at 3 Gb/s out and
    1 back, server c's at 2 both ways: cuts differ by pair and by direction."""
    import networkx as nx

    g = nx.DiGraph()
    for gpu, sw in (("a0", "sa"), ("a1", "sa"), ("b0", "sb"), ("b1", "sb"), ("c0", "sc"),
                    ("c1", "sc")):
        g.add_node(gpu, role="gpu")
        g.add_node(sw, role="switch")
        g.add_edge(gpu, sw, capacity=4.0)
        g.add_edge(sw, gpu, capacity=4.0)
    g.add_node("core", role="switch")
    for sw, out, back in (("sa", 8.0, 8.0), ("sb", 3.0, 1.0), ("sc", 2.0, 2.0)):
        g.add_edge(sw, "core", capacity=out)
        g.add_edge("core", sw, capacity=back)
    return fo.Fabric(g, ["a0", "a1", "b0", "b1", "c0", "c1"], name="uneven3")


LEAST = [lambda: fo.cluster("dgx_h100", 3, "clos", radix=8), lambda: fo.superpod(1),
         lambda: fo.fat_tree(4), lambda: fo.jellyfish(12, 4, 2, seed=1), _uneven_servers]


@pytest.mark.parametrize("make", LEAST)
def test_least_is_the_first_least_cut_of_one_search_per_pair(make):
    # PairCuts.least skips the pairs a flow read off the graph (two_hop) or a chain of
    # cuts bounds; its answer must be the pair-by-pair search's: the same capacity and the
    # same side (the first pair in order with the least cut), in both directions, with the
    # pairs in shuffled orders and below the least cut, at it and above every cut.
    fab = make()
    ga = GraphArrays.from_fabric(fab)
    idx = [ga.index[e] for e in fab.endpoints]
    egress = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    cuts = PairCuts(ga, float(egress.max()))
    assert cuts.exact
    rng = np.random.default_rng(3)
    pairs = list(itertools.permutations(idx, 2))
    for trial in range(4):
        chosen = [pairs[i] for i in rng.permutation(len(pairs))[:40]]
        if trial == 0:  # the pair_cut_min shape: one root, both directions
            chosen = [p for v in idx[1:24] for p in ((idx[0], v), (v, idx[0]))]
        least = min(cuts.cut(a, b).capacity for a, b in chosen)
        for below in (float(egress[idx].min()), least, least * 1.5, np.inf):
            want = _least_by_searching_each(cuts, chosen, below)
            got = cuts.least(chosen, below)
            assert got[0] == want[0]
            assert (got[1] is None) == (want[1] is None)
            if got[1] is not None:
                assert np.array_equal(got[1], want[1])


@pytest.mark.parametrize("make", LEAST)
def test_two_hop_is_a_flow_no_more_than_the_maximum(make):
    # Certificate: T[i, j] is the value of paths of one or two arcs that share no arc, so
    # no more than the max-flow (max-flow min-cut), and exactly it where a pair's least
    # cut is one of those paths' arcs (checked by hand on the uneven servers below).
    fab = make()
    ga = GraphArrays.from_fabric(fab)
    nodes = np.array(sorted(ga.index[e] for e in fab.endpoints)[:12])
    cuts = PairCuts(ga, 1e6)
    hop = cuts.two_hop(nodes)
    assert (np.diag(hop) == 0).all()
    for i, a in enumerate(nodes.tolist()):
        for j, b in enumerate(nodes.tolist()):
            if i != j:
                assert 0 <= hop[i, j] <= maximum_flow(cuts.graph, a, b).flow_value


def test_two_hop_on_uneven_servers():
    fab = _uneven_servers()
    ga = GraphArrays.from_fabric(fab)
    cuts = PairCuts(ga, 1e6)
    names = ["a0", "a1", "b0"]
    hop = cuts.two_hop(np.array([ga.index[x] for x in names]))
    # a0 -> sa -> a1: min(4, 4) = 4 Gb/s (unit 1 Gb/s); a0 and b0 share no neighbour: 0.
    assert cuts.unit == 1.0
    assert hop.tolist() == [[0, 4, 0], [4, 0, 0], [0, 0, 0]]


def test_least_searches_an_earlier_pair_whose_bound_ties_the_least():
    # r -> s1 (3) -> x (2), s1 -> s2 (3) -> y (2): both least cuts are 2 Gb/s, on different
    # sides ({r, s1, s2, y} for x, {r, s1, s2, x} for y: what the residual graph reaches).
    # y has no bound (no neighbour in common with r) and is searched first; x's path bound
    # is 2, which ties the least and only a search settles. x comes first in order, so the
    # answer is x's cut, as one search per pair finds it.
    import networkx as nx

    g = nx.DiGraph()
    for name in ("r", "x", "y"):
        g.add_node(name, role="gpu")
    for name in ("s1", "s2"):
        g.add_node(name, role="switch")
    for u, v, c in (("r", "s1", 3.0), ("s1", "x", 2.0), ("s1", "s2", 3.0), ("s2", "y", 2.0)):
        g.add_edge(u, v, capacity=c)
    fab = fo.Fabric(g, ["r", "x", "y"], name="tie")
    ga = GraphArrays.from_fabric(fab)
    r, x, y = (ga.index[n] for n in ("r", "x", "y"))
    cuts = PairCuts(ga, 10.0)
    assert cuts.two_hop(np.array([r, x, y]))[0].tolist() == [0, 2, 0]
    value, side = cuts.least([(r, x), (r, y)], np.inf)
    assert value == 2.0 and side[y] and not side[x]
    assert np.array_equal(side, _least_by_searching_each(cuts, [(r, x), (r, y)], np.inf)[1])


@pytest.mark.parametrize("make", LEAST)
def test_near_flow_is_a_flow_no_more_than_the_maximum(make):
    # Certificate: a maximum flow on the nodes near a pair is a flow of the whole graph,
    # so at most its maximum flow (max-flow min-cut), and at least the two-hop flow, whose
    # paths it holds from radius 1 on.
    fab = make()
    ga = GraphArrays.from_fabric(fab)
    idx = sorted(ga.index[e] for e in fab.endpoints)[:10]
    cuts = PairCuts(ga, 1e6)
    hop = cuts.two_hop(np.array(idx))
    for i, a in enumerate(idx):
        for j, b in enumerate(idx):
            if i == j:
                continue
            whole = maximum_flow(cuts.graph, a, b).flow_value
            for radius in (1, 3):
                near = cuts.near_flow(a, b, radius)
                assert hop[i, j] <= near <= whole


def test_two_servers_meet_within_three_arcs():
    # GPU 0 of server 0 and of server 1 (DGX H100, NVLink switches, one rail leaf per GPU
    # index): through the other GPUs of each server and their rail leaves, the 8 x 400 Gb/s
    # NICs of a server carry 3,200 Gb/s, the pair's whole maximum flow, within 3 arcs.
    fab = SMALL[2]
    ga = GraphArrays.from_fabric(fab)
    cuts = PairCuts(ga, 1e6)
    a, b = ga.index[fab.endpoints[0]], ga.index[fab.endpoints[8]]
    assert cuts.near_flow(a, b) * cuts.unit == 3200.0
    assert maximum_flow(cuts.graph, a, b).flow_value * cuts.unit == 3200.0
