"""The attach-switch LP's routing as a lower bound: a feasible point of the full LP
(conservation and capacities recomputed from the LP itself), never above the LP's theta and
never below fixed WCMP shares, and it closes failed fabrics that WCMP leaves open."""

import numpy as np
import pytest
import scipy.sparse as sp
from flow_helpers import certified, feasible_below_lp, random_fabric, random_traffic
from scipy.sparse.csgraph import connected_components

import fabricopt as fo
from fabricopt.flow.approx import CoreGraph
from fabricopt.flow.bounds import (
    ecmp_point,
    pxn_entries,
    rail_labels,
    rail_relays,
    structural_cut_lengths,
)
from fabricopt.tiers import is_scale_up_arc


def _scale_up(fab, model):
    return np.array([is_scale_up_arc(fab.graph[u][v]) for u, v in model.ga.arcs], dtype=bool)


def _points(fab, traffic):
    model = fo.build_flow_lp(fab, traffic)
    up = _scale_up(fab, model)
    return model, ecmp_point(model, up), ecmp_point(model, up, scale_out_lp=True)


@pytest.mark.parametrize("seed", range(20))
def test_attach_routing_is_a_feasible_point_between_wcmp_and_the_lp(seed):
    fab = random_fabric(seed)
    traffic = random_traffic(fab, seed)
    model, wcmp, routed = _points(fab, traffic)
    if routed is None:
        # The attach LP declined (a target the scale-out network alone cannot reach, so
        # its demand needs every arc): the stage keeps the WCMP point. Only failures cut
        # an intact fabric's scale-out network short:
        assert "(edited)" in fab.name
        return
    feasible_below_lp(fab, traffic, model, routed)
    # WCMP's switch part is one routing between the same attach switches: the LP's is best.
    assert routed[-1] >= wcmp[-1] * (1 - 1e-9)


def test_a_failed_fat_tree_closes_by_the_attach_routing():
    # random_fabric(8) is fat_tree(4) without some core links: WCMP's fixed shares reach
    # 160 (its measured point), the LP 300, and the attach-switch LP routes around the
    # failures to the LP's optimum, so bounds alone answer it.
    fab = random_fabric(8)
    traffic = random_traffic(fab, 8)
    _, wcmp, routed = _points(fab, traffic)
    exact = fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=False)
    assert wcmp[-1] < exact.theta * 0.9
    assert routed[-1] == pytest.approx(exact.theta, rel=1e-6)
    first = certified(fab, fo.max_concurrent_flow(fab, traffic), traffic)
    assert first.method == "bounds" and first.exact


def test_a_rail_optimized_2_to_1_cluster_closes_with_pxn_relays():
    # 24 DGX H100 at 2:1 (192 GPUs): the binding cut is a scalable unit's uplinks. WCMP out of
    # the source's own NIC sends traffic between rails over the spines and reaches 1.242
    # (its measured point, 57 % of the cut); relaying over NVLink to the source server's GPU
    # on the target's rail first keeps it under the leaf, and the attach-switch LP meets the
    # cut (2.1739, the hierarchy cut's value; the certificate re-proves it as lengths).
    fab = fo.cluster(fo.dgx_h100(), nodes=24, scale_out="rail_optimized", oversubscription=2)
    traffic = fo.all_to_all(fab)
    model, wcmp, routed = _points(fab, traffic)
    cut, _ = structural_cut_lengths(fab, traffic, model.ga)
    assert wcmp[-1] < 0.6 * cut
    relayed = ecmp_point(model, _scale_up(fab, model), scale_out_lp=True,
                         rails=rail_labels(fab, model.ga))
    lp = model.lp
    assert np.abs(lp.A_eq @ relayed - lp.b_eq).max() <= 1e-9 * lp.b_ub.max()  # b_eq is 0
    assert (lp.A_ub @ relayed - lp.b_ub).max() <= 1e-9 * lp.b_ub.max()
    assert relayed.min() >= 0.0
    assert relayed[-1] == pytest.approx(cut, rel=1e-9)
    first = certified(fab, fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=True),
                      traffic)
    assert first.method == "bounds" and first.exact


