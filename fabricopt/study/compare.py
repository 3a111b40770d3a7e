"""Batch comparison: evaluate many designs side by side, on this machine or a cluster.

:func:`compare` turns its designs (fabrics, design files, folders of them, sweeps) into small
picklable *tasks*, one per fabric, and evaluates each independently: the task names a design
file and the values that pick one point of it, and the fabric is built where the task runs, so
a process pool or a Dask cluster ships a few hundred bytes per design, not a graph. Each task
gives one flat row of metrics (the columns and their meaning: :mod:`fabricopt.study.metrics`,
the registry :func:`~fabricopt.optimize` reads too); a design that fails gives a row with its
error and the batch goes on.

With ``out_dir``, every finished row is appended to ``results.jsonl`` at once (and
``results.csv`` rewritten), and a rerun skips the rows already there: a batch that was killed
loses nothing and repeats nothing. A row is known by its ``key``, a hash of the task (the design
file's content and the values chosen, or the fabric's graph) and of the metrics asked for.

Every row also has ``name``, ``file``, ``family``, one column per swept key, ``key``, ``error``
(empty when the row succeeded) and ``seconds`` (wall time of the evaluation).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import hashlib
import inspect
import json
import os
import re
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._checks import check_int, check_path, did_you_mean, fail, near_file, parse_bytes
from .._gc import frozen_gc, paused_gc
from .._toml import read_toml
from .._unchanged import unchanged
from ..errors import DesignFileError, FabricOptError
from ..fabric import Fabric
from ..generators import GENERATORS
from ..io.design_files import design_points, load_design
from ..workload.plan import TrainingJob
from ..workload.plan_search import PlanSearch, job_or_search
from ..workload.serving_capacity import serving_workload
from .execution import (
    Progress,
    check_executor,
    check_progress,
    limit_threads,
    load_for_workers,
    run,
)
from .metrics import DEFAULT_METRICS, METRICS, MetricContext, compute_metrics
from .table import CSV_FILE, ROWS_FILE, Comparison, RowStore

__all__ = ["CSV_FILE", "DEFAULT_METRICS", "METRICS", "ROWS_FILE", "Comparison", "DesignTask",
           "compare", "design_tasks", "row_name", "tasks_without_job"]

#: How a metric is asked for: a name of :data:`~fabricopt.study.metrics.METRICS`, or a
#: function ``f(fab) -> mapping of column: value`` (module-level, so it pickles for process
#: pools and clusters).
MetricSpec = str | Callable[[Fabric], Mapping[str, Any]]
#: Its name of a release ago, kept for a release (a registry entry is a ``metrics.Metric``).
Metric = MetricSpec


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
    metrics: tuple[MetricSpec, ...]
    message_bytes: float
    key: str
    cap_threads: bool
    routing_trials: int = 20
    routing_seed: int = 0
    training_job: Any = None
    serving: Any = None
    each_fabric: Callable[[Fabric, dict[str, Any]], Any] | None = None


def build_design(task: DesignTask) -> Fabric:
    """The fabric of a task: the one given, or its design file's point built."""
    if task.fabric is not None:
        return task.fabric
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


