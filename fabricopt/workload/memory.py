r"""Memory per GPU of a training job, stage by stage, against the GPU's HBM.

Every pipeline rank is counted and the fullest one reported (``docs/workload.md#memory``):

* **weights**: the rank's own layers (dense-MLP and mixture-of-experts layers counted as they
  fall), the input embedding on the first rank and the output head on the last (both on a
  rank of its own when ``pp = 1``; a tied head is a copy there), over ``tp``; routed experts
  also over ``ep``;
* **training state**, mixed-precision Adam ("ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", Rajbhandari et al., section 3.1): 2 bytes of BF16 weights, 2 or
  4 bytes of gradients (``grad_precision``; Megatron-Core keeps FP32 gradients by default)
  and 12 of FP32 master weights, momentum and variance per weight. ZeRO stage 1 (the
  distributed optimizer) shards the 12 over the ranks holding the same weights, stage 2 the
  gradients too, stage 3 the weights too;
* **activations** (:mod:`.activations`) of the micro-batches in flight: 1F1B keeps
  ``min(p - i, m)`` micro-batches on rank ``i``; the interleaved schedule keeps
  ``min(2 (p - i - 1) + (v - 1) N + 1, v m)`` model chunks of ``L_i / v`` layers, ``N`` the
  micro-batch group (``p`` unless ``microbatch_group`` says; its warm-up, as Megatron-Core
  schedules it); one micro-batch when ``pp = 1``. Full recomputation keeps only each
  recomputed layer's input, and one layer's activations while it is recomputed; selective
  recomputation drops what its modules rebuild (the score matrix by default: nothing more
  with FlashAttention). The last rank also holds one micro-batch's logits (BF16, and FP32 for the
  loss) over the vocabulary split ``tp`` ways.

and a flat :data:`RUNTIME_GB` for what the framework itself holds: the CUDA context, cuBLAS
workspaces, NCCL's buffers and what the caching allocator cannot reuse (an estimate: about a
GB for the context and workspaces and one or two for the communicators; fragmentation more
where activations churn). Not counted: FP8 weight copies.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameterError
from .activations import layer_activations, layer_input_bytes
from .plan import TrainingJob

GB = 1e9
#: Memory the runtime holds whatever the plan (see the module docstring), GB.
RUNTIME_GB = 3.0


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU by kind, in GB, on the fullest pipeline rank (``stage``), and the HBM
    they must fit in; ``in_flight`` is the micro-batches of that rank's layers held at once."""

    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    hbm_gb: float
    stage: int = 0
    in_flight: float = 1.0
    runtime_gb: float = RUNTIME_GB

    @property
    def total_gb(self) -> float:
        return (self.weights_gb + self.gradients_gb + self.optimizer_gb + self.activations_gb
                + self.runtime_gb)

    @property
    def fits(self) -> bool:
        return self.total_gb <= self.hbm_gb

    def describe(self) -> str:
        where = f" on pipeline rank {self.stage}" if self.stage else ""
        return (f"{self.total_gb:,.1f} GB per GPU{where} (weights {self.weights_gb:,.1f}, "
                f"gradients {self.gradients_gb:,.1f}, optimizer {self.optimizer_gb:,.1f}, "
                f"activations {self.activations_gb:,.1f}, runtime {self.runtime_gb:,.1f}) of "
                f"{self.hbm_gb:,.0f} GB HBM")


def _layer_ranges(job: TrainingJob) -> list[range]:
    out, start = [], 0
    for n in job.stage_layers:
        out.append(range(start, start + n))
        start += n
    return out


def stage_params(job: TrainingJob, stage: int | None = None) -> tuple[float, float]:
    """Weights per GPU of pipeline rank ``stage`` (default: the rank holding the most):
    (replicated over expert ranks, routed experts)."""
    if stage is None:
        return max((stage_params(job, i) for i in range(job.pp)), key=sum)
    m = job.model
    layers = _layer_ranges(job)[stage]
    moe = sum(1 for i in layers if m.is_moe and i >= m.dense_layers)
    dense_mlp = len(layers) - moe
    moe_rest = m.shared_experts * m.expert_params_each + m.hidden * m.experts
    dense = len(layers) * m.attention_params + dense_mlp * m.dense_mlp_params + moe * moe_rest
    head = m.vocab * m.hidden
    if stage == 0:
        dense += head                                     # input embedding
    if stage == job.pp - 1 and (job.pp > 1 or not m.tied_embeddings):
        dense += head                                     # output head (a copy when tied)
    expert = moe * m.experts * m.expert_params_each
    return dense / job.tp, expert / (job.tp * job.ep)


