"""What a compiled loop does per iteration beyond its body's kernels
(issue 17: a tf.while_loop or AutoGraph `for i in tf.range(n)` should
cost its kernels plus about a microsecond). Timings only hold on a quiet
machine, so these tests count instead (Note [Executor counters] in
csrc/graph/exec.c): the plan steps run and the step outputs given memory
of their own, per iteration, from the difference between two runs of
different lengths."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from _leaks import assert_no_leak


class _Counts(ctypes.Structure):
    _fields_ = [("steps", ctypes.c_int64), ("fresh", ctypes.c_int64),
                ("iterations", ctypes.c_int64)]


_lib = ctypes.CDLL(tf._C.__file__)
_lib.tfm_exec_counters.argtypes = [ctypes.POINTER(_Counts)]
_lib.tfm_exec_counters.restype = None


def _counts():
    c = _Counts()
    _lib.tfm_exec_counters(ctypes.byref(c))
    return np.array([c.steps, c.fresh, c.iterations])


def _cost(fn, *args):
    """(steps, fresh outputs, iterations) of one call of fn(*args)."""
    before = _counts()
    fn(*args)
    return _counts() - before


def _per_iteration(fn, make_args, n1=5, n2=25):
    """(steps, fresh outputs) per iteration: the cost of n2 iterations
    less that of n1, over n2 - n1. Checks the iteration counter too."""
    fn(*make_args(n1))              # trace outside the counts
    a, b = _cost(fn, *make_args(n1)), _cost(fn, *make_args(n2))
    assert b[2] - a[2] == n2 - n1, (a, b)
    return (b[:2] - a[:2]) / (n2 - n1)


def _rnn_inputs(n):
    r = np.random.default_rng(0)
    return (tf.constant(r.standard_normal((n, 32, 64)).astype(np.float32)),
            tf.constant(n))


def _rnn(wx, wh):
    @tf.function
    def rnn(xs, n):
        h = tf.zeros((32, 128))
        for t in tf.range(n):
            h = tf.tanh(tf.matmul(xs[t], wx) + tf.matmul(h, wh))
        return h
    return rnn


def test_rnn_row_per_iteration_work_is_bounded():
    # benchmarks/bench_models.py's "rnn" row (50 steps of
    # tanh(x Wx + h Wh)). Per iteration today, 8 plan steps: the
    # condition, the range element and its negative-index wrap, the
    # slice of xs, h @ Wh, the fused x @ Wx + . then tanh, the counter.
    # Memory of their own for 3 outputs: the condition's bool, the new h
    # and the counter (the rest lives in the body's arena). More means
    # the loop grew per-iteration work.
    r = np.random.default_rng(1)
    wx = tf.constant(r.standard_normal((64, 128)).astype(np.float32) * .1)
    wh = tf.constant(r.standard_normal((128, 128)).astype(np.float32) * .1)
    rnn = _rnn(wx, wh)
    steps, fresh = _per_iteration(rnn, _rnn_inputs)
    assert steps <= 8, steps
    assert fresh <= 3, fresh
    # and the loop still computes the recurrence
    xs, n = _rnn_inputs(7)
    h = np.zeros((32, 128), np.float32)
    for t in range(7):
        h = np.tanh(xs.numpy()[t] @ wx.numpy() + h @ wh.numpy())
    np.testing.assert_allclose(rnn(xs, n).numpy(), h, rtol=1e-4,
                               atol=1e-5)


def test_scalar_while_loop_runs_only_its_ops():
    # bench_tape_function's 1,000-iteration loop: the condition (Less)
    # and the body's AddV2 and the fused x * 0.999 + 0.001.
    @tf.function
    def loop(x, n):
        return tf.while_loop(lambda i, x: i < n,
                             lambda i, x: (i + 1, x * 0.999 + 0.001),
                             [tf.constant(0), x])[1]
    x = tf.constant(0.5)
    steps, fresh = _per_iteration(loop, lambda n: (x, tf.constant(n)))
    assert steps <= 3, steps
    assert fresh <= 3, fresh


def test_loop_that_runs_no_iteration_counts_none():
    @tf.function
    def loop(n):
        return tf.while_loop(lambda i: i < n, lambda i: i + 1,
                             [tf.constant(0)])
    loop(tf.constant(3))
    c = _cost(loop, tf.constant(0))
    assert c[2] == 0
    assert int(loop(tf.constant(0))[0]) == 0


def _scatter_loop():
    # A buffer made inside the function, for the loop alone: the While
    # is its last reader.
    @tf.function
    def fill(x, n):
        buf = tf.zeros((64, 256)) + x
        def body(i, b):
            return i + 1, tf.tensor_scatter_nd_update(
                b, tf.reshape(i, [1, 1]),
                tf.fill([1, 256], tf.cast(i, tf.float32)))
        return tf.while_loop(lambda i, b: i < n, body,
                             [tf.constant(0), buf])[1]
    return fill


def test_scatter_writes_in_place_from_the_first_iteration():
    # The initial value's only holder is the slot the While reads last:
    # the loop takes it over, so the first iteration's scatter writes
    # over it as the later ones do, instead of copying it once.
    fill = _scatter_loop()
    x = tf.constant(np.full((64, 256), -1.0, np.float32))
    fill(x, tf.constant(1))
    steps, fresh = _per_iteration(fill, lambda n: (x, tf.constant(n)))
    zero, one = (_cost(fill, x, tf.constant(k)) for k in (0, 1))
    # The first iteration makes no more memory than any later one.
    assert one[1] - zero[1] <= fresh, (zero, one, fresh)
    got = fill(x, tf.constant(3)).numpy()
    want = np.full((64, 256), -1.0, np.float32)
    want[:3] = np.arange(3, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x.numpy(), -1.0)


def test_initial_value_read_after_the_loop_is_not_written_over():
    # The same buffer is also returned: the While is not its last
    # reader, so the loop copies it before the first write.
    @tf.function
    def fill(x, n):
        buf = tf.zeros((4, 3)) + x
        out = tf.while_loop(
            lambda i, b: i < n,
            lambda i, b: (i + 1, tf.tensor_scatter_nd_update(
                b, tf.reshape(i, [1, 1]), tf.ones([1, 3]))),
            [tf.constant(0), buf])[1]
        return out, buf
    x = tf.constant(np.full((4, 3), 5.0, np.float32))
    out, buf = fill(x, tf.constant(2))
    np.testing.assert_array_equal(out.numpy()[:2], 1.0)
    np.testing.assert_array_equal(out.numpy()[2:], 5.0)
    np.testing.assert_array_equal(buf.numpy(), 5.0)


def test_loop_under_a_tape_keeps_its_inputs():
    # A recorded run never takes a reference over: the tape keeps the
    # initial value for the gradient.
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            b = x * 2.0
            y = tf.while_loop(lambda i, b: i < 3,
                              lambda i, b: (i + 1, b * 1.5),
                              [tf.constant(0), b])[1]
            s = tf.reduce_sum(y)
        return s, tape.gradient(s, x)
    s, g = f(tf.constant([1.0, 2.0]))
    np.testing.assert_allclose(s.numpy(), 3.0 * 2.0 * 1.5 ** 3, rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), [2.0 * 1.5 ** 3] * 2, rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_loop_values_with_taken_over_inputs(n):
    # A loop variable whose initial value dies at the While, another fed
    # twice from one slot (shared, not taken), and a captured tensor.
    @tf.function
    def f(x, k):
        a = x + 1.0
        c = x * 3.0
        return tf.while_loop(lambda i, a, b, c2: i < k,
                             lambda i, a, b, c2: (i + 1, a * 2.0, b + a,
                                                  c2 + c),
                             [tf.constant(0), a, a, c])
    x = np.array([1.0, -2.0], np.float32)
    i, a, b, c = f(tf.constant(x), tf.constant(n))
    wa, wb, wc = x + 1.0, x + 1.0, x * 3.0
    for _ in range(n):
        wa, wb, wc = wa * 2.0, wb + wa, wc + x * 3.0
    assert int(i) == n
    np.testing.assert_allclose(a.numpy(), wa)
    np.testing.assert_allclose(b.numpy(), wb)
    np.testing.assert_allclose(c.numpy(), wc)


def test_taken_over_inputs_leak_nothing_on_success_or_error():
    # The taken-over initial value is dropped on every path: a loop that
    # ends, and one whose body fails after the first iteration.
    fill = _scatter_loop()
    x = tf.constant(np.zeros((64, 256), np.float32))

    @tf.function
    def bad(x, k):
        buf = x * 2.0
        return tf.while_loop(
            lambda i, b: i < 3,
            lambda i, b: (i + 1, tf.tensor_scatter_nd_add(
                b, tf.reshape(i * k, [1, 1]), tf.ones([1, 256]))),
            [tf.constant(0), buf])[1]

    def round_():
        fill(x, tf.constant(3))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="TensorScatterAdd"):
            bad(x, tf.constant(40))
    assert_no_leak(round_, rounds=10)
