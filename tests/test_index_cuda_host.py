"""kernels_index.c's GPU glue and index.cu's per-thread bodies, checked on
the host (issue 21): no GPU is lent, so IsNan/IsInf/IsFinite, Range,
LinSpace, GatherNd and Where (kernels_index.c), GatherV2 with batch dims
(kernels_shape.c) and TensorScatterMin/Max (kernels_scatter.c) are built
here into a shared library whose launchers run the .cu files' own
__host__ __device__ bodies serially (index.cu, shape.cu and scatter.cu
compiled by nvcc for the host, their real launchers renamed away), whose
CUDA copies are memcpy/memset, and whose every other tfm_* symbol is the
real one from the loaded tfmini._C. Each op's output must equal the CPU
kernel's byte for byte, and its errors must be the CPU's; where the glue
hands an op to the CPU kernel (tfm_cu_on_host) the test says whether it
should have. The scatters' atomics themselves (scatter.cu's minmax_to)
need a GPU: tests/gpu/test_gpu_index.py."""
import ctypes

import numpy as np
import pytest
from cuda_host_util import library_beside_c

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

# index.cu's launchers as serial loops over its bodies.
INDEX_BODIES = r"""
#define tfm_cu_float_pred tfm_cu_float_pred_on_device
#define tfm_cu_sequence tfm_cu_sequence_on_device
#define tfm_cu_gather_nd tfm_cu_gather_nd_on_device
#define tfm_cu_where_offsets tfm_cu_where_offsets_on_device
#define tfm_cu_where_coords tfm_cu_where_coords_on_device
#define tfm_cu_put_bytes tfm_cu_put_bytes_on_device
#include "kernels/cuda/index.cu"
#undef tfm_cu_put_bytes
#undef tfm_cu_float_pred
#undef tfm_cu_sequence
#undef tfm_cu_gather_nd
#undef tfm_cu_where_offsets
#undef tfm_cu_where_coords

template <typename U>
static int pred_host(int what, const void *x, void *o, int64_t n, U mask, U inf)
{
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)o)[i] = pred_at(what, (const U *)x, i, mask, inf);
    return 0;
}

extern "C" int
tfm_cu_float_pred(int what, int ty, const void *x, void *o, int64_t n, void *s)
{
    (void)s;
    switch (ty) {
    case TFM_CU_F32: return pred_host<uint32_t>(what, x, o, n, 0x7fffffffu, 0x7f800000u);
    case TFM_CU_F64: return pred_host<uint64_t>(what, x, o, n, 0x7fffffffffffffffull, 0x7ff0000000000000ull);
    case TFM_CU_F16: return pred_host<uint16_t>(what, x, o, n, 0x7fff, 0x7c00);
    case TFM_CU_BF16: return pred_host<uint16_t>(what, x, o, n, 0x7fff, 0x7f80);
    default: return -1;
    }
}

extern "C" int
tfm_cu_put_bytes(void *o, const void *bytes, size_t n, void *s)
{
    (void)s;
    bytes64 v = {};
    if (n > sizeof v.b)
        return -1;
    memcpy(v.b, bytes, n);
    for (size_t i = 0; i < n; i++)
        put_byte_at(v, (unsigned char *)o, (int64_t)i);
    return 0;
}

extern "C" int
tfm_cu_sequence(int kind, int es, int64_t istart, int64_t idelta,
                double fstart, double fdelta, int last, double stop,
                void *o, int64_t n, void *s)
{
    (void)s;
    if (kind == TFM_CU_SEQ_INT && es != 1 && es != 2 && es != 4 && es != 8)
        return -1;
    seq_plan p = {kind, es, last, istart, idelta, n, fstart, fdelta, stop};
    for (int64_t k = 0; k < n; k++)
        seq_at(p, o, k);
    return 0;
}

template <typename E>
static int gnd_host(int idx64, const void *x, const void *idx, void *o,
                    int64_t n, int64_t len, const tfm_cu_nd &p)
{
    for (int64_t i = 0; i < n; i++) {
        if (idx64)
            gather_nd_at((const E *)x, (const long long *)idx, (E *)o, len, p, i);
        else
            gather_nd_at((const E *)x, (const int *)idx, (E *)o, len, p, i);
    }
    return 0;
}

extern "C" int
tfm_cu_gather_nd(int es, int idx64, const void *x, const void *idx, void *o,
                 int64_t rows, int64_t len, const tfm_cu_nd *p, void *s)
{
    (void)s;
    int64_t n = rows * len;
    switch (es) {
    case 1: return gnd_host<uint8_t>(idx64, x, idx, o, n, len, *p);
    case 2: return gnd_host<uint16_t>(idx64, x, idx, o, n, len, *p);
    case 4: return gnd_host<uint32_t>(idx64, x, idx, o, n, len, *p);
    case 8: return gnd_host<uint64_t>(idx64, x, idx, o, n, len, *p);
    case 16: return gnd_host<b16>(idx64, x, idx, o, n, len, *p);
    default: return -1;
    }
}

extern "C" int
tfm_cu_where_offsets(int es, int is_float, const void *x, int64_t n,
                     int64_t *offs, void *tmp, size_t *tmp_bytes, void *s)
{
    (void)s;
    int64_t nc = chunks_of(n);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return -1;
    if (!tmp) {
        *tmp_bytes = (size_t)(nc + 1) * 8;
        return 0;
    }
    if (*tmp_bytes < (size_t)(nc + 1) * 8)
        return -1;
    int64_t *counts = (int64_t *)tmp, sum = 0;
    for (int64_t c = 0; c <= nc; c++)
        counts[c] = c < nc ? where_count_chunk(es, is_float, x, n, c) : 0;
    for (int64_t c = 0; c <= nc; c++) {   /* the exclusive scan */
        int64_t v = counts[c];
        offs[c] = sum;
        sum += v;
    }
    return 0;
}

extern "C" int
tfm_cu_where_coords(int es, int is_float, const void *x, int rank,
                    const int64_t *dims, int64_t n, const int64_t *offs,
                    int64_t *o, void *s)
{
    (void)s;
    if (rank < 0 || rank > TFM_CU_MAX_DIMS ||
        (es != 1 && es != 2 && es != 4 && es != 8))
        return -1;
    where_plan p;
    p.es = es;
    p.is_float = is_float;
    p.rank = rank;
    p.n = n;
    for (int j = 0; j < rank; j++)
        p.dims[j] = dims[j];
    for (int64_t c = 0; rank && c < chunks_of(n); c++)
        where_emit_chunk(p, x, offs, o, c);
    return 0;
}
"""

