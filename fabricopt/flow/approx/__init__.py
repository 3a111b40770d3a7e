"""The approximate method: the flow LP solved to a certified gap without assembling it.

:func:`solve_approx` (:mod:`.solve`) picks :mod:`.frank_wolfe` (conditional gradient over
routing trees) or :mod:`.colgen` (column generation over routing trees); both build on the
runs of :mod:`.core` and neither imports the other.
"""

from .colgen import ColumnGeneration, ecmp_columns
from .core import (
    HOP_TIE_BREAK,
    STRATEGIES,
    ApproxRun,
    CoreGraph,
    check_gap,
    choose_strategy,
    default_max_rounds,
)
from .frank_wolfe import FrankWolfe
from .solve import solve_approx

__all__ = ["HOP_TIE_BREAK", "STRATEGIES", "ApproxRun", "ColumnGeneration", "CoreGraph",
           "FrankWolfe", "check_gap", "choose_strategy", "default_max_rounds", "ecmp_columns",
           "solve_approx"]
