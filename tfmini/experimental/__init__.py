"""tf.experimental: dlpack, numpy."""
from . import dlpack  # noqa: F401
from . import numpy  # noqa: F401
