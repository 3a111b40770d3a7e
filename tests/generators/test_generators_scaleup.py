"""Scale-up generators: NVSwitch domains, two-level NVLink systems, UALink pods."""

from collections import Counter

import pytest

import fabricopt as fo
from fabricopt.generators.scaleup import even_split


def ports_used(fab, switch):
    return sum(d["links"] for _, _, d in fab.graph.out_edges(switch, data=True))


def links_from(fab, gpu):
    return sum(d["links"] for _, _, d in fab.graph.out_edges(gpu, data=True))


# -- even split ---------------------------------------------------------------------------

@pytest.mark.parametrize("total, parts, expected", [
    (18, 4, (5, 4, 4, 5)),        # the DGX H100 split: extras to both end switches
    (18, 2, (9, 9)),
    (18, 18, (1,) * 18),
    (7, 5, (2, 1, 1, 1, 2)),
    (4, 3, (2, 1, 1)),            # one extra: the first end switch
    (9, 4, (3, 2, 2, 2)),
    (11, 4, (3, 3, 2, 3)),        # three extras: 0, then 3, then 1
])
def test_even_split(total, parts, expected):
    assert even_split(total, parts) == expected
    assert sum(expected) == total


# -- nvswitch_domain ----------------------------------------------------------------------

def test_nvswitch_domain_default_split_counts_and_schema():
    fab = fo.nvswitch_domain(gpus=8, switches=4, links_per_gpu=18, link_gbps=200)
    fab.validate()
    assert fab.params["link_split"] == [5, 4, 4, 5]
    assert len(fab.endpoints) == 8 and len(fab.switches) == 4
    # One bundle per GPU-switch pair: 8 x 4 = 32 links-as-bundles, i.e. 64 arcs.
    assert fab.graph.number_of_edges() == 64
    assert fab.summary().links_by_tier == {"gpu-nvswitch": 8 * 18}
    for i, g in enumerate(fab.endpoints):
        d = fab.graph.nodes[g]
        assert (d["role"], d["layer"], d["node"], d["rail"]) == ("gpu", 0, 0, i)
    for j, (s, k) in enumerate(zip(fab.switches, [5, 4, 4, 5], strict=True)):
        d = fab.graph.nodes[s]
        assert (d["role"], d["layer"], d["reduce"]) == ("switch", 1, True)
        assert d["radix"] == 8 * k == ports_used(fab, s)  # default radix: ports used
        assert fab.graph["gpu0"][s] == {"capacity": k * 200.0, "links": k, "tech": "nvlink4",
                                        "tier": "gpu-nvswitch"}, j


def test_nvswitch_domain_explicit_split_tech_and_options():
    fab = fo.nvswitch_domain(gpus=4, switches=3, links_per_gpu=6, link_gbps=400,
                             link_split=[1, 2, 3], in_network_reduction=False, name="x",
                             switch_radix=16, switch_model="nvswitch4")
    fab.validate()
    assert fab.name == "x"
    assert [fab.graph["gpu2"][s]["links"] for s in fab.switches] == [1, 2, 3]
    assert {fab.graph.nodes[s]["reduce"] for s in fab.switches} == {False}
    assert {fab.graph.nodes[s]["radix"] for s in fab.switches} == {16}
    assert {fab.graph.nodes[s]["model"] for s in fab.switches} == {"nvswitch4"}
    assert fab.graph["gpu0"]["nvsw0"]["tech"] == "nvlink5"  # 400 Gb/s per link
    # Other rates get the generic label unless tech is given.
    assert fo.nvswitch_domain(2, 1, 1, 100).graph["gpu0"]["nvsw0"]["tech"] == "100g"
    assert fo.nvswitch_domain(2, 1, 1, 100, tech="nvlink3").graph["gpu0"]["nvsw0"]["tech"] \
        == "nvlink3"


def test_radix_exceeded_raises_before_building():
    # 10 GPUs x 9 links on switch 0 = 90 ports > 64.
    with pytest.raises(fo.InvalidParameterError, match="switch_radix must be at least the 90"):
        fo.nvswitch_domain(gpus=10, switches=2, links_per_gpu=18, link_gbps=200,
                           link_split=[9, 9], switch_radix=64)
    # 8 x 8 = 64 fits exactly.
    fo.nvswitch_domain(gpus=8, switches=2, links_per_gpu=16, link_gbps=200,
                       switch_radix=64).validate()


