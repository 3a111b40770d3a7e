"""Routing as deployed: ECMP, WCMP, per-flow hashing and static tables beside the optimum.

:func:`routed_flow` is the front end; :mod:`~fabricopt.routing.networks` decides which part of
the fabric carries a pair, :mod:`~fabricopt.routing.fluid` routes destination-based splits,
:mod:`~fabricopt.routing.hashing` pins flows to paths, and
:mod:`~fabricopt.routing.schedules` turns collective schedules into traffic.
"""

from .api import ROUTINGS, routed_flow
from .result import RoutedFlowResult
from .schedules import (
    RoutedCollective,
    rank_order,
    ring_traffic,
    routed_collective,
    tree_traffic,
)

__all__ = ["ROUTINGS", "RoutedCollective", "RoutedFlowResult",
           "rank_order", "ring_traffic", "routed_collective", "routed_flow", "tree_traffic"]
