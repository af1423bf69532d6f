"""Conv2D and its gradients through cuDNN, and MaxPool/AvgPool and theirs
through pool.cu, on the GPU against the CPU: values over a grid of
shapes, paddings, strides and dilations, gradients through a tape, a
Keras CNN trained on each device, placement, and the errors. float32
without TF32 (conftest.py), so the GPU matches the CPU to float32's
tolerances. Every test skips without a GPU; the convolution tests also
skip in a build without cuDNN (the ops then soft-place on the CPU)."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini.ops import conv_ops

from gpu_util import CPU_NAME, GPU, GPU_NAME, c_fn


def cudnn_calls():
    return c_fn("tfm_cuda_cudnn_calls", ctypes.c_long)()


def cudnn_fallbacks():
    """Convolutions cuDNN had no algorithm for (run on host copies)."""
    return c_fn("tfm_cuda_cudnn_fallbacks", ctypes.c_long)()


def _padding(p):
    return p if isinstance(p, str) else [[0, 0], list(p[0]), list(p[1]),
                                          [0, 0]]


CONV_GRID = [
    # (x shape, filter [kh, kw, in, out], strides, padding, dilations)
    ((2, 9, 9, 3), (3, 3, 3, 8), (1, 1), "SAME", (1, 1)),
    # SAME with an odd total pad: one more row/column at the bottom/right
    # (cuDNN pads symmetrically: the padded copy).
    ((2, 8, 7, 4), (3, 3, 4, 5), (2, 2), "SAME", (1, 1)),
    ((1, 10, 9, 2), (2, 4, 2, 3), (1, 2), "SAME", (1, 1)),
    ((3, 9, 8, 3), (3, 3, 3, 4), (2, 1), "VALID", (1, 1)),
    ((2, 11, 10, 2), (3, 2, 2, 6), (1, 1), "SAME", (2, 3)),
    ((1, 12, 12, 3), (3, 3, 3, 2), (1, 1), "VALID", (2, 2)),
    ((2, 6, 7, 3), (2, 3, 3, 4), (1, 1), ((1, 0), (2, 1)), (1, 1)),
    ((1, 7, 7, 2), (3, 3, 2, 3), (2, 2), ((1, 1), (2, 2)), (1, 1)),
    ((4, 5, 5, 16), (1, 1, 16, 8), (1, 1), "VALID", (1, 1)),
    ((8, 16, 16, 16), (3, 3, 16, 32), (1, 1), "SAME", (1, 1)),
]


def _conv_three(case, x, f, dy, device):
    xs, fs, s, p, d = case
    with tf.device(device):
        y = tf.nn.conv2d(x, f, list(s), _padding(p), dilations=list(d))
        dx = conv_ops.conv2d_backprop_input(xs, f, dy, list(s), _padding(p),
                                            dilations=list(d))
        df = conv_ops.conv2d_backprop_filter(x, fs, dy, list(s),
                                             _padding(p), dilations=list(d))
    return y, dx, df


@pytest.mark.parametrize("case", CONV_GRID, ids=lambda c: "-".join(
    map(str, (c[0], c[1], c[2], c[3], c[4]))).replace(" ", ""))
def test_conv_and_its_gradients_match_cpu(cudnn, case):
    xs, fs = case[0], case[1]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    f = rng.standard_normal(fs).astype(np.float32)
    with tf.device("/CPU:0"):
        ys = tf.nn.conv2d(x, f, list(case[2]), _padding(case[3]),
                          dilations=list(case[4])).shape
    dy = rng.standard_normal(ys).astype(np.float32)
    want = [t.numpy() for t in _conv_three(case, x, f, dy, "/CPU:0")]
    before, fell = cudnn_calls(), cudnn_fallbacks()
    got = _conv_three(case, x, f, dy, GPU)
    assert cudnn_calls() == before + 3, (
        f"cuDNN ran {cudnn_calls() - before} of 3; "
        f"{cudnn_fallbacks() - fell} fell back to the CPU")
    for g, w, name in zip(got, want, ("Conv2D", "input grad",
                                      "filter grad")):
        assert g.device == GPU_NAME, name
        assert g.shape == w.shape, name
        # Sums of up to 16 * 16 * 8 float32 products in another order.
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4,
                                   err_msg=name)


def test_conv_traced_and_float64(cudnn):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 8, 3))
    f = rng.standard_normal((3, 3, 3, 4))

    @tf.function
    def run(a, b):
        with tf.device(GPU):
            return tf.nn.relu(tf.nn.conv2d(a, b, 2, "SAME"))

    with tf.device("/CPU:0"):
        want = tf.nn.relu(tf.nn.conv2d(x, f, 2, "SAME")).numpy()
    for dt in (np.float32, np.float64):
        got = run(tf.constant(x.astype(dt)), tf.constant(f.astype(dt)))
        assert got.dtype == tf.as_dtype(dt)
        np.testing.assert_allclose(got.numpy(), want,
                                   rtol=1e-4 if dt == np.float32 else 1e-10,
                                   atol=1e-4 if dt == np.float32 else 1e-10)


POOL_GRID = [
    # (x shape, ksize, strides, padding)
    ((2, 8, 8, 3), (2, 2), (2, 2), "VALID"),
    ((2, 7, 9, 4), (3, 3), (2, 2), "SAME"),       # odd total pad
    ((1, 6, 6, 2), (3, 3), (1, 1), "SAME"),       # overlapping windows
    ((3, 9, 7, 5), (3, 2), (2, 3), "VALID"),
    ((1, 5, 5, 1), (5, 5), (1, 1), "SAME"),
]


def _pools(x, k, s, p, dy_max, dy_avg, gg, device):
    with tf.device(device):
        xt = tf.constant(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xt)
            ym = tf.nn.max_pool2d(xt, list(k), list(s), p)
            ya = tf.nn.avg_pool2d(xt, list(k), list(s), p)
            lm = tf.reduce_sum(ym * dy_max)
            la = tf.reduce_sum(ya * dy_avg)
        gm, ga = tape.gradient(lm, xt), tape.gradient(la, xt)
        ggm = conv_ops._max_pool_grad_grad(xt, ym, gg, k, s, p)
    return ym, ya, gm, ga, ggm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", POOL_GRID, ids=lambda c: "-".join(
    map(str, c)).replace(" ", ""))
def test_pooling_and_its_gradients_match_cpu(case, dtype, capfd):
    xs, k, s, p = case
    rng = np.random.default_rng(2)
    # Small integers after a ReLU: most windows tie (zeros), and the
    # gradient must go to the first maximum as on the CPU.
    x = np.maximum(rng.integers(-2, 3, xs), 0).astype(dtype)
    ys = tf.nn.max_pool2d(x, list(k), list(s), p).shape
    dy_max = rng.standard_normal(ys).astype(dtype)
    dy_avg = rng.standard_normal(ys).astype(dtype)
    gg = rng.standard_normal(xs).astype(dtype)
    want = [t.numpy() for t in _pools(x, k, s, p, dy_max, dy_avg, gg,
                                      "/CPU:0")]
    tf.debugging.set_log_device_placement(True)
    got = _pools(x, k, s, p, dy_max, dy_avg, gg, GPU)
    tf.debugging.set_log_device_placement(False)
    err = capfd.readouterr().err
    for op in ("MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad",
               "MaxPoolGradGrad"):
        assert f"Executing op {op} in device {GPU_NAME}" in err, op
        assert f"Executing op {op} in device {CPU_NAME}" not in err, op
    # The GPU may fuse AvgPoolGrad's multiply-adds (the CPU's C does not):
    # an ulp per window.
    tol = 1e-5 if dtype == np.float32 else 1e-12
    names = ("MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad",
             "MaxPoolGradGrad")
    for g, w, name in zip(got, want, names):
        assert g.device == GPU_NAME, name
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol,
                                   err_msg=name)


def test_max_pool_nan_wins_as_on_cpu():
    x = np.zeros((1, 4, 4, 2), np.float32)
    x[0, 1, 1, 0] = np.nan
    x[0, 3, 3, 1] = -1.0
    with tf.device("/CPU:0"):
        want = tf.nn.max_pool2d(x, 2, 2, "VALID").numpy()
    with tf.device(GPU):
        got = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(got.numpy(), want)
    assert np.isnan(got.numpy()[0, 0, 0, 0])


def test_gradient_tape_through_a_conv_net_matches_cpu(cudnn):
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 12, 12, 3)).astype(np.float32)
    f1v = (rng.standard_normal((3, 3, 3, 8)) * 0.3).astype(np.float32)
    f2v = (rng.standard_normal((3, 3, 8, 6)) * 0.3).astype(np.float32)

    def grads(device):
        x, f1, f2 = (tf.Variable(v) for v in (xv, f1v, f2v))
        with tf.device(device):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.nn.conv2d(x, f1, 1, "SAME"))
                h = tf.nn.max_pool2d(h, 3, 2, "SAME")
                h = tf.nn.conv2d(h, f2, 2, "VALID")
                h = tf.nn.avg_pool2d(tf.tanh(h), 2, 1, "SAME")
                loss = tf.reduce_mean(h ** 2)
            gs = tape.gradient(loss, [x, f1, f2])
        assert all(g.device == (GPU_NAME if device == GPU else CPU_NAME)
                   for g in gs)
        return [loss.numpy()] + [g.numpy() for g in gs]

    for g, c in zip(grads(GPU), grads("/CPU:0")):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-6)


def test_keras_cnn_trains_on_gpu_like_cpu(cudnn):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 12, 12, 1)).astype(np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0).astype(np.int64)

    def train(device):
        tf.keras.utils.set_random_seed(5)
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu",
                                   input_shape=(12, 12, 1)),
            tf.keras.layers.MaxPooling2D(2),
            tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(2)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(
                          from_logits=True))
        with tf.device(device):
            h = model.fit(x, y, epochs=3, batch_size=16, shuffle=False,
                          verbose=0)
        return h.history["loss"], [w.numpy() for w in model.weights]

    before, fell = cudnn_calls(), cudnn_fallbacks()
    lg, wg = train(GPU)
    assert cudnn_calls() > before       # the convolutions ran on cuDNN
    assert cudnn_fallbacks() == fell
    lc, wc = train("/CPU:0")
    assert lg[-1] < lg[0]
    np.testing.assert_allclose(lg, lc, rtol=1e-4, atol=1e-5)
    for g, c in zip(wg, wc):
        np.testing.assert_allclose(g, c, rtol=1e-3, atol=1e-5)


def test_conv_is_placed_on_the_gpu(cudnn, capfd):
    rng = np.random.default_rng(6)
    x = tf.constant(rng.standard_normal((1, 6, 6, 2)).astype(np.float32))
    f = tf.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
    tf.debugging.set_log_device_placement(True)
    with tf.device(GPU):
        y = tf.nn.conv2d(x, f, 1, "SAME")
    tf.debugging.set_log_device_placement(False)
    err = capfd.readouterr().err
    assert y.device == GPU_NAME
    assert f"Executing op Conv2D in device {GPU_NAME}" in err
    assert f"Executing op Conv2D in device {CPU_NAME}" not in err
    # With no scope, a GPU is the default, as in TF.
    assert tf.nn.conv2d(x, f, 1, "SAME").device == GPU_NAME


def test_conv_errors_name_the_op_and_shapes(cudnn):
    x = np.zeros((1, 5, 5, 3), np.float32)
    with tf.device(GPU):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Conv2D.*input depth 3.*in_channels 4"):
            tf.nn.conv2d(x, np.zeros((3, 3, 4, 2), np.float32), 1, "SAME")
        with pytest.raises(tf.errors.InvalidArgumentError, match="Conv2D"):
            tf.nn.conv2d(x, np.zeros((7, 7, 3, 2), np.float32), 1, "VALID")


def test_empty_batch_and_channels(cudnn):
    with tf.device(GPU):
        y = tf.nn.conv2d(np.zeros((0, 5, 5, 2), np.float32),
                         np.ones((3, 3, 2, 4), np.float32), 1, "SAME")
        df = conv_ops.conv2d_backprop_filter(
            np.zeros((0, 5, 5, 2), np.float32), (3, 3, 2, 4),
            np.zeros((0, 5, 5, 4), np.float32), [1, 1], "SAME")
    assert y.shape == (0, 5, 5, 4) and y.device == GPU_NAME
    np.testing.assert_array_equal(df.numpy(), np.zeros((3, 3, 2, 4)))
