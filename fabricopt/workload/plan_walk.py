r"""The engine of a plan search (:func:`~fabricopt.best_plan`): the plans a fabric allows,
their bounds, and the walk that solves the few that can win (``docs/workload.md#the-best-plan``).

Two bounds of a plan's step are known before its step is solved:

* ``compute``: the model's FLOPs per token as the step model counts them (matrix multiplies
  at the precision's peak times the GPU's efficiency at it, attention at the BF16 peak times
  the attention efficiency, what recomputation runs again), over the job's GPUs, stretched
  by the pipeline bubble ``(1 + B)``: the slowest pipeline rank runs at least the average
  work, and every other term of the step only adds;
* ``schedule``: the step model's own compute of the slowest rank and its schedule
  (:func:`~fabricopt.workload.overlap.schedule`) with each message at the least time two
  cuts allow (:class:`LinkCuts`): around one GPU (it receives ``(n-1)/n S`` of an
  all-gather, sends as much of a reduce-scatter and of an all-to-all, ``S`` each way of an
  all-reduce even with in-network reduction, ``S`` of a send), and around the scale-up
  domain of the first GPU, every group with ranks in it at once. The step model's certified
  bound of a phase takes these cuts among others, and an expected time is never below it.

Plans wait in a queue ordered by bound: a plan reached with its ``compute`` bound is checked
for memory and given its ``schedule`` bound, then waits again; a plan reached with its
``schedule`` bound is solved. So the plans are solved in order of their best bound, and a
plan whose bound is at or above the best step found is pruned, with the figures in its row.
Each solved step is checked against both bounds; one that falls below a bound (a step model
that no longer works as read here) drops that bound for the weaker one (``peak``: compute
at the dense peak, under the certified ``step_s_lower``; then none) and puts back what it
pruned.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import FabricShape
from .communication import Transfer, step_transfers
from .compute import compute_times
from .hardware import GpuFigures, gpu_figures
from .memory import memory_per_gpu
from .models import ModelConfig
from .overlap import schedule
from .plan import DIMENSIONS, RECOMPUTE, TrainingJob
from .step import TrainingStep, training_step

#: The plan's dimensions a search varies, in the order a row shows them.
PLAN_KEYS = ("tp", "cp", "ep", "pp", "virtual_stages", "dp", "micro_batch", "zero",
             "recompute", "overlap")
#: Given to best_plan as arguments, not constraints.
ARGUMENTS = ("model", "global_batch", "seq_len", "precision")
#: TrainingJob fields a constraint may fix (one value) or list (values to try): all but the
#: arguments.
FIELD_KEYS = tuple(f for f in TrainingJob.__dataclass_fields__ if f not in ARGUMENTS)
#: Fields whose one value is itself a sequence (a list of sequences lists values to try).
SEQUENCE_FIELDS = ("recompute_modules",)
#: Context parallelism is tried while each rank keeps at least this many tokens.
CP_MIN_TOKENS = 4096
#: Order of the table: the verdict, then the figure within it.
STATUSES = ("best", "slower", "rejected", "pruned: bound", "pruned: memory", "invalid", "error")
#: The figures of a row, after the plan's fields.
FIGURES = ("gpus", "idle_gpus", "verdict", "reason", "bound_s", "bound_s_lower", "memory_gb",
           "step_s", "step_s_lower", "tokens_per_s", "mfu", "usd_per_million_tokens")
#: How far a solved step may fall below its bound (rounding) before the bound is dropped.
TOL = 1e-9
#: The bounds, strongest first, and what each means in a note.
RULES = {"schedule": "the schedule with each message at its GPU's links",
         "compute": "compute at the GPU's efficiencies", "peak": "compute at peak",
         "none": "nothing"}


def listed(key: str, value: Any) -> bool:
    """Whether a checked constraint value lists values to try (rather than fixing one)."""
    if not isinstance(value, tuple):
        return False
    return key not in SEQUENCE_FIELDS or bool(value) and all(isinstance(v, tuple) for v in value)


def _powers_of_two(limit: int) -> list[int]:
    return [2**k for k in range(int(math.log2(limit)) + 1)] if limit >= 1 else []


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def domain_size(fab: Fabric, shape: FabricShape | None = None) -> int:
    """GPUs per scale-up domain (the greatest common divisor of the domains' sizes; 1 on a
    fabric without scale-up links): the largest tensor-parallel degree kept inside one.
    ``shape``, the fabric's :class:`~fabricopt.graph_arrays.FabricShape` when the caller has
    it, saves reading it again.

    >>> import fabricopt as fo
    >>> domain_size(fo.superpod(1)), domain_size(fo.fat_tree(4))
    (8, 1)
    """
    shape = FabricShape.of(fab) if shape is None else shape
    labels = shape.domain[shape.endpoint_index]
    return math.gcd(*Counter(labels.tolist()).values())


@dataclass(frozen=True)
class LinkCuts:
    """The least a GPU's links and a scale-up domain's links allow, in bytes per second: the
    least capacity any GPU has out or in (``gpu_bps``), and the domain of the fabric's first
    GPU: the positions of its GPUs among the fabric's (``domain_ranks``) and what leaves and
    enters it (``domain_out_bps``, ``domain_in_bps``).

    >>> import fabricopt as fo
    >>> cuts = LinkCuts.of(fo.superpod(1))
    >>> cuts.gpu_bps / 1e9, cuts.domain_ranks, cuts.domain_out_bps / 1e9  # 8 x 400 Gb/s NICs
    (500.0, (0, 1, 2, 3, 4, 5, 6, 7), 400.0)
    """

    gpu_bps: float
    domain_ranks: tuple[int, ...]
    domain_out_bps: float
    domain_in_bps: float

    @classmethod
    def of(cls, fab: Fabric, shape: FabricShape | None = None) -> LinkCuts:
        shape = FabricShape.of(fab) if shape is None else shape
        ga, eps = shape.arrays, shape.endpoint_index
        least = min(np.bincount(ga.tail, ga.capacity, ga.n_nodes)[eps].min(),
                    np.bincount(ga.head, ga.capacity, ga.n_nodes)[eps].min())
        # The first GPU's scale-up domain: GPUs and switches joined by NVLink.
        inside = shape.domain == shape.domain[eps[0]]
        out = ga.capacity[inside[ga.tail] & ~inside[ga.head]].sum()
        into = ga.capacity[~inside[ga.tail] & inside[ga.head]].sum()
        ranks = tuple(np.flatnonzero(inside[eps]).tolist())
        return cls(float(least) * 1e9 / 8, ranks, float(out) * 1e9 / 8, float(into) * 1e9 / 8)

    def seconds(self, job: TrainingJob, t: Transfer) -> float:
        """The least time of transfer ``t``'s messages: through one GPU's links, and through
        the links of the first domain, all of the groups it holds ranks of at once
        (``docs/workload.md#time-from-the-fabric``: a group with ``h`` of its ``n`` ranks
        inside sends ``h S/n`` out of an all-gather and takes ``(n-h) S/n`` in, the reverse
        for a reduce-scatter, ``S`` each way of an all-reduce, ``h (n-h) S/n`` each way of an
        all-to-all, and a send ``S`` when its ends are apart)."""
        n, size = t.group_size, t.message_bytes
        gpu = size if t.collective in ("all_reduce", "p2p") else (n - 1) / n * size
        seconds = gpu / self.gpu_bps if self.gpu_bps > 0 else 0.0
        out, into = self._leaving(job, t)
        for moved, cap in ((out, self.domain_out_bps), (into, self.domain_in_bps)):
            if moved > 0 and cap > 0:
                seconds = max(seconds, moved / cap)
        return t.count * seconds

    def _leaving(self, job: TrainingJob, t: Transfer) -> tuple[float, float]:
        """Bytes of one of ``t``'s messages per group that leave and enter the domain."""
        sizes = [job.tp, job.cp, job.ep, job.dp_set, job.pp]
        ranks = [r for r in self.domain_ranks if r < job.gpus]
        inside = set(ranks)
        size = t.message_bytes
        if t.collective == "p2p":  # each rank sends to the next pipeline rank and back
            step = math.prod(sizes[:-1])
            ahead = sum(1 for r in ranks if r // step < job.pp - 1 and r + step not in inside)
            behind = sum(1 for r in ranks if r // step > 0 and r - step not in inside)
            return size * ahead, size * behind
        varied = [DIMENSIONS.index(d) for d in t.dims]
        groups: Counter = Counter()
        for r in ranks:
            coords, rest = [], r
            for k in sizes:
                coords.append(rest % k)
                rest //= k
            groups[tuple(c for i, c in enumerate(coords) if i not in varied)] += 1
        n, out, into = t.group_size, 0.0, 0.0
        for h in groups.values():
            if h >= n:
                continue
            o, i = {"all_gather": (h / n, (n - h) / n), "reduce_scatter": ((n - h) / n, h / n),
                    "all_reduce": (1.0, 1.0)}.get(t.collective, (h * (n - h) / n,) * 2)
            out, into = out + o * size, into + i * size
        return out, into


def flops_per_token(job: TrainingJob) -> tuple[float, float, float]:
    """FLOPs per token of a step as the step model counts them (``docs/workload.md#compute``):
    the layers' matrix multiplies, the output head's, and attention (PaLM's count), each with
    what recomputation runs again — the least of it: partial recomputation adds nothing."""
    m = job.model
    moe_mlp = (m.top_k + m.shared_experts) * m.expert_params_each + m.hidden * m.experts
    mlp = (m.layers - m.moe_layers) * m.dense_mlp_params + m.moe_layers * moe_mlp
    gemm = 6.0 * (m.layers * m.attention_params + mlp)
    attention = 12.0 * m.layers * m.heads * (m.head_dim + m.rope_head_dim) * job.seq_len
    again = job.recomputed
    if "layer" in again:
        if job.recompute_layers is None:
            gemm, attention = gemm * 4 / 3, attention * 4 / 3
    else:
        attention *= 4 / 3 if "core_attn" in again else 1
        gemm += 2.0 * mlp if "mlp" in again else 0.0
    return gemm, 6.0 * m.vocab * m.hidden, attention


@dataclass
class Candidate:
    """One plan: its table row, its job (None when invalid), its bounds by rule."""

    row: dict[str, Any]
    job: TrainingJob | None = None
    bounds: dict[str, float] = field(default_factory=dict)
    tie: tuple = ()


@dataclass
class WalkResult:
    """What the walk found: every candidate (rows filled), the best one and its step."""

    candidates: list[Candidate]
    best: Candidate
    step: TrainingStep
    gpu: GpuFigures
    notes: list[str]


class PlanWalk:
    """One search on one fabric: the space, the candidates, the walk.

    ``constraints`` are checked already (:func:`~fabricopt.workload.plan_search
    .check_constraints`); ``func`` names the caller in messages.
    """

    def __init__(self, fab: Fabric, model: ModelConfig, global_batch: int, seq_len: int,
                 precision: str, constraints: dict[str, Any], prune: bool, func: str) -> None:
        self.fab, self.m, self.func = fab, model, func
        self.batch, self.seq, self.precision = global_batch, seq_len, precision
        self.con = constraints
        self.n = len(fab.endpoints)
        self.notes: list[str] = []
        self.rule = "schedule" if prune else "none"
        gpu = constraints.get("gpu")
        self.gpu = gpu_figures(fab, None if listed("gpu", gpu) else gpu, precision, func=func)
        self.shape = FabricShape.of(fab)  # read once for the cuts and the domains
        self.cuts = LinkCuts.of(fab, self.shape)

    # -- the space ---------------------------------------------------------------------------
    def _values(self, key: str, default: Sequence[Any]) -> list[Any]:
        given = self.con.get(key)
        values = list(given) if listed(key, given) else (
            list(default) if given is None else [given])
        lo, hi = self.con.get(f"min_{key}"), self.con.get(f"max_{key}")
        return [v for v in values if (lo is None or v >= lo) and (hi is None or v <= hi)]

    def _space(self) -> dict[str, list[Any]]:
        m, d, n = self.m, domain_size(self.fab, self.shape), self.n
        tp = _divisors(d)
        wide = self.con.get("max_tp")
        if wide is not None and wide > d:  # a constraint lets tensor groups span domains
            tp += [t for t in _divisors(n) if t > d and t % d == 0 and t <= wide]
        cp = [c for c in _powers_of_two(self.seq) if c == 1 or self.seq / c >= CP_MIN_TOKENS]
        self.extra = {k: list(v) for k, v in self.con.items()
                      if k in FIELD_KEYS and k not in PLAN_KEYS and listed(k, v)}
        self.fixed = {k: v for k, v in self.con.items()
                      if k in FIELD_KEYS and k not in PLAN_KEYS and not listed(k, v)}
        if "gpu" not in self.extra:  # named, so no step reads the fabric's links for it again
            self.fixed["gpu"] = self.gpu.key
        return {"tp": self._values("tp", tp), "cp": self._values("cp", cp),
                "ep": self._values("ep", _divisors(m.experts) if m.is_moe else [1]),
                "pp": self._values("pp", range(1, m.layers + 1)),
                "zero": self._values("zero", [1]),
                "recompute": self._values("recompute", RECOMPUTE),
                "overlap": self._values("overlap", ["default"])}

    def _shapes(self, space: dict[str, list[Any]], idle: bool) -> Iterator[dict[str, int]]:
        """(tp, cp, ep, pp, dp) taking all the GPUs, or (``idle``) as many as split the batch."""
        for tp, cp, ep, pp in itertools.product(space["tp"], space["cp"], space["ep"],
                                                space["pp"]):
            mp = tp * cp * ep * pp
            if mp > self.n:
                continue
            if "dp" in self.con:
                dps = [x for x in self._values("dp", ()) if mp * x == self.n
                       or idle and mp * x < self.n]
            elif not idle:
                dps = self._values("dp", [self.n // mp] if self.n % mp == 0 else [])
            else:
                fits = [x for x in range(self.n // mp, 0, -1) if self.batch % (x * ep) == 0]
                dps = self._values("dp", fits[:1])
            for dp in dps:
                yield {"tp": tp, "cp": cp, "ep": ep, "pp": pp, "dp": dp}

    def _variants(self, shape: dict[str, int], space: dict[str, list[Any]]
                  ) -> Iterator[dict[str, Any]]:
        per_replica = self.batch // (shape["dp"] * shape["ep"])
        mbs = self._values("micro_batch", [b for b in _powers_of_two(per_replica)
                                           if per_replica % b == 0])
        vs = self._values("virtual_stages", range(1, self.m.layers // shape["pp"] + 1)
                          if shape["pp"] > 1 else [1])
        extra = [dict(zip(self.extra, c, strict=True))
                 for c in itertools.product(*self.extra.values())]
        for mb, v, zero, rc, ov, more in itertools.product(
                mbs, vs, space["zero"], space["recompute"], space["overlap"], extra):
            yield {**shape, "micro_batch": mb, "virtual_stages": v, "zero": zero,
                   "recompute": rc, "overlap": ov, **more}

    def _job(self, plan: dict[str, Any]) -> TrainingJob:
        return TrainingJob(self.m, global_batch=self.batch, seq_len=self.seq,
                           precision=self.precision, **self.fixed, **plan)

    def _row(self, plan: dict[str, Any]) -> dict[str, Any]:
        row = {k: plan.get(k) for k in (*PLAN_KEYS, *self.extra)}
        gpus = math.prod(plan[k] for k in ("tp", "cp", "ep", "pp", "dp"))
        row.update(gpus=gpus, idle_gpus=self.n - gpus, verdict="", reason="")
        return row

    def _candidates(self, space: dict[str, list[Any]], idle: bool) -> list[Candidate]:
        out = []
        for shape in self._shapes(space, idle):
            try:  # the shape alone: one row when it cannot work whatever the rest
                self._job({**shape, "micro_batch": 1, "virtual_stages": 1})
            except InvalidParameterError as exc:
                out.append(_invalid(self._row(shape), exc))
                continue
            for plan in self._variants(shape, space):
                try:
                    out.append(Candidate(self._row(plan), self._job(plan)))
                except InvalidParameterError as exc:
                    out.append(_invalid(self._row(plan), exc))
        return out

    def enumerate(self) -> list[Candidate]:
        """Every plan to try, each valid one with its job; raises when none is valid."""
        space = self._space()
        cands = self._candidates(space, idle=False)
        if not any(c.job for c in cands):
            idle = self._candidates(space, idle=True)
            if any(c.job for c in idle):
                self.notes.append(f"no plan splits global_batch={self.batch} over all "
                                  f"{self.n:,} GPUs: the plans tried leave some idle")
            cands += idle
        if not cands:
            least = [min(space[k], default=0) for k in ("tp", "cp", "ep", "pp")]
            raise InvalidParameterError(
                f"{self.func}(): fab has {self.n:,} GPUs, too few for any plan the constraints "
                f"allow (the smallest takes tp x cp x ep x pp = {math.prod(least):,}"
                f"{'' if all(least) else ': no value is left of some dimension'}); "
                f"constraints: {self.con}")
        if not any(c.job for c in cands):
            reasons = Counter(c.row["reason"] for c in cands).most_common(2)
            raise InvalidParameterError(
                f"{self.func}(): no plan of {self.m.name} with global_batch={self.batch} and "
                f"seq_len={self.seq} is valid on fab's {self.n:,} GPUs ({len(cands):,} "
                f"tried); for example: " + "; ".join(r for r, _ in reasons))
        return cands

    # -- bounds ------------------------------------------------------------------------------
    def _gpu(self, job: TrainingJob) -> GpuFigures:
        if job.gpu in (None, self.gpu.key):
            return self.gpu
        return gpu_figures(self.fab, job.gpu, job.precision, func=self.func)

    def _bound(self, c: Candidate) -> None:
        """``c``'s compute bounds: at the step model's rates (``compute``), at peak
        (``peak``), over the job's GPUs, with the bubble."""
        job, gpu = c.job, self._gpu(c.job)
        gemm, head, attention = flops_per_token(job)
        tokens = job.tokens_per_step / job.gpus
        eff = job.compute_efficiency or gpu.compute_efficiency
        attn_eff = job.compute_efficiency or gpu.attention_efficiency
        peak, bf16 = gpu.peak_tflops * 1e12, (gpu.bf16_tflops or gpu.peak_tflops) * 1e12
        stretch = 1 + job.bubble_fraction
        expected = (gemm + head) / (peak * eff) + attention / (bf16 * attn_eff)
        c.bounds["compute"] = tokens * expected * stretch
        c.bounds["peak"] = tokens * (gemm + head + attention / 2) / max(peak, bf16) * stretch
        c.row["bound_s"], c.row["bound_s_lower"] = c.bounds["compute"], c.bounds["peak"]
        c.tie = (RECOMPUTE.index(job.recompute), job.virtual_stages, job.pp, job.tp, job.cp,
                 job.ep, -job.micro_batch, abs(job.zero - 1))

    def _schedule_bound(self, c: Candidate) -> float:
        """``c``'s step with the step model's compute and schedule, and every message at the
        least time a GPU's links allow."""
        job = c.job
        times = compute_times(job, self._gpu(job))
        m = job.micro_batches
        comm: dict[str, float] = {}
        messages: dict[str, list[dict]] = {}
        for t in step_transfers(job):
            seconds = self.cuts.seconds(job, t)
            comm[t.dimension] = comm.get(t.dimension, 0.0) + seconds
            messages.setdefault(t.dimension, []).append(
                {"collective": t.collective, "count": t.count, "message_bytes": t.message_bytes,
                 "group_size": t.group_size, "seconds": seconds})
        step = schedule(job, times.expected * m, times.attention * m, comm, messages).step
        return max(step, c.bounds["compute"])

    def _value(self, c: Candidate) -> float:
        """The bound the current rule prunes by."""
        if self.rule == "none":
            return 0.0
        if self.rule == "schedule":
            return c.bounds.get("schedule", c.bounds["compute"])
        return c.bounds[self.rule]

    # -- the walk ----------------------------------------------------------------------------
    def walk(self) -> WalkResult:
        """Solve the plans in order of bound until every one left is pruned."""
        cands = self.enumerate()
        limit = min(self.gpu.hbm_gb, self.con.get("max_memory_gb", math.inf))
        self.best: tuple[float, Candidate, TrainingStep] | None = None
        self.closest: tuple[float, Candidate] | None = None
        self.heap: list[tuple[float, tuple, int, Candidate]] = []
        self.count = itertools.count()
        valid = self._all = [c for c in cands if c.job is not None]
        for c in valid:
            self._bound(c)
            self._push(c)
        while self.heap:
            _, _, _, c = heapq.heappop(self.heap)
            if self._pruned(c):
                continue
            if "memory_gb" not in c.row and not self._fits(c, limit):
                continue
            if self.rule == "schedule" and "schedule" not in c.bounds:
                c.bounds["schedule"] = self._schedule_bound(c)
                c.row["bound_s"] = c.bounds["schedule"]
                self._push(c)  # back in line at its closer bound
                continue
            self._solve(c)
        if self.best is None:
            self._nothing_won(valid, limit)
        return WalkResult(cands, self.best[1], self.best[2], self.gpu, self.notes)

    def _push(self, c: Candidate) -> None:
        key = self._value(c) if self.rule != "none" else c.bounds["compute"]
        heapq.heappush(self.heap, (key, c.tie, next(self.count), c))

    def _fits(self, c: Candidate, limit: float) -> bool:
        mem = memory_per_gpu(c.job, self.gpu.hbm_gb).total_gb
        c.row["memory_gb"] = mem
        if mem <= limit:
            return True
        allowed = " allowed (max_memory_gb)" if limit < self.gpu.hbm_gb else ""
        c.row.update(verdict="pruned: memory", reason=f"needs {mem:,.1f} GB of {limit:,.4g}"
                     f"{allowed}")
        if self.closest is None or mem < self.closest[0]:
            self.closest = (mem, c)
        return False

    def _pruned(self, c: Candidate) -> bool:
        """Whether ``c``'s bound already shows it cannot win (or cannot reach ``min_mfu``)."""
        bound = self._value(c)
        if self.best is not None and bound >= self.best[0]:
            c.row.update(verdict="pruned: bound", reason=f"bound {bound:.4g} s already above "
                         f"the best {self.best[0]:.4g} s")
            return True
        min_mfu = self.con.get("min_mfu")
        if min_mfu is not None and bound > 0:
            cap = self._mfu_cap(c)
            if cap < min_mfu:
                c.row.update(verdict="pruned: bound", reason=f"bound {bound:.4g} s caps MFU at "
                             f"{cap:.1%}, below min_mfu {min_mfu:.1%}")
                return True
        return False

    def _mfu_cap(self, c: Candidate) -> float:
        """The highest MFU ``c``'s bound allows."""
        job = c.job
        flops = self.m.flops_per_token(job.seq_len) * job.tokens_per_step
        return flops / (job.gpus * self._gpu(job).peak_tflops * 1e12 * self._value(c))

    def _solve(self, c: Candidate) -> None:
        """Solve ``c``'s step, rank it, and check it against its bounds."""
        try:
            s = training_step(self.fab, c.job)
        except InvalidParameterError as exc:
            c.row.update(verdict="invalid", reason=str(exc).removeprefix("training_step(): "))
            return
        except Exception as exc:  # noqa: BLE001 - one plan's failure is its row, not the search's
            c.row.update(verdict="error", reason=f"{type(exc).__name__}: {exc}")
            return
        c.row.update(step_s=s.step_s, step_s_lower=s.step_s_lower, tokens_per_s=s.tokens_per_s,
                     mfu=s.mfu, memory_gb=s.memory.total_gb)
        min_mfu = self.con.get("min_mfu")
        if min_mfu is not None and s.mfu < min_mfu:
            c.row.update(verdict="rejected", reason=f"MFU {s.mfu:.1%} below min_mfu "
                         f"{min_mfu:.1%}")
        elif self.best is None or s.step_s < self.best[0]:
            self.best = (s.step_s, c, s)
        self._check(c, s.step_s)

    def _check(self, c: Candidate, step_s: float) -> None:
        """Drop the bounds ``c``'s solved step falls below, and put back what they pruned."""
        order = list(RULES)
        was = self.rule
        while self.rule != "none" and step_s < self._value(c) * (1 - TOL):
            self.rule = order[order.index(self.rule) + 1]
        if self.rule == was:
            return
        self.notes.append(f"a solved step ({step_s:.4g} s) fell below its bound by "
                          f"{RULES[was]}; pruning now by {RULES[self.rule]}")
        for x in self._all:  # a row's bound is one the search still trusts
            if "compute" in x.bounds and self.rule != "none":
                x.row["bound_s"] = self._value(x)
        back = [x for x in self._all if x.row["verdict"] == "pruned: bound"]
        for x in back:
            x.row.update(verdict="", reason="")
        rest = [x for *_, x in self.heap] + back
        self.heap = []
        for x in rest:
            self._push(x)

    def _nothing_won(self, valid: list[Candidate], limit: float) -> None:
        """Raise: nothing solved won (every plan too big, below ``min_mfu``, or failing)."""
        rows = [c for c in valid if c.row["verdict"] in ("rejected", "invalid", "error")]
        reach = [(c.row["mfu"], "reaches", c) for c in rows if c.row["verdict"] == "rejected"]
        reach += [(self._mfu_cap(c), "can reach at most", c) for c in valid
                  if c.row["verdict"] == "pruned: bound"]
        if reach:
            mfu, verb, c = max(reach, key=lambda x: x[0])
            raise InvalidParameterError(
                f"{self.func}(): no plan reaches min_mfu {self.con['min_mfu']:.1%} on "
                f"{self.fab.name}; the best, {c.job.describe()}, {verb} {mfu:.1%}")
        if not rows and self.closest is not None:
            mem, c = self.closest
            room = (f"constraints['max_memory_gb'] = {limit:,.4g} GB per GPU (of the GPU's "
                    f"{self.gpu.hbm_gb:,.4g})" if limit < self.gpu.hbm_gb else
                    f"{limit:,.4g} GB per GPU")
            ratio = f" ({mem / limit:.3g}x)" if mem / limit < 1e6 else ""
            raise InvalidParameterError(
                f"{self.func}(): no plan of {self.m.name} fits in {room} on "
                f"{self.fab.name}; the closest, {c.job.describe()}, needs {mem:,.1f} GB: "
                f"{mem - limit:,.1f} GB{ratio} too much; more GPUs, a smaller "
                "global_batch or seq_len, or constraints that allow more tp, pp or zero")
        reasons = Counter(c.row["reason"] for c in rows).most_common(2)
        # Every plan refused by the question's own limits (min_mfu, constraints) or by the
        # job's checks: bad input, said as such.
        raise InvalidParameterError(f"{self.func}(): no plan could be solved on "
                                    f"{self.fab.name} "
                                    f"({len(rows):,} failed); for example: "
                                    + "; ".join(r for r, _ in reasons))


def _invalid(row: dict[str, Any], exc: Exception) -> Candidate:
    row.update(verdict="invalid", reason=str(exc).removeprefix("TrainingJob(): "))
    return Candidate(row)


__all__ = ["ARGUMENTS", "CP_MIN_TOKENS", "FIELD_KEYS", "FIGURES", "PLAN_KEYS", "RULES",
           "SEQUENCE_FIELDS", "STATUSES", "Candidate", "LinkCuts", "PlanWalk", "WalkResult",
           "domain_size", "flops_per_token", "listed"]
