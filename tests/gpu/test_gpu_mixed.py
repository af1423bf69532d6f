"""Mixed precision on the GPU (issue 21): float16 and bfloat16 matmuls
through cuBLASLt with float32 accumulation, the half casts and the
elementwise rows computed in float32 inside the kernel, the reductions
(float32 accumulation, one rounding), softmax / log-softmax, the cross
entropies and the fused normalizations in 16 bits, and Keras
mixed_float16 / mixed_bfloat16 models trained on the GPU against the CPU
with nothing soft-placed.
The references are float64 products of the half-rounded inputs (matmul),
NumPy / ml_dtypes (casts) and the CPU, which computes every half op in
float32 and rounds back. Every test skips without a GPU (conftest.py)."""
import ctypes

import numpy as np
import pytest

import tfmini as tf

ml_dtypes = pytest.importorskip(
    "ml_dtypes", reason="bfloat16's NumPy type comes from ml_dtypes")

from gpu_util import (CPU, CPU_NAME, GPU, GPU_NAME, c_fn, logged,  # noqa: E402
                      on)

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


# ---- reductions, softmax, cross entropies, fused normalizations ----------
REDUCE = {"sum": tf.reduce_sum, "mean": tf.reduce_mean,
          "max": tf.reduce_max, "min": tf.reduce_min,
          "prod": tf.reduce_prod}
# reduce.cu's paths: a thread per output, a block per output (contiguous
# and strided), split outputs with a second pass, empty.
REDUCE_CASES = [((5, 7, 3), (1,)), ((300, 6), (0,)), ((4, 500), (1,)),
                ((70, 3, 5), (0, 2)), ((3, 70000), (1,)), ((140000,), (0,)),
                ((2, 0, 3), (1,))]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", sorted(REDUCE))
@pytest.mark.parametrize("case", range(len(REDUCE_CASES)))
def test_half_reductions_match_cpu(dtype, kind, case):
    nd, eps = HALF[dtype]
    shape, axes = REDUCE_CASES[case]
    rng = np.random.default_rng(11 + case)
    v = (1 + 0.02 * rng.standard_normal(shape) if kind == "prod"
         else rng.standard_normal(shape) * 4)
    x = v.astype(np.float32).astype(nd)

    def run(device):
        (t,) = _on(device, x)
        with tf.device(device):
            return REDUCE[kind](t, axis=list(axes))

    g = run(GPU)
    assert g.device == GPU_NAME and g.dtype == getattr(tf, dtype)
    g, c = g.numpy().astype(np.float64), run(CPU).numpy().astype(np.float64)
    if kind in ("max", "min"):
        np.testing.assert_array_equal(g, c)
        return
    # Both round once into the 16-bit type from float32 sums that differ
    # in their order of additions.
    x64 = np.abs(x.astype(np.float64))
    mag = (np.prod(x64, axis=axes) if kind == "prod"
           else np.sum(x64, axis=axes))
    n = max(1, int(np.prod([shape[a] for a in axes])))
    if kind == "mean":
        mag = mag / n
    bound = 2 * eps * np.abs(c) + 2 * n * 2.0 ** -24 * mag + 2.0 ** -24
    nan = np.isnan(c)           # Mean of nothing
    np.testing.assert_array_equal(np.isnan(g), nan)
    err = np.abs(g - c)[~nan]
    assert (err <= bound[~nan]).all(), np.max(err / bound[~nan])


@pytest.mark.parametrize("kind", ["all", "any"])
def test_all_any_run_on_the_gpu(capfd, kind):
    rng = np.random.default_rng(12)
    x = rng.random((70, 3, 300)) < (0.999 if kind == "all" else 0.001)
    fn = tf.reduce_all if kind == "all" else tf.reduce_any

    def run(device):
        (t,) = _on(device, x)
        with tf.device(device):
            return [fn(t, axis=ax).numpy() for ax in ([0, 2], [1], None)]

    got, where = logged(capfd, lambda: run(GPU))
    assert (kind.capitalize(), GPU_NAME) in where, where
    for g, c in zip(got, run(CPU)):
        np.testing.assert_array_equal(g, c)


def _check_half(op, ins, dtype, atol=4e-6, **kw):
    """op's outputs on the GPU against the CPU's (float32 between casts):
    within one rounding of the 16-bit type (twice its unit roundoff)."""
    nd, eps = HALF[dtype]
    want = [o.numpy() for o in on(CPU, op, ins, **kw)]
    got = on(GPU, op, ins, **kw)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.device == GPU_NAME, (op, k)
        assert g.dtype == getattr(tf, dtype) and g.shape == w.shape
        w = w.astype(np.float32)
        np.testing.assert_allclose(
            g.numpy().astype(np.float32), w, rtol=2 * eps,
            atol=atol * max(1.0, float(np.max(np.abs(w), initial=0))),
            err_msg=f"{op} out {k}")


