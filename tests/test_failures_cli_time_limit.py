"""``fabricopt failures --time-limit``: one limit for the whole command, split across its
fabrics and, within each, its solves (the split worst-case uses); what it cut short is named."""

from __future__ import annotations

import dataclasses

import pytest

import fabricopt.failures.engine as engine
from fabricopt.cli import main
from fabricopt.flow.time_budget import TimeBudget


@pytest.fixture
def given(monkeypatch):
    """The time limit each failure solve is given, in order; a solve whose number is in
    ``given["cut"]`` reports status time_limit (its certified bracket unchanged)."""
    record = {"limits": [], "cut": set()}
    solve = engine.engine_max_concurrent_flow

    def recorded(*args, time_limit=None, **kwargs):
        record["limits"].append(time_limit)
        r = solve(*args, time_limit=time_limit, **kwargs)
        if len(record["limits"]) in record["cut"]:
            return dataclasses.replace(r, status="time_limit")
        return r

    monkeypatch.setattr(engine, "engine_max_concurrent_flow", recorded)
    return record


def test_the_limit_is_split_across_the_fabrics_and_their_solves(given, capsys):
    # 10 s for two fabrics: the first gets at most 10 / 2 = 5 s, and its first solve (the
    # intact fabric) at most 5 / (1 + 2 trials x 1 fraction) = 5/3 s, not the 10 s each
    # solve had before.
    assert main(["failures", "ring", "n=6", "ring", "n=8", "--mode", "sweep",
                 "--fraction", "0.2", "--trials", "2", "--time-limit", "10"]) == 0
    assert given["limits"][0] <= 5 / 3
    assert all(0 < t <= 10 for t in given["limits"])
    out = capsys.readouterr().out
    # Each fabric says its share of the command's 10 s; nothing was cut short.
    assert out.count("of the command's 10 s: each of its") == 2


def test_a_solve_cut_short_is_named(given, capsys):
    given["cut"] = {1}  # the intact fabric's solve
    main(["failures", "fat_tree", "k=4", "--time-limit", "60"])
    out = capsys.readouterr().out
    assert "time limit       " in out and "cut short: solve 1 (of " in out


def test_without_a_limit_no_solve_is_limited(given, capsys):
    assert main(["failures", "fat_tree", "k=4"]) == 0
    assert given["limits"] and set(given["limits"]) == {None}
    assert "time limit" not in capsys.readouterr().out


def test_a_spent_budget_gives_each_solve_its_floor():
    # Once the limit has run out a solve still gets a hundredth of a second, for the
    # certified bracket of its first stage.
    budget = TimeBudget(1e-9, solves=3)
    assert budget.share() == TimeBudget.FLOOR


def test_help_says_the_limit_is_the_whole_commands(capsys):
    with pytest.raises(SystemExit):
        main(["failures", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "seconds for the whole command, split across its fabrics" in text
    assert "seconds per solve" not in text
