"""Every subcommand and every flag of the command line, given bad words.

The options come from the argument parser itself, so a new flag is fuzzed without editing this
file. The rule is the one ``docs/errors.md`` promises: a run either is accepted (exit 0, or 1
when a result is not proven or a design failed) or ends with exit code 2 and one line
``fabricopt COMMAND: error: MESSAGE`` on standard error (argparse's own errors add the usage line
before it); never a traceback, never another exit code, never a hang. A repeated ``key=value``
and Ctrl-C are covered for every command.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
from pathlib import Path

import pytest

from fabricopt import cli
from fabricopt.cli import EXIT_INTERRUPTED, build_parser, main
from fabricopt.study.local_pool import process_pool

#: A two-candidate search file for ``optimize`` (the design space of ``test_fuzz.SMALL_SPACE``).
SEARCH = """gpus = 16
[space]
family = ["rail_optimized"]
scale_up = [{family = "nvswitch_domain", gpus = 2, switches = 1, links_per_gpu = 4,
             link_gbps = 200}]
leaf_radix = [8]
oversubscription = [1.0, 2.0]
"""

#: Words that name something valid for each command, before the flag under test.
BASE = {"show": ["ring", "n=3"], "solve": ["ring", "n=3"], "bom": ["ring", "n=3"],
        "tco": ["ring", "n=3"],
        "compare": ["ring", "n=3"], "draw": ["ring", "n=3", "-o", "x.png"],
        "optimize": ["search.toml"], "train": ["ring", "n=8", "--model", "llama3-8b"],
        "failures": ["ring", "n=4"], "worst-case": ["ring", "n=4"],
        # one batch of a fixed plan: the quickest serving question (about a second)
        "serve": ["dgx_h100", "--model", "llama3-8b", "--tp", "8", "--batch", "4",
                  "--prompt-len", "128", "--output-len", "4"],
        "maxflow": ["ring", "n=4", "--from", "n0", "--to", "n1"],
        "paths": ["ring", "n=4", "n0", "n1"]}

#: Bad words by the kind of value a flag takes: numbers out of range, non-finite or not
#: numbers at all; text that names nothing; an empty word.
NUMBER_WORDS = ["nan", "-1", "0", "1e400", "x", "1000000000000", "1e308", "1e-320"]
TEXT_WORDS = ["", "nope", "a:b"]

#: Seconds one command may take before it counts as a hang (the slowest case, an optimize
#: run on the two-candidate space above, takes a few seconds).
HANG_S = 60


def _subparsers(parser: argparse.ArgumentParser | None = None,
                ) -> dict[str, argparse.ArgumentParser]:
    parser = parser or build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _flag_cases() -> list[list[str]]:
    """For every flag of every command: the flag alone (a switch) or with each bad word."""
    cases = []
    for command, sub in _subparsers().items():
        if command not in BASE:  # test_every_command_has_base_words names it
            continue
        for action in sub._actions:
            if not action.option_strings or action.dest == "help":
                continue
            flag = action.option_strings[-1]
            if action.nargs == 0:
                cases.append([command, *BASE[command], flag])
                continue
            words = ["nope"] if action.choices else (
                NUMBER_WORDS if action.type is not None else TEXT_WORDS)
            cases += [[command, *BASE[command], flag, word] for word in words]
    return cases


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang


def _run(argv: list[str], capsys) -> tuple[int, list[str]]:
    """``main(argv)`` under a hang alarm: the exit code and the lines on standard error."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(HANG_S)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    except _Hang:
        pytest.fail(f"{' '.join(argv)}: still running after {HANG_S} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, capsys.readouterr().err.strip().splitlines()


def _assert_clear(argv: list[str], code: int, err: list[str]) -> None:
    """Accepted, or exit 2 with one error line (after argparse's usage lines)."""
    command = argv[0]
    if code in (0, 1):
        return
    assert code == 2, (argv, code, err)
    assert err and err[-1].startswith(f"fabricopt {command}: error: "), (argv, err)
    assert all(line.startswith(("usage:", " ")) for line in err[:-1]), (argv, err)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "search.toml").write_text(SEARCH)
    return tmp_path


def test_every_command_has_base_words():
    # A new subcommand fails here (not with a KeyError while the cases are collected) until
    # it has valid words in BASE, and so gets its flags, Ctrl-C and a repeated key fuzzed.
    assert set(_subparsers()) == set(BASE)


