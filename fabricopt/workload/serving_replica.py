r"""A serving replica as deployed: its plan, what it holds in HBM, and the time of one step
(``docs/serving.md``).

A replica is ``tp x ep x pp`` GPUs: ``pp`` pipeline stages, each ``tp x ep`` wide. Attention
and the dense layers are split over ``tp`` and copied over the ``ep`` attention groups (each
serves ``1/ep`` of the requests, data parallel); routed experts are spread over all
``tp x ep`` GPUs of a stage (wide expert parallelism when ``ep`` spans servers). Weights,
activations and the KV cache are held in the plan's precision (``kv_precision`` for the cache).

One engine step (continuous batching with chunked prefill: ``d`` requests each decode one
token while ``c`` prompt tokens are prefilled, ``c + d`` within the token budget) takes, per
stage,

* compute: ``2 N_active (d + c) / (tp ep)`` FLOPs at the dense peak of the precision times
  the GPU's calibrated efficiency in that precision (``fp8_efficiency``, ...), plus
  attention's ``4 L a d_h`` FLOPs per (query, key) pair at the BF16 peak times
  ``attention_efficiency``;
* memory: the GPU's weights (dense, and the routed experts the step's tokens touch) and the
  KV cache its decoding requests read, at the HBM bandwidth times the catalog's
  ``hbm_efficiency``;
* ``max(compute, memory)``, plus a fixed cost per layer (kernel launches and
  synchronisation: :data:`LAYER_OVERHEAD_US`);
* communication: two all-reduces per layer over ``tp``, a dispatch and a combine all-to-all
  per MoE layer over ``tp x ep``, a send between stages; each a phase of every replica of
  the fabric at once, priced by :func:`~fabricopt.workload.phase_bounds.phase_bound`
  (certified seconds per byte) and an expected time (a small-message latency plus the bytes
  at the calibrated efficiency of the side that binds).

With ``pp`` stages the step carries ``pp`` micro-batches, so a step of ``d`` requests takes
``pp`` stage times of ``d / pp`` plus the sends between stages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .._checks import check_bool, check_choice, check_int, fail, short_name
from ..catalog import Catalog
from ..collectives.efficiency import EFFICIENCY_PROFILES
from ..collectives.nccl import RING_BASE_US, RING_NET_US, RING_NVLINK_US
from ..errors import InvalidParameterError
from ..fabric import Fabric
from .hardware import PRECISIONS, GpuFigures, gpu_figures
from .memory import RUNTIME_GB
from .models import ModelConfig, model
from .phase_bounds import FabricLevels, phase_bound
from .step import _levels

#: Bytes of one value of each precision (FP4 values pack two to a byte; their block scales,
#: one byte per 16 values, are left out).
BYTES_PER_VALUE = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
#: Fixed cost of one layer of a step, microseconds: the launches and synchronisation of its
#: dozen kernels, which a decode step at batch 1 cannot hide (an estimate: with the
#: all-reduce latency below it puts a Llama 3.1 70B FP8 token on eight H200 at the
#: published low-concurrency speed, ``docs/validation.md``).
LAYER_OVERHEAD_US = 20.0
#: What a GPU entry lacking ``hbm_efficiency`` gets (the H100 entry's figure).
DEFAULT_HBM_EFFICIENCY = 0.8
#: Bytes of activations per token and per unit of hidden size one layer keeps in flight
#: (its input, the attention output and the MLP's intermediate, 2-byte values).
ACTIVATION_VALUES_PER_HIDDEN = 8


@dataclass(frozen=True)
class ServingPlan:
    """How a model is served: parallelism, batch, chunked prefill and precision.

    ``batch`` is the most requests a decode replica holds at once (its continuous batch),
    ``chunk`` the token budget of one step (decode tokens and prefill chunks together).
    With ``disaggregated``, prefill and decode run on separate replicas of the same shape,
    ``prefill_share`` of the fabric's replicas prefilling (None: the share that balances
    them, see :func:`~fabricopt.workload.serving_capacity.balance`).

    >>> ServingPlan(tp=8, batch=64, precision="fp8").describe()
    'tp=8, batch=64, chunk=2048, fp8, colocated'
    """

    tp: int = 8
    pp: int = 1
    ep: int = 1
    batch: int = 32
    chunk: int = 2048
    disaggregated: bool = False
    precision: str = "bf16"
    kv_precision: str | None = None
    prefill_share: float | None = None

    def __post_init__(self) -> None:
        func = "ServingPlan"
        for key in ("tp", "pp", "ep", "batch", "chunk"):
            check_int(func, key, getattr(self, key), minimum=1)
        check_bool(func, "disaggregated", self.disaggregated)
        for key in ("precision", "kv_precision"):  # FP8 is fp8
            object.__setattr__(self, key, short_name(getattr(self, key), PRECISIONS))
        check_choice(func, "precision", self.precision, PRECISIONS)
        if self.kv_precision is not None:
            check_choice(func, "kv_precision", self.kv_precision, PRECISIONS)
        if self.prefill_share is not None and not (
                isinstance(self.prefill_share, (int, float))
                and 0 < float(self.prefill_share) < 1):
            raise InvalidParameterError(f"{func}(): prefill_share must be None or a fraction "
                                        f"in (0, 1), got {self.prefill_share!r}")

    @property
    def width(self) -> int:
        """GPUs of one pipeline stage."""
        return self.tp * self.ep

    @property
    def gpus(self) -> int:
        """GPUs of one replica."""
        return self.tp * self.ep * self.pp

    @property
    def kv(self) -> str:
        return self.kv_precision or self.precision

    def describe(self) -> str:
        dims = [f"tp={self.tp}"] + [f"{k}={v}" for k, v in (("pp", self.pp), ("ep", self.ep))
                                    if v > 1]
        kv = f" (KV {self.kv_precision})" if self.kv_precision else ""
        mode = "disaggregated" if self.disaggregated else "colocated"
        if self.disaggregated and self.prefill_share is not None:
            mode += f" ({self.prefill_share:.0%} prefill)"
        return (f"{', '.join(dims)}, batch={self.batch}, chunk={self.chunk}, "
                f"{self.precision}{kv}, {mode}")

    def with_(self, **kw: object) -> ServingPlan:
        return replace(self, **kw)  # type: ignore[arg-type]


@dataclass
class CommPhase:
    """One kind of message of a step, on the fabric with every replica at once: its
    certified seconds per byte, the latency an expected message adds, how many per step,
    and what binds."""

    name: str
    collective: str
    count: int
    seconds_per_byte: float
    expected_seconds_per_byte: float
    latency_s: float
    binding_tier: str
    method: str
    notes: list[str] = field(default_factory=list)


@dataclass
class Replica:
    """A model on one plan, on a fabric: memory per GPU and step time (see module docstring).

    Built by :func:`replica`; times in seconds, memory in bytes per GPU.
    """

    model: ModelConfig
    plan: ServingPlan
    gpu: GpuFigures
    hbm_efficiency: float
    compute_efficiency: float
    replicas: int
    weight_bytes: float          # per GPU
    kv_bytes_per_token: float    # per GPU, per token one of its requests keeps
    phases: dict[str, CommPhase]
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def activation_bytes(self) -> float:
        """Bytes of activations per GPU at a full step of the plan's batch."""
        return self._activations(self.plan.batch)

    def _activations(self, batch: float) -> float:
        """The step's working set and the FP32 logits of ``batch`` requests."""
        m, p = self.model, self.plan
        return (p.chunk * m.hidden * ACTIVATION_VALUES_PER_HIDDEN * 2.0 / p.tp
                + batch * m.vocab * 4.0 / p.tp)

    # -- memory --------------------------------------------------------------------------
    def memory_bytes(self, batch: int, context: int) -> float:
        """Bytes a GPU holds with ``batch`` requests of ``context`` tokens each."""
        per_group = batch / self.plan.ep  # requests are spread over the attention groups
        return (self.weight_bytes + per_group * context * self.kv_bytes_per_token
                + self._activations(batch) + RUNTIME_GB * 1e9)

    def max_batch(self, context: int) -> int:
        """The most requests of ``context`` tokens whose KV cache (and logits) fit beside
        the weights (0 when the weights alone do not)."""
        free = self.gpu.hbm_gb * 1e9 - self.memory_bytes(0, context)
        if free <= 0:
            return 0
        per_request = (context * self.kv_bytes_per_token / self.plan.ep
                       + self.model.vocab * 4.0 / self.plan.tp)
        return int(free // per_request)

    # -- time ----------------------------------------------------------------------------
    def _coefficients(self, lower: bool) -> tuple[float, ...]:
        """The step-time formula's constants (see the module docstring), once per replica:
        per token of matmul, per (query, key) pair of attention, dense and expert weights'
        read time, per cached token read, fixed time, and the communication's fixed and per
        token time (an expected message is its latency plus its bytes at the expected rate,
        never below the bound: linear in the tokens)."""
        if lower in self._cache:
            return self._cache[lower]
        m, p, g = self.model, self.plan, self.gpu
        layers = m.layers / p.pp
        peak = g.peak_tflops * 1e12 * (1.0 if lower else self.compute_efficiency)
        attn_peak = g.bf16_tflops * 1e12 * (1.0 if lower else g.attention_efficiency)
        hbm = g.hbm_tbps * 1e12 * (1.0 if lower else self.hbm_efficiency)
        matmul = 2.0 * (m.active_params - m.vocab * m.hidden) / p.pp / p.width / peak
        d_qk = m.head_dim + m.rope_head_dim
        attention = 4.0 * layers * m.heads * d_qk / p.width / attn_peak
        experts = self._expert_bytes / hbm
        dense = self.weight_bytes / hbm - experts
        kv = self.kv_bytes_per_token / p.ep / hbm
        fixed = 0.0 if lower else layers * LAYER_OVERHEAD_US * 1e-6
        value = BYTES_PER_VALUE[p.precision] if p.precision != "fp4" else 1.0
        per_token = {"tp": m.hidden * 2.0 / p.ep, "pp": m.hidden * 2.0 / p.ep,
                     "ep": m.top_k * m.hidden * value / p.width}  # message bytes per token
        comm_fixed = comm_token = 0.0
        for ph in self.phases.values():
            if ph.name in per_token:  # counts are per replica; a stage does its share
                comm_token += ph.count / p.pp * per_token[ph.name] * (
                    ph.seconds_per_byte if lower else ph.expected_seconds_per_byte)
                comm_fixed += 0.0 if lower else ph.count / p.pp * ph.latency_s
        self._cache[lower] = (matmul, attention, dense, experts, kv, fixed + comm_fixed,
                              comm_token)
        return self._cache[lower]

    def stage_parts(self, decode: np.ndarray, prefill: np.ndarray, kv_tokens: np.ndarray,
                    prefill_pairs: np.ndarray, *, lower: bool = False,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(compute, memory, communication) seconds of one pipeline stage's step, the parts
        :meth:`stage_seconds` adds up (communication with the fixed cost per layer left out)."""
        matmul, attention, dense, experts, kv, fixed, comm = self._coefficients(lower)
        m = self.model
        tokens = decode + prefill
        compute = matmul * tokens + attention * (kv_tokens + prefill_pairs)
        # Weights read once per step: the dense part and, of the routed experts on this GPU,
        # those some token of the step picks (each token picks top_k of E at random).
        read = dense + kv * kv_tokens
        if m.is_moe:
            read = read + experts * (1.0 - np.power(1.0 - m.top_k / m.experts, tokens))
        else:
            read = read + experts
        per_layer = 0.0 if lower else m.layers / self.plan.pp * LAYER_OVERHEAD_US * 1e-6
        return compute, read, fixed - per_layer + comm * tokens

    def stage_seconds(self, decode: np.ndarray, prefill: np.ndarray, kv_tokens: np.ndarray,
                      prefill_pairs: np.ndarray, *, lower: bool = False) -> np.ndarray:
        """Seconds of one pipeline stage for a step of ``decode`` requests reading
        ``kv_tokens`` cached tokens in all and ``prefill`` prompt tokens whose attention
        spans ``prefill_pairs`` (query, key) pairs; arrays, one entry per step.

        ``lower``: peak compute and HBM, no per-layer cost, the certified communication
        bounds (no schedule of this shape is faster).
        """
        compute, read, comm = self.stage_parts(decode, prefill, kv_tokens, prefill_pairs,
                                               lower=lower)
        per_layer = 0.0 if lower else self.model.layers / self.plan.pp * LAYER_OVERHEAD_US * 1e-6
        busy = np.maximum(compute, read) + per_layer + comm
        return np.where(decode + prefill > 0, busy, 0.0)

    def step_seconds(self, decode: np.ndarray, prefill: np.ndarray, kv_tokens: np.ndarray,
                     prefill_pairs: np.ndarray, *, lower: bool = False) -> np.ndarray:
        """Seconds of one engine step (every stage, ``pp`` micro-batches)."""
        pp = self.plan.pp
        decode, prefill = np.asarray(decode, float), np.asarray(prefill, float)
        kv_tokens, prefill_pairs = np.asarray(kv_tokens, float), np.asarray(prefill_pairs, float)
        return pp * self.stage_seconds(decode / pp, prefill / pp, kv_tokens / pp,
                                       prefill_pairs / pp, lower=lower)

    @property
    def _expert_bytes(self) -> float:
        m, p = self.model, self.plan
        return m.expert_params / (p.width * p.pp) * BYTES_PER_VALUE[p.precision]

    def kv_transfer_seconds(self, prompt_tokens: float, *, lower: bool = False) -> float:
        """Seconds to move one request's KV cache from its prefill to its decode replica
        (disaggregated serving), each GPU sending its share, every pair at once."""
        ph = self.phases.get("kv")
        if ph is None:
            return 0.0
        size = prompt_tokens * self.kv_bytes_per_token
        if lower:
            return size * ph.seconds_per_byte
        return max(size * ph.seconds_per_byte, ph.latency_s + size * ph.expected_seconds_per_byte)


def _kv_split(m: ModelConfig, tp: int) -> int:
    """Over how many of a tensor-parallel group's GPUs one token's KV cache is split: the
    KV heads (each GPU keeps the heads of its queries: copies when tp exceeds them), none
    for a latent (MLA) cache, which every GPU keeps whole."""
    if m.kv_lora_rank:
        return 1
    return math.gcd(tp, m.kv_heads) if tp > m.kv_heads else tp


def _hbm_efficiency(g: GpuFigures, catalog: Catalog) -> float:
    """The share of its HBM bandwidth a GPU's decode kernels reach (catalog
    ``hbm_efficiency``, else :data:`DEFAULT_HBM_EFFICIENCY`)."""
    return float(catalog.gpus[g.key].values.get("hbm_efficiency", DEFAULT_HBM_EFFICIENCY))


def _groups(plan: ServingPlan, replicas: int, width2: int) -> dict[str, np.ndarray]:
    """Rank groups of every replica at once, ranks numbered along the fabric's endpoints:
    a replica is ``pp`` stages of ``ep`` attention groups of ``tp`` consecutive GPUs."""
    tp, ep, pp = plan.tp, plan.ep, plan.pp
    ranks = np.arange(replicas * width2).reshape(replicas, -1)[:, : plan.gpus]
    grid = ranks.reshape(replicas, pp, ep, tp)
    out = {"tp": grid.reshape(-1, tp)}
    if ep > 1:
        out["ep"] = grid.reshape(replicas * pp, ep * tp)
    if pp > 1:
        out["pp"] = np.concatenate([np.stack([grid[:, s].ravel(), grid[:, s + 1].ravel()], 1)
                                    for s in range(pp - 1)])
    return out


def _phase(levels: FabricLevels, gpus: tuple, rank_nodes: np.ndarray, name: str,
           collective: str, groups: np.ndarray, count: int) -> CommPhase:
    b = phase_bound(levels, gpus, rank_nodes, groups, collective)
    domain = levels.levels[1].label[rank_nodes]
    inside = bool(np.all(domain[groups] == domain[groups[:, :1]]))
    side = "scale_up" if b.binding_tier in levels.scale_up_tiers else "network"
    eff = EFFICIENCY_PROFILES[levels.profile][side]
    hop = RING_NVLINK_US if inside else RING_NET_US
    return CommPhase(name, collective, count, b.seconds_per_byte, b.seconds_per_byte / eff,
                     (RING_BASE_US + hop) * 1e-6, b.binding_tier, b.method, list(b.notes))


def replica(fab: Fabric, m: ModelConfig, plan: ServingPlan, *, gpu: str | None = None,
            catalog: Catalog | None = None, func: str = "serving_estimate") -> Replica:
    """The :class:`Replica` of ``m`` on ``plan``, every replica the fabric holds placed along
    its endpoints (a disaggregated plan pairs each prefill replica with a decode replica).

    Refuses a plan the model or fabric cannot take (``ep`` that does not divide the experts,
    a replica larger than the fabric, a precision the GPU lacks: FP4 only on Blackwell).

    >>> import fabricopt as fo
    >>> r = replica(fo.dgx_h100(), fo.model("llama3-70b"), ServingPlan(tp=8, precision="fp8"))
    >>> round(r.weight_bytes / 1e9, 2)   # 70.6e9 weights, one byte each, over 8 GPUs
    8.82
    """
    catalog = catalog or Catalog.default()
    g = gpu_figures(fab, gpu, plan.precision, catalog, func=func)
    if plan.kv_precision is not None:
        gpu_figures(fab, g.key, plan.kv_precision, catalog, func=func)
    if plan.ep > 1 and (not m.is_moe or m.experts % plan.ep):
        raise InvalidParameterError(f"{func}(): ep={plan.ep} needs a mixture of experts whose "
                                    f"expert count it divides; {m.name} has {m.experts}")
    if m.heads % plan.tp:
        raise InvalidParameterError(f"{func}(): tp={plan.tp} must divide {m.name}'s "
                                    f"{m.heads} attention heads (each GPU computes whole "
                                    "heads)")
    if m.layers < plan.pp:
        raise InvalidParameterError(f"{func}(): pp={plan.pp} is more stages than {m.name}'s "
                                    f"{m.layers} layers")
    per = plan.gpus * (2 if plan.disaggregated else 1)
    n = len(fab.endpoints)
    if per > n:
        twice = " x 2 (disaggregated)" if plan.disaggregated else ""
        raise InvalidParameterError(f"{func}(): a replica takes tp x ep x pp{twice} = {per} "
                                    f"GPUs, fab ({fab.name}) has {n}")
    value = BYTES_PER_VALUE[plan.precision]
    weights = (m.dense_params / plan.tp + m.expert_params / plan.width) / plan.pp * value
    kv = m.kv_bytes_per_token(BYTES_PER_VALUE[plan.kv]) / _kv_split(m, plan.tp) / plan.pp
    hbm = _hbm_efficiency(g, catalog)
    levels = _levels(fab)
    gpus = tuple(fab.endpoints)
    rank_nodes = np.array([levels.ga.index[e] for e in gpus])
    replicas = n // plan.gpus
    phases: dict[str, CommPhase] = {}
    groups = _groups(plan, replicas, plan.gpus)
    if plan.tp > 1:
        phases["tp"] = _phase(levels, gpus, rank_nodes, "tp", "all_reduce", groups["tp"],
                              2 * m.layers)
    if plan.ep > 1:
        phases["ep"] = _phase(levels, gpus, rank_nodes, "ep", "all_to_all", groups["ep"],
                              2 * m.moe_layers)
    if plan.pp > 1:
        phases["pp"] = _phase(levels, gpus, rank_nodes, "pp", "p2p", groups["pp"],
                              plan.pp - 1)
    if plan.disaggregated:
        pairs = replicas // 2
        ranks = np.arange(pairs * 2 * plan.gpus).reshape(pairs, 2, plan.gpus)
        sends = np.stack([ranks[:, 0].ravel(), ranks[:, 1].ravel()], 1)
        phases["kv"] = _phase(levels, gpus, rank_nodes, "kv", "p2p", sends, 1)
    return Replica(m, plan, g, hbm, g.compute_efficiency, replicas, weights, kv, phases)


@dataclass(frozen=True)
class ServingJob:
    """A serving deployment, for the failure analyses (``single_failures(..., job=)``):
    ``model`` served on ``plan`` over the whole fabric, requests of ``prompt_len`` prompt and
    ``output_len`` output tokens, on the fabric's GPU or ``gpu``.

    >>> ServingJob("llama3-70b", ServingPlan(tp=8, precision="fp8")).describe()
    'llama3-70b, tp=8, batch=32, chunk=2048, fp8, colocated, 2048 + 256 tokens'
    """

    model: str | ModelConfig
    plan: ServingPlan = field(default_factory=ServingPlan)
    prompt_len: int = 2048
    output_len: int = 256
    gpu: str | None = None

    def __post_init__(self) -> None:
        func = "ServingJob"
        try:
            model(self.model)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{func}(): model: {exc}") from None
        if not isinstance(self.plan, ServingPlan):
            raise fail(func, "plan", "a ServingPlan", type(self.plan).__name__)
        check_int(func, "prompt_len", self.prompt_len, minimum=1)
        check_int(func, "output_len", self.output_len, minimum=1)
        if self.gpu is not None and not isinstance(self.gpu, str):
            raise fail(func, "gpu", "None or a catalog GPU name", self.gpu)

    @property
    def config(self) -> ModelConfig:
        """The model's configuration."""
        return model(self.model)

    def describe(self) -> str:
        return (f"{self.config.name}, {self.plan.describe()}, {self.prompt_len} + "
                f"{self.output_len} tokens")


__all__ = ["BYTES_PER_VALUE", "LAYER_OVERHEAD_US", "CommPhase", "Replica", "ServingJob",
           "ServingPlan", "replica"]
