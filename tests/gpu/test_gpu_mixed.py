"""Mixed precision on the GPU (issue 21): float16 and bfloat16 matmuls
through cuBLASLt with float32 accumulation, the half casts and the
elementwise rows computed in float32 inside the kernel, and Keras
mixed_float16 / mixed_bfloat16 models trained on the GPU against the CPU.
The references are float64 products of the half-rounded inputs (matmul),
NumPy / ml_dtypes (casts) and the CPU, which computes every half op in
float32 and rounds back. Every test skips without a GPU (conftest.py)."""
import ctypes

import numpy as np
import pytest

import tfmini as tf

ml_dtypes = pytest.importorskip(
    "ml_dtypes", reason="bfloat16's NumPy type comes from ml_dtypes")

from gpu_util import CPU, GPU, c_fn  # noqa: E402

HALF = {"float16": (np.float16, 2.0 ** -11),
        "bfloat16": (ml_dtypes.bfloat16, 2.0 ** -8)}


def matmul_calls():
    """Matmuls run so far through cuBLASLt, through the cuBLAS fall-back,
    and those cuBLASLt refused with an error (kernels_matmul.c)."""
    f = c_fn("tfm_cuda_matmul_calls", ctypes.c_long, [ctypes.c_int])
    return tuple(f(i) for i in range(3)) if f else (0, 0, 0)


def _on(device, *arrays):
    with tf.device(device):
        return [tf.identity(tf.constant(a)) for a in arrays]


def _half_matmul_check(dtype, a_shape, b_shape, adj_x, adj_y, seed=0):
    nd, eps = HALF[dtype]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32).astype(nd)
    b = rng.standard_normal(b_shape).astype(np.float32).astype(nd)
    with tf.device(GPU):
        ta, tb = _on(GPU, a, b)
        out = tf.linalg.matmul(ta, tb, adjoint_a=adj_x, adjoint_b=adj_y)
    assert out.dtype == getattr(tf, dtype)
    assert out.device.endswith("GPU:0")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if adj_x:
        a64 = np.swapaxes(a64, -1, -2)
    if adj_y:
        b64 = np.swapaxes(b64, -1, -2)
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    got = out.numpy().astype(np.float64)
    assert got.shape == ref.shape
    # One rounding of the float32 sum into the half type, plus float32
    # accumulation error (k products, generous).
    k = a64.shape[-1]
    bound = eps * np.abs(ref) + 4e-7 * k * mag + 1e-30
    bad = np.abs(got - ref) > bound
    assert not bad.any(), (dtype, a_shape, b_shape, adj_x, adj_y,
                           np.max(np.abs(got - ref) / np.maximum(mag, 1e-30)))


SHAPES = [((1, 1), (1, 1)), ((3, 5), (5, 7)), ((17, 33), (33, 65)),
          ((64, 128), (128, 96)), ((2, 3, 9, 11), (2, 3, 11, 5)),
          ((4, 7, 8), (8, 6)), ((7, 8), (4, 8, 6)),
          ((2, 1, 5, 6), (1, 3, 6, 4))]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("adj", [(False, False), (True, False),
                                 (False, True), (True, True)],
                         ids=["nn", "tn", "nt", "tt"])
def test_half_matmul_matches_float64(dtype, shapes, adj):
    a_shape, b_shape = (list(s) for s in shapes)
    if adj[0]:
        a_shape[-1], a_shape[-2] = a_shape[-2], a_shape[-1]
    if adj[1]:
        b_shape[-1], b_shape[-2] = b_shape[-2], b_shape[-1]
    _half_matmul_check(dtype, tuple(a_shape), tuple(b_shape), *adj)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_matmul_runs_through_cublaslt(dtype):
    lt, _, refused = matmul_calls()
    _half_matmul_check(dtype, (256, 512), (512, 128), False, False)
    _half_matmul_check(dtype, (4, 32, 48), (4, 48, 16), False, True)
    now = matmul_calls()
    assert now[2] == refused, f"cuBLASLt refused: {now}"
    assert now[0] >= lt + 2, now


