"""Batch comparison: rows, sweeps, failures, executors, and a killed batch resumed."""

import concurrent.futures as cf
import contextlib
import csv
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import fabricopt as fo
from fabricopt.io.design_files import design_points
from fabricopt.study.compare import CSV_FILE, ROWS_FILE, Comparison, design_tasks

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
ROOT = TOPOLOGIES.parent
QUICK = ["summary", "all_to_all"]


def _rows_on_disk(out_dir):
    with open(Path(out_dir) / ROWS_FILE) as f:
        return [json.loads(line) for line in f]


def test_rows_match_the_public_api_one_by_one():
    fab = fo.fat_tree(4, link_gbps=100.0)
    [row] = fo.compare(fab).rows
    flow = fo.max_concurrent_flow(fab)
    cost = fo.estimate_cost(fab)
    # k=4 fat-tree: k^3/4 = 16 GPUs, 5k^2/4 = 20 switches; 16 GPU links + 2 x 16 switch links.
    assert (row["gpus"], row["network_switches"], row["links"]) == (16, 20, 48)
    assert row["links_gpu-leaf"] + row["links_leaf-spine"] + row["links_spine-core"] == 48
    assert row["all_to_all_status"] == "optimal" and row["error"] == ""
    # Theta at 1 Gb/s per ordered pair: a GPU's 100 Gb/s link carries its 15 peers' demand.
    assert row["all_to_all_theta"] == pytest.approx(100.0 / 15)
    assert row["all_to_all_gbps_per_gpu"] == pytest.approx(flow.per_endpoint_gbps)
    # Non-blocking: every GPU delivers its whole 100 Gb/s link, any traffic is carried at it,
    # and the bisection is N/2 x 100 Gb/s (full bisection).
    assert row["all_to_all_gbps_per_gpu"] == pytest.approx(100.0)
    assert row["all_to_all_gbps_per_gpu_upper"] == pytest.approx(100.0) and row["all_to_all_exact"]
    assert row["any_traffic_gbps_per_gpu"] == pytest.approx(100.0)
    assert row["bisection_gbps"] == pytest.approx(8 * 100.0) and row["bisection_exact"]
    assert row["full_bisection_ratio"] == pytest.approx(1.0)
    assert row["capex_usd"] == pytest.approx(cost.capex_usd)
    assert row["capex_per_gpu_usd"] == pytest.approx(cost.capex_usd / 16)
    assert row["usd_per_delivered_gbps"] == pytest.approx(cost.capex_usd / 16 / 100.0)
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    assert row["message_bytes"] == 2**30
    assert row["all_reduce_busbw_GBps"] == pytest.approx(c.busbw_GBps)
    assert row["binding_tier"] == flow.binding_tier


def test_sweeps_give_one_row_per_point_with_the_swept_values_as_columns():
    table = fo.compare(TOPOLOGIES / "ualink-pod-sweep.toml", metrics=QUICK)
    # ualink-pod-sweep.toml sweeps accelerators over 16, 32, 64, 128.
    assert table.column("accelerators") == [16, 32, 64, 128]
    assert table.column("gpus") == [16, 32, 64, 128]
    assert table.columns[:4] == ["name", "file", "family", "accelerators"]
    assert table.column("name")[0] == "UALink pod [accelerators=16]"
    assert set(table.column("family")) == {"ualink_pod"}


def test_a_folder_gives_every_design_file_and_the_same_design_runs_once():
    tasks = design_tasks(TOPOLOGIES)
    files = sorted(TOPOLOGIES.glob("*.toml"))
    points = sum(len(design_points(f)) for f in files)
    assert len(tasks) == points
    assert {t.path for t in tasks} == {str(f) for f in files}
    ring = fo.ring(5)
    table = fo.compare([ring, ring, TOPOLOGIES / "dgx-h100.toml",
                        str(TOPOLOGIES / "dgx-h100.toml")], metrics=["summary"])
    assert table.column("name") == ["ring(5)", "DGX H100"]


def _raises(fab):
    raise RuntimeError("metric broke")


