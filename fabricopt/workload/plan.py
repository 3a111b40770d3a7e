"""A training job: a model and how it is split over GPUs (the parallel plan).

Dimensions (``docs/workload.md#the-parallel-plan``): tensor ``tp`` (Megatron-LM, with
sequence parallelism), context ``cp`` (ring attention), expert ``ep`` (routed experts
spread over ``ep`` ranks; dense weights are replicated over them and each takes sequences of
its own, as in Megatron-LM where expert groups are carved out of data parallelism), data
``dp`` (with ZeRO
stage 0-3) and pipeline ``pp`` (1F1B, interleaved with ``virtual_stages`` > 1). The GPUs a
job takes are ``tp x cp x ep x dp x pp``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._checks import (
    check_bool,
    check_choice,
    check_int,
    check_label,
    check_positive,
    did_you_mean,
    parse_count,
    short_name,
)
from ..errors import InvalidParameterError
from .models import ModelConfig, model

PRECISIONS = ("bf16", "fp8", "fp4")
RECOMPUTE = ("none", "selective", "full")
#: What communication a schedule hides under compute (``docs/workload.md#overlap``).
OVERLAP = ("none", "default", "full")
#: Precision of the gradients kept and reduced over data parallelism.
GRAD_PRECISIONS = ("fp32", "bf16")
#: What selective recomputation may recompute (Megatron-Core's ``--recompute-modules``):
#: the attention score matrix, the norms' outputs, the MLP's activation function, the whole
#: MLP.
RECOMPUTE_MODULES = ("core_attn", "layernorm", "activation", "mlp")
#: Dimensions in rank order, fastest first: neighbouring ranks share tensor-parallel groups.
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
#: Least ``compute_efficiency`` a job may give: a thousandth of the peak. Below it no GPU runs
#: a transformer's matrix multiplies, and a step's time runs out of floating point (1e-320
#: made the step infinite and its tokens per second not a number).
MIN_COMPUTE_EFFICIENCY = 1e-3


@dataclass(frozen=True)
class TrainingJob:
    """A model, a parallel plan and a batch.

    Parameters
    ----------
    model : str, dict or ModelConfig
        A catalogue name (:data:`fabricopt.models`) or a user's model (:func:`fabricopt.model`).
    tp, pp, ep, cp : int
        Tensor, pipeline, expert and context parallel degrees.
    dp : int, optional
        Data-parallel degree; None: every GPU the others leave (set by
        :func:`~fabricopt.training_step` from the fabric).
    micro_batch, global_batch : int
        Sequences per micro-batch and per step; ``global_batch`` must be a multiple of
        ``micro_batch x dp x ep``.
    seq_len : int
        Tokens per sequence.
    precision : {"bf16", "fp8", "fp4"}
        Matrix-multiply precision: sets the peak rate and the GPU's efficiency at it (the
        catalog's ``<precision>_efficiency``); weights and activations move in BF16.
    zero : {0, 1, 2, 3}
        ZeRO stage: shard optimizer state (1), gradients too (2), weights too (3, FSDP).
    virtual_stages : int
        Model chunks per pipeline rank (interleaved 1F1B when > 1).
    first_stage_layers, last_stage_layers : int, optional
        Layers of the first and of the last pipeline rank (Megatron-Core's
        ``--decoder-first-pipeline-num-layers`` and ``--decoder-last-pipeline-num-layers``);
        the other ranks share the rest as evenly as it goes. Default: every rank as even as
        it goes (the first ones take one more when ``pp`` does not divide the layers).
    recompute : {"none", "selective", "full"}
        Activation recomputation (Megatron-Core's): ``"selective"`` recomputes the core
        attention (nothing more to save with FlashAttention), ``"full"`` keeps only each
        layer's input and runs its forward pass again.
    recompute_modules : sequence of str, optional
        With ``recompute="selective"``: what is recomputed, of :data:`RECOMPUTE_MODULES`
        (default ``("core_attn",)``, Megatron-Core's).
    recompute_layers : int, optional
        With ``recompute="full"``: layers of each pipeline rank recomputed (Megatron-Core's
        ``--recompute-num-layers`` with the block method); the others keep their
        activations. Default every layer.
    flash_attention : bool
        Attention by a fused kernel (FlashAttention) that keeps no ``s x s`` matrix.
    microbatch_group : int, optional
        Interleaved schedule: micro-batches run back to back on one model chunk before the
        next (Megatron-Core's ``--microbatch-group-size-per-virtual-pipeline-stage``; the
        ``N`` of Llama 3's schedule). Fewer keep fewer activations in flight. Default ``pp``.
    overlap : {"none", "default", "full"}
        Communication hidden under compute: ``"none"``; ``"default"`` as Megatron-Core does
        by default (data-parallel reduce-scatter under the backward pass and all-gather
        under the forward, asynchronous pipeline sends); ``"full"`` also tensor-parallel
        communication pipelined with its GEMMs, expert dispatch and combine hidden as
        DualPipe does and the context-parallel ring under attention.
    grad_precision : {"fp32", "bf16"}
        Gradients accumulated and reduced in FP32 (Megatron-Core's default with BF16
        training) or in BF16.
    sequence_parallel : bool
        Megatron-LM sequence parallelism (reduce-scatter/all-gather instead of all-reduce);
        each tensor rank then holds ``1/tp`` of a sequence, so ``seq_len / cp`` must be a
        multiple of ``tp``.
    compute_efficiency : float, optional
        Fraction of the GPU's peak its matrix multiplies reach, from
        :data:`MIN_COMPUTE_EFFICIENCY` to 1; default the catalog's figure.
    gpu : str, optional
        Catalog key of the GPU (``"h100_sxm"``, ``"b200"``); default the GPU the fabric's
        nodes carry (``gpu_model``), else by its NVLink generation. A GPU other than the one
        the fabric's nodes carry is refused when the job is run on it.

    Examples
    --------
    >>> import fabricopt as fo
    >>> job = fo.TrainingJob(model="llama3-70b", tp=8, pp=4, global_batch=1024, seq_len=8192)
    >>> job.with_gpus(1024).dp, job.with_gpus(1024).micro_batches
    (32, 32)
    """

    model: Any
    tp: int = 1
    pp: int = 1
    dp: int | None = None
    ep: int = 1
    cp: int = 1
    micro_batch: int = 1
    global_batch: int = 1024
    seq_len: int = 4096
    precision: str = "bf16"
    zero: int = 1
    virtual_stages: int = 1
    recompute: str = "none"
    sequence_parallel: bool = True
    compute_efficiency: float | None = None
    gpu: str | None = None
    overlap: str = "default"
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    recompute_layers: int | None = None
    recompute_modules: tuple[str, ...] | None = None
    microbatch_group: int | None = None
    flash_attention: bool = True
    grad_precision: str = "fp32"

    def __post_init__(self) -> None:
        func = "TrainingJob"
        try:
            object.__setattr__(self, "model", model(self.model))
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{func}(): model: {exc}") from None
        m: ModelConfig = self.model
        if isinstance(self.seq_len, str):  # "8Ki", as the command line writes it
            object.__setattr__(self, "seq_len", parse_count(func, "seq_len", self.seq_len))
        for key, choices in (("precision", PRECISIONS), ("grad_precision", GRAD_PRECISIONS),
                             ("recompute", RECOMPUTE), ("overlap", OVERLAP)):
            # FP8 is fp8: the names are words, not case-sensitive keys
            object.__setattr__(self, key, short_name(getattr(self, key), choices))
        for key in ("tp", "pp", "ep", "cp", "micro_batch", "global_batch", "seq_len",
                    "virtual_stages"):
            check_int(func, key, getattr(self, key), minimum=1)
        if self.dp is not None:
            check_int(func, "dp", self.dp, minimum=1)
        check_choice(func, "precision", self.precision, PRECISIONS)
        check_choice(func, "recompute", self.recompute, RECOMPUTE)
        check_choice(func, "overlap", self.overlap, OVERLAP)
        check_choice(func, "grad_precision", self.grad_precision, GRAD_PRECISIONS)
        check_int(func, "zero", self.zero, minimum=0, maximum=3)
        check_bool(func, "sequence_parallel", self.sequence_parallel)
        check_bool(func, "flash_attention", self.flash_attention)
        for key in ("first_stage_layers", "last_stage_layers", "recompute_layers"):
            if getattr(self, key) is not None:
                check_int(func, key, getattr(self, key), minimum=0 if key ==
                          "recompute_layers" else 1)
        if self.recompute_modules is not None:
            mods = self.recompute_modules
            if isinstance(mods, str) or not isinstance(mods, Sequence):
                raise InvalidParameterError(f"{func}(): recompute_modules must be a sequence of "
                                            f"{', '.join(RECOMPUTE_MODULES)}, got {mods!r}")
            for mod in mods:
                check_choice(func, "recompute_modules", mod, RECOMPUTE_MODULES)
            object.__setattr__(self, "recompute_modules", tuple(mods))
            if self.recompute != "selective":
                raise InvalidParameterError(f"{func}(): recompute_modules needs "
                                            f"recompute='selective', got {self.recompute!r}")
        if self.microbatch_group is not None:
            check_int(func, "microbatch_group", self.microbatch_group, minimum=1)
            if self.virtual_stages == 1:
                raise InvalidParameterError(f"{func}(): microbatch_group needs virtual_stages "
                                            "> 1 (the interleaved schedule)")
        if self.recompute_layers is not None and self.recompute != "full":
            raise InvalidParameterError(f"{func}(): recompute_layers needs recompute='full', "
                                        f"got recompute={self.recompute!r}")
        check_label(func, "gpu", self.gpu)
        if self.compute_efficiency is not None:
            eff = check_positive(func, "compute_efficiency", self.compute_efficiency)
            if not MIN_COMPUTE_EFFICIENCY <= eff <= 1:
                raise InvalidParameterError(
                    f"{func}(): compute_efficiency must be a fraction of the GPU's peak from "
                    f"{MIN_COMPUTE_EFFICIENCY:g} to 1, got {eff!r}")
        if m.heads % self.tp or m.kv_heads % self.tp and self.tp % m.kv_heads:
            raise InvalidParameterError(
                f"{func}(): tp={self.tp} must divide the {m.heads} attention heads of "
                f"{m.name} (and divide or be a multiple of its {m.kv_heads} KV heads)")
        if m.layers < self.pp:
            raise InvalidParameterError(
                f"{func}(): pp = {self.pp} must be at most the {m.layers} layers of {m.name}")
        self._check_stage_layers(func)
        if self.virtual_stages > self.layers_per_stage:
            raise InvalidParameterError(
                f"{func}(): virtual_stages = {self.virtual_stages} must be at most the "
                f"{self.layers_per_stage} layers of the fullest pipeline rank (a layer per "
                "model chunk)")
        if self.virtual_stages > 1 and self.pp == 1:
            raise InvalidParameterError(f"{func}(): virtual_stages > 1 needs pp > 1")
        if self.ep > 1 and (not m.is_moe or m.experts % self.ep):
            raise InvalidParameterError(
                f"{func}(): ep={self.ep} needs a mixture of experts whose expert count it "
                f"divides; {m.name} has {m.experts} experts")
        if self.seq_len % (self.cp * (2 if self.cp > 1 else 1)):
            raise InvalidParameterError(
                f"{func}(): seq_len={self.seq_len} must be a multiple of 2 x cp = "
                f"{2 * self.cp} (ring attention splits it in 2 cp chunks)")
        if self.sequence_parallel and self.tp > 1 and (self.seq_len // self.cp) % self.tp:
            raise InvalidParameterError(
                f"{func}(): seq_len={self.seq_len} must split over tp={self.tp} under sequence "
                f"parallelism (each tensor rank holds 1/tp of the {self.seq_len // self.cp} "
                f"tokens of a context rank): a multiple of cp x tp = {self.cp * self.tp}; "
                "or sequence_parallel=False")
        if self.dp is not None:
            self.check_batch()

    def _check_stage_layers(self, func: str) -> None:
        m, ends = self.model, (self.first_stage_layers, self.last_stage_layers)
        if ends == (None, None):
            return
        if self.pp == 1:
            raise InvalidParameterError(f"{func}(): first_stage_layers and last_stage_layers "
                                        "need pp > 1")
        given = sum(x for x in ends if x is not None)
        if self.pp == 2 and None not in ends and given != m.layers:
            raise InvalidParameterError(
                f"{func}(): with pp=2, first_stage_layers + last_stage_layers must be the "
                f"{m.layers} layers of {m.name}, got {given}")
        rest = m.layers - given
        others = self.pp - sum(x is not None for x in ends)
        if others and rest < others:
            raise InvalidParameterError(
                f"{func}(): first_stage_layers and last_stage_layers leave {rest} layers of "
                f"{m.name}'s {m.layers} for the other {others} pipeline ranks; each needs one")

    def check_batch(self) -> None:
        """Raise unless ``global_batch`` is a multiple of ``micro_batch x dp x ep``."""
        per_step = self.micro_batch * self.dp * self.ep
        if self.global_batch % per_step:
            raise InvalidParameterError(
                f"TrainingJob(): global_batch={self.global_batch} must be a multiple of "
                f"micro_batch x dp x ep = {self.micro_batch} x {self.dp} x {self.ep} = "
                f"{per_step}")

    # -- derived ---------------------------------------------------------------------------
    @property
    def model_parallel(self) -> int:
        """GPUs of one model replica: ``tp x cp x ep x pp``."""
        return self.tp * self.cp * self.ep * self.pp

    @property
    def gpus(self) -> int:
        """GPUs the job takes (``dp`` must be set)."""
        return self.model_parallel * self.dp_set

    @property
    def dp_set(self) -> int:
        """``dp``, which must be set (by :meth:`with_gpus` when it was None)."""
        if self.dp is None:
            raise InvalidParameterError("TrainingJob: dp is None; call with_gpus(n) first")
        return self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches each pipeline runs per step: ``global_batch / (micro_batch x dp x
        ep)`` (expert ranks hold the same dense weights and take sequences of their own)."""
        return self.global_batch // (self.micro_batch * self.dp_set * self.ep)

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def stage_layers(self) -> tuple[int, ...]:
        """Layers of each pipeline rank, first to last: ``first_stage_layers`` and
        ``last_stage_layers`` where given, the rest shared as evenly as it goes.

        >>> TrainingJob("llama3-405b", pp=16, first_stage_layers=7,
        ...             last_stage_layers=7).stage_layers[:3]
        (7, 8, 8)
        """
        first, last, p = self.first_stage_layers, self.last_stage_layers, self.pp
        if p == 1:
            return (self.model.layers,)
        fixed = {i: x for i, x in ((0, first), (p - 1, last)) if x is not None}
        free = [i for i in range(p) if i not in fixed]
        rest = self.model.layers - sum(fixed.values())
        out = dict(fixed)
        for k, i in enumerate(free):
            out[i] = rest // len(free) + (1 if k < rest % len(free) else 0)
        return tuple(out[i] for i in range(p))

    @property
    def recomputed(self) -> frozenset[str]:
        """What is recomputed per layer: every module under full recomputation, the chosen
        ones under selective, nothing under none."""
        if self.recompute == "full":
            return frozenset(RECOMPUTE_MODULES) | {"layer"}
        if self.recompute == "selective":
            return frozenset(self.recompute_modules or ("core_attn",))
        return frozenset()

    @property
    def layers_per_stage(self) -> int:
        """Layers of the fullest pipeline rank (it sets the pace of the pipeline)."""
        return max(self.stage_layers)

    @property
    def bubble_fraction(self) -> float:
        """Pipeline bubble over useful time: ``(p - 1) / (v m)`` (Narayanan et al., Efficient
        Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, section 2.2)."""
        return (self.pp - 1) / (self.virtual_stages * self.micro_batches)

    def with_gpus(self, n_gpus: int, func: str = "TrainingJob.with_gpus") -> TrainingJob:
        """This job with ``dp`` set from ``n_gpus`` when it is None (checked either way);
        ``func`` names the caller in messages (the fabric is its ``fab``).

        Raises
        ------
        InvalidParameterError
            When the plan needs more GPUs than ``n_gpus``.
        """
        n_gpus = check_int(func, "n_gpus", n_gpus, minimum=1)
        if self.dp is None:
            dp = n_gpus // self.model_parallel
            if dp < 1:
                raise InvalidParameterError(
                    f"{func}(): the job takes tp x cp x ep x pp = {self.model_parallel} GPUs "
                    f"per replica but fab has {n_gpus}")
            per_step = self.micro_batch * dp * self.ep
            if self.global_batch % per_step:
                raise InvalidParameterError(
                    f"{func}(): dp = {dp} (the {n_gpus:,} GPUs of fab (n_gpus) over tp x cp x "
                    f"ep x pp = {self.model_parallel}) does not split "
                    f"global_batch={self.global_batch} into micro-batches: "
                    f"micro_batch x dp x ep = {per_step}; give dp, or a "
                    f"global_batch that is a multiple of {per_step}")
            job = replace(self, dp=dp)
        else:
            job = self
        if job.gpus > n_gpus:
            raise InvalidParameterError(
                f"{func}(): the job takes tp x cp x ep x dp x pp = {job.gpus} GPUs but fab "
                f"has {n_gpus}")
        return job

    def describe(self) -> str:
        """One line: model and plan."""
        dp = "auto" if self.dp is None else self.dp
        zero = f", ZeRO-{self.zero}" if self.zero else ""
        v = f" (v={self.virtual_stages})" if self.virtual_stages > 1 else ""
        rec = self.recompute if self.recompute_layers is None else \
            f"full x {self.recompute_layers} layers"
        return (f"{self.model.name}: TP {self.tp}, PP {self.pp}{v}, DP {dp}, EP {self.ep}, "
                f"CP {self.cp}{zero}; micro-batch {self.micro_batch}, global batch "
                f"{self.global_batch}, sequence {self.seq_len}, {self.precision}, recompute "
                f"{rec}, overlap {self.overlap}")


def job_from_mapping(table: Mapping[str, Any], where: str = "[job]") -> TrainingJob:
    """A :class:`TrainingJob` from a table (a design file's ``[job]``), unknown keys named.

    >>> job_from_mapping({"model": "llama3-8b", "tp": 2}).tp
    2
    """
    fields = set(TrainingJob.__dataclass_fields__)
    for key in table:
        if key not in fields:
            raise InvalidParameterError(f"{where}: unknown key {key!r}"
                                        f"{did_you_mean(key, fields)}; keys are "
                                        f"{', '.join(sorted(fields))}")
    if "model" not in table:
        raise InvalidParameterError(f"{where}: needs model = a catalogue name or a table")
    return TrainingJob(**dict(table))


__all__ = ["DIMENSIONS", "GRAD_PRECISIONS", "MIN_COMPUTE_EFFICIENCY", "OVERLAP", "PRECISIONS",
           "RECOMPUTE", "RECOMPUTE_MODULES", "TrainingJob", "job_from_mapping"]
