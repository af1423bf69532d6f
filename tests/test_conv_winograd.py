"""float32 3x3 stride-1 convolutions by Winograd F(4x4, 3x3)
(csrc/kernels/cpu/conv_winograd.c), tried before oneDNN for Conv2D,
_FusedConv2D and Conv2DBackpropInput: forced onto every shape it can
run (TFMINI_CONV=winograd, in a subprocess), equal to the float64 NumPy
reference and to oneDNN's answer (TFMINI_CONV=dnnl) over SAME, VALID
and explicit padding, odd sizes (partial tiles), inputs smaller than a
tile, channels not a multiple of 16 and batch 1; every epilogue of the
fused conv; tape gradients and a traced Keras ResNet-style step equal
the forced-oneDNN run; by default it takes the shapes its measured rule
names and leaves the others to oneDNN.

Tolerance: Winograd's float32 error is relative to the output's scale,
not to each element (the transforms add and subtract values up to 5x
the inputs): measured ~4e-6 of max|y| on the ResNet shape
(benchmarks/conv_winograd_bench.c; oneDNN ~1e-6), so results are
checked as max|got - want| <= 3e-5 * max|want|."""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from specs.spec_conv import (np_conv2d, np_conv2d_backprop_input,
                             tf_padding)
from tfmini.ops import conv_ops

LIB = ctypes.CDLL(tf._C.__file__)
LIB.tfm_conv_winograd_calls.restype = ctypes.c_long
LIB.tfm_conv_dnnl_calls.restype = ctypes.c_long
LIB.tfm_conv_backend.restype = ctypes.c_char_p

REL = 3e-5


def wino_calls():
    return LIB.tfm_conv_winograd_calls()


def dnnl_calls():
    return LIB.tfm_conv_dnnl_calls()


def _probe():
    # inside the default rule: 32 channels, 1024 output pixels
    x = np.ones((1, 32, 32, 32), np.float32)
    before = wino_calls()
    tf.nn.conv2d(x, np.ones((3, 3, 32, 32), np.float32), 1, "SAME")
    return wino_calls() == before + 1


TAKES = _probe()
needs_wino = pytest.mark.skipif(
    not TAKES, reason="the Winograd kernel needs an x86-64 CPU with "
    "AVX-512 and TFMINI_CONV unset")

# (x shape, filter shape, padding): all 3x3, stride 1, no dilation
CASES = [
    ((2, 8, 8, 64), (3, 3, 64, 64), "SAME"),
    ((1, 9, 7, 5), (3, 3, 5, 20), "SAME"),
    ((2, 9, 7, 5), (3, 3, 5, 20), "VALID"),
    ((1, 11, 13, 3), (3, 3, 3, 70), "SAME"),
    ((1, 2, 5, 4), (3, 3, 4, 6), "SAME"),
    ((2, 3, 3, 17), (3, 3, 17, 33), "VALID"),
    ((2, 8, 7, 3), (3, 3, 3, 4), ((1, 2), (0, 1))),
    # pads wider than the window: the input gradient's leading pad is < 0
    ((1, 6, 10, 18), (3, 3, 18, 31), ((3, 0), (2, 4))),
    # several tile blocks, partial tiles at both edges
    ((3, 17, 19, 40), (3, 3, 40, 48), "SAME"),
]

# (name, activation, residual): the fused conv's epilogues
EPILOGUES = [("bias", None, False), ("relu", "relu", False),
             ("relu6", "relu6", False), ("elu", "elu", False),
             ("add", None, True), ("add_relu", "relu", True)]
ACTS = {None: lambda v: v, "relu": lambda v: np.maximum(v, 0),
        "relu6": lambda v: np.clip(v, 0, 6),
        "elu": lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0)))}


def operands(case, seed):
    xs, fs, padding = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs)
    f = rng.standard_normal(fs) * 0.3
    y_shape = np_conv2d(x[:1], f, (1, 1), padding).shape
    dy = rng.standard_normal((xs[0],) + y_shape[1:])
    b = rng.standard_normal(fs[3])
    return x, f, dy, b


def close(got, want, rel=REL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want).max()
    assert err <= rel * scale, f"max err {err:.3g} > {rel} * {scale:.3g}"


def forward(case, x, f, dtype=np.float32):
    return tf.nn.conv2d(x.astype(dtype), f.astype(dtype), 1,
                        tf_padding(case[2])).numpy()


def input_grad(case, f, dy, dtype=np.float32):
    return conv_ops.conv2d_backprop_input(
        list(case[0]), f.astype(dtype), dy.astype(dtype), 1,
        tf_padding(case[2])).numpy()


def fused_fn(case, act, residual):
    pad = tf_padding(case[2])
    acts = {None: lambda v: v, "relu": tf.nn.relu, "relu6": tf.nn.relu6,
            "elu": tf.nn.elu}

    @tf.function
    def fused(x, f, b, r):
        y = tf.nn.bias_add(tf.nn.conv2d(x, f, 1, pad), b)
        if residual:
            y = y + r
        return acts[act](y)
    return fused


