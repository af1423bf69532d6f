"""tf.Tensor: attributes, printing, Python protocols, operators' dtype
rules, hashing and immutability, devices and tf.config. Values against
NumPy; printed forms against TF's documented strings."""
import copy
import pickle
import weakref

import numpy as np
import pytest

import tfmini as tf


def _missing(probe):
    """Why probe() cannot run in this build (an op or kernel that another
    part of issue 2 adds), or None when it runs."""
    try:
        probe()
    except AttributeError as e:
        return str(e)
    except tf.errors.OpError as e:
        if "no kernel" in str(e) or "not built" in str(e):
            return str(e)
    return None


def needs(probe, what):
    why = _missing(probe)
    return pytest.mark.skipif(why is not None,
                              reason=f"{what} not in this build yet ({why})")


A = tf.constant([[1.0, 2.0], [3.0, 4.0]])
needs_getitem = needs(lambda: A[0], "Tensor.__getitem__ (strided_slice)")


# ---- attributes -------------------------------------------------------------

def test_shape_dtype_ndim():
    t = tf.constant(np.zeros((2, 3, 4), np.float32))
    assert isinstance(t, tf.Tensor)
    assert isinstance(t.shape, tf.TensorShape)
    assert t.shape == (2, 3, 4) and t.shape == [2, 3, 4]
    assert t.shape != (2, 3) and t.shape != (2, 3, 5)
    assert t.shape.rank == 3 and t.shape.ndims == 3
    assert t.shape.as_list() == [2, 3, 4]
    assert t.shape[0] == 2 and t.shape[-1] == 4
    assert t.shape[1:] == (3, 4)
    assert t.get_shape() == t.shape
    assert t.ndim == 3
    assert t.dtype is tf.float32 and t.dtype.name == "float32"
    s = tf.constant(1)
    assert s.shape == () and s.shape.rank == 0 and s.ndim == 0
    assert str(s.shape) == "()"


def test_device_string():
    t = tf.constant(1.0)
    assert t.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert (t + t).device == t.device


def test_numpy_is_a_copy_with_the_value():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = tf.constant(x)
    a, b = t.numpy(), t.numpy()
    assert a is not b
    np.testing.assert_array_equal(a, x)
    assert a.flags.writeable


# ---- printing (TF's exact strings) ----------------------------------------------

@pytest.mark.parametrize("value,dtype,want", [
    ([4.0, 5.0], None, "tf.Tensor([4. 5.], shape=(2,), dtype=float32)"),
    (6.0, None, "tf.Tensor(6.0, shape=(), dtype=float32)"),
    ([[1, 2], [3, 4]], None,
     "tf.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"),
    ([True, False], None, "tf.Tensor([ True False], shape=(2,), dtype=bool)"),
    (3, tf.int64, "tf.Tensor(3, shape=(), dtype=int64)"),
    ([], None, "tf.Tensor([], shape=(0,), dtype=float32)"),
])
def test_str(value, dtype, want):
    assert str(tf.constant(value, dtype=dtype)) == want


@pytest.mark.parametrize("value,dtype,want", [
    ([4.0, 5.0], None, "<tf.Tensor: shape=(2,), dtype=float32, "
     "numpy=array([4., 5.], dtype=float32)>"),
    (6.0, None, "<tf.Tensor: shape=(), dtype=float32, numpy=6.0>"),
    (3, None, "<tf.Tensor: shape=(), dtype=int32, numpy=3>"),
    (True, None, "<tf.Tensor: shape=(), dtype=bool, numpy=True>"),
    ([[1, 2], [3, 4]], None, "<tf.Tensor: shape=(2, 2), dtype=int32, "
     "numpy=\narray([[1, 2],\n       [3, 4]], dtype=int32)>"),
    ([1, 2], tf.int64, "<tf.Tensor: shape=(2,), dtype=int64, "
     "numpy=array([1, 2])>"),
    ([1, 2], tf.float64, "<tf.Tensor: shape=(2,), dtype=float64, "
     "numpy=array([1., 2.])>"),
    ([True, False], None, "<tf.Tensor: shape=(2,), dtype=bool, "
     "numpy=array([ True, False])>"),
    ([], None, "<tf.Tensor: shape=(0,), dtype=float32, "
     "numpy=array([], dtype=float32)>"),
    # TF shows a scalar's Python value: float32 0.1 is not 0.1 exactly
    (0.1, None, "<tf.Tensor: shape=(), dtype=float32, "
     "numpy=0.10000000149011612>"),
])
def test_repr(value, dtype, want):
    assert repr(tf.constant(value, dtype=dtype)) == want


