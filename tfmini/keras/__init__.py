"""tfmini.keras (also tf.keras): layers, models, training, in Keras'
names and behaviour, over tfmini ops."""
from . import backend  # noqa: F401
from . import activations, constraints, initializers, regularizers  # noqa
from . import layers, losses, metrics, optimizers  # noqa: F401
from . import callbacks, saving, utils  # noqa: F401
from . import datasets  # noqa: F401
from . import mixed_precision  # noqa: F401
from .layers import Input, InputLayer, Layer  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .variables import KerasVariable as Variable  # noqa: F401
from . import models  # noqa: F401
