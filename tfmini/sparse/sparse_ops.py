"""tf.sparse: to_dense/from_dense, add, sparse_dense_matmul, reduce_sum,
reorder, reshape, concat, slice, retain, transpose, eye, and the
elementwise ops TF defines on a SparseTensor (unary ops that keep zero
at zero, sparse * dense, sparse / dense)."""
import numpy as np

from .. import dtypes as _dtypes
from ..errors import InvalidArgumentError
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import math_ops as _M
from ..ops import reduce_ops as _R
from ..ops import segment_ops as _S
from .._tensor import Tensor
from .sparse_tensor import SparseTensor

__all__ = ["add", "concat", "eye", "from_dense", "reduce_sum", "reorder",
           "reshape", "retain", "slice", "sparse_dense_matmul", "to_dense",
           "transpose"]

_builtin_slice = slice


def _check(sp, op):
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{op}: expected a SparseTensor, got "
                        f"{type(sp).__name__}")


def _eager(sp, op):
    """(indices, dense_shape) as NumPy, for the index bookkeeping."""
    _check(sp, op)
    if sp.indices._symbolic or sp.dense_shape._symbolic:
        raise NotImplementedError(
            f"{op}: tfmini computes a SparseTensor's new indices eagerly; "
            f"inside tf.function give the sparse argument a static shape "
            f"and keep index-changing ops outside the function")
    return sp.indices.numpy(), sp.dense_shape.numpy()


def _shape_list(sp, op):
    shape = sp._static_shape()
    if shape is None:
        raise ValueError(f"{op}: the SparseTensor's dense_shape must be "
                         f"known (a static shape) here")
    return shape


def _linear(ind, shape):
    strides = np.cumprod([1] + list(shape[::-1]))[:-1][::-1]
    return (ind * strides).sum(axis=1) if len(ind) else \
        np.zeros(0, np.int64)


def from_dense(tensor, name=None):
    """The nonzero entries of tensor."""
    t = tensor if isinstance(tensor, Tensor) else \
        _C.convert_to_tensor(tensor)
    if t.dtype == _dtypes.bool:
        nz = t
    else:
        nz = _M.not_equal(t, _A.zeros_like(t))
    idx = _A.where(nz)
    return SparseTensor(idx, _A.gather_nd(t, idx),
                        _A.shape(t, out_type=_dtypes.int64))


def _ints(a):
    return "[" + ",".join(str(int(x)) for x in a) + "]"


def _validate(sp, op):
    ind, shape = _eager(sp, op)
    for i, row in enumerate(ind):
        if np.any(row < 0) or np.any(row >= shape):
            raise InvalidArgumentError(
                None, None, f"{op}: indices[{i}] = {_ints(row)} is out of "
                f"bounds: need 0 <= index < {_ints(shape)}")
    lin = _linear(ind, shape)
    bad = np.nonzero(np.diff(lin) <= 0)[0]
    if len(bad):
        i = int(bad[0]) + 1
        what = "repeated" if lin[i] == lin[i - 1] else "out of order"
        raise InvalidArgumentError(
            None, None, f"{op}: indices[{i}] = {_ints(ind[i])} is {what}. "
            f"Many sparse ops require sorted indices. Use "
            f"`tf.sparse.reorder` to create a correctly ordered copy.")


def to_dense(sp_input, default_value=None, validate_indices=True,
             name=None):
    """The dense tensor: values at indices, default_value (zero)
    elsewhere."""
    _check(sp_input, "SparseToDense")
    shape = _shape_list(sp_input, "SparseToDense")
    if validate_indices and not sp_input.indices._symbolic:
        _validate(sp_input, "SparseToDense")
    v = sp_input.values
    if v.dtype == _dtypes.string:
        # scatter_nd sums into zeros, and strings have neither; the
        # updates land on a filled tensor instead (indices are unique).
        fill = _A.fill(_C.constant(shape, _dtypes.int64),
                       _C.convert_to_tensor(
                           b"" if default_value is None else default_value,
                           _dtypes.string))
        return _A.tensor_scatter_nd_update(fill, sp_input.indices, v)
    dense = _A.scatter_nd(sp_input.indices, v,
                          _C.constant(shape, _dtypes.int64))
    if default_value is not None:
        present = _A.scatter_nd(sp_input.indices,
                                _A.ones_like(v, _dtypes.int32),
                                _C.constant(shape, _dtypes.int64)) > 0
        dense = _A.where(present, dense,
                         _C.convert_to_tensor(default_value, v.dtype))
    return dense


