"""Cached tf.function calls replayed through CUDA graphs (Note [CUDA
graphs for cached calls] in csrc/graph/exec_cugraph.c) against the same
calls run step by step (TFMINI_CUDA_GRAPHS=0): train steps (an
embedding model's among them, whose scatter checks its indices), a bad
index in a replay, Shape/Size/Rank, functions the rule keeps off a
graph, changing input shapes, variables changed between calls. The counters prove that replays happened. Every test
skips without a GPU (conftest.py); the bodies ran on the CPU with
DEVICE = "/CPU:0", where nothing is captured, to check them."""
import ctypes
import os

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

DEVICE = os.environ.get("TFMINI_TEST_CUGRAPH_DEVICE", "/GPU:0")
ON_GPU = "GPU" in DEVICE
_lib = ctypes.CDLL(_C.__file__)


def counters():
    c = (ctypes.c_int64 * 6)()
    _lib.tfm_cugraph_counters(c)
    return dict(zip(["captures", "replays", "fallbacks", "failures",
                     "eligible", "ineligible"], c))


def delta(before):
    now = counters()
    return {k: now[k] - before[k] for k in now}


def graphs(monkeypatch, on):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "1" if on else "0")


def mlp(seed=0):
    rng = np.random.default_rng(seed)
    with tf.device(DEVICE):
        return [tf.Variable(rng.standard_normal((8, 32)).astype(np.float32)
                            * 0.3),
                tf.Variable(np.zeros(32, np.float32)),
                tf.Variable(rng.standard_normal((32, 1)).astype(np.float32)
                            * 0.3)]


def data(n=64, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    return x, (x[:, :1] * 2.0 - x[:, 1:2]).astype(np.float32)


def train(monkeypatch, on, optimizer=None, steps=50):
    graphs(monkeypatch, on)
    ws = mlp()
    with tf.device(DEVICE):
        opt = optimizer() if optimizer else None

    @tf.function
    def step(x, y):
        with tf.device(DEVICE):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(x, ws[0]) + ws[1])
                loss = tf.reduce_mean(tf.square(tf.matmul(h, ws[2]) - y))
            gs = tape.gradient(loss, ws)
            if opt is None:
                for v, g in zip(ws, gs):
                    v.assign_sub(0.05 * g)
            else:
                opt.apply_gradients(zip(gs, ws))
        return loss

    xv, yv = data()
    before = counters()
    with tf.device(DEVICE):
        x, y = tf.constant(xv), tf.constant(yv)
    losses = [float(step(x, y)) for _ in range(steps)]
    return losses, [w.numpy() for w in ws], delta(before)


def test_mlp_train_step_replays_and_matches(monkeypatch, capfd):
    lg, wg, dg = train(monkeypatch, True)
    lp, wp, dp = train(monkeypatch, False)
    err = capfd.readouterr().err
    if ON_GPU:
        assert dg["captures"] == 1 and dg["failures"] == 0, (dg, err)
        assert dg["replays"] == 48, (dg, err)
    assert dp["captures"] == dp["replays"] == 0
    assert lg[-1] < lg[0]
    np.testing.assert_allclose(lg, lp, rtol=1e-6, atol=1e-6)
    for a, b in zip(wg, wp):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_optimizer_step_under_graphs(monkeypatch, capfd, name):
    make = lambda: getattr(tf.keras.optimizers, name)(0.01)  # noqa: E731
    lg, wg, dg = train(monkeypatch, True, make, steps=20)
    lp, wp, _ = train(monkeypatch, False, make, steps=20)
    err = capfd.readouterr().err
    if ON_GPU:
        assert dg["failures"] == 0 and dg["replays"] >= 18, (dg, err)
    np.testing.assert_allclose(lg, lp, rtol=1e-6, atol=1e-6)
    for a, b in zip(wg, wp):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["print", "mask"])
def test_ineligible_function_runs_right(monkeypatch, capfd, kind):
    graphs(monkeypatch, True)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            b = tf.exp(a) * 2.0
            if kind == "print":
                tf.print("sum", tf.reduce_sum(b))
                return b
            return tf.boolean_mask(b, a > 0)

    av = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    before = counters()
    with tf.device(DEVICE):
        a = tf.constant(av)
    for _ in range(4):
        y = f(a)
    d = delta(before)
    want = np.exp(av) * 2
    np.testing.assert_allclose(y.numpy(),
                               want if kind == "print" else want[av > 0],
                               rtol=1e-6)
    assert d["captures"] == d["replays"] == 0, d
    if ON_GPU:
        assert d["ineligible"] == 1, d
    if kind == "print":
        assert capfd.readouterr().err.count("sum ") == 4


