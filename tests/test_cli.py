"""The command line: every subcommand runs, prints what it promises, and fails cleanly."""

import json

import pytest

import fabricopt as fo
from fabricopt.cli import main, parse_assignments


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert fo.__version__ in capsys.readouterr().out


def test_show_torus(capsys):
    assert main(["show", "torus", "dims=[4,4]"]) == 0
    out = capsys.readouterr().out
    # 4x4 torus: 16 endpoints, 32 links, 4 links of 1 Gb/s per node.
    assert "endpoints   16" in out and "32" in out and "4 Gb/s per endpoint" in out


def test_solve_prints_theta_bracket_bandwidth_and_tier(capsys):
    assert main(["solve", "ring", "n=8"]) == 0
    out = capsys.readouterr().out
    # Ring of 8, unit all-to-all: theta = 8/8^2 = 0.125 (docs/throughput.md); 7 Gb/s sent per node,
    # so 0.875 Gb/s per endpoint.
    assert "theta            0.125" in out
    assert "0.125 <= theta <= 0.125" in out
    assert "0.875 Gb/s" in out and "binding tier     ring" in out
    # Bisection of the unit ring: 2 links (exact); all-reduce on it: printed with busbw.
    assert "bisection        2 <= B <= 2 Gb/s (exact" in out
    assert "all_reduce of 1 GiB on 8 GPUs" in out and "busbw" in out


def test_solve_traffic_options(capsys):
    assert main(["solve", "hypercube", "d=3", "--traffic", "longest-matching"]) == 0
    # Antipodal pairing on Q_3 routes at theta = 1 (docs/throughput.md).
    assert "theta            1\n" in capsys.readouterr().out
    assert main(["solve", "ring", "n=6", "--traffic", "permutation:2", "--backend",
                 "pulp"]) == 0


def test_solve_time_limit_exit_code(capsys):
    # Dual simplex: it checks the clock every iteration (see test_flow's time-limit test).
    code = main(["solve", "torus", "dims=[12,12]", "--method", "lp", "--time-limit", "0.001",
                 "--solver", "simplex", "--throughput-only"])
    assert code == 1
    out = capsys.readouterr().out
    # Nothing proven: theta and the bandwidth are "unknown", with the certified bracket.
    assert "theta            unknown (not proven)" in out
    assert "per endpoint     unknown: 0 to " in out and "0 Gb/s (" not in out