def test_acceptance_example_strings():
    b = tf.constant([1.0, 2.0]) + 3.0
    assert repr(b) == ("<tf.Tensor: shape=(2,), dtype=float32, "
                       "numpy=array([4., 5.], dtype=float32)>")
    assert str(b) == "tf.Tensor([4. 5.], shape=(2,), dtype=float32)"


def test_large_tensors_print_summarized_like_numpy():
    t = tf.constant(np.arange(2000, dtype=np.float32))
    assert "..." in str(t) and "..." in repr(t)


def test_format():
    assert f"{tf.constant(2.5):.3f}" == "2.500"
    assert f"{tf.constant(7):>4}" == "   7"
    assert f"{tf.constant([1.0, 2.0])}" == "[1. 2.]"
    assert format(tf.constant(True)) == "True"
    with pytest.raises(TypeError):
        f"{tf.constant([1.0, 2.0]):.2f}"


# ---- Python number protocols ----------------------------------------------------

def test_scalar_conversions():
    assert bool(tf.constant(1.5)) is True
    assert bool(tf.constant(0)) is False
    assert bool(tf.constant(False)) is False
    assert float(tf.constant(2.5)) == 2.5
    assert float(tf.constant(3)) == 3.0
    assert int(tf.constant(2.9)) == 2
    assert int(tf.constant(-2.9)) == -2
    assert int(tf.constant(2**40)) == 2**40
    assert complex(tf.constant(1.5)) == 1.5 + 0j
    assert [10, 20, 30][tf.constant(1)] == 20
    assert [10, 20, 30][tf.constant(-1, dtype=tf.int64)] == 30
    assert list(range(5))[tf.constant(1):tf.constant(3)] == [1, 2]
    assert np.arange(5)[tf.constant(2)] == 2
    assert bool(tf.constant([7]))          # one element, like NumPy


def test_scalar_conversion_errors():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tf.constant([1, 2]))
    with pytest.raises(TypeError):
        int(tf.constant([1, 2]))
    with pytest.raises(TypeError):
        float(tf.constant([1.0, 2.0]))
    with pytest.raises(TypeError, match="integer"):
        [1, 2][tf.constant(1.0)]
    with pytest.raises(TypeError):
        [1, 2][tf.constant([1])]


def test_len():
    assert len(tf.constant([[1, 2, 3], [4, 5, 6]])) == 2
    assert len(tf.constant(np.zeros((0, 3)))) == 0
    with pytest.raises(TypeError):
        len(tf.constant(1.0))


def test_iter_over_a_scalar_is_a_type_error():
    with pytest.raises(TypeError):
        iter(tf.constant(1.0)).__next__()


@needs_getitem
def test_iter_over_dim_0():
    rows = list(A)
    assert len(rows) == 2
    assert all(isinstance(r, tf.Tensor) for r in rows)
    assert [r.numpy().tolist() for r in rows] == [[1, 2], [3, 4]]


# ---- hashing, references, immutability -----------------------------------------

def test_unhashable():
    t = tf.constant(1.0)
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    with pytest.raises(TypeError):
        {t: 1}
    with pytest.raises(TypeError):
        {t}


def test_ref():
    a, b = tf.constant(1.0), tf.constant(1.0)
    ra = a.ref()
    assert ra.deref() is a
    assert a.ref() == ra and hash(a.ref()) == hash(ra)
    assert b.ref() != ra
    table = {a.ref(): "a", b.ref(): "b"}
    assert table[a.ref()] == "a" and table[b.ref()] == "b"
    assert a.experimental_ref() == ra
    assert "Reference" in repr(ra)


def test_immutable():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="item assignment"):
        t[0] = 5.0
    with pytest.raises(AttributeError):
        t.shape = (3,)
    with pytest.raises(AttributeError):
        t.dtype = tf.int32
    with pytest.raises(AttributeError):
        t.anything = 1
    with pytest.raises(ValueError):        # a read-only buffer
        np.frombuffer(t, np.float32).setflags(write=True)
    assert t.numpy().tolist() == [1.0, 2.0]


