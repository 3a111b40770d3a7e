"""The ``fabricopt serve`` subcommand: serving a model on a fabric, at one batch, under a load,
or at the highest rate within latency targets (``docs/serving.md``)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import FabricOptError
from ..fabric import Fabric
from ..workload.hardware import PRECISIONS
from ..workload.models import models as MODEL_NAMES
from ..workload.serving import serving_estimate
from ..workload.serving_capacity import (
    WORKLOAD_KEYS,
    serving_capacity,
    serving_workload,
    simulate_serving,
)
from ..workload.serving_load import LENGTHS
from ..workload.serving_replica import ServingPlan
from .words import target_seconds_arg, tokens_arg

#: Plan flags: flag -> (ServingPlan key, type, help). Any of them fixes the plan.
PLAN_FLAGS = {
    "tp": ("tp", int, "tensor-parallel degree of a replica"),
    "pp": ("pp", int, "pipeline stages of a replica"),
    "ep": ("ep", int, "expert-parallel degree of a replica (wide across servers)"),
    "batch": ("batch", int, "requests a replica decodes at once"),
    "chunk": ("chunk", tokens_arg, "token budget of a step (chunked prefill; 2048 or 2Ki)"),
    "kv-precision": ("kv_precision", str.lower, "precision of the KV cache (default "
                     "--precision)"),
    "prefill-share": ("prefill_share", float, "with --disaggregated, the share of replicas "
                      "prefilling (default: the share that balances prefill and decode)"),
}


def add_serve_parser(sub: Any, load_targets: Callable[[Sequence[str]], list[Fabric]],
                     epilog: str) -> None:
    """Add ``serve`` to the command's subparsers; ``load_targets`` reads its TARGETs."""
    sv = sub.add_parser(
        "serve", help="serving a model: capacity within latency targets, a load, one batch",
        description="Serve a model on each fabric. With --ttft and --tpot: the highest request "
        "rate whose percentile of time to first token and of time per output token meet "
        "them, the plan that reaches it (replica shape, expert parallelism, colocated or "
        "disaggregated, batch, chunk; fixed by the plan flags given), the latencies there "
        "and the cost per million output tokens. With --rate or --trace: that load on the "
        "plan, its percentiles and goodput. Otherwise: one batch of the plan (TTFT, TPOT, "
        "tokens per second, memory, the fabric's phases). With targets, the exit code is 1 "
        "when no plan meets them on some fabric (what the plans reach is printed).",
        epilog=epilog)
    sv.add_argument("targets", nargs="+", metavar="TARGET [key=value ...]",
                    help="generator names, design files (.toml) or saved fabrics, each "
                    "followed by its parameters as key=value")
    sv.add_argument("--model", default=None,
                    help="catalogue name (" + ", ".join(MODEL_NAMES) + ") or a .toml model "
                    "(default: the design file's [serving] table)")
    sv.add_argument("--ttft", type=target_seconds_arg(600, "seconds"), default=None,
                    help="time-to-first-token target, in seconds or with a unit (2s, 500ms)")
    sv.add_argument("--tpot", type=target_seconds_arg(10, "tens of ms"), default=None,
                    help="time-per-output-token target, in seconds or with a unit (50ms)")
    sv.add_argument("--percentile", type=float, default=None,
                    help="the share of requests that must meet the targets (default 0.99)")
    sv.add_argument("--prompt-len", type=tokens_arg, default=None,
                    help="prompt tokens (mean; default 2048; a binary unit too: 2Ki)")
    sv.add_argument("--output-len", type=tokens_arg, default=None,
                    help="output tokens (mean; default 256)")
    sv.add_argument("--lengths", choices=LENGTHS, default=None,
                    help="how lengths spread around their means (default fixed)")
    sv.add_argument("--precision", type=str.lower, choices=PRECISIONS, default=None,
                    help="weights, activations and KV cache (fp4: Blackwell only; default "
                    "bf16; any case)")
    for flag, (_, kind, text) in PLAN_FLAGS.items():
        sv.add_argument(f"--{flag}", type=kind, default=None, help=text)
    sv.add_argument("--disaggregated", action="store_true",
                    help="prefill and decode on separate replicas")
    sv.add_argument("--rate", type=float, default=None,
                    help="simulate this many requests per second (Poisson) on the plan")
    sv.add_argument("--trace", default=None, metavar="CSV",
                    help="simulate a trace: arrival_s, prompt_tokens, output_tokens columns")
    sv.add_argument("--requests", type=int, default=None,
                    help="requests per simulation (default 2000; 1500 per capacity search)")
    sv.add_argument("--seed", type=int, default=None, help="seed of the arrivals (default 0)")
    sv.add_argument("--gpu", default=None, help="catalog GPU key, or its head (h200 for "
                    "h200_sxm; default: the fabric's)")
    sv.add_argument("--years", type=float, default=None,
                    help="years the capex is amortised over (default: token_cost's)")
    sv.add_argument("--usd-per-kwh", type=float, default=None,
                    help="energy price (default: token_cost's)")
    sv.add_argument("--pue", type=float, default=None,
                    help="facility PUE, >= 1 (default: token_cost's)")
    sv.add_argument("--format", choices=("table", "json"), default="table",
                    help="readable block (default) or one JSON object per fabric")
    sv.set_defaults(func=lambda args: _cmd_serve(args, load_targets))


