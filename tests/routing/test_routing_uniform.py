"""Uniform traffic counted by reach groups gives the loads of listing every pair."""

import numpy as np
import pytest

import fabricopt as fo
import fabricopt.routing.api as routing_api
from fabricopt.routing.networks import Networks
from fabricopt.routing.uniform import add_uniform

FABRICS = {
    "superpod(1)": lambda: fo.superpod(1),
    "fat_tree(4)": lambda: fo.fat_tree(4),
    "leaf_spine 3x2": lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=3),
    "rail cluster": lambda: fo.cluster(scale_up="dgx_h100", nodes=16,
                                       scale_out="rail_optimized"),
    "clos 2:1 cluster": lambda: fo.cluster(scale_up="dgx_h100", nodes=64, scale_out="clos",
                                           oversubscription=2),
    "NVL72 clos": lambda: fo.cluster(scale_up="gb200_nvl72", nodes=2, scale_out="clos"),
    # Failures send some pairs over the whole fabric: the counting declines, listing stays.
    "failed superpod(1)": lambda: fo.fail_random(fo.superpod(1), 0.05, seed=1),
}


def _listed(fab, routing, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(routing_api, "add_uniform", lambda *args: None)
        return fo.routed_flow(fab, routing=routing)


@pytest.mark.parametrize("routing", ["ecmp", "wcmp"])
@pytest.mark.parametrize("name", list(FABRICS))
def test_counted_equals_listed(name, routing, monkeypatch):
    fab = FABRICS[name]()
    counted = fo.routed_flow(fab, routing=routing)
    listed = _listed(fab, routing, monkeypatch)
    # The same arc loads, so the same theta, and the same pairs in each network.
    np.testing.assert_allclose(counted._load, listed._load, rtol=1e-9, atol=1e-9)
    assert counted.theta == pytest.approx(listed.theta, rel=1e-12)
    assert counted.pairs_by_network == listed.pairs_by_network
    n = len(fab.endpoints)
    assert sum(counted.pairs_by_network.values()) == n * (n - 1)


def test_counting_declines_when_the_whole_fabric_is_needed():
    # A ring has no scale-up network and its endpoints forward: pairs beyond a neighbour go
    # over the whole fabric, which is listed, so the counting adds nothing and says so.
    fab = fo.ring(6)
    networks = Networks.of(fab)
    from fabricopt.routing.fluid import FluidRouting

    fluid = [FluidRouting(p, False) if p is not None else None for p in networks.networks]
    assert add_uniform(networks, fluid, np.arange(6), 1.0) is None
    assert all(f is None or f.pairs == 0 for f in fluid)


def test_counted_superpod_pairs_by_network():
    # superpod(1): 32 DGX H100 of 8 GPUs. Scale-up pairs: 32 x 8 x 7 = 1,792; every other
    # ordered pair of the 256 GPUs goes over the scale-out network: 256 x 255 - 1,792.
    fab = fo.superpod(1)
    networks = Networks.of(fab)
    from fabricopt.routing.fluid import FluidRouting

    fluid = [FluidRouting(p, False) if p is not None else None for p in networks.networks]
    counts = add_uniform(networks, fluid, np.arange(256), 1.0)
    assert counts == [1792, 256 * 255 - 1792, 0]
    # What each GPU receives over the network: from the 248 GPUs outside its DGX, 1 Gb/s each.
    assert np.allclose(fluid[1].in_gbps, 248.0)


@pytest.mark.parametrize("pick", [slice(0, 40), slice(3, None, 5)])
def test_counted_equals_listed_on_a_group_of_endpoints(pick, monkeypatch):
    # All-to-all inside a group (the first 40 GPUs: five whole DGX; every fifth GPU: parts of
    # many): only the group's pairs are counted, both ways.
    fab = fo.superpod(1)
    tm = fo.all_to_all(fab, 2.0, endpoints=list(fab.endpoints)[pick])
    counted = fo.routed_flow(fab, tm, routing="ecmp")
    with monkeypatch.context() as m:
        m.setattr(routing_api, "add_uniform", lambda *args: None)
        listed = fo.routed_flow(fab, tm, routing="ecmp")
    np.testing.assert_allclose(counted._load, listed._load, rtol=1e-9, atol=1e-9)
    assert counted.pairs_by_network == listed.pairs_by_network


@pytest.mark.parametrize("routing", ["ecmp", "wcmp"])
@pytest.mark.parametrize("name", ["superpod(1)", "rail cluster", "clos 2:1 cluster",
                                  "NVL72 clos", "failed superpod(1)"])
def test_pushing_senders_first_changes_no_load(name, routing, monkeypatch):
    # The GPUs' sending copies only send: their demand is pushed over their own arcs before
    # the sweep, which then skips them. Sweeping them along with the rest gives the same loads.
    from fabricopt.routing.fluid import FluidRouting

    fab = FABRICS[name]()
    pushed = fo.routed_flow(fab, routing=routing)
    with monkeypatch.context() as m:
        m.setattr(FluidRouting, "_pure_senders", lambda self, X: np.zeros(0, dtype=np.int64))
        swept = fo.routed_flow(fab, routing=routing)
    np.testing.assert_allclose(pushed._load, swept._load, rtol=1e-9, atol=1e-9)
    assert pushed.theta == pytest.approx(swept.theta, rel=1e-12)


@pytest.mark.parametrize("routing", ["ecmp", "wcmp", "static"])
@pytest.mark.parametrize("name", ["superpod(1)", "NVL72 clos", "failed superpod(1)"])
def test_component_blocks_give_the_loads_of_one_block(name, routing, monkeypatch):
    # The NVLink domains are separate components of the scale-up network: routed domain by
    # domain (blocks of a few components) they must load every arc exactly as one search over
    # the whole network does (MERGED_BLOCK and DIST_BLOCK so large that every column and
    # node is one block, as before blocks by component).
    import fabricopt.routing.fluid as fluid

    fab = FABRICS[name]()
    tm = fo.all_to_all(fab) if routing != "static" else fo.permutation(fab, seed=3)
    blocked = fo.routed_flow(fab, tm, routing=routing)
    with monkeypatch.context() as m:
        m.setattr(fluid, "MERGED_BLOCK", 10**12)
        m.setattr(fluid, "DIST_BLOCK", 10**12)
        whole = fo.routed_flow(fab, tm, routing=routing)
    for tiny in (1, 50):  # one component a block, and a few
        with monkeypatch.context() as m:
            m.setattr(fluid, "MERGED_BLOCK", tiny)
            small = fo.routed_flow(fab, tm, routing=routing)
        np.testing.assert_allclose(small._load, whole._load, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(blocked._load, whole._load, rtol=1e-12, atol=1e-9)
    assert blocked.theta == pytest.approx(whole.theta, rel=1e-12)


def test_a_demand_across_components_is_refused():
    # Two NVLink domains are separate components of the scale-up network: a demand pushed
    # into it from the other domain has no path there, and the routing says so rather than
    # dropping it.
    from fabricopt.routing.fluid import FluidRouting

    fab = fo.superpod(1)
    networks = Networks.of(fab)
    up = networks.networks[0]
    eps = list(fab.endpoints)
    fluid = FluidRouting(up, per_target=True)
    src, dst = eps.index("n0.gpu0"), eps.index("n1.gpu0")
    fluid.add(np.array([src]), np.array([dst]), np.array([1.0]))
    with pytest.raises(RuntimeError, match="no path"):
        fluid.loads("equal")
