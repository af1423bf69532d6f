"""The tiny eager paths: MatMul's plain loop for products of at most 512
multiply-adds (csrc/kernels/cpu/matmul.c, TINY_GEMM), basic indexing as
a view of the input's buffer (Note [Views for basic indexing] in
csrc/python/getitem.c), and the short Python paths of tf.transpose and
tf.cast. Each must give what the general path gives: NumPy's values,
the same errors, gradients, tracing and placement."""
import gc
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from _leaks import assert_no_leak

# (m, k, n) on both sides of 512 multiply-adds, and empty ones.
MATMUL_SHAPES = [(1, 1, 1), (2, 2, 2), (2, 3, 4), (7, 9, 8), (8, 8, 8),
                 (1, 512, 1), (8, 8, 9), (10, 10, 10), (1, 1, 513),
                 (0, 3, 4), (3, 0, 4), (4, 3, 0)]


def _operands(m, k, n, ta, tb, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    sa = np.ascontiguousarray(a.T) if ta else a
    sb = np.ascontiguousarray(b.T) if tb else b
    return a, b, sa, sb


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("m,k,n", MATMUL_SHAPES)
def test_small_matmul_matches_numpy(m, k, n, ta, tb, dtype):
    a, b, sa, sb = _operands(m, k, n, ta, tb, dtype, m * 100 + k * 10 + n)
    got = tf.matmul(sa, sb, transpose_a=bool(ta), transpose_b=bool(tb))
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == tf.as_dtype(dtype) and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=tol,
                               atol=tol * max(k, 1) ** 0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_matmul_batches_and_broadcast(dtype):
    rng = np.random.default_rng(3)
    cases = [((5, 2, 3), (3, 4)), ((2, 1, 2, 3), (1, 3, 3, 4)),
             ((4, 3, 2), (4, 2, 3)), ((300, 2, 2), (2, 2))]
    for sa, sb in cases:
        a = rng.standard_normal(sa).astype(dtype)
        b = rng.standard_normal(sb).astype(dtype)
        got = tf.matmul(a, b).numpy()
        np.testing.assert_allclose(got, a.astype(np.float64) @ b,
                                   rtol=1e-5, atol=1e-5)
        got_t = tf.matmul(a, np.swapaxes(b, -1, -2).copy(),
                          transpose_b=True).numpy()
        np.testing.assert_allclose(got_t, got, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_matmul_nan_and_inf_propagate(dtype):
    a = np.array([[1, np.inf, 2], [np.nan, 1, 0], [1, 2, 3]], dtype)
    b = np.array([[1, 0, -1], [1, 0, 2], [-np.inf, 1, 1]], dtype)
    for ta, tb in [(0, 0), (1, 0), (0, 1), (1, 1)]:
        x = a.T.copy() if ta else a
        y = b.T.copy() if tb else b
        with np.errstate(invalid="ignore"):
            want = a @ b
        got = tf.matmul(x, y, transpose_a=bool(ta),
                        transpose_b=bool(tb)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-6)
        assert np.all(np.sign(got[np.isinf(want)])
                      == np.sign(want[np.isinf(want)]))


def test_small_matmul_matches_the_backend():
    """The loop against the backend it stands in for: with TFMINI_GEMM
    set (oneDNN's sgemm, or Eigen without oneDNN) every product takes the
    backend, tiny ones included."""
    shapes = [(2, 2, 2), (3, 5, 7), (8, 8, 8), (1, 512, 1)]
    code = ("import json, numpy as np, tfmini as tf\n"
            "out = []\n"
            "for m, k, n in %r:\n"
            "    r = np.random.default_rng(m + k + n)\n"
            "    a = r.standard_normal((m, k), dtype=np.float32)\n"
            "    b = r.standard_normal((n, k), dtype=np.float32)\n"
            "    out.append(tf.matmul(a, b, transpose_b=True)"
            ".numpy().tolist())\n"
            "print(json.dumps(out))\n" % (shapes,))
    runs = {}
    for mode in ("tiny", "backend"):
        env = dict(os.environ)
        env.pop("TFMINI_GEMM", None)
        if mode == "backend":
            env["TFMINI_GEMM"] = "sgemm"
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, check=True)
        runs[mode] = json.loads(r.stdout)
    for (m, k, n), t, d in zip(shapes, runs["tiny"], runs["backend"]):
        np.testing.assert_allclose(np.array(t), np.array(d), rtol=1e-5,
                                   atol=1e-5 * k ** 0.5)


def test_small_matmul_gradient():
    a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    b = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = tf.reduce_sum(tf.matmul(a, b))
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), np.ones((2, 4)) @ b.numpy().T,
                               rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), a.numpy().T @ np.ones((2, 4)),
                               rtol=1e-6)


# ---- basic indexing as views -----------------------------------------