def test_every_command_and_flag_is_fuzzed():
    covered = {(c[0], w) for c in _flag_cases() for w in c if w.startswith("-")}
    for command, sub in _subparsers().items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert (command, action.option_strings[-1]) in covered


@pytest.mark.slow
@pytest.mark.parametrize("argv", _flag_cases(), ids=" ".join)
def test_every_flag_with_bad_words_is_accepted_or_one_line_exit_2(argv, workdir, capsys):
    code, err = _run(argv, capsys)
    _assert_clear(argv, code, err)


@pytest.mark.parametrize("command", sorted(set(BASE) - {"optimize"}))  # it takes no key=value
def test_a_repeated_key_is_one_line_exit_2(command, workdir, capsys):
    # the last value silently won: ring n=4 n=5 drew a ring of 5
    argv = [command, "ring", "n=4", "n=5"] + {"draw": ["-o", "x.png"],
                                              "train": ["--model", "llama3-8b"],
                                              "serve": ["--model", "llama3-8b"],
                                              "maxflow": ["--from", "n0", "--to", "n1"],
                                              "paths": ["n0", "n1"]}.get(command, [])
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1 and "'n' is given twice" in err[0], err


@pytest.mark.parametrize("command", sorted(BASE))
def test_ctrl_c_is_one_line_exit_130(command, workdir, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    def parser_that_interrupts():  # the command's own function, whatever module holds it
        parser = build_parser()
        _subparsers(parser)[command].set_defaults(func=interrupted)
        return parser

    monkeypatch.setattr(cli, "build_parser", parser_that_interrupts)
    code, err = _run([command, *BASE[command]], capsys)
    assert code == EXIT_INTERRUPTED == 130  # 128 + SIGINT, as a shell reports it
    assert err == [f"fabricopt {command}: interrupted"]


def test_ctrl_c_in_compare_says_how_many_rows_were_saved(workdir, capsys, monkeypatch):
    out = workdir / "OUT"

    def two_rows_then_ctrl_c(designs, *, out_dir, **options):
        Path(out_dir).mkdir()
        rows = Path(out_dir) / "results.jsonl"
        # Two finished rows and a third cut short by the interrupt: two are kept.
        rows.write_text(json.dumps({"key": "a"}) + "\n" + json.dumps({"key": "b"}) + "\n{\"ke")
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "compare", two_rows_then_ctrl_c)
    code, err = _run(["compare", "ring", "n=3", "-o", str(out)], capsys)
    assert code == 130
    assert err == [f"fabricopt compare: interrupted: 2 row(s) saved in {out}/results.jsonl; "
                   "rerun the same command to resume"]


def test_unreachable_scheduler_is_one_line_exit_2(workdir, capsys, monkeypatch):
    import distributed

    def refuse(address):  # what Client() raises after its connect timeout
        raise OSError(f"Timed out trying to connect to {address} after 30 s")

    monkeypatch.setattr(distributed, "Client", refuse)
    code, err = _run(["compare", "ring", "n=3", "--scheduler", "tcp://127.0.0.1:1"], capsys)
    # was "cannot write standard output: Timed out ...", exit 74
    assert code == 2 and len(err) == 1
    assert "--scheduler tcp://127.0.0.1:1: cannot connect: Timed out" in err[0]


@pytest.mark.parametrize(("argv", "expected"), [
    (["solve", "ring", "n=3", "--traffic", "all-to-all:3"], "takes no ':' suffix"),
    (["solve", "ring", "n=3", "--traffic", "longest-matching:x"], "takes no ':' suffix"),
    (["draw", "ring", "n=3", "-o", ""], "an empty word is not a value"),  # wrote '.png'
    (["draw", "ring", "n=3", "-o", "fig"], "must be an image file name"),
    (["draw", "ring", "n=3", "-o", "x.png", "--dpi", "nan"], "--dpi must be a finite"),
    # 7 x 3.6 in at 100,000 dpi is 2.5e11 pixels: MemoryError before
    (["draw", "ring", "n=3", "-o", "x.png", "--dpi", "100000"], "the limit is 100,000,000"),
])
def test_cli_rows_of_the_second_pass(argv, expected, workdir, capsys):
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1 and expected in err[0], err


