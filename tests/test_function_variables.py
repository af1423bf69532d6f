"""Variables declared with unknown dims, read inside tf.function: the
read has the declared shape, so a later assign of another shape within it
gives the right numbers (the plan does not take the old dims as known),
and a value the trace cannot hold is a clear error, never a bad read."""
import numpy as np
import pytest

import tfmini as tf


def test_read_uses_declared_none_dims():
    v = tf.Variable(np.ones((2, 3), np.float32), shape=[None, 3])

    @tf.function
    def f():
        return v * 2.0 + 1.0

    np.testing.assert_array_equal(f().numpy(), np.full((2, 3), 3.0))
    read = [op for op in f.get_concrete_function().graph.get_operations()
            if op.type == "ReadVariableOp"]
    assert read and read[0].outputs[0].shape.as_list() == [None, 3]
    for n in (4, 1, 0, 7):
        v.assign(np.full((n, 3), 5.0, np.float32))
        np.testing.assert_array_equal(f().numpy(), np.full((n, 3), 11.0))
    assert f.experimental_get_tracing_count() == 1


def test_read_with_declared_dims_in_a_gradient_step():
    v = tf.Variable(np.ones((2, 4), np.float32), shape=[None, 4])
    w = tf.Variable(np.full((4, 1), 0.5, np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(v, w) ** 2)
        g = tape.gradient(loss, w)
        w.assign_sub(0.01 * g)
        return loss

    for n in (2, 5):
        v.assign(np.ones((n, 4), np.float32))
        w.assign(np.full((4, 1), 0.5, np.float32))
        assert step().numpy() == pytest.approx(n * 4.0)
        # d/dw sum((v w)^2) = 2 v^T (v w) = 2 * n * 2 per entry
        np.testing.assert_allclose(w.numpy(),
                                   np.full((4, 1), 0.5 - 0.01 * 4 * n))


def test_any_rank_variable_reads_with_unknown_dims():
    v = tf.Variable(np.ones((2, 3), np.float32), shape=tf.TensorShape(None))

    @tf.function
    def f():
        return tf.reduce_sum(v * 2.0)

    assert f().numpy() == 12.0
    v.assign(np.full((4, 5), 1.0, np.float32))
    assert f().numpy() == 40.0
    v.assign(np.full((4,), 5.0, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"now float32 of shape \[4\].*traced for "
                             r"float32 of shape \[\?,\?\]"):
        f()
    assert tf.function(lambda: tf.reduce_sum(v * 2.0))().numpy() == 40.0


def test_fully_declared_shape_stays_static():
    v = tf.Variable(np.ones((2, 3), np.float32))

    @tf.function
    def f():
        return v + 1.0

    f()
    read = [op for op in f.get_concrete_function().graph.get_operations()
            if op.type == "ReadVariableOp"]
    assert read[0].outputs[0].shape.as_list() == [2, 3]