#: What ``serve`` uses for a setting neither a flag nor the design's [serving] table gives.
SERVE_DEFAULTS = {"model": None, "ttft_s": None, "tpot_s": None, "percentile": 0.99,
                  "prompt_len": 2048, "output_len": 256, "lengths": "fixed",
                  "precision": "bf16", "requests": None, "seed": 0, "gpu": None, "plan": None}


def _settings(args: argparse.Namespace, fab: Fabric) -> argparse.Namespace:
    """The fabric's serving settings: the flags given, over its design file's [serving]
    table (a design file's serving workload), over :data:`SERVE_DEFAULTS`."""
    design = fab.design or {}
    table = dict(design.get("serving") or {})
    if table:  # the workload's own check, names the file; the targets may be left out
        where = f"{design.get('file', 'design')}: [serving]"
        checked = serving_workload({"model": None, "ttft_s": 1.0, "tpot_s": 1.0, **table},
                                   where)
        if "plan" in table:
            table["plan"] = checked["plan"]
    flags = {"model": args.model, "ttft_s": args.ttft, "tpot_s": args.tpot,
             "percentile": args.percentile, "prompt_len": args.prompt_len,
             "output_len": args.output_len, "lengths": args.lengths,
             "precision": args.precision, "requests": args.requests, "seed": args.seed,
             "gpu": args.gpu}
    s = {**SERVE_DEFAULTS, **{k: v for k, v in table.items() if k in WORKLOAD_KEYS},
         **{k: v for k, v in flags.items() if v is not None}}
    if s["model"] is None:
        raise FabricOptError("serve: name a model with --model, or give the design file a "
                             "[serving] table with model = ...")
    if (s["ttft_s"] is None) != (s["tpot_s"] is None):
        raise FabricOptError("serve: give both --ttft and --tpot (targets), or neither")
    plan = _plan(args, s["precision"])
    if plan is not None or s["plan"] is None:
        s["plan"] = plan
    return argparse.Namespace(**s)


def _plan(args: argparse.Namespace, precision: str) -> ServingPlan | None:
    given = {key: getattr(args, flag.replace("-", "_"))
             for flag, (key, _, _) in PLAN_FLAGS.items()}
    given = {k: v for k, v in given.items() if v is not None}
    if not given and not args.disaggregated:
        return None
    return ServingPlan(**given, disaggregated=args.disaggregated, precision=precision)