def reorder(sp_input, name=None):
    """The same entries, indices in row-major order."""
    ind, shape = _eager(sp_input, "SparseReorder")
    order = np.argsort(_linear(ind, shape), kind="stable")
    if np.array_equal(order, np.arange(len(order))):
        return sp_input
    o = _C.constant(order.astype(np.int64))
    return SparseTensor(_C.constant(ind[order]),
                        _A.gather(sp_input.values, o), sp_input.dense_shape)


def _combine(ind, shape):
    """Sum entries with equal indices: (unique sorted indices, segment
    id of each entry)."""
    lin = _linear(ind, shape)
    uniq, ids = np.unique(lin, return_inverse=True)
    out = np.stack(np.unravel_index(uniq, shape), axis=1) if len(uniq) \
        else np.zeros((0, len(shape)), np.int64)
    return out.astype(np.int64), ids.astype(np.int64), len(uniq)


def add(a, b, threshold=0, thresh=None, name=None):
    """sparse + sparse -> sparse (entries at the same index summed);
    sparse + dense (either order) -> dense."""
    if thresh is not None:
        threshold = thresh
    if not isinstance(a, SparseTensor):
        a, b = b, a
    _check(a, "SparseAdd")
    if not isinstance(b, SparseTensor):
        return to_dense(a, validate_indices=False) + \
            _C.convert_to_tensor(b, dtype_hint=a.dtype)
    ia, sa = _eager(a, "SparseAdd")
    ib, sb = _eager(b, "SparseAdd")
    if len(sa) != len(sb) or not np.array_equal(sa, sb):
        d = next((i for i in range(min(len(sa), len(sb)))
                  if sa[i] != sb[i]), 0)
        raise InvalidArgumentError(
            None, None, f"SparseAdd: Operands' shapes do not match: got "
            f"{sa[d]} and {sb[d]} for dimension {d} (shapes {_ints(sa)} and "
            f"{_ints(sb)})")
    if a.dtype != b.dtype:
        raise InvalidArgumentError(
            None, None, f"SparseAdd: values of different dtypes "
            f"{a.dtype.name} and {b.dtype.name}")
    ind = np.concatenate([ia.reshape(-1, len(sa)), ib.reshape(-1, len(sa))])
    out, ids, n = _combine(ind, sa)
    vals = _S.unsorted_segment_sum(_A.concat([a.values, b.values], 0),
                                   _C.constant(ids), n)
    result = SparseTensor(_C.constant(out), vals, a.dense_shape)
    if threshold:
        keep = np.abs(vals.numpy()) >= threshold
        result = retain(result, keep)
    return result


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False,
                        name=None):
    """sp_a @ b for a rank-2 SparseTensor and a dense matrix (or a dense
    matrix @ a SparseTensor)."""
    if not isinstance(sp_a, SparseTensor):
        # a @ sp_b = (sp_b^T a^T)^T
        return _A.transpose(sparse_dense_matmul(
            b, sp_a, adjoint_a=not adjoint_b, adjoint_b=not adjoint_a))
    b = b if isinstance(b, Tensor) else _C.convert_to_tensor(
        b, dtype_hint=sp_a.dtype)
    shape = _shape_list(sp_a, "SparseTensorDenseMatMul")
    if len(shape) != 2 or b.shape.rank != 2:
        raise ValueError(f"SparseTensorDenseMatMul: both operands must be "
                         f"matrices, got shapes {shape} and {b.shape}")
    if sp_a.dtype != b.dtype:
        raise InvalidArgumentError(
            None, None, f"SparseTensorDenseMatMul: operands of different "
            f"dtypes {sp_a.dtype.name} and {b.dtype.name}")
    if adjoint_b:
        b = _A.transpose(b)
    rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
    m, k = shape
    if adjoint_a:
        rows, cols, m, k = cols, rows, k, m
    if b.shape[0] is not None and b.shape[0] != k:
        raise InvalidArgumentError(
            None, None, f"SparseTensorDenseMatMul: Cannot multiply A and B "
            f"because inner dimension does not match: {k} vs. {b.shape[0]}."
            f"  Did you forget a transpose?  Dimensions of A: "
            f"{_ints(shape)}.  Dimensions of B: {_ints(b.shape.as_list())}"
            f" (adjoint_a={bool(adjoint_a)}, adjoint_b={bool(adjoint_b)})")
    terms = sp_a.values[:, None] * _A.gather(b, cols)
    return _S.unsorted_segment_sum(terms, rows, m)


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False,
               name=None):
    """The sum of the entries over axis (a dense tensor, or a
    SparseTensor of its nonzeros with output_is_sparse)."""
    _check(sp_input, "SparseReduceSum")
    if axis is None and not keepdims and not output_is_sparse:
        return _R.reduce_sum(sp_input.values)
    out = _R.reduce_sum(to_dense(sp_input, validate_indices=False), axis,
                        bool(keepdims))
    return from_dense(out) if output_is_sparse else out


