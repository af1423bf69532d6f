"""tf.experimental.DynamicRaggedShape and RowPartition: the shape of a
ragged tensor, as tf.shape(ragged) gives it, and what tf.reshape,
tf.zeros, tf.ones and tf.fill build from it.

A shape is a list of row partitions (one per ragged or uniform outer
dimension) and the dense shape of the flat values. Eager only: the row
lengths are read as numbers, since the repr and indexing need them."""
import numpy as np

from .. import dtypes as _dtypes
from ..ops import constant_op as _C

__all__ = ["DynamicRaggedShape", "RowPartition"]


def _ints(x, what):
    if getattr(x, "_symbolic", False):
        raise NotImplementedError(
            f"{what}: tfmini builds ragged shapes eagerly only; got a "
            f"symbolic tensor")
    a = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what}: expected integers, got {a.dtype}")
    return a.astype(np.int64).reshape(-1)


class RowPartition:
    """How a dimension splits the next one into rows: row_splits, plus
    the row length when every row has it (a uniform dimension)."""

    def __init__(self, row_splits, uniform_row_length=None):
        self._splits = row_splits
        self._uniform = uniform_row_length

    @classmethod
    def from_row_lengths(cls, row_lengths, validate=True,
                         dtype=None, dtype_hint=None):
        lengths = _ints(row_lengths, "RowPartition.from_row_lengths")
        if validate and (lengths < 0).any():
            raise ValueError(f"RowPartition.from_row_lengths: row_lengths "
                             f"must be >= 0, got {lengths.tolist()}")
        return cls(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))

    @classmethod
    def from_row_splits(cls, row_splits, validate=True,
                        dtype=None, dtype_hint=None):
        splits = _ints(row_splits, "RowPartition.from_row_splits")
        if validate and (splits.size == 0 or splits[0] != 0 or
                         (np.diff(splits) < 0).any()):
            raise ValueError(f"RowPartition.from_row_splits: row_splits "
                             f"must start at 0 and not decrease, got "
                             f"{splits.tolist()}")
        return cls(splits)

    @classmethod
    def from_uniform_row_length(cls, uniform_row_length, nvals, nrows=None,
                                validate=True, dtype=None, dtype_hint=None):
        length = int(_ints(uniform_row_length, "from_uniform_row_length")[0])
        nvals = int(_ints(nvals, "from_uniform_row_length")[0])
        if nrows is None:
            nrows = nvals // length if length else 0
        nrows = int(_ints(nrows, "from_uniform_row_length")[0])
        if validate and length * nrows != nvals:
            raise ValueError(f"RowPartition.from_uniform_row_length: "
                             f"{nrows} rows of {length} are not {nvals} "
                             f"values")
        return cls(np.arange(nrows + 1, dtype=np.int64) * length, length)

    def nrows(self):
        return _C.constant(np.int64(self._splits.size - 1))

    def nvals(self):
        return _C.constant(np.int64(self._splits[-1]))

    def row_splits(self):
        return _C.constant(self._splits)

    def row_lengths(self):
        return _C.constant(np.diff(self._splits))

    def uniform_row_length(self):
        return None if self._uniform is None else \
            _C.constant(np.int64(self._uniform))

    def is_uniform(self):
        return self._uniform is not None

    def __repr__(self):
        return (f"tf.RowPartition(row_splits={self._splits.tolist()}"
                + ("" if self._uniform is None else
                   f", uniform_row_length={self._uniform}") + ")")