S = slice
# (shape, key, is the result a contiguous run of the input)
KEYS = [
    ((2, 3), 0, True), ((2, 3), 1, True), ((2, 3), -1, True),
    ((2, 3), (0,), True), ((2, 3), (1, 2), True), ((2, 3), (-2, -3), True),
    ((2, 3), (0, S(None)), True), ((2, 3), S(None), True),
    ((2, 3), S(1, None), True), ((2, 3), S(-5, 100), True),
    ((2, 3), (0, S(1, 3)), True), ((2, 3), (1, S(-2, None)), True),
    ((2, 3), (S(None), 1), False), ((2, 3), (S(None), S(0, 2)), False),
    ((2, 3), S(None, None, 2), False), ((2, 3), S(None, None, -1), False),
    ((2, 3), S(1, 1), False), ((2, 3), (0, S(2, 0)), False),
    ((4, 3, 2), 2, True), ((4, 3, 2), (1, 2), True),
    ((4, 3, 2), S(1, 3), True), ((4, 3, 2), (3, S(None), S(None)), True),
    ((4, 3, 2), (S(None), 0), False), ((4, 3, 2), (0, S(None), 1), False),
    ((4, 3, 2), (0, S(0, 2), S(None)), True),
    ((5,), 3, True), ((5,), S(1, 4), True), ((5,), S(None, None, 2), False),
    ((1, 4), (S(None), 2), True), ((3, 1, 2), (S(None), 0), True),
    ((3, 1, 2), (1, 0), True), ((3, 1, 2), (S(1, 2), 0), True),
]


def _made(fn):
    """(fn(), how many buffers it left live); the collector held off so
    that garbage of earlier tests cannot be freed in between."""
    gc.collect()
    gc.disable()
    try:
        before = _C.live_counts()[1]
        out = fn()
        return out, _C.live_counts()[1] - before
    finally:
        gc.enable()


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_,
                                   np.float16, np.complex64, np.int64])
@pytest.mark.parametrize("shape,key,view", KEYS)
def test_basic_index_values_and_views(shape, key, view, dtype):
    base = (np.arange(int(np.prod(shape))) * 3 - 4).reshape(shape)
    xn = base.astype(dtype)
    x = tf.constant(xn)
    got, made = _made(lambda: x[key])
    want = xn[key]
    assert got.dtype == x.dtype and tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    assert made == (0 if view else 1), (key, made)


def test_view_outlives_its_source():
    xn = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = tf.constant(xn)
    rows = [x[i] for i in range(4)]
    del x
    junk = [tf.constant(np.full((4, 6), -1, np.float32)) + 0
            for _ in range(20)]
    for i, r in enumerate(rows):
        np.testing.assert_array_equal(r.numpy(), xn[i])
        np.testing.assert_array_equal((r * 2).numpy(), xn[i] * 2)
    assert len(junk) == 20


def test_view_of_a_variable_does_not_see_assign():
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    row = v.read_value()[1]
    direct = v[0]
    v.assign(np.full((2, 3), 9, np.float32))
    v.assign_add(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(row.numpy(), [3, 4, 5])
    np.testing.assert_array_equal(direct.numpy(), [0, 1, 2])
    np.testing.assert_array_equal(v.numpy(), np.full((2, 3), 10))


@pytest.mark.parametrize("key,msg", [
    (5, "slice index 5 of dimension 0 out of bounds (input shape [2,3])"),
    (-3, "slice index -3 of dimension 0 out of bounds (input shape "
         "[2,3])"),
    ((0, 3), "slice index 3 of dimension 1 out of bounds (input shape "
             "[2,3])"),
    ((0, 0, 0), "Index out of range using input dim 2; input of shape "
                "[2,3] has only 2 dims"),
    ((S(None), S(None, None, 0)), "strides[1] must be non-zero")])
def test_index_errors_unchanged(key, msg):
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        x[key]
    assert str(e.value).startswith("StridedSlice: " + msg)


def test_index_gradient_through_a_view():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x[1] * x[1]) + tf.reduce_sum(x[2, 1:3])
    g = tape.gradient(y, x).numpy()
    want = np.zeros((3, 4), np.float32)
    want[1] = 2 * x.numpy()[1]
    want[2, 1:3] = 1
    np.testing.assert_array_equal(g, want)


def test_index_traced_and_eager_agree():
    xn = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    @tf.function
    def f(x):
        return x[1], x[0, 2], x[1, 1:], x[:, 0]

    eager = (lambda x: (x[1], x[0, 2], x[1, 1:], x[:, 0]))(tf.constant(xn))
    for got, e, want in zip(f(tf.constant(xn)), eager,
                            (xn[1], xn[0, 2], xn[1, 1:], xn[:, 0])):
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(e.numpy(), want)


def test_index_placement_logged_as_before(capfd):
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    try:
        r = x[0]
    finally:
        tf.debugging.set_log_device_placement(False)
    assert "Executing op StridedSlice in device" in capfd.readouterr().err
    np.testing.assert_array_equal(r.numpy(), [0, 1, 2])


