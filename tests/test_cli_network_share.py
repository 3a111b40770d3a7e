"""`solve` says how much of the all-to-all per GPU crosses the network: on a cluster of DGX the
headline counts the traffic that stays on NVLink inside a server, and reads above the NIC's
speed (a new user's finding)."""

import json
from types import SimpleNamespace

import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.cli.solve import network_line


def test_solve_prints_the_network_part_under_the_per_gpu_figure(capsys):
    assert main(["solve", "superpod", "scalable_units=1", "--throughput-only"]) == 0
    out = capsys.readouterr().out
    # 256 GPUs, 8 per DGX H100, 400G NICs: a GPU's NIC carries 400 Gb/s to the 248 peers
    # outside its server, at theta = 400 / 248 per pair; the 7 peers on NVLink add 7 x that,
    # 400 x 255 / 248 = 411.29 per GPU. The network's part is 248 / 255 of it = 400 exactly,
    # the NIC's speed; the rest is 7 / 255 = 2.7 %.
    assert ("per endpoint     411.29 Gb/s (51.4113 GB/s) per direction\n"
            "over network     400 Gb/s per direction, mean per GPU (the rest, 2.7% of the "
            "traffic, stays on NVLink/UALink in its domain)\n") in out
    assert main(["solve", "superpod", "scalable_units=1", "--throughput-only",
                 "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["network_share_of_traffic"] == pytest.approx(248 / 255)
    assert row["per_endpoint_network_gbps"] == pytest.approx(400.0)
    assert row["per_endpoint_network_gbps_lower"] == pytest.approx(400.0)


def test_no_network_line_where_every_pair_crosses_it_and_a_plain_one_where_none_does(capsys):
    # A fat tree has no scale-up links: its per-GPU figure is all network, nothing to add.
    assert main(["solve", "fat_tree", "k=4", "--throughput-only"]) == 0
    assert "over network" not in capsys.readouterr().out
    # One DGX H100: every pair meets on NVLink, no NIC carries any of it.
    assert main(["solve", "dgx_h100", "--throughput-only"]) == 0
    assert "over network     none: every pair of GPUs shares a scale-up domain" in \
        capsys.readouterr().out


def test_network_share_of_explicit_traffic_counts_the_pairs_that_leave_their_server():
    fab = fo.superpod(1)
    gpus = fab.endpoints            # in server order: 8 GPUs of one DGX, then the next
    # Two pairs inside server 0 (GPUs 0-7), one from server 0 to server 1, at 1, 1 and 2 Gb/s:
    # 2 of the 4 Gb/s cross the network.
    traffic = fo.Traffic({(gpus[0], gpus[1]): 1.0, (gpus[2], gpus[3]): 1.0,
                          (gpus[0], gpus[8]): 2.0})
    assert traffic.crossing_share(fab) == pytest.approx(0.5)


def test_an_open_bracket_gives_a_network_bracket_never_a_single_figure():
    open_ = SimpleNamespace(theta=None, per_endpoint_gbps_bracket=(300.0, 500.0))
    # Half the traffic crosses: 150 to 250 Gb/s, said "unknown" like the line above it.
    assert network_line(open_, 0.5) == ("over network     unknown: 150 to 250 Gb/s per "
                                        "direction, mean per GPU (the rest, 50.0% of the "
                                        "traffic, stays on NVLink/UALink in its domain)")
    assert network_line(SimpleNamespace(theta=None, per_endpoint_gbps_bracket=None), 0.5) is None
