"""Rail-only fabrics (no spine) never fall apart into islands without a word.

Without a spine the leaves of a rail meet nowhere in the network: only a scale-up domain that
holds servers under two leaves joins them. A size that needs a second leaf per rail and no
such domain would build unconnected islands on which every collective is meaningless, so the
generators refuse it, naming what to pass instead; designs that stay connected keep working.
"""

import itertools

import networkx as nx
import pytest
from small_fabrics import nvswitch_like

import fabricopt as fo
from fabricopt.generators._builder import FabricBuilder
from fabricopt.generators.cluster import copy_domains, read_domain
from fabricopt.generators.wiring import add_rail_scale_out, rail_islands, rail_plan


def test_the_issue_case_is_refused_with_what_to_pass_instead():
    # 128 DGX H100 on 64-port leaves without a spine: ceil(128 / 64) = 2 leaves per rail,
    # servers 0-63 under leaf 0 and 64-127 under leaf 1 (spread evenly), and a DGX is one
    # server, so no domain joins the two: two islands of 512 GPUs each.
    with pytest.raises(fo.InvalidParameterError) as err:
        fo.rail_optimized(nodes=128, spine=False, scale_up=fo.dgx_h100())
    msg = str(err.value)
    assert msg.startswith("rail_optimized(): spine=False with 128 servers on leaf_radix=64")
    assert "2 leaves per rail" in msg and "2 islands" in msg
    assert "'n0.gpu0' could not reach 'n64.gpu0'" in msg
    # What to pass instead: a spine, 128-port leaves (one per rail), or at most 64 nodes.
    assert "spine=True" in msg and "leaf_radix of at least 128" in msg and "nodes <= 64" in msg


def test_each_way_out_the_message_names_builds_a_connected_fabric():
    # The same question at 1/16 the size (8 nodes of 2-GPU domains on 4-port leaves: 2
    # leaves per rail), so that each answer is solved in a blink.
    dom = nvswitch_like(2)
    with pytest.raises(fo.InvalidParameterError, match=r"leaf_radix of at least 8 .*nodes <= 4"):
        fo.rail_optimized(nodes=8, gpus_per_node=2, leaf_radix=4, spine=False, scale_up=dom)
    for kw in ({"nodes": 8, "leaf_radix": 4, "spine": True},
               {"nodes": 8, "leaf_radix": 8, "spine": False},
               {"nodes": 4, "leaf_radix": 4, "spine": False}):
        fab = fo.rail_optimized(gpus_per_node=2, scale_up=dom, **kw)
        assert nx.is_weakly_connected(fab.graph), kw
        assert fo.max_concurrent_flow(fab).theta > 0


def test_stand_alone_rail_only_fabric_is_refused_when_a_rail_splits():
    # 6 servers on 4-port leaves: 2 leaves per rail (3 + 3 servers), and the GPUs of a
    # server are not linked here, so nothing joins them.
    with pytest.raises(fo.InvalidParameterError) as err:
        fo.rail_optimized(nodes=6, gpus_per_node=2, leaf_radix=4, spine=False)
    msg = str(err.value)
    assert "each rail would fall apart into 2 islands ('n0.g0' could not reach 'n3.g0')" in msg
    assert "leaf_radix of at least 6" in msg and "nodes <= 4" in msg
    # One leaf per rail is the rail-only fabric alone: each rail one star (rails meet only
    # through scale-up domains, which a cluster adds).
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, spine=False)
    assert nx.number_weakly_connected_components(fab.graph) == 2


def test_cluster_names_itself():
    # 65 DGX on 64-port leaves: 2 leaves per rail (32 + 33 servers), n32 starts leaf 1.
    with pytest.raises(fo.InvalidParameterError,
                       match=r"^cluster\(\): spine=False with 65 servers .*'n0\.gpu0' could "
                             r"not reach 'n32\.gpu0'.*nodes <= 64$"):
        fo.cluster(fo.dgx_h100(), nodes=65, spine=False)


def test_domains_that_straddle_two_leaves_join_them():
    # Domains of 3 servers (6 GPUs on rails 0, 1, 0, 1, 0, 1), 2 domains = 6 servers on
    # 4-port leaves: 2 leaves per rail of servers 0-2 and 3-5. Leaf 1 starts at server 3,
    # where domain 1 starts: islands, refused.
    dom3 = nvswitch_like(6, split=(1,), rails=[0, 1] * 3)
    with pytest.raises(fo.InvalidParameterError, match=r"no domain holds servers under both "
                                                       r"leaf 0 and leaf 1"):
        fo.cluster(dom3, nodes=2, leaf_radix=4, spine=False)
    # 4 domains = 12 servers on 5-port leaves: ceil(12 / 5) = 3 leaves of servers 0-3, 4-7,
    # 8-11; domains start at 0, 3, 6, 9, so domain 1 (servers 3-5) joins leaves 0 and 1 and
    # domain 2 (6-8) leaves 1 and 2: one connected fabric, built.
    fab = fo.cluster(dom3, nodes=4, leaf_radix=5, spine=False)
    assert nx.is_weakly_connected(fab.graph)
    assert fo.max_concurrent_flow(fab).theta > 0


