"""tf.Variable: creation, reads, assignment, operators, conversions
(TF_SEMANTICS.md, tf.Variable)."""
import copy
import pickle
import re

import numpy as np
import pytest

import tfmini as tf


# ---- creation and attributes -------------------------------------------

def test_repr_matches_tf():
    v = tf.Variable([1.0, 2.0])
    assert repr(v) == ("<tf.Variable 'Variable:0' shape=(2,) dtype=float32, "
                       "numpy=array([1., 2.], dtype=float32)>")
    assert str(v) == repr(v)


def test_repr_scalar_and_name():
    v = tf.Variable(3.0, name="w")
    assert repr(v) == "<tf.Variable 'w:0' shape=() dtype=float32, numpy=3.0>"
    assert v.name == "w:0"


def test_default_attributes():
    v = tf.Variable([[1.0, 2.0, 3.0]])
    assert v.trainable is True
    assert v.name == "Variable:0"
    assert v.dtype == tf.float32
    assert v.shape == (1, 3)
    assert v.shape.as_list() == [1, 3]
    assert v.device.endswith("device:CPU:0")
    assert isinstance(v, tf.Variable)
    assert not isinstance(v, tf.Tensor)


@pytest.mark.parametrize("value,dtype", [
    (1.5, "float32"), ([1, 2], "int32"), (np.array([1.0]), "float64"),
    (np.array([1], np.int64), "int64"), (True, "bool"),
])
def test_dtype_inferred_like_constants(value, dtype):
    v = tf.Variable(value)
    assert v.dtype.name == dtype
    np.testing.assert_array_equal(v.numpy(), np.asarray(value, dtype))


def test_dtype_argument_converts_python_values():
    v = tf.Variable([1, 2], dtype=tf.float64)
    assert v.dtype == tf.float64
    assert v.numpy().tolist() == [1.0, 2.0]


def test_dtype_argument_rejects_other_tensor_dtype():
    with pytest.raises((ValueError, TypeError)):
        tf.Variable(tf.constant([1.0]), dtype=tf.int32)


def test_initial_value_forms():
    assert tf.Variable(lambda: [1.0, 2.0]).numpy().tolist() == [1.0, 2.0]
    t = tf.constant([3.0])
    assert tf.Variable(t).numpy().tolist() == [3.0]
    w = tf.Variable(tf.Variable([4.0]))
    assert w.numpy().tolist() == [4.0]
    with pytest.raises(ValueError, match="initial_value"):
        tf.Variable()


def test_initial_value_is_copied():
    a = np.array([1.0, 2.0], np.float32)
    v = tf.Variable(a)
    a[0] = 100.0
    assert v.numpy().tolist() == [1.0, 2.0]


def test_trainable_flag_and_on_read_sync():
    assert tf.Variable(1.0, trainable=False).trainable is False
    v = tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ)
    assert v.trainable is False
    with pytest.raises(ValueError):
        tf.Variable(1.0, trainable=True,
                    synchronization=tf.VariableSynchronization.ON_READ)
    with pytest.raises(AttributeError):
        v.trainable = True


# ---- reads ---------------------------------------------------------------

def test_reads_are_tensors():
    v = tf.Variable([1.0, 2.0])
    for r in (v.value(), v.read_value(), tf.convert_to_tensor(v),
              tf.constant(v)):
        assert isinstance(r, tf.Tensor)
        assert r.numpy().tolist() == [1.0, 2.0]
    assert isinstance(v.numpy(), np.ndarray)


def test_convert_to_tensor_dtype_check():
    v = tf.Variable([1.0])
    assert tf.convert_to_tensor(v, dtype=tf.float32).dtype == tf.float32
    with pytest.raises(ValueError):
        tf.convert_to_tensor(v, dtype=tf.float64)


def test_python_conversions():
    v = tf.Variable(2.0)
    assert float(v) == 2.0 and int(v) == 2 and bool(v)
    assert f"{v:.1f}" == "2.0"
    np.testing.assert_array_equal(np.asarray(tf.Variable([1, 2])), [1, 2])
    assert np.asarray(v, np.float64).dtype == np.float64
    w = tf.Variable([[1.0], [2.0], [3.0]])
    # TF 2.21: len() of a variable is a TypeError ("object of type
    # 'ResourceVariable' has no len()"), though iterating works.
    with pytest.raises(TypeError, match="has no len"):
        len(w)
    assert len(list(w)) == 3
    assert int(tf.Variable(3).__index__()) == 3