def test_validate_catches_radix_exceeded_after_an_edit():
    fab = fo.dgx_h100()
    fab.graph.nodes["nvsw0"]["radix"] = 39  # the GPUs use 8 x 5 = 40 ports
    with pytest.raises(fo.InvalidFabricError, match="uses 40 ports, more than its radix 39"):
        fab.validate()


@pytest.mark.parametrize("kwargs, match", [
    ({"gpus": 1}, "gpus must be an integer >= 2"),
    ({"gpus": 8.0}, "gpus must be an integer"),
    ({"switches": 0}, "switches must be an integer >= 1"),
    ({"links_per_gpu": 0}, "links_per_gpu must be an integer >= 1"),
    ({"links_per_gpu": 3}, r"links_per_gpu must be an integer >= switches \(4\)"),
    ({"link_gbps": 0}, "link_gbps must be a finite number > 0"),
    ({"link_gbps": -200}, "link_gbps must be a finite number > 0"),
    ({"link_split": [5, 4, 4]}, "link_split must be a sequence of integers >= 1 of length 4"),
    ({"link_split": [5, 4, 4, 4]}, r"link_split must be a sequence summing to links_per_gpu"),
    ({"link_split": [9, 9, 0, 0]}, "link_split must be a sequence of integers >= 1"),
    ({"link_split": "5445"}, "link_split must be a sequence"),
    ({"in_network_reduction": 1}, "in_network_reduction must be True or False"),
    ({"switch_radix": 0}, "switch_radix must be an integer >= 1"),
    ({"switch_model": 3}, "switch_model must be None or a non-empty string"),
    ({"switch_model": ""}, "switch_model must be None or a non-empty string"),
    ({"tech": 4}, "tech must be None or a non-empty string"),
    ({"name": 4}, "name must be None or a non-empty string"),
])
def test_nvswitch_domain_rejects_bad_arguments(kwargs, match):
    args = {"gpus": 8, "switches": 4, "links_per_gpu": 18, "link_gbps": 200} | kwargs
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.nvswitch_domain(**args)


# -- systems ------------------------------------------------------------------------------

def test_dgx_h100():
    fab = fo.dgx_h100().validate()
    assert fab.name == "DGX H100"
    assert len(fab.endpoints) == 8 and len(fab.switches) == 4
    # 18 NVLink 4 links per GPU (V) at 200 Gb/s = 25 GB/s per direction: 3600 Gb/s = 450 GB/s.
    assert all(links_from(fab, g) == 18 for g in fab.endpoints)
    assert all(fab.injection_gbps(g) == 18 * 200 == 3600 for g in fab.endpoints)
    # Split 5/4/4/5: chips use 8 x 5 = 40 and 8 x 4 = 32 of their 64 ports.
    assert [ports_used(fab, s) for s in fab.switches] == [40, 32, 32, 40]
    assert {(fab.graph.nodes[s]["model"], fab.graph.nodes[s]["radix"])
            for s in fab.switches} == {("nvswitch3", 64)}
    # Node total 8 x 450 GB/s = 3.6 TB/s per direction, 7.2 TB/s bidirectional (V2).
    assert fab.summary().capacity_gbps_by_tier["gpu-nvswitch"] / 8 / 1000 == 3.6


def test_dgx_b200():
    fab = fo.dgx_b200().validate()
    assert len(fab.endpoints) == 8 and len(fab.switches) == 2
    # 18 NVLink 5 links x 400 Gb/s = 7200 Gb/s per direction per GPU.
    assert all(fab.injection_gbps(g) == 18 * 400 == 7200 for g in fab.endpoints)
    assert [ports_used(fab, s) for s in fab.switches] == [72, 72]  # 8 GPUs x 9 links
    assert {fab.graph.nodes[s]["model"] for s in fab.switches} == {"nvswitch4"}
    # 8 x 7200 Gb/s = 57.6 Tb/s = 7.2 TB/s per direction = 14.4 TB/s bidirectional (V2).
    assert 2 * fab.summary().capacity_gbps_by_tier["gpu-nvswitch"] / 8 / 1000 == 14.4
    assert fab.graph["gpu0"]["nvsw0"]["tech"] == "nvlink5"