def test_a_failing_design_is_a_row_and_the_batch_goes_on(tmp_path):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('family = "ring"\n[params]\nn = 1\n')  # the generator rejects n = 1
    broken = tmp_path / "broken.toml"
    broken.write_text("family = \n")  # not TOML
    table = fo.compare([fo.ring(4), bad_toml, broken, fo.ring(6)], metrics=QUICK)
    assert table.column("name") == ["ring(4)", "bad", "broken", "ring(6)"]
    assert [bool(e) for e in table.column("error")] == [False, True, True, False]
    assert "n must be an integer >= 2" in table[1]["error"]
    assert "DesignFileError" in table[2]["error"]
    assert len(table.failed) == 2 and "2 failed" in repr(table)
    # A metric that raises fails its own row only.
    table = fo.compare([fo.ring(4)], metrics=["summary", _raises])
    assert table[0]["gpus"] == 4 and "RuntimeError: metric broke" in table[0]["error"]


def test_outputs_csv_markdown_json_records_pandas(tmp_path):
    table = fo.compare([fo.ring(4), fo.ring(8)], metrics=QUICK)
    rows = list(csv.DictReader(io.StringIO(table.to_csv(tmp_path / "t.csv"))))
    assert [r["name"] for r in rows] == ["ring(4)", "ring(8)"]
    # Unit ring of n nodes: theta = 8 / n^2 (0.5 and 0.125), written with 6 digits.
    assert [r["all_to_all_theta"] for r in rows] == ["0.5", "0.125"]
    assert (tmp_path / "t.csv").read_text() == table.to_csv()
    md = table.to_markdown(["name", "gpus"]).splitlines()
    assert md == ["| name | gpus |", "|---|---|", "| ring(4) | 4 |", "| ring(8) | 8 |"]
    assert json.loads(table.to_json()) == table.to_records()
    df = table.to_pandas()
    assert list(df["gpus"]) == [4, 8] and list(df.columns) == table.columns
    assert "ring(8)" in repr(table) and "<Comparison: 2 designs, 0 failed>" in repr(table)
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'gpus'"):
        table.column("gpu")


def test_to_pandas_names_the_missing_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(fo.FabricOptError, match="pandas is not installed"):
        Comparison([{"name": "a"}]).to_pandas()


@pytest.mark.parametrize("kwargs, match", [
    ({"designs": 3}, "designs must be a Fabric, a design file or folder"),
    ({"designs": "no/such/file.toml"}, "designs must be existing design files or folders"),
    ({"designs": []}, "designs must be at least one design"),
    ({"metrics": ["all_to_al"]}, "did you mean 'all_to_all'"),
    ({"metrics": "summary"}, "metrics must be a sequence"),
    ({"executor": "pool"}, "executor must be a concurrent.futures.Executor"),
    ({"message_bytes": "1 GiBs"}, "message_bytes must be a size in bytes"),
    ({"progress": "yes"}, "progress must be None, True, False or a function"),
    ({"routing_trials": 0}, "routing_trials must be an integer >= 1"),
    ({"routing_seed": -1}, "routing_seed must be an integer >= 0"),
])
def test_bad_input_is_refused_before_any_work(kwargs, match):
    args = {"designs": fo.ring(4), **kwargs}
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.compare(args.pop("designs"), **args)


def test_message_bytes_takes_units():
    [row] = fo.compare(fo.ring(4), metrics=["all_reduce"], message_bytes="512MB").rows
    assert row["message_bytes"] == 512e6  # MB is 10^6 bytes


