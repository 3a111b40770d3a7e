"""Every generator, small: it validates, and throughput, bisection and every collective run
on it with their certificates. New generators must add a small instance here."""

import pytest
from flow_helpers import certified

import fabricopt as fo

SMALL = {
    "ring": {"n": 6},
    "torus": {"dims": (3, 4)},
    "hypercube": {"d": 3},
    "complete": {"n": 5},
    "dragonfly": {"a": 2, "h": 1, "p": 2},
    "jellyfish": {"switches": 8, "network_ports": 3, "endpoints_per_switch": 2, "seed": 1},
    "fat_tree": {"k": 4},
    "clos": {"endpoints": 24, "radix": 8},
    "leaf_spine": {"leaves": 3, "spines": 2, "endpoints_per_leaf": 4},
    "rail_optimized": {"nodes": 4, "gpus_per_node": 2, "leaf_radix": 4},
    "nvswitch_domain": {"gpus": 4, "switches": 2, "links_per_gpu": 4, "link_gbps": 200},
    "dgx_h100": {},
    "dgx_b200": {},
    "dgx_a100": {},
    "hgx_h800": {},
    "dgx_h200": {},
    "gb200_nvl72": {},
    "nvlink_switch_system": {"nodes": 2},
    "nvl576": {"racks": 2, "gpus_per_rack": 4, "switches_per_rack": 2},
    "ualink_pod": {"accelerators": 8, "switches": 2, "ports_per_accelerator": 2},
    "cluster": None,   # needs a scale-up Fabric argument; covered by its own tests
    "superpod": None,  # large by construction; covered by its own tests and benchmarks
}


def test_every_registered_generator_has_a_small_case():
    assert set(fo.GENERATORS) <= set(SMALL), set(fo.GENERATORS) - set(SMALL)


@pytest.mark.parametrize("name", [n for n, p in SMALL.items() if p is not None])
def test_generator_end_to_end(name):
    if name not in fo.GENERATORS:
        pytest.skip(f"{name} is not registered")
    fab = fo.GENERATORS[name](**SMALL[name]).validate()
    r = certified(fab, fo.max_concurrent_flow(fab))
    small_lp = fo.flow.api.lp_size_estimate(fab, fo.all_to_all(fab)) < 200_000
    if fab.symmetry is not None and small_lp:  # the full LP of NVL72 takes minutes
        full = fo.max_concurrent_flow(fab, method="lp")
        assert r.theta == pytest.approx(full.theta, rel=1e-7)
    b = fo.bisection_bandwidth(fab, milp_max_nodes=0)
    assert 0 <= b.lower_gbps <= b.upper_gbps
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
        c = fo.collective_bounds(fab, coll, message_bytes=2**20)
        assert 0 < c.lower_time_s <= c.achievable_time_s * (1 + 1e-9)
        assert c.busbw_GBps > 0
