"""Segment reductions and counting written over the scatter ops:
tf.math.unsorted_segment_{sum,mean,sqrt_n,max,min}, tf.math.segment_*,
tf.math.bincount. Their gradients come from TensorScatterAdd/Max/Min's.

The output's length is an attribute of the ops underneath, so it must be
known when a function is traced: num_segments must be static, and the
functions whose length comes from the data's values (segment_*, and
bincount without minlength == maxlength) need those values, which a
symbolic tensor does not have; they say so in a TypeError."""
import numpy as np

from .. import dtypes as _dtypes
from ..errors import InvalidArgumentError
from . import array_ops as _a
from . import math_ops as _m

__all__ = []
_NAMESPACES = {"math": [
    "unsorted_segment_sum", "unsorted_segment_mean",
    "unsorted_segment_sqrt_n", "unsorted_segment_max",
    "unsorted_segment_min", "segment_sum", "segment_mean", "segment_max",
    "segment_min", "bincount"]}


def _symbolic(t):
    return getattr(t, "_symbolic", False)


def _ids(segment_ids, op):
    ids = _a._tensor(segment_ids)
    if not ids.dtype.is_integer or ids.dtype.is_unsigned:
        raise InvalidArgumentError(
            f"{op}: segment_ids must be int16, int32 or int64, got "
            f"{ids.dtype.name}")
    if ids.dtype not in (_dtypes.int32, _dtypes.int64):
        ids = _m.cast(ids, _dtypes.int32)
    return ids


def _check_prefix(data, ids, op):
    dd, idd = _a._dims(data), _a._dims(ids)
    if len(idd) > len(dd) or any(
            a is not None and b is not None and a != b
            for a, b in zip(dd, idd)):
        raise InvalidArgumentError(
            f"{op}: data.shape = {list(data.shape)} does not start with "
            f"segment_ids.shape = {list(ids.shape)}")
    tail = dd[len(idd):]
    if None in tail:
        raise ValueError(f"{op}: data's dims after segment_ids' "
                         f"({data.shape}) must be known when traced")
    return list(tail)


def _num(num_segments, op):
    n = _a._int(num_segments, f"{op}: num_segments")
    if n < 0:
        raise InvalidArgumentError(
            f"{op}: Input num_segments == {n} must not be negative.")
    return n


def _scatter(kind, data, ids, n, init, op):
    """data's slices combined per segment into n rows that start as
    init. Negative ids are dropped (into an extra row cut off after);
    ids >= n are errors: eagerly here, traced by the scatter."""
    if not _symbolic(ids):
        v = ids.numpy().reshape(-1)
        bad = np.nonzero(v >= n)[0]
        if bad.size:
            raise InvalidArgumentError(
                f"{op}: segment_ids[{bad[0]}] = {v[bad[0]]} is out of "
                f"range [0, {n})")
    tail = _check_prefix(data, ids, op)
    # Past n+1 rows the scatter reports the id out of range.
    over = _a.where(_m.greater_equal(ids, n), _m.add(ids, 1), ids)
    idx = _a.expand_dims(_a.where(_m.less(ids, 0), n, over), -1)
    base = _a.fill([n + 1] + tail, _a._tensor(init, data.dtype))
    out = kind(base, idx, data)
    return _a.slice(out, [0] * (1 + len(tail)), [n] + [-1] * len(tail))


