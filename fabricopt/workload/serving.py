r"""Serving a model on a fabric at one batch: prefill, decode, KV-cache transfer
(``docs/serving.md``).

:func:`serving_estimate` answers the single-batch question: a replica as deployed
(:mod:`.serving_replica`: precision, HBM checked, tensor, pipeline and expert parallelism,
the fabric's phases with every replica at once), its time to first token (one prompt,
chunked, unloaded; plus the KV cache's move when disaggregated), its time per output token
at the full batch, and the output tokens per second of the fabric in the analytic steady
state of continuous batching (:func:`~fabricopt.workload.serving_capacity.throughput`).
Latency targets and load are :func:`~fabricopt.serving_capacity`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import check_bool, check_int
from ..catalog import Catalog
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .models import ModelConfig, model
from .serving_capacity import _check_fits, _prefill_seconds, throughput
from .serving_replica import CommPhase, ServingPlan, replica


@dataclass(frozen=True)
class ServingEstimate:
    """Latency and throughput of serving at one batch (seconds, tokens per second).

    ``tpot_s`` is a decode step at the full batch (with its share of prefill when
    colocated), ``ttft_s`` one prompt alone; ``*_lower`` the same at peak compute and HBM
    with the certified communication bounds. ``tokens_per_s``: output tokens of the whole
    fabric in the steady state. ``phases``: the fabric's communication per kind (``tp``,
    ``ep``, ``pp``, ``kv``), each with its certified seconds per byte and binding tier.
    """

    model: str
    ttft_s: float
    tpot_s: float
    kv_transfer_s: float
    decode_compute_s: float
    decode_memory_s: float
    decode_comm_s: float
    tokens_per_s: float
    replicas: int
    plan: ServingPlan | None = None
    gpu: str = ""
    ttft_s_lower: float = 0.0
    tpot_s_lower: float = 0.0
    memory_gb_per_gpu: float = 0.0
    max_batch: int = 0
    prefill_replicas: int = 0
    decode_replicas: int = 0
    phases: dict[str, CommPhase] = field(default_factory=dict)
    kv_transfer_s_lower: float = 0.0

    def __str__(self) -> str:
        p = self.plan
        head = f"{self.model} on {self.gpu}, {p.describe() if p else ''}"
        split = (f" ({self.prefill_replicas} prefill : {self.decode_replicas} decode)"
                 if p is not None and p.disaggregated else "")
        lines = [head,
                 f"  TTFT    {self.ttft_s * 1e3:,.4g} ms (>= {self.ttft_s_lower * 1e3:,.4g}),"
                 f" KV transfer {self.kv_transfer_s * 1e3:,.3g} ms",
                 f"  TPOT    {self.tpot_s * 1e3:,.4g} ms (>= {self.tpot_s_lower * 1e3:,.4g}):"
                 f" compute {self.decode_compute_s * 1e3:,.3g}, memory "
                 f"{self.decode_memory_s * 1e3:,.3g}, comm {self.decode_comm_s * 1e3:,.3g} ms",
                 f"  output  {self.tokens_per_s:,.0f} tokens/s, {self.replicas} replicas{split}",
                 f"  memory  {self.memory_gb_per_gpu:,.1f} GB per GPU; largest batch "
                 f"{self.max_batch}"]
        for ph in self.phases.values():
            lines.append(f"  {ph.name:<3} {ph.collective:<10} x{ph.count:<4} binding "
                         f"{ph.binding_tier} ({ph.method})")
        return "\n".join(lines)


def serving_estimate(fab: Fabric, model_name: str | ModelConfig, *, tp: int = 8, ep: int = 1,
                     pp: int = 1, batch: int = 32, prompt_len: int = 2048,
                     output_len: int = 256, precision: str = "bf16",
                     kv_precision: str | None = None, chunk: int = 2048,
                     disaggregated: bool = False, gpu: str | None = None,
                     catalog: Catalog | None = None) -> ServingEstimate:
    """Time to first token, time per output token and throughput of a model on ``fab``.

    Parameters
    ----------
    fab : Fabric
        Its GPUs hold as many replicas as fit (``tp x ep x pp`` GPUs each).
    model_name : str or ModelConfig
    tp, ep, pp : int
        Tensor, expert and pipeline parallelism of a replica (within or across servers).
    batch : int
        Requests a replica decodes at once.
    prompt_len, output_len : int
        Tokens per request.
    precision : str
        ``"bf16"``, ``"fp8"`` or ``"fp4"`` (a GPU without that peak is refused: FP4 on
        Blackwell only) for weights and activations; ``kv_precision`` for the KV cache
        (default the same).
    chunk : int
        Token budget of a step (chunked prefill).
    disaggregated : bool
        Prefill and decode on separate replicas, split in the ratio that balances them.
    gpu, catalog
        The GPU's catalog key (default the fabric's) and the catalog.

    Raises
    ------
    InvalidParameterError
        A replica whose weights, KV cache at ``batch x (prompt_len + output_len)`` tokens,
        activations and runtime exceed its GPUs' HBM (the message names the largest batch
        that fits), and any bad argument.

    Examples
    --------
    >>> import fabricopt as fo
    >>> e = serving_estimate(fo.dgx_h100(), "llama3-70b", tp=8, batch=16)
    >>> e.decode_memory_s > e.decode_compute_s   # decode reads weights: memory bound
    True
    >>> serving_estimate(fo.dgx_h100(), "llama3-70b", tp=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricopt.errors.InvalidParameterError: serving_estimate(): llama3-70b at tp=1, ep=1 does ...
    """
    func = "serving_estimate"
    check_fabric(func, fab)
    try:
        m = model(model_name)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{func}(): model_name: {exc}") from None
    for key, value in (("tp", tp), ("ep", ep), ("pp", pp), ("batch", batch),
                       ("prompt_len", prompt_len), ("output_len", output_len),
                       ("chunk", chunk)):
        check_int(func, key, value, minimum=1)
    check_bool(func, "disaggregated", disaggregated)
    try:
        plan = ServingPlan(tp=tp, pp=pp, ep=ep, batch=batch, chunk=chunk,
                           disaggregated=disaggregated, precision=precision,
                           kv_precision=kv_precision)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{func}(): {str(exc).split(': ', 1)[-1]}") from None
    r = replica(fab, m, plan, gpu=gpu, catalog=catalog, func=func)
    context = prompt_len + output_len
    _check_fits(func, r, context)
    th = throughput(r, prompt_len, output_len)
    d = th.decode_batch
    c = 0.0 if disaggregated or output_len < 2 else d * prompt_len / (output_len - 1)
    kv = d * (prompt_len + output_len / 2)
    # The decode step's parts at the full batch: every stage's compute, memory, communication.
    parts = r.stage_parts(*(np.array(x / pp, float) for x in (d, c, kv, c * prompt_len / 2)))
    compute, memory, comm = (pp * float(x) for x in parts)
    g = r.gpu
    tpot_lower = float(r.step_seconds(d, c, kv, c * prompt_len / 2, lower=True))
    transfer = r.kv_transfer_seconds(prompt_len)
    transfer_lower = r.kv_transfer_seconds(prompt_len, lower=True)
    ttft_lower = _prefill_seconds(r, prompt_len, chunk, lower=True) + transfer_lower
    return ServingEstimate(
        m.name, th.ttft_s, th.tpot_s, transfer, float(compute), float(memory), comm,
        th.rate * output_len, r.replicas, plan, g.key, ttft_lower, tpot_lower,
        r.memory_bytes(batch, context) / 1e9, min(r.max_batch(context), 10**9),
        th.prefill_replicas, th.decode_replicas, r.phases, transfer_lower)


__all__ = ["ServingEstimate", "serving_estimate"]