def reshape(sp_input, shape, name=None):
    """The same entries in a dense shape of as many elements (one -1
    inferred)."""
    ind, old = _eager(sp_input, "SparseReshape")
    new = [int(d) for d in np.asarray(
        shape.numpy() if isinstance(shape, Tensor) else shape).reshape(-1)]
    total = int(np.prod(old))
    if new.count(-1) > 1:
        raise InvalidArgumentError(None, None, f"SparseReshape: only one "
                                   f"output dimension may be -1, got {new}")
    if -1 in new:
        rest = int(np.prod([d for d in new if d != -1]))
        if rest == 0 or total % rest:
            raise InvalidArgumentError(
                None, None, f"SparseReshape: input of shape {old.tolist()} "
                f"cannot be reshaped to {new}")
        new[new.index(-1)] = total // rest
    if int(np.prod(new)) != total:
        raise InvalidArgumentError(
            None, None, f"SparseReshape: Input to reshape is a tensor with "
            f"{total} dense values, but the requested shape has "
            f"{int(np.prod(new))}. input_shape={_ints(old)} "
            f"output_shape={_ints(new)}")
    lin = _linear(ind, old)
    out = np.stack(np.unravel_index(lin, new), axis=1) if len(lin) else \
        np.zeros((0, len(new)), np.int64)
    return SparseTensor(_C.constant(out.astype(np.int64)), sp_input.values,
                        _C.constant(np.array(new, np.int64)))


def concat(axis, sp_inputs, name=None, expand_nonconcat_dims=False,
           concat_dim=None):
    """The SparseTensors joined along axis (other dims equal, or the
    largest with expand_nonconcat_dims), indices in row-major order."""
    if concat_dim is not None:
        axis = concat_dim
    sps = list(sp_inputs)
    eager = [_eager(s, "SparseConcat") for s in sps]
    rank = len(eager[0][1])
    if axis < 0:
        axis += rank
    shapes = np.stack([s for _, s in eager])
    other = [d for d in range(rank) if d != axis]
    if not expand_nonconcat_dims and \
            np.any(shapes[:, other] != shapes[0, other]):
        raise InvalidArgumentError(
            None, None, f"SparseConcat: input shapes must match except on "
            f"the concat dimension {axis}: {shapes.tolist()}")
    out_shape = shapes.max(axis=0)
    out_shape[axis] = shapes[:, axis].sum()
    parts, off = [], 0
    for (ind, shp) in eager:
        ind = ind.copy()
        ind[:, axis] += off
        off += shp[axis]
        parts.append(ind)
    ind = np.concatenate(parts) if parts else np.zeros((0, rank), np.int64)
    vals = _A.concat([s.values for s in sps], 0)
    return reorder(SparseTensor(_C.constant(ind), vals,
                                _C.constant(out_shape.astype(np.int64))))


