"""Behaviour of the elementwise family beyond the OpSpec table: random
broadcasts against NumPy, operator dtype rules, integer division errors,
casts of special values, the parallel paths, and the public names."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfmini as tf
from tfmini.ops import math_ops

INTS = ["int8", "uint8", "int16", "int32", "int64"]
SIGNED = ["int8", "int16", "int32", "int64"]
FLOATS = ["float32", "float64"]
BIG = 100_003       # above the parallel threshold, and not a round size


# ---- broadcasting, property-based --------------------------------------

@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast: drop leading dims of a common shape and
    set some of the remaining dims to 1 (dims of 0 included)."""
    rank = draw(st.integers(0, 5))
    base = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    shapes = []
    for _ in range(2):
        keep = draw(st.integers(0, rank))
        dims = base[rank - keep:]
        ones = draw(st.lists(st.booleans(), min_size=keep, max_size=keep))
        shapes.append(tuple(1 if o else d for d, o in zip(dims, ones)))
    return shapes


BINARY_FNS = [
    (tf.add, np.add), (tf.subtract, np.subtract),
    (tf.multiply, np.multiply), (tf.maximum, np.maximum),
    (tf.minimum, np.minimum), (tf.equal, np.equal), (tf.less, np.less),
    (tf.greater_equal, np.greater_equal),
    (tf.math.squared_difference, lambda x, y: np.square(x - y)),
]


@settings(max_examples=150, deadline=None)
@given(shapes=broadcast_shapes(), which=st.integers(0, len(BINARY_FNS) - 1),
       dtype=st.sampled_from(FLOATS + INTS), seed=st.integers(0, 2**32 - 1))
def test_broadcast_matches_numpy(shapes, which, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, size=shapes[0]).astype(dtype)
    y = rng.integers(-50, 50, size=shapes[1]).astype(dtype)
    fn, ref = BINARY_FNS[which]
    got = fn(tf.constant(x), tf.constant(y))
    want = ref(x, y)
    assert got.shape == want.shape
    assert got.numpy().dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=60, deadline=None)
@given(shapes=broadcast_shapes(), seed=st.integers(0, 2**32 - 1))
def test_broadcast_floordiv_mod_match_numpy(shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, size=shapes[0]).astype("int32")
    y = rng.integers(1, 7, size=shapes[1]) * rng.choice([-1, 1],
                                                        size=shapes[1])
    y = y.astype("int32")
    tx, ty = tf.constant(x), tf.constant(y)
    np.testing.assert_array_equal((tx // ty).numpy(), x // y)
    np.testing.assert_array_equal((tx % ty).numpy(), x % y)


@settings(max_examples=40, deadline=None)
@given(a=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       b=st.lists(st.integers(2, 5), min_size=1, max_size=3))
def test_incompatible_shapes_name_op_and_shapes(a, b):
    # Make the last dims differ and neither be 1.
    a = a[:-1] + [b[-1] + 1]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"AddV2.*\[.*\].*\[.*\]"):
        tf.add(tf.constant(np.zeros(a, np.float32)),
               tf.constant(np.zeros(b, np.float32)))


def test_large_broadcasts_use_parallel_paths():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BIG,)).astype(np.float32)
    m = rng.standard_normal((317, 411)).astype(np.float32)
    row = rng.standard_normal((411,)).astype(np.float32)
    col = rng.standard_normal((317, 1)).astype(np.float32)
    t = tf.constant(x)
    np.testing.assert_array_equal((t + t).numpy(), x + x)
    np.testing.assert_array_equal((t * 2.5).numpy(), x * np.float32(2.5))
    np.testing.assert_array_equal((2.5 - t).numpy(), np.float32(2.5) - x)
    np.testing.assert_array_equal(tf.add(m, row).numpy(), m + row)
    np.testing.assert_array_equal(tf.maximum(col, m).numpy(),
                                  np.maximum(col, m))
    np.testing.assert_array_equal(tf.multiply(col, row).numpy(), col * row)
    np.testing.assert_allclose(tf.exp(t).numpy(), np.exp(x), rtol=2e-6)
    np.testing.assert_allclose(tf.tanh(t).numpy(), np.tanh(x), rtol=2e-6,
                               atol=1e-7)


