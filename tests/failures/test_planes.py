"""Routing all-to-all through the planes of a Clos of servers: the structure read off the
graph, the LP's routing re-proven from the fabric alone (two independent load sums that must
agree), its bracket never on the wrong side of the exact LP, and a proof that fails when
tampered with."""

from dataclasses import replace

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.failures.leaf_run_cuts import leaf_run_cut
from fabricopt.failures.plane_bracket import narrowed, plane_bracket, planes_follow
from fabricopt.failures.plane_lp import solve_planes
from fabricopt.failures.plane_routing import PlaneProof, proven_plane_rate
from fabricopt.failures.planes import plane_structure
from fabricopt.flow.proof import explicit_distance_bound
from fabricopt.graph_arrays import GraphArrays


def _clos(nodes=12, gpus=4):
    """A 3-tier 2:1 Clos of small NVSwitch servers: radix-8 switches give several pods
    (zones) and planes, and servers that span two leaves (``whole_servers=False``: every
    leaf fills the 5 down ports the ratio allows, GPU by GPU; whole servers would take 4)."""
    return fo.cluster(fo.nvswitch_domain(gpus, 2, gpus, 400.0), nodes=nodes, scale_out="clos",
                      tiers=3, oversubscription=2, radix=8, whole_servers=False)


@pytest.mark.parametrize("one_way", [False, True])
def test_each_nic_link_is_paired_with_its_way_back(one_way):
    # The planes pair each NIC link u -> v with v -> u, from the arrays' own reverse search
    # where every arc has a reverse, searched for the NIC links alone where some arc of the
    # graph has none (here one spine-core arc left one way): the same pairs either way.
    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    if one_way:  # the fabric is this test's own: its graph edited in place
        u, v = next((u, v) for u, v in fab.graph.edges if "spine" in str(u)
                    and "core" in str(v))
        fab.graph.remove_edge(u, v)
    ga = GraphArrays.from_fabric(fab)
    assert (ga.reverse is None) == one_way
    pl, why = plane_structure(fab, ga)
    assert pl is not None, why
    arcs = list(ga.arcs)
    assert [arcs[b] for b in pl.nic_back] == [arcs[a][::-1] for a in pl.nic_arc]


def test_structure_is_read_off_the_graph():
    fab = _clos()
    pl, why = plane_structure(fab)
    assert why == ""
    ga = pl.ga
    # 12 servers of 4 GPUs, 48 NICs, on radix-8 leaves of 5 NICs and 3 uplinks (5:3, the
    # split nearest 2:1): 10 leaves. Radix-8 spines take 4 leaves each: 3 pods (4, 4, 2
    # leaves). One spine per pod and uplink: 3 planes.
    assert (pl.n_leaves, pl.n_zones, pl.n_planes, pl.n_servers) == (10, 3, 3, 12)
    assert np.bincount(pl.leaf_zone).tolist() == [4, 4, 2]
    assert ((pl.up >= 0).sum(axis=1) == 3).all()
    for leaf in range(pl.n_leaves):
        for p in range(pl.n_planes):
            port = pl.port[pl.leaf_zone[leaf], p]
            if pl.up[leaf, p] >= 0:
                assert (ga.tail[pl.up[leaf, p]], ga.head[pl.up[leaf, p]]) == (
                    pl.leaf_node[leaf], port)
    for e in range(len(pl.endpoints)):
        _, leaves, _ = pl.nics(e)
        assert pl.home[e] in leaves  # every GPU here has its own NIC
    # A group holds every leaf any of its servers reaches.
    for s in range(pl.n_servers):
        leaves = {int(pl.nic_leaf[i]) for e in np.flatnonzero(pl.server == s)
                  for i in range(pl.nic_ptr[e], pl.nic_ptr[e + 1])}
        assert len({int(pl.leaf_group[x]) for x in leaves}) == 1


@pytest.mark.parametrize("fab, why", [
    (fo.ring(6), "no scale-up domain with a switch"),
    (fo.fat_tree(4), "no scale-up domain with a switch"),
])
def test_structure_declines_fabrics_without_servers(fab, why):
    pl, reason = plane_structure(fab)
    assert pl is None and reason.startswith(why)
    assert plane_bracket(fab, fo.all_to_all(fab)) is None


