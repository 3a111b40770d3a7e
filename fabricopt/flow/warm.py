r"""Warm starts: what the solve of an intact fabric proves about the same fabric with parts gone.

The arc lengths that certify a :class:`~fabricopt.flow.result.FlowResult`'s upper bound are a
length function on any *sub-fabric* (same nodes or fewer, arcs a subset, capacities no larger):
restricted to the arcs that remain they still prove

.. math:: \theta_{\text{failed}} \le \frac{\sum_a c_a l_a}{\sum D\,\mathrm{dist}_l},

and that bound is no larger than the intact one (removing an arc or shrinking its capacity
lowers the numerator; distances can only grow). They are also a good first guess for the
approximate method's pricing. Nothing is taken on trust: the bound is evaluated on the failed
fabric itself and re-checked by :func:`~fabricopt.check_certificate` there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..graph_arrays import GraphArrays
from .result import FlowResult

#: Relative slack on capacities when checking that a fabric is a sub-fabric (capacities read
#: back from a file may differ in the last digit).
CAPACITY_RTOL = 1e-9


def warm_lengths(func: str, ga: GraphArrays, warm_start: Any) -> np.ndarray:
    """The arc lengths of ``warm_start`` on the arcs of ``ga`` (mapped by node pair).

    Raises :class:`~fabricopt.InvalidParameterError` naming ``func`` and ``warm_start`` when
    it is not a :class:`FlowResult` with arc lengths, or when ``ga``'s fabric is not a
    sub-fabric of the one it was solved on: a node or arc it lacks, or a larger capacity.
    """
    if not isinstance(warm_start, FlowResult):
        raise InvalidParameterError(f"{func}(): warm_start must be None or a FlowResult, got "
                                    f"{type(warm_start).__name__}")
    cert = warm_start.certificate
    if cert is None or cert.lengths is None:
        raise InvalidParameterError(f"{func}(): warm_start must carry the arc lengths of its "
                                    f"certificate (status {warm_start.status!r} proved none)")
    position = {arc: a for a, arc in enumerate(cert.ga.arcs)}
    missing = [v for v in ga.nodes if v not in cert.ga.index]
    if missing:
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric that contains this one, but node "
            f"{missing[0]!r} is not in {warm_start.fabric_name!r} ({len(missing)} such nodes)")
    where = np.fromiter((position.get(arc, -1) for arc in ga.arcs), dtype=np.int64,
                        count=ga.n_arcs)
    absent = np.flatnonzero(where < 0)
    if len(absent):
        u, v = ga.arcs[absent[0]]
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric that contains this one, but arc "
            f"{u!r}->{v!r} is not in {warm_start.fabric_name!r} ({len(absent)} such arcs)")
    larger = np.flatnonzero(ga.capacity > cert.ga.capacity[where] * (1 + CAPACITY_RTOL))
    if len(larger):
        a = int(larger[0])
        u, v = ga.arcs[a]
        raise InvalidParameterError(
            f"{func}(): warm_start must come from a fabric with capacities no smaller, but "
            f"arc {u!r}->{v!r} has {ga.capacity[a]:g} Gb/s here and "
            f"{cert.ga.capacity[where[a]]:g} Gb/s in {warm_start.fabric_name!r}")
    return np.clip(np.asarray(cert.lengths, dtype=float)[where], 0.0, None)


def lengths_only(result: FlowResult) -> FlowResult:
    """``result`` without its flow and loads: all a warm start needs, small to pickle."""
    if result.certificate is None:
        return result
    return replace(result, certificate=replace(result.certificate, load=None, flow=None))


__all__ = ["lengths_only", "warm_lengths"]
