"""Every shipped design answers the three questions: certified throughput, bisection and
all-reduce bounds (what `fabricopt solve FILE` prints)."""

from pathlib import Path

import pytest

import fabricopt as fo

DESIGNS = sorted((Path(__file__).parents[2] / "topologies").glob("*.toml"))


@pytest.mark.parametrize("path", DESIGNS, ids=[p.stem for p in DESIGNS])
def test_design_solves(path):
    loaded = fo.load_design(path)
    for fab in loaded if isinstance(loaded, list) else [loaded]:  # every point of a sweep
        r = fo.max_concurrent_flow(fab)
        assert r.status == "optimal" and r.exact, (fab.name, r.message)
        assert r.lower <= r.theta <= r.upper
        b = fo.bisection_bandwidth(fab)
        assert 0 < b.lower_gbps <= b.upper_gbps
        c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
        assert c.achievable_time_s is None or c.lower_time_s <= c.achievable_time_s
        assert c.busbw_GBps > 0


def test_cli_solve_prints_all_three(capsys):
    from fabricopt.cli import main

    path = Path(__file__).parents[2] / "topologies" / "dgx-h100-superpod-4su.toml"
    assert main(["solve", str(path)]) == 0
    out = capsys.readouterr().out
    assert "certified" in out and "bisection" in out and "all_reduce" in out


@pytest.mark.parametrize("path", DESIGNS, ids=[p.stem for p in DESIGNS])
def test_cli_show_summarises(path, capsys):
    from fabricopt.cli import main

    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "endpoints" in out and "tier" in out
