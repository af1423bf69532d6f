"""tf.data: input pipelines (Dataset) for training loops and Keras fit."""
from .dataset import AUTOTUNE, Dataset, experimental  # noqa: F401