SLICES = [((4, 10), -1), ((3, 5, 7), 1), ((2, 3, 4), 0), ((2, 1100), 1),
          ((6, 1), -1), ((0, 3), 1)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,axis", SLICES, ids=str)
def test_half_softmax_and_its_gradient(shape, axis, dtype):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(shape) * 3).astype(np.float32).astype(nd)
    for op in ("Softmax", "LogSoftmax"):
        _check_half(op, (x,), dtype, i=(axis,))
    with tf.device(CPU):
        y = tf.nn.softmax(tf.constant(x), axis=axis).numpy()
    dy = rng.standard_normal(shape).astype(np.float32).astype(nd)
    _check_half("_SoftmaxGrad", (y, dy), dtype, i=(axis,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rows,classes", [(1, 1), (5, 10), (33, 300),
                                          (2, 3000), (0, 4)])
def test_half_cross_entropies(rows, classes, dtype):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(14)
    x = (rng.standard_normal((rows, classes)) * 2).astype(np.float32)
    x = x.astype(nd)
    p = rng.random((rows, classes))
    lab = (p / np.maximum(p.sum(-1, keepdims=True), 1e-9)).astype(
        np.float32).astype(nd)
    _check_half("SoftmaxCrossEntropyWithLogits", (x, lab), dtype, i=(-1,))
    for it in (np.int32, np.int64):
        idx = rng.integers(0, classes, rows).astype(it)
        _check_half("SparseSoftmaxCrossEntropyWithLogits", (x, idx), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 5, 33), (4, 1025),
                                   (0, 6), (300, 2)], ids=str)
def test_half_layer_norm_and_its_gradient(shape, dtype):
    nd, _ = HALF[dtype]
    rng = np.random.default_rng(15)
    n = shape[-1]
    h = lambda v: v.astype(np.float32).astype(nd)  # noqa: E731
    x = h(rng.standard_normal(shape) * 3 + 2)
    g, b = h(rng.standard_normal(n)), h(rng.standard_normal(n))
    dy = h(rng.standard_normal(shape))
    _check_half("_LayerNorm", (x, g, b), dtype, f=(1e-3,))
    # dgamma / dbeta: column sums over up to 300 rows, in double on the
    # GPU and float32 on the CPU; dx cancels.
    _check_half("_LayerNormGrad", (dy, x, g), dtype, atol=1e-4, f=(1e-3,))


# ---- the benchmarks' models trained on the GPU, nothing soft-placed -----
def _bench_model(name):
    L = tf.keras.layers
    if name == "transformer":
        inp = tf.keras.Input((64, 128))
        a = L.MultiHeadAttention(num_heads=4, key_dim=32)(inp, inp)
        x = L.LayerNormalization()(L.Add()([inp, a]))
        f = L.Dense(128)(L.Dense(512, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, f]))
        out = L.Dense(10)(L.GlobalAveragePooling1D()(x))
        return tf.keras.Model(inp, out), (32, 64, 128)
    if name == "mlp":
        return (tf.keras.Sequential([tf.keras.Input((784,)),
                                     L.Dense(128, activation="relu"),
                                     L.Dense(10)]), (64, 784))
    return (tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Conv2D(64, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Flatten(), L.Dense(10)]), (16, 32, 32, 3))


@pytest.mark.parametrize("eager", [False, True], ids=["traced", "eager"])
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_mixed_models_train_on_the_gpu_with_nothing_soft_placed(
        capfd, name, policy, eager):
    from tfmini.keras import mixed_precision as mp
    rng = np.random.default_rng(16)
    _, shape = _bench_model(name)
    x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, 10, shape[0]).astype(np.int32)

    def train(device):
        mp.set_global_policy(policy)
        try:
            with tf.device(device):
                tf.keras.utils.set_random_seed(0)
                model, _ = _bench_model(name)
                model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                              loss=tf.keras.losses.
                              SparseCategoricalCrossentropy(
                                  from_logits=True), run_eagerly=eager)
                first = float(model.train_on_batch(x, y))
                return [first] + [float(model.train_on_batch(x, y))
                                  for _ in range(2)]
        finally:
            mp.set_global_policy(None)

    lg, where = logged(capfd, lambda: train(GPU))
    on_cpu = {op for op, dev in where if dev == CPU_NAME}
    assert not on_cpu, sorted(on_cpu)
    assert ("BatchMatMulV2", GPU_NAME) in where and ("Sum", GPU_NAME) in where
    if name == "transformer" and not eager:
        assert ("_LayerNormGrad", GPU_NAME) in where, sorted(where)
    lc = train(CPU)
    tol = 2e-2 if policy == "mixed_bfloat16" else 5e-3
    np.testing.assert_allclose(lg, lc, rtol=tol, atol=tol)
