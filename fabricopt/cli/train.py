"""``fabricopt train``: a training job's step, tokens/s, MFU, cost per token and goodput on a
fabric; and the job flags (``--model``, ``--tp``, ``--job FILE``, ``--plan best``) that
``compare`` reads too."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from .._toml import read_toml
from ..cost.assumptions import cost_assumptions
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric
from ..workload.cost import SECONDS_PER_YEAR, token_cost
from ..workload.goodput import training_goodput
from ..workload.models import models as MODEL_NAMES
from ..workload.plan import job_from_mapping
from ..workload.plan_search import OBJECTIVES, PlanSearch, job_or_search, plan_label
from ..workload.reliability import FailureRates
from ..workload.step import training_step
from .words import (
    EXIT_CODES,
    check_finite,
    load_fabric,
    parse_assignments,
    tokens_arg,
)

#: Plan flags of ``fabricopt train``: flag name -> (TrainingJob key, type, help).
TRAIN_FLAGS = {
    "model": ("model", str, "catalogue name (" + ", ".join(MODEL_NAMES) + ") or a .toml model"),
    "tp": ("tp", int, "tensor-parallel degree"),
    "pp": ("pp", int, "pipeline-parallel degree"),
    "dp": ("dp", int, "data-parallel degree (default: every GPU the others leave)"),
    "ep": ("ep", int, "expert-parallel degree"),
    "cp": ("cp", int, "context-parallel degree"),
    "micro-batch": ("micro_batch", int, "sequences per micro-batch"),
    "global-batch": ("global_batch", int, "sequences per step"),
    "seq-len": ("seq_len", tokens_arg, "tokens per sequence: a whole number or with a "
                "binary unit (8192, 8Ki)"),
    "precision": ("precision", str.lower, "bf16, fp8 or fp4 (any case)"),
    "zero": ("zero", int, "ZeRO stage 0-3"),
    "virtual-stages": ("virtual_stages", int, "model chunks per pipeline rank (interleaved)"),
    "recompute": ("recompute", str.lower, "none, selective or full"),
    "overlap": ("overlap", str.lower, "communication hidden under compute: none, default or "
                "full"),
    "first-stage-layers": ("first_stage_layers", int, "layers of the first pipeline rank"),
    "last-stage-layers": ("last_stage_layers", int, "layers of the last pipeline rank"),
    "recompute-layers": ("recompute_layers", int, "with --recompute full: layers of each "
                         "rank recomputed"),
    "microbatch-group": ("microbatch_group", int, "interleaved schedule: micro-batches run "
                         "back to back per chunk (default pp)"),
    "grad-precision": ("grad_precision", str.lower, "gradients kept and reduced in fp32 or "
                       "bf16"),
    "gpu": ("gpu", str, "catalog GPU key, or its head (h200 for h200_sxm; default: the "
            "fabric's GPUs, else its NVLink)"),
    "compute-efficiency": ("compute_efficiency", float, "fraction of peak the matrix "
                           "multiplies reach (default: the catalog's)"),
}


def check_cost_flags(args: argparse.Namespace) -> None:
    """``--years``, ``--usd-per-kwh`` and ``--pue`` of ``train`` and ``tco``, before any work
    (the cost per token is computed after the step)."""
    for flag, value, low, strict in (("--years", args.years, 0.0, True),
                                     ("--usd-per-kwh", args.usd_per_kwh, 0.0, False),
                                     ("--pue", args.pue, 1.0, False)):
        if not math.isfinite(value) or value < low or (strict and value == low):
            rule = f"{'>' if strict else '>='} {low:g}"
            raise FabricOptError(f"{flag}: must be a finite number {rule}, got {value:g}")


def _cmd_train(args: argparse.Namespace) -> int:
    check_cost_flags(args)
    rates = _goodput_rates(args)  # a bad file is refused before any step is run
    fabrics = load_fabric(args.target, args.params)
    for fab in fabrics:
        table = _plan_table(dict((fab.design or {}).get("job", {})), args)
        if "model" not in table:
            raise FabricOptError("train: name a model with --model, or give the design file a "
                                 "[job] table with model = ...")
        where = f"{fab.design['file']}: [job]" if fab.design and fab.design.get("job") else \
            "train"
        if args.plan == "best" or table.get("plan") is not None:
            _train_best(fab, table, where, args)
            continue
        job = job_from_mapping(table, where)
        step = training_step(fab, job)
        check_finite(fab, _step_figures(step), "the job's flags")
        cost = _token_cost(fab, step, args)  # refused before anything of the step prints
        print(step)
        _print_token_cost(cost, args, step.tokens_per_s)
        if args.goodput:
            _print_goodput(fab, job, cost, rates, args)
        print()
    return 0


def _step_figures(step: Any) -> dict[str, float]:
    """The figures ``train`` prints of a step, by name (each must be finite)."""
    return {"step_s": step.step_s, "step_s_lower": step.step_s_lower,
            "compute_s": step.compute_s, "tokens_per_s": step.tokens_per_s, "mfu": step.mfu,
            "memory_gb_per_gpu": step.memory_gb_per_gpu}


def _token_cost(fab: Fabric, step: Any, args: argparse.Namespace) -> Any:
    """The cost per token of ``step`` on ``fab`` at the cost flags, its figure finite."""
    cost = token_cost(fab, step.tokens_per_s, step.gpu.key, years=args.years,
                      usd_per_kwh=args.usd_per_kwh, pue=args.pue)
    check_finite(fab, {"usd_per_million_tokens": cost.usd_per_million_tokens},
                 f"--years {args.years:g}, --usd-per-kwh {args.usd_per_kwh:g}, --pue "
                 f"{args.pue:g}")
    return cost


def _print_token_cost(cost: Any, args: argparse.Namespace, tokens_per_s: float) -> None:
    """The cost per million tokens and the total it spreads, in parts a reader can add up:
    capex, energy (power x PUE x hours x price), maintenance (a share of capex a year) and
    replacements, over the seconds of the years, at the step's tokens per second."""
    t = cost.tco
    seconds = cost.years * SECONDS_PER_YEAR
    total = cost.usd_per_s * seconds
    # The servers' parts count where the total holds them (a GPU with no catalog system
    # leaves them out of it, though the TCO may price the fabric's own servers).
    servers = t is not None and t.cluster_total_usd is not None and math.isclose(
        total, t.cluster_total_usd, rel_tol=1e-9)
    servers_usd = cost.servers_capex_usd if servers else 0.0
    capex = cost.network_capex_usd + servers_usd
    if t is None:  # no total of ownership to break down: the inputs as before
        print(f"  cost           ${cost.usd_per_million_tokens:.4g} per million tokens "
              f"(capex over {cost.years:g} years ${capex:,.0f}; {cost.power_w / 1e3:,.0f} kW "
              f"at ${args.usd_per_kwh:g}/kWh)")
    else:
        energy = t.energy_usd + ((t.servers_energy_usd or 0.0) if servers else 0.0)
        upkeep = t.maintenance_usd + ((t.servers_maintenance_usd or 0.0) if servers else 0.0)
        print(f"  cost           ${cost.usd_per_million_tokens:.4g} per million tokens: "
              f"${total:,.0f} over {seconds:,.0f} s ({cost.years:g} "
              f"years) at {tokens_per_s:,.0f} tokens/s, of which")
        print(f"    capex        ${capex:,.0f} (network ${cost.network_capex_usd:,.0f}, "
              f"servers ${servers_usd:,.0f})")
        print(f"    energy       ${energy:,.0f} ({cost.power_w / 1e3:,.0f} kW x PUE {t.pue:g} "
              f"x {cost.years * SECONDS_PER_YEAR / 3600:,.0f} h at ${t.usd_per_kwh:g}/kWh)")
        print(f"    maintenance  ${upkeep:,.0f} ({t.maintenance:.0%} of capex a year)")
        print(f"    replacements ${t.replacement_usd:,.0f} (the network's optics and cables at "
              "their failure rates)")
    for note in cost.notes:
        print(f"  note: {note}")


