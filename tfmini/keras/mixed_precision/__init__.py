"""keras.mixed_precision: dtype policies and loss scaling."""
from ..optimizers.loss_scale_optimizer import LossScaleOptimizer  # noqa
from .policy import (DTypePolicy, FloatDTypePolicy, Policy,  # noqa: F401
                     dtype_policy, global_policy, set_dtype_policy,
                     set_global_policy)
