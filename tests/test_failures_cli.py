"""The ``fabricopt failures`` subcommand: each mode prints certified numbers per GPU."""

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