# shape.cu's gather body, serially.
SHAPE_BODIES = r"""
#define tfm_cu_gather tfm_cu_gather_on_device
#define tfm_cu_gather_batched tfm_cu_gather_batched_on_device
#define tfm_cu_transpose tfm_cu_transpose_on_device
#include "kernels/cuda/shape.cu"
#undef tfm_cu_gather
#undef tfm_cu_gather_batched
#undef tfm_cu_transpose

template <typename E>
static int g_host(int idx64, const void *x, const void *idx, void *o, int64_t n,
                  int64_t nidx, int64_t inner, int64_t dim, int64_t ob)
{
    for (int64_t i = 0; i < n; i++) {
        if (idx64)
            gather_at((const E *)x, (const long long *)idx, (E *)o, nidx, inner, dim, ob, i);
        else
            gather_at((const E *)x, (const int *)idx, (E *)o, nidx, inner, dim, ob, i);
    }
    return 0;
}

extern "C" int
tfm_cu_gather_batched(int es, int idx64, const void *x, const void *idx,
                      void *o, int64_t batch, int64_t outer, int64_t dim,
                      int64_t inner, int64_t nidx, void *s)
{
    (void)s;
    int64_t n = batch * outer * nidx * inner;
    if (n == 0)
        return 0;
    switch (es) {
    case 1: return g_host<uint8_t>(idx64, x, idx, o, n, nidx, inner, dim, outer);
    case 2: return g_host<uint16_t>(idx64, x, idx, o, n, nidx, inner, dim, outer);
    case 4: return g_host<uint32_t>(idx64, x, idx, o, n, nidx, inner, dim, outer);
    case 8: return g_host<uint64_t>(idx64, x, idx, o, n, nidx, inner, dim, outer);
    case 16: return g_host<b16>(idx64, x, idx, o, n, nidx, inner, dim, outer);
    default: return -1;
    }
}
"""

