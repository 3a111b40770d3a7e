r"""Step time of a training job on a fabric: compute, communication per dimension, overlap.

Per step (``docs/workload.md#overlap-model``), with ``C`` the compute time, ``B`` the pipeline
bubble ``(p-1)/(v m)`` and per-dimension times from :mod:`.phase_bounds`:

``step = (C + T_tp + T_cp + T_ep)(1 + B) + T_pp + max(T_dp / k, T_dp - W)``

Tensor, context and expert traffic sits on the critical path of every layer (exposed); the
pipeline's sends are on it once per micro-batch and chunk, ``2 (v m + p - 1)`` of them; data
parallelism overlaps the window ``W`` (one micro-batch's compute; ZeRO-3 prefetches under all
of it) except its last bucket (``k`` buckets of 40 MB). ``step_s`` uses expected times (each
bound over the calibrated efficiency of the links that bind, and compute at the GPU's compute
efficiency); ``step_s_lower`` uses the certified bounds and the peak rate: no schedule of this
shape is faster.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..collectives.efficiency import EFFICIENCY_PROFILES
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..graph_arrays import GraphArrays
from .communication import Transfer, step_transfers
from .hardware import GpuFigures, gpu_figures
from .memory import MemoryEstimate, check_fits, memory_per_gpu
from .phase_bounds import FabricLevels, PhaseBound, phase_bound
from .placement import Placement, place_ranks
from .plan import TrainingJob

BUCKET_BYTES = 40e6
#: The arrays, levels and one-group bounds of recently used fabrics, kept while the fabric
#: lives and its links are unchanged (a job after another on one fabric reuses them).
_LEVELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
EXPOSED = ("tp", "cp", "ep")


@dataclass
class PhaseTime:
    """One dimension's traffic per step: bytes each GPU sends, the certified lower bound
    and the expected time (all of its messages), the part of each on the critical path, the
    tier that binds and how the bound was found."""

    dimension: str
    bytes_per_gpu: float
    lower_s: float
    expected_s: float
    exposed_lower_s: float = 0.0
    exposed_s: float = 0.0
    binding_tier: str = "?"
    method: str = ""
    messages: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class TrainingStep:
    """What :func:`training_step` returns (times in seconds)."""

    job: TrainingJob
    fabric: str
    gpu: GpuFigures
    step_s: float
    step_s_lower: float
    compute_s: float
    bubble_s: float
    exposed_comm_s: float
    tokens_per_s: float
    mfu: float
    memory: MemoryEstimate
    phases: dict[str, PhaseTime]
    notes: list[str]

    @property
    def memory_gb_per_gpu(self) -> float:
        return self.memory.total_gb

    @property
    def binding_dimension(self) -> str | None:
        """The dimension with the most exposed communication, None without any."""
        best = max(self.phases.values(), key=lambda p: p.exposed_s, default=None)
        return None if best is None or best.exposed_s <= 0 else best.dimension

    def __str__(self) -> str:
        lines = [f"{self.job.describe()} on {self.fabric} ({self.gpu.key})",
                 f"  step           {self.step_s:.4g} s expected, >= {self.step_s_lower:.4g} s "
                 "(certified bounds, peak compute)",
                 f"  compute        {self.compute_s:.4g} s, bubble {self.bubble_s:.4g} s, "
                 f"exposed communication {self.exposed_comm_s:.4g} s",
                 f"  throughput     {self.tokens_per_s:,.0f} tokens/s, MFU {self.mfu:.1%}",
                 f"  memory         {self.memory.describe()}"]
        for p in self.phases.values():
            lines.append(f"  {p.dimension:<4} {p.bytes_per_gpu / 1e9:10.4g} GB/GPU  "
                         f"lower {p.lower_s:.4g} s, expected {p.expected_s:.4g} s, exposed "
                         f"{p.exposed_s:.4g} s  (binding {p.binding_tier}; {p.method})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _efficiency(levels: FabricLevels, tier: str) -> float:
    """The calibrated efficiency of the side (NVLink or network) the binding tier is on."""
    side = "scale_up" if tier in levels.scale_up_tiers else "network"
    return EFFICIENCY_PROFILES[levels.profile][side]


def _solve_phases(levels: FabricLevels, place: Placement, transfers: list[Transfer],
                  ) -> dict[str, PhaseTime]:
    rank_nodes = np.array([levels.ga.index[g] for g in place.gpus])
    cache: dict[tuple, PhaseBound] = {}
    phases: dict[str, PhaseTime] = {}
    for t in transfers:
        key = (t.collective, t.dims)
        if key not in cache:
            if t.collective == "p2p":
                # Every stage sends to the next at once (the backward sends mirror them).
                stages = place.groups(["pp"])          # one row per pipeline
                groups = np.concatenate([stages[:, [i, i + 1]]
                                         for i in range(stages.shape[1] - 1)])
            else:
                groups = place.groups(list(t.dims))
            cache[key] = phase_bound(levels, place.gpus, rank_nodes, groups, t.collective)
        b = cache[key]
        if not np.isfinite(b.seconds_per_byte):
            raise InvalidParameterError(
                f"training_step(): the {t.dimension} traffic ({t.collective}) has no path "
                f"between some of its GPUs on {levels.fab.name} (a rail-only network without "
                "scale-up links joining the rails?); place that dimension differently")
        lower = t.count * t.message_bytes * b.seconds_per_byte
        expected = lower / _efficiency(levels, b.binding_tier)
        p = phases.setdefault(t.dimension, PhaseTime(t.dimension, 0.0, 0.0, 0.0))
        p.notes += [n for n in b.notes if n not in p.notes]
        p.bytes_per_gpu += t.bytes_per_gpu
        p.lower_s += lower
        p.expected_s += expected
        if not p.messages or lower >= max(m["lower_s"] for m in p.messages):
            p.binding_tier, p.method = b.binding_tier, b.method
        p.messages.append({"collective": t.collective, "message_bytes": t.message_bytes,
                           "count": t.count, "group_size": t.group_size, "lower_s": lower,
                           "expected_s": expected})
    return phases


def _overlap(job: TrainingJob, phases: dict[str, PhaseTime], compute: float,
             expected: bool) -> tuple[float, float]:
    """(step time, bubble time) under the overlap model; fills each phase's exposed time."""
    def time(p: PhaseTime) -> float:
        return p.expected_s if expected else p.lower_s

    def expose(p: PhaseTime, t: float) -> None:
        if expected:
            p.exposed_s = t
        else:
            p.exposed_lower_s = t

    per_layer = compute
    for d in EXPOSED:
        if d in phases:
            per_layer += time(phases[d])
            expose(phases[d], time(phases[d]) * (1 + job.bubble_fraction))
    bubble = per_layer * job.bubble_fraction
    step = per_layer + bubble
    if "pp" in phases:
        p = phases["pp"]
        sends = p.messages[0]["count"]  # 2 m v per step
        on_path = 2 * (job.micro_batches * job.virtual_stages + job.pp - 1)
        expose(p, time(p) * on_path / sends)
        step += time(p) * on_path / sends
    if "dp" in phases:
        p = phases["dp"]
        window = compute if job.zero == 3 else compute / job.micro_batches
        buckets = max(1, math.ceil(p.messages[0]["message_bytes"] / BUCKET_BYTES))
        exposed = max(time(p) / buckets, time(p) - window)
        expose(p, exposed)
        step += exposed
    return step, bubble


