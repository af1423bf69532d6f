"""Loops that read or write one row per iteration: the gradient of x[i]
summed into an accumulator in place (Note [Sparse loop accumulators] in
csrc/graph/pass_simplify.c), scatters that write over a loop variable
(Note [Writing over a loop variable] in csrc/graph/exec.c), and the
preallocated stacks of a loop with a known maximum_iterations
(WhileRecorder). Values against eager/unrolled computation; memory and
the optimized graph to show the O(n^2) copying is gone."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.function import FuncGraph


def _rng(seed=0):
    return np.random.default_rng(seed)


def _loop_grad(x, w, n, read, max_iter=None):
    """d/dx, d/dw of sum(h) for h = tanh(read(x, i) * w + h) over n
    steps."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = tf.zeros(x.shape[1:])
        kw = {} if max_iter is None else {"maximum_iterations": max_iter}
        _, h = tf.while_loop(lambda i, h: i < n,
                             lambda i, h: (i + 1, tf.tanh(read(x, i) * w + h)),
                             [tf.constant(0), h], **kw)
        loss = tf.reduce_sum(h * h)
    return [loss] + tape.gradient(loss, [x, w])


def _unrolled(x, w, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = tf.zeros(x.shape[1:])
        for i in range(n):
            h = tf.tanh(x[i] * w + h)
        loss = tf.reduce_sum(h * h)
    return [loss] + tape.gradient(loss, [x, w])


READS = {"getitem": lambda x, i: x[i],
         "gather": lambda x, i: tf.gather(x, i)}


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize("n,max_iter", [(1, None), (7, None), (7, 7),
                                        (5, 9), (9, 5), (40, 40)])
def test_loop_reading_row_i_matches_unrolled(read, n, max_iter):
    r = _rng(n)
    x = tf.constant(r.standard_normal((max(n, 9), 3, 5)).astype(np.float32))
    w = tf.Variable(r.standard_normal((3, 5)).astype(np.float32) * 0.5)
    got = tf.function(lambda x: _loop_grad(x, w, n, READS[read],
                                           max_iter))(x)
    want = _unrolled(x, w, n if max_iter is None else min(n, max_iter))
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5,
                                   atol=1e-6)


def _subgraphs(graph, op):
    return [FuncGraph(s, [], []) for s in graph._graph.subgraphs(op.name)]


def test_gradient_loop_scatters_into_its_accumulator():
    # The gradient of x[i] in the reverse loop is one scatter-add into
    # the loop-carried accumulator, not a zeros tensor the size of x
    # plus an add of all of x per iteration.
    x = tf.constant(_rng().standard_normal((20, 256)).astype(np.float32))
    w = tf.Variable(np.ones(256, np.float32))
    f = tf.function(lambda x: _loop_grad(x, w, 20, READS["getitem"]))
    f(x)
    g = f.get_concrete_function(x).optimized_graph
    loops = [op for op in g.get_operations() if op.type == "While"]
    assert len(loops) == 2          # the forward loop, the gradient's
    body = max(_subgraphs(g, loops[1]), key=lambda b: len(b.get_operations()))
    types = [op.type for op in body.get_operations()]
    assert "Fill" not in types and "ZerosLike" not in types, types
    (scatter,) = [op for op in body.get_operations()
                  if op.type == "TensorScatterAdd"]
    inputs = {op.name: op.type for op in body.get_operations()}
    first = scatter.inputs[0].split(":")[0]
    assert inputs[first] == "Placeholder", (scatter.inputs, inputs)


def _peak_over(f, *args):
    f(*args)                        # trace and warm the arenas
    _C.peak_bytes(True)
    base = _C.peak_bytes()
    out = f(*args)
    return _C.peak_bytes() - base, out


def test_gradient_of_row_reads_allocates_no_copy_per_iteration():
    # x is large and the state tiny: the accumulator for x's gradient is
    # the only x-sized thing the gradient loop needs. Before, each of the
    # n iterations made a zeros tensor, a scatter and a sum the size of
    # x (peak several x, traffic n x).
    n, row = 64, 16384
    nbytes = n * row * 4
    x = tf.constant(_rng().standard_normal((n, row)).astype(np.float32))

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, h = tf.while_loop(
                lambda i, h: i < n,
                lambda i, h: (i + 1, tf.tanh(tf.reduce_sum(x[i]) + h)),
                [tf.constant(0), tf.zeros([2])], maximum_iterations=n)
            loss = tf.reduce_sum(h)
        return tape.gradient(loss, x)
    peak, got = _peak_over(tf.function(f), x)
    # the accumulator's first value and its one copy, and the result
    assert peak <= 2.5 * nbytes, peak / nbytes
    np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_tensor_array_writes_in_place_in_a_graph_loop():
    # A TensorArray carried through a graph loop is a buffer that each
    # write scatters into: written over, not copied, once the loop owns
    # it.
    n, row = 64, 16384

    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=n)
        _, ta = tf.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(i, x * tf.cast(
                                  i, tf.float32))), [0, ta])
        return ta.stack()
    x = tf.constant(np.ones(row, np.float32))
    peak, got = _peak_over(f, x)
    assert peak <= 2.5 * n * row * 4, peak / (n * row * 4)
    np.testing.assert_array_equal(
        got.numpy(), np.arange(n, dtype=np.float32)[:, None] * np.ones(row))


