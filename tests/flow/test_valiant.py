"""Two-phase (Valiant) hose rate: closed forms by hand, the hose claim re-proved by the
max-concurrent-flow LP on traffic the rate promises, symmetric = per-source LP, errors."""

import networkx as nx
import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow import certificate
from fabricopt.flow.two_phase import lp as rate_lp
from fabricopt.flow.two_phase import plan as rate_plan


def _loads_fit(fab, bound):
    """The reported two-phase load is within every arc's capacity and touches it somewhere
    (otherwise the rate could be raised and the LP was not solved to optimality)."""
    cap = {(u, v): c for u, v, c in fab.graph.edges(data="capacity")}
    assert set(bound.load_gbps) == set(cap)
    ratios = [bound.load_gbps[a] / cap[a] for a in cap]
    assert max(ratios) <= 1 + 1e-9
    assert max(ratios) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("fab, rate, hubs", [
    # k=4 fat-tree at 100 Gb/s, hubs the 4 cores. A host's one link carries its phase-1
    # r up and phase-2 r down (opposite arcs); an edge switch sends 2r over 2 uplinks and an
    # aggregation switch 2r over 2 core links: r = 100, the link rate. This proves the
    # docs/throughput.md#fat-tree case "k-ary fat-tree, any permutation of servers: theta = 1"
    # for all permutations at once.
    (fo.fat_tree(4, link_gbps=100), 100.0, 4),
    # 4 leaves x 4 endpoints, one spine, 100 Gb/s: a leaf's only uplink carries 4r, so
    # r = 100 / 4 = 25 (4:1 oversubscription).
    (fo.leaf_spine(leaves=4, spines=1, endpoints_per_leaf=4, link_gbps=100), 25.0, 1),
    # Ring of 8 unit links, every node a hub (p = 1/8). Phase 1 moves r/8 to each node at
    # ring distances 0,1,1,2,2,3,3,4: 16 r/8 = 2r arc-units per source, 16 r over the 16
    # arcs, doubled by phase 2: 2r <= 1 on average, met by the invariant flow: r = 1/2.
    (fo.ring(8), 0.5, 8),
    # DGX H100: 8 GPUs, 18 links of 200 Gb/s split 5/4/4/5 over 4 NVSwitches. Shares
    # p = 5/18, 4/18, 4/18, 5/18 (capacity in), so a GPU sends r * k/18 over its k links to
    # each switch: r <= 18 x 200 = 3600, the GPU's injection.
    (fo.dgx_h100(), 3600.0, 4),
], ids=lambda x: x.name if isinstance(x, fo.Fabric) else str(x))
def test_closed_forms(fab, rate, hubs):
    b = fo.valiant_rate(fab)
    assert b.status == "optimal" and len(b.hubs) == hubs
    assert b.rate_gbps == pytest.approx(rate, rel=1e-9)
    _loads_fit(fab, b)


@pytest.mark.parametrize("make", [
    lambda: fo.fat_tree(4),
    lambda: fo.torus((4, 4)),
    lambda: fo.dgx_h100(),
    lambda: fo.rail_optimized(4, gpus_per_node=4, leaf_radix=8),
    lambda: fo.cluster(fo.dgx_h100(), 2, scale_out="rail_optimized"),
    # Dragonflies: their links bind unevenly, so a wrong phase-2 (reverse orbit) term
    # changes the rate here, where rings and fat-trees would hide it.
    lambda: fo.dragonfly(2, 1, 1),
    lambda: fo.dragonfly(2, 3, 2),
])
def test_symmetric_equals_per_source_lp(make):
    fab = make()
    sym = fo.valiant_rate(fab, method="symmetric")
    full = fo.valiant_rate(fab, method="lp")
    assert sym.method == "symmetric" and full.method == "lp"
    assert sym.rate_gbps == pytest.approx(full.rate_gbps, rel=1e-7)
    _loads_fit(fab, sym)
    _loads_fit(fab, full)