def _goodput_rates(args: argparse.Namespace) -> FailureRates | None:
    """``--reliability`` read (None: the shipped rates); ``--reliability`` and ``--spares``
    refused without ``--goodput``, which alone reads them."""
    if not args.goodput:
        for flag, value in (("--reliability", args.reliability), ("--spares", args.spares)):
            if value is not None:
                raise FabricOptError(f"train: {flag} applies with --goodput")
        return None
    if args.spares is not None and args.spares < 0:
        raise FabricOptError(f"train: --spares must be a whole number >= 0, got {args.spares}")
    return FailureRates.load(args.reliability) if args.reliability else None


def _print_goodput(fab: Fabric, job: Any, cost: Any, rates: FailureRates | None,
                   args: argparse.Namespace) -> None:
    """``train --goodput``: the job under the failure rates (``--reliability`` over the
    shipped ones), and the cost per million tokens with the expected downtime."""
    g = training_goodput(fab, job, failure_model=rates, spares=args.spares)
    print(g)
    print(f"  with downtime  ${cost.usd_per_million_tokens / g.goodput:.4g} per million tokens "
          f"(goodput {100 * g.goodput:.1f} %)")


def _train_best(fab: Fabric, table: dict[str, Any], where: str,
                args: argparse.Namespace) -> None:
    """``train --plan best``: the plan flags given (and the design file's plan keys) become
    constraints of :func:`~fabricopt.best_plan`, beside ``--constraint`` ones."""
    constraints = dict(table.pop("constraints", None) or {})
    constraints.update(parse_assignments(args.constraint or []))
    table.update(plan="best", constraints=constraints, years=args.years,
                 usd_per_kwh=args.usd_per_kwh, pue=args.pue)
    if args.objective is not None:
        table["objective"] = args.objective
    found = PlanSearch.from_mapping(table, where).run(fab)
    check_finite(fab, _step_figures(found.step), "the job's flags")
    cost = _token_cost(fab, found.step, args)
    print(f"best plan      {plan_label(found.job)}")
    print(found.step)
    _print_token_cost(cost, args, found.step.tokens_per_s)
    counts = ", ".join(f"{n:,} {s}" for s, n in found.counts.items())
    print(f"  plans          {len(found.table):,} in {found.seconds:.1f} s: {counts}")
    for note in found.notes:
        print(f"  note: {note}")
    print()
    print(found.to_table(args.top))
    print()


