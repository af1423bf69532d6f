"""Views instead of copies in the executor (Note [Views of live inputs]
in csrc/graph/exec.c): a reshape, or a GatherV2 of one scalar index on
axis 0, of an input that is not in the plan's arena is a view of that
input's buffer. These tests count the views (tfm_exec_view_count, no
timing) and check that a view never sees a later in-place write: a
scatter writing over its input, a variable assign, a fused update
written into a variable, or the arena reusing its memory."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from _leaks import assert_no_leak

_lib = ctypes.CDLL(tf._C.__file__)
_lib.tfm_exec_view_count.argtypes = []
_lib.tfm_exec_view_count.restype = ctypes.c_int64


def _views(fn, *args):
    """Views made by one call of fn(*args) (traced beforehand)."""
    fn(*args)
    before = _lib.tfm_exec_view_count()
    out = fn(*args)
    return _lib.tfm_exec_view_count() - before, out


def _stack(n, rows=3, cols=4):
    return np.arange(n * rows * cols, dtype=np.float32).reshape(n, rows,
                                                                cols)


def _row_sum_loop(xs, n):
    """sum over t of xs[t] through tf.gather, in a compiled loop."""
    def body(i, acc):
        return i + 1, acc + tf.gather(xs, i)
    return tf.while_loop(lambda i, _: i < n, body,
                         [tf.constant(0), tf.zeros_like(xs[0])])[1]


@pytest.mark.parametrize("n", [4, 9])
def test_loop_row_reads_are_views(n):
    f = tf.function(_row_sum_loop)
    xs = _stack(n)
    got_views, out = _views(f, tf.constant(xs), tf.constant(n))
    np.testing.assert_array_equal(out.numpy(), xs.sum(0))
    # One view per iteration: the row read, not a copy of it.
    assert got_views == n


def test_views_per_iteration_do_not_grow():
    f = tf.function(_row_sum_loop)
    a, _ = _views(f, tf.constant(_stack(20)), tf.constant(5))
    b, _ = _views(f, tf.constant(_stack(20)), tf.constant(15))
    assert b - a == 10


def test_int64_index_and_last_row():
    @tf.function
    def f(x, i):
        return tf.gather(x, i) * 1.0
    x = _stack(5)
    for i in (0, 4):
        v, out = _views(f, tf.constant(x), tf.constant(i, tf.int64))
        np.testing.assert_array_equal(out.numpy(), x[i])
        assert v == 1


def test_out_of_range_index_raises_as_before():
    f = tf.function(_row_sum_loop)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"GatherV2: indices(\[\])? = 3 is not in "
                             r"\[0, 3\)"):
        f(tf.constant(_stack(3)), tf.constant(4))

    @tf.function
    def g(x, i):
        return tf.gather(x, i)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"indices(\[\])? = -1 is not in \[0, 5\)"):
        g(tf.constant(_stack(5)), tf.constant(-1))


def test_other_gathers_copy():
    @tf.function
    def f(x, i, j):
        return (tf.gather(x, i, axis=1), tf.gather(x, j),
                tf.gather(x, [1, 2]))
    x = _stack(5)
    v, (a, b, c) = _views(f, tf.constant(x), tf.constant(1),
                          tf.constant([0, 3]))
    assert v == 0
    np.testing.assert_array_equal(a.numpy(), x[:, 1])
    np.testing.assert_array_equal(b.numpy(), x[[0, 3]])
    np.testing.assert_array_equal(c.numpy(), x[[1, 2]])


def test_row_view_never_sees_the_scatter_that_follows():
    # row = s[i] is read after s[i] is overwritten in place: the view
    # holds the buffer, so the scatter must copy instead.
    def body(i, s, acc):
        row = tf.gather(s, i)
        s = tf.tensor_scatter_nd_update(s, tf.reshape(i, [1, 1]),
                                        tf.expand_dims(row * 0 - 7, 0))
        return i + 1, s, acc + row

    @tf.function
    def f(xs):
        n = xs.shape[0]
        _, s, acc = tf.while_loop(lambda i, *_: i < n, body,
                                  [tf.constant(0), xs * 1.0,
                                   tf.zeros_like(xs[0])])
        return s, acc
    xs = _stack(6)
    v, (s, acc) = _views(f, tf.constant(xs))
    assert v >= 6
    np.testing.assert_array_equal(acc.numpy(), xs.sum(0))
    np.testing.assert_array_equal(s.numpy(), np.full_like(xs, -7))


def test_reshape_view_never_sees_a_later_scatter():
    @tf.function
    def f(x):
        s = x + 0.0
        flat = tf.reshape(s, [-1])
        s2 = tf.tensor_scatter_nd_update(s, [[0]], tf.zeros_like(s[:1]))
        return flat, s2
    x = _stack(3)
    flat, s2 = f(tf.constant(x))
    np.testing.assert_array_equal(flat.numpy(), x.reshape(-1))
    want = x.copy()
    want[0] = 0
    np.testing.assert_array_equal(s2.numpy(), want)


def test_views_of_a_variable_keep_the_old_value():
    v = tf.Variable(_stack(2))

    @tf.function
    def f():
        row = tf.gather(v, 1)
        flat = tf.reshape(v, [-1])
        v.assign(v * 2.0)           # a fused update into v's buffer
        v.assign_add(tf.ones_like(v))
        return row, flat
    x = _stack(2)
    row, flat = f()
    np.testing.assert_array_equal(row.numpy(), x[1])
    np.testing.assert_array_equal(flat.numpy(), x.reshape(-1))
    np.testing.assert_array_equal(v.numpy(), x * 2 + 1)


def test_arena_inputs_are_copied_and_right():
    # y is an intermediate in the arena: its row and reshape are copies
    # (a view would pin the block), and the in-place elementwise on y
    # must not reach them.
    @tf.function
    def f(x, i):
        y = x * 2.0
        row = tf.gather(y, i)
        flat = tf.reshape(y, [-1])
        z = tf.exp(y)
        return row + 0.0, flat * 1.0, z
    x = _stack(4) / 10
    row, flat, z = f(tf.constant(x), tf.constant(2))
    np.testing.assert_allclose(row.numpy(), x[2] * 2)
    np.testing.assert_allclose(flat.numpy(), x.reshape(-1) * 2)
    np.testing.assert_allclose(z.numpy(), np.exp(x * 2), rtol=1e-6)


def test_gradient_through_a_traced_row_read():
    # Called under a tape the run is recorded: no views, gradients flow.
    @tf.function
    def f(x, i):
        return tf.reduce_sum(tf.gather(x, i) ** 2)
    x = tf.constant(_stack(3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x, tf.constant(1))
    g = tape.gradient(y, x).numpy()
    want = np.zeros_like(_stack(3))
    want[1] = 2 * _stack(3)[1]
    np.testing.assert_array_equal(g, want)


def test_float64_and_int_rows():
    @tf.function
    def f(a, b, i):
        return tf.gather(a, i), tf.gather(b, i)
    a = np.arange(12.0).reshape(4, 3)
    b = np.arange(12, dtype=np.int32).reshape(4, 3)
    v, (ra, rb) = _views(f, tf.constant(a), tf.constant(b), tf.constant(3))
    assert v == 2
    assert ra.dtype == tf.float64 and rb.dtype == tf.int32
    np.testing.assert_array_equal(ra.numpy(), a[3])
    np.testing.assert_array_equal(rb.numpy(), b[3])


def test_views_do_not_leak():
    f = tf.function(_row_sum_loop)
    xs, n = tf.constant(_stack(5)), tf.constant(5)
    assert_no_leak(lambda: f(xs, n), rounds=10)


def test_view_of_a_loop_initial_value_survives_the_loops_writes():
    # s is made for the loop, and the While is its last reader, so the
    # loop takes it over and its scatters would write over it in place
    # (Note [Writing over a loop variable]): a row view read after the
    # loop must hold the buffer and make the first scatter copy.
    def body(i, s):
        return i + 1, tf.tensor_scatter_nd_update(
            s, tf.reshape(i, [1, 1]), tf.fill([1, 3, 4], -1.0))

    @tf.function
    def f(x):
        s = x * 2.0
        row = tf.gather(s, 0)
        flat = tf.reshape(s, [-1])
        _, s = tf.while_loop(lambda i, _: i < 4, body, [tf.constant(0), s])
        return row * 1.0, flat * 1.0, s
    x = _stack(4)
    v, _ = _views(f, tf.constant(x))
    assert v >= 2                   # row and flat are views of s
    for _ in range(2):
        row, flat, s = f(tf.constant(x))
        np.testing.assert_array_equal(row.numpy(), x[0] * 2)
        np.testing.assert_array_equal(flat.numpy(), x.reshape(-1) * 2)
        np.testing.assert_array_equal(s.numpy(), np.full_like(x, -1))
