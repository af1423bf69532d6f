"""MatMul's float32 GEMM backend (csrc/kernels/cpu/gemm_dnnl.c): oneDNN
when the build found it, Eigen otherwise or with TFMINI_GEMM=eigen. Both
must give NumPy's products for every transpose, batch and edge shape."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf

SHAPES = [(1, 1, 1), (3, 5, 7), (32, 784, 128), (65, 33, 17), (0, 4, 3),
          (4, 0, 3), (4, 3, 0), (130, 70, 129)]


def backend():
    lib = ctypes.CDLL(tf._C.__file__)
    lib.tfm_gemm_backend.restype = ctypes.c_char_p
    return lib.tfm_gemm_backend().decode()


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_matches_numpy(m, k, n, ta, tb):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    sa = np.ascontiguousarray(a.T) if ta else a
    sb = np.ascontiguousarray(b.T) if tb else b
    got = tf.matmul(sa, sb, transpose_a=bool(ta), transpose_b=bool(tb))
    np.testing.assert_allclose(got.numpy(), a.astype(np.float64) @ b,
                               rtol=1e-4, atol=1e-4 * max(k, 1) ** 0.5)


def test_batched_and_broadcast():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 48), dtype=np.float32)
    np.testing.assert_allclose(tf.matmul(a, b).numpy(), a @ b, rtol=1e-4,
                               atol=1e-3)
    big = rng.standard_normal((2, 3, 160, 160), dtype=np.float32)
    np.testing.assert_allclose(tf.matmul(big, big).numpy(), big @ big,
                               rtol=1e-4, atol=2e-3)


def test_nan_and_inf_propagate():
    a = np.ones((40, 40), np.float32)
    a[3, 5] = np.nan
    a[7, 1] = np.inf
    got = tf.matmul(a, np.ones((40, 40), np.float32)).numpy()
    want = a @ np.ones((40, 40), np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def test_backend_switch_keeps_results():
    """TFMINI_GEMM=eigen selects Eigen (read once per process) and the
    product is the same within float32 rounding."""
    code = ("import ctypes, numpy as np, tfmini as tf\n"
            "lib = ctypes.CDLL(tf._C.__file__)\n"
            "lib.tfm_gemm_backend.restype = ctypes.c_char_p\n"
            "a = np.arange(96 * 80, dtype=np.float32).reshape(96, 80) % 7\n"
            "r = tf.matmul(a, a.T.copy()).numpy()\n"
            "print(lib.tfm_gemm_backend().decode(), float(r.sum()))\n")
    out = {}
    for mode in ("eigen", "default"):
        env = dict(os.environ)
        env.pop("TFMINI_GEMM", None)
        if mode == "eigen":
            env["TFMINI_GEMM"] = "eigen"
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, check=True)
        name, total = r.stdout.split()
        out[mode] = (name, float(total))
    assert out["eigen"][0] == "eigen"
    if "TFMINI_GEMM" not in os.environ:
        assert out["default"][0] == backend()
    assert out["eigen"][1] == out["default"][1]  # small integers: exact


def test_backend_is_known():
    assert backend() in ("dnnl", "eigen")
