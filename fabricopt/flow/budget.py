"""What a time limit and the memory let an evaluation begin: the seconds left of it, whether a
step expected to take so long (from its size) fits, and whether the full LP or the
approximate method's flows fit in the memory at hand (:mod:`fabricopt.flow.memory`).

No step is interrupted once begun, so a step that would outlast the limit is not begun: the
bracket proven before it is the answer (``docs/bounds-first.md``, anytime brackets).
The costs per unit are measured on 2 cores; they decide only what is begun, never a number.

>>> stage_fits(1_000_000, None), stage_fits(100_000_000, 5.0), stage_fits(10_000_000, 1.0)
(True, False, False)
"""

from __future__ import annotations

import time

from ..fabric import Fabric
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .formulation import FlowModel, flow_lp_size
from .memory import LPSize, check_fits, gb
from .time_budget import begins

__all__ = ["APPROX_SECONDS_PER_NONZERO", "ECMP_SECONDS_PER_ENTRY", "STAGE_ALWAYS_SECONDS",
           "approx_fits",
           "check_lp_memory", "clock", "now", "search_budget", "seconds_left",
           "stage_fits"]

#: The clock a time limit is counted on, from the start of the call (a name of its own so a
#: test can advance it without waiting).
clock = time.perf_counter

#: Seconds the routed bounds stage costs per commodity x core arc: a 2,048-GPU
#: rail-optimized cluster with 1 % of its links failed, 45.7 million entries, 4.5 to 5 s
#: since its servers relay at both ends (14 to 17 s before), with room for a second routing
#: when the first falls short.
ECMP_SECONDS_PER_ENTRY = 1.5e-7
#: Seconds the approximate method's first round costs per nonzero of the full LP: 141 million
#: nonzeros (the same failed cluster), 16.5 s before its first bracket.
APPROX_SECONDS_PER_NONZERO = 1.2e-7


def now() -> float:
    """The time on :data:`clock`, read at each call (so a clock a test sets is the one)."""
    return clock()


def seconds_left(time_limit: float | None, start: float) -> float | None:
    """Seconds of ``time_limit`` left since ``start`` (the start of the call); None without
    a limit, never below 0."""
    return None if time_limit is None else max(time_limit - (clock() - start), 0.0)


def search_budget(time_limit: float | None, start: float) -> float | None:
    """Seconds the symmetry search may take: what is left of ``time_limit`` (at least a
    millisecond, so a spent limit still asks for a valid one); None without a limit."""
    left = seconds_left(time_limit, start)
    return None if left is None else max(left, 1e-3)


#: Seconds of routed stage that run whatever the limit, whole (its LPs as small, not
#: stopped): its bracket is the least a limited call returns, at a cost well within the
#: floor a limit is honoured within (0.05 s, ``docs/throughput.md``); a larger stage is
#: begun only when it fits in what is left. Some 13,000 flow variables: jellyfish(12, 4,
#: 2)'s 600 run whole; jellyfish(40, 12, 8)'s 19,200 do not (its attach-switch LP of
#: 15,100 nonzeros took 3.3 to 6.6 s CPU).
STAGE_ALWAYS_SECONDS = 0.002


def stage_fits(entries: int, left: float | None) -> bool:
    """True when the routed stage over ``entries`` commodities x arcs is expected to finish
    in ``left`` seconds with a third of them in hand
    (:func:`~fabricopt.flow.time_budget.begins`), or is expected within
    :data:`STAGE_ALWAYS_SECONDS` (always without a limit)."""
    expected = entries * ECMP_SECONDS_PER_ENTRY
    return left is None or expected <= STAGE_ALWAYS_SECONDS or begins(expected, left)


def approx_fits(nonzeros: int, left: float | None) -> bool:
    """True when the approximate method's first round over an LP of ``nonzeros`` is expected
    to end within ``left`` seconds, a third of them in hand (always without a limit)."""
    return left is None or begins(nonzeros * APPROX_SECONDS_PER_NONZERO, left)


def check_lp_memory(func: str, fab: Fabric | FlowModel, traffic: Traffic | None = None,
                    include_endpoint_links: bool = True, ga: GraphArrays | None = None,
                    method: str = "lp") -> None:
    """Refuse ``method="lp"`` (or ``"approx"``) before anything is built when its LP
    (:func:`~fabricopt.flow.formulation.flow_lp_size`), or the approximate method's flows
    over it, would not fit in the memory available
    (:func:`~fabricopt.flow.memory.available_memory`), naming both and what to do instead.
    ``fab`` may be a built :class:`~fabricopt.flow.formulation.FlowModel` (whose LP is not
    assembled yet) instead of a fabric and its traffic.

    >>> import fabricopt as fo
    >>> check_lp_memory("max_concurrent_flow", fo.ring(4), fo.all_to_all(fo.ring(4)))
    >>> check_lp_memory("solve_flow_model", fo.build_flow_lp(fo.ring(4),
    ...                                                      fo.all_to_all(fo.ring(4))))
    """
    if isinstance(fab, FlowModel):
        counted = fab.lp_size
        size = LPSize(counted["rows"], counted["columns"], counted["nonzeros"])
        check_fits(func, "the model's LP", size.bytes, f"an LP of {size}",
                   "Use max_concurrent_flow(method='auto') or method='approx', which never "
                   "assemble it.")
        return
    if method not in ("lp", "approx"):
        return  # "auto" and "symmetric" choose what fits; the symmetric LP is small
    size = flow_lp_size(fab, traffic, include_endpoint_links, ga)  # type: ignore[arg-type]
    if method == "approx":
        variables = size.columns - 1
        check_fits(func, "method='approx'", size.approx_bytes,
                   f"one flow per commodity and core arc, {variables:,} variables, about "
                   f"{gb(size.approx_bytes)}",
                   "Use method='auto', which solves the symmetric LP when the fabric has a "
                   "symmetry (claimed or found) and otherwise returns the bracket that fits.")
        return
    check_fits(func, "method='lp'", size.bytes, f"an LP of {size}",
               "Use method='auto', which solves the symmetric LP when the fabric has a "
               "symmetry (claimed or found) and otherwise the approximate method, which "
               "never assembles the LP (or method='approx', if its flows fit).")
