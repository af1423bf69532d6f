"""keras.optimizers."""
from . import schedules  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .lion import Lion  # noqa: F401
from .loss_scale_optimizer import LossScaleOptimizer  # noqa: F401
from .nadam import Nadam  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop,
            "adagrad": Adagrad, "nadam": Nadam, "adamax": Adamax,
            "adadelta": Adadelta, "lion": Lion}


def get(identifier):
    """An optimizer from a name ('adam'), a class or an instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"Could not interpret optimizer identifier: "
                             f"{identifier!r}. Known: {sorted(_BY_NAME)}"
                             ) from None
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    raise ValueError(f"Could not interpret optimizer identifier: "
                     f"{identifier!r}")
