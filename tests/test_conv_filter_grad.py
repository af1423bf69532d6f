"""The float32 filter gradient of stride-1 convolutions by shifted-window
GEMMs (csrc/kernels/cpu/conv_filter_grad_gemm.c), tried before oneDNN:
forced onto every shape it can run (TFMINI_CONV=window, in a
subprocess), equal to the float64 NumPy reference and to oneDNN's answer
(TFMINI_CONV=dnnl) over SAME/VALID/explicit padding, odd sizes, channels
not a multiple of 16 and batch 1; by default it takes the shapes its rule
names (64-wide outputs, the ResNet block's) and not the others; strides,
dilations and float64 still go elsewhere; gradients through the tape and
a traced Keras ResNet block step equal the forced-oneDNN run."""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from specs.spec_conv import np_conv2d_backprop_filter, tf_padding
from tfmini.ops import conv_ops

LIB = ctypes.CDLL(tf._C.__file__)
LIB.tfm_conv_window_calls.restype = ctypes.c_long
LIB.tfm_conv_dnnl_calls.restype = ctypes.c_long
LIB.tfm_conv_backend.restype = ctypes.c_char_p


def window_calls():
    return LIB.tfm_conv_window_calls()


def dnnl_calls():
    return LIB.tfm_conv_dnnl_calls()


def _probe():
    # the block's shape, smaller: inside the default rule
    x = np.ones((1, 4, 4, 64), np.float32)
    before = window_calls()
    conv_ops.conv2d_backprop_filter(x, [3, 3, 64, 64], x, 1, "SAME")
    return window_calls() == before + 1


TAKES = _probe()
needs_window = pytest.mark.skipif(
    not TAKES, reason="the window kernel needs an x86-64 CPU with AVX-512 "
    "and TFMINI_CONV unset")

# (x shape, filter shape, padding): all stride 1, no dilation
CASES = [
    ((3, 8, 8, 64), (3, 3, 64, 64), "SAME"),
    ((2, 9, 7, 5), (3, 3, 5, 20), "SAME"),
    ((2, 9, 7, 5), (3, 3, 5, 20), "VALID"),
    ((1, 11, 13, 3), (3, 3, 3, 70), "SAME"),
    ((1, 2, 5, 4), (3, 3, 4, 6), "SAME"),
    ((2, 10, 6, 7), (5, 5, 7, 33), "SAME"),
    ((2, 6, 9, 17), (2, 3, 17, 16), "SAME"),
    ((3, 5, 5, 8), (1, 1, 8, 130), "VALID"),
    ((2, 8, 7, 3), (3, 3, 3, 4), ((1, 2), (0, 1))),
    ((1, 7, 7, 2), (3, 2, 2, 3), ((0, 0), (2, 2))),
    ((1, 4, 4, 1), (4, 4, 1, 1), "VALID"),
    # rows too wide for one L2-sized copy: bands of a few rows
    ((2, 30, 400, 16), (3, 3, 16, 64), "SAME"),
]


def operands(case, seed):
    xs, fs, padding = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs)
    y_shape = tf.nn.conv2d(x.astype(np.float32), np.zeros(fs, np.float32),
                           1, tf_padding(padding)).shape
    dy = rng.standard_normal(tuple(y_shape))
    return x, dy


def filter_grad(case, x, dy, dtype=np.float32):
    xs, fs, padding = case
    return conv_ops.conv2d_backprop_filter(
        x.astype(dtype), list(fs), dy.astype(dtype), 1,
        tf_padding(padding)).numpy()


def close(got, want, depth):
    # float32 sums of `depth` products of unit normals
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=1e-5 * max(depth, 1) ** 0.5 * 4)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_default_path_matches_float64_reference(i):
    case = CASES[i]
    x, dy = operands(case, i)
    got = filter_grad(case, x, dy)
    assert got.dtype == np.float32
    want = np_conv2d_backprop_filter(x, case[1], dy, (1, 1), case[2])
    close(got, want, dy.shape[0] * dy.shape[1] * dy.shape[2])


@needs_window
@pytest.mark.parametrize("fs,taken", [((3, 3, 64, 64), True),
                                      ((3, 3, 32, 128), True),
                                      ((3, 3, 3, 32), False),
                                      ((3, 3, 64, 32), False),
                                      ((3, 3, 64, 32, 32), True),
                                      ((3, 3, 16, 32, 32), False),
                                      ((1, 1, 64, 64), False)])
