"""tf.strings: gathered from the op families (tfmini/ops/string_ops.py)."""
from ..ops import namespace as _namespace

globals().update(_namespace("strings"))
