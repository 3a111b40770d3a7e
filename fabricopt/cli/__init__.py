"""The ``fabricopt`` command line.

Each subcommand is a thin layer over the public API: parse, call, print. A fabric is named by
a generator and ``key=value`` parameters (``fabricopt show fat_tree k=8``) or, where design
files are supported, by a path to one (how those words are read: :mod:`fabricopt.cli.words`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from .._checks import did_you_mean
from ..cost import LEAF_PLACEMENTS, POLICY_PRESETS, Catalog, Layout, estimate_cost, estimate_tco
from ..cost.assumptions import cost_assumptions
from ..errors import FabricOptError
from ..fabric import Fabric
from ..failures.engine import max_concurrent_flow
from ..generators import GENERATORS
from ..io.search_files import load_search
from ..plot.diagram import draw
from ..plot.image_files import checked_dpi, image_path
from ..plot.report import write_diagram, write_report
from ..study.compare import (
    DEFAULT_METRICS,
    METRICS,
    ROWS_FILE,
    compare,
    design_tasks,
    tasks_without_job,
)
from ..study.local_pool import process_pool
from ..study.optimize import objective_text, optimize
from ..study.saved import saved_output
from ..study.table import CSV_FILE, Comparison, RowStore
from ..workload.serving_capacity import serving_workload
from .failures import add_failures_parser
from .graph_queries import add_graph_query_parsers
from .serve import add_serve_parser
from .solve import add_solve_parser
from .train import add_cost_flags, add_job_flags, add_train_parser, check_cost_flags, job_of_flags
from .words import (
    EXIT_CODES,
    FORMATS,
    check_finite,
    check_seconds,
    check_targets,
    generator_help,
    load_fabric,
    load_targets,
    names_arg,
    parse_assignments,
    print_rows,
    progress_arg,
    seconds_arg,
    signed_values,
    size_arg,
    split_targets,
    targets_arg,
)
from .worst_case import add_worst_case_parser


def _cmd_show(args: argparse.Namespace) -> int:
    if args.help:
        if args.targets and args.targets[0] in GENERATORS:
            print(generator_help(args.targets[0]))
        else:
            args.parser.print_help()
            if args.targets and not args.targets[0].endswith(".toml"):
                # Unknown name: the usual error, with its suggestion.
                load_fabric(args.targets[0], [])
        return 0
    if not args.targets:
        args.parser.error("the following arguments are required: TARGET")
    for fab in load_targets(args.targets):
        fab.validate()
        print(fab.summary())
        print()
    return 0


def _totals(parts: Any) -> dict[str, dict[str, float]]:
    """Per-tier or per-medium totals as JSON: capex, power and physical links of each."""
    return {str(k): {"capex_usd": t.usd, "power_w": t.w, "links": t.links}
            for k, t in parts.items()}


# -- total cost of ownership -------------------------------------------------------------------
def _add_tco_parser(sub: Any) -> None:
    tco = sub.add_parser("tco", help="print a fabric network's total cost of ownership",
                         description="Capex, energy at PUE, maintenance and optics "
                         "replacements over the years, per GPU per year.", epilog=EXIT_CODES)
    targets_arg(tco)
    add_cost_flags(tco, "service life")
    tco.add_argument("--maintenance", type=float, default=cost_assumptions().maintenance,
                     help="support and spares a year, a fraction of capex (default "
                     f"{cost_assumptions().maintenance:g}, fo.cost_assumptions())")
    tco.add_argument("--policy", choices=tuple(POLICY_PRESETS), default=None,
                     help="media policy (default: the reference build of the design family)")
    tco.add_argument("--format", choices=FORMATS, default="table",
                     help="table (readable blocks, default), or one row per fabric as csv, "
                     "markdown or json")
    tco.set_defaults(func=_cmd_tco)




def _cmd_tco(args: argparse.Namespace) -> int:
    check_cost_flags(args)  # the flags named, before any fabric is built
    if not math.isfinite(args.maintenance) or args.maintenance < 0:
        raise FabricOptError(f"--maintenance: must be a finite number >= 0, got "
                             f"{args.maintenance:g}")
    rows = []
    for fab in load_targets(args.targets):
        t = estimate_tco(fab, years=args.years, usd_per_kwh=args.usd_per_kwh, pue=args.pue,
                         maintenance=args.maintenance, policy=args.policy)
        check_finite(fab, {"capex_usd": t.capex_usd, "tco_usd": t.total_usd,
                           "tco_per_gpu_year_usd": t.per_gpu_per_year_usd},
                     f"--years {args.years:g}, --usd-per-kwh {args.usd_per_kwh:g}, --pue "
                     f"{args.pue:g}, --maintenance {args.maintenance:g}")
        if args.format == "table":
            print(t)
            print()
            continue
        rows.append({"fabric": fab.name, "capex_usd": t.capex_usd, "energy_usd": t.energy_usd,
                     "maintenance_usd": t.maintenance_usd,
                     "replacement_usd": t.replacement_usd, "tco_usd": t.total_usd,
                     "tco_per_gpu_year_usd": t.per_gpu_per_year_usd,
                     "expected_failed_links": t.expected_failed_links,
                     "system": t.system, "servers": t.servers,
                     "cluster_tco_usd": t.cluster_total_usd,
                     "cluster_tco_per_gpu_year_usd": t.cluster_per_gpu_per_year_usd,
                     "network_share": t.network_share, "priced": t.policy_name})
    if rows:
        print_rows(rows, args.format)
    return 0


def _cmd_bom(args: argparse.Namespace) -> int:

    catalog = Catalog.load(args.catalog) if args.catalog else None
    layout = Layout(leaf_placement=args.leaf_placement) if args.leaf_placement else None
    estimates = []
    for fab in load_targets(args.targets):
        est = estimate_cost(fab, catalog=catalog, layout=layout, policy=args.policy)
        check_finite(fab, {"capex_usd": est.capex_usd, "power_w": est.power_w},
                     "the catalog's prices and powers")
        estimates.append(est)
    if args.format == "csv":
        # One table for every fabric, its first column naming the fabric of each row.
        import csv
        import io

        header = ""
        for est in estimates:
            text = est.to_csv()
            head, _, body = text.partition("\n")
            if not header:
                header = "fabric," + head
                print(header)
            for line in csv.reader(io.StringIO(body)):
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerow([est.fabric, *line])
                print(buf.getvalue(), end="")
    elif args.format == "json":
        import json

        print(json.dumps([{"fabric": e.fabric, "gpus": e.n_endpoints, "capex_usd": e.capex_usd,
                           "power_w": e.power_w, "capex_per_gpu_usd": e.per_endpoint_usd,
                           "power_per_gpu_w": e.per_endpoint_w,
                           "in_server_usd": e.scale_up_in_server_usd,
                           "in_server_w": e.scale_up_in_server_w,
                           "by_tier": _totals(e.by_tier), "by_medium": _totals(e.by_medium),
                           "bom": [{"component": r.component, "kind": r.kind,
                                    "detail": r.detail, "count": r.count,
                                    "unit_usd": r.unit_usd, "unit_w": r.unit_w,
                                    "total_usd": r.total_usd, "total_w": r.total_w,
                                    "confidence": r.confidence, "source": r.source}
                                   for r in e.bom]}
                          for e in estimates], indent=1))
    else:
        for est in estimates:
            print(est.to_markdown() if args.format == "markdown" else est.to_table())
            print()
    return 0


def _usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the machine's count where the
    system cannot say)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # no affinity on this system
        return os.cpu_count() or 1


def _compare_executor(args: argparse.Namespace, designs: list[Any],
                      stack: contextlib.ExitStack) -> Any:
    """Where compare's rows run: a Dask cluster (--scheduler), a pool of -j workers, or
    None (this process); the pool and the client close with ``stack``."""
    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise FabricOptError("--scheduler needs dask.distributed: "
                                 "pip install 'fabricopt[dask]'") from None
        try:
            client = stack.enter_context(Client(args.scheduler))
        except (OSError, TimeoutError, ValueError) as exc:  # not stdout's fault (74)
            raise FabricOptError(f"--scheduler {args.scheduler}: cannot connect: "
                                 f"{exc}") from None
        return client.get_executor()
    # Default: a worker per usable core, at most one per design (one runs here).
    jobs = args.jobs or min(_usable_cores(), len(design_tasks(designs)))
    if jobs < 2:
        return None
    rows = len(designs) if all(isinstance(d, Fabric) for d in designs) else None
    _load_for_workers(diagrams=bool(args.output) and not args.no_diagrams)
    return stack.enter_context(process_pool(jobs, rows))


def _load_for_workers(diagrams: bool) -> None:
    """Load here, once, before the workers are forked, what each would otherwise load for
    itself: the LP solver's module for its first row, matplotlib for its first diagram
    (about 0.8 s of CPU a worker; the workers share these pages)."""
    import scipy.optimize  # noqa: F401

    if diagrams:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401


def _cmd_compare(args: argparse.Namespace) -> int:

    if args.jobs is not None and args.jobs < 1:
        raise FabricOptError(f"--jobs must be an integer >= 1, got {args.jobs}")
    saved = saved_output(args.targets)
    if saved is not None:  # a batch's output: its table read back, nothing solved again
        return _compare_saved(saved, args)
    designs: list[Any] = []
    groups = split_targets(args.targets)
    check_targets(groups)
    for target, assignments in groups:
        # A generator's values given become columns and join the name; a saved fabric is
        # read here (compare() itself takes design files, folders and Fabrics).
        if target in GENERATORS or target.endswith((".json", ".graphml")):
            params = parse_assignments(assignments)
            designs += [(fab, params) if params else fab
                        for fab in load_fabric(target, assignments)]
        elif assignments:
            designs.append((target, parse_assignments(assignments)))
        else:
            designs.append(target)
    # A design file that cannot be read or names an unknown parameter is known now: said
    # before any row runs (its row keeps the error; the other designs run).
    unreadable = [(t.label, t.error) for t in design_tasks(designs) if t.error]
    for label, error in unreadable:
        print(f"fabricopt compare: {label}: {error} (skipped; the other designs run)",
              file=sys.stderr)
    with contextlib.ExitStack() as stack:
        executor = _compare_executor(args, designs, stack)
        metrics = names_arg("--metrics", args.metrics, METRICS) if args.metrics else None
        job = job_of_flags(args)
        if job is not None and "training" not in (metrics or ()):
            metrics = [*(metrics or DEFAULT_METRICS), "training"]
        if job is None and "training" in (metrics or ()):
            missing = tasks_without_job(design_tasks(designs))
            if missing:  # every row would fail alike: said once, in the command's words
                raise FabricOptError(
                    "--metrics training runs a job on every design: give --job FILE, or "
                    "--model NAME (with --tp, --pp...), or --plan best; or a [job] table in "
                    "each design file (none in: " + ", ".join(missing[:5])
                    + (" ..." if len(missing) > 5 else "") + ")")
        serving = parse_assignments(args.serving) if args.serving else None
        if serving is not None:
            try:
                serving_workload(serving, "--serving")
            except FabricOptError as exc:
                raise FabricOptError(str(exc)) from None
            if "serving" not in (metrics or ()):
                metrics = [*(metrics or DEFAULT_METRICS), "serving"]
        if args.routing:  # beside the all-to-all optimum it is the efficiency of
            chosen = list(metrics or DEFAULT_METRICS)
            at = chosen.index("all_to_all") + 1 if "all_to_all" in chosen else len(chosen)
            metrics = [*chosen[:at], "routing", *chosen[at:]]
        # Each design's diagram is drawn where its row ran, from the fabric the row built;
        # a Dask worker may not reach OUT, so the report draws those here.
        each_fabric = None
        if args.output and not args.no_diagrams and not args.scheduler:
            each_fabric = functools.partial(write_diagram,
                                            folder=os.path.join(args.output, "diagrams"))
        try:
            table = compare(designs, metrics=metrics, executor=executor,
                            progress=args.progress, out_dir=args.output,
                            message_bytes=args.message_bytes, routing_trials=args.trials,
                            routing_seed=args.seed, job=job[0] if job else None,
                            serving=serving, each_fabric=each_fabric)
        except KeyboardInterrupt:
            if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
                # Leaving the pool would wait for every running design: start none, wait none.
                executor.shutdown(wait=False, cancel_futures=True)
            raise KeyboardInterrupt(  # with what was kept, for the one line main() prints
                f"{RowStore.finished(args.output)} row(s) saved in "
                f"{os.path.join(args.output, ROWS_FILE)}; rerun the same command to resume"
                if args.output else "nothing was saved (-o OUT keeps finished rows)") from None
        if args.output:
            # The pool the rows ran on draws the charts and bars while this process writes
            # the tables and gathers the diagrams (a Dask worker may not reach OUT); when
            # every row was reused no worker was started, and none is started for them.
            pool = executor if isinstance(executor, concurrent.futures.ProcessPoolExecutor) \
                and table.reused < len(table) else None
            index = write_report(table, args.output, diagrams=not args.no_diagrams,
                                 executor=pool)
    if args.output:
        again = f", {table.reused} reused from an earlier run" if table.reused else ""
        print(f"{len(table)} design{'' if len(table) == 1 else 's'} "
              f"({len(table.failed)} failed{again}): {index}")
        _print_compared(table, args, written=args.output)
    else:
        _print_compared(table, args)
    _failed_rows(table, unreadable)
    return 1 if table.failed else 0


def _print_compared(table: Any, args: argparse.Namespace, written: str | None = None) -> None:
    """The table as ``--columns`` and ``--format`` ask, and its verdict. With ``written``
    (the -o folder) and neither flag, only the verdict: the table is in the folder; with
    one, the table printed is said to be those columns of what was written (every column)."""
    columns = None
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        for c in columns:
            if c not in table.columns:
                kept = (f"; the table is saved in {written}: print it again with fabricopt "
                        f"compare {written} --columns ...") if written else ""
                raise FabricOptError(f"--columns: {c!r} is not a column of this table"
                                     f"{did_you_mean(c, table.columns)}{kept}")
    if written is not None and not (args.columns or args.format):
        for sentence in table.verdict():
            print(f"  {sentence}")
        return
    if (args.format or "table") == "table":
        print(table.to_text(columns, limit=len(table)))
        for sentence in table.verdict():
            print(sentence)
    else:
        keep = columns or table.columns
        print_rows([{c: r[c] for c in keep} for r in table.rows], args.format)
    if written is not None:  # on stderr: a csv or json on stdout stays one document
        shown = f"{len(columns)} of its {len(table.columns)}" if columns else "all its"
        print(f"fabricopt compare: printed {shown} columns; every column is written to "
              f"{os.path.join(written, CSV_FILE)}, results.json, results.md and index.html",
              file=sys.stderr)


def _compare_saved(folder: str, args: argparse.Namespace) -> int:
    """``fabricopt compare OUT``, OUT a batch's output: its table read back
    (:meth:`Comparison.read <fabricopt.study.table.Comparison.read>`), printed as
    ``--columns`` and ``--format`` ask, its report written again to ``-o`` (without
    diagrams: the designs are not built); nothing is solved."""
    computing = [f for f in ("metrics", "job", "model", "serving", "scheduler")
                 if getattr(args, f, None)] + (["routing"] if args.routing else [])
    if computing:
        raise FabricOptError(
            f"{folder} holds a saved comparison, read back as it is: --{computing[0]} would "
            "compute again; run compare on the design files to compute")
    table = Comparison.read(folder)
    if args.output:
        index = write_report(table, args.output, diagrams=False)
        print(f"{len(table)} design{'' if len(table) == 1 else 's'} read from {folder} "
              f"({len(table.failed)} failed; nothing solved again): {index}")
        _print_compared(table, args, written=args.output)
    else:
        _print_compared(table, args)
    return 1 if table.failed else 0


def _failed_rows(table: Any, said: list[tuple[str, str]]) -> None:
    """Each row that stopped on an error, on stderr, but those ``said`` (name, error) before
    the run."""
    for row in table.failed:
        if (row["name"], row["error"]) not in said:
            print(f"fabricopt compare: {row['name']}: {row['error']}", file=sys.stderr)


def _cmd_draw(args: argparse.Namespace) -> int:
    aggregate: Any = {"auto": "auto", "none": False, "all": True}.get(args.aggregate,
                                                                        args.aggregate)
    out = image_path(args.output)
    checked_dpi(args.dpi)  # before any work; the size of the picture is checked once drawn
    fabrics = load_fabric(args.target, args.params)
    for i, fab in enumerate(fabrics):
        fab.validate()
        result = None
        if args.utilization:
            result = max_concurrent_flow(fab, time_limit=args.time_limit)
        cost = None
        if args.media:
            cost = estimate_cost(fab)
        ax = draw(fab, result=result, aggregate=aggregate, cost=cost)
        # A sweep draws one picture per point: fig.png becomes fig-0.png, fig-1.png...
        path = out if len(fabrics) == 1 else out.with_name(f"{out.stem}-{i}{out.suffix}")
        ax.figure.savefig(path, dpi=checked_dpi(args.dpi, ax.figure))
        print(path)
    return 0


def _add_show(sub: Any) -> None:
    """The ``show`` subcommand's parser."""
    show = sub.add_parser("show", add_help=False, help="print a fabric's summary",
                          description="Print a fabric's summary. TARGET is a generator name "
                          "(" + ", ".join(sorted(GENERATORS)) + ") or a design file. "
                          "`fabricopt show GENERATOR --help` lists the generator's parameters.",
                          epilog=EXIT_CODES)
    show.add_argument("-h", "--help", action="store_true",
                      help="show this help, or a generator's parameters when one is named")
    show.add_argument("targets", nargs="*", metavar="TARGET [key=value ...]",
                      help="generator name or design file, then parameters as key=value")
    show.set_defaults(func=_cmd_show, parser=show)