@pytest.mark.parametrize("nodes, fraction, seed", [
    (12, 0.0, 0), (12, 0.05, 1), (12, 0.05, 2), (16, 0.05, 1), (16, 0.1, 3)])
def test_bracket_holds_the_exact_lp(nodes, fraction, seed):
    base = _clos(nodes)
    fab = fo.fail_random(base, fraction, seed=seed) if fraction else base
    traffic = fo.all_to_all(fab)
    r = plane_bracket(fab, traffic)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    assert exact.exact
    assert r.lower <= exact.theta * (1 + 1e-7) and r.upper >= exact.theta * (1 - 1e-7)
    check = fo.check_certificate(fab, r, traffic)
    assert check.ok, (check, r.lower, r.upper)
    # The flow the checker rebuilt fits once scaled to its lower bound.
    ga = r.certificate.ga
    assert np.all(r.certificate.load <= ga.capacity * (1 + 1e-9))


def test_meets_the_cut_where_a_failure_is_local(monkeypatch):
    # Seed 2 of 5 % on the 12-server Clos: the cut (a group's uplinks over the demand
    # that must leave it) is 4.545455 per pair, which the exact LP reaches too; so does
    # the routing through the planes, and the result says it is exact (the interior point's
    # first point stops 2e-6 under it; near the cut crossover carries that point to the
    # optimal vertex). The LP is built and solved once: the vertex comes from the kept LP.
    import fabricopt.failures.plane_lp as plane_lp

    calls = []
    for name in ("_plane_lp", "solve_lp", "crossed_over"):
        real = getattr(plane_lp, name)
        monkeypatch.setattr(plane_lp, name, lambda *a, _real=real, _name=name, **k: (
            calls.append(_name), _real(*a, **k))[1])
    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    r = plane_bracket(fab, fo.all_to_all(fab))
    exact = fo.max_concurrent_flow(fab, method="lp")
    assert r.status == "optimal" and r.exact
    assert r.theta == pytest.approx(exact.theta, rel=1e-7)
    assert fo.check_certificate(fab, r).ok
    assert calls == ["_plane_lp", "solve_lp", "crossed_over"]


@pytest.mark.parametrize("nodes, seed", [(12, 1), (16, 3)])
def test_two_load_sums_agree(nodes, seed):
    """The LP sums loads per server class and the checker per endpoint and server: at the
    LP's point both must find the same busiest arc (NVLink is ample here, which the LP
    leaves out)."""
    fab = fo.fail_random(_clos(nodes), 0.05, seed=seed)
    pl, _ = plane_structure(fab)
    sol, *_ = solve_planes(pl)
    rate = proven_plane_rate(fab, fo.all_to_all(fab), PlaneProof.of(sol))
    n = len(fab.endpoints)
    # lp_gbps is Gb/s per endpoint out: theta (per pair at 1 Gb/s) times its n - 1 targets.
    assert rate.theta * (n - 1) == pytest.approx(sol.lp_gbps, rel=1e-6)
    assert rate.sent == pytest.approx(1.0, rel=1e-9)


def _proof_and_result():
    fab = fo.fail_random(_clos(12), 0.05, seed=1)
    r = plane_bracket(fab, fo.all_to_all(fab))
    return fab, r, r.certificate.plane


