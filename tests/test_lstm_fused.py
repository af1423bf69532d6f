"""The fused LSTM cell (LSTMGates / LSTMGatesGrad, csrc/ops/ops_rnn.def)
and the LSTM layer's loop with its own gradient
(tfmini/keras/layers/rnn_fused.py): the ops against NumPy and numeric
differences, the Keras LSTM and GRU against TF 2.21's outputs and
gradients on fixed weights (tests/data/rnn_fused_tf_2_21.json, made
once with TF 2.21's tf.keras), traced gradients equal to eager ones, the
graphs the layer makes, and clear errors for bad arguments."""
import json
import os

import numpy as np
import pytest

import tfmini as tf
from tfmini.keras.layers import rnn as rnn_mod
from tfmini.ops.rnn_ops import lstm_gates, lstm_gates_grad

L = tf.keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data",
                    "rnn_fused_tf_2_21.json")


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_gates(z, cp):
    u = cp.shape[1]
    i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    c = f * cp + i * g
    return o * np.tanh(c), c, np.concatenate([i, f, g, o], 1)


def _rand(shape, seed, dtype=np.float64, scale=1.5):
    return (np.random.default_rng(seed).standard_normal(shape) *
            scale).astype(dtype)


# ---- the ops ---------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("batch,units", [(3, 5), (1, 1), (0, 4), (70, 130)])
def test_lstm_gates_matches_numpy(dtype, tol, batch, units):
    z, cp = _rand((batch, 4 * units), 0, dtype), _rand((batch, units), 1,
                                                         dtype)
    got = lstm_gates(z, cp)
    want = ref_gates(z.astype(np.float64), cp.astype(np.float64))
    for g, w in zip(got, want):
        assert g.dtype == tf.as_dtype(dtype)
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)


def _numeric_vjp(f, args, cot, eps=1e-6):
    """d sum(cot * f(args)) / d args by central differences."""
    grads = []
    for k, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in args]
            lo = [x.copy() for x in args]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            fh, fl = f(*hi), f(*lo)
            g[idx] = sum(np.sum(c * (p - q)) for c, p, q in
                         zip(cot, fh, fl)) / (2 * eps)
        grads.append(g)
    return grads


