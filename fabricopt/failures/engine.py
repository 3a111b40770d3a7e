"""The flow engine as the package offers it: handed the failure floor's stages.

:func:`fabricopt.flow.max_concurrent_flow` knows nothing of failures: it runs the stages its
caller hands in (``stages=``) and fills no registry. The failure floor sits above it, so this
is where a failed fabric's answer from its intact fabric
(:class:`~fabricopt.failures.intact_flow.RerouteFromIntact`) and what narrows it through the
fabric's planes (:class:`~fabricopt.failures.plane_bracket.ThroughPlanes`) are handed in:
``fo.max_concurrent_flow`` is :func:`max_concurrent_flow` below, and so is every solve of a
failed fabric inside the package (the sweeps, the N-1 table, the command line).

>>> import fabricopt as fo
>>> fo.max_concurrent_flow is max_concurrent_flow
True
"""

from __future__ import annotations

import functools
from typing import Any

from ..flow import max_concurrent_flow as engine_max_concurrent_flow
from ..flow.result import FlowResult
from ..flow.time_budget import active_budget
from .intact_flow import FROM_INTACT, SEARCHED_DETOURS
from .plane_bracket import THROUGH_PLANES

#: The stages the failure floor hands the engine, after the caller's own: the intact flow
#: rerouted answers first (its detours unsearched where the planes follow), then the planes
#: narrow what it left open, then the detours are searched if the planes did not close it.
FAILURE_STAGES = (FROM_INTACT, THROUGH_PLANES, SEARCHED_DETOURS)


@functools.wraps(engine_max_concurrent_flow)
def max_concurrent_flow(*args: Any, stages: Any = (), **options: Any) -> FlowResult:
    if isinstance(stages, str | bytes):  # not stages: the engine names what it takes
        handed = stages
    else:
        try:
            handed = (*stages, *FAILURE_STAGES)
        except TypeError:  # not a sequence either
            handed = stages
    budget = active_budget()
    if budget is None:
        return engine_max_concurrent_flow(*args, stages=handed, **options)
    # A command's one limit (fabricopt failures --time-limit): this solve takes its share.
    result = engine_max_concurrent_flow(*args, stages=handed,
                                        **{**options, "time_limit": budget.share()})
    budget.finished(f"solve {budget.solved + 1}", result.status == "time_limit")
    return result


__all__ = ["FAILURE_STAGES", "max_concurrent_flow"]