def test_tampered_proofs_prove_less():
    fab, r, proof = _proof_and_result()
    traffic = fo.all_to_all(fab)
    assert fo.check_certificate(fab, r).ok
    # A claim above what the flow proves.
    assert not fo.check_certificate(fab, replace(r, lower=r.lower * 1.01)).ok
    # A negative share is no flow.
    alpha = proof.alpha.copy()
    alpha[0, 0] = -0.1
    assert proven_plane_rate(fab, traffic, replace(proof, alpha=alpha)).theta == 0.0
    # A pair sent with less than its demand: every share halved sends half, at half the
    # load; the proof is then worth the same (t / mu), never more.
    halved = replace(proof, alpha=proof.alpha / 2, beta=proof.beta / 2,
                     gamma=proof.gamma / 2, climb=proof.climb / 2, relay=proof.relay / 2)
    got = proven_plane_rate(fab, traffic, halved)
    assert got.sent == pytest.approx(0.5) and got.theta <= r.lower * (1 + 1e-9)
    # Shares of another fabric's planes.
    other = plane_bracket(fo.fail_random(_clos(16), 0.05, seed=1),
                          fo.all_to_all(fo.fail_random(_clos(16), 0.05, seed=1)))
    wrong = proven_plane_rate(fab, traffic, other.certificate.plane)
    assert wrong.theta == 0.0 and "shape" in wrong.why
    # The same shares on a fabric with an uplink fewer: its flow would cross the missing
    # link (the checker refuses the result itself: another graph).
    pl, _ = plane_structure(fab)
    leaf, p = map(int, np.argwhere(pl.up >= 0)[0])
    ga = pl.ga
    cut = fab.without_links([(ga.nodes[ga.tail[pl.up[leaf, p]]],
                              ga.nodes[ga.head[pl.up[leaf, p]]])])
    assert proven_plane_rate(cut, traffic, proof).theta < r.lower * (1 - 1e-6)
    with pytest.raises(fo.InvalidParameterError, match="different graph"):
        fo.check_certificate(cut, r)


def test_other_traffic_is_not_routed_through_the_planes():
    fab, r, proof = _proof_and_result()
    perm = fo.permutation(fab, seed=1)
    assert proven_plane_rate(fab, perm, proof).theta == 0.0
    assert plane_bracket(fab, perm) is None


def test_leaf_run_cut_is_a_cut():
    fab = fo.fail_random(_clos(16), 0.1, seed=3)
    pl, _ = plane_structure(fab)
    traffic = fo.all_to_all(fab)
    bound, lengths = leaf_run_cut(pl, 1.0)
    # Its lengths re-prove it through the distance bound, and it holds the exact LP.
    again = explicit_distance_bound(fab, traffic, lengths, GraphArrays.from_fabric(fab))
    assert again <= bound * (1 + 1e-9)
    assert bound >= fo.max_concurrent_flow(fab, traffic, method="lp").theta * (1 - 1e-7)


def test_narrowed_keeps_each_side_with_its_proof():
    fab, planes, _ = _proof_and_result()
    wide = replace(planes, lower=planes.lower / 2, upper=planes.upper * 2, theta=None,
                   status="inexact",
                   certificate=replace(planes.certificate, lower_proof=None, upper_proof=None))
    got = narrowed(wide, planes)
    assert (got.lower, got.upper) == (planes.lower, planes.upper)
    assert fo.check_certificate(fab, got).ok


def _random_cluster(seed, whole_servers=False):
    """A small cluster of NVSwitch servers (rail-optimized, 2- or 3-tier Clos), failed at
    0 to 10% (NVLink links too: a GPU may share no switch with another). A Clos's leaves
    fill their ports GPU by GPU (servers may span leaves) unless ``whole_servers``."""
    import random

    rng = random.Random(seed)
    kind = rng.choice(["rail", "clos2", "clos3"])
    dom = fo.nvswitch_domain(rng.choice([2, 4]), rng.choice([1, 2]), rng.choice([2, 4]), 400.0)
    nodes = rng.randint(3, 10)
    if kind == "rail":
        base = fo.cluster(dom, nodes=nodes, scale_out="rail_optimized",
                          oversubscription=rng.choice([1, 2]), leaf_radix=8)
    elif kind == "clos2":
        base = fo.cluster(dom, nodes=nodes, scale_out="clos", radix=8,
                          oversubscription=rng.choice([1, 2]), whole_servers=whole_servers)
    else:
        base = fo.cluster(dom, nodes=nodes, scale_out="clos", tiers=3, radix=8,
                          oversubscription=2, whole_servers=whole_servers)
    f = rng.choice([0.0, 0.03, 0.06, 0.1])
    return fo.fail_random(base, f, seed=seed) if f else base


@pytest.mark.parametrize("seed, whole_servers", [(s, False) for s in range(30)]
                         + [(s, True) for s in range(30, 40)])
def test_random_clusters_bracket_the_lp_and_recheck(seed, whole_servers):
    fab = _random_cluster(seed, whole_servers)
    traffic = fo.all_to_all(fab)
    r = plane_bracket(fab, traffic)
    if r is None:  # declined: no planes (every leaf one hop from every server, say)
        return
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    assert r.lower <= exact.theta * (1 + 1e-7) and r.upper >= exact.theta * (1 - 1e-7)
    assert fo.check_certificate(fab, r, traffic).ok