def test_default_rule(fs, taken):
    # taken where it measured faster than oneDNN (RESULTS.md); a fifth
    # entry: the rows' width (O = 32 needs 32)
    rng = np.random.default_rng(2)
    w = fs[4] if len(fs) > 4 else 6
    fs = fs[:4]
    x = rng.standard_normal((2, 6, w, fs[2])).astype(np.float32)
    dy = rng.standard_normal((2, 6, w, fs[3])).astype(np.float32)
    before = window_calls()
    got = conv_ops.conv2d_backprop_filter(x, list(fs), dy, 1,
                                          "SAME").numpy()
    assert window_calls() == before + taken
    close(got, np_conv2d_backprop_filter(x.astype(np.float64), fs,
                                         dy.astype(np.float64), (1, 1),
                                         "SAME"), 12 * w)


def test_float64_does_not_take_it():
    case = CASES[1]
    x, dy = operands(case, 1)
    before = window_calls()
    got = filter_grad(case, x, dy, np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(
        got, np_conv2d_backprop_filter(x, case[1], dy, (1, 1), "SAME"),
        rtol=1e-10, atol=1e-10)
    assert window_calls() == before


@pytest.mark.parametrize("strides,dil", [((2, 2), (1, 1)), ((1, 2), (1, 1)),
                                         ((1, 1), (2, 1)),
                                         ((1, 1), (1, 2))])
def test_strides_and_dilations_go_elsewhere(strides, dil):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 9, 10, 6))
    fs = (3, 3, 6, 8)
    y = tf.nn.conv2d(x.astype(np.float32), np.zeros(fs, np.float32),
                     strides, "SAME", dilations=dil)
    dy = rng.standard_normal(tuple(y.shape))
    w0, d0 = window_calls(), dnnl_calls()
    got = conv_ops.conv2d_backprop_filter(
        x.astype(np.float32), list(fs), dy.astype(np.float32), strides,
        "SAME", dilations=dil).numpy()
    close(got, np_conv2d_backprop_filter(x, fs, dy, strides, "SAME", dil),
          2 * 90)
    assert window_calls() == w0
    if LIB.tfm_conv_backend().decode() == "dnnl":
        assert dnnl_calls() == d0 + 1


def test_grouped_conv_goes_elsewhere():
    # a filter with fewer input channels than x: grouped (TF's Conv2D
    # with groups), not this kernel's layout
    rng = np.random.default_rng(6)
    x = tf.constant(rng.standard_normal((1, 6, 6, 4)).astype(np.float32))
    f = tf.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
    w0 = window_calls()
    try:
        with tf.GradientTape() as tape:
            tape.watch(f)
            y = tf.nn.conv2d(x, f, 1, "SAME")
        tape.gradient(y, f)
    except (tf.errors.InvalidArgumentError,
            tf.errors.UnimplementedError):
        pass  # no grouped conv in this build: nothing to check
    assert window_calls() == w0


def test_bad_dy_names_op_shapes_and_dtypes():
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        conv_ops.conv2d_backprop_filter(x, [3, 3, 3, 2],
                                        np.zeros((1, 4, 5, 2), np.float32),
                                        1, "SAME")
    msg = str(e.value).replace(" ", "")
    assert "Conv2DBackpropFilter" in msg and "[1,4,5,2]" in msg


@needs_window
def test_tape_gradient_matches_float64():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 10, 9, 12))
    f = rng.standard_normal((3, 3, 12, 24)) * 0.3
    grads = {}
    for dt in (np.float32, np.float64):
        fv = tf.constant(f.astype(dt))
        xv = tf.constant(x.astype(dt))
        with tf.GradientTape() as tape:
            tape.watch(fv)
            loss = tf.reduce_sum(tf.sin(tf.nn.conv2d(xv, fv, 1, "SAME")))
        grads[dt] = tape.gradient(loss, fv).numpy()
    np.testing.assert_allclose(grads[np.float32], grads[np.float64],
                               rtol=1e-3,
                               atol=1e-4 * np.abs(grads[np.float64]).max())


_CHILD = r"""
import json, sys, ctypes, numpy as np
sys.path.insert(0, sys.argv[1])
import tfmini as tf
import test_conv_filter_grad as t
lib = ctypes.CDLL(tf._C.__file__)
lib.tfm_conv_window_calls.restype = ctypes.c_long
out = {"cases": [], "step": [v.tolist() for v in t.resnet_step()]}
for i, case in enumerate(t.CASES):
    x, dy = t.operands(case, i)
    out["cases"].append(t.filter_grad(case, x, dy).tolist())
out["window"] = lib.tfm_conv_window_calls()
case = ((3, 8, 8, 64), (3, 3, 64, 64), "SAME")
x, dy = t.operands(case, 50)
out["fused"] = [v.tolist() for v in t.fused_raw(x.astype(np.float32),
                                                case[1],
                                                dy.astype(np.float32))]
print(json.dumps(out))
"""