# ---- operator dtype rules ----------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + INTS + ["float16"])
def test_python_scalars_adopt_the_tensor_dtype(dtype):
    t = tf.constant(np.array([1, 2, 3], dtype=dtype))
    for r in (t + 1, 1 + t, t * 2, 2 * t, t - 1, 3 - t, tf.add(t, 1),
              tf.maximum(1, t), t ** 2):
        assert r.dtype == tf.as_dtype(dtype)
    if dtype.startswith("float"):
        assert (t + 0.5).dtype == tf.as_dtype(dtype)
        assert (0.5 * t).dtype == tf.as_dtype(dtype)


def test_python_scalars_alone():
    assert tf.add(1, 2).dtype == tf.int32
    assert int(tf.add(1, 2)) == 3
    assert tf.add(1.0, 2).dtype == tf.float32
    assert tf.exp(1.0).dtype == tf.float32
    assert tf.abs(-3).dtype == tf.int32 and int(tf.abs(-3)) == 3
    assert tf.multiply(2**40, 3).dtype == tf.int64


def test_mixed_tensor_dtypes_are_an_error_naming_op_and_dtypes():
    a = tf.constant([1.0], dtype=tf.float32)
    b = tf.constant([1.0], dtype=tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="AddV2.*float32.*float64"):
        a + b
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Mul.*float64.*float32"):
        tf.multiply(b, a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Maximum"):
        tf.maximum(a, tf.constant([1]))


def test_float_scalar_with_int_tensor_is_a_type_error():
    t = tf.constant([1, 2])
    with pytest.raises(TypeError):
        1.5 + t
    with pytest.raises(TypeError):
        t + 1.5
    with pytest.raises(TypeError):
        t * 0.5
    with pytest.raises(TypeError):
        tf.add(t, 1.5)


@pytest.mark.parametrize("dtype,want", [
    ("int8", "float32"), ("uint8", "float32"), ("int16", "float32"),
    ("int32", "float64"), ("int64", "float64"), ("float32", "float32"),
    ("float64", "float64")])
def test_true_division_dtypes(dtype, want):
    x = np.array([7, 9, 3], dtype=dtype)
    y = np.array([2, 2, 4], dtype=dtype)
    for r in (tf.constant(x) / tf.constant(y), tf.divide(x, tf.constant(y)),
              tf.truediv(tf.constant(x), y)):
        assert r.dtype == tf.as_dtype(want)
        np.testing.assert_allclose(
            r.numpy(), x.astype(want) / y.astype(want))


def test_int_division_by_python_int():
    t = tf.constant([1, 2, 3])
    r = t / 2
    assert r.dtype == tf.float64
    np.testing.assert_array_equal(r.numpy(), [0.5, 1.0, 1.5])
    r = 3 / t
    np.testing.assert_array_equal(r.numpy(), [3.0, 1.5, 1.0])
    assert tf.divide(1, 2).dtype == tf.float64


def test_truediv_dtype_mismatch_is_type_error():
    with pytest.raises(TypeError, match="same dtype"):
        tf.truediv(tf.constant([1.0]), tf.constant([1.0], tf.float64))
    with pytest.raises(TypeError):
        tf.truediv(tf.constant([True]), tf.constant([True]))


def test_realdiv_and_float_ops_reject_integers_by_name():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="RealDiv.*int32"):
        tf.realdiv(tf.constant([1]), tf.constant([2]))
    for fn, name in [(tf.exp, "Exp"), (tf.sqrt, "Sqrt"),
                     (tf.sigmoid, "Sigmoid"), (tf.nn.elu, "Elu"),
                     (tf.nn.gelu, "Gelu"), (tf.math.log, "Log"),
                     (tf.floor, "Floor"), (tf.math.is_nan, "IsNan")]:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"{name}.*int64"):
            fn(tf.constant([1], dtype=tf.int64))