def test_gpus_without_a_common_switch_relay_over_a_third():
    # Seed 12: 9 servers of 4 GPUs on a 2-tier Clos, 6% failed; GPU 0 of server 3 lost its
    # links to the switches GPU 3 still has, so their traffic crosses a third GPU. The
    # routing still meets the exact LP's optimum.
    fab = _random_cluster(12)
    r = plane_bracket(fab, fo.all_to_all(fab))
    assert r.lower == pytest.approx(fo.max_concurrent_flow(fab, method="lp").theta, rel=1e-6)


def test_a_failure_trial_left_open_by_the_detours_is_closed_through_the_planes():
    # The 16-server Clos with 5% of its links failed (seed 2): the intact flow sent around
    # the failures proves 2.5 per pair under a hierarchy cut of 4.545; the planes prove the
    # exact LP's optimum from both sides, 3.333 (the routing below, a run's cut above).
    from fabricopt.failures.intact_flow import IntactFlow, rerouted_answer
    from fabricopt.failures.sweep import solve_failed

    base = _clos(16)
    traffic = fo.all_to_all(base)
    intact = IntactFlow.of(base, fo.max_concurrent_flow(base, traffic), traffic)
    failed = fo.fail_random(base, 0.05, seed=2)
    around = rerouted_answer(failed, traffic, intact)
    assert around.upper - around.lower > 0.01 * around.upper
    r = solve_failed(failed, traffic, "auto", {}, None, intact)
    exact = fo.max_concurrent_flow(failed, traffic, method="lp")
    assert r.exact and r.theta == pytest.approx(exact.theta, rel=1e-6)
    assert "routed through the planes" in r.message and "a cut around leaves" in r.message
    assert fo.check_certificate(failed, r, traffic).ok


def test_a_spent_time_limit_begins_no_plane_lp(monkeypatch):
    # The stages before may spend a time limit: the planes are then not tried (a solver
    # asked for 0 s would refuse), the answer saying so, and with time left they are.
    import time
    from dataclasses import replace

    import fabricopt.failures.plane_bracket as planes_stage
    from fabricopt.flow.problem import Budget, FlowProblem

    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    traffic = fo.all_to_all(fab)
    monkeypatch.setattr(planes_stage, "FIND_SYMMETRY_NONZEROS", 0)
    stage = planes_stage.THROUGH_PLANES
    ga = GraphArrays.from_fabric(fab)
    assert plane_bracket(fab, traffic, time_limit=0.0) is None
    spent = FlowProblem(fab, traffic, budget=Budget(1.0, time.perf_counter() - 5), ga=ga)
    assert stage.applies(spent)[0] and stage.narrow(spent, None) is None
    before = replace(plane_bracket(fab, traffic), status="inexact", theta=None)
    assert "the planes' LP was not begun" in stage.narrow(spent, before).message
    left = FlowProblem(fab, traffic, budget=Budget(60.0, time.perf_counter()), ga=ga)
    got = stage.narrow(left, None)
    assert got.exact and got.stages == {"lower": "planes", "upper": "planes"}


def _failed_clos_from_intact(monkeypatch, intact_flow):
    """The 16-server Clos with 5% of its links failed (seed 2) and its all-to-all, answered
    from its intact fabric as a large one would be: the intact flow patched in as a claim
    or a found symmetry would give it on a large Clos."""
    base = _clos(16)
    failed = fo.fail_random(base, 0.05, seed=2)
    traffic = fo.all_to_all(failed)
    intact = intact_flow.IntactFlow.of(base, fo.max_concurrent_flow(base, traffic), traffic)
    monkeypatch.setattr(intact_flow, "_solved_intact", lambda *args: intact)
    return failed, traffic, intact


