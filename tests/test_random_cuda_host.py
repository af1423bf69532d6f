"""random.cu's per-thread bodies, run on the host (issue 21): the GPU's
random kernels are thin loops over host-and-device functions (one Philox
block's or one truncated-normal group's outputs), so a host build of
random.cu (nvcc, no GPU needed) can run every body over every block and
compare with the CPU kernels bit for bit: the same stream positions,
conversions, parameters and rounding. On a GPU only CUDA's logf/sincosf
differ (normals); tests/gpu/test_gpu_ops_more.py checks that there."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from cuda_host_util import cuda_include, nvcc, nvcc_program

import tfmini as tf
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
    return nvcc_program(tmp_path_factory, "random_cu", HARNESS)[0]


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


# ---- kernels_random.c's glue on the host -------------------------------
# The glue of every random op (stream, run counting, state read-back,
# parameters rounded as the CPU rounds them, RandomShuffle's permutation
# and gather, Multinomial's scratch and reservation), built into a host
# program whose launchers run random.cu's per-thread bodies serially over
# the same thread ranges as the real ones, and compared with the CPU
# kernels call by call. tests/test_cuda_glue_host.py does the same for
# the float32/64 and integer draws.

GLUE_BODIES = r"""
#define tfm_cu_random tfm_cu_random_on_device
#define tfm_cu_random_half tfm_cu_random_half_on_device
#define tfm_cu_multinomial tfm_cu_multinomial_on_device
#include "kernels/cuda/random.cu"
#undef tfm_cu_random
#undef tfm_cu_random_half
#undef tfm_cu_multinomial

static stream_at at(uint64_t key, uint64_t lo, uint64_t hi)
{
    stream_at s;
    s.key = key;
    s.ctr.lo = lo;
    s.ctr.hi = hi;
    return s;
}

extern "C" int
tfm_cu_random(int dist, int kind, uint64_t key, uint64_t lo, uint64_t hi,
              double p0, double p1, uint64_t ilo, uint64_t isp, void *o,
              int64_t n, void *stream)
{
    stream_at s = at(key, lo, hi);
    int64_t per = kind == TFM_CU_OUT_F32 || kind == TFM_CU_OUT_I32 ? 4 : 2;
    float f0 = (float)p0, f1 = (float)p1;
    for (int64_t b = 0; b < (n + per - 1) / per; b++) {
        switch (dist * 4 + kind) {
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F32: uniform_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F64: uniform_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F32: normal_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F64: normal_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F32: truncated_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F64: truncated_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I32: uniform_i32(s, b, (uint32_t)ilo, (uint32_t)isp, (int32_t *)o, n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I64: uniform_i64(s, b, ilo, isp, (int64_t *)o, n); break;
        default: return -1;
        }
    }
    return 0;
}

extern "C" int
tfm_cu_random_half(int dist, uint64_t key, uint64_t lo, uint64_t hi,
                   float p0, float p1, uint16_t *o, int64_t n, void *stream)
{
    stream_at s = at(key, lo, hi);
    for (int64_t b = 0; b < (n + 3) / 4; b++) {
        switch (dist) {
        case TFM_CU_UNIFORM: uniform_f16(s, b, p0, p1, o, n); break;
        case TFM_CU_NORMAL: normal_f16(s, b, p0, p1, o, n); break;
        case TFM_CU_TRUNCATED: truncated_f16(s, b, p0, p1, o, n); break;
        default: return -1;
        }
    }
    return 0;
}

extern "C" int
tfm_cu_multinomial(int ty, int wide, uint64_t key, uint64_t lo, uint64_t hi,
                   const void *x, int64_t batch, int64_t classes, int64_t n,
                   double *scratch, void *o, void *stream)
{
    if (batch == 0 || n == 0)
        return 0;
    if (ty != TFM_CU_F32 && ty != TFM_CU_F64 && ty != TFM_CU_F16)
        return -1;
    stream_at s = at(key, lo, hi);
    double *cdf = scratch, *shift = scratch + batch * classes,
           *total = shift + batch;
    for (int64_t b = 0; b < batch; b++)
        mn_shift(x, ty, b, classes, shift);
    for (int64_t e = 0; e < batch * classes; e++)
        mn_weight(x, ty, e, classes, shift, cdf);
    for (int64_t b = 0; b < batch; b++)
        mn_scan(cdf, b, classes, total);
    int64_t m_end = batch * n;
    for (int64_t t = 0; t < (m_end + 1) / 2; t++)
        mn_samples(s, t, cdf, total, classes, n, m_end, wide, o);
    return 0;
}

/* launch.h's contract: o[a, i, k] = x[a, idx[i], k]. */
extern "C" int
tfm_cu_gather(int es, int idx64, const void *x, const void *idx, void *o,
              int64_t outer, int64_t dim, int64_t inner, int64_t nidx,
              void *stream)
{
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < nidx; i++) {
            int64_t j = idx64 ? ((const int64_t *)idx)[i]
                              : ((const int32_t *)idx)[i];
            if (j < 0 || j >= dim)
                return 99;
            memcpy((char *)o + ((a * nidx + i) * inner) * es,
                   (const char *)x + ((a * dim + j) * inner) * es,
                   (size_t)(inner * es));
        }
    return 0;
}
"""

GLUE_MAIN = r"""
/* The host has no CUDA stream: the glue's one device-to-device copy is
 * a memcpy (renamed before the toolkit's header declares it). */
