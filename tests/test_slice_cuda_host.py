"""kernels_slice.c's GPU glue, checked on the host (issue 21): no GPU is
lent, so the C that turns StridedSlice's masks (through the CPU's slice
plan), Slice, ReverseV2, Tile, Split/SplitV/Unpack, PadV2, MirrorPad,
ArgMax/ArgMin, Cumsum/Cumprod and OneHot into views and launches for
shape.cu's strided gather and slice.cu's kernels is built here into a
shared library whose launchers are serial host loops following launch.h
/ launch_ops.h's contracts, whose CUDA copies are memcpy/memset, and
whose every other tfm_* symbol is the real one from the loaded
tfmini._C. Each op's output (and its errors) must equal the CPU
kernel's, byte for byte; where the glue hands an op to the CPU kernel
(tfm_cu_on_host) the test says whether it should have."""
import ctypes

import numpy as np
import pytest
from cuda_host_util import library_beside_c

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

HARNESS = r"""
#define FAKE_GLUE_ON_HOST FAKE_GLUE_RUN_CPU
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_slice.c"

/* The build lowers kernels_slice.c's TFM_CU_MAX_PITCH; a pitch past it
 * fails here as one past cudaDevAttrMaxPitch fails on a GPU. */
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src,
                              size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k, cudaStream_t s)
{
    (void)k; (void)s;
    if (w > dp || w > sp || dp > TFM_CU_MAX_PITCH || sp > TFM_CU_MAX_PITCH)
        return cudaErrorInvalidPitchValue;
    for (size_t r = 0; r < h; r++)
        memcpy((char *)dst + r * dp, (const char *)src + r * sp, w);
    return cudaSuccess;
}

/* shape.cu's k_transpose and slice.cu's k_scatter, one element at a time. */
static int64_t at_of(int64_t i, int nd, const int64_t *dims, const int64_t *st)
{
    int64_t r = i, at = 0;
    for (int d = nd - 1; d >= 0; d--) {
        at += (r % dims[d]) * st[d];
        r /= dims[d];
    }
    return at;
}
int tfm_cu_transpose(int es, const void *x, void *o, int nd, const int64_t *dims,
                     const int64_t *st, int64_t n, void *s)
{
    (void)s;
    if (nd > TFM_CU_MAX_DIMS || (es != 1 && es != 2 && es != 4 && es != 8 && es != 16))
        return -1;
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)o + i * es, (const char *)x + at_of(i, nd, dims, st) * es, es);
    return 0;
}
int tfm_cu_strided_scatter(int es, const void *x, void *o, int nd,
                           const int64_t *dims, const int64_t *st, int64_t n, void *s)
{
    (void)s;
    if (nd < 0 || nd > TFM_CU_MAX_DIMS || (es != 1 && es != 2 && es != 4 && es != 8 && es != 16))
        return -1;
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)o + at_of(i, nd, dims, st) * es, (const char *)x + i * es, es);
    return 0;
}
int tfm_cu_fill(int es, const void *src, const void *val, void *o, int64_t n, void *s)
{
    (void)s;
    /* As fill.cu: val (host bytes) is read only when there is no device
     * value src; both NULL is a caller's bug. */
    if (!src && !val)
        return 99;
    const void *v = src ? src : val;
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)o + i * es, v, es);
    return 0;
}
#define BETTER(v, b, mn) ((mn ? (v) < (b) : (v) > (b)) || ((v) != (v) && (b) == (b)))
#define ARG(T)                                                              \
    for (int64_t i = 0; i < A * B; i++) {                                   \
        const T *p = (const T *)x + (i / B) * R * B + i % B;                \
        T best = p[0];                                                      \
        int64_t at = 0;                                                     \
        for (int64_t r = 1; r < R; r++)                                     \
            if (BETTER(p[r * B], best, is_min)) { best = p[r * B]; at = r; } \
        if (wide) ((int64_t *)o)[i] = at; else ((int32_t *)o)[i] = (int32_t)at; \
    }
int tfm_cu_argreduce(int is_min, int kind, int wide, const void *x, void *o,
                     int64_t A, int64_t R, int64_t B, void *s)
{
    (void)s;
    if (A * B == 0)
        return 0;
    if (R < 1)
        return -1;
    switch (kind) {
    case TFM_CU_OUT_F32: ARG(float) break;
    case TFM_CU_OUT_F64: ARG(double) break;
    case TFM_CU_OUT_I32: ARG(int32_t) break;
    case TFM_CU_OUT_I64: ARG(int64_t) break;
    default: return -1;
    }
    return 0;
}

/* slice.cu's k_scan and k_one_hot, one column / index at a time. */
#define SCAN(T, AT)                                                         \
    for (int64_t i = 0; i < A * B; i++) {                                   \
        int64_t step = rev ? -B : B;                                        \
        int64_t o = (i / B) * R * B + i % B + (rev ? (R - 1) * B : 0);      \
        AT acc = prod ? (AT)1 : (AT)0;                                      \
        for (int64_t k = 0; k < R; k++, o += step) {                        \
            AT v = (AT)((const T *)x)[o];                                   \
            if (excl) ((T *)y)[o] = (T)acc;                                 \
            acc = prod ? acc * v : acc + v;                                 \
            if (!excl) ((T *)y)[o] = (T)acc;                                \
        }                                                                   \
    }
int tfm_cu_scan(int prod, int kind, const void *x, void *y, int64_t A,
                int64_t R, int64_t B, int excl, int rev, void *s)
{
    (void)s;
    if (A * R * B == 0)
        return 0;
    switch (kind) {
    case TFM_CU_OUT_F32: SCAN(float, double) break;
    case TFM_CU_OUT_F64: SCAN(double, double) break;
    case TFM_CU_OUT_I32: SCAN(int32_t, uint64_t) break;
    case TFM_CU_OUT_I64: SCAN(int64_t, uint64_t) break;
    default: return -1;
    }
    return 0;
}
int tfm_cu_one_hot(int es, int idx64, const void *idx, const void *on,
                   void *o, int64_t m, int64_t depth, int64_t suffix, void *s)
{
    (void)s;
    if (m == 0 || depth == 0)
        return 0;
    if (suffix < 1 || (es != 1 && es != 2 && es != 4 && es != 8 && es != 16))
        return -1;
    for (int64_t k = 0; k < m; k++) {
        int64_t v = idx64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
        if (v >= 0 && v < depth)
            memcpy((char *)o + (((k / suffix) * depth + v) * suffix + k % suffix) * es, on, es);
    }
    return 0;
}

/* slice.cu's k_mirror_pad, one element at a time. */
int tfm_cu_mirror_pad(int es, int sym, const void *x, void *o, int nd,
                      const int64_t *od, const int64_t *id, const int64_t *lo,
                      int64_t n, void *s)
{
    (void)s;
    if (n == 0)
        return 0;
    if (nd < 0 || nd > TFM_CU_MAX_DIMS || (es != 1 && es != 2 && es != 4 && es != 8 && es != 16))
        return -1;
    int64_t ist[8], st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (id[d] < 1)
            return -1;
        ist[d] = st;
        st *= id[d];
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, at = 0;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t k = r % od[d] - lo[d], len = id[d];
            r /= od[d];
            if (k < 0)
                k = sym ? -k - 1 : -k;
            else if (k >= len)
                k = sym ? 2 * len - 1 - k : 2 * len - 2 - k;
            at += k * ist[d];
        }
        memcpy((char *)o + i * es, (const char *)x + at * es, es);
    }
    return 0;
}

static tfm_kernel_fn table[TFM_OP_COUNT];

/* One call of op's GPU kernel on host tensors (nin inputs of dtypes
 * dts, ranks nds, dims 8 a row). Returns the tfm_code; *host set when
 * the glue handed the op to the CPU kernel; err gets the error text. */
int run(int op, int nin, const int *dts, const int *nds, const int64_t *dims,
        void **xs, int nout, int odt, const int *ond, const int64_t *odims,
        void **outs, const int64_t *ints, int n_ints, const int64_t *iv,
        double f0, int *host, char *err, int errlen)
{
    if (!table[TFM_OP_STRIDED_SLICE])
        tfm_cuda_kernels_slice_init(table);
    if (!table[op])
        return -1;
    tfm_buffer bi[4], bo[16];
    tfm_tensor ti[4], to[16], *pi[4], *po[16];
    for (int k = 0; k < nin; k++)
        pi[k] = fake_tensor(&ti[k], &bi[k], dts[k], nds[k], dims + 8 * k,
                            xs[k]);
    for (int k = 0; k < nout; k++)
        po[k] = fake_tensor(&to[k], &bo[k], odt, ond[k], odims + 8 * k,
                            outs[k]);
    tfm_attrs a;
    memset(&a, 0, sizeof a);
    a.n_ints = n_ints;
    memcpy(a.ints, ints, sizeof(int64_t) * (size_t)n_ints);
    memcpy(a.i, iv, sizeof a.i);
    a.f[0] = f0;
    a.dtype = (tfm_dtype)odt;
    fake_on_host = 0;
    tfm_error_clear();
    int rc = table[op]((tfm_op)op, pi, nin, &a, po, nout, NULL);
    *host = fake_on_host;
    snprintf(err, (size_t)errlen, "%s", rc ? tfm_error_message() : "");
    return rc;
}
"""


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    # TFM_CU_MAX_PITCH: Split's rows past 64 bytes take the strided
    # gather, as rows past 2 GiB do on a GPU.
    return library_beside_c(tmp_path_factory, "slice", HARNESS,
                            defines=["-DTFM_CU_MAX_PITCH=((size_t)64)"])


