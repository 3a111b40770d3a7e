"""Servers relaying at both ends, as the attach-switch LP between server classes chooses: a
feasible point of the full LP (its conservation and capacity rows recomputed), never above the
LP's theta, and it meets a failed rail cluster's cut where PXN relays stop short."""

import random

import numpy as np
import pytest
from flow_helpers import certified, failed_share, feasible_below_lp, random_traffic

import fabricopt as fo
from fabricopt.flow.approx import CoreGraph
from fabricopt.flow.bounds import _route_part, ecmp_point, rail_labels
from fabricopt.flow.bounds_first.domain_relays import route_inside_domains
from fabricopt.tiers import is_scale_up_arc


def _scale_up(fab, model):
    return np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in model.ga.arcs], dtype=bool)


def _both_ends(fab, traffic):
    model = fo.build_flow_lp(fab, traffic)
    return model, ecmp_point(model, _scale_up(fab, model), scale_out_lp=True, both_ends=True)


def _strong_servers(nodes):
    # 4 GPUs a server, each with 2 x 4 NVLinks of 400 Gb/s (3,200 Gb/s against a 400 Gb/s
    # NIC), on a rail-optimized network of radix-8 leaves: 3 servers under a leaf, 2 uplinks.
    return fo.cluster(fo.nvswitch_domain(4, 2, 4, 400.0), nodes=nodes,
                      scale_out="rail_optimized", oversubscription=2, leaf_radix=8)


def _random_cluster(seed):
    """A small cluster of servers, often with failed switch links or NICs."""
    rng = random.Random(seed)
    domain = rng.choice([fo.nvswitch_domain(4, 2, 4, 400.0), fo.nvswitch_domain(4, 2, 2, 100.0),
                         fo.nvswitch_domain(2, 1, 2, 200.0)])
    scale_out = rng.choice(["rail_optimized", "clos"])
    fab = fo.cluster(domain, nodes=rng.randint(3, 9), scale_out=scale_out,
                     oversubscription=rng.choice([1.0, 2.0, 3.0]),
                     **({"leaf_radix": 8} if scale_out == "rail_optimized" else {"radix": 8}))
    if rng.random() < 0.7:
        fab = failed_share(fab, rng, rng.choice([0.05, 0.1, 0.2]))
    return fab


@pytest.mark.parametrize("seed", range(16))
def test_the_relayed_routing_is_a_feasible_point_below_the_lp(seed):
    fab = _random_cluster(seed)
    traffic = random_traffic(fab, seed)
    model, point = _both_ends(fab, traffic)
    if point is None:
        # Declined: a server with no live NIC (its traffic needs every arc), so the stage
        # keeps the other routings. Only failures leave a server without one.
        assert "(edited)" in fab.name
        return
    feasible_below_lp(fab, traffic, model, point)


def test_a_failed_leaf_uplink_is_carried_by_the_other_rails():
    # 6 servers, 2 scalable units of 3, 4 rails, 2 spines; r0.l0 loses its link to s0, so
    # scalable unit 0 keeps 7 of its 8 uplinks. Its cut: 7 x 400 over 12 GPUs x 12 outside
    # = 19.444 (below the NIC's 400 / 20 other-server GPUs = 20). PXN sends all of the unit's
    # rail-0 traffic through r0.l0's one uplink: 400 / (12 GPUs x 3 rail-0 GPUs outside)
    # = 11.111. Relaying at both ends moves it to the other rails and meets the cut.
    base = _strong_servers(6)
    fab = base.without_links([("r0.l0", "s0")])
    traffic = fo.all_to_all(fab)
    model, point = _both_ends(fab, traffic)
    pxn = ecmp_point(model, _scale_up(fab, model), scale_out_lp=True,
                     rails=rail_labels(fab, model.ga))
    assert pxn[-1] == pytest.approx(400 / 36, rel=1e-9)
    assert point[-1] == pytest.approx(7 * 400 / 144, rel=1e-6)
    result = certified(fab, fo.max_concurrent_flow(fab, traffic), traffic)
    assert result.method == "bounds"
    assert result.theta == pytest.approx(7 * 400 / 144, rel=1e-6)