def _counts(data, ids, n, op):
    """How many slices each segment got, shaped to broadcast with the
    result."""
    ones = _a.ones(_a._dims(ids), data.dtype)
    c = _scatter(_a.tensor_scatter_nd_add, ones, ids, n, 0, op)
    return _a.reshape(c, [n] + [1] * (len(_a._dims(data))
                                      - len(_a._dims(ids))))


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of data's slices by segment id (negative ids dropped)."""
    op = "UnsortedSegmentSum"
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    return _scatter(_a.tensor_scatter_nd_add, data, ids,
                    _num(num_segments, op), 0, op)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Means of data's slices by segment id (0 for empty segments)."""
    op = "UnsortedSegmentMean"
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    n = _num(num_segments, op)
    total = _scatter(_a.tensor_scatter_nd_add, data, ids, n, 0, op)
    count = _m.maximum(_counts(data, ids, n, op), 1)
    return _m.truediv(total, count)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sums of data's slices by segment id over the square root of their
    count (floats only)."""
    op = "UnsortedSegmentSqrtN"
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    if not data.dtype.is_floating:
        raise TypeError(f"{op}: data must be a float tensor, got "
                        f"{data.dtype.name}")
    n = _num(num_segments, op)
    total = _scatter(_a.tensor_scatter_nd_add, data, ids, n, 0, op)
    count = _m.maximum(_counts(data, ids, n, op), 1)
    return _m.divide(total, _m.sqrt(count))


def _extreme(dtype, op, low):
    if dtype.is_bool or dtype.is_complex:
        raise InvalidArgumentError(f"{op}: data must be a real number "
                                   f"tensor, got {dtype.name}")
    return dtype.min if low else dtype.max


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """Maxima of data's slices by segment id; an empty segment holds the
    dtype's lowest value."""
    op = "UnsortedSegmentMax"
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    return _scatter(_a.tensor_scatter_nd_max, data, ids,
                    _num(num_segments, op),
                    _extreme(data.dtype, op, True), op)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """Minima of data's slices by segment id; an empty segment holds the
    dtype's greatest value."""
    op = "UnsortedSegmentMin"
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    return _scatter(_a.tensor_scatter_nd_min, data, ids,
                    _num(num_segments, op),
                    _extreme(data.dtype, op, False), op)


# ---- sorted segments: the count is the last id + 1 --------------------

def _sorted(data, segment_ids, op):
    data, ids = _a._tensor(data), _ids(segment_ids, op)
    if _symbolic(ids):
        raise TypeError(
            f"tfmini: {op} needs segment_ids' values when the function is "
            f"traced (they give the output's length), but got the "
            f"symbolic tensor {ids}. Use tf.math.unsorted_segment_* with "
            f"a static num_segments instead.")
    if len(_a._dims(ids)) != 1:
        raise InvalidArgumentError(f"{op}: segment_ids should be a vector, "
                                   f"got shape {list(ids.shape)}")
    dd = _a._dims(data)
    if not dd or (dd[0] is not None and dd[0] != _a._dims(ids)[0]):
        raise InvalidArgumentError(
            f"{op}: segment_ids should be the same size as dimension 0 of "
            f"input.")
    v = ids.numpy()
    if v.size and v[0] < 0:
        raise InvalidArgumentError(
            f"{op}: Segment id {v[0]} out of range [0, {v[-1] + 1}), "
            f"possibly because 'segment_ids' input is not sorted.")
    if v.size and np.any(v[1:] < v[:-1]):
        raise InvalidArgumentError(f"{op}: segment ids are not increasing")
    return data, ids, int(v[-1]) + 1 if v.size else 0


def segment_sum(data, segment_ids, name=None):
    """Sums of data's rows by sorted segment id."""
    data, ids, n = _sorted(data, segment_ids, "SegmentSum")
    return unsorted_segment_sum(data, ids, n)


def segment_mean(data, segment_ids, name=None):
    """Means of data's rows by sorted segment id (0 for empty ones)."""
    data, ids, n = _sorted(data, segment_ids, "SegmentMean")
    if data.dtype.is_integer:
        # TF's SegmentMean kernel divides in the data's type (truncating);
        # only the unsorted mean, a Python composite there too, gives
        # floats.
        op = "SegmentMean"
        total = _scatter(_a.tensor_scatter_nd_add, data, ids, n, 0, op)
        count = _m.maximum(_counts(data, ids, n, op), 1)
        return _m.truncatediv(total, count)
    return unsorted_segment_mean(data, ids, n)


def _sorted_extreme(fn, data, segment_ids, op):
    data, ids, n = _sorted(data, segment_ids, op)
    out = fn(data, ids, n)
    # Unlike the unsorted ops, an empty sorted segment holds 0.
    full = _m.greater(_counts(data, ids, n, op), 0)
    return _a.where(full, out, _a.zeros_like(out))


def segment_max(data, segment_ids, name=None):
    """Maxima of data's rows by sorted segment id (0 for empty ones)."""
    return _sorted_extreme(unsorted_segment_max, data, segment_ids,
                           "SegmentMax")