def gpu_glue(lib, op, x, outs_like, ints=(), i=(), f0=0.0, dtype=None):
    """op's GPU kernel through the host harness: (code, outputs, on_host,
    error text); x one input or a list; outs_like gives each output's
    shape (and dtype)."""
    xs = [np.array(v, order="C") for v in (x if isinstance(x, list)
                                           else [x])]    # keeps 0-d
    odt_np = np.dtype(outs_like[0].dtype) if outs_like else xs[0].dtype
    odt = lib.dtype_of(odt_np.name.encode())
    dts = [lib.dtype_of(np.dtype(v.dtype).name.encode()) for v in xs]
    assert min(dts) >= 0 and odt >= 0
    # Garbage first: a kernel must write every output byte.
    outs = [np.frombuffer(bytearray(b"\x5a" * o.nbytes), odt_np).reshape(
        o.shape) for o in outs_like]
    I64 = ctypes.c_int64

    def dims_of(arrs, n):
        d = (I64 * (8 * n))()
        for k, a in enumerate(arrs):
            for j, v in enumerate(a.shape):
                d[8 * k + j] = v
        return d

    ptrs = (ctypes.c_void_p * 16)(*[o.ctypes.data for o in outs])
    iv = list(i) + [0] * (6 - len(i))
    host = ctypes.c_int()
    err = ctypes.create_string_buffer(512)
    rc = lib.run(ID[op], len(xs), (ctypes.c_int * 4)(*dts),
                 (ctypes.c_int * 4)(*[v.ndim for v in xs]), dims_of(xs, 4),
                 (ctypes.c_void_p * 4)(*[v.ctypes.data for v in xs]),
                 len(outs), odt, (ctypes.c_int * 16)(*[o.ndim for o in outs]),
                 dims_of(outs, 16), ptrs,
                 (I64 * max(1, len(ints)))(*ints), len(ints), (I64 * 6)(*iv),
                 ctypes.c_double(f0), ctypes.byref(host), err, 512)
    return rc, outs, host.value, err.value.decode()


