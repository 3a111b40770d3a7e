"""The tier vocabulary: every generator's tiers are classified as its docstring says, and the
modules that ask "is this link scale-up" get one answer."""

import pytest

import fabricopt as fo
from fabricopt import tiers
from fabricopt.tiers import is_scale_up, is_scale_up_arc, tech_family, tier_of

# Per generator: a small instance and, per tier it builds, (scale-up?, technology family).
# The classic graphs' unit links are "generic": no family. Network links at an InfiniBand
# rate default to that generation (400 Gb/s: "ndr"), the scale-out of NVIDIA's designs.
NET = (False, None)
IB = (False, "infiniband")
NVLINK = (True, "nvlink")
CASES = {
    "ring": (lambda: fo.ring(6), {"ring": NET}),
    "torus": (lambda: fo.torus((3, 4)), {"torus": NET}),
    "hypercube": (lambda: fo.hypercube(3), {"hypercube": NET}),
    "complete": (lambda: fo.complete(5), {"complete": NET}),
    "dragonfly": (lambda: fo.dragonfly(a=2, h=1, p=2),
                  {"gpu-leaf": IB, "local": IB, "global": IB}),
    "jellyfish": (lambda: fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=2,
                                       seed=1), {"gpu-leaf": IB, "switch-switch": IB}),
    "fat_tree": (lambda: fo.fat_tree(4), {"gpu-leaf": IB, "leaf-spine": IB, "spine-core": IB}),
    "clos": (lambda: fo.clos(endpoints=24, radix=8), {"gpu-leaf": IB, "leaf-spine": IB}),
    "leaf_spine": (lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=4,
                                         tech="800gbe"),
                   {"gpu-leaf": (False, "ethernet"), "leaf-spine": (False, "ethernet")}),
    "rail_optimized": (lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4),
                       {"gpu-leaf": IB, "leaf-spine": IB}),
    "nvswitch_domain": (lambda: fo.nvswitch_domain(gpus=4, switches=2, links_per_gpu=4,
                                                   link_gbps=200), {"gpu-nvswitch": NVLINK}),
    "dgx_h100": (fo.dgx_h100, {"gpu-nvswitch": NVLINK}),
    "dgx_b200": (fo.dgx_b200, {"gpu-nvswitch": NVLINK}),
    "dgx_a100": (fo.dgx_a100, {"gpu-nvswitch": NVLINK}),
    "hgx_h800": (fo.hgx_h800, {"gpu-nvswitch": NVLINK}),
    "dgx_h200": (fo.dgx_h200, {"gpu-nvswitch": NVLINK}),
    "gb200_nvl72": (fo.gb200_nvl72, {"gpu-nvswitch": NVLINK}),
    "nvlink_switch_system": (lambda: fo.nvlink_switch_system(nodes=2),
                             {"gpu-nvswitch": NVLINK, "nvswitch-l2": NVLINK}),
    "nvl576": (lambda: fo.nvl576(racks=2, gpus_per_rack=4, switches_per_rack=2),
               {"gpu-nvswitch": NVLINK, "nvswitch-l2": NVLINK}),
    "ualink_pod": (lambda: fo.ualink_pod(accelerators=8, switches=2, ports_per_accelerator=2),
                   {"gpu-ualink-switch": (True, "ualink")}),
    "cluster": (lambda: fo.cluster(fo.ualink_pod(8, 2, 2), 4),
                {"gpu-ualink-switch": (True, "ualink"), "gpu-leaf": IB, "leaf-spine": IB}),
    "superpod": (lambda: fo.superpod(1),
                 {"gpu-nvswitch": NVLINK, "gpu-leaf": (False, "infiniband"),
                  "leaf-spine": (False, "infiniband")}),
}


def test_every_registered_generator_has_a_case():
    assert set(fo.GENERATORS) <= set(CASES), set(fo.GENERATORS) - set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_generator_tiers_are_classified(name):
    make, expected = CASES[name]
    fab = make()
    assert set(fab.summary().links_by_tier) == set(expected)
    for u, v, d in fab.graph.edges(data=True):
        assert (is_scale_up_arc(d), tech_family(d["tech"])) == expected[tier_of(d)], (u, v, d)
    # Every tier a generator builds is in the vocabulary, scale-up ones among SCALE_UP_TIERS.
    known = tiers.SCALE_UP_TIERS + tiers.SCALE_OUT_TIERS + tiers.DIRECT_TIERS
    assert set(expected) <= set(known)
    assert {t for t, (up, _) in expected.items() if up} <= set(tiers.SCALE_UP_TIERS)


def test_scale_up_by_tier_or_by_tech():
    # A tier of SCALE_UP_TIERS is scale-up whatever its tech label, and a link of a scale-up
    # family is scale-up whatever its tier (a hand-built NVLink ring).
    assert is_scale_up("gpu-ualink-switch", "generic")
    assert is_scale_up("ring", "NVLink5") and is_scale_up("link", "ualink")
    assert not is_scale_up("gpu-leaf", "ndr") and not is_scale_up(None, None)
    assert tier_of({}) == tiers.DEFAULT_TIER == "link"
    assert fo.fabric.SCALE_UP_TIERS is tiers.SCALE_UP_TIERS  # the old import still works


def test_tech_families():
    assert [tech_family(t) for t in ("nvlink4", "ualink", "XDR", "ib", "400gbe", "ethernet",
                                     "400g", "generic", "")] == \
        ["nvlink", "ualink", "infiniband", "infiniband", "ethernet", "ethernet", None, None, None]
    assert set(tiers.SCALE_UP_FAMILIES) <= set(tiers.TECH_FAMILIES)


def test_scale_out_injection_asks_the_vocabulary():
    # A UALink cluster: each accelerator has 2 x 800 Gb/s of UALink ports (ualink_pod(8, 2, 2),
    # x4 ports at 200 Gb/s a lane) and one 400 Gb/s NIC link; only the NIC link is scale-out.
    fab = fo.cluster(fo.ualink_pod(8, 2, 2), 2)
    g = fab.endpoints[0]
    assert fab.injection_gbps(g) == pytest.approx(2 * 800.0 + 400.0)
    assert fab.scale_out_injection_gbps(g) == pytest.approx(400.0)


def test_tier_order_puts_scale_up_first():
    assert sorted(["leaf-spine", "gpu-ualink-switch", "torus", "gpu-leaf"], key=tiers.tier_rank) \
        == ["gpu-ualink-switch", "gpu-leaf", "leaf-spine", "torus"]
    est = fo.estimate_cost(fo.cluster(fo.ualink_pod(8, 2, 2), 2, tech="400gbe"))
    assert list(est.by_tier) == ["gpu-ualink-switch", "gpu-leaf", "leaf-spine"]
