"""DepthwiseConv2dNative and its two backprops (csrc/kernels/cpu/
conv_depthwise.c): values and gradients against TF 2.21's outputs stored
in tests/data/depthwise_tf_2_21.npz (made by make_depthwise_tf_2_21.py
there) and the NumPy references of specs/spec_conv.py; the oneDNN path
against the direct loops (TFMINI_CONV=im2col, in a subprocess); traced
calls; keras DepthwiseConv2D / SeparableConv2D values and weights as in
Keras 3; and the errors for bad shapes and dtypes. The OpSpec rows in
spec_conv.py add the finite-difference and second-order checks."""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from specs.spec_conv import (np_depthwise, np_depthwise_backprop_filter,
                             np_depthwise_backprop_input)

DATA = np.load(os.path.join(os.path.dirname(__file__), "data",
                            "depthwise_tf_2_21.npz"))
LIB = ctypes.CDLL(tf._C.__file__)
LIB.tfm_conv_backend.restype = ctypes.c_char_p
LIB.tfm_conv_dnnl_calls.restype = ctypes.c_long

# name, strides, padding (tf.nn form), dilations: as the data file's.
TF_CASES = [
    ("same_s1_m1", (1, 1), "SAME", (1, 1)),
    ("valid_s2_m2", (2, 2), "VALID", (1, 1)),
    ("same_s21_m3", (2, 1), "SAME", (1, 1)),
    ("same_d2_m1", (1, 1), "SAME", (2, 2)),
    ("valid_d12_m2", (1, 1), "VALID", (1, 2)),
    ("explicit_m2", (1, 1), [[0, 0], [1, 0], [2, 1], [0, 0]], (1, 1)),
]


def ref_padding(p):
    return p if isinstance(p, str) else (tuple(p[1]), tuple(p[2]))


def three(x, f, dy, strides, padding, dil):
    """y, dx, df through the tape, as NumPy arrays."""
    xt, ft = tf.constant(x), tf.constant(f)
    with tf.GradientTape() as tape:
        tape.watch([xt, ft])
        y = tf.nn.depthwise_conv2d(xt, ft, [1, *strides, 1], padding,
                                   dilations=list(dil))
    dx, df = tape.gradient(y, [xt, ft], output_gradients=tf.constant(dy))
    return y.numpy(), dx.numpy(), df.numpy()


@pytest.mark.parametrize("case", TF_CASES, ids=[c[0] for c in TF_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_tf_and_numpy(case, dtype):
    name, s, p, d = case
    x, f, dy = (DATA[f"{name}/{k}"].astype(dtype) for k in ("x", "f", "dy"))
    y, dx, df = three(x, f, dy, s, p, d)
    assert y.dtype == dtype
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, DATA[f"{name}/y"], **tol)
    np.testing.assert_allclose(dx, DATA[f"{name}/dx"], **tol)
    np.testing.assert_allclose(df, DATA[f"{name}/df"], **tol)
    kw = dict(strides=s, padding=ref_padding(p), dilations=d)
    x64, f64, dy64 = (a.astype(np.float64) for a in (x, f, dy))
    np.testing.assert_allclose(y, np_depthwise(x64, f64, **kw), **tol)
    np.testing.assert_allclose(
        dx, np_depthwise_backprop_input(x.shape, f64, dy64, **kw), **tol)
    np.testing.assert_allclose(
        df, np_depthwise_backprop_filter(x64, f.shape, dy64, **kw), **tol)


def test_gradient_by_central_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 4, 2))
    f = rng.standard_normal((2, 3, 2, 2))

    def loss(xv, fv):
        y = tf.nn.depthwise_conv2d(xv, fv, [1, 2, 1, 1], "SAME")
        return tf.reduce_sum(tf.sin(y))

    xt, ft = tf.constant(x), tf.constant(f)
    with tf.GradientTape() as tape:
        tape.watch([xt, ft])
        l = loss(xt, ft)
    gx, gf = (g.numpy() for g in tape.gradient(l, [xt, ft]))
    eps = 1e-6
    for arr, g, other in ((x, gx, 0), (f, gf, 1)):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += eps
            lo[i] -= eps
            args_hi = (hi, f) if other == 0 else (x, hi)
            args_lo = (lo, f) if other == 0 else (x, lo)
            num[i] = (float(loss(*args_hi))
                      - float(loss(*args_lo))) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)


