"""Elementwise ops and reductions on RaggedTensors.

Elementwise ops run on flat_values: ragged operands must have the same
row partitions; a dense operand broadcasts into the ragged shape (over
the uniform inner dims directly, over a ragged dim only with size 1,
repeated per row by value_rowids). A reduction over a ragged axis pads
the rows with the reduction's identity (0, 1, the dtype's lowest or
highest) and reduces the dense result, which is what TF gives for empty
rows (reduce_max of an empty row is the dtype's lowest value)."""
import re

import numpy as np

from .. import dtypes as _dtypes
from ..errors import InvalidArgumentError
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..ops import math_ops as _M
from ..ops import reduce_ops as _R
from ..ops import segment_ops as _S
from .._tensor import Tensor
from .ragged_tensor import RaggedTensor, _iota

BINARY = ["add", "subtract", "multiply", "divide", "truediv", "realdiv",
          "floordiv", "floormod", "mod", "maximum", "minimum", "pow",
          "squared_difference", "equal", "not_equal", "less", "less_equal",
          "greater", "greater_equal", "logical_and", "logical_or",
          "logical_xor", "atan2", "divide_no_nan", "truncatediv",
          "truncatemod", "bitwise_and", "bitwise_or", "bitwise_xor"]

UNARY = ["negative", "abs", "sign", "square", "sqrt", "exp", "floor",
         "ceil", "round", "rint", "sigmoid", "tanh", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
         "log", "log1p", "expm1", "rsqrt", "reciprocal", "erf", "erfc",
         "logical_not", "is_nan", "is_inf", "is_finite", "cast",
         "saturate_cast", "ones_like", "zeros_like", "identity",
         "stop_gradient", "clip_by_value", "relu", "relu6", "elu", "selu",
         "softplus", "softsign", "log_sigmoid", "gelu", "silu", "swish",
         "leaky_relu", "invert", "reciprocal_no_nan"]


def _splits_differ(x, y):
    """The InvalidArgumentError TF raises when eager operands' row
    partitions do not broadcast: its assert_equal text (summarize 3) on
    the two row_splits, x the partition the other operand must match.
    Row counts that differ are TF's scalar check, False == True."""
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        x, y = np.asarray(False), np.asarray(True)
    from ..debugging import failed_lines
    lines = ["Condition x == y did not hold."] + failed_lines(x, y, x == y)
    return InvalidArgumentError(None, None, "\n".join(lines))


def check_same_splits(a, b, op):
    """InvalidArgumentError unless a and b partition their values alike
    (checked on eager values; static shapes only while tracing)."""
    if a.ragged_rank != b.ragged_rank:
        raise ValueError(f"{op}: ragged operands of different ragged_rank "
                         f"({a.ragged_rank} and {b.ragged_rank}): shapes "
                         f"{a.shape} and {b.shape}")
    for sa, sb in zip(a.nested_row_splits, b.nested_row_splits):
        if sa is sb:
            continue
        if sa.dtype != sb.dtype:
            raise ValueError(f"{op}: row_splits dtypes differ "
                             f"({sa.dtype.name} and {sb.dtype.name})")
        if not sa._symbolic and not sb._symbolic:
            if not np.array_equal(sa.numpy(), sb.numpy()):
                raise _splits_differ(sa.numpy(), sb.numpy())
        elif not sa.shape.is_compatible_with(sb.shape):
            raise InvalidArgumentError(
                None, None, f"{op}: Inputs must have identical ragged "
                f"splits; got shapes {a.shape} and {b.shape} (dtype "
                f"{a.dtype.name} and {b.dtype.name})")


def _to_flat(r, o, op):
    """The dense tensor o broadcast against r, as an operand of
    r.flat_values."""
    inner = r.flat_values.shape.rank - 1
    if o.shape.rank <= inner:
        return o
    rank = r.shape.rank
    if o.shape.rank > rank:
        raise InvalidArgumentError(
            None, None, f"{op}: cannot broadcast a tensor of shape "
            f"{o.shape} to a RaggedTensor of shape {r.shape}")
    o = _A.reshape(o, [1] * (rank - o.shape.rank) + list(o.shape.as_list()))
    return _spread(r, o, op, r.shape)