@pytest.mark.parametrize("make", [
    # No symmetry claim and uneven degrees: the per-source LP, general case.
    lambda: fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=2, seed=3,
                         link_gbps=10.0),
    lambda: fo.clos(40, radix=8, oversubscription=3, link_gbps=100),
])
def test_hose_claim_holds_for_traffic_within_the_rate(make):
    # The claim is "every traffic with row and column sums <= r is routable". Re-prove it
    # with the exact max-concurrent-flow LP (an independent formulation) on traffic at the
    # rate: theta >= 1 each time, certificates checked.
    fab = make()
    r = fo.valiant_rate(fab).rate_gbps
    assert r > 0
    n = len(fab.endpoints)
    patterns = [fo.all_to_all(fab, gbps=r / (n - 1)),  # each sends and receives r in all
                fo.permutation(fab, seed=1, gbps=r),
                fo.permutation(fab, seed=2, gbps=r),
                fo.longest_matching(fab, gbps=r)]
    for traffic in patterns:
        res = certified(fab, fo.max_concurrent_flow(fab, traffic, method="lp"), traffic)
        assert res.lower >= 1 - 1e-6, traffic.name


def test_rail_only_cluster_uses_rail_leaves_not_nvswitches_as_hubs():
    # 4 DGX H100 nodes on a rail-only network: the hubs are the 8 rail leaves (scale-out),
    # not the NVSwitches. GPU g reaches rail j's leaf through GPU j of its own node over
    # NVLink; each NIC then carries its own GPU's share 1/8 r plus 7 relayed shares 7/8 r,
    # i.e. r, up, and r down in phase 2: r = 400 Gb/s, the NIC rate.
    fab = fo.cluster(fo.dgx_h100(), 4, scale_out="rail_optimized", spine=False)
    b = fo.valiant_rate(fab)
    # Every hub is a rail leaf: its links are NIC links, none is NVLink.
    assert len(b.hubs) == 8 and b.level == 1
    assert all({t for _, _, t in fab.graph.in_edges(h, data="tier")} == {"gpu-leaf"}
               for h in b.hubs)
    assert b.rate_gbps == pytest.approx(400.0, rel=1e-9)


def test_custom_hubs_and_endpoint_subset():
    # Ring of 8 unit links, hose among n0..n3 through the single hub n6. All 4r of phase 1
    # enters n6 over its 2 in-arcs (phase 2 leaves on the reverse arcs, which phase 1 does
    # not use): r <= 1/2. Reached by n0, n1 going n0-n7-n6 and n2, n3 going n3-n4-n5-n6:
    # arcs n0->n7, n7->n6, n3->n4, ... carry 2r = 1.
    fab = fo.ring(8)
    b = fo.valiant_rate(fab, ["n0", "n1", "n2", "n3"], hubs=["n6"])
    assert b.method == "lp" and b.hubs == ("n6",) and b.n_endpoints == 4
    assert b.rate_gbps == pytest.approx(0.5, rel=1e-9)
    _loads_fit(fab, b)


def test_default_takes_the_best_hub_level():
    # 4 DGX H100 on rail leaves of radix 8 at 2:1: down 5, one leaf per rail holding 4
    # servers, so up = ceil(4 / 2) = 2; spines S = ceil(8 x 2 / 8) = 2. Through the spines
    # (level 2) a leaf sends 4r over 2 x 400 Gb/s of uplinks: r = 200. Through the rail
    # leaves (level 1) a GPU reaches each rail over NVLink, and each NIC carries 1/8 r of
    # its own and 7/8 r of relayed traffic each way: r = 400, the NIC rate. The default
    # must find the 400.
    fab = fo.cluster(fo.dgx_h100(), 4, scale_out="rail_optimized", leaf_radix=8,
                     oversubscription=2.0)
    assert fo.valiant_rate(fab, hubs=2).rate_gbps == pytest.approx(200.0, rel=1e-9)
    best = fo.valiant_rate(fab)
    assert best.level == 1 and best.rate_gbps == pytest.approx(400.0, rel=1e-9)


