"""A row's all-to-all flow and its network share read one traffic, made once."""

import pytest

import fabricopt as fo
from fabricopt.study.metrics import MetricContext, compute_metrics


def test_the_flow_and_the_network_share_read_one_traffic():
    fab = fo.superpod(1)
    ctx = MetricContext()
    row = compute_metrics(fab, ["all_to_all"], ctx)
    traffic = ctx.shared["all_to_all"]
    assert ctx.unit_all_to_all(fab) is traffic  # made once
    assert traffic.is_uniform and traffic.uniform_gbps == 1.0
    # 248 of a GPU's 255 peers sit outside its DGX (32 DGX H100 of 8 GPUs): that share of
    # its all-to-all crosses the network, as a traffic made anew says.
    share = fo.all_to_all(fab, gbps=1.0).crossing_share(fab)
    assert share == pytest.approx(248 / 255, rel=1e-12)
    assert row["all_to_all_network_gbps_per_gpu"] == row["all_to_all_gbps_per_gpu"] * share
