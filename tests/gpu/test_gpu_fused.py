"""Fused elementwise nodes of traced functions on the GPU, compiled with
NVRTC (csrc/graph/fused_nvrtc.c, Note [Fused programs on the
GPU]): the values the CPU gives (bit for bit for ops the CPU's native
path promises exact: +, -, *, /, sqrt, comparisons and selects; within
float tolerance for CUDA's transcendental functions), one compile per
program and process (the second call hits the cache), and the same
values with TFMINI_NVRTC=0 (the program then runs op by op). Skips
without a GPU (conftest.py).

The bodies take the device from DEVICE, so that they can be checked on a
machine without a GPU with DEVICE = "/CPU:0" (the counter checks are
then skipped): TFM_FUSED_TEST_DEVICE=/CPU:0 python3 -m pytest
--noconftest tests/gpu/test_gpu_fused.py, as was done when it was
written."""
import ctypes
import os

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

DEVICE = os.environ.get("TFM_FUSED_TEST_DEVICE", "/GPU:0")
ON_GPU = "GPU" in DEVICE


def counts():
    """(compiled, cache hits, launched, declined) of fused_nvrtc.c, or None
    in a build without it."""
    try:
        f = ctypes.CDLL(_C.__file__).tfm_cuda_fused_counts
    except AttributeError:
        return None
    v = [ctypes.c_long() for _ in range(4)]
    f(*[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def _rand(shape, dtype, seed, lo=-2.0, hi=2.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, shape).astype(dtype)


def exact_chain(x, b, s):
    """Only exactly rounded ops: the GPU must give the CPU's bits."""
    y = (x * b + s) / (b * b + 1.0)
    y = tf.maximum(y, -0.5) - tf.sqrt(tf.abs(x)) * s
    return tf.nn.relu(y) + tf.square(x - b)


def heavy_chain(x, b, s):
    y = tf.exp(-x * x) * tf.tanh(x + b) + tf.math.log1p(tf.abs(x)) * s
    return tf.sigmoid(y) * tf.nn.gelu(x) + tf.math.softplus(b - x)


def two_outputs(x, b, s):
    h = tf.exp(x) * s             # read again after the fused node
    return tf.tanh(h + b), h


def _traced(fn, device):
    @tf.function
    def f(x, b, s):
        with tf.device(device):
            out = fn(x, b, s)
        return out
    return f


def _inputs(dtype, seed=0):
    x = _rand((64, 257), dtype, seed)
    b = _rand((257,), dtype, seed + 1)       # periodic: a bias
    s = np.array(0.75, dtype)                # scalar
    return [tf.constant(v) for v in (x, b, s)]


def _values(out):
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(t.numpy()) for t in out]


def _cpu(fn, args):
    return _values(_traced(fn, "/CPU:0")(*args))


CASES = [
    ("exact", exact_chain, True),
    ("heavy", heavy_chain, False),
    ("two_outputs", two_outputs, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64],
                         ids=["float32", "float64"])
@pytest.mark.parametrize("name,fn,exact", CASES, ids=[c[0] for c in CASES])
def test_values_match_the_cpu(name, fn, exact, dtype):
    args = _inputs(dtype)
    before = counts()
    got = _values(_traced(fn, DEVICE)(*args))
    want = _cpu(fn, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    if ON_GPU:
        after = counts()
        assert after is not None, "a CUDA build without fused_nvrtc.c"
        assert after[2] > before[2], "no fused kernel ran on the GPU"


def test_second_call_hits_the_cache():
    f = _traced(heavy_chain, DEVICE)
    args = _inputs(np.float32, seed=5)
    first = _values(f(*args))
    c1 = counts()
    second = _values(f(*[tf.constant(a.numpy() * 1.0) for a in args]))
    c2 = counts()
    np.testing.assert_array_equal(first[0], second[0])
    if ON_GPU:
        assert c2[0] == c1[0], "compiled again"
        assert c2[1] > c1[1] and c2[2] > c1[2]


def test_nvrtc_off_gives_the_same_values(monkeypatch):
    args = _inputs(np.float32, seed=9)
    on = _values(_traced(exact_chain, DEVICE)(*args))
    monkeypatch.setenv("TFMINI_NVRTC", "0")
    c1 = counts()
    off = _values(_traced(exact_chain, DEVICE)(*args))
    c2 = counts()
    np.testing.assert_array_equal(on[0], off[0])
    if ON_GPU:
        assert c2[2] == c1[2] and c2[3] > c1[3]
    heavy_off = _values(_traced(heavy_chain, DEVICE)(*args))
    monkeypatch.delenv("TFMINI_NVRTC")
    heavy_on = _values(_traced(heavy_chain, DEVICE)(*args))
    np.testing.assert_allclose(heavy_on[0], heavy_off[0], rtol=1e-5,
                               atol=1e-5)


def test_outputs_live_on_the_device():
    out = _traced(two_outputs, DEVICE)(*_inputs(np.float32, seed=3))
    for t in out:
        assert t.device.endswith(DEVICE.lstrip("/").replace("/", ""))


def test_gradient_through_a_fused_node():
    """Under a tape the program runs op by op (the tape records them):
    gradients as on the CPU."""
    args = _inputs(np.float64, seed=11)

    def grads(device):
        @tf.function
        def g(x, b, s):
            with tf.GradientTape() as tape:
                tape.watch(x)
                with tf.device(device):
                    y = tf.reduce_sum(heavy_chain(x, b, s))
            return tape.gradient(y, x)
        return g(*args).numpy()

    np.testing.assert_allclose(grads(DEVICE), grads("/CPU:0"), rtol=1e-12,
                               atol=1e-12)
