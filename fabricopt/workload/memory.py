r"""Memory per GPU of a training job, against the GPU's HBM.

Per GPU of the first pipeline stage, the fullest (``docs/workload.md#memory``):

* weights ``P`` = the stage's layers' weights / ``tp`` (routed experts also / ``ep``) plus the
  input embedding / ``tp`` (and the output head when ``pp = 1``);
* mixed-precision Adam keeps 2 bytes of BF16 weights, 2 of BF16 gradients and 12 of FP32
  master weights, momentum and variance per weight ("ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models", Rajbhandari et al., section 3.1); ZeRO stage 1 shards
  the 12 over the data-parallel ranks, stage 2 also the gradients, stage 3 also the weights;
* activations per layer and micro-batch, ``s`` the tokens per context-parallel rank
  ("Reducing Activation Recomputation in Large Transformer Models", Korthikanti et al., with
  tensor and sequence parallelism): ``s b h (34 + 5 a s / h) / t`` bytes without
  recomputation, ``34 s b h / t`` with selective recomputation, ``2 s b h / t`` with full
  recomputation (plus one layer's ``34 s b h / t`` while it is recomputed); 1F1B keeps ``p``
  micro-batches of the stage's layers in flight on the first stage, interleaving
  ``p (1 + (p - 1) / (p v))``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameterError
from .plan import TrainingJob

GB = 1e9


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU by kind, in GB, and the HBM they must fit in."""

    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    hbm_gb: float

    @property
    def total_gb(self) -> float:
        return self.weights_gb + self.gradients_gb + self.optimizer_gb + self.activations_gb

    @property
    def fits(self) -> bool:
        return self.total_gb <= self.hbm_gb

    def describe(self) -> str:
        return (f"{self.total_gb:,.1f} GB per GPU (weights {self.weights_gb:,.1f}, gradients "
                f"{self.gradients_gb:,.1f}, optimizer {self.optimizer_gb:,.1f}, activations "
                f"{self.activations_gb:,.1f}) of {self.hbm_gb:,.0f} GB HBM")


def stage_params(job: TrainingJob) -> tuple[float, float]:
    """Weights per GPU of the first stage: (replicated over expert ranks, routed experts)."""
    m = job.model
    per_layer_dense = m.dense_params - m.embedding_params
    per_layer_dense /= m.layers
    per_layer_expert = m.expert_params / m.layers
    lps = job.layers_per_stage
    embeddings = m.embedding_params if job.pp == 1 else m.vocab * m.hidden  # one stage: both
    dense = (per_layer_dense * lps + embeddings) / job.tp
    expert = per_layer_expert * lps / (job.tp * job.ep)
    return dense, expert


def activation_bytes_per_layer(job: TrainingJob) -> float:
    """Bytes of one layer's activations for one micro-batch on one GPU."""
    m = job.model
    sbh = job.seq_len / job.cp * job.micro_batch * m.hidden
    if job.recompute == "full":
        return 2 * sbh / job.tp
    if job.recompute == "selective":
        return 34 * sbh / job.tp
    return sbh * (34 + 5 * m.heads * job.seq_len / job.cp / m.hidden) / job.tp


def memory_per_gpu(job: TrainingJob, hbm_gb: float) -> MemoryEstimate:
    """The memory of ``job`` (``dp`` set) on one GPU of its first stage.

    >>> from fabricopt.workload.plan import TrainingJob
    >>> job = TrainingJob("llama3-8b", tp=1, dp=8, global_batch=64, seq_len=4096)
    >>> round(memory_per_gpu(job, 80).weights_gb, 2)     # 8.03e9 weights x 2 bytes
    16.06
    """
    dense, expert = stage_params(job)
    dense_shards = job.dp_set * job.cp * job.ep  # ranks holding the same replicated weights
    expert_shards = job.dp_set * job.cp
    params = dense + expert
    sharded = dense / dense_shards + expert / expert_shards

    def by_stage(bytes_per: float, from_stage: int) -> float:
        return bytes_per * (sharded if job.zero >= from_stage else params) / GB

    v, p = job.virtual_stages, job.pp
    in_flight = min(p * (1 + (p - 1) / (p * v)) if v > 1 else p, job.micro_batches * v)
    acts = activation_bytes_per_layer(job) * job.layers_per_stage * in_flight
    if job.recompute == "full":
        acts += 34 * job.seq_len / job.cp * job.micro_batch * job.model.hidden / job.tp
    return MemoryEstimate(by_stage(2, 3), by_stage(2, 2), by_stage(12, 1), acts / GB, hbm_gb)


def check_fits(job: TrainingJob, estimate: MemoryEstimate) -> None:
    """Raise when the job does not fit, saying by how much and what would help."""
    if estimate.fits:
        return
    over = estimate.total_gb - estimate.hbm_gb
    raise InvalidParameterError(
        f"training_step(): {job.describe()} needs {estimate.describe()}: {over:,.1f} GB "
        f"({estimate.total_gb / estimate.hbm_gb:.3g}x) too much; raise tp or pp, shard with "
        "zero=1..3 over more data-parallel ranks, or recompute='full'")


__all__ = ["MemoryEstimate", "activation_bytes_per_layer", "check_fits", "memory_per_gpu",
           "stage_params"]
