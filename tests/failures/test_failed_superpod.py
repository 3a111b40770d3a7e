"""Failed SuperPODs through the intact flow and the planes: a time limit is honoured by
every stage (no LP begun once it is spent, the bracket proven so far returned) and every
answer on these paths carries a certificate that checks.

No test reads a wall clock: the engine's clock (``flow.budget.clock``) is moved by the
test at a chosen point of the work, so the same stages are cut on an idle or a busy
machine.
"""

import time

import numpy as np
import pytest

import fabricopt as fo
import fabricopt.failures.intact_flow as intact_flow
import fabricopt.failures.plane_bracket as plane_bracket
import fabricopt.failures.plane_groups_lp as plane_groups_lp
import fabricopt.failures.plane_lp as plane_lp
import fabricopt.failures.plane_lp_size as plane_lp_size
import fabricopt.failures.plane_routes as plane_routes
import fabricopt.failures.reroute as reroute
import fabricopt.flow.budget as budget
from fabricopt.failures.plane_routing import proven_plane_rate
from fabricopt.failures.planes import plane_structure


class _Clock:
    """The real clock plus ``ahead`` seconds, which a test moves when the work reaches a
    point of its choosing (the call's start is read before that, so the limit is spent
    from there on)."""

    def __init__(self):
        self.ahead = 0.0

    def __call__(self):
        return time.perf_counter() + self.ahead


def _failed_superpod(su):
    # 1% of the leaf-spine links of superpod(4) is 10 of its 1,024 links (seed 1).
    return fo.fail_random(fo.superpod(su), 0.01, seed=1, tiers=["leaf-spine"])


def _spent_on_entry(monkeypatch, module, name, clock, ahead=1e6):
    """Move ``clock`` ``ahead`` seconds as ``module.name`` begins (by default past any
    limit)."""
    real = getattr(module, name)

    def spending(*args, **kwargs):
        clock.ahead = ahead
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spending)


def _begun(monkeypatch, module, name):
    """Record every call of ``module.name`` (the call still runs)."""
    calls, real = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _general_lp(monkeypatch):
    """Route through the general planes' LP: a SuperPOD's whole groups would take the
    small LP of their own (:mod:`fabricopt.failures.plane_groups_lp`)."""
    monkeypatch.setattr(plane_bracket, "whole_groups", lambda pl: "declined by the test")


def _certified(fab, r):
    check = fo.check_certificate(fab, r)
    assert check.ok, check
    assert 0 < r.lower <= r.upper * (1 + 1e-9)
    return r


def test_a_limit_spent_during_the_detours_begins_no_lp(monkeypatch):
    # The time limit runs out as the detours' search begins: it keeps the even spread it
    # steered (a proof of its own), begins neither its LP nor the planes' LP, and the answer
    # is that certified bracket, named after the stage that proved it.
    fab = _failed_superpod(4)
    clock = _Clock()
    monkeypatch.setattr(budget, "clock", clock)
    _spent_on_entry(monkeypatch, intact_flow, "detour_flows", clock)
    lps = _begun(monkeypatch, reroute, "_least_overload")
    lps += _begun(monkeypatch, plane_lp, "solve_lp")
    lps += _begun(monkeypatch, plane_groups_lp, "solve_lp")
    r = _certified(fab, fo.max_concurrent_flow(fab, time_limit=600))
    assert lps == []
    assert r.stages["lower"] in ("intact flow rerouted", "two-phase floor")
    assert r.method == "bounds"


def test_a_limit_spent_while_the_planes_lp_is_built_does_not_begin_it(monkeypatch):
    # Time runs out while the planes' LP is assembled: it is not solved (a solver given
    # nothing would stop with no point), the intact flow's bracket stands. (500 of the
    # 600 s go as the detours begin: more than their share, so they begin no LP either.)
    fab = _failed_superpod(4)
    _general_lp(monkeypatch)
    clock = _Clock()
    monkeypatch.setattr(budget, "clock", clock)
    _spent_on_entry(monkeypatch, intact_flow, "detour_flows", clock, ahead=500.0)
    _spent_on_entry(monkeypatch, plane_lp, "_plane_lp", clock)
    solves = _begun(monkeypatch, plane_lp, "solve_lp")
    built = _begun(monkeypatch, plane_lp, "_plane_lp")
    r = _certified(fab, fo.max_concurrent_flow(fab, time_limit=600))
    assert built == ["_plane_lp"] and solves == []
    assert r.stages["lower"] in ("intact flow rerouted", "two-phase floor")


