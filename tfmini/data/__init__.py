"""tf.data: input pipelines (Dataset) for training loops and Keras fit."""
from . import csv_dataset as _csv
from . import sampling as _sampling
from . import tf_names as _tf_names
from .dataset import AUTOTUNE, Dataset, experimental  # noqa: F401
from .dataset import _Slices
from .readers import TextLineDataset, TFRecordDataset  # noqa: F401
from .readers import from_generator as _from_generator
from .transforms import DatasetSpec  # noqa: F401
from . import options as _options
from .options import Options, ThreadingOptions  # noqa: F401

Dataset.from_generator = staticmethod(_from_generator)
for _f in ("sample_from_datasets", "choose_from_datasets", "list_files"):
    setattr(Dataset, _f, staticmethod(getattr(_sampling, _f)))
experimental.CsvDataset = _csv.CsvDataset
experimental.make_csv_dataset = staticmethod(_csv.make_csv_dataset)
for _name in ("AutoShardPolicy", "AutotuneOptions", "DistributeOptions",
              "ExternalStatePolicy", "OptimizationOptions",
              "ThreadingOptions"):
    setattr(experimental, _name, getattr(_options, _name))
# Last: the sources and transformations above get TF's class names.
_tf_names.tag_methods(Dataset)
_tf_names.tag_methods(_Slices)
