"""MatMul's float32 GEMM backend (csrc/kernels/cpu/gemm_dnnl.c): oneDNN
when the build found it, Eigen otherwise or with TFMINI_GEMM=eigen. Both
must give NumPy's products for every transpose, batch and edge shape."""
import ctypes
import json
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


def test_conv_products_agree_across_backends():
    """Conv2D and its two gradients run their im2col products through
    oneDNN when built with it; TFMINI_GEMM=eigen keeps the own tile.
    Both agree (and TF's geometry is the conv tests' business)."""
    code = (
        "import numpy as np, tfmini as tf\n"
        "r = np.random.default_rng(0)\n"
        "x = tf.constant(r.standard_normal((2, 9, 11, 5), np.float32))\n"
        "w = tf.constant(r.standard_normal((3, 3, 5, 7), np.float32))\n"
        "out = []\n"
        "for s, p, d in [(1, 'SAME', 1), (2, 'VALID', 1), (1, 'SAME', 2)]:\n"
        "    with tf.GradientTape(persistent=True) as t:\n"
        "        t.watch([x, w])\n"
        "        y = tf.nn.conv2d(x, w, s, p, dilations=d)\n"
        "        loss = tf.reduce_sum(y * y)\n"
        "    gx, gw = t.gradient(loss, [x, w])\n"
        "    out += [y.numpy(), gx.numpy(), gw.numpy()]\n"
        "np.savez(__import__('sys').argv[1], *out)\n")
    import tempfile
    res = {}
    with tempfile.TemporaryDirectory() as d:
        for mode in ("eigen", "default"):
            env = dict(os.environ, TFMINI_GEMM=mode)
            path = os.path.join(d, mode + ".npz")
            subprocess.run([sys.executable, "-c", code, path], env=env,
                           check=True, capture_output=True, text=True)
            with np.load(path) as f:
                res[mode] = [f[k] for k in sorted(f.files,
                                                  key=lambda s: int(s[4:]))]
    for a, b in zip(res["eigen"], res["default"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


def test_dynamic_openmp_teams_keep_products_right():
    """OMP_DYNAMIC=true lets libgomp shrink a team by the load average;
    oneDNN partitions for the team it asked for, so the shim turns
    dynamic teams off around its calls (NaNs otherwise)."""
    code = ("import numpy as np, tfmini as tf\n"
            "r = np.random.default_rng(0)\n"
            "a = r.random((256, 512), dtype=np.float32)\n"
            "b = r.random((512, 300), dtype=np.float32)\n"
            "x = r.random((4, 16, 16, 8), dtype=np.float32)\n"
            "w = r.random((3, 3, 8, 16), dtype=np.float32)\n"
            "print(np.abs(tf.matmul(a, b).numpy() - a @ b).max())\n"
            "y = tf.nn.conv2d(x, w, 1, 'SAME').numpy()\n"
            "y0 = tf.nn.conv2d(x.astype(np.float64), w.astype(np.float64),"
            " 1, 'SAME').numpy()\n"
            "print(np.abs(y - y0).max())\n")
    env = dict(os.environ, OMP_DYNAMIC="true")
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, check=True)
    errs = [float(v) for v in r.stdout.split()]
    assert all(e < 1e-2 for e in errs), errs


# ---- big float32 products through oneDNN's matmul primitive ----
# (Note [Big float32 products] in gemm_dnnl.c)

needs_dnnl = pytest.mark.skipif(backend() != "dnnl",
                                reason="tfmini was built without oneDNN")

_PRIM = ("import ctypes, json, resource, sys, threading\n"
         "import numpy as np, tfmini as tf\n"
         "lib = ctypes.CDLL(tf._C.__file__)\n"
         "lib.tfm_gemm_f32_prim_calls.restype = ctypes.c_longlong\n"
         "calls = lib.tfm_gemm_f32_prim_calls\n")


def _run(body, **env):
    e = dict(os.environ)
    e.pop("TFMINI_GEMM", None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", _PRIM + body], env=e,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# 1024x256 @ 256x1024: 2^28 multiply-adds, the smallest "big" product.
_BIG = ("r = np.random.default_rng(5)\n"
        "a = r.standard_normal((1024, 256), dtype=np.float32)\n"
        "b = r.standard_normal((256, 1024), dtype=np.float32)\n"
        "want = a.astype(np.float64) @ b\n"
        "got = tf.matmul(a, b).numpy()\n"
        "err = float(np.abs(got - want).max())\n")


@needs_dnnl
@pytest.mark.parametrize("threads,mode,prim", [
    ("2", None, 1),          # big, a team: the primitive
    ("1", None, 0),          # one thread: sgemm
    ("2", "sgemm", 0),       # forced either way
    ("1", "matmul", 1)])
def test_big_product_path_and_value(threads, mode, prim):
    env = {"OMP_NUM_THREADS": threads}
    if mode:
        env["TFMINI_GEMM"] = mode
    out = _run(_BIG + "print(json.dumps([calls(), err]))", **env)
    assert out[0] == prim
    assert out[1] < 2e-3


@needs_dnnl
def test_small_and_huge_products_keep_sgemm():
    """Below 2^28 multiply-adds (the MLP and attention shapes) and above
    2^31 (where sgemm's kernels measured faster) the default never makes
    a primitive."""
    out = _run("r = np.random.default_rng(1)\n"
               "for m, k, n in [(32, 784, 128), (256, 512, 512),"
               " (512, 512, 512), (1023, 256, 1024), (2048, 1024, 1025)]:\n"
               "    a = r.random((m, k), dtype=np.float32)\n"
               "    b = r.random((k, n), dtype=np.float32)\n"
               "    np.testing.assert_allclose(tf.matmul(a, b).numpy(),"
               " a @ b, rtol=1e-4)\n"
               "big = r.random((1024, 2048), dtype=np.float32)\n"
               "tf.matmul(big, big, transpose_b=True)\n"  # 2^31: the primitive
               "print(json.dumps(calls()))", OMP_NUM_THREADS="2")
    assert out == 1


@needs_dnnl
def test_forced_primitive_matches_numpy_everywhere():
    """TFMINI_GEMM=matmul sends every float32 product outside a parallel
    region through the primitive: every transpose and edge shape, and a
    batched product (whose per-batch products run inside MatMul's
    parallel loop, so on sgemm) stay NumPy's."""
    out = _run(
        "shapes = %r\n"
        "r = np.random.default_rng(2)\n"
        "worst = 0.0\n"
        "for m, k, n in shapes:\n"
        "    for ta in (0, 1):\n"
        "        for tb in (0, 1):\n"
        "            a = r.standard_normal((m, k), dtype=np.float32)\n"
        "            b = r.standard_normal((k, n), dtype=np.float32)\n"
        "            sa = np.ascontiguousarray(a.T) if ta else a\n"
        "            sb = np.ascontiguousarray(b.T) if tb else b\n"
        "            got = tf.matmul(sa, sb, transpose_a=bool(ta),"
        " transpose_b=bool(tb)).numpy()\n"
        "            want = a.astype(np.float64) @ b\n"
        "            assert got.shape == want.shape\n"
        "            if want.size:\n"
        "                worst = max(worst, float(np.abs(got - want).max()"
        " / max(k, 1) ** 0.5))\n"
        "n = calls()\n"
        "x = r.standard_normal((8, 64, 64), dtype=np.float32)\n"
        "np.testing.assert_allclose(tf.matmul(x, x).numpy(), x @ x,"
        " rtol=1e-4, atol=1e-3)\n"
        "print(json.dumps([n, worst]))" % (SHAPES,),
        TFMINI_GEMM="matmul", OMP_NUM_THREADS="2")
    nonempty = sum(1 for m, k, n in SHAPES if m and k and n)
    assert out[0] == 4 * nonempty
    assert out[1] < 1e-4


@needs_dnnl
def test_big_products_from_two_threads_and_dynamic_teams():
    """Two Python threads run big products at once (each call makes its
    own primitive and stream; oneDNN's scratchpad is per thread), also
    with OMP_DYNAMIC=true (the shim turns dynamic teams off around the
    call: oneDNN partitions for the team it asked for)."""
    out = _run(
        _BIG +
        "errs = []\n"
        "def work(seed):\n"
        "    q = np.random.default_rng(seed)\n"
        "    x = q.standard_normal((1024, 512), dtype=np.float32)\n"
        "    y = q.standard_normal((512, 1024), dtype=np.float32)\n"
        "    w = x.astype(np.float64) @ y\n"
        "    for _ in range(3):\n"
        "        errs.append(float(np.abs(tf.matmul(x, y).numpy() - w)"
        ".max()))\n"
        "ts = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]\n"
        "[t.start() for t in ts]\n"
        "[t.join() for t in ts]\n"
        "print(json.dumps([calls(), max(errs + [err])]))",
        OMP_NUM_THREADS="2", OMP_DYNAMIC="true")
    assert out[0] == 7
    assert out[1] < 3e-3


@needs_dnnl
@pytest.mark.skipif(bool(os.environ.get("TFMINI_UNDER_SANITIZER")),
                    reason="the sanitizers' allocator (and buffer.c's "
                    "cache, off under ASan) fault pages of their own")
def test_big_product_faults_few_pages_after_the_first_call():
    """The reason for the primitive: dnnl_sgemm's per-call packing
    buffers faulted 300-900 fresh pages on each of the first ~8 calls
    of 1024^3; the primitive's scratchpad stays mapped. (The output's
    4 MiB block comes back from buffer.c's cache each call.)"""
    out = _run(
        "a = tf.constant(np.random.default_rng(0).standard_normal("
        "(1024, 1024), dtype=np.float32))\n"
        "tf.matmul(a, a)\n"
        "faults = []\n"
        "for _ in range(7):\n"
        "    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "    r = tf.matmul(a, a)\n"
        "    faults.append(resource.getrusage(resource.RUSAGE_SELF)"
        ".ru_minflt - f0)\n"
        "    del r\n"
        "print(json.dumps([calls(), faults]))", OMP_NUM_THREADS="2")
    assert out[0] == 8
    assert sum(out[1]) / len(out[1]) < 150, out[1]
