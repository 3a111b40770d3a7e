"""Collective bounds: closed forms by hand, ordering, in-network reduction, groups, errors."""

import math

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt.collectives.efficiency import DEFAULT_EFFICIENCY
from fabricopt.generators._builder import FabricBuilder

GiB = 2.0**30
GB = 1e9


def star(n, gbps, reduce=False):
    """n GPUs on one switch, one link of `gbps` each (a single NVSwitch-like node)."""
    b = FabricBuilder(f"star({n})", {})
    b.switch("sw", layer=1, radix=n, reduce=reduce)
    for i in range(n):
        b.gpu(f"g{i}", node=0, rail=i)
        b.link(f"g{i}", "sw", gbps, "gpu-nvswitch", "nvlink4")
    return b.build(symmetric=True)


def two_level(g, k, up_gbps, nic_gbps):
    """k domains of g GPUs: each GPU has `up_gbps` to its domain switch and a NIC of
    `nic_gbps` to one scale-out switch."""
    b = FabricBuilder("two-level", {})
    b.switch("net", layer=2, radix=g * k)
    for d in range(k):
        b.switch(f"up{d}", layer=1, radix=g, reduce=True)
        for i in range(g):
            b.gpu(f"n{d}.g{i}", node=d, rail=i)
            b.link(f"n{d}.g{i}", f"up{d}", up_gbps, "gpu-nvswitch", "nvlink4")
            b.link(f"n{d}.g{i}", "net", nic_gbps, "gpu-leaf", "400g")
    return b.build()


def test_single_switch_node_all_reduce_busbw_is_per_gpu_bandwidth():
    # docs/collectives.md: endpoint-only all-reduce on a star with per-GPU bandwidth B has
    # t >= 2(n-1)/n S/B, so busbw <= B. DGX H100: 18 x 200 Gb/s = 3600 Gb/s = 450 GB/s.
    fab = star(8, 3600.0)
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
    assert c.busbw_GBps == pytest.approx(450.0)
    assert c.lower_time_s == pytest.approx(2 * 7 / 8 * GiB / (450 * GB))
    # Reduce-scatter then all-gather reaches it: achievable = lower.
    assert c.achievable_time_s == pytest.approx(c.lower_time_s)
    assert not c.in_network_reduction


@pytest.mark.parametrize("collective, factor", [
    ("all_gather", 7 / 8), ("reduce_scatter", 7 / 8), ("all_to_all", 7 / 8),
])
def test_single_switch_other_collectives(collective, factor):
    # Each GPU must receive (all-gather) or send (reduce-scatter, all-to-all) 7 chunks of
    # S/8 through its 450 GB/s link: t = 7/8 S / 450 GB/s, busbw = algbw x 7/8 = 450 GB/s.
    c = fo.collective_bounds(star(8, 3600.0), collective, message_bytes=GiB)
    assert c.lower_time_s == pytest.approx(factor * GiB / (450 * GB))
    assert c.busbw_GBps == pytest.approx(450.0)


def test_broadcast_bounds():
    # Root cut: the buffer leaves the root through 450 GB/s: t >= S / 450 GB/s.
    # Scatter + all-gather: 7/8 S out of the root, then 7/8 S into each GPU: 2 x 7/8 S / B.
    c = fo.collective_bounds(star(8, 3600.0), "broadcast", message_bytes=GiB)
    assert c.lower_time_s == pytest.approx(GiB / (450 * GB))
    assert c.achievable_time_s == pytest.approx(2 * 7 / 8 * GiB / (450 * GB))
    assert c.busbw_GBps == pytest.approx(450.0)  # broadcast busbw factor is 1


