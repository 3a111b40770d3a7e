"""Bounds first for the two-phase rate against its LP: on random small fabrics
(oversubscribed, partly filled, multi-plane, failed) the cut is at least the LP's rate, the
WCMP rate at most, both re-proved here from the fabric, and the families whose structure
makes a cut tight close without an LP."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from flow_helpers import random_fabric
from scipy.sparse.csgraph import dijkstra

import fabricopt as fo
from fabricopt.flow.symmetric import arc_orbits
from fabricopt.flow.two_phase.arrays import _reverse_arcs, hub_levels, hub_shares
from fabricopt.flow.two_phase.bounds import (
    hops_to_hubs,
    hub_orbit_representatives,
    phase_one_flows,
    wcmp_phase_one,
)
from fabricopt.graph_arrays import GraphArrays


def _recheck_upper(fab, bound):
    """The bound above recomputed from the fabric: from the cut's side alone (the smaller
    of the capacities leaving and entering it over ``|E_S| p(outside) + |E_outside| p(S)``),
    or from the lengths by the two-phase distance bound, with one shortest-path search from
    every endpoint (each arc costing its length plus its reverse's)."""
    if bound.cut is None:
        return _recheck_lengths(fab, bound)
    ga = GraphArrays.from_fabric(fab)
    side = np.array([v in bound.cut for v in ga.nodes])
    out = ga.capacity[side[ga.tail] & ~side[ga.head]].sum()
    into = ga.capacity[~side[ga.tail] & side[ga.head]].sum()
    ep = np.array([ga.index[e] for e in fab.endpoints])
    hub = np.array([ga.index[h] for h in bound.hubs])
    p = hub_shares(ga, hub, ep)
    inside = side[ep].sum()
    crossing = inside * p[~side[hub]].sum() + (len(ep) - inside) * p[side[hub]].sum()
    return min(out, into) / crossing


def _recheck_lengths(fab, bound):
    ga = GraphArrays.from_fabric(fab)
    length = np.array([bound.lengths[a] for a in ga.arcs])
    both = length + length[_reverse_arcs(ga)]
    ep = np.array([ga.index[e] for e in fab.endpoints])
    hub = np.array([ga.index[h] for h in bound.hubs])
    p = hub_shares(ga, hub, ep)
    M = sp.csr_matrix((both, (ga.tail, ga.head)), shape=(ga.n_nodes, ga.n_nodes))
    dist = dijkstra(M, directed=True, indices=ep)[:, hub]
    return float(ga.capacity @ length) / float((dist @ p).sum())


def _loads_fit(fab, bound):
    cap = {(u, v): c for u, v, c in fab.graph.edges(data="capacity")}
    assert all(bound.load_gbps[a] <= cap[a] * (1 + 1e-9) for a in cap)


def _recheck_flows(fab, bound):
    """Every endpoint's own WCMP phase-1 flow conserves (it sends one unit, ``p`` to each
    hub), and at the reported rate the flows of all of them, both phases, fit every arc and
    add up to the reported load."""
    ga = GraphArrays.from_fabric(fab)
    ep = np.array([ga.index[e] for e in fab.endpoints])
    hub = np.array([ga.index[h] for h in bound.hubs])
    p = hub_shares(ga, hub, ep)
    to_hub = hops_to_hubs(ga, hub)
    total = np.zeros(ga.n_arcs)
    for s in ep:
        alone = np.zeros(ga.n_nodes)
        alone[s] = 1.0
        flow, _ = phase_one_flows(ga, to_hub, p, alone)
        supply = -np.bincount(hub, weights=p, minlength=ga.n_nodes)
        supply[s] += 1.0
        assert np.abs(ga.incidence() @ flow - supply).max() < 1e-9
        total += flow
    load = (total + total[_reverse_arcs(ga)]) * bound.rate_gbps
    assert np.all(load <= ga.capacity * (1 + 1e-9))
    reported = np.array([bound.load_gbps[a] for a in ga.arcs])
    np.testing.assert_allclose(reported, load, rtol=1e-9, atol=1e-9 * ga.capacity.max())


def _levels_against_lp(seed):
    fab = random_fabric(seed)
    for level in hub_levels(fab):
        exact = fo.valiant_rate(fab, hubs=level, method="lp", bounds_first=False)
        first = fo.valiant_rate(fab, hubs=level, method="lp", bounds_first=True)
        # The cut is at least the LP's rate and re-proves on the fabric.
        assert first.upper_gbps >= exact.rate_gbps * (1 - 1e-9)
        assert _recheck_upper(fab, first) == pytest.approx(first.upper_gbps, rel=1e-9)
        if first.method == "bounds":
            if first.upper_gbps > 0:  # else a hub out of reach: the cut proves 0
                _loads_fit(fab, first)
            if first.upper_gbps > 0 and "WCMP" in first.message:
                _recheck_flows(fab, first)
            assert first.rate_gbps <= first.upper_gbps
        # Closed or not, the answer is the LP's rate.
        assert first.rate_gbps == pytest.approx(exact.rate_gbps, rel=1e-6)
        # Both answers re-prove on the fabric from what they carry (the LP's has no bound
        # above: it claims none, and an infinite bound proves nothing).
        for answer in (first, exact):
            check = fo.check_certificate(fab, answer)
            assert check.lower_ok
            assert check.upper_ok == bool(np.isfinite(answer.upper_gbps))


# 50 random fabrics, the first 15 in the quick suite.
SEEDS = [*range(15), *(pytest.param(s, marks=pytest.mark.slow) for s in range(15, 50))]


@pytest.mark.parametrize("seed", SEEDS)
def test_bounds_first_agrees_with_the_lp(seed):
    _levels_against_lp(seed)


# Families where a cut is tight and WCMP meets it, so no LP runs (the rates are in
# test_valiant.py's closed forms): a fat tree through its cores (a host's own link, r = the
# link rate), an oversubscribed leaf-spine (a leaf's uplinks over its hosts), a ring with
# every node a hub (the hop lengths), a DGX H100 through its NVSwitches (a GPU's links), a
# DGX SuperPOD scalable unit (a server's NICs).
CLOSING = [fo.fat_tree(4), fo.fat_tree(6), fo.leaf_spine(4, 1, 4, link_gbps=100),
           fo.leaf_spine(8, 2, 6), fo.ring(8), fo.dgx_h100(), fo.superpod(1)]


@pytest.mark.parametrize("fab", CLOSING, ids=[f.name for f in CLOSING])
def test_families_close_by_bounds_alone(fab):
    first = fo.valiant_rate(fab)
    assert first.method == "bounds", first.message
    lp = fo.valiant_rate(fab, hubs=first.level, bounds_first=False)
    assert first.rate_gbps == pytest.approx(lp.rate_gbps, rel=1e-6)
    assert _recheck_upper(fab, first) == pytest.approx(first.upper_gbps, rel=1e-9)
    _loads_fit(fab, first)
    if "WCMP" in first.message:
        _recheck_flows(fab, first)


def test_a_cluster_closes_by_the_merged_lp():
    # 3 servers of 4 GPUs and 2 NVSwitches on a rail network, hubs its spines: the merged LP
    # (one commodity per group of servers attached alike) is exact; its lifted point and its
    # duals (or a cut) meet, and both re-prove on the fabric.
    fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=3)
    for level in hub_levels(fab):
        first = fo.valiant_rate(fab, hubs=level)
        exact = fo.valiant_rate(fab, hubs=level, bounds_first=False)
        assert first.method == "bounds"
        assert first.rate_gbps == pytest.approx(exact.rate_gbps, rel=1e-6)
        assert _recheck_upper(fab, first) == pytest.approx(first.upper_gbps, rel=1e-9)
        _loads_fit(fab, first)


