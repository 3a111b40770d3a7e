"""The all-reduce bound per failure pattern: fo.all_reduce_metric in fo.failure_distribution."""

from __future__ import annotations

import pytest

import fabricopt as fo
from fabricopt.failures.models import group_draw


def test_all_reduce_metric_is_the_collective_bound_of_each_failed_fabric():
    fab = fo.ring(6)
    metric = fo.all_reduce_metric(2**30)
    d = fo.failure_distribution(fab, fo.EverySingle("links"), trials=None,
                                metrics={"all_reduce": metric})
    # Rotations of the ring map every link onto every other: one pattern solved, 6 listed.
    assert d.solves == 1 and len(d.outcomes) == 6
    failed = fab.without(links=[("n0", "n1")])
    bound = fo.collective_bounds(failed, "all_reduce", message_bytes=2**30)
    for o in d.outcomes:
        # GB/s of busbw to Gb/s: 8 bits per byte
        assert o.metrics["all_reduce"] == pytest.approx(8 * bound.busbw_GBps, rel=1e-12)
        # the throughput beside it is still certified on the failed fabric
        assert o.gbps_lower <= o.gbps_upper
    r = fo.max_concurrent_flow(failed)
    check = fo.check_certificate(failed, r)
    assert check.lower_ok and check.upper_ok


def test_intact_ring_bound_is_the_injection_rate():
    # A ring of 4 unit links: a GPU sends through 2 links of 1 Gb/s, and all-reduce busbw
    # cannot beat a GPU's injection rate: 2 Gb/s.
    fab = fo.ring(4)
    assert fo.all_reduce_metric()(fab, fab.endpoints) == pytest.approx(2.0, rel=1e-9)


def test_all_reduce_runs_over_the_gpus_up_and_is_zero_when_cut():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2, link_gbps=100)
    rack = fo.groups_by(fab, {"g0": "r0", "leaf0": "r0"})
    d = fo.failure_distribution(fab, fo.GroupFailures(rack), trials=None,
                                metrics={"all_reduce": fo.all_reduce_metric()})
    (o,) = d.outcomes
    assert o.gpus_up == 3   # g0 went down with its rack
    failed = group_draw(rack[0]).apply(fab)
    bound = fo.collective_bounds(failed, "all_reduce", message_bytes=2**30)
    assert o.metrics["all_reduce"] == pytest.approx(8 * bound.busbw_GBps, rel=1e-12)
    # Two opposite links of a ring of 4 split it in two pairs: no all-reduce over all 4.
    split = fo.ring(4).without(links=[("n0", "n1"), ("n2", "n3")])
    assert fo.all_reduce_metric()(split, split.endpoints) == 0.0
    assert fo.all_reduce_metric()(split, ["n0"]) == 0.0   # one GPU: nothing to reduce


def test_bad_arguments_name_all_reduce_metric():
    with pytest.raises(fo.InvalidParameterError, match=r"all_reduce_metric\(\): message_bytes"):
        fo.all_reduce_metric(0.5)
    with pytest.raises(fo.InvalidParameterError, match="in_network_reduction"):
        fo.all_reduce_metric(in_network_reduction="yes")
