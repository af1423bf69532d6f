"""Type names and reprs as TF's guides print them: EagerTensor,
SymbolicTensor, ResourceVariable and the UnreadVariable that assign
returns (TF 2.21)."""
import copy
import pickle

import numpy as np

import tfmini as tf


def test_eager_tensor_type_name():
    t = tf.constant([1.0, 2.0])
    assert type(t).__name__ == "EagerTensor"
    assert isinstance(t, tf.Tensor)
    assert tf.Tensor.__name__ == "Tensor"
    # Results of ops are EagerTensors too, not only constants.
    assert type(t + 1).__name__ == "EagerTensor"
    assert type(tf.reduce_sum(t)).__name__ == "EagerTensor"


def test_traced_tensor_type_name():
    seen = []

    @tf.function
    def f(x):
        seen.append(type(x).__name__)
        y = x * 2
        seen.append(type(y).__name__)
        assert isinstance(y, tf.Tensor)
        return y

    out = f(tf.constant(1.0))
    assert seen == ["SymbolicTensor", "SymbolicTensor"]
    assert type(out).__name__ == "EagerTensor"


def test_variable_type_name():
    v = tf.Variable([1.0, 2.0])
    assert type(v).__name__ == "ResourceVariable"
    assert isinstance(v, tf.Variable)
    assert tf.Variable.__name__ == "Variable"


def test_assign_returns_unread_variable():
    v = tf.Variable([1.0, 2.0], name="v")
    out = v.assign([3.0, 4.0])
    assert repr(out) == ("<tf.Variable 'UnreadVariable' shape=(2,) "
                         "dtype=float32, numpy=array([3., 4.], "
                         "dtype=float32)>")
    assert isinstance(out, tf.Variable)
    assert out is not v
    assert v.name == "v:0"
    add = v.assign_add([1.0, 1.0])
    sub = v.assign_sub([0.5, 0.5])
    assert "UnreadVariable" in repr(add) and "UnreadVariable" in repr(sub)
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])


def test_unread_variable_reads_the_current_value_and_writes_through():
    v = tf.Variable(1.0)
    u = v.assign(2.0)
    v.assign(5.0)
    # The alias reads the variable when read, not when assign ran.
    assert float(u) == 5.0
    u.assign_add(1.0)
    assert float(v) == 6.0
    # Chained writes, as TF allows: v.assign(1).assign_add(2).
    assert float(v.assign(1.0).assign_add(2.0)) == 3.0
    assert v.trainable and u.trainable and u.dtype == tf.float32
    assert u.shape == v.shape


def test_unread_variable_in_ops_and_tapes():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v.assign([2.0, 3.0]) * v)
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), [4.0, 6.0])
    # The tape names the variable itself, not the alias.
    assert [w is v for w in tape.watched_variables()] == [True]


def test_unread_variable_outlives_nothing():
    v = tf.Variable(3.0)
    u = v.assign(4.0)
    del u
    assert float(v) == 4.0
    u2 = v.assign(5.0)
    del v
    # The alias keeps the value alive on its own.
    assert float(u2) == 5.0


def test_unread_variable_copies_as_the_variable():
    v = tf.Variable([1.0, 2.0], name="w")
    u = v.assign([7.0, 8.0])
    back = pickle.loads(pickle.dumps(u))
    assert type(back).__name__ == "ResourceVariable"
    np.testing.assert_array_equal(back.numpy(), [7.0, 8.0])
    c = copy.deepcopy(v)
    assert type(c).__name__ == "ResourceVariable"


def test_read_value_false_returns_none():
    v = tf.Variable(1.0)
    assert v.assign(2.0, read_value=False) is None
    assert v.assign_add(2.0, read_value=False) is None
