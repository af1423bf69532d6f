"""keras.mixed_precision: dtype policies and loss scaling."""
from ..optimizers.loss_scale_optimizer import LossScaleOptimizer
from .policy import (DTypePolicy, FloatDTypePolicy, Policy, dtype_policy,
                     global_policy, set_dtype_policy, set_global_policy)

__all__ = ["DTypePolicy", "FloatDTypePolicy", "LossScaleOptimizer",
           "Policy", "dtype_policy", "global_policy", "set_dtype_policy",
           "set_global_policy"]