# scatter.cu's index check and its min/max rule (wins), serially, in
# index order, and its adds as plain sums; each skips a row whose index
# is out of range, as scatter.cu's kernels do when a capture's check
# could not stop them.
SCATTER_BODIES = r"""
#define tfm_cu_scatter_check tfm_cu_scatter_check_on_device
#define tfm_cu_scatter_add tfm_cu_scatter_add_on_device
#define tfm_cu_scatter_update tfm_cu_scatter_update_on_device
#define tfm_cu_scatter_minmax tfm_cu_scatter_minmax_on_device
#include "kernels/cuda/scatter.cu"
#undef tfm_cu_scatter_check
#undef tfm_cu_scatter_add
#undef tfm_cu_scatter_update
#undef tfm_cu_scatter_minmax

extern "C" int
tfm_cu_scatter_check(int idx64, const void *idx, int64_t rows,
                     const tfm_cu_nd *p, int *flag, void *s)
{
    (void)s;
    for (int64_t k = 0; k < rows; k++)
        if ((idx64 ? tfm_nd_offset((const long long *)idx, k, *p)
                   : tfm_nd_offset((const int *)idx, k, *p)) < 0)
            *flag = 1;
    return 0;
}

template <typename T>
static int mm_host(int is_max, int idx64, const void *idx, const void *u,
                   void *o, int64_t rows, int64_t len, const tfm_cu_nd &p)
{
    for (int64_t i = 0; i < rows * len; i++) {
        int64_t k = i / len, j = i % len;
        int64_t at = idx64 ? tfm_nd_offset((const long long *)idx, k, p)
                           : tfm_nd_offset((const int *)idx, k, p);
        if (at < 0)
            continue;
        T *a = (T *)o + at * len + j;
        T v = ((const T *)u)[i];
        if (wins(is_max, v, *a))
            *a = v;
    }
    return 0;
}

template <typename T>
static int add_host(int idx64, const void *idx, const void *u, void *o,
                    int64_t rows, int64_t len, const tfm_cu_nd &p)
{
    for (int64_t i = 0; i < rows * len; i++) {
        int64_t k = i / len, j = i % len;
        int64_t at = idx64 ? tfm_nd_offset((const long long *)idx, k, p)
                           : tfm_nd_offset((const int *)idx, k, p);
        if (at >= 0)
            ((T *)o)[at * len + j] += ((const T *)u)[i];
    }
    return 0;
}

extern "C" int
tfm_cu_scatter_add(int kind, int idx64, const void *idx, const void *u,
                   void *o, int64_t rows, int64_t len, const tfm_cu_nd *p,
                   void *s)
{
    (void)s;
    switch (kind) {
    case TFM_CU_OUT_F32: return add_host<float>(idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_F64: return add_host<double>(idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_I32: return add_host<int32_t>(idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_I64: return add_host<int64_t>(idx64, idx, u, o, rows, len, *p);
    default: return -1;
    }
}

extern "C" int
tfm_cu_scatter_minmax(int is_max, int kind, int idx64, const void *idx,
                      const void *u, void *o, int64_t rows, int64_t len,
                      const tfm_cu_nd *p, void *s)
{
    (void)s;
    switch (kind) {
    case TFM_CU_OUT_F32: return mm_host<float>(is_max, idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_F64: return mm_host<double>(is_max, idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_I32: return mm_host<int32_t>(is_max, idx64, idx, u, o, rows, len, *p);
    case TFM_CU_OUT_I64: return mm_host<int64_t>(is_max, idx64, idx, u, o, rows, len, *p);
    default: return -1;
    }
}
"""

