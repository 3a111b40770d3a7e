"""Training and serving jobs on a fabric: step time, tokens per second, MFU and cost per
token from certified communication bounds (``docs/workload.md``)."""

from .cost import TokenCost, token_cost
from .metrics import training_metrics
from .models import MODELS, ModelConfig, model, models
from .plan import TrainingJob
from .plan_search import BestPlan, PlanSearch, best_plan
from .serving import ServingEstimate, serving_estimate
from .step import PhaseTime, TrainingStep, training_step

__all__ = ["MODELS", "BestPlan", "ModelConfig", "PhaseTime", "PlanSearch", "ServingEstimate",
           "TokenCost", "TrainingJob", "TrainingStep", "best_plan", "model", "models",
           "serving_estimate", "token_cost", "training_metrics", "training_step"]