def cpu(op, x, ints=(), i=(), f0=None, dtype=None):
    kw = {}
    if ints:
        kw["ints"] = tuple(ints)
    if i:
        kw["i"] = tuple(i)
    if f0 is not None:
        kw["f"] = (f0,)
    if dtype is not None:
        kw["dtype"] = tf.as_dtype(dtype)._enum
    xs = x if isinstance(x, list) else [x]
    with tf.device("/CPU:0"):
        out = _C.call(ID[op], tuple(tf.constant(v) for v in xs), **kw)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in out]


def same(lib, op, x, ints=(), i=(), f0=None, dtype=None, host=False):
    """The glue's outputs equal the CPU kernel's bit for bit, or both
    fail with the CPU's message; host: whether the glue should fall back."""
    try:
        want = cpu(op, x, ints, i, f0, dtype)
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        # Errors come from the shape rule before any kernel runs; a
        # kernel that recomputes the plan must agree (checked where the
        # rule lets the attrs through).
        return str(e)
    rc, got, on_host, err = gpu_glue(lib, op, x, want, ints, i,
                                     0.0 if f0 is None else f0, dtype)
    assert rc == 0, err
    assert on_host == host, (op, x.shape, ints, i)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert g.tobytes() == w.tobytes(), (op, x.shape, ints, i, g, w)
    return None


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_,
          np.float16, np.int16, np.complex64, np.complex128]


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 10
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def spec(begin, end, strides, bm=0, em=0, el=0, na=0, sh=0):
    return dict(ints=tuple(begin) + tuple(end) + tuple(strides),
                i=(bm, em, el, na, sh))


