"""The whole-sequence LSTM ops (_LSTMSequence, _LSTMSequenceGrad in
csrc/ops/ops_rnn.def; kernels in csrc/kernels/cpu/rnn_seq.c) that the
LSTM layer's traced train step runs (tfmini/keras/layers/rnn_fused.py):
values against a NumPy loop, the same values on one thread and two
(row blocks per thread: Note [One parallel region per sequence]), two
Python threads running one traced train step at once, and errors naming
the op, shapes and dtypes."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C, _opids

L = tf.keras.layers
SEQ = _opids.ID["_LSTMSequence"]
SEQ_GRAD = _opids.ID["_LSTMSequenceGrad"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_seq(xs, h0, c0, r):
    u = h0.shape[1]
    hs, cs, gs = [], [], []
    h, c = h0, c0
    for x in xs:
        hs.append(h)
        cs.append(c)
        z = x + h @ r
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
        c = f * c + i * g
        h = o * np.tanh(c)
        gs.append(np.concatenate([i, f, g, o], 1))
    n, b = len(xs), h0.shape[0]
    st = (lambda v, w: np.stack(v) if v else np.zeros((0, b, w), h0.dtype))
    return st(hs, u), st(cs, u), st(gs, 4 * u), h, c


def ref_seq_grad(dh, dc, hs, cs, gs, c, r, d_out=None):
    u = dh.shape[1]
    dzs = np.zeros(gs.shape, dh.dtype)
    for t in range(len(gs) - 1, -1, -1):
        if d_out is not None:
            dh = dh + d_out[t]
        i, f, g, o = (gs[t][:, k * u:(k + 1) * u] for k in range(4))
        tc = np.tanh(cs[t + 1] if t + 1 < len(gs) else c)
        dct = dc + dh * o * (1 - tc * tc)
        dzs[t] = np.concatenate([dct * g * i * (1 - i),
                                 dct * cs[t] * f * (1 - f),
                                 dct * i * (1 - g * g),
                                 dh * tc * o * (1 - o)], 1)
        dc = dct * f
        dh = dzs[t] @ r.T
    dr = hs.reshape(-1, u).T @ dzs.reshape(-1, 4 * u)
    return dzs, dh, dc, dr


def _rand(shape, seed, dtype, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) *
            scale).astype(dtype)


def _args(n, b, u, dtype, seed=0):
    return (_rand((n, b, 4 * u), seed, dtype), _rand((b, u), seed + 1, dtype),
            _rand((b, u), seed + 2, dtype),
            _rand((u, 4 * u), seed + 3, dtype, 0.5 / np.sqrt(max(u, 1))))


def _seq(*a):
    return [t.numpy() for t in _C.call(SEQ, [tf.constant(v) for v in a])]


def _seq_grad(*a):
    return [t.numpy() for t in _C.call(SEQ_GRAD, [tf.constant(v) for v in a])]


# Shapes: one step, a batch that splits unevenly over two threads and
# enough work to split (17 rows, 5 * 17 * 4 * 64^2 > 2^20), no steps, no
# rows, and one unit.
SHAPES = [(1, 3, 5), (5, 17, 64), (0, 4, 3), (4, 0, 3), (3, 2, 1),
          (6, 64, 32)]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,b,u", SHAPES)
def test_sequence_matches_numpy(dtype, n, b, u):
    a = _args(n, b, u, dtype)
    got = _seq(*a)
    want = ref_seq(*(v.astype(np.float64) for v in a))
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,b,u", SHAPES)
@pytest.mark.parametrize("with_out", [False, True])
def test_sequence_grad_matches_numpy(dtype, n, b, u, with_out):
    a = _args(n, b, u, dtype)
    hs, cs, gs, h, c = ref_seq(*a)
    dh, dc = _rand((b, u), 7, dtype), _rand((b, u), 8, dtype)
    rest = [_rand((n, b, u), 9, dtype)] if with_out else []
    got = _seq_grad(dh, dc, hs.astype(dtype), cs.astype(dtype),
                    gs.astype(dtype), c.astype(dtype), a[3], *rest)
    want = ref_seq_grad(*(v.astype(np.float64) for v in
                          [dh, dc, hs, cs, gs, c, a[3]] + rest))
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype])


def test_sequence_grad_is_the_vjp_of_the_sequence():
    # Numeric differences of <outputs, w1> + <h, w2> + <c, w3> through
    # the forward op against the backward op's gradients of xs, h0, c0
    # and r: the two ops agree about which state is which.
    n, b, u = 3, 2, 3
    xs, h0, c0, r = _args(n, b, u, np.float64)
    w = [_rand(s, 20 + k, np.float64) for k, s in
         enumerate([(n, b, u), (b, u), (b, u)])]

    def f(xs, h0, c0, r):
        hs, _, _, h, c = _seq(xs, h0, c0, r)
        out = np.concatenate([hs[1:], h[None]], 0)
        return np.sum(out * w[0]) + np.sum(h * w[1]) + np.sum(c * w[2])
    args = [xs, h0, c0, r]
    hs, cs, gs, _, c = _seq(*args)
    got = _seq_grad(w[1], w[2], hs, cs, gs, c, r, w[0])
    for k, (g, v) in enumerate(zip([got[0], got[1], got[2], got[3]], args)):
        num = np.zeros_like(v)
        for idx in np.ndindex(*v.shape):
            e = np.zeros_like(v)
            e[idx] = 1e-6
            up = [a + e if j == k else a for j, a in enumerate(args)]
            dn = [a - e if j == k else a for j, a in enumerate(args)]
            num[idx] = (f(*up) - f(*dn)) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8,
                                   err_msg=str(k))


_CHILD = r"""
import sys, numpy as np
sys.path.insert(0, {tests!r})
from test_lstm_sequence import _args, _seq, _seq_grad, _rand
xs, h0, c0, r = _args(7, 64, 64, np.float32)
hs, cs, gs, h, c = _seq(xs, h0, c0, r)
g = _seq_grad(_rand((64, 64), 7, np.float32), _rand((64, 64), 8, np.float32),
              hs, cs, gs, c, r, _rand((7, 64, 64), 9, np.float32))