def test_the_relay_is_the_source_servers_gpu_on_the_targets_rail():
    fab = fo.cluster(fo.dgx_h100(), nodes=2, scale_out="rail_optimized")
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    g = CoreGraph.of(model)
    up = _scale_up(fab, model)[model.core_arcs]
    joined = sp.csr_matrix((np.ones(int(up.sum())), (g.tail[up], g.head[up])), shape=(g.n, g.n))
    domain = connected_components(joined, directed=False)[1]
    relay = rail_relays(g, domain, rail_labels(fab, model.ga)[g.nodes])
    name = {i: model.ga.nodes[v] for i, v in enumerate(g.nodes)}
    local = {v: i for i, v in name.items()}
    k = list(g.sources).index(local["n0.gpu0"])
    # n0.gpu0 reaches n1.gpu3 through n0.gpu3 (rail 3 in its own server), n1.gpu0 directly.
    assert name[relay[k, local["n1.gpu3"]]] == "n0.gpu3"
    assert name[relay[k, local["n1.gpu0"]]] == "n0.gpu0"
    # A target with no rail (a switch) is reached from the source itself.
    assert name[relay[k, local["n0.nvsw0"]]] == "n0.gpu0"


def _pxn_entries_of(fab):
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    g = CoreGraph.of(model)
    up = _scale_up(fab, model)[model.core_arcs]
    joined = sp.csr_matrix((np.ones(int(up.sum())), (g.tail[up], g.head[up])), shape=(g.n, g.n))
    domain = connected_components(joined, directed=False)[1]
    out = ~up
    live = (np.bincount(g.tail[out], minlength=g.n) > 0) & (
        np.bincount(g.head[out], minlength=g.n) > 0)
    inside = domain[None, :] == domain[g.sources][:, None]
    demand = np.where(inside, 0.0, g.demand)
    entries, hops = pxn_entries(g, domain, rail_labels(fab, model.ga)[g.nodes], live, demand)
    name = {i: model.ga.nodes[v] for i, v in enumerate(g.nodes)}
    return g, demand, live, entries, hops, name


def test_pxn_goes_around_a_failed_nic():
    # Two DGX H100 servers on rails; n1.gpu3 lost its NIC. Every pair still sends its whole
    # demand (the entries add up to it), enters the switches only at GPUs that kept their
    # NIC, and a pair bound for n1.gpu3 is split evenly over n1's 7 other GPUs (stand-ins),
    # each entering at the source server's GPU on the stand-in's rail, then hops to n1.gpu3
    # over NVLink.
    fab = fo.cluster(fo.dgx_h100(), nodes=2, scale_out="rail_optimized")
    bad = fab.without_links([("n1.gpu3", "r3.l0")])
    g, demand, live, (k, t, rel, amount), hops, name = _pxn_entries_of(bad)
    local = {v: i for i, v in name.items()}
    assert not live[local["n1.gpu3"]] and live[local["n1.gpu0"]]
    assert live[rel].all() and live[t].all()
    # What each commodity sends is kept, stand-ins counted for the targets they stand in for.
    sent = np.bincount(k, weights=amount, minlength=len(g.sources))
    np.testing.assert_allclose(sent, demand.sum(axis=1), rtol=1e-12)
    src = list(g.sources).index(local["n0.gpu0"])
    to_lost = (hops[0] == src) & (hops[2] == local["n1.gpu3"])
    assert sorted(name[d] for d in hops[1][to_lost]) == [f"n1.gpu{i}" for i in range(8) if i != 3]
    np.testing.assert_allclose(hops[3][to_lost], demand[src, local["n1.gpu3"]] / 7)
    # n0.gpu0's share for stand-in n1.gpu5 enters at n0.gpu5 (PXN on rail 5).
    via = rel[(k == src) & (t == local["n1.gpu5"])]
    assert {name[r] for r in via} == {"n0.gpu5"}


def test_a_failed_nic_cluster_is_bracketed_and_certified():
    # Four DGX H100 servers on rails (1:1) and n1.gpu3 without its NIC: the bounds stage's
    # bracket holds the LP's optimum and both re-prove. That optimum is n1's NIC cut: its 7
    # NICs x 400 Gb/s carry its 8 GPUs' traffic to the 24 GPUs of other servers, 8 x 24 x
    # theta <= 2800, theta = 2800 / 192 = 14.583.
    fab = fo.cluster(fo.dgx_h100(), nodes=4, scale_out="rail_optimized")
    bad = fab.without_links([("n1.gpu3", "r3.l0")])
    exact = certified(bad, fo.max_concurrent_flow(bad, method="lp", bounds_first=False))
    assert exact.theta == pytest.approx(2800 / 192, rel=1e-9)
    first = certified(bad, fo.max_concurrent_flow(bad, method="lp", bounds_first=True))
    assert first.theta == pytest.approx(exact.theta, rel=1e-6)
