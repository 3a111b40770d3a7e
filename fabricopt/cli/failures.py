"""The ``fabricopt failures`` subcommand: what a fabric carries when parts fail, and which
parts matter most (a block of the command line, kept apart to keep the command's module readable).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._checks import did_you_mean
from .._progress import stage_line
from ..cost.layout import place
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric
from ..failures.distribution import FailureDistribution, failure_distribution
from ..failures.models import GroupFailures, Independent, Selected, groups_by
from ..failures.single import FailureTable, criticality, cutting_set, single_failures
from ..failures.sweep import failure_sweep
from ..flow.time_budget import TimeBudget, spending
from ..plot.failures import plot_criticality, plot_failure_distribution, plot_job_failures
from ..plot.image_files import image_path
from ..workload.job_failures import ALL_KINDS, JOB_KINDS, JobFailureTable, job_failures
from ..workload.job_sweep import JobFailureSweep, job_failure_sweep
from ..workload.plan import job_from_mapping
from .words import parse_assignments, progress_arg, seconds_arg

FAILURE_MODES = ("n-1", "criticality", "cut", "sweep", "random", "groups", "select")

#: The flags each ``--mode`` reads, besides ``--time-limit`` and ``--progress`` (every mode
#: takes those); another flag is refused rather than ignored. ``--plot`` draws a ranking or a
#: distribution, which a cutting set and a sweep are not.
MODE_FLAGS = {
    "n-1": ("--kind", "--tiers", "--plot", "--job", "--spares"),
    "criticality": ("--kind", "--tiers", "--plot", "--job", "--spares"),
    "cut": ("--kind", "--tiers", "--cut"),
    "sweep": ("--kind", "--tiers", "--fraction", "--trials", "--seed", "--job", "--spares"),
    "random": ("--kind", "--tiers", "--probability", "--hours", "--trials", "--seed",
               "--metrics", "--plot"),
    "groups": ("--groups", "--metrics", "--plot"),
    "select": ("--kind", "--select", "--weight", "--count", "--trials", "--seed", "--metrics",
               "--plot"),
}
#: Every mode's flags: ``--time-limit`` bounds the whole command, ``--progress`` shows its
#: stage.
EVERY_MODE_FLAGS = ("--time-limit", "--progress")
#: The value a flag has when it is not given (the parser's default is None, so that a flag
#: given is told from one left out).
FLAG_DEFAULTS = {"kind": "links", "fraction": "0.01", "cut": 0.5, "hours": 24.0,
                 "groups": "racks", "trials": 100, "seed": 1, "metrics": "", "count": 1}


def add_failures_parser(sub: Any, load_targets: Callable[[Sequence[str]], list[Fabric]],
                        epilog: str) -> None:
    """Add ``failures`` to the command's subparsers; ``load_targets`` reads its TARGETs (the
    command line's own reader, passed in so this module needs nothing from it)."""
    fl = sub.add_parser(
        "failures", help="what a fabric carries when parts fail, and which parts matter most",
        description="Failure analysis, every answer certified and in Gb/s per GPU. "
        "n-1 (default): every single failure of --kind, one solve per orbit of the fabric's "
        "symmetry; criticality: the same orbits ranked by the throughput lost; cut: failures "
        "that cut throughput by --cut; sweep: --trials random failures at each --fraction; "
        "random: each unit fails with --probability (or its 'afr' attribute over --hours); "
        "groups: every shared-risk group (--groups racks, rows, or a node attribute) failing "
        "alone, its GPUs out of the job; select: --count units chosen among those --select "
        "picks (by name pattern or conditions such as role=switch,tier=spine), weighted by "
        "--weight (every one listed with its probability when --count is 1).", epilog=epilog)
    fl.add_argument("targets", nargs="+", metavar="TARGET [key=value ...]",
                    help="a generator name, design file or saved fabric, then parameters")
    fl.add_argument("--mode", choices=FAILURE_MODES, default="n-1")
    fl.add_argument("--job", default=None, metavar="KEY=VALUE,...",
                    help="n-1, criticality and sweep as a training job sees them: per failure "
                    "orbit (or random draw) its step, tokens/s and action (run degraded, swap "
                    "in a spare, drop a replica, stop), e.g. "
                    "model=llama3-8b,tp=8,global_batch=256,seq_len=8192 "
                    "(TrainingJob's keys); --kind then also takes nvlinks, nvswitches, nics, "
                    "gpus, servers or all (docs/goodput.md)")
    fl.add_argument("--spares", type=int, default=None,
                    help="with --job, spare servers a restart can take (default: the servers "
                    "the job leaves idle)")
    fl.add_argument("--kind", choices=JOB_KINDS + ("all",), default=None,
                    help="what fails: one physical link, one switch with its links, or one "
                    "shared-risk group (default links; --mode random: links or switches)")
    fl.add_argument("--tiers", default=None, metavar="T1,T2",
                    help="only units of these tiers (comma-separated; every mode but "
                    "groups)")
    fl.add_argument("--fraction", default=None, metavar="F1,F2",
                    help="--mode sweep: fractions failed, comma-separated (default 0.01)")
    fl.add_argument("--cut", type=float, default=None, metavar="FRACTION",
                    help="--mode cut: the share of throughput to cut (default 0.5)")
    fl.add_argument("--probability", type=float, default=None,
                    help="--mode random: each unit's failure probability (default: from its "
                    "'afr' attribute, failures per year, over --hours)")
    fl.add_argument("--hours", type=float, default=None,
                    help="--mode random: the window the annual failure rates apply over")
    fl.add_argument("--groups", default=None, metavar="racks|rows|ATTRIBUTE",
                    help="--mode groups: racks or rows of the cost layout's placement, or a "
                    "node attribute such as su or plane (default racks)")
    fl.add_argument("--trials", type=int, default=None,
                    help="--mode sweep, random: draws (default 100)")
    fl.add_argument("--seed", type=int, default=None,
                    help="--mode sweep, random: seed of the draws (default 1)")
    fl.add_argument("--time-limit", type=seconds_arg, default=None,
                    help="seconds for the whole command, split across its fabrics and "
                    "each one's solves (the intact fabric, each failure pattern or draw): a "
                    "solve cut short keeps its certified bracket, is named ('time limit' "
                    "line), and the command exits 1 when a result is left unproven; "
                    "--metrics bisection takes its share too (its stages not expected to "
                    "fit are not begun)")
    fl.add_argument("--metrics", default=None, metavar="routed,bisection",
                    help="--mode random/groups: also ECMP-routed throughput and bisection")
    fl.add_argument("--plot", default=None, metavar="FILE",
                    help="--mode n-1, criticality, random, groups: write the ranking "
                    "(n-1, criticality) or the distribution (random, groups) as an image")
    fl.add_argument("--select", default=None, metavar="SELECTOR",
                    help="--mode select: the units that may fail: switches by name pattern "
                    "('s*') or conditions ('role=switch,tier=spine'); links (--kind links) "
                    "by conditions ('tier=leaf-spine', 'end=r0.*')")
    fl.add_argument("--weight", default=None, metavar="ATTRIBUTE|SEL:W;SEL:W",
                    help="--mode select: how likely each unit is: a numeric attribute "
                    "('afr'), or selectors with weights ('tier=spine:3;tier=leaf:1', a unit "
                    "taking the first it meets, 0 if none); default all alike")
    fl.add_argument("--count", type=int, default=None,
                    help="--mode select: units failing together in a draw (default 1: each "
                    "one listed with its probability)")
    progress_arg(fl, "the pattern or trial being solved and its stage")
    fl.set_defaults(func=lambda args: _cmd_failures(args, load_targets))