def test_routing_metric_puts_ecmp_hashing_and_static_beside_the_optimum(monkeypatch):
    fab = fo.fat_tree(4)
    solves = []
    import fabricopt.study.metrics as metrics

    real = metrics.max_concurrent_flow
    monkeypatch.setattr(metrics, "max_concurrent_flow",
                        lambda *a, **k: solves.append(1) or real(*a, **k))
    [row] = fo.compare(fab, metrics=["all_to_all", "routing"], routing_trials=12,
                       routing_seed=3).rows
    assert row["error"] == "" and len(solves) == 1  # the optimum is solved once for both
    # k=4 fat-tree, 16 GPUs, 400 Gb/s links, unit all-to-all. Per unit of theta ECMP loads a
    # GPU link with 15 (every other GPU), an edge up-link with 2 GPUs x 14 destinations off
    # the edge / 2 up-links = 14, an aggregation up-link with 4 GPUs x 12 destinations off the
    # pod / 4 up-links = 12, the down links alike: the GPU link binds, theta = 400 / 15. The
    # optimum is no more (every GPU's 15 units cross its own link), so ECMP is optimal; with
    # equal capacities WCMP is ECMP.
    optimum = 400 / 15
    assert row["all_to_all_theta"] == pytest.approx(optimum, rel=1e-6)
    for policy in ("ecmp", "wcmp"):
        assert row[f"routing_{policy}_theta"] == pytest.approx(optimum, rel=1e-12)
        assert row[f"routing_{policy}_efficiency"] == pytest.approx(1.0, rel=1e-6)
    static = fo.routed_flow(fab, routing="static").theta
    assert row["routing_static_theta"] == pytest.approx(static)
    assert row["routing_static_efficiency"] == pytest.approx(static / row["all_to_all_theta"])
    # The hashed columns are routed_flow's distribution at the same trials and seed, and no
    # routing beats the optimum.
    dist = fo.routed_flow(fab, routing="hash", trials=12, seed=3).distribution
    assert row["routing_hash_theta_median"] == pytest.approx(dist["median"])
    assert row["routing_hash_theta_p5"] == pytest.approx(dist["p5"])
    assert row["routing_hash_theta_p5"] <= row["routing_hash_theta_median"]
    assert row["routing_hash_theta_median"] <= optimum * (1 + 1e-9)
    assert row["routing_hash_median_efficiency"] == pytest.approx(
        dist["median"] / row["all_to_all_theta"])
    assert (row["routing_hash_trials"], row["routing_seed"]) == (12, 3)


def test_routing_is_asked_for_by_name_and_its_draws_are_part_of_the_key():
    fab = fo.ring(6)
    assert not any(c.startswith("routing_") for c in fo.compare(fab).columns)
    one = fo.compare(fab, metrics=["routing"], routing_trials=4, routing_seed=1)
    again = fo.compare(fab, metrics=["routing"], routing_trials=4, routing_seed=1)
    other = fo.compare(fab, metrics=["routing"], routing_trials=4, routing_seed=2)
    assert one.rows[0]["key"] == again.rows[0]["key"] != other.rows[0]["key"]
    assert one.rows[0]["routing_hash_theta_p5"] == again.rows[0]["routing_hash_theta_p5"]
    # Without the routing metric its draws do not change the key (nor any result).
    plain = [fo.compare(fab, metrics=["summary"], routing_seed=s).rows[0]["key"] for s in (1, 2)]
    assert plain[0] == plain[1]


_INTERRUPT_AT = {"name": None}


def _interrupt_once(fab):
    if fab.name == _INTERRUPT_AT["name"]:
        _INTERRUPT_AT["name"] = None  # the next run gets past it
        raise KeyboardInterrupt
    return {"ring_nodes": len(fab.endpoints)}


def test_an_interrupted_batch_resumes_with_nothing_lost_or_repeated(tmp_path):
    designs = [fo.ring(n) for n in (4, 5, 6, 7)]
    metrics = ["summary", _interrupt_once]
    _INTERRUPT_AT["name"] = "ring(6)"
    with pytest.raises(KeyboardInterrupt):
        fo.compare(designs, metrics=metrics, out_dir=tmp_path)
    # The two rows that finished are on disk, and the CSV with them.
    assert [r["name"] for r in _rows_on_disk(tmp_path)] == ["ring(4)", "ring(5)"]
    assert len((tmp_path / CSV_FILE).read_text().splitlines()) == 1 + 2
    first = {r["key"]: r["seconds"] for r in _rows_on_disk(tmp_path)}
    table = fo.compare(designs, metrics=metrics, out_dir=tmp_path)
    assert table.column("ring_nodes") == [4, 5, 6, 7]
    on_disk = _rows_on_disk(tmp_path)
    assert sorted(r["name"] for r in on_disk) == ["ring(4)", "ring(5)", "ring(6)", "ring(7)"]
    # The finished rows were kept as they were, not computed again.
    assert {r["key"]: r["seconds"] for r in table if r["key"] in first} == first
    # A third run computes nothing: every row is read back.
    again = fo.compare(designs, metrics=metrics, out_dir=tmp_path)
    assert again.to_records() == table.to_records()


