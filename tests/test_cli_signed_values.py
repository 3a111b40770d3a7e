"""A size or a duration given with a sign and a unit (``--message-bytes -1GiB``) is refused by
its flag's own rule ("a size must be > 0"), as ``--message-bytes 0`` is: argparse alone read
the word as another flag and said only "expected one argument" (a new user's finding)."""

import pytest

import fabricopt as fo
from fabricopt.cli import build_parser, main
from fabricopt.cli.words import seconds_arg, size_arg
from fabricopt.errors import InvalidParameterError

# Every subcommand's flags that read a size or a duration, found from the parser itself, so a
# flag added later is tried too.
PARSER = build_parser()
# (A latency target's reader says it reads a duration: target_seconds_arg's ``reads``.)
FLAGS = sorted({(sub.prog.split()[-1], action.option_strings[-1],
                 getattr(action.type, "reads", action.type))
                for group in PARSER._actions if hasattr(group, "choices") and group.choices
                and isinstance(group.choices, dict)
                for sub in group.choices.values() for action in sub._actions
                if getattr(action.type, "reads", action.type) in (size_arg, seconds_arg)},
               key=lambda f: f[:2])
RULE = {size_arg: "a size must be > 0", seconds_arg: "a duration must be > 0"}
WORD = {size_arg: "-1GiB", seconds_arg: "-5s"}


def test_the_flags_found_are_the_ones_known():
    # solve and compare read --message-bytes; solve, worst-case, draw, optimize and failures
    # read --time-limit; serve reads --ttft and --tpot. None is missed.
    names = {(cmd, flag) for cmd, flag, _ in FLAGS}
    assert names == {("solve", "--message-bytes"), ("compare", "--message-bytes"),
                     ("serve", "--ttft"), ("serve", "--tpot"), ("solve", "--time-limit"),
                     ("worst-case", "--time-limit"), ("draw", "--time-limit"),
                     ("failures", "--time-limit"), ("optimize", "--time-limit")}


@pytest.mark.parametrize("command, flag, kind", FLAGS, ids=[f"{c} {f}" for c, f, _ in FLAGS])
def test_a_signed_value_with_a_unit_gets_the_flags_rule(command, flag, kind, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "ring", "n=4", flag, WORD[kind]])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {RULE[kind]}" in err and repr(WORD[kind]) in err
    assert "expected one argument" not in err


def test_an_abbreviated_flag_and_other_signed_forms_too(capsys):
    for argv in (["solve", "ring", "n=4", "--message", "-1GiB"],      # argparse's abbreviation
                 ["solve", "ring", "n=4", "--message-bytes", "-.5MB"],
                 ["solve", "ring", "n=4", "--message-bytes", "-inf"],
                 ["solve", "ring", "n=4", "--message-bytes=-1GiB"]):  # worked before, still
        with pytest.raises(SystemExit):
            main(argv)
        assert "argument --message-bytes: a size must be > 0" in capsys.readouterr().err
    # A number flag with no unit reading: argparse's own words, naming the flag and the word.
    with pytest.raises(SystemExit):
        main(["train", "ring", "n=4", "--years", "-5y"])
    assert "argument --years: invalid float value: '-5y'" in capsys.readouterr().err
    # A flag left without its value still says so (the next word is a flag, not a number).
    with pytest.raises(SystemExit):
        main(["solve", "ring", "n=4", "--time-limit", "--progress"])
    assert "argument --time-limit: expected one argument" in capsys.readouterr().err


def test_a_plain_negative_number_is_still_refused_after_parsing_as_before(capsys):
    # -5 reads as a number (argparse passes it on); the check after parsing names the flag.
    assert main(["solve", "ring", "n=4", "--time-limit", "-5"]) == 2
    assert "--time-limit: must be a number of seconds > 0" in capsys.readouterr().err


def test_a_time_limit_takes_a_unit_as_serves_targets_do(capsys):
    # 2min = 120 s; the ring of 4 solves at once, so the answer is the one without a limit:
    # theta = 8 / 4^2 = 0.5 (docs/throughput.md).
    assert main(["solve", "ring", "n=4", "--time-limit", "2min", "--throughput-only"]) == 0
    assert "theta            0.5\n" in capsys.readouterr().out


@pytest.mark.parametrize("gap", ["-0.1", "0", "1", "nan"])
def test_a_gap_outside_0_to_1_is_the_flags_error_before_any_work(gap, capsys):
    # It was the solver's, naming max_concurrent_flow(), which the user never typed.
    assert main(["solve", "ring", "n=4", "--gap", gap]) == 2
    assert capsys.readouterr().err.startswith("fabricopt solve: error: --gap: must be a "
                                              "number with 0 < gap < 1")


@pytest.mark.parametrize("size", ["1Gb", "1Gib", "64b", "512 Mb"])
def test_a_size_in_bits_is_refused_not_read_as_bytes(size, capsys):
    # A small b is bits (1Gb = 125 MB): read as bytes it was eight times too large.
    with pytest.raises(SystemExit) as stop:
        main(["solve", "ring", "n=4", "--message-bytes", size])
    assert stop.value.code == 2 and "a small b is bits" in capsys.readouterr().err
    with pytest.raises(InvalidParameterError, match="a small b is bits"):
        fo.collective_bounds(fo.ring(4), "all_reduce", message_bytes=size)