def test_solve_planes_keeps_time_for_the_proof(monkeypatch):
    # A limit the build itself uses up (the clock moves 10 s while it is assembled) leaves
    # no time for the LP: none is begun. With the limit lifted the same LP is solved.
    fab = _failed_superpod(4)
    pl, _ = plane_structure(fab)
    clock = _Clock()
    monkeypatch.setattr(budget, "clock", clock)
    real = plane_lp._plane_lp

    def slow_build(*args):
        clock.ahead += 10.0
        return real(*args)

    monkeypatch.setattr(plane_lp, "_plane_lp", slow_build)
    solves = _begun(monkeypatch, plane_lp, "solve_lp")
    # 10 s of build and 2.5 x 10 s kept for the proof: 30 s is not enough, 1,000 s is.
    assert plane_lp.solve_planes(pl, time_limit=30.0, reserve=2.5)[0] is None
    assert solves == []
    assert plane_lp.solve_planes(pl, time_limit=1000.0, reserve=2.5)[0] is not None
    assert solves == ["solve_lp"]


def test_an_lp_that_would_not_end_in_time_is_not_begun(monkeypatch):
    # The LP is begun only when what a limit leaves covers its expected time (nonzeros x
    # IPM_SECONDS_PER_NONZERO), and without a limit only up to UNTIMED_MAX_NONZEROS: the
    # same sizes decide on a busy machine as on an idle one.
    fab = _failed_superpod(4)
    pl, _ = plane_structure(fab)
    solves = _begun(monkeypatch, plane_lp, "solve_lp")
    monkeypatch.setattr(plane_lp_size, "IPM_SECONDS_PER_NONZERO", 1.0)  # a nonzero a second
    assert plane_lp.solve_planes(pl, time_limit=1000.0)[0] is None
    monkeypatch.setattr(plane_lp_size, "UNTIMED_MAX_NONZEROS", 0)
    assert plane_lp.solve_planes(pl)[0] is None
    assert solves == []


def test_the_general_lp_is_not_built_when_the_arcs_say_it_cannot_fit(monkeypatch):
    # Under a limit below the least the general planes' LP could take (assembly, proof and
    # LP, each estimated low from the fabric's arcs), it is not assembled.
    from fabricopt.graph_arrays import GraphArrays

    fab = _failed_superpod(4)
    _general_lp(monkeypatch)
    traffic = fo.all_to_all(fab)
    arcs = GraphArrays.from_fabric(fab).n_arcs
    least = arcs * (plane_bracket.BUILD_SECONDS_PER_ARC * (1 + plane_bracket.PROOF_PER_BUILD)
                    + plane_bracket.LP_NONZEROS_PER_ARC * plane_lp_size.IPM_SECONDS_PER_NONZERO)
    monkeypatch.setattr(budget, "clock", lambda: 0.0)  # no time passes while it decides
    built = _begun(monkeypatch, plane_lp, "_plane_lp")
    assert plane_bracket.plane_bracket(fab, traffic, time_limit=0.9 * least) is None
    assert built == []
    # Without a limit, an LP the arcs say is larger than UNTIMED_MAX_NONZEROS is not
    # assembled either (its LP would not be begun).
    monkeypatch.setattr(plane_bracket, "UNTIMED_MAX_NONZEROS",
                        arcs * plane_bracket.LP_NONZEROS_PER_ARC - 1)
    assert plane_bracket.plane_bracket(fab, traffic) is None
    assert built == []


