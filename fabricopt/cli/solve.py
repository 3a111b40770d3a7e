"""The ``fabricopt solve`` subcommand: certified throughput, bisection and collective bounds
of each fabric named (a block of the command line, kept apart to keep the command's module
readable)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .._progress import stage_line
from ..analysis.bisection import bisection_bandwidth
from ..analysis.port_use import port_use, port_use_fits
from ..collectives import COLLECTIVES, collective_bounds
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric
from ..failures.engine import max_concurrent_flow
from ..flow.approx.core import check_gap
from ..routing import routed_flow
from .words import (
    EXIT_CODES,
    FORMATS,
    check_finite,
    load_targets,
    make_traffic,
    parse_collectives,
    print_rows,
    progress_arg,
    seconds_arg,
    size_arg,
    targets_arg,
)

__all__ = ["add_solve_parser"]


def add_solve_parser(sub: Any) -> None:
    """The ``solve`` subcommand's parser."""
    solve = sub.add_parser("solve", help="certified throughput, bisection and collective bounds",
                           description="Compute the largest fraction theta of a traffic "
                           "pattern each fabric carries at once, with a certified bracket, "
                           "the per-GPU bandwidth and the binding tier; then the bisection "
                           "bandwidth and the collective bounds. A result that is not proven "
                           "prints 'unknown' with its certified bracket.", epilog=EXIT_CODES)
    targets_arg(solve)
    solve.add_argument("--traffic", default="all-to-all",
                       help="all-to-all (default), permutation[:SEED], longest-matching")
    solve.add_argument("--method", default="auto", choices=["auto", "lp", "symmetric", "approx"],
                       help="auto (default): symmetric where a claim holds, the exact LP "
                       "where it fits, else approx (a certified bracket to --gap)")
    solve.add_argument("--gap", type=float, default=0.01,
                       help="relative gap for --method approx (default 0.01)")
    solve.add_argument("--backend", default="highs", choices=["highs", "highspy", "pulp"])
    solve.add_argument("--solver", default=None,
                       help="highs: choose, simplex or ipm; highspy: simplex, ipm or pdlp; "
                       "pulp: a pulp solver name")
    solve.add_argument("--time-limit", type=seconds_arg, default=None,
                       help="seconds per solve (the throughput, then the bisection): each "
                       "answers within 20 %% of it or 0.1 s, whichever is larger, with its "
                       "certified bracket and a status; the spare ports line is read only "
                       "when expected to fit in what the last solve left")
    solve.add_argument("--message-bytes", type=size_arg, default=2.0**30, metavar="SIZE",
                       help="buffer size of the collective bounds, with a unit: 1GiB "
                       "(default), 512MB, 1e9")
    solve.add_argument("--collective", default="all_reduce", metavar="NAMES",
                       help="collectives to bound, comma-separated: " + ", ".join(COLLECTIVES)
                       + ", or all (default: all_reduce)")
    solve.add_argument("--routing", choices=("ecmp", "wcmp", "hash", "static"), default=None,
                       help="also route the traffic as deployed and print its theta beside "
                       "the optimum (routing efficiency)")
    solve.add_argument("--trials", type=int, default=100,
                       help="hashed trials for --routing hash (default 100)")
    solve.add_argument("--seed", type=int, default=0, help="seed of the hashed trials")
    solve.add_argument("--throughput-only", action="store_true",
                       help="skip the bisection and collective bounds")
    solve.add_argument("--format", choices=FORMATS, default="table",
                       help="table (readable blocks, default), or one row per fabric as csv, "
                       "markdown or json")
    progress_arg(solve, "the stage of a long solve and its bracket so far")
    solve.set_defaults(func=_cmd_solve)