def test_traced_equals_eager():
    name, s, p, d = TF_CASES[1]
    x, f, dy = (DATA[f"{name}/{k}"] for k in ("x", "f", "dy"))

    @tf.function
    def step(xv, fv, dyv):
        with tf.GradientTape() as tape:
            tape.watch([xv, fv])
            y = tf.nn.depthwise_conv2d(xv, fv, [1, *s, 1], p, dilations=d)
        return (y,) + tuple(tape.gradient(y, [xv, fv], output_gradients=dyv))

    got = [t.numpy() for t in step(tf.constant(x), tf.constant(f),
                                   tf.constant(dy))]
    for g, w in zip(got, three(x, f, dy, s, p, d)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_backprop_functions():
    name, s, p, d = TF_CASES[2]
    x, f, dy = (DATA[f"{name}/{k}"] for k in ("x", "f", "dy"))
    dx = tf.nn.depthwise_conv2d_backprop_input(list(x.shape), f, dy,
                                               [1, *s, 1], p, dilations=d)
    df = tf.nn.depthwise_conv2d_backprop_filter(x, list(f.shape), dy,
                                                [1, *s, 1], p, dilations=d)
    np.testing.assert_allclose(dx.numpy(), DATA[f"{name}/dx"], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(df.numpy(), DATA[f"{name}/df"], rtol=1e-5,
                               atol=1e-5)


def test_separable_conv2d_is_depthwise_then_pointwise():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    dw = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    pw = rng.standard_normal((1, 1, 6, 5)).astype(np.float32)
    y = tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME").numpy()
    want = np_depthwise(x.astype(np.float64), dw.astype(np.float64),
                        padding="SAME") @ pw[0, 0]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="pointwise_filter"):
        tf.nn.separable_conv2d(x, dw, np.zeros((3, 1, 6, 5), np.float32),
                               [1, 1, 1, 1], "SAME")


def test_saved_model_round_trip_with_unknown_batch(tmp_path):
    class M(tf.Module):
        def __init__(self):
            self.f = tf.Variable(np.random.default_rng(8).standard_normal(
                (3, 3, 4, 2)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 4],
                                                    tf.float32)])
        def __call__(self, x):
            return tf.nn.depthwise_conv2d(x, self.f, [1, 1, 1, 1], "SAME")

    m = M()
    x = np.random.default_rng(9).standard_normal((2, 8, 8, 4)).astype(
        np.float32)
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    np.testing.assert_array_equal(loaded(x).numpy(), m(x).numpy())
    np.testing.assert_allclose(
        m(x).numpy(), np_depthwise(x.astype(np.float64),
                                   m.f.numpy().astype(np.float64),
                                   padding="SAME"), rtol=1e-5, atol=1e-5)


_CHILD = r"""
import json, sys, ctypes, numpy as np
sys.path.insert(0, sys.argv[1])
import tfmini as tf
import test_depthwise_conv as t
lib = ctypes.CDLL(tf._C.__file__)
lib.tfm_conv_backend.restype = ctypes.c_char_p
lib.tfm_conv_dnnl_calls.restype = ctypes.c_long
rng = np.random.default_rng(5)
out = {"backend": lib.tfm_conv_backend().decode(), "results": []}
for xs, fs, s, p, d in t.PATH_CASES:
    x = rng.standard_normal(xs).astype(np.float32)
    f = rng.standard_normal(fs).astype(np.float32)
    y = tf.nn.depthwise_conv2d(x, f, [1, *s, 1], p, dilations=d)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    out["results"].append([a.tolist() for a in t.three(x, f, dy, s, p, d)])
out["calls"] = lib.tfm_conv_dnnl_calls()
print(json.dumps(out))
"""