GLUE = r"""
#define FAKE_GLUE_ON_HOST FAKE_GLUE_RUN_CPU
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_index.c"
#include "kernels/cuda/kernels_scatter.c"
#include "kernels/cuda/kernels_shape.c"

/* Note [Index checks inside a CUDA graph capture]: a capture's flag,
 * handed to the glue as exec_cugraph.c does (NULL: not capturing). */
void capture_with(int *flag) { tfm_cu_capture_flag(flag); }

static tfm_kernel_fn table[TFM_OP_COUNT];

/* One call of op's GPU kernel on host tensors (nin inputs of dtypes
 * dts, ranks nds, dims 8 a row). Returns the tfm_code; *host set when
 * the glue handed the op to the CPU kernel; *leak the scratch bytes
 * left allocated; err gets the error text. */
int run(int op, int nin, const int *dts, const int *nds, const int64_t *dims,
        void **xs, int odt, int ond, const int64_t *odims, void *outp,
        const int64_t *iv, const double *fv, int *host, long *leak,
        char *err, int errlen)
{
    if (!table[TFM_OP_GATHER_ND]) {
        tfm_cuda_kernels_index_init(table);
        tfm_cuda_kernels_scatter_init(table);
        tfm_cuda_kernels_shape_init(table);
    }
    if (!table[op])
        return -1;
    tfm_buffer bi[4], bo;
    tfm_tensor ti[4], to, *pi[4], *po = &to;
    for (int k = 0; k < nin; k++)
        pi[k] = fake_tensor(&ti[k], &bi[k], dts[k], nds[k], dims + 8 * k,
                            xs[k]);
    fake_tensor(&to, &bo, odt, ond, odims, outp);
    tfm_attrs a;
    tfm_attrs_init(&a);
    memcpy(a.i, iv, sizeof a.i);
    for (int k = 0; k < 4; k++)
        a.f[k] = fv[k];
    a.dtype = (tfm_dtype)odt;
    fake_on_host = 0;
    fake_scratch_live = 0;
    tfm_error_clear();
    int rc = table[op]((tfm_op)op, pi, nin, &a, &po, 1, &fake_kctx);
    *host = fake_on_host;
    *leak = fake_scratch_live;
    snprintf(err, (size_t)errlen, "%s", rc ? tfm_error_message() : "");
    return rc;
}
"""


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    return library_beside_c(tmp_path_factory, "index", GLUE,
                            [INDEX_BODIES, SHAPE_BODIES, SCATTER_BODIES])


def dtype_enum(lib, name):
    v = lib.dtype_of(name.encode())
    assert v >= 0, name
    return v


def gpu_glue(lib, op, xs, out_dtype, out_shape, i=(), f=(), names=None):
    """op's GPU kernel through the host harness: (code, output, on_host,
    scratch bytes leaked, error text). names overrides the inputs' dtype
    names (bfloat16 passed as its uint16 bits)."""
    xs = [np.ascontiguousarray(v) for v in xs]
    names = names or [np.dtype(v.dtype).name for v in xs]
    dts = [dtype_enum(lib, n) for n in names]
    odt = dtype_enum(lib, np.dtype(out_dtype).name)
    out = np.frombuffer(bytearray(b"\x5a" * (int(np.prod(out_shape)) *
                                           np.dtype(out_dtype).itemsize)),
                        out_dtype).reshape(out_shape)
    I64 = ctypes.c_int64
    dims = (I64 * 32)()
    for k, v in enumerate(xs):
        for j, n in enumerate(v.shape):
            dims[8 * k + j] = n
    host, leak = ctypes.c_int(), ctypes.c_long()
    err = ctypes.create_string_buffer(512)
    iv = list(i) + [0] * (6 - len(i))
    fv = list(f) + [0.0] * (4 - len(f))
    rc = lib.run(ID[op], len(xs), (ctypes.c_int * 4)(*dts),
                 (ctypes.c_int * 4)(*[v.ndim for v in xs]), dims,
                 (ctypes.c_void_p * 4)(*[v.ctypes.data for v in xs]), odt,
                 len(out_shape), (I64 * 8)(*out_shape),
                 ctypes.c_void_p(out.ctypes.data), (I64 * 6)(*iv),
                 (ctypes.c_double * 4)(*fv), ctypes.byref(host),
                 ctypes.byref(leak), err, 512)
    return rc, out, host.value, leak.value, err.value.decode()


