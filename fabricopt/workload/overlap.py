r"""What a schedule hides: the step from compute and each dimension's communication.

With ``C`` the compute of one step on the slowest pipeline rank (``m`` micro-batches), ``A``
its attention part, ``B = (p - 1) / (v m)`` the bubble and ``T_x`` the time of dimension
``x``'s messages per step (``docs/workload.md#overlap``):

``step = (C + E_tp + E_cp + E_ep) (1 + B) + E_pp + E_dp``

where ``E_x`` is the part of ``T_x`` left on the critical path by the job's ``overlap``:

============  ====================  ===========================  ==============================
dimension     ``"none"``            ``"default"`` (Megatron-Core)  ``"full"``
============  ====================  ===========================  ==============================
tensor        ``T``                 ``T``                          ``max(T / t, T - (C - A))``:
                                                                   pipelined with its GEMMs, one
                                                                   of ``t`` chunks exposed
context       ``T``                 ``max(0, T - A)``: the ring    same
                                    under attention
expert        ``T``                 ``T``                          ``max(0, T - C)``: dispatch and
                                                                   combine under another
                                                                   micro-batch's compute
                                                                   (DualPipe)
pipeline      every send on the     ``2 (p - 1)`` sends: the fill  same
              path, ``2 (v m + p    and drain; asynchronous sends
              - 1)``                hide the rest
data          ``T``                 per message kind ``max(T / k,  same
                                    T - W)``: ``k`` buckets of 40
                                    MB, ``W`` one micro-batch's
                                    compute for a step's
                                    reduce-scatter or all-gather,
                                    all of ``C`` for per-micro-
                                    batch ones (ZeRO-2, ZeRO-3)
============  ====================  ===========================  ==============================

The certified step takes the same schedule with every time at its lower bound and compute at
peak: a schedule of this shape is no faster. Sources: Megatron-Core's ``--overlap-grad-reduce``
and ``--overlap-param-gather`` (data), its asynchronous pipeline sends; Transformer Engine's
tensor-parallel communication overlap and context-parallel attention (ring exchange under
the attention kernel); DeepSeek-V3's DualPipe (expert all-to-all under computation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .plan import TrainingJob

BUCKET_BYTES = 40e6


@dataclass
class Exposure:
    """The step and its parts, in seconds."""

    step: float
    body: float
    bubble: float
    exposed: dict[str, float]


#: The dimensions whose communication runs inside a pipeline stage, on every micro-batch, so
#: the bubble stretches it: :func:`schedule` multiplies their exposed time by 1 + B.
IN_STAGE = ("tp", "cp", "ep")

def schedule(job: TrainingJob, compute: float, attention: float,
             comm: dict[str, float], messages: dict[str, list[dict]]) -> Exposure:
    """Step time of ``job`` from its compute per step (``compute``, attention part
    ``attention``) and each dimension's communication per step (``comm``; ``messages``: its
    message kinds with ``collective``, ``count``, ``message_bytes`` and the kind's share of
    ``comm``, under the key ``"seconds"``).

    >>> from fabricopt.workload.plan import TrainingJob
    >>> job = TrainingJob("llama3-8b", tp=8, pp=2, dp=1, global_batch=8, overlap="none")
    >>> e = schedule(job, 1.0, 0.2, {"tp": 0.5}, {})
    >>> e.step, e.bubble          # (1 + 0.5) x (1 + (2 - 1) / 8)
    (1.6875, 0.1875)
    """
    how = job.overlap
    m, p, v = job.micro_batches, job.pp, job.virtual_stages
    exposed: dict[str, float] = {}
    t = comm.get("tp", 0.0)
    exposed["tp"] = max(t / job.tp, t - (compute - attention)) if how == "full" else t
    t = comm.get("cp", 0.0)
    exposed["cp"] = t if how == "none" else max(0.0, t - attention)
    t = comm.get("ep", 0.0)
    exposed["ep"] = max(0.0, t - compute) if how == "full" else t
    body = compute + exposed["tp"] + exposed["cp"] + exposed["ep"]
    bubble = body * job.bubble_fraction
    t = comm.get("pp", 0.0)
    sends = 2 * v * m
    on_path = 2 * (v * m + p - 1) if how == "none" else 2 * (p - 1)
    exposed["pp"] = t * on_path / sends if sends else 0.0
    exposed["dp"] = comm.get("dp", 0.0) if how == "none" else _data(
        messages.get("dp", []), compute, m)
    for key in [k for k, x in exposed.items() if x <= 0 and k not in comm]:
        del exposed[key]
    step = body + bubble + exposed.get("pp", 0.0) + exposed.get("dp", 0.0)
    for d in IN_STAGE:
        if d in exposed:
            exposed[d] *= 1 + job.bubble_fraction   # on every micro-batch, bubble included
    return Exposure(step, body, bubble, exposed)


def _data(kinds: list[dict], compute: float, micro_batches: int) -> float:
    """Exposed data-parallel time: once-per-step messages under one micro-batch's compute,
    per-micro-batch messages under all of it, the last bucket of each never hidden."""
    per_step = [k for k in kinds if k["count"] < micro_batches or micro_batches == 1]
    per_mb = [k for k in kinds if k not in per_step]
    exposed = 0.0
    for group, window in ((per_step, compute / micro_batches), (per_mb, compute)):
        if not group:
            continue
        total = sum(k["seconds"] for k in group)
        last = max(k["seconds"] / max(1, math.ceil(k["message_bytes"] / BUCKET_BYTES))
                   / max(1, k["count"]) for k in group)
        exposed += max(last, total - window)
    return exposed


__all__ = ["BUCKET_BYTES", "IN_STAGE", "Exposure", "schedule"]
