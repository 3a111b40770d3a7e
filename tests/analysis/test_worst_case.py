"""Worst-case permutation: the certified bracket contains the true minimum over permutations."""

import itertools

import networkx as nx
import pytest

import fabricopt as fo


def derangements(items):
    for perm in itertools.permutations(items):
        if all(a != b for a, b in zip(items, perm, strict=True)):
            yield perm


def brute_force_worst(fab):
    """min over every derangement of the exact LP theta (small fabrics only)."""
    eps = fab.endpoints
    return min(
        fo.max_concurrent_flow(fab, fo.Traffic({(s, t): 1.0 for s, t in zip(eps, p,
                                                                             strict=True)}),
                               method="lp").theta
        for p in derangements(eps))


def test_fat_tree_guarantees_every_permutation_at_full_rate():
    # Al-Fares et al. (SIGCOMM 2008): a k-ary fat-tree routes any permutation at the full
    # link rate. The hose rate through the cores proves theta >= 1 for 400 Gb/s pairs on
    # 400 Gb/s links, and any single permutation is capped by its NIC link at theta <= 1.
    w = fo.worst_case_permutation(fo.fat_tree(4), gbps=400)
    assert w.lower == pytest.approx(1.0, rel=1e-9) and w.exact
    assert w.per_endpoint_gbps == pytest.approx(400.0, rel=1e-9)
    assert w.pattern_result.status == "optimal"


def test_ring_worst_case_is_the_antipodal_matching():
    # Ring C_8 with unit links: TUB pairs each node with its antipode (4 hops), so
    # theta <= 16 arcs / (8 pairs x 4 hops) = 0.5; the antipodal permutation, split half
    # each way round, uses 8 x 4 x 0.5 = 16 arc units, all the capacity, so it routes at
    # exactly 0.5, and the two-phase rate proves no permutation does worse.
    w = fo.worst_case_permutation(fo.ring(8))
    assert w.tub_upper == pytest.approx(0.5, rel=1e-9)
    assert w.lower == pytest.approx(0.5, rel=1e-9) and w.upper == pytest.approx(0.5, rel=1e-9)
    assert all(abs(fo.ring(8).endpoints.index(s) - fo.ring(8).endpoints.index(t)) == 4
               for s, t in w.pattern.pairs)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bracket_contains_the_brute_force_worst_case(seed):
    # No closed form: the bracket must contain min over all 265 derangements of 6 endpoints.
    g = nx.random_regular_graph(3, 6, seed=seed)
    fab = fo.from_networkx(g, default_capacity=1.0)
    truth = brute_force_worst(fab)
    w = fo.worst_case_permutation(fab)
    assert w.lower <= truth * (1 + 1e-7)
    assert truth <= w.upper * (1 + 1e-7)
    assert truth <= w.tub_upper * (1 + 1e-7)
    # The pattern's own bracket is certified on the fabric.
    assert fo.check_certificate(fab, w.pattern_result, w.pattern).ok


def test_each_step_never_raises_the_upper_bound():
    # Lengths that prove theta(pi) also bound the next pattern (it maximises their distance
    # sum), so exact solves of successive patterns never increase.
    fab = fo.jellyfish(switches=16, network_ports=4, endpoints_per_switch=2, seed=1,
                       link_gbps=1.0)
    w = fo.worst_case_permutation(fab, iterations=4)
    uppers = [u for _, u in w.tried]
    assert all(b <= a * (1 + 1e-7) for a, b in zip(uppers, uppers[1:], strict=False))
    assert w.lower <= w.upper <= w.tub_upper * (1 + 1e-9)


