"""fabricopt: design GPU-cluster interconnects and compute what they can carry, with proof.

>>> import fabricopt as fo
>>> fo.ring(8).summary().endpoints
8
"""

from ._version import __version__
from .analysis import (
    BisectionResult,
    CapacityPlan,
    FailureSweep,
    FailureTrial,
    FractionSummary,
    RiskGroup,
    WorstCasePermutation,
    bisection_bandwidth,
    fail_random,
    failure_sweep,
    plan_capacity,
    risk_groups,
    tub_upper_bound,
    worst_case_permutation,
)
from .collectives import (
    CollectiveBounds,
    LatencyModel,
    collective_bounds,
    collective_curve,
    hierarchical_all_reduce_time,
)
from .cost import (
    Catalog,
    CatalogError,
    CostEstimate,
    Layout,
    Policy,
    TcoEstimate,
    estimate_cost,
    estimate_tco,
)
from .errors import (
    BackendUnavailableError,
    DesignFileError,
    FabricOptError,
    InvalidFabricError,
    InvalidParameterError,
    TrafficError,
)
from .fabric import Fabric, FabricSummary, from_networkx
from .flow import (
    FlowResult,
    ValiantBound,
    build_flow_lp,
    check_certificate,
    export_mps,
    max_concurrent_flow,
    solve_flow_model,
    valiant_rate,
)
from .generators import *  # noqa: F403  (every generator; the list lives there)
from .generators import __all__ as _generator_names
from .io import load_design, read_graphml, read_json, write_graphml, write_json
from .plot import draw, plot_metric_bars, plot_pareto, plot_routing_distribution
from .routing import (
    RoutedFlowResult,
    ring_traffic,
    routed_collective,
    routed_flow,
)
from .study import Comparison, OptimizeResult, compare, optimize, pareto_front
from .symmetry import Symmetry, find_symmetry, search_symmetry, verify_symmetry
from .traffic import (
    Traffic,
    all_to_all,
    longest_matching,
    permutation,
    select_endpoints,
)

__all__ = _generator_names + [
    "BisectionResult",
    "CollectiveBounds",
    "Comparison",
    "compare",
    "bisection_bandwidth",
    "LatencyModel",
    "collective_bounds",
    "collective_curve",
    "hierarchical_all_reduce_time",
    "BackendUnavailableError",
    "Catalog",
    "CatalogError",
    "CostEstimate",
    "TcoEstimate",
    "DesignFileError",
    "Fabric",
    "FabricOptError",
    "FabricSummary",
    "FlowResult",
    "Traffic",
    "all_to_all",
    "build_flow_lp",
    "check_certificate",
    "export_mps",
    "longest_matching",
    "max_concurrent_flow",
    "pareto_front",
    "permutation",
    "plot_metric_bars",
    "plot_pareto",
    "select_endpoints",
    "solve_flow_model",
    "ValiantBound",
    "valiant_rate",
    "InvalidFabricError",
    "InvalidParameterError",
    "Layout",
    "Policy",
    "Symmetry",
    "TrafficError",
    "__version__",
    "draw",
    "estimate_cost",
    "estimate_tco",
    "from_networkx",
    "load_design",
    "CapacityPlan",
    "plan_capacity",
    "OptimizeResult",
    "optimize",
    "read_graphml",
    "read_json",
    "write_graphml",
    "verify_symmetry",
    "find_symmetry",
    "search_symmetry",
    "write_json",
    "WorstCasePermutation",
    "tub_upper_bound",
    "worst_case_permutation",
    "FailureSweep",
    "FailureTrial",
    "FractionSummary",
    "RiskGroup",
    "fail_random",
    "failure_sweep",
    "risk_groups",
    "RoutedFlowResult",
    "plot_routing_distribution",
    "ring_traffic",
    "routed_collective",
    "routed_flow",
]
