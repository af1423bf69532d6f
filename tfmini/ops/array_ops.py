"""Shape and array ops: tf.reshape, tf.concat, tf.gather, tf.where, ...,
and tensor indexing (csrc/ops/ops_shape.def).

Arguments that TF passes as tensors but that decide the shape of the
result (shape, perm, begin/end, paddings, multiples, depth, ...) are
attributes of the C ops: they are read here from Python values or eager
tensors. While tracing they must be static (a symbolic tensor there is a
TypeError that says so); `tf.shape` of a tensor whose static shape is
fully known is a constant, so `tf.reshape(x, tf.shape(y))` traces."""
import builtins
import operator

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .. import errors as _errors
from .._opids import ID
from .._tensor import PLAIN_TENSOR_TYPES as _PLAIN, Tensor

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "identity", "concat",
    "stack", "unstack", "split", "tile", "pad", "slice", "strided_slice",
    "gather", "gather_nd", "broadcast_to", "shape", "size", "rank", "where",
    "fill", "zeros", "ones", "zeros_like", "ones_like", "range", "linspace",
    "one_hot", "eye", "reverse", "tensor_scatter_nd_update",
    "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
    "tensor_scatter_nd_min", "tensor_scatter_nd_max", "scatter_nd",
    "boolean_mask", "broadcast_static_shape", "broadcast_dynamic_shape",
]
_NAMESPACES = {"linalg": ["eye"]}

_OP = {name: ID[name] for name in (
    "Reshape", "Transpose", "ExpandDims", "Squeeze", "Identity", "ConcatV2",
    "Pack", "Unpack", "Split", "SplitV", "Tile", "PadV2", "MirrorPad",
    "ReverseV2", "BroadcastTo", "Slice", "StridedSlice", "GatherV2",
    "GatherNd", "TensorScatterUpdate", "TensorScatterAdd",
    "TensorScatterMin", "TensorScatterMax", "SelectV2",
    "Where", "Shape", "Size", "Rank", "Fill", "ZerosLike", "OnesLike",
    "Range", "LinSpace", "OneHot", "StridedSliceGrad")}

_RESHAPE, _TRANSPOSE = _OP["Reshape"], _OP["Transpose"]
_EXPAND_DIMS, _CONCAT = _OP["ExpandDims"], _OP["ConcatV2"]

# The C ops take at most this many inputs / outputs (op.h); more are
# handled here in groups.
_MAX_ARITY = 256


# ---- argument helpers -------------------------------------------------

def _tensor(x, dtype=None):
    """x as a Tensor (Variables read), dtype an optional DType."""
    if isinstance(x, Tensor) and dtype is None:
        return x
    if hasattr(x, "_as_tensor") and dtype is None:
        return x._as_tensor()
    from .constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype)


def _dims(t):
    return t._shape_tuple


def _static(t, what):
    """The value of an eager tensor as NumPy; a symbolic one is an error
    (the C ops need it as an attribute)."""
    if getattr(t, "_symbolic", False):
        raise TypeError(
            f"tfmini: {what} must be known when the function is traced, but "
            f"got the symbolic tensor {t}. Pass a Python value, or a tensor "
            f"computed from static shapes (tf.shape of a fully defined "
            f"shape is a constant).")
    return np.asarray(t.numpy())


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _int64(v, what):
    """v (a Python int) if int64 holds it: the C attributes are int64."""
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError(f"{what}: {v} is out of range for int64")
    return v


def _int(x, what):
    """A Python int from an int, a NumPy integer or a scalar int tensor.
    `what` names the op and the argument ("Reshape: shape") for errors."""
    if type(x) is int:      # before hasattr, which costs a raised error
        return _int64(x, what)
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        t = _tensor(x)
        if not (t.dtype.is_integer and len(_dims(t)) == 0):
            raise TypeError(f"{what} must be an integer scalar, got a "
                            f"{t.dtype.name} tensor of shape {t.shape}")
        return int(_static(t, what))
    try:
        return _int64(operator.index(x), what)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r} of type "
                        f"{type(x).__name__}") from None


def _ints(x, what):
    """A list of Python ints from a list/tuple (of ints or scalar
    tensors), an int, a TensorShape, a NumPy array or an int tensor."""
    if type(x) is list or type(x) is tuple:
        for v in x:
            if type(v) is not int:
                break
            _int64(v, what)
        else:
            return list(x)
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        t = _tensor(x)
        if not t.dtype.is_integer:
            raise TypeError(f"{what} must be an integer tensor, got "
                            f"{t.dtype.name}")
        return [int(v) for v in _static(t, what).reshape(-1)]
    if hasattr(x, "as_list"):            # TensorShape
        x = x.as_list()
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integers, got {x.dtype}")
        return [_int64(int(v), what) for v in x.reshape(-1)]
    if isinstance(x, (list, tuple, builtins.range)):
        out = []
        for v in x:
            if v is None:
                raise ValueError(f"{what} must be fully defined, got "
                                 f"{list(x)} (None is an unknown dim)")
            out.append(_int(v, what))
        return out
    return [_int(x, what)]