# ---- assignment ------------------------------------------------------------

def test_assign_family_in_place():
    v = tf.Variable([1.0, 2.0])
    r = v.assign([5.0, 6.0])
    assert r.numpy().tolist() == [5.0, 6.0]
    assert v.numpy().tolist() == [5.0, 6.0]
    v.assign_add([1.0, 1.0])
    assert v.numpy().tolist() == [6.0, 7.0]
    v.assign_sub(tf.constant([2.0, 3.0]))
    assert v.numpy().tolist() == [4.0, 4.0]
    assert v.assign(1.0 + np.zeros(2), read_value=False) is None
    assert v.numpy().tolist() == [1.0, 1.0]
    assert v.assign_add([1.0, 1.0], read_value=False) is None
    assert v.assign_sub([1.0, 1.0], read_value=False) is None


def test_assign_result_reads_latest_value():
    v = tf.Variable(1.0)
    r = v.assign(2.0)
    v.assign(3.0)
    assert float(r) == 3.0        # TF's result reads the variable lazily


def test_assign_accepts_variable_and_python_scalars():
    v = tf.Variable([1.0, 2.0])
    v.assign(tf.Variable([7.0, 8.0]))
    assert v.numpy().tolist() == [7.0, 8.0]
    s = tf.Variable(0.0)
    s.assign(3)              # a Python int takes the variable's dtype
    assert s.dtype == tf.float32 and float(s) == 3.0


def test_earlier_reads_keep_their_value():
    v = tf.Variable([1.0, 2.0])
    before = v.read_value()
    arr = v.numpy()
    v.assign([9.0, 9.0])
    v.assign_add([1.0, 1.0])
    assert before.numpy().tolist() == [1.0, 2.0]
    assert arr.tolist() == [1.0, 2.0]
    assert v.numpy().tolist() == [10.0, 10.0]


@pytest.mark.parametrize("method,shapes", [
    ("assign", r"shape \(2,\), and the assigned value shape \(3,\)"),
    ("assign_add", r"\[3\].*\[2\]"), ("assign_sub", r"\[3\].*\[2\]")])
def test_assign_shape_mismatch_is_value_error(method, shapes):
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match=shapes):
        getattr(v, method)([1.0, 2.0, 3.0])
    assert v.numpy().tolist() == [1.0, 2.0]


def test_assign_dtype_mismatch():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises((ValueError, TypeError)):
        v.assign(tf.constant([1, 2]))
    with pytest.raises((ValueError, TypeError)):
        v.assign(tf.constant([1.0, 2.0], tf.float64))
    assert v.numpy().tolist() == [1.0, 2.0]


def test_shape_argument_allows_assign_of_other_shapes():
    v = tf.Variable([1.0, 2.0], shape=tf.TensorShape([None]))
    assert v.shape.as_list() == [None]
    v.assign([1.0, 2.0, 3.0])
    assert v.numpy().tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        v.assign([[1.0]])
    with pytest.raises(ValueError):       # += needs the current shape
        v.assign_add([1.0])
    u = tf.Variable(1.0, validate_shape=False)
    assert u.shape.rank is None
    u.assign([[1.0, 2.0]])
    assert u.numpy().shape == (1, 2)
    with pytest.raises(ValueError):
        tf.Variable([1.0, 2.0], shape=(3,))


def test_float16_assign_add():
    v = tf.Variable(np.array([1.0, 2.0], np.float16))
    v.assign_add(np.array([0.5, 0.5], np.float16))
    assert v.dtype == tf.float16
    assert v.numpy().tolist() == [1.5, 2.5]


# ---- operators -------------------------------------------------------------

def test_arithmetic_gives_tensors():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable([3.0, 4.0])
    cases = {
        "v + 1": (v + 1, [2.0, 3.0]), "1 + v": (1 + v, [2.0, 3.0]),
        "v - w": (v - w, [-2.0, -2.0]), "2 - v": (2 - v, [1.0, 0.0]),
        "v * w": (v * w, [3.0, 8.0]), "-v": (-v, [-1.0, -2.0]),
        "v + t": (v + tf.constant([1.0, 1.0]), [2.0, 3.0]),
        "t + v": (tf.constant([1.0, 1.0]) + v, [2.0, 3.0]),
        "np + v": (np.array([1.0, 1.0], np.float32) + v, [2.0, 3.0]),
    }
    for text, (got, want) in cases.items():
        assert isinstance(got, tf.Tensor), text
        assert got.numpy().tolist() == want, text


