"""Analyses built on the flow engine: bisection and cuts, the worst-case permutation,
capacity planning, group flows and paths. Failures are a floor of their own
(:mod:`fabricopt.failures`).
"""

from .bisection import BisectionResult, bisection_bandwidth
from .capacity import CapacityPlan, plan_capacity
from .worst_case import WorstCasePermutation, tub_upper_bound, worst_case_permutation

__all__ = ["BisectionResult", "CapacityPlan", "WorstCasePermutation", "bisection_bandwidth",
           "plan_capacity", "tub_upper_bound", "worst_case_permutation"]