def test_input_shapes_change_between_calls(monkeypatch, capfd):
    graphs(monkeypatch, True)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            return tf.reduce_sum(tf.tanh(a) * a, axis=1)

    rng = np.random.default_rng(2)
    before = counters()
    for n in (8, 8, 8, 16, 16, 16, 8, 8):
        av = rng.standard_normal((n, 5)).astype(np.float32)
        with tf.device(DEVICE):
            got = f(tf.constant(av)).numpy()
        np.testing.assert_allclose(got, (np.tanh(av) * av).sum(1),
                                   rtol=1e-5, atol=1e-6)
    d = delta(before)
    err = capfd.readouterr().err
    if ON_GPU:
        # One plan: 8 warm, capture, replay; 16 drop, capture, replay; 8
        # drop, capture. A plan per shape: two captures, four replays.
        assert d["captures"] >= 2 and d["replays"] >= 2, (d, err)
        assert d["failures"] == 0, (d, err)


def test_variable_changed_outside_between_calls(monkeypatch, capfd):
    graphs(monkeypatch, True)
    with tf.device(DEVICE):
        v = tf.Variable(np.ones((4,), np.float32))
        x = tf.constant(np.arange(4, dtype=np.float32))

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            v.assign_add(a)
            return v * 2.0

    before = counters()
    want = np.ones(4, np.float32)
    xs = np.arange(4, dtype=np.float32)
    for _ in range(3):
        want = want + xs
        np.testing.assert_allclose(f(x).numpy(), want * 2, rtol=1e-6)
    # In place: the same buffer, so the graph goes on replaying.
    v.assign(np.full(4, 10.0, np.float32))
    want = np.full(4, 10.0, np.float32) + xs
    np.testing.assert_allclose(f(x).numpy(), want * 2, rtol=1e-6)
    mid = delta(before)
    # A read held outside makes the next assign write a new buffer: the
    # replay must see it, not the old one.
    held = v.read_value()
    v.assign(np.full(4, -3.0, np.float32))
    want = np.full(4, -3.0, np.float32) + xs
    np.testing.assert_allclose(f(x).numpy(), want * 2, rtol=1e-6)
    np.testing.assert_allclose(held.numpy(), np.full(4, 10.0) + xs)
    for _ in range(3):
        want = want + xs
        np.testing.assert_allclose(f(x).numpy(), want * 2, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-6)
    d = delta(before)
    err = capfd.readouterr().err
    if ON_GPU:
        assert mid["captures"] == 1 and mid["replays"] == 2, (mid, err)
        assert d["fallbacks"] >= 1 and d["failures"] == 0, (d, err)
        assert d["captures"] == 2 and d["replays"] >= 3, (d, err)


def test_off_never_captures(monkeypatch):
    graphs(monkeypatch, False)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            return a * 3.0 + 1.0

    before = counters()
    with tf.device(DEVICE):
        a = tf.constant(np.ones(5, np.float32))
    for _ in range(5):
        np.testing.assert_allclose(f(a).numpy(), np.full(5, 4.0))
    d = delta(before)
    assert d["captures"] == d["replays"] == d["eligible"] == 0, d


def test_outputs_are_fresh_tensors(monkeypatch):
    """The next replay overwrites the graph's outputs: what a call
    returned must not change."""
    graphs(monkeypatch, True)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            return a + 1.0

    outs = []
    for k in range(5):
        with tf.device(DEVICE):
            outs.append(f(tf.constant(np.full(3, float(k), np.float32))))
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.numpy(), np.full(3, k + 1.0))


def embedding_train(monkeypatch, on, steps=30):
    """An embedding model's Adam step: Gather forward, TensorScatterAdd
    (Gather's gradient, whose kernel checks its indices) backward."""
    graphs(monkeypatch, on)
    rng = np.random.default_rng(3)
    with tf.device(DEVICE):
        emb = tf.Variable(rng.standard_normal((50, 8)).astype(np.float32))
        w = tf.Variable(rng.standard_normal((8, 1)).astype(np.float32))
        opt = tf.keras.optimizers.Adam(0.02)

    @tf.function
    def step(ids, y):
        with tf.device(DEVICE):
            with tf.GradientTape() as tape:
                h = tf.reduce_mean(tf.gather(emb, ids), axis=1)
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w) - y))
            gs = tape.gradient(loss, [emb, w])
            opt.apply_gradients(zip(gs, [emb, w]))
        return loss

    idv = rng.integers(0, 50, (32, 4)).astype(np.int32)
    yv = rng.standard_normal((32, 1)).astype(np.float32)
    before = counters()
    with tf.device(DEVICE):
        ids, y = tf.constant(idv), tf.constant(yv)
    losses = [float(step(ids, y)) for _ in range(steps)]
    return losses, [emb.numpy(), w.numpy()], delta(before)


