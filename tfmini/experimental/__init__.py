"""tf.experimental: dlpack, numpy."""
from . import dlpack  # noqa: F401
from . import numpy  # noqa: F401
from ..ragged.dynamic_ragged_shape import (  # noqa: F401
    DynamicRaggedShape, RowPartition)