def test_where_the_planes_fail_the_detours_are_searched_after_them(monkeypatch):
    # The same failed Clos through the engine, its planes declining (as a failed SuperPOD's
    # do when their LP is larger than the arcs said: 1.8 million nonzeros for 5% of every
    # link of superpod(16), then a 2% bracket where the searched detours are exact): the
    # detours skipped their search for the planes, so the stage after the planes searches
    # them, and the answer is the searched detours' bracket.
    import fabricopt.failures.intact_flow as intact_flow
    import fabricopt.failures.plane_bracket as planes_stage

    failed, traffic, intact = _failed_clos_from_intact(monkeypatch, intact_flow)
    monkeypatch.setattr(planes_stage, "plane_bracket_why",
                        lambda *args: (None, "declined by the test"))
    real = intact_flow.rerouted_answer
    searched = _searches_noted(monkeypatch, intact_flow)
    got = fo.max_concurrent_flow(failed, traffic, gap=1e-6)
    assert searched == [False, True]
    alone = real(failed, traffic, intact, search=True)
    assert got.lower >= alone.lower and got.upper <= alone.upper
    assert fo.check_certificate(failed, got, traffic).ok


def test_an_open_bracket_through_the_planes_is_kept_for_the_stages_after(monkeypatch):
    # A random failed cluster (seed 5) whose planes leave their bracket 15 % open: not the
    # answer (the gap asked is 1 %), but kept as proven, so the stages after the intact
    # fabric's (the routed bounds, the solvers) answer with each end at least as tight.
    # Before, it was dropped: a failed 2,048-GPU 3-tier Clos then answered its 40 s limit
    # with the routed bounds' 15 % where its planes had proven 2.2 %.
    import time

    import fabricopt.failures.plane_bracket as planes_stage
    from fabricopt.flow.plan import FromIntact
    from fabricopt.flow.problem import Budget, FlowProblem
    from fabricopt.flow.stages import Bracket

    fab = _random_cluster(5)
    traffic = fo.all_to_all(fab)
    monkeypatch.setattr(planes_stage, "FIND_SYMMETRY_NONZEROS", 0)
    planes = plane_bracket(fab, traffic)
    assert planes.upper - planes.lower > 0.01 * planes.upper
    problem = FlowProblem(fab, traffic, budget=Budget(60.0, time.perf_counter()),
                          ga=GraphArrays.from_fabric(fab))
    bracket = Bracket()
    FromIntact((planes_stage.THROUGH_PLANES,)).run(problem, bracket)
    assert bracket.answer is None and len(bracket.proven) == 1
    kept = bracket.proven[0]
    assert (kept.lower, kept.upper) == (planes.lower, planes.upper)
    answer = fo.max_concurrent_flow(fab, traffic)
    assert kept.lower <= answer.lower <= answer.upper <= kept.upper
    assert fo.check_certificate(fab, answer, traffic).ok


@pytest.mark.parametrize("nodes, seed", [(12, 1), (16, 3)])
def test_volumes_between_groups_are_the_pairs_sums(nodes, seed):
    # The proof sums what leaves of two groups send each other by group and zone; summed
    # pair of leaves by pair of leaves, with random shares, it is the same (to rounding).
    from fabricopt.failures.plane_lp import counts
    from fabricopt.failures.plane_routing import _apart_volumes

    pl, _ = plane_structure(fo.fail_random(_clos(nodes), 0.05, seed=seed))
    home = counts(pl).home.astype(float)
    rng = np.random.default_rng(seed)
    nl, nz, npl = pl.n_leaves, pl.n_zones, pl.n_planes
    alpha, beta = rng.random((nl, npl)), rng.random((nl, npl))
    gamma = rng.random((nz, nz, npl))
    out, into, middle = _apart_volumes(pl, home, alpha, beta, gamma)
    zone, group = pl.leaf_zone, pl.leaf_group
    for a in range(nl):
        for b in range(nl):
            if group[a] != group[b]:
                share = alpha[a] + beta[b] + gamma[zone[a], zone[b]]
                out[a] -= home[b] * share
                into[b] -= home[a] * share
                middle[zone[a], zone[b]] -= home[a] * home[b] * share
    assert np.allclose(out, 0, atol=1e-9) and np.allclose(into, 0, atol=1e-9)
    assert np.allclose(middle, 0, atol=1e-9)


def test_planes_follow_only_where_their_lp_is_begun():
    # The planes' stage reads a Clos of servers and begins its LP with time enough; a ring
    # has no planes, a spent limit begins nothing, and a permutation is not all-to-all.
    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    traffic = fo.all_to_all(fab)
    assert planes_follow(fab, traffic) and planes_follow(fab, traffic, 60.0)
    assert not planes_follow(fab, traffic, 0.0)
    assert not planes_follow(fo.ring(6), fo.all_to_all(fo.ring(6)))
    assert not planes_follow(fab, fo.permutation(fab, seed=1))