def slice(sp_input, start, size, name=None):  # noqa: A001
    """The entries within [start, start + size), re-based at start."""
    ind, shape = _eager(sp_input, "SparseSlice")
    start = np.asarray(start, np.int64).reshape(-1)
    size = np.asarray(size, np.int64).reshape(-1)
    if len(start) != len(shape) or len(size) != len(shape):
        raise InvalidArgumentError(
            None, None, f"SparseSlice: start {start.tolist()} and size "
            f"{size.tolist()} must have one entry per dimension of "
            f"{shape.tolist()}")
    end = np.minimum(start + size, shape)
    keep = np.all((ind >= start) & (ind < end), axis=1) if len(ind) else \
        np.zeros(0, bool)
    out = retain(sp_input, keep)
    return SparseTensor(_C.constant((ind[keep] - start).astype(np.int64)),
                        out.values, _C.constant(
                            np.maximum(end - start, 0).astype(np.int64)))


def retain(sp_input, to_retain):
    """The entries where to_retain (a bool vector, one per entry)."""
    ind, _ = _eager(sp_input, "SparseRetain")
    keep = np.asarray(to_retain.numpy() if isinstance(to_retain, Tensor)
                      else to_retain, bool).reshape(-1)
    if len(keep) != len(ind):
        raise InvalidArgumentError(
            None, None, f"SparseRetain: to_retain has {len(keep)} entries "
            f"for {len(ind)} values")
    idx = _C.constant(np.nonzero(keep)[0].astype(np.int64))
    return SparseTensor(_C.constant(ind[keep].reshape(-1, ind.shape[1])
                                    if ind.ndim == 2 else ind[keep]),
                        _A.gather(sp_input.values, idx),
                        sp_input.dense_shape)


def transpose(sp_input, perm=None, name=None):
    ind, shape = _eager(sp_input, "SparseTranspose")
    perm = list(range(len(shape)))[::-1] if perm is None else \
        [int(p) for p in perm]
    out = SparseTensor(_C.constant(ind[:, perm].astype(np.int64)),
                       sp_input.values,
                       _C.constant(shape[perm].astype(np.int64)))
    return reorder(out)


def eye(num_rows, num_columns=None, dtype=_dtypes.float32, name=None):
    n = int(num_rows)
    m = n if num_columns is None else int(num_columns)
    k = min(n, m)
    ind = np.stack([np.arange(k), np.arange(k)], axis=1).astype(np.int64)
    return SparseTensor(_C.constant(ind.reshape(k, 2)),
                        _A.ones([k], _dtypes.as_dtype(dtype)),
                        _C.constant(np.array([n, m], np.int64)))


# ---- elementwise -----------------------------------------------------------

# Unary ops with f(0) == 0: TF applies them to the values.
UNARY = ["abs", "negative", "sign", "square", "sqrt", "sin", "tan", "asin",
         "atan", "sinh", "tanh", "asinh", "atanh", "floor", "ceil", "round",
         "rint", "expm1", "log1p", "cast", "saturate_cast", "identity",
         "stop_gradient", "relu", "erf"]


def unary(fn, name):
    def op(x, *args, **kwargs):
        return x.with_values(fn(x.values, *args, **kwargs))
    return op


def _dense_at(sp, other, op):
    """other broadcast to sp's shape, read at sp's indices."""
    t = other if isinstance(other, Tensor) else _C.convert_to_tensor(
        other, dtype_hint=sp.dtype)
    if t.shape.rank == 0:
        return t
    shape = _shape_list(sp, op)
    try:
        t = _A.broadcast_to(t, shape)
    except (ValueError, InvalidArgumentError) as e:
        raise InvalidArgumentError(
            None, None, f"{op}: cannot broadcast a dense tensor of shape "
            f"{t.shape} to the SparseTensor's shape {shape}") from e
    return _A.gather_nd(t, sp.indices)


def mul(sp, other, name=None):
    """sparse * dense (broadcast to the sparse shape) -> sparse."""
    if isinstance(other, SparseTensor):
        raise TypeError("SparseTensor * SparseTensor is not defined; use "
                        "tf.sparse.to_dense on one of them")
    return sp.with_values(_M.multiply(
        sp.values, _dense_at(sp, other, "SparseDenseCwiseMul")))