def test_bool_arithmetic_is_an_error():
    b = tf.constant([True, False])
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddV2.*bool"):
        b + b
    with pytest.raises(tf.errors.InvalidArgumentError, match="Neg.*bool"):
        -b


# ---- integer division ---------------------------------------------------

@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("n", [3, BIG])
def test_integer_division_by_zero_raises(dtype, n):
    x = np.arange(n).astype(dtype)
    y = np.ones(n, dtype=dtype)
    y[n // 2] = 0
    tx, ty = tf.constant(x), tf.constant(y)
    for fn in (lambda: tx // ty, lambda: tx % ty,
               lambda: tf.math.floordiv(tx, ty),
               lambda: tf.math.floormod(tx, ty),
               lambda: tf.truncatediv(tx, ty),
               lambda: tf.truncatemod(tx, ty)):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Integer division by zero"):
            fn()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="FloorDiv: Integer division by zero"):
        tx // 0


@pytest.mark.parametrize("dtype", SIGNED)
def test_int_min_divided_by_minus_one_wraps_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min, info.max, -7, 7], dtype=dtype)
    y = np.array([-1, 1, -1, -1, -1], dtype=dtype)
    tx, ty = tf.constant(x), tf.constant(y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((tx // ty).numpy(), x // y)
        np.testing.assert_array_equal((tx % ty).numpy(), x % y)
        np.testing.assert_array_equal(tf.truncatemod(tx, ty).numpy(),
                                      np.fmod(x, y))
    q = tf.truncatediv(tx, ty).numpy()
    assert q[0] == info.min and q[3] == 7 and q[4] == -7


@pytest.mark.parametrize("dtype", SIGNED)
def test_floor_division_rounds_toward_minus_infinity(dtype):
    x = np.array([7, -7, 7, -7, 0, 6, -6], dtype=dtype)
    y = np.array([2, 2, -2, -2, 3, 3, -4], dtype=dtype)
    tx, ty = tf.constant(x), tf.constant(y)
    np.testing.assert_array_equal((tx // ty).numpy(), x // y)
    np.testing.assert_array_equal((tx % ty).numpy(), x % y)    # sign of y
    np.testing.assert_array_equal(tf.truncatediv(tx, ty).numpy(),
                                  np.trunc(x / y).astype(dtype))
    np.testing.assert_array_equal(tf.truncatemod(tx, ty).numpy(),
                                  np.fmod(x, y))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_division_by_zero_follows_ieee(dtype):
    x = np.array([1.0, -1.0, 0.0, 5.5, -5.5], dtype=dtype)
    y = np.array([0.0, 0.0, 0.0, -2.0, 2.0], dtype=dtype)
    tx, ty = tf.constant(x), tf.constant(y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((tx / ty).numpy(), x / y)
        np.testing.assert_array_equal((tx // ty).numpy(), np.floor(x / y))
        np.testing.assert_array_equal((tx % ty).numpy(), np.mod(x, y))
    np.testing.assert_array_equal(tf.math.divide_no_nan(tx, ty).numpy(),
                                  np.where(y == 0, 0, x / np.where(y, y, 1)))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow(dtype):
    x = np.array([2, 3, 0, 1, 5], dtype=dtype)
    y = np.array([3, 0, 0, 7, 2], dtype=dtype)
    np.testing.assert_array_equal((tf.constant(x) ** tf.constant(y)).numpy(),
                                  x ** y)
    if dtype != "uint8":
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Integers to negative integer powers are "
                                 "not allowed"):
            tf.pow(tf.constant(x), tf.constant(np.array(-1, dtype)))


def test_integer_pow_wraps_like_numpy():
    x = np.array([3, -3, 7], dtype=np.int32)
    y = np.array([40, 41, 30], dtype=np.int32)
    np.testing.assert_array_equal(tf.pow(x, tf.constant(y)).numpy(), x ** y)


# ---- reflected operators, comparisons, bitwise -------------------------

def test_reflected_operators():
    x = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    t = tf.constant(x)
    f = np.float32
    np.testing.assert_array_equal((3 - t).numpy(), f(3) - x)
    np.testing.assert_array_equal((3 / t).numpy(), f(3) / x)
    np.testing.assert_array_equal((3 // t).numpy(), np.floor(f(3) / x))
    np.testing.assert_array_equal((3 % t).numpy(), np.mod(f(3), x))
    np.testing.assert_array_equal((2 ** t).numpy(), f(2) ** x)
    np.testing.assert_array_equal(([1, 2, 3] + t).numpy(), x + [1, 2, 3])
    np.testing.assert_array_equal((-t).numpy(), -x)
    np.testing.assert_array_equal(abs(-t).numpy(), x)


def test_comparison_operators():
    x = np.array([1, 2, 3, 2], dtype=np.int32)
    t = tf.constant(x)
    for got, want in [(t < 2, x < 2), (t <= 2, x <= 2), (t > 2, x > 2),
                      (t >= 2, x >= 2), (t == 2, x == 2), (t != 2, x != 2),
                      (2 < t, 2 < x), (2 >= t, 2 >= x),
                      (t == tf.constant([1, 0, 3, 0]), x == [1, 0, 3, 0])]:
        assert got.dtype == tf.bool
        np.testing.assert_array_equal(got.numpy(), want)
    assert (t == None) is False      # noqa: E711
    assert (t != None) is True       # noqa: E711


def test_nan_in_comparisons_and_max_min():
    x = np.array([np.nan, 1.0, np.nan, -np.inf], dtype=np.float32)
    y = np.array([1.0, np.nan, np.nan, 0.0], dtype=np.float32)
    tx, ty = tf.constant(x), tf.constant(y)
    for fn, ref in [(tf.maximum, np.maximum), (tf.minimum, np.minimum),
                    (tf.equal, np.equal), (tf.not_equal, np.not_equal),
                    (tf.less, np.less), (tf.greater_equal, np.greater_equal)]:
        np.testing.assert_array_equal(fn(tx, ty).numpy(), ref(x, y))


def test_bool_operators_are_logical():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    ta, tb = tf.constant(a), tf.constant(b)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b),
                      (~ta, ~a), (ta & True, a & True), (False | tb, b),
                      (tf.logical_and(ta, tb), a & b),
                      (tf.logical_not(ta), ~a),
                      (tf.math.logical_xor(ta, tb), a ^ b)]:
        assert got.dtype == tf.bool
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", INTS)
def test_int_operators_are_bitwise(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=50, dtype=dtype)
    b = rng.integers(info.min, info.max, size=50, dtype=dtype)
    ta, tb = tf.constant(a), tf.constant(b)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b),
                      (~ta, ~a), (ta & 6, a & dtype_cast(6, dtype))]:
        assert got.dtype == tf.as_dtype(dtype)
        np.testing.assert_array_equal(got.numpy(), want)


def dtype_cast(v, dtype):
    return np.array(v).astype(dtype)


def test_logical_and_bitwise_reject_wrong_dtypes():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="LogicalAnd.*int32"):
        tf.logical_and(tf.constant([1]), tf.constant([1]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="BitwiseAnd.*float32"):
        tf.constant([1.0]) & tf.constant([2.0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Less.*bool"):
        tf.less(tf.constant([True]), tf.constant([False]))


# ---- unary specifics ---------------------------------------------------

def test_round_is_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999],
                 dtype=np.float32)
    np.testing.assert_array_equal(tf.round(x).numpy(), np.round(x))
    np.testing.assert_array_equal(tf.math.rint(x).numpy(), np.rint(x))
    i = tf.constant([3, -4])
    assert tf.round(i).dtype == tf.int32


@pytest.mark.parametrize("dtype", SIGNED)
def test_integer_abs_neg_wrap_at_min(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, -1, 0], dtype=dtype)
    t = tf.constant(x)
    np.testing.assert_array_equal(tf.abs(t).numpy(), np.abs(x))
    np.testing.assert_array_equal((-t).numpy(), -x)
    np.testing.assert_array_equal(tf.sign(t).numpy(), np.sign(x))


def test_activations_at_extremes_do_not_overflow():
    x = np.array([-1000.0, -90.0, -20.0, 0.0, 20.0, 90.0, 1000.0],
                 dtype=np.float32)
    t = tf.constant(x)
    sig = tf.sigmoid(t).numpy()
    assert np.all(np.isfinite(sig)) and sig[0] == 0 and sig[-1] == 1
    sp = tf.nn.softplus(t).numpy()
    np.testing.assert_allclose(sp, np.logaddexp(x, 0), rtol=1e-6)
    ls = tf.math.log_sigmoid(t).numpy()
    np.testing.assert_allclose(ls, -np.logaddexp(0, -x), rtol=1e-6)
    g = tf.nn.gelu(t).numpy()
    assert np.all(np.isfinite(g)) and g[-1] == 1000 and g[0] == 0
    assert np.all(np.isfinite(tf.nn.elu(t).numpy()))
    np.testing.assert_array_equal(tf.nn.relu6(t).numpy(), np.clip(x, 0, 6))


def test_leaky_relu_alpha_and_gelu_approximate_attrs():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    np.testing.assert_allclose(tf.nn.leaky_relu(x, alpha=0.5).numpy(),
                               np.where(x > 0, x, 0.5 * x))
    exact = tf.nn.gelu(x).numpy()
    approx = tf.nn.gelu(x, approximate=True).numpy()
    assert not np.array_equal(exact, approx)
    np.testing.assert_allclose(exact, approx, atol=1e-3)


def test_float16_goes_through_float32():
    x = np.array([0.5, 1.0, -2.0], dtype=np.float16)
    r = tf.exp(x)
    assert r.dtype == tf.float16
    np.testing.assert_allclose(r.numpy(), np.exp(x), rtol=1e-3)
    r = tf.constant(x) + 1
    assert r.dtype == tf.float16
    np.testing.assert_array_equal(r.numpy(), x + np.float16(1))


# ---- cast ----------------------------------------------------------------

SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 300.7, -3.9,
                    2.0**31, -2.0**31 - 1, 2.0**63, 127.9, 255.5, -129.0])


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", INTS)
def test_cast_of_special_floats_matches_numpy_on_x86(src, dst):
    # C leaves these undefined; we give what NumPy and TF give on x86
    # and, above all, never crash.
    x = SPECIAL.astype(src)
    with np.errstate(all="ignore"):
        want = x.astype(dst)
    np.testing.assert_array_equal(tf.cast(x, dst).numpy(), want)
    # The parallel path too.
    big = np.resize(x, BIG)
    with np.errstate(all="ignore"):
        want = big.astype(dst)
    np.testing.assert_array_equal(tf.cast(big, dst).numpy(), want)


def test_cast_truncates_toward_zero_and_bool_rules():
    x = np.array([1.7, -1.7, 0.0, -0.0, np.nan, 2.5], dtype=np.float32)
    np.testing.assert_array_equal(tf.cast(x, tf.int32).numpy()[[0, 1, 5]],
                                  [1, -1, 2])
    np.testing.assert_array_equal(tf.cast(x, tf.bool).numpy(),
                                  x.astype(bool))
    b = tf.constant([True, False])
    np.testing.assert_array_equal(tf.cast(b, tf.float32).numpy(), [1.0, 0])
    np.testing.assert_array_equal(tf.cast(b, tf.int64).numpy(), [1, 0])


def test_cast_between_ints_wraps_and_keeps_large_int64():
    x = np.array([2**40 + 3, -(2**40) - 5, 2**62 + 1, 255, 256],
                 dtype=np.int64)
    for dst in ("int8", "uint8", "int16", "int32"):
        np.testing.assert_array_equal(tf.cast(x, dst).numpy(), x.astype(dst))
    # Exact beyond 2**53 (no detour through double).
    y = np.array([2**62 + 1], dtype=np.int64)
    np.testing.assert_array_equal(
        tf.cast(tf.cast(y, tf.int64), tf.int64).numpy(), y)
    np.testing.assert_array_equal(
        tf.cast(tf.cast(y.astype(np.int32), tf.int64), tf.int32).numpy(),
        y.astype(np.int32))


def test_cast_same_dtype_returns_the_tensor():
    t = tf.constant([1.0, 2.0])
    assert tf.cast(t, tf.float32) is t
    assert tf.cast(t, "float64").dtype == tf.float64
    assert tf.cast(1.7, tf.int32).numpy() == 1


def test_saturate_cast_clamps_instead_of_wrapping():
    x = np.array([1e10, -1e10, 3.5, 300.0, -5.0], dtype=np.float32)
    np.testing.assert_array_equal(tf.saturate_cast(x, tf.int32).numpy(),
                                  [2147483520, -2147483648, 3, 300, -5])
    np.testing.assert_array_equal(tf.saturate_cast(x, tf.uint8).numpy(),
                                  [255, 0, 3, 255, 0])
    np.testing.assert_array_equal(
        tf.saturate_cast(tf.constant([1000, -1000]), tf.int8).numpy(),
        [127, -128])


# ---- clip_by_value -------------------------------------------------------

def test_clip_by_value_rules():
    t = tf.constant([[-10.0, -1.0, 0.0], [0.0, 2.0, 10.0]])
    np.testing.assert_array_equal(tf.clip_by_value(t, -1, 1).numpy(),
                                  np.clip(t.numpy(), -1, 1))
    lo = np.array([[2.0], [1.0]], dtype=np.float32)
    np.testing.assert_array_equal(tf.clip_by_value(t, lo, 100).numpy(),
                                  np.maximum(t.numpy(), lo))
    with pytest.raises(TypeError):
        tf.clip_by_value(tf.constant([1, 2]), -3.1, 3.1)
    with pytest.raises(ValueError):
        tf.clip_by_value(t, np.zeros((2, 2, 3), np.float32), 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.clip_by_value(t, np.zeros((1, 1, 2), np.float32), 1.0)


# ---- the public names ---------------------------------------------------

TOP_LEVEL = ["add", "subtract", "multiply", "divide", "truediv", "realdiv",
             "maximum", "minimum", "pow", "negative", "abs", "sign",
             "square", "sqrt", "exp", "floor", "round", "sigmoid", "tanh",
             "sin", "cos", "equal", "not_equal", "less", "less_equal",
             "greater", "greater_equal", "logical_and", "logical_or",
             "logical_not", "cast", "clip_by_value", "saturate_cast",
             "truncatediv", "truncatemod", "atan2", "scalar_mul"]
MATH = ["add", "exp", "log", "log1p", "expm1", "sigmoid", "floordiv",
        "floormod", "mod", "divide_no_nan", "squared_difference", "rsqrt",
        "reciprocal", "erf", "erfc", "ceil", "rint", "logical_xor",
        "logical_and", "is_nan", "is_inf", "is_finite", "softplus",
        "log_sigmoid", "tanh", "maximum", "abs", "round"]
NN = ["relu", "relu6", "elu", "selu", "gelu", "softplus", "softsign",
      "leaky_relu", "sigmoid", "tanh", "silu", "swish"]


def test_public_names():
    for n in TOP_LEVEL:
        assert callable(getattr(tf, n)), n
    for n in MATH:
        assert callable(getattr(tf.math, n)), n
    for n in NN:
        assert callable(getattr(tf.nn, n)), n
    # Names TF keeps out of the top level stay out.
    for n in ("log", "floordiv", "erf", "relu", "ceil"):
        assert not hasattr(tf, n), n
    for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert"):
        assert n in math_ops._NAMESPACES["bitwise"]
    assert tf.math.exp is tf.exp and tf.nn.sigmoid is tf.sigmoid