def fused_args(case, seed):
    x, f, dy, b = operands(case, seed)
    return [v.astype(np.float32) for v in (x, f, b, dy)]


def fused(case, seed, act, residual):
    args = fused_args(case, seed)
    return fused_fn(case, act, residual)(*args).numpy()


def tape_grads(dtype):
    """d/dx and d/df of sum(sin(conv)) for the first case."""
    x, f, _, _ = operands(CASES[0], 11)
    xv, fv = tf.constant(x.astype(dtype)), tf.constant(f.astype(dtype))
    with tf.GradientTape() as tape:
        tape.watch(xv)
        tape.watch(fv)
        loss = tf.reduce_sum(tf.sin(tf.nn.conv2d(xv, fv, 1, "SAME")))
    return [g.numpy() for g in tape.gradient(loss, [xv, fv])]


def resnet_step():
    """The benchmark's block, smaller: a traced Keras train step's loss
    and gradients (forward convs fused with bias, Relu and the residual
    add; the input gradient of the second conv)."""
    L = tf.keras.layers
    inp = tf.keras.Input((8, 8, 32))
    c = L.Conv2D(32, 3, padding="same", activation="relu")(inp)
    c = L.Conv2D(32, 3, padding="same")(c)
    out = L.Dense(3)(L.GlobalAveragePooling2D()(L.ReLU()(L.Add()([inp,
                                                                  c]))))
    model = tf.keras.Model(inp, out)
    rng = np.random.default_rng(24)
    for v in model.trainable_variables:
        v.assign(rng.standard_normal(v.shape).astype(np.float32) * 0.2)
    x = tf.constant(rng.standard_normal((4, 8, 8, 32)).astype(np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        return [loss] + tape.gradient(loss, model.trainable_variables)
    return [t.numpy() for t in step(x)]


_CHILD = r"""
import json, sys, ctypes, numpy as np
sys.path.insert(0, sys.argv[1])
import tfmini as tf
import test_conv_winograd as t
lib = ctypes.CDLL(tf._C.__file__)
lib.tfm_conv_winograd_calls.restype = ctypes.c_long
calls = lib.tfm_conv_winograd_calls
out = {"fwd": [], "bwd": [], "fused": {}, "wino": {}}
w0 = calls()
for i, case in enumerate(t.CASES):
    x, f, dy, b = t.operands(case, i)
    out["fwd"].append(t.forward(case, x, f).tolist())
    out["bwd"].append(t.input_grad(case, f, dy).tolist())
out["wino"]["cases"], w0 = calls() - w0, calls()
for i in (0, 3, 7):
    for name, act, res in t.EPILOGUES:
        out["fused"][f"{i}/{name}"] = t.fused(t.CASES[i], i, act,
                                              res).tolist()
out["wino"]["fused"], w0 = calls() - w0, calls()
out["tape"] = [g.tolist() for g in t.tape_grads(np.float32)]
out["wino"]["tape"], w0 = calls() - w0, calls()
out["step"] = [v.tolist() for v in t.resnet_step()]
out["wino"]["step"] = calls() - w0
print(json.dumps(out))
"""

_RUNS = {}


def child(mode):
    """Every result above with TFMINI_CONV=mode, in a fresh process (the
    variable is read once)."""
    if mode not in _RUNS:
        env = dict(os.environ, TFMINI_CONV=mode)
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run([sys.executable, "-c", _CHILD, here], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        _RUNS[mode] = json.loads(r.stdout)
    return _RUNS[mode]


@needs_wino
@pytest.mark.parametrize("i", range(len(CASES)))
def test_forced_forward_matches_float64_and_onednn(i):
    case = CASES[i]
    x, f, _, _ = operands(case, i)
    want = np_conv2d(x, f, (1, 1), case[2])
    got, ref = child("winograd")["fwd"][i], child("dnnl")["fwd"][i]
    close(got, want)
    close(ref, want)
    close(got, ref)


@needs_wino
@pytest.mark.parametrize("i", range(len(CASES)))
def test_forced_input_grad_matches_float64_and_onednn(i):
    case = CASES[i]
    x, f, dy, _ = operands(case, i)
    want = np_conv2d_backprop_input(case[0], f, dy, (1, 1), case[2])
    got, ref = child("winograd")["bwd"][i], child("dnnl")["bwd"][i]
    close(got, want)
    close(ref, want)
    close(got, ref)


@needs_wino
@pytest.mark.parametrize("i", (0, 3, 7))
@pytest.mark.parametrize("name,act,residual", EPILOGUES)
def test_forced_fused_epilogues(i, name, act, residual):
    case = CASES[i]
    x, f, dy, b = operands(case, i)
    v = np_conv2d(x, f, (1, 1), case[2]) + b
    if residual:
        v = v + dy
    want = ACTS[act](v)
    key = f"{i}/{name}"
    got, ref = child("winograd")["fused"][key], child("dnnl")["fused"][key]
    close(got, want)
    close(got, ref)


def test_epilogues_are_fused_nodes():
    # the fused results above come from _FusedConv2D, not Conv2D + ops
    for _, act, residual in EPILOGUES:
        fn = fused_fn(CASES[0], act, residual)
        cf = fn.get_concrete_function(*fused_args(CASES[0], 0))
        types = [op.type for op in cf.optimized_graph.get_operations()]
        assert "_FusedConv2D" in types, (act, residual, types)


@needs_wino
def test_forced_run_took_winograd_everywhere():
    got = child("winograd")["wino"]
    assert got["cases"] == 2 * len(CASES)  # forward and input gradient
    assert got["fused"] == 3 * len(EPILOGUES)
    assert got["tape"] == 2  # the forward and the input gradient
    # the step's 2 forward convs and 1 input gradient, at least (its
    # trace may run a conv more)
    assert got["step"] >= 3
    assert set(child("dnnl")["wino"].values()) == {0}


@needs_wino
def test_tape_gradients_match_float64_and_onednn():
    want = tape_grads(np.float64)
    for got, ref, w in zip(child("winograd")["tape"], child("dnnl")["tape"],
                           want):
        close(got, w, 1e-4)
        close(got, ref, 1e-4)


@needs_wino
def test_traced_resnet_step_equals_forced_onednn():
    for got, ref in zip(child("winograd")["step"], child("dnnl")["step"]):
        close(got, ref, 1e-4)


@needs_wino
@pytest.mark.parametrize("xs,fs,kw,taken", [
    ((2, 32, 32, 64), (3, 3, 64, 64), {}, True),      # the ResNet block's
    ((4, 32, 32, 32), (3, 3, 32, 64), {}, True),
    ((2, 16, 32, 16), (3, 3, 16, 64), {}, True),
    ((1, 8, 8, 64), (3, 3, 64, 64), {}, False),       # too few pixels
    ((2, 32, 32, 3), (3, 3, 3, 32), {}, False),       # too few channels
    ((2, 32, 32, 16), (3, 3, 16, 16), {}, False),     # a tie: oneDNN
    ((2, 32, 32, 64), (5, 5, 64, 64), {}, False),     # not 3x3
    ((2, 32, 32, 64), (3, 3, 64, 64), {"strides": 2}, False),
    ((2, 32, 32, 64), (3, 3, 64, 64), {"dilations": 2}, False),
])
def test_default_rule(xs, fs, kw, taken):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    f = (rng.standard_normal(fs) * 0.1).astype(np.float32)
    strides, dil = kw.get("strides", 1), kw.get("dilations", 1)
    w0, d0 = wino_calls(), dnnl_calls()
    got = tf.nn.conv2d(x, f, strides, "SAME", dilations=dil).numpy()
    assert wino_calls() == w0 + taken
    if not taken and LIB.tfm_conv_backend().decode() == "dnnl":
        assert dnnl_calls() == d0 + 1  # still oneDNN
    s, d = (strides,) * 2, (dil,) * 2
    close(got, np_conv2d(x.astype(np.float64), f.astype(np.float64), s,
                         "SAME", d))


@needs_wino
def test_default_rule_input_grad():
    rng = np.random.default_rng(4)
    f = (rng.standard_normal((3, 3, 64, 64)) * 0.1).astype(np.float32)
    dy = rng.standard_normal((2, 32, 32, 64)).astype(np.float32)
    w0 = wino_calls()
    got = conv_ops.conv2d_backprop_input([2, 32, 32, 64], f, dy, 1,
                                         "SAME").numpy()
    assert wino_calls() == w0 + 1
    close(got, np_conv2d_backprop_input((2, 32, 32, 64), f.astype(float),
                                        dy.astype(float), (1, 1), "SAME"))


def test_float64_does_not_take_it():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 64, 64, 32))
    f = rng.standard_normal((3, 3, 32, 32)) * 0.1
    w0 = wino_calls()
    got = tf.nn.conv2d(x, f, 1, "SAME").numpy()
    assert got.dtype == np.float64 and wino_calls() == w0
    np.testing.assert_allclose(got, np_conv2d(x, f, (1, 1), "SAME"),
                               rtol=1e-10, atol=1e-10)


@needs_wino
def test_threads_do_not_change_the_answer():
    # one thread against several: blocks split differently, same sums
    code = ("import sys, numpy as np\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import tfmini as tf\n"
            "rng = np.random.default_rng(9)\n"
            "x = rng.standard_normal((3, 30, 31, 32)).astype(np.float32)\n"
            "f = rng.standard_normal((3, 3, 32, 40)).astype(np.float32)\n"
            "y = tf.nn.conv2d(x, f, 1, 'SAME').numpy()\n"
            "sys.stdout.buffer.write(y.tobytes())\n")
    here = os.path.dirname(os.path.abspath(__file__))
    outs = []
    for n in ("1", "5"):
        env = dict(os.environ, OMP_NUM_THREADS=n, TFMINI_CONV="winograd")
        r = subprocess.run([sys.executable, "-c", code, here], env=env,
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        outs.append(r.stdout)
    assert outs[0] == outs[1]