def cpu(op, xs, i=(), f=(), dtype=None):
    kw = {}
    if i:
        kw["i"] = tuple(i)
    if f:
        kw["f"] = tuple(f)
    if dtype is not None:
        kw["dtype"] = tf.as_dtype(dtype)._enum
    with tf.device("/CPU:0"):
        return _C.call(ID[op], tuple(tf.constant(v) for v in xs),
                       **kw).numpy()


def same(lib, op, xs, i=(), f=(), dtype=None, host=False):
    """The glue's output equals the CPU kernel's bit for bit, or both fail
    with the CPU's message (returned); host: whether the glue should hand
    the op to the CPU kernel."""
    try:
        want = cpu(op, xs, i, f, dtype)
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        # Raised by the shape rule before any kernel runs.
        return str(e)
    rc, got, on_host, leak, err = gpu_glue(lib, op, xs, want.dtype,
                                           want.shape, i, f)
    assert rc == 0, err
    assert leak == 0
    assert on_host == host, (op, [x.shape for x in xs], i, f)
    assert got.tobytes() == want.tobytes(), (op, got, want)
    return None


def kernel_error(lib, op, xs, out_dtype, out_shape, i=(), f=()):
    """The glue's error for a call the CPU kernel refuses, and that it
    came from the CPU kernel on host copies with no scratch left."""
    rc, _, on_host, leak, err = gpu_glue(lib, op, xs, out_dtype, out_shape,
                                         i, f)
    assert rc != 0 and on_host and leak == 0
    return err


SPECIALS = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40,
            3e38, 65504.0, 7e4, 1e-8]


@pytest.mark.parametrize("op", ["IsNan", "IsInf", "IsFinite"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_predicates_match_the_cpu(glue, op, dtype):
    with np.errstate(over="ignore"):
        x = np.array(SPECIALS * 3, dtype).reshape(3, len(SPECIALS))
    # float16's CPU kernel runs on the dispatcher's float32 copy; the
    # GPU's reads the 16-bit pattern itself.
    assert same(glue, op, [x]) is None


@pytest.mark.parametrize("op", ["IsNan", "IsInf", "IsFinite"])
def test_float_predicates_read_bfloat16_bits(glue, op):
    with np.errstate(over="ignore"):
        f32 = np.array(SPECIALS + [1e39], np.float32)
    bits = (f32.view(np.uint32) >> 16).astype(np.uint16)
    back = (bits.astype(np.uint32) << 16).view(np.float32)
    want = {"IsNan": np.isnan, "IsInf": np.isinf,
            "IsFinite": np.isfinite}[op](back)
    rc, got, on_host, leak, err = gpu_glue(glue, op, [bits], np.bool_,
                                           bits.shape, names=["bfloat16"])
    assert rc == 0 and not on_host and leak == 0, err
    assert (got == want).all()


def test_float_predicates_of_an_empty_tensor(glue):
    assert same(glue, "IsNan", [np.zeros((0, 3), np.float32)]) is None


RANGES = [(0, 10, 1), (2, 11, 3), (10, -7, -2), (5, 5, 1), (-3, 4, 7),
          (0, 127, 1), (-128, 127, 5)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32,
                                   np.int64])
@pytest.mark.parametrize("r", RANGES)
def test_integer_range_matches_the_cpu(glue, dtype, r):
    if np.dtype(dtype) == np.uint8 and min(r[:2]) < 0:
        pytest.skip("TF's Range refuses negative uint8 bounds")
    assert same(glue, "Range", [], i=r, dtype=dtype) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("r", [(0.0, 1.0, 0.1), (0.3, -2.0, -0.7),
                               (-1e3, 1e3, 0.37), (1.0, 1.0, 0.5),
                               (1e8, 1e8 + 64, 3.3)])
def test_float_range_matches_the_cpu_bit_for_bit(glue, dtype, r):
    assert same(glue, "Range", [], f=r, dtype=dtype) is None


def test_range_of_a_dtype_without_a_kernel_is_the_cpus_error(glue):
    with pytest.raises(Exception) as e:
        cpu("Range", [], i=(0, 4, 1), dtype=np.uint16)
    err = kernel_error(glue, "Range", [], np.uint16, (4,), i=(0, 4, 1))
    assert "Range" in err and "uint16" in err
    assert "uint16" in str(e.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lin", [(0.1, 1.0, 7), (-3.0, 5.0, 1000),
                                 (2.0, -2.0, 2), (1.0, 9.0, 1),
                                 (0.0, 1.0, 3)])
