"""What ``fabricopt train`` prints can be added up by hand: the step from its parts (an exposed
time that includes the pipeline bubble says so), and the cost per million tokens from the
total cost's parts (capex, energy with its PUE, maintenance at its rate, replacements), as a
new user tried to."""

import re

import pytest

from fabricopt.cli import main

ARGS = ["train", "superpod", "scalable_units=1", "--model", "llama3-8b", "--tp", "2", "--pp",
        "2", "--global-batch", "256", "--seq-len", "4096"]


def _number(text, label):
    """The first number after ``label`` in ``text`` (commas dropped)."""
    return float(re.search(re.escape(label) + r"\s*\$?([0-9][0-9,]*\.?[0-9]*(?:e[-+]?\d+)?)",
                           text).group(1).replace(",", ""))


@pytest.fixture(scope="module")
def out():
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(ARGS) == 0
    return buffer.getvalue()


def test_the_step_adds_up_from_the_line_that_gives_its_parts(out):
    step = _number(out, "step")
    compute, bubble = _number(out, "compute"), _number(out, "bubble")
    exposed = _number(out, "exposed communication")
    in_bubble = float(re.search(r"\(([0-9.e-]+) s of it in the bubble\)", out).group(1))
    # PP 2 with 256 / 64 = 4 micro-batches per replica: bubble B = (2 - 1) / 4 = 0.25. The
    # tensor-parallel time runs on every micro-batch, so the bubble stretches it too: it is
    # counted in both the bubble and the exposed time, and the line says how much. Printed to
    # 4 significant figures, so the sum holds to about 1e-3 relative.
    assert compute + bubble + exposed - in_bubble == pytest.approx(step, rel=2e-3)


def test_an_exposed_time_above_its_expected_one_says_it_includes_the_bubble(out):
    tp = next(line for line in out.splitlines() if line.strip().startswith("tp "))
    expected, exposed = _number(tp, "expected"), _number(tp, "exposed")
    # x(1 + 0.25) on every micro-batch (docs/workload.md, the step's schedule).
    assert "incl. bubble x1.25" in tp and exposed == pytest.approx(expected * 1.25, rel=2e-3)
    # The data-parallel all-reduce runs once a step, after the pipeline: no bubble in it.
    dp = next(line for line in out.splitlines() if line.strip().startswith("dp "))
    assert "bubble" not in dp


def test_the_cost_per_million_tokens_is_rebuilt_from_what_is_printed(out):
    per_million = _number(out, "cost")
    total, seconds = _number(out, "per million tokens:"), _number(out, "over")
    tokens_per_s = _number(out, "years) at")
    # 5 years x 365.25 days x 86,400 s = 157,788,000 s (the cost model's default years).
    assert seconds == 5 * 365.25 * 86400
    assert 1e6 * total / seconds / tokens_per_s == pytest.approx(per_million, rel=1e-3)
    parts = [_number(out, f"    {p}") for p in ("capex", "energy", "maintenance", "replacements")]
    # Printed to the dollar: four roundings of at most $0.5 each.
    assert sum(parts) == pytest.approx(total, abs=2.0)
    capex, energy, upkeep, _ = parts
    # Maintenance at 10% of capex a year, over 5 years (the cost model's default rate).
    assert "(10% of capex a year)" in out and upkeep == pytest.approx(capex * 0.10 * 5, abs=1.0)
    # Energy = kW x PUE 1.3 x 43,830 h (5 years of 8,766 h) x $0.08/kWh; the kW is printed
    # whole, so the product holds to 0.5 kW in 343.
    kw = _number(out, "energy       $" + f"{energy:,.0f}" + " (")
    assert "x PUE 1.3 x 43,830 h at $0.08/kWh" in out
    assert kw * 1.3 * 43830 * 0.08 == pytest.approx(energy, rel=0.5 / 343)


def test_servers_the_total_leaves_out_are_not_in_its_parts(capsys):
    # A job GPU with no catalog system: token_cost's total is the network's alone, while the
    # TCO may still price the fabric's own servers. The printed parts must add up to the
    # printed total: network capex 100 + energy 10 + maintenance 50 + replacements 1 = 161.
    from types import SimpleNamespace

    from fabricopt.cli.train import _print_token_cost
    from fabricopt.workload.cost import SECONDS_PER_YEAR

    tco = SimpleNamespace(energy_usd=10.0, maintenance_usd=50.0, replacement_usd=1.0,
                          servers_energy_usd=7.0, servers_maintenance_usd=9.0,
                          cluster_total_usd=161.0 + 1000 + 7 + 9, pue=1.3, usd_per_kwh=0.08,
                          maintenance=0.1)
    cost = SimpleNamespace(tco=tco, years=1.0, usd_per_s=161.0 / SECONDS_PER_YEAR,
                           usd_per_million_tokens=1.0, network_capex_usd=100.0,
                           servers_capex_usd=1000.0, power_w=1000.0, notes=())
    _print_token_cost(cost, SimpleNamespace(usd_per_kwh=0.08), tokens_per_s=1.0)
    out = capsys.readouterr().out
    parts = [_number(out, f"    {p}") for p in ("capex", "energy", "maintenance", "replacements")]
    assert sum(parts) == pytest.approx(_number(out, "per million tokens:")) == 161.0
    assert "servers $0)" in out