def _int_seq(x):
    """x itself when it is a list or tuple of at most _MAX_INTS ints that
    int64 holds, as the C attribute takes it; None otherwise (then _ints
    converts it, or raises the error that names the op)."""
    if type(x) is not list and type(x) is not tuple or len(x) > _MAX_INTS:
        return None
    for v in x:
        if type(v) is not int or not _INT64_MIN <= v <= _INT64_MAX:
            return None
    return x


def _axes(axis, what):
    return [] if axis is None else _ints(axis, what)


def _common(values):
    """Tensors of values, Python values taking the first tensor's dtype
    (as TF converts the arguments of tf.concat / tf.stack)."""
    dtype = None
    for v in values:
        if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
            dtype = _tensor(v).dtype
            break
    out = []
    for v in values:
        if dtype is not None and not (isinstance(v, Tensor) or
                                      hasattr(v, "_as_tensor")):
            out.append(_tensor(v, dtype))
        else:
            out.append(_tensor(v))
    return out


def _scalar_of(value, dtype, what):
    """A rank-0 tensor of dtype holding value, which must be a value of
    dtype (TypeError naming `what` otherwise: nothing wraps or
    truncates)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        t = _tensor(value)
        if t.dtype != dtype:
            raise TypeError(f"{what}: expected a value of dtype "
                            f"{dtype.name}, got a tensor of dtype "
                            f"{t.dtype.name}")
        return t
    if isinstance(value, np.generic):
        value = value.item()
    if dtype.is_bool and not isinstance(value, bool) and value in (0, 1):
        value = bool(value)             # tf.zeros(..., tf.bool)
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{what}: expected a number, got {value!r} of type "
                        f"{type(value).__name__}")
    try:
        return _C.constant(value, dtype._enum)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {e}") from None


_MAX_INTS = 64      # tfm_attrs.ints (csrc/ops/op.h)


def _call(name, inputs, ints=None, i=None, f=None, dtype=None):
    if ints is not None and len(ints) > _MAX_INTS:
        raise ValueError(f"{name}: at most {_MAX_INTS} ints in all "
                         f"(shape, perm, paddings, ...), got {len(ints)}")
    # Positional: _C.call parses keywords about a microsecond slower.
    return _C.call(_OP[name], inputs, ints, i, f, dtype)


# ---- reshaping and copying -------------------------------------------

def reshape(tensor, shape, name=None):
    """tensor's values in a new shape; one dim may be -1 (inferred)."""
    ints = _int_seq(shape)
    if ints is not None:
        return _C.call(_RESHAPE, (tensor,), ints, None, None, None)
    return _call("Reshape", (tensor,), ints=_ints(shape, "Reshape: shape"))


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permute the dims of a: output dim i is input dim perm[i]; default
    reverses them. conjugate=True also conjugates complex values (TF's
    conj(transpose(a)); real values as they are)."""
    if perm is None and not conjugate and type(a) in _PLAIN:
        # The common call, in as few steps as a tiny op can afford: a
        # tensor's rank is at most _MAX_RANK.
        return _C.call(_TRANSPOSE, (a,), _REVERSED_PERMS[a.ndim])
    a = _tensor(a)
    if conjugate:
        from .complex_ops import conj
        a = conj(a)
    if perm is None:
        return _C.call(_TRANSPOSE, (a,), _REVERSED_PERMS[a.ndim])
    ints = _int_seq(perm)
    if ints is not None:
        return _C.call(_TRANSPOSE, (a,), ints)
    return _call("Transpose", (a,), ints=_ints(perm, "Transpose: perm"))


_MAX_RANK = 8       # TFM_MAX_DIMS (csrc/core/shape.h)
# transpose's default perm (r-1, ..., 0), by rank r.
_REVERSED_PERMS = tuple(tuple(builtins.range(r - 1, -1, -1))
                        for r in builtins.range(_MAX_RANK + 1))


def expand_dims(input, axis, name=None):
    """input with a dim of size 1 inserted at axis (-rank-1 <= axis <=
    rank)."""
    if type(axis) is int and _INT64_MIN <= axis <= _INT64_MAX:
        return _C.call(_EXPAND_DIMS, (input,), None, (axis,))
    return _call("ExpandDims", (input,), i=[_int(axis, "ExpandDims: axis")])


def squeeze(input, axis=None, name=None):
    """input without its size-1 dims (only those in axis, if given)."""
    return _call("Squeeze", (input,), ints=_axes(axis, "Squeeze: axis"))


def identity(input, name=None):
    """A tensor with input's value (recorded on tapes, traced as a
    node)."""
    return _call("Identity", (input,))


def concat(values, axis, name="concat"):
    """Join values along axis (dims must agree elsewhere)."""
    # Two or more tensors and an int: what _common and _int would hand on
    # unchanged.
    if ((type(values) is list or type(values) is tuple)
            and 1 < len(values) <= _MAX_ARITY and type(axis) is int
            and _INT64_MIN <= axis <= _INT64_MAX):
        for v in values:
            if type(v) not in _PLAIN:
                break
        else:
            return _C.call(_CONCAT, values, None, (axis,))
    if isinstance(values, (Tensor,)) or hasattr(values, "_as_tensor"):
        values = [values]
    values = _common(list(values))
    axis = _int(axis, "ConcatV2: axis")
    if len(values) == 1:
        return identity(values[0])
    if len(values) > _MAX_ARITY:
        groups = [values[k:k + _MAX_ARITY]
                  for k in builtins.range(0, len(values), _MAX_ARITY)]
        values = [_call("ConcatV2", g, i=[axis]) if len(g) > 1 else g[0]
                  for g in groups]
    return _call("ConcatV2", values, i=[axis])


def stack(values, axis=0, name="stack"):
    """Stack tensors of one shape along a new axis."""
    values = _common(list(values))
    if not values:
        raise ValueError("tf.stack needs at least one value")
    axis = _int(axis, "Pack: axis")
    if len(values) > _MAX_ARITY:
        r = len(_dims(values[0]))
        ax = axis + r + 1 if axis < 0 else axis
        parts = [_call("Pack", values[k:k + _MAX_ARITY], i=[ax])
                 for k in builtins.range(0, len(values), _MAX_ARITY)]
        return concat(parts, ax)
    return _call("Pack", values, i=[axis])


def unstack(value, num=None, axis=0, name="unstack"):
    """The list of slices of value along axis."""
    value = _tensor(value)
    axis = _int(axis, "Unpack: axis")
    dims = _dims(value)
    if -len(dims) <= axis < len(dims):
        dim = dims[axis]
        if dim is not None and dim > _MAX_ARITY and num in (None, dim):
            out = []
            for part in split(value, _chunks(dim), axis=axis):
                out.extend(unstack(part, axis=axis))
            return out
    if num is None:
        num = -1            # the op reads the dim
    else:
        num = _int(num, "Unpack: num")
        if num < 0:
            raise ValueError(f"Unpack: num must be >= 0, got {num}")
    return list(_call("Unpack", (value,), i=[axis, num]))


def _chunks(n):
    sizes = [_MAX_ARITY] * (n // _MAX_ARITY)
    if n % _MAX_ARITY:
        sizes.append(n % _MAX_ARITY)
    return sizes


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Split value along axis into num_or_size_splits equal parts (an
    int), or parts of the given sizes (a list; one may be -1)."""
    axis = _int(axis, "Split: axis")
    if isinstance(num_or_size_splits, (int, np.integer)) or (
            isinstance(num_or_size_splits, Tensor)
            and len(_dims(num_or_size_splits)) == 0):
        n = _int(num_or_size_splits, "Split: num_or_size_splits")
        return list(_call("Split", (value,), i=[axis, n]))
    sizes = _ints(num_or_size_splits, "Split: num_or_size_splits")
    if num is not None and _int(num, "Split: num") != len(sizes):
        raise ValueError(f"SplitV: num={num} does not match the "
                         f"{len(sizes)} sizes in num_or_size_splits")
    return list(_call("SplitV", (value,), ints=sizes, i=[axis]))