def test_in_network_reduction_helps_and_never_hurts():
    # NVLink SHARP moves S + S/n per GPU each way: t = (1 + 1/8) S / 450 GB/s, faster than
    # 2 x 7/8 S / 450 GB/s; the universal lower bound is the single-GPU cut S / 450 GB/s.
    on = fo.collective_bounds(star(8, 3600.0, reduce=True), "all_reduce", message_bytes=GiB)
    off = fo.collective_bounds(star(8, 3600.0, reduce=True), "all_reduce", message_bytes=GiB,
                               in_network_reduction=False)
    assert on.in_network_reduction and not off.in_network_reduction
    assert on.achievable_time_s == pytest.approx((1 + 1 / 8) * GiB / (450 * GB))
    assert on.lower_time_s == pytest.approx(GiB / (450 * GB))
    assert on.lower_time_s <= off.lower_time_s and on.achievable_time_s <= off.achievable_time_s
    # busbw uses the all-reduce factor whatever algorithm ran (nccl-tests): 1.75 / 1.125 B.
    assert on.achievable_busbw_GBps == pytest.approx(450 * 1.75 / 1.125)


def test_bounds_are_ordered_on_many_fabrics():
    fabrics = [fo.ring(6), fo.torus((3, 3)), fo.hypercube(3), fo.fat_tree(4),
               fo.leaf_spine(4, 2, 4, link_gbps=100), two_level(4, 3, 1000.0, 100.0),
               fo.jellyfish(8, 3, 1, seed=3)]
    for fab in fabrics:
        for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
            c = fo.collective_bounds(fab, coll, message_bytes=GiB)
            assert c.lower_time_s <= c.achievable_time_s * (1 + 1e-9), (fab.name, coll)
            for b in c.bounds:
                if b.kind in ("lower", "exact"):
                    assert b.time_s <= c.achievable_time_s * (1 + 1e-9)


@pytest.mark.parametrize("spines", [4, 2, 1])
def test_leaf_spine_oversubscription(spines):
    # 4 leaves x 4 GPUs, 100 Gb/s links (12.5 GB/s), `spines` uplinks per leaf.
    fab = fo.leaf_spine(4, spines, 4, link_gbps=100)
    # All-reduce: GPUs may forward, so one copy per chunk enters a leaf and the GPU links
    # bind: busbw = 12.5 GB/s at every oversubscription.
    ar = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
    assert ar.busbw_GBps == pytest.approx(12.5)
    # All-to-all: a leaf's uplinks carry 4 x 12 pairs of S/16 bytes each; GPU links carry
    # 15 pairs. t = S/16 x max(48 / (spines x 12.5 GB/s), 15 / 12.5 GB/s).
    a2a = fo.collective_bounds(fab, "all_to_all", message_bytes=GiB)
    expected = GiB / 16 * max(48 / (spines * 12.5 * GB), 15 / (12.5 * GB))
    assert a2a.lower_time_s == pytest.approx(expected, rel=1e-6)


def test_cluster_where_scale_out_binds_and_hierarchical_formula():
    # 3 domains of 4 GPUs, 1000 Gb/s NVLink-like per GPU, 100 Gb/s NIC per GPU.
    # All-gather: the set "all but one domain" holds 8 GPUs and 400 Gb/s enters the last
    # domain: ratio 8/400 = 0.02 per Gb/s, above one GPU's 11/1100 = 0.01. The scale-out
    # binds: t_AG = S/12 x 0.02 / 0.125e9 s, and the binding cut crosses only NIC links.
    fab = two_level(4, 3, 1000.0, 100.0)
    ag = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    assert ag.lower_time_s == pytest.approx(GiB / 12 * 0.02 / 0.125e9)
    assert set(ag.binding_cut.tiers) == {"gpu-leaf"}
    # Without in-network reduction the achievable all-reduce is RS + AG = 2 t_AG. The
    # sequential hierarchical formula is never faster; with a near-infinite scale-up it
    # becomes 2(k-1)/k (S/g)/b = 2 t_AG: the two agree.
    ar = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB, in_network_reduction=False)
    assert ar.achievable_time_s == pytest.approx(2 * ag.lower_time_s)
    formula = fo.hierarchical_all_reduce_time(4, 3, 1000.0, 100.0, GiB)
    assert ar.achievable_time_s <= formula
    fast = two_level(4, 3, 1e9, 100.0)
    ar_fast = fo.collective_bounds(fast, "all_reduce", message_bytes=GiB,
                                   in_network_reduction=False)
    assert ar_fast.achievable_time_s == pytest.approx(
        fo.hierarchical_all_reduce_time(4, 3, 1e9, 100.0, GiB), rel=1e-6)