def test_embedding_train_step_replays_and_matches(monkeypatch, capfd):
    lg, wg, dg = embedding_train(monkeypatch, True)
    lp, wp, dp = embedding_train(monkeypatch, False)
    err = capfd.readouterr().err
    if ON_GPU:
        assert dg["captures"] == 1 and dg["failures"] == 0, (dg, err)
        assert dg["replays"] == 28 and dg["fallbacks"] == 0, (dg, err)
    assert dp["captures"] == dp["replays"] == 0
    assert lg[-1] < lg[0]
    # Atomic adds of repeated rows sum in no fixed order, in both runs.
    np.testing.assert_allclose(lg, lp, rtol=1e-4, atol=1e-5)
    for a, b in zip(wg, wp):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def scatter_step(monkeypatch, on):
    graphs(monkeypatch, on)
    with tf.device(DEVICE):
        v = tf.Variable(np.zeros((6, 2), np.float32))

    @tf.function
    def f(i):
        with tf.device(DEVICE):
            v.assign_add(tf.ones((6, 2)))
            out = tf.tensor_scatter_nd_add(v * 1.0, i, tf.ones((3, 2)))
            v.assign(out)
            return tf.gather_nd(out, i[:, :1])

    return v, f


def test_bad_index_in_a_replay_is_the_cpus_error(monkeypatch, capfd):
    """The flag read after the replay sends the call the plain way: the
    CPU's exact error, and the variable as a plain run leaves it (its
    first assign_add done, the scatter's assign not); good calls after it
    replay again."""
    good = [[0], [5], [0]]
    results = {}
    for on in (True, False):
        v, f = scatter_step(monkeypatch, on)
        before = counters()
        with tf.device(DEVICE):
            for _ in range(3):
                f(tf.constant(good))
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                f(tf.constant([[0], [6], [1]]))
            after_error = v.numpy()
            last = f(tf.constant(good)).numpy()
        results[on] = (str(e.value), after_error, last, v.numpy(),
                       delta(before))
    err = capfd.readouterr().err
    (eg, vg, lg, fg, dg), (ep, vp, lp, fp, _) = results[True], results[False]
    assert "TensorScatterAdd" in eg and "6" in eg, eg
    assert eg == ep
    np.testing.assert_array_equal(vg, vp)
    np.testing.assert_array_equal(lg, lp)
    np.testing.assert_array_equal(fg, fp)
    if ON_GPU:
        assert dg["captures"] == 1 and dg["failures"] == 0, (dg, err)
        assert dg["replays"] == 3 and dg["fallbacks"] == 1, (dg, err)


def test_shape_size_rank_replay(monkeypatch, capfd):
    graphs(monkeypatch, True)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            n = tf.cast(tf.size(a), tf.float32)
            s = tf.cast(tf.shape(a), tf.float32)
            r = tf.cast(tf.rank(a), tf.float32)
            return a * n + s[0] * 10.0 + r

    before = counters()
    for k in range(4):
        av = np.full((3, 5), float(k), np.float32)
        with tf.device(DEVICE):
            got = f(tf.constant(av)).numpy()
        np.testing.assert_allclose(got, av * 15 + 30 + 2)
    d = delta(before)
    err = capfd.readouterr().err
    if ON_GPU:
        assert d["captures"] == 1 and d["replays"] == 2, (d, err)
        assert d["failures"] == 0, (d, err)


def test_where_stays_off_graphs(monkeypatch, capfd):
    graphs(monkeypatch, True)

    @tf.function
    def f(a):
        with tf.device(DEVICE):
            return tf.cast(tf.where(a > 0.0), tf.float32) * 2.0

    av = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    before = counters()
    for _ in range(3):
        with tf.device(DEVICE):
            got = f(tf.constant(av)).numpy()
    np.testing.assert_array_equal(got, [[0.0], [4.0], [6.0]])
    d = delta(before)
    assert d["captures"] == d["replays"] == 0, d
    if ON_GPU:
        assert d["ineligible"] == 1 and d["failures"] == 0, d
