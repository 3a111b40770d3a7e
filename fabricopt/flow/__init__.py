"""Max-concurrent-flow: formulation, backends, symmetry, certificates.

See :func:`max_concurrent_flow` for the front end; :func:`build_flow_lp`,
:func:`solve_flow_model` and :func:`export_mps` for the steps.
"""

from .api import (
    MAX_AUTO_NONZEROS,
    cheap_bracket,
    max_concurrent_flow,
    solve_flow_model,
    solve_symmetric,
    symmetric_applicable,
)
from .backends import BACKENDS, export_mps, solve_lp
from .check import CertificateCheck, check_certificate
from .formulation import FlowModel, build_flow_lp
from .lp import STATUSES, LinearProgram, LPSolution
from .result import FlowResult, TierUtilization
from .symmetric import build_symmetric_lp
from .valiant import ValiantBound, best_hub_level, hub_levels, hub_nodes, valiant_rate

__all__ = [
    "BACKENDS", "CertificateCheck", "MAX_AUTO_NONZEROS", "STATUSES", "FlowModel",
    "FlowResult", "LPSolution", "check_certificate",
    "LinearProgram", "TierUtilization", "build_flow_lp", "build_symmetric_lp",
    "cheap_bracket", "export_mps", "max_concurrent_flow", "solve_flow_model", "solve_lp",
    "solve_symmetric", "symmetric_applicable", "ValiantBound", "best_hub_level", "hub_levels",
    "hub_nodes", "valiant_rate",
]
