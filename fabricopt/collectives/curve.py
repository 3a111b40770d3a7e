"""Bounds over message sizes (``t(S) = alpha + beta S``) and the textbook hierarchical
all-reduce model."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_positive
from ..errors import InvalidParameterError
from ..fabric import Fabric
from .bounds import checked_ask, checked_latency
from .latency import LatencyModel
from .problem import unreachable_pair
from .results import GBPS_TO_BYTES, bus_factor
from .schemes import BY_COLLECTIVE


@dataclass(frozen=True)
class CollectiveCurve:
    """Time and busbw over message sizes: ``t(S) = alpha + beta S`` for the lower bound.

    ``busbw_limit_GBps`` is the bandwidth bound (S -> infinity); :meth:`size_for_fraction`
    gives the message size at which the busbw bound reaches a fraction of it.
    ``unreachable`` is ``(a, b)`` when participant ``a`` cannot reach participant ``b``: then
    every time is infinite and every busbw 0 (see
    :attr:`~fabricopt.collectives.results.CollectiveBounds.unreachable`).
    """

    collective: str
    n_endpoints: int
    alpha_s: float
    beta_s_per_byte: float
    sizes: np.ndarray
    lower_time_s: np.ndarray
    busbw_GBps: np.ndarray
    busbw_limit_GBps: float
    unreachable: tuple[Hashable, Hashable] | None = None

    def size_for_fraction(self, fraction: float) -> float:
        """Bytes at which busbw reaches ``fraction`` of its limit: ``f alpha / (beta (1-f))``.

        >>> curve = CollectiveCurve("all_reduce", 8, 1e-5, 1e-9, np.array([1.0]),
        ...                         np.array([1e-5]), np.array([0.0]), 1.75)
        >>> round(curve.size_for_fraction(0.5))   # alpha / beta
        10000
        """
        if not 0 < fraction < 1:
            raise InvalidParameterError(f"size_for_fraction(): fraction must be in (0, 1), "
                                        f"got {fraction!r}")
        if self.unreachable is not None:
            a, b = self.unreachable
            raise InvalidParameterError(
                f"size_for_fraction(): the curve's participants are not all connected "
                f"({a!r} cannot reach {b!r}), so busbw is 0 at every size; build the curve "
                "with endpoints= a group that is connected")
        return fraction * self.alpha_s / (self.beta_s_per_byte * (1 - fraction))


def collective_curve(fab: Fabric, collective: str, sizes: Sequence[float] | None = None, *,
                     latency: LatencyModel | None = None,
                     endpoints: Iterable[Hashable] | None = None,
                     in_network_reduction: bool | str = "auto") -> CollectiveCurve:
    """Lower-bound time and busbw of ``collective`` over message sizes, with latency.

    Every bandwidth bound is linear in the size, so one evaluation gives ``beta`` and the
    latency model gives ``alpha``; the curve is exact for the bound at every size.

    Examples
    --------
    >>> import networkx as nx, fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(8), endpoints=range(1, 9),
    ...                        default_capacity=3600.0)
    >>> curve = fo.collective_curve(fab, "all_reduce")
    >>> round(curve.busbw_limit_GBps, 6), curve.size_for_fraction(0.5) > 0
    (450.0, True)
    """
    func = "collective_curve"
    latency = checked_latency(func, latency) or LatencyModel()
    try:
        s = np.asarray(sizes if sizes is not None else 2.0 ** np.arange(10, 35), dtype=float)
    except (TypeError, ValueError):
        s = np.array([np.nan])
    if s.ndim != 1 or not len(s) or not np.all(np.isfinite(s)) or np.any(s < 1):
        raise InvalidParameterError(f"{func}(): sizes must be a non-empty sequence of finite "
                                    f"sizes >= 1 byte, got {sizes!r}")
    ref = 2.0**30  # any size: the bandwidth bound is linear in it
    ask = checked_ask(func, fab, collective, ref, endpoints, in_network_reduction)
    split = unreachable_pair(ask.p, root_only=collective == "broadcast")
    if split is not None:  # no schedule: every time infinite, every busbw 0
        return CollectiveCurve(collective, ask.n, 0.0, math.inf, s, np.full(len(s), math.inf),
                               np.zeros(len(s)), 0.0, unreachable=split[:2])
    beta = BY_COLLECTIVE[collective](ask).lower.time_s / ref
    alpha = latency.alphas(fab, ask.p)[0]
    t = alpha + beta * s
    factor = bus_factor(collective, ask.n)
    return CollectiveCurve(collective, ask.n, alpha, beta, s, t, s / t / 1e9 * factor,
                           factor / beta / 1e9)


def hierarchical_all_reduce_time(g: int, k: int, scale_up_gbps: float, nic_gbps: float,
                                 message_bytes: float) -> float:
    """The textbook hierarchical all-reduce: ``2(g-1)/g S/B_up + 2(k-1)/k (S/g)/b``.

    ``g`` GPUs per scale-up domain with ``scale_up_gbps`` each, ``k`` domains joined by
    ``nic_gbps`` per GPU, phases run one after another
    (``docs/collectives.md#the-textbook-hierarchical-model``). A model to set against the
    graph bounds, which may overlap the phases and so are never slower.

    >>> round(hierarchical_all_reduce_time(8, 2, 3600.0, 400.0, 2**30) * 1e3, 2)
    6.86
    """
    func = "hierarchical_all_reduce_time"
    g = check_int(func, "g", g, minimum=1)
    k = check_int(func, "k", k, minimum=1)
    scale_up_gbps = check_positive(func, "scale_up_gbps", scale_up_gbps)
    nic_gbps = check_positive(func, "nic_gbps", nic_gbps)
    message_bytes = check_positive(func, "message_bytes", message_bytes)
    up = 2 * (g - 1) / g * message_bytes / (scale_up_gbps * GBPS_TO_BYTES)
    out = 2 * (k - 1) / k * (message_bytes / g) / (nic_gbps * GBPS_TO_BYTES) if k > 1 else 0.0
    return up + out