def test_a_direct_network_goes_to_the_lp():
    # A jellyfish has no hierarchy and no scale-up domains to merge: fewest-hop WCMP falls
    # short of the hop cut, so the LP answers, inside the stage's bracket.
    fab = random_fabric(19)
    first = fo.valiant_rate(fab, hubs=1)
    exact = fo.valiant_rate(fab, hubs=1, bounds_first=False)
    assert first.method != "bounds"
    assert first.rate_gbps == pytest.approx(exact.rate_gbps, rel=1e-6)
    assert first.upper_gbps >= first.rate_gbps


def test_a_level_whose_cut_cannot_win_is_passed_over():
    # fat_tree(4): the cores prove 400 Gb/s, a host's link rate; the leaves' and spines' cuts
    # (a host's own link, at most 400) cannot beat it, so the best is the cores' and none of
    # the others is solved.
    best = fo.valiant_rate(fo.fat_tree(4))
    assert best.level == 3 and best.method == "bounds"


def test_bounds_first_is_a_bool():
    with pytest.raises(fo.InvalidParameterError, match="bounds_first"):
        fo.valiant_rate(fo.ring(4), bounds_first="yes")


def test_the_merged_lp_lifts_to_conserving_flows_per_endpoint():
    # The merged LP's point, spread as its lift says (each endpoint: WCMP inside its server
    # to the NICs, its server's share of the group's NIC flow, 1/E of the group's network
    # flow), rebuilt here endpoint by endpoint: each conserves (one unit out, p to each hub)
    # and together they are the lifted load.
    from fabricopt.flow.backends import solve_lp
    from fabricopt.flow.two_phase.arrays import _Arrays
    from fabricopt.flow.two_phase.domains import DomainPhaseOne, _SubArrays

    fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=3)
    arrays = _Arrays.of(fab)
    ga = arrays.ga
    ep = np.array([ga.index[e] for e in fab.endpoints])
    hub = np.array([ga.index[h] for h in hub_levels(fab)[2]])
    p = hub_shares(ga, hub, ep)
    model = DomainPhaseOne.build(ga, arrays.rev, ep, hub, p, arrays.scale_up)
    x = solve_lp(model.lp, "highs").x
    theta = x[-1]
    dom = model.domains
    per_group = np.zeros((len(dom.group_endpoints), len(model.cap2)))
    np.add.at(per_group, (model.col_commodity, model.col_arc), x[:-1] / theta)
    inside = (dom.domain[ga.tail] >= 0) & (dom.domain[ga.tail] == dom.domain[ga.head])
    nic = (dom.domain[ga.tail] >= 0) & (dom.domain[ga.head] < 0)
    network = (dom.domain[ga.tail] < 0) & (dom.domain[ga.head] < 0)
    sub_arcs = np.flatnonzero(inside)
    total = np.zeros(ga.n_arcs)
    for s in ep:
        d, k = dom.domain[s], dom.group[dom.domain[s]]
        e_d = np.sum(dom.domain[ep] == d)
        own = np.zeros(ga.n_arcs)
        # Its network share and its part of its own server's NIC flow.
        own[network] = per_group[k, model.arc2[network]] / dom.group_endpoints[k]
        mine = nic & (dom.domain[ga.tail] == d)
        own[mine] = (per_group[k, model.arc2[mine]] * ga.capacity[mine]
                     / model.cap2[model.arc2[mine]] / e_d)
        # Inside: WCMP from s to the NICs' GPUs, each taking what leaves by its NIC.
        exits = np.unique(ga.tail[mine])
        want = np.array([own[mine & (ga.tail == u)].sum() for u in exits])
        local_arcs = sub_arcs[dom.domain[ga.tail[sub_arcs]] == d]
        nodes = np.unique(np.r_[ga.tail[local_arcs], ga.head[local_arcs], exits, [s]])
        at = {v: i for i, v in enumerate(nodes)}
        sub = _SubArrays(np.array([at[v] for v in ga.tail[local_arcs]]),
                         np.array([at[v] for v in ga.head[local_arcs]]),
                         ga.capacity[local_arcs], len(nodes))
        injection = np.zeros(len(nodes))
        injection[at[s]] = 1.0
        to_exit = hops_to_hubs(sub, np.array([at[u] for u in exits]))
        inner, _ = phase_one_flows(sub, to_exit, want / want.sum(), injection)
        own[local_arcs] += inner
        supply = -np.bincount(hub, weights=p, minlength=ga.n_nodes)
        supply[s] += 1.0
        assert np.abs(ga.incidence() @ own - supply).max() < 1e-6
        total += own
    lifted = model.lift(x)
    np.testing.assert_allclose(total * theta * model.scale, lifted.flow, rtol=1e-6,
                               atol=1e-6 * ga.capacity.max())


