"""tf.profiler: tfmini has no profiler (see experimental.py)."""
from . import experimental  # noqa: F401