def test_the_detours_stop_where_the_time_does():
    # detour_flows told that no time is left returns the steered spread, no LP: a weaker
    # bound than the unlimited search's, proven all the same by ``rerouted``.
    from fabricopt.failures.intact_flow import IntactFlow
    from fabricopt.flow.proof import smallest_demand
    from fabricopt.graph_arrays import GraphArrays

    fab = _failed_superpod(4)
    traffic = fo.all_to_all(fab)
    whole = fo.superpod(4)
    intact = IntactFlow.of(whole, fo.max_concurrent_flow(whole, traffic), traffic)
    ga = GraphArrays.from_fabric(fab)
    got = reroute.detour_flows(intact.base, ga, 1.0, lambda: 0.0)
    assert got is not None
    lost, share, detours = got
    proven = reroute.rerouted(intact.base, lost, share, detours, ga, smallest_demand(traffic))
    assert proven is not None and 0 < proven.lower <= intact.base.theta
    # Every lost arc's detour is a unit flow (its row sums to at least one arc's worth).
    assert np.all(np.asarray(detours.sum(axis=1)).ravel() >= 1 - 1e-9)


def test_middle_volumes_read_by_zone_pair_are_the_same_terms():
    # The hubs' rows take the pairs of a zone pair from a table read once; the terms are
    # those the search through every pair gives.
    fab = fo.fail_random(fo.superpod(4), 0.02, seed=3, tiers=["leaf-spine"])
    pl, _ = plane_structure(fab)
    cl, ct = plane_routes.server_classes(pl), plane_lp.counts(pl)
    lp = plane_lp._PlaneLP(pl, cl, ct)
    lp.shares()
    c = lp.c
    ends = pl.leaf_zone[ct.pairs]
    for z1 in range(pl.n_zones):
        for z2 in range(pl.n_zones):
            if z1 == z2:
                continue
            w = plane_lp._middle_weights(pl, ct, z1, z2)
            rows = np.flatnonzero((ends[:, 0] == z1) & (ends[:, 1] == z2)).tolist()
            for p in range(pl.n_planes):
                args = (pl, ct, c["alpha"], c["beta"], c["gamma"], c["climb"], z1, z2, p,
                        lp.d0, w)
                assert plane_lp._middle_volume(*args, rows) == plane_lp._middle_volume(*args)


@pytest.mark.slow
def test_a_failed_superpod_is_bracketed_within_the_gap_and_certified():
    # superpod(4) without 10 of its 1,024 leaf-spine links: the intact flow sent around
    # them, then the planes, close it to within 1% (0.392 <= theta <= 0.394 per unit of
    # demand: the cut around a leaf that lost links, 400 Gb/s NICs); both proofs re-check.
    fab = _failed_superpod(4)
    r = _certified(fab, fo.max_concurrent_flow(fab))
    assert r.upper - r.lower <= 0.01 * r.upper
    assert r.stages["lower"] == "planes"


# -- whole groups: a SuperPOD's units through the small LP of their own -------------------

def _group_bracket(su=4):
    fab = _failed_superpod(su)
    traffic = fo.all_to_all(fab)
    return fab, traffic, plane_bracket.plane_bracket(fab, traffic)


def test_whole_groups_carry_a_failed_superpod_at_its_nic_bound():
    # superpod(4) without 10 of its 1,024 leaf-spine links still carries what its NICs
    # allow: each GPU sends to the 1,016 GPUs outside its server over one 400 Gb/s NIC,
    # so theta = 400 / 1,016 Gb/s per pair, 400 x 1,023 / 1,016 = 402.756 Gb/s per GPU
    # over its 1,023 targets (the exact LP by the failed fabric's endpoint orbits says the
    # same). The units' LP routes it, its pairs on two rails turned at the leaves it picks.
    fab, traffic, r = _group_bracket()
    assert r.lower == pytest.approx(400 / 1016, rel=1e-6)
    assert r.upper >= r.lower  # the cut is above the flow
    proof = r.certificate.lower_proof
    assert proof.turn is not None and proof.turn.nnz > 0
    _certified(fab, r)
    # The flow the checker rebuilt (scaled to the lower bound) fits every arc, and every
    # pair is sent whole (its shares sum to one).
    rate = proven_plane_rate(fab, traffic, proof)
    assert rate.sent == pytest.approx(1.0, rel=1e-9)
    ga = r.certificate.ga
    assert np.all(rate.load * rate.theta / rate.sent <= ga.capacity * (1 + 1e-9))