def test_a_server_that_lost_a_nic_sends_through_its_others():
    # n0.gpu0 loses its NIC: its server becomes a class of its own, entering and leaving
    # through its three other NICs. Its own cut then binds: 4 GPUs send to 20 GPUs of other
    # servers over 3 x 400 Gb/s, theta <= 1,200 / 80 = 15 (below the healthy NIC bound,
    # 400 / 20 = 20).
    base = _strong_servers(6)
    nic = next(v for v in base.graph.successors("n0.gpu0") if not is_scale_up_arc(
        base.graph["n0.gpu0"][v]))
    fab = base.without_links([("n0.gpu0", nic)])
    traffic = fo.all_to_all(fab)
    _, point = _both_ends(fab, traffic)
    assert point[-1] == pytest.approx(15.0, rel=1e-6)
    result = certified(fab, fo.max_concurrent_flow(fab, traffic), traffic)
    assert result.theta == pytest.approx(15.0, rel=1e-6)


def test_weak_nvlink_keeps_pxn_relays():
    # With 100 Gb/s NVLinks (2 per switch pair) the second hop over NVLink binds: the relayed
    # routing falls short of PXN, and the bounds stage keeps the better of the two.
    fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=6, scale_out="rail_optimized",
                     oversubscription=2, leaf_radix=8)
    traffic = fo.all_to_all(fab)
    model, point = _both_ends(fab, traffic)
    pxn = ecmp_point(model, _scale_up(fab, model), scale_out_lp=True,
                     rails=rail_labels(fab, model.ga))
    assert point[-1] < pxn[-1]
    result = certified(fab, fo.max_concurrent_flow(fab, traffic), traffic, exact=False)
    assert result.lower >= pxn[-1] * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_routing_inside_servers_one_at_a_time_is_routing_over_the_whole_graph(seed):
    # The same fewest-hop WCMP flows, arc by arc, whether each commodity is routed on its
    # own server's arcs or on every scale-up arc at once.
    fab = _random_cluster(seed)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    g = CoreGraph.of(model)
    up = _scale_up(fab, model)[model.core_arcs]
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    domain = connected_components(csr_matrix((np.ones(int(up.sum())), (g.tail[up], g.head[up])),
                                             shape=(g.n, g.n)), directed=False)[1]
    inside = np.where(domain[None, :] == domain[g.sources][:, None], g.demand, 0.0)
    one, whole = np.zeros((len(g.sources), len(up))), np.zeros((len(g.sources), len(up)))
    assert route_inside_domains(g, up, domain, inside, one)
    assert _route_part(g, up, inside, whole)
    np.testing.assert_allclose(one, whole, atol=1e-12)
    # A target outside its source's server is refused, with nothing written.
    assert not route_inside_domains(g, up, domain, g.demand, one * 0)


@pytest.mark.parametrize("seed", range(6))
def test_unit_flows_by_one_solve_per_source_are_fewest_hop_wcmp(seed):
    # The dense solve gives each pair the flow ecmp_columns builds for it alone, arc by arc,
    # with random capacities: on a server (GPU, switch, GPU) and on a torus, where pairs
    # have many fewest-hop paths of several hops.
    from dataclasses import replace

    from fabricopt.flow.approx.colgen import ecmp_columns
    from fabricopt.flow.bounds_first.domain_relays import wcmp_unit_flows

    rng = np.random.default_rng(seed)
    fab = fo.nvswitch_domain(6, 3, 4, 100.0) if seed % 2 else fo.torus((3, 4))
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    g = CoreGraph.of(model)
    capacity = g.capacity * rng.choice([0.5, 1.0, 1.5], size=len(g.capacity))
    sources, targets = g.sources[:4], g.sources[2:]
    share, reach = wcmp_unit_flows(g.n, g.tail, g.head, capacity, sources, targets)
    unit = np.concatenate([(share[i][:, None] * reach[i][g.head]).T
                           for i in range(len(sources))])
    pairs = [(s, t) for s in sources for t in targets]
    demand = np.zeros((len(pairs), g.n))
    for i, (s, t) in enumerate(pairs):
        demand[i, t] = float(s != t)
    one = replace(g, capacity=capacity, sources=np.array([s for s, _ in pairs]), demand=demand)
    used, loads, _ = ecmp_columns(one, np.ones(len(capacity)), capacity)
    expected = np.zeros_like(unit)
    for i, (a, f) in enumerate(zip(used, loads, strict=True)):
        expected[i, a] = f
    np.testing.assert_allclose(unit, expected, atol=1e-12)
    assert unit.sum() > 0  # pairs did move
