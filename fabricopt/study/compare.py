"""Batch comparison: evaluate many designs side by side, on this machine or a cluster.

:func:`compare` turns its designs (fabrics, design files, folders of them, sweeps) into small
picklable *tasks*, one per fabric, and evaluates each independently: the task names a design
file and the values that pick one point of it, and the fabric is built where the task runs, so
a process pool or a Dask cluster ships a few hundred bytes per design, not a graph. Each task
gives one flat row of metrics; a design that fails gives a row with its error and the batch goes
on.

With ``out_dir``, every finished row is appended to ``results.jsonl`` at once (and
``results.csv`` rewritten), and a rerun skips the rows already there: a batch that was killed
loses nothing and repeats nothing. A row is known by its ``key``, a hash of the task (the design
file's content and the values chosen, or the fabric's graph) and of the metrics asked for.

Default metrics (columns; Gb/s per direction, GB/s for collectives as nccl-tests reports):

=================================  ===========================================================
column                             meaning
=================================  ===========================================================
``gpus``, ``switches``             endpoints and switch count
``links``, ``links_<tier>``        physical links, in total and per tier
``all_to_all_status``              status of the all-to-all max-concurrent-flow solve
``all_to_all_theta``               its optimum theta (None unless proven optimal)
``all_to_all_theta_lower/upper``   the certified bracket
``all_to_all_per_endpoint_gbps``   bandwidth each GPU delivers in all-to-all (None unless
                                   optimal); ``_lower``/``_upper``: the bracket in Gb/s
``binding_tier``                   the tier whose links limit the all-to-all
``any_traffic_per_endpoint_gbps``  certified rate at which *every* traffic, so the worst-case
                                   permutation, is carried (two-phase routing,
                                   :func:`~fabricopt.valiant_rate`); a lower bound on the
                                   worst-case permutation rate
``bisection_gbps``                 best bisection cut found; ``bisection_lower_gbps`` its
                                   certified lower bound, ``bisection_exact`` whether they meet
``bisection_per_endpoint_gbps``    ``bisection_gbps`` per GPU
``message_bytes``                  buffer size of the collective bounds
``all_reduce_busbw_GBps``          best all-reduce busbw the fabric allows (a bound)
``all_reduce_achievable_busbw_GBps``  busbw of the best schedule known to exist
``capex_usd``, ``power_w``         network capex and power (:func:`~fabricopt.estimate_cost`)
``capex_per_gpu_usd``, ...         per GPU; ``usd_per_delivered_gbps`` and
                                   ``w_per_delivered_gbps``: per GPU per all-to-all Gb/s proven
                                   delivered (``all_to_all_per_endpoint_gbps_lower``)
=================================  ===========================================================

Optional metric ``"routing"`` (``metrics=[..., "routing"]``; not in the default set): the
all-to-all routed as deployed (:func:`~fabricopt.routed_flow`), beside its optimum:

==========================================  ==================================================
column                                      meaning
==========================================  ==================================================
``routing_ecmp_theta``                      theta under ECMP (equal split over shortest paths)
``routing_wcmp_theta``                      theta under WCMP (split in proportion to capacity)
``routing_static_theta``                    theta under static destination-based tables
``routing_hash_theta_median``, ``_p5``      median and 5th percentile of theta over
                                            ``routing_trials`` draws of per-flow hashing
                                            (one flow per pair, seeded by ``routing_seed``)
``routing_<policy>_efficiency``             routed theta / optimal all-to-all theta, for
                                            ``ecmp``, ``wcmp``, ``static``,
                                            ``hash_median`` and ``hash_p5`` (None unless the
                                            optimum is proven)
``routing_hash_trials``, ``routing_seed``   the draws behind the hashed columns
==========================================  ==================================================

Every row also has ``name``, ``file``, ``family``, one column per swept key, ``key``, ``error``
(empty when the row succeeded) and ``seconds`` (wall time of the evaluation).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import hashlib
import io
import json
import math
import os
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._checks import check_int, check_path, did_you_mean, fail, parse_bytes
from .._progress import progress_bar
from ..errors import FabricOptError
from ..fabric import Fabric

#: A metric: a name of :data:`METRICS`, or a function ``f(fab) -> mapping of column: value``
#: (module-level, so it pickles for process pools and clusters).
Metric = str | Callable[[Fabric], Mapping[str, Any]]

#: The files a batch writes into ``out_dir``.
ROWS_FILE = "results.jsonl"
CSV_FILE = "results.csv"

#: Environment variables that cap the threads of BLAS and OpenMP pools in a worker, so tasks
#: running side by side do not each start one thread per core.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# -- what a worker runs ------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignTask:
    """One fabric to evaluate, small enough to pickle: a design file and the parameter values
    that pick one of its fabrics, or (for a Fabric given directly) the fabric itself.

    ``point`` holds the swept values (they become columns); ``error`` is set when the design
    could not even be read, and the worker then returns it as the row.
    """

    label: str
    path: str | None = None
    point: dict[str, Any] = field(default_factory=dict)
    fabric: Fabric | None = None
    error: str = ""
    source_hash: str = ""


@dataclass(frozen=True)
class _Job:
    task: DesignTask
    metrics: tuple[Metric, ...]
    message_bytes: float
    key: str
    limit_threads: bool
    routing_trials: int = 20
    routing_seed: int = 0


def _summary_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    s = fab.summary()
    row: dict[str, Any] = {"gpus": s.endpoints, "switches": s.nodes_by_role.get("switch", 0),
                           "links": sum(s.links_by_tier.values())}
    row.update({f"links_{tier}": n for tier, n in s.links_by_tier.items()})
    return row


def _all_to_all_flow(fab: Fabric, ctx: dict[str, Any]) -> Any:
    """The all-to-all max-concurrent-flow result, solved once per design and kept in ``ctx``."""
    if "flow" not in ctx:
        from ..flow import max_concurrent_flow
        from ..traffic import all_to_all

        ctx["flow"] = max_concurrent_flow(fab, all_to_all(fab))
    return ctx["flow"]


def _all_to_all_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..traffic import all_to_all

    traffic = all_to_all(fab)
    r = _all_to_all_flow(fab, ctx)
    sent_gbps = traffic.mean_out_gbps()  # theta scales this to what each GPU delivers
    optimal = r.status == "optimal"
    return {"all_to_all_status": r.status,
            "all_to_all_theta": r.theta if optimal else None,
            "all_to_all_theta_lower": r.lower, "all_to_all_theta_upper": r.upper,
            "all_to_all_per_endpoint_gbps": r.theta * sent_gbps if optimal else None,
            "all_to_all_per_endpoint_gbps_lower": r.lower * sent_gbps,
            "all_to_all_per_endpoint_gbps_upper": r.upper * sent_gbps,
            "binding_tier": r.binding_tier}


def _any_traffic_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..flow import valiant_rate

    h = valiant_rate(fab)
    return {"any_traffic_per_endpoint_gbps": h.rate_gbps if h.status == "optimal" else None,
            "any_traffic_status": h.status}


def _bisection_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..analysis.bisection import bisection_bandwidth

    b = bisection_bandwidth(fab)
    return {"bisection_gbps": b.upper_gbps, "bisection_lower_gbps": b.lower_gbps,
            "bisection_exact": b.exact, "bisection_per_endpoint_gbps": b.per_endpoint_gbps,
            "full_bisection_ratio": b.full_bisection_ratio}


def _all_reduce_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..collectives.bounds import collective_bounds

    c = collective_bounds(fab, "all_reduce", message_bytes=ctx["message_bytes"])
    return {"message_bytes": ctx["message_bytes"], "all_reduce_busbw_GBps": c.busbw_GBps,
            "all_reduce_achievable_busbw_GBps": c.achievable_busbw_GBps,
            "all_reduce_binding": c.binding}


def _routing_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..routing import routed_flow
    from ..traffic import all_to_all

    traffic = all_to_all(fab)
    flow = _all_to_all_flow(fab, ctx)
    # Efficiency only against a proven optimum: a bracket's ends would flatter or wrong it.
    optimum = flow.theta if flow.status == "optimal" and flow.theta else None

    def efficiency(theta: float) -> float | None:
        return theta / optimum if optimum else None

    row: dict[str, Any] = {}
    for policy in ("ecmp", "wcmp", "static"):
        theta = routed_flow(fab, traffic, routing=policy).theta
        row[f"routing_{policy}_theta"] = theta
        row[f"routing_{policy}_efficiency"] = efficiency(theta)
    trials, seed = ctx["routing_trials"], ctx["routing_seed"]
    hashed = routed_flow(fab, traffic, routing="hash", trials=trials, seed=seed).distribution
    for stat in ("median", "p5"):
        row[f"routing_hash_theta_{stat}"] = hashed[stat]
        row[f"routing_hash_{stat}_efficiency"] = efficiency(hashed[stat])
    row.update({"routing_hash_trials": trials, "routing_seed": seed})
    return row


def _cost_metrics(fab: Fabric, ctx: dict[str, Any]) -> dict[str, Any]:
    from ..cost import estimate_cost

    est = estimate_cost(fab)
    row: dict[str, Any] = {"capex_usd": est.capex_usd, "power_w": est.power_w,
                           "capex_per_gpu_usd": est.per_endpoint_usd,
                           "power_per_gpu_w": est.per_endpoint_w,
                           "usd_per_delivered_gbps": None, "w_per_delivered_gbps": None}
    flow = ctx.get("flow")
    # Divide by the bandwidth proven delivered (the lower end of the bracket), so the figure
    # per Gb/s is never flattering when a solve left its bracket open.
    if flow is not None and flow.per_endpoint_gbps > 0:
        delivered = est.per_delivered_gbps(flow)
        row["usd_per_delivered_gbps"] = delivered.usd_per_gbps
        row["w_per_delivered_gbps"] = delivered.w_per_gbps
    return row


#: The named metrics. ``cost`` reads the all-to-all result when ``all_to_all`` or ``routing``
#: ran before it; ``routing`` solves it once, shared with ``all_to_all``.
METRICS: dict[str, Callable[[Fabric, dict[str, Any]], dict[str, Any]]] = {
    "summary": _summary_metrics,
    "all_to_all": _all_to_all_metrics,
    "routing": _routing_metrics,
    "any_traffic": _any_traffic_metrics,
    "bisection": _bisection_metrics,
    "all_reduce": _all_reduce_metrics,
    "cost": _cost_metrics,
}

#: What :func:`compare` computes when ``metrics`` is not given, in this order (``routing``
#: is asked for by name: its hashed trials cost more than the rest on large designs).
DEFAULT_METRICS = ("summary", "all_to_all", "any_traffic", "bisection", "all_reduce", "cost")


@contextlib.contextmanager
def limit_threads(threads: int = 1) -> Iterator[None]:
    """Cap BLAS/OpenMP pools (and HiGHS, through them) at ``threads`` while the block runs.

    Sets :data:`THREAD_ENV` for libraries loaded inside the block, and resizes the pools
    already loaded (``threadpoolctl``). The environment is restored afterwards.

    >>> import os
    >>> with limit_threads(1):
    ...     os.environ["OMP_NUM_THREADS"]
    '1'
    """
    from threadpoolctl import threadpool_limits

    saved = {name: os.environ.get(name) for name in THREAD_ENV}
    os.environ.update({name: str(threads) for name in THREAD_ENV})
    try:
        with threadpool_limits(threads):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _build(task: DesignTask) -> Fabric:
    if task.fabric is not None:
        return task.fabric
    from ..io.design_files import load_design

    loaded = load_design(task.path, **task.point)  # type: ignore[arg-type]
    return loaded[0] if isinstance(loaded, list) else loaded


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, FabricOptError):  # an unexpected failure: say where it happened
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            text += f" (at {Path(last.filename).name}:{last.lineno})"
    return text


def _evaluate(job: _Job) -> dict[str, Any]:
    """Build the task's fabric and compute every metric: one row. Runs in the worker."""
    task = job.task
    row: dict[str, Any] = {"name": task.label, "file": task.path or "", "family": "",
                           **task.point}
    start = time.perf_counter()
    if task.error:
        row["error"] = task.error
    else:
        guard = limit_threads(1) if job.limit_threads else contextlib.nullcontext()
        try:
            with guard:
                fab = _build(task).validate()
                row["name"] = fab.name
                row["family"] = fab.design.get("family", "")
                ctx: dict[str, Any] = {"message_bytes": job.message_bytes,
                                       "routing_trials": job.routing_trials,
                                       "routing_seed": job.routing_seed}
                for metric in job.metrics:
                    values = (METRICS[metric](fab, ctx) if isinstance(metric, str)
                              else metric(fab))
                    row.update({str(k): _plain(v) for k, v in dict(values).items()})
            row["error"] = ""
        except Exception as exc:  # noqa: BLE001 - a failing design is a row, the batch goes on
            row["error"] = _describe(exc)
    row["key"] = job.key
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def _plain(value: Any) -> Any:
    """Numpy scalars and tuples as plain JSON-able Python values."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str)):
        value = value.item()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


# -- turning designs into tasks ----------------------------------------------------------------
def _file_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _fabric_hash(fab: Fabric) -> str:
    h = hashlib.sha256()
    h.update(repr((fab.name, fab.endpoints)).encode())
    for v, d in sorted(fab.graph.nodes(data=True), key=lambda nd: repr(nd[0])):
        h.update(repr((v, sorted(d.items(), key=repr))).encode())
    for u, v, d in sorted(fab.graph.edges(data=True), key=lambda e: repr(e[:2])):
        h.update(repr((u, v, sorted(d.items(), key=repr))).encode())
    return h.hexdigest()


def _tasks_of_file(path: str, overrides: Mapping[str, Any] | None = None) -> list[DesignTask]:
    from ..io.design_files import design_points

    label = Path(path).stem
    overrides = dict(overrides or {})
    try:
        points = [{**overrides, **p} for p in design_points(path, **overrides)]
        digest = _file_hash(path)
    except (FabricOptError, OSError) as exc:
        return [DesignTask(label=label, path=path, error=_describe(exc),
                           source_hash=hashlib.sha256(str(exc).encode()).hexdigest())]
    return [DesignTask(label=label, path=path, point=point, source_hash=digest)
            for point in points]


def design_tasks(designs: Any) -> list[DesignTask]:
    """The tasks :func:`compare` runs for ``designs``: one per fabric, in order.

    Parameters
    ----------
    designs : Fabric, path, or iterable of them
        Fabrics; design files (``.toml``), a sweep giving one task per point; folders, giving
        their ``*.toml`` files in name order; ``(design file, {key: value})`` pairs, the values
        overriding the file's (they become columns, as swept values do).

    Returns
    -------
    list of DesignTask

    Examples
    --------
    >>> import fabricopt as fo
    >>> [t.label for t in design_tasks([fo.ring(4), fo.ring(6)])]
    ['ring(4)', 'ring(6)']
    """
    func = "compare"
    items = [designs] if isinstance(designs, (Fabric, str, os.PathLike)) else designs
    try:
        items = list(items)
    except TypeError:
        raise fail(func, "designs", "a Fabric, a design file or folder, or an iterable of "
                   "them", type(designs).__name__) from None
    tasks: list[DesignTask] = []
    for item in items:
        if isinstance(item, Fabric):
            tasks.append(DesignTask(label=item.name, fabric=item, source_hash=_fabric_hash(item)))
        elif (isinstance(item, tuple) and len(item) == 2
              and isinstance(item[0], (str, os.PathLike)) and isinstance(item[1], Mapping)):
            path = os.fspath(item[0])
            if not (os.path.isfile(path) and path.endswith(".toml")):
                raise fail(func, "designs", "(design file, overrides) pairs naming existing "
                           ".toml files", path)
            tasks.extend(_tasks_of_file(path, item[1]))
        elif isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if os.path.isdir(path):
                files = sorted(str(p) for p in Path(path).glob("*.toml"))
                if not files:
                    raise fail(func, "designs", "folders holding design files (*.toml)", path)
                for file in files:
                    tasks.extend(_tasks_of_file(file))
            elif os.path.isfile(path):
                if not path.endswith(".toml"):
                    raise fail(func, "designs", "design files ending in .toml", path)
                tasks.extend(_tasks_of_file(path))
            else:
                raise fail(func, "designs", "existing design files or folders", path)
        else:
            raise fail(func, "designs", "Fabrics, design files or folders",
                       type(item).__name__)
    if not tasks:
        raise fail(func, "designs", "at least one design", designs)
    return tasks


def _metric_id(metric: Metric) -> str:
    if isinstance(metric, str):
        return metric
    return f"{getattr(metric, '__module__', '')}.{getattr(metric, '__qualname__', repr(metric))}"


def _task_key(task: DesignTask, metrics: Sequence[Metric], message_bytes: float,
              routing: tuple[int, int] | None = None) -> str:
    """A stable id: the same design, point and metrics (and, with the ``routing`` metric, its
    trials and seed) give the same key in every run."""
    what: dict[str, Any] = {"source": task.source_hash, "point": task.point,
                            "path": os.path.realpath(task.path) if task.path else None,
                            "metrics": [_metric_id(m) for m in metrics],
                            "message_bytes": message_bytes}
    if routing is not None:
        what["routing"] = list(routing)
    text = json.dumps(what, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- the result --------------------------------------------------------------------------------
_IDENTITY = ("name", "file", "family")
_BOOKKEEPING = ("error", "seconds", "key")


def _columns_of(rows: Iterable[Mapping[str, Any]], swept: Iterable[str] = ()) -> list[str]:
    """Every column: the design's name and source, its swept values, then the metrics in order
    of first appearance (links per tier beside the total), bookkeeping last."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    head = [c for c in _IDENTITY if c in seen]
    head += [c for c in dict.fromkeys(swept) if c in seen and c not in head]
    tail = [c for c in _BOOKKEEPING if c in seen]
    middle = [c for c in seen if c not in head and c not in tail]
    per_tier = [c for c in middle if c.startswith("links_")]
    ordered: list[str] = []
    for c in middle:
        if c in per_tier:
            continue
        ordered.append(c)
        if c == "links":
            ordered += per_tier
    if "links" not in middle:
        ordered += per_tier
    return head + ordered + tail


