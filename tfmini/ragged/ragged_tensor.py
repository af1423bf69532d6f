"""tf.RaggedTensor: values partitioned into rows of different lengths.

A RaggedTensor is `values` (a Tensor, or a RaggedTensor for more ragged
dimensions) and `row_splits` (int64 or int32): row i is
values[row_splits[i]:row_splits[i + 1]]. Everything is computed with the
core's ops over those two tensors, so a ragged value traces into a
tf.function graph and gradients flow to its values as to any tensor.
Checks that need numbers (valid splits, equal splits of two operands)
run only on eager values; a traced graph trusts its inputs, as TF's does
with validate=False."""
import numpy as np

from .. import dtypes as _dtypes
from .. import composite_tensor as _ct
from ..composite_tensor import CompositeTensor
from ..errors import InvalidArgumentError
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import index_ops as _I
from ..ops import math_ops as _M
from ..ops import reduce_ops as _R
from ..tensor_shape import TensorShape
from .._tensor import Tensor

__all__ = ["RaggedTensor"]


def _is_eager(*ts):
    return all(not t._symbolic for t in ts)


def _to_tensor(x, dtype=None, hint=None):
    if isinstance(x, Tensor) and (dtype is None or x.dtype == dtype):
        return x
    return _C.convert_to_tensor(x, dtype=dtype, dtype_hint=hint)


def _splits_tensor(x, what):
    if isinstance(x, Tensor):
        if x.dtype not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"{what} must have dtype int32 or int64, got "
                             f"{x.dtype.name}")
        return x
    return _C.convert_to_tensor(x, dtype_hint=_dtypes.int64) \
        if not isinstance(x, (list, tuple)) or x else \
        _C.constant(np.zeros(0, np.int64))


def range_indices(starts, lengths, total=None):
    """For segments [starts[j], starts[j] + lengths[j]): the indices of
    all their elements, in order, and the splits between segments (so
    gathering by them concatenates the segments). total, the number of
    indices, must be given as a Python int while tracing (a graph cannot
    make a tensor of a computed length)."""
    dt = starts.dtype
    splits = _A.concat([_A.zeros([1], dt), _R.cumsum(lengths)], 0)
    if total is None:
        if splits._symbolic:
            raise NotImplementedError(
                "this RaggedTensor op makes a result whose size depends on "
                "the row lengths, which a traced tfmini graph cannot do; "
                "run it eagerly (outside tf.function)")
        total = splits[-1]
    iota = _A.range(total, dtype=dt)
    if splits._symbolic:
        rowids = _R.reduce_sum(_M.cast(_M.less_equal(
            splits[None, 1:], iota[:, None]), dt), axis=1)
    else:
        rowids = _I.searchsorted(splits[1:], iota, side="right",
                                 out_type=dt)
    idx = iota - _A.gather(splits, rowids) + _A.gather(starts, rowids)
    return idx, splits


