"""bfloat16 Conv2D and its two backprops (csrc/kernels/cpu/conv_dnnl.c):
oneDNN's bf16 primitives with float32 accumulation where the CPU has
AVX512_BF16, the dispatcher's float32 upcast elsewhere and under
TFMINI_CONV=im2col. Both must equal the float32 conv of the same
bfloat16 inputs, rounded once to bfloat16; a mixed_bfloat16 CNN trains
under fit."""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import keras
from tfmini.keras import mixed_precision as mp
from specs.spec_conv import tf_conv_three, tf_padding

LIB = ctypes.CDLL(tf._C.__file__)
LIB.tfm_conv_dnnl_bf16_calls.restype = ctypes.c_long
BF16 = tf.bfloat16


def native():
    return LIB.tfm_conv_bf16_native() == 1


def bf16_calls():
    return LIB.tfm_conv_dnnl_bf16_calls()


needs_native = pytest.mark.skipif(
    not native(), reason="no native bfloat16 convolutions here: tfmini "
    "built without oneDNN, TFMINI_CONV=im2col, or a CPU without AVX512_BF16")

# (x shape, filter shape, strides, padding, dilations)
CASES = [
    ((2, 9, 10, 3), (3, 3, 3, 8), (1, 1), "SAME", (1, 1)),
    ((2, 9, 10, 3), (3, 3, 3, 8), (2, 2), "SAME", (1, 1)),
    ((2, 9, 10, 3), (3, 2, 3, 4), (3, 2), "VALID", (1, 1)),
    ((1, 7, 5, 1), (2, 3, 1, 5), (1, 2), "SAME", (1, 1)),
    ((1, 11, 13, 3), (3, 3, 3, 6), (1, 1), "SAME", (2, 2)),
    ((2, 12, 9, 4), (2, 3, 4, 3), (2, 1), "VALID", (1, 3)),
    ((3, 8, 8, 64), (3, 3, 64, 64), (1, 1), "SAME", (1, 1)),
    ((2, 8, 8, 64), (1, 1, 64, 32), (1, 1), "VALID", (1, 1)),
    ((2, 8, 7, 3), (3, 3, 3, 4), (1, 1), ((1, 2), (0, 1)), (1, 1)),
    ((1, 6, 6, 2), (3, 3, 2, 3), (2, 2), ((2, 0), (1, 3)), (1, 1)),
]


def round_bf16(a):
    """float32 -> nearest bfloat16 (ties to even), widened back."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def operands(case, seed):
    xs, fs, strides, padding, dil = case
    rng = np.random.default_rng(seed)
    x = round_bf16(rng.standard_normal(xs).astype(np.float32))
    f = round_bf16(rng.standard_normal(fs).astype(np.float32))
    y = tf.nn.conv2d(x, f, strides, tf_padding(padding), dilations=dil)
    dy = round_bf16(rng.standard_normal(y.shape).astype(np.float32))
    return x, f, dy


def run_three(case, x, f, dy, dtype):
    """(y, dx, df) in `dtype`, as float32 arrays."""
    out = tf_conv_three(case, *(tf.cast(a, dtype) for a in (x, f, dy)))
    for t in out:
        assert t.dtype == dtype
    return [tf.cast(t, tf.float32).numpy() for t in out]


def close_bf16(got, want32, ulps=0.5):
    """got: a bfloat16 result; want32: the float32 one on the same
    inputs. One rounding apart (half an ulp, at most 2**-8 relative, with
    room for an f32 sum whose order differs); a sum accumulated in
    bfloat16 would be several ulps off on the deep cases. Two bfloat16
    results may round apart: one ulp."""
    assert np.all(np.isfinite(got))
    tol = ulps * 2.0 ** -7 * np.abs(want32) + 1e-4 * np.abs(want32).max()
    bad = np.abs(got - want32) > tol
    assert not bad.any(), (np.abs(got - want32).max(), got[bad][:5],
                           want32[bad][:5])


@pytest.mark.parametrize("i", range(len(CASES)))
def test_matches_float32_on_the_rounded_inputs(i):
    case = CASES[i]
    x, f, dy = operands(case, i)
    want = run_three(case, x, f, dy, tf.float32)
    before = bf16_calls()
    got = run_three(case, x, f, dy, BF16)
    for g, w in zip(got, want):
        close_bf16(g, w)
    if native():
        # All three ran in oneDNN's bf16 primitives (every shape here
        # has JIT code on an AVX512_BF16 CPU), none through the upcast.
        assert bf16_calls() == before + 3


@needs_native
def test_deep_sums_keep_float32_accuracy():
    # 3*3*256 products per output: bfloat16 accumulation would drift by
    # percents; float32 accumulation rounds once.
    rng = np.random.default_rng(11)
    x = round_bf16(rng.standard_normal((1, 6, 6, 256)).astype(np.float32))
    f = round_bf16(rng.standard_normal((3, 3, 256, 16)).astype(np.float32))
    want = tf.nn.conv2d(x, f, 1, "SAME").numpy()
    got = tf.cast(tf.nn.conv2d(tf.cast(x, BF16), tf.cast(f, BF16), 1,
                               "SAME"), tf.float32).numpy()
    np.testing.assert_array_equal(got != 0, want != 0)
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-3)
    assert np.median(rel) < 2.0 ** -9


def test_tape_gradients_in_bfloat16():
    case = ((2, 9, 9, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1))
    x, f, _ = operands(case, 7)
    grads = {}
    for dt in (tf.float32, BF16):
        xv, fv = tf.cast(x, dt), tf.cast(f, dt)
        with tf.GradientTape() as tape:
            tape.watch(xv)
            tape.watch(fv)
            y = tf.nn.conv2d(xv, fv, 2, "SAME")
            loss = tf.reduce_sum(y * tf.cast(tf.range(4), dt))
        gs = tape.gradient(loss, [xv, fv])
        assert all(g.dtype == dt for g in gs)
        grads[dt] = [tf.cast(g, tf.float32).numpy() for g in gs]
    for g, w in zip(grads[BF16], grads[tf.float32]):
        close_bf16(g, w)


def test_traced_function_equals_eager():
    case = CASES[0]
    x, f, _ = operands(case, 3)
    xb, fb = tf.cast(x, BF16), tf.cast(f, BF16)
    conv = tf.function(lambda a, b: tf.nn.conv2d(a, b, 1, "SAME"))
    before = bf16_calls()
    traced = tf.cast(conv(xb, fb), tf.float32).numpy()
    eager = tf.cast(tf.nn.conv2d(xb, fb, 1, "SAME"), tf.float32).numpy()
    np.testing.assert_array_equal(traced, eager)
    if native():
        assert bf16_calls() == before + 2


def test_mixed_dtypes_name_op_and_dtypes():
    x = tf.cast(np.zeros((1, 5, 5, 3), np.float32), BF16)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.nn.conv2d(x, np.zeros((3, 3, 3, 2), np.float32), 1, "SAME")
    msg = str(e.value)
    assert "Conv2D" in msg and "bfloat16" in msg and "float32" in msg
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.nn.conv2d(x, tf.cast(np.zeros((3, 3, 4, 2), np.float32), BF16),
                     1, "SAME")
    assert "Conv2D" in str(e.value)


_CHILD = r"""
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
import tfmini as tf
import test_conv_bf16 as t
out = {"native": t.native(), "results": []}
for i, case in enumerate(t.CASES):
    x, f, dy = t.operands(case, i)
    out["results"].append([a.tolist()
                           for a in t.run_three(case, x, f, dy, tf.bfloat16)])
