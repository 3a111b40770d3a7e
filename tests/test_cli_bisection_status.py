"""`solve` says plainly why a bisection bracket is open and exits by it: a bracket every stage
left open (no time limit) is a certified answer, exit 0; one left open under --time-limit may
narrow with more time, exit 1."""

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


def test_an_open_bracket_under_a_time_limit_exits_1_and_says_why(capsys):
    # The throughput is optimal (the symmetric LP is instant); only the bisection is open.
    assert main([*TORUS, "--time-limit", "60"]) == 1
    out = capsys.readouterr().out
    assert "status           optimal" in out
    assert "open bracket     left open under --time-limit 60 s (exit code 1)" in out
    assert main([*TORUS, "--time-limit", "60", "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["bisection_status"] == "time_limit" and row["bisection_exact"] is False


def test_an_exact_bisection_says_nothing_more_and_exits_0(capsys):
    # fat_tree(4), 16 hosts on 400 Gb/s links: full bisection 16 / 2 x 400 = 3,200, exact.
    assert main(["solve", "fat_tree", "k=4", "--time-limit", "60", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["bisection_status"] == "exact" and row["bisection_gbps"] == 3200
