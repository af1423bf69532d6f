"""Array ops on RaggedTensors: gather, concat, stack, tile, where,
boolean_mask. Each is rows and splits arithmetic over core ops, so it
traces and differentiates through the values."""
import numpy as np

from .. import dtypes as _dtypes
from ..errors import InvalidArgumentError
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import math_ops as _M
from ..ops import reduce_ops as _R
from .._tensor import Tensor
from .ragged_tensor import (RaggedTensor, _iota, _nvals_static,
                            range_indices)


def convert(x, ragged_rank=1, splits_dtype=_dtypes.int64):
    """x as a RaggedTensor of at least ragged_rank (a dense tensor or
    nested list becomes one with uniform rows)."""
    if isinstance(x, RaggedTensor):
        return x
    t = x if isinstance(x, Tensor) else _C.convert_to_tensor(x)
    if t.shape.rank is None or t.shape.rank <= ragged_rank:
        raise ValueError(f"A dense tensor of shape {t.shape} cannot take the "
                         f"place of a RaggedTensor of ragged_rank "
                         f"{ragged_rank}")
    return RaggedTensor.from_tensor(t, ragged_rank=ragged_rank,
                                    row_splits_dtype=splits_dtype)


def ragged_gather(params, indices):
    """Rows `indices` (1-D, or scalar for one row) of params."""
    if not isinstance(params, RaggedTensor):
        return _A.gather(params, indices)
    s = params.row_splits
    idx = _M.cast(_C.convert_to_tensor(indices), s.dtype)
    if idx.shape.rank == 0:
        return params[int(idx)] if not idx._symbolic else \
            ragged_gather(params, _A.reshape(idx, [1])).values
    if idx.shape.rank != 1:
        raise ValueError(f"tf.gather on a RaggedTensor: tfmini takes 1-D "
                         f"indices, got shape {idx.shape}")
    if not idx._symbolic:
        n = params.row_splits.shape[0] - 1
        i = idx.numpy()
        if len(i) and (i.min() < -n or i.max() >= n):
            raise InvalidArgumentError(
                None, None, f"GatherV2: indices {i.tolist()} out of range "
                f"for a RaggedTensor of {n} rows (shape {params.shape})")
        if len(i) and i.min() < 0:
            idx = _C.constant(np.where(i < 0, i + n, i).astype(i.dtype))
    starts = _A.gather(s[:-1], idx)
    lengths = _A.gather(s[1:], idx) - starts
    flat, splits = range_indices(starts, lengths)
    return RaggedTensor.from_row_splits(ragged_gather(params.values, flat),
                                        splits, validate=False)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0,
           name=None):
    if axis not in (None, 0) or batch_dims:
        raise NotImplementedError("tf.gather on ragged values: tfmini "
                                  "gathers along axis 0 with batch_dims=0")
    if isinstance(indices, RaggedTensor):
        return indices.with_flat_values(
            gather(params, indices.flat_values))
    return ragged_gather(params, indices)


def _common_rank(values):
    k = max(v.ragged_rank for v in values if isinstance(v, RaggedTensor))
    dts = {v.row_splits.dtype for v in values if isinstance(v, RaggedTensor)}
    if len(dts) > 1:
        raise ValueError(f"Input RaggedTensors have mismatched row_splits "
                         f"dtypes; use RaggedTensor.with_row_splits_dtype() "
                         f"to convert them to compatible dtypes. Dtypes: "
                         f"{sorted(d.name for d in dts)}")
    dt = dts.pop()
    out = [convert(v, k, dt) for v in values]
    if any(v.ragged_rank != k for v in out):
        raise ValueError(f"tf.concat: ragged inputs of different "
                         f"ragged_rank {[v.ragged_rank for v in out]}")
    return out, k


def _concat0(rts):
    """Rows of rts, one after another."""
    if not isinstance(rts[0], RaggedTensor):
        return _A.concat(rts, 0)
    parts, offset = [rts[0].row_splits], rts[0].row_splits[-1]
    for r in rts[1:]:
        parts.append(r.row_splits[1:] + offset)
        offset = offset + r.row_splits[-1]
    return RaggedTensor.from_row_splits(_concat0([r.values for r in rts]),
                                        _A.concat(parts, 0), validate=False)


def _concat1(rts):
    """Row i of the result is the row i's of rts joined."""
    nr = [r.row_splits.shape[0] for r in rts]
    if None not in nr and len(set(nr)) > 1:
        raise InvalidArgumentError(
            None, None, f"ConcatV2: input tensors must have the same number "
            f"of rows to concatenate along axis 1; got shapes "
            f"{[str(r.shape) for r in rts]}")
    starts, lengths, off = [], [], None
    for r in rts:
        s = r.row_splits
        starts.append(s[:-1] if off is None else s[:-1] + off)
        lengths.append(s[1:] - s[:-1])
        off = s[-1] if off is None else off + s[-1]
    starts = _A.reshape(_A.stack(starts, axis=1), [-1])
    lengths = _A.stack(lengths, axis=1)
    sizes = [_nvals_static(r.values) for r in rts]
    total = None if None in sizes else sum(sizes)
    flat, _ = range_indices(starts, _A.reshape(lengths, [-1]), total)
    splits = _A.concat([_A.zeros([1], lengths.dtype),
                        _R.cumsum(_R.reduce_sum(lengths, axis=1))], 0)
    values = ragged_gather(_concat0([r.values for r in rts]), flat)
    return RaggedTensor.from_row_splits(values, splits, validate=False)