def test_float32_matmul_tf32_on_and_off():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((96, 200)).astype(np.float32)
    b = rng.standard_normal((200, 80)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    ta, tb = _on(GPU, a, b)
    old = tf.config.experimental.tensor_float_32_execution_enabled()
    try:
        tf.config.experimental.enable_tensor_float_32_execution(False)
        with tf.device(GPU):
            exact = tf.matmul(ta, tb).numpy()
        assert np.all(np.abs(exact - ref) <= 1e-6 * mag)
        tf.config.experimental.enable_tensor_float_32_execution(True)
        with tf.device(GPU):
            fast = tf.matmul(ta, tb).numpy()
        # TF32 keeps 10 mantissa bits of each input.
        assert np.all(np.abs(fast - ref) <= 2.0 ** -10 * mag)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(old)


def test_half_matmul_gradient_matches_cpu():
    rng = np.random.default_rng(4)
    xv = rng.standard_normal((16, 24)).astype(np.float16)
    wv = rng.standard_normal((24, 8)).astype(np.float16)

    def grads(device):
        with tf.device(device):
            x, w = _on(device, xv, wv)
            with tf.GradientTape() as tape:
                tape.watch([x, w])
                y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
            return [g.numpy().astype(np.float32)
                    for g in tape.gradient(y, [x, w])]

    for g, c in zip(grads(GPU), grads(CPU)):
        np.testing.assert_allclose(g, c, rtol=2e-3, atol=2e-2)


# ---- casts ---------------------------------------------------------------
SPECIAL = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 65520.0, 70000.0,
                    1e-8, 6e-5, 3.0e38, -3.4e38, np.inf, -np.inf,
                    1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
                    1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8], np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_casts_to_half_round_as_numpy(dtype):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(5)
    x = np.concatenate([SPECIAL, rng.standard_normal(1000).astype(
        np.float32) * 100]).astype(np.float32)
    (tx,) = _on(GPU, x)
    with tf.device(GPU):
        h = tf.cast(tx, getattr(tf, dtype))
        back = tf.cast(h, tf.float32)
        back64 = tf.cast(h, tf.float64)
    assert h.device.endswith("GPU:0")
    with np.errstate(over="ignore"):      # 70000 -> inf is the point
        ref = x.astype(nd)
    np.testing.assert_array_equal(h.numpy().view(np.uint16),
                                  ref.view(np.uint16))
    np.testing.assert_array_equal(back.numpy(), ref.astype(np.float32))
    np.testing.assert_array_equal(back64.numpy(), ref.astype(np.float64))
    # NaN stays NaN.
    (tn,) = _on(GPU, np.array([np.nan, -np.nan], np.float32))
    with tf.device(GPU):
        assert np.isnan(tf.cast(tf.cast(tn, getattr(tf, dtype)),
                                tf.float32).numpy()).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("src", ["float64", "int32", "int64", "bool"])
def test_casts_between_half_and_other_dtypes_match_cpu(dtype, src):
    rng = np.random.default_rng(6)
    v = rng.standard_normal(300) * 3000
    x = (v > 0) if src == "bool" else v.astype(src)

    def run(device):
        (t,) = _on(device, x)
        with tf.device(device):
            h = tf.cast(t, getattr(tf, dtype))
            back = tf.cast(h, getattr(tf, src))
            return h.numpy().view(np.uint16), back.numpy()

    hg, bg = run(GPU)
    hc, bc = run(CPU)
    np.testing.assert_array_equal(hg, hc)
    np.testing.assert_array_equal(bg, bc)