def _add_bom(sub: Any) -> None:
    """The ``bom`` subcommand's parser."""
    bom = sub.add_parser("bom", help="print a fabric's bill of materials, capex and power",
                         description="Print the bill of materials, capex_usd and power_w of "
                         "each fabric's network. A saved fabric with failed links or "
                         "switches is priced as built (they are installed hardware), and the "
                         "'removed' line says so.", epilog=EXIT_CODES)
    targets_arg(bom)
    bom.add_argument("--format", choices=FORMATS, default="table",
                     help="table (default), markdown, csv (one table, a fabric column) or json")
    bom.add_argument("--catalog", metavar="FILE",
                     help="catalog file merged over the default catalog")
    bom.add_argument("--policy", choices=tuple(POLICY_PRESETS), default=None,
                     help="media policy (default: the design family's reference build)")
    bom.add_argument("--leaf-placement", choices=LEAF_PLACEMENTS, default=None,
                     help="where leaf switches go (default: top_of_rack)")
    bom.set_defaults(func=_cmd_bom)


def _add_compare(sub: Any) -> None:
    """The ``compare`` subcommand's parser."""
    cmp_ = sub.add_parser("compare", help="evaluate designs side by side and write a report",
                          description="Evaluate every design (files, folders of them, sweeps, "
                          "generators with key=value) and print the table, or with -o write "
                          "OUT/results.csv, .md, .json, plots, one diagram per design and "
                          "OUT/index.html. A rerun into the same OUT skips finished designs.",
                          epilog=EXIT_CODES)
    targets_arg(cmp_)
    cmp_.add_argument("-o", "--output", metavar="OUT", default=None,
                      help="folder for the results and the report")
    cmp_.add_argument("--format", choices=FORMATS, default=None,
                      help="how to print the table (default: table; with -o the table is "
                      "printed only when this or --columns is given)")
    cmp_.add_argument("-j", "--jobs", type=int, default=None,
                      help="worker processes, each computing its designs' rows and drawing "
                      "their diagrams, at most one per core (default: the cores this process "
                      "may use, at most one per design; 1 runs everything in this process)")
    cmp_.add_argument("--scheduler", metavar="ADDRESS", default=None,
                      help="run on a Dask cluster, e.g. tcp://10.0.0.1:8786 (needs "
                      "fabricopt[dask])")
    cmp_.add_argument("--message-bytes", type=size_arg, default=2.0**30, metavar="SIZE",
                      help="all-reduce buffer size, with a unit (default 1GiB)")
    cmp_.add_argument("--routing", action="store_true",
                      help="also route the all-to-all by ECMP, WCMP, static tables and "
                      "per-flow hashing, with each one's routing efficiency (routed / optimal "
                      "theta)")
    cmp_.add_argument("--trials", type=int, default=20,
                      help="hashed trials for --routing (default 20)")
    cmp_.add_argument("--seed", type=int, default=0, help="seed of the hashed trials")
    cmp_.add_argument("--metrics", metavar="NAMES", default=None,
                      help="metrics to compute, comma-separated: " + ", ".join(METRICS)
                      + " (default: all but routing)")
    cmp_.add_argument("--columns", metavar="NAMES", default=None,
                      help="the columns to print, comma-separated (default: name, swept "
                      "values, GPUs, bandwidth, busbw, capex and power per GPU); with -o the "
                      "table is printed with them and every column is still written")
    progress_arg(cmp_, "progress bar")
    cmp_.add_argument("--no-diagrams", action="store_true",
                      help="skip the diagram of each design in the report")
    cmp_.add_argument("--serving", action="append", metavar="KEY=VALUE",
                      help="a serving workload served on every design (the serving metric, "
                      "added to --metrics): model=NAME, ttft_s=, tpot_s= and any other "
                      "keyword of fabricopt.serving_capacity, such as prompt_len=2048, "
                      "precision=fp8 (repeat the flag)")
    add_job_flags(cmp_)
    cmp_.set_defaults(func=_cmd_compare)












