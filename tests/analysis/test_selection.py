"""Choosing nodes and links by pattern or conditions, and failures drawn among them by weight."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.analysis.selection import select_links, select_nodes, switch_tier
from fabricopt.failures.distribution import failure_distribution
from fabricopt.failures.models import Selected


def test_nodes_by_pattern_conditions_and_tier():
    pod = fo.superpod(1)   # 32 DGX H100: 256 GPUs, 128 NVSwitches, 8 rail leaves, 4 spines
    assert len(select_nodes(pod, "n0.gpu*")) == 8
    assert len(select_nodes(pod, "role=gpu,rail=0|1")) == 2 * 32
    assert len(select_nodes(pod, {"role": "switch", "model": "qm*"})) == 8 + 4
    assert [switch_tier(pod, v) for v in select_nodes(pod, "tier=spine")] == ["spine"] * 4
    assert len(select_nodes(pod, "role=switch,tier=leaf")) == 8
    assert len(select_nodes(pod, "tier=nvswitch")) == 32 * 4
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'rail'"):
        select_nodes(pod, "rial=0")
    with pytest.raises(fo.InvalidParameterError, match="names look like"):
        select_nodes(pod, "gpu*")
    with pytest.raises(fo.InvalidParameterError, match="key=value"):
        select_nodes(pod, "role=")


def test_links_by_conditions():
    pod = fo.superpod(1)
    # 8 leaves x 4 spines, one bundle each; each GPU's NIC link to its rail leaf.
    assert len(select_links(pod, "tier=leaf-spine")) == 32
    assert len(select_links(pod, "tier=gpu-leaf,end=n0.*")) == 8
    with pytest.raises(fo.InvalidParameterError, match="some link"):
        select_links(pod, "tier=spine-core")


def test_selected_switches_enumerated_with_their_weights():
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4)
    # Spines three times as likely as leaves: 2 x 3 + 4 x 1 = 10, so 0.3 a spine, 0.1 a leaf.
    m = Selected("role=switch", weight={"tier=spine": 3, "tier=leaf": 1})
    draws = {d.label: d.weight for d in m.enumerate(fab)}
    assert draws == pytest.approx({"switch spine0": 0.3, "switch spine1": 0.3,
                                   **{f"switch leaf{i}": 0.1 for i in range(4)}})
    # Drawn one at a time, a spine comes up 60% of the time (2,000 draws: sd 1.1%).
    rng = np.random.default_rng(7)
    spines = sum(m.draw(fab, rng).label.startswith("switch spine") for _ in range(2000))
    assert abs(spines / 2000 - 0.6) < 0.04


def test_selected_links_by_attribute_and_count():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    for i, (u, v) in enumerate(select_links(fab, "tier=leaf-spine")):
        for a, b in ((u, v), (v, u)):
            fab.graph[a][b]["afr"] = float(i + 1)    # 1, 2, 3, 4 failures a year
    listed = Selected("tier=leaf-spine", kind="links", weight="afr").enumerate(fab)
    assert [round(d.weight, 6) for d in listed] == [0.1, 0.2, 0.3, 0.4]
    # Two at once: two distinct links every draw.
    m = Selected("tier=leaf-spine", kind="links", count=2)
    rng = np.random.default_rng(0)
    assert all(len(m.draw(fab, rng).pattern.links) == 2 for _ in range(20))
    with pytest.raises(fo.InvalidParameterError, match="at least count=5"):
        Selected("tier=leaf-spine", kind="links", count=5).draw(fab, rng)
    with pytest.raises(fo.InvalidParameterError, match="holds as a number"):
        Selected("tier=gpu-leaf", kind="links", weight="afr").enumerate(fab)


def test_selected_failures_distribution_of_spines():
    # 4 leaves x 4 GPUs x 400 Gb/s, 2 spines: in all-to-all each leaf's 4 GPUs send 4 x 12 d
    # off the leaf over its uplinks. Intact, 2 x 400 = 800 up: d = 800 / 48, 15 d = 250 Gb/s
    # per GPU. One spine lost: 400 up, d = 400 / 48, 125 Gb/s per GPU, whichever spine.
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4)
    dist = failure_distribution(fab, Selected("role=switch,tier=spine"), trials=None)
    assert [o.label for o in dist.outcomes] == ["switch spine0", "switch spine1"]
    for o in dist.outcomes:
        assert o.weight == pytest.approx(0.5)
        assert (o.gbps_lower, o.gbps_upper) == (pytest.approx(125.0), pytest.approx(125.0))