def _evaluate(job: _Job, keep: dict[str, Fabric] | None = None) -> dict[str, Any]:
    """Build the task's fabric and compute every metric: one row. Runs in the worker.
    A row that succeeded with named metrics hands its fabric to ``job.each_fabric`` (after
    its ``seconds`` are taken), or else ``keep`` (in this process) receives it by its key."""
    task = job.task
    row: dict[str, Any] = {"name": task.label, "file": task.path or "", "family": "",
                           **task.point}
    start = time.perf_counter()
    built: Fabric | None = None
    if task.error:
        row["error"] = task.error
    else:
        guard = limit_threads(1) if job.cap_threads else contextlib.nullcontext()
        try:
            with guard, contextlib.ExitStack() as frozen:
                with paused_gc():
                    fab = build_design(task)
                    # Frozen before the collector wakes: its first pass would otherwise
                    # walk the millions of objects just built (a quarter second on a
                    # 24,576-GPU cluster), alive through the row anyway.
                    frozen.enter_context(frozen_gc())
                # Nothing edits the fabric from here to the row's end: the arrays validate
                # reads serve every metric.
                frozen.enter_context(unchanged(fab))
                with paused_gc():  # a reading of the arrays: no reference cycles
                    fab.validate()
                row["name"] = row_name(fab.name, task.point)
                row["family"] = fab.design.get("family", "")
                ctx = MetricContext(message_bytes=job.message_bytes,
                                    routing_trials=job.routing_trials,
                                    routing_seed=job.routing_seed, job=job.training_job,
                                    serving=job.serving)
                compute_metrics(fab, job.metrics, ctx, row)
            row["error"] = ""
            # Named metrics leave the fabric as built (a function may not).
            if all(isinstance(m, str) for m in job.metrics):
                built = fab
        except Exception as exc:  # noqa: BLE001 - a failing design is a row, the batch goes on
            row["error"] = _describe(exc)
    row["key"] = job.key
    row["seconds"] = round(time.perf_counter() - start, 3)  # the row's metrics only
    if built is not None and job.each_fabric is not None:
        # Where the row ran, from the fabric it built: nothing is built twice or shipped.
        with contextlib.suppress(Exception):  # the caller does it again if this failed
            job.each_fabric(built, row)
    elif built is not None and keep is not None:
        keep[job.key] = built
    return row


#: Most arcs (all rows together) of the fabrics a comparison run in this process keeps for
#: :meth:`Comparison.fabric <fabricopt.study.table.Comparison.fabric>` to hand back, so a
#: report draws them without building them again (about 450 bytes an arc: 0.45 GB; the
#: shipped topologies/ hold 850,000 arcs, the 24,576-GPU cluster 301,344).
KEPT_ARCS = 1_000_000


class _Kept:
    """The fabrics of rows computed in this process, up to :data:`KEPT_ARCS` arcs in all;
    called with a row's task it hands its fabric back once (then drops it), or builds it
    again."""

    def __init__(self, keys: Mapping[int, str]) -> None:
        self.keys = keys  # a row's key by id(task)
        self.fabrics: dict[str, Fabric] = {}
        self.arcs = 0

    def __setitem__(self, key: str, fab: Fabric) -> None:
        arcs = sum(map(len, fab.graph._succ.values()))  # C-level: no view over the arcs
        if self.arcs + arcs <= KEPT_ARCS:
            self.fabrics[key] = fab
            self.arcs += arcs

    def __call__(self, task: DesignTask) -> Fabric:
        fab = self.fabrics.pop(self.keys.get(id(task), ""), None)
        if fab is None:
            with paused_gc():  # the collector's passes would walk the graph being built
                fab = build_design(task)
        return fab


def row_name(name: str, point: Mapping[str, Any]) -> str:
    """A design's name with every swept or overridden value it does not already show, so
    that two rows of one generator or file never share a name.

    A value counts as shown when the name holds ``key=`` or the value as a word (``dgx_h100``
    also as ``DGX H100``).

    >>> row_name("cluster(96 x DGX H100, rail_optimized)",
    ...          {"scale_up": "dgx_h100", "nodes": 96, "oversubscription": 2})
    'cluster(96 x DGX H100, rail_optimized) oversubscription=2'
    >>> row_name("ring [n=8]", {"n": 8})
    'ring [n=8]'
    """
    missing = []
    for key, value in point.items():
        text = str(value)
        shown = {text, text.replace("_", " ")}
        if f"{key}=" in name or any(
                re.search(r"(?<![\w.])" + re.escape(t) + r"(?![\w.])", name, re.IGNORECASE)
                for t in shown if t):
            continue
        missing.append(f"{key}={text}")
    return " ".join([name, *missing])


# -- turning designs into tasks ----------------------------------------------------------------
#: The parameters whose product sizes a design file's fabric, for the order its rows go to
#: workers: counts of nodes, scalable units and their nodes, racks, accelerators, planes...
SIZE_PARAMS = ("nodes", "scalable_units", "nodes_per_su", "racks", "accelerators", "gpus",
               "endpoints", "planes", "n", "k")


