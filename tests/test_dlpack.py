"""DLPack both ways (tf.experimental.dlpack, Tensor.__dlpack__): memory
is shared, not copied, and lives exactly as long as someone uses it."""
import gc
import weakref

import numpy as np
import pytest

import tfmini as tf

dl = tf.experimental.dlpack


def _ptr(a):
    return a.__array_interface__["data"][0]


def _live():
    gc.collect()
    return tf._C.live_counts()


def test_numpy_views_tensor_memory():
    t = tf.constant(np.arange(6, dtype="float32").reshape(2, 3))
    a = np.from_dlpack(t)
    b = np.from_dlpack(t)
    np.testing.assert_array_equal(a, t.numpy())
    assert _ptr(a) == _ptr(b)              # both views of one buffer
    assert t.__dlpack_device__() == (1, 0)


def test_import_shares_numpy_memory_and_round_trips():
    x = np.arange(12, dtype="float64").reshape(3, 4)
    t = dl.from_dlpack(x)
    assert dl.last_import_copied() is False
    assert _ptr(np.from_dlpack(t)) == _ptr(x)
    x[0, 0] = 100.0           # the producer writes: the tensor sees it
    assert t.numpy()[0, 0] == 100.0
    np.testing.assert_array_equal((t * 2).numpy(), x * 2)


def test_capsule_keeps_buffer_alive_after_tensor_dies():
    base = _live()
    t = tf.constant(np.full((64,), 7, dtype="int32"))
    cap = dl.to_dlpack(t)
    del t
    assert _live()[1] == base[1] + 1       # the capsule holds the buffer
    back = dl.from_dlpack(cap)
    np.testing.assert_array_equal(back.numpy(), np.full((64,), 7))
    with pytest.raises(ValueError, match="already consumed"):
        dl.from_dlpack(cap)
    del cap, back
    assert _live()[:2] == base[:2]
    # An unused capsule frees the tensor when it dies.
    t = tf.constant([1.0, 2.0])
    cap = dl.to_dlpack(t)
    del t, cap
    assert _live()[:2] == base[:2]


def test_numpy_array_outlives_its_name():
    x = np.arange(10, dtype="float32")
    ref = weakref.ref(x)
    base = _live()
    t = dl.from_dlpack(x)
    del x
    gc.collect()
    assert ref() is not None                # the tensor keeps it alive
    np.testing.assert_array_equal(t.numpy(), np.arange(10))
    del t
    gc.collect()
    assert ref() is None
    assert _live()[:2] == base[:2]


def test_numpy_view_outlives_tensor():
    base = _live()
    t = tf.constant(np.arange(5, dtype="float32"))
    a = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(5))
    assert _live()[1] == base[1] + 1
    del a                      # NumPy calls the deleter: all freed
    assert _live()[:2] == base[:2]


def test_strided_source_is_copied_and_said():
    x = np.arange(24, dtype="float32").reshape(4, 6)
    t = dl.from_dlpack(x[:, ::2].T)
    assert dl.last_import_copied() is True
    np.testing.assert_array_equal(t.numpy(), x[:, ::2].T)
    x[0, 0] = -1                             # a copy: unaffected
    assert t.numpy()[0, 0] == 0


def test_readonly_numpy_is_copied():
    x = np.arange(4.0)
    x.flags.writeable = False
    t = dl.from_dlpack(x)
    assert dl.last_import_copied() is True
    np.testing.assert_array_equal(t.numpy(), x)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16",
                                   "int32", "int64", "float16", "float32",
                                   "float64"])
def test_dtypes_both_ways(dtype):
    x = (np.arange(6) % 2 if dtype == "bool" else np.arange(6)).astype(
        dtype)
    t = dl.from_dlpack(x)
    assert t.dtype.name == dtype
    back = np.from_dlpack(t)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, x)


def test_bad_inputs():
    with pytest.raises(TypeError, match="no tfmini dtype"):
        dl.from_dlpack(np.ones(3, dtype="complex64"))
    with pytest.raises(ValueError, match="capsule"):
        tf._C.from_dlpack(object())
    with pytest.raises(TypeError, match="expected a tf.Tensor"):
        dl.to_dlpack(np.ones(3))

    @tf.function
    def f(x):
        return dl.to_dlpack(x)
    with pytest.raises(TypeError, match="symbolic"):
        f(tf.constant([1.0]))


def test_empty_and_scalar():
    t = dl.from_dlpack(np.zeros((0, 3), dtype="float32"))
    assert t.shape == (0, 3)
    s = dl.from_dlpack(np.array(2.5))
    assert s.numpy() == 2.5
    assert np.from_dlpack(tf.constant(3)).item() == 3


def test_variable_exports_its_value():
    v = tf.Variable([1.0, 2.0])
    a = np.from_dlpack(dl.from_dlpack(dl.to_dlpack(v)))
    v.assign([5.0, 6.0])       # copy-on-write: the export keeps the old
    np.testing.assert_array_equal(a, [1.0, 2.0])


def test_torch_both_ways():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32)
    t = dl.from_dlpack(x)
    assert _ptr(np.from_dlpack(t)) == x.data_ptr()
    y = torch.from_dlpack(tf.constant(np.arange(4, dtype="float32")))
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_jax_both_ways():
    jax = pytest.importorskip("jax")
    a = jax.numpy.arange(6, dtype=jax.numpy.float32)
    t = dl.from_dlpack(a)
    assert _ptr(np.from_dlpack(t)) == a.unsafe_buffer_pointer()
    src = tf.constant(np.arange(4, dtype="float32"))
    j = jax.dlpack.from_dlpack(src)
    assert j.unsafe_buffer_pointer() == _ptr(np.from_dlpack(src))
    np.testing.assert_array_equal(np.asarray(j), [0, 1, 2, 3])
