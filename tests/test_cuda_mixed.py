"""Mixed precision on the GPU, checked without one (issue 21): a CUDA
build's kernel table says which GPU kernels take float16 and bfloat16
themselves (the dispatcher casts around the rest), a device that is not
the GPU's keeps casting, and tools/gpu_bench.py fails clearly without a
GPU. tests/gpu/test_gpu_mixed.py runs the kernels on a GPU."""
import ctypes
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _fn(name, restype, argtypes):
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend")
    try:
        f = getattr(ctypes.CDLL(_C.__file__), name)
    except AttributeError:
        pytest.fail(f"a CUDA build lacks {name}")
    f.restype, f.argtypes = restype, argtypes
    return f


def test_gpu_table_lists_the_half_kernels():
    half = _fn("tfm_cuda_half_kernel", ctypes.c_int, [ctypes.c_char_p])
    has = _fn("tfm_cuda_has_kernel", ctypes.c_int, [ctypes.c_char_p])
    # What a Keras mixed_float16 / mixed_bfloat16 Dense model runs in its
    # compute dtype, forward and backward.
    for op in ("BatchMatMulV2", "AddV2", "Sub", "Mul", "RealDiv", "Relu",
               "ReluGrad", "Sigmoid", "Tanh", "Exp", "Neg", "Maximum",
               "LeakyRelu", "Less", "Equal"):
        assert half(op.encode()) == 1, op
        assert has(op.encode()) == 1, op
    # Cast takes every dtype anyway; reductions and softmax run in
    # float32 with casts around them (GPU casts now); unknown is -1.
    for op in ("Cast", "Sum", "Softmax",
               "SparseSoftmaxCrossEntropyWithLogits"):
        assert half(op.encode()) == 0, op
    assert half(b"NoSuchOp") == -1


def test_matmul_counters_exist_and_start_at_zero_without_a_gpu():
    calls = _fn("tfm_cuda_matmul_calls", ctypes.c_long, [ctypes.c_int])
    if tf.config._gpu_count():
        pytest.skip("a GPU is present: tests/gpu/test_gpu_mixed.py counts")
    # 3 and 4: _FusedMatMul epilogues run and declined (kernels_matmul.c)
    assert [calls(i) for i in range(5)] == [0, 0, 0, 0, 0]
    assert calls(5) == -1


@pytest.fixture
def fake():
    _C._enable_fake_device(True)
    yield
    _C._enable_fake_device(True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_ops_on_another_device_still_cast_around_the_kernel(fake,
                                                                 dtype):
    """The GPU's say-so is by its own table: the FAKE device (CPU kernels,
    which take no float16) keeps the float32 upcast, so its results are
    the CPU's bit for bit."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    nd = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(nd)
    b = rng.standard_normal((7, 3)).astype(nd)

    def run(device):
        with tf.device(device):
            x, y = tf.identity(tf.constant(a)), tf.identity(tf.constant(b))
            return (tf.nn.relu(tf.matmul(x, y)) + 1).numpy()

    np.testing.assert_array_equal(run("/device:FAKE:0").view(np.uint16),
                                  run("/CPU:0").view(np.uint16))


def test_gpu_bench_fails_clearly_without_a_gpu():
    if tf.config._gpu_count():
        pytest.skip("a GPU is present: tools/gpu_check.sh runs the bench")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_bench.py")],
                       capture_output=True, text=True, timeout=300, env=env,
                       cwd=str(ROOT))
    assert r.returncode != 0
    assert "no CUDA GPU" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
