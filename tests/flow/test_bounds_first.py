"""Bounds first against the full LP: on random small fabrics (oversubscribed, partly filled,
multi-plane, failed) the bounds stage's bracket contains the LP's theta, every answer re-checks
by its certificate, and the families whose structure makes a cut tight close without an LP."""


import numpy as np
import pytest
from flow_helpers import certified, random_fabric, random_traffic

import fabricopt as fo
from fabricopt.flow.bounds import ecmp_point, hierarchy_partitions, structural_cut_lengths
from fabricopt.graph_arrays import GraphArrays


def _against_lp(seed):
    fab = random_fabric(seed)
    traffic = random_traffic(fab, seed)
    exact = certified(fab, fo.max_concurrent_flow(fab, traffic, method="lp",
                                                  bounds_first=False), traffic)
    first = fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=True)
    # Whatever the stage found, the answer is certified and agrees with the LP.
    certified(fab, first, traffic)
    assert first.theta == pytest.approx(exact.theta, rel=1e-6)
    return first


@pytest.mark.parametrize("seed", range(20))
def test_bounds_first_agrees_with_the_lp(seed):
    _against_lp(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 60))
def test_bounds_first_agrees_with_the_lp_more(seed):
    _against_lp(seed)


@pytest.mark.parametrize("seed", range(12))
def test_stage_bounds_contain_the_lp(seed):
    # The stage alone: the cut is at least theta and the ECMP flow at most theta (each is a
    # proof, so the LP's theta lies between them), checked against the LP itself.
    fab = random_fabric(seed)
    traffic = random_traffic(fab, seed)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=False).theta
    ga = GraphArrays.from_fabric(fab)
    cut, lengths = structural_cut_lengths(fab, traffic, ga)
    assert cut >= exact * (1 - 1e-9)
    if np.isfinite(cut):  # the cut's arcs as lengths re-prove it on the whole graph
        from fabricopt.flow.proof import explicit_distance_bound

        assert explicit_distance_bound(fab, traffic, lengths, ga) <= cut * (1 + 1e-9)
    point = ecmp_point(fo.build_flow_lp(fab, traffic))
    if point is not None:
        assert point[-1] <= exact * (1 + 1e-9)


# Families where a cut of the hierarchy is tight and ECMP meets it, so no LP runs:
# a full fat tree (the host's own link), a leaf-spine (the host link or the leaf's uplinks,
# whichever is smaller, and ECMP spreads evenly over the spines), an oversubscribed leaf-spine
# (the leaf's uplinks), a DGX SuperPOD scalable unit (the server's NICs), a ring (the hop
# lengths: every arc is on fewest-hop routes equally).
CLOSING = [fo.fat_tree(4), fo.fat_tree(6), fo.leaf_spine(6, 2, 4), fo.leaf_spine(4, 3, 3),
           fo.leaf_spine(8, 2, 6), fo.ring(6), fo.superpod(1)]


@pytest.mark.parametrize("fab", CLOSING, ids=[f.name for f in CLOSING])
def test_families_close_by_bounds_alone(fab):
    r = certified(fab, fo.max_concurrent_flow(fab, method="lp", bounds_first=True))
    assert r.method == "bounds", r.message


def test_auto_closes_by_bounds_on_a_fabric_without_a_claim():
    # A failed fat tree has no symmetry claim: method="auto" tries the bounds first, and
    # whichever way it ends the answer is the LP's, with its certificate.
    fab = fo.fat_tree(4)
    fab = fab.without_links([next((u, v) for u, v, d in fab.graph.edges(data=True)
                                  if d.get("tier") == "spine-core")])
    r = certified(fab, fo.max_concurrent_flow(fab))
    lp = fo.max_concurrent_flow(fab, method="lp", bounds_first=False)
    assert r.theta == pytest.approx(lp.theta, rel=1e-6)


def test_hierarchy_has_the_servers_and_the_scalable_units():
    # A 4-node cluster of 4-GPU servers: the partitions include every server alone (its GPUs
    # and switches, the "node" attribute) and the layers closed upward.
    fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=4)
    ga = GraphArrays.from_fabric(fab)
    parts = hierarchy_partitions(fab, ga)
    node = [fab.graph.nodes[v].get("node") for v in ga.nodes]
    server = next(p for p in parts[1:] if all(
        (p[i] == p[j]) == (node[i] == node[j]) for i in range(len(node)) for j in range(i)
        if node[i] is not None and node[j] is not None))
    assert len(set(server[[i for i, x in enumerate(node) if x is not None]])) == 4


def test_tiny_time_limit_keeps_the_bounds_bracket():
    # A fabric the stage does not close (a jellyfish: no hierarchy, ECMP below the optimum):
    # with a time limit too short for the LP, the answer is still at least the stage's
    # bracket, and re-checks.
    fab = fo.jellyfish(12, 4, 2, seed=5)
    stage = fo.max_concurrent_flow(fab, method="lp", bounds_first=True, time_limit=1e-6)
    from fabricopt.flow.api import bounds_stage

    ga = GraphArrays.from_fabric(fab)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))

    alone, _ = bounds_stage(fab, model, fo.all_to_all(fab), tiers=ga.tiers, traffic_scale=1.0,
                            capacity_unit=1.0)
    assert stage.lower >= alone.lower * (1 - 1e-9)
    assert stage.upper <= alone.upper * (1 + 1e-9)
    certified(fab, stage, exact=False)


