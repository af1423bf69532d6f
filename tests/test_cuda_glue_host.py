"""kernels_rnn.c's and kernels_scatter.c's GPU glue, checked on the host
(issue 21). kernels_rnn.c: the LSTM
sequence ops' GEMMs (h @ R, dz @ R^T, hs^T @ dzs) go through
kernels_matmul.c's tfm_cu_gemm (BatchMatMulV2's row-major path over
cuBLAS's and cuBLASLt's column-major GEMMs), and their time loops index
the [T, B, *] stacks, neither run on a GPU yet. These tests build them
into host programs whose cuBLAS and cuBLASLt calls are the documented
column-major reference over the descriptors the glue builds (leading
dimensions checked as the libraries do), whose CUDA copies are
memcpy/memset and whose cell kernels are the CPU row functions (rnn.cu's
kernels run the same macro text), link them with every other symbol
left unresolved (never called), and check the GEMM paths (plain,
batched, cuBLASLt's bias and ReLU epilogues) against row-major products
and the whole forward and backward against the CPU kernels. kernels_scatter.c: the index plan
(depth, dims, slice strides, rows, slice length), the check before any
write, the copy unless in place, built the same way with serial
launchers (launch_ops.h's contract) and compared with the CPU kernels;
a bad index must reach the CPU kernel on host copies (exit code 10).
kernels_random.c: parameters, stream (attrs, a traced instance's run
count, a state input) and the float16 fallback, with random.cu's
per-thread bodies run serially as its launcher and cpu/random.c linked
in, equal to the CPU kernels call by call."""
import os
import subprocess

import numpy as np
import pytest
from cuda_host_util import cuda_include, cudart_program, gcc_cuda_program

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID


# cuBLAS's strided batched GEMMs (float32 through the Ex call, float64)
# as their documented column-major arithmetic, leading dimensions checked
# as cuBLAS checks them; ex_calls counts the calls.
CUBLAS_GEMMS = r"""
static int ex_calls;
/* op(X)(i, l) of a column-major X with leading dimension ld. */
#define AT(X, t, i, l, ld) ((t) == CUBLAS_OP_N ? (X)[(i) + (l) * (ld)] : (X)[(l) + (i) * (ld)])
#define REF(T)                                                               \
    for (int64_t b = 0; b < batch; b++)                                      \
        for (int i = 0; i < m; i++)                                          \
            for (int j = 0; j < n; j++) {                                    \
                double s = 0;                                                \
                for (int l = 0; l < k; l++)                                  \
                    s += (double)AT((const T *)A + b * sa, ta, i, l, lda) *  \
                         (double)AT((const T *)B + b * sb, tb, l, j, ldb);   \
                ((T *)C)[b * sc + i + j * ldc] = (T)(*(const T *)alpha * s); \
            }
cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const void *alpha, const void *A, cudaDataType at,
                           int lda, long long sa, const void *B,
                           cudaDataType bt, int ldb, long long sb,
                           const void *beta, void *C, cudaDataType ct,
                           int ldc, long long sc, int batch,
                           cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h; (void)beta; (void)comp; (void)algo;
    if (at != CUDA_R_32F || bt != at || ct != at ||
        lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
        return CUBLAS_STATUS_INVALID_VALUE;
    ex_calls++;
    REF(float)
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                          cublasOperation_t tb, int m, int n, int k,
                          const double *alpha, const double *A, int lda,
                          long long sa, const double *B, int ldb,
                          long long sb, const double *beta, double *C,
                          int ldc, long long sc, int batch)
{
    (void)h; (void)beta;
    if (lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
        return CUBLAS_STATUS_INVALID_VALUE;
    ex_calls++;
    REF(double)
    return CUBLAS_STATUS_SUCCESS;
}
"""

