"""Design-space search: the cheapest fabric that meets a target, and the trade-offs around it.

:func:`optimize` enumerates candidate clusters over a declared space, sizes each one from its
plan alone (no graph built), prunes what provably cannot win, evaluates the rest with the
public calls (:func:`~fabricopt.estimate_cost`, :func:`~fabricopt.max_concurrent_flow`,
:func:`~fabricopt.bisection_bandwidth`, :func:`~fabricopt.collective_bounds`,
:func:`~fabricopt.fail_random`), and returns every candidate's row, the Pareto front over
capex and all-to-all bandwidth, and the best design meeting every constraint.

Pruning never drops a candidate that could win. Two cheap bounds are proven before a fabric
is built:

* **capex lower bound**: every GPU needs a NIC port at its rate and every switch of the plan
  is a catalog switch, so ``GPUs x cheapest NIC + switches x cheapest switch`` is below any
  bill of materials (links and optics only add);
* **all-to-all upper bound** per GPU: traffic leaving a scale-up domain of ``D`` GPUs crosses
  its NICs, ``bw x (N - D) / (N - 1) <= nic``; and traffic leaving the servers under one rail
  (or Clos) leaf index crosses those leaves' uplinks, ``bw x G (N - G) / (N - 1) <= uplinks``
  for a group of ``G`` GPUs whose scale-up domains it holds whole.

A candidate is pruned when its capex bound exceeds the budget (the front stops at the
budget), or, with the capex objective, when a design proven to meet every constraint costs
less than its capex bound (it cannot be the best, and the front is reported up to the best),
or costs no more and an evaluated design delivers at least its throughput bound
(``full_front``: it could be neither on the front nor the best). A throughput bound below
the target prunes nothing by itself: a design cheaper and slower than the best is on the
front (a 3:1 Clos under the target beside the 2:1 that meets it), so pruning never drops a
design of the front. Candidates are evaluated cheapest bound first; the candidates that
differ only in optics policy share one build and one flow solve. A built fabric is priced
before it is solved: when it costs more than a design already proven feasible under every
policy of its group, its rows are pruned with their capex and no flow is solved (a
16,384-GPU solve can take a minute, its pricing a second).

A candidate whose plan has no symmetry (unequal leaves or bundles) with more GPUs than the
flow LP handles (:data:`~fabricopt.study.search.ASYMMETRIC_GPUS_LIMIT`) is decided by a
certified bracket of its all-to-all rate, without an LP
(:func:`~fabricopt.study.metrics.ecmp_bracket`): ECMP routing's exact throughput is a
feasible flow, so a lower bound, and the least of the plan's bound, the distance bound,
the endpoint-link bound and the fabric's hierarchy cuts (a leaf with its servers, a pod) is
an upper one. Its row says ``all_to_all_method = "ecmp bound"`` and
holds both ends; ``all_to_all_gbps_per_gpu >= X`` is met when the lower end reaches ``X``,
missed when the upper end is below it, and undecided otherwise. On the front a bracketed
candidate counts its certified lower end.

A candidate with no certified throughput (a solve stopped or failed, or a bracket holding
the all-to-all target) is ``"unsolved"``: never on the front, never the best.

Every comparison of figures (floors, ceilings, pruning, dominance on the front, the best pick)
holds within a relative :data:`~fabricopt.study.pareto.REL_TOL` (1e-9): solve paths differ in
a certified rate's last bits (about 1e-13), which must not flip a decision. Ties within it go
to the least objective, then the highest all-to-all, then the space's own order (the first
listed value wins), never to the last bits or to the order results come back in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_bool, check_choice, check_int, check_path, check_positive, fail
from .._toml import dumps_toml
from ..errors import DesignFileError
from ..workload.plan import TrainingJob
from ..workload.plan_search import PlanSearch, job_or_search
from ..workload.serving_capacity import serving_workload
from .candidates import DEFAULT_SPACE, Candidate
from .execution import check_executor, check_progress
from .metrics import CONSTRAINTS
from .search import FAILURE_KEYS, DesignSearch

__all__ = ["ALL_CONSTRAINTS", "DEFAULT_SPACE", "OptimizeResult", "objective_text", "optimize"]

#: Every constraint key: the registry's (:data:`~fabricopt.study.metrics.CONSTRAINTS`) and the
#: failure trial's.
ALL_CONSTRAINTS = (*CONSTRAINTS, *FAILURE_KEYS)
#: What the best design may minimise.
OBJECTIVES = ("capex_usd", "power_w", "serving_usd_per_million_tokens",
              "training_usd_per_million_tokens",
              "usd_per_million_tokens_with_downtime")
#: The figures that need a training job.
NEEDS_JOB = ("training_tokens_per_s", "training_usd_per_million_tokens", "goodput",
             "usd_per_million_tokens_with_downtime")


def objective_text(row: Mapping[str, Any], objective: str, gpus: int) -> str:
    """The figure ``objective`` names, as a reader takes it in, for one evaluated row.

    >>> objective_text({"training_usd_per_million_tokens": 0.41,
    ...                 "training_tokens_per_s": 2.5e6}, "training_usd_per_million_tokens", 256)
    '$0.41 per million tokens (2,500,000 tokens/s)'
    >>> objective_text({"power_w": 18350.0}, "power_w", 256)
    'network power 18,350 W (71.7 W per GPU)'
    """
    value = row.get(objective)
    if value is None:
        return f"{objective} not computed"
    if objective == "training_usd_per_million_tokens":
        tokens = row.get("training_tokens_per_s")
        plan = row.get("training_plan")
        extra = ", ".join(t for t in (f"{tokens:,.0f} tokens/s" if tokens else "",
                                      f"plan {plan}" if plan else "") if t)
        return f"${value:.4g} per million tokens" + (f" ({extra})" if extra else "")
    if objective == "serving_usd_per_million_tokens":
        return (f"${value:.4g} per million output tokens ({row.get('serving_rate') or 0:,.4g} "
                f"requests/s within the targets, plan {row.get('serving_plan')})")
    if objective == "usd_per_million_tokens_with_downtime":
        return (f"${value:.4g} per million tokens with the expected downtime (goodput "
                f"{row.get('goodput') or 0:.1%})")
    if objective == "power_w":
        return f"network power {value:,.0f} W ({value / gpus:,.1f} W per GPU)"
    return f"{value:,.0f} USD ({value / gpus:,.0f} per GPU)"


@dataclass
class OptimizeResult:
    """What :func:`optimize` returns.

    Attributes
    ----------
    rows : list of dict
        Every candidate: ``name``, ``family``, ``outcome`` (``"evaluated"``, ``"pruned"`` or
        ``"unsolved"``: no throughput proven, with the solver's ``all_to_all_status``, or an
        ``"ecmp bound"`` bracket holding the all-to-all target), ``reason``
        (why pruned or unsolved), ``topology`` (the first candidate of the same fabric,
        whose build and solve it shares), the plan's bounds (``capex_usd_bound``,
        ``all_to_all_gbps_per_gpu_bound``; ``capex_lower_usd``, the first's name of a release
        ago, for a release) and, when evaluated, the figures of the metric
        registry under the names :func:`~fabricopt.compare` uses, and
        ``meets`` (every constraint met) with ``shortfall`` (relative, per missed constraint).
    front : list of dict
        Evaluated rows on the Pareto front of capex (lower is better) and certified
        all-to-all Gb/s per GPU (higher is better), by capex; with the capex objective, up
        to the best design unless ``full_front`` was asked. Unsolved rows are never on it.
    best : dict or None
        The evaluated row meeting every constraint with the best objective: the best
        *proven* design. Cheaper candidates left unsolved (a bracket holding a target) may
        meet it too: :meth:`undecided_cheaper` lists them, and the printed report warns.
    nearest : list of dict
        When no candidate meets every constraint: the evaluated rows that miss least
        (smallest total shortfall), with the shortfall of each.
    seconds : float
    """

    gpus: int
    objective: str
    constraints: dict[str, float]
    rows: list[dict[str, Any]]
    front: list[dict[str, Any]]
    best: dict[str, Any] | None
    nearest: list[dict[str, Any]]
    seconds: float
    candidates: dict[str, Candidate] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        evaluated = sum(r["outcome"] == "evaluated" for r in self.rows)
        best = self.best["name"] if self.best else None
        return (f"OptimizeResult({self.gpus} GPUs, {len(self.rows)} candidates, {evaluated} "
                f"evaluated, front of {len(self.front)}, best={best!r})")

    def __str__(self) -> str:
        """A report: what was searched, the front, and the best design or the nearest
        misses with their shortfalls."""
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        lines = [f"optimize({self.gpus:,} GPUs, minimise {self.objective}): "
                 f"{len(self.rows)} candidates, "
                 + ", ".join(f"{n} {status}" for status, n in counts.items())
                 + f", in {self.seconds:.1f} s"]
        if self.constraints:
            lines.append("constraints: " + ", ".join(
                f"{k} {v:,.0f}" if abs(v) >= 1e4 else f"{k} {v:g}"
                for k, v in self.constraints.items()))
        lines += ["", "Pareto front (capex, certified all-to-all per GPU):", self.to_markdown(),
                  ""]
        if self.best is not None:
            b = self.best
            if self.objective != "capex_usd":  # the figure minimised first, then the network
                lines.append(f"best by {self.objective}: {b['name']}, "
                             + objective_text(b, self.objective, self.gpus))
            lines.append(f"best: {b['name']}, {b['capex_usd']:,.0f} USD "
                         f"({b['capex_usd'] / self.gpus:,.0f} per GPU), "
                         f"{b['all_to_all_gbps_per_gpu']:,.1f} Gb/s all-to-all per GPU"
                         + (" (at least: ECMP routing)"
                            if b.get("all_to_all_method") == "ecmp bound"
                            else ""))
            rivals = self.undecided_cheaper()
            if rivals:
                lines.append(f"caution: {len(rivals)} cheaper candidate(s) undecided (their "
                             "certified bracket holds a target), so the best is the cheapest "
                             "proven, not proven cheapest:")
                lines += [f"  {r['name']}: {r['capex_usd']:,.0f} USD, all-to-all "
                          f"[{r['all_to_all_gbps_per_gpu']:,.1f}, "
                          f"{r['all_to_all_gbps_per_gpu_upper']:,.1f}] Gb/s per GPU"
                          for r in rivals]
        else:
            lines.append("no design meets every constraint; nearest:")
            lines += [f"  {r['name']}: " + ", ".join(f"{k} misses by {v:.1%}"
                                                     for k, v in r["shortfall"].items())
                      for r in self.nearest]
        return "\n".join(lines)

    def undecided_cheaper(self) -> list[dict[str, Any]]:
        """Unsolved rows with a certified bracket that cost less than the best design: any of
        them may meet every constraint, so the best is the cheapest *proven* design."""
        if self.best is None or self.objective != "capex_usd":
            return []
        return [r for r in self.rows if r["outcome"] == "unsolved"
                and r.get("capex_usd") is not None
                and r.get("all_to_all_gbps_per_gpu_upper") is not None
                and r["capex_usd"] < self.best["capex_usd"]]

    def to_records(self) -> list[dict[str, Any]]:
        """Every candidate's row."""
        return [dict(r) for r in self.rows]

    def to_markdown(self, rows: list[dict[str, Any]] | None = None) -> str:
        """The front (or the given rows) as a Markdown table."""
        rows = self.front if rows is None else _checked_rows("OptimizeResult.to_markdown", rows)
        head = ["name", "capex USD/GPU", "a2a Gb/s/GPU", "power W/GPU", "meets"]
        by_token = self.objective == "training_usd_per_million_tokens"
        if by_token:  # the figure minimised, beside the network's
            head.insert(4, "USD per M tokens")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

        def per_gpu(value: Any, form: str) -> str:  # "-" where a pruned row has no figure
            return "-" if value is None else format(value / self.gpus, form)

        for r in rows:
            # A bracketed row shows its certified lower end, marked as such.
            a2a = ("-" if r.get("all_to_all_gbps_per_gpu") is None else
                   f"{r['all_to_all_gbps_per_gpu']:,.1f}"
                   + (" (ECMP, at least)" if r.get("all_to_all_method") == "ecmp bound" else ""))
            token = r.get("training_usd_per_million_tokens")
            tokens = ("" if not by_token else
                      f"| {'-' if token is None else format(token, '.4g')} ")
            lines.append(f"| {r['name']} | {per_gpu(r.get('capex_usd'), ',.0f')} | "
                         f"{a2a} | {per_gpu(r.get('power_w'), ',.1f')} {tokens}"
                         f"| {'yes' if r.get('meets') else 'no'} |")
        return "\n".join(lines)

    def write_design(self, path: str | os.PathLike[str], row: Mapping[str, Any] | None = None
                     ) -> str:
        """Write the best design (or ``row``) as a design file :func:`load_design` reads.

        Returns the path written. Raises when there is no design to write.
        """
        check_path("write_design", "path", path)
        row = self.best if row is None else row
        if row is None:
            raise fail("write_design", "row", "a row (no candidate meets the constraints)",
                       None)
        if not isinstance(row, Mapping) or not isinstance(row.get("name"), str) \
                or row["name"] not in self.candidates:
            raise fail("write_design", "row", "one of this search's rows (OptimizeResult.rows)",
                       row)
        candidate = self.candidates[row["name"]]
        family, kwargs = candidate.design()
        params = {k: v for k, v in kwargs.items() if v is not None}
        design: dict[str, Any] = {"name": row["name"], "family": family,
                                  "description": f"optimize({self.gpus}) winner",
                                  "params": params}
        if candidate.policy is not None:  # priced with this optics policy: so is the file
            design["policy"] = (candidate.policy if isinstance(candidate.policy, str)
                                else dict(candidate.policy))
        minimised = ("" if self.objective == "capex_usd" else
                     f"# Minimised {self.objective}: "
                     f"{objective_text(row, self.objective, self.gpus)}.\n")
        text = (minimised + f"# Found by fabricopt optimize for {self.gpus} GPUs: capex "
                f"{row['capex_usd']:,.0f} USD, all-to-all {row['all_to_all_gbps_per_gpu']:.1f}"
                f" Gb/s per GPU ("
                + ("certified lower bound: ECMP routing" if row.get("all_to_all_method") ==
                   "ecmp bound" else "certified") + ").\n"
                + dumps_toml(design))
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:  # a missing folder, a full disk: the file's error
            raise DesignFileError(f"{os.fspath(path)}: cannot be written: "
                                  f"{exc.strerror or exc}") from None
        return os.fspath(path)


