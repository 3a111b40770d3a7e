"""The ``fabricopt`` command line.

Each subcommand is a thin layer over the public API: parse, call, print. A fabric is named
either by a generator and ``key=value`` parameters (``fabricopt show fat_tree k=8``) or, where
design files are supported, by a path to one.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Sequence
from typing import Any

from ._version import __version__
from .errors import FabricOptError
from .fabric import Fabric
from .generators import GENERATORS


def parse_value(text: str) -> Any:
    """Read a command-line value as a Python literal when it is one, else keep the string.

    >>> parse_value("8"), parse_value("0.5"), parse_value("[5,4,4,5]"), parse_value("ndr")
    (8, 0.5, [5, 4, 4, 5], 'ndr')
    >>> parse_value("true"), parse_value("None")
    (True, None)
    """
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    """Turn ``["k=8", "link_gbps=400"]`` into ``{"k": 8, "link_gbps": 400}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise FabricOptError(f"expected key=value, got {item!r}")
        out[key] = parse_value(value)
    return out


def load_fabric(target: str, assignments: Sequence[str]) -> list[Fabric]:
    """The fabric(s) a command names: a generator with parameters, or a design file."""
    params = parse_assignments(assignments)
    if target in GENERATORS:
        try:
            return [GENERATORS[target](**params)]
        except TypeError as exc:  # unknown keyword for this generator
            raise FabricOptError(f"{target}: {exc}") from None
    if target.endswith(".toml"):
        from .specs import load_design  # design files arrive with the specs module

        loaded = load_design(target, **params)
        return loaded if isinstance(loaded, list) else [loaded]
    if target.endswith((".json", ".graphml")):
        from .fabric_io import read_graphml, read_json

        if params:  # a saved fabric is built already: there is nothing to pass
            raise FabricOptError(f"{target}: a saved fabric takes no key=value parameters, "
                                 f"got {' '.join(assignments)}")
        return [read_json(target) if target.endswith(".json") else read_graphml(target)]
    raise FabricOptError(f"unknown generator or fabric file {target!r}: give a generator "
                         "(" + ", ".join(sorted(GENERATORS)) + ") or a .toml design file, "
                         "or a .json or .graphml fabric file")


def _cmd_show(args: argparse.Namespace) -> int:
    for fab in load_fabric(args.target, args.params):
        fab.validate()
        print(fab.summary())
        print()
    return 0


def make_traffic(fab: Fabric, spec: str) -> Any:
    """Traffic named on the command line: ``all-to-all``, ``permutation[:SEED]`` or
    ``longest-matching``."""
    from .traffic import all_to_all, longest_matching, permutation

    name, _, arg = spec.partition(":")
    if name == "all-to-all":
        return all_to_all(fab)
    if name == "permutation":
        return permutation(fab, seed=int(arg) if arg else 0)
    if name == "longest-matching":
        return longest_matching(fab)
    raise FabricOptError(f"--traffic must be all-to-all, permutation[:SEED] or "
                         f"longest-matching, got {spec!r}")


def _cmd_solve(args: argparse.Namespace) -> int:
    from .flow import max_concurrent_flow

    options: dict[str, Any] = {}
    if args.solver:
        options["solver"] = args.solver
    worst = 0
    for fab in load_fabric(args.target, args.params):
        fab.validate()
        traffic = make_traffic(fab, args.traffic)
        result = max_concurrent_flow(fab, traffic, method=args.method, backend=args.backend,
                                     time_limit=args.time_limit, **options)
        print(result)
        if not args.throughput_only:
            from .bisection import bisection_bandwidth
            from .collectives import collective_bounds

            print(bisection_bandwidth(fab, time_limit=args.time_limit))
            print(collective_bounds(fab, "all_reduce", message_bytes=args.message_bytes))
        print()
        if result.status not in ("optimal", "inexact"):
            worst = 1
    return worst


