"""float32 convolutions through oneDNN's primitives (csrc/kernels/cpu/
conv_dnnl.c) against the float64 NumPy references and against the im2col
path (TFMINI_CONV=im2col, in a subprocess): forward, input gradient and
filter gradient over strides, paddings (SAME, VALID, explicit),
dilations, odd shapes, batch 1 and channels 1/3/64; the primitive cache
past its size; concurrent calls; and the errors for bad shapes."""
import ctypes
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tfmini as tf
from specs.spec_conv import (np_conv2d, np_conv2d_backprop_filter,
                             np_conv2d_backprop_input, tf_conv_three)

LIB = ctypes.CDLL(tf._C.__file__)
LIB.tfm_conv_backend.restype = ctypes.c_char_p
LIB.tfm_conv_dnnl_calls.restype = ctypes.c_long
LIB.tfm_conv_window_calls.restype = ctypes.c_long


def backend():
    return LIB.tfm_conv_backend().decode()


def dnnl_calls():
    # stride-1 filter gradients run the window kernel before oneDNN
    # (conv_filter_grad_gemm.c; test_conv_filter_grad.py)
    return LIB.tfm_conv_dnnl_calls() + LIB.tfm_conv_window_calls()


needs_dnnl = pytest.mark.skipif(backend() != "dnnl",
                                reason="tfmini built without oneDNN "
                                "(Debian libdnnl-dev) or TFMINI_CONV=im2col")

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
    ((2, 9, 9, 16), (1, 1, 16, 8), (2, 2), "SAME", (1, 1)),
    ((2, 8, 7, 3), (3, 3, 3, 4), (1, 1), ((1, 2), (0, 1)), (1, 1)),
    ((1, 6, 6, 2), (3, 3, 2, 3), (2, 2), ((2, 0), (1, 3)), (1, 1)),
    ((2, 10, 10, 5), (3, 3, 5, 7), (1, 1), ((0, 0), (2, 2)), (2, 1)),
    ((1, 5, 5, 3), (5, 5, 3, 2), (1, 1), "VALID", (1, 1)),
    ((2, 4, 4, 3), (1, 1, 3, 2), (3, 3), "SAME", (1, 1)),
]


def operands(case, seed):
    xs, fs, strides, padding, dil = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs)
    f = rng.standard_normal(fs)
    y = np_conv2d(x, f, strides, padding, dil)
    dy = rng.standard_normal(y.shape)
    return x, f, dy


def run_three(case, x, f, dy):
    """(y, dx, df) of the float32 path."""
    x32, f32, dy32 = (a.astype(np.float32) for a in (x, f, dy))
    return tuple(t.numpy() for t in tf_conv_three(case, x32, f32, dy32))


def close(got, want, depth):
    # float32 sums of `depth` products of unit normals
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=2e-5 * max(depth, 1) ** 0.5 * 4)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_matches_float64_reference(i):
    case = CASES[i]
    xs, fs, strides, padding, dil = case
    x, f, dy = operands(case, i)
    before = dnnl_calls()
    y, dx, df = run_three(case, x, f, dy)
    close(y, np_conv2d(x, f, strides, padding, dil), fs[0] * fs[1] * fs[2])
    close(dx, np_conv2d_backprop_input(xs, f, dy, strides, padding, dil),
          fs[0] * fs[1] * fs[3])
    close(df, np_conv2d_backprop_filter(x, fs, dy, strides, padding, dil),
          xs[0] * dy.shape[1] * dy.shape[2])
    if backend() == "dnnl":
        # Every shape here has a JIT implementation on an x86-64 CPU.
        assert dnnl_calls() == before + 3


def test_tape_gradients_match_float64():
    case = ((2, 9, 9, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1))
    x, f, _ = operands(case, 7)
    grads = {}
    for dt in (np.float32, np.float64):
        xv, fv = tf.constant(x.astype(dt)), tf.constant(f.astype(dt))
        with tf.GradientTape() as tape:
            tape.watch(xv)
            tape.watch(fv)
            loss = tf.reduce_sum(tf.nn.conv2d(xv, fv, 2, "SAME") ** 2)
        grads[dt] = [g.numpy() for g in tape.gradient(loss, [xv, fv])]
    for g32, g64 in zip(grads[np.float32], grads[np.float64]):
        np.testing.assert_allclose(g32, g64, rtol=1e-3,
                                   atol=1e-3 * np.abs(g64).max())