HARNESS = r"""
/* kernels_matmul.c's GEMM paths on the host: tfm_cu_gemm (the entry
 * kernels_rnn.c shares), the batched call and a cuBLASLt epilogue, with
 * cuBLAS and cuBLASLt replaced by their documented column-major
 * arithmetic over the descriptors the glue builds (leading dimensions
 * checked as the libraries check them). */
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_matmul.c"

const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT] = {[TFM_FLOAT32] = 4,
                                                 [TFM_FLOAT64] = 8};
static int lt_ok, lt_calls;

""" + CUBLAS_GEMMS + r"""
/* cuBLASLt: descriptors as plain structs behind the opaque pointers. */
typedef struct { int type; int64_t rows, cols, ld, stride; int batch; } lay;
typedef struct { int ta, tb, epi; const void *bias; int bias_type; } mdesc;
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    *h = lt_ok ? (cublasLtHandle_t)&fake_gpu : NULL;
    return lt_ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t st)
{
    (void)c;
    if (st != CUDA_R_32F)
        return CUBLAS_STATUS_INVALID_VALUE;
    *d = (cublasLtMatmulDesc_t)calloc(1, sizeof(mdesc));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n)
{
    mdesc *m = (mdesc *)d;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: m->ta = *(const int32_t *)buf; break;
    case CUBLASLT_MATMUL_DESC_TRANSB: m->tb = *(const int32_t *)buf; break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: m->epi = (int)*(const uint32_t *)buf; break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: memcpy(&m->bias, buf, sizeof m->bias); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: m->bias_type = *(const int32_t *)buf; break;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
    return n ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld)
{
    lay *y = calloc(1, sizeof *y);
    *y = (lay){.type = t, .rows = (int64_t)rows, .cols = (int64_t)cols, .ld = ld, .batch = 1};
    *l = (cublasLtMatrixLayout_t)y;
    /* Column-major: ld covers a column. */
    return ld >= (int64_t)rows ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void *buf, size_t n)
{
    lay *y = (lay *)l;
    if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && n == 4)
        y->batch = *(const int32_t *)buf;
    else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && n == 8)
        y->stride = *(const int64_t *)buf;
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { free(l); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { free(d); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{ *p = (cublasLtMatmulPreference_t)&fake_gpu; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *b, size_t n)
{ (void)p; (void)a; (void)b; (void)n; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { (void)p; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t p, int req, cublasLtMatmulHeuristicResult_t r[], int *found)
{
    (void)h; (void)d; (void)A; (void)B; (void)C; (void)D; (void)p; (void)req;
    memset(&r[0], 0, sizeof r[0]);
    r[0].state = CUBLAS_STATUS_SUCCESS;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmul(cublasLtHandle_t hh, cublasLtMatmulDesc_t dd, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
               const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc,
               void *D, cublasLtMatrixLayout_t ld_, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsz, cudaStream_t st)
{
    (void)hh; (void)beta; (void)algo; (void)ws; (void)wsz; (void)st;
    const mdesc *md = (const mdesc *)dd;
    const lay *a = (const lay *)la, *b = (const lay *)lb, *c = (const lay *)lc, *d = (const lay *)ld_;
    int ta = md->ta, tb = md->tb;
    int64_t m = ta == CUBLAS_OP_N ? a->rows : a->cols, k = ta == CUBLAS_OP_N ? a->cols : a->rows;
    int64_t kb = tb == CUBLAS_OP_N ? b->rows : b->cols, n = tb == CUBLAS_OP_N ? b->cols : b->rows;
    if (C != D || c != d || a->type != CUDA_R_32F || k != kb || d->rows != m || d->cols != n ||
        a->batch != d->batch || b->batch != d->batch)
        return CUBLAS_STATUS_INVALID_VALUE;
    lt_calls++;
    int64_t batch = d->batch, lda = a->ld, ldb = b->ld, ldc = d->ld;
    int64_t sa = a->stride, sb = b->stride, sc = d->stride;
    REF(float)
    /* The epilogue: bias over D's rows, then the activation. */
    for (int64_t bt = 0; bt < batch; bt++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                float *v = (float *)D + bt * sc + i + j * ldc;
                if (md->epi & CUBLASLT_EPILOGUE_BIAS)
                    *v += ((const float *)md->bias)[i];
                if ((md->epi & CUBLASLT_EPILOGUE_RELU) == CUBLASLT_EPILOGUE_RELU && *v < 0)
                    *v = 0;
            }
    return CUBLAS_STATUS_SUCCESS;
}

static int bad;

/* C (row-major, batch matrices) against the product of A and B as
 * row-major: A [m, k] or, when ta, [k, m]; B [k, n] or [n, k]. */
#define CHECK(T, NAME)                                                       \
static void NAME(int ta, int tb, int64_t batch, int64_t m, int64_t n,        \
                 int64_t k, const T *A, int64_t sa, const T *B, int64_t sb,  \
                 const T *C, const T *bias, int relu)                        \
{                                                                            \
    for (int64_t b = 0; b < batch; b++)                                      \
    for (int64_t i = 0; i < m; i++)                                          \
        for (int64_t j = 0; j < n; j++) {                                    \
            double s = 0;                                                    \
            for (int64_t l = 0; l < k; l++)                                  \
                s += (ta ? A[b * sa + l * m + i] : A[b * sa + i * k + l]) *  \
                     (tb ? B[b * sb + j * k + l] : B[b * sb + l * n + j]);   \
            if (bias)                                                        \
                s += bias[j];                                                \
            if (relu && s < 0)                                               \
                s = 0;                                                       \
            bad += (T)s != C[b * m * n + i * n + j];                         \
        }                                                                    \
}
CHECK(double, check_d)
CHECK(float, check_f)

int main(void)
{
    static double A[512], B[512], C[512];
    static float Af[512], Bf[512], Cf[512], bias[8];
    for (int i = 0; i < 512; i++) {
        A[i] = rand() % 7 - 3;
        B[i] = rand() % 5 - 2;
        Af[i] = (float)A[i];
        Bf[i] = (float)B[i];
    }
    for (int i = 0; i < 8; i++)
        bias[i] = (float)(i % 3) - 1.5f;
    for (int lt = 0; lt < 2; lt++)
    for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
    for (int m = 1; m < 6; m += 2)
    for (int n = 1; n < 7; n += 3)
    for (int k = 0; k < 5; k++) {
        lt_ok = lt;
        memset(C, 0x7f, sizeof C);
        if (tfm_cu_gemm(0, &fake_gpu, NULL, TFM_FLOAT64, ta, tb, m, n, k, A, B, C))
            return 2;
        check_d(ta, tb, 1, m, n, k, A, 0, B, 0, C, NULL, 0);
        memset(Cf, 0x7f, sizeof Cf);
        if (tfm_cu_gemm(0, &fake_gpu, NULL, TFM_FLOAT32, ta, tb, m, n, k, Af, Bf, Cf))
            return 3;
        check_f(ta, tb, 1, m, n, k, Af, 0, Bf, 0, Cf, NULL, 0);
        if (k == 0)
            continue;
        /* BatchMatMulV2's strided batches, B shared (stride 0, never
         * given to cuBLASLt) or not. */
        for (int shared = 0; shared < 2; shared++) {
            mm x = {.d = TFM_FLOAT32, .adj_x = ta, .adj_y = tb, .m = m,
                    .n = n, .k = k, .batch = 3, .sa = m * k,
                    .sb = shared ? 0 : k * n, .A = Af, .B = Bf, .C = Cf};
            if (gemm(0, &fake_gpu, NULL, &x))
                return 4;
            check_f(ta, tb, 3, m, n, k, Af, x.sa, Bf, x.sb, Cf, NULL, 0);
        }
        /* A _FusedMatMul's epilogues: the bias runs over C's last dim. */
        for (int epi = TFM_LT_EPI_BIAS; lt && epi <= TFM_LT_EPI_RELU_BIAS; epi++) {
            int done = 0;
            mm x = {.d = TFM_FLOAT32, .adj_x = ta, .adj_y = tb, .m = m,
                    .n = n, .k = k, .batch = 1, .A = Af, .B = Bf, .C = Cf,
                    .epilogue = epi, .bias = has_bias(epi) ? bias : NULL};
            if (gemm_lt(0, &fake_gpu, NULL, &x, &done) || !done)
                return 5;
            check_f(ta, tb, 1, m, n, k, Af, 0, Bf, 0, Cf,
                    has_bias(epi) ? bias : NULL, epi != TFM_LT_EPI_BIAS);
        }
    }
    printf("bad %d lt %d ex %d\n", bad, lt_calls, ex_calls);
    return bad != 0 || !lt_calls || !ex_calls;
}
"""


