"""keras.utils: Progbar, get_file, to_categorical, set_random_seed."""
import random

import numpy as np

from .file_utils import get_file  # noqa: F401
from .progbar import Progbar  # noqa: F401


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for integer labels (a NumPy helper, as in Keras)."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    out = np.zeros((y.shape[0], num_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


def set_random_seed(seed):
    """Seed Python's, NumPy's and tfmini's random generators at once."""
    import tfmini as tf
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