def _spread(r, o, op, full):
    """o (of r's rank, size 1 on r's ragged dim 1) repeated per value."""
    n0, nr = o.shape[0], r.shape[0]
    eager = not r.row_splits._symbolic
    if n0 != 1 and n0 is not None and nr is not None and n0 != nr:
        if eager:
            raise _splits_differ([0] * (n0 + 1), [0] * (nr + 1))
        raise InvalidArgumentError(
            None, None, f"{op}: cannot broadcast a tensor of shape "
            f"{o.shape} to a RaggedTensor of shape {full}")
    if o.shape[1] != 1 and eager and o.shape[1] is not None:
        # TF gives o uniform rows of its size: they must be r's rows.
        m = o.shape[1]
        splits = r.row_splits.numpy()
        uniform = np.arange(len(splits), dtype=splits.dtype) * m
        if not np.array_equal(uniform, splits):
            raise _splits_differ(uniform, splits)
        rest = o.shape.as_list()[2:]
        o = _A.reshape(_A.broadcast_to(o, [len(splits) - 1, m] + rest),
                       [-1] + rest)
        v = r.values
        return _spread(v, o, op, full) if isinstance(v, RaggedTensor) else o
    if o.shape[1] != 1:
        raise InvalidArgumentError(
            None, None, f"{op}: cannot broadcast a tensor of shape "
            f"{o.shape} to a RaggedTensor of shape {full}: its size on a "
            f"ragged dimension must be 1")
    o = _A.squeeze(o, [1])
    if n0 != 1:
        o = _A.gather(o, r.value_rowids())
    v = r.values
    return _spread(v, o, op, full) if isinstance(v, RaggedTensor) else o


def align(args, op):
    """(operands for the flat values..., the ragged template)."""
    template = next(a for a in args if isinstance(a, RaggedTensor))
    out = []
    for a in args:
        if isinstance(a, RaggedTensor):
            if a is not template:
                check_same_splits(template, a, op)
            out.append(a.flat_values)
        elif a is None or isinstance(a, (bool, int, float)):
            out.append(a)
        else:
            t = a if isinstance(a, Tensor) else _C.convert_to_tensor(
                a, dtype_hint=template.dtype)
            out.append(_to_flat(template, t, op))
    return out + [template]


def _op_name(fn, name):
    """TF's op type for errors (math_ops' docs end "The `AddV2` op")."""
    m = re.search(r"The `(\w+)` op", getattr(fn, "__doc__", None) or "")
    return m.group(1) if m else name


def binary(fn, name):
    name = _op_name(fn, name)

    def op(x, y, *args, **kwargs):
        a, b, template = align([x, y], name)
        return template.with_flat_values(fn(a, b, *args, **kwargs))
    return op


def unary(fn, name):
    def op(x, *args, **kwargs):
        return x.with_flat_values(fn(x.flat_values, *args, **kwargs))
    return op


def add_n(inputs, name=None):
    *flat, template = align(list(inputs), "AddN")
    return template.with_flat_values(_M.add_n(flat))


# ---- reductions ----------------------------------------------------------

def _identity(kind, dtype):
    if kind in ("sum", "any"):
        return None if kind == "sum" else False
    if kind == "all":
        return True
    if kind == "prod":
        return 1
    np_dt = dtype.as_numpy_dtype
    info = np.finfo(np_dt) if dtype.is_floating else np.iinfo(np_dt)
    return info.min if kind == "max" else info.max


def _segment_reduce(kind, x):
    """Each row reduced, by the unsorted segment ops: a known number of
    rows is all they need, so this also runs in a traced graph."""
    v, n = x.values, x.shape[0]
    if n is None:
        return _masked_reduce(kind, x)
    ids = x.value_rowids()
    if kind == "sum":
        return _S.unsorted_segment_sum(v, ids, n)
    if kind == "max":
        return _S.unsorted_segment_max(v, ids, n)
    if kind == "min":
        return _S.unsorted_segment_min(v, ids, n)
    # all: no False in the row; any: a True in it (empty rows: True, False)
    flag = _M.logical_not(v) if kind == "all" else v
    count = _S.unsorted_segment_sum(_M.cast(flag, _dtypes.int32), ids, n)
    return _M.equal(count, 0) if kind == "all" else _M.greater(count, 0)


