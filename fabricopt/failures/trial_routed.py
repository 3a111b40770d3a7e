"""A failure trial's open answer closed by the routed bounds where they are cheap, as a single
solve closes it.

:func:`~fabricopt.max_concurrent_flow` holds an open answer from the intact fabric (within
the gap, not exact) for the routed bounds when they are expected within
:data:`~fabricopt.flow.plan.WAIT_FOR_ROUTING_SECONDS`
(:func:`~fabricopt.flow.plan.waits_for_routing`). A failure sweep's trial
(:func:`~fabricopt.failures.sweep.solve_failed`) reaches the same open answer by the same
detours and planes; :func:`routed_when_cheap` gives it the same wait, so that a trial's
bracket is the one a single solve of its failed fabric returns (a 512-GPU rail-optimized 2:1
cluster minus 1 %: [0.6912, 0.6944] by the detours, exactly 0.694444 once routed).
"""

from __future__ import annotations

import time

from ..flow.plan import RoutedBounds, waits_for_routing
from ..flow.problem import FlowProblem
from ..flow.result import FlowResult
from ..flow.stages import Bracket
from ..graph_arrays import GraphArrays
from ..traffic import Traffic


def routed_when_cheap(failed, traffic: Traffic, answer: FlowResult,
                      include_endpoint_links: bool = True, time_limit: float | None = None,
                      ga: GraphArrays | None = None) -> FlowResult:
    """``answer`` (a certified bracket of ``failed`` for ``traffic``, in the caller's units)
    with each end taken from the routed bounds where tighter, closed when they meet; as it
    is when exact, or when the routed bounds do not apply or are not expected within
    :data:`~fabricopt.flow.plan.WAIT_FOR_ROUTING_SECONDS` and what ``time_limit``
    (seconds, None: none) leaves. ``ga``: the failed fabric's arrays, when at hand.

    >>> import fabricopt as fo
    >>> fab = fo.fail_random(fo.cluster(fo.dgx_h100(), nodes=8, scale_out="rail_optimized",
    ...                                 oversubscription=2), 0.02, seed=1)
    >>> exact = fo.max_concurrent_flow(fab, method="lp")
    >>> routed_when_cheap(fab, fo.all_to_all(fab), exact) is exact   # exact: as it is
    True
    """
    if answer.exact:
        return answer
    p = FlowProblem.of(failed, traffic, bounds_first=True, time_limit=time_limit,
                       include_endpoint_links=include_endpoint_links, ga=ga)
    if not waits_for_routing(p):
        return answer
    # The engine's own stage, as FromIntact holds an answer for it: it takes the held
    # answer, each end from the routing where tighter (its proof with it).
    bracket = Bracket()
    bracket.held = answer
    start = time.perf_counter()
    RoutedBounds().run(p, bracket)
    routed = bracket.answer if bracket.answer is not None else answer
    routed.seconds = answer.seconds + (time.perf_counter() - start)
    return routed


__all__ = ["routed_when_cheap"]
