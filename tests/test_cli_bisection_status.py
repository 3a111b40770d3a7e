"""`solve` says plainly why a bisection bracket is open and exits by what the bisection
recorded: a bracket every stage left open, run to its end, is a certified answer (exit 0,
with or without --time-limit); one left open when the time limit ran out, or where a search
stopped at its work cap, may narrow with more time or work (exit 1)."""

import json

from fabricopt.cli import main

# A 5 x 5 x 5 torus of unit links: no stage closes its bisection. Its all-to-all theta is
# 1/75 (the symmetric LP), so any 62/63 split carries 62 x 63 / 75 = 52.08 Gb/s across it:
# 53 on the grid of whole Gb/s. The upper end is the best cut the stages found, 62 links of
# 1 Gb/s (the `cut` line prints them): a certified bracket either way.
TORUS = ["solve", "torus", "dims=[5,5,5]", "--collective", "all_reduce"]


def test_an_open_bracket_with_no_time_limit_is_an_answer(capsys):
    assert main(TORUS) == 0
    out = capsys.readouterr().out
    assert "bisection        53 <= B <= 62 Gb/s (bracket;" in out
    assert ("open bracket     every stage ran and left it open: both ends are certified, "
            "and the bisection lies between them") in out


def test_a_time_limit_that_did_not_run_out_changes_nothing(capsys):
    # The torus's stages end in well under a second: with 600 s given, the same bracket,
    # the same answer, exit 0 (a guess from the flag alone had said exit 1 here).
    assert main([*TORUS, "--time-limit", "600"]) == 0
    assert "open bracket     every stage ran and left it open" in capsys.readouterr().out


def test_a_time_limit_that_ran_out_exits_1_and_says_why(capsys):
    # One microsecond: spent before the first stage ends, whatever the machine's speed.
    assert main([*TORUS, "--time-limit", "1e-6", "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["bisection_status"] == "time_limit" and row["bisection_exact"] is False
    main([*TORUS, "--time-limit", "1e-6"])
    assert "open bracket     left open when --time-limit 1e-06 s ran out (exit code 1)" in \
        capsys.readouterr().out


def test_a_search_at_its_work_cap_is_said_and_exits_1(monkeypatch):
    # fat_tree(16) minus 5 % (seed 0) reaches the counted planes (docs/bisection.md: 155,200
    # from the planes, 166,400 the best cut). With no time limit and the search capped at
    # one branch, the bracket stays open there, and the result says why.
    import fabricopt as fo
    from fabricopt.analysis import counted_planes
    from fabricopt.cli.solve import bisection_line, bisection_status

    monkeypatch.setattr(counted_planes, "MAX_BRANCHES", 1)
    fab = fo.fail_random(fo.fat_tree(16), 0.05, seed=0)
    b = fo.bisection_bandwidth(fab, time_limit=None)
    assert not b.exact and b.stopped_short == "work cap"
    assert b.lower_gbps <= 166_400 <= b.upper_gbps
    assert bisection_status(b) == "capped"
    assert bisection_line(b, None).startswith("open bracket     a search stopped at its work "
                                              "cap (exit code 1)")


def test_an_exact_bisection_says_nothing_more_and_exits_0(capsys):
    # fat_tree(4), 16 hosts on 400 Gb/s links: full bisection 16 / 2 x 400 = 3,200, exact.
    assert main(["solve", "fat_tree", "k=4", "--time-limit", "60", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["bisection_status"] == "exact" and row["bisection_gbps"] == 3200