def test_hierarchical_in_network_reduction_composes_with_scale_out():
    # NVLS inside each domain (S + S/g through 1000 Gb/s = 125 GB/s) and 2(k-1)/k (S/g)
    # over the 100 Gb/s (12.5 GB/s) NICs, pipelined: the slower phase, the scale-out one
    # (2 x 2/3 x S/4 / 12.5e9 = 0.0286 s against 1.25 S / 125e9 = 0.0107 s).
    fab = two_level(4, 3, 1000.0, 100.0)
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
    nvls = next(b for b in c.bounds if b.name.startswith("NVLink SHARP"))
    expected = max((GiB + GiB / 4) / 125e9, 2 * 2 / 3 * (GiB / 4) / 12.5e9)
    assert nvls.time_s == pytest.approx(expected)
    assert c.in_network_reduction


def test_restricting_to_a_group():
    # 4 of the 8 GPUs of a star: each receives 3 chunks of S/4 through 450 GB/s.
    fab = star(8, 3600.0)
    group = ["g0", "g2", "g4", "g6"]
    c = fo.collective_bounds(fab, "all_gather", message_bytes=GiB, endpoints=group)
    assert c.n_endpoints == 4
    assert c.lower_time_s == pytest.approx(3 / 4 * GiB / (450 * GB))
    # Fewer participants never make a collective slower on the same links.
    full = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    assert c.lower_time_s <= full.lower_time_s


def ring_busbw(size, n, busbw, latency_s):
    """nccl-tests busbw of an all-reduce that runs at ``busbw`` GB/s after ``latency_s``."""
    bus = 2 * (n - 1) / n
    return size * bus / (latency_s + size * bus / (busbw * 1e9)) / 1e9


def test_expected_is_labelled_and_separate():
    c = fo.collective_bounds(star(8, 3600.0), "all_reduce", message_bytes=GiB, expected=True)
    # NVLink binds; the default (nvlink4) profile's ring reaches 370 of 450 GB/s (nccl-tests
    # on 8 x H100, EFFICIENCY_PROFILES), after NCCL's ring latency for 2 x 7 steps over
    # NVLink, 8.4 + 14 x 3.4 = 56 us (fabricopt.collectives.nccl).
    assert c.expected["busbw_GBps"] == pytest.approx(ring_busbw(GiB, 8, 370.0, 56e-6))
    assert c.expected["algorithm"] == "ring"
    assert "not a bound" in c.expected["label"] and "scale-up" in c.expected["label"]
    assert c.busbw_GBps == pytest.approx(450.0)  # the bound itself is unchanged
    custom = fo.collective_bounds(star(8, 3600.0), "all_reduce", message_bytes=GiB,
                                  expected={"scale_up": 0.5})
    assert custom.expected["busbw_GBps"] == pytest.approx(ring_busbw(GiB, 8, 225.0, 56e-6))


@pytest.mark.parametrize("collective", ["all_gather", "reduce_scatter"])
def test_expected_ring_gather_pays_its_latency(collective):
    # NCCL runs all-gather and reduce-scatter as a ring of n - 1 steps: on star(8) over
    # NVLink, 8.4 + 7 x 3.4 = 32.2 us (fabricopt.collectives.nccl) before the ring's 370 of
    # 450 GB/s (nvlink4 profile); bus factor (n - 1)/n = 7/8. At 1 MiB the latency is most of
    # the time, so the figure is far below the bound, which stays 450 GB/s.
    size = 2.0**20
    c = fo.collective_bounds(star(8, 3600.0), collective, message_bytes=size, expected=True)
    bus = 7 / 8
    want = size * bus / (32.2e-6 + size * bus / 370e9) / 1e9  # about 22.6 GB/s
    assert c.expected["busbw_GBps"] == pytest.approx(want)
    assert c.expected["time_s"] == pytest.approx(32.2e-6 + size * bus / 370e9)
    assert c.expected["busbw_GBps"] < c.busbw_GBps == pytest.approx(450.0)