def _weights(text: str | None) -> Any:
    """``--weight``: an attribute name, or ``SELECTOR:WEIGHT`` entries separated by ``;``."""
    if text is None or ":" not in text:
        return text
    weights = {}
    for entry in (e.strip() for e in text.split(";") if e.strip()):
        selector, _, number = entry.rpartition(":")
        try:
            weights[selector.strip()] = float(number)
        except ValueError:
            raise FabricOptError(f"--weight entries are SELECTOR:WEIGHT separated by ';' "
                                 f"(tier=spine:3;tier=leaf:1), got {entry!r}") from None
    return weights


def _fractions(text: str) -> list[float]:
    """``--fraction``: comma-separated numbers (their range is checked by the sweep)."""
    try:
        return [float(f) for f in text.split(",")]
    except ValueError:
        raise FabricOptError(f"--fraction must be numbers from 0 to 1, comma-separated "
                             f"(e.g. 0.01,0.05), got {text!r}") from None


def _failure_groups(fab: Fabric, how: str) -> list[Any]:
    """Risk groups for ``--groups``: the placement's racks or rows, or a node attribute."""
    known = sorted({str(k) for _, d in fab.graph.nodes(data=True) for k in d})
    if how not in ("racks", "rows", *known):
        choices = ["racks", "rows", *known]
        raise FabricOptError(f"--groups must be racks, rows or a node attribute of "
                             f"{fab.name!r} ({', '.join(known)}), got {how!r}"
                             + did_you_mean(how, choices))
    if how in ("racks", "rows"):
        where = place(fab)
        labels = where.rack if how == "racks" else where.row
        return groups_by(fab, {v: f"{how[:-1]} {x}" for v, x in zip(where.nodes, labels,
                                                                     strict=True)})
    return groups_by(fab, how)