class RaggedTensor(CompositeTensor):
    """A tensor with one or more ragged dimensions (rows of different
    lengths). Build one with tf.ragged.constant or the from_* factories;
    the constructor is private, as in TF."""

    __slots__ = ("_values", "_row_splits", "_uniform_row_length",
                 "__weakref__")

    def __init__(self, values, row_splits, internal=False,
                 uniform_row_length=None):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please "
                             "use one of the factory methods instead (e.g., "
                             "RaggedTensor.from_row_lengths())")
        if not _ct.dispatch_installed:
            _ct.ensure_dispatch()       # Note [Composite dispatch]
        self._values = values
        self._row_splits = row_splits
        # A Python int when every row has that length (from
        # from_uniform_row_length): .shape shows it instead of None.
        self._uniform_row_length = uniform_row_length

    # ---- factories -------------------------------------------------
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Row i is values[row_splits[i]:row_splits[i + 1]]."""
        if not isinstance(values, RaggedTensor):
            values = _to_tensor(values)
            if values.shape.rank == 0:
                raise ValueError(f"from_row_splits: values must have rank "
                                 f">= 1, got shape {values.shape}")
        row_splits = _splits_tensor(row_splits, "row_splits")
        if isinstance(values, RaggedTensor) and \
                values._row_splits.dtype != row_splits.dtype:
            raise ValueError(
                f"from_row_splits: row_splits dtype {row_splits.dtype.name} "
                f"differs from the values' row_splits dtype "
                f"{values._row_splits.dtype.name}; use "
                f"tf.ragged.constant(..., row_splits_dtype=...) or cast")
        if row_splits.shape.rank != 1:
            raise ValueError(f"from_row_splits: row_splits must be a vector, "
                             f"got shape {row_splits.shape}")
        if validate and _is_eager(row_splits):
            cls._check_splits(row_splits.numpy(), values, "from_row_splits")
        return cls(values, row_splits, internal=True)

    @staticmethod
    def _check_splits(s, values, op):
        n = _nvals_static(values)
        bad = None
        if len(s) == 0:
            bad = "row_splits must not be empty"
        elif s[0] != 0:
            bad = f"row_splits[0] must be 0, got {s[0]}"
        elif np.any(np.diff(s) < 0):
            bad = f"row_splits must be sorted in ascending order, got {s}"
        elif n is not None and s[-1] != n:
            bad = (f"row_splits[-1] ({s[-1]}) must equal the number of "
                   f"values ({n})")
        if bad:
            raise InvalidArgumentError(
                None, None, f"Arguments to {op} do not form a valid "
                f"RaggedTensor: {bad}")

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Row i has row_lengths[i] values, taken in order."""
        row_lengths = _splits_tensor(row_lengths, "row_lengths")
        if validate and _is_eager(row_lengths) and \
                np.any(row_lengths.numpy() < 0):
            raise InvalidArgumentError(
                None, None, f"Arguments to from_row_lengths do not form a "
                f"valid RaggedTensor: row_lengths must be non-negative, got "
                f"{row_lengths.numpy()}")
        splits = _A.concat([_A.zeros([1], row_lengths.dtype),
                            _R.cumsum(row_lengths)], 0)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        row_starts = _splits_tensor(row_starts, "row_starts")
        n = _nvals(values, row_starts.dtype)
        return cls.from_row_splits(
            values, _A.concat([row_starts, _A.reshape(n, [1])], 0),
            validate=validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        row_limits = _splits_tensor(row_limits, "row_limits")
        return cls.from_row_splits(
            values, _A.concat([_A.zeros([1], row_limits.dtype), row_limits],
                              0), validate=validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None,
                          validate=True):
        """values[i] goes in row value_rowids[i] (sorted ascending); nrows
        defaults to the last row id + 1."""
        rowids = _splits_tensor(value_rowids, "value_rowids")
        dt = rowids.dtype
        if validate and _is_eager(rowids):
            r = rowids.numpy()
            if np.any(np.diff(r) < 0) or (len(r) and r[0] < 0):
                raise InvalidArgumentError(
                    None, None, f"Arguments to from_value_rowids do not form "
                    f"a valid RaggedTensor: value_rowids must be sorted and "
                    f"non-negative, got {r}")
            if nrows is not None and len(r) and r[-1] >= int(nrows):
                raise InvalidArgumentError(
                    None, None, f"Arguments to from_value_rowids do not form "
                    f"a valid RaggedTensor: value_rowids ({r[-1]}) must be "
                    f"< nrows ({int(nrows)})")
        if nrows is None:
            nrows = _M.maximum(_R.reduce_max(rowids) + 1,
                               _C.constant(0, dt)) \
                if rowids.shape[0] != 0 else _C.constant(0, dt)
        nrows = _to_tensor(nrows, dt)
        # row_splits[i] = number of values whose row id is < i.
        splits = _I.searchsorted(rowids, _A.range(nrows + 1, dtype=dt),
                                 side="left", out_type=dt)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None,
                                validate=True, name=None):
        """Rows of uniform_row_length values each."""
        if not isinstance(values, RaggedTensor):
            values = _to_tensor(values)
        n = _nvals_static(values)
        length = int(uniform_row_length)
        if n is None:
            raise ValueError("from_uniform_row_length: the number of values "
                             "must be known")
        if nrows is None:
            nrows = n // length if length else 0
        if length * int(nrows) != n:
            raise InvalidArgumentError(
                None, None, f"from_uniform_row_length: {n} values do not "
                f"make {int(nrows)} rows of {length}")
        splits = _C.constant(np.arange(int(nrows) + 1, dtype=np.int64)
                             * length)
        out = cls.from_row_splits(values, splits, validate=False)
        out._uniform_row_length = length
        return out

    @classmethod
    def from_sparse(cls, st_input, name=None, row_splits_dtype=_dtypes.int64):
        """The rows of a 2-D SparseTensor whose entries are left-aligned
        in row-major order (each row's columns 0, 1, 2, ...)."""
        ind = st_input.indices
        if st_input.dense_shape.shape[0] != 2:
            raise ValueError("from_sparse: the SparseTensor must be 2-D, "
                             f"got dense_shape {st_input.dense_shape}")
        if not ind._symbolic:
            i = ind.numpy()
            rows = i[:, 0]
            ok = np.all(np.diff(rows) >= 0)
            if ok and len(i):
                starts = np.searchsorted(rows, rows, side="left")
                ok = np.array_equal(i[:, 1], np.arange(len(i)) - starts)
            if not ok:
                raise InvalidArgumentError(
                    None, None, "from_sparse: SparseTensor is not "
                    "right-ragged: its entries must be sorted and each row's "
                    "columns must be 0, 1, 2, ...")
        return cls.from_value_rowids(
            st_input.values, _M.cast(ind[:, 0], row_splits_dtype),
            nrows=_M.cast(st_input.dense_shape[0], row_splits_dtype),
            validate=False)

    def to_sparse(self, name=None):
        """A SparseTensor of the values at their (row, column, ...)
        positions, dense_shape the bounding shape."""
        from ..sparse import SparseTensor
        if self.ragged_rank != 1 or self.flat_values.shape.rank != 1:
            raise NotImplementedError("to_sparse: tfmini converts 2-D "
                                      "RaggedTensors")
        rowids = self.value_rowids()
        cols = _iota(self._values, rowids.dtype) - \
            _A.gather(self._row_splits, rowids)
        ind = _M.cast(_A.stack([rowids, cols], axis=1), _dtypes.int64)
        return SparseTensor(ind, self._values,
                            _M.cast(self.bounding_shape(), _dtypes.int64))

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits,
                               name=None, validate=True):
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths,
                                name=None, validate=True):
        result = flat_values
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1,
                    name=None, row_splits_dtype=_dtypes.int64):
        """Rows of a dense tensor; `lengths` keeps each row's first
        lengths[i] items, `padding` drops each row's trailing items equal
        to it (they are exclusive)."""
        if lengths is not None and padding is not None:
            raise ValueError("Specify lengths or padding, but not both")
        tensor = _to_tensor(tensor)
        rank = tensor.shape.rank
        if ragged_rank < 1 or rank is None or ragged_rank >= rank:
            raise ValueError(f"from_tensor: ragged_rank must be in "
                             f"[1, rank) = [1, {rank}), got {ragged_rank} "
                             f"(tensor shape {tensor.shape})")
        dt = _dtypes.as_dtype(row_splits_dtype)
        shp = _A.shape(tensor, out_type=dt)
        if ragged_rank > 1:
            flat = _A.reshape(tensor, _A.concat(
                [_A.reshape(shp[0] * shp[1], [1]), shp[2:]], 0))
            inner = cls.from_tensor(flat, lengths, padding, ragged_rank - 1,
                                    row_splits_dtype=dt)
            splits = _A.range(0, shp[0] * shp[1] + 1, shp[1], dtype=dt)
            return cls.from_row_splits(inner, splits, validate=False)
        ncols = shp[1]
        if padding is not None:
            pad = _to_tensor(padding, tensor.dtype)
            keep = _M.not_equal(tensor, pad)
            if rank > 2:
                keep = _R.reduce_any(keep, axis=list(range(2, rank)))
            pos = _A.range(1, ncols + 1, dtype=dt)
            lengths = _R.reduce_max(
                _A.where(keep, pos[None, :], _A.zeros_like(pos)[None, :]),
                axis=1)
            lengths = _M.maximum(lengths, _C.constant(0, dt))
        elif lengths is not None:
            lengths = _M.cast(_to_tensor(lengths), dt)
            if _is_eager(lengths, ncols) and (
                    np.any(lengths.numpy() > int(ncols)) or
                    np.any(lengths.numpy() < 0)):
                raise InvalidArgumentError(
                    None, None, f"from_tensor: lengths must be in "
                    f"[0, {int(ncols)}], got {lengths.numpy()}")
        else:
            flat = _A.reshape(tensor, _A.concat(
                [_A.reshape(shp[0] * shp[1], [1]), shp[2:]], 0))
            splits = _A.range(0, shp[0] * ncols + 1, ncols, dtype=dt) \
                if not (_is_eager(ncols) and int(ncols) == 0) else \
                _A.zeros(_A.reshape(shp[0] + 1, [1]), dt)
            return cls.from_row_splits(flat, splits, validate=False)
        mask = _M.less(_A.range(ncols, dtype=dt)[None, :], lengths[:, None])
        values = _A.boolean_mask(tensor, mask)
        return cls.from_row_lengths(values, lengths, validate=False)

    # ---- components ------------------------------------------------
    @property
    def values(self):
        return self._values

    @property
    def row_splits(self):
        return self._row_splits

    @property
    def flat_values(self):
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self):
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    def nested_row_lengths(self, name=None):
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v.row_lengths())
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self):
        return len(self.nested_row_splits)

    @property
    def dtype(self):
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self):
        return self._row_splits.dtype

    @property
    def shape(self):
        n = self._row_splits.shape[0]
        dims = [None if n is None else n - 1]
        v = self
        while isinstance(v, RaggedTensor):
            dims.append(v._uniform_row_length)
            v = v._values
        return TensorShape(dims + v.shape.as_list()[1:])

    def get_shape(self):
        return self.shape

    @property
    def _type_spec(self):
        from .ragged_spec import RaggedTensorSpec
        return RaggedTensorSpec(self.shape, self.dtype, self.ragged_rank,
                                self._row_splits.dtype)

    def _to_components(self):
        return [self.flat_values] + list(self.nested_row_splits)

    @classmethod
    def _from_components(cls, components):
        if len(components) == 1:
            return components[0]
        return cls.from_nested_row_splits(components[0], components[1:],
                                          validate=False)

    @staticmethod
    def _spec_from_components(specs):
        from .ragged_spec import RaggedTensorSpec
        flat, splits = specs[0], specs[1:]
        n = splits[0].shape[0] if splits else flat.shape[0]
        shape = [None if n is None or not splits else n - 1] + \
            [None] * len(splits) + flat.shape.as_list()[1:]
        return RaggedTensorSpec(shape, flat.dtype, len(splits),
                                splits[0].dtype if splits else
                                _dtypes.int64)

    def row_lengths(self, axis=1, name=None):
        if axis != 1:
            if axis < 1 or not isinstance(self._values, RaggedTensor):
                raise ValueError(f"row_lengths: axis {axis} is not a ragged "
                                 f"axis of a tensor of shape {self.shape}")
            return self.with_values(self._values.row_lengths(axis - 1))
        s = self._row_splits
        return s[1:] - s[:-1]

    def row_starts(self, name=None):
        return self._row_splits[:-1]

    def row_limits(self, name=None):
        return self._row_splits[1:]

    def nrows(self, out_type=None, name=None):
        dt = _dtypes.as_dtype(out_type) if out_type else \
            self._row_splits.dtype
        return _M.cast(_A.shape(self._row_splits, out_type=dt)[0] - 1, dt)

    def value_rowids(self, name=None):
        """The row of each value: for values[i], the row whose splits
        bracket i."""
        s = self._row_splits
        iota = _iota(self._values, s.dtype)
        if _is_eager(s, iota):
            return _I.searchsorted(s[1:], iota, side="right",
                                   out_type=s.dtype)
        # Traced: searchsorted wants static shapes, so count the row
        # limits <= i directly (nvals x nrows comparisons).
        return _R.reduce_sum(_M.cast(
            _M.less_equal(s[None, 1:], iota[:, None]), s.dtype), axis=1)

    def with_values(self, new_values):
        return RaggedTensor(new_values, self._row_splits, internal=True,
                            uniform_row_length=self._uniform_row_length)

    def with_flat_values(self, new_values):
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        dtype = _dtypes.as_dtype(dtype)
        v = self._values
        if isinstance(v, RaggedTensor):
            v = v.with_row_splits_dtype(dtype)
        return RaggedTensor(v, _M.cast(self._row_splits, dtype),
                            internal=True)

    def bounding_shape(self, axis=None, name=None, out_type=None):
        dt = _dtypes.as_dtype(out_type) if out_type else \
            self._row_splits.dtype
        dims = [self.nrows(dt)]
        v = self
        while isinstance(v, RaggedTensor):
            lengths = v.row_lengths()
            dims.append(_M.cast(_M.maximum(
                _R.reduce_max(lengths) if lengths.shape[0] != 0 else
                _C.constant(0, lengths.dtype),
                _C.constant(0, lengths.dtype)), dt))
            v = v._values
        full = _A.concat([_A.reshape(_A.stack(dims), [-1]),
                          _A.shape(v, out_type=dt)[1:]], 0)
        return full if axis is None else full[axis]

    def merge_dims(self, outer_axis, inner_axis):
        if (outer_axis, inner_axis) != (0, 1):
            raise NotImplementedError("merge_dims: tfmini merges axes 0 and "
                                      "1 only")
        return self._values

    # ---- conversions -----------------------------------------------
    def to_tensor(self, default_value=None, name=None, shape=None):
        """A dense tensor, rows padded with default_value (zero) to the
        longest; shape (None dims free) pads or truncates each axis.
        While tracing, the result's shape must be static: a known number
        of rows and a width given by `shape`."""
        shape = None if shape is None else TensorShape(shape)
        if shape is not None and shape.rank is not None and \
                shape.rank != self.shape.rank:
            raise ValueError(f"to_tensor: shape {shape} must have the rank "
                             f"of the RaggedTensor ({self.shape.rank})")
        want = shape.as_list() if shape is not None and shape.rank else \
            [None] * self.shape.rank
        v = self._values
        if isinstance(v, RaggedTensor):
            v = v.to_tensor(default_value, shape=[None] + want[2:])
        else:
            v = _fit_inner(v, want[2:], default_value)
        dt = self._row_splits.dtype
        rowids = self.value_rowids()
        cols = _iota(v, dt) - _A.gather(self._row_splits, rowids)
        nrows, width = want[0], want[1]
        if nrows is None:
            nrows = self.shape[0]
        if width is None and _is_eager(self._row_splits):
            lengths = self.row_lengths().numpy()
            width = int(lengths.max()) if len(lengths) else 0
        inner = v.shape.as_list()[1:]
        if nrows is None or width is None or None in inner:
            raise ValueError(
                f"RaggedTensor.to_tensor while tracing needs a static result "
                f"shape: the number of rows and the inner dims must be known "
                f"and the width given (shape=[..., width, ...]); got a "
                f"RaggedTensor of shape {self.shape} and shape={shape}")
        indices = _A.stack([rowids, cols], axis=1)
        if shape is not None or nrows != self.shape[0]:
            keep = _M.logical_and(_M.less(cols, _C.constant(width, dt)),
                                  _M.less(rowids, _C.constant(nrows, dt)))
            indices = _A.boolean_mask(indices, keep)
            v = _A.boolean_mask(v, keep)
        out_shape = [nrows, width] + inner
        if v.dtype in (_dtypes.string, _dtypes.bool):
            # scatter_nd adds into zeros, which strings and bools cannot:
            # write the values over a fill of the default instead.
            zero = b"" if v.dtype == _dtypes.string else False
            base = _A.fill(out_shape, _to_tensor(
                zero if default_value is None else default_value, v.dtype))
            return _A.tensor_scatter_nd_update(base, indices, v)
        dense = _A.scatter_nd(indices, v, _C.constant(out_shape, dt))
        if default_value is not None:
            default = _to_tensor(default_value, v.dtype)
            present = _A.scatter_nd(
                indices, _A.ones_like(indices[:, 0], _dtypes.int32),
                _C.constant([nrows, width], dt)) > 0
            present = _A.reshape(present, [nrows, width] + [1] * len(inner))
            dense = _A.where(present, dense, default)
        return dense

    def to_list(self):
        """The nested Python lists (eager only)."""
        if self._row_splits._symbolic:
            raise ValueError("RaggedTensor.to_list() is only supported in "
                             "eager mode")
        v = self._values
        vals = v.to_list() if isinstance(v, RaggedTensor) else \
            v.numpy().tolist()
        s = self._row_splits.numpy()
        return [vals[s[i]:s[i + 1]] for i in range(len(s) - 1)]

    def numpy(self):
        """As TF gives it: rows of equal length make one NumPy array;
        otherwise an object array of the rows."""
        v = self._values
        vals = v.numpy()
        s = self._row_splits.numpy()
        rows = [vals[s[i]:s[i + 1]] for i in range(len(s) - 1)]
        if not rows:
            return np.zeros((0, 0) + vals.shape[1:], vals.dtype)
        if any(len(r) != len(rows[0]) for r in rows):
            out = np.empty(len(rows), dtype=object)
            for i, r in enumerate(rows):
                out[i] = r
            return out
        return np.array(rows)

    # ---- repr --------------------------------------------------------
    def __repr__(self):
        if self._is_symbolic():
            return (f"tf.RaggedTensor(values={self._values!r}, "
                    f"row_splits={self._row_splits!r})")
        return f"<tf.RaggedTensor {_format(self)}>"

    __str__ = __repr__

    # ---- indexing ----------------------------------------------------
    def _batch_item(self, i):
        return self._row(i)

    def _batch_slice(self, start, stop):
        return self._rows(slice(start, stop))

    def _row(self, i):
        from .ragged_getitem import row
        return row(self, i)

    def _rows(self, sl):
        from .ragged_getitem import rows
        return rows(self, sl)

    def __getitem__(self, key):
        """TF's ragged indexing: rt[i], rt[a:b], rt[:, j], rt[:, a:b],
        and inner uniform dims (see ragged_getitem.py)."""
        from .ragged_getitem import getitem
        return getitem(self, key)

    def __iter__(self):
        if self._is_symbolic():
            raise TypeError("Cannot iterate over a traced RaggedTensor")
        return (self._row(i) for i in range(_nrows_eager(self)))

    def __hash__(self):
        raise TypeError("RaggedTensor is unhashable.")

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    def __reduce__(self):
        return _rebuild, (self.to_list(), self.dtype, self.ragged_rank,
                          self._row_splits.dtype)