SLICES = [
    ((5,), spec([1], [4], [1])),
    ((5,), spec([4], [0], [-1])),
    ((5,), spec([-1], [-6], [-2])),
    ((7,), spec([0], [0], [3], bm=1, em=1)),
    ((7,), spec([0], [0], [-3], bm=1, em=1)),
    ((4, 6), spec([1, -1], [3, 0], [1, -2])),
    ((4, 6), spec([2], [0], [1], sh=1)),                  # x[2]
    ((4, 6), spec([-1, 1], [0, 5], [1, 2], sh=1)),        # x[-1, 1:5:2]
    ((3, 4, 5), spec([0, 1], [0, 3], [1, 1], el=1)),      # x[..., 1:3]
    ((3, 4, 5), spec([0, 0, 2], [0, 0, 0], [1, 1, 1], el=2, na=1,
                     sh=4)),                              # x[None, ..., 2]
    ((3, 4, 5), spec([1, 0, 0], [2, 0, 0], [1, 1, 1], na=2)),
    ((3, 4, 5), spec([2, 0, 1], [0, 0, 0], [-1, 1, 2], bm=2, em=6)),
    ((2, 3), spec([5], [9], [1])),                        # empty
    ((0, 3), spec([0], [0], [1], bm=1, em=1)),            # empty input
    ((2, 3, 1, 4, 1, 2, 3, 2), spec([1, 0], [0, 3], [1, -1], el=2)),
    ((6, 5, 4), spec([5, 4, 3], [0, 0, 0], [-2, -3, -1])),
    ((), spec([], [], [])),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", range(len(SLICES)))
def test_strided_slice_glue_matches_the_cpu(glue, case, dtype):
    shape, s = SLICES[case]
    assert same(glue, "StridedSlice", rand(shape, dtype, case), **s) is None


def grad_attrs(shape, s):
    return dict(ints=tuple(shape) + s["ints"], i=s["i"] + (len(shape),))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128,
                                   np.int32, np.float16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", range(len(SLICES)))
def test_strided_slice_grad_glue_matches_the_cpu(glue, case, dtype):
    shape, s = SLICES[case]
    dy_shape = cpu("StridedSlice", rand(shape, np.float32), **s)[0].shape
    dy = rand(dy_shape, dtype, case + 1)
    assert same(glue, "StridedSliceGrad", dy, **grad_attrs(shape, s)) is None


def test_strided_slice_glue_raises_the_cpu_error(glue):
    # A kernel called with attrs the shape rule never saw (a traced
    # graph's node, say) must fail as the CPU kernel does, never read
    # out of range: the plan is the same code.
    x = rand((3, 4), np.float32)
    s = spec([7], [0], [1], sh=1)           # x[7]: out of range
    out = np.zeros((4,), np.float32)
    rc, _, on_host, err = gpu_glue(glue, "StridedSlice", x, [out], **s)
    assert rc != 0 and not on_host
    assert "StridedSlice" in err and "out of bounds" in err, err
    s = spec([0], [2], [0])
    rc, _, _, err = gpu_glue(glue, "StridedSlice", x, [out], **s)
    assert rc != 0 and "strides[0] must be non-zero" in err, err
    rc, _, _, err = gpu_glue(glue, "StridedSliceGrad", out,
                             [np.zeros((3, 4), np.float32)],
                             **grad_attrs((3, 4), spec([0], [1], [0])))
    assert rc != 0 and "StridedSliceGrad" in err, err


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_,
                                   np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,begin,size", [
    ((5,), [1], [3]), ((4, 6), [1, 2], [2, 4]), ((4, 6), [0, 5], [4, 1]),
    ((3, 4, 5), [1, 0, 2], [0, 4, 3]), ((2, 1, 3, 1, 2, 1, 2, 3),
                                        [1, 0, 1, 0, 0, 0, 1, 0],
                                        [1, 1, 2, 1, 2, 1, 1, 3]),
    ((), [], [])])