def segment_min(data, segment_ids, name=None):
    """Minima of data's rows by sorted segment id (0 for empty ones)."""
    return _sorted_extreme(unsorted_segment_min, data, segment_ids,
                           "SegmentMin")


# ---- bincount ---------------------------------------------------------

def bincount(arr, weights=None, minlength=None, maxlength=None,
             dtype=_dtypes.int32, name=None, axis=None,
             binary_output=False):
    """How often each value 0, 1, ... occurs in arr (summing weights
    instead of ones when given); values at or past maxlength are not
    counted. axis=-1 counts each row of a 2-D arr on its own."""
    op = "bincount"
    arr = _a._tensor(arr)
    if not arr.dtype.is_integer:
        arr = _m.cast(arr, _dtypes.int32)
    dims = _a._dims(arr)
    if axis not in (None, 0, -1):
        raise ValueError(f"{op}: unsupported axis {axis}; only 0 and -1 "
                         f"are supported")
    if weights is not None:
        weights = _a._tensor(weights)
        if _a._dims(weights) == (0,):
            weights = None
        elif _a._dims(weights) != dims:
            raise InvalidArgumentError(
                f"{op}: `weights` must be the same shape as `arr` or a "
                f"length-0 `Tensor`, in which case it acts as all weights "
                f"equal to 1. Received {list(weights.shape)}")
    out_dtype = weights.dtype if weights is not None else \
        _dtypes.as_dtype(dtype)
    lo = None if minlength is None else _a._int(minlength, f"{op}: "
                                                "minlength")
    hi = None if maxlength is None else _a._int(maxlength, f"{op}: "
                                                "maxlength")
    if hi is not None and hi < 0:
        # TF's output size is min(maxlength, ...), and the Bincount kernel
        # refuses a negative size.
        raise InvalidArgumentError(
            f"{op}: size ({hi}) must be non-negative (maxlength={hi})")
    if _symbolic(arr):
        if lo is None or lo != hi:
            raise TypeError(
                f"tfmini: {op} needs arr's values when the function is "
                f"traced (they give the output's length), but got the "
                f"symbolic tensor {arr}. Pass minlength equal to "
                f"maxlength to fix the length.")
        n = lo
        # The values are only known when the function runs: check them
        # there, or negative counts would silently vanish.
        from .control_flow_ops import Assert
        from .reduce_ops import reduce_all
        Assert(reduce_all(_m.greater_equal(arr, _a.zeros([], arr.dtype))),
               [f"{op}: Input arr must be non-negative!"])
    else:
        v = arr.numpy()
        if v.size and v.min() < 0:
            raise InvalidArgumentError(
                f"{op}: Input arr must be non-negative!")
        n = int(v.max()) + 1 if v.size else 0
        if lo is not None:
            n = max(n, lo)
        if hi is not None:
            n = min(n, max(hi, 0))
    if None in dims:
        raise ValueError(f"{op}: arr's shape {arr.shape} must be known "
                         f"when traced")
    rows = 1
    if axis == -1:
        if len(dims) != 2:
            raise ValueError(f"{op}: axis=-1 needs a 2-D arr, got shape "
                             f"{arr.shape}")
        rows = dims[0]
    flat_ids = _a.reshape(arr, [-1])
    # Values past the length (maxlength) are dropped like negative ids;
    # each row of axis=-1 counts into its own block of n.
    ids = _a.where(_m.less(flat_ids, n), flat_ids, -1)
    if axis == -1:
        row = _a.reshape(_a.broadcast_to(
            _a.reshape(_a.range(rows, dtype=ids.dtype), [-1, 1]),
            list(dims)), [-1])
        ids = _a.where(_m.less(ids, 0), ids,
                       _m.add(ids, _m.multiply(row, n)))
    if weights is None or binary_output:
        w = _a.ones([_a._dims(ids)[0]], out_dtype)
    else:
        w = _a.reshape(weights, [-1])
    out = unsorted_segment_sum(w, ids, rows * n)
    if binary_output:
        out = _m.cast(_m.greater(out, 0), out_dtype)
    if axis == -1:
        out = _a.reshape(out, [rows, n])
    return out
