"""tf.ragged and tf.RaggedTensor (see ragged_tensor.py).

Importing this package registers the ragged handlers of the public ops
(Note [Composite dispatch] in tfmini/composite_tensor.py); tfmini's
__init__ installs them."""
from .. import composite_tensor as _ct
from ..ops import math_ops as _M
from . import ragged_array_ops as _arr
from . import ragged_math_ops as _math
from . import ragged_string_ops as _strings
from . import dynamic_ragged_shape as _shape
from .map_fn import map_fn  # noqa: F401  (tf.map_fn)
from .ragged_factory import (constant, map_flat_values, range,  # noqa: A004
                             row_splits_to_segment_ids,
                             segment_ids_to_row_splits)
from .ragged_spec import RaggedTensorSpec
from .ragged_tensor import RaggedTensor

__all__ = ["RaggedTensor", "RaggedTensorSpec", "boolean_mask", "constant",
           "map_flat_values", "range", "row_splits_to_segment_ids",
           "segment_ids_to_row_splits", "stack"]

boolean_mask = _arr.boolean_mask


def stack(values, axis=0, name=None):
    """tf.ragged.stack: like tf.stack, for ragged or dense values."""
    return _arr.stack(values, axis)


def _register():
    R = RaggedTensor
    _ct.register(_math.BINARY, R, _math.binary)
    _ct.register(_math.UNARY, R, _math.unary)
    for name, kind in _math.REDUCTIONS.items():
        _ct.register([name], R, lambda orig, n, k=kind:
                     _math.reduce(k, orig))
    fixed = {"add_n": _math.add_n, "concat": _arr.concat,
             "stack": _arr.stack, "gather": _arr.gather,
             "where": _arr.where, "boolean_mask": _arr.boolean_mask,
             "tile": _arr.tile, "size": _math.size,
             "expand_dims": _arr.expand_dims, "reverse": _arr.reverse}
    for name, fn in fixed.items():
        _ct.register([name], R, lambda orig, n, fn=fn: fn)
    _strings.register(_ct.register)
    _shape.register(_ct.register)


_register()


# The operators, through the same handlers as tf.add & co.
def _op(name, swap=False):
    fn = _math.binary(getattr(_M, name), name)
    if swap:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


for _name, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                   ("truediv", "truediv"), ("floordiv", "floordiv"),
                   ("mod", "floormod"), ("pow", "pow"),
                   ("and", "logical_and"), ("or", "logical_or"),
                   ("xor", "logical_xor")]:
    setattr(RaggedTensor, f"__{_name}__", _op(_fn))
    setattr(RaggedTensor, f"__r{_name}__", _op(_fn, swap=True))
# As TF's: == and != compare item by item (hence no hashing).
for _name, _fn in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                   ("ge", "greater_equal"), ("eq", "equal"),
                   ("ne", "not_equal")]:
    setattr(RaggedTensor, f"__{_name}__", _op(_fn))
RaggedTensor.__neg__ = lambda self: self.with_flat_values(
    _M.negative(self.flat_values))
RaggedTensor.__abs__ = lambda self: self.with_flat_values(
    _M.abs(self.flat_values))
RaggedTensor.__invert__ = lambda self: self.with_flat_values(
    _M.logical_not(self.flat_values))
del _name, _fn
