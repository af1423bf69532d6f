"""tf.constant and tf.convert_to_tensor: Python values, nested lists and
NumPy arrays in; NumPy arrays, buffers and Python numbers out."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfmini as tf

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16",
          "float32", "float64"]


def _has(name):
    return hasattr(tf, name)


needs_shape_ops = pytest.mark.skipif(
    not (_has("reshape") and _has("fill")),
    reason="tf.constant(shape=...) needs tf.reshape / tf.fill from the "
           "shape-ops work (issue 2), not in this build yet")


# ---- Python scalars -------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [
    (1.5, tf.float32), (-0.0, tf.float32), (float("inf"), tf.float32),
    (3, tf.int32), (-(2**31), tf.int32), (2**31 - 1, tf.int32),
    (2**31, tf.int64), (-(2**31) - 1, tf.int64), (2**63 - 1, tf.int64),
    (True, tf.bool), (False, tf.bool),
])
def test_python_scalars(value, dtype):
    t = tf.constant(value)
    assert t.dtype is dtype
    assert t.shape == ()
    assert t.numpy() == value
    assert type(t.numpy()) is dtype.as_numpy_dtype


def test_big_int_keeps_every_bit():
    v = 2**62 + 1          # not representable in float64
    assert int(tf.constant(v)) == v
    assert tf.constant([1, v]).numpy().tolist() == [1, v]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**100,
                                   [1, 2**64]])
def test_ints_beyond_int64_are_value_errors(value):
    with pytest.raises(ValueError):
        tf.constant(value)


def test_nan_survives():
    assert np.isnan(tf.constant(float("nan")).numpy())


# ---- nested lists ----------------------------------------------------------

@pytest.mark.parametrize("value,dtype,shape", [
    ([1.0, 2.0], tf.float32, (2,)),
    ([[1, 2], [3, 4]], tf.int32, (2, 2)),
    ([1, 2.5], tf.float32, (2,)),
    ((1, 2, 3), tf.int32, (3,)),
    ([(1.0,), (2.0,)], tf.float32, (2, 1)),
    ([True, False], tf.bool, (2,)),
    ([[[1]]], tf.int32, (1, 1, 1)),
    ([1, 2**40], tf.int64, (2,)),
    ([], tf.float32, (0,)),
    ([[], []], tf.float32, (2, 0)),
])
def test_nested_lists(value, dtype, shape):
    t = tf.constant(value)
    assert t.dtype is dtype
    assert t.shape == shape
    np.testing.assert_array_equal(t.numpy(), np.array(value))


def test_float_lists_round_to_float32():
    v = [0.1, 1e-30, 3.4e38]
    assert tf.constant(v).numpy().tolist() == np.float32(v).tolist()


@pytest.mark.parametrize("ragged", [
    [[1.0, 2.0], [3.0]], [1, [2, 3]], [[[1]], [2]], [[1, 2], 3],
    [[1, 2], [3, 4, 5]],
])
def test_ragged_lists_are_value_errors(ragged):
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant(ragged)
    with pytest.raises(ValueError):
        tf.convert_to_tensor(ragged)


def test_too_many_dims():
    v = 1.0
    for _ in range(9):
        v = [v]
    with pytest.raises(ValueError, match="at most 8"):
        tf.constant(v)
    assert tf.constant(v[0]).shape.rank == 8


def test_list_of_tensors_and_numpy_scalars():
    t = tf.constant([tf.constant(1.0), tf.constant(2.0)])
    assert t.dtype is tf.float32 and t.numpy().tolist() == [1.0, 2.0]
    t = tf.constant([np.int16(1), np.int16(2)])
    assert t.dtype is tf.int16


@pytest.mark.parametrize("bad", [None, {"a": 1}, object(), [1, "a"]])
def test_unsupported_values(bad):
    with pytest.raises((ValueError, TypeError)):
        tf.constant(bad)


# ---- NumPy arrays -------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_keeps_dtype(dtype):
    x = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    t = tf.constant(x)
    assert t.dtype == dtype
    assert t.numpy().dtype == x.dtype
    np.testing.assert_array_equal(t.numpy(), x)
    t = tf.convert_to_tensor(x)
    assert t.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_scalars_keep_dtype(dtype):
    x = np.dtype(dtype).type(1)
    t = tf.constant(x)
    assert t.dtype == dtype and t.shape == ()
    t = tf.constant(np.array(x))        # 0-d array
    assert t.dtype == dtype and t.shape == ()


def test_non_contiguous_arrays():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for view in (x.T, x[:, ::2, 1:], x[..., ::-1], np.broadcast_to(x[0, 0],
                                                                   (3, 4))):
        np.testing.assert_array_equal(tf.constant(view).numpy(), view)


def test_tensor_does_not_alias_the_array():
    x = np.ones(4, np.float32)
    t = tf.constant(x)
    x[:] = 7
    assert t.numpy().tolist() == [1, 1, 1, 1]
    a = t.numpy()
    a[:] = 5
    assert t.numpy().tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("bad", [np.array(["2020"], "datetime64[D]"),
                                 np.array([None])])
def test_unsupported_numpy_dtypes_are_type_errors(bad):
    with pytest.raises(TypeError):
        tf.constant(bad)


class ArrayLike:
    def __array__(self, dtype=None, copy=None):
        return np.array([[1, 2]], np.int16)


def test_array_protocol_objects():
    t = tf.constant(ArrayLike())
    assert t.dtype is tf.int16 and t.shape == (1, 2)


# ---- dtype= ---------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype,want", [
    ([1, 2], tf.float64, [1.0, 2.0]),
    (1, tf.float16, 1.0),
    (1, "int8", 1),
    ([1.5, 2.5], np.float64, [1.5, 2.5]),
    (True, tf.float32, 1.0),
    ([True, False], tf.int32, [1, 0]),
    (np.array([1.7, -1.7]), tf.int32, [1, -1]),   # NumPy arrays cast (TF)
    (np.array([1, 0, 2]), tf.bool, [True, False, True]),
    (np.array([1.0, 2.0]), tf.float32, [1.0, 2.0]),
    (2**40, tf.int64, 2**40),
])
def test_requested_dtype(value, dtype, want):
    t = tf.constant(value, dtype=dtype)
    assert t.dtype == tf.as_dtype(dtype)
    assert t.numpy().tolist() == want


@pytest.mark.parametrize("value,dtype", [
    (1.5, tf.int32), (1.0, tf.int32), ([1.0, 2.0], tf.int32),
    ([1, 2.5], tf.int64), (1, tf.bool), ([0, 1], tf.bool), (0.0, tf.bool),
    (-1, tf.uint8), (300, tf.uint8), ([1, 40000], tf.int16),
    (2**31, tf.int32),
])
def test_requested_dtype_refuses_lossy_python_values(value, dtype):
    # TF: "Cannot convert 1.5 to EagerTensor of dtype int32".
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.constant(value, dtype=dtype)


def test_constant_of_a_tensor():
    a = tf.constant([1, 2])
    assert tf.constant(a) is a or tf.constant(a).numpy().tolist() == [1, 2]
    b = tf.constant(a, dtype=tf.float32)
    assert b.dtype is tf.float32 and b.numpy().tolist() == [1.0, 2.0]


def test_convert_to_tensor():
    a = tf.constant([1.0])
    assert tf.convert_to_tensor(a) is a
    assert tf.convert_to_tensor(a, dtype=tf.float32) is a
    with pytest.raises(ValueError, match="float64"):
        tf.convert_to_tensor(a, dtype=tf.float64)
    assert tf.convert_to_tensor([1, 2], dtype_hint=tf.float64).dtype \
        is tf.float64
    # a hint that does not fit is dropped, a dtype is not
    assert tf.convert_to_tensor([1.5], dtype_hint=tf.int32).dtype \
        is tf.float32
    with pytest.raises(TypeError):
        tf.convert_to_tensor([1.5], dtype=tf.int32)
    assert tf.convert_to_tensor(np.float64(2)).dtype is tf.float64
    assert tf.is_tensor(a) and not tf.is_tensor([1.0])
    assert not tf.is_tensor(np.ones(2))


# ---- shape= ---------------------------------------------------------------------

def test_shape_with_wrong_element_count_is_a_type_error():
    with pytest.raises(TypeError, match="elements"):
        tf.constant([1, 2, 3], shape=[2, 2])


@needs_shape_ops
def test_shape_reshapes():
    t = tf.constant([1, 2, 3, 4], shape=[2, 2])
    assert t.shape == (2, 2)
    assert t.numpy().tolist() == [[1, 2], [3, 4]]


@needs_shape_ops
def test_shape_fills_a_scalar():
    t = tf.constant(7.0, shape=[2, 3])
    assert t.shape == (2, 3) and t.dtype is tf.float32
    assert (t.numpy() == 7).all()
    t = tf.constant([5], shape=[3])
    assert t.numpy().tolist() == [5, 5, 5]


# ---- out to NumPy and Python ---------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_array_and_buffer_protocols(dtype):
    x = (np.arange(6) % 2).astype(dtype).reshape(3, 2)
    t = tf.constant(x)
    np.testing.assert_array_equal(np.asarray(t), x)
    assert np.asarray(t).dtype == x.dtype
    np.testing.assert_array_equal(np.array(t, dtype=np.float64),
                                  x.astype(np.float64))
    m = memoryview(t)
    assert m.readonly and m.shape == (3, 2)
    assert m.itemsize == x.itemsize and m.nbytes == x.nbytes
    np.testing.assert_array_equal(np.frombuffer(m, x.dtype).reshape(3, 2), x)
    with pytest.raises(TypeError, match="read-only"):
        m.cast("B")[0] = 0


def test_buffer_of_scalar_and_empty():
    assert memoryview(tf.constant(3)).tolist() == 3
    assert memoryview(tf.constant(np.zeros((0, 4), np.float32))).shape \
        == (0, 4)


def test_numpy_scalar_for_rank_0():
    assert isinstance(tf.constant(2.0).numpy(), np.float32)
    assert isinstance(tf.constant(2).numpy(), np.int32)
    assert isinstance(tf.constant(True).numpy(), np.bool_)
    assert isinstance(np.asarray(tf.constant(2.0)), np.ndarray)


def test_numpy_operands_defer_to_tensors():
    # ndarray + Tensor gives a Tensor (NumPy defers to __radd__).
    r = np.ones(2, np.float32) + tf.constant([1.0, 2.0])
    assert isinstance(r, tf.Tensor)
    assert r.numpy().tolist() == [2.0, 3.0]


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(st.sampled_from([np.dtype(d) for d in DTYPES]),
                  hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                   max_side=4)))
def test_round_trip_is_exact(x):
    t = tf.constant(x)
    y = t.numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    assert t.shape == x.shape and t.ndim == x.ndim