def test_lstm_gates_gradient_matches_numeric_differences():
    b, u = 2, 3
    z, cp = _rand((b, 4 * u), 2), _rand((b, u), 3)
    dh, dc, dg = _rand((b, u), 4), _rand((b, u), 5), _rand((b, 4 * u), 6)
    zt, ct = tf.constant(z), tf.constant(cp)
    with tf.GradientTape() as tape:
        tape.watch([zt, ct])
        h, c, g = lstm_gates(zt, ct)
        loss = (tf.reduce_sum(h * dh) + tf.reduce_sum(c * dc) +
                tf.reduce_sum(g * dg))
    got = tape.gradient(loss, [zt, ct])
    want = _numeric_vjp(lambda a, b_: ref_gates(a, b_), [z, cp],
                        [dh, dc, dg])
    for g_, w in zip(got, want):
        np.testing.assert_allclose(g_.numpy(), w, rtol=1e-7, atol=1e-8)
    # Without the gates' gradient: LSTMGatesGrad alone.
    dz, dcp = lstm_gates_grad(dh, dc, g.numpy(), cp, c.numpy())
    want = _numeric_vjp(lambda a, b_: ref_gates(a, b_)[:2], [z, cp],
                        [dh, dc])
    np.testing.assert_allclose(dz.numpy(), want[0], rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(dcp.numpy(), want[1], rtol=1e-7, atol=1e-8)


def test_lstm_gates_grad_second_order_matches_numeric_differences():
    b, u = 2, 2
    z, cp = _rand((b, 4 * u), 7), _rand((b, u), 8)
    dh, dc = _rand((b, u), 9), _rand((b, u), 10)
    _, c, g = (t.numpy() for t in lstm_gates(z, cp))
    ins = [dh, dc, g, cp, c]
    cot = [_rand((b, 4 * u), 11), _rand((b, u), 12)]
    ts = [tf.constant(a) for a in ins]
    with tf.GradientTape() as tape:
        tape.watch(ts)
        dz, dcp = lstm_gates_grad(*ts)
        loss = tf.reduce_sum(dz * cot[0]) + tf.reduce_sum(dcp * cot[1])
    got = tape.gradient(loss, ts)
    want = _numeric_vjp(lambda *a: [t.numpy() for t in lstm_gates_grad(*a)],
                        ins, cot)
    for k, (g_, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g_.numpy(), w, rtol=1e-6, atol=1e-8,
                                   err_msg=f"input {k}")


def test_lstm_gates_is_differentiable_twice_through_the_tape():
    z, cp = tf.constant(_rand((2, 8), 13)), tf.constant(_rand((2, 2), 14))
    with tf.GradientTape() as outer:
        outer.watch(z)
        with tf.GradientTape() as inner:
            inner.watch(z)
            h, _, _ = lstm_gates(z, cp)
            y = tf.reduce_sum(h * h)
        dz = inner.gradient(y, z)
        s = tf.reduce_sum(dz * dz)
    got = outer.gradient(s, z).numpy()

    def s_of(zv):
        def y_of(a):
            h = ref_gates(a, cp.numpy())[0]
            return [np.sum(h * h)]
        (d,) = _numeric_vjp(lambda a: y_of(a), [zv], [np.ones(())],
                            eps=1e-5)
        return [np.sum(d * d)]
    (want,) = _numeric_vjp(s_of, [z.numpy()], [np.ones(())], eps=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("args,words", [
    (lambda: (np.zeros((2, 8), np.int32), np.zeros((2, 2), np.int32)),
     ["float32 or float64", "z [2,8] int32", "c_prev [2,2] int32"]),
    (lambda: (np.zeros((2, 8), np.float16), np.zeros((2, 2), np.float16)),
     ["float32 or float64", "float16"]),
    (lambda: (np.zeros((2, 8), np.float32), np.zeros((2, 2), np.float64)),
     ["one dtype", "z [2,8] float32", "c_prev [2,2] float64"]),
    (lambda: (np.zeros((2, 8), np.float32), np.zeros((2, 3), np.float32)),
     ["widths disagree", "c_prev [2,3]"]),
    (lambda: (np.zeros((2, 7), np.float32), np.zeros((2, 2), np.float32)),
     ["4 * units", "z [2,7]"]),
    (lambda: (np.zeros((3, 8), np.float32), np.zeros((2, 2), np.float32)),
     ["batch sizes", "z [3,8]", "c_prev [2,2]"]),
    (lambda: (np.zeros((8,), np.float32), np.zeros((2, 2), np.float32)),
     ["matrix", "z [8]"]),
])
def test_bad_arguments_raise_naming_op_shapes_and_dtypes(args, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        lstm_gates(*args())
    msg = str(e.value)
    assert msg.startswith("LSTMGates:"), msg
    for w in words:
        assert w in msg, (w, msg)


def test_bad_gradient_arguments_raise():
    f = np.zeros((2, 2), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"LSTMGatesGrad: .*gates \[2,6\] float32"):
        lstm_gates_grad(f, f, np.zeros((2, 6), np.float32), f, f)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"LSTMGatesGrad: .*one dtype"):
        lstm_gates_grad(f, f.astype(np.float64), np.zeros((2, 8), np.float32),
                        f, f)


def test_unknown_dims_trace():
    spec = [tf.TensorSpec([None, None], tf.float32)] * 2
    fn = tf.function(lambda z, c: lstm_gates(z, c), input_signature=spec)
    cf = fn.get_concrete_function()
    assert [tuple(t.shape) for t in cf.outputs] == [(None, None)] * 3
    z, c = _rand((2, 12), 15, np.float32), _rand((2, 3), 16, np.float32)
    for g, w in zip(fn(z, c), ref_gates(z, c)):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-6, atol=2e-6)


# ---- the Keras layers against TF 2.21 --------------------------------------

@pytest.fixture(scope="module")
def ref():
    with open(DATA) as f:
        return json.load(f)


CASES = {"lstm_seq_state": ("lstm", dict(return_sequences=True,
                                         return_state=True), False),
         "lstm_backwards": ("lstm", dict(return_sequences=True,
                                         go_backwards=True), False),
         "lstm_last": ("lstm", dict(), False),
         "lstm_masked": ("lstm", dict(return_sequences=True,
                                      return_state=True), True),
         "gru_seq_state": ("gru", dict(return_sequences=True,
                                       return_state=True), False)}


def _layer(ref, kind, kw):
    x = np.asarray(ref["x"], np.float32)
    layer = (L.LSTM if kind == "lstm" else L.GRU)(6, **kw)
    layer(x)
    layer.set_weights([np.asarray(w, np.float32)
                       for w in ref["weights"][kind]])
    return layer, x


def _loss_and_grads(layer, x, mask):
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = layer(xv, mask=None if mask is None else tf.constant(mask))
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        loss = tf.add_n([tf.reduce_sum(tf.sin(v) * (k + 1))
                         for k, v in enumerate(ys)])
    return ys, tape.gradient(loss, [xv] + layer.trainable_weights)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("traced", [False, True])
def test_layers_match_tf_outputs_and_gradients(ref, case, traced):
    kind, kw, masked = CASES[case]
    layer, x = _layer(ref, kind, kw)
    mask = np.asarray(ref["mask"], bool) if masked else None
    run = _loss_and_grads
    if traced:
        run = tf.function(lambda x: _loss_and_grads(layer, x, mask))
        ys, grads = run(tf.constant(x))
    else:
        ys, grads = run(layer, x, mask)
    want = ref[case]
    assert len(ys) == len(want["outputs"])
    for g, w in zip(ys, want["outputs"]):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-5, atol=2e-6)
    for g, w in zip(grads, want["grads"]):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-4, atol=2e-5)