def _wired(servers_per_domain, domains, leaf_radix):
    """The rail-only wiring built directly, without the generator's check: domains of
    ``servers_per_domain`` 2-GPU servers (one NVSwitch each), then the rail leaves."""
    dom = read_domain("test", nvswitch_like(2 * servers_per_domain, split=(1,),
                                            rails=[0, 1] * servers_per_domain))
    plan = rail_plan("test", domains * servers_per_domain, 2, leaf_radix, False, 1.0)
    b = FabricBuilder("wired", {})
    maps = copy_domains(b, dom, domains)
    add_rail_scale_out(b, [[m[v] for v in server] for m in maps for server in dom.servers],
                       plan, 400.0, "400g")
    return plan, b.build()


@pytest.mark.parametrize("servers_per_domain", [1, 2, 3])
def test_refused_exactly_when_the_wiring_would_be_disconnected(servers_per_domain):
    # Brute force over small sizes: the islands the plan predicts are those of the graph
    # (networkx's components of the wiring built without any check), and the generator
    # builds exactly the connected ones.
    dom = nvswitch_like(2 * servers_per_domain, split=(1,), rails=[0, 1] * servers_per_domain)
    seen = set()
    for domains, radix in itertools.product(range(1, 7), range(2, 6)):
        plan, wired = _wired(servers_per_domain, domains, radix)
        connected = nx.is_weakly_connected(wired.graph)
        assert connected == (rail_islands(plan, servers_per_domain) == []), (domains, radix)
        seen.add((connected, plan.leaves_per_rail > 1))
        if connected:
            fab = fo.cluster(dom, nodes=domains, leaf_radix=radix, spine=False)
            assert set(fab.graph.edges) == set(wired.graph.edges)  # the same wiring
        else:
            with pytest.raises(fo.InvalidParameterError, match="islands"):
                fo.cluster(dom, nodes=domains, leaf_radix=radix, spine=False)
    # The sweep met both answers, and domains of several servers joined split rails.
    assert {(True, False), (False, True)} <= seen
    assert ((True, True) in seen) == (servers_per_domain > 1)


def test_rail_islands_plan_reading():
    # A spine joins every leaf; one leaf per rail cannot split.
    assert rail_islands(rail_plan("t", 128, 8, 64, True, 1.0)) == []
    assert rail_islands(rail_plan("t", 64, 8, 64, False, 1.0)) == []
    # 200 DGX on 64-port leaves: ceil(200 / 64) = 4 leaves per rail starting at servers
    # 0, 50, 100, 150 (spread evenly): three splits, four islands.
    assert rail_islands(rail_plan("t", 200, 8, 64, False, 1.0)) == [50, 100, 150]
    # NVL72-like racks of 18 trays, 8 racks = 144 trays on 72-port leaves: leaf 1 starts
    # at tray 72 = 4 x 18, a rack boundary: split. On 64-port leaves ceil(144 / 64) = 3
    # leaves start at 48 and 96, neither a multiple of 18: joined by racks 2 and 5.
    assert rail_islands(rail_plan("t", 144, 4, 72, False, 1.0), 18) == [72]
    assert rail_islands(rail_plan("t", 144, 4, 64, False, 1.0), 18) == []


def test_superpod_without_spine():
    # 3 SU = 96 DGX: more than one 64-port leaf per rail holds; refused with the way out.
    with pytest.raises(fo.InvalidParameterError,
                       match=r"scalable_units must be at most 2 without a spine .*island.*"
                             r"spine=True or a leaf_radix of at least 96"):
        fo.superpod(3, spine=False)
    # 2 SU = 64 DGX fill one 64-port leaf per rail: connected through the DGX NVLink.
    fab = fo.superpod(2, spine=False)
    assert nx.is_weakly_connected(fab.graph)


def test_shipped_rail_only_design_keeps_working():
    # topologies/dgx-h100-superpod-rail-only.toml: 2 SU, one 64-port QM9700 per rail.
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "topologies" / "dgx-h100-superpod-rail-only.toml"
    fab = fo.load_design(path)
    assert len(fab.endpoints) == 512 and nx.is_weakly_connected(fab.graph)
    # All-gather among rail 0 (one GPU per DGX, 64 GPUs): a GPU's node takes the other 63
    # shards through its 8 NICs (other rails' switches, then NVLink), 8 x 400 Gb/s =
    # 400 GB/s; ForestColl's time (S/64) 63 / 400 GB/s and busbw = S/t x 63/64 give
    # busbw = 400 GB/s.
    rail = fo.select_endpoints(fab, rail=0)
    c = fo.collective_bounds(fab, "all_gather", message_bytes=2**30, endpoints=rail)
    assert not c.disconnected
    assert c.busbw_GBps == pytest.approx(400.0, rel=1e-9)