def _rebuild(pylist, dtype, ragged_rank, splits_dtype):
    from .ragged_factory import constant
    return constant(pylist, dtype, ragged_rank,
                    row_splits_dtype=splits_dtype)


def _nvals_static(values):
    if isinstance(values, RaggedTensor):
        n = values._row_splits.shape[0]
        return None if n is None else n - 1
    return values.shape[0] if values.shape.rank else None


def _nvals(values, dt):
    if isinstance(values, RaggedTensor):
        return _M.cast(values.nrows(), dt)
    return _A.shape(values, out_type=dt)[0]


def _nrows_eager(rt):
    return rt._row_splits.shape[0] - 1


def _fit_inner(v, want, default):
    """v's dims 1.. padded (with default, else zeros) or truncated to
    want (None: kept); static sizes, so it also works while tracing."""
    have = v.shape.as_list()[1:]
    if not want or all(w is None or w == h for w, h in zip(want, have)):
        return v
    if None in have:
        raise ValueError(f"to_tensor: cannot fit inner dims {have} to "
                         f"{want} while tracing")
    idx = (slice(None),) + tuple(slice(0, w) for w in want)
    v = v[idx]
    pads = [[0, 0]] + [[0, 0 if w is None else max(w - h, 0)]
                       for w, h in zip(want, have)]
    return _A.pad(v, pads, constant_values=0 if default is None
                  else default)


def _iota(values, dt):
    """0, 1, ..., n - 1 for the n items of values along axis 0. Built
    from values rather than from a count: a traced graph cannot make a
    tensor of a computed length."""
    if isinstance(values, RaggedTensor):
        ones = _M.cast(_A.ones_like(values._row_splits[1:]), dt)
    elif not values._symbolic:
        return _A.range(values.shape[0], dtype=dt)
    else:
        if values.dtype == _dtypes.string:   # ZerosLike has no string kernel
            values = _M.equal(values, values)
        z = _A.zeros_like(values, dt)
        if values.shape.rank > 1:
            z = _R.reduce_sum(z, axis=list(range(1, values.shape.rank)))
        ones = z + _C.constant(1, dt)
    return _R.cumsum(ones) - ones


def _format_item(x):
    if isinstance(x, np.ndarray):
        # array2string prints an empty array as [] whatever its shape.
        return np.array2string(x, separator=", ") if x.size else \
            repr(x.tolist())
    return str(x)


def _format(rt):
    """TF's eager text: the NumPy value printed with ", " between items,
    each row (an array) and each scalar formatted the same way."""
    with np.printoptions(formatter={"all": _format_item}):
        return _format_item(rt.numpy())
