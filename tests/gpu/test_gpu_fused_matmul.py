"""_FusedMatMul on the GPU through cuBLASLt's epilogues (Note [Matmul
epilogues on the GPU] in csrc/graph/fused_epilogue.c): a Dense layer's
matmul + bias (+ Relu, + tanh Gelu) as one cublasLtMatmul, traced on the
GPU and compared with the same function traced on the CPU; the exact
(erf) Gelu and everything else keep the general path (matmul, then the
program). tfm_cuda_matmul_calls(3) counts epilogues run, (4) those
cuBLASLt could not take. Skips without a GPU (conftest.py).

float16/bfloat16 Dense layers are checked for their values only: the
epilogue pass (pass_epilogue.c) fuses float32/float64 matmuls only, so
they run as a matmul and a fused elementwise node.

The bodies take the device from DEVICE, so that they can be checked on a
machine without a GPU (the counter checks are then skipped):
TFM_FMM_TEST_DEVICE=/CPU:0 python3 -m pytest --noconftest
tests/gpu/test_gpu_fused_matmul.py, as was done when it was written."""
import ctypes
import os

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

DEVICE = os.environ.get("TFM_FMM_TEST_DEVICE", "/GPU:0")
ON_GPU = "GPU" in DEVICE


def calls():
    """tfm_cuda_matmul_calls 0..4 (Lt, fall-back, Lt refused, epilogues
    run, epilogues declined), or None in a build without CUDA."""
    try:
        f = ctypes.CDLL(_C.__file__).tfm_cuda_matmul_calls
    except AttributeError:
        return None
    f.restype = ctypes.c_long
    f.argtypes = [ctypes.c_int]
    return [f(i) for i in range(5)]


def epilogues_run(before):
    now = calls()
    return None if now is None or before is None else now[3] - before[3]


ACTS = {
    "none": lambda y: y,
    "relu": tf.nn.relu,
    "gelu_tanh": lambda y: tf.nn.gelu(y, approximate=True),
    "gelu_erf": lambda y: tf.nn.gelu(y, approximate=False),
}
# Which take the epilogue (float32 only: see the module's docstring).
MAPPED = {"none": True, "relu": True, "gelu_tanh": True, "gelu_erf": False}

# dtype, TF32, tolerance relative to |x| @ |w| + |b|
MODES = {
    "float32": ("float32", False, 2e-5),
    "tf32": ("float32", True, 4e-3),
    "float16": ("float16", False, 8e-3),
    "bfloat16": ("bfloat16", False, 6e-2),
}


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(name)


def _dense_fn(act, device, **mm):
    @tf.function
    def f(x, w, b):
        with tf.device(device):
            return ACTS[act](tf.nn.bias_add(tf.matmul(x, w, **mm), b))
    return f


def _data(dtype, x_shape, w_shape, seed, n=None):
    rng = np.random.default_rng(seed)
    nd = _np_dtype(dtype)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32).astype(nd)
    w = rng.uniform(-1, 1, w_shape).astype(np.float32).astype(nd)
    b = rng.uniform(-1, 1, n or w_shape[-1])
    return x, w, b.astype(np.float32).astype(nd)