def _check_mode_flags(args: argparse.Namespace) -> None:
    """Refuse a flag ``--mode`` does not read (it would be ignored), naming the flags it
    takes; then give every flag left out its default."""
    takes = MODE_FLAGS[args.mode]
    for flag in ("--kind", "--tiers", "--fraction", "--cut", "--probability", "--hours",
                 "--groups", "--trials", "--seed", "--metrics", "--plot", "--job", "--spares",
                 "--select", "--weight", "--count"):
        if getattr(args, flag[2:]) is not None and flag not in takes:
            mode = "n-1 (the default)" if args.mode == "n-1" else args.mode
            raise FabricOptError(f"{flag} does not apply to --mode {mode}, which takes "
                                 + ", ".join(takes + EVERY_MODE_FLAGS))
    if args.mode == "select" and args.kind is None:
        args.kind = "switches"  # what a selector of nodes picks
    if args.mode == "select" and (args.select is None or args.kind == "groups"):
        raise FabricOptError("--mode select chooses among --select SELECTOR (switches by "
                             "name or conditions such as role=switch,tier=spine; with --kind "
                             "links, links such as tier=leaf-spine)")
    if args.mode == "random" and args.kind == "groups":
        raise FabricOptError("--kind groups does not apply to --mode random (each link or "
                             "switch fails on its own): give --kind links or switches, or "
                             "--mode groups for shared-risk groups")
    if args.spares is not None and args.job is None:
        raise FabricOptError("--spares applies with --job (the spare servers of a job's "
                             "restart)")
    if args.job is None and args.kind not in (None, "links", "switches", "groups"):
        raise FabricOptError(f"--kind {args.kind} is a failure kind of a job: give --job "
                             "(without one: links, switches or groups)")
    if args.job is not None and args.mode == "sweep" and args.kind not in (None, "links",
                                                                           "switches"):
        raise FabricOptError(f"--kind {args.kind} does not apply to --mode sweep --job, which "
                             "fails links or switches at random: give --kind links or switches")
    if args.plot is not None:  # before any solve: a bare name would be written as NAME.png
        image_path(args.plot, "--plot")
    for name, default in FLAG_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def _cmd_failures(args: argparse.Namespace,
                  load_targets: Callable[[Sequence[str]], list[Fabric]]) -> int:
    _check_mode_flags(args)
    tiers = [t.strip() for t in args.tiers.split(",")] if args.tiers else None
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    code = 0
    fractions = _fractions(args.fraction)
    start = time.perf_counter()
    fabrics = load_targets(args.targets)
    # --time-limit is the whole command's: each fabric gets what is left over the fabrics
    # still to come, split across its own solves (each told how many are to come).
    command = TimeBudget(args.time_limit, solves=len(fabrics), start=start)
    for fab in fabrics:
        fab.validate()
        budget = TimeBudget(command.share(), solves=1)
        with stage_line(args.progress), spending(budget):  # the stage so far, on a terminal
            shown = _analyse(fab, args, tiers, metrics, fractions, {})
        command.finished(fab.name, bool(budget.cut_short))
        if isinstance(shown, JobFailureTable):
            print(shown)
        elif args.mode in ("n-1", "criticality"):
            worst = shown.worst_gbps()
            print(shown)
            if worst is not None:
                print(f"{'N-1 worst case':<17}{worst[0]:.4g} Gb/s per GPU (certified: no "
                      "single failure leaves less)")
        elif args.mode == "cut":
            print("\n".join([f"cutting set      {fab.name}: {100 * args.cut:g}% of "
                             "all-to-all"] + [f"  {f}" for f in shown.failures]
                            + [shown.statement]))
            code = max(code, 0 if shown.reached else 1)
        else:
            print(shown)
        if args.mode != "cut" and not _all_proven(shown):
            code = 1  # a result not proven: its bracket is printed, the exit code says so
        if args.time_limit is not None:
            print(budget.line(whole=args.time_limit))
        if args.plot:
            _plot_failures(shown, args.plot)
        print()
    return code


