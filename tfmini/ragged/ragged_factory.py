"""tf.ragged.constant and the small tf.ragged helpers (range,
map_flat_values, row_splits_to_segment_ids, segment_ids_to_row_splits)."""
import numpy as np

from .. import dtypes as _dtypes
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import math_ops as _M
from .._tensor import Tensor
from .ragged_tensor import RaggedTensor, range_indices

__all__ = ["constant", "range", "map_flat_values",
           "row_splits_to_segment_ids", "segment_ids_to_row_splits"]

_py_range = range


def _depths(x, d, out):
    """The nesting depth of every scalar in x (and of empty lists, as the
    depth they would have: at least d + 1)."""
    if isinstance(x, (list, tuple)):
        if not x:
            out.append((d + 1, True))
        for i in x:
            _depths(i, d + 1, out)
    elif isinstance(x, np.ndarray):
        out.append((d + x.ndim, x.size == 0 and x.ndim > 0))
    else:
        out.append((d, False))
    return out


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None,
             name=None, row_splits_dtype=_dtypes.int64):
    """A RaggedTensor from nested Python lists: the outer ragged_rank
    levels become row partitions, the rest (of inner_shape) must be
    uniform."""
    if isinstance(pylist, (Tensor, RaggedTensor)):
        raise TypeError("tf.ragged.constant: pylist may not be a Tensor or "
                        "RaggedTensor; use tf.RaggedTensor.from_tensor")
    ds = _depths(pylist, 0, [])
    scalar_depths = {d for d, empty in ds if not empty}
    if len(scalar_depths) > 1:
        raise ValueError("all scalar values must have the same nesting "
                         "depth")
    empty_depth = max((d for d, e in ds if e), default=0)
    depth = scalar_depths.pop() if scalar_depths else empty_depth
    if empty_depth > depth:
        raise ValueError("all scalar values must have the same nesting "
                         "depth")
    if inner_shape is not None:
        inner_shape = tuple(int(d) for d in inner_shape)
    if ragged_rank is None:
        ragged_rank = max(0, depth - 1 - len(inner_shape or ()))
    ragged_rank = int(ragged_rank)
    if ragged_rank < 0:
        raise ValueError(f"tf.ragged.constant: ragged_rank must be "
                         f"non-negative, got {ragged_rank}")
    if ragged_rank > 0 and depth - 1 < ragged_rank and scalar_depths:
        raise ValueError(f"tf.ragged.constant: ragged_rank={ragged_rank} "
                         f"must be less than the nesting depth of pylist "
                         f"({depth})")
    if ragged_rank == 0:
        if dtype is not None and not scalar_depths:    # nothing to infer
            return _C.constant(np.asarray(
                pylist, _dtypes.as_dtype(dtype).as_numpy_dtype))
        return _C.constant(pylist, dtype)
    splits_dt = _dtypes.as_dtype(row_splits_dtype).as_numpy_dtype
    level, nested = list(pylist), []
    for _ in _py_range(ragged_rank):
        splits, nxt = [0], []
        for item in level:
            if not isinstance(item, (list, tuple, np.ndarray)):
                raise ValueError("all scalar values must have the same "
                                 "nesting depth")
            nxt.extend(item)
            splits.append(len(nxt))
        nested.append(np.array(splits, splits_dt))
        level = nxt
    if level:
        values = _C.constant(level, dtype)
        if inner_shape is not None and \
                tuple(values.shape.as_list()[1:]) != inner_shape:
            raise ValueError(f"tf.ragged.constant: inner values have shape "
                             f"{tuple(values.shape.as_list()[1:])}, not the "
                             f"given inner_shape {inner_shape}")
    else:
        if inner_shape is None:
            inner_shape = (0,) * max(0, depth - 1 - ragged_rank) \
                if scalar_depths or depth - 1 > ragged_rank else ()
        dt = _dtypes.as_dtype(dtype or _dtypes.float32)
        values = _C.constant(np.zeros((0,) + tuple(inner_shape),
                                      dt.as_numpy_dtype))
    return RaggedTensor.from_nested_row_splits(
        values, [_C.constant(s) for s in nested], validate=False)


def range(starts, limits=None, deltas=1, dtype=None, name=None,  # noqa: A001
          row_splits_dtype=_dtypes.int64):
    """Row i is tf.range(starts[i], limits[i], deltas[i])."""
    if limits is None:
        starts, limits = 0, starts
    lim = _C.convert_to_tensor(limits, dtype=dtype)
    dt = lim.dtype
    st = _M.cast(_C.convert_to_tensor(starts), dt)
    de = _M.cast(_C.convert_to_tensor(deltas), dt)
    st, lim, de = (_A.broadcast_to(t, _A.broadcast_dynamic_shape(
        _A.broadcast_dynamic_shape(_A.shape(st), _A.shape(lim)),
        _A.shape(de))) for t in (st, lim, de))
    sdt = _dtypes.as_dtype(row_splits_dtype)
    span = _M.cast(lim - st, _dtypes.float64) / _M.cast(de, _dtypes.float64)
    lengths = _M.cast(_M.maximum(_M.ceil(span), 0.0), sdt)
    idx, splits = range_indices(_A.zeros_like(lengths), lengths)
    rowids = RaggedTensor.from_row_splits(idx, splits,
                                          validate=False).value_rowids()
    values = _A.gather(st, rowids) + _M.cast(idx, dt) * _A.gather(de, rowids)
    return RaggedTensor.from_row_splits(values, splits, validate=False)


def map_flat_values(op, *args, **kwargs):
    """op applied to the flat_values of the ragged arguments (which must
    share their row partitions); the result has their partitions."""
    template = next((a for a in list(args) + list(kwargs.values())
                     if isinstance(a, RaggedTensor)), None)
    if template is None:
        return op(*args, **kwargs)

    def flat(a):
        return a.flat_values if isinstance(a, RaggedTensor) else a
    out = op(*[flat(a) for a in args],
             **{k: flat(v) for k, v in kwargs.items()})
    return template.with_flat_values(out)


def row_splits_to_segment_ids(splits, name=None, out_type=None):
    splits = _C.convert_to_tensor(splits, dtype_hint=_dtypes.int64)
    ids = RaggedTensor.from_row_splits(
        _A.zeros(_A.reshape(splits[-1], [1])), splits).value_rowids()
    return ids if out_type is None else _M.cast(ids, out_type)


def segment_ids_to_row_splits(segment_ids, num_segments=None,
                              out_type=None, name=None):
    ids = _C.convert_to_tensor(segment_ids, dtype_hint=_dtypes.int64)
    rt = RaggedTensor.from_value_rowids(
        _A.zeros(_A.shape(ids)), ids, num_segments)
    s = rt.row_splits
    return s if out_type is None else _M.cast(s, out_type)