def test_failed_rows_are_retried_and_replace_their_error(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('family = "ring"\n[params]\nn = 1\n')
    assert fo.compare(path, metrics=["summary"], out_dir=tmp_path / "out").failed
    path.write_text('family = "ring"\n[params]\nn = 4\n')  # fixed: a new key, a new row
    table = fo.compare(path, metrics=["summary"], out_dir=tmp_path / "out")
    assert not table.failed and table[0]["gpus"] == 4


def test_a_killed_process_resumes_with_nothing_lost_or_repeated(tmp_path):
    # A metric module both processes import, so the rows' keys agree: it hangs on ring(6)
    # while FABRICOPT_TEST_HANG is set, and the child is killed there with SIGKILL.
    (tmp_path / "gate.py").write_text(textwrap.dedent("""
        import os, time

        def gate(fab):
            if fab.name == "ring(6)" and os.environ.get("FABRICOPT_TEST_HANG"):
                time.sleep(120)
            return {"gated": True}
    """))
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(tmp_path)!r}]
        import fabricopt as fo, gate
        fo.compare([fo.ring(n) for n in (4, 5, 6, 7)], metrics=["summary", gate.gate],
                   out_dir={str(tmp_path / "out")!r})
    """)
    env = dict(os.environ, FABRICOPT_TEST_HANG="1")
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    rows_file = tmp_path / "out" / ROWS_FILE
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if rows_file.exists() and len(rows_file.read_text().splitlines()) >= 2:
                break
            assert child.poll() is None, "the batch ended before it was killed"
            time.sleep(0.1)
        else:
            pytest.fail("the batch wrote no rows")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    before = _rows_on_disk(tmp_path / "out")
    assert [r["name"] for r in before] == ["ring(4)", "ring(5)"]
    sys.path.insert(0, str(tmp_path))
    try:
        import gate
        table = fo.compare([fo.ring(n) for n in (4, 5, 6, 7)], metrics=["summary", gate.gate],
                           out_dir=tmp_path / "out")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("gate", None)
    assert table.column("gpus") == [4, 5, 6, 7] and not table.failed
    after = _rows_on_disk(tmp_path / "out")
    assert len(after) == 4 and len({r["key"] for r in after}) == 4
    assert [r for r in after if r["key"] in {b["key"] for b in before}] == before


def test_a_process_pool_gives_the_same_rows_as_this_process(tmp_path):
    designs = [TOPOLOGIES / "rail-oversubscription-sweep.toml", fo.ring(6)]
    here = fo.compare(designs, metrics=QUICK + ["cost"])
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        there = fo.compare(designs, metrics=QUICK + ["cost"], executor=pool, out_dir=tmp_path)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in here.to_records()]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in there.to_records()] == strip
    assert len(_rows_on_disk(tmp_path)) == 5


class _SentInOrder(cf.Executor):
    """Runs each task as it is sent, noting the design's label: the order the rows go out."""

    def __init__(self):
        self.sent = []

    def submit(self, fn, /, *args, **kwargs):
        self.sent.append(args[0].task.label)
        future = cf.Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_workers_get_the_largest_designs_first_and_the_rows_stay_in_design_order(tmp_path):
    """On an executor the rows are sent largest first (by a size read without building:
    a Fabric's nodes, a design file's counts), so the workers end on small rows together;
    the table and results.jsonl keep the designs' order."""
    pod = tmp_path / "pod.toml"  # superpod(2): 2 SU x 32 nodes (its default nodes_per_su)
    pod.write_text('name = "pod"\nfamily = "superpod"\n[params]\nscalable_units = 2\n')
    sent = _SentInOrder()
    designs = [fo.ring(4), str(pod), fo.ring(12), fo.ring(8)]
    table = fo.compare(designs, metrics=["summary"], executor=sent, out_dir=tmp_path / "out")
    assert sent.sent == ["pod", "ring(12)", "ring(8)", "ring(4)"]  # 64 > 12 > 8 > 4
    assert [r["name"] for r in table] == ["ring(4)", "pod", "ring(12)", "ring(8)"]
    assert [r["name"] for r in _rows_on_disk(tmp_path / "out")] == [r["name"] for r in table]
    # In this process (no executor) they run in the designs' order.
    ran = []
    fo.compare(designs, metrics=["summary"], each_fabric=lambda fab, row: ran.append(row["name"]))
    assert ran == ["ring(4)", "pod", "ring(12)", "ring(8)"]


def test_progress_bar_on_request_only(capsys):
    fo.compare(fo.ring(4), metrics=["summary"], progress=True)
    assert "compare" in capsys.readouterr().err
    fo.compare(fo.ring(4), metrics=["summary"])  # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""


def test_worker_caps_its_threads():
    from fabricopt.study.execution import limit_threads

    before = os.environ.get("OPENBLAS_NUM_THREADS")
    with limit_threads(1):
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before