def tile(input, multiples, name=None):
    """input repeated multiples[d] times along each dim d."""
    return _call("Tile", (input,), ints=_ints(multiples, "Tile: multiples"))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """tensor padded by paddings ([rank, 2]: before/after per dim) with
    constant_values (mode CONSTANT) or by mirroring (REFLECT excludes
    the edge, SYMMETRIC includes it)."""
    flat = []
    if isinstance(paddings, (list, tuple)):
        for row in paddings:
            flat.extend(_ints(row, "PadV2: paddings"))
        ranks = {np.ndim(row) for row in paddings}
        widths = {len(row) for row in paddings if np.ndim(row) == 1}
        shape = [len(paddings)] + (
            [2] if not paddings else [] if ranks == {0} else [widths.pop()]
            if ranks == {1} and len(widths) == 1 else [None])
    else:
        flat = _ints(paddings, "PadV2: paddings")
        shape = list(np.shape(paddings)) if isinstance(
            paddings, np.ndarray) else _dims(_tensor(paddings)) \
            if isinstance(paddings, Tensor) else [len(flat)]
    # TF checks the shape, not the count: [1, 2] for a vector is not a
    # padding of 1 before and 2 after.
    if len(shape) != 2 or shape[1] != 2:
        dims = ",".join("?" if d is None else str(d) for d in shape)
        op = "PadV2" if str(mode).upper() == "CONSTANT" else "MirrorPad"
        raise _errors.InvalidArgumentError(
            None, None, f"{op}: paddings must be a matrix with 2 columns, "
            f"got shape [{dims}]")
    mode = str(mode).upper()
    if mode == "CONSTANT":
        tensor = _tensor(tensor)
        f, i = _pad_constant(constant_values, tensor.dtype)
        return _call("PadV2", (tensor,), ints=flat, f=f, i=i)
    if mode in ("REFLECT", "SYMMETRIC"):
        return _call("MirrorPad", (tensor,), ints=flat,
                     i=[0 if mode == "REFLECT" else 1])
    raise ValueError(f'Value of argument `mode` expected to be one of '
                     f'"CONSTANT", "REFLECT", or "SYMMETRIC". Received '
                     f'`mode` = {mode}')


