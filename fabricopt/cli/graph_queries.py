"""The ``fabricopt maxflow`` and ``fabricopt paths`` subcommands: questions about two groups of
nodes or two nodes of one fabric (kept apart to keep the command's module readable)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from ..analysis.group_flow import group_max_flow
from ..analysis.paths import k_shortest_paths
from ..errors import FabricOptError
from ..fabric import Fabric

#: How a selector is typed on the command line (the help of --from, --to and --select).
SELECTOR_HELP = ("a name pattern ('n0.gpu*', 's[0-3]') or attribute conditions "
                 "('su=0,role=gpu', 'role=switch,tier=spine', 'rail=0|1')")


def _one_fabric(load: Callable[[Sequence[str]], list[Fabric]], words: Sequence[str],
                command: str) -> Fabric:
    fabrics = load(words)
    if len(fabrics) != 1:
        raise FabricOptError(f"{command} asks about one fabric; TARGET names {len(fabrics)} "
                             "(a sweep): give one point of it with key=value")
    fab = fabrics[0]
    fab.validate()
    return fab


def _cmd_maxflow(args: argparse.Namespace,
                 load: Callable[[Sequence[str]], list[Fabric]]) -> int:
    if args.gain_limit < 0:
        raise FabricOptError(f"--gain-limit must be an integer >= 0, got {args.gain_limit}")
    fab = _one_fabric(load, args.target, "maxflow")
    try:
        r = group_max_flow(fab, args.sources, args.sinks, transit_gpus=not args.no_transit_gpus,
                           gain_limit=args.gain_limit)
    except ValueError as exc:  # the API's words for its arguments, the command's for flags
        text = str(exc).replace("group_max_flow(): sources", "--from").replace(
            "group_max_flow(): sinks", "--to")
        raise FabricOptError(text) from None
    problems = r.check(fab)
    if args.format == "json":
        print(json.dumps({"fabric": fab.name, "from": r.source_label, "to": r.sink_label,
                          "sources": len(r.sources), "sinks": len(r.sinks),
                          "max_flow_gbps": r.value_gbps, "cut_gbps": r.cut_gbps,
                          "proven": not problems, "cut": r.to_records()}, indent=1))
    else:
        print(r)
        print("  certificate    " + ("flow feasible, cut separates, cut = flow: proven"
                                     if not problems else "; ".join(problems)))
    return 0 if not problems else 1


def _cmd_paths(args: argparse.Namespace, load: Callable[[Sequence[str]], list[Fabric]]) -> int:
    _split_nodes(args)
    fab = _one_fabric(load, args.target, "paths")
    transit = True if args.transit_gpus else None
    try:
        paths = k_shortest_paths(fab, args.source, args.sink, k=args.k, weight=args.weight,
                                 transit_gpus=transit)
    except ValueError as exc:
        text = str(exc).replace("k_shortest_paths(): source", "SOURCE").replace(
            "k_shortest_paths(): target", "TARGET_NODE").replace(
            "k_shortest_paths(): k", "-k").replace("k_shortest_paths(): weight", "--weight")
        raise FabricOptError(text) from None
    if args.format == "json":
        print(json.dumps([{"nodes": [str(v) for v in p.nodes], "hops": p.hops,
                           "length": p.length, "tiers": list(p.tiers),
                           "bottleneck_gbps": p.bottleneck_gbps} for p in paths], indent=1))
        return 0
    print(f"{len(paths)} shortest path(s) from {args.source} to {args.sink} on {fab.name}"
          + (f" (by {args.weight})" if args.weight else " (by hops)"))
    for i, p in enumerate(paths, start=1):
        print(f"  {i}. {p}")
    return 0


def add_graph_query_parsers(sub: Any, load: Callable[[Sequence[str]], list[Fabric]],
                            epilog: str) -> None:
    """Add ``maxflow`` and ``paths`` to the command's subparsers; ``load`` reads a TARGET."""
    mf = sub.add_parser(
        "maxflow", help="maximum flow between two groups of nodes, its minimum cut and each "
        "cut link's sensitivity",
        description="The most one group of nodes can send to another at once (Gb/s, per "
        "direction), the minimum cut that limits it (certified: cut = flow) and, for each "
        "cut link, how much the flow drops when it fails or rises when its capacity "
        "doubles.", epilog=epilog)
    mf.add_argument("target", nargs="+", metavar="TARGET [key=value ...]",
                    help="one generator name, design file or saved fabric, with parameters")
    mf.add_argument("--from", dest="sources", required=True, metavar="SELECTOR",
                    help="the sending group: " + SELECTOR_HELP)
    mf.add_argument("--to", dest="sinks", required=True, metavar="SELECTOR",
                    help="the receiving group, sharing no node with the first")
    mf.add_argument("--gain-limit", type=int, default=32, metavar="N",
                    help="cut links whose gain from doubling is computed, largest first "
                    "(one max flow each; default 32)")
    mf.add_argument("--no-transit-gpus", action="store_true",
                    help="keep flow out of GPUs outside the two groups (by default it may "
                    "pass a GPU's NVLink to its server's other NICs)")
    mf.add_argument("--format", choices=("table", "json"), default="table")
    mf.set_defaults(func=lambda args: _cmd_maxflow(args, load))

    ps = sub.add_parser(
        "paths", help="the k shortest paths between two nodes",
        description="The k shortest simple paths from SOURCE to TARGET_NODE, shortest first "
        "(by hops, or by an arc attribute with --weight), with the tiers each crosses and "
        "its bottleneck. Paths do not pass through other GPUs in a switched fabric unless "
        "--transit-gpus.", epilog=epilog)
    ps.add_argument("target", nargs="+", metavar="TARGET [key=value ...] SOURCE TARGET_NODE",
                    help="one fabric (generator with parameters, design file or saved "
                    "fabric), then the two nodes by name")
    ps.add_argument("-k", type=int, default=4, help="how many paths (default 4)")
    ps.add_argument("--weight", default=None, metavar="ATTRIBUTE",
                    help="an arc attribute to add up instead of hops (e.g. length_m)")
    ps.add_argument("--transit-gpus", action="store_true",
                    help="let paths pass through other GPUs (as on a ring or torus)")
    ps.add_argument("--format", choices=("table", "json"), default="table")
    ps.set_defaults(func=lambda args: _cmd_paths(args, load))


def _split_nodes(args: argparse.Namespace) -> None:
    """The last two words of ``paths`` are the nodes; the words before them the fabric."""
    if len(args.target) < 3:
        raise FabricOptError("paths needs a fabric and two nodes: fabricopt paths TARGET "
                             "[key=value ...] SOURCE TARGET_NODE")
    *args.target, args.source, args.sink = args.target


__all__ = ["add_graph_query_parsers"]
