"""Training and serving jobs on a fabric: step time, tokens per second, MFU and cost per
token from certified communication bounds (``docs/workload.md``)."""

from .models import MODELS, ModelConfig, model, models
from .plan import TrainingJob
from .step import PhaseTime, TrainingStep, training_step

__all__ = ["MODELS", "ModelConfig", "PhaseTime", "TrainingJob", "TrainingStep", "model",
           "models", "training_step"]