@functools.cache
def _count_defaults(family: str) -> dict[str, Any]:
    generator = GENERATORS.get(family)
    if generator is None:
        return {}
    return {name: p.default for name, p in inspect.signature(generator).parameters.items()
            if name in SIZE_PARAMS and p.default is not inspect.Parameter.empty}


def _size_hint(task: DesignTask) -> int:
    """A cheap guess of how much work a task is, read without building its fabric: a
    Fabric's node count, or the product of a design file's counts (:data:`SIZE_PARAMS`, from
    its ``[params]``, the task's point, else the generator's defaults); 0 where nothing
    tells. :func:`compare` sends the largest first to an executor's workers; a wrong guess
    costs only balance.

    >>> import fabricopt as fo
    >>> _size_hint(design_tasks(fo.ring(6))[0])
    6
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     pod = pathlib.Path(folder) / "pod.toml"
    ...     _ = pod.write_text('family = "superpod"\\n[params]\\nscalable_units = 4\\n')
    ...     _size_hint(design_tasks(str(pod))[0])  # 4 SU x 32 nodes, superpod's default
    128
    """
    if task.error:
        return 0
    if task.fabric is not None:
        return task.fabric.graph.number_of_nodes()
    try:
        data = read_toml(task.path, DesignFileError, "design file")
        params = {**_count_defaults(str(data.get("family"))), **dict(data.get("params") or {}),
                  **task.point}
    except (DesignFileError, TypeError, ValueError):
        return 0
    size = 1
    for key in SIZE_PARAMS:
        value = params.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            size *= value
    return size


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
        elif (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Fabric)
              and isinstance(item[1], Mapping)):
            tasks.append(DesignTask(label=row_name(item[0].name, item[1]), fabric=item[0],
                                    point=dict(item[1]), source_hash=_fabric_hash(item[0])))
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
                raise fail(func, "designs", "existing design files or folders", path,
                           hint=near_file(path))
        else:
            raise fail(func, "designs", "Fabrics, design files or folders",
                       type(item).__name__)
    if not tasks:
        raise fail(func, "designs", "at least one design", designs)
    return tasks


def tasks_without_job(tasks: Sequence[DesignTask]) -> list[str]:
    """The labels of tasks whose design carries no ``[job]`` table (a design file's, or a
    Fabric's ``design``), read without building any fabric; a task that could not be read
    is left to fail as its own row.

    >>> import fabricopt as fo
    >>> tasks_without_job(design_tasks([fo.ring(4)]))
    ['ring(4)']
    """
    missing = []
    for task in tasks:
        if task.error:
            continue
        if task.fabric is not None:
            has = bool((task.fabric.design or {}).get("job"))
        else:
            try:
                has = bool(read_toml(task.path, DesignFileError, "design file").get("job"))
            except DesignFileError:
                continue
        if not has:
            missing.append(task.label if task.fabric is not None else str(task.path))
    return list(dict.fromkeys(missing))


def _metric_id(metric: MetricSpec) -> str:
    if isinstance(metric, str):
        return metric
    return f"{getattr(metric, '__module__', '')}.{getattr(metric, '__qualname__', repr(metric))}"


#: The version of a row's columns and of the fabrics a design builds: a row saved under
#: another is computed again, not reused (2: switches counted apart, whole-server Clos leaves).
ROW_SCHEMA = 2