def test_turns_are_part_of_the_proof():
    # Without its turns the pairs of a unit on two rails are not sent at all: the proof
    # proves nothing. Turned instead at the sender's own leaf (a flow all the same: the
    # receiving server has a NIC there too) it proves no more than the LP's choice.
    from dataclasses import replace

    import scipy.sparse as sp

    fab, traffic, r = _group_bracket()
    proof = r.certificate.lower_proof
    assert proven_plane_rate(fab, traffic, replace(proof, turn=None)).theta == 0.0
    pl, _ = plane_structure(fab)
    pairs = plane_lp.counts(pl).pairs
    own = sp.csr_matrix((np.ones(len(pairs)), (np.arange(len(pairs)), pairs[:, 0])),
                        shape=proof.turn.shape)
    at_own = proven_plane_rate(fab, traffic, replace(proof, turn=own))
    assert 0 < at_own.theta <= r.lower * (1 + 1e-9)
    # A turn at a leaf of another unit crosses a NIC the servers do not have: no proof.
    other = np.array([np.flatnonzero(pl.leaf_group != pl.leaf_group[a])[0]
                      for a in pairs[:, 0]])
    elsewhere = sp.csr_matrix((np.ones(len(pairs)), (np.arange(len(pairs)), other)),
                              shape=proof.turn.shape)
    got = proven_plane_rate(fab, traffic, replace(proof, turn=elsewhere))
    assert got.theta == 0.0 and "no NIC" in got.why
    # A negative share is no flow.
    negative = proof.turn.copy()
    negative.data[0] = -0.5
    assert proven_plane_rate(fab, traffic, replace(proof, turn=negative)).theta == 0.0


def test_groups_that_are_not_whole_take_the_general_lp():
    # A GPU that lost its NIC link makes its server unlike the others of its unit: the
    # small LP declines (its turns would cross that missing NIC), the general one answers.
    from fabricopt.failures.plane_groups_lp import whole_groups

    fab = fo.superpod(2).without_links([("n0.gpu0", "r0.l0")])
    pl, _ = plane_structure(fab)
    assert whole_groups(pl) == "a group has servers of two kinds"
    assert whole_groups(plane_structure(_failed_superpod(4))[0]) == ""


def test_the_group_lp_is_not_begun_without_time(monkeypatch):
    # Begun only when what a limit leaves covers nonzeros x GROUP_IPM_SECONDS_PER_NONZERO;
    # at a second a nonzero, 1,000 s cover none of its thousands.
    pl, _ = plane_structure(_failed_superpod(4))
    solves = _begun(monkeypatch, plane_groups_lp, "solve_lp")
    monkeypatch.setattr(plane_groups_lp, "GROUP_IPM_SECONDS_PER_NONZERO", 1.0)
    found = plane_groups_lp.solve_group_planes(pl, time_limit=1000.0)
    assert found.proof is None and "not begun" in found.why and solves == []
    monkeypatch.setattr(plane_groups_lp, "GROUP_IPM_SECONDS_PER_NONZERO", 0.0)
    assert plane_groups_lp.solve_group_planes(pl, time_limit=1000.0).proof is not None
    assert solves == ["solve_lp"]


@pytest.mark.slow
def test_a_failed_4096_gpu_superpod_meets_its_nic_bound():
    # superpod(16) without 1% of its 4,096 leaf-spine links: 400 x 4,095 / 4,088 =
    # 400.685 Gb/s per GPU, its NIC bound (the exact LP by its 49 endpoint orbits: the
    # same); the default answer reaches it to 1e-5 through the units' LP, certified.
    fab = _failed_superpod(16)
    r = _certified(fab, fo.max_concurrent_flow(fab))
    assert r.stages["lower"] == "planes"
    assert r.per_endpoint_gbps == pytest.approx(400 * 4095 / 4088, rel=1e-5)


