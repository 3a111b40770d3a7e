r"""Messages a training step sends, per parallel dimension (``docs/workload.md#communication``).

Notation: ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``t`` tp, ``c`` cp, ``m``
micro-batches per step, ``L_s`` layers of the fullest pipeline rank, ``v`` virtual stages, 2
bytes per BF16 value; a layer runs ``r`` passes (forward, backward, and the forward again for
the layers full recomputation covers: ``r`` from 2 to 3). Message sizes follow nccl-tests
(``S`` is the gathered size of an all-gather, the input of a reduce-scatter, the buffer of an
all-reduce, what each GPU sends in an all-to-all):

* **tensor** (Megatron-LM with sequence parallelism): per layer and pass 2 all-gathers and 2
  reduce-scatters of ``S = b (s/c) h x 2``; without sequence parallelism 2 all-reduces;
* **context** (ring attention): per layer the keys and values of the sequence are gathered in
  the forward pass and in the backward pass (all-gathers of ``S = b s e x 2``, ``e`` the
  key-value width per tensor rank), their gradients reduce-scattered once;
* **expert**: per MoE layer (of the pipeline rank holding the most) and pass, dispatch and
  combine all-to-alls of ``S = k b s h x 2 / (c t)`` (each token to its ``k`` experts);
* **pipeline**: per micro-batch and model chunk one send forward and one backward of ``b (s/c)
  h x 2 / t`` (the scatter/gather optimisation of Megatron-LM splits it over tensor ranks);
* **data**: the gradients of a GPU's weights (4 bytes each in FP32, 2 in BF16:
  ``grad_precision``) reduce-scattered and the weights (2 bytes) all-gathered once per step
  (ZeRO 0: one all-reduce of the gradients; ZeRO 2: the gradients reduce-scattered every
  micro-batch, since they are kept sharded; ZeRO 3: weights gathered in the forward and
  backward pass and gradients reduce-scattered every micro-batch), over the ranks that hold
  the same weights: ``cp x ep x dp`` for dense weights, ``cp x dp`` for routed experts.
  Weights are those of the pipeline rank holding the most.
"""

from __future__ import annotations

from dataclasses import dataclass

from .memory import stage_params
from .plan import TrainingJob

BF16 = 2.0


@dataclass(frozen=True)
class Transfer:
    """One kind of message of a dimension: ``count`` messages of ``message_bytes`` per step,
    run by every group of the ranks differing in ``dims`` at once."""

    dimension: str
    collective: str      # all_gather, reduce_scatter, all_reduce, all_to_all or p2p
    message_bytes: float
    count: int
    dims: tuple[str, ...]
    group_size: int

    @property
    def bytes_per_gpu(self) -> float:
        """Bytes each GPU sends per step: ``(n-1)/n S`` per all-gather, reduce-scatter or
        all-to-all, ``2(n-1)/n S`` per all-reduce, ``S`` per send."""
        n = self.group_size
        factor = {"all_reduce": 2 * (n - 1) / n, "p2p": 1.0}.get(self.collective, (n - 1) / n)
        return self.count * factor * self.message_bytes


def _passes(job: TrainingJob) -> float:
    """Passes over a layer per micro-batch: forward and backward, and the forward again for
    the share of layers full recomputation covers."""
    if job.recompute != "full":
        return 2.0
    n = job.layers_per_stage
    return 2.0 + (1.0 if job.recompute_layers is None else min(job.recompute_layers, n) / n)


def _moe_layers_per_stage(job: TrainingJob) -> int:
    """Mixture-of-experts layers of the pipeline rank holding the most."""
    m, start, most = job.model, 0, 0
    for n in job.stage_layers:
        most = max(most, sum(1 for i in range(start, start + n) if i >= m.dense_layers))
        start += n
    return most if m.is_moe else 0