def test_gb200_nvl72():
    fab = fo.gb200_nvl72().validate()
    assert len(fab.endpoints) == 72 and len(fab.switches) == 18
    # One link from every GPU to every chip: 72 x 18 = 1296 links.
    assert fab.summary().links_by_tier == {"gpu-nvswitch": 1296}
    assert all(fab.injection_gbps(g) == 18 * 400 == 7200 for g in fab.endpoints)
    assert all(ports_used(fab, s) == 72 == fab.graph.nodes[s]["radix"] for s in fab.switches)
    # 9 switch trays of 2 chips, 18 compute trays of 4 GPUs.
    assert Counter(fab.graph.nodes[s]["tray"] for s in fab.switches) == {t: 2 for t in range(9)}
    assert Counter(fab.graph.nodes[g]["node"] for g in fab.endpoints) == {t: 4 for t in range(18)}
    assert [fab.graph.nodes[g]["rail"] for g in fab.endpoints[:5]] == [0, 1, 2, 3, 0]
    # 72 x 1.8 TB/s bidirectional = 129.6 TB/s, NVIDIA's "130 TB/s" (V).
    assert 2 * fab.summary().capacity_gbps_by_tier["gpu-nvswitch"] / 8 / 1000 == 129.6
    # GPUs and chips can be permuted freely: one orbit each way.
    assert fab.symmetry.n_orbits == 2


# -- two-level NVLink ---------------------------------------------------------------------

def test_nvlink_switch_system_full_size_counts():
    fab = fo.nvlink_switch_system().validate()
    # 32 DGX H100 nodes = 256 GPUs; 32 x 4 L1 NVSwitches + 18 boxes x 2 chips = 164 switches.
    assert len(fab.endpoints) == 256 and len(fab.switches) == 32 * 4 + 36
    s = fab.summary()
    assert s.links_by_tier == {"gpu-nvswitch": 256 * 18, "nvswitch-l2": 32 * 72}
    # Every L2 chip gets 2 links from each node: 64 ports, all of its radix.
    l2 = [v for v in fab.switches if fab.graph.nodes[v]["layer"] == 2]
    assert all(ports_used(fab, c) == 64 == fab.graph.nodes[c]["radix"] for c in l2)
    assert Counter(fab.graph.nodes[c]["box"] for c in l2) == {b: 2 for b in range(18)}
    # L1 switches: 40 + 20 = 60 and 32 + 16 = 48 of 64 ports (5/4/4/5 down, 20/16/16/20 up).
    assert [ports_used(fab, f"n0.nvsw{j}") for j in range(4)] == [60, 48, 48, 60]


def test_nvlink_switch_system_wiring_spreads_each_switch_evenly():
    fab = fo.nvlink_switch_system(nodes=1)
    chips = {j: sorted(int(v.split(".")[1]) for v in fab.graph[f"n0.nvsw{j}"]
                       if v.startswith("l2.")) for j in range(4)}
    assert chips == {0: list(range(0, 20)), 1: list(range(20, 36)),
                     2: list(range(0, 16)), 3: list(range(16, 36))}
    # With fewer chips than links a switch sends a bundle: 20 links over 6 chips -> 4,4,3,3,3,3.
    fab = fo.nvlink_switch_system(nodes=1, l2_chips=6)
    counts = sorted((fab.graph["n0.nvsw0"][f"l2.{c}"]["links"] for c in range(6)), reverse=True)
    assert counts == [4, 4, 3, 3, 3, 3]


def test_nvlink_switch_system_all_to_all_figure():
    # NVIDIA: 57.6 TB/s all-to-all for 256 H100 (V). Our second level carries, per direction,
    # 32 nodes x 72 off-node links x 200 Gb/s = 460,800 Gb/s = 460.8 Tb/s = 57.6 TB/s.
    # Each GPU's share is 57.6 TB/s / 256 = 225 GB/s, half its 450 GB/s NVLink: the 72 off-node
    # links per node are half of the 8 x 18 = 144 GPU links. The bisection (half the nodes to
    # the other half) carries half of 57.6 TB/s each way = 57.6 TB/s bidir = 460.8 Tb/s (V2).
    fab = fo.nvlink_switch_system()
    l2_gbps = fab.summary().capacity_gbps_by_tier["nvswitch-l2"]
    assert l2_gbps == 32 * 72 * 200 == 460_800
    assert l2_gbps / 8 / 1000 == 57.6
    assert l2_gbps / 8 / 256 == 225.0 == 450 / 2


def test_nvlink_switch_system_rejects_bad_arguments():
    # 33 nodes x 2 links per chip = 66 ports > 64.
    with pytest.raises(fo.InvalidParameterError, match="l2_radix must be at least the 66"):
        fo.nvlink_switch_system(nodes=33)
    for kwargs, match in [({"nodes": 0}, "nodes must be an integer >= 1"),
                          ({"l2_chips": 0}, "l2_chips must be an integer >= 1"),
                          ({"l2_radix": -1}, "l2_radix must be an integer >= 1"),
                          ({"in_network_reduction": "yes"}, "in_network_reduction"),
                          ({"name": 1}, "name must be None or a non-empty string")]:
        with pytest.raises(fo.InvalidParameterError, match=match):
            fo.nvlink_switch_system(**kwargs)