def _spy(monkeypatch):
    calls = []
    real = rnn_mod.lstm_sequence

    def spy(*a):
        calls.append(a)
        return real(*a)
    monkeypatch.setattr(rnn_mod, "lstm_sequence", spy)
    return calls


def _x(n=4, t=6, d=3, seed=1, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=(n, t, d)).astype(dtype)


@pytest.mark.parametrize("kw", [dict(), dict(return_sequences=True),
                                dict(return_state=True, go_backwards=True),
                                dict(dtype="float64")])
def test_traced_gradient_equals_eager_through_the_fused_loop(monkeypatch,
                                                             kw):
    calls = _spy(monkeypatch)
    layer = L.LSTM(5, **kw)
    dt = np.float64 if kw.get("dtype") else np.float32
    x = _x(dtype=dt)
    layer(x)
    h0 = tf.constant(_x(4, 1, 5, seed=2, dtype=dt)[:, 0])
    c0 = tf.constant(_x(4, 1, 5, seed=3, dtype=dt)[:, 0])

    def run(x, h0, c0):
        with tf.GradientTape() as tape:
            tape.watch([x, h0, c0])
            y = layer(x, initial_state=[h0, c0])
            ys = list(y) if isinstance(y, (list, tuple)) else [y]
            loss = tf.add_n([tf.reduce_sum(tf.cos(v)) for v in ys])
        return ys, tape.gradient(loss, [x, h0, c0] + layer.trainable_weights)

    xe = tf.constant(x)
    want = run(xe, h0, c0)
    assert not calls                      # eager: the Python loop
    got = tf.function(run)(xe, h0, c0)
    assert len(calls) == 1
    tol = 1e-12 if dt == np.float64 else 2e-6
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_unknown_batch_size_takes_the_fused_loop(monkeypatch):
    calls = _spy(monkeypatch)
    layer = L.LSTM(3, return_sequences=True)
    x = _x()
    layer(x)

    @tf.function(input_signature=[tf.TensorSpec([None, 6, 3], tf.float32)])
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.sin(layer(x)))
        return tape.gradient(loss, [x] + layer.trainable_weights)

    got = run(x)
    assert len(calls) == 1
    xe = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xe)
        loss = tf.reduce_sum(tf.sin(layer(xe)))
    want = tape.gradient(loss, [xe] + layer.trainable_weights)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-6,
                                   atol=2e-6)


@pytest.mark.parametrize("kw,fused", [
    (dict(), True),
    (dict(activation="relu"), False),
    (dict(recurrent_activation="hard_sigmoid"), False),
    (dict(recurrent_dropout=0.5), False),
])
def test_which_loop_a_traced_train_step_takes(monkeypatch, kw, fused):
    calls = _spy(monkeypatch)
    layer = L.LSTM(4, **kw)
    x = _x()
    layer(x)

    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, training=True))
        return tape.gradient(loss, layer.trainable_weights)

    grads = run(tf.constant(x))
    assert all(np.isfinite(g.numpy()).all() for g in grads)
    assert len(calls) == (1 if fused else 0)