@pytest.mark.parametrize("kwargs, words", [
    ({"gbps": 0}, "gbps"), ({"iterations": 0}, "iterations"),
    ({"endpoints": ["n0", "n0"]}, "repeat"),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(fo.InvalidParameterError, match=words):
        fo.worst_case_permutation(fo.ring(4), **kwargs)


def test_the_pattern_across_the_bisection_cut_is_tried():
    # 8 servers of 2 GPUs on radix-8 rail leaves at 3:1 (16 GPUs): the longest matching stays
    # inside cheap paths (theta 1 at 400 Gb/s), but the best bisection cut carries 1,600 Gb/s
    # one way, so a permutation sending all 16 GPUs across it gets at most 2 x 1,600 / 16 =
    # 200 Gb/s each: theta 0.5. The hose rate proves 200 Gb/s for any traffic: exact.
    dom = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
           "link_gbps": 200}
    fab = fo.cluster(dom, nodes=8, scale_out="rail_optimized", leaf_radix=8,
                     oversubscription=3.0)
    cut = fo.bisection_bandwidth(fab).upper_gbps
    w = fo.worst_case_permutation(fab, gbps=400)
    assert w.upper * 400 <= 2 * cut / 16 * (1 + 1e-9)
    assert w.exact and w.upper == pytest.approx(0.5)
    assert fo.check_certificate(fab, w.pattern_result, w.pattern).ok


def _recorded(monkeypatch, cut=(), bare=False):
    """Record the time limit each solve of the search is given; patterns numbered in
    ``cut`` report status time_limit (their certified bracket unchanged; ``bare``: without
    a certificate, hence no dual lengths, as a solve stopped early may return)."""
    import dataclasses

    import fabricopt.analysis.worst_case as wc

    given = {"rate": [], "patterns": []}
    solve, rate = wc.max_concurrent_flow, wc.valiant_rate

    def counted_solve(*args, time_limit=None, **kwargs):
        given["patterns"].append(time_limit)
        given.setdefault("traffic", []).append(args[1])
        r = solve(*args, time_limit=time_limit, **kwargs)
        if len(given["patterns"]) not in cut:
            return r
        return dataclasses.replace(r, status="time_limit",
                                   **({"certificate": None} if bare else {}))

    def counted_rate(*args, time_limit=None, **kwargs):
        given["rate"].append(time_limit)
        return rate(*args, time_limit=time_limit, **kwargs)

    monkeypatch.setattr(wc, "max_concurrent_flow", counted_solve)
    monkeypatch.setattr(wc, "valiant_rate", counted_rate)
    return given


def test_the_time_limit_is_the_whole_searchs_split_across_its_solves(monkeypatch):
    # 60 s for the whole search of 4 patterns: 6 solves with the rate and the bisection. The
    # rate, the search's only lower end, has first claim on half: at most 30 s, never the
    # whole 60 s each solve had before (the jellyfish of the test above takes 4 patterns).
    import fabricopt.analysis.worst_case as wc

    given = _recorded(monkeypatch, cut={2})
    fab = fo.jellyfish(switches=16, network_ports=4, endpoints_per_switch=2, seed=1,
                       link_gbps=1.0)
    w = fo.worst_case_permutation(fab, iterations=4, time_limit=60)
    assert 0 < given["rate"][0] <= 60 * wc.HOSE_PART
    # Pattern k (from 0) gets what is left over the 4 - k solves to come: at most 60 / (4 - k)
    # (a quick solve hands what it did not use to the next).
    assert all(0 < t <= 60 / (4 - k) for k, t in enumerate(given["patterns"]))
    # Pattern 2 reported cut short: named, and the bracket still holds the upper bounds.
    assert w.time_limit == 60 and "pattern 2" in w.cut_short and w.skipped == 0
    assert "time limit        60 s for the whole search: cut short: pattern 2" in str(w)
    assert w.lower <= w.upper <= min(u for _, u in w.tried) * (1 + 1e-9)


def test_without_a_time_limit_no_solve_is_limited(monkeypatch):
    given = _recorded(monkeypatch)
    w = fo.worst_case_permutation(fo.ring(8))
    assert given["rate"] == [None] and set(given["patterns"]) == {None}
    assert w.time_limit is None and w.cut_short == [] and "time limit" not in str(w)


def test_a_spent_time_limit_solves_no_pattern_and_counts_them(monkeypatch):
    # A limit spent before the patterns (the clock read as past it): the bisection is not
    # begun, nor is any pattern (a solve begun past the limit made the answer late: 1.5 s
    # for a 0.2 s limit); all 4 are skipped and TUB is the upper end.
    import fabricopt.analysis.worst_case as wc

    given = _recorded(monkeypatch)
    monkeypatch.setattr(wc.TimeBudget, "out", lambda self: True)
    fab = fo.jellyfish(switches=16, network_ports=4, endpoints_per_switch=2, seed=1,
                       link_gbps=1.0)
    w = fo.worst_case_permutation(fab, iterations=4, time_limit=1e-3)
    assert given["patterns"] == [] and w.tried == [] and w.pattern_result is None
    assert w.skipped == 4 and w.status == "time_limit"
    assert w.upper == pytest.approx(max(w.tub_upper, w.lower))
    assert "4 pattern(s) not solved" in w.time_line()
    assert "bisection (not begun)" in w.cut_short


def test_a_pattern_cut_short_without_lengths_is_passed_over(monkeypatch):
    # Pattern 2 (the one across the bisection cut) comes back cut short with no dual
    # lengths. The search used to stop there with 58 s of its 60 left; it now improves from
    # pattern 1's lengths, not yet used, so a third pattern is the farthest matching under
    # them, and pattern 2 is named as cut short.
    import fabricopt.analysis.worst_case as wc
    from fabricopt.traffic import farthest_matching

    solve = wc.max_concurrent_flow
    given = _recorded(monkeypatch, cut={2}, bare=True)
    fab = fo.jellyfish(switches=16, network_ports=4, endpoints_per_switch=2, seed=1,
                       link_gbps=1.0)
    w = fo.worst_case_permutation(fab, iterations=4, time_limit=60)
    assert len(w.tried) >= 3 and w.skipped == 0
    assert w.cut_short == ["pattern 2 (no lengths to improve from)"]
    one = solve(fab, given["traffic"][0])  # pattern 1 again, for its lengths
    third = farthest_matching("test", fab, fab.endpoints, 1.0, one.certificate.lengths, 4096)
    assert set(given["traffic"][2].pairs) == set(third.pairs)
    # Every pattern's bracket holds the worst case's upper end.
    assert w.lower <= w.upper <= min(u for _, u in w.tried) * (1 + 1e-9)
