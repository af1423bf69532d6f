"""x[i] with a symbolic i (a loop counter) in a traced function: the
value, negative indices, the gradient, and no StridedSlice copying all
of x before the row is gathered (it cost ~9 us per RNN iteration)."""
import numpy as np

import tfmini as tf


def test_symbolic_index_values_and_grad():
    x = np.arange(5 * 3 * 2, dtype=np.float32).reshape(5, 3, 2)
    xs = tf.constant(x)

    @tf.function
    def rows(xs):
        acc = tf.zeros((3, 2))
        for t in tf.range(5):
            acc = acc + xs[t] * tf.cast(t + 1, tf.float32)
        return acc

    want = sum(x[t] * (t + 1) for t in range(5))
    np.testing.assert_allclose(rows(xs).numpy(), want)

    @tf.function
    def neg(xs, i):
        return xs[i], xs[i, 1:], xs[..., i + 1]
    a, b, c = neg(xs, tf.constant(-2))
    np.testing.assert_array_equal(a.numpy(), x[-2])
    np.testing.assert_array_equal(b.numpy(), x[-2, 1:])
    np.testing.assert_array_equal(c.numpy(), x[..., -1])

    v = tf.Variable(x)

    @tf.function
    def grad():
        with tf.GradientTape() as tape:
            loss = tf.zeros(())
            for t in tf.range(5):
                loss = loss + tf.reduce_sum(v[t]) * tf.cast(t, tf.float32)
        return tape.gradient(loss, v)
    g = np.broadcast_to(np.arange(5, dtype=np.float32)[:, None, None],
                        x.shape)
    np.testing.assert_allclose(grad().numpy(), g)


def test_whole_slice_is_not_copied():
    from tfmini.ops import array_ops
    x = tf.constant(np.zeros((4, 3), np.float32))
    calls = []
    real = array_ops._C.call

    def spy(op, *a, **k):
        calls.append(op)
        return real(op, *a, **k)

    @tf.function
    def f(x, i):
        return x[i], x[i, 1:]
    array_ops._C.call, saved = spy, array_ops._C.call
    try:
        f(x, tf.constant(1))
    finally:
        array_ops._C.call = saved
    # x[i]: no StridedSlice; x[i, 1:]: one (it does cut).
    assert calls.count(array_ops._STRIDED_SLICE) == 1


def test_small_fused_nodes_with_broadcast_inputs():
    """Fused nodes smaller than one block run as one block of their own
    size on the calling thread; periodic (bias-like) inputs tile into
    it."""
    rng = np.random.default_rng(3)

    @tf.function
    def f(x, b, s):
        return tf.tanh(x * 2.0 + b) * s - tf.exp(-x)

    for shape in [(1, 1), (3, 5), (7, 48), (13, 130), (40, 1000)]:
        x = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape[-1:]).astype(np.float32)
        s = np.float32(0.5)
        want = np.tanh(x * 2 + b) * s - np.exp(-x)
        np.testing.assert_allclose(f(x, b, s).numpy(), want, rtol=1e-5,
                                   atol=1e-6)