def _cmd_serve(args: argparse.Namespace,
               load_targets: Callable[[Sequence[str]], list[Fabric]]) -> int:
    if args.rate is not None and args.trace is not None:
        raise FabricOptError("serve: give --rate or --trace, not both")
    if args.model is None and not any(str(t).endswith(".toml") for t in args.targets):
        raise FabricOptError("serve: name a model with --model, or give the design file a "
                             "[serving] table with model = ...")
    fabrics = load_targets(args.targets)
    unmet = False  # a fabric on which no plan meets the targets: exit code 1, as solve's
    for fab in fabrics:
        s = _settings(args, fab)
        plan = s.plan
        if s.ttft_s is not None and args.rate is None and args.trace is None:
            c = serving_capacity(fab, s.model, ttft_s=s.ttft_s, tpot_s=s.tpot_s,
                                 percentile=s.percentile, prompt_len=s.prompt_len,
                                 output_len=s.output_len, precision=s.precision,
                                 plan=plan, lengths=s.lengths,
                                 requests=s.requests or 1500, seed=s.seed, gpu=s.gpu,
                                 years=args.years, usd_per_kwh=args.usd_per_kwh, pue=args.pue)
            unmet = unmet or c.plan is None
            if args.format == "json":
                print(json.dumps({**_capacity_json(c), **_request_json(s)}))
            else:
                print(_with_request(str(c), s, args))
        elif args.rate is not None or args.trace is not None:
            load = simulate_serving(
                fab, s.model, plan or ServingPlan(precision=s.precision), rate=args.rate,
                trace=args.trace, requests=s.requests or 2000, prompt_len=s.prompt_len,
                output_len=s.output_len, lengths=s.lengths,
                ttft_s=s.ttft_s if s.ttft_s is not None else math.inf,
                tpot_s=s.tpot_s if s.tpot_s is not None else math.inf, seed=s.seed, gpu=s.gpu)
            row = {"fabric": fab.name, "rate": load.rate, "requests": load.requests,
                   **{f"ttft_p{q}_s": v for q, v in load.ttft_s.items()},
                   **{f"tpot_p{q}_s": v for q, v in load.tpot_s.items()},
                   "goodput": load.goodput, "attainment": load.attainment,
                   "tokens_per_s": load.tokens_per_s}
            if args.format == "json":
                print(json.dumps({**row, **({} if args.trace else _request_json(s))}))
            else:
                print(_with_request(f"{s.model} on {fab.name}: {load.requests:,} requests at "
                                    f"{load.rate:,.4g}/s", s, args))
                print("  TTFT     " + ", ".join(f"p{q} {v:.3g} s"
                                                for q, v in load.ttft_s.items()))
                print("  TPOT     " + ", ".join(f"p{q} {v * 1e3:.3g} ms"
                                                for q, v in load.tpot_s.items()))
                within = ("within the targets" if s.ttft_s is not None or s.tpot_s is not None
                          else "served (no --ttft or --tpot given: every request counts)")
                print(f"  goodput  {load.goodput:,.4g} requests/s {within} "
                      f"({load.attainment:.1%}); {load.tokens_per_s:,.0f} output tokens/s")
        else:
            p = plan or ServingPlan(precision=s.precision)
            e = serving_estimate(fab, s.model, tp=p.tp, ep=p.ep, pp=p.pp, batch=p.batch,
                                 prompt_len=s.prompt_len, output_len=s.output_len,
                                 precision=p.precision, kv_precision=p.kv_precision,
                                 chunk=p.chunk, disaggregated=p.disaggregated, gpu=s.gpu)
            if args.format == "json":
                print(json.dumps({"fabric": fab.name, "ttft_s": e.ttft_s, "tpot_s": e.tpot_s,
                                  "tokens_per_s": e.tokens_per_s,
                                  "memory_gb_per_gpu": e.memory_gb_per_gpu,
                                  "max_batch": e.max_batch, **_request_json(s)}))
            else:
                print(_with_request(str(e), s, args, batch=True))
        if args.format == "table":
            print()
    return 1 if unmet else 0


def _with_request(text: str, s: argparse.Namespace, args: argparse.Namespace,
                  batch: bool = False) -> str:
    """``text`` (an answer as printed) with the request shape it assumed under its first
    line: the prompt and output tokens (the defaults, 2,048 and 256, when none was given)
    and how their lengths spread (``batch``: one batch, every request alike), or the trace
    that gave them."""
    given = args.prompt_len is not None or args.output_len is not None
    how = ["every request of the batch alike" if batch else f"mean; {s.lengths} lengths"]
    how += [] if given else ["the defaults; --prompt-len, --output-len set them"]
    shape = (f"  request   as in the trace {args.trace} (its prompt and output tokens)"
             if args.trace is not None else
             f"  request   {s.prompt_len:,} prompt + {s.output_len:,} output tokens "
             f"({'; '.join(how)})")
    head, _, rest = text.partition("\n")
    return "\n".join([head, shape, *([rest] if rest else [])])


def _request_json(s: argparse.Namespace) -> dict[str, Any]:
    return {"prompt_len": s.prompt_len, "output_len": s.output_len, "lengths": s.lengths}


def _capacity_json(c: Any) -> dict[str, Any]:
    return {"fabric": c.fabric, "model": c.model, "rate": c.rate,
            "plan": c.plan.describe() if c.plan else None,
            "ttft_p50_s": c.ttft_p50_s, "ttft_p90_s": c.ttft_p90_s, "ttft_p99_s": c.ttft_p99_s,
            "tpot_p50_s": c.tpot_p50_s, "tpot_p90_s": c.tpot_p90_s, "tpot_p99_s": c.tpot_p99_s,
            "tokens_per_s": c.tokens_per_s,
            "usd_per_million_tokens": c.usd_per_million_tokens,
            "prefill_replicas": c.prefill_replicas, "decode_replicas": c.decode_replicas,
            **({} if c.plan is not None else {  # none met the targets: what they may ask
                "fastest_tpot_s": c.fastest.tpot_s, "fastest_tpot_plan": c.fastest.tpot_plan,
                "fastest_ttft_s": c.fastest.ttft_s, "fastest_ttft_plan": c.fastest.ttft_plan,
                "notes": c.notes})}


__all__ = ["PLAN_FLAGS", "add_serve_parser"]
