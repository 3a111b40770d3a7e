"""One row of figures per fabric and job: what comparisons and searches read."""

from __future__ import annotations

from typing import Any

from .._checks import did_you_mean
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric
from .cost import token_cost
from .plan import TrainingJob
from .step import training_step

#: Keywords of :func:`training_metrics` that go to :func:`~fabricopt.token_cost`.
COST_OPTIONS = ("years", "usd_per_kwh", "pue", "catalog")


def training_metrics(fab: Fabric, job: TrainingJob, **cost_options: Any) -> dict[str, Any]:
    """Step time, tokens per second, MFU, cost per million tokens and the binding dimension.

    ``cost_options`` go to :func:`~fabricopt.workload.cost.token_cost` (``years``,
    ``usd_per_kwh``, ``pue``, ``catalog``; the catalog also gives the step its GPU's
    figures); another keyword is refused with the closest of them.

    >>> import fabricopt as fo
    >>> row = training_metrics(fo.superpod(1), fo.TrainingJob("llama3-8b", tp=8,
    ...                        global_batch=256, seq_len=8192))
    >>> sorted(row)[:4], row["binding_dimension"]
    (['binding_dimension', 'binding_tier', 'mfu', 'step_s'], 'tp')
    """
    func = "training_metrics"
    check_fabric(func, fab)
    if not isinstance(job, TrainingJob):
        raise InvalidParameterError(f"{func}(): job must be a TrainingJob, got "
                                    f"{type(job).__name__}")
    for key in cost_options:
        if key not in COST_OPTIONS:
            raise InvalidParameterError(f"{func}(): {key!r} is not a cost option"
                                        f"{did_you_mean(key, COST_OPTIONS)}; they are "
                                        f"{', '.join(COST_OPTIONS)} (of token_cost)")
    job.with_gpus(len(fab.endpoints), func)
    try:  # the messages name the function called, not the ones it calls
        s = training_step(fab, job, catalog=cost_options.get("catalog"))
        cost = token_cost(fab, s.tokens_per_s, s.gpu.key, **cost_options)
    except InvalidParameterError as exc:
        text = str(exc)
        for inner in ("training_step(): ", "token_cost(): "):
            text = text.replace(inner, f"{func}(): ", 1) if text.startswith(inner) else text
        raise InvalidParameterError(text) from None
    dim = s.binding_dimension
    return {"step_s": s.step_s, "step_s_lower": s.step_s_lower,
            "tokens_per_s": s.tokens_per_s, "mfu": s.mfu,
            "usd_per_million_tokens": cost.usd_per_million_tokens,
            "binding_dimension": dim,
            "binding_tier": s.phases[dim].binding_tier if dim else None}


__all__ = ["COST_OPTIONS", "training_metrics"]