def _add_draw(sub: Any) -> None:
    """The ``draw`` subcommand's parser."""
    drw = sub.add_parser("draw", help="draw a fabric as a layered diagram",
                         description="Draw a fabric: GPUs at the bottom, switch tiers above, "
                         "large fabrics grouped (by server, scalable unit, pod...). The "
                         "file type follows the extension of --output (png, svg, pdf). "
                         "TARGET is a generator name or a design file; a sweep writes one "
                         "file per point (fig-0.png, fig-1.png...).", epilog=EXIT_CODES)
    drw.add_argument("target", help="generator name, design file (.toml) or saved fabric "
                     "(.json, .graphml)")
    drw.add_argument("params", nargs="*", help="generator parameters as key=value")
    drw.add_argument("-o", "--output", required=True, metavar="FILE",
                     help="image file to write, e.g. fig.png")
    drw.add_argument("--aggregate", default="auto", metavar="LEVEL",
                     help="auto (default), none (every device), all (always grouped), "
                     "layer, or node attributes such as node, su, pod, rail, plane, rail+plane")
    drw.add_argument("--utilization", action="store_true",
                     help="solve all-to-all and colour links by utilization")
    drw.add_argument("--time-limit", type=seconds_arg, default=None,
                     help="seconds for the --utilization solve")
    drw.add_argument("--media", action="store_true",
                     help="estimate the cost and list each tier's media in the legend")
    drw.add_argument("--dpi", type=float, default=150.0, help="resolution (default 150)")
    drw.set_defaults(func=_cmd_draw)