def _analyse(fab: Fabric, args: argparse.Namespace, tiers: list[str] | None,
             metrics: list[str], fractions: list[float], options: dict[str, Any]) -> Any:
    """What ``--mode`` computes for ``fab``: a table, a cutting set, a sweep or a
    distribution."""
    if args.job is not None:
        job = job_from_mapping(parse_assignments([w for w in args.job.split(",") if w]),
                               "--job")
        if args.mode == "sweep":
            return job_failure_sweep(fab, job, fractions, trials=args.trials, seed=args.seed,
                                     kind=args.kind, tiers=tiers, spares=args.spares)
        kind = ALL_KINDS if args.kind == "all" else args.kind
        return job_failures(fab, job, kind, tiers, spares=args.spares,
                            order="lost" if args.mode == "criticality" else "fabric")
    if args.mode in ("n-1", "criticality"):
        run = single_failures if args.mode == "n-1" else criticality
        return run(fab, kind=args.kind, tiers=tiers, **options)
    if args.mode == "cut":
        return cutting_set(fab, args.cut, kind=args.kind, tiers=tiers, **options)
    if args.mode == "sweep":
        return failure_sweep(fab, fractions, trials=args.trials, seed=args.seed,
                             kind=args.kind, tiers=tiers, **options)
    if args.mode == "random":
        model: Any = Independent("switches" if args.kind == "switches" else "links",
                                 probability=args.probability, hours=args.hours, tiers=tiers)
        return failure_distribution(fab, model, trials=args.trials, seed=args.seed,
                                    metrics=metrics, **options)
    if args.mode == "select":
        try:  # the model's words for its arguments are the command's flags
            chosen = Selected(args.select, kind="links" if args.kind == "links" else
                              "switches", weight=_weights(args.weight), count=args.count)
            return failure_distribution(fab, chosen, trials=None if args.count == 1 else
                                        args.trials, seed=args.seed, metrics=metrics,
                                        **options)
        except InvalidParameterError as exc:
            text = str(exc)
            for name in ("select", "weight", "count"):
                text = text.replace(f"Selected(): {name}", f"--{name}")
            raise FabricOptError(text) from None
    return failure_distribution(fab, GroupFailures(_failure_groups(fab, args.groups)),
                                trials=None, metrics=metrics, **options)


def _all_proven(shown: Any) -> bool:
    """True when every number in ``shown`` (a table, sweep or distribution) was proven."""
    if isinstance(shown, JobFailureTable | JobFailureSweep):
        return True  # steps from certified bounds; nothing left open
    if getattr(shown, "not_solved", 0):
        return False  # draws or patterns the time limit left: not every number is proven
    rows = getattr(shown, "rows", None) or getattr(shown, "trials", None) or getattr(
        shown, "outcomes", None) or []
    return all(r.theta is not None for r in rows)


def _plot_failures(shown: Any, path: str) -> None:
    if isinstance(shown, FailureDistribution):
        ax = plot_failure_distribution(shown)
    elif isinstance(shown, FailureTable):
        ax = plot_criticality(shown)
    elif isinstance(shown, JobFailureTable):
        ax = plot_job_failures(shown)
    else:
        raise ValueError("--plot draws the distribution (--mode random or groups) or the "
                         "ranking (--mode n-1 or criticality)")
    ax.figure.savefig(path, dpi=120)
    print(f"plot written to {path}")


__all__ = ["FAILURE_MODES", "MODE_FLAGS", "add_failures_parser"]