# Shapes oneDNN's depthwise JIT kernels block differently: channel counts
# around its 16-wide vectors, multipliers, strides, dilations.
PATH_CASES = [
    ((2, 9, 10, 16), (3, 3, 16, 1), (1, 1), "SAME", (1, 1)),
    ((2, 9, 10, 19), (3, 3, 19, 1), (2, 2), "SAME", (1, 1)),
    ((1, 8, 8, 32), (5, 5, 32, 1), (1, 1), "VALID", (1, 1)),
    ((1, 9, 7, 8), (3, 3, 8, 2), (1, 2), "SAME", (1, 1)),
    ((1, 11, 11, 16), (3, 3, 16, 1), (1, 1), "SAME", (2, 2)),
    ((2, 6, 7, 3), (2, 3, 3, 4), (1, 1),
     [[0, 0], [1, 2], [0, 1], [0, 0]], (1, 1)),
    ((1, 5, 5, 1), (3, 3, 1, 3), (1, 1), "SAME", (1, 1)),
]


def child(env_extra):
    env = dict(os.environ, **env_extra)
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _CHILD, here], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(LIB.tfm_conv_backend().decode() != "dnnl",
                    reason="tfmini built without oneDNN (Debian "
                    "libdnnl-dev) or TFMINI_CONV=im2col")
def test_dnnl_and_loop_paths_agree():
    loops = child({"TFMINI_CONV": "im2col"})
    assert loops["backend"] == "im2col" and loops["calls"] == 0
    dnnl = child({})
    # Every op of every case ran as a oneDNN primitive (none fell back
    # to the loops as a reference-only shape): the child's shape-finding
    # forward call, then y, dx and df.
    assert dnnl["calls"] == 4 * len(PATH_CASES)
    for a, b in zip(loops["results"], dnnl["results"]):
        for got, want in zip(b, a):
            got, want = np.array(got), np.array(want)
            np.testing.assert_allclose(got, want, rtol=1e-5,
                                       atol=1e-5 * np.abs(want).max())


def test_float16_and_empty():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 4, 4, 2))
    f = rng.standard_normal((3, 3, 2, 2))
    y = tf.nn.depthwise_conv2d(x.astype(np.float16), f.astype(np.float16),
                               [1, 1, 1, 1], "SAME")
    assert y.dtype == tf.float16
    np.testing.assert_allclose(y.numpy(), np_depthwise(x, f, padding="SAME"),
                               rtol=2e-2, atol=2e-2)
    e = tf.nn.depthwise_conv2d(np.zeros((0, 4, 4, 2)), f, [1, 1, 1, 1],
                               "SAME")
    assert e.shape == (0, 4, 4, 4)
    df = tf.nn.depthwise_conv2d_backprop_filter(
        np.zeros((0, 4, 4, 2)), [3, 3, 2, 2], np.zeros((0, 4, 4, 4)),
        [1, 1, 1, 1], "SAME")
    np.testing.assert_array_equal(df.numpy(), np.zeros((3, 3, 2, 2)))


