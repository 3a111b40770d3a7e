"""The ``fabricopt worst-case`` subcommand: the worst permutation each fabric can be given,
under one time limit for the whole command (``docs/worst-case.md``)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..analysis.worst_case import worst_case_permutation
from ..flow.time_budget import TimeBudget
from .words import EXIT_CODES, load_targets, seconds_arg, targets_arg

__all__ = ["add_worst_case_parser"]


def _cmd_worst_case(args: argparse.Namespace) -> int:
    worst = 0
    start = time.perf_counter()
    fabrics = load_targets(args.targets)
    # --time-limit is the whole command's: each fabric gets what is left over the fabrics
    # still to come, then splits it across its own solves.
    budget = TimeBudget(args.time_limit, solves=len(fabrics), start=start)
    for fab in fabrics:
        fab.validate()
        res = worst_case_permutation(fab, iterations=args.iterations, method=args.method,
                                     time_limit=budget.share())
        budget.finished(fab.name, False)
        if args.format == "json":
            print(json.dumps({"name": fab.name, "gpus": len(fab.endpoints),
                              "theta_lower": res.lower, "theta_upper": res.upper,
                              "guaranteed_gbps_per_gpu": res.two_phase_rate_gbps,
                              "tub_upper": res.tub_upper, "exact": res.exact,
                              "status": res.status,
                              "patterns_solved": len(res.tried),
                              "time_limit_s": res.time_limit, "cut_short": res.cut_short,
                              "patterns_skipped": res.skipped}))
        else:
            print(fab.name)
            print(res)
            print()
        if not res.exact:
            worst = 1
    return worst


def add_worst_case_parser(sub: Any) -> None:
    """The ``worst-case`` subcommand's parser."""
    wc = sub.add_parser("worst-case", help="the worst permutation traffic a fabric can get",
                        description="Bracket the throughput of the worst permutation (each "
                        "GPU sends to one other) each fabric can be given: the rate it "
                        "guarantees under any permutation (two-phase routing), the worst "
                        "permutation found (a certified upper end) and the bound between.",
                        epilog=EXIT_CODES)
    targets_arg(wc)
    wc.add_argument("--iterations", type=int, default=4,
                    help="rounds of the worst-permutation search (default 4)")
    wc.add_argument("--method", default="auto", choices=["auto", "lp", "symmetric", "approx"],
                    help="how each permutation's flow is solved (default auto)")
    wc.add_argument("--time-limit", type=seconds_arg, default=None,
                    help="seconds for the whole command, split across its fabrics and each "
                    "one's solves (two-phase rate, bisection, each pattern); a solve cut short "
                    "keeps its certified bracket and is named ('time limit' line); once it "
                    "is spent no pattern is begun (TUB is the upper end): the answer comes "
                    "within 20 %% of it or 0.1 s, whichever is larger, as far as each solve "
                    "stops at the time it is handed")
    wc.add_argument("--format", choices=("table", "json"), default="table",
                    help="readable block (default) or one JSON object per fabric")
    wc.set_defaults(func=_cmd_worst_case)