def test_nvl576_announced_model_counts():
    fab = fo.nvl576().validate()
    assert "announced" in fab.name
    # 8 racks x 72 GPUs; 8 x 18 L1 chips; 18 planes x 8 L2 chips (72 uplinks x 8 racks / 72).
    assert len(fab.endpoints) == 576 and len(fab.switches) == 144 + 144
    assert fab.params["l2_per_plane"] == 8
    s = fab.summary()
    assert s.links_by_tier == {"gpu-nvswitch": 576 * 18, "nvswitch-l2": 144 * 72}
    assert all(fab.injection_gbps(g) == 7200 for g in fab.endpoints)
    l1 = [v for v in fab.switches if fab.graph.nodes[v]["layer"] == 1]
    l2 = [v for v in fab.switches if fab.graph.nodes[v]["layer"] == 2]
    assert all(ports_used(fab, v) == 144 and fab.graph.nodes[v]["model"] is None for v in l1)
    assert all(ports_used(fab, v) == 72 == fab.graph.nodes[v]["radix"] for v in l2)
    # Each L1 chip sends 9 links to each of the 8 L2 chips of its plane.
    assert {d["links"] for u, _, d in fab.graph.out_edges("r0.nvsw5", data=True)
            if fab.graph.nodes[u]["layer"] == 1 and d["tier"] == "nvswitch-l2"} == {9}
    assert {fab.graph.nodes[v]["plane"] for v in fab.graph["r3.nvsw5"]
            if fab.graph.nodes[v]["layer"] == 2} == {5}
    assert fab.graph.nodes["r2.gpu5"]["node"] == 2 * 18 + 1  # rack 2, compute tray 1
    # Non-blocking: the second level carries as much as the GPU links.
    assert s.capacity_gbps_by_tier["nvswitch-l2"] == s.capacity_gbps_by_tier["gpu-nvswitch"]


def test_nvl576_tapered_and_bad_arguments():
    # 36 uplinks per L1 chip: 8 x 36 / 72 = 4 L2 chips per plane, a 2:1 taper.
    fab = fo.nvl576(uplinks_per_switch=36).validate()
    assert fab.params["l2_per_plane"] == 4
    with pytest.raises(fo.InvalidParameterError, match="l2_radix must be at least racks"):
        fo.nvl576(racks=8, l2_radix=4)
    for kwargs, match in [({"racks": 0}, "racks"), ({"uplinks_per_switch": 0}, "uplinks"),
                          ({"gpus_per_rack": 0}, "gpus_per_rack"),
                          ({"switches_per_rack": 0}, "switches_per_rack"),
                          ({"l2_radix": 0}, "l2_radix")]:
        with pytest.raises(fo.InvalidParameterError, match=match):
            fo.nvl576(**kwargs)


# -- UALink -------------------------------------------------------------------------------

def test_ualink_pod_counts():
    fab = fo.ualink_pod(accelerators=64, switches=4, ports_per_accelerator=4).validate()
    assert len(fab.endpoints) == 64 and len(fab.switches) == 4
    # x4 ports of 200 Gb/s lanes: 800 Gb/s per port, 4 ports = 3200 Gb/s per accelerator.
    assert all(fab.injection_gbps(a) == 4 * 4 * 200 == 3200 for a in fab.endpoints)
    assert all(ports_used(fab, s) == 64 == fab.graph.nodes[s]["radix"] for s in fab.switches)
    d = fab.graph["acc0"]["uls0"]
    assert (d["tech"], d["tier"], d["capacity"]) == ("ualink", "gpu-ualink-switch", 800.0)
    assert {fab.graph.nodes[s]["reduce"] for s in fab.switches} == {False}


def test_ualink_pod_spread_lanes_and_limits():
    # 6 ports over 4 switches: 2/1/1/2; x1 ports of 200 Gb/s.
    fab = fo.ualink_pod(accelerators=8, switches=4, ports_per_accelerator=6, lanes_per_port=1)
    assert fab.params["port_split"] == [2, 1, 1, 2]
    assert fab.injection_gbps("acc0") == 6 * 200
    # The largest pod: 1,024 accelerators (UALink 200G 1.0).
    big = fo.ualink_pod(accelerators=1024, switches=2, ports_per_accelerator=2, lanes_per_port=2)
    assert len(big.endpoints) == 1024 and big.injection_gbps("acc0") == 2 * 400


