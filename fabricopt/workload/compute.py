r"""Compute time of a training job: each pipeline rank's work for one micro-batch.

Per GPU and micro-batch, for the layers of pipeline rank ``i`` (``docs/workload.md#compute``),
with ``T = b s / c`` the tokens a context rank holds, split over ``t`` tensor ranks:

* **matrix multiplies** ``6 N_l T / t`` for each layer's weights ``N_l`` (attention
  projections, the dense MLP or the ``k`` routed and the shared experts a token runs, the
  router) and ``6 V h T / t`` for the output head on the last rank, at the job precision's
  dense peak times the GPU's efficiency at that precision (the catalog's
  ``<precision>_efficiency``: FP8 GEMMs run at twice BF16's peak, but casts, scaling and the
  parts left in BF16 make a step about 1.3-1.5x faster, not 2x);
* **attention** ``12 a d s T / t`` per layer (the score and value products over the whole
  sequence, forward and backward, counted as PaLM counts model FLOPs), at the BF16 peak times
  the GPU's ``attention_efficiency`` (FlashAttention runs in BF16 whatever the GEMMs do);
* **recomputation** adds a forward pass: a third of a layer's work under full recomputation
  (for the layers it covers), a third of the attention for ``core_attn``, a third of the MLP
  for ``mlp``; norms and activation functions cost no matrix work.

The pipeline runs at the pace of its slowest rank. The certified figure takes every FLOP at
the job precision's peak and attention at half its count (a causal mask needs only the
lower triangle): no GPU computes the same work faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import GpuFigures
from .plan import TrainingJob


@dataclass(frozen=True)
class StageFlops:
    """FLOPs one GPU of a pipeline rank runs per micro-batch: matrix multiplies (recompute
    included), attention (recompute included) and the output head."""

    gemm: float
    attention: float
    head: float


@dataclass(frozen=True)
class ComputeTimes:
    """Seconds per micro-batch of the slowest pipeline rank: ``expected`` (the GPU's
    efficiencies), ``lower`` (peak rates, causal attention), and the expected attention part
    (what a context-parallel ring can hide under)."""

    expected: float
    lower: float
    attention: float
    gemm: float
    stage: int
    hardware_flops: float  # per step over all GPUs, recomputation included


def _layer_gemm_params(job: TrainingJob, layer: int) -> tuple[float, float]:
    """(attention projection weights, MLP weights a token multiplies with) of one layer."""
    m = job.model
    if m.is_moe and layer >= m.dense_layers:
        mlp = (m.top_k + m.shared_experts) * m.expert_params_each + m.hidden * m.experts
    else:
        mlp = m.dense_mlp_params
    return float(m.attention_params), float(mlp)


def stage_flops(job: TrainingJob, stage: int) -> StageFlops:
    """FLOPs one GPU of pipeline rank ``stage`` runs for one micro-batch."""
    m = job.model
    tokens = job.micro_batch * job.seq_len / job.cp / job.tp
    start = sum(job.stage_layers[:stage])
    layers = range(start, start + job.stage_layers[stage])
    again = job.recomputed
    if "layer" in again:
        n = len(layers)
        share = 1.0 if job.recompute_layers is None else min(job.recompute_layers, n) / max(n, 1)
    else:
        share = 0.0
    per_layer_attention = 12.0 * m.heads * (m.head_dim + m.rope_head_dim) * job.seq_len
    gemm = attention = 0.0
    for i in layers:
        attn_w, mlp_w = _layer_gemm_params(job, i)
        g = 6.0 * (attn_w + mlp_w)
        a = per_layer_attention
        extra_g = share * g / 3
        extra_a = share * a / 3
        if not share:
            extra_a += a / 3 if "core_attn" in again else 0.0
            extra_g += 2.0 * mlp_w if "mlp" in again else 0.0
        gemm += g + extra_g
        attention += a + extra_a
    head = 6.0 * m.vocab * m.hidden if stage == job.pp - 1 else 0.0
    return StageFlops(gemm * tokens, attention * tokens, head * tokens)


def compute_times(job: TrainingJob, gpu: GpuFigures) -> ComputeTimes:
    """Per-micro-batch compute of the slowest pipeline rank of ``job`` (``dp`` set) on
    ``gpu``.

    ``job.compute_efficiency``, when given, replaces both of the GPU's efficiencies.
    """
    peak = gpu.peak_tflops * 1e12
    bf16 = gpu.bf16_tflops * 1e12
    eff = job.compute_efficiency or gpu.compute_efficiency
    attn_eff = job.compute_efficiency or gpu.attention_efficiency
    best: ComputeTimes | None = None
    total = 0.0
    for stage in range(job.pp):
        f = stage_flops(job, stage)
        gemm_s = (f.gemm + f.head) / (peak * eff)
        attn_s = f.attention / (bf16 * attn_eff)
        lower = (f.gemm + f.head + f.attention / 2) / max(peak, bf16)
        total += f.gemm + f.head + f.attention
        t = ComputeTimes(gemm_s + attn_s, lower, attn_s, gemm_s, stage, 0.0)
        if best is None or t.expected > best.expected:
            best = t
    assert best is not None
    # Every rank's FLOPs per micro-batch, times the ranks holding them and the micro-batches.
    hardware = total * job.tp * job.cp * job.ep * job.dp_set * job.micro_batches
    return ComputeTimes(best.expected, max(best.lower, _lower_any(job, gpu)), best.attention,
                        best.gemm, best.stage, hardware)


def _lower_any(job: TrainingJob, gpu: GpuFigures) -> float:
    """The slowest rank at peak (the rank slowest at the expected rates may not be)."""
    peak = max(gpu.peak_tflops, gpu.bf16_tflops) * 1e12
    return max((f.gemm + f.head + f.attention / 2) / peak
               for f in (stage_flops(job, i) for i in range(job.pp)))


__all__ = ["ComputeTimes", "StageFlops", "compute_times", "stage_flops"]