def test_a_stopped_symmetric_solve_takes_the_stage_flow():
    # A symmetric solve stopped with nothing proven below (its flow dropped here, as a time
    # limit leaves it) takes the stage's ECMP flow: the result is then re-proven as the
    # stage's (method "bounds"), its lengths as the symmetric solve's.
    from dataclasses import replace

    from fabricopt.flow.api import bounds_stage, tighter_bracket

    fab = fo.leaf_spine(4, 2, 3)
    traffic = fo.all_to_all(fab)
    solved = fo.max_concurrent_flow(fab, method="symmetric")
    stopped = replace(solved, theta=None, lower=0.0, status="time_limit",
                      certificate=replace(solved.certificate, lower_proof=None, load=None))
    ga = GraphArrays.from_fabric(fab)
    scale = solved.certificate.traffic_scale  # the stage proves in the same solve units
    scaled = traffic.scaled(scale)
    stage, _ = bounds_stage(fab, fo.build_flow_lp(fab, scaled), scaled, tiers=ga.tiers,
                            traffic_scale=scale, capacity_unit=1.0)
    merged = tighter_bracket(stopped, stage)
    assert merged.method == "bounds" and merged.lower == stage.lower
    assert merged.upper == solved.upper
    certified(fab, merged, exact=False)


def test_a_stage_longer_than_the_limit_is_not_begun(monkeypatch):
    """A routed stage expected to outlast the time left (its cost per entry raised here, as
    on a 2,048-GPU failed cluster) is skipped: the hierarchy cuts and the two-phase floor
    make the bracket, which re-checks; without the limit the stage runs and is at least
    as tight."""
    import fabricopt.flow.budget as budget

    fab = fo.fail_random(fo.leaf_spine(6, 3, 4, links_per_pair=2), 0.1, seed=3)
    full = fo.max_concurrent_flow(fab, bounds_first=True)
    monkeypatch.setattr(budget, "ECMP_SECONDS_PER_ENTRY", 10.0)  # every stage takes "hours"
    quick = fo.max_concurrent_flow(fab, bounds_first=True, time_limit=5.0)
    assert quick.status == "time_limit" and quick.method == "bounds"
    assert "hierarchy cuts only" in quick.message
    assert fo.check_certificate(fab, quick).ok
    assert full.lower >= quick.lower * (1 - 1e-9) and full.upper <= quick.upper * (1 + 1e-9)


def test_too_large_for_the_routed_bounds_the_hose_floor_may_close_it(monkeypatch):
    # Pretend superpod(1) minus one NIC link (a bare graph: no recipe, no claim) is too
    # large for the routed bounds and for the LP. Above: the cut around the server that lost
    # the NIC, 7 x 400 / (8 x 248) = 1.41129. Below: the two-phase rate, 350 Gb/s per GPU
    # into 255 peers = 1.37255, 2.8% under: within a 5% gap no approximate round runs.
    import fabricopt.flow.plan as plan
    import fabricopt.flow.problem as problem

    monkeypatch.setattr(problem, "ECMP_MAX_ENTRIES", 10)
    monkeypatch.setattr(plan, "MAX_AUTO_NONZEROS", 10)
    monkeypatch.setattr(plan, "FIND_SYMMETRY_NONZEROS", 10**12)
    failed = fo.superpod(1).without_links([("n3.gpu0", "r0.l0")])
    bare = fo.from_networkx(failed.graph.copy(), endpoints=failed.endpoints, name="bare")
    r = fo.max_concurrent_flow(bare, gap=0.05)
    hose = fo.valiant_rate(bare).rate_gbps / 255
    assert r.status == "inexact" and "no approximate rounds" in r.message
    assert r.upper == pytest.approx(7 * 400 / (8 * 248), rel=1e-9)
    assert r.lower == pytest.approx(hose, rel=1e-9) and r.lower == pytest.approx(350 / 255)
    assert fo.check_certificate(bare, r).ok


def test_a_time_limit_counts_the_symmetric_methods_own_work(monkeypatch):
    """A found symmetry's method builds no full model: under a time limit the budget is
    weighed against its own work (one root per endpoint orbit, times the arcs), not the
    full LP's. 16 DGX H100 on a 2:1 Clos, read as a bare graph (no claim): the full LP's
    180,480 flow entries are made to "take" 250 s, over a 100 s limit; the symmetric
    method's 23 orbits x 1,410 arcs take 250 x 32,430 / 180,480 = 45 s of it, and it
    answers exactly, as without a limit (before, the limit gave the cut and the hose floor,
    status "time_limit"). The limit is far above the real work (well under a second) so a
    busy machine cannot spend it."""
    import fabricopt.flow.api as api
    import fabricopt.flow.budget as budget
    import fabricopt.flow.plan as plan
    import fabricopt.flow.problem as problem

    fab = fo.cluster(fo.dgx_h100(), nodes=16, scale_out="clos", tiers=2, oversubscription=2,
                     radix=16, whole_servers=False)
    bare = fo.from_networkx(fab.graph.copy(), endpoints=fab.endpoints, name="bare")
    unlimited = fo.max_concurrent_flow(bare)
    monkeypatch.setattr(problem, "ECMP_MAX_ENTRIES", 10)  # too large for the routed stage
    monkeypatch.setattr(plan, "FIND_SYMMETRY_NONZEROS", 10)  # look for the symmetry
    full = api.lp_size_estimate(bare, fo.all_to_all(bare)) // 3
    assert full == 180_480 and bare.graph.number_of_edges() == 1_410
    monkeypatch.setattr(budget, "ECMP_SECONDS_PER_ENTRY", 250.0 / full)
    r = fo.max_concurrent_flow(bare, time_limit=100.0)
    assert r.exact and r.method == "symmetric"
    assert r.theta == pytest.approx(unlimited.theta, rel=1e-7)
    assert fo.check_certificate(bare, r).ok
