"""Stage reports of a long evaluation (fabricopt._stages) and the status line that shows them
(fabricopt._progress): in order, brackets that never widen, silent and free when nobody
listens, nothing on a stderr that is no terminal."""

from __future__ import annotations

import itertools
import threading

import pytest

import fabricopt as fo
from fabricopt import _stages
from fabricopt._progress import stage_line
from fabricopt._stages import StageEvent, listening, stage_report
from fabricopt.cli import main
from fabricopt.study.execution import Progress


def _never_widens(events: list[StageEvent]) -> None:
    for before, after in itertools.pairwise(events):
        assert after.lower >= before.lower and after.upper <= before.upper


def _events(fab: fo.Fabric, **options) -> tuple[list[StageEvent], fo.FlowResult]:
    events: list[StageEvent] = []
    with listening(events.append):
        result = fo.max_concurrent_flow(fab, **options)
    return events, result


def test_bounds_then_lp_in_order_with_a_narrowing_bracket():
    # jellyfish(12, 4, 2, seed=5): the bounds stage proves [16.67, 17.39] (routed flow below,
    # a cut above) and leaves a gap, so the LP runs (see test_bounds_first's tiny time limit).
    fab = fo.jellyfish(12, 4, 2, seed=5)
    events, result = _events(fab, method="lp", bounds_first=True)
    assert [e.stage for e in events] == ["bounds", "bounds", "LP", "done"]
    _never_widens(events)
    assert events[1].upper > events[1].lower > 0  # the stage's own bracket, open
    last = events[-1]
    assert last.detail == "optimal"
    # The last bracket is the result's, or tighter where the stage proved more (both sides
    # are certified bounds on one theta).
    assert result.lower <= last.lower <= last.upper <= result.upper
    assert fo.check_certificate(fab, result).ok


def test_approximate_rounds_report_their_bracket():
    fab = fo.jellyfish(switches=12, network_ports=4, endpoints_per_switch=2, seed=1)
    events, result = _events(fab, method="approx", gap=1e-3)
    rounds = [e for e in events if e.detail.startswith("round")]
    assert len(rounds) >= 2 and events[-1].stage == "done"
    assert [int(e.detail.split()[1]) for e in rounds] == list(range(1, len(rounds) + 1))
    _never_widens(events)
    assert result.lower <= events[-1].lower <= events[-1].upper <= result.upper


def test_a_report_keeps_the_tighter_side():
    seen: list[StageEvent] = []
    report = _stages.StageReport(seen.append)
    report("bounds", 0.2, 0.5)
    report("LP", 0.1, 0.6)  # looser on both sides: the bracket stays [0.2, 0.5]
    report("LP", 0.3, None)
    assert [(e.lower, e.upper) for e in seen] == [(0.2, 0.5), (0.2, 0.5), (0.3, 0.5)]


def test_nobody_listening_builds_no_report(monkeypatch):
    # Without a listener the engine gets the shared silent report: no StageReport (and so no
    # StageEvent) is ever made during a solve.
    def refuse(*args, **kwargs):
        raise AssertionError("a report was built with nobody listening")

    monkeypatch.setattr(_stages, "StageReport", refuse)
    assert not stage_report()
    r = fo.max_concurrent_flow(fo.jellyfish(12, 4, 2, seed=5), method="lp", bounds_first=True)
    assert r.exact


def test_listeners_are_per_thread():
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def evaluate(name: str) -> None:
        with listening(lambda e: seen[name].append(e.stage)):
            stage_report()(name)

    threads = [threading.Thread(target=evaluate, args=(n,)) for n in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": ["a"], "b": ["b"]}


def test_no_line_when_stderr_is_no_terminal(capsys):
    with stage_line(None) as line:
        fo.max_concurrent_flow(fo.ring(6))
    assert line is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("flag, shown", [([], False), (["--progress"], True)])
def test_cli_solve_shows_stages_only_when_asked_or_on_a_terminal(capsys, flag, shown):
    # capsys's stderr is no terminal: the default shows nothing, --progress forces the line.
    assert main(["solve", "leaf_spine", "leaves=4", "spines=2", "endpoints_per_leaf=3",
                 "--throughput-only", *flag]) == 0
    err = capsys.readouterr().err
    assert ("done (optimal)" in err) is shown
    if not shown:
        assert err == ""


def test_compare_bar_watches_its_tasks_only_when_shown(capsys):
    def work(task):
        return fo.max_concurrent_flow(fo.ring(6)).theta

    hidden = Progress(False, "compare", total=1)
    assert hidden.watched(work) is work
    shown = Progress(True, "compare", total=1)
    assert shown.watched(work)(None) == pytest.approx(8 / 36)  # ring(6): 8 / n^2
    shown.close()
    assert "done (optimal)" in capsys.readouterr().err


def test_batches_of_solves_say_which_one_runs():
    """A failure sweep names each trial it solves, a distribution each pattern, collective
    bounds themselves; the solves inside report their own stages between them."""
    events: list[StageEvent] = []
    with listening(events.append):
        fo.failure_sweep(fo.ring(6), [1 / 6], trials=2, seed=1, symmetry=False)
        fo.collective_bounds(fo.ring(6), "all_reduce", message_bytes=2**20)
    sweeps = [e for e in events if e.stage == "failure sweep"]
    assert [e.detail for e in sweeps] == ["fraction 0.166667, trial 1 of 2",
                                          "fraction 0.166667, trial 2 of 2"]
    assert any(e.stage == "all_reduce bounds" and e.detail == "6 GPUs" for e in events)


def test_cli_failures_shows_its_trials_when_asked(capsys):
    assert main(["failures", "ring", "n=6", "--mode", "sweep", "--fraction", "0.2",
                 "--trials", "2", "--progress"]) == 0
    assert "failure sweep" in capsys.readouterr().err


def test_a_bisection_reports_its_steps_in_gbps():
    """bisection_bandwidth names each step with its bracket in Gb/s, never widening: a ring
    of 8 unit links, bisection 2 (any split cuts two links, one arc each way)."""
    events: list[StageEvent] = []
    with listening(events.append):
        fo.bisection_bandwidth(fo.ring(8))
    mine = [e for e in events if e.quantity == "bisection Gb/s"]
    assert mine[0].stage == "bisection: cuts"
    assert mine[-1].upper == 2.0
    _never_widens(mine)
