"""The fused ops' GPU kernels against their CPU kernels (issue 21):
_LayerNorm, _LayerNormGrad, _SoftmaxGrad (norm.cu), LSTMGates and
LSTMGatesGrad (rnn.cu), _FusedConv2D (cuDNN + fused_conv.cu's
epilogue), _FusedMaxPoolGrad (pool.cu + fused_conv.cu), the depthwise
convolutions (cuDNN grouped) and Fill/ZerosLike/OnesLike (fill.cu), on
random inputs of odd sizes and every attribute value; gradients through
a tape; and traced CNN / Transformer / LSTM steps whose placement log
shows these ops on the GPU, equal to the CPU's steps. float32 without
TF32 (conftest.py). Every test skips without a GPU."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

from gpu_util import CPU_NAME, FLOATS, GPU, GPU_NAME, on, placed, tol


def check(op, ins, dtype, **kw):
    want = [o.numpy() for o in on("/CPU:0", op, ins, **kw)]
    got = on(GPU, op, ins, **kw)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.device == GPU_NAME, (op, k)
        assert g.dtype == tf.as_dtype(dtype) and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w, err_msg=f"{op} out {k}",
                                   **tol(dtype))


# ---- the kernels, op by op ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 5, 33), (4, 1025),
                                   (0, 6), (300, 2)], ids=str)
@pytest.mark.parametrize("eps", [1e-5, 1e-3, 0.5])
def test_layer_norm_and_its_gradient(shape, dtype, eps):
    rng = np.random.default_rng(0)
    n = shape[-1]
    # An offset and scale per row, so that the mean matters.
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    check("_LayerNorm", (x, g, b), dtype, f=(eps,))
    check("_LayerNormGrad", (dy, x, g), dtype, f=(eps,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((3, 5, 7), 1),
                                        ((2, 3, 4), 0), ((2, 1100), 1),
                                        ((6, 1), -1), ((0, 3), 1)], ids=str)
def test_softmax_grad(shape, axis, dtype):
    rng = np.random.default_rng(1)
    with tf.device("/CPU:0"):
        y = tf.nn.softmax(rng.standard_normal(shape).astype(dtype),
                          axis=axis).numpy()
    dy = rng.standard_normal(shape).astype(dtype)
    check("_SoftmaxGrad", (y, dy), dtype, i=(axis,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch,units", [(1, 1), (3, 5), (7, 33),
                                         (64, 128), (0, 4)])
def test_lstm_gates_and_its_gradient(batch, units, dtype):
    rng = np.random.default_rng(2)
    # Wide z: saturated gates too.
    z = (rng.standard_normal((batch, 4 * units)) * 4).astype(dtype)
    cp = rng.standard_normal((batch, units)).astype(dtype)
    check("LSTMGates", (z, cp), dtype)
    with tf.device("/CPU:0"):
        _, c, gates = _C.call(ID["LSTMGates"], (tf.constant(z),
                                                tf.constant(cp)))
    dh, dc = (rng.standard_normal((batch, units)).astype(dtype)
              for _ in range(2))
    check("LSTMGatesGrad", (dh, dc, gates.numpy(), cp, c.numpy()), dtype)


def _conv_block(x, f, b, r, act, strides, padding):
    h = tf.nn.conv2d(x, f, strides, padding)
    if b is not None:
        h = tf.nn.bias_add(h, b)
    if r is not None:
        h = h + r
    return act(h) if act else h


ACTS = {"none": None, "relu": tf.nn.relu, "relu6": tf.nn.relu6,
        "elu": tf.nn.elu}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("form", ["bias", "bias+residual", "no bias"])
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("geom", [((2, 7, 9, 3), (3, 3, 3, 5), 1, "SAME"),
                                  ((1, 8, 8, 4), (3, 3, 4, 6), 2, "SAME"),
                                  ((3, 9, 7, 2), (2, 3, 2, 3), 1, "VALID")],
                         ids=["same", "strided-odd-pad", "valid"])
def test_fused_conv2d(cudnn, capfd, geom, act, form, dtype):
    if form == "no bias" and act == "none":
        pytest.skip("a bare conv is not fused")
    xs, fs, s, p = geom
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(dtype)
    f = rng.standard_normal(fs).astype(dtype)
    b = None if form == "no bias" else rng.standard_normal(fs[3]).astype(
        dtype)
    with tf.device("/CPU:0"):
        y = _conv_block(x, f, None, None, None, s, p)
    r = rng.standard_normal(y.shape).astype(dtype) \
        if form == "bias+residual" else None
    args = [v for v in (x, f, b, r) if v is not None]

    def block(*a):
        a = list(a)
        xa, fa = a.pop(0), a.pop(0)
        ba = a.pop(0) if b is not None else None
        ra = a.pop(0) if r is not None else None
        return _conv_block(xa, fa, ba, ra, ACTS[act], s, p)

    with tf.device("/CPU:0"):
        want = block(*[tf.constant(v) for v in args]).numpy()

    @tf.function
    def run(*a):
        with tf.device(GPU):
            return block(*a)

    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = run(*[tf.constant(v) for v in args])
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    assert ("_FusedConv2D", GPU_NAME) in where, where
    assert not any(dev == CPU_NAME for op, dev in where), where
    assert got.device == GPU_NAME
    # float32: sums of up to 3 * 3 * 4 products in cuDNN's order.
    t = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else tol(dtype)
    np.testing.assert_allclose(got.numpy(), want, **t)


def _pool_layer_grads(x, b, k, s, p):
    with tf.GradientTape() as tape:
        tape.watch([x, b])
        h = tf.nn.relu(tf.nn.bias_add(x, b))
        h = tf.nn.max_pool2d(h, k, s, p)
        loss = tf.reduce_sum(h * tf.sin(h))
    return tape.gradient(loss, [x, b])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geom", [((2, 8, 8, 3), 2, 2, "VALID"),
                                  ((2, 7, 9, 5), 3, 2, "SAME"),
                                  ((1, 6, 5, 33), 3, 1, "SAME"),
                                  ((3, 9, 7, 2), (3, 2), (2, 3), "VALID")],
                         ids=["disjoint", "odd-pad", "overlap", "rect"])
def test_fused_max_pool_grad(capfd, geom, dtype):
    xs, k, s, p = geom
    rng = np.random.default_rng(4)
    # Small integers: many ties (zeros after the Relu), which must route
    # to the first maximum as on the CPU.
    x = rng.integers(-2, 3, xs).astype(dtype)
    b = rng.integers(-1, 2, xs[3]).astype(dtype)
    with tf.device("/CPU:0"):
        want = [g.numpy() for g in _pool_layer_grads(
            tf.constant(x), tf.constant(b), k, s, p)]

    @tf.function
    def step(x, b):
        with tf.device(GPU):
            return _pool_layer_grads(x, b, k, s, p)

    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = step(tf.constant(x), tf.constant(b))
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    # The layer's own ops on the GPU (the loss gradient's seed, OnesLike
    # and BroadcastTo, still soft-place on the CPU).
    for op in ("_FusedMaxPoolGrad", "MaxPool", "Relu", "AddV2"):
        assert (op, GPU_NAME) in where and (op, CPU_NAME) not in where, (
            op, sorted(where))
    for g, w in zip(got, want):
        assert g.device == GPU_NAME
        np.testing.assert_allclose(g.numpy(), w, **tol(dtype))


def cudnn_fallbacks():
    f = ctypes.CDLL(_C.__file__).tfm_cuda_cudnn_fallbacks
    f.restype = ctypes.c_long
    return f()


DEPTHWISE = ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
             "DepthwiseConv2dNativeBackpropFilter")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geom", [
    # (x shape, filter [kh, kw, c, multiplier], strides, padding, dilations)
    ((2, 7, 9, 3), (3, 3, 3, 1), 1, "SAME", 1),
    ((1, 8, 8, 4), (3, 3, 4, 2), 2, "SAME", 1),     # odd total pad
    ((3, 9, 7, 2), (2, 3, 2, 3), 1, "VALID", 1),
    ((1, 11, 10, 5), (3, 3, 5, 1), 1, "SAME", 2),
    ((2, 6, 6, 32), (3, 3, 32, 1), 1, "SAME", 1),
], ids=["same", "strided", "valid-m3", "dilated", "mobilenet"])
def test_depthwise_conv_and_its_gradients(cudnn, capfd, geom, dtype):
    xs, fs, s, p, d = geom
    rng = np.random.default_rng(9)
    xv = rng.standard_normal(xs).astype(dtype)
    fv = rng.standard_normal(fs).astype(dtype)

    def run(device):
        x, f = tf.constant(xv), tf.constant(fv)
        with tf.device(device):
            with tf.GradientTape() as tape:
                tape.watch([x, f])
                y = tf.nn.depthwise_conv2d(x, f, [1, s, s, 1], p,
                                           dilations=[d, d])
                loss = tf.reduce_sum(y * tf.sin(y))
            return [y] + tape.gradient(loss, [x, f])

    want = [t.numpy() for t in run("/CPU:0")]
    fell = cudnn_fallbacks()
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = run(GPU)
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    for op in DEPTHWISE:
        assert (op, GPU_NAME) in where and (op, CPU_NAME) not in where, op
    t = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else tol(dtype)
    for g, w, name in zip(got, want, ("y", "dx", "df")):
        assert g.device == GPU_NAME
        np.testing.assert_allclose(g.numpy(), w, err_msg=name, **t)
    # Geometries cuDNN's grouped NHWC convolutions do not take run the
    # CPU kernel on host copies: right, but say so.
    if dtype == np.float32 and cudnn_fallbacks() != fell:
        print(f"depthwise {geom}: {cudnn_fallbacks() - fell} of 3 ran on "
              "host copies (cuDNN had no algorithm)")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64",
                                   "bool", "float16", "bfloat16", "uint8",
                                   "int16", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 5, 7), (0, 4), (1000,)],
                         ids=str)
def test_fills_match_cpu(capfd, shape, dtype):
    x = tf.cast(tf.constant(np.arange(int(np.prod(shape))).reshape(shape)
                            % 3), dtype)
    value = tf.cast(tf.constant(2), dtype)

    def three(device):
        with tf.device(device):
            return (tf.zeros_like(x), tf.ones_like(x),
                    tf.fill(list(shape), value))

    want = [t.numpy() for t in three("/CPU:0")]
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = three(GPU)
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    for op in ("ZerosLike", "OnesLike", "Fill"):
        assert (op, GPU_NAME) in where and (op, CPU_NAME) not in where, (
            op, sorted(where))
    for g, w in zip(got, want):
        assert g.device == GPU_NAME and g.dtype == w.dtype
        np.testing.assert_array_equal(g.numpy(), w)


# ---- gradients through a tape ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_tape_gradients_on_gpu_match_cpu(capfd, dtype):
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((3, 4, 9)).astype(dtype)
    gv, bv = (rng.standard_normal(9).astype(dtype) for _ in range(2))
    zv = rng.standard_normal((4, 12)).astype(dtype)
    cv = rng.standard_normal((4, 3)).astype(dtype)

    def grads(device):
        x, g, b, z, c = (tf.constant(v) for v in (xv, gv, bv, zv, cv))
        with tf.device(device):
            with tf.GradientTape() as tape:
                tape.watch([x, g, b, z, c])
                y = _C.call(ID["_LayerNorm"], (x, g, b), f=(1e-3,))
                s = tf.nn.softmax(y * 2.0, axis=-1)
                h, c2, _ = _C.call(ID["LSTMGates"], (z, c))
                loss = tf.reduce_sum(s * tf.cos(y)) + tf.reduce_sum(
                    h * c2 + tf.tanh(c2))
            return [loss] + tape.gradient(loss, [x, g, b, z, c])

    want = [t.numpy() for t in grads("/CPU:0")]
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = grads(GPU)
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    for op in ("_LayerNorm", "_LayerNormGrad", "_SoftmaxGrad", "LSTMGates",
               "LSTMGatesGrad"):
        assert (op, GPU_NAME) in where and (op, CPU_NAME) not in where, op
    for g, w in zip(got, want):
        assert g.device == GPU_NAME
        np.testing.assert_allclose(g.numpy(), w, **tol(dtype))


# ---- traced model steps ----

def _model(name):
    L, keras = tf.keras.layers, tf.keras
    tf.keras.utils.set_random_seed(7)
    if name == "cnn":
        return keras.Sequential([
            keras.Input((12, 12, 3)),
            L.Conv2D(8, 3, padding="same", activation="relu"),
            L.MaxPooling2D(), L.Conv2D(6, 3, padding="same",
                                       activation="relu"),
            L.MaxPooling2D(), L.Flatten(), L.Dense(4)])
    if name == "transformer":
        inp = keras.Input((10, 16))
        a = L.MultiHeadAttention(num_heads=2, key_dim=8)(inp, inp)
        x = L.LayerNormalization()(L.Add()([inp, a]))
        f = L.Dense(16)(L.Dense(32, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, f]))
        out = L.Dense(4)(L.GlobalAveragePooling1D()(x))
        return keras.Model(inp, out)
    return keras.Sequential([keras.Input((6, 5)), L.LSTM(7), L.Dense(4)])


def _data(name):
    rng = np.random.default_rng(8)
    shape = {"cnn": (8, 12, 12, 3), "transformer": (6, 10, 16),
             "lstm": (5, 6, 5)}[name]
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, 4, shape[0]).astype(np.int32))


# The ops each step must run on the GPU, never on the CPU.
FUSED = {"cnn": ("_FusedConv2D", "_FusedMaxPoolGrad", "Conv2DBackpropInput",
                 "Conv2DBackpropFilter"),
         "transformer": ("_LayerNorm", "_LayerNormGrad", "_SoftmaxGrad",
                         "Softmax"),
         "lstm": ("LSTMGates",)}


def _run(name, device, capfd):
    model = _model(name)
    x, y = (tf.constant(v) for v in _data(name))
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.05)

    @tf.function
    def train(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

    @tf.function
    def infer(x):
        with tf.device(device):
            return model(x)

    # The LSTM's train step runs the whole sequence as _LSTMSequence
    # (no GPU kernel yet); its traced inference runs LSTMGates per step.
    step = (lambda: infer(x)) if name == "lstm" else (lambda: train(x, y))
    step()
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    out = step()
    tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    outs = [out.numpy()] + [step().numpy()] + [
        w.numpy() for w in model.weights]
    return outs, where


@pytest.mark.parametrize("name", ["cnn", "transformer", "lstm"])
def test_traced_step_runs_the_fused_ops_on_gpu(cudnn, capfd, name):
    got, where = _run(name, GPU, capfd)
    want, _ = _run(name, "/CPU:0", capfd)
    for op in FUSED[name]:
        assert (op, GPU_NAME) in where, (op, sorted(where))
        assert (op, CPU_NAME) not in where, (op, sorted(where))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