def concat(values, axis, name=None):
    values = list(values)
    rts, k = _common_rank(values)
    rank = rts[0].shape.rank
    if axis < 0:
        axis += rank
    if axis == 0:
        return _concat0(rts)
    if axis == 1:
        return _concat1(rts)
    if k == 1:
        if any(r.row_splits is not rts[0].row_splits for r in rts[1:]):
            _same_splits(rts, "ConcatV2")
        return rts[0].with_values(_A.concat([r.values for r in rts],
                                            axis - 1))
    return rts[0].with_values(concat([r.values for r in rts], axis - 1))


def _same_splits(rts, op):
    from .ragged_math_ops import check_same_splits
    for r in rts[1:]:
        check_same_splits(rts[0], r, op)


def expand_dims(rt, axis):
    rank = rt.shape.rank
    if axis < 0:
        axis += rank + 1
    if axis == 0:
        dt = rt.row_splits.dtype
        return RaggedTensor.from_row_splits(
            rt, _A.stack([_C.constant(0, dt), rt.nrows()]), validate=False)
    if axis == 1:
        n = rt.nrows()
        return RaggedTensor.from_row_splits(
            rt, _A.range(n + 1, dtype=n.dtype), validate=False)
    v = rt.values
    return rt.with_values(expand_dims(v, axis - 1)
                          if isinstance(v, RaggedTensor)
                          else _A.expand_dims(v, axis - 1))


def stack(values, axis=0, name=None):
    rts, _ = _common_rank(list(values))
    return concat([expand_dims(r, axis) for r in rts], axis)


def tile(rt, multiples):
    m = [int(x) for x in np.asarray(
        multiples.numpy() if isinstance(multiples, Tensor) else multiples)]
    if len(m) != rt.shape.rank:
        raise ValueError(f"Tile: multiples {m} must have one entry per "
                         f"dimension of shape {rt.shape}")
    out = rt
    if len(m) > 2 and any(x != 1 for x in m[2:]):
        v = rt.values
        out = rt.with_values(tile(v, [1] + m[2:])
                             if isinstance(v, RaggedTensor)
                             else _A.tile(v, [1] + m[2:]))
    if m[1] != 1:
        out = _concat1([out] * m[1]) if m[1] > 0 else \
            RaggedTensor.from_row_lengths(
                out.values[:0], _A.zeros_like(out.row_lengths()))
    if m[0] != 1:
        out = _concat0([out] * m[0]) if m[0] > 0 else out[:0]
    return out


def where(condition, x=None, y=None, name=None):
    from .ragged_math_ops import align
    if x is None and y is None:
        raise NotImplementedError("tf.where(condition) on a RaggedTensor: "
                                  "use condition.to_tensor()")
    c, a, b, template = align([condition, x, y], "SelectV2")
    return template.with_flat_values(_A.where(c, a, b))


def boolean_mask(data, mask, name=None):
    """Items of data where mask (same ragged shape, or one bool per row)."""
    from .ragged_math_ops import check_same_splits
    if isinstance(mask, RaggedTensor):
        data = convert(data, mask.ragged_rank)
        check_same_splits(data, mask, "boolean_mask")
        keep = mask.flat_values
        rowids = data.value_rowids() if data.ragged_rank == 1 else None
        if rowids is None:
            raise NotImplementedError("boolean_mask with a nested ragged "
                                      "mask")
        kept_ids = _A.boolean_mask(rowids, keep)
        out = RaggedTensor.from_value_rowids(
            _A.boolean_mask(data.values, keep), kept_ids, data.nrows(),
            validate=False)
        return out
    mask = _C.convert_to_tensor(mask)
    idx = _A.reshape(_A.where(mask), [-1])
    return ragged_gather(data, idx)


def reverse(tensor, axis, name=None):
    """tensor reversed along the given axes (rows for axis 0, each row's
    items for axis 1, inner axes on the values)."""
    rt = tensor
    axes = [int(a) for a in np.asarray(
        axis.numpy() if isinstance(axis, Tensor) else axis).reshape(-1)]
    rank = rt.shape.rank
    for a in sorted({a + rank if a < 0 else a for a in axes}):
        if a == 0:
            n = rt.shape[0]
            if n is None:
                raise NotImplementedError("tf.reverse over the rows of a "
                                          "RaggedTensor of unknown length")
            rt = ragged_gather(rt, _C.constant(
                np.arange(n - 1, -1, -1, dtype=np.int64)))
        elif a == 1:
            s = rt.row_splits
            v = rt.values
            ids = rt.value_rowids()
            src = _A.gather(s, ids) + _A.gather(s[1:], ids) - \
                _C.constant(1, s.dtype) - _iota(v, s.dtype)
            rt = rt.with_values(ragged_gather(v, src))
        else:
            v = rt.values
            rt = rt.with_values(reverse(v, [a - 1])
                                if isinstance(v, RaggedTensor)
                                else _A.reverse(v, [a - 1]))
    return rt