def _checked_rows(func: str, rows: Any) -> list[Mapping[str, Any]]:
    """``rows`` as a list of rows (mappings with a ``name``), or the standard error."""
    if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Iterable):
        raise fail(func, "rows", "None or a list of rows (OptimizeResult.rows)", rows)
    rows = list(rows)
    for r in rows:
        if not isinstance(r, Mapping) or "name" not in r:
            raise fail(func, "rows", "rows of a search (mappings with a 'name')", r)
    return rows


def _serving_spec(func: str, serving: Any, objective: str,
                  constraints: dict[str, float]) -> dict[str, Any] | None:
    """The serving workload the candidates are served (latency targets from the
    constraints), checked before the search; None without one."""
    wants = objective == "serving_usd_per_million_tokens" or any(
        k.startswith("serving_") for k in constraints)
    if serving is None:
        if wants:
            raise fail(func, "serving", "a serving workload (model, prompt_len, output_len, "
                       "...): the objective or a constraint is a serving figure", None)
        return None
    if not isinstance(serving, Mapping):
        raise fail(func, "serving", "a mapping of serving_capacity's keywords", serving)
    missing = [k for k in ("serving_ttft_s", "serving_tpot_s") if k not in constraints]
    if missing:
        raise fail(func, "constraints", "serving_ttft_s and serving_tpot_s (the latency "
                   f"targets, seconds) with a serving workload; missing {', '.join(missing)}",
                   constraints)
    spec = {**serving, "ttft_s": constraints["serving_ttft_s"],
            "tpot_s": constraints["serving_tpot_s"]}
    serving_workload(spec, f"{func}(): serving")
    return spec