def test_the_answer_says_what_was_not_begun_for_lack_of_time(monkeypatch):
    # superpod(16) minus 1%: when the units' LP does not fit in what the limit leaves (at a
    # second a nonzero, 600 s cover none of its tens of thousands), the intact flow's
    # bracket is the answer, and its message says which LP was not begun and about how
    # long it and its proof would take, not that the approximate rounds would continue.
    monkeypatch.setattr(plane_groups_lp, "GROUP_IPM_SECONDS_PER_NONZERO", 1.0)
    fab = _failed_superpod(16)
    r = _certified(fab, fo.max_concurrent_flow(fab, time_limit=600))
    assert r.stages["lower"] == "intact flow rerouted"
    assert "planes' LP of whole groups" in r.message and "was not begun" in r.message
    assert "nonzeros, about" in r.message and "its proof about" in r.message
    assert "method='approx'" not in r.message


def test_the_detours_give_their_spread_only_where_the_units_lp_follows(monkeypatch):
    # A failed SuperPOD's units are whole groups: the intact flow's detours begin no search
    # (no wider ways round crowded leaves, no LP), and the planes close the bracket.
    fab = _failed_superpod(4)
    searches = _begun(monkeypatch, reroute, "_wider_detours")
    searches += _begun(monkeypatch, reroute, "_least_overload")
    r = _certified(fab, fo.max_concurrent_flow(fab))
    assert searches == [] and r.stages["lower"] == "planes"


def test_a_busy_machine_scales_the_estimates(monkeypatch):
    # Under a limit the units' LP and its proof are estimated in CPU seconds times the
    # call's pace (wall seconds per CPU second so far): a clock running 4 x the CPU gives 4.
    cpu0 = time.process_time()
    monkeypatch.setattr(plane_bracket, "now", lambda: 4.0 * (time.process_time() - cpu0))
    start, cpu = plane_bracket.now(), time.process_time()
    while time.process_time() - cpu < 0.2:  # some CPU work: the pace needs 0.05 s of it
        sum(range(10_000))
    assert plane_bracket._pace(start, cpu) == pytest.approx(4.0, rel=0.05)
    # superpod(4)'s units' LP has about 5,000 nonzeros: 0.1 s at 2e-5 s each fits in
    # 10 s at pace 1, not at pace 1,000 (100 s).
    pl, _ = plane_structure(_failed_superpod(4))
    assert plane_groups_lp.solve_group_planes(pl, 10.0, pace=1.0).proof is not None
    slow = plane_groups_lp.solve_group_planes(pl, 10.0, pace=1000.0)
    assert slow.proof is None and "not begun" in slow.why


@pytest.mark.parametrize("make, fraction", [("fo.superpod(4, oversubscription=2)", 0.05)])
def test_the_units_lp_meets_the_exact_optimum(make, fraction):
    # The failed fabric's own exact LP, one root flow per endpoint orbit of the symmetry
    # the search proves (seconds here), is the reference: the units' routing is never above
    # it, the cut never below, and on these SuperPODs the routing reaches it (to 1e-6).
    from fabricopt.symmetry.search import with_symmetry

    fab = fo.fail_random(eval(make, {"fo": fo}), fraction, seed=2, tiers=["leaf-spine"])
    traffic = fo.all_to_all(fab)
    r = plane_bracket.plane_bracket(fab, traffic)
    exact = fo.max_concurrent_flow(with_symmetry(fab, fo.search_symmetry(fab).symmetry),
                                   traffic, method="symmetric")
    assert exact.exact and r.certificate.lower_proof.turn is not None
    assert r.lower <= exact.theta * (1 + 1e-7) and r.upper >= exact.theta * (1 - 1e-7)
    assert r.lower == pytest.approx(exact.theta, rel=1e-6)
    _certified(fab, r)
