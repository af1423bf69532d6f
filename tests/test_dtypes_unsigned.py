"""tf.uint16, tf.uint32, tf.uint64: conversion, casts, arithmetic that
wraps as NumPy's and TF's does, reductions, the ops TF refuses for them,
tf.function, saved models and checkpoints. Reference values are NumPy's
or, where NumPy has none (float -> unsigned out of range), TF 2.21's."""
import numpy as np
import pytest

import tfmini as tf
from tfmini.ops import math_ops as _m   # _m.*

UINTS = ["uint16", "uint32", "uint64"]


def _t(values, dtype):
    return tf.constant(np.asarray(values, dtype=dtype))


def _check(t, expect):
    expect = np.asarray(expect)
    got = t.numpy()
    assert got.dtype == expect.dtype, (got.dtype, expect.dtype)
    np.testing.assert_array_equal(got, expect)


def _extremes(dtype):
    hi = np.iinfo(dtype).max
    return np.array([0, 1, 2, 7, hi // 2, hi // 2 + 1, hi - 1, hi], dtype)


# ---- the DType objects ----------------------------------------------------

@pytest.mark.parametrize("name", UINTS)
def test_dtype_attributes(name):
    d = getattr(tf, name)
    npt = getattr(np, name)
    assert d is tf.dtypes.as_dtype(name) is tf.as_dtype(npt)
    assert tf.as_dtype(np.dtype(npt)) is d and getattr(tf.dtypes, name) is d
    assert d.as_numpy_dtype is npt
    assert d.size == np.dtype(npt).itemsize
    assert d.is_integer and d.is_unsigned
    assert not (d.is_floating or d.is_bool or d.is_complex)
    assert d.min == 0 and d.max == int(np.iinfo(npt).max)
    assert isinstance(d.max, int)
    assert repr(d) == f"tf.{name}" and str(d) == f"<dtype: '{name}'>"
    assert d == name and d == npt and d != tf.int64


def test_dtype_enum_order():
    # The core's enum (csrc/core/dtype.h): codes are saved in files.
    assert [tf.uint16.as_datatype_enum, tf.uint32.as_datatype_enum,
            tf.uint64.as_datatype_enum] == [11, 12, 13]
    assert tf.dtypes.from_enum(12) is tf.uint32


# ---- conversion -----------------------------------------------------------

@pytest.mark.parametrize("name", UINTS)
def test_numpy_roundtrip_and_repr(name):
    x = _extremes(name)
    t = tf.constant(x)
    assert t.dtype == getattr(tf, name)
    _check(t, x)
    _check(tf.convert_to_tensor(x), x)
    assert np.asarray(memoryview(t)).dtype == x.dtype
    r = repr(tf.constant([1, 2, 250], getattr(tf, name)))
    assert r == (f"<tf.Tensor: shape=(3,), dtype={name}, numpy=array(["
                 f"  1,   2, 250], dtype={name})>")
    assert str(tf.constant(5, name)) == f"tf.Tensor(5, shape=(), dtype={name})"


def test_python_ints_to_uint64_exact():
    big = 2 ** 64 - 1
    _check(tf.constant(big, tf.uint64), np.uint64(big))
    _check(tf.constant([big, 5], tf.uint64), np.array([big, 5], np.uint64))
    _check(tf.constant([2 ** 63 + 1], tf.uint64),
           np.array([2 ** 63 + 1], np.uint64))
    assert int(tf.constant(big, tf.uint64).numpy()) == big


@pytest.mark.parametrize("value,dtype", [
    (-1, "uint16"), (65536, "uint16"), (-1, "uint32"), (2 ** 32, "uint32"),
    (-1, "uint64"), (2 ** 64, "uint64"), ([1, -1], "uint64"),
    ([2 ** 64 - 1, -1], "uint64"), ([70000], "uint16"), (1.5, "uint32"),
    ([1.5, 2], "uint64")])
def test_values_that_do_not_fit_raise(value, dtype):
    with pytest.raises((TypeError, ValueError)):
        tf.constant(value, dtype)


def test_list_past_int64_needs_uint64():
    with pytest.raises(ValueError, match="out of range for int64"):
        tf.constant([2 ** 63])
    with pytest.raises((TypeError, ValueError)):
        tf.constant([2 ** 63], tf.int64)
    # A uint64 array whose values pass int64's range does not fit int64.
    with pytest.raises(TypeError):
        tf.convert_to_tensor(np.array([2 ** 63], np.uint64), tf.int64)


# ---- casts ----------------------------------------------------------------

CAST_TARGETS = ["bool", "int8", "uint8", "int16", "int32", "int64",
                "float16", "float32", "float64"] + UINTS


@pytest.mark.parametrize("src", UINTS + ["int8", "int32", "int64", "uint8"])
@pytest.mark.parametrize("dst", CAST_TARGETS)
def test_cast_between_ints_wraps_like_numpy(src, dst):
    info = np.iinfo(src)
    x = np.array([info.min, -1 if info.min < 0 else 0, 0, 1, 255, 256,
                  65535, 65536, info.max], dtype=object)
    x = np.array([int(v) for v in x if info.min <= int(v) <= info.max], src)
    got = tf.cast(tf.constant(x), dst)
    assert got.dtype == tf.as_dtype(dst)
    with np.errstate(over="ignore"):    # 65536 -> float16 inf
        np.testing.assert_array_equal(got.numpy(), x.astype(dst))


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_cast_float_to_unsigned_as_tf(src):
    x = tf.constant(np.array([-1.5, 3.7, 1e20, 0.0, 70000.0], src))
    # TF 2.21 on x86: uint16 through int32, uint32 through int64.
    _check(tf.cast(x, tf.uint16),
           np.array([65535, 3, 0, 0, 4464], np.uint16))
    _check(tf.cast(x, tf.uint32),
           np.array([4294967295, 3, 0, 0, 70000], np.uint32))
    specials = tf.constant(np.array(
        [1e30, -1e30, np.nan, -1.0, 2.0 ** 63 * 1.5, 5.9], src))
    _check(tf.cast(specials, tf.uint64), np.array(
        [2 ** 63, 2 ** 63, 2 ** 63, 2 ** 64 - 1, 13835058055282163712, 5],
        np.uint64))
    _check(tf.cast(tf.constant([1e30, -1e30, float("nan")]), tf.uint32),
           np.zeros(3, np.uint32))


@pytest.mark.parametrize("name", UINTS)
def test_cast_unsigned_to_float(name):
    x = _extremes(name)
    for dst in ["float32", "float64"]:
        np.testing.assert_array_equal(tf.cast(tf.constant(x), dst).numpy(),
                                      x.astype(dst))


def test_saturate_cast():
    x = tf.constant([-5.0, 3.0, 1e30])
    _check(tf.saturate_cast(x, tf.uint16),
           np.array([0, 3, 65535], np.uint16))
    _check(tf.saturate_cast(tf.constant([2 ** 64 - 1], tf.uint64),
                                   tf.int32),
           np.array([2 ** 31 - 1], np.int32))
    _check(tf.saturate_cast(tf.constant([-3, 9], tf.int64), tf.uint32),
           np.array([0, 9], np.uint32))


# ---- elementwise ----------------------------------------------------------

def _pairs(name, rng):
    info = np.iinfo(name)
    x = rng.integers(0, info.max, size=40, dtype=name, endpoint=True)
    y = rng.integers(0, info.max, size=40, dtype=name, endpoint=True)
    x[:8], y[:8] = _extremes(name), _extremes(name)[::-1]
    return x, y


@pytest.mark.parametrize("name", UINTS)
def test_arithmetic_wraps_like_numpy(name):
    x, y = _pairs(name, np.random.default_rng(1))
    a, b = tf.constant(x), tf.constant(y)
    with np.errstate(over="ignore"):
        _check(a + b, x + y)
        _check(a - b, x - y)
        _check(a * b, x * y)
        _check(tf.square(a), x * x)
    _check(tf.maximum(a, b), np.maximum(x, y))
    _check(tf.minimum(a, b), np.minimum(x, y))
    y1 = np.maximum(y, 1).astype(name)
    _check(a // tf.constant(y1), x // y1)
    _check(a % tf.constant(y1), x % y1)
    _check(tf.truncatediv(a, tf.constant(y1)), x // y1)
    _check(tf.round(a), x)
    _check(tf.nn.relu(a), x)
    _check(tf.nn.relu6(a), np.minimum(x, 6).astype(name))
    _check(a + 1, x + np.array(1, name))
    _check(tf.clip_by_value(a, 2, 5), np.clip(x, 2, 5).astype(name))


@pytest.mark.parametrize("name", UINTS)
def test_truediv_result_types(name):
    to = "float32" if name == "uint16" else "float64"
    x, y = np.array([1, 2, 250], name), np.array([3, 2, 7], name)
    got = tf.constant(x) / tf.constant(y)
    assert got.dtype == to
    np.testing.assert_allclose(got.numpy(), (x / y).astype(to), rtol=1e-7)


@pytest.mark.parametrize("name", UINTS)
def test_division_by_zero_raises(name):
    a = tf.constant([4, 5], name)
    z = tf.zeros([2], name)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Integer division by zero"):
        a // z
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Integer division by zero"):
        a % z


@pytest.mark.parametrize("name", UINTS)
def test_comparisons_and_bitwise(name):
    x, y = _pairs(name, np.random.default_rng(2))
    y[8:16] = x[8:16]
    a, b = tf.constant(x), tf.constant(y)
    for fn, ref in [(tf.equal, np.equal), (tf.not_equal, np.not_equal),
                    (tf.less, np.less), (tf.less_equal, np.less_equal),
                    (tf.greater, np.greater),
                    (tf.greater_equal, np.greater_equal)]:
        _check(fn(a, b), ref(x, y))
    _check(_m.bitwise_and(a, b), x & y)
    _check(_m.bitwise_or(a, b), x | y)
    _check(_m.bitwise_xor(a, b), x ^ y)
    _check(_m.invert(a), ~x)
    _check(~a, ~x)


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("op,fn", [
    ("Neg", lambda a, b: -a), ("Abs", lambda a, b: tf.abs(a)),
    ("Sign", lambda a, b: tf.sign(a)),
    ("SquaredDifference", tf.math.squared_difference),
    ("TruncateMod", tf.truncatemod), ("Pow", tf.pow),
    ("MatMul", lambda a, b: tf.matmul(tf.reshape(a, [1, 2]),
                                      tf.reshape(b, [2, 1])))])
def test_ops_tf_refuses_for_unsigned(name, op, fn):
    a, b = tf.constant([1, 2], name), tf.constant([3, 1], name)
    with pytest.raises((tf.errors.InvalidArgumentError,
                        tf.errors.UnimplementedError)) as e:
        fn(a, b)
    assert op in str(e.value) and name in str(e.value)


@pytest.mark.parametrize("name", UINTS)
def test_float_math_refuses_unsigned(name):
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)) as e:
        tf.sqrt(tf.constant([4], name))
    assert name in str(e.value)


# ---- reductions, scans, sort -----------------------------------------------

@pytest.mark.parametrize("name", UINTS)
def test_reductions(name):
    rng = np.random.default_rng(3)
    x = rng.integers(0, np.iinfo(name).max, size=(6, 37), dtype=name,
                     endpoint=True)
    x[0, :8] = _extremes(name)
    t = tf.constant(x)
    with np.errstate(over="ignore"):
        for axis in [None, 0, 1]:
            _check(tf.reduce_sum(t, axis), x.sum(axis, dtype=name))
            _check(tf.reduce_prod(t, axis), x.prod(axis, dtype=name))
            _check(tf.reduce_max(t, axis), x.max(axis))
            _check(tf.reduce_min(t, axis), x.min(axis))
        for axis in [0, 1]:
            _check(tf.argmax(t, axis), x.argmax(axis))
            _check(tf.argmin(t, axis), x.argmin(axis))
        _check(tf.cumsum(t, 1), np.cumsum(x, 1, dtype=name))
        _check(tf.math.cumprod(t, 0), np.cumprod(x, 0, dtype=name))
    small = np.array([1, 2, 250], name)
    _check(tf.reduce_mean(tf.constant(small)), np.array(84, name))
    hi = np.iinfo(name).max
    _check(tf.reduce_max(tf.constant(np.array([hi, 0, hi - 1], name))),
           np.array(hi, name))
    _check(tf.reduce_min(tf.constant(np.array([hi, hi - 1], name))),
           np.array(hi - 1, name))


@pytest.mark.parametrize("name", UINTS)
def test_sort_and_top_k(name):
    x = _extremes(name)[[5, 0, 7, 2, 6, 1, 4, 3]]
    t = tf.constant(x)
    _check(tf.sort(t), np.sort(x))
    _check(tf.sort(t, direction="DESCENDING"), np.sort(x)[::-1])
    _check(tf.argsort(t), np.argsort(x, kind="stable").astype(np.int32))
    v, i = tf.math.top_k(t, 3)
    _check(v, np.sort(x)[::-1][:3])
    _check(i, np.argsort(-x.astype(np.float64), kind="stable")[:3]
           .astype(np.int32))


# ---- shape ops, fill, where --------------------------------------------------

@pytest.mark.parametrize("name", UINTS)
def test_shape_and_fill_ops(name):
    x = _extremes(name)
    t = tf.constant(x)
    d = getattr(tf, name)
    _check(tf.zeros([2, 3], d), np.zeros((2, 3), name))
    _check(tf.ones([3], d), np.ones(3, name))
    _check(tf.fill([2], tf.constant(5, d)), np.full(2, 5, name))
    _check(tf.zeros_like(t), np.zeros_like(x))
    _check(tf.gather(t, [7, 0, 3]), x[[7, 0, 3]])
    _check(tf.concat([t, t[:2]], 0), np.concatenate([x, x[:2]]))
    _check(tf.stack([t, t]), np.stack([x, x]))
    _check(tf.reshape(t, [2, 4]), x.reshape(2, 4))
    _check(tf.transpose(tf.reshape(t, [2, 4])), x.reshape(2, 4).T)
    _check(tf.reverse(t, [0]), x[::-1])
    _check(tf.tile(t[:2], [2]), np.tile(x[:2], 2))
    _check(t[2:5], x[2:5])
    _check(tf.pad(t[:2], [[1, 1]], constant_values=3),
           np.pad(x[:2], 1, constant_values=3))
    _check(tf.where(t > 2, t, tf.zeros_like(t)), np.where(x > 2, x, 0)
           .astype(name))
    _check(tf.where(t), np.argwhere(x))
    _check(tf.tensor_scatter_nd_add(t, [[0]], tf.constant([5], d)),
           np.concatenate([[x[0] + 5], x[1:]]).astype(name))
    _check(tf.math.unsorted_segment_sum(t[:3], [0, 0, 1], 2),
           np.array([x[0] + x[1], x[2]], name))


# ---- variables, tf.function, saved models, checkpoints ---------------------

@pytest.mark.parametrize("name", UINTS)
def test_variable_and_function(name):
    d = getattr(tf, name)
    v = tf.Variable(tf.constant([1, 2, 250], d))
    assert v.dtype == d
    v.assign_add(tf.constant([3, 2, 7], d))
    _check(v.read_value(), np.array([4, 4, 257], name))

    @tf.function
    def f(x):
        y = x * 2 + 1
        return tf.reduce_sum(y), tf.cast(y, tf.float64), y - x * 3
    x = np.array([0, 5, np.iinfo(name).max], name)
    s, c, w = f(tf.constant(x))
    with np.errstate(over="ignore"):
        y = x * np.array(2, name) + np.array(1, name)
        _check(s, y.sum(dtype=name))
        _check(w, y - x * np.array(3, name))
    np.testing.assert_array_equal(c.numpy(), y.astype(np.float64))


def test_uint64_constant_in_function_is_exact():
    big = 2 ** 64 - 3

    @tf.function
    def f(x):
        return x + tf.constant(big, tf.uint64) + tf.constant(0, tf.uint64)
    _check(f(tf.constant(2, tf.uint64)), np.uint64(big + 2))


def test_saved_model_roundtrip(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(tf.constant([2 ** 64 - 1, 3], tf.uint64))
            self.w = tf.Variable(tf.constant([65535], tf.uint16))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.uint32)])
        def f(self, x):
            return (x * 3 + tf.constant(4000000000, tf.uint32),
                    tf.cast(x, tf.uint64) + self.v[0], self.w + 1)

    m = M()
    x = np.array([1, 2 ** 32 - 1], np.uint32)
    want = [t.numpy() for t in m.f(tf.constant(x))]
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    got = [t.numpy() for t in loaded.f(tf.constant(x))]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    _check(loaded.v, np.array([2 ** 64 - 1, 3], np.uint64))
    _check(loaded.w, np.array([65535], np.uint16))


