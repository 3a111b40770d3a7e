"""The ``fabricopt failures`` subcommand: each mode prints certified numbers per GPU."""

import re

import pytest

from fabricopt.cli import main


def test_n1_table_names_orbits_and_the_worst_case(capsys):
    assert main(["failures", "fat_tree", "k=4"]) == 0
    out = capsys.readouterr().out
    # fat_tree(4): 48 physical links in 3 orbits (GPU, leaf-spine, spine-core links).
    assert "48 failures in 3 orbits" in out and "N-1 worst case" in out


def test_criticality_plot_and_cut(capsys, tmp_path):
    png = tmp_path / "rank.png"
    assert main(["failures", "fat_tree", "k=4", "--mode", "criticality", "--plot",
                 str(png)]) == 0
    assert png.stat().st_size > 0
    # One leaf-spine link costs 46% of fat_tree(4)'s all-to-all, so 30% takes one failure.
    assert main(["failures", "fat_tree", "k=4", "--mode", "cut", "--cut", "0.3",
                 "--tiers", "leaf-spine,spine-core"]) == 0
    assert "no smaller set does it" in capsys.readouterr().out


def test_groups_and_random_modes(capsys):
    assert main(["failures", "fat_tree", "k=4", "--mode", "groups", "--groups", "racks"]) == 0
    assert "one risk group at a time" in capsys.readouterr().out
    assert main(["failures", "fat_tree", "k=4", "--mode", "random", "--probability", "0.02",
                 "--trials", "5", "--tiers", "leaf-spine"]) == 0
    assert "seed 1" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["failures", "fat_tree", "k=4", "--tiers", "nope"],
                                  ["failures", "fat_tree", "k=4", "--mode", "groups",
                                   "--groups", "rack"]])
def test_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--mode", "sweep", "--fraction", "abc"], ["--fraction", "'abc'", "0.01,0.05"]),
    (["--mode", "groups", "--groups", "rakcs"], ["--groups", "racks, rows", "pod",
                                                 "did you mean 'racks'"]),
])
def test_bad_flag_values_name_the_flag_and_what_is_allowed(argv, words, capsys):
    assert main(["failures", "fat_tree", "k=4", *argv]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err


def test_a_result_not_proven_exits_1(monkeypatch, capsys):
    import fabricopt.cli.failures as cli_failures
    from fabricopt.failures.single import single_failures

    # An approximate solve to a 50% gap leaves fat_tree(4)'s leaf-spine orbit a bracket
    # (not proven): the table prints it, and the exit code says a result was not proven.
    def approx(fab, **kw):
        return single_failures(fab, method="approx", gap=0.5, **kw)

    monkeypatch.setattr(cli_failures, "single_failures", approx)
    assert main(["failures", "fat_tree", "k=4"]) == 1
    assert re.search(r"link leaf0-spine0.0 +16 +\[", capsys.readouterr().out)  # a bracket
    monkeypatch.undo()
    assert main(["failures", "fat_tree", "k=4", "--time-limit", "60"]) == 0  # all proven
