"""Analyses built on the flow engine: bisection and cuts, the worst-case permutation,
failures (random, sweeps, risk groups) and capacity planning.
"""

from .bisection import BisectionResult, bisection_bandwidth
from .capacity import CapacityPlan, plan_capacity
from .failure_distribution import FailureDistribution, FailureOutcome, failure_distribution
from .failure_models import (
    EverySingle,
    FailureModel,
    GroupFailures,
    Independent,
    Mixture,
    groups_by,
    nest_groups,
)
from .failure_study import failure_metrics, survives_single_failure
from .failures import (
    FailureSweep,
    FailureTrial,
    FractionSummary,
    RiskGroup,
    fail_random,
    failure_sweep,
    risk_groups,
)
from .single_failures import (
    CuttingSet,
    FailureOrbit,
    FailureTable,
    criticality,
    cutting_set,
    single_failures,
)
from .worst_case import WorstCasePermutation, tub_upper_bound, worst_case_permutation

__all__ = ["BisectionResult", "CapacityPlan", "FailureSweep", "FailureTrial", "FractionSummary",
    "RiskGroup", "WorstCasePermutation", "bisection_bandwidth", "fail_random", "failure_sweep",
    "plan_capacity", "risk_groups", "tub_upper_bound", "worst_case_permutation",
    "CuttingSet", "FailureOrbit", "FailureTable", "criticality", "cutting_set",
    "single_failures", "EverySingle", "FailureDistribution", "FailureModel", "FailureOutcome",
    "GroupFailures", "Independent", "Mixture", "failure_distribution", "groups_by",
    "nest_groups", "failure_metrics", "survives_single_failure"]