def test_expected_profile_follows_the_tier_vocabulary():
    # UALink is scale-up (fabricopt.tiers): a UALink pod gets the scale-up profile. Each of
    # the 8 accelerators has 2 ports x 4 lanes x 200 Gb/s = 1600 Gb/s = 200 GB/s into
    # forwarding switches, so all-reduce busbw is bounded by 200 GB/s (volume bound).
    pod = fo.ualink_pod(accelerators=8, switches=2, ports_per_accelerator=2)
    c = fo.collective_bounds(pod, "all_reduce", message_bytes=GiB, expected=True)
    assert c.busbw_GBps == pytest.approx(200.0)
    assert c.expected["efficiency"] == DEFAULT_EFFICIENCY
    # The ring at the nvlink4 scale-up efficiency 370/450: 200 x 370/450 = 164.4 GB/s, after
    # 56 us of ring latency (14 steps over the scale-up links).
    assert c.expected["busbw_GBps"] == pytest.approx(ring_busbw(GiB, 8, 200 * 370 / 450, 56e-6))
    assert "scale-up efficiency" in c.expected["label"]
    # A fat-tree has no scale-up link: 16 one-GPU domains, a ring at the network efficiency,
    # 0.94 x 50 GB/s per 400 Gb/s host, with 2 x 15 network steps: 8.4 + 30 x 14 us.
    ft = fo.collective_bounds(fo.fat_tree(4), "all_reduce", message_bytes=GiB, expected=True)
    assert ft.expected["busbw_GBps"] == pytest.approx(ring_busbw(GiB, 16, 47.0, 428.4e-6))
    assert "network efficiency" in ft.expected["label"]
    # A key outside the profile is an error, not silently ignored.
    with pytest.raises(fo.InvalidParameterError, match="collective_bounds.*expected.*nvlink"):
        fo.collective_bounds(pod, "all_reduce", message_bytes=GiB, expected={"nvlink": 0.5})


def test_latency_and_curve():
    fab = star(8, 3600.0)
    lat = fo.LatencyModel(switch_ns=500.0, endpoint_us=1.0)
    # Lower alpha: 1 us at the endpoints + one switch (500 ns) to the nearest GPU.
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB, latency=lat)
    assert c.latency_s == pytest.approx(1.5e-6)
    curve = fo.collective_curve(fab, "all_reduce", latency=lat)
    assert curve.busbw_limit_GBps == pytest.approx(450.0)
    half = curve.size_for_fraction(0.5)
    # At that size alpha = beta S: busbw is half the limit.
    t = curve.alpha_s + curve.beta_s_per_byte * half
    assert half / t / GB * 1.75 == pytest.approx(225.0)
    assert curve.size_for_fraction(0.9) > half


@pytest.mark.parametrize("kwargs, match", [
    ({"collective": "all_the_things"}, "collective must be one of"),
    ({"message_bytes": 0}, "message_bytes"),
    ({"message_bytes": -5}, "message_bytes"),
    ({"endpoints": ["g0", "nope"]}, "unknown"),
    ({"endpoints": ["g0"]}, "at least 2"),
    ({"in_network_reduction": "yes"}, "in_network_reduction"),
    ({"expected": "lots"}, "expected"),
])
def test_bad_arguments(kwargs, match):
    args = {"collective": "all_reduce", "message_bytes": GiB, **kwargs}
    coll = args.pop("collective")
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.collective_bounds(star(4, 100.0), coll, **args)


def test_disconnected_group_has_infinite_time():
    G = nx.Graph()
    G.add_edge("a", "b")
    G.add_edge("c", "d")
    fab = fo.from_networkx(G)
    c = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    assert math.isinf(c.lower_time_s)