def test_copy_pickle_weakref():
    t = tf.constant([[1, 2]], dtype=tf.int16)
    assert copy.copy(t) is t
    assert copy.deepcopy(t) is t
    u = pickle.loads(pickle.dumps(t))
    assert isinstance(u, tf.Tensor) and u.dtype is tf.int16
    assert u.numpy().tolist() == [[1, 2]]
    w = weakref.ref(t)
    assert w() is t


# ---- operators present in every build: + - * and unary - -------------------------

@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32",
                                   "int64", "float32", "float64"])
def test_arithmetic_against_numpy(dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, (3, 4)).astype(dtype)
    y = rng.integers(0, 9, (4,)).astype(dtype)
    a, b = tf.constant(x), tf.constant(y)
    for got, want in [(a + b, x + y), (a - b, x - y), (a * b, x * y),
                      (b + a, y + x), (a + 2, x + np.asarray(2, dtype)),
                      (2 * a, np.asarray(2, dtype) * x),
                      (5 - a, np.asarray(5, dtype) - x)]:
        assert isinstance(got, tf.Tensor)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_unary_minus():
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal((-tf.constant(x)).numpy(), -x)
    assert (-tf.constant([3])).numpy().tolist() == [-3]


def test_python_scalars_adopt_the_tensor_dtype():
    assert (tf.constant([1, 2]) + 1).dtype is tf.int32
    assert (tf.constant([1, 2], dtype=tf.int64) + 1).dtype is tf.int64
    assert (tf.constant([1.0], dtype=tf.float64) * 2).dtype is tf.float64
    assert (tf.constant([1.0]) + 2.5).dtype is tf.float32
    assert (3 * tf.constant([1.0], dtype=tf.float16)).dtype is tf.float16
    assert (tf.constant([1, 2], dtype=tf.uint8) + 200).numpy().tolist() \
        == [201, 202]
    assert (np.float64(2) * tf.constant([1.0])).dtype is tf.float32
    assert isinstance(np.float32(2) * tf.constant([1.0]), tf.Tensor)


def test_python_values_that_do_not_fit_the_dtype():
    with pytest.raises(TypeError, match="int32"):
        tf.constant([1, 2]) + 1.5
    with pytest.raises(TypeError, match="uint8"):
        tf.constant([1], dtype=tf.uint8) + 300
    with pytest.raises(TypeError):
        tf.constant([1, 2]) + np.array([0.5, 1.5])   # no silent truncation