def test_bad_inputs_raise_clearly():
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: input depth 3 does "
                       r"not match the filter's in_channels 2.*\[1,5,5,3\]"):
        tf.nn.depthwise_conv2d(x, np.zeros((3, 3, 2, 1), np.float32),
                               [1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: input and filter "
                       r"must have the same dtype, got float32 and float64"):
        tf.nn.depthwise_conv2d(x, np.zeros((3, 3, 3, 1)), [1, 1, 1, 1],
                               "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: input must be float16"
                       r".*got int32"):
        tf.nn.depthwise_conv2d(np.zeros((1, 5, 5, 3), np.int32),
                               np.zeros((3, 3, 3, 1), np.int32),
                               [1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: filter must be 4-D"):
        tf.nn.depthwise_conv2d(x, np.zeros((3, 3, 3), np.float32),
                               [1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: the filter window "
                       r"7x7.*larger than the input \[1,5,5,3\]"):
        tf.nn.depthwise_conv2d(x, np.zeros((7, 7, 3, 1), np.float32),
                               [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="dilation rate is greater than 1"):
        tf.nn.depthwise_conv2d(x, np.zeros((3, 3, 3, 1), np.float32),
                               [1, 2, 2, 1], "SAME", dilations=[2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNativeBackpropInput: gradient "
                       r"shape \[1,5,5,2\] does not match the forward "
                       r"output shape \[1,5,5,3\]"):
        tf.nn.depthwise_conv2d_backprop_input(
            [1, 5, 5, 3], np.zeros((3, 3, 3, 1), np.float32),
            np.zeros((1, 5, 5, 2), np.float32), [1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.UnimplementedError, match="NHWC"):
        tf.nn.depthwise_conv2d(x, np.zeros((3, 3, 3, 1), np.float32),
                               [1, 1, 1, 1], "SAME", data_format="NCHW")


def test_keras_depthwise_conv2d_matches_keras3():
    tf.keras.backend.clear_session()    # default names count from here
    layer = tf.keras.layers.DepthwiseConv2D(
        3, strides=2, padding="same", depth_multiplier=2, activation="relu")
    x = DATA["keras_dw/x"]
    layer.build((None,) + x.shape[1:])
    assert [(w.path, tuple(w.shape)) for w in layer.weights] == [
        ("depthwise_conv2d/kernel", (3, 3, 3, 2)),
        ("depthwise_conv2d/bias", (6,))]
    layer.set_weights([DATA["keras_dw/kernel"], DATA["keras_dw/bias"]])
    np.testing.assert_allclose(layer(x).numpy(), DATA["keras_dw/y"],
                               rtol=1e-5, atol=1e-5)
    again = tf.keras.layers.DepthwiseConv2D.from_config(layer.get_config())
    assert again.depth_multiplier == 2 and again.strides == (2, 2)


def test_keras_separable_conv2d_matches_keras3():
    tf.keras.backend.clear_session()    # default names count from here
    layer = tf.keras.layers.SeparableConv2D(
        4, (3, 2), padding="valid", dilation_rate=(2, 1), depth_multiplier=2)
    x = DATA["keras_sep/x"]
    layer.build((None,) + x.shape[1:])
    assert [(w.path, tuple(w.shape)) for w in layer.weights] == [
        ("separable_conv2d/depthwise_kernel", (3, 2, 3, 2)),
        ("separable_conv2d/pointwise_kernel", (1, 1, 6, 4)),
        ("separable_conv2d/bias", (4,))]
    layer.set_weights([DATA["keras_sep/depthwise_kernel"],
                       DATA["keras_sep/pointwise_kernel"],
                       DATA["keras_sep/bias"]])
    np.testing.assert_allclose(layer(x).numpy(), DATA["keras_sep/y"],
                               rtol=1e-5, atol=1e-5)


def test_keras_depthwise_trains_traced():
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((4, 8, 8, 3)).astype(np.float32))
    layer = tf.keras.layers.DepthwiseConv2D(3, padding="same")
    layer.build((None, 8, 8, 3))
    opt = tf.keras.optimizers.SGD(0.05)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((layer(x) - x) ** 2)
        grads = tape.gradient(loss, layer.trainable_variables)
        opt.apply_gradients(zip(grads, layer.trainable_variables))
        return loss

    first = float(step())
    for _ in range(30):
        last = float(step())
    assert last < 0.5 * first


# ---- the conv epilogue (graph/pass_conv_epilogue.c) ----------------------

def _conv_step(act, dtype):
    """A traced train step through conv2d + bias_add + act: loss and the
    gradients of filter, bias and input."""
    rng = np.random.default_rng(11)
    w = tf.Variable(rng.standard_normal((3, 3, 3, 5)).astype(dtype))
    b = tf.Variable(rng.standard_normal((5,)).astype(dtype))

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.bias_add(tf.nn.conv2d(x, w, 2, "SAME"), b)
            if act is not None:
                y = act(y)
            loss = tf.reduce_sum(tf.sin(y))
        return (loss,) + tuple(tape.gradient(loss, [w, b, x]))
    x = tf.constant(rng.standard_normal((2, 9, 8, 3)).astype(dtype))
    return step, x


def _optimized_types(fn, x):
    cf = fn.get_concrete_function(x)
    return [op.type for op in cf.optimized_graph.get_operations()]


def _with_epilogue(on):
    before = tf._C.graph_passes()
    tf.config.optimizer.set_experimental_options({"epilogue": on})
    return before


@pytest.mark.parametrize("act", [None, tf.nn.relu, tf.nn.relu6, tf.nn.elu],
                         ids=["bias", "relu", "relu6", "elu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_conv_equals_unfused(act, dtype):
    step, x = _conv_step(act, dtype)
    eager = [t.numpy() for t in step(x)]
    fused = tf.function(step)
    got = [t.numpy() for t in fused(x)]
    types = _optimized_types(fused, x)
    assert "_FusedConv2D" in types and "Conv2D" not in types
    # Relu's and Relu6's gradients read the activation's output, which
    # the node gives; Elu's reads its input, which pins the bias add's
    # result, so only the bias joins the conv there.
    if act in (tf.nn.relu, tf.nn.relu6):
        assert not {"Relu", "Relu6"} & set(types)
    before = _with_epilogue(False)
    try:
        plain = tf.function(step)
        want = [t.numpy() for t in plain(x)]
        assert "_FusedConv2D" not in _optimized_types(plain, x)
    finally:
        tf._C.set_graph_passes(before)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g, w, e in zip(got, want, eager):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def test_fused_conv_inference_takes_elu():
    rng = np.random.default_rng(12)
    w = tf.constant(rng.standard_normal((3, 3, 4, 6)).astype(np.float32))
    b = tf.constant(rng.standard_normal((6,)).astype(np.float32))
    x = tf.constant(rng.standard_normal((2, 7, 7, 4)).astype(np.float32))
    fn = tf.function(lambda x: tf.nn.elu(tf.nn.conv2d(x, w, 1, "VALID") + b))
    got = fn(x).numpy()
    types = _optimized_types(fn, x)
    assert "_FusedConv2D" in types and "Elu" not in types
    want = np.asarray(tf.nn.elu(tf.nn.conv2d(x, w, 1, "VALID") + b))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_with_a_second_reader_is_not_fused():
    rng = np.random.default_rng(13)
    w = tf.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
    b = tf.constant(rng.standard_normal((4,)).astype(np.float32))
    x = tf.constant(rng.standard_normal((1, 5, 5, 2)).astype(np.float32))

    @tf.function
    def fn(x):
        c = tf.nn.conv2d(x, w, 1, "SAME")
        return tf.nn.relu(c + b), c          # c is read twice

    y, c = fn(x)
    assert "_FusedConv2D" not in _optimized_types(fn, x)
    np.testing.assert_allclose(y.numpy(),
                               np.maximum(c.numpy() + b.numpy(), 0),
                               rtol=1e-6)


def test_keras_conv_model_step_is_fused():
    model = tf.keras.Sequential([
        tf.keras.Input((8, 8, 3)),
        tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
    x = tf.constant(np.random.default_rng(14).standard_normal(
        (2, 8, 8, 3)).astype(np.float32))

    @tf.function
    def fwd(x):
        return model(x)

    np.testing.assert_allclose(fwd(x).numpy(), model(x).numpy(), rtol=1e-5,
                               atol=1e-5)
    assert "_FusedConv2D" in _optimized_types(fwd, x)


def test_no_tensor_leaks():
    import gc
    step, x = _conv_step(tf.nn.relu, "float32")
    fused = tf.function(step)
    f = tf.constant(np.ones((3, 3, 3, 2), np.float32))

    def once():
        fused(x)
        with tf.GradientTape() as tape:
            tape.watch([x, f])
            y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME")
        tape.gradient(y, [x, f])

    once()
    gc.collect()
    before = tf._C.live_counts()[:2]
    for _ in range(5):
        once()
    gc.collect()
    assert tf._C.live_counts()[:2] == before