@pytest.mark.parametrize("argv, message", [
    (["show", "nope"], "unknown generator"),
    (["show", "ring", "n=1"], "n must be an integer >= 2"),
    (["show", "ring", "size=4"], "'size' is not a parameter of ring; parameters: n, "),
    (["show", "ring", "nn=4"], "(did you mean 'n'?)"),
    (["show", "rnig"], "(did you mean 'ring'?): give a generator (clos, "),
    (["show", "n=4"], "comes before any generator"),
    (["solve", "ring", "n=4", "--collective", "allreduce"], "did you mean 'all_reduce'"),
    # A word without "=": told how to write it, not "missing parameter" or "unknown generator".
    (["show", "ring", "n"], "'n' after ring is not a generator or a fabric file; parameters "
                            "are written key=value: ring takes n, link_gbps, tech (did you "
                            "mean n=VALUE?)"),
    (["show", "ring", "6"], "(did you mean n=6?)"),
    (["show", "ring", "n=4", "fat_tre", "k=4"], "(did you mean 'fat_tree'?)"),
    (["solve", "ring", "n=4", "--traffic", "hotspot"], "--traffic must be"),
    (["solve", "ring", "n=4", "--traffic", "alltoall"], "(did you mean 'all-to-all'?)"),
    (["compare", "ring", "n=4", "--metrics", "cots"], "(did you mean 'cost'?)"),
    (["compare", "ring", "n=4", "--metrics", "summary", "--columns", "name,gpu"],
     "'gpu' is not a column of this table (did you mean 'gpus'?)"),
])
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    # A misspelt flag: one line with a suggestion and where to look (argparse alone printed
    # the top level's usage and no suggestion).
    (["solve", "ring", "n=4", "--mesage-bytes", "1GiB"],
     "fabricopt solve: error: unrecognized argument '--mesage-bytes' (did you mean "
     "'--message-bytes'?)"),
    (["compare", "ring", "n=4", "--colums=name"], "(did you mean '--columns'?)"),
    (["solv", "ring", "n=4"], "unknown command 'solv' (did you mean 'solve'?)"),
    # The rule, not "must be a size in bytes".
    (["solve", "ring", "n=4", "--message-bytes", "0"], "a size must be > 0"),
    # The flag, not the solver function the user never typed (max_concurrent_flow()).
    (["failures", "ring", "n=4", "--time-limit", "soon"],
     "argument --time-limit: 'soon' is not a duration > 0"),
])
def test_usage_errors_name_the_rule_and_suggest(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    if any(w.startswith(("--mesage", "--colums")) for w in argv):
        assert "usage:" not in err and f"see: fabricopt {argv[0]} --help" in err
    elif argv[0] != "solv":
        assert f"usage: fabricopt {argv[0]}" in err


@pytest.mark.parametrize("value", ["0", "-1", "inf"])
def test_a_time_limit_not_above_zero_is_the_flags_error(value, capsys):
    # A number that is not > 0: one line naming the flag (not the solver the user never
    # typed), exit code 2.
    assert main(["solve", "ring", "n=4", "--time-limit", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fabricopt solve: error: --time-limit: must be a number of seconds > 0 "
                   f"(e.g. 60 or 0.5); got {float(value):g}"]


def test_design_file_key_typo_gets_a_suggestion(tmp_path, capsys):
    path = tmp_path / "typo.toml"
    path.write_text('name = "r"\nfamilly = "ring"\n[params]\nn = 4\n')
    assert main(["show", str(path)]) == 2
    assert "key 'familly' is not allowed (did you mean 'family'?)" in capsys.readouterr().err
    path.write_text('name = "r"\nfamily = "rng"\n[params]\nn = 4\n')
    assert main(["show", str(path)]) == 2
    assert "got 'rng' (did you mean 'ring'?)" in capsys.readouterr().err


def test_worst_case_command(capsys):
    # fat_tree(4) is non-blocking: every permutation gets the full 400 Gb/s per GPU (the hose
    # rate, two-phase routing), and the worst pattern found proves no more (exact).
    assert main(["worst-case", "fat_tree", "k=4", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["exact"] and row["theta_lower"] == pytest.approx(400.0)
    assert row["guaranteed_gbps_per_gpu"] == pytest.approx(400.0)
    assert main(["worst-case", "ring", "n=6"]) == 0
    out = capsys.readouterr().out
    # theta and TUB say their unit: a multiple of each pair's 1 Gb/s (ring of 6: the
    # antipodal matching, 3 hops a pair, 12 unit arcs over 6 x 3 hops = 2/3).
    assert "worst permutation" in out and "multiple of each pair's 1 Gb/s" in out
    assert "TUB upper bound   theta <= 0.666667 (hop counts alone" in out


def test_compare_metrics_and_columns_with_human_numbers(capsys):
    assert main(["compare", "fat_tree", "k=4", "--metrics", "summary,cost",
                 "--columns", "name,gpus,capex_usd"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["name", "gpus", "capex_usd"]
    # The capex with thousands separators, never 315984 or 3.15984e+05.
    capex = fo.estimate_cost(fo.fat_tree(4)).capex_usd
    assert out[2].split()[-1] == f"{capex:,.0f}" and "," in out[2].split()[-1]


def test_a_misspelt_extension_is_answered_with_the_file_meant(capsys, tmp_path):
    # '.tml' for '.toml': not a generator, not a known extension, but beside a design file
    # of that name; a generator's typo still gets the generator meant.
    (tmp_path / "pod.toml").write_text('name = "pod"\nfamily = "ring"\n[params]\nn = 4\n')
    assert main(["solve", str(tmp_path / "pod.tml")]) == 2
    assert f"no such design or fabric file {str(tmp_path / 'pod.tml')!r} (did you mean " \
        f"{str(tmp_path / 'pod.toml')!r}?)" in capsys.readouterr().err
    assert main(["solve", "fat_tre"]) == 2
    assert "(did you mean 'fat_tree'?)" in capsys.readouterr().err


def test_compare_says_what_it_cannot_read_before_the_batch_runs(capsys, tmp_path):
    # A folder of three rings: one good, one naming a parameter ring() lacks, one that is
    # not TOML. Both bad files are said before any row runs (once each), their rows keep the
    # error, the good one runs, and the command exits 1.
    folder = tmp_path / "designs"
    folder.mkdir()
    (folder / "a.toml").write_text('name = "a"\nfamily = "ring"\n[params]\nn = 4\n')
    (folder / "b.toml").write_text('name = "b"\nfamily = "ring"\n[params]\nnodes = 4\n')
    (folder / "c.toml").write_text('name = "c"\nfamily = [oops\n')
    out = tmp_path / "out"
    assert main(["compare", str(folder), "-o", str(out), "-j", "1", "--metrics", "summary",
                 "--no-diagrams"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.endswith("(skipped; the other designs run)")
                                 for line in err)
    assert "b: DesignFileError" in err[0] and "'nodes'" in err[0]
    assert "c: DesignFileError" in err[1] and "not valid TOML" in err[1]
    assert (out / "results.csv").read_text().count("\n") == 4  # header and three rows


def test_compare_takes_a_saved_fabric_as_its_help_says(capsys, tmp_path):
    # A ring of 8 links of 1 Gb/s with one link cut is a path: its middle link carries
    # 4 x 4 pairs' traffic each way, so theta = 1/16 (0.0625) and each GPU sends 7/16
    # Gb/s; the intact ring's theta is 1/8 (docs/throughput.md).
    cut = fo.ring(8).without([("n0", "n1")])
    path = tmp_path / "cut.json"
    fo.write_json(cut, path)
    assert main(["compare", str(path), "ring", "n=8", "--metrics", "all_to_all",
                 "--columns", "name,all_to_all_theta"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[-1] for row in rows] == ["0.0625", "0.125"]
    # A saved fabric is built already: parameters after it are refused, before any work.
    assert main(["compare", str(path), "n=8"]) == 2
    assert "a saved fabric takes no key=value parameters" in capsys.readouterr().err


def test_parse_assignments():
    assert parse_assignments(["k=8", "name=x", "split=[5,4]"]) == {
        "k": 8, "name": "x", "split": [5, 4]}


def test_closed_pipe_ends_quietly(monkeypatch, capfd):
    # `fabricopt show ... | head -0`: the reader is gone before anything is written. The
    # command must stop with the broken-pipe code 141 (128 + SIGPIPE), not a traceback.
    import os
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    out = os.fdopen(write_end, "w")  # block-buffered, like stdout on a pipe
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert main(["show", "ring", "n=4"]) == 141
    finally:
        monkeypatch.undo()
        out.close()
    assert capfd.readouterr().err == ""  # quietly: nothing on stderr


def test_show_generator_help_lists_parameters_with_defaults_and_meaning(capsys):
    assert main(["show", "superpod", "--help"]) == 0
    out = capsys.readouterr().out
    assert "scalable_units  (required, int)" in out and "Scalable units (SU), >= 1." in out
    assert "nic_gbps=400  (float)" in out and "NIC rate per GPU per direction" in out
    assert main(["show", "--help"]) == 0
    assert "fabricopt show GENERATOR --help" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", ["show", "solve", "bom", "compare", "draw"])
def test_every_command_has_help(command, capsys):
    try:
        code = main([command, "--help"])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 0
    assert "exit codes" in capsys.readouterr().out


def test_solve_several_targets_as_rows(capsys):
    import csv
    import io
    import json

    assert main(["solve", "ring", "n=8", "hypercube", "d=3", "--format", "csv",
                 "--collective", "all_reduce,all_gather", "--message-bytes", "1GiB"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["name"] for r in rows] == ["ring(8)", "hypercube(3)"]
    # Ring of 8: theta = 8/8^2 = 0.125; hypercube Q_3 all-to-all: theta = 1/4
    # (docs/throughput.md#closed-form-test-cases).
    assert [r["theta"] for r in rows] == ["0.125", "0.25"]
    assert rows[0]["message_bytes"] == "1073741824"  # 1 GiB = 2^30 bytes, every digit
    assert rows[0]["all_gather_busbw_GBps"] and rows[0]["all_reduce_busbw_GBps"]
    assert main(["solve", "ring", "n=4", "--format", "json", "--throughput-only"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["theta"] == pytest.approx(8 / 16) and row["status"] == "optimal"


def test_solve_unknown_result_in_rows_is_none_with_its_bracket(capsys):
    import json

    code = main(["solve", "torus", "dims=[12,12]", "--method", "lp", "--time-limit", "0.001",
                 "--solver", "simplex", "--throughput-only", "--format", "json"])
    assert code == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["theta"] is None and row["per_endpoint_gbps"] is None
    assert row["per_endpoint_gbps_lower"] <= row["per_endpoint_gbps_upper"]
    assert row["per_endpoint_gbps_upper"] > 0


def test_every_collective_on_the_command_line(capsys):
    from fabricopt.collectives import COLLECTIVES

    assert main(["solve", "ring", "n=4", "--collective", "all"]) == 0
    out = capsys.readouterr().out
    for name in COLLECTIVES:
        assert f"{name} of 1 GiB on 4 GPUs" in out


def test_bom_several_fabrics_in_one_csv_and_json_totals(capsys):
    import csv
    import io
    import json

    assert main(["bom", "ring", "n=4", "link_gbps=400", "ring", "n=6", "link_gbps=400",
                 "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    # Each name carries the rate given away from ring's default (1 Gb/s).
    assert {r["fabric"] for r in rows} == {"ring(4, link_gbps=400)", "ring(6, link_gbps=400)"}
    assert main(["bom", "ring", "n=4", "link_gbps=400", "--format", "json"]) == 0
    [est] = json.loads(capsys.readouterr().out)
    cost = fo.estimate_cost(fo.ring(4, link_gbps=400))
    assert est["capex_usd"] == pytest.approx(cost.capex_usd)
    assert est["power_w"] == pytest.approx(cost.power_w)


def test_design_with_overrides_is_named_after_them(capsys):
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "topologies" / "dgx-h100.toml"
    assert main(["show", str(path), "in_network_reduction=false"]) == 0
    assert "fabric      DGX H100 [in_network_reduction=False]" in capsys.readouterr().out


def test_sizes_take_units_and_a_bad_size_is_a_usage_error(capsys):
    assert main(["solve", "ring", "n=4", "--message-bytes", "512MB"]) == 0
    assert "all_reduce of 512 MB" in capsys.readouterr().out  # MB = 10^6 bytes
    with pytest.raises(SystemExit) as info:
        main(["solve", "ring", "n=4", "--message-bytes", "1GB/s"])
    assert info.value.code == 2
    assert "--message-bytes: must be a size in bytes" in capsys.readouterr().err


def test_bom_json_breaks_down_by_tier_and_medium(capsys):
    assert main(["bom", "superpod", "scalable_units=1", "--format", "json"]) == 0
    [est] = json.loads(capsys.readouterr().out)
    # Every network dollar sits in one tier, so the tiers add up to the capex; the media
    # hold the cables and modules only (no switches or NICs), so they add up to less.
    assert sum(t["capex_usd"] for t in est["by_tier"].values()) == pytest.approx(
        est["capex_usd"])
    assert 0 < sum(m["capex_usd"] for m in est["by_medium"].values()) <= est["capex_usd"]
    # 32 DGX H100 x 8 GPUs x 18 NVLink links = 4,608 in-server links, priced with the server.
    assert est["by_tier"]["gpu-nvswitch"] == {"capex_usd": 0.0, "power_w": 0.0, "links": 4608}
    assert est["in_server_usd"] > 0


def test_results_print_short_reprs():
    fab = fo.superpod(scalable_units=2)  # 512 GPUs: the cut alone lists 256 links
    assert len(repr(fo.bisection_bandwidth(fab))) < 200
    assert len(repr(fo.estimate_cost(fab))) < 200


def test_tco_prints_each_fabric_and_rows(capsys):
    from fabricopt.cli import main

    assert main(["tco", "ring", "n=4", "--years", "3"]) == 0
    out = capsys.readouterr().out
    assert "over 3 years" in out and "per GPU per year" in out
    assert main(["tco", "ring", "n=4", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    tco = fo.estimate_tco(fo.ring(4))
    assert header.startswith("fabric,capex_usd") and "tco_usd" in header
    assert float(row.split(",")[5]) == pytest.approx(tco.total_usd, rel=1e-5)


def test_solve_on_rails_that_never_meet_says_disconnected(capsys):
    # Two rails, no scale-up links: GPU 0 and GPU 1 of a server share no path, so all-to-all
    # is 0 and every collective over all GPUs is disconnected (busbw 0), never an overflow.
    assert main(["solve", "rail_optimized", "nodes=4", "gpus_per_node=2", "leaf_radix=4",
                 "spine=false"]) == 0
    out = capsys.readouterr().out
    assert "theta            0" in out and "cannot reach" in out
    assert "no schedule exists, busbw 0 GB/s" in out


RAIL_ONLY = "topologies/dgx-h100-superpod-rail-only.toml"


def test_compare_runs_a_job_from_flags_or_a_file_and_says_who_wins_per_token(tmp_path,
                                                                            capsys):
    # A 512-GPU rail-only cluster and a ring of 8: the job's flags add the training metric
    # to every row.
    argv = ["compare", RAIL_ONLY, "ring", "n=8", "--model", "llama3-8b", "--tp", "8",
            "--global-batch", "512", "--seq-len", "4096", "--format", "json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["training_plan"][:4] for r in rows] == ["TP 8", "TP 8"]
    # The ring's 1 Gb/s links make its tensor-parallel traffic the step: dearer per token.
    assert rows[1]["training_binding_tier"] == "ring"
    assert 0 < rows[0]["training_usd_per_million_tokens"] < rows[1][
        "training_usd_per_million_tokens"]
    job = tmp_path / "job.toml"
    job.write_text('[job]\nmodel = "llama3-8b"\ntp = 8\nglobal_batch = 512\nseq_len = 4096\n')
    assert main(["compare", RAIL_ONLY, "--job", str(job), "--columns",
                 "name,training_usd_per_million_tokens"]) == 0
    out = capsys.readouterr().out
    assert "Cheapest per token for the job: DGX H100 SuperPOD, rail-only (2 SU)" in out
    # The same job from the file and from the flags: the same figure.
    usd = rows[0]["training_usd_per_million_tokens"]
    assert f"${usd:.3g} per million tokens" in out


@pytest.mark.parametrize("argv, message", [
    (["compare", "ring", "n=4", "--metrics", "training"],
     "--metrics training runs a job on every design: give --job FILE, or --model NAME"),
    (["compare", "ring", "n=4", "--tp", "8"], "--model/--tp flags: name a model with --model"),
    (["compare", "ring", "n=4", "--model", "llama3-8b", "--constraint", "max_tp=8"],
     "--constraint and --objective choose among plans: add --plan best"),
    (["compare", "ring", "n=4", "--model", "nosuch"], "--model must be one of the catalogue"),
    (["compare", "ring", "n=4", "--model", "llama3-8b", "--tp", "0"],
     "--tp must be an integer >= 1, got 0"),
    (["compare", "ring", "n=4", "--model", "llama3-8b", "--plan", "best", "--constraint",
      "max_tpp=8"], "--constraint: key 'max_tpp' is not known (did you mean 'max_tp'?)"),
])
def test_compare_job_errors_speak_of_flags(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert not any(word in err for word in ("MetricContext", "TrainingJob", "PlanSearch"))


def test_compare_job_file_errors_name_the_file_and_key(tmp_path, capsys):
    job = tmp_path / "job.toml"
    job.write_text('[job]\nmodel = "llama3-8b"\ntensor = 8\n')
    assert main(["compare", "ring", "n=4", "--job", str(job)]) == 2
    err = capsys.readouterr().err
    assert f"--job {job}: [job]: unknown key 'tensor'" in err
    assert main(["compare", "ring", "n=4", "--job", str(tmp_path / "none.toml")]) == 2
    assert "no such job file" in capsys.readouterr().err
    job.write_text('[job]\nmodel = "llama3-8b"\ntp = 0\n')
    assert main(["compare", "ring", "n=4", "--job", str(job)]) == 2
    assert f"--job {job}: [job]: tp must be an integer >= 1" in capsys.readouterr().err


def test_optimize_prints_and_writes_the_objective_it_minimised(tmp_path, capsys):
    search = tmp_path / "search.toml"
    search.write_text('gpus = 256\nobjective = "training_usd_per_million_tokens"\n'
                      '[space]\nfamily = ["superpod"]\nscale_up = ["dgx_h100"]\n'
                      'leaf_radix = [64]\noversubscription = [1.0, 2.0]\n'
                      '[job]\nmodel = "llama3-8b"\ntp = 8\nglobal_batch = 512\n'
                      'seq_len = 4096\n')
    best = tmp_path / "best.toml"
    assert main(["optimize", str(search), "-o", str(best)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("best by "))
    assert line.startswith("best by training_usd_per_million_tokens: superpod")
    assert "per million tokens" in line and "tokens/s" in line
    assert "| USD per M tokens |" in out
    head = best.read_text().splitlines()[0]
    assert head.startswith("# Minimised training_usd_per_million_tokens: $")
    # The figure written is the one printed.
    assert head.split(": ", 1)[1].rstrip(".") == line.split(", ", 1)[1]


def test_optimize_takes_progress_and_no_progress_as_compare_does(tmp_path, capsys):
    # Two candidates (1:1 and 2:1 rail leaves of 2-GPU domains): a bar over them on stderr
    # with --progress, nothing there with --no-progress, the same answer either way.
    search = tmp_path / "search.toml"
    search.write_text('gpus = 16\n[space]\nfamily = ["rail_optimized"]\n'
                      'scale_up = [{family = "nvswitch_domain", gpus = 2, switches = 1, '
                      'links_per_gpu = 4, link_gbps = 200}]\nleaf_radix = [8]\n'
                      'oversubscription = [1.0, 2.0]\n')
    outs = []
    for flag in ("--progress", "--no-progress"):
        assert main(["optimize", str(search), "-o", str(tmp_path / "best.toml"), flag]) == 0
        captured = capsys.readouterr()
        outs.append(captured.out)
        assert ("candidate" in captured.err) == (flag == "--progress")
    assert outs[0].splitlines()[2:] == outs[1].splitlines()[2:]  # all but the timing line


def test_maxflow_paths_and_selected_failures_on_the_command_line(capsys):
    # leaf 0 to leaf 1 of 2 x 2 x 2 at 400 Gb/s: their two GPUs' links, 800 Gb/s, proven.
    fabric = ["leaf_spine", "leaves=2", "spines=2", "endpoints_per_leaf=2", "link_gbps=400"]
    assert main(["maxflow", *fabric, "--from", "leaf=0", "--to", "name=g2|g3"]) == 2
    assert "--from must be conditions on node attributes" in capsys.readouterr().err
    assert main(["maxflow", *fabric, "--from", "name=g0|g1", "--to", "name=g2|g3",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["max_flow_gbps"], out["cut_gbps"], out["proven"]) == (800.0, 800.0, True)
    assert [c["loss_one_link_gbps"] for c in out["cut"]] == [400.0, 400.0]
    assert main(["maxflow", *fabric, "--from", "g0", "--to", "g3"]) == 0
    assert "cut = flow: proven" in capsys.readouterr().out
    # One 4-hop path through each spine.
    assert main(["paths", *fabric, "g0", "g2", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert "2 shortest path(s) from g0 to g2" in out
    assert "1. g0 -> leaf0 -> spine0 -> leaf1 -> g2  (4 hops, bottleneck 400 Gb/s)" in out
    assert main(["paths", *fabric, "g0", "g9"]) == 2
    assert "TARGET_NODE must be a node" in capsys.readouterr().err
    # Either spine, as likely: each leaves half the uplinks.
    assert main(["failures", *fabric, "--mode", "select", "--select",
                 "role=switch,tier=spine"]) == 0
    out = capsys.readouterr().out
    assert "1 switch of role=switch,tier=spine" in out and "2 (every pattern, weighted)" in out
    assert main(["failures", *fabric, "--mode", "select", "--kind", "links", "--select",
                 "role=gpu"]) == 2
    assert "--select must be conditions on link attributes" in capsys.readouterr().err
    assert main(["failures", *fabric, "--mode", "random", "--select", "s*"]) == 2
    assert "--select does not apply to --mode random" in capsys.readouterr().err


def test_a_misspelt_key_beside_a_missing_required_one_is_named(capsys):
    # cluster passes extra keywords on to its scale-up domain, so 'node' is not refused as
    # unknown; the missing 'nodes' then names it (a new user's typo got no suggestion).
    assert main(["solve", "cluster", "scale_up=dgx_h100", "node=4"]) == 2
    err = capsys.readouterr().err
    assert "missing required parameter(s) nodes of cluster" in err
    assert "'node' is given: did you mean 'nodes'?" in err
    # A key far from every missing one gets no guess.
    assert main(["solve", "cluster", "scale_up=dgx_h100", "racks=4"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_latency_target_far_above_any_without_a_unit_asks_for_one(capsys):
    # '--tpot 50' read as 50 s per output token returned a plan at 135 ms (a new user meant
    # 50 ms): a plain number above 10 s (TPOT) or 600 s (TTFT) is refused, asking for a unit.
    base = ["serve", "dgx_h100", "--model", "llama3-70b"]
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--ttft", "2", "--tpot", "50"])
    assert exit_.value.code == 2
    assert "argument --tpot: 50 s is far above any such target" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--ttft", "900", "--tpot", "0.05"])
    assert "give a unit: 900ms, or 900s if meant" in capsys.readouterr().err
    # With its unit a large target is taken as written (the parser's own reading).
    from fabricopt.cli import build_parser
    args = build_parser().parse_args([*base, "--ttft", "900s", "--tpot", "50ms"])
    assert (args.ttft, args.tpot) == (900.0, 0.05)
