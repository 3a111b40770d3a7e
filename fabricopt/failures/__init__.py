"""Failed fabrics: random failures and sweeps, failure models and shared-risk groups, single
failures and their orbits, distributions, the failure figures of design studies, and the
answer from the intact fabric the engine is handed as a stage (:mod:`.intact_flow`).

The floor sits above ``analysis/`` (a failure distribution reports bisection) and below the
collectives, workloads, studies and plots that ask about failures.
"""

from .distribution import FailureDistribution, FailureOutcome, failure_distribution
from .intact_flow import IntactSolves, RerouteFromIntact
from .models import (
    EverySingle,
    FailureModel,
    GroupFailures,
    Independent,
    Mixture,
    groups_by,
    nest_groups,
)
from .risk_groups import RiskGroup, risk_groups
from .single import (
    CuttingSet,
    FailureOrbit,
    FailureTable,
    criticality,
    cutting_set,
    single_failures,
)
from .study import failure_metrics, survives_single_failure
from .sweep import FailureSweep, FailureTrial, FractionSummary, fail_random, failure_sweep

__all__ = ["CuttingSet", "EverySingle", "FailureDistribution", "FailureModel", "FailureOrbit",
           "FailureOutcome", "FailureSweep", "FailureTable", "FailureTrial", "FractionSummary",
           "GroupFailures", "Independent", "IntactSolves", "Mixture", "RerouteFromIntact",
           "RiskGroup", "criticality", "cutting_set", "fail_random", "failure_distribution",
           "failure_metrics", "failure_sweep", "groups_by", "nest_groups", "risk_groups",
           "single_failures", "survives_single_failure"]