def _check(act, mode, x_shape=(96, 80), w_shape=(80, 48), seed=0, **mm):
    dtype, tf32, tol = MODES[mode]
    n = w_shape[-2] if mm.get("transpose_b") else w_shape[-1]
    x, w, b = _data(dtype, x_shape, w_shape, seed, n)
    old = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(tf32)
    try:
        before = calls()
        got = _dense_fn(act, DEVICE, **mm)(*map(tf.constant, (x, w, b)))
        ran = epilogues_run(before)
        want = _dense_fn(act, "/CPU:0", **mm)(*map(tf.constant, (x, w, b)))
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(old)
    assert got.dtype.name == dtype and got.shape == want.shape
    if ON_GPU:
        assert got.device.endswith("GPU:0"), got.device
    f64 = [np.asarray(v, np.float64) for v in (x, w, b)]
    xs = np.swapaxes(f64[0], -1, -2) if mm.get("transpose_a") else f64[0]
    ws = np.swapaxes(f64[1], -1, -2) if mm.get("transpose_b") else f64[1]
    mag = np.abs(xs) @ np.abs(ws) + np.abs(f64[2])
    g = np.asarray(got.numpy(), np.float64)
    c = np.asarray(want.numpy(), np.float64)
    assert np.all(np.abs(g - c) <= tol * mag + 1e-6), \
        f"{act} {mode}: max err {np.max(np.abs(g - c) / (mag + 1e-30))}"
    return ran


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("act", list(ACTS))
def test_dense_forward_matches_cpu(act, mode):
    ran = _check(act, mode)
    if ran is not None and ON_GPU and MODES[mode][0] == "float32":
        # One node, one cublasLtMatmul with the epilogue when it maps.
        assert ran == (1 if MAPPED[act] else 0), (act, mode, ran)


@pytest.mark.parametrize("mm", [dict(transpose_a=True),
                                dict(transpose_b=True),
                                dict(transpose_a=True, transpose_b=True)])
def test_adjoint_operands(mm):
    xs = (80, 96) if mm.get("transpose_a") else (96, 80)
    ws = (48, 80) if mm.get("transpose_b") else (80, 48)
    ran = _check("relu", "float32", xs, ws, seed=3, **mm)
    if ran is not None and ON_GPU:
        assert ran == 1


def test_batched_input_folds_into_one_matrix():
    """[4, 24, 80] @ [80, 48] + b: A's batch folds into its rows."""
    ran = _check("relu", "float32", (4, 24, 80), (80, 48), seed=4)
    if ran is not None and ON_GPU:
        assert ran == 1


def test_odd_sizes():
    ran = _check("gelu_tanh", "float32", (7, 13), (13, 5), seed=5)
    if ran is not None and ON_GPU:
        assert ran == 1


def test_turned_off_gives_the_same_values(monkeypatch):
    x, w, b = map(tf.constant, _data("float32", (64, 32), (32, 40), 6))
    f = _dense_fn("relu", DEVICE)
    on = f(x, w, b).numpy()
    monkeypatch.setenv("TFMINI_LT_EPILOGUE", "0")
    before = calls()
    off = f(x, w, b).numpy()
    assert epilogues_run(before) in (None, 0)
    np.testing.assert_allclose(on, off, rtol=2e-5, atol=2e-5)


def _mlp(seed, act):
    tf.keras.utils.set_random_seed(seed)
    return tf.keras.Sequential([
        tf.keras.layers.Dense(64, activation=act),
        tf.keras.layers.Dense(10)])


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_train_step_matches_cpu(act):
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((32, 20)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, 32))
    results = {}
    for dev in (DEVICE, "/CPU:0"):
        with tf.device(dev):
            model = _mlp(0, act)
            model(x)
            opt = tf.keras.optimizers.SGD(0.1)

            @tf.function
            def step(x, y):
                with tf.GradientTape() as t:
                    loss = tf.reduce_mean(
                        tf.keras.losses.sparse_categorical_crossentropy(
                            y, model(x), from_logits=True))
                g = t.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(g, model.trainable_variables))
                return loss

            before = calls()
            losses = [float(step(x, y)) for _ in range(3)]
            results[dev] = (losses, [v.numpy() for v in model.weights],
                            epilogues_run(before))
    (lg, wg, ran), (lc, wc, _) = results[DEVICE], results["/CPU:0"]
    np.testing.assert_allclose(lg, lc, rtol=1e-4, atol=1e-5)
    for a, b in zip(wg, wc):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if ran is not None and ON_GPU:
        # Both layers' forward matmuls each step: bias+relu (the Gelu's
        # input is read by its gradient, so only its bias is fused) and
        # the bias of the logits.
        assert ran >= 6, ran
