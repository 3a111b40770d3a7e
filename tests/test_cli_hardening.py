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