def div(sp, other, name=None):
    """sparse / dense -> sparse (the implicit zeros stay zero)."""
    return sp.with_values(_M.truediv(
        sp.values, _dense_at(sp, other, "SparseDenseCwiseDiv")))


def binary_dispatch(fn):
    """tf.multiply / tf.divide with a SparseTensor operand."""
    def op(x, y, *args, **kwargs):
        if isinstance(x, SparseTensor):
            return fn(x, y)
        if fn is mul:
            return mul(y, x)
        raise TypeError("dense / SparseTensor is not defined (the implicit "
                        "zeros would divide); use tf.sparse.to_dense")
    return op


def map_values(op, *args, **kwargs):
    """op applied to the values of the SparseTensor arguments (which must
    have the same indices); the result has their indices and shape."""
    sps = [a for a in list(args) + list(kwargs.values())
           if isinstance(a, SparseTensor)]
    if not sps:
        raise ValueError("tf.sparse.map_values: no SparseTensor argument")
    first = sps[0]
    for other in sps[1:]:
        if other.indices is not first.indices and (
                other.indices.shape != first.indices.shape or not
                np.array_equal(other.indices.numpy(), first.indices.numpy())):
            raise InvalidArgumentError(
                None, None, "tf.sparse.map_values: SparseTensors must have "
                "the same indices")

    def vals(a):
        return a.values if isinstance(a, SparseTensor) else a
    out = op(*[vals(a) for a in args],
             **{k: vals(v) for k, v in kwargs.items()})
    return first.with_values(out)


def reduce_max(sp_input, axis=None, keepdims=None, output_is_sparse=False,
               name=None):
    """The max over the stored values (missing entries do not count, as
    in TF); over an axis, a position with no stored value gives 0."""
    _check(sp_input, "SparseReduceMax")
    if axis is None and not keepdims and not output_is_sparse:
        return _R.reduce_max(sp_input.values)
    v = sp_input.values
    low = np.finfo(v.dtype.as_numpy_dtype).min if v.dtype.is_floating \
        else np.iinfo(v.dtype.as_numpy_dtype).min
    dense = _R.reduce_max(to_dense(sp_input, default_value=low,
                                   validate_indices=False), axis,
                          bool(keepdims))
    out = _A.where(_M.equal(dense, low), _A.zeros_like(dense), dense)
    return from_dense(out) if output_is_sparse else out


# ---- rows, for tf.data (from_tensor_slices, batch, unbatch) ----------------

def batch_rows(sp, start, stop=None):
    """Row start (stop None: rank one less) or rows [start, stop)."""
    ind, shape = _eager(sp, "SparseSlice")
    rows = ind[:, 0] if len(ind) else np.zeros(0, np.int64)
    if stop is None:
        keep = rows == start
        new_ind, new_shape = ind[keep][:, 1:], shape[1:]
    else:
        stop = min(stop, int(shape[0]))
        keep = (rows >= start) & (rows < stop)
        new_ind = ind[keep].copy()
        new_ind[:, 0] -= start
        new_shape = np.concatenate([[stop - start], shape[1:]])
    idx = _C.constant(np.nonzero(keep)[0].astype(np.int64))
    return SparseTensor(
        _C.constant(new_ind.reshape(-1, len(new_shape)).astype(np.int64)),
        _A.gather(sp.values, idx),
        _C.constant(np.asarray(new_shape, np.int64)))


def stack_rows(items):
    """SparseTensors of one rank as the rows of one (each dim the
    largest of the items')."""
    eager = [_eager(s, "SparseStack") for s in items]
    shape = np.max(np.stack([s for _, s in eager]), axis=0)
    ind = np.concatenate(
        [np.concatenate([np.full((len(i), 1), k, np.int64), i], axis=1)
         for k, (i, _) in enumerate(eager)]) if items else \
        np.zeros((0, 1), np.int64)
    return SparseTensor(_C.constant(ind.reshape(-1, len(shape) + 1)),
                        _A.concat([s.values for s in items], 0),
                        _C.constant(np.concatenate(
                            [[len(items)], shape]).astype(np.int64)))
