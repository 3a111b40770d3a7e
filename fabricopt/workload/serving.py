r"""Serving a model on a fabric: prefill, decode, KV-cache transfer (``docs/workload.md#serving``).

One replica runs on ``tp x ep`` GPUs (twice that when prefill and decode are disaggregated).
Per decode step of a batch of ``B`` requests, with ``N`` active weights:

* compute ``2 N B / (tp ep)`` FLOPs over the peak times the compute efficiency;
* memory: every GPU reads its weights (2 bytes each) and the batch's KV cache once:
  ``(2 P_gpu + B (prompt + output/2) kv / tp) / HBM bandwidth``;
* tensor traffic: 2 all-reduces of ``B h x 2`` bytes per layer, expert traffic 2
  all-to-alls of ``k B h x 2 / ep`` per MoE layer, each at its lower bound with the
  :class:`~fabricopt.LatencyModel`'s alpha term (small messages: latency rules);

time per output token ``max(compute, memory) + tensor + expert``. Prefill of one prompt is
compute bound (a third of the training FLOPs per token). Disaggregated, the prompt's KV cache
(``prompt x kv`` bytes) moves from each prefill GPU to its decode GPU, timed by the phase
bound of :mod:`.phase_bounds`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import check_bool, check_int
from ..collectives import LatencyModel, collective_bounds
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from ..graph_arrays import GraphArrays
from .hardware import gpu_figures
from .memory import RUNTIME_GB
from .models import ModelConfig, model
from .phase_bounds import FabricLevels, phase_bound


@dataclass(frozen=True)
class ServingEstimate:
    """Latency and throughput of serving (seconds, tokens per second)."""

    model: str
    ttft_s: float
    tpot_s: float
    kv_transfer_s: float
    decode_compute_s: float
    decode_memory_s: float
    decode_comm_s: float
    tokens_per_s: float
    replicas: int


def _comm(fab: Fabric, group: list, collective: str, size: float, latency: LatencyModel) -> float:
    if len(group) < 2:
        return 0.0
    return collective_bounds(fab, collective, message_bytes=size, endpoints=group,
                             latency=latency).lower_time_s


def serving_estimate(fab: Fabric, model_name: str | ModelConfig, *, tp: int = 8, ep: int = 1,
                     batch: int = 32, prompt_len: int = 2048, output_len: int = 256,
                     disaggregated: bool = False, gpu: str | None = None,
                     latency: LatencyModel | None = None) -> ServingEstimate:
    """Time to first token, time per output token and throughput of ``model`` on ``fab``.

    A replica that does not fit in its GPUs' HBM (weights, the batch's KV cache of prompt and
    output, and the framework's 3 GB) is refused before any work, with the figures.

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
    if latency is not None and not isinstance(latency, LatencyModel):
        raise InvalidParameterError(f"{func}(): latency must be None or a LatencyModel, got "
                                    f"{latency!r}")
    for key, value in (("tp", tp), ("ep", ep), ("batch", batch), ("prompt_len", prompt_len),
                       ("output_len", output_len)):
        check_int(func, key, value, minimum=1)
    check_bool(func, "disaggregated", disaggregated)
    if ep > 1 and (not m.is_moe or m.experts % ep):
        raise InvalidParameterError(f"{func}(): ep={ep} needs a mixture of experts whose "
                                    f"expert count it divides; {m.name} has {m.experts}")
    width = tp * ep
    replica = width * (2 if disaggregated else 1)
    if replica > len(fab.endpoints):
        raise InvalidParameterError(f"{func}(): a replica takes tp x ep"
                                    f"{' x 2 (disaggregated)' if disaggregated else ''} = "
                                    f"{replica} GPUs, fab has {len(fab.endpoints)}")
    g = gpu_figures(fab, gpu, "bf16", func=func)
    latency = latency or LatencyModel()
    eps = list(fab.endpoints)
    decode = eps[:width]
    peak = g.peak_tflops * 1e12 * g.compute_efficiency
    weights = (m.dense_params / tp + m.expert_params / width) * 2
    kv = batch * (prompt_len + output_len / 2) * m.kv_bytes_per_token() / tp
    # What a decode GPU holds at the end of the batch: its weights, every request's KV cache
    # of prompt and output, and the framework's own (as a training rank counts it).
    held = weights + batch * (prompt_len + output_len) * m.kv_bytes_per_token() / tp
    if held / 1e9 + RUNTIME_GB > g.hbm_gb:
        raise InvalidParameterError(
            f"{func}(): {m.name} at tp={tp}, ep={ep} does not fit in the {g.hbm_gb:g} GB of "
            f"a {g.key} GPU: weights {weights / 1e9:,.1f} GB + KV cache "
            f"{(held - weights) / 1e9:,.4g} GB (batch={batch} x (prompt_len={prompt_len} + "
            f"output_len={output_len}) tokens, over tp) + runtime {RUNTIME_GB:g} GB; a "
            "smaller batch, shorter sequences or more tp")
    compute = 2 * m.active_params * batch / width / peak
    memory = (weights + kv) / (g.hbm_tbps * 1e12)
    tp_comm = 2 * m.layers * _comm(fab, decode[:tp], "all_reduce", batch * m.hidden * 2,
                                   latency)
    ep_comm = 2 * m.moe_layers * _comm(fab, decode[::tp][:ep], "all_to_all",
                                       m.top_k * batch * m.hidden * 2 / ep, latency)
    tpot = max(compute, memory) + tp_comm + ep_comm
    prefill_flops = m.flops_per_token(prompt_len) / 3 * prompt_len
    prefill_comm = 2 * m.layers * _comm(fab, decode[:tp], "all_reduce",
                                        prompt_len * m.hidden * 2, latency)
    ttft = prefill_flops / width / peak + prefill_comm
    transfer = 0.0
    if disaggregated:
        ga = GraphArrays.from_fabric(fab)
        levels = FabricLevels.of(fab, ga)
        names = tuple(eps[:2 * width])
        pairs = np.array([[width + i, i] for i in range(width)])
        bound = phase_bound(levels, names, np.array([ga.index[e] for e in names]), pairs,
                            "p2p")
        transfer = prompt_len * m.kv_bytes_per_token() / width * bound.seconds_per_byte
        ttft += transfer
    replicas = len(fab.endpoints) // replica
    if disaggregated:
        per_replica = batch / tpot
    else:  # prefill of the batch's prompts interrupts decoding
        per_replica = batch * output_len / (batch * (ttft - prefill_comm) + prefill_comm
                                            + output_len * tpot)
    return ServingEstimate(m.name, ttft, tpot, transfer, compute, memory, tp_comm + ep_comm,
                           replicas * per_replica, replicas)


__all__ = ["ServingEstimate", "serving_estimate"]