def test_jobs_are_capped_by_cores_and_rows(monkeypatch):
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    with process_pool(100_000, None) as pool:
        assert pool._max_workers == 4  # was 100,000 processes forked
    with process_pool(64, 1) as pool:
        assert pool._max_workers == 1  # one design: one worker


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_end_with_their_parent(tmp_path):
    # A parent that starts two workers, prints their ids and is then killed (SIGKILL: no
    # cleanup of its own); the workers notice within their one-second poll and exit.
    import os
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "from fabricopt.study.local_pool import process_pool\n"
        "def pid_after_nap(_):\n"
        "    time.sleep(0.3)\n"
        "    return os.getpid()\n"
        "pool = process_pool(2, 2)\n"
        "print(' '.join(map(str, set(pool.map(pid_after_nap, range(4))))), flush=True)\n"
        "time.sleep(600)\n")
    root = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    workers = [int(p) for p in parent.stdout.readline().split()]
    parent.kill()
    parent.wait()
    parent.stdout.close()
    for _ in range(100):  # up to 10 s for the one-second poll
        alive = [p for p in workers if Path(f"/proc/{p}").exists()
                 and "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]]
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, f"workers {alive} outlived their parent"


# -- the third pass: a GPU the fabric does not carry, a PUE below 1, figures that overflow ---

_LLAMA_ON_DGX = ["train", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--global-batch",
                 "8", "--seq-len", "1024"]


@pytest.mark.parametrize(("argv", "expected"), [
    # B200 speeds were timed on, and priced as, the DGX H100 servers the fabric is made of
    ([*_LLAMA_ON_DGX, "--gpu", "b200"], "gpu must be the GPU the fabric's nodes carry, "
                                        "'h100_sxm'"),
    ([*_LLAMA_ON_DGX, "--gpu", "b201"], "did you mean 'b200'?"),
    # printed the step, then "$inf per million tokens", exit 0
    ([*_LLAMA_ON_DGX, "--years", "1e-320"], "cost per million tokens overflows a float"),
    ([*_LLAMA_ON_DGX, "--pue", "0.5"], "--pue: must be a finite number >= 1, got 0.5"),
    # printed energy, maintenance and total as "inf USD", exit 0
    (["tco", "ring", "n=4", "link_gbps=400", "--years", "1e308"], "total cost overflows"),
    (["tco", "ring", "n=4", "link_gbps=400", "--usd-per-kwh", "1e308"], "usd_per_kwh=1e+308"),
    (["tco", "ring", "n=4", "link_gbps=400", "--pue", "0.5"], "--pue: must be a finite "
                                                              "number >= 1"),
])
def test_cli_rows_of_the_third_pass(argv, expected, workdir, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and expected in lines[0], lines
    assert out == ""  # refused before anything is printed


def test_an_infinite_figure_is_not_printed_and_says_why(workdir, capsys, monkeypatch):
    # Links of 1e300 Gb/s made the all-reduce's algbw overflow: "algbw inf GB/s", exit 0.
    # The generators now refuse such links, so the overflow is made here, in the bound solve
    # prints, to see that whatever overflows is named and not printed.
    import dataclasses

    from fabricopt.cli import solve as solve_command

    real = solve_command.collective_bounds

    def overflowing(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), algbw_GBps=math.inf)

    monkeypatch.setattr(solve_command, "collective_bounds", overflowing)
    code = main(["solve", "ring", "n=4"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    # ring(4)'s links of 1 Gb/s are plausible: the reason is the numbers given (1 GiB)
    assert err.strip().splitlines() == [
        "fabricopt solve: error: ring(4): all_reduce algbw_GBps is inf, no figure to print: "
        "it overflows a float from the numbers given (--message-bytes 1.07374e+09)"]


def test_implausible_capacities_are_the_reason_given():
    import fabricopt as fo
    from fabricopt.cli.words import check_finite

    fab = fo.ring(4)
    for _, _, data in fab.graph.edges(data=True):
        data["capacity"] = 1e300  # as a hand-made or old saved fabric may hold
    with pytest.raises(fo.FabricOptError, match=r"ring\(4\): theta is inf, no figure to "
                                                r"print: the fabric's links carry 1e\+300 to "
                                                r"1e\+300 Gb/s, outside the plausible 0.001"):
        check_finite(fab, {"theta": math.inf})