def _cell(value: Any) -> str:
    """A value as text for CSV and Markdown: compact numbers, JSON for lists, '' for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


class Comparison:
    """What :func:`compare` returns: one row (a dict) per design, in the order given.

    Attributes
    ----------
    rows : list of dict
        The rows; missing cells are None.
    columns : list of str
        Every column, in order of first appearance.

    Examples
    --------
    Rows are dicts; ``swept`` names columns to show right after the design's name.

    >>> table = Comparison([{"name": "a", "gpus": 8}, {"name": "b", "gpus": 16, "error": ""}])
    >>> table.columns, len(table)
    (['name', 'gpus', 'error'], 2)
    >>> print(table.to_csv(), end="")
    name,gpus,error
    a,8,
    b,16,
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], swept: Iterable[str] = (),
                 tasks: Mapping[str, DesignTask] | None = None) -> None:
        raw = [dict(r) for r in rows]
        self.columns = _columns_of(raw, swept)
        #: The task of each row by ``key`` (when :func:`compare` made the table): what
        #: :meth:`fabric` rebuilds.
        self.tasks: dict[str, DesignTask] = dict(tasks or {})
        self.rows = [{c: r.get(c) for c in self.columns} for r in raw]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The rows whose evaluation raised (their ``error`` says why)."""
        return [r for r in self.rows if r.get("error")]

    def column(self, name: str) -> list[Any]:
        """One column's values, row by row."""
        if name not in self.columns:
            raise fail("Comparison.column", "name", "a column" + did_you_mean(name, self.columns),
                       name)
        return [r[name] for r in self.rows]

    def fabric(self, index: int) -> Fabric:
        """Build the fabric of row ``index`` again (from its design file, or the Fabric given).

        >>> import fabricopt as fo
        >>> fo.compare(fo.ring(4), metrics=["summary"]).fabric(0).name
        'ring(4)'
        """
        task = self.tasks.get(self.rows[index].get("key"))
        if task is None:
            raise FabricOptError(f"Comparison.fabric(): row {index} has no design to rebuild "
                                 "(the table was not made by compare())")
        return _build(task)

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as a list of dicts (copies)."""
        return [dict(r) for r in self.rows]

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The table as CSV text (lists as JSON, None as an empty cell); also written to
        ``path`` when given."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([_cell(row[c]) for c in self.columns])
        text = buffer.getvalue()
        if path is not None:
            _write_atomic(path, text)
        return text

    def to_markdown(self, columns: Sequence[str] | None = None) -> str:
        """The table as Markdown (``columns``: a subset, default all but the key)."""
        cols = list(columns) if columns is not None else [c for c in self.columns if c != "key"]
        for c in cols:
            if c not in self.columns:
                raise fail("Comparison.to_markdown", "columns", "columns of the table"
                           + did_you_mean(c, self.columns), c)
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for row in self.rows:
            lines.append("| " + " | ".join(_cell(row[c]).replace("|", "\\|") for c in cols)
                         + " |")
        return "\n".join(lines)

    def to_json(self, path: str | os.PathLike[str] | None = None, indent: int | None = 1) -> str:
        """The rows as a JSON array (NaN as null); also written to ``path`` when given."""
        text = json.dumps(_json_safe(self.rows), indent=indent)
        if path is not None:
            _write_atomic(path, text + "\n")
        return text

    def to_pandas(self) -> Any:
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise FabricOptError("Comparison.to_pandas(): pandas is not installed; "
                                 "pip install pandas, or use to_records()/to_csv()") from None
        return pd.DataFrame(self.rows, columns=self.columns)

    def __repr__(self) -> str:
        head = (f"<Comparison: {len(self.rows)} design{'s' if len(self.rows) != 1 else ''}"
                f", {len(self.failed)} failed>")
        shown = [c for c in ("name", "gpus", "all_to_all_per_endpoint_gbps", "capex_usd",
                             "error") if c in self.columns]
        if not shown or not self.rows:
            return head
        # A missing value is "unknown" (not proven), except in a row that failed: "-".
        cells = [[_short(r[c], bool(r.get("error"))) for c in shown] for r in self.rows[:20]]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(shown)]
        lines = [head, "  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True))
                  for row in cells]
        if len(self.rows) > 20:
            lines.append(f"... {len(self.rows) - 20} more")
        return "\n".join(lines)


def _short(value: Any, failed: bool = False) -> str:
    text = ("-" if failed else "unknown") if value is None else _cell(value)
    return text if len(text) <= 48 else text[:45] + "..."


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


# -- the store of finished rows ------------------------------------------------------------------
class _RowStore:
    """``results.jsonl`` (append-only, one row per line) and ``results.csv`` in ``out_dir``."""

    def __init__(self, out_dir: str | os.PathLike[str], swept: Sequence[str]) -> None:
        self.swept = swept
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_path = self.dir / ROWS_FILE
        self.rows: dict[str, dict[str, Any]] = {}
        if self.rows_path.exists():
            with open(self.rows_path, encoding="utf-8") as f:
                for line in f:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short when a run was killed mid-write
                    if isinstance(row, dict) and "key" in row:
                        self.rows[row["key"]] = row  # a later run's row replaces a failed one

    def done(self, key: str) -> bool:
        row = self.rows.get(key)
        return row is not None and not row.get("error")

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        with open(self.rows_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(_json_safe(row)) + "\n")
            f.flush()
            os.fsync(f.fileno())
        Comparison(self.rows.values(), self.swept).to_csv(self.dir / CSV_FILE)

    def compact(self) -> None:
        """Rewrite the rows file with one line per key (retried rows leave older lines)."""
        _write_atomic(self.rows_path, "".join(json.dumps(_json_safe(r)) + "\n"
                                              for r in self.rows.values()))
        Comparison(self.rows.values(), self.swept).to_csv(self.dir / CSV_FILE)


# -- the entry point ---------------------------------------------------------------------------
def compare(designs: Any, *, metrics: Sequence[Metric] | None = None,
            executor: cf.Executor | None = None, progress: bool | None = None,
            out_dir: str | os.PathLike[str] | None = None,
            message_bytes: float | str = 2**30, routing_trials: int = 20,
            routing_seed: int = 0) -> Comparison:
    """Evaluate designs side by side: one row of metrics per fabric.

    Parameters
    ----------
    designs : Fabric, path, or iterable of them
        Fabrics; design files (``.toml``, a sweep giving one row per point with the swept
        values as columns); folders, giving their ``*.toml`` files in name order;
        ``(design file, {key: value})`` pairs that override the file's parameters. The same
        design given twice is evaluated once.
    metrics : sequence, optional
        Names from :data:`METRICS` and/or functions ``f(fab) -> {column: value}``
        (module-level, so they pickle). Default: :data:`DEFAULT_METRICS`, every named metric
        but ``"routing"`` (add it by name: ``metrics=[*DEFAULT_METRICS, "routing"]``).
    executor : concurrent.futures.Executor, optional
        Where the tasks run: None in this process, one after another; a
        :class:`~concurrent.futures.ProcessPoolExecutor` on this machine; a Dask cluster
        through ``distributed.Client(...).get_executor()``. With an executor each task caps
        its BLAS/OpenMP threads at one (:func:`limit_threads`), so tasks side by side do not
        oversubscribe the cores.
    progress : bool, optional
        A progress bar on stderr (tqdm); default: when stderr is a terminal.
    out_dir : path, optional
        Folder for ``results.jsonl`` and ``results.csv``, written as each row finishes; the
        rows already there (by ``key``, without error) are not computed again.
    message_bytes : float or str
        Buffer size of the all-reduce bounds, in bytes or with a unit (``"1GiB"``).
    routing_trials : int
        Draws of per-flow hashing behind the ``routing`` metric's hashed columns.
    routing_seed : int
        Seed of those draws (fixed, so a table is reproducible and a rerun skips its rows).

    Returns
    -------
    Comparison
        The rows in design order (``to_csv``, ``to_markdown``, ``to_json``, ``to_records``,
        ``to_pandas``).

    Raises
    ------
    InvalidParameterError
        Before any work, for designs that are not fabrics or existing design files/folders,
        an unknown metric name, an executor that is not a ``concurrent.futures.Executor`` or
        a bad ``message_bytes``, ``routing_trials`` or ``routing_seed``. A design that fails
        later is a row with its ``error``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> table = fo.compare([fo.ring(4), fo.ring(8)], metrics=["summary", "all_to_all"])
    >>> [(r["name"], r["gpus"], round(r["all_to_all_theta"], 6)) for r in table]
    [('ring(4)', 4, 0.5), ('ring(8)', 8, 0.125)]

    Routing efficiency: on a ring, all-to-all pairs three hops apart split evenly two ways,
    which the optimum also does, so ECMP reaches it.

    >>> t = fo.compare(fo.ring(6), metrics=["routing"], routing_trials=4)
    >>> round(t[0]["routing_ecmp_efficiency"], 9)
    1.0
    """
    func = "compare"
    message_bytes = parse_bytes(func, "message_bytes", message_bytes)
    routing_trials = check_int(func, "routing_trials", routing_trials, minimum=1)
    routing_seed = check_int(func, "routing_seed", routing_seed, minimum=0)
    if isinstance(metrics, str | Mapping) or (metrics is not None
                                              and not isinstance(metrics, Iterable)):
        raise fail(func, "metrics", "a sequence of metric names or functions", metrics)
    chosen: tuple[Metric, ...] = DEFAULT_METRICS if metrics is None else tuple(metrics)
    for m in chosen:
        if isinstance(m, str) and m not in METRICS:
            raise fail(func, "metrics", "names of " + ", ".join(METRICS) + " or functions"
                       + did_you_mean(m, METRICS), m)
        if not isinstance(m, str) and not callable(m):
            raise fail(func, "metrics", "names or functions", m)
    if executor is not None and not isinstance(executor, cf.Executor):
        raise fail(func, "executor", "a concurrent.futures.Executor or None",
                   type(executor).__name__)
    if progress is not None and not isinstance(progress, bool):
        raise fail(func, "progress", "True, False or None", progress)
    if out_dir is not None:
        out_dir = check_path(func, "out_dir", out_dir)
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise fail(func, "out_dir", "a directory (it exists as a file)", os.fspath(out_dir))

    jobs: dict[str, _Job] = {}
    routing = (routing_trials, routing_seed) if "routing" in chosen else None
    for task in design_tasks(designs):
        key = _task_key(task, chosen, message_bytes, routing)
        jobs.setdefault(key, _Job(task, chosen, message_bytes, key, executor is not None,
                                  routing_trials, routing_seed))
    swept = [k for job in jobs.values() for k in job.task.point]
    store = _RowStore(out_dir, swept) if out_dir is not None else None
    results: dict[str, dict[str, Any]] = {}
    if store is not None:
        results = {k: store.rows[k] for k in jobs if store.done(k)}
    todo = [job for k, job in jobs.items() if k not in results]
    bar = progress_bar(progress, desc="compare", unit="design", total=len(jobs),
                       initial=len(results))

    def finish(row: dict[str, Any]) -> None:
        results[row["key"]] = row
        if store is not None:
            store.add(row)
        if bar is not None:
            bar.set_postfix_str(str(row.get("name", ""))[:40])
            bar.update(1)

    try:
        if executor is None:
            for job in todo:
                finish(_evaluate(job))
        else:
            futures = {executor.submit(_evaluate, job): job for job in todo}
            try:
                for future in cf.as_completed(futures):
                    job = futures[future]
                    try:
                        row = future.result()
                    except Exception as exc:  # noqa: BLE001 - the worker died, not the design
                        row = {"name": job.task.label, "file": job.task.path or "",
                               **job.task.point, "error": _describe(exc), "key": job.key}
                    finish(row)
            finally:
                for future in futures:
                    future.cancel()  # after an interrupt, start nothing new
        if store is not None:
            store.compact()
    finally:
        if bar is not None:
            bar.close()
    return Comparison((results[k] for k in jobs), swept, {k: j.task for k, j in jobs.items()})