def in_flight_chunks(job: TrainingJob, stage: int) -> tuple[float, float]:
    """(model chunks held at once, layers per chunk) on pipeline rank ``stage``."""
    p, v, m = job.pp, job.virtual_stages, job.micro_batches
    layers = job.stage_layers[stage]
    if p == 1:
        return 1.0, float(layers)
    if v == 1:
        return float(min(p - stage, m)), float(layers)
    group = job.microbatch_group or p
    warmup = 2 * (p - stage - 1) + (v - 1) * group
    return float(min(warmup + 1, v * m)), layers / v


def _activation_bytes(job: TrainingJob, stage: int) -> float:
    m = job.model
    chunks, per_chunk = in_flight_chunks(job, stage)
    shape = {"tp": job.tp, "seq_len": job.seq_len, "cp": job.cp,
             "micro_batch": job.micro_batch}
    selective = job.recomputed if job.recompute == "selective" else frozenset()
    layers = list(_layer_ranges(job)[stage])
    if not layers:
        per_layer = 0.0
        worst = 0.0
    else:
        sizes = [layer_activations(m, sequence_parallel=job.sequence_parallel,
                                   flash_attention=job.flash_attention, recompute=selective,
                                   moe=m.is_moe and i >= m.dense_layers, **shape).total
                 for i in layers]
        per_layer = sum(sizes) / len(sizes)
        worst = max(sizes)
    kept = per_layer
    rematerialised = 0.0
    if job.recompute == "full":
        stage_layers = max(len(layers), 1)
        recomputed = stage_layers if job.recompute_layers is None else \
            min(job.recompute_layers, stage_layers)
        share = recomputed / stage_layers
        x = layer_input_bytes(m, sequence_parallel=job.sequence_parallel, **shape)
        kept = share * x + (1 - share) * per_layer
        if recomputed:
            rematerialised = worst                 # one layer rebuilt during its backward
    total = chunks * per_chunk * kept + rematerialised
    if stage == job.pp - 1:
        tokens = job.micro_batch * job.seq_len / job.cp
        total += tokens * m.vocab / job.tp * (2.0 + 4.0)   # BF16 logits, FP32 for the loss
    return total


def memory_per_gpu(job: TrainingJob, hbm_gb: float) -> MemoryEstimate:
    """The memory of ``job`` (``dp`` set) on one GPU of its fullest pipeline rank.

    >>> from fabricopt.workload.plan import TrainingJob
    >>> job = TrainingJob("llama3-8b", tp=1, dp=8, global_batch=64, seq_len=4096)
    >>> round(memory_per_gpu(job, 80).weights_gb, 2)     # 8.03e9 weights x 2 bytes
    16.06
    """
    grad_bytes = 4.0 if job.grad_precision == "fp32" else 2.0
    dense_shards = job.dp_set * job.cp * job.ep  # ranks holding the same replicated weights
    expert_shards = job.dp_set * job.cp
    best: MemoryEstimate | None = None
    for stage in range(job.pp):
        dense, expert = stage_params(job, stage)
        params = dense + expert
        sharded = dense / dense_shards + expert / expert_shards

        def by_stage(bytes_per: float, from_stage: int, params=params, sharded=sharded
                     ) -> float:
            return bytes_per * (sharded if job.zero >= from_stage else params) / GB

        acts = _activation_bytes(job, stage) / GB
        est = MemoryEstimate(by_stage(2, 3), by_stage(grad_bytes, 2), by_stage(12, 1), acts,
                             hbm_gb, stage, in_flight_chunks(job, stage)[0])
        if best is None or est.total_gb > best.total_gb:
            best = est
    assert best is not None
    return best


def check_fits(job: TrainingJob, estimate: MemoryEstimate) -> None:
    """Raise when the job does not fit, saying by how much and what would help."""
    if estimate.fits:
        return
    over = estimate.total_gb - estimate.hbm_gb
    raise InvalidParameterError(
        f"training_step(): {job.describe()} needs {estimate.describe()}: {over:,.1f} GB "
        f"({estimate.total_gb / estimate.hbm_gb:.3g}x) too much; raise tp or pp, shard with "
        "zero=1..3 over more data-parallel ranks, recompute='full' (or more "
        "recompute_layers), or fewer micro-batches in flight")


__all__ = ["RUNTIME_GB", "MemoryEstimate", "check_fits", "in_flight_chunks", "memory_per_gpu",
           "stage_params"]
