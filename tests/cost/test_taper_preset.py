"""A taper changes what a taper changes: 1:1 and 2:1 of the same cluster are priced by the
same default build, and the 2:1 fabric is cheaper by the leaves, spines and uplinks it drops."""

import pytest

import fabricopt as fo


def _cluster(ratio: float) -> fo.Fabric:
    return fo.cluster("dgx_h100", 128, scale_out="fat_tree", oversubscription=ratio,
                      switch_model="qm9700")


def _switches(cost: fo.CostEstimate) -> int:
    return sum(r.count for r in cost.bom if r.kind == "switch" and r.component == "qm9700")


def test_whole_servers_sit_under_one_leaf_at_two_to_one():
    fab = _cluster(2.0)
    leaf_of: dict[int, set] = {}
    for u, v, d in fab.graph.edges(data=True):
        if d.get("tier") == "gpu-leaf":
            gpu, leaf = (u, v) if fab.graph.nodes[u].get("role") == "gpu" else (v, u)
            leaf_of.setdefault(fab.graph.nodes[gpu]["node"], set()).add(leaf)
    # 128 DGXs of 8 GPUs, each on exactly one leaf.
    assert len(leaf_of) == 128 and all(len(s) == 1 for s in leaf_of.values())
    # 64 ports at 2:1: floor(64 * 2/3) = 42 down, rounded to 5 servers = 40 GPUs, 20 up.
    assert fab.params["oversubscription_built"] == pytest.approx(2.0)


def test_two_to_one_takes_the_same_build_and_costs_less_by_what_it_drops():
    one, two = fo.estimate_cost(_cluster(1.0)), fo.estimate_cost(_cluster(2.0))
    # The default build is decided by how servers meet leaves, which the taper keeps.
    assert one.policy_name == two.policy_name
    assert one.policy_name.startswith("top-of-rack build")
    # 1:1: 1024 GPUs / 32 down = 32 leaves, 32 * 32 uplinks / 64 = 16 spines: 48 switches.
    # 2:1: 40 down (five servers), ceil(128 / 5) = 26 leaves, 26 * 20 = 520 uplinks,
    # ceil(520 / 64) = 9 spines: 35 switches. GPU links stay at 1024.
    assert (_switches(one), _switches(two)) == (48, 35)
    assert (one.by_tier["leaf-spine"].links, two.by_tier["leaf-spine"].links) == (1024, 520)
    assert one.by_tier["gpu-leaf"].links == two.by_tier["gpu-leaf"].links == 1024
    # Capex is the sum over tiers (switches apportioned to the tiers they serve): the saving
    # is what the leaf-spine tier drops (13 switches and 504 uplinks) less what the fifth
    # server of a leaf (in the next rack: 32 GPUs a rack) pays for optics instead of copper.
    assert one.capex_usd == pytest.approx(sum(t.usd for t in one.by_tier.values()))
    assert two.capex_usd == pytest.approx(sum(t.usd for t in two.by_tier.values()))
    dropped = one.by_tier["leaf-spine"].usd - two.by_tier["leaf-spine"].usd
    extra = two.by_tier["gpu-leaf"].usd - one.by_tier["gpu-leaf"].usd
    assert one.capex_usd - two.capex_usd == pytest.approx(dropped - extra)
    assert dropped > 13 * 14_000.0  # at least the 13 QM9700s at their $14k catalog price
    # Half the uplinks cost at most about half: 520 of 1024 links, lengths alike.
    assert two.by_tier["leaf-spine"].usd < 0.55 * one.by_tier["leaf-spine"].usd
    # A practitioner expects 2:1 clearly cheaper: 27 % fewer switches, 49 % fewer uplinks.
    assert two.capex_usd < 0.85 * one.capex_usd
