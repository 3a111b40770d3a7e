"""Every generator's name carries every option given away from its default, so that fabrics
built with different options never share a name (a comparison would show identical rows)."""

from __future__ import annotations

import inspect

import pytest

import fabricopt as fo
from fabricopt.generators import GENERATORS

# family: (required arguments, {option: a value other than its default}). Each value is small
# enough to build in milliseconds and valid with the required arguments.
CASES = {
    "ring": ({"n": 4}, {"link_gbps": 400, "tech": "ndr"}),
    "torus": ({"dims": (3, 3)}, {"link_gbps": 400, "tech": "ndr"}),
    "hypercube": ({"d": 3}, {"link_gbps": 400, "tech": "ndr"}),
    "complete": ({"n": 4}, {"link_gbps": 400, "tech": "ndr"}),
    "dragonfly": ({"a": 2, "h": 1, "p": 1}, {"link_gbps": 200, "global_gbps": 800,
                                             "tech": "400gbe", "switch_model": "sn5600"}),
    "jellyfish": ({"switches": 8, "network_ports": 3, "endpoints_per_switch": 1, "seed": 1},
                  {"seed": 2, "link_gbps": 200, "tech": "400gbe", "switch_model": "sn5600"}),
    "fat_tree": ({"k": 4}, {"link_gbps": 200, "tech": "400gbe", "switch_model": "sn5600"}),
    "clos": ({"endpoints": 64, "radix": 16},
             {"tiers": 3, "oversubscription": 3.0, "link_gbps": 200, "tech": "400gbe",
              "switch_model": "sn5600"}),
    "leaf_spine": ({"leaves": 2, "spines": 2, "endpoints_per_leaf": 2},
                   {"link_gbps": 200, "links_per_pair": 2, "tech": "400gbe",
                    "switch_model": "sn5600"}),
    "rail_optimized": ({"nodes": 8, "gpus_per_node": 4},
                       {"gpus_per_node": 2, "leaf_radix": 32, "spine": False,
                        "oversubscription": 3.0, "planes": 2, "nic_gbps": 800,
                        "scale_up": fo.nvswitch_domain(4, 1, 1, 200), "tiers": 3,
                        "tech": "400gbe", "switch_model": "sn5600"}),
    "nvswitch_domain": ({"gpus": 4, "switches": 2, "links_per_gpu": 4, "link_gbps": 200},
                        {"link_split": [1, 3], "in_network_reduction": False,
                         "switch_radix": 16, "switch_model": "nvswitch3", "tech": "nvlink4",
                         "gpu_model": "h100_sxm"}),
    "dgx_a100": ({}, {"gpu": "a100_sxm_40gb"}),
    "dgx_h100": ({}, {"in_network_reduction": False}),
    "hgx_h800": ({}, {"in_network_reduction": False}),
    "dgx_h200": ({}, {"in_network_reduction": False}),
    "dgx_b200": ({}, {"in_network_reduction": False}),
    "gb200_nvl72": ({}, {"in_network_reduction": False}),
    "nvlink_switch_system": ({"nodes": 2}, {"nodes": 3, "l2_chips": 18, "l2_radix": 72,
                                            "in_network_reduction": False}),
    "nvl576": ({"racks": 2}, {"racks": 3, "uplinks_per_switch": 36, "l2_radix": 64,
                              "gpus_per_rack": 36, "switches_per_rack": 9,
                              "in_network_reduction": False}),
    "ualink_pod": ({"accelerators": 8, "switches": 2, "ports_per_accelerator": 2},
                   {"lanes_per_port": 2, "lane_gbps": 100.0, "switch_radix": 32}),
    "cluster": ({"scale_up": "dgx_h100", "nodes": 4},
                {"scale_out": "clos", "nic_gbps": 800, "leaf_radix": 32, "spine": False,
                 "oversubscription": 3.0, "planes": 2, "tiers": 3, "tech": "400gbe",
                 "switch_model": "sn5600"}),
    "superpod": ({"scalable_units": 2},
                 {"node": "dgx_b200", "nodes_per_su": 16, "leaf_radix": 128,
                  "nic_gbps": 800, "spine": False, "oversubscription": 2.0,
                  "tech": "400gbe", "switch_model": "sn5600"}),
}
# Options that name the fabric themselves, or that are ignored (a rail-only leaf has no
# uplinks, so no ratio) and must not be shown.
NOT_OPTIONS = {"name"}


def test_every_generator_has_a_case():
    assert set(CASES) == set(GENERATORS)


@pytest.mark.parametrize("family", sorted(CASES))
def test_every_option_is_covered(family):
    params = inspect.signature(GENERATORS[family]).parameters
    defaulted = {k for k, p in params.items()
                 if p.default is not inspect.Parameter.empty and k not in NOT_OPTIONS}
    required, options = CASES[family]
    assert defaulted - set(required) <= set(options) | set(required)


@pytest.mark.parametrize("family", sorted(CASES))
def test_each_option_changes_the_name(family):
    required, options = CASES[family]
    base = fo.generators.make(family, required).name
    names = {}
    for key, value in options.items():
        args = {**required, key: value}
        if family == "cluster" and key in ("leaf_radix", "spine", "planes"):
            args["scale_out"] = "rail_optimized"
        if key == "oversubscription" and family in ("cluster", "superpod"):
            args["spine"] = True
        names[key] = fo.generators.make(family, args).name
    assert all(n != base for n in names.values()), (base, names)
    # Distinct options give distinct names too (e.g. a 3:1 taper is not a leaf_radix change).
    assert len(set(names.values())) == len(names), names


def test_three_tapers_compare_as_three_rows():
    # The case: superpod(64, oversubscription=2) was named like the 1:1 one.
    names = [fo.superpod(1, oversubscription=s).name for s in (1, 2, 3)]
    assert names == ["SuperPOD(1 SU x 32 x DGX H100)", "SuperPOD(1 SU x 32 x DGX H100, 2:1)",
                     "SuperPOD(1 SU x 32 x DGX H100, 3:1)"]


def test_an_ignored_ratio_is_not_shown():
    # Without a spine a rail leaf has no uplinks: the ratio is ignored, and not in the name.
    assert fo.rail_optimized(8, spine=False, oversubscription=2).name == "rail_only(8x8)"
