"""Recurrent layers (tfmini/keras/layers/rnn.py) against NumPy references of
Keras 3's formulas on fixed weights: SimpleRNN, LSTM, GRU (both
reset_after), their cells, RNN(cell), Bidirectional; masks, gradients,
eager == traced, the traced loop as one While node, config and weight
round trips, stateful layers and a model that trains."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import keras
from tfmini.function import FuncGraph

L = keras.layers


# ---- NumPy references (Keras 3's math) ---------------------------------

def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _step(kind, xt, states, K, R, b):
    u = R.shape[0]
    h = states[0]
    if kind == "simple":
        h = np.tanh(xt @ K + b + h @ R)
        return h, [h]
    if kind == "lstm":
        c = states[1]
        z = xt @ K + h @ R + b
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        return h, [h, c]
    if kind == "gru":                       # reset_after=True
        mx = xt @ K + b[0]
        mi = h @ R + b[1]
        z = _sig(mx[:, :u] + mi[:, :u])
        r = _sig(mx[:, u:2 * u] + mi[:, u:2 * u])
        hh = np.tanh(mx[:, 2 * u:] + r * mi[:, 2 * u:])
    else:                                   # gru, reset_after=False
        mx = xt @ K + b
        z = _sig(mx[:, :u] + h @ R[:, :u])
        r = _sig(mx[:, u:2 * u] + h @ R[:, u:2 * u])
        hh = np.tanh(mx[:, 2 * u:] + (r * h) @ R[:, 2 * u:])
    h = z * h + (1 - z) * hh
    return h, [h]


def ref_rnn(kind, x, weights, mask=None, go_backwards=False, init=None,
            zero_output=False):
    """(last output, all outputs (B, T, U) in processing order, states)."""
    K, R, b = weights
    n, t_len = x.shape[:2]
    u = R.shape[0]
    nstates = 2 if kind == "lstm" else 1
    states = [np.zeros((n, u))] * nstates if init is None else list(init)
    order = list(range(t_len))[::-1] if go_backwards else range(t_len)
    prev, outs = np.zeros((n, u)), []
    for t in order:
        out, new = _step(kind, x[:, t], states, K, R, b)
        if mask is not None:
            m = mask[:, t][:, None]
            new = [np.where(m, a, o) for a, o in zip(new, states)]
            out = np.where(m, out, 0.0 if zero_output else prev)
        states, prev = new, out
        outs.append(out)
    return outs[-1], np.stack(outs, 1), states


def make(kind, units=4, **kw):
    if kind == "simple":
        return L.SimpleRNN(units, **kw)
    if kind == "lstm":
        return L.LSTM(units, **kw)
    return L.GRU(units, reset_after=(kind == "gru"), **kw)


def fixed_weights(layer, seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.normal(0, 0.5, tuple(w.shape)) for w in layer.weights]
    layer.set_weights(ws)
    return ws


KINDS = ["simple", "lstm", "gru", "gru_v1"]


def _x(n=3, t=5, d=3, seed=1, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=(n, t, d)).astype(dtype)


def _list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _close(a, b, tol=2e-5):
    for p, q in zip(_list(a), _list(b)):
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=tol,
                                   atol=tol)


# ---- values --------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("opt", ["last", "sequences", "backwards", "state",
                                 "mask"])
def test_values_match_the_keras_formulas_eager_and_traced(kind, opt):
    x = _x()
    kw = {}
    if opt in ("sequences", "mask"):
        kw["return_sequences"] = True
    if opt == "backwards":
        kw.update(go_backwards=True, return_sequences=True)
    if opt == "state":
        kw["return_state"] = True
    layer = make(kind, **kw)
    layer(x)
    ws = fixed_weights(layer)
    mask = None
    call_kw = {}
    if opt == "mask":
        mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0], [0, 1, 1, 0, 0]],
                        bool)
        call_kw["mask"] = tf.constant(mask)
    init = None
    if opt == "state":
        n = 2 if kind == "lstm" else 1
        init = [np.random.default_rng(5 + i).normal(size=(3, 4)).astype(
            np.float32) for i in range(n)]
        call_kw["initial_state"] = [tf.constant(s) for s in init]
    last, seq, states = ref_rnn(kind, x.astype(np.float64), ws, mask=mask,
                                go_backwards=kw.get("go_backwards", False),
                                init=init)
    if opt == "state":
        want = [last] + states
    elif kw.get("return_sequences"):
        want = seq
    else:
        want = last
    got = layer(tf.constant(x), **call_kw)
    _close([t.numpy() for t in _list(got)], _list(want))
    traced = tf.function(lambda a: layer(a, **call_kw))(tf.constant(x))
    _close([t.numpy() for t in _list(traced)],
           [t.numpy() for t in _list(got)], tol=1e-6)


def test_cells_step_once_like_the_reference():
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    for kind, cell in (("simple", L.SimpleRNNCell(4)), ("lstm", L.LSTMCell(4)),
                       ("gru", L.GRUCell(4)),
                       ("gru_v1", L.GRUCell(4, reset_after=False))):
        n = 2 if kind == "lstm" else 1
        states = [np.full((2, 4), 0.1, np.float32)] * n
        cell(x, [tf.constant(s) for s in states])
        ws = fixed_weights(cell)
        out, new = cell(x, [tf.constant(s) for s in states])
        want_out, want_new = _step(kind, x, states, *ws)
        _close([out] + list(new), [want_out] + want_new)


def test_rnn_of_a_cell_equals_the_layer_and_takes_a_custom_cell():
    x = _x()
    lstm = L.LSTM(4, return_sequences=True)
    rnn = L.RNN(L.LSTMCell(4), return_sequences=True)
    lstm(x), rnn(x)
    rnn.set_weights(lstm.get_weights())
    _close(rnn(x).numpy(), lstm(x).numpy(), tol=1e-6)

    class Accumulate(L.Layer):
        """A user cell: state += inputs @ w (call() goes through __call__)."""
        state_size = 3
        output_size = 3

        def build(self, input_shape):
            self.w = self.add_weight("w", (input_shape[-1], 3),
                                     initializer="ones")

        def call(self, inputs, states):
            h = states[0] + tf.matmul(inputs, self.w)
            return h, [h]

    layer = L.RNN(Accumulate(), return_sequences=True)
    want = np.cumsum(x.sum(-1, keepdims=True).repeat(3, -1), axis=1)
    _close(layer(x).numpy(), want, tol=1e-5)
    _close(tf.function(lambda a: layer(a))(tf.constant(x)).numpy(), want,
           tol=1e-5)


# ---- weights ---------------------------------------------------------------

def test_weight_names_shapes_and_initializers_follow_keras():
    x = _x(d=3)
    lstm, gru, simple = L.LSTM(4), L.GRU(4), L.SimpleRNN(4)
    gru1 = L.GRU(4, reset_after=False)
    for layer in (lstm, gru, gru1, simple):
        layer(x)
    assert [w.path for w in lstm.weights] == [
        f"{lstm.name}/lstm_cell/kernel",
        f"{lstm.name}/lstm_cell/recurrent_kernel",
        f"{lstm.name}/lstm_cell/bias"]
    assert [tuple(w.shape) for w in lstm.weights] == [(3, 16), (4, 16),
                                                      (16,)]
    assert [tuple(w.shape) for w in gru.weights] == [(3, 12), (4, 12),
                                                     (2, 12)]
    assert tuple(gru1.weights[2].shape) == (12,)
    assert simple.weights[0].path.endswith("simple_rnn_cell/kernel")
    # unit_forget_bias: the forget gate's bias starts at one.
    np.testing.assert_array_equal(
        lstm.cell.bias.numpy(), np.r_[np.zeros(4), np.ones(4), np.zeros(8)])
    # orthogonal recurrent kernel (each (4, 4) gate block's columns).
    r = lstm.cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(r @ r.T, np.eye(4), atol=1e-5)


def test_orthogonal_initializer():
    init = keras.initializers.get("orthogonal")
    for shape in ((5, 3), (3, 5), (2, 3, 4)):
        q = init(shape).numpy().reshape(-1, shape[-1])
        small = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
        np.testing.assert_allclose(small, np.eye(min(q.shape)), atol=1e-5)
    g = keras.initializers.Orthogonal(gain=2.0, seed=3)
    q = g((4, 4)).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(4), atol=1e-4)
    with pytest.raises(ValueError, match="two-dimensional"):
        init((4,))
    round_trip = keras.initializers.get(keras.initializers.serialize(g))
    assert (round_trip.gain, round_trip.seed) == (2.0, 3)


# ---- gradients -----------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_finite_differences(kind):
    x = _x(n=2, t=3, d=2, dtype=np.float64)
    layer = make(kind, units=3, return_sequences=True, dtype="float64")
    layer(x)
    ws = fixed_weights(layer, seed=2)
    mask = np.array([[1, 1, 1], [1, 0, 1]], bool)
    coef = np.random.default_rng(9).normal(size=(2, 3, 3))

    def loss_np(ws_):
        _, seq, _ = ref_rnn(kind, x, ws_, mask=mask)
        return float((seq * coef).sum())

    def grads(fn):
        with tf.GradientTape() as tape:
            y = fn(tf.constant(x))
            loss = tf.reduce_sum(y * tf.constant(coef))
        return [g.numpy() for g in tape.gradient(loss, layer.weights)]

    call = lambda a: layer(a, mask=tf.constant(mask))  # noqa: E731
    eager = grads(call)
    traced = tf.function(lambda a: _grad_pair(layer, call, a, coef))(
        tf.constant(x))
    for w_i, g in enumerate(eager):
        num = np.zeros_like(ws[w_i])
        for idx in np.ndindex(ws[w_i].shape):
            for sgn in (1, -1):
                moved = [w.copy() for w in ws]
                moved[w_i][idx] += sgn * 1e-6
                num[idx] += sgn * loss_np(moved) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(traced[w_i].numpy(), g, rtol=1e-9,
                                   atol=1e-12)


def _grad_pair(layer, call, a, coef):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(call(a) * tf.constant(coef))
    return tape.gradient(loss, layer.weights)


# ---- the traced loop --------------------------------------------------------

def _types(graph):
    return [op.type for op in graph.get_operations()]


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple"])
def test_traced_loop_is_one_while_with_the_gates_fused(kind):
    layer = make(kind, return_sequences=True)
    x = tf.constant(_x(t=7))
    fn = tf.function(lambda a: layer(a), autograph=False)
    fn(x)
    cf = fn.get_concrete_function(x)
    assert _types(cf.graph).count("While") == 1
    g = cf.optimized_graph
    (loop,) = [op for op in g.get_operations() if op.type == "While"]
    outside = _types(g)
    # The input projection of all steps: one GEMM before the loop.
    assert outside.count("BatchMatMulV2") + outside.count("MatMul") == 1
    body = max((FuncGraph(s, [], []) for s in g._graph.subgraphs(loop.name)),
               key=lambda b: len(_types(b)))
    inside = _types(body)
    # One recurrent GEMM per step; the gate math in one fused node (the
    # SimpleRNN's tanh rides on the GEMM's epilogue; the LSTM's is its
    # own op, LSTMGates).
    assert sum(t in ("MatMul", "BatchMatMulV2", "_FusedMatMul")
               for t in inside) == 1, inside
    assert inside.count("_FusedElementwise") == (1 if kind == "gru"
                                                 else 0), inside
    assert inside.count("LSTMGates") == (kind == "lstm"), inside


def test_unknown_time_steps_when_traced_raise_clearly():
    layer = L.LSTM(2)
    fn = tf.function(lambda a: layer(a),
                     input_signature=[tf.TensorSpec([2, None, 3])])
    with pytest.raises(NotImplementedError, match="known number of time"):
        fn(tf.constant(_x(n=2)))


def test_unknown_batch_size_traces():
    layer = L.GRU(3, return_sequences=True)
    x = _x(n=2)
    mask = tf.constant([[True] * 5, [True, True, False, True, False]])
    fn = tf.function(lambda a: layer(a, mask=mask),
                     input_signature=[tf.TensorSpec([None, 5, 3])])
    _close(fn(tf.constant(x)).numpy(), layer(x, mask=mask).numpy(),
           tol=1e-6)
    assert _types(fn.get_concrete_function().graph).count("While") == 1

    # The core differentiates a traced loop only over fixed shapes: said
    # plainly rather than computed wrongly.
    def f(a):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(a))
        return tape.gradient(loss, layer.weights)
    with pytest.raises(NotImplementedError, match="shape"):
        tf.function(f, input_signature=[tf.TensorSpec([None, 5, 3])])(
            tf.constant(x))


# ---- masks -----------------------------------------------------------------

def test_embedding_mask_zero_flows_into_the_rnn():
    ids = np.array([[3, 1, 2, 0, 0], [4, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    emb = L.Embedding(6, 3, mask_zero=True)
    lstm = L.LSTM(4, return_sequences=True)
    model = keras.Sequential([emb, lstm])
    out = model(ids).numpy()
    vecs = emb(ids).numpy()
    ws = lstm.get_weights()
    last, seq, _ = ref_rnn("lstm", vecs.astype(np.float64), ws,
                           mask=ids != 0)
    _close(out, seq)
    # Padded steps repeat the last real output; the final output is that
    # of the real sequence alone.
    final = L.LSTM(4)
    final(vecs)
    final.set_weights(ws)
    for i, n in enumerate((ids != 0).sum(1)):
        _close(final(vecs[i:i + 1, :n]).numpy()[0], out[i, -1])
    traced = tf.function(lambda a: model(a))(tf.constant(ids))
    _close(traced.numpy(), out, tol=1e-6)


def test_functional_model_with_a_mask_trains():
    ids = np.array([[3, 1, 2, 0, 0], [4, 0, 0, 0, 0], [1, 2, 3, 4, 5]] * 4)
    y = np.random.default_rng(1).normal(size=(12, 2)).astype(np.float32)
    inp = keras.Input((5,), dtype="int32")
    emb = L.Embedding(6, 3, mask_zero=True)
    rnn = L.GRU(4)
    model = keras.Model(inp, L.Dense(2)(rnn(emb(inp))))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    losses = model.fit(ids, y, epochs=10, batch_size=4,
                       verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    # After training, padding still changes nothing.
    _close(rnn(emb(ids[1:2, :1])).numpy(), rnn(emb(ids[1:2])).numpy())


def test_masking_layer_and_mask_through_return_sequences():
    x = _x()
    x[1, 3:] = 0.0
    model = keras.Sequential([L.Masking(0.0),
                              L.SimpleRNN(4, return_sequences=True),
                              L.GRU(2)])
    out = model(x).numpy()
    trimmed = model(x[1:2, :3]).numpy()
    _close(out[1], trimmed[0])
    m = L.Masking(0.0)
    y = m(x)
    from tfmini.keras.layers import masking
    np.testing.assert_array_equal(masking.get_mask(y).numpy(),
                                  np.abs(x).sum(-1) != 0)
    assert L.Masking.from_config(m.get_config()).mask_value == 0.0


def test_compute_mask_of_rnn_layers():
    m = tf.constant([[True, False]])
    assert L.LSTM(2).compute_mask(None, m) is None
    assert L.LSTM(2, return_sequences=True).compute_mask(None, m) is m
    assert L.GRU(2, return_state=True).compute_mask(None, m) == [None, None]


# ---- Bidirectional ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["concat", "sum", "ave", "mul", None])
def test_bidirectional_merges_forward_and_reversed_backward(mode):
    x = _x()
    layer = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode=mode)
    layer(x)
    ws = fixed_weights(layer)
    _, fw, _ = ref_rnn("lstm", x.astype(np.float64), ws[:3])
    _, bw, _ = ref_rnn("lstm", x.astype(np.float64), ws[3:],
                       go_backwards=True)
    bw = bw[:, ::-1]
    want = {"concat": lambda: np.concatenate([fw, bw], -1),
            "sum": lambda: fw + bw, "ave": lambda: (fw + bw) / 2,
            "mul": lambda: fw * bw, None: lambda: [fw, bw]}[mode]()
    _close([t.numpy() for t in _list(layer(x))], _list(want))
    traced = tf.function(lambda a: layer(a))(tf.constant(x))
    _close([t.numpy() for t in _list(traced)], _list(want))


def test_bidirectional_names_states_masks_and_config():
    x = _x()
    inner = L.GRU(3, return_state=True, name="enc")
    layer = L.Bidirectional(inner, name="bi")
    out, fh, bh = layer(x)
    assert [w.path for w in layer.weights][::3] == [
        "bi/forward_enc/gru_cell/kernel", "bi/backward_enc/gru_cell/kernel"]
    ws = layer.get_weights()
    f_last, _, _ = ref_rnn("gru", x.astype(np.float64), ws[:3])
    b_last, _, _ = ref_rnn("gru", x.astype(np.float64), ws[3:],
                           go_backwards=True)
    _close([out.numpy(), fh.numpy(), bh.numpy()],
           [np.concatenate([f_last, b_last], -1), f_last, b_last])
    # A mask: the backward layer starts at each sequence's last real
    # step; padded outputs are zeros (zero_output_for_mask).
    seq = L.Bidirectional(L.SimpleRNN(2, return_sequences=True))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]],
                    bool)
    y = seq(x, mask=tf.constant(mask)).numpy()
    assert np.all(y[~mask] == 0)
    short = seq(x[:1, :3]).numpy()
    _close(y[0, :3], short[0])
    clone = L.Bidirectional.from_config(layer.get_config())
    clone(x)
    clone.set_weights(ws)
    _close([t.numpy() for t in clone(x)], [out.numpy(), fh.numpy(),
                                           bh.numpy()])
    with pytest.raises(ValueError, match="merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    given = L.Bidirectional(L.GRU(3, return_state=True), weights=ws)
    _close([t.numpy() for t in given(x)], [out.numpy(), fh.numpy(),
                                           bh.numpy()])


# ---- config, saving, stateful, dropout, errors -----------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trip(kind):
    layer = make(kind, return_sequences=True, go_backwards=True,
                 dropout=0.1, recurrent_dropout=0.2, name=f"rt_{kind}")
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    assert config["units"] == 4 and config["go_backwards"] is True
    assert config["recurrent_initializer"]["class_name"] == "Orthogonal"
    x = _x()
    layer(x), clone(x)
    clone.set_weights(layer.get_weights())
    _close(clone(x).numpy(), layer(x).numpy(), tol=1e-6)
    rnn = L.RNN(L.GRUCell(3), return_state=True)
    again = L.RNN.from_config(rnn.get_config())
    assert isinstance(again.cell, L.GRUCell) and again.return_state


def test_save_and_load_weights(tmp_path):
    def build():
        lstm = L.LSTM(4, return_sequences=True)
        return keras.Sequential([keras.Input((5, 3)), L.Bidirectional(lstm),
                                 L.GRU(3), L.Dense(2)])
    x = _x()
    a = build()
    path = str(tmp_path / "rnn.weights.h5")
    a.save_weights(path)
    b = build()
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    b.load_weights(path)
    _close(b(x).numpy(), a(x).numpy(), tol=1e-6)


def test_stateful_carries_state_between_calls():
    x = _x(n=2, t=6)
    full = L.LSTM(3)
    full(x)
    st = L.LSTM(3, stateful=True, batch_input_shape=(2, 3, 3))
    st(x[:, :3])
    st.set_weights(full.get_weights())
    st.reset_states()
    st(x[:, :3])
    _close(st(x[:, 3:]).numpy(), full(x).numpy())
    st.reset_states()
    _close(st(x[:, :3]).numpy(), full(x[:, :3]).numpy())
    assert len(st.states) == 2 and st.weights == st.trainable_weights
    with pytest.raises(ValueError, match="batch size must be static"):
        keras.Sequential([keras.Input((3, 3)), L.GRU(2, stateful=True)])


def test_dropout_only_while_training():
    x = _x()
    layer = L.GRU(4, dropout=0.5, recurrent_dropout=0.5, seed=1)
    a, b = layer(x).numpy(), layer(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(layer(x, training=True).numpy(), a)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="expected ndim=3"):
        L.LSTM(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="units"):
        L.GRU(0)
    with pytest.raises(ValueError, match="initial state"):
        L.LSTM(2)(_x(), initial_state=[tf.zeros([3, 2])])


def test_a_small_model_trains():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 2)).astype(np.float32)
    y = (x[:, :, 0].sum(1) > 0).astype(np.float32)[:, None]
    tf.random.set_seed(0)
    model = keras.Sequential([keras.Input((6, 2)), L.LSTM(8),
                              L.Dense(1, activation="sigmoid")])
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss="binary_crossentropy")
    hist = model.fit(x, y, epochs=8, batch_size=16, verbose=0)
    losses = hist.history["loss"]
    assert losses[-1] < 0.6 * losses[0], losses
