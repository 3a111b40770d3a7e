"""Collective bounds in the nccl-tests vocabulary (algbw, busbw): all-reduce, all-gather,
reduce-scatter, all-to-all and broadcast, with in-network reduction, latency and the calibrated
expected figure; the all-reduce bound as a metric of a failure distribution.
"""

from .bounds import collective_bounds
from .curve import collective_curve, hierarchical_all_reduce_time
from .failure_metric import all_reduce_metric
from .latency import LatencyModel
from .results import COLLECTIVES, CollectiveBounds

__all__ = ["COLLECTIVES", "CollectiveBounds", "LatencyModel", "all_reduce_metric",
           "collective_bounds",
           "collective_curve", "hierarchical_all_reduce_time"]