def optimize(gpus: int, *, space: Mapping[str, Any] | None = None,
             constraints: Mapping[str, float] | None = None, objective: str = "capex_usd",
             executor: Any = None, progress: bool | Callable[[int, int], Any] | None = None,
             time_limit: float | None = None, prune: bool = True,
             full_front: bool = False, job: Any = None,
             serving: Mapping[str, Any] | None = None) -> OptimizeResult:
    """Search a design space for the best cluster meeting the constraints.

    Parameters
    ----------
    gpus : int
        GPUs of the cluster, >= 2.
    space : mapping, optional
        Lists of values per key (defaults in :data:`DEFAULT_SPACE`): ``family``
        (``"superpod"``, ``"rail_optimized"``, ``"clos"``), ``scale_up`` (a domain generator
        name, table or Fabric), ``leaf_radix`` (switch radix), ``oversubscription``,
        ``tiers`` (None for the fewest that reach, 2 or 3), ``planes``, ``nic_gbps``,
        ``switch_model`` (catalog key or None), ``policy`` (optics policy preset or fields,
        see :class:`~fabricopt.Policy`). Candidates are their product, points that do not
        apply (a SuperPOD of planes) left out.
    constraints : mapping, optional
        Targets among ``all_to_all_gbps_per_gpu``, ``all_reduce_busbw_GBps``,
        ``bisection_gbps_per_gpu`` (at least), ``capex_usd``, ``power_w`` (at most), and
        ``all_to_all_after_failure_gbps`` with ``failure_fraction`` (the fraction of links
        failed at random, default 0.01). Each reads the column of the same name from the
        metric registry (:data:`~fabricopt.study.metrics.CONSTRAINTS`); a floor reads a
        certified lower end (a feasible flow, a schedule that exists, a proven cut), never
        an upper bound. ``training_tokens_per_s`` (at least, with a ``job``) reads the
        expected tokens per second of the job on each candidate: a training step has no
        certified floor, and its cap is never used.
    objective : {"capex_usd", "power_w", "training_usd_per_million_tokens", \
"usd_per_million_tokens_with_downtime"}
        What the best design minimises (the last two need a ``job``; the last is the cost per
        million tokens over the goodput under failures, ``docs/goodput.md``, and adds the
        ``goodput`` metric's columns, as a ``goodput`` floor of 0 would).
    executor : concurrent.futures.Executor, optional
        Evaluates candidates in parallel, as :func:`~fabricopt.compare` does: a process
        pool, or a Dask cluster through ``distributed.Client(...).get_executor()``. One topology
        per worker is in flight at a time (a pool's workers, a Dask client's threads), and
        each finished one prunes those not yet sent; each task caps its BLAS/OpenMP threads
        at one.
    progress : bool or callable, optional
        As for :func:`~fabricopt.compare`: None shows a bar when stderr is a terminal, True
        always, False never; a function is called as ``progress(done, total)`` after each
        candidate is decided.
    time_limit : float, optional
        Seconds for each flow solve.
    prune : bool
        False evaluates every candidate that can be built (to check what pruning keeps).
    job : TrainingJob, PlanSearch or mapping, optional
        A training job (:class:`~fabricopt.TrainingJob`, or a table of its keys) run on every
        evaluated candidate: its ``training_*`` figures join the rows, and may be constrained
        or minimised. A :class:`~fabricopt.PlanSearch` (or a table with ``plan = "best"``)
        finds each candidate's own best plan (:func:`~fabricopt.best_plan`) and reads its
        figures; ``training_plan`` names it.
    serving : mapping, optional
        A serving workload (``model``, and any of ``prompt_len``, ``output_len``,
        ``precision``, ``percentile``, ``plan``... of :func:`~fabricopt.serving_capacity`)
        served on every evaluated candidate at the latency targets of the constraints
        ``serving_ttft_s`` and ``serving_tpot_s`` (seconds, both needed): its ``serving_*``
        figures join the rows; ``serving_rate`` may be constrained (at least) and
        ``serving_usd_per_million_tokens`` minimised.
    full_front : bool
        With the capex objective, the front is reported up to the best design's capex by
        default, and a candidate whose capex bound exceeds a feasible design's capex is not
        evaluated (it can be neither the best nor on that front). True evaluates those too,
        for the whole front (dearer, faster designs), pruning only what is dominated.

    Returns
    -------
    OptimizeResult
        Every candidate's row (pruned ones with the reason), the Pareto front, the best
        design (or the nearest misses and their shortfalls); ``write_design`` writes it.

    Notes
    -----
    Bounds and pruning rules are in the module docstring of :mod:`fabricopt.study.optimize`.
    All-to-all bandwidth is the certified lower bound of the flow LP times the ``N - 1``
    Gb/s each GPU sends at unit demand; for a candidate without symmetry above
    :data:`~fabricopt.study.search.ASYMMETRIC_GPUS_LIMIT` GPUs it is the throughput of
    ECMP routing, a certified
    lower bound (``all_to_all_method = "ecmp bound"``, with the upper end in
    ``all_to_all_gbps_per_gpu_upper``), and a target between the two leaves the candidate
    ``"unsolved"``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> dom = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
    ...        "link_gbps": 200}
    >>> res = fo.optimize(16, space={"family": ["rail_optimized"], "scale_up": [dom],
    ...                              "leaf_radix": [8], "oversubscription": [1.0, 3.0]},
    ...                   constraints={"all_to_all_gbps_per_gpu": 300})
    >>> res.best["name"], round(res.best["all_to_all_gbps_per_gpu"])  # 3:1 is enough
    ('rail_optimized nvswitch_domain r8 3:1 default', 375)
    >>> [(r["outcome"], r["reason"][:21]) for r in res.rows]  # 1:1 dearer: priced, not solved
    [('pruned', 'costs more than rail_'), ('evaluated', '')]
    """
    func = "optimize"
    gpus = check_int(func, "gpus", gpus, minimum=2)
    objective = check_choice(func, "objective", objective, OBJECTIVES)
    for name, value in (("space", space), ("constraints", constraints)):
        if value is not None and not isinstance(value, Mapping):
            raise fail(func, name, "a mapping (a dict, or a table of a search file) or None",
                       value)
    executor = check_executor(func, executor)
    progress = check_progress(func, progress)
    if time_limit is not None:
        time_limit = check_positive(func, "time_limit", time_limit)
    prune = check_bool(func, "prune", prune)
    full_front = check_bool(func, "full_front", full_front)
    constraints = dict(constraints or {})
    for key, value in constraints.items():
        check_choice(func, "constraints key", key, ALL_CONSTRAINTS)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise fail(func, f"constraints[{key!r}]", "a number >= 0", value)

    if job is not None and not isinstance(job, TrainingJob | PlanSearch):
        if not isinstance(job, Mapping):
            raise fail(func, "job", "a TrainingJob, a PlanSearch, a table of a job's keys "
                       "(with plan = 'best' for a search), or None", job)
        job = job_or_search(job, "optimize(): job")
    if objective == "usd_per_million_tokens_with_downtime":
        constraints.setdefault("goodput", 0.0)  # the goodput metric computes its column
    if job is None and (objective in NEEDS_JOB or any(k in NEEDS_JOB for k in constraints)):
        raise fail(func, "job", "a TrainingJob (the objective or a constraint is a training "
                   "figure)", None)
    if isinstance(job, TrainingJob):
        job.with_gpus(gpus, func)  # the plan must divide the GPUs: refused before the search
    serving = _serving_spec(func, serving, objective, constraints)
    search = DesignSearch(gpus, space or {}, constraints, objective, executor, progress,
                          time_limit, prune, full_front, job, serving)
    search.enumerate()
    if not search.candidates:
        raise fail(func, "space", f"a space with candidates for {gpus} GPUs (whole scale-up "
                   "domains, SuperPODs of whole scalable units)", space)
    search.evaluate()
    found = search.result()
    return OptimizeResult(gpus, objective, constraints, found["rows"], found["front"],
                          found["best"], found["nearest"], found["seconds"],
                          found["candidates"])
