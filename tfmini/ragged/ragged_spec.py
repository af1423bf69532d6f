"""tf.RaggedTensorSpec: the type of a RaggedTensor (shape with None for
ragged dims, dtype, ragged_rank, row_splits dtype). In a tf.function
input_signature it traces as placeholders for the flat values and each
row_splits (Note [Composite arguments] in function_structures.py)."""
from .. import dtypes as _dtypes
from ..composite_tensor import TypeSpec
from ..tensor_shape import TensorShape
from ..tensor_spec import TensorSpec
from .ragged_tensor import RaggedTensor

__all__ = ["RaggedTensorSpec"]


class RaggedTensorSpec(TypeSpec):
    """RaggedTensorSpec(shape=None, dtype=tf.float32, ragged_rank=None,
    row_splits_dtype=tf.int64, flat_values_spec=None)."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype",
                 "__weakref__")

    def __init__(self, shape=None, dtype=_dtypes.float32, ragged_rank=None,
                 row_splits_dtype=_dtypes.int64, flat_values_spec=None):
        if flat_values_spec is not None:
            dtype = flat_values_spec.dtype
        self._shape = TensorShape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._row_splits_dtype = _dtypes.as_dtype(row_splits_dtype)
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with "
                                 "a known rank.")
            ragged_rank = rank - 1
        if rank is not None and not 0 <= ragged_rank < max(rank, 1):
            raise ValueError(f"ragged_rank must be non-negative and less "
                             f"than the rank ({rank}), got {ragged_rank}")
        if rank is None:
            raise ValueError("tfmini's RaggedTensorSpec needs a shape of "
                             "known rank")
        self._ragged_rank = int(ragged_rank)

    @property
    def ragged_rank(self):
        return self._ragged_rank

    @property
    def row_splits_dtype(self):
        return self._row_splits_dtype

    @property
    def value_type(self):
        return RaggedTensor

    @property
    def flat_values_spec(self):
        return None

    @property
    def _component_specs(self):
        dims = self._shape.as_list()
        k = self._ragged_rank
        flat = TensorSpec([None] + dims[k + 1:], self._dtype)
        if k == 0:
            return [TensorSpec(dims, self._dtype)]
        outer = TensorSpec([None if dims[0] is None else dims[0] + 1],
                           self._row_splits_dtype)
        rest = [TensorSpec([None], self._row_splits_dtype)
                for _ in range(k - 1)]
        return [flat, outer] + rest

    def _from_components(self, components):
        if self._ragged_rank == 0:
            return components[0]
        return RaggedTensor.from_nested_row_splits(
            components[0], components[1:], validate=False)

    @classmethod
    def from_value(cls, value):
        return value._type_spec

    def is_compatible_with(self, other):
        if isinstance(other, RaggedTensor):
            other = other._type_spec
        return (isinstance(other, RaggedTensorSpec)
                and self._dtype == other._dtype
                and self._ragged_rank == other._ragged_rank
                and self._row_splits_dtype == other._row_splits_dtype
                and self._shape.is_compatible_with(other._shape))

    def _key(self):
        return (self._shape._dims, self._dtype, self._ragged_rank,
                self._row_splits_dtype)

    def __eq__(self, other):
        return isinstance(other, RaggedTensorSpec) and \
            self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"RaggedTensorSpec({self._shape!r}, "
                f"tf.{self._dtype.name}, {self._ragged_rank}, "
                f"tf.{self._row_splits_dtype.name})")