def _task_key(task: DesignTask, metrics: Sequence[MetricSpec], message_bytes: float,
              routing: tuple[int, int] | None = None, job: Any = None) -> str:
    """A stable id: the same design, point and metrics (and, with the ``routing`` metric, its
    trials and seed; with a training job, the job) give the same key in every run of the
    same :data:`ROW_SCHEMA`."""
    what: dict[str, Any] = {"schema": ROW_SCHEMA, "source": task.source_hash,
                            "point": task.point,
                            "path": os.path.realpath(task.path) if task.path else None,
                            "metrics": [_metric_id(m) for m in metrics],
                            "message_bytes": message_bytes}
    if routing is not None:
        what["routing"] = list(routing)
    if job is not None:
        what["job"] = repr(job)
    text = json.dumps(what, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- the entry point ---------------------------------------------------------------------------
def compare(designs: Any, *, metrics: Sequence[MetricSpec] | None = None,
            executor: cf.Executor | None = None, progress: bool | None = None,
            out_dir: str | os.PathLike[str] | None = None,
            message_bytes: float | str = 2**30, routing_trials: int = 20,
            routing_seed: int = 0, job: Any = None, serving: Any = None,
            each_fabric: Callable[[Fabric, dict[str, Any]], Any] | None = None) -> Comparison:
    """Evaluate designs side by side: one row of metrics per fabric.

    Parameters
    ----------
    designs : Fabric, path, or iterable of them
        Fabrics; design files (``.toml``, a sweep giving one row per point with the swept
        values as columns); folders, giving their ``*.toml`` files in name order;
        ``(design file, {key: value})`` pairs that override the file's parameters;
        ``(Fabric, {key: value})`` pairs naming the values that built it. Overridden and
        swept values are columns, and join the row's name where it does not show them. The
        same design given twice is evaluated once.
    metrics : sequence, optional
        Names from :data:`~fabricopt.study.metrics.METRICS` and/or functions
        ``f(fab) -> {column: value}`` (module-level, so they pickle). Default:
        :data:`~fabricopt.study.metrics.DEFAULT_METRICS`, every named metric but
        ``"routing"`` (add it by name: ``metrics=[*DEFAULT_METRICS, "routing"]``).
    executor : concurrent.futures.Executor, optional
        Where the tasks run: None in this process, one after another; a
        :class:`~concurrent.futures.ProcessPoolExecutor` on this machine; a Dask cluster
        through ``distributed.Client(...).get_executor()``. With an executor each task caps
        its BLAS/OpenMP threads at one
        (:func:`~fabricopt.study.execution.limit_threads`), so tasks side by side do not
        oversubscribe the cores.
    progress : bool or callable, optional
        None shows a bar on stderr (tqdm) when it is a terminal, True always, False never;
        a function is called as ``progress(done, total)`` after each design.
    out_dir : path, optional
        Folder for ``results.jsonl`` and ``results.csv``, written as each row finishes; the
        rows already there (by ``key``, without error) are not computed again.
    message_bytes : float or str
        Buffer size of the all-reduce bounds, in bytes or with a unit (``"1GiB"``).
    routing_trials : int
        Draws of per-flow hashing behind the ``routing`` metric's hashed columns.
    routing_seed : int
        Seed of those draws (fixed, so a table is reproducible and a rerun skips its rows).
    job : TrainingJob, PlanSearch or mapping, optional
        The training job of the ``"training"`` metric, for every design (a design file's
        ``[job]`` table serves when none is given). A :class:`~fabricopt.PlanSearch` (or a
        table with ``plan = "best"``) runs :func:`~fabricopt.best_plan` on each design, so
        each is judged by its own best plan (``training_plan`` names it).
    serving : mapping, optional
        The workload of the ``"serving"`` metric, for every design: ``model``, ``ttft_s``,
        ``tpot_s`` and any other keyword of :func:`~fabricopt.serving_capacity`.
    each_fabric : callable, optional
        Called as ``each_fabric(fab, row)`` where each row ran (this process or a worker),
        right after a row that succeeded with named metrics only, from the fabric the row
        built, outside the row's ``seconds``; module-level or a ``functools.partial`` of
        one (it pickles). Its result is dropped and its errors are ignored (the caller does
        the work again where it is missing). The command line draws each design's diagram
        so (:func:`fabricopt.plot.report.write_diagram`). Those fabrics are not kept for
        :meth:`Comparison.fabric <fabricopt.study.table.Comparison.fabric>`.

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
    chosen: tuple[MetricSpec, ...] = DEFAULT_METRICS if metrics is None else tuple(metrics)
    for m in chosen:
        if isinstance(m, str) and m not in METRICS:
            raise fail(func, "metrics", "names of " + ", ".join(METRICS) + " or functions"
                       + did_you_mean(m, METRICS), m)
        if not isinstance(m, str) and not callable(m):
            raise fail(func, "metrics", "names or functions", m)
    executor = check_executor(func, executor)
    progress = check_progress(func, progress)
    if each_fabric is not None and not callable(each_fabric):
        raise fail(func, "each_fabric", "a function f(fab, row), or None", each_fabric)
    if out_dir is not None:
        out_dir = check_path(func, "out_dir", out_dir)
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise fail(func, "out_dir", "a directory (it exists as a file)", os.fspath(out_dir))

    if job is not None and not isinstance(job, TrainingJob | PlanSearch):
        if not isinstance(job, Mapping):
            raise fail(func, "job", "a TrainingJob, a PlanSearch, a table of a job's keys "
                       "(with plan = 'best' for a search), or None", job)
        job = job_or_search(job, "compare(): job")

    tasks = design_tasks(designs)
    if "training" in chosen and job is None:
        missing = tasks_without_job(tasks)
        if missing:  # every row would fail the same way: said once, before any work
            raise fail(func, "job", "a TrainingJob, a PlanSearch or a table of a job's keys "
                       "(the training metric runs a job on every design; on the command "
                       "line: --job FILE, or --model NAME with --tp, --pp...), unless every "
                       "design file has a [job] table; these designs have none: "
                       + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""), None)
    if serving is not None:  # checked before any work; the metric reads it on each design
        serving_workload(serving, f"{func}(): serving")
        serving = dict(serving)
    jobs: dict[str, _Job] = {}
    routing = (routing_trials, routing_seed) if "routing" in chosen else None
    for task in tasks:
        key = _task_key(task, chosen, message_bytes, routing,
                        job if "training" in chosen else None)
        if serving is not None and "serving" in chosen:
            key += "-" + hashlib.sha1(repr(sorted(serving.items())).encode()).hexdigest()[:8]
        jobs.setdefault(key, _Job(task, chosen, message_bytes, key, executor is not None,
                                  routing_trials, routing_seed, job, serving, each_fabric))
    swept = [k for job in jobs.values() for k in job.task.point]
    store = RowStore(out_dir, swept) if out_dir is not None else None
    results: dict[str, dict[str, Any]] = {}
    if store is not None:
        results = {k: store.rows[k] for k in jobs if store.done(k)}
    reused = len(results)
    todo = [job for k, job in jobs.items() if k not in results]
    if executor is not None:
        load_for_workers(executor)  # before the pool forks: once, not once a worker
        # Largest first: the workers start on the long rows and finish on short ones, so
        # they end together instead of one waiting on a long row sent last.
        todo.sort(key=lambda job: -_size_hint(job.task))
    shown = Progress(progress, "compare", total=len(jobs), initial=len(results))

    def finish(job: _Job, row: dict[str, Any]) -> None:
        results[row["key"]] = row
        if store is not None:
            store.add(row)
        shown.advance(str(row.get("name", "")))

    def lost(job: _Job, exc: BaseException) -> dict[str, Any]:
        # The worker died (not the design): the row says so and the batch goes on.
        return {"name": job.task.label, "file": job.task.path or "", **job.task.point,
                "error": _describe(exc), "key": job.key}

    # Run here, each row's fabric is kept for the table to hand back (a report's diagrams).
    kept = _Kept({id(job.task): k for k, job in jobs.items()})
    try:
        # Stages are shown for designs evaluated here; a worker process has no listener.
        run(todo, _evaluate if executor is not None else
            shown.watched(functools.partial(_evaluate, keep=kept)), finish,
            executor=executor, lost=lost)
        if store is not None:
            # In design order, as one process writes it (workers finish in any order).
            store.rows = {**{k: store.rows[k] for k in jobs if k in store.rows}, **store.rows}
            store.compact()
    finally:
        shown.close()
    table = Comparison((results[k] for k in jobs), swept,
                       {k: j.task for k, j in jobs.items()}, kept)
    table.reused = reused
    return table
