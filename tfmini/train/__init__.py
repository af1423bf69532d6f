"""tf.train: checkpoints of variables (see checkpoint.py)."""
from .checkpoint import (Checkpoint, CheckpointLoadStatus,  # noqa: F401
                         CheckpointReader, latest_checkpoint,
                         list_variables, load_checkpoint, load_variable)
from .checkpoint_management import CheckpointManager  # noqa: F401
from .cluster_spec import ClusterSpec  # noqa: F401

_EXAMPLE_NAMES = ("BytesList", "Example", "Feature", "FeatureList",
                  "FeatureLists", "Features", "FloatList", "Int64List",
                  "SequenceExample")


def __getattr__(name):
    # The Example classes need protobuf: load them on first use, so that
    # tfmini imports without it.
    if name in _EXAMPLE_NAMES:
        from . import example
        return getattr(example, name)
    raise AttributeError(f"module 'tfmini.train' has no attribute {name!r}")