def test_oversubscribed_clos_rate():
    # clos(40, radix 8, 3:1) at 100 Gb/s: down = 6, up = 2 per leaf; a full leaf sends 6r
    # over its 2 uplinks to the spines (the hubs): r = 2 x 100 / 6.
    fab = fo.clos(40, radix=8, oversubscription=3, link_gbps=100)
    b = fo.valiant_rate(fab)
    assert b.level == 2 and b.rate_gbps == pytest.approx(200 / 6, rel=1e-9)
    _loads_fit(fab, b)


def test_dead_end_switch_is_not_a_hub():
    # A switch hung off one core of a k=4 fat-tree is the farthest node but lies on no path
    # between hosts: hubs stay the 4 cores and the rate the link rate, 400.
    fab = fo.fat_tree(4)
    g = fab.graph.copy()
    core = next(v for v, d in g.nodes(data=True) if d["layer"] == 3)
    g.add_node("extra", role="switch", layer=4)
    g.add_edge(core, "extra", capacity=400.0)
    g.add_edge("extra", core, capacity=400.0)
    b = fo.valiant_rate(fo.Fabric(g, endpoints=fab.endpoints))
    assert "extra" not in b.hubs and len(b.hubs) == 4
    assert b.rate_gbps == pytest.approx(400.0, rel=1e-9)


def test_tiny_capacities_scale():
    # Ring of 6 at 1e-7 Gb/s: ring distances 0,1,1,2,2,3 from a node, 9 r/6 per source,
    # 9 r over the 12 arcs, doubled by phase 2: 1.5 r <= 1e-7, so r = 2/3 x 1e-7.
    b = fo.valiant_rate(fo.ring(6, link_gbps=1e-7))
    assert b.rate_gbps == pytest.approx(2 / 3 * 1e-7, rel=1e-9)


def test_residual_is_charged(monkeypatch):
    # Remove 10% of the root's flow on one arc of the solver's point: conservation breaks by
    # that amount at both ends. The certificate must charge it (rate below the clean one),
    # and the hose claim must still hold at the charged rate. Polishing would repair such a
    # point before certifying, so it is switched off here.
    fab = fo.leaf_spine(leaves=4, spines=1, endpoints_per_leaf=4, link_gbps=100)
    clean = fo.valiant_rate(fab, method="lp").rate_gbps  # 25, see test_closed_forms
    real = rate_lp.solve_lp
    monkeypatch.setattr(certificate, "polish", lambda lp, x, tol=1e-6: x)

    def perturbed(lp, *args, **kwargs):
        sol = real(lp, *args, **kwargs)
        j = int(np.flatnonzero(sol.x[:-1] > 1e-9)[0])
        sol.x = sol.x.copy()
        sol.x[j] *= 0.9
        return sol

    monkeypatch.setattr(rate_lp, "solve_lp", perturbed)
    b = fo.valiant_rate(fab, method="lp")
    assert b.max_residual > 0 and 0 < b.rate_gbps < clean
    monkeypatch.undo()
    traffic = fo.permutation(fab, seed=4, gbps=b.rate_gbps)
    assert fo.max_concurrent_flow(fab, traffic, method="lp").lower >= 1 - 1e-9


def test_too_large_without_symmetry_says_so(monkeypatch):
    monkeypatch.setattr(rate_plan, "MAX_RATE_LP_NONZEROS", 10)
    fab = fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=2)
    b = fo.valiant_rate(fab, bounds_first=False)
    assert b.status == "not_solved" and b.rate_gbps == 0.0 and "too large" in b.message
    # With the bounds stage (the default), the WCMP rate it proved is kept, below its cut.
    first = fo.valiant_rate(fab, hubs=1)
    assert first.status == "not_solved" and first.method == "bounds"
    assert "too large" in first.message
    assert 0 < first.rate_gbps < first.upper_gbps


def test_str():
    assert "two-phase rate" in str(fo.valiant_rate(fo.ring(6)))