def test_index_under_a_device_scope_runs_there():
    _C._enable_fake_device(True)
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.device("/device:FAKE:0"):
        r = x[1]
    assert r.device.endswith("device:FAKE:0")
    np.testing.assert_array_equal(r.numpy(), [3, 4, 5])


def test_index_strings_still_copy():
    x = tf.constant([[b"a", b"bc"], [b"d", b"ef"]])
    r, made = _made(lambda: x[1])
    assert made == 1
    assert r.numpy().tolist() == [b"d", b"ef"]


def test_index_fallback_keys():
    xn = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = tf.constant(xn)
    for key in [(Ellipsis, 1), (None, 0), (0, None, S(1, 3)),
                (1, Ellipsis, None)]:
        np.testing.assert_array_equal(x[key].numpy(), xn[key])
    np.testing.assert_array_equal(x[tf.constant(1)].numpy(), xn[1])
    mask = np.array([True, False])
    np.testing.assert_array_equal(x[mask].numpy(), xn[mask])
    with pytest.raises(TypeError):
        x["a"]
    np.testing.assert_array_equal(type(x).__getitem__(x, 1).numpy(), xn[1])


def test_index_views_do_not_leak():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))

    def round_():
        x[1]
        x[0, 1:3]
        x[:, 1]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x[2])
        tape.gradient(y, x)
    assert_no_leak(round_)


# ---- transpose and cast ----------------------------------------------

@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4),
                                   (1, 2, 1, 3)])
def test_transpose_default_perm(shape):
    xn = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = tf.transpose(tf.constant(xn))
    np.testing.assert_array_equal(got.numpy(), xn.T)
    np.testing.assert_array_equal(tf.transpose(xn).numpy(), xn.T)
    np.testing.assert_array_equal(
        tf.transpose(tf.Variable(xn) if shape else xn).numpy(), xn.T)


def test_transpose_conjugate():
    """TF: conjugate=True is conj(transpose(a)); reals are as they are."""
    c = np.array([[1 + 2j, 3 - 1j, 0.5j]], np.complex64)
    np.testing.assert_array_equal(
        tf.transpose(c, conjugate=True).numpy(), np.conj(c.T))
    np.testing.assert_array_equal(
        tf.transpose(c, perm=[1, 0], conjugate=True).numpy(),
        np.conj(c.T))
    np.testing.assert_array_equal(tf.transpose(c).numpy(), c.T)
    r = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(
        tf.transpose(r, conjugate=True).numpy(), r.T)


@pytest.mark.parametrize("perm,msg", [
    ([0, 0], "Transpose: perm[1] = 0 is out of range or repeated: perm "
             "must be a permutation of [0, 2) for input of shape [2,3]"),
    ([0], "Transpose: perm has 1 entries but the input of shape [2,3] has "
          "rank 2"),
    ([0, 2], "Transpose: perm[1] = 2 is out of range or repeated: perm "
             "must be a permutation of [0, 2) for input of shape [2,3]")])
def test_transpose_errors_unchanged(perm, msg):
    x = tf.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.transpose(x, perm)
    assert str(e.value).startswith(msg)


def test_transpose_traced():
    @tf.function
    def f(x):
        return tf.transpose(x)
    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(tf.constant(xn)).numpy(), xn.T)


def test_cast_values_and_identity():
    xn = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    x = tf.constant(xn)
    for dt, npt in [(tf.float64, np.float64), (tf.int32, np.int32),
                    (tf.bool, np.bool_), ("float16", np.float16)]:
        got = tf.cast(x, dt)
        assert got.dtype == tf.as_dtype(dt)
        np.testing.assert_array_equal(got.numpy(), xn.astype(npt))
    assert tf.cast(x, tf.float32) is x


# ---- small host blocks (Note [Small block freelist] in core/buffer.c) --

def test_small_blocks_from_several_threads():
    """Tiny ops from four Python threads at once (their buffers come from
    and go back to the freelist): every result right, nothing left
    live."""
    import threading
    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = tf.constant(xn)
    errors = []

    def work(seed):
        try:
            for i in range(400):
                y = x + float(seed + i)
                r = y[1]
                m = tf.matmul(y, y, transpose_b=True)
                np.testing.assert_array_equal(r.numpy(),
                                              xn[1] + (seed + i))
                yn = xn + (seed + i)
                np.testing.assert_allclose(m.numpy(), yn @ yn.T,
                                           rtol=1e-6)
        except Exception as e:          # reported by the main thread
            errors.append(e)

    gc.collect()
    before = _C.live_counts()
    threads = [threading.Thread(target=work, args=(k * 1000,))
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    gc.collect()
    assert _C.live_counts() == before


def test_small_and_big_blocks_do_not_leak():
    def round_():
        for n in (1, 6, 64, 65, 300):
            a = tf.ones([n], tf.float32) + 1
            b = tf.cast(a, tf.float64)
            del a, b
    assert_no_leak(round_)
