"""``fabricopt worst-case --time-limit``: one limit for the whole command, split across its
fabrics and, within each, its solves; what it cut short is named."""

from __future__ import annotations

import json

import fabricopt.cli.worst_case as cli
from fabricopt.cli import main


def test_the_time_limit_is_split_across_the_fabrics(monkeypatch, capsys):
    given = []
    search = cli.worst_case_permutation

    def recorded(fab, **kwargs):
        given.append(kwargs["time_limit"])
        return search(fab, **kwargs)

    monkeypatch.setattr(cli, "worst_case_permutation", recorded)
    assert main(["worst-case", "ring", "n=4", "ring", "n=6", "--time-limit", "10",
                 "--format", "json"]) == 0
    # The first of 2 fabrics gets at most 10 / 2 s; the second what is left (at most 10 s).
    assert 0 < given[0] <= 5 and 0 < given[1] <= 10
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["time_limit_s"] for r in rows] == given
    assert all(r["cut_short"] == [] and r["patterns_skipped"] == 0 for r in rows)


def test_help_says_the_limit_is_the_whole_commands(capsys):
    try:
        main(["worst-case", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "seconds for the whole command, split across its fabrics" in text
    assert "seconds per solve" not in text