def test_linspace_matches_the_cpu_with_its_exact_end(glue, dtype, lin):
    assert same(glue, "LinSpace", [], f=lin[:2], i=lin[2:],
                dtype=dtype) is None


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 10
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


GATHER_ND = [
    ((4, 5), [[1, 2], [3, 4], [0, 0]]),          # elements
    ((4, 5, 3), [[1], [3], [3]]),                # rows, repeated
    ((4, 5, 3), [[[1, 2]], [[0, 4]]]),           # batched index rows
    ((2, 3, 2, 2, 2), [[1, 2, 0, 1, 1]]),
    ((4, 5), np.zeros((0, 2), np.int64)),        # no index rows
    ((0, 5), np.zeros((3, 0), np.int64)),        # depth 0, empty params
    ((3, 2), np.zeros((2, 0), np.int64)),        # depth 0: whole params
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64, np.uint8, np.bool_, np.float16,
                                   np.complex64, np.complex128])
@pytest.mark.parametrize("case", range(len(GATHER_ND)))
@pytest.mark.parametrize("idt", [np.int32, np.int64])
def test_gather_nd_matches_the_cpu(glue, dtype, case, idt):
    shape, idx = GATHER_ND[case]
    x = rand(shape, dtype, case)
    assert same(glue, "GatherNd", [x, np.array(idx, idt)]) is None


@pytest.mark.parametrize("idx", [[[1, 5]], [[-1, 0]], [[0, 0], [4, 0]]])
def test_gather_nd_bad_index_is_the_cpus_error(glue, idx):
    x = rand((4, 5), np.float32)
    ix = np.array(idx, np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        cpu("GatherNd", [x, ix])
    err = kernel_error(glue, "GatherNd", [x, ix], np.float32, (len(idx),))
    assert err == str(e.value).split("\n")[0] or err in str(e.value)


GATHER_BATCHED = [
    # params shape, indices, axis, batch_dims
    ((2, 5), [[0, 4, 4], [3, 1, 0]], 1, 1),
    ((2, 5, 3), [[0, 4], [3, 1]], 1, 1),
    ((2, 3, 5, 2), [[1, 0, 4], [2, 2, 3]], 2, 1),
    ((2, 3, 4), [[[0, 3], [1, 1], [3, 2]], [[2, 2], [0, 1], [1, 0]]], 2, 2),
    ((3, 4), [[], [], []], 1, 1),
    ((2, 5), [[0, 1], [2, 3]], 1, 0),
    ((4, 5), [3, 0, 1], 0, 0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16,
                                   np.uint8, np.complex128])
@pytest.mark.parametrize("case", range(len(GATHER_BATCHED)))
def test_gather_with_batch_dims_matches_the_cpu(glue, dtype, case):
    shape, idx, axis, bd = GATHER_BATCHED[case]
    x = rand(shape, dtype, case)
    ix = np.array(idx, np.int64).astype(np.int32)
    assert same(glue, "GatherV2", [x, ix], i=(axis, bd)) is None


CONDITIONS = [
    np.array([[1, 0, 2], [0, 0, 3]], np.int32),
    np.array([True, False, True, True]),
    np.array([[0.0, -0.0, np.nan], [1e-45, -3.0, 0.0]], np.float32),
    np.array([[0.0, -0.0], [np.nan, 2.0]], np.float64),
    np.array([0.0, -0.0, 1.0, np.nan], np.float16),
    np.zeros((3, 0, 2), np.int64),
    np.zeros((7,), np.uint8),
    np.array(3, np.int32),              # rank 0 through the op: [1, 0]
    np.array([-1, 0, 7], np.int64).astype(np.uint32),
]


def big_condition(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) < 0.3).astype(dtype)


@pytest.mark.parametrize("case", range(len(CONDITIONS) + 4))
def test_where_matches_the_cpu(glue, case):
    if case < len(CONDITIONS):
        c = CONDITIONS[case]
    else:
        # Many chunks, rank up to 5, partial last chunks.
        k = case - len(CONDITIONS)
        c = big_condition(k, [(1000,), (33, 61), (7, 9, 11, 3),
                              (2, 3, 4, 5, 6)][k],
                          [np.int8, np.float32, np.int16, np.uint64][k])
    n = int(np.count_nonzero(c != 0))    # NaN counts, -0.0 does not
    assert same(glue, "Where", [c], i=(n,)) is None


