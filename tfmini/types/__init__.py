"""tf.types: the public base types (tf.types.experimental)."""
from . import experimental  # noqa: F401