def _add_optimize(sub: Any) -> None:
    """The ``optimize`` subcommand's parser."""
    opt = sub.add_parser("optimize", help="search a design space for the best cluster",
                         description="Search the design space a search file declares (GPU "
                         "count, [space] lists, [constraints] targets; see "
                         "topologies/README.md), print the Pareto front of capex and "
                         "all-to-all bandwidth and the best design, and write the best "
                         "design as a design file.")
    opt.add_argument("targets", nargs="+", metavar="target",
                     help="search files (.toml), each searched in turn")
    opt.add_argument("-o", "--output", default=None, metavar="FILE",
                     help="design file to write the best design to, with one search file "
                     "(default: <search file stem>-best.toml in the current directory)")
    opt.add_argument("--all", action="store_true",
                     help="print every candidate: why it was pruned, or what it delivered "
                     "and whether it meets the constraints")
    opt.add_argument("--time-limit", type=seconds_arg, default=None, help="seconds per flow solve")
    opt.add_argument("--full-front", action="store_true",
                     help="evaluate and print the front past the best design (dearer, faster "
                     "designs) as well; by default it stops at the best")
    progress_arg(opt, "progress bar over the candidates")
    opt.set_defaults(func=_cmd_optimize)


def _add_failures(sub: Any) -> None:
    add_failures_parser(sub, load_targets, EXIT_CODES)


