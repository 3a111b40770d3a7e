"""Training and serving jobs on a fabric: step time, tokens per second, MFU and cost per
token from certified communication bounds (``docs/workload.md``)."""

from .cost import TokenCost, token_cost
from .goodput import Goodput, training_goodput, young_daly_interval
from .job_failures import (
    JobFailureOrbit,
    JobFailureTable,
    criticality,
    job_failures,
    single_failures,
)
from .job_sweep import JobFailureSweep, failure_sweep, job_failure_sweep
from .metrics import training_metrics
from .models import MODELS, ModelConfig, model, models
from .plan import TrainingJob
from .plan_search import BestPlan, PlanSearch, best_plan
from .reliability import FailureRates
from .serving import ServingEstimate, serving_estimate
from .serving_capacity import ServingCapacity, ServingLoad, serving_capacity, simulate_serving
from .serving_failures import ServingFailureOrbit, ServingFailureTable, ServingJob
from .serving_replica import ServingPlan
from .step import PhaseTime, TrainingStep, training_step

__all__ = ["MODELS", "BestPlan", "FailureRates", "Goodput", "JobFailureOrbit",
           "JobFailureSweep",
           "JobFailureTable", "ModelConfig", "PhaseTime", "PlanSearch", "ServingCapacity",
           "ServingEstimate", "ServingLoad", "ServingPlan", "serving_capacity",
           "ServingFailureOrbit", "ServingFailureTable", "ServingJob",
           "simulate_serving",
           "TokenCost", "TrainingJob", "TrainingStep", "best_plan", "criticality",
           "failure_sweep", "job_failure_sweep",
           "job_failures", "model", "models", "serving_estimate", "single_failures",
           "token_cost", "training_goodput", "training_metrics", "training_step",
           "young_daly_interval"]