def _traced_train_step(xs):
    """An LSTM(8) train step as a tf.function, traced and run once on xs:
    (the function, xs as a tensor)."""
    layer = L.LSTM(8)
    x = tf.constant(xs)
    layer(x)

    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x))
        return tape.gradient(loss, layer.trainable_weights)
    run(x)
    return run, x


def test_train_step_graph_runs_each_direction_in_one_op():
    # No While: one _LSTMSequence forward, one _LSTMSequenceGrad
    # backward (the recurrent kernel's gradient inside it), no per-step
    # gate math anywhere; outside, the input projection and its weight
    # gradient, one GEMM each over all steps.
    run, x = _traced_train_step(_x(t=7))
    g = run.get_concrete_function(x).optimized_graph
    types = [op.type for op in g.get_operations()]
    assert "While" not in types, types
    assert types.count("_LSTMSequence") == 1, types
    assert types.count("_LSTMSequenceGrad") == 1, types
    assert "LSTMGates" not in types and "LSTMGatesGrad" not in types, types
    gemm = ("MatMul", "BatchMatMulV2", "_FusedMatMul")
    assert sum(t in gemm for t in types) == 2, types
    # The stacks hold the states entering each step (n rows), so nothing
    # concatenates or slices them for dR.
    assert "ConcatV2" not in types and "StridedSlice" not in types, types


class _Counts(__import__("ctypes").Structure):
    _fields_ = [(n, __import__("ctypes").c_int64)
                for n in ("steps", "fresh", "iterations")]


def _exec_counts():
    import ctypes
    c = _Counts()
    ctypes.CDLL(tf._C.__file__).tfm_exec_counters(ctypes.byref(c))
    return np.array([c.fresh, c.iterations])


def _train_step_counts(t):
    run, x = _traced_train_step(_x(n=5, t=t))
    before = _exec_counts()
    run(x)
    return _exec_counts() - before, run, x


def test_train_step_runs_no_loop_iterations_and_allocates_per_step_only():
    # Counted on the executor, independent of the machine: no loop
    # iterations, and the tensors a train step allocates outside its
    # plan's arena do not grow with the number of time steps.
    (f1, it1), _, _ = _train_step_counts(5)
    (f2, it2), _, _ = _train_step_counts(13)
    assert it1 == it2 == 0, (it1, it2)
    assert f1 == f2, (f1, f2)


def test_inference_in_a_function_keeps_no_stacks(monkeypatch):
    calls = _spy(monkeypatch)
    layer = L.LSTM(4)
    x = tf.constant(_x())
    layer(x)
    y = tf.function(lambda x: layer(x))(x)
    assert not calls
    np.testing.assert_allclose(y.numpy(), layer(x).numpy(), rtol=1e-6,
                               atol=1e-6)


def test_fit_trains_through_the_fused_loop(monkeypatch):
    calls = _spy(monkeypatch)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8, 2)).astype(np.float32)
    y = (x[:, 0, 0] > 0).astype(np.int32)     # needs memory of step 0
    model = tf.keras.Sequential([tf.keras.Input((8, 2)), L.LSTM(16),
                                 L.Dense(2)])
    model.compile(tf.keras.optimizers.Adam(0.02),
                  tf.keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True), metrics=["accuracy"])
    hist = model.fit(x, y, epochs=30, batch_size=32, verbose=0)
    assert calls
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]


def test_bidirectional_and_stateful_lstm_traced_gradients_equal_eager(
        monkeypatch):
    calls = _spy(monkeypatch)
    x = tf.constant(_x())
    bidi = L.Bidirectional(L.LSTM(5, return_sequences=True))
    stateful = L.LSTM(5, stateful=True)
    for layer in (bidi, stateful):
        layer(x)

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = (tf.reduce_sum(tf.sin(bidi(x))) +
                    tf.reduce_sum(tf.sin(stateful(x))))
        return tape.gradient(loss, [x] + bidi.trainable_weights +
                             stateful.trainable_weights)

    stateful.reset_states()
    want = run(x) + run(x)              # the second call starts from state
    stateful.reset_states()
    fn = tf.function(run)
    got = fn(x) + fn(x)
    assert len(calls) == 3              # forward, backward, stateful
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-6,
                                   atol=2e-6)