def _pad_constant(value, dtype):
    """PadV2's f and i attributes for constant_values of a tensor of
    dtype: integers travel exactly in i[2] (int64 beyond 2**53), and
    must be values of dtype (TypeError otherwise, as TF's conversion)."""
    what = "PadV2: constant_values"
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        t = _tensor(value)
        if len(_dims(t)) != 0:
            raise ValueError(f"{what} must be a scalar, got shape {t.shape}")
        value = _static(t, what).item()
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{what} must be a number, got {value!r} of type "
                        f"{type(value).__name__}")
    if dtype.is_integer:
        if isinstance(value, float):
            if not value.is_integer():
                raise TypeError(f"{what} = {value!r} is not a value of "
                                f"dtype {dtype.name}")
            value = int(value)
        if not dtype.min <= value <= dtype.max:
            raise TypeError(f"{what} = {value!r} is out of range for dtype "
                            f"{dtype.name}")
        return [float(value)], [0, 1, int(value)]
    return [float(value)], None


def reverse(tensor, axis, name=None):
    """tensor with the dims in axis reversed."""
    return _call("ReverseV2", (tensor,), ints=_axes(axis, "ReverseV2: axis"))


def broadcast_to(input, shape, name=None):
    """input broadcast (NumPy rules) to shape."""
    return _call("BroadcastTo", (input,),
                 ints=_ints(shape, "BroadcastTo: shape"))


# ---- shapes ----------------------------------------------------------

def _broadcast_dims(x, y):
    """NumPy's broadcast of two dim tuples that may hold None (unknown),
    or None when they cannot broadcast."""
    n = builtins.max(len(x), len(y))
    x = (1,) * (n - len(x)) + tuple(x)
    y = (1,) * (n - len(y)) + tuple(y)
    out = []
    for a, b in zip(x, y):
        if a == 1 or a == b:
            out.append(b)
        elif b == 1:
            out.append(a)
        elif a is None or b is None:
            out.append(b if a is None else a)
        else:
            return None
    return tuple(out)


def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape that shape_x and shape_y broadcast to."""
    from ..tensor_shape import TensorShape
    shape_x, shape_y = TensorShape(shape_x), TensorShape(shape_y)
    if shape_x.rank is None or shape_y.rank is None:
        return TensorShape(None)
    dims = _broadcast_dims(shape_x.as_list(), shape_y.as_list())
    if dims is None:
        raise ValueError(f"Incompatible shapes for broadcasting. Two shapes "
                         f"are compatible if for each dimension pair they "
                         f"are either equal or one of them is 1. Received: "
                         f"{shape_x} and {shape_y}.")
    return TensorShape(dims)


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (a 1-D int tensor) that shapes shape_x and shape_y
    (1-D int tensors or lists) broadcast to."""
    x = _tensor(shape_x)
    y = _tensor(shape_y, x.dtype if not isinstance(shape_y, Tensor)
                else None)
    if x.dtype != y.dtype or not x.dtype.is_integer:
        raise _errors.InvalidArgumentError(
            f"BroadcastArgs: shapes must be int32 or int64 tensors of one "
            f"dtype, got {x.dtype.name} and {y.dtype.name}")
    xs = [int(v) for v in _static(x, "BroadcastArgs: s0").reshape(-1)]
    ys = [int(v) for v in _static(y, "BroadcastArgs: s1").reshape(-1)]
    dims = _broadcast_dims(xs, ys)
    if dims is None:
        fmt = lambda d: "[" + ",".join(map(str, d)) + "]"   # noqa: E731
        raise _errors.InvalidArgumentError(f"BroadcastArgs: Incompatible shapes: "
                                      f"{fmt(xs)} vs. {fmt(ys)}")
    return _C.constant(np.asarray(dims, x.dtype.as_numpy_dtype),
                       x.dtype._enum)


def shape(input, out_type=None, name=None):
    """The shape of input as a 1-D int32 (or out_type) tensor."""
    dtype = _dtypes.int32 if out_type is None else _dtypes.as_dtype(out_type)
    t = _tensor(input)
    dims = _dims(t)
    if getattr(t, "_symbolic", False) and None not in dims:
        # Static while tracing: a constant, so shape arithmetic folds.
        return _C.constant(np.asarray(dims, dtype.as_numpy_dtype),
                           dtype._enum)
    return _call("Shape", (t,), dtype=dtype._enum)


def size(input, out_type=None, name=None):
    """The number of elements of input, as an int32 (or out_type)
    scalar."""
    dtype = _dtypes.int32 if out_type is None else _dtypes.as_dtype(out_type)
    return _call("Size", (input,), dtype=dtype._enum)


def rank(input, name=None):
    """The rank of input, as an int32 scalar."""
    return _call("Rank", (input,))


# ---- slicing ---------------------------------------------------------

def slice(input_, begin, size, name=None):
    """The block of input_ that starts at begin with extent size (-1: to
    the end of the dim)."""
    b = _ints(begin, "Slice: begin")
    s = _ints(size, "Slice: size")
    if len(b) != len(s):
        raise ValueError(f"begin ({len(b)} values) and size ({len(s)} "
                         f"values) must have the same length")
    return _call("Slice", (input_,), ints=b + s)