def test_planes_follow_only_where_their_lp_is_expected_quick(monkeypatch):
    # The search is skipped only for a planes' LP expected within FOLLOW_SECONDS (its routes'
    # nonzeros times IPM_SECONDS_PER_NONZERO): with no second allowed, even this small Clos's
    # LP is searched first, and with the default it follows.
    import fabricopt.failures.plane_bracket as pb

    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    traffic = fo.all_to_all(fab)
    assert planes_follow(fab, traffic)
    monkeypatch.setattr(pb, "FOLLOW_SECONDS", 0.0)
    assert not planes_follow(fab, traffic)


def _searches_noted(monkeypatch, intact_flow) -> list[bool]:
    """The ``search`` each call of the detours is given, in order, as they run."""
    searched = []
    real = intact_flow.rerouted_answer

    def spy(*args, search=True, **kwargs):
        searched.append(search)
        return real(*args, search=search, **kwargs)

    monkeypatch.setattr(intact_flow, "rerouted_answer", spy)
    return searched


def test_where_the_planes_follow_the_detours_are_not_searched(monkeypatch):
    # The 16-server Clos with 5% of its links failed (seed 2), answered from its intact
    # fabric as a large one would be: the planes follow, and they
    # prove the exact LP's optimum from both ends (3.333 per pair, as above), so the
    # detours' search (10 s CPU of a failed 4,096-GPU Clos) would buy nothing. The detours
    # give their even spread only; narrowed through the planes, the bracket is the one the
    # searched detours give.
    import fabricopt.failures.intact_flow as intact_flow

    failed, traffic, intact = _failed_clos_from_intact(monkeypatch, intact_flow)
    real = intact_flow.rerouted_answer
    searched = _searches_noted(monkeypatch, intact_flow)
    plain = intact_flow.from_recipe(failed, traffic)
    assert planes_follow(failed, traffic) and searched == [False]
    monkeypatch.setattr(intact_flow, "rerouted_answer",
                        lambda *a, search=True, **k: real(*a, search=True, **k))
    forced = intact_flow.from_recipe(failed, traffic)
    planes = plane_bracket(failed, traffic)
    assert forced.lower >= plain.lower  # the search lifts the detours' own lower end ...
    ends = [(r.lower, r.upper) for r in (narrowed(plain, planes), narrowed(forced, planes))]
    assert ends[0] == ends[1] == (planes.lower, planes.upper)  # ... which the planes pass
    exact = fo.max_concurrent_flow(failed, traffic, method="lp").theta
    assert ends[0][0] == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("nodes, fraction, seed", [(12, 0.05, 2), (16, 0.05, 3), (16, 0.1, 1)])
def test_route_nonzeros_are_the_route_columns_of_the_assembled_lp(nodes, fraction, seed):
    # The count that refuses a planes' LP before its assembly is exact for the route
    # columns (each route column meets only its equality row, its own NIC row and the rows
    # of its way up, all distinct), hence a lower bound of the LP's nonzeros: it refuses
    # only LPs the assembled count would refuse too.
    from fabricopt.failures.plane_lp import _plane_lp, counts
    from fabricopt.failures.plane_lp_size import route_nonzeros
    from fabricopt.failures.plane_routes import plane_routes, server_classes

    pl, _ = plane_structure(fo.fail_random(_clos(nodes), fraction, seed=seed))
    cl = server_classes(pl)
    routes = plane_routes(pl, cl, ((pl.up < 0) | (pl.down < 0)).any(axis=1))
    lp, cols, _ = _plane_lp(pl, cl, counts(pl), routes)
    route_cols = np.concatenate([c for c in cols.exits + cols.entries if c[0] >= 0])
    assert len(route_cols) > 0  # relays and bounces: several routes to some planes
    assembled = lp.A_ub.tocsc()[:, route_cols].nnz + lp.A_eq.tocsc()[:, route_cols].nnz
    assert route_nonzeros(pl, cl, routes) == assembled < lp.nnz


