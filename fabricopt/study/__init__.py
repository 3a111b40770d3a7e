"""Studies of many designs on one core: :func:`~fabricopt.compare` evaluates a batch of designs
into one table, :func:`~fabricopt.optimize` searches a design space for the cheapest that meets
constraints; both share the metric registry, the executor and the Pareto front.
"""

from .compare import Comparison, compare
from .optimize import OptimizeResult, optimize
from .pareto import pareto_front

__all__ = ["Comparison", "OptimizeResult", "compare", "optimize", "pareto_front"]
