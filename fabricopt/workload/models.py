r"""Transformer configurations and what they cost: parameters and FLOPs per token.

The catalogue holds published configurations, each from its paper or model card (cited by
title in :data:`MODELS`); a user's own model is a dict or a TOML table with the same keys.
Formulas (``docs/workload.md#models``):

* attention per layer: ``h (a d) + 2 h (k d) + (a d) h`` (query, key and value with ``k``
  key-value heads of ``d`` = ``head_dim``, output); multi-head latent attention (MLA,
  DeepSeek-V2/V3) ``h r_q + r_q a (d_n + d_r) + h (r_kv + d_r) + r_kv a (d_n + d_v) + a d_v h``;
* MLP per layer: ``3 h f`` gated (SwiGLU), ``2 h f`` plain (GPT-3); a mixture-of-experts
  layer holds ``E + E_s`` experts of ``3 h f_e`` and a router ``h E``; ``k + E_s`` of them run
  per token;
* embeddings ``V h``, twice when the output head is not tied;
* training FLOPs per token ``6 N_active + 12 L a d_qk s`` (PaLM's model FLOPs, Appendix B
  of "PaLM: Scaling Language Modeling with Pathways"), ``N_active`` counting every weight
  a token multiplies with (the output head included, the input embedding a lookup).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import check_bool, check_int, check_positive, did_you_mean
from .._toml import read_toml
from ..errors import InvalidParameterError


@dataclass(frozen=True)
class ModelConfig:
    """One transformer: its shape, and the counts derived from it.

    Parameters
    ----------
    name : str
    layers, hidden, ffn, heads, vocab : int
        ``L``, ``h``, the dense MLP width ``f``, attention heads ``a``, vocabulary ``V``.
    kv_heads : int, optional
        Key-value heads (grouped-query attention); 0 (the default) means ``heads``.
    head_dim : int, optional
        Width of an attention head; 0 (the default, as TOML has no None) means ``hidden /
        heads``, which ``heads`` must then divide (give ``head_dim`` for a model whose heads
        are not ``hidden / heads`` wide, as DeepSeek-V3's).
    gated_mlp : bool
        SwiGLU-style MLP with three matrices (Llama, Mixtral, DeepSeek) or two (GPT-3).
    tied_embeddings : bool
        The output head reuses the input embedding (GPT-3).
    experts, top_k, shared_experts, expert_ffn : int
        Mixture of experts: routed experts ``E`` per MoE layer, ``k`` of them per token,
        always-on shared experts ``E_s``, each of width ``f_e``. ``experts=0``: dense, and
        then the other three (and ``dense_layers``) must be 0: a dense model given
        ``top_k`` is refused rather than read as dense.
    dense_layers : int
        Leading layers with a dense MLP in an MoE model (3 in DeepSeek-V3).
    q_lora_rank, kv_lora_rank, rope_head_dim, v_head_dim : int
        Multi-head latent attention (``kv_lora_rank > 0``): ranks ``r_q``, ``r_kv``, the
        rotary part ``d_r`` of a query/key head (``head_dim`` is then its other part
        ``d_n``) and the value head ``d_v``. The other three need ``kv_lora_rank > 0``.
    dropout : bool
        Dropout after attention and the MLP (and on the attention scores): its masks are
        activations (GPT-3 as Megatron-LM trains it has it; Llama, Mixtral and DeepSeek not).
    source : str
        Where the numbers come from.

    Examples
    --------
    >>> from fabricopt.workload.models import model
    >>> m = model("llama3-405b")
    >>> round(m.params / 1e9, 1), round(m.active_params / 1e9, 1)
    (405.8, 405.8)
    """

    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    vocab: int
    kv_heads: int = 0
    head_dim: int = 0
    gated_mlp: bool = True
    tied_embeddings: bool = False
    experts: int = 0
    top_k: int = 0
    shared_experts: int = 0
    expert_ffn: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    dropout: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        func = "ModelConfig"
        if not isinstance(self.name, str) or not self.name:
            raise InvalidParameterError(f"{func}(): name must be a non-empty string, got "
                                        f"{self.name!r}")
        for key in ("layers", "hidden", "ffn", "heads", "vocab"):
            check_int(func, key, getattr(self, key), minimum=1)
        for key in ("kv_heads", "head_dim", "experts", "top_k", "shared_experts", "expert_ffn",
                    "dense_layers", "q_lora_rank", "kv_lora_rank", "rope_head_dim",
                    "v_head_dim"):
            check_int(func, key, getattr(self, key), minimum=0)
        for key in ("gated_mlp", "tied_embeddings", "dropout"):
            check_bool(func, key, getattr(self, key))
        if not isinstance(self.source, str):  # empty is allowed: a user's own model
            raise InvalidParameterError(f"{func}(): source must be a string (where the "
                                        f"figures come from), got {self.source!r}")
        if not self.kv_heads:
            object.__setattr__(self, "kv_heads", self.heads)
        if not self.head_dim:
            if self.hidden % self.heads:
                raise InvalidParameterError(
                    f"{func}(): head_dim must be given (> 0) when heads ({self.heads}) does "
                    f"not divide hidden ({self.hidden}): head_dim=0 means hidden / heads")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if self.heads % self.kv_heads:
            raise InvalidParameterError(f"{func}(): heads ({self.heads}) must be a multiple of "
                                        f"kv_heads ({self.kv_heads})")
        if not self.experts:
            moe = [k for k in ("top_k", "shared_experts", "expert_ffn", "dense_layers")
                   if getattr(self, k)]
            if moe:
                raise InvalidParameterError(
                    f"{func}(): {moe[0]}={getattr(self, moe[0])} is for a mixture of experts, "
                    f"but experts=0 makes {self.name!r} dense; give experts (the routed "
                    f"experts per layer) or leave {', '.join(moe)} out")
        if not self.kv_lora_rank:
            mla = [k for k in ("q_lora_rank", "rope_head_dim", "v_head_dim") if getattr(self, k)]
            if mla:
                raise InvalidParameterError(
                    f"{func}(): {mla[0]}={getattr(self, mla[0])} is for multi-head latent "
                    f"attention, which kv_lora_rank > 0 turns on; give kv_lora_rank or leave "
                    f"{', '.join(mla)} out")
        if self.experts:
            if not 1 <= self.top_k <= self.experts or not self.expert_ffn:
                raise InvalidParameterError(
                    f"{func}(): a mixture of experts needs 1 <= top_k <= experts and "
                    f"expert_ffn > 0, got experts={self.experts}, top_k={self.top_k}, "
                    f"expert_ffn={self.expert_ffn}")
            if self.dense_layers >= self.layers:
                raise InvalidParameterError(f"{func}(): dense_layers must be < layers "
                                            f"({self.layers}), got {self.dense_layers}")

    # -- per layer ---------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def attention_params(self) -> int:
        """Weights of one attention block."""
        h, a, d = self.hidden, self.heads, self.head_dim
        if self.kv_lora_rank:
            r_q, r_kv, d_r, d_v = (self.q_lora_rank, self.kv_lora_rank, self.rope_head_dim,
                                   self.v_head_dim or d)
            q = h * r_q + r_q * a * (d + d_r) if r_q else h * a * (d + d_r)
            return q + h * (r_kv + d_r) + r_kv * a * (d + d_v) + a * d_v * h
        return 2 * h * a * d + 2 * h * self.kv_heads * d

    @property
    def _mlp_matrices(self) -> int:
        return 3 if self.gated_mlp else 2

    @property
    def dense_mlp_params(self) -> int:
        return self._mlp_matrices * self.hidden * self.ffn

    @property
    def expert_params_each(self) -> int:
        return self._mlp_matrices * self.hidden * self.expert_ffn

    # -- totals ------------------------------------------------------------------------------
    @property
    def embedding_params(self) -> int:
        """Input embedding and, unless tied, the output head."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def expert_params(self) -> int:
        """Routed-expert weights: the part expert parallelism shards."""
        return self.moe_layers * self.experts * self.expert_params_each

    @property
    def params(self) -> int:
        """Every weight (norms left out: under 0.01%)."""
        dense_mlp = (self.layers - self.moe_layers) * self.dense_mlp_params
        moe_rest = self.moe_layers * (self.shared_experts * self.expert_params_each
                                      + self.hidden * self.experts)
        return (self.layers * self.attention_params + dense_mlp + moe_rest
                + self.expert_params + self.embedding_params)

    @property
    def dense_params(self) -> int:
        """Weights every rank of an expert-parallel group holds: all but the routed experts."""
        return self.params - self.expert_params

    @property
    def active_params(self) -> int:
        """Weights one token multiplies with: the routed experts it is sent to, not all."""
        routed_active = self.moe_layers * self.top_k * self.expert_params_each
        return self.dense_params + routed_active

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward and backward, no recomputation): ``6 N + 12 L a
        d_qk s``, ``N`` the active weights less the input embedding (a lookup).

        >>> round(model("gpt3-175b").flops_per_token(2048) / 1e12, 3)
        1.073
        """
        seq_len = check_int("ModelConfig.flops_per_token", "seq_len", seq_len, minimum=1)
        n = self.active_params - self.vocab * self.hidden
        d_qk = self.head_dim + self.rope_head_dim
        return 6.0 * n + 12.0 * self.layers * self.heads * d_qk * seq_len

    def kv_bytes_per_token(self, bytes_per_value: float = 2.0) -> float:
        """KV-cache bytes one token keeps over all layers: ``2 L k d`` values, or with MLA
        the latent ``L (r_kv + d_r)``."""
        bytes_per_value = check_positive("ModelConfig.kv_bytes_per_token", "bytes_per_value",
                                         bytes_per_value)
        if self.kv_lora_rank:
            per_layer = self.kv_lora_rank + self.rope_head_dim
        else:
            per_layer = 2 * self.kv_heads * self.head_dim
        return self.layers * per_layer * bytes_per_value


#: The catalogue: name -> configuration, each from its paper or model card.
MODELS: dict[str, ModelConfig] = {m.name: m for m in (
    ModelConfig("gpt3-175b", layers=96, hidden=12288, ffn=49152, heads=96, vocab=50257,
                gated_mlp=False, tied_embeddings=True, dropout=True,
                source="Language Models are Few-Shot Learners (Brown et al., 2020), Table 2.1"),
    ModelConfig("llama3-8b", layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                vocab=128256,
                source="The Llama 3 Herd of Models (Llama Team, 2024), Table 3"),
    ModelConfig("llama3-70b", layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8,
                vocab=128256,
                source="The Llama 3 Herd of Models (Llama Team, 2024), Table 3"),
    ModelConfig("llama3-405b", layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8,
                vocab=128256,
                source="The Llama 3 Herd of Models (Llama Team, 2024), Table 3"),
    ModelConfig("nemotron4-340b", layers=96, hidden=18432, ffn=73728, heads=96, kv_heads=8,
                vocab=256000, gated_mlp=False,
                source="Nemotron-4 340B Technical Report (NVIDIA, 2024), section 2 (squared-ReLU "
                       "MLP, grouped-query attention, untied embeddings)"),
    ModelConfig("megatron-145b", layers=80, hidden=12288, ffn=49152, heads=96, vocab=51200,
                gated_mlp=False, tied_embeddings=True, dropout=True,
                source="Efficient Large-Scale Language Model Training on GPU Clusters Using "
                       "Megatron-LM (Narayanan et al., 2021), Table 1"),
    ModelConfig("megatron-310b", layers=96, hidden=16384, ffn=65536, heads=128, vocab=51200,
                gated_mlp=False, tied_embeddings=True, dropout=True,
                source="Efficient Large-Scale Language Model Training on GPU Clusters Using "
                       "Megatron-LM (Narayanan et al., 2021), Table 1"),
    ModelConfig("megatron-530b", layers=105, hidden=20480, ffn=81920, heads=128, vocab=51200,
                gated_mlp=False, tied_embeddings=True, dropout=True,
                source="Efficient Large-Scale Language Model Training on GPU Clusters Using "
                       "Megatron-LM (Narayanan et al., 2021), Table 1; the shape of MT-NLG 530B "
                       "(Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B)"),
    ModelConfig("megatron-1t", layers=128, hidden=25600, ffn=102400, heads=160, vocab=51200,
                gated_mlp=False, tied_embeddings=True, dropout=True,
                source="Efficient Large-Scale Language Model Training on GPU Clusters Using "
                       "Megatron-LM (Narayanan et al., 2021), Table 1"),
    ModelConfig("bloom-176b", layers=70, hidden=14336, ffn=57344, heads=112, vocab=250880,
                gated_mlp=False, tied_embeddings=True,
                source="BLOOM: A 176B-Parameter Open-Access Multilingual Language Model "
                       "(BigScience, 2022), Table 3"),
    ModelConfig("mixtral-8x7b", layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                vocab=32000, experts=8, top_k=2, expert_ffn=14336,
                source="Mixtral of Experts (Jiang et al., 2024), Table 1"),
    ModelConfig("deepseek-v3", layers=61, hidden=7168, ffn=18432, heads=128, vocab=129280,
                head_dim=128, experts=256, top_k=8, shared_experts=1, expert_ffn=2048,
                dense_layers=3, q_lora_rank=1536, kv_lora_rank=512, rope_head_dim=64,
                v_head_dim=128,
                source="DeepSeek-V3 Technical Report (DeepSeek-AI, 2024), section 4.2; the "
                       "multi-token prediction module is left out"),
)}

#: Every name of the catalogue.
models: tuple[str, ...] = tuple(MODELS)


def model(name: str | Mapping[str, Any] | ModelConfig | os.PathLike[str]) -> ModelConfig:
    """A catalogue entry by name, or a user's model from a dict, a TOML file or a config.

    A TOML file holds the keys of :class:`ModelConfig` at its top level or in a ``[model]``
    table.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fo.model("mixtral-8x7b").experts
    8
    >>> fo.model({"name": "tiny", "layers": 2, "hidden": 64, "ffn": 256, "heads": 4,
    ...           "vocab": 1000}).params
    259072
    >>> fo.model("llama3-450b")
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: model(): name must be one of the catalogue ...
    """
    if isinstance(name, ModelConfig):
        return name
    if isinstance(name, Mapping):
        return _from_mapping(dict(name), "model()")
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name.endswith(".toml")):
        data = read_toml(name, InvalidParameterError, "model file")
        table = data.get("model", data)
        return _from_mapping(dict(table), f"model({os.fspath(name)!r})")
    if isinstance(name, str) and name.lower() in MODELS:
        return MODELS[name.lower()]
    hint = did_you_mean(str(name), MODELS) if isinstance(name, str) else ""
    raise InvalidParameterError(
        f"model(): name must be one of the catalogue ({', '.join(MODELS)}), a dict, a TOML "
        f"file or a ModelConfig, got {name!r}{hint}")


def _from_mapping(data: dict[str, Any], where: str) -> ModelConfig:
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise InvalidParameterError(
            f"{where}: unknown model key {unknown[0]!r}{did_you_mean(unknown[0], fields)}; "
            f"keys are {', '.join(sorted(fields))}")
    missing = [k for k in ("name", "layers", "hidden", "ffn", "heads", "vocab") if k not in data]
    if missing:
        raise InvalidParameterError(f"{where}: a model needs {', '.join(missing)}")
    try:
        return ModelConfig(**data)
    except InvalidParameterError as exc:  # named by the function called, not the class
        raise InvalidParameterError(f"{where}: {exc}".replace(": ModelConfig(): ", ": ", 1)
                                    ) from None


__all__ = ["MODELS", "ModelConfig", "model", "models"]