def add_train_parser(sub: Any) -> None:
    train = sub.add_parser("train", help="step time, tokens/s, MFU and cost per token of a "
                           "training job on a fabric",
                           description="Run a training job's step on each fabric: compute, "
                           "communication per parallel dimension (certified lower bound and "
                           "expected time, binding tier), tokens per second, MFU, memory per "
                           "GPU and cost per million tokens. The job is the design file's "
                           "[job] table, with these flags replacing its keys. With --plan "
                           "best, the plans the fabric allows are searched for the best and "
                           "the plan flags given fix those dimensions.",
                           epilog=EXIT_CODES)
    train.add_argument("target", metavar="TARGET",
                       help="generator name, design file (.toml) or saved fabric")
    train.add_argument("params", nargs="*", metavar="key=value", help="generator parameters")
    _add_plan_flags(train)
    train.add_argument("--objective", choices=list(OBJECTIVES), default=None,
                       help="with --plan best, what the best plan maximises or minimises "
                       "(default tokens_per_s)")
    train.add_argument("--top", type=int, default=10,
                       help="with --plan best, rows of the plan table to print (default 10)")
    train.add_argument("--goodput", action="store_true",
                       help="also the job under failures: interruptions per day, checkpoint "
                       "interval, effective training time ratio, tokens per day and the cost "
                       "per million tokens with the downtime (docs/goodput.md)")
    train.add_argument("--reliability", metavar="FILE", default=None,
                       help="with --goodput, [reliability.KIND] failure rates merged over the "
                       "shipped ones")
    train.add_argument("--spares", type=int, default=None,
                       help="with --goodput, spare servers a restart can take (default: the "
                       "servers the job leaves idle)")
    add_cost_flags(train, "years the cluster's cost is spread over")
    train.set_defaults(func=_cmd_train)


def _add_plan_flags(parser: Any) -> None:
    """The flags of a training plan (``train`` and ``compare``): each plan field, sequence
    parallelism, and the plan search with its constraints."""
    for flag, (_, kind, text) in TRAIN_FLAGS.items():
        parser.add_argument(f"--{flag}", type=kind, default=None, help=text)
    parser.add_argument("--no-sequence-parallel", action="store_true",
                        help="all-reduce tensor traffic instead of reduce-scatter/all-gather")
    parser.add_argument("--plan", choices=["best"], default=None,
                        help="best: search the plans each fabric allows for the best (see "
                        "fabricopt.best_plan); the plan flags given become constraints")
    parser.add_argument("--constraint", action="append", metavar="KEY=VALUE",
                        help="with --plan best, a constraint such as max_tp=16, "
                        "'pp=[8,16]' or min_mfu=0.4 (repeat for more)")