def strided_slice(input_, begin, end, strides=None, begin_mask=0,
                  end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """TF's StridedSlice: the slice begin:end:strides per spec entry, with
    the masks of tf.strided_slice (what `tensor[...]` builds)."""
    b = _ints(begin, "StridedSlice: begin")
    e = _ints(end, "StridedSlice: end")
    s = ([1] * len(b) if strides is None
         else _ints(strides, "StridedSlice: strides"))
    if not len(b) == len(e) == len(s):
        raise ValueError(f"begin, end and strides must have the same "
                         f"length, got {len(b)}, {len(e)} and {len(s)}")
    masks = [_int(m, f"StridedSlice: {n}") for m, n in (
        (begin_mask, "begin_mask"), (end_mask, "end_mask"),
        (ellipsis_mask, "ellipsis_mask"), (new_axis_mask, "new_axis_mask"),
        (shrink_axis_mask, "shrink_axis_mask"))]
    return _call("StridedSlice", (input_,), ints=b + e + s, i=masks)


def _strided_slice_grad(dy, shape, begin, end, strides, begin_mask=0,
                        end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                        shrink_axis_mask=0):
    """TF's raw StridedSliceGrad: dy scattered into zeros of `shape` where
    strided_slice(x of `shape`, ...) read (the gradient of indexing)."""
    what = "StridedSliceGrad: "
    shape = _ints(shape, what + "shape")
    return _call("StridedSliceGrad", (dy,),
                 shape + _ints(begin, what + "begin")
                 + _ints(end, what + "end")
                 + _ints(strides, what + "strides"),
                 (int(begin_mask), int(end_mask), int(ellipsis_mask),
                  int(new_axis_mask), int(shrink_axis_mask), len(shape)))


_INDEX_TYPES_MSG = ("Only integers, slices (`:`), ellipsis (`...`), "
                    "tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
                    "tensors are valid indices")


def _index(x, dynamic):
    """An int for a slice bound or index; a symbolic scalar int tensor is
    returned as is when `dynamic` accepts it."""
    if type(x) is int:
        return x
    if isinstance(x, bool):
        # Not 1 or 0: x[[True, False]] meant a mask, and TF refuses it
        # (an item of a bool index tuple is no integer there either).
        raise TypeError(f"{_INDEX_TYPES_MSG}, got {x!r} (a Python bool; "
                        f"use tf.boolean_mask for a mask)")
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        t = _tensor(x)
        if not (t.dtype.is_integer and len(_dims(t)) == 0):
            raise TypeError(f"{_INDEX_TYPES_MSG}, got {x!r}")
        if getattr(t, "_symbolic", False):
            if dynamic:
                return t
            raise TypeError(
                "tfmini: slice bounds must be known when the function is "
                f"traced, got the symbolic tensor {t} (a single symbolic "
                "index `x[i]` is supported; `x[i:j]` is not)")
        return int(t.numpy())
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{_INDEX_TYPES_MSG}, got {x!r}") from None


def _shrink_index(i):
    """An index taking one element: out of int64 it is out of range of
    every dim (the op checks the others)."""
    if not _INT64_MIN <= i <= _INT64_MAX:
        raise IndexError(f"StridedSlice: index {i} is out of range")
    return i


def _bound(i):
    """A slice bound or step clamped into int64: as in Python, a bound
    past the end means the end (and a step that long, one element)."""
    return _INT64_MIN if i < _INT64_MIN else builtins.min(i, _INT64_MAX)


def _is_bool_mask(key):
    if isinstance(key, bool):
        return True
    if isinstance(key, Tensor):
        return key.dtype == _dtypes.bool
    return isinstance(key, np.ndarray) and key.dtype == np.bool_


_STRIDED_SLICE = _OP["StridedSlice"]


def _getitem(tensor, key, _force_dynamic=False):
    """tensor[key], as TF's _slice_helper: a StridedSlice with masks.

    Scalar int tensors that are symbolic (while tracing) cannot be
    attributes: they are left as whole slices in the StridedSlice and
    taken afterwards with GatherV2 on the axis they land on.
    `_force_dynamic` treats eager int tensors that way too (tests)."""
    if (type(key) is int or type(key) is tuple
            or type(key) is builtins.slice):
        out = _C.getitem(tensor, key)       # ints and int slices only
        if out is not NotImplemented:
            return out
    return _getitem_general(tensor, key, _force_dynamic)


def _getitem_general(tensor, key, _force_dynamic=False):
    """tensor[key] for the keys _C.getitem leaves to Python."""
    if _is_bool_mask(key):
        return boolean_mask(tensor, key)
    if not isinstance(key, (list, tuple)):
        key = (key,)
    ints, masks, gathers = _slice_spec(key, _force_dynamic)
    if gathers and _whole(ints, masks, len(key)):
        # x[i] with a symbolic i: the StridedSlice would copy all of x
        # only for the gather to take one row (per loop iteration).
        out = _tensor(tensor)
    else:
        out = _C.call(_STRIDED_SLICE, (tensor,), ints, masks)
    if gathers:
        out = _gather_dynamic(tensor, key, out, gathers, masks[2], masks[3],
                              masks[4])
    return out


def _whole(ints, masks, n):
    """Whether a StridedSlice spec of n entries takes all of its input:
    every entry a full unit-stride slice or an ellipsis, none shrunk or
    new."""
    bmask, emask, ellipsis, newaxis, shrink = masks
    if newaxis or shrink:
        return False
    full = bmask & emask
    return builtins.all(((ellipsis >> k) & 1) or
                        (((full >> k) & 1) and ints[2 * n + k] == 1)
                        for k in builtins.range(n))


def _slice_spec(key, force_dynamic=False):
    """StridedSlice's attrs for an index tuple: (begin + end + strides,
    (begin_mask, end_mask, ellipsis_mask, new_axis_mask,
    shrink_axis_mask), [(entry, symbolic index tensor), ...])."""
    begin, end, strides = [], [], []
    bmask = emask = ellipsis = newaxis = shrink = 0
    gathers = []
    for k, s in enumerate(key):
        bit = 1 << k
        if type(s) is int:
            begin.append(_shrink_index(s))
            end.append(s + 1 if s < _INT64_MAX else s)  # unused: shrunk
            strides.append(1)
            shrink |= bit
        elif isinstance(s, builtins.slice):
            if s.start is None:
                begin.append(0)
                bmask |= bit
            else:
                begin.append(_bound(_index(s.start, False)))
            if s.stop is None:
                end.append(0)
                emask |= bit
            else:
                end.append(_bound(_index(s.stop, False)))
            strides.append(1 if s.step is None
                           else _bound(_index(s.step, False)))
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis |= bit
        elif s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            newaxis |= bit
        else:
            if force_dynamic and isinstance(s, Tensor):
                i = s
            else:
                i = _index(s, True)
            if isinstance(i, Tensor):
                gathers.append((k, i))
                begin.append(0)
                end.append(0)
                strides.append(1)
                bmask |= bit
                emask |= bit
                continue
            begin.append(_shrink_index(i))
            end.append(i + 1 if i < _INT64_MAX else i)
            strides.append(1)
            shrink |= bit
    if len(begin) * 3 > 64:
        raise ValueError(f"StridedSlice: an index of {len(begin)} entries "
                         f"is too long (at most 21)")
    return (begin + end + strides, (bmask, emask, ellipsis, newaxis, shrink),
            gathers)


def _gather_dynamic(tensor, key, out, gathers, ellipsis, newaxis, shrink):
    """Take the symbolic indices left whole in `out` with GatherV2, from
    the last to the first so that earlier output axes keep their place."""
    r = len(_dims(_tensor(tensor)))
    n = len(key)
    # Output axis of each spec entry: new axes and kept dims count, shrunk
    # entries do not, an ellipsis spans the dims the others leave.
    explicit = builtins.sum(1 for k in builtins.range(n)
                            if not (ellipsis >> k) & 1
                            and not (newaxis >> k) & 1)
    axis_of = {}
    pos = 0
    for k in builtins.range(n):
        if (ellipsis >> k) & 1:
            pos += r - explicit
        elif (shrink >> k) & 1:
            continue
        else:
            axis_of[k] = pos
            pos += 1
    for k, idx in reversed(gathers):
        axis = axis_of[k]
        # A negative index counts from the end, as for Python ints.
        dim = _dims(out)[axis]
        size = dim if dim is not None else shape(out, out_type=idx.dtype)[axis]
        idx = where(idx < 0, idx + size, idx)
        out = gather(out, idx, axis=axis)
    return out


# ---- gather / scatter / select ---------------------------------------

def _indices(x, op):
    """Index values as an int32 tensor (int64 when they need it); `op`
    names the op in errors."""
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        return _tensor(x)
    try:
        a = np.asarray(x)
    except (ValueError, OverflowError) as e:
        raise ValueError(f"{op}: indices {x!r} are not a rectangular array "
                         f"of integers ({e})") from None
    if a.dtype.kind not in "iu" and a.size:
        raise TypeError(f"{op}: indices must be integers, got {a.dtype}")
    if a.dtype in (np.int32, np.int64):
        return _C.constant(a)
    if a.size and (int(a.min()) < _INT64_MIN or int(a.max()) > _INT64_MAX):
        raise ValueError(f"{op}: indices are out of range for int64")
    small = not a.size or (int(a.min()) >= -2 ** 31
                           and int(a.max()) < 2 ** 31)
    return _C.constant(a.astype(np.int32 if small else np.int64))


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0,
           name=None):
    """Slices of params along axis at indices (out of range:
    InvalidArgumentError)."""
    batch_dims = _int(batch_dims, "GatherV2: batch_dims")
    axis = batch_dims if axis is None else _int(axis, "GatherV2: axis")
    return _call("GatherV2", (params, _indices(indices, "GatherV2")),
                 i=[axis, batch_dims])


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of params at the index vectors of indices' last dim."""
    indices = _indices(indices, "GatherNd")
    batch_dims = _int(batch_dims, "GatherNd: batch_dims")
    if batch_dims == 0:
        return _call("GatherNd", (params, indices))
    # Batched: prepend each index vector's batch coordinates and gather
    # from params with its batch dims flattened into one.
    params = _tensor(params)
    pdims, idims = _dims(params), _dims(indices)
    if batch_dims < 0 or batch_dims >= len(idims) or batch_dims > len(pdims):
        raise ValueError(f"batch_dims = {batch_dims} is out of range for "
                         f"indices of rank {len(idims)}")
    bshape = list(idims[:batch_dims])
    if None in bshape or None in pdims[:batch_dims] or None in idims:
        raise ValueError("gather_nd with batch_dims needs known shapes")
    nb = int(np.prod(bshape))
    flat_p = reshape(params, [nb] + list(pdims[batch_dims:]))
    flat_i = reshape(indices, [nb] + list(idims[batch_dims:]))
    b = reshape(range(nb, dtype=indices.dtype),
                [nb] + [1] * (len(idims) - batch_dims))
    b = broadcast_to(b, [nb] + list(idims[batch_dims:-1]) + [1])
    res = _call("GatherNd", (flat_p, concat([b, flat_i], -1)))
    return reshape(res, bshape + list(_dims(res)[1:]))


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of tensor with the slices at indices replaced by updates."""
    tensor = _tensor(tensor)
    updates = _common([tensor, updates])[1]
    return _call("TensorScatterUpdate",
                 (tensor, _indices(indices, "TensorScatterUpdate"), updates))


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of tensor with updates added at indices."""
    tensor = _tensor(tensor)
    updates = _common([tensor, updates])[1]
    return _call("TensorScatterAdd",
                 (tensor, _indices(indices, "TensorScatterAdd"), updates))


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of tensor with updates subtracted at indices."""
    tensor = _tensor(tensor)
    updates = _common([tensor, updates])[1]
    if tensor.dtype.is_bool:
        raise _errors.InvalidArgumentError(
            "TensorScatterSub expects numeric inputs, got bool")
    # Unsigned updates negate modulo 2^n, so the sum still subtracts.
    return tensor_scatter_nd_add(tensor, indices, _C.unary(ID["Neg"],
                                                           updates))


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """A copy of tensor where each indexed position keeps the least of
    its value and the updates aimed at it."""
    tensor = _tensor(tensor)
    updates = _common([tensor, updates])[1]
    return _call("TensorScatterMin",
                 (tensor, _indices(indices, "TensorScatterMin"), updates))


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """A copy of tensor where each indexed position keeps the greatest
    of its value and the updates aimed at it."""
    tensor = _tensor(tensor)
    updates = _common([tensor, updates])[1]
    return _call("TensorScatterMax",
                 (tensor, _indices(indices, "TensorScatterMax"), updates))


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of shape with updates added at indices (repeats sum)."""
    updates = _tensor(updates)
    return tensor_scatter_nd_add(zeros(shape, updates.dtype), indices,
                                 updates)