def test_a_spent_budget_returns_the_stage_bracket(monkeypatch):
    # random_fabric(19) does not close by bounds (test_a_direct_network_goes_to_the_lp). On a
    # clock that moves 10 s at every reading, a 1 s limit is spent once the stage is done: no
    # LP runs, and the answer is the stage's bracket, said to be stopped, which holds the
    # exact rate and whose lower end re-proves on the fabric.
    fab = random_fabric(19)
    exact = fo.valiant_rate(fab, hubs=1, bounds_first=False)
    from fabricopt.flow import budget
    from fabricopt.flow.two_phase import lp, plan

    ticks = iter(range(0, 10**6, 10))
    monkeypatch.setattr(budget, "clock", lambda: float(next(ticks)))
    for module in (lp, plan):
        monkeypatch.setattr(module, "solve_lp", lambda *a, **k: pytest.fail("an LP was solved"))
    stopped = fo.valiant_rate(fab, hubs=1, time_limit=1.0)
    assert stopped.status == "time_limit" and stopped.method == "bounds"
    assert 0 < stopped.rate_gbps <= exact.rate_gbps * (1 + 1e-9)
    assert stopped.upper_gbps >= exact.rate_gbps * (1 - 1e-9)
    _loads_fit(fab, stopped)


def test_a_short_limit_still_brackets_the_rate():
    # Every solve of one call shares the call's budget (the merged LP and the LP after it
    # are no longer each given the whole limit): on the same fabric, the rate proven with a
    # generous limit is the exact one, and the bracket under a short limit holds it.
    fab = random_fabric(19)
    exact = fo.valiant_rate(fab, hubs=1, bounds_first=False)
    generous = fo.valiant_rate(fab, hubs=1, time_limit=600.0)
    assert generous.rate_gbps == pytest.approx(exact.rate_gbps, rel=1e-6)
    short = fo.valiant_rate(fab, hubs=1, time_limit=1e-3)
    assert short.rate_gbps <= generous.rate_gbps * (1 + 1e-9)
    assert short.upper_gbps >= exact.rate_gbps * (1 - 1e-6)