def _plan_table(table: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``table`` (a job's keys) with the plan flags given written over it."""
    for flag, (key, _, _) in TRAIN_FLAGS.items():
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            table[key] = value
    if args.no_sequence_parallel:
        table["sequence_parallel"] = False
    return table


def add_job_flags(parser: Any) -> None:
    """The flags that give ``compare`` a training job (``compare(job=...)``): a job file,
    the plan flags of ``train``, or a plan search."""
    group = parser.add_argument_group(
        "training job", "Run a job on every design (the training metric, added to --metrics): "
        "a job file, or --model with the plan flags (they replace the file's keys); --plan "
        "best judges each design by its own best plan. The report gets a training section "
        "and its verdict names the cheapest design per token.")
    group.add_argument("--job", metavar="FILE", default=None,
                       help="TOML file with a [job] table (or a job's keys at its top), as a "
                       "design file's [job]")
    _add_plan_flags(group)
    group.add_argument("--objective", choices=list(OBJECTIVES), default=None,
                       help="with --plan best, what the best plan maximises or minimises")


def job_of_flags(args: argparse.Namespace) -> tuple[Any, str] | None:
    """The job the flags of :func:`add_job_flags` give, checked before any work (errors name
    the flag or the job file and its key), and where it came from; None without one."""
    table: dict[str, Any] = {}
    where = "--model/--tp flags"
    if args.job:
        data = read_toml(args.job, FabricOptError, "job file")
        table = dict(data["job"]) if isinstance(data.get("job"), dict) else dict(data)
        where = f"--job {args.job}: [job]" if "job" in data else f"--job {args.job}"
    table = _plan_table(table, args)
    searching = args.plan == "best" or "plan" in table
    if not searching and (args.constraint or args.objective):
        raise FabricOptError("--constraint and --objective choose among plans: add --plan best")
    if not table:
        return None
    if "model" not in table:
        raise FabricOptError(f"{where}: name a model with --model (or model = ... in the job "
                             "file); models: " + ", ".join(MODEL_NAMES))
    if searching:
        constraints = dict(table.pop("constraints", None) or {})
        constraints.update(parse_assignments(args.constraint or []))
        table.update(plan="best", constraints=constraints)
        if args.objective is not None:
            table["objective"] = args.objective
    try:
        return job_or_search(table, where), where
    except InvalidParameterError as exc:  # the job's words for its fields, the command's
        raise FabricOptError(_in_flag_words(str(exc), args, where)) from None


def _in_flag_words(message: str, args: argparse.Namespace, where: str) -> str:
    """A job's error about one of its fields, said of the flag that gave it (``--tp``,
    ``--constraint``) or of the job file's key."""
    found = re.match(r"(TrainingJob|PlanSearch)\(\): (\w+)(?:: model\(\): name)? (.*)",
                     message, re.S)
    if not found:
        return message
    key, rest = found.group(2), found.group(3)
    flags = {k: f for f, (k, _, _) in TRAIN_FLAGS.items()}
    if key == "constraints" and args.constraint:
        return f"--constraint: {rest}"
    if key in flags and getattr(args, flags[key].replace("-", "_")) is not None:
        return f"--{flags[key]} {rest}"
    return f"{where}: {key} {rest}"


def add_cost_flags(parser: Any, years_help: str) -> None:
    """``--years``, ``--usd-per-kwh`` and ``--pue``, their defaults the cost model's one set
    of assumptions (``fo.cost_assumptions()``, docs/cost.md#assumptions), as in the API."""
    a = cost_assumptions()
    parser.add_argument("--years", type=float, default=a.years,
                        help=f"{years_help} (default {a.years:g}, fo.cost_assumptions())")
    parser.add_argument("--usd-per-kwh", type=float, default=a.usd_per_kwh,
                        help=f"electricity price (default {a.usd_per_kwh:g})")
    parser.add_argument("--pue", type=float, default=a.pue,
                        help=f"facility power usage effectiveness, >= 1 (default {a.pue:g})")


__all__ = ["TRAIN_FLAGS", "add_cost_flags", "add_job_flags", "add_train_parser", "check_cost_flags",
           "job_of_flags"]