def test_slice_glue_matches_the_cpu(glue, shape, begin, size, dtype):
    assert same(glue, "Slice", rand(shape, dtype),
                ints=tuple(begin) + tuple(size)) is None


@pytest.mark.parametrize("shape,axes", [
    ((5,), [0]), ((3, 4), [1]), ((3, 4), [0, 1]), ((2, 3, 4), [-1, 0]),
    ((2, 0, 3), [1]), ((3, 4), [])])
def test_reverse_glue_matches_the_cpu(glue, shape, axes):
    for dtype in (np.float32, np.int8, np.complex128):
        assert same(glue, "ReverseV2", rand(shape, dtype),
                    ints=tuple(axes)) is None


@pytest.mark.parametrize("shape,mult,host", [
    ((3,), [2], False), ((2, 3), [3, 1], False), ((2, 3), [1, 0], False),
    ((2, 1, 3), [2, 4, 1], False), ((1, 2, 1, 2), [2, 1, 3, 2], False),
    ((1, 2, 1, 2, 1), [2, 1, 3, 2, 2], True), ((), [], False)])
def test_tile_glue_matches_the_cpu(glue, shape, mult, host):
    for dtype in (np.float64, np.uint8, np.float16):
        assert same(glue, "Tile", rand(shape, dtype), ints=tuple(mult),
                    host=host) is None


@pytest.mark.parametrize("op,shape,ints,i", [
    ("Split", (6, 4), (), (0, 3)), ("Split", (6, 4), (), (1, 2)),
    ("Split", (2, 3, 6), (), (-1, 3)), ("SplitV", (2, 7, 3), (2, 0, 5),
                                        (1,)),
    ("SplitV", (5, 3), (4, -1), (0,)), ("Unpack", (3, 4), (), (0, 3)),
    ("Unpack", (3, 4, 2), (), (1, 4)), ("Unpack", (3, 2), (), (-1, 2)),
    ("Split", (0, 4), (), (1, 2)), ("Unpack", (2, 0), (), (0, 2)),
    # Rows past the (lowered) pitch limit: the strided gather.
    ("SplitV", (3, 40), (10, 0, 30), (1,)), ("Split", (2, 3, 24), (), (1, 3)),
    ("Unpack", (2, 4, 30), (), (1, 4))])
def test_split_glue_matches_the_cpu(glue, op, shape, ints, i):
    for dtype in (np.float32, np.int64, np.complex128):
        assert same(glue, op, rand(shape, dtype), ints=ints, i=i) is None


@pytest.mark.parametrize("shape,pads", [
    ((3,), [1, 2]), ((2, 3), [0, 1, 2, 0]), ((2, 3), [0, 0, 0, 0]),
    ((0, 2), [1, 1, 0, 1]), ((2, 1, 2), [1, 0, 0, 2, 1, 1]), ((), [])])
@pytest.mark.parametrize("dtype,value", [
    (np.float32, 1.5), (np.float64, -2.25), (np.int32, 7.0),
    (np.float16, 0.1), (np.uint8, 200.0), (np.bool_, 1.0),
    (np.complex128, 3.0), (np.int64, 0.0)], ids=str)
def test_pad_glue_matches_the_cpu(glue, shape, pads, dtype, value):
    assert same(glue, "PadV2", rand(shape, dtype), ints=tuple(pads),
                f0=value) is None


def test_pad_glue_takes_the_exact_int64_constant(glue):
    # i[1] = 1: the constant is i[2] exactly (beyond float64's 2^53).
    big = 2**62 + 1
    assert same(glue, "PadV2", np.arange(4, dtype=np.int64).reshape(2, 2),
                ints=(1, 0, 0, 1), i=(0, 1, big), f0=float(big)) is None