def test_bad_arguments():
    fab = fo.ring(6)
    with pytest.raises(fo.InvalidParameterError, match="method"):
        fo.valiant_rate(fab, method="fast")
    with pytest.raises(fo.InvalidParameterError, match="hubs"):
        fo.valiant_rate(fab, hubs=["nowhere"])
    with pytest.raises(fo.InvalidParameterError, match="a level"):
        fo.valiant_rate(fab, hubs="n0")  # a node name, not a list of nodes
    with pytest.raises(fo.InvalidParameterError, match=r"one of \[0\]"):
        fo.valiant_rate(fab, hubs=2)  # a ring has no switches: level 0, its nodes
    with pytest.raises(fo.InvalidParameterError, match="symmetry claim"):
        fo.valiant_rate(fo.jellyfish(switches=6, network_ports=3, endpoints_per_switch=1,
                                     seed=1), method="symmetric")
    G = nx.path_graph(["a", "b", "c"])
    G.add_node("z")
    with pytest.raises(fo.InvalidParameterError, match="no capacity enters"):
        fo.valiant_rate(fo.from_networkx(G, endpoints=["a", "c"]), hubs=["z"])
    one_way = nx.DiGraph()
    one_way.add_edge("a", "b", capacity=1.0)
    one_way.add_edge("b", "c", capacity=1.0)
    fab1 = fo.Fabric(one_way, endpoints=["a", "c"])
    with pytest.raises(fo.InvalidParameterError, match="both directions"):
        fo.valiant_rate(fab1)


def test_a_fabric_too_large_for_the_per_endpoint_lp_uses_its_found_group(monkeypatch):
    # Without a claim and above the per-endpoint LP's size, auto finds the group (several
    # endpoint orbits after a failed link) and solves one root flow per orbit: the same
    # certified rate as the per-endpoint LP.

    fab = fo.fat_tree(4).without_links([("leaf0", "spine0.0")])
    assert fab.symmetry is None
    plain = fo.valiant_rate(fab, hubs=1, method="lp")
    monkeypatch.setattr(rate_plan, "MAX_RATE_LP_NONZEROS", 0)
    found = fo.valiant_rate(fab, hubs=1, bounds_first=False)
    assert found.method == "symmetric"
    assert found.rate_gbps == pytest.approx(plain.rate_gbps, rel=1e-6)


def test_one_server_with_a_network_keeps_its_nvswitch_rate():
    # A DGX H100 alone carries any traffic at 3,600 Gb/s per GPU through its NVSwitches
    # (18 NVLinks x 200 Gb/s per GPU, hub shares by capacity). The same server with its
    # rail leaves added (cluster of one) has no other server to detour through: its own
    # NVSwitches are still the hubs, and adding links never lowers a certified rate.
    alone = fo.valiant_rate(fo.dgx_h100())
    with_network = fo.valiant_rate(fo.cluster(fo.dgx_h100(), nodes=1))
    assert alone.rate_gbps == pytest.approx(3600, rel=1e-9)
    assert with_network.rate_gbps == pytest.approx(3600, rel=1e-9)
    assert fo.check_certificate(fo.cluster(fo.dgx_h100(), nodes=1), with_network).lower_ok
    # Two servers: a detour through the other server's NVSwitches would cost scale-out twice,
    # so the network's switches stay the hubs (each GPU's NIC: 400 Gb/s).
    assert fo.valiant_rate(fo.cluster(fo.dgx_h100(), nodes=2)).rate_gbps == pytest.approx(400)


def test_a_misspelt_option_is_refused_even_when_no_solver_runs():
    # fat_tree(4) closes by the bounds stage (no LP), where the solver that refuses unknown
    # options is never reached: the names are checked before any work.
    with pytest.raises(fo.InvalidParameterError, match=r"valiant_rate\(\).*'time_limt'.*"
                       r"did you mean 'time_limit'"):
        fo.valiant_rate(fo.fat_tree(4), time_limt=1)
    with pytest.raises(fo.InvalidParameterError, match=r"max_concurrent_flow\(\).*'foo'"):
        fo.max_concurrent_flow(fo.from_networkx(fo.fat_tree(4).graph), foo=1)
