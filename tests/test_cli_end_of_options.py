"""``--`` on the command line: it ends the options, as argparse's convention has it, so every
word after it is a target or a target's key=value, also after the options; a flag written
after it, or a key=value left after the options without it, is refused in one line that says
where the word belongs."""

from __future__ import annotations

import json

import pytest

from fabricopt.cli import main


def test_words_after_the_end_of_options_are_the_targets_parameters(capsys):
    # 'name=box' after '--' is dgx_h100's parameter, as if written right after the target.
    argv = ["serve", "dgx_h100", "--model", "llama3-8b", "--format", "json"]
    assert main([*argv, "--", "name=box"]) == 0
    assert json.loads(capsys.readouterr().out)["fabric"] == "box"
    # Before the targets too: '--' then the target and its parameter.
    assert main(["solve", "--throughput-only", "--", "ring", "n=5"]) == 0
    assert "fabric           ring(5)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, flag", [
    (["serve", "dgx_h100", "--", "--model", "llama3-8b"], "--model"),
    (["serve", "dgx_h100", "--model", "llama3-8b", "--", "name=box", "--tp", "8"], "--tp"),
    (["solve", "ring", "n=4", "--", "--method=lp"], "--method"),
])
def test_a_flag_after_the_end_of_options_says_where_it_belongs(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:  # a usage error, before any work
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fabricopt {argv[0]}: error: {flag} comes after '--', which ends the "
                   "options (every word after it is a target or a key=value): put "
                   f"{flag} before '--'; see: fabricopt {argv[0]} --help"]


def test_a_parameter_after_the_options_names_both_places_it_may_go(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "dgx_h100", "--model", "llama3-8b", "name=box"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fabricopt serve: error: unrecognized argument 'name=box': a "
                          "target's key=value parameters follow it, before its options")
    assert "or after '--'" in err
