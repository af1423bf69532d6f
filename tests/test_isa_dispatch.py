"""Run-time ISA dispatch (Note [ISA dispatch] in
csrc/kernels/cpu/isa_dispatch.h): which copy of the hot loops runs, and
that TFMINI_ISA=avx2 and =avx512 give the same numbers. The two copies
only exist in a portable build (TFMINI_ARCH=x86-64-v3); in the default
-march=native build on an AVX-512 CPU the subprocess comparison skips.
The copies themselves are compared for every elementwise row and
reduction, in any build, by tests/c/test_isa_dispatch.c (run by
tests/test_c_core.py), which links the loop files compiled for
x86-64-v3 and their AVX-512 copy."""
import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfmini

V4_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


def _isa(lib_path=None):
    """(name, dispatches) from the extension's C symbols."""
    lib = ctypes.CDLL(lib_path or tfmini._C.__file__)
    lib.tfm_isa_name.restype = ctypes.c_char_p
    return lib.tfm_isa_name().decode(), bool(lib.tfm_isa_dispatches())


def _cpu_has_v4():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return all(x in flags for x in V4_FLAGS)
    except OSError:
        pass
    return False


def test_the_active_copy_is_reported():
    name, dispatches = _isa()
    assert name in ("avx512", "avx2", "x86-64")
    if dispatches and not os.environ.get("TFMINI_ISA"):
        assert (name == "avx512") == _cpu_has_v4()
    if not dispatches and name == "avx512":
        # One copy, built for an AVX-512 target: this CPU must have it.
        assert _cpu_has_v4()


# float32 and float64, a serial size and one past the OpenMP threshold;
# LIBM: ops whose AVX2 and AVX-512 libmvec variants may differ in ulps.
SCRIPT = textwrap.dedent("""
    import json, sys, ctypes
    import numpy as np
    import tfmini as tf
    lib = ctypes.CDLL(tf._C.__file__)
    lib.tfm_isa_name.restype = ctypes.c_char_p
    out = {"isa": lib.tfm_isa_name().decode()}
    rng = np.random.default_rng(0)
    for dt in ("float32", "float64"):
        for n in (1003, 100003):
            a = rng.uniform(-0.95, 0.95, n).astype(dt)
            b = rng.uniform(0.25, 3.0, n).astype(dt)
            x, y = tf.constant(a), tf.constant(b)
            r = {
                "add": x + y, "sub": x - y, "mul": x * y, "div": x / y,
                "max": tf.maximum(x, y), "sqdiff": tf.math.squared_difference(x, y),
                "scalar_mul": x * 3.0, "sqrt": tf.sqrt(y), "relu": tf.nn.relu(x),
                "leaky": tf.nn.leaky_relu(x, 0.2), "floor": tf.floor(x * 7.0),
                "exp": tf.exp(x), "log": tf.math.log(y), "tanh": tf.tanh(x),
                "sigmoid": tf.sigmoid(x), "gelu": tf.nn.gelu(x),
                "softplus": tf.nn.softplus(x), "erf": tf.math.erf(x),
                "pow": tf.pow(y, x),
                "sum": tf.reduce_sum(x), "mean": tf.reduce_mean(x),
                "max_r": tf.reduce_max(x), "min_r": tf.reduce_min(x),
                "prod": tf.reduce_prod(1.0 + x * 1e-3),
                "col_sum": tf.reduce_sum(tf.reshape(x[:1001], (77, 13)), 0),
                "lse": tf.math.reduce_logsumexp(x),
            }
            for k, v in r.items():
                out[f"{dt}/{n}/{k}"] = np.asarray(v.numpy()).tolist()
    json.dump(out, sys.stdout)
""")
LIBM = {"exp", "log", "tanh", "sigmoid", "gelu", "softplus", "erf", "pow",
        "lse"}


def _run(isa):
    env = dict(os.environ, TFMINI_ISA=isa, OMP_NUM_THREADS="2")
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout), r.stderr


def test_forced_copies_agree():
    _, dispatches = _isa()
    if not dispatches:
        pytest.skip("this build has one copy of the loops (its -march "
                    "target has AVX-512, or it is not GCC on x86-64): "
                    "build with TFMINI_ARCH=x86-64-v3 to compare them")
    if not _cpu_has_v4():
        pytest.skip("this CPU lacks AVX-512 (F, BW, CD, DQ, VL)")
    base, err = _run("avx2")
    v4, err4 = _run("avx512")
    assert base.pop("isa") != "avx512" and v4.pop("isa") == "avx512"
    assert err == "" and err4 == ""
    assert base.keys() == v4.keys()
    for key in base:
        dt = key.split("/")[0]
        a = np.asarray(base[key], dtype=dt)
        b = np.asarray(v4[key], dtype=dt)
        if key.rsplit("/", 1)[1] in LIBM:
            np.testing.assert_array_max_ulp(a, b, maxulp=8, dtype=dt)
        else:
            np.testing.assert_array_equal(a, b, err_msg=key)


def test_avx512_forced_without_it_warns_and_runs():
    """TFMINI_ISA=avx512 on a CPU without AVX-512 must not reach an
    illegal instruction: checked where the CPU lacks it."""
    _, dispatches = _isa()
    if not dispatches or _cpu_has_v4():
        pytest.skip("needs a dispatching build on a CPU without AVX-512")
    out, err = _run("avx512")
    assert out["isa"] != "avx512"
    assert "lacks AVX-512" in err


def test_unknown_value_is_named():
    _, dispatches = _isa()
    if not dispatches:
        pytest.skip("TFMINI_ISA is read only by a build with two copies")
    env = dict(os.environ, TFMINI_ISA="sse9")
    r = subprocess.run([sys.executable, "-c",
                        "import tfmini as tf; print(float(tf.reduce_sum("
                        "tf.constant([1.0, 2.0]))))"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3.0"
    assert "TFMINI_ISA=sse9 is not one of avx2, avx512" in r.stderr
