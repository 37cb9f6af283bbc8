"""Models, algorithms and the trainer for benchmark runs (DiagViB-6 appendix A.2)."""

from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import create_model, list_models, register_model

__all__ = ["TrainConfig", "create_model", "list_models", "register_model"]