def test_where_with_a_wrong_count_is_the_cpus_error(glue):
    c = np.array([1, 0, 1], np.int32)
    err = kernel_error(glue, "Where", [c], np.int64, (3, 1), i=(3,))
    assert "Where" in err and "2 nonzero" in err


def test_where_of_bfloat16_runs_on_the_gpu_as_on_the_cpu(glue):
    # 0x8000 is -0.0 (zero); 0x7fc0 a NaN (nonzero).
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.array([[0x3f80, 0, 0x8000], [0x7fc0, 0x0001, 0]], np.uint16)
    want = cpu("Where", [bits.view(ml_dtypes.bfloat16)], i=(3,))
    np.testing.assert_array_equal(want, [[0, 0], [1, 0], [1, 1]])
    rc, got, on_host, leak, err = gpu_glue(glue, "Where", [bits], np.int64,
                                           want.shape, i=(3,),
                                           names=["bfloat16"])
    assert rc == 0 and not on_host and leak == 0, err
    np.testing.assert_array_equal(got, want)


def test_where_of_complex_runs_the_cpu_kernel(glue):
    c = np.array([0, 1j, -0.0 + 0j, 2], np.complex64)
    want = cpu("Where", [c], i=(2,))
    np.testing.assert_array_equal(want, [[1], [3]])
    rc, got, on_host, leak, err = gpu_glue(glue, "Where", [c], np.int64,
                                           want.shape, i=(2,))
    assert rc == 0 and on_host and leak == 0, err
    np.testing.assert_array_equal(got, want)


SCATTER = [
    ((6,), [[1], [3], [1], [5]], (4,)),
    ((4, 3), [[0], [2], [0]], (3, 3)),
    ((3, 4), [[0, 1], [2, 3], [0, 1], [1, 1]], (4,)),
    ((3, 2, 2), [[[1], [1]], [[2], [0]]], (2, 2, 2, 2)),
    ((5,), np.zeros((0, 1), np.int64), (0,)),
]