@pytest.mark.parametrize("kw", [{}, {"bounds_first": False}, {"method": "lp"}])
def test_check_certificate_rejects_a_rate_its_flows_do_not_carry(kw):
    # 3 servers of 4 GPUs on a rail network (test_a_cluster_closes_by_the_merged_lp): each
    # proof (WCMP or the merged LP's point, the symmetric LP's, the per-endpoint LP's)
    # re-proves its own rate, and no more: a rate raised by 0.1% fails below, a bound
    # lowered by 0.1% above; on the same wiring at half the link rates the flows no longer
    # fit (WCMP's, routed again there, prove half).
    fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=3)
    answer = fo.valiant_rate(fab, **kw)
    assert fo.check_certificate(fab, answer).lower_ok
    raised = dataclasses.replace(answer, rate_gbps=answer.rate_gbps * 1.001,
                                 upper_gbps=answer.upper_gbps * 0.999)
    check = fo.check_certificate(fab, raised)
    assert not check.lower_ok
    assert not check.upper_ok
    half = fab.copy()
    for _, _, d in half.graph.edges(data=True):
        d["capacity"] /= 2
    check = fo.check_certificate(half, answer)
    assert not check.lower_ok and check.lower <= answer.rate_gbps / 2 * (1 + 1e-9)