# ---- elementwise ---------------------------------------------------------
UNARY = {"relu": tf.nn.relu, "sigmoid": tf.sigmoid, "tanh": tf.tanh,
         "neg": tf.negative, "exp": tf.exp,
         "leaky_relu": lambda x: tf.nn.leaky_relu(x, 0.2)}
BINARY = {"add": tf.add, "mul": tf.multiply, "sub": tf.subtract,
          "div": tf.divide, "maximum": tf.maximum}
EXACT = {"relu", "neg", "add", "mul", "sub", "div", "maximum"}


def _cmp_half(g, c, name, dtype):
    """Bit-equal where the float32 formula is exact (one rounding on both
    devices); within one half ulp where CUDA's expf/tanhf and the CPU's
    differ by a float32 ulp before the rounding."""
    nd, eps = HALF[dtype]
    if name in EXACT:
        np.testing.assert_array_equal(g.view(np.uint16), c.view(np.uint16))
    else:
        np.testing.assert_allclose(g.astype(np.float32), c.astype(np.float32),
                                   rtol=2 * eps, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_in_half_matches_cpu(dtype, name):
    nd, _ = HALF[dtype]
    x = (np.random.default_rng(7).standard_normal((33, 17)) * 3).astype(nd)

    def run(device):
        (t,) = _on(device, x)
        with tf.device(device):
            y = UNARY[name](t)
        assert y.dtype == getattr(tf, dtype)
        return y.numpy(), y.device

    (g, dev), (c, _) = run(GPU), run(CPU)
    assert dev.endswith("GPU:0")
    _cmp_half(g, c, name, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("yshape", [(33, 17), (17,), (), (33, 1)],
                         ids=["same", "row", "scalar", "col"])
def test_binary_in_half_with_broadcasting_matches_cpu(dtype, name, yshape):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(8)
    x = rng.standard_normal((33, 17)).astype(nd)
    y = (rng.standard_normal(yshape) + 3.0).astype(nd)

    def run(device):
        a, b = _on(device, x, y)
        with tf.device(device):
            return BINARY[name](a, b).numpy()

    _cmp_half(run(GPU), run(CPU), name, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_bias_add_and_compare_in_half_match_cpu(dtype):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8, 5, 6)).astype(nd)
    b = rng.standard_normal(6).astype(nd)

    def run(device):
        tx, tb = _on(device, x, b)
        with tf.device(device):
            return (tf.nn.bias_add(tx, tb).numpy(),
                    tf.less(tx, tb).numpy())

    (g, lg), (c, lc) = run(GPU), run(CPU)
    np.testing.assert_array_equal(g.view(np.uint16), c.view(np.uint16))
    np.testing.assert_array_equal(lg, lc)


# ---- a Keras model under a mixed policy ----------------------------------
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_keras_mixed_dense_model_trains_like_cpu(policy):
    from tfmini.keras import mixed_precision as mp
    rng = np.random.default_rng(10)
    xv = rng.standard_normal((64, 20)).astype(np.float32)
    yv = rng.integers(0, 4, 64).astype(np.int32)
    mp.set_global_policy(policy)
    try:
        def train(device):
            with tf.device(device):
                tf.keras.utils.set_random_seed(0)
                model = tf.keras.Sequential([
                    tf.keras.Input((20,)),
                    tf.keras.layers.Dense(32, activation="relu"),
                    tf.keras.layers.Dense(4)])
                model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                              loss=tf.keras.losses.
                              SparseCategoricalCrossentropy(
                                  from_logits=True))
                losses = [float(model.train_on_batch(xv, yv))
                          for _ in range(3)]
                return losses, [w.numpy() for w in model.weights]

        lg, wg = train(GPU)
        lc, wc = train(CPU)
    finally:
        mp.set_global_policy(None)
    tol = 2e-2 if policy == "mixed_bfloat16" else 5e-3
    np.testing.assert_allclose(lg, lc, rtol=tol, atol=tol)
    for g, c in zip(wg, wc):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, c, rtol=tol, atol=tol)
