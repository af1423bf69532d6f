"""tf.data: input pipelines (Dataset) for training loops and Keras fit."""
from .dataset import AUTOTUNE, Dataset, experimental  # noqa: F401
from .readers import TextLineDataset, TFRecordDataset  # noqa: F401
from .readers import from_generator as _from_generator
from .transforms import DatasetSpec  # noqa: F401

Dataset.from_generator = staticmethod(_from_generator)
