"""tf.sparse.SparseTensor and tf.SparseTensorSpec.

A SparseTensor is indices (int64 [N, rank]), values ([N]) and dense_shape
(int64 [rank]); the entries not listed are zero. Ops move values with
core ops (gather, segment sums, scatter), so gradients reach values and
dense operands; index bookkeeping that only reorders or filters runs in
NumPy on eager indices."""
import numpy as np

from .. import dtypes as _dtypes
from .. import composite_tensor as _ct
from ..composite_tensor import CompositeTensor, TypeSpec
from ..ops import constant_op as _C
from ..tensor_shape import TensorShape
from ..tensor_spec import TensorSpec
from .._tensor import Tensor

__all__ = ["SparseTensor", "SparseTensorSpec"]


def _int64(x, what):
    if isinstance(x, Tensor):
        if x.dtype != _dtypes.int64:
            raise TypeError(f"SparseTensor: {what} must be int64, got "
                            f"{x.dtype.name}")
        return x
    a = np.asarray(x)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"SparseTensor: {what} must be integers, got "
                        f"{a.dtype}")
    return _C.constant(a.astype(np.int64))


class SparseTensor(CompositeTensor):
    """SparseTensor(indices, values, dense_shape)."""

    __slots__ = ("_indices", "_values", "_dense_shape", "__weakref__")

    def __init__(self, indices, values, dense_shape):
        if not _ct.dispatch_installed:
            _ct.ensure_dispatch()       # Note [Composite dispatch]
        self._indices = _int64(indices, "indices")
        self._values = values if isinstance(values, Tensor) else \
            _C.convert_to_tensor(values)
        self._dense_shape = _int64(dense_shape, "dense_shape")
        ir, vr = self._indices.shape, self._values.shape
        sr = self._dense_shape.shape
        if ir.rank != 2 or vr.rank != 1 or sr.rank != 1:
            raise ValueError(
                f"SparseTensor: indices must be a matrix, values a vector "
                f"and dense_shape a vector; got shapes {ir}, {vr} and {sr}")
        if not ir.is_compatible_with([vr[0], sr[0]]):
            raise ValueError(
                f"SparseTensor: indices of shape {ir} do not match values "
                f"of shape {vr} and dense_shape of shape {sr} (want "
                f"[{vr[0]}, {sr[0]}])")

    @classmethod
    def from_value(cls, value):
        return value

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        if not self._dense_shape._symbolic:
            return TensorShape([int(d) for d in self._dense_shape.numpy()])
        return TensorShape([None] * (self._dense_shape.shape[0] or 0))

    def get_shape(self):
        return self.shape

    def with_values(self, new_values):
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def _static_shape(self):
        """dense_shape as Python ints (eager), else an error naming op."""
        if self._dense_shape._symbolic:
            return None
        return [int(d) for d in self._dense_shape.numpy()]

    # ---- composite -------------------------------------------------
    @property
    def _type_spec(self):
        return SparseTensorSpec(self.shape, self.dtype)

    def _to_components(self):
        return [self._indices, self._values, self._dense_shape]

    def _key_components(self):
        """tf.function's components: the shape as Python ints when
        known, so that it stays static in the trace (as TF's spec
        keeps it)."""
        shape = self._static_shape()
        return [self._indices, self._values,
                tuple(shape) if shape is not None else self._dense_shape]

    @classmethod
    def _from_components(cls, components):
        ind, val, shape = components
        if isinstance(shape, tuple):
            shape = _C.constant(np.array(shape, np.int64).reshape(-1))
        return cls(ind, val, shape)

    @staticmethod
    def _spec_from_components(specs):
        shape = specs[2]
        if isinstance(shape, tuple):
            return SparseTensorSpec(list(shape), specs[1].dtype)
        return SparseTensorSpec([None] * (shape.shape[0] or 0),
                                specs[1].dtype)

    def _batch_item(self, i):
        from .sparse_ops import batch_rows
        return batch_rows(self, i)

    def _batch_slice(self, start, stop):
        from .sparse_ops import batch_rows
        return batch_rows(self, start, stop)

    # ---- text ------------------------------------------------------
    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!s}, values="
                f"{self._values!s}, dense_shape={self._dense_shape!s})")

    __str__ = __repr__

    def __hash__(self):
        raise TypeError("SparseTensor is unhashable.")

    def __bool__(self):
        raise TypeError("SparseTensor may not be used as a boolean.")

    def __reduce__(self):
        return SparseTensor, (self._indices.numpy(), self._values.numpy(),
                              self._dense_shape.numpy())


class SparseTensorSpec(TypeSpec):
    """SparseTensorSpec(shape=None, dtype=tf.float32)."""

    __slots__ = ("_shape", "_dtype", "__weakref__")

    def __init__(self, shape=None, dtype=_dtypes.float32):
        self._shape = TensorShape(shape)
        if self._shape.rank is None:
            raise ValueError("tfmini's SparseTensorSpec needs a shape of "
                             "known rank")
        self._dtype = _dtypes.as_dtype(dtype)

    @property
    def value_type(self):
        return SparseTensor

    @classmethod
    def from_value(cls, value):
        return value._type_spec

    @property
    def _component_specs(self):
        r = self._shape.rank
        return [TensorSpec([None, r], _dtypes.int64),
                TensorSpec([None], self._dtype),
                TensorSpec([r], _dtypes.int64)]

    def _key_components(self):
        ind, val, shape = self._component_specs
        if self._shape.is_fully_defined():
            shape = tuple(self._shape.as_list())
        return [ind, val, shape]

    def _from_components(self, components):
        return SparseTensor._from_components(components)

    def is_compatible_with(self, other):
        if isinstance(other, SparseTensor):
            other = other._type_spec
        return (isinstance(other, SparseTensorSpec)
                and self._dtype == other._dtype
                and self._shape.is_compatible_with(other._shape))

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and \
            self._shape._dims == other._shape._dims and \
            self._dtype == other._dtype

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._shape._dims, self._dtype))

    def __repr__(self):
        return (f"SparseTensorSpec({self._shape!r}, "
                f"tf.{self._dtype.name})")
