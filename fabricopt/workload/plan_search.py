r"""The best parallel plan for a model and a batch on a fabric (``docs/workload.md#the-best-plan``).

:func:`best_plan` tries the plans a fabric allows — tensor ``tp`` (dividing the scale-up
domain unless a constraint allows more), context ``cp`` (while each rank keeps 4,096 tokens),
expert ``ep`` (mixtures of experts: divisors of the expert count), pipeline ``pp`` with ``v``
virtual stages (``pp x v <= layers``), data ``dp`` (the rest of the GPUs), micro-batch, ZeRO
stage and activation recomputation — and solves :func:`~fabricopt.training_step` only for
the few that can win. Before its step is solved a plan is dropped

1. when :class:`~fabricopt.TrainingJob` refuses it (``"invalid"``);
2. when it does not fit in the GPU's memory (``"pruned: memory"``,
   :func:`~fabricopt.workload.memory.memory_per_gpu`);
3. when its bound is at or above the best step found (``"pruned: bound"``): the step can
   never be faster than the model's FLOPs (more under recomputation) over the job's GPUs at
   the rates the step model runs them, stretched by the pipeline bubble ``(1 + B)``, nor
   than its schedule with every message at the least time the links of one GPU and of one
   scale-up domain allow (:mod:`~fabricopt.workload.plan_walk` derives both).

Plans are solved in increasing order of bound, so good plans come first and the rest are
soon pruned; each row says why it lost, with its figures. Every solved step is checked
against its bounds (a bound it undercuts is dropped for a weaker one, and what it pruned is
tried after all).

Cost per million tokens is the fabric's cost per second (:func:`~fabricopt.token_cost`, every
GPU of the fabric counted) over tokens per second, so on one fabric both objectives rank plans
alike; the objective says which figure the search is for.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_bool, check_choice, check_int, check_positive, did_you_mean, fail
from ..cost.assumptions import assumptions_for
from ..errors import FabricOptError, InvalidParameterError
from ..fabric import Fabric, check_fabric
from .cost import token_cost
from .models import model
from .plan import (
    GRAD_PRECISIONS,
    MIN_COMPUTE_EFFICIENCY,
    OVERLAP,
    PRECISIONS,
    RECOMPUTE,
    TrainingJob,
    job_from_mapping,
)
from .plan_walk import (
    ARGUMENTS,
    FIELD_KEYS,
    FIGURES,
    PLAN_KEYS,
    SEQUENCE_FIELDS,
    STATUSES,
    PlanWalk,
    WalkResult,
)
from .step import TrainingStep

OBJECTIVES = ("tokens_per_s", "usd_per_million_tokens")
#: Dimensions with ``min_``/``max_`` constraints.
RANGED = ("tp", "cp", "ep", "pp", "virtual_stages", "dp", "micro_batch", "zero")
#: Limits on the result rather than the plan.
LIMIT_KEYS = ("min_mfu", "max_memory_gb")
CONSTRAINT_KEYS = (*FIELD_KEYS, *(f"{p}_{k}" for k in RANGED for p in ("min", "max")),
                   *LIMIT_KEYS)

_CHOICES = {"recompute": RECOMPUTE, "overlap": OVERLAP, "grad_precision": GRAD_PRECISIONS}
_BOOLS = ("sequence_parallel", "flash_attention")
_INTS = ("first_stage_layers", "last_stage_layers", "recompute_layers", "microbatch_group")


# -- the question --------------------------------------------------------------------------
def _check_value(func: str, key: str, value: Any) -> Any:
    """One value of constraint ``key``, checked (TrainingJob checks the combinations)."""
    name = f"constraints[{key!r}]"
    if key in _CHOICES:
        return check_choice(func, name, value, _CHOICES[key])
    if key in _BOOLS:
        return check_bool(func, name, value)
    if key == "gpu":
        if not isinstance(value, str) or not value:
            raise fail(func, name, "a catalog GPU key (a non-empty string)", value)
        return value
    if key in ("compute_efficiency", "min_mfu"):
        x = check_positive(func, name, value)
        low = MIN_COMPUTE_EFFICIENCY if key == "compute_efficiency" else 0.0
        if not low <= x <= 1:
            raise fail(func, name, f"a fraction from {low:g} to 1" if low else
                       "a fraction in (0, 1]", value)
        return x
    if key == "max_memory_gb":
        return check_positive(func, name, value)
    if key in SEQUENCE_FIELDS:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise fail(func, name, "a sequence (or a list of sequences to try)", value)
        return tuple(value)
    if key in RANGED or key.startswith(("min_", "max_")) or key in _INTS:
        low = 0 if key.endswith("zero") or key == "recompute_layers" else 1
        return check_int(func, name, value, minimum=low,
                         maximum=3 if key.endswith("zero") else None)
    return value  # a field TrainingJob checks itself


def check_constraints(func: str, constraints: Mapping[str, Any] | None
                      ) -> dict[str, Any]:
    """``constraints`` checked before any work: known keys, values of the right kind; a list
    (or tuple) of values for a plan field is the values to try, as a tuple.

    >>> check_constraints("best_plan", {"tp": 8, "pp": [8, 16], "max_micro_batch": 2})
    {'tp': 8, 'pp': (8, 16), 'max_micro_batch': 2}
    """
    if constraints is None:
        return {}
    if not isinstance(constraints, Mapping):
        raise fail(func, "constraints", "None or a mapping such as {'tp': 8, 'pp': [8, 16]}",
                   constraints)
    out: dict[str, Any] = {}
    for key, value in constraints.items():
        if key in ARGUMENTS:
            raise fail(func, "constraints", f"plan limits; {key} is {func}'s own argument",
                       dict(constraints))
        if key not in CONSTRAINT_KEYS:
            near = did_you_mean(key, CONSTRAINT_KEYS)
            raise InvalidParameterError(
                f"{func}(): constraints key {key!r} is not known{near}; allowed: a plan "
                f"field ({', '.join(FIELD_KEYS)}) with one value or a list, "
                f"min_/max_ of {', '.join(RANGED)}, or {', '.join(LIMIT_KEYS)}")
        listed = isinstance(value, list | tuple) and (
            key not in SEQUENCE_FIELDS or any(isinstance(v, list | tuple) for v in value))
        if key in FIELD_KEYS and listed:
            if not value:
                raise fail(func, f"constraints[{key!r}]", "one value or a non-empty list", value)
            values = [_check_value(func, key, v) for v in value]
            try:
                out[key] = tuple(dict.fromkeys(values))
            except TypeError:  # an unhashable value of a field TrainingJob checks itself
                raise fail(func, f"constraints[{key!r}]", "one value or a list of values",
                           value) from None
        else:
            out[key] = _check_value(func, key, value)
    for k in RANGED:
        lo, hi = out.get(f"min_{k}"), out.get(f"max_{k}")
        if lo is not None and hi is not None and lo > hi:
            raise fail(func, f"constraints['min_{k}']", f"at most max_{k} = {hi}", lo)
    return out


@dataclass(frozen=True)
class PlanSearch:
    """A plan search to run on any fabric: what :func:`best_plan` is asked, kept so that
    :func:`~fabricopt.compare` and :func:`~fabricopt.optimize` (their ``job=``) judge each
    fabric by its own best plan.

    Parameters are those of :func:`best_plan`; ``constraints`` is kept as sorted pairs (so the
    search is hashable and prints the same every time). Everything is checked here, before
    any fabric is seen.

    Examples
    --------
    >>> import fabricopt as fo
    >>> s = fo.PlanSearch("llama3-8b", global_batch=16, seq_len=2048, constraints={"tp": 8})
    >>> s.run(fo.dgx_h100()).job.tp
    8
    >>> PlanSearch.from_mapping({"plan": "best", "model": "llama3-8b", "global_batch": 16,
    ...                          "seq_len": 2048, "pp": 2}).constraint_map
    {'pp': 2}
    """

    model: Any
    global_batch: int
    seq_len: int
    precision: str = "bf16"
    objective: str = "tokens_per_s"
    constraints: Any = ()
    years: float | None = None  # None: the cost model's assumptions (fo.cost_assumptions)
    usd_per_kwh: float | None = None
    pue: float | None = None
    prune: bool = True

    def __post_init__(self) -> None:
        self._check("PlanSearch")

    def _check(self, func: str) -> None:
        try:
            m = model(self.model)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{func}(): model: {exc}") from None
        object.__setattr__(self, "model", m)
        for key in ("global_batch", "seq_len"):
            object.__setattr__(self, key, check_int(func, key, getattr(self, key), minimum=1))
        check_choice(func, "precision", self.precision, PRECISIONS)
        check_choice(func, "objective", self.objective, OBJECTIVES)
        given = self.constraints
        if isinstance(given, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in given):
            given = dict(given)
        object.__setattr__(self, "constraints",
                           tuple(sorted(check_constraints(func, given or None).items())))
        a = assumptions_for(func, self.years, self.usd_per_kwh, self.pue)
        for key in ("years", "usd_per_kwh", "pue"):
            object.__setattr__(self, key, getattr(a, key))
        check_bool(func, "prune", self.prune)

    @property
    def constraint_map(self) -> dict[str, Any]:
        return dict(self.constraints)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any],
                     where: str = "PlanSearch.from_mapping()") -> PlanSearch:
        """A search from a table with ``plan = "best"`` (a design file's ``[job]``, a job
        mapping of ``compare`` or ``optimize``): its plan fields become constraints, beside a
        ``constraints`` table; ``objective``, ``years``, ``usd_per_kwh``, ``pue`` are read.
        ``where`` opens every error message (a design file passes its name and table)."""
        if not isinstance(table, Mapping):
            raise InvalidParameterError(f"{where}: table must be a mapping of a job's keys "
                                        f"with plan = 'best', got {table!r}")
        table = dict(table)
        if table.pop("plan", "best") != "best":
            raise InvalidParameterError(f"{where}: plan must be 'best' (or leave it out and "
                                        "give the plan's fields)")
        own = ("model", "global_batch", "seq_len", "precision", "objective", "years",
               "usd_per_kwh", "pue", "prune")
        args = {k: table.pop(k) for k in own if k in table}
        if "model" not in args:
            raise InvalidParameterError(f"{where}: needs model = a catalogue name or a table")
        nested = table.pop("constraints", None) or {}
        if not isinstance(nested, Mapping):
            raise InvalidParameterError(f"{where}: constraints must be a table, got {nested!r}")
        for key in table:
            if key not in CONSTRAINT_KEYS:
                raise InvalidParameterError(
                    f"{where}: unknown key {key!r}{did_you_mean(key, (*own, *CONSTRAINT_KEYS))}"
                    f"; with plan = 'best' the keys are {', '.join(own)}, constraints, and "
                    "plan fields or limits as constraints")
        args.setdefault("global_batch", 1024)
        args.setdefault("seq_len", 4096)
        return cls(constraints={**table, **nested}, **args)

    def run(self, fab: Fabric) -> BestPlan:
        """The best plan of this search on ``fab`` (see :func:`best_plan`)."""
        check_fabric("PlanSearch.run", fab)
        return _run(self, fab, "PlanSearch.run")


def best_plan(fab: Fabric, model: Any, *, global_batch: int, seq_len: int,
              precision: str = "bf16", objective: str = "tokens_per_s",
              constraints: Mapping[str, Any] | None = None, years: float | None = None,
              usd_per_kwh: float | None = None, pue: float | None = None,
              prune: bool = True) -> BestPlan:
    """The parallel plan that trains ``model`` fastest (or cheapest per token) on ``fab``.

    Parameters
    ----------
    fab : Fabric
    model : str, dict or ModelConfig
        A catalogue name (:data:`fabricopt.models`) or a user's model.
    global_batch, seq_len : int
        Sequences per step and tokens per sequence.
    precision : {"bf16", "fp8", "fp4"}
    objective : {"tokens_per_s", "usd_per_million_tokens"}
        What the best plan maximises or minimises. On one fabric the two rank plans alike
        (the fabric costs the same per second whatever the plan); the figure is in the table.
    constraints : mapping, optional
        A field of :class:`~fabricopt.TrainingJob` but the arguments above (``tp``, ``cp``,
        ``ep``, ``pp``, ``virtual_stages``, ``dp``, ``micro_batch``, ``zero``, ``recompute``,
        ``overlap``, ``sequence_parallel``, ``gpu``, ``first_stage_layers``, ...) fixed to one
        value or given a list of values to try (``{"pp": [8, 16]}``); ``min_<dim>``/``max_<dim>``
        for the dimensions (``{"max_tp": 16}`` lets tensor groups leave the scale-up domain);
        ``min_mfu`` (plans below it are ``"rejected"``); ``max_memory_gb`` (headroom below
        the HBM). Defaults: ``tp`` divides the scale-up domain, ``cp`` keeps at least 4,096
        tokens per rank, ``ep`` divides the experts (MoE only), ``pp`` up to the layers with
        ``dp`` the GPUs left (all of them, or a few idle only when no plan splits the batch
        over all), micro-batches 1, 2, 4, ... dividing the batch, ZeRO 1, every
        recomputation, overlap ``"default"``.
    years, usd_per_kwh, pue : float, optional
        Cost options of :func:`~fabricopt.token_cost` (default the cost model's assumptions,
        :func:`~fabricopt.cost_assumptions`).
    prune : bool
        False solves every plan that fits in memory (to check what pruning keeps).

    Returns
    -------
    BestPlan
        ``job`` (the best :class:`~fabricopt.TrainingJob`), ``step`` (its
        :class:`~fabricopt.TrainingStep`), ``table`` (every plan tried, each with its
        verdict and the reason in words), ``to_table()``, ``to_frame()``.

    Raises
    ------
    InvalidParameterError
        Before any step is solved: a bad model, batch, precision, objective or constraint
        (unknown keys with the closest known one), a fabric with too few GPUs for any plan
        the constraints allow, a batch no plan splits, and — once memory is checked — no plan
        that fits (the closest one and by how much it misses).

    Examples
    --------
    >>> import fabricopt as fo
    >>> p = fo.best_plan(fo.dgx_h100(), "llama3-8b", global_batch=16, seq_len=2048)
    >>> p.job.tp * p.job.pp * p.job.dp, p.table[0]["verdict"], p.step.step_s > 0
    (8, 'best', True)
    >>> sorted({row["verdict"] for row in p.table})[:2]
    ['best', 'pruned: bound']
    """
    func = "best_plan"
    check_fabric(func, fab)
    search = PlanSearch.__new__(PlanSearch)
    for key, value in (("model", model), ("global_batch", global_batch), ("seq_len", seq_len),
                       ("precision", precision), ("objective", objective),
                       ("constraints", constraints or ()), ("years", years),
                       ("usd_per_kwh", usd_per_kwh), ("pue", pue), ("prune", prune)):
        object.__setattr__(search, key, value)
    search._check(func)
    return _run(search, fab, func)


def job_or_search(value: Any, where: str) -> TrainingJob | PlanSearch:
    """A training job, or a plan search: a :class:`PlanSearch`, a :class:`TrainingJob`, or a
    table (one with ``plan = "best"`` is a search).

    >>> job_or_search({"model": "llama3-8b", "plan": "best"}, "[job]").global_batch
    1024
    """
    if isinstance(value, TrainingJob | PlanSearch):
        return value
    if not isinstance(value, Mapping):
        raise InvalidParameterError(f"{where} must be a TrainingJob, a PlanSearch or a table "
                                    f"of a job's keys, got {value!r}")
    if "plan" in value:
        return PlanSearch.from_mapping(value, where)
    return job_from_mapping(value, where)


def plan_label(job: TrainingJob) -> str:
    """The plan of ``job`` in one short phrase (a table's ``training_plan``).

    >>> import fabricopt as fo
    >>> plan_label(fo.TrainingJob("llama3-405b", tp=8, pp=16, dp=128, global_batch=2048,
    ...                           virtual_stages=2, recompute="full"))
    'TP 8, PP 16 (v=2), DP 128, micro-batch 1, ZeRO-1, recompute full'
    """
    parts = [f"TP {job.tp}"] + [f"{k.upper()} {getattr(job, k)}" for k in ("cp", "ep")
                                 if getattr(job, k) > 1]
    v = f" (v={job.virtual_stages})" if job.virtual_stages > 1 else ""
    dp = "auto" if job.dp is None else job.dp
    return ", ".join([*parts, f"PP {job.pp}{v}", f"DP {dp}", f"micro-batch {job.micro_batch}",
                      f"ZeRO-{job.zero}", f"recompute {job.recompute}"]
                     + ([f"overlap {job.overlap}"] if job.overlap != "default" else []))


def search_metrics(fab: Fabric, search: PlanSearch) -> dict[str, Any]:
    """The row :func:`~fabricopt.training_metrics` gives, for the best plan ``search`` finds
    on ``fab``, and the plan (``plan``) and how many plans were solved (``plans_solved``)."""
    found = search.run(fab)
    s = found.step
    dim = s.binding_dimension
    return {"step_s": s.step_s, "step_s_lower": s.step_s_lower,
            "tokens_per_s": s.tokens_per_s, "mfu": s.mfu,
            "usd_per_million_tokens": found.usd_per_million_tokens,
            "binding_dimension": dim,
            "binding_tier": s.phases[dim].binding_tier if dim else None,
            "plan": plan_label(found.job), "job": found.job,
            "plans_solved": found.counts.get("best", 0) + found.counts.get("slower", 0)
            + found.counts.get("rejected", 0)}


# -- the answer ----------------------------------------------------------------------------
@dataclass
class BestPlan:
    """What :func:`best_plan` returns.

    ``table`` holds one row per plan tried, best first: the plan's fields (``tp``, ``cp``,
    ``ep``, ``pp``, ``virtual_stages``, ``dp``, ``micro_batch``, ``zero``, ``recompute``,
    ``overlap``, and any other field a constraint listed), ``gpus`` and ``idle_gpus``,
    ``verdict`` (``"best"``, ``"slower"``, ``"rejected"``, ``"pruned: bound"``,
    ``"pruned: memory"``, ``"invalid"``, ``"error"``), ``reason`` in words, ``bound_s`` and
    ``bound_s_lower`` (where computed), ``memory_gb`` (where checked) and, for solved plans,
    ``step_s``, ``step_s_lower``, ``tokens_per_s``, ``mfu``, ``usd_per_million_tokens``.
    """

    job: TrainingJob
    step: TrainingStep
    table: list[dict[str, Any]]
    objective: str
    fabric: str
    usd_per_million_tokens: float | None
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """Plans by verdict."""
        c = Counter(r["verdict"] for r in self.table)
        return {s: c[s] for s in STATUSES if c[s]}

    def to_frame(self) -> Any:
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise FabricOptError("BestPlan.to_frame(): pandas is not installed; pip install "
                                 "pandas, or read BestPlan.table") from None
        return pd.DataFrame(self.table)

    def to_table(self, rows: int = 10) -> str:
        """The first ``rows`` rows of the table as aligned text."""
        rows = check_int("BestPlan.to_table", "rows", rows, minimum=1)
        keys = [k for k in self.table[0] if k in PLAN_KEYS or k not in FIGURES]
        keys = [k for k in keys if k not in ("verdict", "reason", "gpus", "idle_gpus")]
        short = {"virtual_stages": "v", "micro_batch": "mb"}
        head = ["verdict", *(short.get(k, k) for k in keys), "step s", "tokens/s", "MFU",
                "$/Mtok", "mem GB", "reason"]
        body = [[r["verdict"], *("" if r.get(k) is None else str(r[k]) for k in keys),
                 _fmt(r.get("step_s"), "{:.4g}"), _fmt(r.get("tokens_per_s"), "{:,.0f}"),
                 _fmt(r.get("mfu"), "{:.1%}"), _fmt(r.get("usd_per_million_tokens"), "{:.3g}"),
                 _fmt(r.get("memory_gb"), "{:.1f}"), r["reason"]] for r in self.table[:rows]]
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        lines = ["  ".join(x.ljust(w) if i in (0, len(head) - 1) else x.rjust(w)
                           for i, (x, w) in enumerate(zip(line, widths, strict=True))).rstrip()
                 for line in (head, *body)]
        more = len(self.table) - rows
        if more > 0:
            lines.append(f"... {more:,} more plans")
        return "\n".join(lines)

    def __str__(self) -> str:
        counts = ", ".join(f"{n:,} {s}" for s, n in self.counts.items())
        cost = ("" if self.usd_per_million_tokens is None
                else f", ${self.usd_per_million_tokens:.4g} per million tokens")
        lines = [f"best plan on {self.fabric} ({self.objective}): {self.job.describe()}",
                 f"  {self.step.tokens_per_s:,.0f} tokens/s, step {self.step.step_s:.4g} s, "
                 f"MFU {self.step.mfu:.1%}{cost}",
                 f"  {len(self.table):,} plans in {self.seconds:.1f} s: {counts}"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n" + self.to_table()


def _run(q: PlanSearch, fab: Fabric, func: str) -> BestPlan:
    start = time.perf_counter()
    found = PlanWalk(fab, q.model, q.global_batch, q.seq_len, q.precision, q.constraint_map,
                     q.prune, func).walk()
    return _answer(q, fab, found, time.perf_counter() - start)


def _fmt(value: Any, pattern: str) -> str:
    return "" if value is None else pattern.format(value)


def _answer(q: PlanSearch, fab: Fabric, found: WalkResult, seconds: float) -> BestPlan:
    """The walk's rows as the table (verdicts and reasons of solved plans, best first) and
    the figures of the best plan."""
    win, step, notes = found.best, found.step, list(found.notes)
    usd_per_s = None
    try:
        usd_per_s = token_cost(fab, step.tokens_per_s, step.gpu.key, years=q.years,
                               usd_per_kwh=q.usd_per_kwh, pue=q.pue).usd_per_s
    except InvalidParameterError as exc:
        notes.append(f"no cost per token: {exc}")
    solved = 0
    for c in found.candidates:
        r = c.row
        if r.get("tokens_per_s"):
            solved += 1
            r["usd_per_million_tokens"] = (None if usd_per_s is None
                                           else 1e6 * usd_per_s / r["tokens_per_s"])
        if c is win:
            r["verdict"] = "best"
        elif r["verdict"] == "" and "step_s" in r:
            ratio = r["step_s"] / win.row["step_s"] - 1
            r["verdict"] = "slower"
            r["reason"] = (f"{ratio:.1%} slower than the best" if ratio >= 1e-3 else
                           "within 0.1% of the best")
    win.row["reason"] = f"fastest of {solved:,} solved"
    rank = {s: i for i, s in enumerate(STATUSES)}
    figure = {"best": "step_s", "slower": "step_s", "rejected": "step_s",
              "pruned: bound": "bound_s", "pruned: memory": "memory_gb"}
    rows = sorted((c.row for c in found.candidates), key=lambda r: (
        rank[r["verdict"]], r.get(figure.get(r["verdict"], ""), 0.0) or 0.0))
    rows = [{**{k: r[k] for k in r if k not in FIGURES}, **{k: r.get(k) for k in FIGURES}}
            for r in rows]
    if win.row["idle_gpus"]:
        notes.append(f"the best plan leaves {win.row['idle_gpus']:,} of the "
                     f"{len(fab.endpoints):,} GPUs idle")
    return BestPlan(step.job, step, rows, q.objective, fab.name,
                    None if usd_per_s is None else 1e6 * usd_per_s / step.tokens_per_s,
                    seconds, notes)


__all__ = ["CONSTRAINT_KEYS", "OBJECTIVES", "BestPlan", "PlanSearch", "best_plan",
           "check_constraints", "job_or_search", "plan_label", "search_metrics"]