def _masked_reduce(kind, x):
    """Each row reduced when the number of rows is unknown (a traced
    RaggedTensorSpec([None, None])): the segment ops need it static, so
    mask a [rows, values] matrix instead (memory rows x values)."""
    s, v = x.row_splits, x.values
    dt = s.dtype
    iota = _iota(v, dt)
    inside = _M.logical_and(_M.less_equal(s[:-1, None], iota[None, :]),
                            _M.less(iota[None, :], s[1:, None]))
    for _ in range(v.shape.rank - 1):
        inside = _A.expand_dims(inside, -1)
    if kind in ("all", "any"):
        v = _M.logical_not(v) if kind == "all" else v
        hit = _R.reduce_any(_M.logical_and(inside, v[None]), axis=1)
        return _M.logical_not(hit) if kind == "all" else hit
    ident = _identity(kind, v.dtype)
    fill = _A.zeros_like(v[None]) if ident is None else \
        _A.zeros_like(v[None]) + _C.constant(ident, v.dtype)
    masked = _A.where(inside, v[None], fill)
    reduce_fn = {"sum": _R.reduce_sum, "max": _R.reduce_max,
                 "min": _R.reduce_min}[kind]
    return reduce_fn(masked, axis=1)


_SEGMENT = ("sum", "max", "min", "all", "any")


def _reduce_axis(kind, dense_fn, x, axis):
    if isinstance(x, Tensor):
        return dense_fn(x, axis=axis)
    if axis >= 2:
        v = x.values
        return x.with_values(_reduce_axis(kind, dense_fn, v, axis - 1))
    ident = _identity(kind, x.dtype)
    if axis == 1 and x.ragged_rank == 1 and kind in _SEGMENT and (
            x.shape[0] is not None or x.row_splits._symbolic):
        return _segment_reduce(kind, x)
    if x.ragged_rank == 1:
        return dense_fn(x.to_tensor(ident), axis=axis)
    if axis == 1 and x.ragged_rank == 2:
        # Row b of the result: its rows reduced item by item, as long as
        # its longest row.
        dense = dense_fn(x.to_tensor(ident), axis=1)
        lengths = x.with_values(x.values.row_lengths())
        lengths = _reduce_axis("max", _R.reduce_max, lengths, 1)
        lengths = _M.maximum(lengths, _A.zeros_like(lengths))
        return RaggedTensor.from_tensor(dense, lengths=lengths)
    raise NotImplementedError(
        f"reduce_{kind} over axis {axis} of a RaggedTensor of shape "
        f"{x.shape} (ragged_rank {x.ragged_rank}): tfmini reduces the "
        f"outer two axes of ragged_rank 1, axis 1 of ragged_rank 2, and "
        f"any uniform inner axis")


def _axes(axis, rank, kind):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(
        np.asarray(axis.numpy() if isinstance(axis, Tensor) else axis)
        .reshape(-1))
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise ValueError(f"reduce_{kind}: axis {a} out of range for a "
                             f"RaggedTensor of rank {rank}")
        out.append(a + rank if a < 0 else a)
    return sorted(set(out), reverse=True)


def reduce(kind, dense_fn):
    def op(input_tensor, axis=None, keepdims=False, name=None):
        rt = input_tensor
        rank = rt.shape.rank
        if kind == "mean":
            total = _reduce("sum", _R.reduce_sum, rt, axis)
            count = _reduce("sum", _R.reduce_sum,
                            rt.with_flat_values(_A.ones_like(rt.flat_values)),
                            axis)
            out = _M.truediv(total, count)
        else:
            out = _reduce(kind, dense_fn, rt, axis)
        if keepdims:
            if isinstance(out, RaggedTensor):
                raise NotImplementedError(f"reduce_{kind}(keepdims=True) "
                                          f"with a ragged result")
            axes = range(rank) if axis is None else _axes(axis, rank, kind)
            for a in sorted(axes):
                out = _A.expand_dims(out, a)
        return out
    return op


def _reduce(kind, dense_fn, rt, axis):
    if axis is None:
        return dense_fn(rt.flat_values)
    out = rt
    for a in _axes(axis, rt.shape.rank, kind):
        if isinstance(out, RaggedTensor) and a >= out.shape.rank:
            raise ValueError(f"reduce_{kind}: axis {a} out of range")
        out = _reduce_axis(kind, dense_fn, out, a)
    return out


REDUCTIONS = {"reduce_sum": "sum", "reduce_prod": "prod",
              "reduce_max": "max", "reduce_min": "min",
              "reduce_mean": "mean", "reduce_all": "all",
              "reduce_any": "any"}


def size(input, out_type=_dtypes.int32, name=None):  # noqa: A002
    return _A.size(input.flat_values, out_type=out_type)