def _tensor(job: TrainingJob) -> list[Transfer]:
    if job.tp == 1:
        return []
    m = job.model
    size = job.micro_batch * job.seq_len / job.cp * m.hidden * BF16
    per_step = round(job.micro_batches * job.layers_per_stage * _passes(job) * 2)
    if job.sequence_parallel:
        return [Transfer("tp", c, size, per_step, ("tp",), job.tp)
                for c in ("all_gather", "reduce_scatter")]
    return [Transfer("tp", "all_reduce", size, per_step, ("tp",), job.tp)]


def _context(job: TrainingJob) -> list[Transfer]:
    if job.cp == 1:
        return []
    m = job.model
    per_token = m.kv_bytes_per_token(BF16) / m.layers
    if not m.kv_lora_rank:
        per_token /= min(job.tp, m.kv_heads)  # key-value heads split over tensor ranks
    size = job.micro_batch * job.seq_len * per_token
    layers = job.micro_batches * job.layers_per_stage
    return [Transfer("cp", "all_gather", size, round(layers * _passes(job)), ("cp",), job.cp),
            Transfer("cp", "reduce_scatter", size, layers, ("cp",), job.cp)]


def _expert(job: TrainingJob) -> list[Transfer]:
    if job.ep == 1:
        return []
    m = job.model
    size = m.top_k * job.micro_batch * job.seq_len * m.hidden * BF16 / (job.cp * job.tp)
    count = round(job.micro_batches * _moe_layers_per_stage(job) * _passes(job) * 2)
    return [Transfer("ep", "all_to_all", size, count, ("ep",), job.ep)]


def _pipeline(job: TrainingJob) -> list[Transfer]:
    if job.pp == 1:
        return []
    size = job.micro_batch * job.seq_len / job.cp * job.model.hidden * BF16 / job.tp
    return [Transfer("pp", "p2p", size, 2 * job.micro_batches * job.virtual_stages, ("pp",),
                     job.pp)]


def _data(job: TrainingJob) -> list[Transfer]:
    dense, expert = stage_params(job)
    out: list[Transfer] = []
    for name, params, dims in (("dp", dense, ("cp", "ep", "dp")),
                               ("dp", expert, ("cp", "dp"))):
        n = 1
        for d in dims:
            n *= getattr(job, d)
        if n == 1 or params == 0:
            continue
        weights = params * BF16
        grads = params * (4.0 if job.grad_precision == "fp32" else BF16)
        mb = job.micro_batches
        if job.zero == 0:
            out.append(Transfer(name, "all_reduce", grads, 1, dims, n))
        elif job.zero == 1:
            out += [Transfer(name, "reduce_scatter", grads, 1, dims, n),
                    Transfer(name, "all_gather", weights, 1, dims, n)]
        elif job.zero == 2:
            out += [Transfer(name, "reduce_scatter", grads, mb, dims, n),
                    Transfer(name, "all_gather", weights, 1, dims, n)]
        else:
            out += [Transfer(name, "all_gather", weights, 2 * mb, dims, n),
                    Transfer(name, "reduce_scatter", grads, mb, dims, n)]
    return out


def step_transfers(job: TrainingJob) -> list[Transfer]:
    """Every message of one step of ``job`` (``dp`` set), dimension by dimension.

    >>> from fabricopt.workload.plan import TrainingJob
    >>> job = TrainingJob("gpt3-175b", tp=8, pp=16, dp=8, global_batch=1536, seq_len=2048)
    >>> sorted({t.dimension for t in step_transfers(job)})
    ['dp', 'pp', 'tp']
    """
    return _tensor(job) + _context(job) + _expert(job) + _pipeline(job) + _data(job)


def bytes_per_gpu(job: TrainingJob) -> dict[str, float]:
    """Bytes each GPU sends per step, by dimension."""
    out: dict[str, float] = {}
    for t in step_transfers(job):
        out[t.dimension] = out.get(t.dimension, 0.0) + t.bytes_per_gpu
    return out


__all__ = ["Transfer", "bytes_per_gpu", "step_transfers"]