@pytest.mark.slow
def test_dask_local_cluster_runs_the_same_comparison():
    distributed = pytest.importorskip("distributed")
    designs = [TOPOLOGIES / "ualink-pod-sweep.toml", fo.ring(6)]
    here = fo.compare(designs, metrics=QUICK)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        there = fo.compare(designs, metrics=QUICK, executor=client.get_executor())
    drop = {"seconds"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in there] == \
        [{k: v for k, v in r.items() if k not in drop} for r in here]


def test_compare_command_writes_the_report_end_to_end(tmp_path, capsys):
    from html.parser import HTMLParser

    from fabricopt.cli import main

    out = tmp_path / "out"
    sweep = TOPOLOGIES / "ualink-pod-sweep.toml"
    code = main(["compare", str(sweep), str(TOPOLOGIES / "dgx-h100.toml"),
                 "in_network_reduction=false", "ring", "n=6", "-o", str(out)])
    assert code == 0
    assert "6 designs (0 failed)" in capsys.readouterr().out
    for name in ("results.csv", "results.md", "results.json", "results.jsonl", "pareto.svg",
                 "pareto-systems.svg", "pareto-power.svg", "bars.png", "index.html"):
        assert (out / name).stat().st_size > 0, name
    # One diagram per design: the 4 sweep points, the DGX H100 variant and the ring.
    assert len(list((out / "diagrams").glob("*.png"))) == 6
    names = [r["name"] for r in json.loads((out / "results.json").read_text())]
    assert names[4] == "DGX H100 [in_network_reduction=False]" and names[5] == "ring(6)"

    class Page(HTMLParser):
        def __init__(self):
            super().__init__()
            self.images, self.text = [], []

        def handle_starttag(self, tag, attrs):
            if tag == "img":
                self.images.append(dict(attrs))

        def handle_data(self, data):
            self.text.append(data)

    page = Page()
    page.feed((out / "index.html").read_text())
    text = " ".join(page.text)
    assert all(img["src"].startswith("data:image/png;base64,") for img in page.images)
    # The bars and one diagram per design, every one embedded (the Pareto charts are inline
    # SVG: the ring alone is a cluster; the UALink pods and the DGX are single systems).
    assert len(page.images) == 1 + 6
    for name in names:
        assert name in text
    # The three all-reduce figures side by side, each explained; the pricing policy; the
    # network's share; the note on the DGX's $0 network (its NVSwitch chips are in the
    # server price); captions on every figure; the sort script inline (no server needed).
    for heading in ("all-reduce busbw achievable (GB/s)", "all-reduce busbw expected (GB/s)",
                    "all-reduce busbw bound (GB/s)", "network share of capex", "pricing"):
        assert heading in text, heading
    for words in ("calibrated estimate of what nccl-tests measures", "no schedule on this",
                  "Pricing (the table's pricing column): P1 = ",
                  "in the server or rack and in its price"):
        assert words in text, words
    html_text = (out / "index.html").read_text()
    # Captions on the three Pareto charts (clusters, single systems, power) and the bars.
    assert html_text.count("<figcaption>") == 4 and "<figcaption></figcaption>" not in html_text
    assert html_text.index("id='verdict'") < html_text.index("<table")
    assert "table.sortable th" in html_text and "<script src" not in html_text
    assert "DGX H100 [in_network_reduction=False] \u2020" in text
    # The embedded pictures are the files written beside the page.
    import base64

    bars = base64.b64decode(page.images[0]["src"].split(",", 1)[1])
    assert bars == (out / "bars.png").read_bytes()
    svg = (out / "pareto-systems.svg").read_text()
    assert svg[svg.index("<svg"):].split(">", 1)[1][:2000] in html_text


def test_compare_command_prints_a_table_and_fails_with_a_failed_design(tmp_path, capsys):
    from fabricopt.cli import main

    bad = tmp_path / "bad.toml"
    bad.write_text('family = "ring"\n[params]\nn = 1\n')
    assert main(["compare", "ring", "n=4", str(bad), "--format", "csv"]) == 1
    captured = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(captured.out)))
    assert [r["name"] for r in rows] == ["ring(4)", "bad"]
    assert "n must be an integer >= 2" in captured.err