def test_dgx_h100_all_reduce():
    # DGX H100: 18 NVLink 4 links x 25 GB/s = 450 GB/s per GPU per direction over 4
    # NVSwitches (split 5/4/4/5). Without in-network reduction the busbw bound is 450 GB/s
    # (docs/collectives.md, volume bound on a star); with NVLink SHARP the NCCL algorithm moves
    # S + S/8 per GPU, so its busbw is 450 x 1.75 / 1.125 = 700 GB/s, and the universal bound
    # is S / 450 GB/s.
    fab = fo.dgx_h100()
    off = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB, in_network_reduction=False)
    assert off.busbw_GBps == pytest.approx(450.0)
    on = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
    assert on.in_network_reduction
    assert on.achievable_busbw_GBps == pytest.approx(700.0)
    assert on.busbw_GBps == pytest.approx(450 * 1.75)


def test_one_participant_per_domain_uses_no_in_network_reduction():
    # GPU 0 of each of 3 domains: every reducing switch sees a single participant, so there
    # is nothing for it to reduce and the result must not claim in-network reduction.
    fab = two_level(4, 3, 1000.0, 100.0)
    group = fo.select_endpoints(fab, rail=0)
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=GiB, endpoints=group)
    assert not c.in_network_reduction and c.n_endpoints == 3
    assert c.lower_time_s <= c.achievable_time_s


def test_many_domains_scale_out_binds_all_gather():
    # 150 domains of 4 GPUs, NVLink-like 100,000 Gb/s per GPU and a 100 Gb/s NIC each. The
    # set "all but one domain" holds 596 GPUs and 400 Gb/s enters the last domain: ratio
    # 596/400 = 1.49 per Gb/s, above one GPU's 599/100,100. The min-cut search must see
    # it although a GPU's share (1/ratio) is a millionth of the NVLink capacity (a search that
    # rounds such shares away misses the set).
    fab = two_level(4, 150, 1e5, 100.0)
    ag = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    assert ag.lower_time_s == pytest.approx(GiB / 600 * (596 / 400) / 0.125e9)


def test_repr_is_one_short_line_and_str_the_report():
    # A notebook cell shows repr(): one line, whatever the fabric's size.
    c = fo.collective_bounds(fo.superpod(1), "all_reduce", message_bytes=2**30)
    assert "\n" not in repr(c) and len(repr(c)) < 200
    assert repr(c).startswith("<CollectiveBounds all_reduce, 256 GPUs")
    assert "binding cut" in str(c)


def test_a_cut_search_stopped_at_its_work_limit_is_a_lower_bound_only(monkeypatch):
    # two_level(4, 3, ...) with one GPU's NIC halved has no symmetry to search one GPU per
    # orbit. With the search allowed a single minimum cut, the all-gather cut it found is
    # real (its time is at most the full search's) but not shown to be the largest: the
    # bound is "lower", no schedule is claimed to reach it, and a note says why.
    import fabricopt.collectives.problem as problem

    fab = two_level(4, 3, 3600.0, 400.0)
    fab.graph["n0.g0"]["net"]["capacity"] = 200.0
    fab.graph["net"]["n0.g0"]["capacity"] = 200.0
    full = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    monkeypatch.setattr(problem, "FORESTCOLL_MAX_CUTS", 1)
    stopped = fo.collective_bounds(fab, "all_gather", message_bytes=GiB)
    assert stopped.lower_time_s <= full.lower_time_s * (1 + 1e-9)
    assert stopped.achievable_time_s is None
    assert any("work limit" in n for n in stopped.notes)


@pytest.mark.parametrize("bad", ["no", 1, None, np.True_])
def test_a_reduce_attribute_that_is_no_bool_is_refused_by_name(bad):
    # The attributes are read in one pass; a value that is no bool (a string "no" would read
    # as true) is still named with its node, before any work; None (absent) and numpy bools
    # pass.
    fab = star(4, 400.0)
    fab.graph.nodes["sw"]["reduce"] = bad
    if bad is None or bad is np.True_:
        fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
        return
    with pytest.raises(fo.InvalidFabricError, match=r"node 'sw' has reduce="):
        fo.collective_bounds(fab, "all_reduce", message_bytes=GiB)
