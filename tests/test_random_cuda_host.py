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
from cuda_host_util import cudart_program, nvcc_program

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

HARNESS = r"""
#include "cuda_serial_random.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* argv: dist kind key ctr_lo ctr_hi p0 p1 ilo ispan n; prints the n
 * outputs' bits, one a line, as the launcher's kernel would write them. */
int main(int argc, char **argv)
{
    if (argc != 11)
        return 2;
    int kind = atoi(argv[2]);
    int64_t n = strtoll(argv[10], 0, 0);
    void *o = calloc((size_t)n + 1, 8);
    if (tfm_cu_random(atoi(argv[1]), kind, strtoull(argv[3], 0, 0),
                      strtoull(argv[4], 0, 0), strtoull(argv[5], 0, 0),
                      strtod(argv[6], 0), strtod(argv[7], 0),
                      strtoull(argv[8], 0, 0), strtoull(argv[9], 0, 0), o, n,
                      NULL))
        return 3;
    size_t es = kind == TFM_CU_OUT_F32 || kind == TFM_CU_OUT_I32 ? 4 : 8;
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
#include "cuda_serial_random.cuh"

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
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_random.c"

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
    tfm_kernel_fn k = op == TFM_OP_RANDOM_SHUFFLE ? k_shuffle :
                      op == TFM_OP_MULTINOMIAL ? k_multinomial : k_random;
    FILE *out = fopen(argv[16], "wb");
    for (int c = 0; c < calls; c++) {
        memset(by.data, 0xAB, yb);
        if (k(op, in, idt >= 0, &a, o, 1, &fake_kctx))
            return 5;
        fwrite(by.data, 1, yb, out);
    }
    fclose(out);
    return fake_scratch_live ? 6 : 0;   /* every scratch buffer given back */
}
"""


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    return cudart_program(tmp_path_factory, "random_glue2", GLUE_BODIES,
                          GLUE_MAIN, ["kernels/cpu/random.c",
                                      "core/dtype.c"])


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