def test_compare_command_routing_adds_the_routed_columns(capsys):
    from fabricopt.cli import main

    assert main(["compare", "fat_tree", "k=4", "--routing", "--trials", "6", "--seed", "2",
                 "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    # k=4 fat-tree all-to-all: ECMP is optimal, theta = 400 / 15 (derived in
    # test_routing_metric_puts_ecmp_hashing_and_static_beside_the_optimum).
    assert row["routing_ecmp_theta"] == pytest.approx(400 / 15)
    assert row["routing_ecmp_efficiency"] == pytest.approx(1.0, rel=1e-6)
    dist = fo.routed_flow(fo.fat_tree(4), routing="hash", trials=6, seed=2).distribution
    assert row["routing_hash_theta_median"] == pytest.approx(dist["median"])
    assert (row["routing_hash_trials"], row["routing_seed"]) == (6, 2)
    assert "capex_usd" in row  # the default metrics are all still there
    assert main(["compare", "ring", "n=4", "--routing", "--trials", "0"]) == 2
    assert "routing_trials must be an integer >= 1" in capsys.readouterr().err


def test_rows_of_one_generator_carry_their_overrides_in_name_and_columns():
    # Three clusters of one generator: before, all three were named alike.
    base = {"scale_up": "dgx_h100", "nodes": 4}
    designs = [(fo.cluster(**base, **extra), {**base, **extra})
               for extra in ({}, {"oversubscription": 2}, {"tiers": 3})]
    table = fo.compare(designs, metrics=["summary"])
    names = table.column("name")
    assert len(set(names)) == 3, names
    # The generator's own name shows a ratio (", 2:1") and every other option away from its
    # default ("tiers=3"), so no override is added for them.
    assert names[1].endswith(", 2:1)") and names[2].endswith(", tiers=3)")
    assert table.column("oversubscription") == [None, 2, None]
    assert table.column("tiers") == [None, None, 3]
    assert "nodes=" not in names[0]  # 4 x DGX H100 shows the node count already


def test_cost_columns_name_the_server_and_the_network_share():
    from fabricopt.study.metrics import MetricContext, compute_metrics

    one = compute_metrics(fo.load_design(TOPOLOGIES / "dgx-h100.toml"), ["cost"],
                          MetricContext())
    # One DGX H100: no network; its 4 NVSwitch gen 3 chips at the catalog's $7,000 each are
    # in the server price, so apart from capex.
    assert (one["capex_usd"], one["in_server_usd"]) == (0, 4 * 7000.0)
    assert one["in_system_only"] is True and one["system"] == "dgx_h100"
    assert one["network_share"] == 0.0
    fab = fo.superpod(scalable_units=1)
    row = compute_metrics(fab, ["cost"], MetricContext())
    # 32 DGX H100 at the catalog's price: share = network / (network + servers).
    price = fo.Catalog.default().systems["dgx_h100"]["price_usd"]
    assert row["in_system_only"] is False
    assert row["network_share"] == pytest.approx(row["capex_usd"]
                                                 / (row["capex_usd"] + 32 * price))
    # One DGX B200 (catalog price ~$515k, an estimate): no network, so both shares are 0.
    b200 = compute_metrics(fo.load_design(TOPOLOGIES / "dgx-b200.toml"), ["cost"],
                           MetricContext())
    assert b200["system"] == "dgx_b200" and b200["network_share"] == 0.0
    assert b200["network_power_share"] == 0.0


def test_a_rows_limits_are_work_not_seconds():
    from fabricopt.study.metrics import MetricContext, compute_metrics

    # A jellyfish has no hierarchy to close by bounds, so the LP runs. One simplex
    # iteration cannot prove the optimum: the row records the limit and keeps a certified
    # bracket (status iteration_limit, not exact), the same on any machine.
    fab = fo.jellyfish(12, 4, 2, seed=3)
    row = compute_metrics(fab, ["all_to_all"], MetricContext(work_limit=1))
    assert row["all_to_all_work_limit"] == 1
    assert row["all_to_all_status"] == "iteration_limit" and not row["all_to_all_exact"]
    full = compute_metrics(fab, ["all_to_all"], MetricContext())
    assert full["all_to_all_work_limit"] is None and full["all_to_all_exact"]
    assert row["all_to_all_theta"] <= full["all_to_all_theta"] * (1 + 1e-9)
    assert row["all_to_all_theta_upper"] >= full["all_to_all_theta"] * (1 - 1e-9)


def _arcs(fab):
    return sorted((repr(u), repr(v), sorted(d.items())) for u, v, d in fab.graph.edges(data=True))


def test_a_row_run_here_hands_its_fabric_back_once_then_it_is_built_again(tmp_path, monkeypatch):
    """Run in this process, a row's fabric is kept for Comparison.fabric (a report draws it
    without building it again): handed back once, then built anew from the design file, the
    same graph arc for arc. Not kept past KEPT_ARCS, nor when a metric is a function (it may
    edit the fabric)."""
    C = importlib.import_module("fabricopt.study.compare")  # the module, not the function

    design = tmp_path / "pod.toml"
    design.write_text('name = "pod"\nfamily = "superpod"\n[params]\nscalable_units = 1\n')
    table = fo.compare(str(design), metrics=["summary"])
    (kept,) = table._build.fabrics.values()
    assert table.fabric(0) is kept
    again = table.fabric(0)
    assert again is not kept and _arcs(again) == _arcs(kept)
    assert table.fabric(0) is not again  # built each time after the first
    # superpod(1): 2,624 arcs (fo.superpod(1)'s successor dicts); a limit below keeps none.
    monkeypatch.setattr(C, "KEPT_ARCS", 2_623)
    assert not fo.compare(str(design), metrics=["summary"])._build.fabrics
    monkeypatch.undo()
    assert not fo.compare(str(design), metrics=[_links_of])._build.fabrics


def _links_of(fab):
    return {"links_seen": fab.graph.number_of_edges()}


def _report_files(out):
    """A report folder's files as comparable values: the rows without their ``seconds``
    (timings), the pictures byte for byte, and the page with its inline SVGs' run ids and
    dates taken out (matplotlib draws new ones in every run, -j 1 twice alike)."""
    import re

    rows = [{k: v for k, v in r.items() if k != "seconds"}
            for r in json.loads((out / "results.json").read_text())]
    lines = [{k: v for k, v in r.items() if k != "seconds"} for r in _rows_on_disk(out)]
    with open(out / CSV_FILE) as f:
        table = [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(f)]
    pictures = {p.name: p.read_bytes() for p in [out / "bars.png",
                                                 *(out / "diagrams").glob("*.png")]}
    page = re.sub(r"<svg.*?</svg>", "<svg/>", (out / "index.html").read_text(), flags=re.S)
    return rows, lines, table, pictures, page


def _no_fabric_built_for_the_report(self, index):
    raise AssertionError("the report built a fabric its row had built already")


#: The report's own chart and bar drawers, for the wrappers below that note where they ran.
_PLOTTERS = {}


def _charts_noting_where(table, out):
    (out.parent / f"{out.name}-charts.pid").write_text(str(os.getpid()))
    return _PLOTTERS["_charts"](table, out)


def _bars_noting_where(table, out):
    (out.parent / f"{out.name}-bars.pid").write_text(str(os.getpid()))
    return _PLOTTERS["_bars"](table, out)


def test_compare_command_on_two_workers_writes_what_one_process_writes(tmp_path, capsys,
                                                                        monkeypatch):
    """-j 2 (rows and diagrams in two worker processes) gives the files -j 1 gives; each
    diagram is drawn where its row ran, so the report builds no fabric again (in either);
    with -j 2 the pool's workers draw the charts and the bars, with -j 1 this process."""
    from fabricopt.cli import main

    report = importlib.import_module("fabricopt.plot.report")
    _PLOTTERS.update(_charts=report._charts, _bars=report._bars)
    monkeypatch.setattr(report, "_charts", _charts_noting_where)
    monkeypatch.setattr(report, "_bars", _bars_noting_where)
    monkeypatch.setattr(Comparison, "fabric", _no_fabric_built_for_the_report)
    bad = tmp_path / "bad.toml"
    bad.write_text('family = "ring"\n[params]\nn = 1\n')
    designs = [str(TOPOLOGIES / "dgx-h100.toml"), "ring", "n=4", "ring", "n=6", str(bad),
               "fat_tree", "k=4"]
    for jobs in ("1", "2"):  # the bad design: a row with its error, the others go on (exit 1)
        assert main(["compare", *designs, "-o", str(tmp_path / jobs), "-j", jobs]) == 1
    one, two = _report_files(tmp_path / "1"), _report_files(tmp_path / "2")
    assert [r["name"] for r in one[0]] == ["DGX H100", "ring(4)", "ring(6)", "bad",
                                           "fat_tree(k=4)"]
    assert "n must be an integer >= 2" in one[0][3]["error"]
    assert len(one[3]) == 1 + 4  # the bars and the four designs that evaluated
    for mine, theirs in zip(one, two, strict=True):
        assert mine == theirs
    drew = {(jobs, kind): int((tmp_path / f"{jobs}-{kind}.pid").read_text())
            for jobs in ("1", "2") for kind in ("charts", "bars")}
    assert drew["1", "charts"] == drew["1", "bars"] == os.getpid()
    assert os.getpid() not in (drew["2", "charts"], drew["2", "bars"])
    # A row's seconds stay its metrics' time (the diagram is drawn after they are taken).
    assert all(isinstance(r["seconds"], float) for r in _rows_on_disk(tmp_path / "2"))


RINGS = ["ring", "n=4", "ring", "n=6", "ring", "n=8"]


def test_compare_command_on_one_usable_core_runs_in_this_process(tmp_path, capsys,
                                                                monkeypatch):
    from fabricopt import cli

    asked = []
    monkeypatch.setattr(cli, "process_pool", lambda jobs, rows: asked.append(jobs)
                        or contextlib.nullcontext())  # no pool: runs here as with -j 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert cli.main(["compare", *RINGS, "--metrics", "summary"]) == 0
    assert asked == []  # one core: -j 1, no pool
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert cli.main(["compare", *RINGS, "--metrics", "summary"]) == 0
    assert asked == [3]  # four cores, three designs: a worker per design
    assert cli.main(["compare", *RINGS, "--metrics", "summary", "-j", "1"]) == 0
    assert asked == [3]


def test_compare_command_loads_the_workers_modules_once_before_forking(tmp_path, capsys,
                                                                      monkeypatch):
    """Before a pool is forked the command loads the LP solver's module, and matplotlib when
    the workers will draw diagrams, so each worker does not load them again; -j 1 does not."""
    from fabricopt import cli

    loaded = []
    monkeypatch.setattr(cli, "_load_for_workers", lambda diagrams: loaded.append(diagrams))
    assert cli.main(["compare", *RINGS[:4], "--metrics", "summary", "-j", "2"]) == 0
    assert cli.main(["compare", *RINGS[:4], "--metrics", "summary", "-j", "2",
                     "-o", str(tmp_path / "a")]) == 0
    assert cli.main(["compare", *RINGS[:4], "--metrics", "summary", "-j", "2", "--no-diagrams",
                     "-o", str(tmp_path / "b")]) == 0
    assert cli.main(["compare", *RINGS[:4], "--metrics", "summary", "-j", "1",
                     "-o", str(tmp_path / "c")]) == 0
    assert loaded == [False, True, False]  # no -o: no diagrams; -j 1: no pool, nothing


def test_compare_command_on_two_workers_resumes_rows_and_diagrams(tmp_path, capsys,
                                                                  monkeypatch):
    """A rerun into the same folder skips the rows in results.jsonl and the diagrams already
    drawn for them (noted in diagrams/drawn.jsonl); a diagram missing is drawn again."""
    from fabricopt.cli import main

    out = tmp_path / "out"
    flags = ["-o", str(out), "-j", "2", "--metrics", "summary"]
    assert main(["compare", *RINGS[:4], *flags]) == 0
    drawn = {p.name: p.stat().st_mtime_ns for p in (out / "diagrams").glob("*.png")}
    (ring4,) = [name for name in drawn if name.startswith("ring-4-")]
    (out / "diagrams" / ring4).unlink()
    capsys.readouterr()
    assert main(["compare", *RINGS, *flags]) == 0
    assert "3 designs (0 failed, 2 reused from an earlier run)" in capsys.readouterr().out
    after = {p.name: p.stat().st_mtime_ns for p in (out / "diagrams").glob("*.png")}
    assert len(after) == 3 and ring4 in after
    (ring6,) = [name for name in drawn if name.startswith("ring-6-")]
    assert after[ring6] == drawn[ring6]  # read back, not drawn again
    assert len(_rows_on_disk(out)) == 3
    # Every row reused: no worker is started for the charts and bars, drawn here.
    report = importlib.import_module("fabricopt.plot.report")
    _PLOTTERS.update(_charts=report._charts, _bars=report._bars)
    monkeypatch.setattr(report, "_charts", _charts_noting_where)
    assert main(["compare", *RINGS, *flags]) == 0
    assert int((tmp_path / "out-charts.pid").read_text()) == os.getpid()
