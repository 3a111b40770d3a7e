"""Unused ports, read from the structure: undersubscribed leaves and switches no traffic can
use; each finding checked against the flow LP it spares."""

from __future__ import annotations

import pytest

import fabricopt as fo
from fabricopt.analysis.port_use import port_use
from fabricopt.cli import main


def test_switches_no_traffic_can_use_change_no_answer():
    # One leaf of 4 GPUs and two spines: each spine's only neighbour is the leaf, so a flow
    # through a spine comes back the way it went. Check: theta is the same without them.
    fab = fo.leaf_spine(leaves=1, spines=2, endpoints_per_leaf=4)
    use = port_use(fab)
    assert use.idle_switches == ["spine0", "spine1"] and use.undersubscribed == []
    without = fab.without(switches=["spine0", "spine1"])
    assert fo.max_concurrent_flow(without).theta == pytest.approx(
        fo.max_concurrent_flow(fab).theta, rel=1e-9)


def test_undersubscribed_leaves_carry_no_more_than_their_gpus_inject():
    # 4 leaves of 2 GPUs at 400 Gb/s (800 down) and 8 spines, one 400 Gb/s link to each
    # (3,200 up): the uplinks beyond 800 add nothing; with 2 spines (800 up) theta is the same.
    fab = fo.leaf_spine(leaves=4, spines=8, endpoints_per_leaf=2)
    use = port_use(fab)
    assert use.undersubscribed == [(f"leaf{i}", 800.0, 3200.0) for i in range(4)]
    assert use.idle_switches == []
    balanced = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=2)
    assert port_use(balanced).line() is None
    assert fo.max_concurrent_flow(fab).theta == pytest.approx(
        fo.max_concurrent_flow(balanced).theta, rel=1e-9)


@pytest.mark.parametrize("fab", [fo.fat_tree(4), fo.superpod(1), fo.dgx_h100(), fo.ring(8),
                                 fo.dragonfly(a=4, h=2, p=2),
                                 fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=4)],
                         ids=lambda f: f.name)
def test_balanced_and_direct_fabrics_are_not_flagged(fab):
    # Non-blocking or oversubscribed leaves, and a dragonfly's routers (no layers: their
    # links also carry transit), have no spare ports to report.
    assert port_use(fab).line() is None


def test_solve_prints_the_line(capsys):
    assert main(["solve", "leaf_spine", "leaves=1", "spines=2", "endpoints_per_leaf=4",
                 "--throughput-only"]) == 0
    assert "spare ports      2 switches no traffic can use (spine0, spine1)" in \
        capsys.readouterr().out
    assert main(["solve", "fat_tree", "k=4", "--throughput-only"]) == 0
    assert "spare ports" not in capsys.readouterr().out