def _levels(fab: Fabric) -> FabricLevels:
    """The fabric's levels, from the cache when its nodes, links and capacities are those
    it had when they were found."""
    g = fab.graph
    stamp = (g.number_of_nodes(), g.number_of_edges(),
             sum(d.get("capacity", 0.0) for _, _, d in g.edges(data=True)))
    hit = _LEVELS.get(fab)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    levels = FabricLevels.of(fab, GraphArrays.from_fabric(fab))
    _LEVELS[fab] = (stamp, levels)
    return levels


def training_step(fab: Fabric, job: TrainingJob,
                  placement: Sequence[Hashable] | None = None) -> TrainingStep:
    """Step time, tokens per second, MFU and communication per dimension of ``job`` on ``fab``.

    Parameters
    ----------
    fab : Fabric
    job : TrainingJob
        ``dp=None`` takes every GPU the other dimensions leave.
    placement : sequence of GPU names, optional
        The GPU of each rank (rank order: tp fastest, then cp, ep, dp, pp); default the
        fabric's GPUs in order.

    Returns
    -------
    TrainingStep

    Raises
    ------
    InvalidParameterError
        On a plan that needs more GPUs than the fabric has, or more memory than a GPU's HBM
        (the message says how much).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.superpod(1)
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=256, seq_len=8192)
    >>> s = fo.training_step(fab, job)
    >>> s.job.dp, s.step_s >= s.step_s_lower > 0, s.phases["tp"].binding_tier
    (32, True, 'gpu-nvswitch')
    """
    check_fabric("training_step", fab)
    if not isinstance(job, TrainingJob):
        raise InvalidParameterError(f"training_step(): job must be a TrainingJob, got "
                                    f"{type(job).__name__}")
    job = job.with_gpus(len(fab.endpoints), "training_step")
    job.check_batch()
    gpu = gpu_figures(fab, job.gpu, job.precision, func="training_step")
    memory = memory_per_gpu(job, gpu.hbm_gb)
    check_fits(job, memory)
    levels = _levels(fab)
    ga = levels.ga
    place = place_ranks(fab, job, placement, ga, levels.levels[1].label)
    phases = _solve_phases(levels, place, step_transfers(job))
    m = job.model
    model_flops = m.flops_per_token(job.seq_len) * job.tokens_per_step
    hardware = model_flops * (4 / 3 if job.recompute == "full" else 1.0)
    peak = gpu.peak_tflops * 1e12
    eff = job.compute_efficiency or gpu.compute_efficiency
    compute = hardware / job.gpus / (peak * eff)
    step, bubble = _overlap(job, phases, compute, expected=True)
    step_lower, _ = _overlap(job, phases, hardware / job.gpus / peak, expected=False)
    exposed = sum(p.exposed_s for p in phases.values())
    notes = list(place.notes) + [f"{p.dimension}: {n}" for p in phases.values()
                                 for n in p.notes]
    return TrainingStep(job, fab.name, gpu, step, step_lower, compute, bubble, exposed,
                        job.tokens_per_step / step, model_flops / (job.gpus * peak * step),
                        memory, phases, notes)


__all__ = ["PhaseTime", "TrainingStep", "training_step"]
