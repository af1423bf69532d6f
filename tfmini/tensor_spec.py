"""tf.TensorSpec: a dtype and a (possibly partial) shape. tf.function
keys its input_signature and traces by them; the C key walker knows the
class (csrc/python/function_shared.h's spec_type)."""
from . import dtypes as _dtypes
from ._tensor import Tensor
from .tensor_shape import TensorShape

__all__ = ["TensorSpec"]


class TensorSpec:
    """tf.TensorSpec(shape, dtype=tf.float32, name=None): describes a
    tensor; None dims match any size, shape=None any shape. (Graphs know
    every rank: a tf.function traces an unknown-rank spec once per rank
    it is called with.)"""

    __slots__ = ("_shape", "_dtype", "_name", "_dims", "_dtype_enum",
                 "__weakref__")

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        shape = TensorShape(shape) if not isinstance(shape, TensorShape) \
            else shape
        self._shape = shape
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name
        self._dims = None if shape.rank is None else tuple(shape.as_list())
        self._dtype_enum = self._dtype._enum

    @classmethod
    def from_tensor(cls, tensor, name=None):
        if hasattr(tensor, "_as_tensor") and not isinstance(tensor, Tensor):
            tensor = tensor._as_tensor()
        return cls(tensor.shape, tensor.dtype, name)

    @classmethod
    def from_spec(cls, spec, name=None):
        return cls(spec.shape, spec.dtype, name if name else spec.name)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, other):
        if isinstance(other, TensorSpec):
            return (self._dtype == other.dtype and
                    self._shape.is_compatible_with(other.shape))
        if isinstance(other, Tensor):
            return (self._dtype == other.dtype and
                    self._shape.is_compatible_with(other.shape))
        return False

    def is_subtype_of(self, other):
        """Every tensor this spec matches, other matches too."""
        if not isinstance(other, TensorSpec) or self._dtype != other.dtype:
            return False
        if other._dims is None:
            return True
        if self._dims is None or len(self._dims) != len(other._dims):
            return False
        return all(o is None or s == o
                   for s, o in zip(self._dims, other._dims))

    def most_specific_common_supertype(self, others):
        if self._dims is None:
            return None
        dims = list(self._dims)
        for o in others:
            if (not isinstance(o, TensorSpec) or o.dtype != self._dtype or
                    o._dims is None or len(o._dims) != len(dims)):
                return None
            dims = [a if a == b else None for a, b in zip(dims, o._dims)]
        return TensorSpec(dims, self._dtype)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and
                self._dtype == other._dtype and self._dims == other._dims
                and self._name == other._name)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._dims, self._dtype._enum, self._name))

    def __repr__(self):
        return (f"TensorSpec(shape={self._shape}, dtype=tf.{self._dtype.name}"
                f", name={self._name!r})")

    def __reduce__(self):
        return TensorSpec, (self._dims, self._dtype, self._name)
