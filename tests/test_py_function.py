"""tf.py_function / tf.numpy_function: eager, traced (an EagerPyFunc node
calling Python on every run), errors and gradients."""
import threading

import numpy as np
import pytest

import tfmini as tf


def test_eager_calls_and_converts():
    out = tf.py_function(lambda x: x * 2, [tf.constant([1.0, 2.0])],
                         tf.float32)
    np.testing.assert_array_equal(out.numpy(), [2, 4])
    a, b = tf.py_function(lambda x: (x, [1, 2]), [1.5],
                          [tf.float32, tf.int64])
    assert b.dtype == tf.int64 and float(a) == 1.5
    n = tf.numpy_function(lambda x: np.sin(x), [tf.constant([0.5])],
                          tf.float32)
    np.testing.assert_allclose(n.numpy(), np.sin([0.5]), rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.py_function(lambda x: tf.cast(x, tf.int32),
                       [tf.constant(1.0)], tf.float32)


def test_eager_gradient_through_the_tape():
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.py_function(lambda a: a * a, [x], tf.float32))
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [2, 6])


def test_traced_runs_python_on_every_call():
    calls = []

    def f(x):
        calls.append(x.numpy().copy())
        return x + 1

    @tf.function
    def g(x):
        return tf.py_function(f, [x], tf.TensorSpec([2], tf.float32)) * 10
    np.testing.assert_array_equal(g(tf.constant([1.0, 2.0])).numpy(),
                                  [20, 30])
    np.testing.assert_array_equal(g(tf.constant([5.0, 6.0])).numpy(),
                                  [60, 70])
    assert len(calls) == 2                        # not folded at trace time
    np.testing.assert_array_equal(calls[1], [5, 6])
    conc = g.get_concrete_function(tf.TensorSpec([2], tf.float32))
    assert "EagerPyFunc" in [op.type for op in conc.graph.get_operations()]


def test_traced_side_effect_without_outputs_used():
    hits = []

    @tf.function
    def g(x):
        tf.numpy_function(lambda a: hits.append(1) or np.float32(0), [x],
                          tf.TensorSpec([], tf.float32))
        return x
    g(tf.constant(1.0))
    g(tf.constant(2.0))
    assert len(hits) == 2                         # stateful: never dropped


def test_traced_errors_name_the_function():
    def bad(x):
        raise ValueError("boom")

    @tf.function
    def g(x):
        return tf.py_function(bad, [x], tf.TensorSpec([], tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="'bad' raised ValueError: boom"):
        g(tf.constant(1.0))

    def wrong_shape(x):
        return tf.zeros([3])

    @tf.function
    def h(x):
        return tf.py_function(wrong_shape, [x], tf.TensorSpec([2],
                                                              tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"'wrong_shape': output 0 has shape \[3\]"):
        h(tf.constant(1.0))

    @tf.function
    def k(x):
        return tf.numpy_function(lambda a: a.astype(np.int32), [x],
                                 tf.TensorSpec([], tf.float32))
    k(tf.constant(1.0))   # a NumPy result is converted to Tout, as TF

    # A bare dtype is traced with the inputs' largest rank: another rank
    # returned is an error that asks for a TensorSpec.
    @tf.function
    def unknown(x):
        return tf.py_function(lambda a: tf.stack([a, a]), [x], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"shape \[2\], but tfmini traced it with rank "
                             r"0.*tf.TensorSpec\(shape, float32\)"):
        unknown(tf.constant(1.0))


def test_traced_gradient_is_a_python_node_too():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def grad():
        with tf.GradientTape() as t:
            y = tf.reduce_sum(tf.py_function(
                lambda a: a * a * a, [v.read_value()],
                tf.TensorSpec([2], tf.float32)))
        return t.gradient(y, v)
    np.testing.assert_allclose(grad().numpy(), [3, 12])
    v.assign([3.0, 1.0])
    np.testing.assert_allclose(grad().numpy(), [27, 3])


def test_traced_numpy_function_in_threads():
    @tf.function
    def g(x):
        return tf.numpy_function(lambda a: a * 2, [x],
                                 tf.TensorSpec([4], tf.float32))
    g(tf.zeros([4]))
    errors = []

    def work(i):
        try:
            for _ in range(20):
                x = np.full(4, i, np.float32)
                np.testing.assert_array_equal(g(x).numpy(), x * 2)
        except Exception as e:           # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_raw_op_needs_known_shapes():
    from tfmini._opids import ID
    with pytest.raises(tf.errors.InvalidArgumentError, match="EagerPyFunc"):
        tf._C.call(ID["EagerPyFunc"], [], ints=[1, 0, 1, -1], i=[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="EagerPyFunc"):
        tf._C.call(ID["EagerPyFunc"], [], ints=[1], i=[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="token"):
        tf._C.call(ID["EagerPyFunc"], [], ints=[1, 0, 0], i=[123456789])


def test_a_graph_with_py_function_is_not_saved(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            return tf.py_function(lambda a: a, [x],
                                  tf.TensorSpec([2], tf.float32))
    with pytest.raises(Exception, match="py_function"):
        tf.saved_model.save(M(), str(tmp_path / "m"))


def test_exceptions_map_to_tf_errors_as_tfs_py_func():
    def raiser(exc):
        def f(x):
            raise exc("inside")
        return f
    with pytest.raises(tf.errors.InvalidArgumentError, match="inside"):
        tf.py_function(raiser(ValueError), [1.0], tf.float32)
    for exc, err in [(NotImplementedError, tf.errors.UnimplementedError),
                     (StopIteration, tf.errors.OutOfRangeError),
                     (TypeError, tf.errors.InvalidArgumentError)]:
        @tf.function
        def g(x):
            return tf.py_function(raiser(exc), [x],
                                  tf.TensorSpec([], tf.float32))
        with pytest.raises(err, match=f"raised {exc.__name__}: inside"):
            g(tf.constant(1.0))


def test_big_outputs_and_float16():
    # A big node may run with the GIL released: the hook takes it back.
    @tf.function
    def g(x):
        y = tf.numpy_function(lambda a: a * 2, [x],
                              tf.TensorSpec([1000, 1000], tf.float32))
        return tf.reduce_sum(y)
    assert float(g(tf.ones([1000, 1000]))) == 2e6

    @tf.function
    def h(x):
        return tf.numpy_function(lambda a: a.astype(np.float16), [x],
                                 tf.TensorSpec([3], tf.float16))
    assert h(tf.ones([3])).dtype == tf.float16
