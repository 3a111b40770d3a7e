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


def test_the_two_to_one_total_is_its_parts_counted_by_hand():
    # 128 DGX on 26 leaves of 5 or 4 servers: 24 leaves of 5 and 2 of 4 (128 = 24 x 5 + 2 x 4).
    # The layout's racks hold 4 servers (32 GPUs); a leaf sits in the rack most of its servers
    # are in, so 36 servers (288 GPU links) reach their leaf in another rack and take 400G DR
    # optics at the NIC ($800), half an 800G twin-port DR8 at the leaf and 5 m of fibre ($45);
    # the other 736 GPU links take twin-port DACs ($250 a pair): 368. The 520 leaf-spine links
    # take one twin-port DR8 per link (half at each end) and their fibre (7-20 m, $47-$60).
    cost = fo.estimate_cost(_cluster(2.0))
    rows = {(r.component, r.kind, r.detail): r for r in cost.bom if r.section == "network"}
    assert rows["dr_400g", "transceiver", ""].count == 288
    assert rows["dac_800g", "cable", "2 m"].count == 368
    assert rows["dr_800g", "transceiver", ""].count == 520 + 288 // 2
    fibre = sum(r.total_usd for r in rows.values() if r.kind == "fibre")
    assert fibre == pytest.approx(288 * 45 + 40 * 47 + 160 * 50 + 240 * 55 + 80 * 60)
    by_hand = 35 * 14_000 + 288 * 800 + 664 * 1_250 + 368 * 250 + fibre
    assert by_hand == 1_683_240
    assert cost.capex_usd == pytest.approx(by_hand, abs=1e-6)


def test_three_to_one_costs_less_than_two_to_one_than_one_to_one():
    # 3:1 on 64 ports: 48 down (six DGXs), 16 up; 22 leaves (ceil(128 / 6)), 352 uplinks,
    # 6 spines: fewer switches and uplinks again than 2:1, under the same build.
    costs = [fo.estimate_cost(_cluster(r)) for r in (1.0, 2.0, 3.0)]
    assert len({c.policy_name for c in costs}) == 1
    assert [_switches(c) for c in costs] == [48, 35, 28]
    assert [c.by_tier["leaf-spine"].links for c in costs] == [1024, 520, 352]
    assert costs[2].capex_usd < costs[1].capex_usd < costs[0].capex_usd


def test_a_leaf_outside_the_servers_racks_is_not_a_top_of_rack_build():
    # Leaves at the end of the row (or central) sit in no server's rack: whole servers under
    # one leaf do not make that a top-of-rack build, at 1:1 or 2:1.
    for ratio in (1.0, 2.0):
        for where in ("end_of_row", "central"):
            cost = fo.estimate_cost(_cluster(ratio), layout=fo.Layout(leaf_placement=where))
            assert cost.policy_name.startswith("DGX SuperPOD reference build"), (ratio, where)


def test_leaves_filled_gpu_by_gpu_split_servers_and_keep_their_build():
    # whole_servers=False fills the 42 down ports the 2:1 ratio allows: ceil(1024 / 42) = 25
    # leaves of 41 or 40 GPUs, 21 uplinks each (525), ceil(525 / 64) = 9 spines: 34
    # switches; servers span two leaves, so the SuperPOD build prices it.
    fab = fo.cluster("dgx_h100", 128, scale_out="fat_tree", oversubscription=2.0,
                     switch_model="qm9700", whole_servers=False)
    cost = fo.estimate_cost(fab)
    assert _switches(cost) == 34 and cost.by_tier["leaf-spine"].links == 525
    assert cost.policy_name.startswith("DGX SuperPOD reference build")
    with pytest.raises(fo.InvalidParameterError, match="whole_servers"):
        fo.cluster("dgx_h100", 4, scale_out="clos", whole_servers="yes")