class DynamicRaggedShape:
    """The shape of a ragged (or dense) tensor: its row partitions, then
    the dense shape of its flat values (inner_shape)."""

    def __init__(self, row_partitions, inner_shape, dtype=None,
                 validate=True, static_inner_shape=None):
        self._partitions = list(row_partitions)
        self._inner = _ints(inner_shape, "DynamicRaggedShape")
        self._dtype = _dtypes.as_dtype(dtype or _dtypes.int64)
        if validate:
            for outer, inner in zip(self._partitions,
                                    self._partitions[1:]):
                if outer._splits[-1] != inner._splits.size - 1:
                    raise ValueError(
                        f"DynamicRaggedShape: a partition with "
                        f"{outer._splits[-1]} values is followed by one "
                        f"with {inner._splits.size - 1} rows")
            if self._partitions and (
                    self._inner.size == 0 or
                    self._partitions[-1]._splits[-1] != self._inner[0]):
                raise ValueError(
                    f"DynamicRaggedShape: the last partition has "
                    f"{self._partitions[-1]._splits[-1]} values but "
                    f"inner_shape is {self._inner.tolist()}")

    @classmethod
    def from_lengths(cls, lengths, num_row_partitions=None,
                     dtype=_dtypes.int64):
        """From [nrows, then per dimension an int (uniform) or a tuple
        of row lengths (ragged)]. The partitions run to the last ragged
        dimension unless num_row_partitions says otherwise."""
        lengths = list(lengths)
        if not lengths:
            return cls([], [], dtype)
        if isinstance(lengths[0], (tuple, list)):
            raise ValueError("DynamicRaggedShape.from_lengths: the first "
                             "length must be an int (the number of rows)")
        if num_row_partitions is None:
            ragged = [i for i, x in enumerate(lengths)
                      if isinstance(x, (tuple, list))]
            num_row_partitions = ragged[-1] if ragged else 0
        parts = []
        nrows = int(lengths[0])
        for x in lengths[1:num_row_partitions + 1]:
            if isinstance(x, (tuple, list)):
                if len(x) != nrows:
                    raise ValueError(
                        f"DynamicRaggedShape.from_lengths: {len(x)} row "
                        f"lengths for {nrows} rows")
                p = RowPartition.from_row_lengths(list(x))
            else:
                p = RowPartition.from_uniform_row_length(x, nrows * int(x),
                                                         nrows)
            parts.append(p)
            nrows = int(p._splits[-1])
        inner = [nrows] + [int(x) for x in lengths[num_row_partitions + 1:]]
        return cls(parts, inner, dtype)

    @classmethod
    def _of(cls, rt, dtype):
        from .ragged_tensor import RaggedTensor
        parts = []
        while isinstance(rt, RaggedTensor):
            u = getattr(rt, "_uniform_row_length", None)
            parts.append(RowPartition(
                _ints(rt.row_splits, "tf.shape"),
                None if u is None else int(_ints(u, "tf.shape")[0])))
            rt = rt.values
        return cls(parts, [int(d) for d in rt.shape], dtype)

    @property
    def dtype(self):
        return self._dtype

    @property
    def num_row_partitions(self):
        return len(self._partitions)

    @property
    def row_partitions(self):
        return tuple(self._partitions)

    @property
    def inner_shape(self):
        return _C.constant(self._inner.astype(self._dtype.as_numpy_dtype))

    @property
    def rank(self):
        return self.num_row_partitions + self._inner.size

    def _lengths(self):
        if not self._partitions:
            return [int(d) for d in self._inner]
        out = [int(self._partitions[0]._splits.size - 1)]
        for p in self._partitions:
            out.append(int(p._uniform) if p._uniform is not None
                       else tuple(int(n) for n in np.diff(p._splits)))
        return out + [int(d) for d in self._inner[1:]]

    def __len__(self):
        return self.rank

    def __getitem__(self, index):
        lengths = self._lengths()
        if isinstance(index, slice):
            if index.step not in (None, 1) or (index.start or 0) != 0:
                raise ValueError("DynamicRaggedShape: only slices [:k] "
                                 "are supported")
            kept = lengths[index]
            n = max([i for i, x in enumerate(kept)
                     if isinstance(x, tuple)], default=0)
            n = min(n, self.num_row_partitions)
            return DynamicRaggedShape.from_lengths(kept, n, self._dtype)
        i = int(index)
        if i < 0:
            i += len(lengths)
        if not 0 <= i < len(lengths):
            raise IndexError(f"Index {index} out of range for a shape of "
                             f"rank {len(lengths)}")
        if isinstance(lengths[i], tuple):
            raise ValueError(f"Index {index} is not uniform")
        return _C.constant(np.asarray(lengths[i],
                                      self._dtype.as_numpy_dtype))

    def _build(self, flat):
        """A ragged tensor of this shape around flat (its inner_shape)."""
        from .ragged_tensor import RaggedTensor
        from ..ops import array_ops
        out = array_ops.reshape(flat, self._inner.tolist())
        for p in reversed(self._partitions):
            if p._uniform is not None:
                out = RaggedTensor.from_uniform_row_length(
                    out, p._uniform, nrows=p._splits.size - 1)
            else:
                out = RaggedTensor.from_row_splits(
                    out, _C.constant(p._splits), validate=False)
        return out

    def _num_values(self):
        return int(np.prod(self._inner)) if self._inner.size else 1

    def __repr__(self):
        return (f"<DynamicRaggedShape lengths={self._lengths()} "
                f"num_row_partitions={self.num_row_partitions}>")


def register(register_fn):
    """tf.shape of a ragged tensor, and tf.reshape/zeros/ones/fill of a
    DynamicRaggedShape (Note [Composite dispatch])."""
    from .ragged_tensor import RaggedTensor
    from ..ops import array_ops

    def shape_of(orig, name):
        def f(input, out_type=None, name=None):
            return DynamicRaggedShape._of(input, out_type or _dtypes.int32)
        return f

    def reshape(orig, name):
        def f(tensor, shape, name=None):
            if not isinstance(shape, DynamicRaggedShape):
                return orig(tensor, shape)
            return shape._build(array_ops.reshape(tensor, [-1]))
        return f

    def filled(value):
        def make(orig, name):
            def f(shape, dtype=_dtypes.float32, name=None, layout=None):
                flat = array_ops.fill([shape._num_values()],
                                      _C.constant(value, dtype))
                return shape._build(flat)
            return f
        return make

    def fill(orig, name):
        def f(dims, value, name=None, layout=None):
            flat = array_ops.fill([dims._num_values()],
                                  _C.convert_to_tensor(value))
            return dims._build(flat)
        return f

    register_fn(["shape"], RaggedTensor, shape_of)
    register_fn(["reshape"], DynamicRaggedShape, reshape)
    register_fn(["zeros"], DynamicRaggedShape, filled(0))
    register_fn(["ones"], DynamicRaggedShape, filled(1))
    register_fn(["fill"], DynamicRaggedShape, fill)
