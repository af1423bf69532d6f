"""API fuzz tests of the elementwise, shape/indexing and conv families.

Every public op is called with random arguments: every dtype,
broadcast-compatible and incompatible shapes, rank 0 and empty tensors,
out-of-range axes, perms and indices (int32 and int64, negative, past
int64), extreme values (NaN, inf, INT_MIN) and Python objects of the
wrong kind. Each call must either return what a NumPy oracle says (where
one is defined here) or raise one of TF's errors / ValueError /
TypeError / IndexError, TF's errors naming the op (fuzz_util.check_call);
never crash, never leak (live tensor and buffer counts return to where
they were), never return a silently wrong number.

The default run is fast and deterministic (25 examples per property);
test_long_profile (marked slow) runs them all again with 500 fresh
random examples each. TFMINI_FUZZ_EXAMPLES and TFMINI_FUZZ_RANDOM=1 set
that by hand (fuzz_util.py)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfmini as tf
from tfmini.ops import array_ops, conv_ops
from fuzz_util import (ALLOWED, DTYPES, FLOATS, FUZZ, INTS, JUNK,
                       CallError, alloc_zone, arrays, as_py, assert_close,
                       assert_same, attr_ints, cast_ref, check_call, dtypes,
                       live, no_leak, shapes, small_shapes, special_values,
                       wrap)
from specs.spec_conv import (np_avg_pool, np_conv2d,
                             np_conv2d_backprop_filter,
                             np_conv2d_backprop_input, np_max_pool, pads_1d)

IAE = tf.errors.InvalidArgumentError


def _np(dtype):
    return np.dtype(dtype)


# ==== elementwise ============================================================

def _int_binary(name):
    """Reference of an integer binary op over Python ints, or "error"."""
    def trunc_div(x, y):
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    table = {
        "add": lambda x, y: x + y,
        "subtract": lambda x, y: x - y,
        "multiply": lambda x, y: x * y,
        "maximum": max,
        "minimum": min,
        "squared_difference": lambda x, y: (x - y) ** 2,
        "floordiv": lambda x, y: x // y,
        "floormod": lambda x, y: x % y,
        "truncatediv": trunc_div,
        "truncatemod": lambda x, y: x - y * trunc_div(x, y),
        "bitwise_and": lambda x, y: x & y,
        "bitwise_or": lambda x, y: x | y,
        "bitwise_xor": lambda x, y: x ^ y,
    }
    return table.get(name)


def _float_binary(name, x, y):
    with np.errstate(all="ignore"):
        if name == "add":
            return x + y
        if name == "subtract":
            return x - y
        if name == "multiply":
            return x * y
        if name == "maximum":
            return np.maximum(x, y)
        if name == "minimum":
            return np.minimum(x, y)
        if name == "squared_difference":
            return (x - y) * (x - y)
        if name in ("realdiv", "truediv"):
            return x / y
        if name == "divide_no_nan":
            return np.where(y == 0, np.zeros_like(x), x / y)
        if name == "atan2":
            return np.arctan2(x, y)
        if name == "pow":
            return np.power(x, y)
        if name == "floordiv":
            return np.floor(x / y)
        if name == "floormod":
            r = np.fmod(x, y)
            return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)
        if name == "truncatediv":
            return np.trunc(x / y)
        if name == "truncatemod":
            return np.fmod(x, y)
    return None


_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
            "less_equal": np.less_equal, "greater": np.greater,
            "greater_equal": np.greater_equal}
_LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
            "logical_xor": np.logical_xor}

# name -> (TF op name, which dtypes it takes)
BINARY = {
    "add": ("AddV2", "numeric"), "subtract": ("Sub", "numeric"),
    "multiply": ("Mul", "numeric"), "maximum": ("Maximum", "numeric"),
    "minimum": ("Minimum", "numeric"),
    "squared_difference": ("SquaredDifference", "numeric"),
    "floordiv": ("FloorDiv", "numeric"), "floormod": ("FloorMod", "numeric"),
    "truncatediv": ("TruncateDiv", "numeric"),
    "truncatemod": ("TruncateMod", "numeric"), "pow": ("Pow", "numeric"),
    "realdiv": ("RealDiv", "float"), "divide_no_nan": ("DivNoNan", "float"),
    "atan2": ("Atan2", "float"),
    "equal": ("Equal", "any"), "not_equal": ("NotEqual", "any"),
    "less": ("Less", "numeric"), "less_equal": ("LessEqual", "numeric"),
    "greater": ("Greater", "numeric"),
    "greater_equal": ("GreaterEqual", "numeric"),
    "logical_and": ("LogicalAnd", "bool"), "logical_or": ("LogicalOr", "bool"),
    "logical_xor": ("LogicalXor", "bool"),
    "bitwise_and": ("BitwiseAnd", "int"), "bitwise_or": ("BitwiseOr", "int"),
    "bitwise_xor": ("BitwiseXor", "int"),
}


def _fn(name):
    from tfmini.ops import math_ops
    for ns in (tf.math, math_ops, tf):
        if hasattr(ns, name):
            return getattr(ns, name)
    raise AttributeError(name)


def _takes(kind, dtype):
    d = _np(dtype)
    return {"numeric": d.kind != "b", "float": d.kind == "f",
            "any": True, "bool": d.kind == "b",
            "int": d.kind in "iu"}[kind]


def _broadcast(sa, sb):
    try:
        return np.broadcast_shapes(sa, sb)
    except ValueError:
        return None


def binary_expect(name, x, y):
    """What tf.<name>(x, y) must give for arrays x, y: an array, or
    "error"."""
    op, kind = BINARY[name]
    if x.dtype != y.dtype or not _takes(kind, x.dtype.name):
        return "error"
    out_shape = _broadcast(x.shape, y.shape)
    if out_shape is None:
        return "error"
    xb, yb = np.broadcast_to(x, out_shape), np.broadcast_to(y, out_shape)
    if name in _COMPARE:
        with np.errstate(all="ignore"):
            return _COMPARE[name](xb, yb)
    if name in _LOGICAL:
        return _LOGICAL[name](xb, yb)
    d = x.dtype
    if d.kind == "f":
        if d == np.float16:   # computed in float32, rounded once
            return _float_binary(name, xb.astype(np.float32),
                                 yb.astype(np.float32)).astype(np.float16)
        return _float_binary(name, xb, yb).astype(d)
    px, py = as_py(xb), as_py(yb)
    if name in ("floordiv", "floormod", "truncatediv", "truncatemod"):
        if np.any(yb == 0):
            return "error"
    if name == "pow":
        if np.any(yb < 0):
            return "error"
        bits = 8 * d.itemsize
        f = np.frompyfunc(lambda a, b: pow(int(a), int(b), 1 << bits), 2, 1)
        return wrap(f(px, py) if px.size else px, d)
    f = np.frompyfunc(_int_binary(name), 2, 1)
    return wrap(f(px, py) if px.size else px, d)


def _compare_for(dtype):
    d = _np(dtype)
    if d.kind != "f":
        return assert_same
    # libm (and libmvec) against NumPy's: a few ulp.
    tol = {2: 2e-3, 4: 2e-6, 8: 1e-13}[d.itemsize]
    return assert_close(tol, 0)


@st.composite
def binary_args(draw):
    name = draw(st.sampled_from(sorted(BINARY)))
    dx = draw(dtypes)
    dy = dx if draw(st.integers(0, 4)) else draw(dtypes)
    sx = draw(small_shapes)
    mode = draw(st.integers(0, 3))
    if mode == 0:
        sy = sx
    elif mode == 1:    # broadcast: drop leading dims / set dims to 1
        k = draw(st.integers(0, len(sx)))
        sy = tuple(1 if draw(st.booleans()) else s for s in sx[k:])
    else:
        sy = draw(small_shapes)
    x = draw(arrays(dx, sx))
    y = draw(arrays(dy, sy))
    if draw(st.booleans()):
        x, y = y, x
    return name, x, y


def _run_binary(name, x, y):
    want = binary_expect(name, x, y)
    op = BINARY[name][0]
    fn = _fn(name)
    check_call(lambda: fn(tf.constant(x), tf.constant(y)), [op], want,
               _compare_for(x.dtype.name))


@FUZZ
@given(binary_args())
def test_binary_ops_match_numpy(args):
    _run_binary(*args)



def _special_pairs(dtype):
    v = np.array(special_values(dtype), dtype=dtype)
    return np.repeat(v, len(v)), np.tile(v, len(v))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_ops_on_all_special_value_pairs(name, dtype):
    """Every pair of extreme values (INT_MIN / -1, 0 / 0, NaN, inf ...)."""
    x, y = _special_pairs(dtype)
    _run_binary(name, x, y)
    # Without the divisions by zero, integer division must succeed.
    keep = y != 0
    _run_binary(name, x[keep], y[keep])


# name -> (TF op, kind, reference over float64 / Python ints)
UNARY = {
    "negative": ("Neg", "numeric", np.negative, lambda v: -v),
    "abs": ("Abs", "numeric", np.abs, abs),
    "sign": ("Sign", "numeric", np.sign, lambda v: (v > 0) - (v < 0)),
    "square": ("Square", "numeric", np.square, lambda v: v * v),
    "round": ("Round", "numeric", np.rint, lambda v: v),
    "relu": ("Relu", "numeric", lambda v: np.where(v < 0, 0, v),
             lambda v: max(v, 0)),
    "relu6": ("Relu6", "numeric",
              lambda v: np.where(v < 0, 0, np.where(v > 6, 6, v)),
              lambda v: min(max(v, 0), 6)),
    "invert": ("Invert", "int", None, lambda v: ~v),
    "logical_not": ("LogicalNot", "bool", np.logical_not, None),
    "exp": ("Exp", "float", np.exp, None),
    "expm1": ("Expm1", "float", np.expm1, None),
    "log": ("Log", "float", np.log, None),
    "log1p": ("Log1p", "float", np.log1p, None),
    "sqrt": ("Sqrt", "float", np.sqrt, None),
    "rsqrt": ("Rsqrt", "float", lambda v: 1 / np.sqrt(v), None),
    "reciprocal": ("Reciprocal", "float", lambda v: 1 / v, None),
    "sin": ("Sin", "float", np.sin, None),
    "cos": ("Cos", "float", np.cos, None),
    "tan": ("Tan", "float", np.tan, None),
    "asin": ("Asin", "float", np.arcsin, None),
    "acos": ("Acos", "float", np.arccos, None),
    "atan": ("Atan", "float", np.arctan, None),
    "sinh": ("Sinh", "float", np.sinh, None),
    "cosh": ("Cosh", "float", np.cosh, None),
    "tanh": ("Tanh", "float", np.tanh, None),
    "asinh": ("Asinh", "float", np.arcsinh, None),
    "acosh": ("Acosh", "float", np.arccosh, None),
    "atanh": ("Atanh", "float", np.arctanh, None),
    "sigmoid": ("Sigmoid", "float", lambda v: 1 / (1 + np.exp(-v)), None),
    "erf": ("Erf", "float", np.vectorize(math.erf, otypes=[float]), None),
    "erfc": ("Erfc", "float", np.vectorize(math.erfc, otypes=[float]),
             None),
    "floor": ("Floor", "float", np.floor, None),
    "ceil": ("Ceil", "float", np.ceil, None),
    "rint": ("Rint", "float", np.rint, None),
    "is_nan": ("IsNan", "float", np.isnan, None),
    "is_inf": ("IsInf", "float", np.isinf, None),
    "is_finite": ("IsFinite", "float", np.isfinite, None),
    "elu": ("Elu", "float", lambda v: np.where(v > 0, v, np.expm1(v)), None),
    "softsign": ("Softsign", "float", lambda v: v / (1 + np.abs(v)), None),
    "softplus": ("Softplus", "float",
                 lambda v: np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v))),
                 None),
}
_PREDICATES = {"is_nan", "is_inf", "is_finite", "logical_not"}


def _unary_fn(name):
    from tfmini.ops import math_ops
    for ns in (tf.nn, tf.math, math_ops, tf):
        if hasattr(ns, name):
            return getattr(ns, name)
    raise AttributeError(name)


def unary_expect(name, x):
    op, kind, fref, iref = UNARY[name]
    if not _takes(kind, x.dtype.name):
        return "error"
    d = x.dtype
    if d.kind in "iu":
        f = np.frompyfunc(iref, 1, 1)
        return wrap(f(as_py(x)) if x.size else as_py(x), d)
    with np.errstate(all="ignore"):
        if name in _PREDICATES:
            return fref(x)
        wide = x.astype(np.float64)
        return fref(wide).astype(d)


# Transcendental functions: libm against NumPy's float64 rounded back,
# a few ulp apart; near 0 an absolute floor (sin(pi) and friends).
def _unary_compare(name, dtype):
    d = _np(dtype)
    if d.kind != "f" or name in _PREDICATES:
        return assert_same
    if name in ("negative", "abs", "sign", "square", "round", "relu",
                "relu6", "floor", "ceil", "rint"):
        return assert_same
    rtol = {2: 2e-3, 4: 4e-6, 8: 1e-13}[d.itemsize]
    atol = {2: 1e-4, 4: 1e-6, 8: 1e-14}[d.itemsize]
    return assert_close(rtol, atol)


@st.composite
def unary_args(draw):
    name = draw(st.sampled_from(sorted(UNARY)))
    x = draw(arrays(draw(dtypes), draw(shapes)))
    return name, x


def _run_unary(name, x):
    op = UNARY[name][0]
    check_call(lambda: _unary_fn(name)(tf.constant(x)), [op],
               unary_expect(name, x), _unary_compare(name, x.dtype.name))


@FUZZ
@given(unary_args())
def test_unary_ops_match_numpy(args):
    _run_unary(*args)



@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_ops_on_special_values(name, dtype):
    _run_unary(name, np.array(special_values(dtype), dtype=dtype))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast_of_special_values(src, dst):
    """NaN, inf and out-of-range values cast as documented (cast.c):
    nothing undefined, nothing that differs from run to run."""
    x = np.array(special_values(src), dtype=src)
    check_call(lambda: tf.cast(tf.constant(x), dst), ["Cast"],
               cast_ref(x, dst))


@FUZZ
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.data())
def test_cast_matches_reference(src, dst, data):
    x = data.draw(arrays(src, data.draw(shapes)))
    check_call(lambda: tf.cast(tf.constant(x), dst), ["Cast"],
               cast_ref(x, dst))


def _inside(limit, dtype, up):
    """limit as a dtype value on its inner side (floats round)."""
    b = np.array(limit).astype(dtype)
    if b.dtype.kind == "f":
        if up and float(b) < limit:
            b = np.nextafter(b, b.dtype.type(np.inf))
        if not up and float(b) > limit:
            b = np.nextafter(b, b.dtype.type(-np.inf))
    return b


@FUZZ
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.data())
def test_saturate_cast(src, dst, data):
    """Values are clamped into dst's range first: nothing wraps, and
    every value that is not NaN lands inside dst's range."""
    x = data.draw(arrays(src, data.draw(small_shapes)))
    v = x
    if "bool" not in (src, dst):
        (s_lo, s_hi), (d_lo, d_hi) = _range_of(src), _range_of(dst)
        # Floats to integers clamp +-inf too, to the float range (TF).
        to_int = src in FLOATS and dst in INTS
        with np.errstate(all="ignore"):
            if s_lo < d_lo or to_int:
                v = np.maximum(v, _inside(max(s_lo, d_lo), src, True))
            if s_hi > d_hi or to_int:
                v = np.minimum(v, _inside(min(s_hi, d_hi), src, False))
    got, _ = check_call(lambda: tf.saturate_cast(tf.constant(x), dst),
                        ["Cast", "Maximum", "Minimum"], cast_ref(v, dst))
    if got is not None and "bool" not in (src, dst) and dst in INTS:
        g = as_py(got.numpy())
        assert ((g >= d_lo) & (g <= d_hi)).all(), (x, got)