def test_the_routes_planes_follow_read_are_not_read_again(monkeypatch):
    # planes_follow reads the routes to count their nonzeros; plane_bracket of the very same
    # fabric and arrays (as the engine and a failure sweep call them) takes them over, so
    # they are read once, and its bracket is the one read afresh gives (fresh arrays).
    import fabricopt.failures.plane_bracket as pb
    import fabricopt.failures.plane_lp as plane_lp

    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    traffic = fo.all_to_all(fab)
    fresh = plane_bracket(fab, traffic)
    reads = []
    for module in (pb, plane_lp):
        real = module.plane_routes
        monkeypatch.setattr(module, "plane_routes", lambda *a, _real=real: (
            reads.append(1), _real(*a))[1])
    ga = GraphArrays.from_fabric(fab)
    assert planes_follow(fab, traffic, ga=ga) and len(reads) == 1
    r = plane_bracket(fab, traffic, ga=ga)
    assert len(reads) == 1
    assert (r.lower, r.upper, r.status) == (fresh.lower, fresh.upper, fresh.status)
    assert fo.check_certificate(fab, r).ok
    plane_bracket(fab, traffic)  # other arrays: read again
    assert len(reads) == 2


def test_the_routes_kept_are_for_this_thread_only():
    # The reading planes_follow keeps is handed over on the thread that kept it: another
    # thread (a failure sweep's trial on a thread pool) finds nothing for the same objects,
    # and the keeping thread takes it over once.
    import threading

    import fabricopt.failures.plane_bracket as pb

    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    ga = GraphArrays.from_fabric(fab)
    assert planes_follow(fab, fo.all_to_all(fab), ga=ga)
    elsewhere = []
    other = threading.Thread(target=lambda: elsewhere.append(pb._Reading.kept(fab, ga)))
    other.start()
    other.join()
    assert elsewhere == [None]
    assert pb._Reading.kept(fab, ga) is not None and pb._Reading.kept(fab, ga) is None


def test_a_planes_lp_its_routes_refuse_is_neither_assembled_nor_followed(monkeypatch):
    # With the untimed limit just below the routes' own nonzeros, the LP is refused before
    # a row of it is built, and the detours' search is not skipped for it; at that count
    # exactly, the planes still follow (the assembled LP, larger, then decides).
    import fabricopt.failures.plane_lp as plane_lp
    import fabricopt.failures.plane_lp_size as plane_lp_size
    from fabricopt.failures.plane_routes import plane_routes, server_classes

    fab = fo.fail_random(_clos(12), 0.05, seed=2)
    traffic = fo.all_to_all(fab)
    pl, _ = plane_structure(fab)
    cl = server_classes(pl)
    least = plane_lp_size.route_nonzeros(
        pl, cl, plane_routes(pl, cl, ((pl.up < 0) | (pl.down < 0)).any(axis=1)))
    monkeypatch.setattr(plane_lp_size, "UNTIMED_MAX_NONZEROS", least)
    assert planes_follow(fab, traffic)
    monkeypatch.setattr(plane_lp_size, "UNTIMED_MAX_NONZEROS", least - 1)
    monkeypatch.setattr(plane_lp, "_plane_lp", lambda *args: pytest.fail("assembled"))
    assert not planes_follow(fab, traffic)
    assert solve_planes(pl)[0] is None and plane_bracket(fab, traffic) is None


def _without_shortcuts(monkeypatch):
    """The planes' LP as it was before a spanning server could send its relays over its
    own NIC on the next leaf (no shortcut columns)."""
    from fabricopt.failures.plane_lp import _PlaneLP

    monkeypatch.setattr(_PlaneLP, "shortcuts", lambda self: self.c.__setitem__("shortcut", {}))


@pytest.mark.parametrize("nodes, fraction, seed, rose", [
    (12, 0.05, 1, True), (16, 0.1, 3, True), (16, 0.05, 3, False)])
