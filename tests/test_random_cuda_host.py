"""random.cu's per-thread bodies, run on the host (issue 21): the GPU's
random kernels are thin loops over host-and-device functions (one Philox
block's or one truncated-normal group's outputs), so a host build of
random.cu (nvcc, no GPU needed) can run every body over every block and
compare with the CPU kernels bit for bit: the same stream positions,
conversions, parameters and rounding. On a GPU only CUDA's logf/sincosf
differ (normals); tests/gpu/test_gpu_ops_more.py checks that there."""
import os
import subprocess

import numpy as np
import pytest
from cuda_host_util import nvcc

from tfmini import _C
from tfmini._opids import ID

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cuda/random.cu"

/* argv: dist kind key ctr_lo ctr_hi p0 p1 ilo ispan n; prints the n
 * outputs' bits, one a line, as the launcher's kernel would write them. */
int main(int argc, char **argv)
{
    if (argc != 11)
        return 2;
    int dist = atoi(argv[1]), kind = atoi(argv[2]);
    stream_at s;
    s.key = strtoull(argv[3], 0, 0);
    s.ctr.lo = strtoull(argv[4], 0, 0);
    s.ctr.hi = strtoull(argv[5], 0, 0);
    double p0 = strtod(argv[6], 0), p1 = strtod(argv[7], 0);
    uint64_t ilo = strtoull(argv[8], 0, 0), isp = strtoull(argv[9], 0, 0);
    int64_t n = strtoll(argv[10], 0, 0);
    int64_t per = kind == TFM_CU_OUT_F32 || kind == TFM_CU_OUT_I32 ? 4 : 2;
    void *o = calloc((size_t)n + 1, 8);
    float f0 = (float)p0, f1 = (float)p1;
    for (int64_t b = 0; b < (n + per - 1) / per; b++) {
        switch (dist * 4 + kind) {
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F32:
            uniform_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F64:
            uniform_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F32:
            normal_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F64:
            normal_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F32:
            truncated_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F64:
            truncated_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I32:
            uniform_i32(s, b, (uint32_t)ilo, (uint32_t)isp, (int32_t *)o,
                        n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I64:
            uniform_i64(s, b, ilo, isp, (int64_t *)o, n); break;
        default:
            return 3;
        }
    }
    size_t es = per == 4 ? 4 : 8;
    for (int64_t e = 0; e < n; e++) {
        unsigned long long v = 0;
        memcpy(&v, (char *)o + e * es, es);
        printf("%llx\n", v);
    }
    return 0;
}
"""



@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cc = nvcc()
    if not cc:
        pytest.skip("no nvcc (CUDA toolkit) on this machine")
    d = tmp_path_factory.mktemp("random_cu")
    (d / "h.cu").write_text(HARNESS)
    r = subprocess.run([cc, "-O2", "-std=c++17", "-gencode",
                        "arch=compute_80,code=sm_80", "-I",
                        os.path.join(ROOT, "csrc"), str(d / "h.cu"), "-o",
                        str(d / "h")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(d / "h")


U64 = 2**64
# dist, kind as in launch_ops.h
UNIFORM, NORMAL, TRUNCATED, UNIFORM_INT = range(4)
F32, F64, I32, I64 = range(4)
OPS = {UNIFORM: "RandomUniform", NORMAL: "RandomStandardNormal",
       TRUNCATED: "TruncatedNormal", UNIFORM_INT: "RandomUniformInt"}
DTYPES = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64}


def _signed(v):
    return v - U64 if v >= 2**63 else v


def _gpu_body(harness, dist, kind, key, lo, hi, p0, p1, ilo, isp, n):
    out = subprocess.run([harness, str(dist), str(kind), str(key), str(lo),
                          str(hi), repr(p0), repr(p1), str(ilo), str(isp),
                          str(n)], capture_output=True, text=True,
                         check=True).stdout.split()
    dt = DTYPES[kind]
    bits = np.array([int(v, 16) for v in out], np.uint64)
    return bits.astype(np.uint32 if np.dtype(dt).itemsize == 4
                       else np.uint64).view(dt)


def _cpu(dist, kind, key, lo, hi, f, n, ints=()):
    dt = DTYPES[kind]
    with __import__("tfmini").device("/CPU:0"):
        out = _C.call(ID[OPS[dist]], (), ints=[n],
                      i=[_signed(key), _signed(hi), _signed(lo), 0] +
                      list(ints), f=f,
                      dtype=__import__("tfmini").as_dtype(dt)._enum)
    return out.numpy()


STREAMS = [(0, 0, 0), (0x123456789ABCDEF, 5, 0), (2**64 - 3, 2**64 - 7, 9)]


@pytest.mark.parametrize("n", [1, 3, 6, 257, 1031])
@pytest.mark.parametrize("stream", range(len(STREAMS)))
@pytest.mark.parametrize("dist,kind", [(UNIFORM, F32), (UNIFORM, F64),
                                       (NORMAL, F32), (NORMAL, F64),
                                       (TRUNCATED, F32), (TRUNCATED, F64)])
def test_float_bodies_are_the_cpu_kernels(harness, dist, kind, stream, n):
    key, lo, hi = STREAMS[stream]
    a, b = (-1.5, 4.25) if dist == UNIFORM else (0.75, 3.5)
    want = _cpu(dist, kind, key, lo, hi, (a, b), n)
    if dist == UNIFORM:   # the glue passes minval and the rounded span
        span = float(np.float32(b) - np.float32(a)) if kind == F32 else b - a
        got = _gpu_body(harness, dist, kind, key, lo, hi, a, span, 0, 0, n)
    else:
        got = _gpu_body(harness, dist, kind, key, lo, hi, a, b, 0, 0, n)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("n", [1, 5, 258])
@pytest.mark.parametrize("stream", range(len(STREAMS)))
@pytest.mark.parametrize("kind,lo_hi", [(I32, (-7, 100)), (I32, None),
                                        (I64, (-2**40, 2**50 + 11)),
                                        (I64, None)])
def test_int_bodies_are_the_cpu_kernels(harness, kind, lo_hi, stream, n):
    key, lo, hi = STREAMS[stream]
    full = lo_hi is None
    ilo, ihi = (0, 1) if full else lo_hi
    want = _cpu(UNIFORM_INT, kind, key, lo, hi, (1.0 if full else 0.0, 0.0),
                n, ints=(ilo, ihi))
    isp = 0 if full else (ihi - ilo) % U64
    got = _gpu_body(harness, UNIFORM_INT, kind, key, lo, hi, 0.0, 0.0,
                    0 if full else ilo % U64, isp, n)
    np.testing.assert_array_equal(got, want)