def _range_of(dtype):
    d = np.dtype(dtype)
    if d.kind in "iu":
        return int(np.iinfo(d).min), int(np.iinfo(d).max)
    return -float(np.finfo(d).max), float(np.finfo(d).max)


@FUZZ
@given(st.sampled_from(DTYPES), st.data())
def test_clip_by_value(dtype, data):
    x = data.draw(arrays(dtype, data.draw(small_shapes)))
    lo = data.draw(arrays(dtype, ()))
    hi = data.draw(arrays(dtype, data.draw(st.sampled_from([(), x.shape,
                                                            (2, 1)]))))
    want = "error" if dtype == "bool" else None
    if want is None:
        with np.errstate(all="ignore"):
            want = _numpy_or_error(lambda: np.maximum(np.minimum(x, hi),
                                                      lo))
        if not isinstance(want, str) and want.shape != x.shape:
            want = "error"
    check_call(lambda: tf.clip_by_value(tf.constant(x), tf.constant(lo),
                                        tf.constant(hi)),
               ["Maximum", "Minimum"], want)


@FUZZ
@given(st.sampled_from(FLOATS + INTS), st.data())
def test_leaky_relu_and_gelu(dtype, data):
    x = data.draw(arrays(dtype, data.draw(small_shapes)))
    alpha = data.draw(st.sampled_from([0.2, 0.0, -1.0, 1e30, math.nan]))
    want = "error"
    if dtype in FLOATS:
        with np.errstate(all="ignore"):
            w = x.astype(np.float32 if dtype == "float16" else dtype)
            a = w.dtype.type(alpha)
            want = np.where(w > 0, w, a * w).astype(dtype)
    check_call(lambda: tf.nn.leaky_relu(tf.constant(x), alpha),
               ["LeakyRelu"], want, _compare_for(dtype))
    check_call(lambda: tf.nn.gelu(tf.constant(x), data.draw(st.booleans())),
               ["Gelu"], None if dtype in FLOATS else "error")


