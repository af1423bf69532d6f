"""tf.random: gathered from the op families (tfmini/ops/__init__.py)."""
from .ops import namespace as _namespace

globals().update(_namespace("random"))

from .ops.random_ops import experimental  # noqa: E402,F401