@pytest.mark.parametrize("shape,axis", [
    ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
    ((1, 1), 0), ((0, 4), 1), ((4, 1000), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argreduce_glue_matches_the_cpu(glue, op, shape, axis, dtype):
    x = (rand(shape, np.float64, 3) // 4).astype(dtype)   # many ties
    for out in (tf.int64, tf.int32):
        assert same(glue, op, x, i=(axis,), dtype=out) is None


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argreduce_glue_nans_and_other_dtypes(glue, op):
    x = np.array([[1, np.nan, 5, np.nan], [3, 3, -np.inf, 2],
                  [np.inf, 1, np.nan, np.inf]], np.float32)
    for axis in (0, 1):
        assert same(glue, op, x, i=(axis,), dtype=tf.int64) is None
        assert same(glue, op, x.astype(np.float64), i=(axis,),
                    dtype=tf.int32) is None
    # uint8 has no GPU loop: the CPU kernel on host copies.
    assert same(glue, op, np.array([[3, 9, 9], [1, 0, 200]], np.uint8),
                i=(1,), dtype=tf.int64, host=True) is None


@pytest.mark.parametrize("shape,axis", [
    ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
    ((0, 4), 1), ((4, 0), 1), ((3, 1000), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
def test_scan_glue_matches_the_cpu(glue, op, shape, axis, dtype):
    x = rand(shape, np.float64, 5)
    if op == "Cumprod":
        x = x / 8 + 1
    x = x.astype(dtype)
    for excl in (0, 1):
        for rev in (0, 1):
            assert same(glue, op, x, i=(axis, excl, rev)) is None


@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
def test_scan_glue_wraps_integers_as_the_cpu(glue, op):
    big = np.array([2**62, 2**62, 3, -5, 2**40], np.int64)
    assert same(glue, op, big, i=(0, 0, 0)) is None
    assert same(glue, op, (big % 2**31).astype(np.int32) * 3,
                i=(0, 1, 0)) is None


@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
def test_scan_glue_other_dtypes_run_the_cpu_kernel(glue, op):
    assert same(glue, op, rand((3, 4), np.complex64), i=(1, 0, 0),
                host=True) is None
    assert same(glue, op, rand((3, 4), np.int8), i=(0, 1, 1),
                host=True) is None


@pytest.mark.parametrize("ishape,depth,axis", [
    ((5,), 4, -1), ((2, 3), 5, -1), ((2, 3), 5, 0), ((2, 3), 5, 1),
    ((0,), 3, -1), ((4,), 0, -1), ((), 6, -1)])
@pytest.mark.parametrize("idt", [np.int32, np.int64])
@pytest.mark.parametrize("dtype,on,off", [
    (np.float32, 1.0, 0.0), (np.float64, 2.5, -1.0), (np.int32, 7, 3),
    (np.bool_, True, False), (np.complex128, 1 + 2j, 0), (np.uint8, 9, 1),
    (np.float16, 0.5, 0.25)], ids=str)
def test_one_hot_glue_matches_the_cpu(glue, ishape, depth, axis, idt, dtype,
                                      on, off):
    idx = (np.arange(int(np.prod(ishape))) % (depth + 3) - 1).reshape(
        ishape).astype(idt)                # some -1 and >= depth
    assert same(glue, "OneHot", [idx, np.array(on, dtype),
                                 np.array(off, dtype)],
                i=(depth, axis)) is None


def test_one_hot_glue_uint8_indices_run_the_cpu_kernel(glue):
    assert same(glue, "OneHot", [np.array([0, 2, 1], np.uint8),
                                 np.float32(1), np.float32(0)],
                i=(3, -1), host=True) is None


@pytest.mark.parametrize("shape,pads", [
    ((3,), [2, 1]), ((2, 3), [0, 1, 2, 0]), ((3, 4), [2, 2, 3, 3]),
    ((2, 3), [0, 0, 0, 0]), ((3, 1, 4), [1, 2, 0, 0, 3, 1]), ((4,), [0, 3])])
@pytest.mark.parametrize("mode", [0, 1], ids=["REFLECT", "SYMMETRIC"])
def test_mirror_pad_glue_matches_the_cpu(glue, shape, pads, mode):
    for dtype in (np.float32, np.int64, np.uint8, np.complex128):
        x = rand(shape, dtype)
        err = same(glue, "MirrorPad", x, ints=tuple(pads), i=(mode,))
        # REFLECT allows pads up to dim - 1 only: the shape rule's error.
        assert err is None or (mode == 0 and "MirrorPad" in err), err