_CHILD = r"""
import json, sys, numpy as np, ctypes
sys.path.insert(0, sys.argv[1])
import tfmini as tf
import test_conv_dnnl as t
lib = ctypes.CDLL(tf._C.__file__)
lib.tfm_conv_backend.restype = ctypes.c_char_p
out = {"backend": lib.tfm_conv_backend().decode(), "results": []}
for i, case in enumerate(t.CASES):
    x, f, dy = t.operands(case, i)
    out["results"].append([a.tolist() for a in t.run_three(case, x, f, dy)])
lib.tfm_conv_window_calls.restype = ctypes.c_long
out["calls"] = lib.tfm_conv_dnnl_calls() + lib.tfm_conv_window_calls()
print(json.dumps(out))
"""


def child(env_extra):
    env = dict(os.environ, **env_extra)
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _CHILD, here], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@needs_dnnl
def test_dnnl_and_im2col_paths_agree():
    im2col = child({"TFMINI_CONV": "im2col"})
    assert im2col["backend"] == "im2col" and im2col["calls"] == 0
    dnnl = child({})
    assert dnnl["backend"] == "dnnl"
    assert dnnl["calls"] == 3 * len(CASES)
    for case, a, b in zip(CASES, im2col["results"], dnnl["results"]):
        for got, want in zip(b, a):
            close(np.array(got), np.array(want), 64)


def test_im2col_forced_runs_no_primitive():
    r = child({"TFMINI_CONV": "im2col"})
    assert r["backend"] == "im2col" and r["calls"] == 0


@needs_dnnl
def test_cache_past_its_size_and_clear():
    # More shapes than the cache holds (32), then the first again: the
    # evicted primitive is rebuilt and still right.
    rng = np.random.default_rng(3)
    f = rng.standard_normal((3, 3, 2, 3))
    xs = [rng.standard_normal((1, 5 + i, 6, 2)) for i in range(40)]
    for x in xs + xs[:3]:
        y = tf.nn.conv2d(x.astype(np.float32), f.astype(np.float32), 1,
                         "SAME")
        close(y.numpy(), np_conv2d(x, f, (1, 1), "SAME"), 18)
    LIB.tfm_conv_dnnl_clear()
    y = tf.nn.conv2d(xs[0].astype(np.float32), f.astype(np.float32), 1,
                     "SAME")
    close(y.numpy(), np_conv2d(xs[0], f, (1, 1), "SAME"), 18)


def test_concurrent_calls_share_primitives():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 12, 12, 8))
    f = rng.standard_normal((3, 3, 8, 16))
    want = np_conv2d(x, f, (1, 1), "SAME")
    x32, f32 = x.astype(np.float32), f.astype(np.float32)
    errors = []

    def work():
        try:
            for _ in range(10):
                close(tf.nn.conv2d(x32, f32, 1, "SAME").numpy(), want, 72)
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_bad_shapes_still_name_op_shapes_and_dtypes():
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.nn.conv2d(x, np.zeros((3, 3, 4, 2), np.float32), 1, "SAME")
    msg = str(e.value)
    assert "Conv2D" in msg and "[1,5,5,3]" in msg.replace(" ", "")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.nn.conv2d(x, np.zeros((3, 3, 3, 2), np.float64), 1, "SAME")
    msg = str(e.value)
    assert "Conv2D" in msg and "float32" in msg and "float64" in msg
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)) as e:
        tf.nn.conv2d(x, np.zeros((7, 7, 3, 2), np.float32), 1, "VALID")
    assert "Conv2D" in str(e.value)


_THREADS_CHILD = r"""
import ctypes, sys, numpy as np
import tfmini as tf
gomp = ctypes.CDLL("libgomp.so.1")
tf.config.threading.set_intra_op_parallelism_threads(1)
before = gomp.omp_get_max_threads()
rng = np.random.default_rng(5)
x = rng.standard_normal((2, 8, 8, 64)).astype(np.float32)
f = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
y = tf.nn.conv2d(x, f, 1, "SAME").numpy()
print(before, gomp.omp_get_max_threads(), float(np.abs(y).sum()))
"""


def test_honours_and_restores_the_thread_setting():
    # The filter reorder runs with one thread and restores the setting
    # after: the caller's intra-op threads must come out unchanged.
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
    except OSError:
        pytest.skip("no libgomp.so.1 (tfmini built without GNU OpenMP)")
    before = gomp.omp_get_max_threads()
    x = np.ones((1, 6, 6, 64), np.float32)
    tf.nn.conv2d(x, np.ones((3, 3, 64, 8), np.float32), 1, "SAME")
    assert gomp.omp_get_max_threads() == before
    r = subprocess.run([sys.executable, "-c", _THREADS_CHILD],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    b, a, _ = r.stdout.split()
    assert b == a == "1"
