"""Max-concurrent-flow: formulation, backends, symmetry, certificates.

See :func:`max_concurrent_flow` for the front end; :func:`build_flow_lp`,
:func:`solve_flow_model` and :func:`export_mps` for the steps.
"""

from .api import (
    MAX_AUTO_NONZEROS,
    cheap_bracket,
    max_concurrent_flow,
    solve_flow_model,
    symmetric_applicable,
)
from .backends import BACKENDS, export_mps, solve_lp
from .certificate import Certified, certify
from .certified import certified_result
from .check import CertificateCheck, check_certificate
from .formulation import CollapsedDemand, FlowModel, build_flow_lp
from .lp import (
    ROUTING_STATUSES,
    STATUS_MEANINGS,
    STATUSES,
    LinearProgram,
    LPSolution,
    pulp_status,
)
from .model import LiftedFlow, ThroughputModel, max_theta_lp
from .result import FlowCertificate, FlowResult, TierUtilization
from .symmetric import build_symmetric_lp
from .two_phase.rate import ValiantBound, best_hub_level, hub_levels, hub_nodes, valiant_rate

__all__ = [
    "BACKENDS", "CertificateCheck", "Certified", "CollapsedDemand", "MAX_AUTO_NONZEROS",
    "ROUTING_STATUSES", "STATUS_MEANINGS", "STATUSES", "FlowCertificate", "FlowModel",
    "FlowResult", "LPSolution", "LiftedFlow",
    "ThroughputModel", "check_certificate", "certified_result", "certify", "max_theta_lp",
    "LinearProgram", "TierUtilization", "build_flow_lp", "build_symmetric_lp",
    "cheap_bracket", "export_mps", "max_concurrent_flow", "solve_flow_model", "solve_lp",
    "symmetric_applicable", "ValiantBound", "best_hub_level", "hub_levels",
    "hub_nodes", "pulp_status", "valiant_rate",
]
