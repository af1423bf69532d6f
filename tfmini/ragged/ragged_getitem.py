"""Indexing a RaggedTensor as TF does: rt[i] (a row: a Tensor, or a
RaggedTensor for more ragged dims), rt[a:b] (rows), rt[:, j] (item j of
every row, which must exist), rt[:, a:b] (a slice of every row), then
any inner uniform dims. Slicing within rows builds its gather indices
from the row lengths, so it runs eagerly only."""
import numpy as np

from ..errors import InvalidArgumentError
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import math_ops as _M
from .._tensor import Tensor
from .ragged_array_ops import ragged_gather
from .ragged_tensor import (RaggedTensor, _is_eager, _nrows_eager,
                            range_indices)

def row(rt, i):
    n = _nrows_eager(rt) if _is_eager(rt._row_splits) else None
    if n is not None and not -n <= i < n:
        raise IndexError(f"RaggedTensor index {i} is out of bounds for "
                         f"{n} rows (shape {rt.shape})")
    if i < 0:
        i = (n if n is not None else rt.nrows()) + i
    s = rt._row_splits
    return _slice_values(rt._values, s[i], s[i + 1])


def rows(rt, sl):
    """Rows sl (a step-1 slice) as a RaggedTensor."""
    if sl.step not in (None, 1):
        idx = _A.range(*sl.indices(_nrows_eager(rt)),
                       dtype=rt._row_splits.dtype)
        return ragged_gather(rt, idx)
    s = rt._row_splits
    nr = _nrows_eager(rt) if _is_eager(s) else None
    if nr is None:
        raise NotImplementedError("slicing the rows of a traced "
                                  "RaggedTensor")
    a, b, _ = sl.indices(nr)
    b = max(a, b)
    splits = s[a:b + 1]
    values = _slice_values(rt._values, splits[0], splits[-1])
    return RaggedTensor(values, splits - splits[0], internal=True)


def getitem(rt, key):
    if not isinstance(key, tuple):
        key = (key,)
    if not key:
        return rt
    if key[0] is Ellipsis:
        if len(key) == 1:
            return rt
        if len(key) > 1 + len(rt.shape) - 1:
            raise IndexError(f"Too many indices for a RaggedTensor of "
                             f"shape {rt.shape}")
        nfree = rt.shape.rank - (len(key) - 1)
        key = (slice(None),) * nfree + key[1:]
    first, rest = key[0], key[1:]
    if isinstance(first, Tensor):
        first = int(first)
    if isinstance(first, (int, np.integer)):
        item = row(rt, int(first))
        return item[rest] if rest else item
    if first is None:
        raise IndexError("tf.newaxis is not supported on a "
                         "RaggedTensor")
    if not isinstance(first, slice):
        raise TypeError(f"RaggedTensor indices must be integers or "
                        f"slices, got {type(first).__name__}")
    picked = rows(rt, first) if first != slice(None) else rt
    if not rest:
        return picked
    return _index_inner(picked, rest[0], rest[1:])


def _slice_values(values, a, b):
    if isinstance(values, RaggedTensor):
        s = values._row_splits
        splits = s[a:b + 1]
        return RaggedTensor(_slice_values(values._values, splits[0],
                                          splits[-1]),
                            splits - splits[0], internal=True)
    return values[a:b]


def _index_inner(rt, key, rest):
    """rt[:, key, *rest]: key applied within each row."""
    s = rt._row_splits
    dt = s.dtype
    if key is Ellipsis:
        return rt if not rest else rt.with_values(
            rt._values[(Ellipsis,) + tuple(rest)])
    if isinstance(key, Tensor):
        key = int(key)
    lengths = rt.row_lengths()
    if isinstance(key, (int, np.integer)):
        key = int(key)
        if _is_eager(lengths):
            ln = lengths.numpy()
            if len(ln) and (np.min(ln) <= key if key >= 0
                            else np.min(ln) < -key):
                raise InvalidArgumentError(
                    None, None, f"slice index {key} of dimension 1 out of "
                    f"bounds for a RaggedTensor of shape {rt.shape} (its "
                    f"shortest row has {np.min(ln)} items)")
        base = s[:-1] if key >= 0 else s[1:]
        idx = base + _C.constant(key, dt)
        v = rt._values
        out = ragged_gather(v, idx) if isinstance(v, RaggedTensor) else \
            _A.gather(v, idx)
        return out[(slice(None),) + tuple(rest)] if rest else out
    if not isinstance(key, slice):
        raise TypeError(f"RaggedTensor indices must be integers or slices, "
                        f"got {type(key).__name__}")
    if key.step not in (None, 1):
        raise NotImplementedError("tfmini slices a ragged dimension with "
                                  "step 1 only")
    zero = _A.zeros_like(lengths)

    def bound(b, default):
        if b is None:
            return default
        b = _C.constant(int(b), dt)
        return _M.maximum(zero, lengths + b) if int(b) < 0 else \
            _M.minimum(lengths, zero + b)
    start = bound(key.start, zero)
    stop = _M.maximum(bound(key.stop, lengths), start)
    idx, splits = range_indices(s[:-1] + start, stop - start)
    v = rt._values
    vals = ragged_gather(v, idx) if isinstance(v, RaggedTensor) else \
        _A.gather(v, idx)
    out = RaggedTensor.from_row_splits(vals, splits, validate=False)
    if rest:
        out = out.with_values(out._values[(slice(None),) + tuple(rest)])
    return out