def test_mixed_tensor_dtypes_are_invalid_argument():
    a = tf.constant([1.0, 2.0])
    b = tf.constant([1.0, 2.0], dtype=tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        a + b
    msg = str(e.value)
    assert "AddV2" in msg and "float32" in msg and "float64" in msg
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        a * tf.constant([1, 2])


def test_shape_mismatch_names_op_and_shapes():
    a = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        a + tf.constant([1.0, 2.0])
    assert "AddV2" in str(e.value)
    assert "[2,3]" in str(e.value) and "[2]" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sub"):
        a - tf.constant([1.0, 2.0])
    # InvalidArgumentError is also a ValueError (code written for either)
    with pytest.raises(ValueError):
        a * tf.constant([1.0, 2.0])


def test_unsupported_operands_are_type_errors():
    t = tf.constant([1.0])
    for other in ["a", None, object(), {"x": 1}]:
        with pytest.raises(TypeError):
            t + other
        with pytest.raises(TypeError):
            other * t


def test_operators_on_bool_tensors_need_numbers():
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool"):
        tf.constant([True]) + tf.constant([False])


# ---- equality -------------------------------------------------------------------

def test_eq_with_none_and_foreign_objects():
    t = tf.constant([1, 2])
    assert (t == None) is False      # noqa: E711
    assert (t != None) is True       # noqa: E711
    assert (t == "a") is False
    assert t not in [None, "x", 3.5j]


def test_eq_with_incompatible_shapes_is_a_false_tensor():
    r = tf.constant([1, 2]) == tf.constant([1, 2, 3])
    assert isinstance(r, tf.Tensor) and r.dtype is tf.bool and r.shape == ()
    assert not bool(r)
    r = tf.constant([1, 2]) != tf.constant([1, 2, 3])
    assert bool(r)


def test_eq_with_mixed_dtypes_raises():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Equal"):
        tf.constant([1, 2]) == tf.constant([1.0, 2.0])


_I = tf.constant([1, 2, 3])


@needs(lambda: _I == _I, "the Equal kernel")
def test_eq_is_elementwise():
    r = tf.constant([1, 2, 3]) == tf.constant([1, 5, 3])
    assert r.dtype is tf.bool
    assert r.numpy().tolist() == [True, False, True]
    assert (tf.constant([1.0, 2.0]) != 2.0).numpy().tolist() == [True, False]


@needs(lambda: (_I < _I, _I <= _I, _I > _I, _I >= _I), "comparison kernels")
def test_comparisons_against_numpy():
    x, y = np.array([1, 5, 3]), np.array([2, 5, 1])
    a, b = tf.constant(x), tf.constant(y)
    for got, want in [(a < b, x < y), (a <= b, x <= y), (a > b, x > y),
                      (a >= b, x >= y), (a < 3, x < 3), (2 >= a, 2 >= x)]:
        assert got.dtype is tf.bool
        assert got.numpy().tolist() == want.tolist()


@needs(lambda: _I / _I, "RealDiv kernels for float64")
def test_int_true_division_gives_float64():
    r = tf.constant([1, 2]) / tf.constant([2, 4])
    assert r.dtype is tf.float64
    assert r.numpy().tolist() == [0.5, 0.5]
    r = tf.constant([1], dtype=tf.int16) / tf.constant([4], dtype=tf.int16)
    assert r.dtype is tf.float32
    assert (tf.constant([3, 4]) / 2).dtype is tf.float64


@needs(lambda: (_I // _I, _I % _I, _I ** _I, abs(_I)),
       "FloorDiv / FloorMod / Pow / Abs kernels")
def test_floor_div_mod_pow_abs_against_numpy():
    x = np.array([7, -7, 5], np.int32)
    y = np.array([2, 2, -3], np.int32)
    a, b = tf.constant(x), tf.constant(y)
    np.testing.assert_array_equal((a // b).numpy(), x // y)
    np.testing.assert_array_equal((a % b).numpy(), x % y)
    np.testing.assert_array_equal((a ** 2).numpy(), x ** 2)
    np.testing.assert_array_equal(abs(a).numpy(), np.abs(x))
    np.testing.assert_array_equal((2 ** tf.constant([1.0, 3.0])).numpy(),
                                  [2.0, 8.0])


_B = tf.constant([True, False])


@needs(lambda: (_B & _B, _B | _B, _B ^ _B, ~_B, _I & _I, ~_I),
       "logical and bitwise kernels")
def test_logical_and_bitwise_operators():
    p, q = tf.constant([True, True, False]), tf.constant([True, False, False])
    assert (p & q).numpy().tolist() == [True, False, False]
    assert (p | q).numpy().tolist() == [True, True, False]
    assert (p ^ q).numpy().tolist() == [False, True, False]
    assert (~p).numpy().tolist() == [False, False, True]
    assert (True & q).numpy().tolist() == [True, False, False]
    x = np.array([12, 10], np.int32)
    a = tf.constant(x)
    np.testing.assert_array_equal((a & 6).numpy(), x & 6)
    np.testing.assert_array_equal((a | 1).numpy(), x | 1)
    np.testing.assert_array_equal((a ^ 3).numpy(), x ^ 3)
    np.testing.assert_array_equal((~a).numpy(), ~x)


_M = tf.constant([[1.0, 2.0], [3.0, 4.0]])


@needs(lambda: _M @ _M, "tf.matmul")
def test_matmul_operator():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_allclose((tf.constant(x) @ tf.constant(x)).numpy(),
                               x @ x)
    np.testing.assert_allclose((x @ tf.constant(x)).numpy(), x @ x)


# ---- eager context, devices, tf.config --------------------------------------------

def test_executing_eagerly():
    assert tf.executing_eagerly() is True


@pytest.mark.parametrize("spec", ["/CPU:0", "CPU:0", "/cpu:0", "cpu",
                                  "/device:CPU:0",
                                  "/job:localhost/replica:0/task:0/device:"
                                  "CPU:0"])
def test_device_cpu_strings(spec):
    with tf.device(spec):
        t = tf.constant([1.0]) + 1.0
    assert t.device.endswith("device:CPU:0")


def test_device_scopes_nest_and_restore():
    with tf.device("/CPU:0"):
        with tf.device(None):
            a = tf.constant(1) + 1
        b = tf.constant(1) + 1
    c = tf.constant(1) + 1
    assert a.device == b.device == c.device
    try:
        with tf.device("/CPU:0"):
            raise KeyError("x")
    except KeyError:
        pass
    assert (tf.constant(1) + 1).numpy() == 2


@pytest.mark.parametrize("spec", ["/TPU:0", "/CPU:1", "/CPU:x", "nonsense"])
def test_bad_device_strings(spec):
    with pytest.raises(ValueError):
        with tf.device(spec):
            pass


def test_missing_gpu_uses_soft_placement():
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU")
    assert tf.config.get_soft_device_placement() is True
    with tf.device("/GPU:0"):
        t = tf.constant([1.0]) * 2.0
    assert t.device.endswith("CPU:0")
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="GPU"):
            with tf.device("/GPU:0"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)


def test_list_devices():
    cpus = tf.config.list_physical_devices("CPU")
    assert [d.name for d in cpus] == ["/physical_device:CPU:0"]
    assert cpus[0].device_type == "CPU"
    everything = tf.config.list_physical_devices()
    assert cpus[0] in everything
    gpus = tf.config.list_physical_devices("GPU")
    assert all(d.device_type == "GPU" for d in gpus)
    assert len(everything) == 1 + len(gpus)
    assert tf.config.list_physical_devices("cpu") == cpus
    logical = tf.config.list_logical_devices("CPU")
    assert [d.name for d in logical] == ["/device:CPU:0"]


def test_threading_setters():
    th = tf.config.threading
    assert th.get_intra_op_parallelism_threads() == 0     # system's choice
    default = tf._C.get_num_threads()
    try:
        th.set_intra_op_parallelism_threads(1)
        assert th.get_intra_op_parallelism_threads() == 1
        assert tf._C.get_num_threads() == 1
        big = tf.constant(np.ones(1 << 17, np.float32))
        assert float((big + big).numpy().sum()) == 2.0 * (1 << 17)
        th.set_intra_op_parallelism_threads(0)
        assert tf._C.get_num_threads() == default
        th.set_inter_op_parallelism_threads(3)
        assert th.get_inter_op_parallelism_threads() == 3
        with pytest.raises(ValueError):
            th.set_intra_op_parallelism_threads(-1)
    finally:
        th.set_intra_op_parallelism_threads(0)
        th.set_inter_op_parallelism_threads(0)


# ---- TensorShape ------------------------------------------------------------------

def test_tensor_shape():
    s = tf.TensorShape([None, 3])
    assert str(s) == "(None, 3)" and repr(s) == "TensorShape([None, 3])"
    assert s.rank == 2 and s.as_list() == [None, 3]
    assert s == (None, 3) and s != (2, 3)
    assert not s.is_fully_defined() and s.num_elements() is None
    assert s.is_compatible_with((2, 3)) and not s.is_compatible_with((2, 4))
    assert s.merge_with((2, None)) == (2, 3)
    with pytest.raises(ValueError):
        s.merge_with((2, 4))
    assert s.concatenate([5]) == (None, 3, 5)
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert str(tf.TensorShape([7])) == "(7,)"
    assert hash(tf.TensorShape([1, 2])) == hash(tf.TensorShape((1, 2)))
    u = tf.TensorShape(None)
    assert u.rank is None and str(u) == "<unknown>"
    assert repr(u) == "TensorShape(None)"
    with pytest.raises(ValueError):
        u.as_list()
    assert u.is_compatible_with((1, 2, 3))
    assert tf.TensorShape([]) == () and tf.TensorShape([]).rank == 0
    assert len(tf.TensorShape([4, 5])) == 2
    assert list(tf.TensorShape([4, 5])) == [4, 5]