#define cudaMemcpyAsync host_memcpy_async
#include "kernels/cuda/kernels_random.c"
#undef cudaMemcpyAsync
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tfm_op_def tfm_ops[TFM_OP_COUNT];

cudaError_t
host_memcpy_async(void *dst, const void *src, size_t n,
                  enum cudaMemcpyKind k, cudaStream_t s)
{
    (void)k; (void)s;
    memcpy(dst, src, n);
    return cudaSuccess;
}

int64_t
tfm_shape_numel(const tfm_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= s->dims[d];
    return n;
}

static tfm_gpu fake;
tfm_gpu *tfm_cu_gpu(const tfm_kctx *c) { (void)c; return &fake; }
tfm_code tfm_gpu_check(cudaError_t e, const char *what) { (void)what; return e ? TFM_ERR_INTERNAL : TFM_OK; }
tfm_code tfm_cu_launched(tfm_op op, int rc) { (void)op; return rc ? TFM_ERR_INTERNAL : TFM_OK; }
tfm_code tfm_cu_on_host(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
                        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{ (void)op; (void)in; (void)nin; (void)a; (void)out; (void)nout; (void)ctx; exit(10); }
static tfm_code copy(const tfm_device *d, void *dst, const void *src, size_t n)
{ (void)d; memcpy(dst, src, n); return TFM_OK; }
static long live;
static void *s_alloc(const tfm_kctx *c, size_t n) { (void)c; live++; return malloc(n ? n : 1); }
static void s_free(const tfm_kctx *c, void *p, size_t n) { (void)c; (void)n; live--; free(p); }

static void
read_shape(char *spec, tfm_shape *s)
{
    s->ndim = 0;
    for (char *t = strtok(spec, ","); t; t = strtok(NULL, ","))
        if (*t != '_')
            s->dims[s->ndim++] = atoll(t);
}

/* argv: op in_dtype in_dims out_dtype out_dims i0..i5 f0 f1 calls in out
 * (dims comma-separated, "_" for a scalar; in_dtype -1: no input). */
int main(int argc, char **argv)
{
    if (argc != 17)
        return 2;
    tfm_op op = (tfm_op)atoi(argv[1]);
    int idt = atoi(argv[2]);
    tfm_tensor x = {.dtype = (tfm_dtype)(idt < 0 ? 0 : idt)}, y = {
        .dtype = (tfm_dtype)atoi(argv[4])};
    read_shape(argv[3], &x.shape);
    read_shape(argv[5], &y.shape);
    if (idt < 0) {          /* no input: nothing to read */
        x.shape.ndim = 1;
        x.shape.dims[0] = 0;
    }
    tfm_attrs a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < 6; k++)
        a.i[k] = strtoll(argv[6 + k], 0, 0);
    a.f[0] = strtod(argv[12], 0);
    a.f[1] = strtod(argv[13], 0);
    int calls = atoi(argv[14]);
    size_t xb = tfm_tensor_nbytes(&x), yb = tfm_tensor_nbytes(&y);
    tfm_buffer bx = {.refcount = 1, .data = calloc(xb + 16, 1)};
    tfm_buffer by = {.refcount = 1, .data = calloc(yb + 16, 1)};
    x.buf = &bx;
    y.buf = &by;
    FILE *f = fopen(argv[15], "rb");
    if (!f || fread(bx.data, 1, xb, f) != xb)
        return 3;
    fclose(f);
    tfm_tensor *in[1] = {&x}, *o[1] = {&y};
    tfm_device dev = {.copy_to_host = copy, .copy_from_host = copy};
    tfm_kctx ctx = {.device = &dev, .scratch_alloc = s_alloc,
                    .scratch_free = s_free};
    tfm_kernel_fn k = op == TFM_OP_RANDOM_SHUFFLE ? k_shuffle :
                      op == TFM_OP_MULTINOMIAL ? k_multinomial : k_random;
    FILE *out = fopen(argv[16], "wb");
    for (int c = 0; c < calls; c++) {
        memset(by.data, 0xAB, yb);
        if (k(op, in, idt >= 0, &a, o, 1, &ctx))
            return 5;
        fwrite(by.data, 1, yb, out);
    }
    fclose(out);
    return live ? 6 : 0;     /* every scratch buffer given back */
}
"""


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    inc, cc = cuda_include(), nvcc()
    if not inc or not cc or not shutil.which("gcc") or \
            not sys.platform.startswith("linux"):
        pytest.skip("needs the CUDA toolkit (nvcc, cudart) and gcc/GNU ld")
    d = tmp_path_factory.mktemp("random_glue2")
    (d / "h.cu").write_text(GLUE_BODIES)
    (d / "m.c").write_text(GLUE_MAIN)
    src = os.path.join(ROOT, "csrc")
    lib = os.path.join(os.path.dirname(inc), "lib64")
    gcc = ["gcc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-fno-pic", "-I", src]
    steps = [
        [cc, "-O2", "-std=c++17", "-gencode", "arch=compute_80,code=sm_80",
         "-Xcompiler", "-fno-pic", "-I", src, "-c", str(d / "h.cu"), "-o",
         str(d / "h.o")],
        gcc + ["-I", inc, "-c", str(d / "m.c"), "-o", str(d / "m.o")],
        gcc + ["-c", os.path.join(src, "kernels", "cpu", "random.c"), "-o",
               str(d / "random.o")],
        gcc + ["-c", os.path.join(src, "core", "dtype.c"), "-o",
               str(d / "dtype.o")],
        ["g++", "-no-pie", str(d / "m.o"), str(d / "h.o"),
         str(d / "random.o"), str(d / "dtype.o"), "-o", str(d / "h"), "-L",
         lib, "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lm",
         "-Wl,--unresolved-symbols=ignore-all"],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, (cmd, r.stderr)
    return str(d / "h")


_instance = [2 * 10**12 + os.getpid() * 1000]


def _dims(shape):
    return ",".join(str(v) for v in shape) or "_"


def _glue_vs_cpu(glue, tmp_path, op, x, out_dtype, out_shape, i, f=(0, 0),
                 calls=1, state=None, ints=None):
    """Runs the glue `calls` times and the CPU kernel as many, with the
    same attrs (and the same state input for a sampling op)."""
    inp = x if state is None else np.array(state, np.int64)
    (tmp_path / "in.bin").write_bytes(b"" if inp is None else inp.tobytes())
    idt = -1 if inp is None else tf.as_dtype(inp.dtype)._enum
    args = [str(ID[op]), str(idt), _dims(() if inp is None else inp.shape),
            str(tf.as_dtype(out_dtype)._enum), _dims(out_shape)] + [
        str(v) for v in i] + [repr(float(f[0])), repr(float(f[1])),
                              str(calls), str(tmp_path / "in.bin"),
                              str(tmp_path / "out.bin")]
    run = subprocess.run([glue] + args)
    assert run.returncode == 0, run.returncode
    got = np.fromfile(tmp_path / "out.bin", out_dtype).reshape(
        (calls,) + tuple(out_shape))
    for c in range(calls):
        with tf.device("/CPU:0"):
            ins = () if inp is None else (tf.constant(inp),)
            kw = dict(i=list(i), f=tuple(f))
            if ints is not None:
                kw["ints"] = ints
            if op != "RandomShuffle":
                kw["dtype"] = tf.as_dtype(out_dtype)._enum
            want = _C.call(ID[op], ins, **kw).numpy()
        assert want.shape == tuple(out_shape)
        np.testing.assert_array_equal(got[c].reshape(-1).view(np.uint8),
                                      want.reshape(-1).view(np.uint8),
                                      err_msg=str(c))


def _next_instance(traced):
    _instance[0] += 1
    return _instance[0] if traced else 0


KEY, HI, LO = 0x1234567890ABCDEF, 3, 2**64 - 20
ATTRS = [_signed(v) for v in (KEY, HI, LO)]


@pytest.mark.parametrize("op,f", [("RandomUniform", (-2.5, 3.0)),
                                  ("RandomUniform", (0.1, 0.7)),
                                  ("RandomStandardNormal", (0.5, 2.0)),
                                  ("TruncatedNormal", (0.5, 2.0)),
                                  ("TruncatedNormal", (-1e3, 7.3))])
@pytest.mark.parametrize("n", [1, 6, 37, 1030])
@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("state", [False, True])
def test_float16_draws_are_the_cpus(glue, tmp_path, op, f, n, traced, state):
    inst = _next_instance(traced)
    _glue_vs_cpu(glue, tmp_path, op, None, np.float16, (n,),
                 ATTRS + [inst, 0, 0], f=f, calls=2 if traced else 1,
                 state=[ATTRS[2], ATTRS[1], ATTRS[0]] if state else None,
                 ints=[n])


SHUFFLE_DTYPES = [np.int8, np.float16, np.float32, np.int64, np.complex128,
                  np.bool_]
SHUFFLE_SHAPES = [(), (1,), (1, 3), (2,), (3,), (5, 3), (7, 2, 2), (4, 0),
                  (0, 3), (1000,), (257, 3)]


@pytest.mark.parametrize("shape", SHUFFLE_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", SHUFFLE_DTYPES, ids=lambda d: d.__name__)
def test_shuffle_is_the_cpus(glue, tmp_path, shape, dtype):
    x = (np.arange(int(np.prod(shape))) * 7 % 251).reshape(shape)
    x = x.astype(dtype) if dtype is not np.complex128 else x * (1 + 2j)
    _glue_vs_cpu(glue, tmp_path, "RandomShuffle", x, x.dtype, shape,
                 ATTRS + [0, 0, 0])


@pytest.mark.parametrize("rows", [2, 3, 6, 1001])
def test_traced_shuffle_draws_fresh_each_run_as_the_cpu(glue, tmp_path,
                                                        rows):
    x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    _glue_vs_cpu(glue, tmp_path, "RandomShuffle", x, np.float32, x.shape,
                 ATTRS + [_next_instance(True), 0, 0], calls=3)


@pytest.mark.parametrize("stream", range(len(STREAMS)))
@pytest.mark.parametrize("rows", [2, 5, 64, 3000])
def test_shuffle_is_a_permutation_from_any_stream(glue, tmp_path, stream,
                                                  rows):
    key, lo, hi = STREAMS[stream]
    x = np.arange(rows, dtype=np.int64)
    _glue_vs_cpu(glue, tmp_path, "RandomShuffle", x, np.int64, (rows,),
                 [_signed(key), _signed(hi), _signed(lo), 0, 0, 0])


def _logits(shape, dtype, seed, special=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    if special and x.size:
        flat = x.reshape(-1)
        flat[::7] = -np.inf
        flat[3::11] = np.nan
        flat[5::13] = np.inf
        if shape[0] > 1:
            x[1] = -np.inf        # a row with no finite logit
    return x.astype(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (3, 4), (7, 33),
                                   (2, 1000), (0, 3)], ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: d.__name__)
@pytest.mark.parametrize("out", [np.int32, np.int64],
                         ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", [0, 1, 5, 64])
def test_multinomial_is_the_cpus(glue, tmp_path, shape, dtype, out, n):
    x = _logits(shape, dtype, shape[1] * 10 + n)
    _glue_vs_cpu(glue, tmp_path, "Multinomial", x, out, (shape[0], n),
                 ATTRS + [0, n, 0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: d.__name__)
def test_multinomial_with_infinities_and_nans_is_the_cpus(glue, tmp_path,
                                                          dtype):
    x = _logits((5, 40), dtype, 3, special=True)
    _glue_vs_cpu(glue, tmp_path, "Multinomial", x, np.int64, (5, 9),
                 ATTRS + [0, 9, 0])


def test_multinomial_on_huge_logits_is_the_cpus(glue, tmp_path):
    x = np.array([[1e308, -1e308, 1e308 * 0.5, 3.0],
                  [-1e308, -1e308, -1e308, -1e308]])
    _glue_vs_cpu(glue, tmp_path, "Multinomial", x, np.int64, (2, 33),
                 ATTRS + [0, 33, 0])


@pytest.mark.parametrize("stream", range(len(STREAMS)))
def test_traced_multinomial_draws_fresh_each_run_as_the_cpu(glue, tmp_path,
                                                            stream):
    key, lo, hi = STREAMS[stream]
    x = _logits((4, 9), np.float32, 5)
    _glue_vs_cpu(glue, tmp_path, "Multinomial", x, np.int64, (4, 7),
                 [_signed(key), _signed(hi), _signed(lo),
                  _next_instance(True), 7, 0], calls=3)


@pytest.mark.parametrize("op", ["RandomShuffle", "Multinomial",
                                "RandomUniform", "RandomStandardNormal",
                                "TruncatedNormal", "RandomUniformInt"])
def test_cuda_build_has_a_gpu_kernel_for(op):
    # Every random op has a GPU entry now: none soft-places on the CPU.
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend")
    import ctypes
    f = ctypes.CDLL(_C.__file__).tfm_cuda_has_kernel
    f.argtypes, f.restype = [ctypes.c_char_p], ctypes.c_int
    assert f(op.encode()) == 1, op
