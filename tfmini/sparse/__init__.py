"""tf.sparse and tf.sparse.SparseTensor (see sparse_tensor.py).

Importing this package registers the sparse handlers of the public ops
(Note [Composite dispatch] in tfmini/composite_tensor.py). tf.sparse.mask
is not here: it takes tf.IndexedSlices, which tfmini does not have."""
from .. import composite_tensor as _ct
from . import sparse_ops as _ops
from .sparse_ops import (add, concat, eye, from_dense, map_values,  # noqa
                         reduce_max, reduce_sum, reorder, reshape,
                         retain, slice,  # noqa: A004
                         sparse_dense_matmul, to_dense, transpose)
from .sparse_tensor import SparseTensor, SparseTensorSpec  # noqa: F401

__all__ = ["SparseTensor", "add", "concat", "eye", "from_dense",
           "map_values", "reduce_max", "reduce_sum", "reorder", "reshape",
           "retain", "slice",
           "sparse_dense_matmul", "to_dense", "transpose"]

matmul = sparse_dense_matmul

_ct.register(_ops.UNARY, SparseTensor, _ops.unary)
_ct.register(["multiply"], SparseTensor,
             lambda orig, n: _ops.binary_dispatch(_ops.mul))
_ct.register(["divide", "truediv"], SparseTensor,
             lambda orig, n: _ops.binary_dispatch(_ops.div))

SparseTensor.__mul__ = lambda self, other: _ops.mul(self, other)
SparseTensor.__rmul__ = lambda self, other: _ops.mul(self, other)
SparseTensor.__truediv__ = lambda self, other: _ops.div(self, other)
# As in TF, no + or unary -: tf.sparse.add and tf.math.negative do those.