def test_check_certificate_of_a_two_phase_rate_takes_no_traffic():
    fab = fo.fat_tree(4)
    with pytest.raises(fo.InvalidParameterError, match="hose"):
        fo.check_certificate(fab, fo.valiant_rate(fab), fo.all_to_all(fab))


SYMMETRIC = [fo.fat_tree(4), fo.leaf_spine(5, 3, 4, links_per_pair=2),
             fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=4),
             fo.cluster(fo.dgx_h100(), nodes=8, scale_out="clos", tiers=3, radix=8),
             fo.superpod(2)]


@pytest.mark.parametrize("fab", SYMMETRIC, ids=[f.name for f in SYMMETRIC])
def test_one_hub_per_orbit_routes_as_every_hub(fab):
    """WCMP is kept by automorphisms, so routing one hub of each orbit and averaging over
    the arc orbits gives the load of routing every hub: checked arc by arc on every level,
    with fewer hubs routed wherever a level is one orbit."""
    ga = GraphArrays.from_fabric(fab)
    rev = _reverse_arcs(ga)
    ep = np.array([ga.index[e] for e in fab.endpoints])
    orbit = arc_orbits(ga, fab.symmetry)
    for level in hub_levels(fab).values():
        hub = np.array([ga.index[h] for h in level])
        p = hub_shares(ga, hub, ep)
        reps = hub_orbit_representatives(ga, hub, p, orbit)
        assert reps is not None and reps[1].sum() == len(hub)  # every hub in one orbit
        every = wcmp_phase_one(ga, rev, ep, hub, p)
        by_orbit = wcmp_phase_one(ga, rev, ep, hub, p, orbit)
        np.testing.assert_allclose(by_orbit.load, every.load, rtol=1e-12,
                                   atol=1e-12 * every.load.max())


def test_hubs_that_are_not_whole_orbits_route_one_by_one():
    """One spine of two (the other is its image) or unequal shares inside an orbit: no
    representatives, the routing goes hub by hub."""
    fab = fo.leaf_spine(2, 2, 2)
    ga = GraphArrays.from_fabric(fab)
    orbit = arc_orbits(ga, fab.symmetry)
    spines = np.array([ga.index["spine0"], ga.index["spine1"]])
    assert hub_orbit_representatives(ga, spines[:1], np.array([1.0]), orbit) is None
    assert hub_orbit_representatives(ga, spines, np.array([0.4, 0.6]), orbit) is None
    assert hub_orbit_representatives(ga, spines, np.array([0.5, 0.5]), orbit)[1].tolist() == [2]


@pytest.mark.parametrize("make", [lambda: fo.superpod(2), lambda: fo.fat_tree(4),
                                  lambda: random_fabric(3)])
def test_the_cut_of_each_level_reads_the_partitions_once(make):
    # The hub levels share each partition's capacities out and in and its endpoints
    # (_Arrays.hierarchy_capacities); with them read once, every level's best cut must be
    # the one read afresh: same rate, same side.
    from fabricopt.flow.two_phase.arrays import _Arrays
    from fabricopt.flow.two_phase.bounds import best_cut

    fab = make()
    a = _Arrays.of(fab)
    ep = np.array([a.ga.index[e] for e in fab.endpoints])
    for level, hubs in hub_levels(fab).items():
        hub_idx = np.array([a.ga.index[h] for h in hubs])
        share = hub_shares(a.ga, hub_idx, ep)
        fresh = best_cut(a.ga, a.hierarchy(fab), ep, hub_idx, share)
        kept = best_cut(a.ga, a.hierarchy(fab), ep, hub_idx, share, None,
                        a.hierarchy_capacities(fab, ep))
        assert (fresh is None) == (kept is None), level
        if fresh is not None:
            assert kept.rate_gbps == fresh.rate_gbps and np.array_equal(kept.side, fresh.side)
    assert a.hierarchy_capacities(fab, ep) is a.hierarchy_capacities(fab, ep)


