"""Solve in units where capacities are of order one, whatever unit the fabric is given in.

Solvers' tolerances are absolute (HiGHS: 1e-7 on feasibility and on duals). A fabric whose
capacities are given in bit/s (4e11 per arc) leaves every dual length near 1e-11, under the
tolerance, so the duals read as zero and prove nothing. Theta does not change when every
capacity and every demand are divided by the same number, so the solve divides both by a
power of two near the typical capacity (exact in floating point) and the answer is the same
in any unit.

>>> import numpy as np
>>> capacity_unit(np.array([4e11, 4e11, 8e11]))
549755813888.0
>>> capacity_unit(np.array([400.0, 800.0]))
1.0
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import InvalidFabricError
from ..fabric import PLAUSIBLE_GBPS
from ..graph_arrays import GraphArrays
from ..traffic import Traffic

#: Capacities whose median lies in this range (Gb/s) are solved as given: the range covers
#: every real link from 1 Mb/s to a petabit trunk, and keeps the solvers' absolute
#: tolerances far from the numbers.
PLAIN_RANGE = PLAUSIBLE_GBPS
#: Capacities further apart than this are solved around the geometric middle of the two ends
#: rather than as given: the solvers' tolerances (1e-10, :mod:`fabricopt.flow.backends`) are
#: absolute, so flows of 4e5 beside arcs of 1 leave the thin arcs' rows under the rounding of
#: the wide ones. Measured: four switches in a ring of 1 Gb/s links, each GPU joined to two
#: of them by 4e5 Gb/s links, ended in HiGHS's "Unknown" status (and bounds 0 and 47,059)
#: when solved as given, and exactly (42,105.3) at any unit from 2**5 to 2**19; capacities of
#: 100 and 1e6 failed the same way, 1,000 and 1e6 did not. Centred, the ends of the widest
#: spread a solve accepts (:data:`MAX_CAPACITY_SPREAD`) lie within 3.2e4 of one.
CENTRED_SPREAD = 1e3
#: Largest ratio of the largest to the smallest capacity a solve accepts: double precision
#: holds 16 digits, and the solvers' tolerances need about 7 of them.
MAX_CAPACITY_SPREAD = 1e9


def capacity_unit(capacity: np.ndarray) -> float:
    """The power of two that capacities are divided by for a solve: 1.0 when their median
    lies in :data:`PLAIN_RANGE`, else near the median; near the geometric middle of the
    smallest and largest when they are more than :data:`CENTRED_SPREAD` apart.

    >>> capacity_unit(np.array([1.0, 4e5, 4e5]))   # the middle, 632, is about 2**9
    512.0
    """
    if not len(capacity):
        return 1.0
    low, high = float(np.min(capacity)), float(np.max(capacity))
    if low > 0 and high > CENTRED_SPREAD * low:
        return float(2.0 ** round(0.5 * (math.log2(low) + math.log2(high))))
    median = float(np.median(capacity))
    if PLAIN_RANGE[0] <= median <= PLAIN_RANGE[1]:
        return 1.0
    return float(2.0 ** round(math.log2(median)))


def check_capacity_spread(who: str, ga: GraphArrays, name: str = "") -> None:
    """Raise :class:`~fabricopt.InvalidFabricError` when the capacities span more orders of
    magnitude than a solve can keep apart (:data:`MAX_CAPACITY_SPREAD`), naming both ends."""
    if not len(ga.capacity):
        return
    low, high = int(np.argmin(ga.capacity)), int(np.argmax(ga.capacity))
    if ga.capacity[high] > MAX_CAPACITY_SPREAD * ga.capacity[low]:
        raise InvalidFabricError(
            f"{who}(): fabric {name!r} has capacities from {ga.capacity[low]:g} "
            f"(arc {ga.arcs[low][0]!r}->{ga.arcs[low][1]!r}) to {ga.capacity[high]:g} "
            f"(arc {ga.arcs[high][0]!r}->{ga.arcs[high][1]!r}), more than "
            f"{MAX_CAPACITY_SPREAD:g} apart; a solve cannot tell them apart to its tolerance "
            "(are some capacities in bit/s and others in Gb/s?)")


def in_units(ga: GraphArrays, unit: float) -> GraphArrays:
    """``ga`` with every capacity divided by ``unit`` (``ga`` itself when ``unit`` is 1)."""
    return ga if unit == 1.0 else replace(ga, capacity=ga.capacity / unit)


def theta_scale(fab: Any, traffic: Traffic, ga: GraphArrays | None = None) -> float:
    """A power of two near the injection bound on theta (each endpoint's capacity over what
    it sends), used to solve for a theta of order one."""
    ga = ga or GraphArrays.from_fabric(fab)
    injection = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    out = traffic.out_gbps()
    # An endpoint with no link out (cut off) sends nothing at any theta > 0: its ratio is 0
    # and would leave the demands unscaled, which beside capacities in another unit (bit/s,
    # 1/2**39 of a Gb/s once divided) falls under the solver's smallest coefficient, so it
    # drops them and calls the LP unbounded. The distance bound proves theta = 0 there.
    # On arrays (a ratio per endpoint in Python was half a second at 524,288 GPUs): the same
    # float divisions, so the same minimum.
    sent = np.fromiter(out.values(), dtype=float, count=len(out))
    can = injection[np.fromiter(map(ga.index.__getitem__, out), dtype=np.int64, count=len(out))]
    keep = (sent > 0) & (can > 0)
    if keep.any():
        est = float(np.min(can[keep] / sent[keep]))
    else:  # nothing can be sent: demands of order one in solve units all the same
        est = capacity_unit(ga.capacity) / max([d for d in out.values() if d > 0], default=1.0)
    if not (est > 0 and math.isfinite(est)):
        return 1.0
    return float(2.0 ** round(math.log2(est)))


def solve_units(fab: Any, traffic: Traffic, ga: GraphArrays
                ) -> tuple[float, float, Traffic, GraphArrays]:
    """``(theta scale, capacity unit, traffic, arrays)`` in the units a solve uses."""
    scale = theta_scale(fab, traffic, ga)
    unit = capacity_unit(ga.capacity)
    scaled = traffic.scaled(scale / unit) if scale != unit else traffic
    return scale, unit, scaled, in_units(ga, unit)


__all__ = ["CENTRED_SPREAD", "MAX_CAPACITY_SPREAD", "PLAIN_RANGE", "capacity_unit",
           "check_capacity_spread", "in_units", "solve_units", "theta_scale"]