SEQ_HARNESS = r"""
/* kernels_rnn.c's sequence loops on the host: CUDA's copies and cuBLAS
 * replaced by host versions (cuBLAS's documented column-major GEMM), the
 * cell kernels by the CPU row functions their bodies are the text of. */
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_rnn.c"
#include "kernels/cuda/kernels_matmul.c"
#include "kernels/cpu/rnn_math.h"

const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT] = {[TFM_FLOAT64] = 8};

/* float64 goes to cublasDgemmStridedBatched (tfm_cu_gemm's path). */
""" + CUBLAS_GEMMS + r"""
int
tfm_cu_lstm_seq_step(int is64, const void *x, void *z, const void *cp,
                     void *h, void *c, int64_t batch, int64_t u, void *s)
{
    (void)is64; (void)s;
    for (int64_t b = 0; b < batch; b++)
        tfm_lstm_row_double((double *)z + b * 4 * u,
                            (const double *)x + b * 4 * u,
                            (const double *)cp + b * u, (double *)h + b * u,
                            (double *)c + b * u, (double *)z + b * 4 * u, u);
    return 0;
}

int
tfm_cu_lstm_seq_grad_step(int is64, const void *dh, const void *dh2,
                          void *dc, const void *g, const void *cp,
                          const void *c, void *dz, int64_t batch, int64_t u,
                          void *s)
{
    (void)is64; (void)s;
    for (int64_t b = 0; b < batch; b++)
        tfm_lstm_grad_row_double(
            (const double *)dh + b * u,
            dh2 ? (const double *)dh2 + b * u : NULL,
            (const double *)dc + b * u, (const double *)g + b * 4 * u,
            (const double *)cp + b * u, (const double *)c + b * u,
            (double *)dz + b * 4 * u, (double *)dc + b * u, u);
    return 0;
}

static tfm_tensor *
mk(int nd, int64_t d0, int64_t d1, int64_t d2)
{
    tfm_tensor *t = calloc(1, sizeof *t);
    tfm_buffer *b = calloc(1, sizeof *b);
    t->dtype = TFM_FLOAT64;
    t->shape.ndim = nd;
    int64_t d[3] = {d0, d1, d2};
    for (int k = 0; k < nd; k++)
        t->shape.dims[k] = d[k];
    b->data = calloc((size_t)tfm_shape_numel(&t->shape) + 1, 8);
    t->buf = b;
    return t;
}

static void
rd(FILE *f, tfm_tensor *t)
{
    size_t n = (size_t)tfm_shape_numel(&t->shape);
    if (fread(tfm_tensor_data(t), 8, n, f) != n)
        exit(4);
}

static void
wr(FILE *f, tfm_tensor *t)
{
    fwrite(tfm_tensor_data(t), 8, (size_t)tfm_shape_numel(&t->shape), f);
}

/* argv: T B U with_dout in out */
int main(int argc, char **argv)
{
    if (argc != 7)
        return 2;
    int64_t T = atoll(argv[1]), B = atoll(argv[2]), U = atoll(argv[3]);
    int dout = atoi(argv[4]);
    FILE *in = fopen(argv[5], "rb"), *out = fopen(argv[6], "wb");
    tfm_tensor *xs = mk(3, T, B, 4 * U), *h0 = mk(2, B, U, 0),
               *c0 = mk(2, B, U, 0), *r = mk(2, U, 4 * U, 0),
               *dh = mk(2, B, U, 0), *dc = mk(2, B, U, 0),
               *dout_t = mk(3, T, B, U);
    rd(in, xs); rd(in, h0); rd(in, c0); rd(in, r); rd(in, dh); rd(in, dc);
    if (dout)
        rd(in, dout_t);
    tfm_tensor *fo[5] = {mk(3, T, B, U), mk(3, T, B, U), mk(3, T, B, 4 * U),
                         mk(2, B, U, 0), mk(2, B, U, 0)};
    tfm_tensor *fi[4] = {xs, h0, c0, r};
    if (k_lstm_sequence(TFM_OP_LSTM_SEQUENCE, fi, 4, NULL, fo, 5, NULL))
        return 5;
    tfm_tensor *gi[8] = {dh, dc, fo[0], fo[1], fo[2], fo[4], r, dout_t};
    tfm_tensor *go[4] = {mk(3, T, B, 4 * U), mk(2, B, U, 0), mk(2, B, U, 0),
                         mk(2, U, 4 * U, 0)};
    if (k_lstm_sequence_grad(TFM_OP_LSTM_SEQUENCE_GRAD, gi, dout ? 8 : 7,
                             NULL, go, 4, NULL))
        return 6;
    for (int k = 0; k < 5; k++)
        wr(out, fo[k]);
    for (int k = 0; k < 4; k++)
        wr(out, go[k]);
    fclose(out);
    return 0;
}
"""


