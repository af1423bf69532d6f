"""A tf.while_loop inside a @tf.custom_gradient function: the variables-
only tape that finds the variables f reads is not a recording tape, so
the loop must not stack its loop variables every iteration for a
gradient nobody takes (it cost the fused LSTM loop seconds per step),
and a variable read only inside the loop body must still reach
grad_fn's `variables`."""
import numpy as np

import tfmini as tf
from tfmini import _C


def _make(v):
    @tf.custom_gradient
    def f(x, n):
        def body(i, a):
            return i + 1, a * v + x
        _, y = tf.while_loop(lambda i, a: i < n, body,
                             (tf.constant(0), x))

        def grad(dy, variables=None):
            return (dy * 3.0, None), [tf.reduce_sum(dy) * 5.0
                                      for _ in variables]
        return y, grad
    return f


def _peak_over(fn, *args):
    """Bytes allocated at the peak of one call, above those live before."""
    _C.peak_bytes(True)
    base = _C.peak_bytes()
    out = fn(*args)
    return _C.peak_bytes() - base, out


def test_loop_in_custom_gradient_does_not_stack_traced():
    v = tf.Variable(0.5)
    f = _make(v)

    @tf.function
    def taped(x, n):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x, n)
        return t.gradient(y, [x, v])

    x = tf.fill([256, 256], 0.25)
    taped(x, tf.constant(2))
    nbytes = 256 * 256 * 4
    # 50 iterations: stacking the loop variable would keep 50 copies.
    peak, (gx, gv) = _peak_over(taped, x, tf.constant(50))
    assert peak <= 8 * nbytes, peak / nbytes
    np.testing.assert_allclose(gx.numpy(), 3.0)
    np.testing.assert_allclose(gv.numpy(), 5.0 * 256 * 256)


def test_variable_read_in_loop_body_reaches_grad_fn():
    v = tf.Variable(2.0)
    seen = []

    @tf.custom_gradient
    def f(x):
        _, y = tf.while_loop(lambda i, a: i < 3,
                             lambda i, a: (i + 1, a * v), (0, x))

        def grad(dy, variables=None):
            seen.append(list(variables))
            return dy * 7.0, [dy * 11.0]
        return y, grad

    def run(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return t.gradient(y, [x, v])

    for call in (run, tf.function(run)):
        seen.clear()
        gx, gv = call(tf.constant(1.0))
        assert len(seen) == 1 and len(seen[0]) == 1 and seen[0][0] is v
        assert float(gx) == 7.0 and float(gv) == 11.0


def test_custom_gradient_inside_cond_passes_variables_up():
    v = tf.Variable(3.0)

    @tf.custom_gradient
    def g(x):
        def grad(dy, variables=None):
            return dy * 2.0, [dy * 4.0]
        return x * v, grad

    @tf.function
    def step(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0, lambda: g(x), lambda: x)
        return t.gradient(y, [x, v])

    gx, gv = step(tf.constant(1.0))
    assert float(gx) == 2.0 and float(gv) == 4.0
