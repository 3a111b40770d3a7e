"""The command line: every subcommand runs, prints what it promises, and fails cleanly."""

import pytest

import fabricopt as fo
from fabricopt.cli import main, parse_assignments


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert fo.__version__ in capsys.readouterr().out


def test_show_torus(capsys):
    assert main(["show", "torus", "dims=[4,4]"]) == 0
    out = capsys.readouterr().out
    # 4x4 torus: 16 endpoints, 32 links, 4 links of 1 Gb/s per node.
    assert "endpoints   16" in out and "32" in out and "4 Gb/s per endpoint" in out


def test_solve_prints_theta_bracket_bandwidth_and_tier(capsys):
    assert main(["solve", "ring", "n=8"]) == 0
    out = capsys.readouterr().out
    # Ring of 8, unit all-to-all: theta = 8/8^2 = 0.125 (docs/throughput.md); 7 Gb/s sent per node,
    # so 0.875 Gb/s per endpoint.
    assert "theta            0.125" in out
    assert "0.125 <= theta <= 0.125" in out
    assert "0.875 Gb/s" in out and "binding tier     ring" in out
    # Bisection of the unit ring: 2 links (exact); all-reduce on it: printed with busbw.
    assert "bisection        2 <= B <= 2 Gb/s (exact" in out
    assert "all_reduce of 1.07374e+09 bytes on 8 GPUs" in out and "busbw" in out


def test_solve_traffic_options(capsys):
    assert main(["solve", "hypercube", "d=3", "--traffic", "longest-matching"]) == 0
    # Antipodal pairing on Q_3 routes at theta = 1 (docs/throughput.md).
    assert "theta            1\n" in capsys.readouterr().out
    assert main(["solve", "ring", "n=6", "--traffic", "permutation:2", "--backend",
                 "pulp"]) == 0


def test_solve_time_limit_exit_code(capsys):
    # Dual simplex: it checks the clock every iteration (see test_flow's time-limit test).
    code = main(["solve", "torus", "dims=[12,12]", "--method", "lp", "--time-limit", "0.001",
                 "--solver", "simplex", "--throughput-only"])
    assert code == 1
    assert "not proven" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["show", "nope"], "unknown generator"),
    (["show", "ring", "n=1"], "n must be an integer >= 2"),
    (["show", "ring", "size=4"], "unexpected keyword"),
    (["show", "ring", "n"], "expected key=value"),
    (["solve", "ring", "n=4", "--traffic", "hotspot"], "--traffic must be"),
])
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_parse_assignments():
    assert parse_assignments(["k=8", "name=x", "split=[5,4]"]) == {
        "k": 8, "name": "x", "split": [5, 4]}


def test_closed_pipe_ends_quietly(monkeypatch, capfd):
    # `fabricopt show ... | head -0`: the reader is gone before anything is written. The
    # command must stop with the broken-pipe code 141 (128 + SIGPIPE), not a traceback.
    import os
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    out = os.fdopen(write_end, "w")  # block-buffered, like stdout on a pipe
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert main(["show", "ring", "n=4"]) == 141
    finally:
        monkeypatch.undo()
        out.close()
    assert capfd.readouterr().err == ""  # quietly: nothing on stderr
