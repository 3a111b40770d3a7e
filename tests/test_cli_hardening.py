"""The command line at the edges a new user reaches early: a folder where one fabric is read,
and figures of fabrics given in extreme (but explicit) units."""

from __future__ import annotations

import pytest

from fabricopt.cli import main
from fabricopt.study.table import human


@pytest.mark.parametrize("command", ["show", "solve", "bom", "failures", "worst-case", "tco"])
def test_a_folder_is_refused_naming_a_file_in_it_and_compare(command, tmp_path, capsys):
    (tmp_path / "one.toml").write_text('generator = "ring"\n[params]\nn = 4\n')
    assert main([command, str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a folder" in err[0]
    assert str(tmp_path / "one.toml") in err[0] and f"fabricopt compare {tmp_path}" in err[0]


def test_human_switches_to_an_exponent_at_ten_to_the_fifteen():
    # Just below the threshold: thousands separators; at it: four significant digits.
    assert human(999_999_999_999_999.0) == "999,999,999,999,999"
    assert human(1e15) == "1e+15" and human(-2.5e20) == "-2.5e+20"


@pytest.mark.parametrize("argv", [
    ["solve", "ring", "n=3", "--solver", ""], ["bom", "ring", "n=3", "--catalog", ""],
    ["compare", "ring", "n=3", "--metrics", ""], ["compare", "ring", "n=3", "--columns", " "],
    ["compare", "ring", "n=3", "--scheduler", ""], ["failures", "ring", "n=4", "--tiers", ""],
])
def test_an_empty_word_for_a_flag_is_refused_not_read_as_left_out(argv, capsys):
    # Each of these ran with exit 0 as if the flag had not been given.
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"fabricopt {argv[0]}: error: {argv[-2]}: an empty word")


def test_failures_plot_needs_an_image_name_before_any_solve(tmp_path, monkeypatch, capsys):
    # A bare name was written as NAME.png while the command said "plot written to NAME".
    monkeypatch.chdir(tmp_path)
    assert main(["failures", "ring", "n=4", "--plot", "ranking"]) == 2
    assert "--plot must be an image file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["failures", "ring", "n=4", "--plot", "ranking.svg"]) == 0
    assert (tmp_path / "ranking.svg").exists()


def test_a_cut_off_gpu_is_disconnected_exactly_and_solve_exits_0(tmp_path, capsys):
    # ring(4) without both links of n0: n0 reaches nobody, so all-to-all theta is 0, proven
    # (a pair with no path). The status says so; it is an exact answer, not a failed solve.
    import fabricopt as fo

    fab = fo.ring(4).without(links=[("n0", "n1"), ("n0", "n3")])
    r = fo.max_concurrent_flow(fab)
    assert (r.status, r.exact, r.lower, r.upper) == ("disconnected", True, 0.0, 0.0)
    assert "n0" in r.unreachable and fo.check_certificate(fab, r).ok
    path = tmp_path / "cut.json"
    fo.write_json(fab, path)
    assert main(["solve", str(path)]) == 0
    assert "cannot reach" in capsys.readouterr().out
