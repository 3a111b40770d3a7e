r"""Step time of a training job on a fabric: compute, communication per dimension, overlap.

The pipeline's slowest rank sets the compute (:mod:`.compute`); each dimension's messages
are phases of concurrent groups on the shared fabric with a certified lower bound
(:mod:`.phase_bounds`) and an expected time at their real size; the job's ``overlap`` says
what of them hides under compute (:mod:`.overlap`, ``docs/workload.md``).

Expected time of one message: NCCL's Simple-protocol latency (a base and a per-step cost over
NVLink or the network, ``passes x (n - 1)`` steps) plus its bytes at the calibrated
efficiency of the links it runs on. A group inside one scale-up domain runs on that domain's
links only (its GPUs' NVLink bandwidth at the ring efficiency of their NVLink generation),
as NCCL runs it; other groups take the certified bound over the efficiency of the side that
binds. Never below the bound. ``step_s_lower`` uses the bounds and peak compute: no schedule
of this shape is faster.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import methodcaller

import numpy as np

from .._unchanged import unchanged
from ..catalog import Catalog
from ..collectives.efficiency import EFFICIENCY_PROFILES
from ..collectives.nccl import RING_BASE_US, RING_NET_US, RING_NVLINK_US
from ..errors import InvalidParameterError
from ..fabric import PLAUSIBLE_GBPS, Fabric, check_fabric
from ..graph_arrays import GraphArrays
from .communication import Transfer, step_transfers
from .compute import compute_times
from .hardware import GpuFigures, gpu_figures
from .memory import MemoryEstimate, check_fits, memory_per_gpu
from .overlap import IN_STAGE, schedule
from .phase_bounds import FabricLevels, PhaseBound, phase_bound
from .placement import Placement, place_ranks
from .plan import TrainingJob

#: Ring passes per collective (an all-reduce is a reduce-scatter and an all-gather).
PASSES = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1, "p2p": 1}
#: The arrays, levels and one-group bounds of recently used fabrics, kept while the fabric
#: lives and its links are unchanged (a job after another on one fabric reuses them).
_LEVELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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
    hardware_flops: float = 0.0  # per step, all GPUs, recomputation included

    @property
    def hardware_tflops_per_gpu(self) -> float:
        """FLOPs run per second per GPU, recomputation included (what Megatron-LM's and
        BLOOM's published TFLOP/s count)."""
        return self.hardware_flops / self.job.gpus / self.step_s / 1e12

    @property
    def model_tflops_per_gpu(self) -> float:
        """Model FLOPs per second per GPU (what MFU divides by the peak)."""
        return self.mfu * self.gpu.peak_tflops

    @property
    def memory_gb_per_gpu(self) -> float:
        return self.memory.total_gb

    @property
    def binding_dimension(self) -> str | None:
        """The dimension with the most exposed communication, None without any."""
        best = max(self.phases.values(), key=lambda p: p.exposed_s, default=None)
        return None if best is None or best.exposed_s <= 0 else best.dimension

    def __str__(self) -> str:
        # Tensor, context and expert communication runs on every micro-batch, so the
        # pipeline bubble stretches it too: its exposed time includes its share of the bubble
        # (x(1 + B)) and can exceed its expected time; the bubble counts that share as well.
        stretch = 1.0 + self.job.bubble_fraction
        in_bubble = sum(p.exposed_s for d, p in self.phases.items()
                        if d in IN_STAGE) * (1.0 - 1.0 / stretch)
        overlap = f" ({in_bubble:.4g} s of it in the bubble)" if in_bubble > 0 else ""
        lines = [f"{self.job.describe()} on {self.fabric} ({self.gpu.key})",
                 f"  step           {self.step_s:.4g} s expected, >= {self.step_s_lower:.4g} s "
                 "(certified bounds, peak compute)",
                 f"  compute        {self.compute_s:.4g} s, bubble {self.bubble_s:.4g} s, "
                 f"exposed communication {self.exposed_comm_s:.4g} s{overlap}",
                 f"  throughput     {self.tokens_per_s:,.0f} tokens/s, MFU {self.mfu:.1%}",
                 f"  memory         {self.memory.describe()}"]
        for d, p in self.phases.items():
            bubble = f" incl. bubble x{stretch:.4g}" if d in IN_STAGE and stretch > 1 else ""
            lines.append(f"  {p.dimension:<4} {p.bytes_per_gpu / 1e9:10.4g} GB/GPU  "
                         f"lower {p.lower_s:.4g} s, expected {p.expected_s:.4g} s, exposed "
                         f"{p.exposed_s:.4g} s{bubble}  (binding {p.binding_tier}; {p.method})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _efficiency(levels: FabricLevels, tier: str) -> float:
    """The calibrated efficiency of the side (NVLink or network) the binding tier is on."""
    side = "scale_up" if tier in levels.scale_up_tiers else "network"
    return EFFICIENCY_PROFILES[levels.profile][side]


def _bus_factor(collective: str, n: int) -> float:
    """Bytes each GPU sends per byte of message: ``(n-1)/n``, ``2(n-1)/n`` for an
    all-reduce, 1 for a send."""
    if collective == "p2p":
        return 1.0
    return (n - 1) / n * (2 if collective == "all_reduce" else 1)


def _expected_message(levels: FabricLevels, place: Placement, groups: np.ndarray,
                      t: Transfer, bound: PhaseBound) -> float:
    """Expected seconds of one message of ``t`` (see the module docstring)."""
    lower = t.message_bytes * bound.seconds_per_byte
    n = t.group_size if t.collective != "p2p" else 2
    steps = PASSES[t.collective] * (n - 1)
    inside = bool(np.all(place.domain[groups] == place.domain[groups[:, :1]]))
    if inside:
        gpus = np.array([levels.ga.index[g] for g in np.asarray(place.gpus)[groups.ravel()]])
        up = float(levels.scale_up_gbps[gpus].min()) * 1e9 / 8  # bytes/s per GPU
        eff = EFFICIENCY_PROFILES[levels.profile]["scale_up"]
        latency = (RING_BASE_US + steps * RING_NVLINK_US) * 1e-6
        busy = t.message_bytes * _bus_factor(t.collective, n) / (up * eff) if up > 0 else \
            lower / _efficiency(levels, bound.binding_tier)
    else:
        latency = (RING_BASE_US + steps * RING_NET_US) * 1e-6
        busy = lower / _efficiency(levels, bound.binding_tier)
    return max(lower, latency + busy)


def _solve_phases(levels: FabricLevels, place: Placement, transfers: list[Transfer],
                  ) -> dict[str, PhaseTime]:
    rank_nodes = np.array([levels.ga.index[g] for g in place.gpus])
    cache: dict[tuple, tuple[PhaseBound, np.ndarray]] = {}
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
            cache[key] = (phase_bound(levels, place.gpus, rank_nodes, groups, t.collective),
                          groups)
        b, groups = cache[key]
        if not np.isfinite(b.seconds_per_byte):
            least = float(levels.ga.capacity.min()) if levels.ga.capacity.size else 0.0
            slow = (f", or links too slow to carry a byte in a time a float holds (down to "
                    f"{least:.3g} Gb/s)" if least < PLAUSIBLE_GBPS[0] else "")
            raise InvalidParameterError(
                f"training_step(): the {t.dimension} traffic ({t.collective}) has no path "
                f"between some of its GPUs on {levels.fab.name} (a rail-only network without "
                f"scale-up links joining the rails?){slow}; place that dimension differently")
        lower = t.count * t.message_bytes * b.seconds_per_byte
        expected = t.count * _expected_message(levels, place, groups, t, b)
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


def _schedule(job: TrainingJob, phases: dict[str, PhaseTime], compute: float,
              attention: float, expected: bool) -> tuple[float, float]:
    """(step, bubble) under the job's overlap; fills each phase's exposed time."""
    key = "expected_s" if expected else "lower_s"
    comm = {d: getattr(p, key) for d, p in phases.items()}
    messages = {d: [{**m, "seconds": m[key]} for m in p.messages] for d, p in phases.items()}
    e = schedule(job, compute, attention, comm, messages)
    for d, p in phases.items():
        if expected:
            p.exposed_s = e.exposed.get(d, 0.0)
        else:
            p.exposed_lower_s = e.exposed.get(d, 0.0)
    return e.step, e.bubble


def _levels(fab: Fabric) -> FabricLevels:
    """The fabric's levels, from the cache when its nodes, links and capacities are those
    it had when they were found."""
    g = fab.graph
    # Read through networkx's adjacency dicts by C-level maps, as GraphArrays reads them:
    # the edge view's generator took 0.7 s of a 16,384-GPU step. Only compared with itself.
    data = chain.from_iterable(map(dict.values, g._adj.values()))
    stamp = (g.number_of_nodes(), g.number_of_edges(),
             sum(map(methodcaller("get", "capacity", 0.0), data)))
    hit = _LEVELS.get(fab)
    if hit is not None and hit[0] == stamp:
        return dataclasses.replace(hit[1], fab=fab)
    levels = FabricLevels.of(fab, GraphArrays.from_fabric(fab))
    # Kept without the fabric: a value that held its key would keep every fabric ever
    # stepped alive (a failure sweep's failed copies, an optimize run's designs).
    _LEVELS[fab] = (stamp, dataclasses.replace(levels, fab=None))
    return levels


def training_step(fab: Fabric, job: TrainingJob,
                  placement: Sequence[Hashable] | None = None, *,
                  catalog: Catalog | None = None) -> TrainingStep:
    """Step time, tokens per second, MFU and communication per dimension of ``job`` on ``fab``.

    Parameters
    ----------
    fab : Fabric
    job : TrainingJob
        ``dp=None`` takes every GPU the other dimensions leave.
    placement : sequence of GPU names, optional
        The GPU of each rank (rank order: tp fastest, then cp, ep, dp, pp); default the
        fabric's GPUs in order.
    catalog : Catalog, optional
        Where the GPU's figures come from (default the shipped catalog).

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
    if catalog is not None and not isinstance(catalog, Catalog):
        raise InvalidParameterError(f"training_step(): catalog must be None or a Catalog, "
                                    f"got {catalog!r}")
    job = job.with_gpus(len(fab.endpoints), "training_step")
    job.check_batch()
    gpu = gpu_figures(fab, job.gpu, job.precision, catalog, func="training_step")
    memory = memory_per_gpu(job, gpu.hbm_gb)
    check_fits(job, memory)
    # Nothing edits the fabric during a step: its arrays are read once for every bound.
    with unchanged(fab):
        levels = _levels(fab)
        place = place_ranks(fab, job, placement, levels.ga, levels.levels[1].label)
        phases = _solve_phases(levels, place, step_transfers(job))
    times = compute_times(job, gpu)
    mb = job.micro_batches
    compute = times.expected * mb
    step, bubble = _schedule(job, phases, compute, times.attention * mb, expected=True)
    step_lower, _ = _schedule(job, phases, times.lower * mb, times.lower * mb *
                              times.attention / max(times.expected, 1e-300), expected=False)
    if not (math.isfinite(step) and math.isfinite(step_lower) and job.tokens_per_step / step > 0):
        slowest = max(phases.values(), key=lambda p: p.expected_s, default=None)
        raise InvalidParameterError(
            f"training_step(): the step of {job.model.name} on {fab.name} takes {step:.4g} s, "
            f"too long for a float to count tokens per second (compute {compute:.4g} s"
            + (f", {slowest.dimension} communication {slowest.expected_s:.4g} s"
               if slowest is not None else "")
            + "): links of a real capacity and a real compute_efficiency give a finite step")
    exposed = sum(p.exposed_s for p in phases.values())
    notes = list(place.notes) + [f"{p.dimension}: {n}" for p in phases.values()
                                 for n in p.notes]
    model_flops = job.model.flops_per_token(job.seq_len) * job.tokens_per_step
    peak = gpu.peak_tflops * 1e12
    return TrainingStep(job, fab.name, gpu, step, step_lower, compute, bubble, exposed,
                        job.tokens_per_step / step, model_flops / (job.gpus * peak * step),
                        memory, phases, notes, times.hardware_flops)


__all__ = ["PhaseTime", "TrainingStep", "training_step"]
