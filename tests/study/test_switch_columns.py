"""The summary's switch columns: network switches and scale-up switch chips, apart (a
SuperPOD's 'switches' once counted its 512 NVSwitch chips with its 48 InfiniBand switches)."""

import pytest

import fabricopt as fo
from fabricopt.tiers import is_scale_up_arc


@pytest.mark.parametrize("fab, network, scale_up", [
    # 4-ary fat tree: k^2/2 = 8 edge + 8 aggregation + (k/2)^2 = 4 core switches, no NVLink
    (fo.fat_tree(4), 20, 0),
    # one DGX H100: four NVSwitch chips on its baseboard, no network
    (fo.dgx_h100(), 0, 4),
    # UALink pod of 8 accelerators on 2 switches: those switches carry UALink, scale-up
    (fo.ualink_pod(8, 2, 2), 0, 2),
    # SuperPOD, 1 SU: 32 DGX x 4 NVSwitch = 128 chips; the rest (140 - 128 = 12) is its
    # InfiniBand fabric, 8 rail leaves and 4 spines
    (fo.superpod(1), 12, 128),
])
def test_switches_are_counted_by_what_they_switch(fab, network, scale_up):
    row = fo.compare(fab, metrics=["summary"])[0]
    assert (row["network_switches"], row["scale_up_switches"]) == (network, scale_up)
    # the certificate: the two add up to every switch node, and each scale-up chip has a
    # scale-up link while no network switch does
    g = fab.graph
    switches = [w for w, role in g.nodes(data="role") if role == "switch"]
    assert network + scale_up == len(switches)
    up = [w for w in switches if any(is_scale_up_arc(d) for *_, d in g.out_edges(w, data=True))]
    assert len(up) == scale_up
    assert "switches" not in row  # the old name, ambiguous, is gone