def where(condition, x=None, y=None, name=None):
    """where(condition): the int64 [n, rank] coordinates of condition's
    true (nonzero) elements. where(condition, x, y): x where condition
    else y, all three broadcast."""
    if x is None and y is None:
        c = _tensor(condition)
        if len(_dims(c)) == 0:
            # TF's Where kernel handles ranks 1 to 8 only.
            raise _errors.InvalidArgumentError(
                None, None, "WhereOp : Unhandled input dimensions: 0 (the "
                "condition is a scalar)")
        if getattr(c, "_symbolic", False):
            count = -1
        else:
            count = int(np.count_nonzero(c.numpy()))
        return _call("Where", (c,), i=[count])
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    cond = _tensor(condition)
    x, y = _common([x, y])
    return _call("SelectV2", (cond, x, y))


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The elements (axis None: from dim 0) of tensor where mask is true;
    mask's shape must match tensor's dims axis:axis+mask.ndim."""
    tensor = _tensor(tensor)
    mask = _tensor(mask)
    if mask.dtype != _dtypes.bool:
        raise TypeError(f"mask must be a bool tensor, got {mask.dtype.name}")
    tdims, mdims = _dims(tensor), _dims(mask)
    axis = 0 if axis is None else _int(axis, "boolean_mask: axis")
    if axis < 0:
        axis += len(tdims)
    k = len(mdims)
    if k == 0:
        raise ValueError("mask cannot be scalar.")
    if axis < 0 or axis + k > len(tdims):
        raise ValueError(f"mask of shape {mask.shape} does not fit tensor of "
                         f"shape {tensor.shape} at axis {axis}")
    for d in builtins.range(k):
        a, b = tdims[axis + d], mdims[d]
        if a is not None and b is not None and a != b:
            raise ValueError(f"Shapes {tensor.shape[axis:axis + k]} and "
                             f"{mask.shape} are incompatible")
    lead = list(tdims[:axis])
    if None in lead or None in tdims[axis + k:]:
        raise ValueError("boolean_mask needs the dims outside the mask to "
                         "be known")
    # The masked dims as one: their size when known (-1 cannot be
    # inferred next to a zero dim).
    masked = [a if a is not None else b
              for a, b in zip(tdims[axis:axis + k], mdims)]
    n = -1 if None in masked else int(np.prod(masked, dtype=np.int64))
    flat = reshape(tensor, lead + [n] + list(tdims[axis + k:]))
    idx = reshape(where(reshape(mask, [-1])), [-1])
    return gather(flat, idx, axis=axis)


# ---- tensors from values ---------------------------------------------

def fill(dims, value, name=None):
    """A tensor of shape dims filled with the scalar value (its dtype)."""
    return _call("Fill", (_tensor(value),), ints=_ints(dims, "Fill: dims"))


def _dtype(dtype):
    return _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros."""
    dtype = _dtype(dtype)
    return fill(shape, _scalar_of(0, dtype, "Fill"))


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones."""
    dtype = _dtype(dtype)
    return fill(shape, _scalar_of(1, dtype, "Fill"))


def _like(op, value, input, dtype):
    t = _tensor(input)
    if dtype is None or _dtypes.as_dtype(dtype) == t.dtype:
        return _call(op, (t,))
    dtype = _dtypes.as_dtype(dtype)
    dims = _dims(t)
    if None not in dims:
        return fill(list(dims), _scalar_of(value, dtype, "Fill"))
    from .math_ops import cast
    return cast(_call(op, (t,)), dtype)


def zeros_like(input, dtype=None, name=None):
    """Zeros of input's shape and dtype (or dtype)."""
    return _like("ZerosLike", 0, input, dtype)