def _cmd_solve(args: argparse.Namespace) -> int:
    try:  # the flag named, before any work (nan fails the rule too)
        check_gap("--gap", args.gap)
    except InvalidParameterError:
        raise FabricOptError(f"--gap: must be a number with 0 < gap < 1 (a relative gap, e.g. "
                             f"0.01); got {args.gap:g}") from None
    options: dict[str, Any] = {}
    if args.solver:
        options["solver"] = args.solver
    collectives = parse_collectives(args.collective)
    fabrics = load_targets(args.targets)
    worst = 0
    rows = []
    for fab in fabrics:
        fab.validate()
        traffic = make_traffic(fab, args.traffic)
        # The stage and bracket so far of every part, on a terminal, until the answers print.
        with stage_line(args.progress):
            last = time.perf_counter()  # the throughput's start: its limit counts from here
            result = max_concurrent_flow(fab, traffic, method=args.method,
                                         backend=args.backend, time_limit=args.time_limit,
                                         gap=args.gap, progress=args.progress, **options)
            bisection, bounds = None, []
            routed = None
            if args.routing:
                routed = routed_flow(fab, traffic, routing=args.routing,
                                     trials=args.trials if args.routing == "hash" else 1,
                                     seed=args.seed)
                routed.optimum = result
            if not args.throughput_only:
                last = time.perf_counter()  # the bisection, the last solve: its limit's start
                bisection = bisection_bandwidth(fab, time_limit=args.time_limit)
                bounds = [collective_bounds(fab, c, message_bytes=args.message_bytes,
                                            expected=True) for c in collectives]
            unused = _spare_ports(fab, args.time_limit, last) if args.format == "table" else None
        # A figure that would print as inf (links of 1e300 Gb/s) is refused, with the reason.
        check_finite(fab, _figures(result, bisection, bounds),
                     f"--message-bytes {args.message_bytes:g}")
        share = traffic.crossing_share(fab)
        if args.format == "table":
            print(with_network_line(str(result), network_line(result, share)))
            if unused is not None:
                print(unused)
            if routed is not None:
                print()
                print(routed)
            if bisection is not None:
                print(bisection)
                if (line := bisection_line(bisection, args.time_limit)) is not None:
                    print(line)
            for b in bounds:
                print(b)
            print()
        else:
            rows.append(solve_row(fab, result, bisection, bounds, routed, share))
        if result.status not in ("optimal", "inexact", "disconnected") or (
                bisection is not None and
                bisection_status(bisection) in ("time_limit", "capped")):
            worst = 1
    if rows:
        print_rows(rows, args.format)
    return worst


def _spare_ports(fab: Fabric, time_limit: float | None, start: float) -> str | None:
    """The spare ports line (structure alone, no LP), or None when nothing is spare; under
    ``time_limit``, read only when expected to end within what the last solve (begun at
    ``start``) left of it, else a line that says it was not read."""
    left = None if time_limit is None else time_limit - (time.perf_counter() - start)
    if not port_use_fits(fab, left):
        return ("spare ports      not read: --time-limit spent (run without it to read "
                "them)")
    return port_use(fab).line()


def _figures(result: Any, bisection: Any, bounds: list[Any]) -> dict[str, Any]:
    """The proven figures ``solve`` prints, by name: each must be finite (an upper end not
    proven is infinite on purpose and is left out)."""
    figures: dict[str, Any] = {"theta": result.theta, "theta_lower": result.lower}
    if result.theta is not None:
        figures["per_endpoint_gbps"] = result.per_endpoint_gbps
    if bisection is not None:
        figures |= {"bisection_gbps": bisection.lower_gbps,
                    "bisection_gbps_upper": bisection.upper_gbps}
    for b in bounds:
        if getattr(b, "disconnected", False):
            continue  # infinite on purpose: the report says which GPUs cannot meet
        figures |= {f"{b.collective} {k}": getattr(b, k) for k in (
            "lower_time_s", "achievable_time_s", "algbw_GBps", "busbw_GBps")}
    return figures


def network_line(result: Any, share: float) -> str | None:
    """The line under ``per endpoint`` that says how much of it crosses the network, so it
    reads against a NIC's speed (None where every demand does: nothing to tell apart)."""
    if share >= 1.0:
        return None
    if share <= 0.0:
        return ("over network     none: every pair of GPUs shares a scale-up domain (the "
                "figure above is NVLink/UALink only)")
    rest = f"the rest, {1 - share:.1%} of the traffic, stays on NVLink/UALink in its domain"
    if result.theta is not None:
        return (f"over network     {result.per_endpoint_gbps * share:.6g} Gb/s per direction, "
                f"mean per GPU ({rest})")
    bracket = result.per_endpoint_gbps_bracket
    if bracket is None:
        return None
    return (f"over network     unknown: {bracket[0] * share:.6g} to {bracket[1] * share:.6g} Gb/s "
            f"per direction, mean per GPU ({rest})")