def test_checkpoint_roundtrip(tmp_path):
    vals = {n: _extremes(n) for n in UINTS}
    ck = tf.train.Checkpoint(**{n: tf.Variable(v) for n, v in vals.items()})
    path = ck.write(str(tmp_path / "ck"))
    vs = {n: tf.Variable(np.zeros_like(v)) for n, v in vals.items()}
    tf.train.Checkpoint(**vs).read(path)
    for n, v in vals.items():
        _check(vs[n], v)


def test_print_and_format_uint64_exact():
    big = tf.constant([2 ** 64 - 1, 3], tf.uint64)
    assert tf.strings.format("{}", big).numpy() == \
        b"[18446744073709551615 3]"


def test_dlpack_roundtrip():
    for name in UINTS:
        x = _extremes(name)
        cap = tf.experimental.dlpack.to_dlpack(tf.constant(x))
        _check(tf.experimental.dlpack.from_dlpack(cap), x)


def test_graph_simplifies_identity_constants():
    # x * 1 and x + 0 with unsigned constants: the optimizer may drop
    # them, the values must not change.
    @tf.function
    def f(x):
        return (x * tf.constant(1, tf.uint32) + tf.constant(0, tf.uint32),
                x * tf.constant(2 ** 32 - 1, tf.uint32))
    x = np.array([0, 1, 2 ** 32 - 1], np.uint32)
    a, b = f(tf.constant(x))
    _check(a, x)
    with np.errstate(over="ignore"):
        _check(b, x * np.uint32(2 ** 32 - 1))


def test_as_string_uint64_exact():
    t = tf.constant([2 ** 64 - 1, 5], tf.uint64)
    np.testing.assert_array_equal(tf.strings.as_string(t).numpy(),
                                  [b"18446744073709551615", b"5"])
    assert tf.strings.as_string(tf.constant([7], tf.uint16), width=3,
                                fill="0").numpy()[0] == b"007"