SCATTER_HARNESS = r"""
/* kernels_scatter.c's glue on the host: CUDA's copies are memcpy/memset,
 * the launchers serial loops with launch_ops.h's contract (index order,
 * so repeated rows: adds sum, the last update wins), and the CPU kernel
 * on host copies an exit code (its error is the CPU's own). */
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_scatter.c"

const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT] = {[TFM_FLOAT64] = 8,
                                                 [TFM_INT64] = 8};

static int64_t
off(const int64_t *idx, int64_t k, const tfm_cu_nd *p)
{
    int64_t o = 0;
    for (int j = 0; j < p->depth; j++) {
        int64_t v = idx[k * p->depth + j];
        if (v < 0 || v >= p->dims[j])
            return -1;
        o += v * p->st[j];
    }
    return o;
}

int tfm_cu_scatter_check(int idx64, const void *idx, int64_t rows,
                         const tfm_cu_nd *p, int *flag, void *s)
{
    (void)s;
    if (!idx64)
        return -1;
    for (int64_t k = 0; k < rows; k++)
        if (off(idx, k, p) < 0)
            *flag = 1;
    return 0;
}

int tfm_cu_scatter_add(int kind, int idx64, const void *idx, const void *u,
                       void *o, int64_t rows, int64_t len,
                       const tfm_cu_nd *p, void *s)
{
    (void)s;
    if (kind != TFM_CU_OUT_F64 || !idx64)
        return -1;
    for (int64_t i = 0; i < rows * len; i++)
        ((double *)o)[off(idx, i / len, p) * len + i % len] +=
            ((const double *)u)[i];
    return 0;
}

int tfm_cu_scatter_update(int es, int idx64, const void *idx, const void *u,
                          void *o, int64_t rows, int64_t len,
                          const tfm_cu_nd *p, long long *win,
                          int64_t nslices, void *s)
{
    (void)s; (void)win; (void)nslices;
    if (es != 8 || !idx64)
        return -1;
    for (int64_t i = 0; i < rows * len; i++)
        ((double *)o)[off(idx, i / len, p) * len + i % len] =
            ((const double *)u)[i];
    return 0;
}

static tfm_tensor *
mk(tfm_dtype dt, int nd, const int64_t *d)
{
    tfm_tensor *t = calloc(1, sizeof *t);
    tfm_buffer *b = calloc(1, sizeof *b);
    t->dtype = dt;
    t->shape.ndim = nd;
    for (int k = 0; k < nd; k++)
        t->shape.dims[k] = d[k];
    b->data = calloc((size_t)tfm_shape_numel(&t->shape) + 1, 8);
    t->buf = b;
    return t;
}

/* argv: op(0 add, 1 update) in_place tndim d... indim d... undim d... in out */
int main(int argc, char **argv)
{
    int a = 1, op = atoi(argv[a++]), inplace = atoi(argv[a++]);
    int64_t d[3][8];
    int nd[3];
    for (int t = 0; t < 3; t++) {
        nd[t] = atoi(argv[a++]);
        for (int k = 0; k < nd[t]; k++)
            d[t][k] = atoll(argv[a++]);
    }
    FILE *in = fopen(argv[a], "rb"), *out = fopen(argv[a + 1], "wb");
    tfm_tensor *ts[3] = {mk(TFM_FLOAT64, nd[0], d[0]), mk(TFM_INT64, nd[1], d[1]),
                         mk(TFM_FLOAT64, nd[2], d[2])};
    for (int t = 0; t < 3; t++) {
        size_t n = (size_t)tfm_shape_numel(&ts[t]->shape);
        if (fread(tfm_tensor_data(ts[t]), 8, n, in) != n)
            return 4;
    }
    tfm_tensor *o = inplace ? ts[0] : mk(TFM_FLOAT64, nd[0], d[0]);
    if (k_scatter(op ? TFM_OP_TENSOR_SCATTER_UPDATE : TFM_OP_TENSOR_SCATTER_ADD,
                  ts, 3, NULL, &o, 1, &fake_kctx))
        return 5;
    fwrite(tfm_tensor_data(o), 8, (size_t)tfm_shape_numel(&o->shape), out);
    fclose(out);
    return 0;
}
"""