def with_network_line(text: str, line: str | None) -> str:
    """``text`` (a result as printed) with ``line`` right under its ``per endpoint`` line.

    >>> print(with_network_line("theta 1\\nper endpoint 411\\nbinding tier x", "over network 400"))
    theta 1
    per endpoint 411
    over network 400
    binding tier x
    """
    if line is None:
        return text
    lines = text.split("\n")
    at = next((i + 1 for i, x in enumerate(lines) if x.startswith("per endpoint")), len(lines))
    return "\n".join([*lines[:at], line, *lines[at:]])


def bisection_status(bisection: Any) -> str:
    """``"exact"``; ``"bracket"``, a certified bracket every stage that applies left open,
    ran to its end (an answer: the bisection lies in it); ``"time_limit"``, open when the
    time limit ran out (a stage skipped or cut short: more time may narrow it); or
    ``"capped"``, open where a search stopped at its work cap with no time limit. Read from
    what the bisection recorded (``BisectionResult.stopped_short``), not from the flags.

    >>> from types import SimpleNamespace as S
    >>> [bisection_status(S(exact=e, stopped_short=why)) for e, why in
    ...  ((True, ""), (False, ""), (False, "time limit"), (False, "work cap"))]
    ['exact', 'bracket', 'time_limit', 'capped']
    """
    if bisection.exact:
        return "exact"
    why = getattr(bisection, "stopped_short", "")
    return {"time limit": "time_limit", "work cap": "capped"}.get(why, "bracket")


def bisection_line(bisection: Any, time_limit: float | None) -> str | None:
    """What an open bisection bracket means, in a line (None when exact)."""
    # The bisection's own words (exact, bracket, time_limit, capped), not a solver status.
    stop = bisection_status(bisection)
    if stop == "time_limit":
        limit = f" {time_limit:g} s" if time_limit is not None else ""
        return (f"open bracket     left open when --time-limit{limit} ran out (exit code 1): "
                "both ends are certified; more time may narrow it")
    if stop == "capped":
        return ("open bracket     a search stopped at its work cap (exit code 1): both ends "
                "are certified; --time-limit lets it search until the limit instead")
    if stop == "bracket":
        return ("open bracket     every stage ran and left it open: both ends are certified, "
                "and the bisection lies between them")
    return None


def solve_row(fab: Fabric, result: Any, bisection: Any, collectives: list[Any],
              routed: Any = None, share: float | None = None) -> dict:
    """One fabric's answers as a flat row (None where nothing was proven);
    ``per_endpoint_network_gbps`` is the part of ``per_endpoint_gbps`` that crosses the
    network (``share`` of it: :meth:`~fabricopt.Traffic.crossing_share`)."""
    optimal = result.theta is not None
    bracket = result.per_endpoint_gbps_bracket or (None, None)
    row: dict[str, Any] = {
        "name": fab.name, "gpus": len(fab.endpoints), "traffic": result.traffic_name,
        "status": result.status, "theta": result.theta, "theta_lower": result.lower,
        "theta_upper": result.upper,
        "per_endpoint_gbps": result.per_endpoint_gbps if optimal else None,
        "per_endpoint_gbps_lower": bracket[0], "per_endpoint_gbps_upper": bracket[1],
        "binding_tier": result.binding_tier, "seconds": round(result.seconds, 3)}
    if share is not None:
        row.update({"network_share_of_traffic": share,
                    "per_endpoint_network_gbps": result.per_endpoint_gbps * share
                    if optimal else None,
                    "per_endpoint_network_gbps_lower": None if bracket[0] is None
                    else bracket[0] * share,
                    "per_endpoint_network_gbps_upper": None if bracket[1] is None
                    else bracket[1] * share})
    if bisection is not None:
        n = max(len(fab.endpoints), 1)
        row.update({"bisection_gbps": bisection.lower_gbps,
                    "bisection_gbps_upper": bisection.upper_gbps,
                    "bisection_exact": bisection.exact,
                    "bisection_status": bisection_status(bisection),
                    "bisection_gbps_per_gpu": bisection.lower_gbps / n,
                    "bisection_gbps_per_gpu_upper": bisection.upper_gbps / n})
    if routed is not None:
        row.update({"routing": routed.method, "routed_theta": routed.theta,
                    "routing_efficiency": routed.efficiency})
    for c in collectives:
        row["message_bytes"] = c.message_bytes
        row[f"{c.collective}_busbw_GBps"] = c.busbw_GBps
        row[f"{c.collective}_achievable_busbw_GBps"] = c.achievable_busbw_GBps
    return row