def _cmd_bom(args: argparse.Namespace) -> int:
    from .cost import Catalog, Layout, estimate_cost

    catalog = Catalog.load(args.catalog) if args.catalog else None
    layout = Layout(leaf_placement=args.leaf_placement) if args.leaf_placement else None
    for fab in load_fabric(args.target, args.params):
        est = estimate_cost(fab, catalog=catalog, layout=layout, policy=args.policy)
        if args.format == "csv":
            print(est.to_csv(), end="")
        elif args.format == "markdown":
            print(est.to_markdown())
            print()
        else:
            print(est.to_table())
            print()
    return 0


def _cmd_draw(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .draw import draw

    aggregate: Any = {"auto": "auto", "none": False, "all": True}.get(args.aggregate,
                                                                        args.aggregate)
    fabrics = load_fabric(args.target, args.params)
    out = Path(args.output)
    for i, fab in enumerate(fabrics):
        fab.validate()
        result = None
        if args.utilization:
            from .flow import max_concurrent_flow

            result = max_concurrent_flow(fab, time_limit=args.time_limit)
        cost = None
        if args.media:
            from .cost import estimate_cost

            cost = estimate_cost(fab)
        ax = draw(fab, result=result, aggregate=aggregate, cost=cost)
        # A sweep draws one picture per point: fig.png becomes fig-0.png, fig-1.png...
        path = out if len(fabrics) == 1 else out.with_name(f"{out.stem}-{i}{out.suffix}")
        ax.figure.savefig(path, dpi=args.dpi)
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fabricopt`` command."""
    parser = argparse.ArgumentParser(
        prog="fabricopt", description="Design GPU-cluster fabrics and compute what they carry.")
    parser.add_argument("--version", action="version", version=f"fabricopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a fabric's summary",
                          description="Print a fabric's summary. TARGET is a generator name "
                          "(" + ", ".join(sorted(GENERATORS)) + ") or a design file.")
    show.add_argument("target", help="generator name or design file (.toml)")
    show.add_argument("params", nargs="*", help="generator parameters as key=value")
    show.set_defaults(func=_cmd_show)

    solve = sub.add_parser("solve", help="certified max-concurrent-flow throughput",
                           description="Compute the largest fraction theta of a traffic "
                           "pattern the fabric carries at once, with a certified bracket, "
                           "the per-GPU bandwidth and the binding tier; then the bisection "
                           "bandwidth and the all-reduce bounds. Exit code 1 when a "
                           "solve did not finish (time limit, too large).")
    solve.add_argument("target", help="generator name or design file (.toml)")
    solve.add_argument("params", nargs="*", help="generator parameters as key=value")
    solve.add_argument("--traffic", default="all-to-all",
                       help="all-to-all (default), permutation[:SEED], longest-matching")
    solve.add_argument("--method", default="auto", choices=["auto", "lp", "symmetric"])
    solve.add_argument("--backend", default="highs", choices=["highs", "highspy", "pulp"])
    solve.add_argument("--solver", default=None,
                       help="highs: choose, simplex or ipm; highspy: simplex, ipm or pdlp; "
                       "pulp: a pulp solver name")
    solve.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    solve.add_argument("--message-bytes", type=float, default=2.0**30,
                       help="all-reduce buffer size for the collective bounds (default 1 GiB)")
    solve.add_argument("--throughput-only", action="store_true",
                       help="skip the bisection and all-reduce bounds")
    solve.set_defaults(func=_cmd_solve)

    from .cost import LEAF_PLACEMENTS, POLICY_PRESETS

    bom = sub.add_parser("bom", help="print a fabric's bill of materials, capex and power",
                         description="Print the bill of materials, capex and power of a "
                         "fabric's network. TARGET is a generator name or a design file.")
    bom.add_argument("target", help="generator name or design file (.toml)")
    bom.add_argument("params", nargs="*", help="generator parameters as key=value")
    bom.add_argument("--format", choices=("table", "csv", "markdown"), default="table")
    bom.add_argument("--catalog", metavar="FILE",
                     help="catalog file merged over the default catalog")
    bom.add_argument("--policy", choices=tuple(POLICY_PRESETS), default="cost",
                     help="media policy (default: cost)")
    bom.add_argument("--leaf-placement", choices=LEAF_PLACEMENTS, default=None,
                     help="where leaf switches go (default: top_of_rack)")
    bom.set_defaults(func=_cmd_bom)

    drw = sub.add_parser("draw", help="draw a fabric as a layered diagram",
                         description="Draw a fabric: GPUs at the bottom, switch tiers above, "
                         "large fabrics grouped (by server, scalable unit, pod...). The "
                         "file type follows the extension of --output (png, svg, pdf). "
                         "TARGET is a generator name or a design file; a sweep writes one "
                         "file per point (fig-0.png, fig-1.png...).")
    drw.add_argument("target", help="generator name or design file (.toml)")
    drw.add_argument("params", nargs="*", help="generator parameters as key=value")
    drw.add_argument("-o", "--output", required=True, metavar="FILE",
                     help="image file to write, e.g. fig.png")
    drw.add_argument("--aggregate", default="auto", metavar="LEVEL",
                     help="auto (default), none (every device), all (always grouped), "
                     "layer, or node attributes such as node, su, pod, rail, su+rail")
    drw.add_argument("--utilization", action="store_true",
                     help="solve all-to-all and colour links by utilization")
    drw.add_argument("--time-limit", type=float, default=None,
                     help="seconds for the --utilization solve")
    drw.add_argument("--media", action="store_true",
                     help="estimate the cost and list each tier's media in the legend")
    drw.add_argument("--dpi", type=float, default=150.0, help="resolution (default 150)")
    drw.set_defaults(func=_cmd_draw)

    opt = sub.add_parser("optimize", help="search a design space for the best cluster",
                         description="Search the design space a search file declares (GPU "
                         "count, [space] lists, [constraints] targets; see "
                         "topologies/README.md), print the Pareto front of capex and "
                         "all-to-all bandwidth and the best design, and write the best "
                         "design as a design file.")
    opt.add_argument("target", help="search file (.toml)")
    opt.add_argument("-o", "--output", default=None, metavar="FILE",
                     help="design file to write the best design to (default: "
                     "<search file stem>-best.toml in the current directory)")
    opt.add_argument("--all", action="store_true",
                     help="print every candidate with the reason it was pruned")
    opt.add_argument("--time-limit", type=float, default=None, help="seconds per flow solve")
    opt.set_defaults(func=_cmd_optimize)
    return parser


def _cmd_optimize(args: argparse.Namespace) -> int:
    from .optimize import load_search, optimize

    spec = load_search(args.target)
    res = optimize(spec["gpus"], space=spec["space"], constraints=spec["constraints"],
                   objective=spec["objective"], time_limit=args.time_limit)
    print(f"{spec['name']}: {res!r}")
    print("")
    print("Pareto front (capex, certified all-to-all per GPU):")
    print(res.to_markdown())
    if args.all:
        print("")
        for r in res.rows:
            print(f"{r['name']}: {r['status']}" + (f" ({r['reason']})" if r["reason"] else ""))
    print("")
    if res.best is None:
        print("no design meets every constraint; nearest:")
        for r in res.nearest:
            print(f"  {r['name']}: " + ", ".join(f"{k} misses by {v:.1%}"
                                                 for k, v in r["shortfall"].items()))
        return 1
    out = args.output or os.path.splitext(os.path.basename(args.target))[0] + "-best.toml"
    res.write_design(out)
    print(f"best: {res.best['name']}, {res.best['capex_usd']:,.0f} USD, "
          f"{res.best['all_to_all_gbps_per_gpu']:,.1f} Gb/s all-to-all per GPU -> {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        try:
            code = int(args.func(args))
        except (FabricOptError, ValueError) as exc:
            print(f"fabricopt {args.command}: error: {exc}", file=sys.stderr)
            code = 2
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (`fabricopt solve ... | head`): stop quietly, as Unix tools do,
        # and keep Python from complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass  # stdout is not a real file (a test's capture): nothing left to silence
        finally:
            os.close(devnull)
        return 141

if __name__ == "__main__":
    sys.exit(main())
