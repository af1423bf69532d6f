"""tf.experimental: dlpack."""
from . import dlpack  # noqa: F401