def _move_hubs_over_every_arc(ga, side, ep_idx, hub_idx, hub_share, tiny):
    """_move_hubs as it was: every sum over all the arcs, the cut recomputed by cut_of."""
    from fabricopt.flow.two_phase.bounds import cut_of

    side = side.copy()
    is_ep = np.zeros(ga.n_nodes)
    is_ep[ep_idx] = 1.0
    n, N = ga.n_nodes, len(ep_idx)
    cap_out_all = np.bincount(ga.tail, weights=ga.capacity, minlength=n)[hub_idx]
    cap_in_all = np.bincount(ga.head, weights=ga.capacity, minlength=n)[hub_idx]
    cut = cut_of(ga, side, ep_idx, hub_share)
    for _ in range(len(hub_idx)):
        out = float(ga.capacity[side[ga.tail] & ~side[ga.head]].sum())
        into = float(ga.capacity[~side[ga.tail] & side[ga.head]].sum())
        to_side = np.bincount(ga.tail, weights=ga.capacity * side[ga.head], minlength=n)[hub_idx]
        from_side = np.bincount(ga.head, weights=ga.capacity * side[ga.tail],
                                minlength=n)[hub_idx]
        inside = side[hub_idx]
        new_out = np.where(inside, out - (cap_out_all - to_side) + from_side,
                           out - from_side + (cap_out_all - to_side))
        new_in = np.where(inside, into - (cap_in_all - from_side) + to_side,
                          into - to_side + (cap_in_all - from_side))
        sign = np.where(inside, -1.0, 1.0)
        count = float(side[ep_idx].sum()) + sign * is_ep[hub_idx]
        p_in = float(hub_share[side].sum()) + sign * hub_share[hub_idx]
        den = count * (1.0 - p_in) + (N - count) * p_in
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(den > tiny, np.minimum(new_out, new_in) / np.where(
                den > tiny, den, 1.0), np.inf)
        k = int(np.argmin(rate))
        if not rate[k] < cut.rate_gbps * (1 - 1e-12):
            break
        side[hub_idx[k]] = ~side[hub_idx[k]]
        cut = cut_of(ga, side, ep_idx, hub_share)
    return cut


@pytest.mark.parametrize("make", [lambda: fo.superpod(2), lambda: fo.fat_tree(4),
                                  lambda: random_fabric(3), lambda: random_fabric(7)])
def test_moving_hubs_reads_only_the_hubs_arcs(make):
    # _move_hubs sums a hub's arcs over the arcs out of and into hubs only (bincount adds
    # a bin's weights in arc order, so the sums are the same floats): from random sides
    # and from each partition's groups, the same moves, side, capacity and crossing, bit
    # for bit, as the sums over every arc.
    from fabricopt.flow.two_phase.arrays import _Arrays
    from fabricopt.flow.two_phase.bounds import _move_hubs

    fab = make()
    a = _Arrays.of(fab)
    ga = a.ga
    ep = np.array([ga.index[e] for e in fab.endpoints])
    rng = np.random.default_rng(11)
    for hubs in hub_levels(fab).values():
        hub_idx = np.array([ga.index[h] for h in hubs])
        share = hub_shares(ga, hub_idx, ep)
        hub_share = np.zeros(ga.n_nodes)
        hub_share[hub_idx] = share
        tiny = 0.5 * float(share[share > 0].min())
        sides = [rng.random(ga.n_nodes) < q for q in (0.1, 0.5)]
        sides += [label == k for label in a.hierarchy(fab) for k in range(min(3, label.max() + 1))]
        for side in sides:
            want = _move_hubs_over_every_arc(ga, side, ep, hub_idx, hub_share, tiny)
            got = _move_hubs(ga, side, ep, hub_idx, hub_share, tiny)
            assert np.array_equal(got.side, want.side)
            assert got.capacity_gbps == want.capacity_gbps and got.crossing == want.crossing
