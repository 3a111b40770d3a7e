"""compare and optimize on one core: the same figure under the same name, constraints on
certified figures, one meaning of progress."""

import pytest

import fabricopt as fo
from fabricopt.study.metrics import CONSTRAINTS, METRICS, MetricContext, compute_metrics

# 8 servers of 2 GPUs (one NVSwitch each), 400G NICs, radix-8 rail leaves: 16 GPUs.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized"], "scale_up": [DOMAIN], "leaf_radix": [8],
         "oversubscription": [1.0, 3.0]}
CONSTRAINED = {"all_to_all_gbps_per_gpu": 1.0, "bisection_gbps_per_gpu": 1.0,
               "all_reduce_busbw_GBps": 1.0}


def test_compare_and_optimize_give_the_same_figures_under_the_same_names():
    res = fo.optimize(16, space=SPACE, constraints=CONSTRAINED, prune=False, full_front=True)
    for row in res.rows:
        c = res.candidates[row["name"]]
        [ref] = fo.compare(c.build(), metrics=["all_to_all", "bisection", "all_reduce",
                                               "cost"]).rows
        for column in ("all_to_all_gbps_per_gpu", "all_to_all_gbps_per_gpu_upper",
                       "bisection_gbps_per_gpu", "all_reduce_busbw_GBps", "capex_usd",
                       "power_w", "capex_per_gpu_usd", "usd_per_delivered_gbps"):
            assert row[column] == pytest.approx(ref[column]), column


def test_every_constraint_reads_a_column_its_metric_computes():
    fab = fo.ring(4)
    for key, (metric, column, sense) in CONSTRAINTS.items():
        assert metric in METRICS and sense in ("at least", "at most")
        assert column in compute_metrics(fab, [metric], MetricContext()), key


def test_floor_constraints_read_the_certified_lower_end():
    # ring(8) of 400G links: the all-reduce bound (any-scheme cut) is above what the best
    # known schedule achieves, so a target between them must fail: a design passes only on a
    # figure some schedule reaches.
    fab = fo.ring(8, link_gbps=400)
    row = compute_metrics(fab, ["all_reduce"], MetricContext())
    achievable, bound = row["all_reduce_busbw_GBps"], row["all_reduce_busbw_GBps_upper"]
    assert achievable <= bound
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    assert achievable == pytest.approx(c.achievable_busbw_GBps)
    assert bound == pytest.approx(c.busbw_GBps)


def test_one_meaning_of_progress():
    seen_compare, seen_optimize = [], []
    fo.compare([fo.ring(4), fo.ring(6)], metrics=["summary"],
               progress=lambda done, total: seen_compare.append((done, total)))
    assert seen_compare == [(1, 2), (2, 2)]
    res = fo.optimize(16, space=SPACE, progress=lambda d, t: seen_optimize.append((d, t)))
    decided = [r for r in res.rows if r["outcome"] != "pruned" or "priced" in r["reason"]]
    assert seen_optimize and seen_optimize[-1][0] == len(decided)
    for bad in ("yes", 3):
        with pytest.raises(fo.InvalidParameterError, match="progress"):
            fo.compare(fo.ring(4), progress=bad)
        with pytest.raises(fo.InvalidParameterError, match="progress"):
            fo.optimize(16, space=SPACE, progress=bad)


def test_the_written_design_keeps_its_optics_policy(tmp_path):
    space = {**SPACE, "policy": ["power"]}
    res = fo.optimize(16, space=space, constraints={"all_to_all_gbps_per_gpu": 300})
    path = res.write_design(tmp_path / "best.toml")
    fab = fo.load_design(path)
    assert fab.design["policy"] == "power"
    # Priced with the same policy as in the search, so the capex is the row's.
    assert fo.estimate_cost(fab).capex_usd == pytest.approx(res.best["capex_usd"])