RANDOM_BODIES = r"""
// kernels_random.c's glue on the host: its launchers are random.cu's
// per-thread bodies run serially on host memory; stream and run counts
// from cpu/random.c (linked in), as on a GPU.
#include "cuda_serial_random.cuh"
"""

RANDOM_GLUE = r"""
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "kernels/cuda/kernels_random.c"

const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT] = {
    [TFM_FLOAT32] = 4, [TFM_FLOAT64] = 8, [TFM_INT32] = 4, [TFM_INT64] = 8,
    [TFM_FLOAT16] = 2};

/* argv: op dtype n key hi lo instance f0 f1 i4 i5 calls state(0/1) out;
 * with state, the stream comes from an input [lo, hi, key] instead. */
int main(int argc, char **argv)
{
    if (argc != 15)
        return 2;
    tfm_op op = (tfm_op)atoi(argv[1]);
    tfm_dtype dt = (tfm_dtype)atoi(argv[2]);
    int64_t n = atoll(argv[3]);
    tfm_attrs a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < 4; k++)
        a.i[k] = strtoll(argv[4 + k], 0, 0);
    a.f[0] = strtod(argv[8], 0);
    a.f[1] = strtod(argv[9], 0);
    a.i[4] = strtoll(argv[10], 0, 0);
    a.i[5] = strtoll(argv[11], 0, 0);
    int calls = atoi(argv[12]), with_state = atoi(argv[13]);
    FILE *out = fopen(argv[14], "wb");
    tfm_buffer b = {.refcount = 1, .data = calloc((size_t)n + 1, 8)};
    tfm_tensor t = {.dtype = dt, .buf = &b};
    t.shape.ndim = 1;
    t.shape.dims[0] = n;
    int64_t st[3] = {a.i[2], a.i[1], a.i[0]};
    tfm_buffer sb = {.refcount = 1, .data = st};
    tfm_tensor s = {.dtype = TFM_INT64, .buf = &sb};
    s.shape.ndim = 1;
    s.shape.dims[0] = 3;
    tfm_tensor *in[1] = {&s}, *o[1] = {&t};
    for (int c = 0; c < calls; c++) {
        if (k_random(op, in, with_state, &a, o, 1, &fake_kctx))
            return 5;
        fwrite(b.data, tfm_dtype_size(dt), (size_t)n, out);
    }
    fclose(out);
    return 0;
}
"""