def test_operators_delegate_to_tensor_rules():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        v + tf.constant([1.0], tf.float64)
    with pytest.raises(TypeError):
        v + "a"


def _compare_works():
    t = tf.constant([1.0])
    return not isinstance(t == t, bool)


@pytest.mark.skipif(not _compare_works(),
                    reason="needs comparison kernels (elementwise family)")
def test_comparisons_are_elementwise():
    v = tf.Variable([1.0, 2.0])
    assert (v == v).numpy().tolist() == [True, True]
    assert (v < 2.0).numpy().tolist() == [True, False]
    assert (v != None) is True  # noqa: E711


def test_ops_accept_variables():
    v = tf.Variable([1.0, 2.0])
    assert tf.add(v, v).numpy().tolist() == [2.0, 4.0]
    assert tf.multiply(v, 2.0).numpy().tolist() == [2.0, 4.0]
    assert tf.cast(v, tf.int32).numpy().tolist() == [1, 2]


def test_unhashable_but_ref_works():
    v = tf.Variable(1.0)
    with pytest.raises(TypeError, match="unhashable"):
        hash(v)
    with pytest.raises(TypeError):
        {v}
    s = {v.ref(), v.ref()}
    assert len(s) == 1 and next(iter(s)).deref() is v


def test_item_assignment_is_type_error():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError):
        v[0] = 3.0


@pytest.mark.skipif(not hasattr(tf.Tensor, "__getitem__") or
                    not hasattr(__import__("tfmini.ops.array_ops",
                                           fromlist=["_getitem"]),
                                "_getitem"),
                    reason="needs tensor indexing (shape family)")
def test_slice_assign():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    r = v[0]
    assert isinstance(r, tf.Tensor)
    assert r.numpy().tolist() == [1.0, 2.0]
    v[0].assign([5.0, 6.0])
    assert v.numpy().tolist() == [[5.0, 6.0], [3.0, 4.0]]
    v[1, 1].assign(9.0)
    v[:, 0].assign(tf.constant([0.0, 0.0]))
    assert v.numpy().tolist() == [[0.0, 6.0], [0.0, 9.0]]
    with pytest.raises(ValueError):
        v[0].assign([1.0, 2.0, 3.0])


def test_copies():
    v = tf.Variable([1.0, 2.0], trainable=False, name="k")
    c = copy.deepcopy(v)
    c.assign([0.0, 0.0])
    assert v.numpy().tolist() == [1.0, 2.0]
    assert c.trainable is False and c.name == "k:0"
    p = pickle.loads(pickle.dumps(v))
    assert p.numpy().tolist() == [1.0, 2.0] and p.name == "k:0"


def test_variables_free_their_memory():
    import gc
    gc.collect()
    base = tf._C.live_counts()
    for _ in range(100):
        v = tf.Variable(np.ones(1000, np.float32))
        v.assign_add(np.ones(1000, np.float32))
        _ = v + 1.0
    del v, _
    gc.collect()
    assert tf._C.live_counts() == base


def test_assign_shape_mismatch_words_it_as_tf():
    # TF 2.21's text, eager and traced (the quote's leading space is TF's).
    v = tf.Variable([[1., 2.]], name="w", shape=tf.TensorShape([None, 2]))
    with pytest.raises(ValueError, match=re.escape(
            "Cannot assign value to variable ' w:0': Shape mismatch.The "
            "variable shape (None, 2), and the assigned value shape (1, 3) "
            "are incompatible.")):
        v.assign([[1., 2., 3.]])

    @tf.function
    def f(x):
        v.assign(x)
    with pytest.raises(ValueError, match=re.escape(
            "variable shape (None, 2), and the assigned value shape "
            "(None, 3) are incompatible")):
        f.get_concrete_function(tf.TensorSpec([None, 3]))
    # Other failures keep their own message; a fitting value still lands.
    with pytest.raises(ValueError, match="non-rectangular"):
        v.assign([[1, 2], [1]])
    v.assign([[1., 2.], [3., 4.]])
    assert v.numpy().tolist() == [[1., 2.], [3., 4.]]