@pytest.mark.parametrize("kwargs, match", [
    ({"accelerators": 1025}, "accelerators must be an integer >= 2 <= 1024"),
    ({"accelerators": 0}, "accelerators must be an integer >= 2"),
    ({"lanes_per_port": 3}, "lanes_per_port must be one of 1, 2, 4"),
    ({"lanes_per_port": 4.0}, "lanes_per_port must be an integer"),
    ({"lanes_per_port": True}, "lanes_per_port must be an integer"),
    ({"lane_gbps": 0}, "lane_gbps must be a finite number > 0"),
    ({"switches": 0}, "switches must be an integer >= 1"),
    ({"ports_per_accelerator": 0}, "ports_per_accelerator must be an integer >= 1"),
    ({"ports_per_accelerator": 2}, r"ports_per_accelerator must be an integer >= switches \(4\)"),
    ({"switch_radix": 32}, "switch_radix must be at least the 64"),
    ({"name": 1}, "name must be None or a non-empty string"),
])
def test_ualink_pod_rejects_bad_arguments(kwargs, match):
    args = {"accelerators": 64, "switches": 4, "ports_per_accelerator": 4} | kwargs
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.ualink_pod(**args)


@pytest.mark.parametrize("make", [fo.dgx_h100, fo.dgx_b200, fo.gb200_nvl72])
@pytest.mark.parametrize("name", [3, ""])
def test_fixed_nodes_reject_a_name_that_is_not_a_label(make, name):
    # The error names the function called, not the one it delegates to.
    with pytest.raises(fo.InvalidParameterError,
                       match=rf"{make.__name__}\(\): name must be None or a non-empty string"):
        make(name=name)


# -- symmetry claims, proved on small instances -------------------------------------------

@pytest.mark.parametrize("build", [
    lambda: fo.dgx_h100(),
    lambda: fo.dgx_b200(),
    lambda: fo.nvswitch_domain(gpus=5, switches=3, links_per_gpu=5, link_gbps=200),
    lambda: fo.nvswitch_domain(gpus=4, switches=4, links_per_gpu=10, link_gbps=400,
                               link_split=[1, 2, 3, 4]),
    lambda: fo.nvlink_switch_system(nodes=1),
    lambda: fo.nvlink_switch_system(nodes=2, l2_chips=4),
    lambda: fo.nvlink_switch_system(nodes=2, l2_chips=6),   # uneven deal: three chip classes
    lambda: fo.nvl576(racks=2, gpus_per_rack=4, switches_per_rack=2),
    lambda: fo.nvl576(racks=3, gpus_per_rack=4, switches_per_rack=3, uplinks_per_switch=5,
                      l2_radix=6),                          # uneven deal: two chip classes
    lambda: fo.ualink_pod(accelerators=6, switches=3, ports_per_accelerator=4),
    lambda: fo.ualink_pod(accelerators=12, switches=2, ports_per_accelerator=2,
                          lanes_per_port=1),
], ids=["dgx_h100", "dgx_b200", "domain-2-1-2", "domain-1-2-3-4", "nvss-1", "nvss-2x4",
        "nvss-2x6", "nvl576-small", "nvl576-uneven", "ualink-2-1-1", "ualink-1-1"])
def test_symmetry_claims_hold(build):
    fab = build()
    fab.validate()
    assert fab.symmetry is not None
    fo.verify_symmetry(fab)


def test_orbit_counts():
    # 5/4/4/5: the two 5-link switches share an orbit, as do the two 4-link ones; x up/down.
    assert fo.dgx_h100().symmetry.n_orbits == 4
    assert fo.dgx_b200().symmetry.n_orbits == 2
    # Full system: 4 GPU-L1 indices, and each L1 switch meets one class of the 36 chips
    # (chips 0-15 get links from switches 0 and 2, 16-19 from 0 and 3, 20-35 from 1 and 3):
    # switch 0 meets 2 classes, switches 1, 2 one each, switch 3 two: (4 + 6) x 2 directions.
    assert fo.nvlink_switch_system().symmetry.n_orbits == 20
    assert fo.nvl576().symmetry.n_orbits == 4


def test_registered_and_exported():
    for name in ["nvswitch_domain", "dgx_h100", "dgx_b200", "gb200_nvl72",
                 "nvlink_switch_system", "nvl576", "ualink_pod"]:
        assert fo.GENERATORS[name] is getattr(fo, name)
        assert name in fo.__all__
