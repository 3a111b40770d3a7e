"""The commands' --time-limit: solve's spare ports line is read only when expected to fit,
worst-case says its status, failures hands its bisections a share of the command's limit, and
each help text states the contract. No timings: the estimates are stood in for."""

import json
import time

import pytest

import fabricopt as fo
from fabricopt.analysis import bisection as bisection_module
from fabricopt.analysis.port_use import SECONDS_PER_ARC, port_use, port_use_fits
from fabricopt.cli import main
from fabricopt.cli import solve as solve_cli


def test_spare_ports_are_not_read_once_the_limit_is_spent(monkeypatch):
    fab = fo.leaf_spine(leaves=1, spines=2, endpoints_per_leaf=4)

    def no_read(*a, **k):
        raise AssertionError("the ports were read after the limit")

    monkeypatch.setattr(solve_cli, "port_use", no_read)
    # Begun a second ago with a limit of a millisecond: nothing is left.
    line = solve_cli._spare_ports(fab, 1e-3, time.perf_counter() - 1.0)
    assert line.startswith("spare ports      not read: --time-limit spent")


def test_spare_ports_read_without_a_limit_as_before():
    # One leaf and two spines: both spines idle (port_use's own example).
    fab = fo.leaf_spine(leaves=1, spines=2, endpoints_per_leaf=4)
    assert solve_cli._spare_ports(fab, None, time.perf_counter()) == port_use(fab).line()
    assert "2 switches no traffic can use" in solve_cli._spare_ports(fab, None, 0.0)


def test_port_use_estimate_is_by_arcs():
    fab = fo.fat_tree(4)
    need = SECONDS_PER_ARC * fab.graph.number_of_edges()  # fat_tree(4): 96 arcs
    assert port_use_fits(fab, need) and not port_use_fits(fab, need * 0.99)


def test_solve_prints_the_not_read_line_when_the_estimate_does_not_fit(monkeypatch, capsys):
    monkeypatch.setattr(solve_cli, "port_use_fits", lambda fab, left: False)
    main(["solve", "leaf_spine", "leaves=1", "spines=2", "endpoints_per_leaf=4",
          "--time-limit", "30", "--throughput-only"])
    assert "spare ports      not read" in capsys.readouterr().out


def test_worst_case_json_says_its_status(capsys):
    main(["worst-case", "fat_tree", "k=4", "--format", "json"])
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # fat_tree(4): non-blocking, every permutation at full rate (Al-Fares et al., 2008).
    assert row["status"] == "optimal" and row["exact"] is True


def test_failures_hands_its_bisections_a_share_of_the_command_limit(monkeypatch, capsys):
    limits = []
    real = bisection_module._bisection

    def spy(fab, endpoints, milp_max_nodes, time_limit, *rest):
        limits.append(time_limit)
        return real(fab, endpoints, milp_max_nodes, time_limit, *rest)

    monkeypatch.setattr(bisection_module, "_bisection", spy)
    main(["failures", "fat_tree", "k=4", "--mode", "random", "--probability", "0.05",
          "--trials", "2", "--seed", "1", "--metrics", "bisection", "--time-limit", "20"])
    capsys.readouterr()
    # Each failed draw's bisection (and the intact fabric's inside it) under the command's
    # 20 s, not bisection_bandwidth's own default of 30 s.
    assert limits and all(t is not None and t <= 20 for t in limits)


@pytest.mark.parametrize("command", ["solve", "worst-case"])
def test_help_states_the_contract(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "within 20 % of it or 0.1 s, whichever is larger" in text