_RUNS = {}


def child(mode):
    """The cases' filter gradients and the ResNet step's results with
    TFMINI_CONV=mode, in a fresh process (the variable is read once)."""
    if mode not in _RUNS:
        env = dict(os.environ, TFMINI_CONV=mode)
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run([sys.executable, "-c", _CHILD, here], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        _RUNS[mode] = json.loads(r.stdout)
    return _RUNS[mode]


def resnet_step():
    """The benchmark's block (64 channels), smaller: a traced Keras train
    step's loss and gradients (both filters through
    Conv2DBackpropFilter)."""
    L = tf.keras.layers
    inp = tf.keras.Input((6, 6, 64))
    c = L.Conv2D(64, 3, padding="same", activation="relu")(inp)
    c = L.Conv2D(64, 3, padding="same")(c)
    out = L.Dense(3)(L.GlobalAveragePooling2D()(L.ReLU()(L.Add()([inp,
                                                                  c]))))
    model = tf.keras.Model(inp, out)
    rng = np.random.default_rng(24)
    for v in model.trainable_variables:
        v.assign(rng.standard_normal(v.shape).astype(np.float32) * 0.2)
    x = tf.constant(rng.standard_normal((4, 6, 6, 64)).astype(np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        return [loss] + tape.gradient(loss, model.trainable_variables)
    return [t.numpy() for t in step(x)]


@needs_window
def test_forced_matches_float64_reference_and_onednn():
    forced, dnnl = child("window"), child("dnnl")
    # every case, the step's two filter gradients and _probe's one took
    # the kernel
    assert forced["window"] == len(CASES) + 3
    assert dnnl["window"] == 0
    for i, case in enumerate(CASES):
        x, dy = operands(case, i)
        want = np_conv2d_backprop_filter(x, case[1], dy, (1, 1), case[2])
        depth = dy.shape[0] * dy.shape[1] * dy.shape[2]
        close(np.array(forced["cases"][i]), want, depth)
        close(np.array(forced["cases"][i]), np.array(dnnl["cases"][i]),
              depth)
    # the fused bias gradient: the same with either kernel
    case = ((3, 8, 8, 64), (3, 3, 64, 64), "SAME")
    x, dy = operands(case, 50)
    want = np_conv2d_backprop_filter(x, case[1], dy, (1, 1), "SAME")
    for run in (forced, dnnl):
        close(np.array(run["fused"][0]), want, 192)
        np.testing.assert_allclose(np.array(run["fused"][1]),
                                   dy.sum((0, 1, 2)), rtol=1e-5, atol=1e-4)
    close(np.array(forced["fused"][0]), np.array(dnnl["fused"][0]), 192)


@needs_window
def test_resnet_step_equals_forced_onednn():
    w0 = window_calls()
    mine = resnet_step()
    assert window_calls() == w0 + 2  # both filters, by the default rule
    for want in (child("dnnl")["step"], child("window")["step"]):
        for got, w in zip(mine, want):
            np.testing.assert_allclose(got, np.array(w), rtol=1e-4,
                                       atol=1e-5)


@needs_window
def test_more_threads_than_rows():
    # batch 1, two output rows: the items are row bands, fewer than the
    # team; the answer does not depend on the thread count
    code = ("import sys, numpy as np\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import test_conv_filter_grad as t\n"
            "case = ((1, 2, 160, 64), (3, 3, 64, 64), 'SAME')\n"
            "x, dy = t.operands(case, 9)\n"
            "np.save(sys.argv[2], t.filter_grad(case, x, dy))\n")
    here = os.path.dirname(os.path.abspath(__file__))
    outs = []
    for threads in ("1", "5"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            f"tfm_fg_{os.getpid()}_{threads}.npy")
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        env["TFMINI_CONV"] = "window"
        subprocess.run([sys.executable, "-c", code, here, path], env=env,
                       check=True, timeout=120)
        outs.append(np.load(path))
        os.unlink(path)
    case = ((1, 2, 160, 64), (3, 3, 64, 64), "SAME")
    x, dy = operands(case, 9)
    assert not np.array_equal(outs[0], outs[1])  # two summation orders
    want = np_conv2d_backprop_filter(x, case[1], dy, (1, 1), "SAME")
    for got in outs:
        close(got, want, 320)


# ---- the bias gradient in the filter gradient's pass ----------------------
# _Conv2DBackpropFilterBias (kernels/cpu/conv_filter_grad_bias.c), made by
# graph/pass_filter_grad_bias.c from Conv2DBackpropFilter and the Sum of
# its dy over N, H, W.

FUSED = "_Conv2DBackpropFilterBias"


def fused_raw(x, fs, dy, strides=1, padding="SAME"):
    """The fused op called directly: (df, db)."""
    from tfmini._opids import ID
    df, db = conv_ops._conv_call(ID[FUSED], (x, dy), strides,
                                 tf_padding(padding), None, list(fs), FUSED)
    return df.numpy(), db.numpy()


def optimized_types(fn, *args):
    cf = fn.get_concrete_function(*args)
    return [op.type for op in cf.optimized_graph.get_operations()]


@pytest.mark.parametrize("i", [0, 1, 3, 5, 8, 11])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_op_equals_separate_ops_and_numpy(i, dtype):
    case = CASES[i]
    x, dy = operands(case, 30 + i)
    w0 = window_calls()
    df, db = fused_raw(x.astype(dtype), case[1], dy.astype(dtype),
                       padding=case[2])
    # the window kernel runs where Conv2DBackpropFilter's rule takes it
    # (float32 only), and then only once for both outputs
    w1 = window_calls()
    separate = filter_grad(case, x, dy, dtype)
    assert window_calls() - w1 == w1 - w0
    assert df.dtype == dtype and db.dtype == dtype
    assert db.shape == (case[1][3],)
    depth = dy.shape[0] * dy.shape[1] * dy.shape[2]
    want = np_conv2d_backprop_filter(x, case[1], dy, (1, 1), case[2])
    if dtype == np.float64:
        np.testing.assert_allclose(df, want, rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(df, separate)
        np.testing.assert_allclose(db, dy.sum((0, 1, 2)), rtol=1e-12,
                                   atol=1e-12)
    else:
        close(df, want, depth)
        close(df, separate, depth)
        sep_db = tf.reduce_sum(dy.astype(dtype), [0, 1, 2]).numpy()
        np.testing.assert_allclose(db, dy.sum((0, 1, 2)), rtol=1e-5,
                                   atol=1e-5 * depth ** 0.5)
        np.testing.assert_allclose(db, sep_db, rtol=1e-5,
                                   atol=1e-5 * depth ** 0.5)


@needs_window
def test_fused_op_takes_the_window_kernel_by_the_rule():
    case = ((4, 9, 33, 64), (3, 3, 64, 64), "SAME")
    x, dy = operands(case, 40)
    w0 = window_calls()
    df, db = fused_raw(x.astype(np.float32), case[1], dy.astype(np.float32))
    assert window_calls() == w0 + 1
    close(df, np_conv2d_backprop_filter(x, case[1], dy, (1, 1), "SAME"),
          4 * 9 * 33)
    np.testing.assert_allclose(db, dy.sum((0, 1, 2)), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("strides", [(2, 2), (1, 2)])
def test_fused_op_with_strides_goes_elsewhere(strides):
    rng = np.random.default_rng(41)
    x = rng.standard_normal((2, 9, 10, 6))
    fs = (3, 3, 6, 64)
    y = tf.nn.conv2d(x.astype(np.float32), np.zeros(fs, np.float32),
                     strides, "SAME")
    dy = rng.standard_normal(tuple(y.shape))
    w0 = window_calls()
    df, db = fused_raw(x.astype(np.float32), fs, dy.astype(np.float32),
                       strides)
    assert window_calls() == w0
    close(df, np_conv2d_backprop_filter(x, fs, dy, strides, "SAME"), 90)
    np.testing.assert_allclose(db, dy.sum((0, 1, 2)), rtol=1e-5, atol=1e-4)


def test_fused_op_errors_name_op_shapes_and_dtypes():
    from tfmini._opids import ID
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fused_raw(x, (3, 3, 3, 2), np.zeros((1, 4, 5, 2), np.float32))
    msg = str(e.value).replace(" ", "")
    assert FUSED in msg and "[1,4,5,2]" in msg
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fused_raw(x, (3, 3, 3, 2), np.zeros((1, 5, 5, 2), np.float64))
    assert FUSED in str(e.value) and "float32" in str(e.value) \
        and "float64" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        conv_ops._conv_call(ID[FUSED], (x.astype(np.float16),
                                        np.zeros((1, 5, 5, 2), np.float16)),
                            1, "SAME", None, [3, 3, 3, 2], FUSED)
    assert FUSED in str(e.value) and "float16" in str(e.value)


def _bias_sum_fn(sum_first=False, keepdims=False, axes=(0, 1, 2),
                 late_input=False):
    fs = [3, 3, 8, 16]

    @tf.function
    def f(x, dy):
        if sum_first:
            s = tf.reduce_sum(dy, list(axes), keepdims=keepdims)
            xx = x * 2.0 if late_input else x
            df = conv_ops.conv2d_backprop_filter(xx, fs, dy, 1, "SAME")
        else:
            df = conv_ops.conv2d_backprop_filter(x, fs, dy, 1, "SAME")
            s = tf.reduce_sum(dy, list(axes), keepdims=keepdims)
        # dy's other reader keeps reading dy itself
        return df, s, tf.reduce_max(dy * 3.0)
    return f


def _bias_operands(dtype=np.float32):
    rng = np.random.default_rng(42)
    return (tf.constant(rng.standard_normal((2, 7, 6, 8)).astype(dtype)),
            tf.constant(rng.standard_normal((2, 7, 6, 16)).astype(dtype)))


@pytest.mark.parametrize("sum_first", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pass_fuses_filter_grad_and_bias_sum(sum_first, dtype):
    x, dy = _bias_operands(dtype)
    f = _bias_sum_fn(sum_first)
    types = optimized_types(f, x, dy)
    assert types.count(FUSED) == 1 and "Conv2DBackpropFilter" not in types
    assert "Sum" not in types
    df, s, m = (t.numpy() for t in f(x, dy))
    xn, dyn = x.numpy().astype(np.float64), dy.numpy().astype(np.float64)
    close(df, np_conv2d_backprop_filter(xn, (3, 3, 8, 16), dyn, (1, 1),
                                        "SAME"), 84)
    np.testing.assert_allclose(s, dyn.sum((0, 1, 2)), rtol=1e-5, atol=1e-5)
    assert m == pytest.approx(3 * dyn.max(), rel=1e-6)


@pytest.mark.parametrize("kw", [dict(keepdims=True), dict(axes=(0, 1)),
                                dict(axes=(1, 2, 3)),
                                dict(sum_first=True, late_input=True)])
def test_pass_leaves_other_sums_of_dy_alone(kw):
    x, dy = _bias_operands()
    f = _bias_sum_fn(**kw)
    types = optimized_types(f, x, dy)
    assert FUSED not in types and "Conv2DBackpropFilter" in types
    df, s, _ = (t.numpy() for t in f(x, dy))
    xn, dyn = x.numpy().astype(np.float64), dy.numpy().astype(np.float64)
    if kw.get("late_input"):
        xn = xn * 2
    close(df, np_conv2d_backprop_filter(xn, (3, 3, 8, 16), dyn, (1, 1),
                                        "SAME"), 84)
    axes = kw.get("axes", (0, 1, 2))
    np.testing.assert_allclose(
        s, dyn.sum(axes, keepdims=kw.get("keepdims", False)), rtol=1e-5,
        atol=1e-5)


def test_pass_is_under_the_epilogue_switch():
    x, dy = _bias_operands()
    before = tf._C.graph_passes()
    tf.config.optimizer.set_experimental_options({"epilogue": False})
    try:
        f = _bias_sum_fn()
        assert FUSED not in optimized_types(f, x, dy)
        off = [t.numpy() for t in f(x, dy)]
    finally:
        tf._C.set_graph_passes(before)
    on = [t.numpy() for t in _bias_sum_fn()(x, dy)]
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_keras_resnet_step_fuses_both_bias_gradients():
    L = tf.keras.layers
    inp = tf.keras.Input((6, 6, 64))
    c = L.Conv2D(64, 3, padding="same", activation="relu")(inp)
    c = L.Conv2D(64, 3, padding="same")(c)
    out = L.Dense(3)(L.GlobalAveragePooling2D()(L.ReLU()(L.Add()([inp,
                                                                  c]))))
    model = tf.keras.Model(inp, out)
    x = tf.constant(np.ones((2, 6, 6, 64), np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        return tape.gradient(loss, model.trainable_variables)
    types = optimized_types(step, x)
    assert types.count(FUSED) == 2
    assert "Conv2DBackpropFilter" not in types