def test_spanning_servers_relay_over_their_own_nic(monkeypatch, nodes, fraction, seed, rose):
    """Servers of 4 GPUs span two radix-8 leaves here (5 NICs a leaf). Their relayed
    traffic may leave (arrive) by their own NIC on the next leaf over NVLink: the LP's
    answer only rises (by the spanning servers' NICs: 220.31 -> 233.11 Gb/s per GPU on the
    first fabric, 185.68 -> 188.50 on the second, measured; the third stays at 207.69), never
    above the exact LP, and the flow the proof rebuilds from the fabric carries what the LP
    promised, is balanced at every node and fits every capacity once scaled."""
    fab = fo.fail_random(_clos(nodes), fraction, seed=seed)
    traffic = fo.all_to_all(fab)
    pl, _ = plane_structure(fab)
    sol, *_ = solve_planes(pl)
    assert any(f > 0 for f in sol.shortcut.values())  # the columns are used
    with monkeypatch.context() as m:
        _without_shortcuts(m)
        before, *_ = solve_planes(pl)
    # More columns, the same rows: the optimum cannot fall (the interior point stops at a
    # relative gap of 1e-4).
    assert sol.lp_gbps >= before.lp_gbps * (1 - 1e-4)
    assert (sol.lp_gbps > before.lp_gbps * 1.01) == rose
    rate = proven_plane_rate(fab, traffic, PlaneProof.of(sol))
    n = len(fab.endpoints)
    assert rate.theta * (n - 1) == pytest.approx(sol.lp_gbps, rel=1e-6)  # the two load sums
    assert rate.sent == pytest.approx(1.0, rel=1e-9)
    # A flow of paths: at every node (switch, NVSwitch, GPU) as much leaves as arrives
    # (each GPU sends what it receives under uniform all-to-all).
    ga = pl.ga
    net = (np.bincount(ga.tail, weights=rate.load, minlength=ga.n_nodes)
           - np.bincount(ga.head, weights=rate.load, minlength=ga.n_nodes))
    assert np.abs(net).max() <= 1e-9 * rate.load.max()
    exact = fo.max_concurrent_flow(fab, traffic, method="lp")
    assert rate.theta <= exact.theta * (1 + 1e-7)
    r = plane_bracket(fab, traffic)
    assert r.lower == pytest.approx(min(rate.theta, r.upper), rel=1e-9)
    assert fo.check_certificate(fab, r, traffic).ok
    assert np.all(r.certificate.load <= ga.capacity * (1 + 1e-9))


def test_tampered_shortcuts_prove_nothing_or_less():
    fab = fo.fail_random(_clos(12), 0.05, seed=1)
    traffic = fo.all_to_all(fab)
    r = plane_bracket(fab, traffic)
    proof = r.certificate.plane
    assert proof.shortcut and fo.check_certificate(fab, r).ok
    key = next(iter(proof.shortcut))
    # A share above one would send more than the server relays.
    bad = proven_plane_rate(fab, traffic, replace(proof, shortcut={**proof.shortcut, key: 1.5}))
    assert bad.theta == 0.0 and "outside [0, 1]" in bad.why
    # A class named on a pair whose near leaf holds none of its endpoints.
    from fabricopt.failures.plane_lp import counts
    from fabricopt.failures.plane_routes import server_classes

    pl, _ = plane_structure(fab)
    cl, ct = server_classes(pl), counts(pl)
    k, i, entry = key
    near = int(ct.pairs[i, 1 if entry else 0])
    stranger = next(j for j in range(len(cl.size)) if near not in cl.homes[j])
    bad = proven_plane_rate(fab, traffic, replace(proof, shortcut={(stranger, i, entry): 0.5}))
    assert bad.theta == 0.0 and "no endpoint on leaf" in bad.why
    # Out and in both whole on a pair one hop apart: a piece would leave the hop twice.
    k1, i = next((k, i) for (k, i, e) in proof.shortcut
                 if not e and tuple(ct.pairs[i].tolist()) in cl.hops)
    a, c = ct.pairs[i].tolist()
    k2 = next(k for k in range(len(cl.size)) if c in cl.homes[k] and a in cl.leaves[k])
    both = {**proof.shortcut, (k1, i, False): 1.0, (k2, i, True): 1.0}
    bad = proven_plane_rate(fab, traffic, replace(proof, shortcut=both))
    assert bad.theta == 0.0 and "more than one" in bad.why
    # Without its shortcuts the same shares are still a flow, worth less.
    got = proven_plane_rate(fab, traffic, replace(proof, shortcut=None))
    assert 0.0 < got.theta < r.lower