def _add_graph_queries(sub: Any) -> None:
    add_graph_query_parsers(sub, load_targets, EXIT_CODES)


def _add_serve(sub: Any) -> None:
    add_serve_parser(sub, load_targets, EXIT_CODES)


#: Each subcommand's parser, in the order ``--help`` lists them.
SUBCOMMANDS = (_add_show, add_solve_parser, _add_bom, _add_tco_parser, _add_compare, _add_draw,
               _add_optimize, add_train_parser, add_worst_case_parser, _add_failures, _add_serve,
               _add_graph_queries)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fabricopt`` command."""
    parser = argparse.ArgumentParser(
        prog="fabricopt", description="Design GPU-cluster fabrics and compute what they carry.",
        epilog="Sizes take units: 1GiB, 512MB, 1e9. " + EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"fabricopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def _evaluated_figures(row: dict[str, Any], res: Any) -> str:
    """What an evaluated candidate of ``optimize --all`` delivered (the objective minimised
    first, when it is not capex) and whether it meets the constraints (the reason it is not
    the best, when it is not)."""
    short = row.get("shortfall") or {}
    verdict = ("meets every constraint" if row.get("meets") else
               "; ".join(f"{k} misses by {v:.1%}" for k, v in short.items())
               or "constraints not decided")
    minimised = ("" if res.objective == "capex_usd" else
                 objective_text(row, res.objective, res.gpus) + "; ")
    build = str(row.get("pricing") or "").split(":")[0]  # a default build, or a preset's name
    priced = (f" by the {build}" if " " in build else f" by policy {build!r}") if build else ""
    return (f"{minimised}{row['capex_usd']:,.0f} USD{priced}, all-to-all "
            f"{row['all_to_all_gbps_per_gpu']:,.1f} Gb/s per GPU; {verdict}")


def _cmd_optimize(args: argparse.Namespace) -> int:

    if args.output and len(args.targets) > 1:
        raise FabricOptError(f"-o names one design file, for one search file; got "
                             f"{len(args.targets)} search files (drop -o: each best design "
                             "goes to <search file stem>-best.toml)")
    specs = [load_search(target) for target in args.targets]  # every file checked first
    code = 0
    for i, (target, spec) in enumerate(zip(args.targets, specs, strict=True)):
        if i:
            print("")
        res = optimize(spec["gpus"], space=spec["space"], constraints=spec["constraints"],
                       objective=spec["objective"], time_limit=args.time_limit,
                       full_front=args.full_front, job=spec["job"],
                       serving=spec["serving"], progress=args.progress)
        print(f"{spec['name']}")
        print(res)
        if args.all:
            print("")
            for r in res.rows:
                print(f"{r['name']}: {r['outcome']}"
                      + (f" ({r['reason'] or _evaluated_figures(r, res)})"
                         if r["reason"] or r["outcome"] == "evaluated" else ""))
        if res.best is None:
            code = 1
            continue
        out = args.output or os.path.splitext(os.path.basename(target))[0] + "-best.toml"
        res.write_design(out)
        print(f"best design written to {out}")
    return code


#: Exit code when standard output cannot be written (closed, or a full disk): EX_IOERR of the
#: BSD sysexits.h convention, distinct from 1 (a result not proven) and 2 (bad input).
EXIT_IO_ERROR = 74
#: Exit code after Ctrl-C: 128 + SIGINT, as a shell reports a command the signal ended.
EXIT_INTERRUPTED = 130


def _silence_stdout() -> None:
    """Point standard output at /dev/null so that Python's own flush at exit finds nothing
    to write and prints no second error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (a test's capture, or none at all)
    finally:
        os.close(devnull)


def _say(line: str) -> None:
    """One line on standard error, if there is one to write to."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(line, file=sys.stderr)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse the words; an unknown subcommand or flag is named with a suggestion, and the
    usage shown is the subcommand's (argparse alone shows the top level's, suggesting
    nothing)."""
    commands = {p.prog.split()[-1]: p for p in _subparsers(parser)}
    first = next((w for w in argv if not w.startswith("-")), None)
    if first is not None and first not in commands and argv and argv[0] == first:
        parser.error(f"unknown command {first!r}{did_you_mean(first, commands)}; commands: "
                     + ", ".join(commands))
    if first in commands:  # a signed value is its flag's to refuse, not another flag
        argv = signed_values(commands[first], argv)
    args, extra = parser.parse_known_args(argv)
    if "--" in extra and isinstance(getattr(args, "targets", None), list):
        # '--' ends the options: every word after it is a target or its key=value, also
        # after the targets already read (argparse left them over, '--' first).
        at = extra.index("--")
        args.targets += extra[at + 1:]
        extra = extra[:at]
    if extra:
        sub = commands[args.command]
        flags = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
        unknown = [w for w in extra if w.startswith("-")] or extra
        word = unknown[0].split("=", 1)[0]
        placed = ("" if word.startswith("-") or "=" not in unknown[0] else
                  f": a target's key=value parameters follow it, before its options "
                  f"(fabricopt {args.command} TARGET {unknown[0]} --flag ...), or after '--'")
        # One line, as for every other bad word: the suggestion, not the usage block.
        sub.exit(2, f"{sub.prog}: error: unrecognized argument "
                 f"{unknown[0] if placed else word!r}{placed}"
                 + (did_you_mean(word, flags) if word.startswith("-") else "")
                 + f"; see: fabricopt {args.command} --help\n")
    _refuse_flags_as_targets(commands[args.command], args)
    _refuse_empty_words(commands[args.command], args)
    return args


def _refuse_flags_as_targets(sub: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A flag of the command written after '--' (which ends the options, so argparse reads it
    as a target) is refused in one line that says where it belongs: it was meant as a flag,
    and as a target it would be read as a generator's name, or leave the flag unset."""
    flags = {o for a in sub._actions for o in a.option_strings}
    for word in getattr(args, "targets", None) or []:
        name = str(word).split("=", 1)[0]
        if name in flags:
            sub.exit(2, f"{sub.prog}: error: {name} comes after '--', which ends the "
                     "options (every word after it is a target or a key=value): put "
                     f"{name} before '--'; see: fabricopt {args.command} --help\n")


def _refuse_empty_words(sub: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An option given the empty word (``--solver ''``, ``--metrics ''``) is refused in one
    line: no flag takes it, and read as "not given" it would be accepted without a word."""
    for action in sub._actions:
        value = getattr(args, action.dest, None)
        if not action.option_strings or value is action.default or value == action.default:
            continue
        words = value if isinstance(value, list | tuple) else [value]
        if any(isinstance(w, str) and not w.strip() for w in words):
            sub.exit(2, f"{sub.prog}: error: {action.option_strings[-1]}: an empty word is not "
                     f"a value; see: fabricopt {args.command} --help\n")


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [p for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for p in dict.fromkeys(a.choices.values())]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for bad input, 74 when standard output
    cannot be written)."""
    parser = build_parser()
    if sys.stdout is None or getattr(sys.stdout, "closed", False):
        # `fabricopt ... >&-`: print() would drop every line without a word.
        _say("fabricopt: error: standard output is closed; nothing could be printed")
        return EXIT_IO_ERROR
    args = _parse(parser, list(sys.argv[1:] if argv is None else argv))
    try:
        try:
            check_seconds(args)
            code = int(args.func(args))
        except (FabricOptError, ValueError) as exc:
            _say(f"fabricopt {args.command}: error: {exc}")
            code = 2
        except KeyboardInterrupt as exc:  # Ctrl-C: one line, and what was kept if anything
            _say(f"fabricopt {args.command}: interrupted" + (f": {exc}" if str(exc) else ""))
            return EXIT_INTERRUPTED
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (`fabricopt solve ... | head`): stop quietly, as Unix tools do,
        # and keep Python from complaining again when it flushes stdout at exit.
        _silence_stdout()
        return 141
    except OSError as exc:
        if exc.filename is not None:
            # A file the command was told to read or write (`draw -o missing/dir/x.png`).
            _say(f"fabricopt {args.command}: error: {exc.filename}: {exc.strerror}")
            return 2
        # Standard output itself failed (`> /dev/full`): say so once, drop what is left.
        _say(f"fabricopt {args.command}: error: cannot write standard output: "
             f"{exc.strerror or exc}")
        _silence_stdout()
        return EXIT_IO_ERROR


if __name__ == "__main__":
    sys.exit(main())