np.savez({out!r}, hs=hs, cs=cs, gs=gs, h=h, c=c, dz=g[0], dh=g[1], dc=g[2],
         dr=g[3])
"""


def test_one_thread_and_two_agree(tmp_path):
    # Two threads take 32 rows each through every step; one takes all 64
    # with the GEMM split as MatMul splits it. The row arithmetic is the
    # same code; only the GEMM's blocking may round differently.
    res = []
    for nt in ("1", "2"):
        out = str(tmp_path / f"t{nt}.npz")
        env = dict(os.environ, OMP_NUM_THREADS=nt,
                   PYTHONPATH=ROOT + os.pathsep +
                   os.environ.get("PYTHONPATH", ""))
        subprocess.run([sys.executable, "-c", _CHILD.format(
            tests=os.path.dirname(__file__), out=out)], env=env, check=True,
            timeout=300)
        res.append(np.load(out))
    for k in res[0].files:
        np.testing.assert_allclose(res[0][k], res[1][k], rtol=1e-5,
                                   atol=1e-6, err_msg=k)


def test_two_threads_run_one_traced_train_step_at_once():
    # One traced step, its plan's buffers shared by two Python threads
    # calling it at once: each gets the gradients a lone call gets.
    layer = L.LSTM(32)
    layer(np.zeros((2, 3, 4), np.float32))

    @tf.function
    def grads(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(layer(x)))
        return tape.gradient(loss, layer.trainable_weights)

    xs = [tf.constant(_rand((24, 9, 4), s, np.float32)) for s in (1, 2)]
    want = [[g.numpy() for g in grads(x)] for x in xs]
    errors = []

    def worker(k):
        try:
            for _ in range(30):
                got = [g.numpy() for g in grads(xs[k])]
                for g, w in zip(got, want[k]):
                    np.testing.assert_array_equal(g, w)
        except Exception as e:          # reported below, with the thread
            errors.append((k, e))
    ts = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def _z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


@pytest.mark.parametrize("args,words", [
    ((_z(2, 3, 8, dtype=np.int32), _z(3, 2, dtype=np.int32),
      _z(3, 2, dtype=np.int32), _z(2, 8, dtype=np.int32)),
     ["float32 or float64", "xs [2,3,8] int32", "r [2,8] int32"]),
    ((_z(2, 3, 8), _z(3, 2), _z(3, 2, dtype=np.float64), _z(2, 8)),
     ["one dtype", "c0 [3,2] float64", "h0 [3,2] float32"]),
    ((_z(2, 3, 8), _z(3, 2), _z(3, 2), _z(3, 8)),
     ["widths disagree", "r [3,8] float32"]),
    ((_z(2, 3, 7), _z(3, 2), _z(3, 2), _z(2, 8)),
     ["4 * units", "xs [2,3,7]"]),
    ((_z(2, 4, 8), _z(3, 2), _z(3, 2), _z(2, 8)),
     ["batch sizes", "xs [2,4,8]", "h0 [3,2]"]),
    ((_z(3, 8), _z(3, 2), _z(3, 2), _z(2, 8)),
     ["shapes must be", "xs [3,8]"]),
])
def test_sequence_bad_arguments_name_op_shapes_and_dtypes(args, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        _seq(*args)
    msg = str(e.value)
    assert msg.startswith("_LSTMSequence:"), msg
    for w in words:
        assert w in msg, (w, msg)


def test_sequence_grad_bad_arguments():
    f, s = _z(3, 2), _z(4, 3, 2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LSTMSequenceGrad: the numbers of steps "
                             r"differ.*cs \[4,3,2\] float32, gates \[5,3,8\] "
                             r"float32"):
        _seq_grad(f, f, s, s, _z(5, 3, 8), f, _z(2, 8))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LSTMSequenceGrad: .*d_out \[4,3,3\] float32"):
        _seq_grad(f, f, s, s, _z(4, 3, 8), f, _z(2, 8), _z(4, 3, 3))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LSTMSequenceGrad: .*one dtype.*hs \[4,3,2\] "
                             r"float64"):
        _seq_grad(f, f, s.astype(np.float64), s, _z(4, 3, 8), f, _z(2, 8))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LSTMSequenceGrad: takes 7 arguments .*got 6"):
        _seq_grad(f, f, s, s, _z(4, 3, 8), f)


def test_unknown_dims_trace():
    spec = [tf.TensorSpec([None, None, None], tf.float32),
            tf.TensorSpec([None, None], tf.float32),
            tf.TensorSpec([None, None], tf.float32),
            tf.TensorSpec([None, None], tf.float32)]

    @tf.function(input_signature=spec)
    def f(xs, h0, c0, r):
        return _C.call(SEQ, [xs, h0, c0, r])
    a = _args(3, 2, 4, np.float32)
    for g, w in zip(f(*a), ref_seq(*(v.astype(np.float64) for v in a))):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-5, atol=2e-5)