def ones_like(input, dtype=None, name=None):
    """Ones of input's shape and dtype (or dtype)."""
    return _like("OnesLike", 1, input, dtype)


_RANGE_ORDER = ["int8", "uint8", "int16", "int32", "int64", "float16",
                "float32", "float64"]


def _arg_dtype(v):
    if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
        return _tensor(v).dtype
    if isinstance(v, (bool, np.bool_)):
        return _dtypes.int32
    if isinstance(v, (int, np.integer)):
        return (_dtypes.as_dtype(v.dtype) if isinstance(v, np.integer)
                else _dtypes.int32)
    if isinstance(v, np.floating):
        return _dtypes.as_dtype(v.dtype)
    return _dtypes.float32


def _pyvalue(v, what):
    if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
        t = _tensor(v)
        if len(_dims(t)) != 0:
            raise ValueError(f"{what} must be a scalar, got shape {t.shape}")
        return _static(t, what).item()
    return v


def _float(v, what):
    v = _pyvalue(v, what)
    if not isinstance(v, (bool, int, float, np.number)):
        raise TypeError(f"{what} must be a number, got {v!r} of type "
                        f"{type(v).__name__}")
    return float(v)


def range(start, limit=None, delta=1, dtype=None, name="range"):
    """[start, start + delta, ...) up to limit (exclusive); range(n) is
    0..n-1. Ints give int32, floats float32 (or the tensors' dtype)."""
    if limit is None:
        start, limit = 0, start
    if dtype is None:
        dtype = builtins.max((_arg_dtype(v) for v in (start, limit, delta)),
                             key=lambda d: _RANGE_ORDER.index(d.name))
    else:
        dtype = _dtypes.as_dtype(dtype)
    names = ("Range: start", "Range: limit", "Range: delta")
    vals = [_pyvalue(v, n) for v, n in zip((start, limit, delta), names)]
    for v, n in zip(vals, names):
        if not isinstance(v, (bool, int, float, np.number)):
            raise TypeError(f"{n} must be a number, got {v!r} of type "
                            f"{type(v).__name__}")
    if dtype.is_integer:
        for v, n in zip(vals, names):
            if (isinstance(v, (float, np.floating))
                    and not float(v).is_integer()):
                raise TypeError(f"{n} = {v} is not an integer but dtype "
                                f"is {dtype.name}")
        return _call("Range", (), i=[_int64(int(v), n)
                                     for v, n in zip(vals, names)],
                     dtype=dtype._enum)
    return _call("Range", (), f=[float(v) for v in vals], dtype=dtype._enum)


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop (both included)."""
    dtype = _arg_dtype(start)
    if not dtype.is_floating:
        dtype = _dtypes.float32
    if _int(axis, "LinSpace: axis") not in (0, -1):
        raise ValueError("tfmini's linspace takes scalar start and stop "
                         "(axis must be 0)")
    return _call("LinSpace", (),
                 f=[_float(start, "LinSpace: start"),
                    _float(stop, "LinSpace: stop")],
                 i=[_int(num, "LinSpace: num")], dtype=dtype._enum)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None,
            dtype=None, name=None):
    """A one-hot encoding of indices along a new axis (default last) of
    size depth: on_value (1) at the index, off_value (0) elsewhere."""
    if dtype is None:
        for v in (on_value, off_value):
            if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
                dtype = _tensor(v).dtype
                break
            if v is not None and dtype is None:
                dtype = (_dtypes.bool if isinstance(v, (bool, np.bool_))
                         else _arg_dtype(v))
                break
    dtype = _dtype(dtype)
    on = _scalar_of(1 if on_value is None else on_value, dtype,
                    "OneHot: on_value")
    off = _scalar_of(0 if off_value is None else off_value, dtype,
                     "OneHot: off_value")
    axis = -1 if axis is None else _int(axis, "OneHot: axis")
    return _call("OneHot", (_indices(indices, "OneHot"), on, off),
                 i=[_int(depth, "OneHot: depth"), axis])


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32,
        name=None):
    """The identity matrix [num_rows, num_columns], optionally repeated
    over batch_shape."""
    n = _int(num_rows, "eye: num_rows")
    m = n if num_columns is None else _int(num_columns, "eye: num_columns")
    out = one_hot(range(n), m, dtype=_dtype(dtype))
    if batch_shape is not None:
        out = broadcast_to(out, _ints(batch_shape, "eye: batch_shape")
                           + [n, m])
    return out


# Indexing of tensors (see tfmini/_tensor.py).
# x[key]: _C.getitem's fast path called straight from the slot (a
# Python function in between was a third of a tiny x[0]), then
# _getitem_general for the keys it leaves.
Tensor.__getitem__ = _C.getitem_method(_getitem_general)