def test_row_major_gemm_wrapper_is_cublas_column_major(tmp_path_factory):
    run = subprocess.run([gcc_cuda_program(tmp_path_factory, "gemm",
                                           HARNESS)], capture_output=True,
                         text=True)
    assert run.returncode == 0 and run.stdout.startswith("bad 0 "), (
        run.returncode, run.stdout, run.stderr)


@pytest.fixture(scope="module")
def seq_harness(tmp_path_factory):
    return gcc_cuda_program(tmp_path_factory, "lstm_seq", SEQ_HARNESS)


@pytest.mark.parametrize("steps,batch,units", [(1, 1, 1), (5, 3, 7),
                                               (12, 4, 9), (0, 2, 3),
                                               (4, 0, 3), (3, 5, 0)],
                         ids=str)
@pytest.mark.parametrize("with_dout", [False, True])
def test_sequence_loops_match_the_cpu_kernels(seq_harness, tmp_path, steps,
                                              batch, units, with_dout):
    rng = np.random.default_rng(steps * 100 + batch * 10 + units)
    xs = rng.standard_normal((steps, batch, 4 * units)) * 2
    h0, c0, dh, dc = (rng.standard_normal((batch, units)) for _ in range(4))
    r = rng.standard_normal((units, 4 * units)) * 0.5
    dout = rng.standard_normal((steps, batch, units))
    ins = [xs, h0, c0, r, dh, dc] + ([dout] if with_dout else [])
    (tmp_path / "in.bin").write_bytes(b"".join(a.tobytes() for a in ins))
    run = subprocess.run([seq_harness, str(steps), str(batch), str(units),
                          str(int(with_dout)), str(tmp_path / "in.bin"),
                          str(tmp_path / "out.bin")])
    assert run.returncode == 0, run.returncode
    got = np.fromfile(tmp_path / "out.bin", np.float64)
    with tf.device("/CPU:0"):
        fwd = _C.call(ID["_LSTMSequence"],
                      tuple(tf.constant(a) for a in (xs, h0, c0, r)))
        gin = [tf.constant(dh), tf.constant(dc), fwd[0], fwd[1], fwd[2],
               fwd[4], tf.constant(r)] + (
                   [tf.constant(dout)] if with_dout else [])
        grad = _C.call(ID["_LSTMSequenceGrad"], tuple(gin))
    want = np.concatenate([t.numpy().ravel()
                           for t in list(fwd) + list(grad)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


SCATTER_CASES = [
    ((8,), [[1], [3], [1], [7], [1]]), ((5, 3), [[0], [4], [0]]),
    ((4, 3, 2), [[1, 2], [3, 0], [1, 2], [0, 0]]),
    ((6, 4), [[[2], [5]], [[2], [2]]]), ((3, 4), np.zeros((0, 1), np.int64)),
    ((2, 0), [[1], [1]]),
    ((30, 7), np.random.default_rng(3).integers(0, 30, (100, 1))),
    ((2, 3, 4), [[1, 2, 3], [1, 2, 3], [0, 0, 0]]),
    ((3, 2), np.zeros((4, 0), np.int64)),
    ((5,), [[1], [5]]), ((4, 2), [[-1], [0]]),     # bad indices
]


@pytest.fixture(scope="module")
def scatter_harness(tmp_path_factory):
    return gcc_cuda_program(tmp_path_factory, "scatter", SCATTER_HARNESS)


@pytest.mark.parametrize("case", range(len(SCATTER_CASES)))
@pytest.mark.parametrize("in_place", [0, 1])
@pytest.mark.parametrize("op", ["TensorScatterAdd", "TensorScatterUpdate"])
def test_scatter_glue_matches_the_cpu_kernel(scatter_harness, tmp_path, op,
                                             in_place, case):
    shape, idx = SCATTER_CASES[case]
    idx = np.asarray(idx, np.int64)
    rng = np.random.default_rng(1)
    t = rng.standard_normal(shape)
    u = rng.standard_normal(idx.shape[:-1] + tuple(shape[idx.shape[-1]:]))
    args = [str(int(op == "TensorScatterUpdate")), str(in_place)]
    for a in (t, idx, u):
        args += [str(a.ndim)] + [str(v) for v in a.shape]
    (tmp_path / "in.bin").write_bytes(t.tobytes() + idx.tobytes() +
                                      u.tobytes())
    run = subprocess.run([scatter_harness] + args + [
        str(tmp_path / "in.bin"), str(tmp_path / "out.bin")])
    try:
        with tf.device("/CPU:0"):
            want = _C.call(ID[op], (tf.constant(t), tf.constant(idx),
                                    tf.constant(u))).numpy()
    except tf.errors.InvalidArgumentError:
        assert run.returncode == 10, run.returncode   # the CPU's error
        return
    assert run.returncode == 0, run.returncode
    got = np.fromfile(tmp_path / "out.bin", np.float64).reshape(shape)
    np.testing.assert_array_equal(got, want)



@pytest.fixture(scope="module")
def random_harness(tmp_path_factory):
    return cudart_program(tmp_path_factory, "random_glue", RANDOM_BODIES,
                          RANDOM_GLUE, ["kernels/cpu/random.c"])


def _s64(v):
    return v - 2**64 if v >= 2**63 else v


_instance = [10**12 + os.getpid() * 1000]

RANDOM_CASES = [
    ("RandomUniform", np.float32, (-2.5, 3.0), (0, 0)),
    ("RandomUniform", np.float64, (-2.5, 3.0), (0, 0)),
    ("RandomStandardNormal", np.float32, (0.5, 2.0), (0, 0)),
    ("RandomStandardNormal", np.float64, (0.5, 2.0), (0, 0)),
    ("TruncatedNormal", np.float32, (0.5, 2.0), (0, 0)),
    ("TruncatedNormal", np.float64, (0.5, 2.0), (0, 0)),
    ("RandomUniformInt", np.int32, (0.0, 0.0), (-5, 17)),
    ("RandomUniformInt", np.int64, (1.0, 0.0), (0, 1)),      # full range
    ("RandomUniformInt", np.int64, (0.0, 0.0), (-2**40, 2**41)),
]


@pytest.mark.parametrize("case", range(len(RANDOM_CASES)),
                         ids=lambda c: f"{RANDOM_CASES[c][0]}-"
                                       f"{RANDOM_CASES[c][1].__name__}")
@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("state", [0, 1])
def test_random_glue_matches_the_cpu_kernels(random_harness, tmp_path, case,
                                             traced, state):
    op, dt, f, (i4, i5) = RANDOM_CASES[case]
    key, hi, lo, n, calls = 0x1234567890ABCDEF, 3, 2**64 - 20, 37, 3
    _instance[0] += 1
    inst = _instance[0] if traced else 0
    args = [str(ID[op]), str(tf.as_dtype(dt)._enum), str(n)] + [
        str(_s64(v)) for v in (key, hi, lo)] + [
        str(inst), repr(f[0]), repr(f[1]), str(i4), str(i5), str(calls),
        str(state), str(tmp_path / "out.bin")]
    run = subprocess.run([random_harness] + args)
    if dt == np.float16:
        assert run.returncode == 10    # the CPU kernel on host copies
        return
    assert run.returncode == 0, run.returncode
    got = np.fromfile(tmp_path / "out.bin", dt).reshape(calls, n)
    for c in range(calls):      # a traced instance: runs 0, 1, 2
        with tf.device("/CPU:0"):
            ins = (tf.constant([_s64(lo), _s64(hi), _s64(key)], tf.int64),
                   ) if state else ()
            want = _C.call(ID[op], ins, ints=[n],
                           i=[_s64(key), _s64(hi), _s64(lo), inst, i4, i5],
                           f=f, dtype=tf.as_dtype(dt)._enum).numpy()
        np.testing.assert_array_equal(got[c], want)


CUDNN_SIZE_HARNESS = r"""
/* conv_cudnn.c's descriptor guard on the host: a convolution whose x, y
 * or filter has 2^31 elements or more (cuDNN's int sizes) is a gap (the
 * op runs on host copies), found before any cuDNN call. */
#include "kernels/cuda/conv_cudnn.c"
#include <stdio.h>

const tfm_op_def tfm_ops[TFM_OP_COUNT];
static int dnn_calls;
tfm_code tfm_error(tfm_code c, const char *fmt, ...) { (void)fmt; return c; }
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *t)
{ (void)t; dnn_calls++; return CUDNN_STATUS_NOT_INITIALIZED; }
const char *cudnnGetErrorString(cudnnStatus_t s) { (void)s; return "fake"; }

int main(void)
{
    /* n, c, hp, wp; o, oh, ow; kh, kw: x past 2^31, y past it, the
     * filter past it, and one within every limit. */
    int64_t cases[4][9] = {{70000, 64, 32, 32, 8, 32, 32, 1, 1},
                           {8, 1, 32, 32, 70000000, 32, 32, 1, 1},
                           {1, 50000, 4, 4, 50000, 4, 4, 1, 1},
                           {8, 3, 32, 32, 16, 32, 32, 3, 3}};
    for (int i = 0; i < 4; i++) {
        plan p;
        descs d;
        memset(&p, 0, sizeof p);
        int64_t *v = cases[i];
        p.g = (tfm_conv_geom){.n = v[0], .c = v[1], .h = v[2], .w = v[3],
                              .o = v[4], .oh = v[5], .ow = v[6],
                              .kh = v[7], .kw = v[8], .sh = 1, .sw = 1,
                              .dh = 1, .dw = 1, .groups = 1};
        p.hp = v[2];
        p.wp = v[3];
        unsupported = 0;
        dnn_calls = 0;
        tfm_code rc = descs_make(TFM_OP_CONV2D, &p, &d);
        printf("%d %d %d\n", rc != 0, unsupported, dnn_calls);
    }
    return 0;
}
"""


def test_cudnn_size_past_int_is_a_gap_not_an_error(tmp_path_factory):
    inc = cuda_include()
    if not inc or not any(os.path.exists(os.path.join(d, "cudnn.h"))
                          for d in (inc, "/usr/include", "/usr/local/include")):
        pytest.skip("needs cudnn.h")
    src = CUDNN_SIZE_HARNESS.replace(
        '#include "kernels/cuda/conv_cudnn.c"',
        '#define TFMINI_WITH_CUDNN 1\n#include "kernels/cuda/conv_cudnn.c"')
    run = subprocess.run([gcc_cuda_program(tmp_path_factory, "cudnn_size",
                                           src)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    rows = [tuple(map(int, ln.split())) for ln in run.stdout.splitlines()]
    # Too big: refused as a gap before cuDNN sees it (the op then runs
    # on host copies); within limits: on to cuDNN (whose fake fails).
    assert rows == [(1, 1, 0), (1, 1, 0), (1, 1, 0), (1, 0, 1)], rows