def test_scatter_keeps_a_buffer_that_is_still_read():
    # The loop variable is read after the scatter (and the initial value
    # after the loop): neither may be written over.
    @tf.function
    def f(buf):
        def body(i, b, s):
            nb = tf.tensor_scatter_nd_update(b, tf.reshape(i, [1, 1]),
                                            [100.0])
            return i + 1, nb, s + tf.reduce_sum(b)
        _, out, s = tf.while_loop(lambda i, b, s: i < 4, body,
                                  [0, buf, tf.constant(0.0)])
        return out, s, buf
    buf = tf.constant(np.arange(4, dtype=np.float32))
    out, s, again = f(buf)
    np.testing.assert_array_equal(out.numpy(), [100.0] * 4)
    # sums of the buffer entering each iteration: 6, 106, 205, 303
    assert float(s) == 6 + 106 + 205 + 303
    np.testing.assert_array_equal(again.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(buf.numpy(), [0, 1, 2, 3])


def test_bad_index_in_a_loop_scatter_raises_and_leaves_values_alone():
    @tf.function
    def f(buf, k):
        def body(i, b):
            return i + 1, tf.tensor_scatter_nd_add(b, tf.reshape(
                i * k, [1, 1]), [1.0])
        return tf.while_loop(lambda i, b: i < 3, body, [0, buf])[1]
    buf = tf.constant(np.zeros(3, np.float32))
    np.testing.assert_array_equal(f(buf, tf.constant(1)).numpy(), [1, 1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="TensorScatterAdd"):
        f(buf, tf.constant(5))
    np.testing.assert_array_equal(buf.numpy(), [0, 0, 0])


def test_gather_gradient_of_a_batch_of_rows_adds_repeats():
    # The GatherV2 rule's row form: repeated indices add up.
    x = tf.constant(_rng().standard_normal((4, 3)).astype(np.float32))
    idx = tf.constant([[1, 3], [1, 0]])

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.gather(x, idx) * tf.constant(
                np.arange(12, dtype=np.float32).reshape(2, 2, 3)))
        return tape.gradient(y, x)
    c = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    want = np.zeros((4, 3), np.float32)
    for a in range(2):
        for b in range(2):
            want[int(idx.numpy()[a, b])] += c[a, b]
    for fn in (f, tf.function(f)):
        np.testing.assert_allclose(fn(x).numpy(), want)


def test_recorder_preallocates_with_a_known_maximum():
    from tfmini.ops import control_flow_grad as cfg
    v = tf.zeros([3, 4])
    rec = cfg.WhileRecorder([tf.constant(0), v], [tf.TensorShape([]),
                                                  tf.TensorShape([3, 4])], 10)
    assert rec.rows == 10 and not any(rec.chunked)
    rec = cfg.WhileRecorder([v], [tf.TensorShape([3, 4])], None)
    assert rec.rows is None
    big = cfg.PREALLOCATE_MAX_BYTES // (3 * 4 * 4) + 1
    assert cfg.WhileRecorder([v], [tf.TensorShape([3, 4])], big).rows is None


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
def test_recurrent_layer_gradient_loop_has_no_sequence_sized_step(kind):
    # The layer's loop reads step t of the projected inputs (time,
    # batch, gates); the gradient loop must only scatter into that
    # accumulator, never make a tensor of its size per step.
    t, b = 12, 4
    layer = getattr(tf.keras.layers, kind)(6)
    x = tf.constant(_rng().standard_normal((b, t, 3)).astype(np.float32))

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x) ** 2)
        return tape.gradient(loss, [x] + layer.trainable_weights)
    fn = tf.function(f)
    got = fn(x)
    for g, e in zip(got, f(x)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4,
                                   atol=1e-5)
    g = fn.get_concrete_function(x).optimized_graph
    loops = [op for op in g.get_operations() if op.type == "While"]
    if kind == "LSTM":
        # Its time loop is one op each way (rnn_fused.py): no While.
        assert not loops, [op.type for op in loops]
        return
    body = max(_subgraphs(g, loops[-1]),
               key=lambda s: len(s.get_operations()))
    ops = body.get_operations()
    types = {op.name: op.type for op in ops}
    seq = [op for op in ops if any(
        len(o.shape) == 3 and o.shape[0] == t for o in op.outputs)]
    assert seq, [op.type for op in ops]
    for op in seq:
        assert op.type in ("Placeholder", "TensorScatterAdd",
                           "TensorScatterUpdate"), (
            op.type, [o.type for o in ops])
        if op.type != "Placeholder":
            assert types[op.inputs[0].split(":")[0]] == "Placeholder"


@pytest.mark.parametrize("max_iter", [None, 5])
def test_differentiated_loop_carries_string_and_bool_variables(max_iter):
    # Every loop variable is stacked for the gradient, strings too (the
    # stacks start as empty strings, not zeros).
    x = tf.constant(np.ones(3, np.float32))
    kw = {} if max_iter is None else {"maximum_iterations": max_iter}

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, y, s, b = tf.while_loop(
                lambda i, y, s, b: i < 3,
                lambda i, y, s, b: (i + 1, y * 2.0, tf.strings.join([s, "a"]),
                                    tf.logical_not(b)),
                [0, x, tf.constant(""), tf.constant(True)], **kw)
            loss = tf.reduce_sum(y)
        return tape.gradient(loss, x), s, b
    g, s, b = f(x)
    np.testing.assert_array_equal(g.numpy(), [8, 8, 8])
    assert s.numpy() == b"aaa" and not bool(b)