out["calls"] = t.bf16_calls()
print(json.dumps(out))
"""


def test_im2col_forces_the_float32_upcast_and_matches():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TFMINI_CONV="im2col")
    r = subprocess.run([sys.executable, "-c", _CHILD, here], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["native"] is False and out["calls"] == 0
    for i, case in enumerate(CASES):
        x, f, dy = operands(case, i)
        want = run_three(case, x, f, dy, tf.float32)
        ours = run_three(case, x, f, dy, BF16)
        for up, w, o in zip(out["results"][i], want, ours):
            up = np.array(up, np.float32)
            # The upcast rounds the float32 result once: exactly the
            # rounded reference up to the f32 sum's order.
            close_bf16(up, w)
            close_bf16(o, up, ulps=1)


def _cnn(policy):
    mp.set_global_policy(policy)
    L = keras.layers
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((12, 12, 3)),
        L.Conv2D(8, 3, padding="same", activation="relu"),
        L.MaxPooling2D(2),
        L.Conv2D(16, 3, padding="same", activation="relu"),
        L.MaxPooling2D(2),
        L.Flatten(),
        L.Dense(2),
        L.Activation("softmax", dtype="float32")])
    model.compile(keras.optimizers.Adam(0.01),
                  "sparse_categorical_crossentropy")
    return model


def test_mixed_bfloat16_cnn_trains_under_fit():
    # Label: is the bright square in the image's left or right half.
    rng = np.random.default_rng(0)
    n = 256
    x = rng.random((n, 12, 12, 3), dtype=np.float32) * 0.2
    y = rng.integers(0, 2, n)
    for i in range(n):
        c = rng.integers(0, 4) + 6 * y[i]
        r = rng.integers(0, 9)
        x[i, r:r + 3, c:c + 2, :] += 1.0
    try:
        model = _cnn("mixed_bfloat16")
        assert model.layers[0].compute_dtype == "bfloat16"
        before = bf16_calls()
        hist = model.fit(x, y, epochs=4, batch_size=32, verbose=0)
        ran = bf16_calls() - before
    finally:
        mp.set_global_policy(None)
    loss = hist.history["loss"]
    assert all(np.isfinite(loss))
    assert loss[-1] < 0.5 * loss[0], loss
    assert all(w.dtype == tf.float32 for w in model.weights)
    if native():
        # Two convs, each forward + filter gradient (+ input gradient for
        # the second), per step: 8 steps per epoch.
        assert ran >= 4 * 8 * 5
    else:
        assert ran == 0


def test_repeated_calls_leak_nothing():
    # Each call allocates the blocked filter and the scratchpad, and
    # creates oneDNN memory objects and a stream: all given back.
    import gc
    from tfmini import _C

    def rss():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    case = CASES[6]
    x, f, dy = operands(case, 5)

    def work():
        for _ in range(40):
            run_three(case, x, f, dy, BF16)

    work()
    gc.collect()
    counts0, rss0 = _C.live_counts(), rss()
    work()
    gc.collect()
    assert _C.live_counts() == counts0
    if not os.environ.get("TFMINI_UNDER_SANITIZER"):
        assert rss() - rss0 < 16 << 20


def test_concurrent_calls():
    import threading
    case = CASES[0]
    x, f, dy = operands(case, 9)
    want = run_three(case, x, f, dy, BF16)
    errors = []

    def work():
        try:
            for _ in range(5):
                for g, w in zip(run_three(case, x, f, dy, BF16), want):
                    np.testing.assert_array_equal(g, w)
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