@pytest.mark.parametrize("op", ["TensorScatterMin", "TensorScatterMax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64])
@pytest.mark.parametrize("case", range(len(SCATTER)))
def test_scatter_min_max_match_the_cpu(glue, op, dtype, case):
    shape, idx, ushape = SCATTER[case]
    t = rand(shape, dtype, case)
    u = rand(ushape, dtype, case + 10)
    if np.dtype(dtype).kind == "f" and t.size and u.size:
        # NaN already there stays; a NaN update never wins.
        t.reshape(-1)[0] = np.nan
        u.reshape(-1)[-1] = np.nan
    assert same(glue, op, [t, np.array(idx, np.int64).astype(np.int32),
                           u]) is None


@pytest.mark.parametrize("op", ["TensorScatterMin", "TensorScatterMax"])
def test_scatter_min_max_of_other_dtypes_run_the_cpu_kernel(glue, op):
    t = np.arange(6, dtype=np.int16)
    u = np.array([9, -9], np.int16)
    assert same(glue, op, [t, np.array([[1], [4]], np.int32), u],
                host=True) is None


@pytest.mark.parametrize("op", ["TensorScatterMin", "TensorScatterMax",
                                "TensorScatterAdd"])
def test_scatter_bad_index_is_the_cpus_error_and_writes_nothing(glue, op):
    t = np.arange(6, dtype=np.float32)
    ix = np.array([[1], [6]], np.int32)
    u = np.array([9.0, -9.0], np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        cpu(op, [t, ix, u])
    err = kernel_error(glue, op, [t, ix, u], np.float32, (6,))
    assert err in str(e.value)


@pytest.fixture
def capturing(glue):
    """The glue as inside exec_cugraph.c's capture: a sticky flag (host
    memory here) that the index checks set instead of reading back."""
    flag = ctypes.c_int(0)
    glue.capture_with(ctypes.byref(flag))
    yield flag
    glue.capture_with(None)


@pytest.mark.parametrize("op", ["TensorScatterAdd", "TensorScatterMin",
                                "TensorScatterMax"])
def test_scatter_bad_index_in_a_capture_sets_the_flag(glue, capturing, op):
    """No read-back and no CPU kernel inside a capture: the flag is set,
    the bad row writes nothing and the good ones are applied (the record
    then reruns the call the plain way for the CPU's error)."""
    t = np.arange(6, dtype=np.float32)
    ix = np.array([[1], [6], [-1], [4]], np.int32)
    u = np.array([9.0, -9.0, 7.0, -3.0], np.float32)
    rc, got, on_host, leak, err = gpu_glue(glue, op, [t, ix, u],
                                           np.float32, (6,))
    assert rc == 0 and not on_host and leak == 0, err
    assert capturing.value == 1
    good = [0, 3]
    want = cpu(op, [t, ix[good], u[good]])
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("op", ["TensorScatterAdd", "TensorScatterMax"])
def test_scatter_good_indices_in_a_capture_match_the_cpu(glue, capturing,
                                                         op):
    t = rand((5, 3), np.float32)
    ix = np.array([[4], [0], [4]], np.int64)
    u = rand((3, 3), np.float32, 1)
    rc, got, on_host, leak, err = gpu_glue(glue, op, [t, ix, u],
                                           np.float32, (5, 3))
    assert rc == 0 and not on_host and leak == 0, err
    assert capturing.value == 0
    assert got.tobytes() == cpu(op, [t, ix, u]).tobytes()


def test_gather_nd_bad_index_in_a_capture_reads_nothing(glue, capturing):
    """index.cu's own body: a row out of range gives zeros, not a read
    outside params, and the flag is set."""
    x = rand((4, 5), np.float64)
    ix = np.array([[1, 4], [4, 0], [0, -1], [3, 2]], np.int32)
    rc, got, on_host, leak, err = gpu_glue(glue, "GatherNd", [x, ix],
                                           np.float64, (4,))
    assert rc == 0 and not on_host and leak == 0, err
    assert capturing.value == 1
    np.testing.assert_array_equal(got, [x[1, 4], 0.0, 0.0, x[3, 2]])


def test_gather_nd_good_indices_in_a_capture_leave_the_flag(glue,
                                                            capturing):
    x = rand((4, 5, 2), np.int64)
    ix = np.array([[3, 4], [0, 0]], np.int64)
    rc, got, on_host, leak, err = gpu_glue(glue, "GatherNd", [x, ix],
                                           np.int64, (2, 2))
    assert rc == 0 and not on_host and capturing.value == 0, err
    assert got.tobytes() == cpu("GatherNd", [x, ix]).tobytes()


def test_bad_index_outside_a_capture_still_reads_back(glue):
    """After a capture the glue reads the flag back again: the CPU's
    error, nothing written."""
    flag = ctypes.c_int(0)
    glue.capture_with(ctypes.byref(flag))
    glue.capture_with(None)
    t = np.arange(6, dtype=np.float32)
    ix = np.array([[1], [6]], np.int32)
    u = np.array([9.0, -9.0], np.float32)
    err = kernel_error(glue, "TensorScatterAdd", [t, ix, u], np.float32,
                       (6,))
    assert "TensorScatterAdd" in err and flag.value == 0


@pytest.mark.parametrize("op", ["Shape", "Size", "Rank"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1,), (3,), (2, 0, 5),
                                   (1, 2, 3, 4, 5, 6, 7, 8)])
def test_shape_size_rank_write_the_cpus_values(glue, op, dtype, shape):
    """Written by a kernel whose parameter holds the values (a capture
    keeps them), not copied from the host: the CPU kernel's bytes. (No
    scalar: gpu_glue's ascontiguousarray makes it one-dimensional.)"""
    x = np.zeros(shape, np.float32)
    want = cpu(op, [x], dtype=dtype)
    rc, got, on_host, leak, err = gpu_glue(glue, op, [x], want.dtype,
                                           want.shape)
    assert rc == 0 and not on_host and leak == 0, err
    assert got.tobytes() == want.tobytes()