# ==== shape and array ops ====================================================

def _numpy_or_error(f):
    """f()'s array, or "error" when NumPy (or the rule written out in f)
    refuses; Skip means the case is skipped."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(f())
    except Skip:
        assume(False)
    except (ValueError, IndexError, TypeError, np.exceptions.AxisError,
            OverflowError, MemoryError):
        return "error"


def _norm_axis(axis, rank):
    return axis + rank if -rank <= axis < 0 else axis


@st.composite
def tensor_arrays(draw, max_dims=4):
    dtype = draw(dtypes)
    shape = draw(shapes if max_dims == 4 else small_shapes)
    return draw(arrays(dtype, shape))


@FUZZ
@given(tensor_arrays(), st.lists(attr_ints, max_size=5))
def test_reshape(x, shape):
    def ref():
        if any(s < -1 for s in shape) or shape.count(-1) > 1:
            raise ValueError
        if -1 in shape and math.prod(s for s in shape if s != -1) == 0:
            raise ValueError
        return x.reshape(shape)
    check_call(lambda: tf.reshape(tf.constant(x), shape), ["Reshape"],
               _numpy_or_error(ref))


@FUZZ
@given(tensor_arrays(), st.lists(attr_ints, max_size=5))
def test_transpose(x, perm):
    def ref():
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError
        return np.transpose(x, perm)
    check_call(lambda: tf.transpose(tf.constant(x), perm), ["Transpose"],
               _numpy_or_error(ref))


@FUZZ
@given(tensor_arrays(), attr_ints)
def test_expand_dims(x, axis):
    def ref():
        if not -x.ndim - 1 <= axis <= x.ndim or x.ndim >= 8:
            raise ValueError
        return np.expand_dims(x, axis)
    check_call(lambda: tf.expand_dims(tf.constant(x), axis),
               ["ExpandDims"], _numpy_or_error(ref))


@FUZZ
@given(tensor_arrays(), st.one_of(st.none(), attr_ints,
                                  st.lists(attr_ints, max_size=3)))
def test_squeeze(x, axis):
    def ref():
        if axis is None or axis == []:     # TF: [] squeezes every 1
            return np.squeeze(x)
        axes = [axis] if isinstance(axis, int) else axis
        if x.ndim == 0 and axes:
            raise ValueError
        return np.squeeze(x, tuple(axes))
    check_call(lambda: tf.squeeze(tf.constant(x), axis), ["Squeeze"],
               _numpy_or_error(ref))


@FUZZ
@given(st.lists(tensor_arrays(3), min_size=1, max_size=4), attr_ints,
       st.booleans())
def test_concat_and_stack(xs, axis, same_shape):
    if same_shape:
        xs = [xs[0]] * len(xs)
    r = xs[0].ndim

    # (NumPy reads axis=INT_MIN as axis=None: the range is checked here.)
    def concat_ref():
        if r == 0 or any(x.dtype != xs[0].dtype for x in xs):
            raise ValueError
        if not -r <= axis < r:
            raise ValueError
        return np.concatenate(xs, axis)

    def stack_ref():
        if any(x.dtype != xs[0].dtype for x in xs):
            raise ValueError
        if not -r - 1 <= axis <= r:
            raise ValueError
        return np.stack(xs, axis)
    ts = [tf.constant(x) for x in xs]
    check_call(lambda: tf.concat(ts, axis), ["ConcatV2"],
               _numpy_or_error(concat_ref) if len(xs) > 1 else None)
    check_call(lambda: tf.stack(ts, axis), ["Pack"],
               _numpy_or_error(stack_ref))


@FUZZ
@given(tensor_arrays(), attr_ints, st.one_of(st.none(), attr_ints))
def test_unstack(x, axis, num):
    def ref():
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
            raise ValueError
        n = x.shape[axis]
        if num is not None and num != n:
            raise ValueError
        return np.moveaxis(x, axis, 0)
    want = _numpy_or_error(ref)
    got, _ = check_call(lambda: tf.unstack(tf.constant(x), num, axis),
                        ["Unpack"], None if isinstance(want, np.ndarray)
                        else "error")
    if got is not None:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g.numpy(), w)


@FUZZ
@given(tensor_arrays(), st.one_of(attr_ints, st.lists(attr_ints, min_size=1,
                                                      max_size=4)),
       attr_ints)
def test_split(x, spec, axis):
    def ref():
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
            raise ValueError
        n = x.shape[axis]
        if isinstance(spec, int):
            if spec <= 0 or n % spec or spec > 256:   # 256 outputs at most
                raise ValueError
            return np.split(x, spec, axis)
        sizes = list(spec)
        if any(s < -1 for s in sizes) or sizes.count(-1) > 1:
            raise ValueError
        known = sum(s for s in sizes if s != -1)
        if (-1 not in sizes and known != n) or known > n:
            raise ValueError
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - known
        return np.split(x, np.cumsum(sizes)[:-1], axis)
    try:
        want = ref()
    except (ValueError, OverflowError):
        want = "error"
    got, _ = check_call(lambda: tf.split(tf.constant(x), spec, axis),
                        ["Split", "SplitV"],
                        None if isinstance(want, list) else "error")
    if got is not None:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g.numpy(), w)


@FUZZ
@given(tensor_arrays(3), st.lists(attr_ints, max_size=4))
def test_tile(x, multiples):
    if (len(multiples) != x.ndim or
            any(not 0 <= m <= 2 ** 63 - 1 for m in multiples)):
        want = "error"
    else:
        zone = alloc_zone([d * m for d, m in zip(x.shape, multiples)],
                          x.dtype)
        assume(zone != "skip")
        want = "error" if zone == "error" else np.tile(x, multiples)
    check_call(lambda: tf.tile(tf.constant(x), multiples), ["Tile"], want)


@FUZZ
@given(tensor_arrays(3), st.lists(st.tuples(attr_ints, attr_ints),
                                  max_size=4),
       st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC", "WRAP"]),
       st.sampled_from([0, 1, -7, 2.5, 300, 2 ** 40, 2 ** 60 + 1, math.nan,
                        math.inf, True]))
def test_pad(x, paddings, mode, value):
    op = "PadV2" if mode == "CONSTANT" else "MirrorPad"

    def ref():
        if mode == "WRAP" or len(paddings) != x.ndim:
            raise ValueError
        if any(p < 0 for pair in paddings for p in pair):
            raise ValueError
        zone = alloc_zone([d + a + b for d, (a, b) in
                           zip(x.shape, paddings)], x.dtype)
        if zone == "skip":
            raise Skip
        if zone == "error" or any(d + a + b > 2 ** 63 - 1 for d, (a, b)
                                  in zip(x.shape, paddings)):
            raise ValueError
        if mode == "CONSTANT":
            d = x.dtype
            v = value
            if d.kind in "iu":
                if isinstance(v, float) and not v.is_integer():
                    raise TypeError
                if not np.iinfo(d).min <= v <= np.iinfo(d).max:
                    raise TypeError
            out = np.full([d + a + b for d, (a, b) in zip(x.shape,
                                                          paddings)],
                          np.array(v).astype(d) if d.kind != "b"
                          else bool(v), dtype=d)
            out[tuple(slice(a, a + n) for n, (a, _) in
                      zip(x.shape, paddings))] = x
            return out
        if x.ndim == 0:
            return x
        lim = 1 if mode == "REFLECT" else 0
        for n, (a, b) in zip(x.shape, paddings):
            if a > n - lim or b > n - lim:
                raise ValueError
        return np.pad(x, paddings, mode=mode.lower())
    check_call(lambda: tf.pad(tf.constant(x), paddings, mode, value),
               [op], _numpy_or_error(ref))


class Skip(Exception):
    """A case whose result would be too big to compute in a test."""


class Empty(Exception):
    """A result not checked by value: empty ones NumPy may not be able
    to shape, or conversions the binding decides."""


@FUZZ
@given(tensor_arrays(), st.lists(attr_ints, max_size=3))
def test_reverse(x, axes):
    def ref():
        norm = [_norm_axis(a, x.ndim) for a in axes]
        if x.ndim == 0 and axes or len(set(norm)) != len(norm):
            raise ValueError
        return np.flip(x, tuple(axes)) if axes else x
    check_call(lambda: tf.reverse(tf.constant(x), axes), ["ReverseV2"],
               _numpy_or_error(ref))


@FUZZ
@given(tensor_arrays(3), st.lists(attr_ints, max_size=5))
def test_broadcast_to(x, shape):
    def ref():
        if any(s < 0 for s in shape):
            raise ValueError
        if len(shape) < x.ndim or any(
                d not in (1, t) for d, t in zip(x.shape[::-1], shape[::-1])):
            raise ValueError
        zone = alloc_zone(shape, x.dtype)
        if zone == "skip":
            raise Skip
        if zone == "error":
            raise ValueError
        if 0 in shape:
            return np.zeros([min(s, 1) for s in shape], x.dtype)
        return np.broadcast_to(x, shape).copy()
    want = _numpy_or_error(ref)
    if 0 in shape and not isinstance(want, str):
        want = None     # empty: NumPy may not hold the shape; check below
    got, _ = check_call(lambda: tf.broadcast_to(tf.constant(x), shape),
                        ["BroadcastTo"], want)
    if got is not None:
        assert got.shape == tuple(shape)


@FUZZ
@given(tensor_arrays(3), st.lists(attr_ints, max_size=4),
       st.lists(attr_ints, max_size=4))
def test_slice(x, begin, size):
    def ref():
        if len(begin) != len(size) or len(begin) != x.ndim:
            raise ValueError
        idx = []
        for n, b, s in zip(x.shape, begin, size):
            if not 0 <= b <= n or s < -1 or s > n - b:
                raise ValueError
            idx.append(slice(b, n if s == -1 else b + s))
        return x[tuple(idx)]
    check_call(lambda: tf.slice(tf.constant(x), begin, size), ["Slice"],
               _numpy_or_error(ref))


# Index keys: ints (in and out of range), slices with any bounds and
# steps, Ellipsis, None (newaxis).
_key_ints = st.one_of(st.integers(-5, 5), st.sampled_from(
    [2 ** 31, -2 ** 31, 2 ** 63 - 1, -2 ** 63]))
_key_items = st.one_of(
    _key_ints,
    st.builds(slice, st.one_of(st.none(), _key_ints),
              st.one_of(st.none(), _key_ints),
              st.one_of(st.none(), st.integers(-3, 3),
                        st.sampled_from([2 ** 62, -2 ** 62]))),
    st.just(Ellipsis), st.none())


@FUZZ
@given(tensor_arrays(), st.lists(_key_items, max_size=5))
def test_getitem_matches_numpy(x, key):
    key = tuple(key)

    def ref():
        if key.count(Ellipsis) > 1:
            raise IndexError
        for k in key:
            if isinstance(k, slice) and k.step == 0:
                raise ValueError
        return x[key]
    want = _numpy_or_error(ref)
    t = tf.constant(x)
    check_call(lambda: t[key], ["StridedSlice"], want)


@FUZZ
@given(tensor_arrays(3), st.lists(attr_ints, min_size=0, max_size=4),
       st.lists(attr_ints, max_size=4), st.lists(attr_ints, max_size=4),
       st.lists(st.one_of(st.integers(0, 31), st.sampled_from(
           [-1, 2 ** 62, -2 ** 63, 2 ** 63 - 1, 1 << 20])), min_size=5,
           max_size=5))
def test_strided_slice_with_raw_masks(x, begin, end, strides, masks):
    """Masks may have any bits (past the spec's entries, negative): the
    result must still match NumPy when it succeeds."""
    n = len(begin)
    end = (end + [0] * n)[:n]
    strides = (strides + [1] * n)[:n]
    got, err = check_call(
        lambda: tf.strided_slice(tf.constant(x), begin, end, strides,
                                 *masks), ["StridedSlice"])
    if got is None:
        return
    # Rebuild the key NumPy would take from the in-range mask bits.
    bm, em, el, na, sh = masks
    key = []
    for k in range(n):
        bit = 1 << k
        if el & bit:
            key.append(Ellipsis)
        elif na & bit:
            key.append(None)
        elif sh & bit:
            key.append(begin[k])
        else:
            key.append(slice(None if bm & bit else begin[k],
                             None if em & bit else end[k], strides[k]))
    if Ellipsis not in key:
        key.append(Ellipsis)
    assert_same(got.numpy(), x[tuple(key)])


@st.composite
def gather_args(draw):
    x = draw(tensor_arrays(3))
    idx_dtype = draw(st.sampled_from(["int32", "int64", "int8", "uint8",
                                      "float32"]))
    ishape = draw(small_shapes)
    hi = max(x.shape) if x.ndim else 1
    vals = st.one_of(st.integers(-2, hi + 1), st.sampled_from(
        [2 ** 31 - 1, -2 ** 31, 2 ** 63 - 1, -2 ** 63]))
    n = int(np.prod(ishape))
    ind = np.array(draw(st.lists(vals, min_size=n, max_size=n)),
                   dtype=object).reshape(ishape)
    try:
        ind = ind.astype(idx_dtype)
    except OverflowError:
        ind = np.zeros(ishape, idx_dtype)
    axis = draw(st.one_of(st.none(), attr_ints))
    bd = draw(st.sampled_from([0, 0, 0, 1, -1, 2, 5]))
    return x, ind, axis, bd


def _batched_take(x, ind, a, b):
    """GatherV2 with b batch dims: x[i].take(ind[i]) for each batch i."""
    if b == 0:
        return np.take(x, ind, axis=a)
    shape = x.shape[:a] + ind.shape[b:] + x.shape[a + 1:]
    parts = [_batched_take(x[i], ind[i], a - 1, b - 1)
             for i in range(x.shape[0])]
    return np.stack(parts) if parts else np.zeros(shape, x.dtype)


@FUZZ
@given(gather_args())
def test_gather(args):
    x, ind, axis, bd = args

    def ref():
        if ind.dtype.kind not in "iu":
            raise TypeError
        ax = bd if axis is None else axis
        b = bd + ind.ndim if bd < 0 else bd
        if x.ndim == 0 or not -x.ndim <= ax < x.ndim:
            raise ValueError
        a = _norm_axis(ax, x.ndim)
        if not 0 <= b <= ind.ndim or b > a:
            raise ValueError
        if x.shape[:b] != ind.shape[:b]:
            raise ValueError
        if x.ndim - 1 + ind.ndim - b > 8:
            raise ValueError
        if ind.size and (ind.min() < 0 or ind.max() >= x.shape[a]):
            raise IndexError
        return _batched_take(x, ind, a, b)
    check_call(lambda: tf.gather(tf.constant(x), tf.constant(ind), axis=axis,
                                 batch_dims=bd), ["GatherV2"],
               _numpy_or_error(ref))


@FUZZ
@given(tensor_arrays(3), st.data())
def test_gather_nd_and_scatter(x, data):
    k = data.draw(st.integers(0, x.ndim + 1))
    lead = data.draw(small_shapes)
    hi = max(x.shape + (1,))
    ind = np.array(data.draw(st.lists(st.integers(-1, hi),
                                      min_size=int(np.prod(lead)) * k,
                                      max_size=int(np.prod(lead)) * k)),
                   dtype=np.int64).reshape(lead + (k,))
    if data.draw(st.booleans()):
        ind = ind.astype(np.int32)

    def gather_ref():
        if k > x.ndim:
            raise ValueError
        for j in range(k):
            if ind.size and (ind[..., j].min() < 0 or
                             ind[..., j].max() >= x.shape[j]):
                raise IndexError
        flat = ind.reshape(int(np.prod(lead)), k)
        rows = [x[tuple(r)] for r in flat]
        return np.array(rows, dtype=x.dtype).reshape(lead + x.shape[k:])
    want = _numpy_or_error(gather_ref)
    check_call(lambda: tf.gather_nd(tf.constant(x), tf.constant(ind)),
               ["GatherNd"], want)
    if isinstance(want, str) or x.dtype.kind == "b":
        upd = np.ones(lead + x.shape[min(k, x.ndim):], x.dtype)
        check_call(lambda: tf.tensor_scatter_nd_add(
            tf.constant(x), tf.constant(ind), tf.constant(upd)),
            ["TensorScatterAdd"], "error")
        return
    upd = np.ones(want.shape, x.dtype)
    up = x.copy()
    add = x.copy()
    rows = int(np.prod(lead))
    for r, u in zip(ind.reshape(rows, k), upd.reshape((rows,) + x.shape[k:])):
        up[tuple(r)] = u
        with np.errstate(all="ignore"):
            add[tuple(r)] = add[tuple(r)] + u
    check_call(lambda: tf.tensor_scatter_nd_update(
        tf.constant(x), tf.constant(ind), tf.constant(upd)),
        ["TensorScatterUpdate"], up)
    check_call(lambda: tf.tensor_scatter_nd_add(
        tf.constant(x), tf.constant(ind), tf.constant(upd)),
        ["TensorScatterAdd"], add)


@FUZZ
@given(tensor_arrays(3), tensor_arrays(3), tensor_arrays(3))
def test_where(c, x, y):
    def ref():
        if c.dtype != np.bool_ or x.dtype != y.dtype:
            raise ValueError
        return np.where(c, x, y)
    check_call(lambda: tf.where(tf.constant(c), tf.constant(x),
                                tf.constant(y)), ["SelectV2"],
               _numpy_or_error(ref))
    def coords():
        if x.ndim == 0:
            raise ValueError         # as TF 2.21: Where takes ranks 1-8
        return np.argwhere(x if x.dtype.kind != "f" else x != 0).astype(
            np.int64)
    check_call(lambda: tf.where(tf.constant(x)), ["Where"],
               _numpy_or_error(coords))


@FUZZ
@given(st.lists(attr_ints, max_size=5), st.sampled_from(DTYPES))
def test_fill_zeros_ones(dims, dtype):
    def ref(v):
        if any(d < 0 for d in dims) or len(dims) > 8:
            raise ValueError
        zone = alloc_zone(dims, dtype)
        if zone == "skip":
            raise Skip
        if zone == "error":
            raise ValueError
        return np.full(dims, v, dtype=dtype)
    check_call(lambda: tf.zeros(dims, dtype), ["Fill"],
               _numpy_or_error(lambda: ref(0)))
    check_call(lambda: tf.ones(dims, dtype), ["Fill"],
               _numpy_or_error(lambda: ref(1)))


_range_vals = st.one_of(st.integers(-6, 6), st.floats(-6, 6),
                        st.sampled_from([0.5, math.nan, math.inf, 300,
                                         -129, 2 ** 63, 2 ** 70, 1e30]))


@FUZZ
@given(_range_vals, _range_vals, _range_vals,
       st.sampled_from([None] + INTS + ["float32", "float64"]))
def test_range(start, limit, delta, dtype):
    def ref():
        vals = (start, limit, delta)
        d = np.dtype(dtype or ("float32" if any(isinstance(v, float)
                                                for v in vals) else
                               "int32"))
        if d.kind in "iu":
            if any(isinstance(v, float) and not v.is_integer() or
                   not np.iinfo(d).min <= v <= np.iinfo(d).max for v in vals):
                raise ValueError
        if not all(math.isfinite(v) for v in vals) or delta == 0:
            raise ValueError
        if (delta > 0 and start > limit) or (delta < 0 and start < limit):
            raise ValueError
        n = abs((limit - start) / delta)
        if n > 2 ** 63:
            raise ValueError
        if n > 10 ** 6:
            raise Skip
        return None
    want = _numpy_or_error(ref)
    got, _ = check_call(lambda: tf.range(start, limit, delta, dtype=dtype),
                        ["Range"], "error" if isinstance(want, str) else None)
    if got is not None and got.dtype.is_integer:
        assert_same(got.numpy(), np.arange(int(start), int(limit),
                                           int(delta)).astype(
                                               got.dtype.as_numpy_dtype))


@FUZZ
@given(tensor_arrays(2), attr_ints, st.one_of(st.none(), attr_ints),
       st.sampled_from([None, "float32", "int8", "bool", "uint8"]),
       st.sampled_from([None, 5, -1, 1.5, 300, True]))
def test_one_hot(ind, depth, axis, dtype, on):
    def ref():
        if ind.dtype.kind not in "iu":
            raise TypeError
        ax = -1 if axis is None else axis
        if depth < 0 or not -1 <= ax <= ind.ndim:
            raise ValueError
        zone = alloc_zone(ind.shape + (depth,), _one_hot_dtype(dtype, on))
        if zone == "skip":
            raise Skip
        if zone == "error":
            raise ValueError
        d = np.dtype(_one_hot_dtype(dtype, on))
        onv = 1 if on is None else on
        if d.kind != "b" and isinstance(onv, bool):
            raise Empty     # True as a number: the binding's call
        if d.kind in "iu" and (isinstance(onv, float) or
                               not np.iinfo(d).min <= onv <= np.iinfo(d).max):
            raise TypeError
        if d.kind == "b" and not isinstance(onv, bool) and onv not in (0, 1):
            raise TypeError
        if ind.size == 0:
            raise Empty     # NumPy may not hold the shape: checked below
        hot = (np.arange(depth) == ind[..., None])
        out = np.where(hot, np.array(onv).astype(d), np.array(0).astype(d))
        return np.moveaxis(out, -1, ax) if ax != -1 else out
    try:
        want = _numpy_or_error(ref)
    except Empty:
        want = None
    got, _ = check_call(lambda: tf.one_hot(tf.constant(ind), depth,
                                           on_value=on, axis=axis,
                                           dtype=dtype), ["OneHot"], want)
    if got is not None and want is None and ind.size == 0:
        assert got.shape.num_elements() == 0


def _one_hot_dtype(dtype, on):
    if dtype is not None:
        return dtype
    if isinstance(on, bool):
        return "bool"
    return "int32" if isinstance(on, int) else "float32"


# ==== conv and pooling =======================================================

_conv_ints = st.one_of(st.integers(1, 3), st.integers(1, 3),
                       st.sampled_from([0, -1, 2 ** 31 - 1, 2 ** 31,
                                        2 ** 63, 2 ** 70]))


@st.composite
def conv_args(draw):
    dtype = draw(st.sampled_from(FLOATS + ["int32", "bool"]))
    n, h, w, c = (draw(st.integers(0, 3)) for _ in range(4))
    kh, kw, o = (draw(st.integers(0, 3)) for _ in range(3))
    xshape = (n, h, w, c)
    if draw(st.integers(0, 5)) == 0:
        xshape = draw(small_shapes)
    fshape = (kh, kw, c if draw(st.integers(0, 5)) else c + 1, o)
    if draw(st.booleans()) and dtype in FLOATS:
        # Moderate values, where the float64 reference is an oracle.
        moderate = st.floats(-4, 4, width=16)
        x = draw(hnp.arrays(dtype, xshape, elements=moderate))
        f = draw(hnp.arrays(dtype, fshape, elements=moderate))
    else:
        x = draw(arrays(dtype, xshape))
        f = draw(arrays(dtype, fshape))
    strides = draw(st.one_of(_conv_ints, st.lists(_conv_ints, min_size=1,
                                                  max_size=4)))
    dil = draw(st.one_of(st.none(), _conv_ints))
    padding = draw(st.one_of(
        st.sampled_from(["SAME", "VALID", "same", "FULL"]),
        st.lists(st.tuples(_conv_ints, _conv_ints), min_size=4, max_size=4)
        .map(lambda p: [(0, 0)] + p[1:3] + [(0, 0)])))
    return x, f, strides, dil, padding


def _pair_ok(v):
    if v is None:
        return (1, 1)
    vals = [v] if isinstance(v, int) else list(v)
    if len(vals) == 4:
        if vals[0] != 1 or vals[3] != 1:
            return None
        vals = vals[1:3]
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2 or any(not 1 <= s <= 2 ** 31 - 1 for s in vals):
        return None
    return tuple(vals)


@FUZZ
@given(conv_args())
def test_conv2d(args):
    x, f, strides, dil, padding = args
    s = _pair_ok(strides)
    d = _pair_ok(dil)
    explicit = not isinstance(padding, str)
    pad_ok = padding in ("SAME", "VALID") or (
        explicit and all(0 <= p < 2 ** 31 for pr in padding for p in pr))
    want = None
    if (x.dtype.kind != "f" or x.ndim != 4 or f.shape[2] != x.shape[3]
            or s is None or d is None or not pad_ok):
        want = "error"
    else:
        pd = padding if not explicit else (padding[1], padding[2])
        out = []
        for i, k in ((1, 0), (2, 1)):
            mode = pd if not explicit else pd[k]
            o = pads_1d(x.shape[i], f.shape[k], s[k], d[k], mode)[0]
            if mode != "SAME" and o < 1:
                want = "error"
            out.append(o)
        if want is None:
            zone = alloc_zone((x.shape[0], out[0], out[1], f.shape[3]),
                              x.dtype)
            assume(zone != "skip")
            if zone == "error":
                want = "error"
            elif (max(s + d) <= 3 and not (explicit and max(
                    p for pr in padding for p in pr) > 3)
                    and np.all(np.abs(x) <= 4) and np.all(np.abs(f) <= 4)):
                with np.errstate(all="ignore"):
                    want = np_conv2d(x.astype(np.float64),
                                     f.astype(np.float64), s, pd,
                                     d).astype(x.dtype)
    tol = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-10}.get(
        x.dtype.name, 0)

    def compare(got, w):
        assert got.shape == w.shape and got.dtype == w.dtype
        finite = np.isfinite(w) & np.isfinite(got)
        assert np.array_equal(np.isnan(w), np.isnan(got)) or not finite.all()
        np.testing.assert_allclose(got[finite].astype(np.float64),
                                   w[finite].astype(np.float64),
                                   rtol=tol, atol=tol)
    check_call(lambda: tf.nn.conv2d(tf.constant(x), tf.constant(f), strides,
                                    padding, dilations=dil), ["Conv2D"],
               want, compare)


@FUZZ
@given(conv_args(), st.sampled_from(["max", "avg"]))
def test_pool(args, kind):
    x, f, strides, ksize, padding = args
    ksize = f.shape[0] if ksize is None else ksize
    s = _pair_ok(strides)
    k = _pair_ok(ksize)
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    op = "MaxPool" if kind == "max" else "AvgPool"
    want = None
    if (x.dtype.kind != "f" or x.ndim != 4 or s is None or k is None or
            padding not in ("SAME", "VALID")):
        want = "error"
    elif max(s + k) <= 3:
        if padding == "VALID" and (x.shape[1] < k[0] or x.shape[2] < k[1]):
            want = "error"
        elif x.size or padding == "VALID":
            with np.errstate(all="ignore"):
                ref = np_max_pool if kind == "max" else np_avg_pool
                want = ref(x.astype(np.float64), k, s, padding).astype(
                    x.dtype) if x.size else None
    check_call(lambda: fn(tf.constant(x), ksize, strides, padding), [op],
               want, assert_close(2e-3, 2e-3))


@st.composite
def backprop_args(draw):
    dtype = draw(st.sampled_from(["float32", "float64"]))
    n, c, o = (draw(st.integers(0, 2)) for _ in range(3))
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.one_of(
        st.sampled_from(["SAME", "VALID"]),
        st.tuples(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                  st.tuples(st.integers(0, 2), st.integers(0, 2)))))
    oh = pads_1d(h, kh, s[0], d[0], padding if isinstance(padding, str)
                 else padding[0])[0]
    ow = pads_1d(w, kw, s[1], d[1], padding if isinstance(padding, str)
                 else padding[1])[0]
    assume(oh >= 1 and ow >= 1)
    moderate = st.floats(-4, 4, width=16)
    x = draw(hnp.arrays(dtype, (n, h, w, c), elements=moderate))
    f = draw(hnp.arrays(dtype, (kh, kw, c, o), elements=moderate))
    dy = draw(hnp.arrays(dtype, (n, oh, ow, o), elements=moderate))
    return x, f, dy, s, d, padding


_bad_sizes = st.sampled_from([-1, -2, 0, 2 ** 31, 2 ** 63, 5])


@FUZZ
@given(backprop_args(), st.integers(0, 3), _bad_sizes, st.booleans())
def test_conv_backprop_ops(args, k, bad, perturb):
    """Conv2DBackpropInput / Filter (two-input forms, as
    conv2d_transpose and tf.compat.v1 call them) against the adjoint
    references; a wrong size is an error, except -1 where another input
    supplies the size."""
    x, f, dy, s, d, padding = args
    tf_pad = (padding if isinstance(padding, str) else
              [[0, 0], list(padding[0]), list(padding[1]), [0, 0]])
    sizes_in, sizes_f = list(x.shape), list(f.shape)
    want_in = np_conv2d_backprop_input(x.shape, f.astype(np.float64),
                                       dy.astype(np.float64), s, padding,
                                       d).astype(x.dtype)
    want_f = np_conv2d_backprop_filter(x.astype(np.float64), f.shape,
                                       dy.astype(np.float64), s, padding,
                                       d).astype(x.dtype)
    if perturb:
        ok_in = bad == -1 and k in (0, 3) or bad == sizes_in[k]
        ok_f = bad == -1 and k in (2, 3) or bad == sizes_f[k]
        sizes_in[k] = sizes_f[k] = bad
        # A changed size may still give dy's shape (SAME, strides):
        # then the answer is that of the other shape; not checked here.
        want_in = want_in if ok_in else None
        want_f = want_f if ok_f else None
    compare = assert_close(1e-4, 1e-4)
    got, err = check_call(lambda: conv_ops.conv2d_backprop_input(
        sizes_in, tf.constant(f), tf.constant(dy), s, tf_pad, dilations=d),
        ["Conv2DBackpropInput"], want_in, compare)
    if perturb and want_in is None and got is not None:
        assert got.shape == tuple(v for v in sizes_in)
    got, err = check_call(lambda: conv_ops.conv2d_backprop_filter(
        tf.constant(x), sizes_f, tf.constant(dy), s, tf_pad, dilations=d),
        ["Conv2DBackpropFilter"], want_f, compare)
    if perturb and want_f is None and got is not None:
        assert got.shape == tuple(sizes_f)


@FUZZ
@given(tensor_arrays(3), st.data())
def test_boolean_mask(x, data):
    k = data.draw(st.integers(0, x.ndim + 1))
    axis = data.draw(st.one_of(st.none(), st.integers(-3, 3)))
    ax = 0 if axis is None else axis
    a = ax + x.ndim if ax < 0 else ax
    mshape = x.shape[a:a + k] if 0 <= a <= x.ndim else ()
    if data.draw(st.integers(0, 4)) == 0:
        mshape = data.draw(small_shapes)
    mask = data.draw(arrays("bool", mshape))

    def ref():
        if mask.ndim == 0 or not 0 <= a or a + mask.ndim > x.ndim:
            raise ValueError
        if x.shape[a:a + mask.ndim] != mask.shape:
            raise ValueError
        idx = (slice(None),) * a + (mask,)
        return x[idx]
    check_call(lambda: tf.boolean_mask(tf.constant(x), tf.constant(mask),
                                       axis=axis),
               ["GatherV2", "Where", "Reshape"], _numpy_or_error(ref))


# ==== raw op calls ============================================================

# Every op of the table through tfmini._C.call with any attributes: the
# shape rules must hold up on their own, whatever the Python layer
# checks. Attribute ints stay small or past any memory (2**45 elements
# and up), so that nothing feasible but huge is ever allocated.
_OPS = tf._C.op_table()
_raw_ints = st.one_of(st.integers(-3, 6), st.sampled_from(
    [2 ** 45, -2 ** 45, 2 ** 62, 2 ** 63 - 1, -2 ** 63]))
_raw_floats = st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 1e30,
                               -1e30, math.nan, math.inf, -math.inf])


def _family_ops(*families):
    """Op ids of the rows of csrc/ops/ops_<family>.def."""
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = set()
    for fam in families:
        with open(os.path.join(root, "csrc", "ops", f"ops_{fam}.def")) as f:
            names.update(re.findall(r'^X\(\w+,\s*"(\w+)"', f.read(), re.M))
    return [k for k, row in enumerate(_OPS) if row[0] in names]


_MINE = _family_ops("elementwise", "shape", "conv")
_OTHERS = [k for k in range(len(_OPS)) if k not in _MINE]


@st.composite
def raw_calls(draw, ops):
    op = draw(st.sampled_from(ops))
    nin = _OPS[op][1]
    if nin < 0 or draw(st.integers(0, 9)) == 0:
        nin = draw(st.integers(0, 4))
    inputs = [draw(arrays(draw(dtypes), draw(small_shapes)))
              for _ in range(nin)]
    ints = draw(st.one_of(st.none(), st.lists(_raw_ints, max_size=14)))
    iv = draw(st.one_of(st.none(), st.lists(_raw_ints, max_size=6)))
    fv = draw(st.one_of(st.none(), st.lists(_raw_floats, max_size=4)))
    dtype = draw(st.one_of(st.none(), st.integers(0, len(DTYPES) - 1)))
    return op, inputs, ints, iv, fv, dtype


@FUZZ
@given(raw_calls(_MINE))
def test_raw_op_calls(call):
    """The elementwise, shape and conv rows."""
    op, inputs, ints, iv, fv, dtype = call
    ts = [tf.constant(x) for x in inputs]
    check_call(lambda: tf._C.call(op, ts, ints, iv, fv, dtype),
               [_OPS[op][0]])


@pytest.mark.skipif(not _OTHERS, reason="no other families in this build")
@FUZZ
@given(raw_calls(_OTHERS or [0]))
def test_raw_op_calls_other_families(call):
    """The other rows, less strictly: graph-only ops (If, While,
    Placeholder, ...) may answer InternalError or UnimplementedError;
    nothing may crash."""
    op, inputs, ints, iv, fv, dtype = call
    ts = [tf.constant(x) for x in inputs]
    try:
        check_call(lambda: tf._C.call(op, ts, ints, iv, fv, dtype),
                   [_OPS[op][0]])
    except CallError as e:
        cause = e.__cause__
        if not isinstance(cause, tf.errors.InternalError) or \
                _OPS[op][0] not in str(cause):
            raise


# ==== junk arguments =========================================================

def _x():
    return tf.constant([[1.0, 2.0], [3.0, 4.0]])


# (callable taking one argument, op names): the argument goes in one slot
# of an otherwise valid call.
JUNK_SLOTS = [
    (lambda v: tf.add(_x(), v), ["AddV2"]),
    (lambda v: tf.add(v, _x()), ["AddV2"]),
    (lambda v: tf.math.floordiv(tf.constant([1, 2]), v), ["FloorDiv"]),
    (lambda v: tf.math.pow(tf.constant([2, 3]), v), ["Pow"]),
    (lambda v: tf.equal(_x(), v), ["Equal"]),
    (lambda v: tf.logical_and(tf.constant([True]), v), ["LogicalAnd"]),
    (lambda v: _fn("bitwise_and")(tf.constant([3]), v), ["BitwiseAnd"]),
    (lambda v: tf.exp(v), ["Exp"]),
    (lambda v: tf.abs(v), ["Abs"]),
    (lambda v: tf.cast(_x(), v), ["Cast"]),
    (lambda v: tf.cast(v, tf.int32), ["Cast"]),
    (lambda v: tf.saturate_cast(v, tf.int8), ["Cast"]),
    (lambda v: tf.clip_by_value(_x(), v, 3.0), ["Maximum", "Minimum"]),
    (lambda v: tf.nn.leaky_relu(_x(), v), ["LeakyRelu"]),
    (lambda v: tf.nn.relu(v), ["Relu"]),
    (lambda v: tf.reshape(_x(), v), ["Reshape"]),
    (lambda v: tf.reshape(v, [-1]), ["Reshape"]),
    (lambda v: tf.transpose(_x(), v), ["Transpose"]),
    (lambda v: tf.expand_dims(_x(), v), ["ExpandDims"]),
    (lambda v: tf.squeeze(_x(), v), ["Squeeze"]),
    (lambda v: tf.concat([_x(), v], 0), ["ConcatV2"]),
    (lambda v: tf.concat([_x(), _x()], v), ["ConcatV2"]),
    (lambda v: tf.concat(v, 0), ["ConcatV2"]),
    (lambda v: tf.stack([_x(), v]), ["Pack"]),
    (lambda v: tf.stack(v), ["Pack"]),
    (lambda v: tf.unstack(_x(), v), ["Unpack"]),
    (lambda v: tf.unstack(_x(), axis=v), ["Unpack"]),
    (lambda v: tf.split(_x(), v), ["Split", "SplitV"]),
    (lambda v: tf.split(_x(), 2, v), ["Split"]),
    (lambda v: tf.tile(_x(), v), ["Tile"]),
    (lambda v: tf.pad(_x(), v), ["PadV2"]),
    (lambda v: tf.pad(_x(), [[1, 1], [1, 1]], constant_values=v), ["PadV2"]),
    (lambda v: tf.pad(_x(), [[1, 1], [1, 1]], mode=v),
     ["PadV2", "MirrorPad"]),
    (lambda v: tf.reverse(_x(), v), ["ReverseV2"]),
    (lambda v: tf.broadcast_to(_x(), v), ["BroadcastTo"]),
    (lambda v: tf.slice(_x(), v, [1, 1]), ["Slice"]),
    (lambda v: tf.slice(_x(), [0, 0], v), ["Slice"]),
    (lambda v: tf.strided_slice(_x(), v, [1, 1]), ["StridedSlice"]),
    (lambda v: tf.strided_slice(_x(), [0], [1], v), ["StridedSlice"]),
    (lambda v: tf.strided_slice(_x(), [0], [1], [1], v), ["StridedSlice"]),
    (lambda v: _x()[v], ["StridedSlice", "GatherV2"]),
    (lambda v: _x()[v, 0], ["StridedSlice", "GatherV2"]),
    (lambda v: tf.gather(_x(), v), ["GatherV2"]),
    (lambda v: tf.gather(_x(), [0], axis=v), ["GatherV2"]),
    (lambda v: tf.gather(_x(), [0], batch_dims=v), ["GatherV2"]),
    (lambda v: tf.gather_nd(_x(), v), ["GatherNd"]),
    (lambda v: tf.tensor_scatter_nd_update(_x(), v, [1.0]),
     ["TensorScatterUpdate"]),
    (lambda v: tf.tensor_scatter_nd_add(_x(), [[0, 0]], v),
     ["TensorScatterAdd"]),
    (lambda v: tf.scatter_nd([[0]], [1.0], v), ["Fill", "TensorScatterAdd"]),
    (lambda v: tf.where(v), ["Where"]),
    (lambda v: tf.where(v, _x(), _x()), ["SelectV2"]),
    (lambda v: tf.where(tf.constant([True, False]), v, 1.0), ["SelectV2"]),
    (lambda v: tf.boolean_mask(_x(), v), ["GatherV2", "Where"]),
    (lambda v: tf.fill(v, 1.0), ["Fill"]),
    (lambda v: tf.fill([2], v), ["Fill"]),
    (lambda v: tf.zeros(v), ["Fill"]),
    (lambda v: tf.ones([2], v), ["Fill"]),
    (lambda v: tf.zeros_like(v), ["ZerosLike"]),
    (lambda v: tf.ones_like(_x(), v), ["OnesLike", "Fill"]),
    (lambda v: tf.range(v), ["Range"]),
    (lambda v: tf.range(0, 5, v), ["Range"]),
    (lambda v: tf.range(5, dtype=v), ["Range"]),
    (lambda v: tf.linspace(0.0, 1.0, v), ["LinSpace"]),
    (lambda v: tf.linspace(v, 1.0, 3), ["LinSpace"]),
    (lambda v: tf.one_hot([0, 1], v), ["OneHot"]),
    (lambda v: tf.one_hot(v, 3), ["OneHot"]),
    (lambda v: tf.one_hot([0], 3, on_value=v), ["OneHot"]),
    (lambda v: tf.one_hot([0], 3, axis=v), ["OneHot"]),
    (lambda v: tf.eye(v), ["OneHot", "Range"]),
    (lambda v: tf.shape(v), ["Shape"]),
    (lambda v: tf.shape(_x(), out_type=v), ["Shape"]),
    (lambda v: tf.size(_x(), out_type=v), ["Size"]),
    (lambda v: tf.rank(v), ["Rank"]),
    (lambda v: tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]),
                            v, "SAME"), ["Conv2D"]),
    (lambda v: tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]),
                            1, v), ["Conv2D"]),
    (lambda v: tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]),
                            1, "SAME", dilations=v), ["Conv2D"]),
    (lambda v: tf.nn.conv2d(v, tf.ones([1, 1, 1, 1]), 1, "SAME"),
     ["Conv2D"]),
    (lambda v: tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]),
                            1, "SAME", data_format=v), ["Conv2D"]),
    (lambda v: tf.nn.conv2d_transpose(tf.zeros([1, 3, 3, 1]),
                                      tf.ones([1, 1, 1, 1]), v, 1),
     ["Conv2DBackpropInput"]),
    (lambda v: tf.nn.max_pool2d(tf.zeros([1, 3, 3, 1]), v, 1, "SAME"),
     ["MaxPool"]),
    (lambda v: tf.nn.avg_pool2d(tf.zeros([1, 3, 3, 1]), 2, v, "VALID"),
     ["AvgPool"]),
    (lambda v: tf.nn.avg_pool2d(tf.zeros([1, 3, 3, 1]), 2, 1, v),
     ["AvgPool"]),
]


@pytest.mark.parametrize("slot", range(len(JUNK_SLOTS)))
def test_junk_arguments(slot):
    """Every junk value in every slot: an allowed error or a result, and
    nothing left behind."""
    fn, names = JUNK_SLOTS[slot]
    before = live()
    for v in JUNK:
        check_call(lambda: fn(v), names)
    assert live() == before


# ==== leaks on error paths ===================================================

# Calls that must fail, each in its own way (shape rule, kernel check on
# data, Python argument check).
FAILING = [
    lambda: tf.add(tf.zeros([2, 3]), tf.zeros([4])),
    lambda: tf.add(tf.zeros([2]), tf.zeros([2], tf.float64)),
    lambda: tf.math.floordiv(tf.constant([1, 2]), tf.constant([1, 0])),
    lambda: tf.math.pow(tf.constant([2, 2]), tf.constant([1, -1])),
    lambda: tf.exp(tf.constant([1])),
    lambda: tf.reshape(tf.zeros([6]), [4, -1]),
    lambda: tf.reshape(tf.zeros([6]), [2 ** 32, 2 ** 32]),
    lambda: tf.transpose(tf.zeros([2, 3]), [0, 0]),
    lambda: tf.concat([tf.zeros([2]), tf.zeros([2, 2])], 0),
    lambda: tf.stack([tf.zeros([2]), tf.zeros([3])]),
    lambda: tf.unstack(tf.zeros([2, 3]), num=5),
    lambda: tf.split(tf.zeros([5]), 2),
    lambda: tf.split(tf.zeros([5]), [2 ** 62, 2 ** 62, 2 ** 62, 2 ** 62, 5]),
    lambda: tf.tile(tf.zeros([1, 1]), [2 ** 32, 2 ** 32]),
    lambda: tf.pad(tf.zeros([2]), [[2 ** 62, 2 ** 62]]),
    lambda: tf.pad(tf.zeros([2]), [[3, 0]], "REFLECT"),
    lambda: tf.pad(tf.constant([1]), [[1, 1]], constant_values=1.5),
    lambda: tf.broadcast_to(tf.zeros([3]), [4]),
    lambda: tf.broadcast_to(tf.zeros([]), [2 ** 32, 2 ** 32]),
    lambda: tf.slice(tf.zeros([3]), [2], [5]),
    lambda: tf.zeros([3])[5],
    lambda: tf.zeros([3])[::0],
    lambda: tf.gather(tf.zeros([3, 2]), [0, 7]),
    lambda: tf.gather(tf.zeros([3, 2]), tf.constant([-1], tf.int64)),
    lambda: tf.gather_nd(tf.zeros([3, 2]), [[0, 5]]),
    lambda: tf.tensor_scatter_nd_update(tf.zeros([3]), [[7]], [1.0]),
    lambda: tf.tensor_scatter_nd_add(tf.zeros([3]), [[0]], [1.0, 2.0]),
    lambda: tf.where(tf.zeros([2]), tf.zeros([2]), tf.zeros([2])),
    lambda: tf.fill([-1], 1.0),
    lambda: tf.zeros([2 ** 32, 2 ** 32]),
    lambda: tf.range(0, 10, 0),
    lambda: tf.range(1000, dtype=tf.int8),
    lambda: tf.one_hot([0, 1, 2, 3], 2 ** 62),
    lambda: tf.nn.conv2d(tf.zeros([1, 3, 3, 2]), tf.zeros([1, 1, 3, 1]), 1,
                         "SAME"),
    lambda: tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.ones([1, 1, 1, 1]), 1,
                         [[0, 0], [2 ** 31 - 1, 2 ** 31 - 1],
                          [2 ** 31 - 1, 2 ** 31 - 1], [0, 0]]),
    lambda: tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.zeros([5, 5, 1, 1]), 1,
                         "VALID"),
    lambda: tf.nn.max_pool2d(tf.zeros([1, 3, 3, 1]), 5, 1, "VALID"),
    lambda: tf.nn.avg_pool2d(tf.zeros([1, 3, 3]), 1, 1, "VALID"),
    lambda: tf.nn.conv2d_transpose(tf.zeros([1, 1, 1, 1]),
                                   tf.zeros([1, 1, 16, 1]),
                                   [1, 2 ** 30, 2 ** 30, 16], 2 ** 31 - 1,
                                   "VALID"),
    lambda: tf.squeeze(tf.zeros([2, 3]), [0]),
    lambda: tf.expand_dims(tf.zeros([2]), 5),
    lambda: tf.reverse(tf.zeros([2, 3]), [0, -2]),
    lambda: tf.shape(tf.zeros([2]), out_type=tf.float32),
    lambda: tf.linspace(0.0, 1.0, 0),
    lambda: tf.one_hot([1], 3, axis=5),
    lambda: tf.nn.leaky_relu(tf.constant([1])),
    lambda: tf.nn.gelu(tf.constant([1])),
    lambda: tf.where(tf.constant([True, False]), tf.zeros([3]),
                     tf.zeros([3])),
    lambda: tf.boolean_mask(tf.zeros([3]), tf.constant([True, False])),
    lambda: tf.pad(tf.zeros([2]), [[1, 1]], "WRAP"),
    lambda: array_ops._strided_slice_grad(tf.zeros([3]), [4], [0], [4],
                                          [1]),
    # Kernel-time failures: the outputs are already allocated then.
    lambda: tf._C.call(array_ops._OP["Where"], (tf.constant([1, 0]),),
                       None, [2]),
    lambda: tf.math.truncatemod(tf.constant([1, 2], tf.int64),
                                tf.constant([0, 1], tf.int64)),
    lambda: tf.one_hot(tf.constant([[0]]), 2 ** 40),
    lambda: conv_ops._max_pool_grad(tf.zeros([1, 3, 3, 1]),
                                    tf.zeros([1, 2, 2, 1]),
                                    tf.zeros([1, 3, 3, 1]), 2, 1, "VALID"),
    lambda: conv_ops._avg_pool_grad(tf.zeros([1, 3, 3, 1]),
                                    tf.zeros([1, 1, 1, 1]), 2, 1, "VALID"),
    lambda: conv_ops._max_pool_grad_grad(tf.zeros([1, 3, 3, 1]),
                                         tf.zeros([1, 2, 2, 1]),
                                         tf.zeros([1, 2, 2, 1]), 2, 1,
                                         "VALID"),
    lambda: conv_ops.conv2d_backprop_filter(tf.zeros([1, 3, 3, 1]),
                                            [1, 1, 1, 1],
                                            tf.zeros([1, 2, 3, 1]), 1,
                                            "VALID"),
    lambda: tf.nn.max_pool2d(tf.zeros([1, 3, 3, 1], tf.int32), 1, 1,
                             "VALID"),
]


@pytest.mark.parametrize("k", range(len(FAILING)))
def test_failing_calls_do_not_leak(k):
    fn = FAILING[k]
    with pytest.raises(ALLOWED):
        fn()
    with no_leak(f"failing call {k}"):
        for _ in range(50):
            with pytest.raises(ALLOWED):
                fn()


@FUZZ
@given(binary_args())
def test_fuzzed_binary_calls_do_not_leak(args):
    name, x, y = args
    a, b = tf.constant(x), tf.constant(y)
    fn = _fn(name)
    with no_leak(name):
        for _ in range(3):
            try:
                fn(a, b)
            except ALLOWED:
                pass


# ==== found here, to be fixed outside the op families ========================

def test_failed_allocation_names_the_op():
    with pytest.raises(tf.errors.ResourceExhaustedError, match="Fill"):
        tf.zeros([2 ** 45])
    with pytest.raises(tf.errors.ResourceExhaustedError, match="LinSpace"):
        tf.linspace(0.0, 1.0, 2 ** 62)


@pytest.mark.parametrize("value, dtype", [
    ([1.5], tf.int32), ([1000], tf.int8), ([-1], tf.uint8),
    ([1e300], tf.int32), ([float("nan")], tf.int64), (1e19, tf.int64),
    (-1e19, tf.int64), (1e300, tf.int64)])
def test_conversion_never_changes_a_value(value, dtype):
    """Python values that dtype cannot hold are TypeErrors (as in TF),
    never truncated or wrapped: through tf.constant and as operands."""
    with pytest.raises(TypeError):
        tf.constant(value, dtype)
    with pytest.raises(TypeError):
        tf.add(tf.zeros([1], dtype), value)


@pytest.mark.slow
def test_long_profile():
    """Every property above with 500 fresh random examples."""
    env = dict(os.environ, TFMINI_FUZZ_EXAMPLES="500", TFMINI_FUZZ_RANDOM="1")
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q",
                        "-x", "-m", "not slow", "-p", "no:cacheprovider",
                        "-W", "ignore::RuntimeWarning"], env=env,
                       cwd=os.path.dirname(os.path.dirname(__file__)),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
