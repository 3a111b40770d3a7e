r"""Activation memory of one transformer layer, from the tensors its backward pass keeps.

Counted the way "Reducing Activation Recomputation in Large Transformer Models" (Korthikanti
et al.) derives its ``34 s b h + 5 a s^2 b`` for GPT: every tensor a layer's backward pass
needs, in bytes per token held on one GPU (2 per BF16 value, 1 per dropout-mask element),
but for each architecture's own tensors (``docs/workload.md#memory``):

* each norm keeps its input (``2 h``);
* attention keeps the projections' input (``2 h``), the queries (``2 a d``), keys and values
  (``2 x 2 k d``, ``k`` key-value heads: grouped-query attention keeps fewer), and the
  attention output that feeds the output projection (``2 a d``). FlashAttention keeps only
  a row statistic per head (4 bytes) besides; without it the score matrix stays: softmax
  output ``2 a s`` per token, with dropout also its mask ``a s`` and output ``2 a s``;
  multi-head latent attention keeps its latents (and their norms' inputs) and the up-projected
  queries, keys and values;
* a plain MLP of width ``f`` keeps its input (``2 h``), the activation's input and output
  (``2 f`` each); a gated one (SwiGLU) the gate and up projections (``4 f``) and their
  product (``2 f``);
* a mixture-of-experts layer: the router's logits and probabilities (FP32, ``8 E``), each
  token's ``k`` routed copies with their expert MLPs of width ``f_e``, the combine buffer,
  and the shared experts;
* dropout keeps a mask of ``h`` bytes after attention and after the MLP, where the model has
  dropout.

Check (GPT-3 shape, ``f = 4h``, dropout, no FlashAttention): ``4 h + (11 h + 5 a s) + 19 h =
34 h + 5 a s`` bytes per token, Korthikanti et al.'s equation 1.

With tensor parallelism the sharded tensors divide by ``t``; with sequence parallelism the
norms' inputs and dropout masks do too (without it they are whole on every tensor rank).
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import ModelConfig

BF16 = 2.0
FP32 = 4.0
MASK = 1.0


@dataclass(frozen=True)
class LayerActivations:
    """Bytes one layer keeps for one micro-batch on one GPU, by block."""

    norms: float
    attention: float
    mlp: float

    @property
    def total(self) -> float:
        return self.norms + self.attention + self.mlp


def _attention_per_token(m: ModelConfig, t: int, seq: int, flash: str,
                         ) -> tuple[float, float]:
    """(bytes split over tensor ranks, bytes only sequence parallelism splits) per token;
    ``flash``: ``"kernel"`` (FlashAttention), ``"recomputed"`` (the scores rebuilt in the
    backward pass) or ``"eager"`` (the score matrix kept)."""
    a, d = m.heads, m.head_dim
    heads = a / t
    sharded = 0.0
    if m.kv_lora_rank:
        d_r, d_v = m.rope_head_dim, m.v_head_dim or d
        # Latents and their norms' inputs: q (r_q) and kv (r_kv) twice each, the shared
        # rotary key once; replicated over tensor ranks like the layer input.
        replicated = BF16 * (2 * m.q_lora_rank + 2 * m.kv_lora_rank + m.rope_head_dim)
        sharded += BF16 * heads * (2 * (d + d_r) + d_v + d_v)   # q, k, v, output
        sp_only = BF16 * m.hidden + replicated
    else:
        kv_heads = max(m.kv_heads / t, 1.0)  # each tensor rank keeps at least one KV head
        sharded += BF16 * (heads * d + 2 * kv_heads * d + heads * d)  # q, k, v, output
        sp_only = BF16 * m.hidden                                     # projections' input
    if flash == "kernel":
        sharded += FP32 * heads                                       # softmax statistics
    elif flash != "recomputed":
        scores = heads * seq  # each query token's row of the score matrix
        # softmax output; with dropout also its mask and the dropped-out product
        sharded += scores * (BF16 + (MASK + BF16 if m.dropout else 0.0))
    if m.dropout:
        sp_only += MASK * m.hidden
    return sharded, sp_only


def _mlp_per_token(width: int, gated: bool, recompute: frozenset[str]) -> float:
    """Bytes one token keeps in an MLP of ``width`` (its input not counted): the activation
    function's input (the gate and up projections when gated) and output; only the input
    when the activation is recomputed, nothing when the whole MLP is."""
    if "mlp" in recompute:
        return 0.0
    kept = 2 if gated else 1
    if "activation" not in recompute:
        kept += 1
    return BF16 * width * kept


def layer_activations(m: ModelConfig, *, tp: int, seq_len: int, cp: int, micro_batch: int,
                      sequence_parallel: bool, flash_attention: bool, moe: bool,
                      recompute: frozenset[str] = frozenset()) -> LayerActivations:
    """Bytes one layer of ``m`` keeps for one micro-batch on one GPU.

    ``moe`` says whether the layer is a mixture-of-experts one; ``recompute`` names what
    selective recomputation rebuilds in the backward pass instead of keeping
    (``"core_attn"``: the score matrix; ``"layernorm"``: the norms' outputs, which are the
    projections' inputs; ``"activation"``: the MLP activation's output; ``"mlp"``: all of the
    MLP but its input).

    >>> from fabricopt.workload.models import model
    >>> gpt = model("gpt3-175b")
    >>> acts = layer_activations(gpt, tp=1, seq_len=2048, cp=1, micro_batch=1,
    ...                          sequence_parallel=True, flash_attention=False, moe=False)
    >>> s, h, a = 2048, 12288, 96     # Korthikanti et al.'s s b h (34 + 5 a s / h)
    >>> acts.total == s * h * (34 + 5 * a * s / h)
    True
    """
    t = tp
    seq_local = seq_len / cp
    tokens = micro_batch * seq_local
    sp = t if sequence_parallel else 1
    flash = ("kernel" if flash_attention else "recomputed" if "core_attn" in recompute
             else "eager")
    attn_sharded, attn_sp = _attention_per_token(m, t, seq_len, flash)
    norm_out = 0.0 if "layernorm" in recompute else BF16 * m.hidden  # a projection's input
    norms = 2 * BF16 * m.hidden / sp
    attention = attn_sharded + (attn_sp - BF16 * m.hidden + norm_out) / sp
    mlp_in = norm_out / sp
    drop = MASK * m.hidden / sp if m.dropout else 0.0
    if moe:
        expert = _mlp_per_token(m.expert_ffn, m.gated_mlp, recompute)
        routed = m.top_k * (BF16 * m.hidden + expert) / t
        shared = m.shared_experts * expert / t
        router = 2 * FP32 * m.experts / sp                 # logits and probabilities
        combine = m.top_k * BF16 * m.hidden / t             # routed outputs to be summed
        mlp = mlp_in + routed + shared + router + combine + drop
    else:
        mlp = mlp_in + _mlp_per_token(m.ffn, m.gated_mlp, recompute) / t + drop
    return LayerActivations(norms * tokens, attention * tokens, mlp * tokens)


def layer_input_bytes(m: ModelConfig, *, tp: int, seq_len: int, cp: int, micro_batch: int,
                      sequence_parallel: bool) -> float:
    """Bytes of one layer's input for one micro-batch on one GPU: what full recomputation
    keeps of a layer (``2 s b h``, over ``t`` with sequence parallelism)."""
    sp = tp if sequence_parallel else 1
    return BF16 * m.hidden * micro_batch * seq_len / cp / sp


__all__ = ["LayerActivations", "layer_activations", "layer_input_bytes"]
