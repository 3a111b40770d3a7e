"""A batch's saved output read back (Comparison.read, ``fabricopt compare OUT``) and
``--columns`` with ``-o``: the table, its verdict and its report again without a solve."""

import json
import math
import os

import pytest

import fabricopt as fo
import fabricopt.cli as cli
from fabricopt.cli import main
from fabricopt.errors import DesignFileError
from fabricopt.plot import write_report
from fabricopt.study.saved import saved_output

METRICS = ["summary", "all_to_all", "cost"]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch")
    # (Fabric, values) pairs: the values become swept columns, as key=value on the command line
    table = fo.compare([(fo.ring(4), {"n": 4}), (fo.ring(8), {"n": 8}), fo.fat_tree(4)],
                       metrics=METRICS, out_dir=out)
    write_report(table, out, diagrams=False)
    return table, out


def _same(a, b, rel=0.0):
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, numbers) and isinstance(b, numbers)):
        return a == b and type(a) is type(b)
    if rel or isinstance(a, float):  # CSV writes 400.0 as 400: a number is its value
        return math.isclose(a, b, rel_tol=rel) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_read_back_from_the_folder_is_the_table_compare_returned(batch):
    table, out = batch
    again = fo.Comparison.read(out)
    assert again.columns == table.columns and again.swept == table.swept == ["n"]
    # results.json keeps every number at full precision: cell for cell equal
    for row, back in zip(table.rows, again.rows, strict=True):
        assert all(_same(row[c], back[c]) for c in table.columns), row["name"]
    assert again.verdict() == table.verdict()
    assert again.to_text() == table.to_text()


def test_read_back_from_each_saved_file(batch, tmp_path):
    table, out = batch
    from_csv = fo.Comparison.read(os.path.join(out, "results.csv"))
    assert from_csv.columns == table.columns and from_csv.swept == ["n"]
    for row, back in zip(table.rows, from_csv.rows, strict=True):
        # results.csv writes numbers to six significant digits (Comparison._cell: .6g)
        assert all(_same(row[c], back[c], rel=5e-6) for c in table.columns), row["name"]
    # a batch stopped before its report: only the rows file, one row per design
    (tmp_path / "results.jsonl").write_text(
        (out / "results.jsonl").read_text() + (out / "results.jsonl").read_text().splitlines(
            keepends=True)[0])  # a retried design's second line: the last one is kept
    from_rows = fo.Comparison.read(tmp_path)
    assert len(from_rows) == len(table)
    assert sorted(r["key"] for r in from_rows) == sorted(r["key"] for r in table)


def test_what_is_not_a_saved_table_is_refused_naming_it(tmp_path):
    with pytest.raises(DesignFileError, match="no saved comparison in this folder"):
        fo.Comparison.read(tmp_path)
    with pytest.raises(DesignFileError, match="no such folder or file"):
        fo.Comparison.read(tmp_path / "nowhere")
    (tmp_path / "results.json").write_text(json.dumps({"rows": 1}))
    with pytest.raises(DesignFileError, match="not a saved comparison"):
        fo.Comparison.read(tmp_path)
    with pytest.raises(fo.FabricOptError, match="no design to rebuild"):
        out = tmp_path / "ok"
        fo.compare(fo.ring(4), metrics=["summary"], out_dir=out)
        fo.Comparison.read(out).fabric(0)  # read back, the designs are not rebuilt


def test_saved_output_is_told_from_designs(batch, tmp_path):
    _, out = batch
    assert saved_output([str(out)]) == str(out)
    assert saved_output([str(out / "results.csv")]) == str(out / "results.csv")
    assert saved_output(["topologies"]) is None  # a folder of design files is a batch
    assert saved_output([str(out), "ring"]) is None


def test_cli_reads_a_saved_folder_without_solving(batch, tmp_path, capsys, monkeypatch):
    _, out = batch

    def no_solve(*args, **kwargs):
        raise AssertionError("compare() was begun on a saved output")

    monkeypatch.setattr(cli, "compare", no_solve)
    assert main(["compare", str(out), "--columns", "name,n,gpus"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[1].split() == ["name", "n", "gpus"]
    again = tmp_path / "again"
    assert main(["compare", str(out), "-o", str(again)]) == 0
    assert "nothing solved again" in capsys.readouterr().out
    # the report written again holds the same table
    assert (again / "results.csv").read_text() == (out / "results.csv").read_text()
    assert main(["compare", str(out), "--metrics", "summary"]) == 2  # bad input, said
    assert "would compute again" in capsys.readouterr().err


def test_columns_with_output_print_those_columns_and_say_what_is_written(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["compare", "ring", "n=4", "--metrics", "summary", "-o", str(out),
                 "--no-diagrams", "--columns", "name,gpus,links"])
    assert code == 0
    captured = capsys.readouterr()
    header = [line for line in captured.out.splitlines() if line.startswith("name")]
    assert header and header[0].split() == ["name", "gpus", "links"]
    assert "printed 3 of its" in captured.err and "every column is written to" in captured.err
    written = fo.Comparison.read(out)
    assert {"name", "gpus", "links", "network_switches"} <= set(written.columns)  # all
    # --format csv with -o: stdout is one csv document of the chosen columns
    assert main(["compare", str(out), "--format", "csv", "--columns", "name,gpus"]) == 0
    assert capsys.readouterr().out.splitlines() == ["name,gpus", "ring(4),4"]
