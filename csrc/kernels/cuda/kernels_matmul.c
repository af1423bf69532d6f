/* BatchMatMulV2 on a GPU.
 *
 * Note [GPU matmul]
 * ~~~~~~~~~~~~~~~~~
 * float32, float16 and bfloat16 go through cuBLASLt (cublasLtMatmul)
 * with float32 accumulation and float32 alpha/beta, as TF does for its
 * half matmuls: the tensor cores take the 16-bit inputs, the sums stay
 * float32 and are rounded once into the output. float32 uses TF32
 * tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32) while
 * tf.config.experimental.enable_tensor_float_32_execution is on (TF's
 * default on Ampere and later; the CPU ignores the flag, as TF's does).
 * float64 stays on cublasDgemm.
 *
 * cuBLASLt wants an algorithm chosen per problem: the heuristic's first
 * answer is kept with its descriptors in a small table per (GPU, dtype,
 * compute type, shapes, strides, adj flags, operand alignment), so a
 * training loop asks once per shape. Its workspace comes from the
 * device's stream-ordered allocator (ctx->scratch_alloc) for the call.
 *
 * Anything cuBLASLt refuses (no heuristic answer, an error status other
 * than out-of-memory) and batches that reuse one matrix (stride 0, which
 * Lt's documentation does not promise) run through
 * cublasGemmStridedBatchedEx with the same compute type: the same
 * arithmetic, only without the cached choice. This code has not yet run
 * on a GPU: a refusal must cost speed, never a result.
 * tfm_cuda_matmul_calls counts each way and the refusals, for the GPU
 * tests. tfm_cu_gemm (internal.h) is this path for one row-major
 * product of another kernel (kernels_rnn.c's LSTM steps), counted with
 * the rest.
 *
 * tfm_cuda_matmul_epilogue (lt_epilogue.h) is the same call with
 * cuBLASLt's bias/ReLU/GELU epilogue for a _FusedMatMul (Note [Matmul
 * epilogues on the GPU] in graph/fused_epilogue.c). The epilogue is part
 * of the key; the heuristic sees a bias pointer of exactly the key's
 * alignment (it reads the pointer's value, never its data), and each
 * call sets the real one on the cached descriptor under epi_lock, held
 * until cublasLtMatmul has read it. Whatever it cannot take (no fold
 * into one matrix, no heuristic answer, an error status) returns
 * undone, and the executor runs the plain matmul and then the program:
 * nothing is written before cuBLASLt succeeds. */
#include "internal.h"
#include "lt_epilogue.h"

#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/loops.h"

/* Bigger workspaces gain little for the shapes of a model; cuBLAS's own
 * default on Hopper is 32 MiB. */
#define LT_MAX_WORKSPACE ((uint64_t)32 << 20)
#define CACHE_SIZE 256

static long calls[5];

/* How many matmuls ran through cuBLASLt (which 0), through the
 * cublasGemmEx / cublasDgemm fall-back (1), and how many of those
 * cuBLASLt refused with an error status (2), since the process began;
 * of _FusedMatMul epilogues: how many ran as one cublasLtMatmul (3, also
 * counted in 0) and how many it could not take, leaving the matmul and
 * the program to the general path (4); read by tests/gpu/test_gpu_mixed.py
 * and test_gpu_fused_matmul.py through ctypes. */
long tfm_cuda_matmul_calls(int which);

long
tfm_cuda_matmul_calls(int which)
{
    return which >= 0 && which < 5
               ? __atomic_load_n(&calls[which], __ATOMIC_RELAXED) : -1;
}

typedef struct lt_key {
    int ordinal, dtype, compute, adj_x, adj_y, align, epilogue;
    int64_t m, n, k, batch, sa, sb;
} lt_key;

typedef struct lt_plan {
    int used;                 /* 1 cached, -1 Lt refused this key */
    lt_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
} lt_plan;

static lt_plan cache[CACHE_SIZE];
static cublasLtHandle_t lt_handles[TFM_MAX_DEVICES];
static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t epi_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *
shapes_str(tfm_tensor *const *in, char *buf, size_t n)
{
    char sa[96], sb[96];
    snprintf(buf, n, "%s x %s %s", tfm_shape_str(&in[0]->shape, sa, sizeof sa),
             tfm_shape_str(&in[1]->shape, sb, sizeof sb),
             tfm_dtype_name(in[0]->dtype));
    return buf;
}

/* Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T: the
 * library gets B as its first operand and A as its second, with m and n
 * swapped, and reads each row-major matrix as its column-major
 * transpose. sA, sB, sC: elements between a batch's matrices. */
typedef struct mm {
    tfm_dtype d;
    int adj_x, adj_y;
    int64_t m, n, k, batch, sa, sb;
    const void *A, *B;
    void *C;
    int epilogue;             /* TFM_LT_EPI_*, NONE for a plain matmul */
    const void *bias;
} mm;

/* A cuBLAS / cuBLASLt failure, naming the op and the product (the
 * shared gemm entry has no tensors to name). */
static tfm_code
blas_error(tfm_op op, const mm *x, const char *lib, int s)
{
    return tfm_error(s == CUBLAS_STATUS_ALLOC_FAILED
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: %s error %d for a [%lld, %lld] x [%lld, %lld] %s "
                     "product (batch %lld)", tfm_ops[op].name, lib, s,
                     (long long)x->m, (long long)x->k, (long long)x->k,
                     (long long)x->n, tfm_dtype_name(x->d),
                     (long long)x->batch);
}

static cudaDataType_t
cuda_type(tfm_dtype d)
{
    return d == TFM_FLOAT16 ? CUDA_R_16F
         : d == TFM_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

static cublasComputeType_t
compute_type(tfm_dtype d)
{
    return d == TFM_FLOAT32 && tfm_cuda_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                               : CUBLAS_COMPUTE_32F;
}

/* The largest power of two, up to 256, dividing every pointer: the
 * heuristic assumes 256-byte operands unless told, and a view's data
 * (a tensor at an offset, one matrix of a batch) may be less aligned. */
static int
alignment(const void *a, const void *b, const void *c)
{
    uintptr_t u = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | 256;
    return (int)(u & -u);
}

static unsigned
key_hash(const lt_key *k)
{
    const unsigned char *p = (const unsigned char *)k;
    unsigned h = 2166136261u;
    for (size_t i = 0; i < sizeof *k; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static void
plan_free(lt_plan *p)
{
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    p->la = p->lb = p->lc = NULL;
    p->desc = NULL;
}

static cublasStatus_t
layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows,
       int64_t cols, int64_t ld, int64_t batch, int64_t stride)
{
    cublasStatus_t s = cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows,
                                                  (uint64_t)cols, ld);
    int32_t b = (int32_t)batch;
    if (s == CUBLAS_STATUS_SUCCESS && batch > 1)
        s = cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
    if (s == CUBLAS_STATUS_SUCCESS && batch > 1)
        s = cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride);
    return s;
}

static int
has_bias(int epilogue)
{
    return epilogue == TFM_LT_EPI_BIAS || epilogue == TFM_LT_EPI_RELU_BIAS ||
           epilogue == TFM_LT_EPI_GELU_BIAS;
}

/* The epilogue of key k on desc; a bias is of the output's dtype (what
 * cuBLASLt assumes unless told, said explicitly), at a stand-in pointer
 * of the key's alignment until a call sets its own. */
static cublasStatus_t
set_epilogue(cublasLtMatmulDesc_t desc, const lt_key *k)
{
    cublasLtEpilogue_t e =
        k->epilogue == TFM_LT_EPI_BIAS ? CUBLASLT_EPILOGUE_BIAS
      : k->epilogue == TFM_LT_EPI_RELU ? CUBLASLT_EPILOGUE_RELU
      : k->epilogue == TFM_LT_EPI_RELU_BIAS ? CUBLASLT_EPILOGUE_RELU_BIAS
      : k->epilogue == TFM_LT_EPI_GELU ? CUBLASLT_EPILOGUE_GELU
                                       : CUBLASLT_EPILOGUE_GELU_BIAS;
    cublasStatus_t s = cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
    if (!s && has_bias(k->epilogue)) {
        const void *stand_in = (const void *)(uintptr_t)k->align;
        int32_t bt = (int32_t)cuda_type((tfm_dtype)k->dtype);
        s = cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in,
            sizeof stand_in);
        if (!s)
            s = cublasLtMatmulDescSetAttribute(
                desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
    }
    return s;
}

/* Descriptors and the heuristic's first algorithm for key k, in the
 * column-major form struct mm's comment explains: the library's A is
 * our B. */
static int
plan_make(cublasLtHandle_t lt, const lt_key *k, lt_plan *p)
{
    cudaDataType_t t = cuda_type((tfm_dtype)k->dtype);
    cublasOperation_t ta = k->adj_y ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = k->adj_x ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    uint64_t ws = LT_MAX_WORKSPACE;
    uint32_t al = (uint32_t)k->align;
    memset(p, 0, sizeof *p);
    p->key = *k;
    cublasStatus_t s = cublasLtMatmulDescCreate(
        &p->desc, (cublasComputeType_t)k->compute, CUDA_R_32F);
    if (!s)
        s = cublasLtMatmulDescSetAttribute(p->desc,
                                           CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                           sizeof ta);
    if (!s)
        s = cublasLtMatmulDescSetAttribute(p->desc,
                                           CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                           sizeof tb);
    if (!s && k->epilogue != TFM_LT_EPI_NONE)
        s = set_epilogue(p->desc, k);
    if (!s)
        s = k->adj_y ? layout(&p->la, t, k->k, k->n, k->k, k->batch, k->sb)
                     : layout(&p->la, t, k->n, k->k, k->n, k->batch, k->sb);
    if (!s)
        s = k->adj_x ? layout(&p->lb, t, k->m, k->k, k->m, k->batch, k->sa)
                     : layout(&p->lb, t, k->k, k->m, k->k, k->batch, k->sa);
    if (!s)
        s = layout(&p->lc, t, k->n, k->m, k->n, k->batch, k->m * k->n);
    if (!s)
        s = cublasLtMatmulPreferenceCreate(&pref);
    if (!s)
        s = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (!s)
        s = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al);
    if (!s)
        s = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al);
    if (!s)
        s = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al);
    if (!s)
        s = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al);
    if (!s)
        s = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->la, p->lb, p->lc,
                                           p->lc, pref, 1, &res, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (s || found < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        plan_free(p);
        p->used = -1;
        return 0;
    }
    p->algo = res.algo;
    p->workspace = res.workspaceSize;
    p->used = 1;
    return 1;
}

/* The cached plan for k (made on the first call), copied into *out;
 * 0 when cuBLASLt has none for it. The table keeps at most CACHE_SIZE
 * keys; past that a plan is made for the call and dropped after
 * (*owned set). */
static int
plan_get(tfm_gpu *g, const lt_key *k, lt_plan *out, int *owned)
{
    unsigned h = key_hash(k) % CACHE_SIZE;
    int ok = 0;
    *owned = 0;
    pthread_mutex_lock(&lt_lock);
    cublasLtHandle_t lt = lt_handles[g->ordinal];
    if (!lt && cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS)
        lt_handles[g->ordinal] = lt;
    if (!lt)
        goto done;
    for (unsigned i = 0; i < CACHE_SIZE; i++) {
        lt_plan *p = &cache[(h + i) % CACHE_SIZE];
        if (p->used && !memcmp(&p->key, k, sizeof *k)) {
            *out = *p;
            ok = p->used > 0;
            goto done;
        }
        if (!p->used) {
            plan_make(lt, k, p);
            *out = *p;
            ok = p->used > 0;
            goto done;
        }
    }
    ok = plan_make(lt, k, out);
    *owned = ok;
done:
    pthread_mutex_unlock(&lt_lock);
    return ok;
}

static tfm_code
gemm_lt(tfm_op op, tfm_gpu *g, const tfm_kctx *ctx, const mm *x, int *done)
{
    lt_key key;
    lt_plan p;
    int owned;
    memset(&key, 0, sizeof key);       /* hashed and compared bytewise */
    key.ordinal = g->ordinal;
    key.dtype = (int)x->d;
    key.compute = (int)compute_type(x->d);
    key.adj_x = x->adj_x;
    key.adj_y = x->adj_y;
    key.align = alignment(x->A, x->B, x->C);
    if (x->bias)
        key.align = alignment(x->bias, x->C, (const void *)(uintptr_t)
                                                 key.align);
    key.epilogue = x->epilogue;
    key.m = x->m;
    key.n = x->n;
    key.k = x->k;
    key.batch = x->batch;
    key.sa = x->sa;
    key.sb = x->sb;
    *done = 0;
    if (!plan_get(g, &key, &p, &owned))
        return TFM_OK;
    void *ws = NULL;
    if (p.workspace && !(ws = ctx->scratch_alloc(ctx, p.workspace))) {
        /* No room for the workspace: the fall-back needs none of ours. */
        if (owned)
            plan_free(&p);
        return TFM_OK;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    int locked = has_bias(x->epilogue);
    if (locked) {
        /* The cached descriptor is shared: its bias pointer is ours
         * until cublasLtMatmul has read it. */
        pthread_mutex_lock(&epi_lock);
        s = cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &x->bias,
            sizeof x->bias);
    }
    if (!s)
        s = cublasLtMatmul(lt_handles[g->ordinal], p.desc, &one, x->B, p.la,
                           x->A, p.lb, &zero, x->C, p.lc, x->C, p.lc, &p.algo,
                           ws, p.workspace, (cudaStream_t)g->stream);
    if (locked)
        pthread_mutex_unlock(&epi_lock);
    if (ws)
        ctx->scratch_free(ctx, ws, p.workspace);
    if (owned)
        plan_free(&p);
    if (s == CUBLAS_STATUS_ALLOC_FAILED && x->epilogue == TFM_LT_EPI_NONE)
        return blas_error(op, x, "cuBLASLt", (int)s);
    if (s) {
        __atomic_add_fetch(&calls[2], 1, __ATOMIC_RELAXED);
        return TFM_OK;              /* the fall-back takes it */
    }
    __atomic_add_fetch(&calls[0], 1, __ATOMIC_RELAXED);
    if (x->epilogue != TFM_LT_EPI_NONE)
        __atomic_add_fetch(&calls[3], 1, __ATOMIC_RELAXED);
    *done = 1;
    return TFM_OK;
}

static tfm_code
gemm_ex(tfm_op op, cublasHandle_t h, const mm *x)
{
    cublasOperation_t ta = x->adj_y ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = x->adj_x ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = (int)(x->adj_y ? x->k : x->n), lda = (int)(x->adj_x ? x->m
                                                                  : x->k);
    cublasStatus_t s;
    if (x->d == TFM_FLOAT64) {
        const double one = 1.0, zero = 0.0;
        s = cublasDgemmStridedBatched(h, ta, tb, (int)x->n, (int)x->m,
                                      (int)x->k, &one, x->B, ldb, x->sb,
                                      x->A, lda, x->sa, &zero, x->C,
                                      (int)x->n, x->m * x->n, (int)x->batch);
    } else {
        const float one = 1.0f, zero = 0.0f;
        cudaDataType_t t = cuda_type(x->d);
        s = cublasGemmStridedBatchedEx(
            h, ta, tb, (int)x->n, (int)x->m, (int)x->k, &one, x->B, t, ldb,
            x->sb, x->A, t, lda, x->sa, &zero, x->C, t, (int)x->n,
            x->m * x->n, (int)x->batch, compute_type(x->d),
            CUBLAS_GEMM_DEFAULT);
    }
    if (s)
        return blas_error(op, x, "cuBLAS", (int)s);
    __atomic_add_fetch(&calls[1], 1, __ATOMIC_RELAXED);
    return TFM_OK;
}

static tfm_code
gemm(tfm_op op, tfm_gpu *g, const tfm_kctx *ctx, const mm *x)
{
    int done = 0;
    if (x->d != TFM_FLOAT64 &&
        (x->batch == 1 || (x->sa != 0 && x->sb != 0))) {
        tfm_code rc = gemm_lt(op, g, ctx, x, &done);
        if (rc || done)
            return rc;
    }
    cublasHandle_t h = tfm_gpu_blas(g);
    if (!h)
        return tfm_error_code();
    /* The compute type says TF32 or not; the handle's math mode must not
     * turn on tensor-op rounding of its own. */
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    return gemm_ex(op, h, x);
}

tfm_code
tfm_cu_gemm(tfm_op op, tfm_gpu *g, const tfm_kctx *ctx, tfm_dtype d, int ta,
            int tb, int64_t m, int64_t n, int64_t k, const void *A,
            const void *B, void *C)
{
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: a [%lld, %lld] x "
                         "[%lld, %lld] product is past cuBLAS's int sizes",
                         tfm_ops[op].name, (long long)m, (long long)k,
                         (long long)k, (long long)n);
    if (m == 0 || n == 0)
        return TFM_OK;
    if (k == 0)
        return tfm_gpu_check(cudaMemsetAsync(C, 0, (size_t)(m * n) *
                                             tfm_dtype_size(d), g->stream),
                             tfm_ops[op].name);
    mm x = {.d = d, .adj_x = ta != 0, .adj_y = tb != 0, .m = m, .n = n,
            .k = k, .batch = 1, .A = A, .B = B, .C = C};
    return gemm(op, g, ctx, &x);
}

static int
gpu_matmul_dtype(tfm_dtype d)
{
    return d == TFM_FLOAT32 || d == TFM_FLOAT64 || d == TFM_FLOAT16 ||
           d == TFM_BFLOAT16;
}

static tfm_code
k_matmul(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *as = &in[0]->shape, *bs = &in[1]->shape;
    const tfm_shape *os = &out[0]->shape;
    tfm_dtype d = in[0]->dtype;
    int adj_x = a->i[0] != 0, adj_y = a->i[1] != 0;
    int64_t m = os->dims[os->ndim - 2], n = os->dims[os->ndim - 1];
    int64_t k = adj_x ? as->dims[as->ndim - 2] : as->dims[as->ndim - 1];
    int64_t na = tfm_shape_numel(as), nb = tfm_shape_numel(bs);
    int64_t no = tfm_shape_numel(os);
    char buf[256];
    if (!gpu_matmul_dtype(d) || in[1]->dtype != d || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
        /* The CPU kernel takes no float16 (the dispatcher would have
         * cast around it): refuse clearly rather than hand it one. */
        if (d == TFM_FLOAT16)
            return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: a matrix dim "
                             "past 2^31 on a GPU: %s", tfm_ops[op].name,
                             shapes_str(in, buf, sizeof buf));
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    }
    if (no == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    size_t es = tfm_dtype_size(d);
    if (k == 0)
        return tfm_gpu_check(cudaMemsetAsync(tfm_tensor_data(out[0]), 0,
                                             (size_t)no * es, g->stream),
                             "BatchMatMulV2");
    int64_t bo = no / (m * n), ba = na / (m * k), bb = nb / (k * n);
    const char *A = tfm_tensor_data(in[0]), *B = tfm_tensor_data(in[1]);
    char *C = tfm_tensor_data(out[0]);
    mm x = {.d = d, .adj_x = adj_x, .adj_y = adj_y, .m = m, .n = n, .k = k};
    /* Batch dims the same, or one side a single matrix: one strided
     * call (stride 0 reuses that matrix). */
    if ((ba == bo || ba == 1) && (bb == bo || bb == 1) && bo <= INT32_MAX) {
        x.batch = bo;
        x.sa = ba == 1 ? 0 : m * k;
        x.sb = bb == 1 ? 0 : k * n;
        x.A = A;
        x.B = B;
        x.C = C;
        return gemm(op, g, ctx, &x);
    }
    /* Batch dims that broadcast both ways: a call per output matrix. */
    int nbd = os->ndim - 2;
    tfm_shape oa = *as, ob = *bs, ob_ = *os;
    oa.ndim = as->ndim - 2;
    ob.ndim = bs->ndim - 2;
    ob_.ndim = nbd;
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&oa, &ob_, sa);
    tfm_shape_broadcast_strides(&ob, &ob_, sb);
    x.batch = 1;
    for (int64_t t = 0; t < bo; t++) {
        int64_t ia, ib;
        tfm_batch_inputs(nbd, os->dims, sa, sb, t, &ia, &ib);
        x.A = A + (size_t)(ia * m * k) * es;
        x.B = B + (size_t)(ib * k * n) * es;
        x.C = C + (size_t)(t * m * n) * es;
        tfm_code rc = gemm(op, g, ctx, &x);
        if (rc)
            return rc;
    }
    return TFM_OK;
}

static int
lt_epilogue_enabled(void)
{
    const char *v = getenv("TFMINI_LT_EPILOGUE");
    return !v || strcmp(v, "0") != 0;
}

/* One matrix per operand after folding: none of a batch, or A's batch
 * folded into its rows (A [batch, m, k] row-major is [batch * m, k] when
 * not adjoint, with one B for every matrix, and C follows A). */
static int
fold(const tfm_shape *as, const tfm_shape *bs, const tfm_shape *os,
     int adj_x, int64_t *m)
{
    int64_t bo = 1, ba = 1, bb = 1;
    for (int d = 0; d < os->ndim - 2; d++)
        bo *= os->dims[d];
    for (int d = 0; d < as->ndim - 2; d++)
        ba *= as->dims[d];
    for (int d = 0; d < bs->ndim - 2; d++)
        bb *= bs->dims[d];
    if (bo == 1 && ba == 1 && bb == 1)
        return 1;
    if (bo < 1 || bb != 1 || ba != bo || adj_x || *m > INT32_MAX / bo)
        return 0;
    *m *= bo;
    return 1;
}

static void
epilogue_run(tfm_tensor *const *in, const tfm_attrs *a, int epilogue,
             const tfm_tensor *bias, tfm_tensor *out, const tfm_kctx *ctx,
             int *done)
{
    const tfm_shape *as = &in[0]->shape, *bs = &in[1]->shape;
    const tfm_shape *os = &out->shape;
    tfm_dtype d = out->dtype;
    int adj_x = a->i[0] != 0, adj_y = a->i[1] != 0;
    if ((d != TFM_FLOAT32 && d != TFM_FLOAT16 && d != TFM_BFLOAT16) ||
        in[0]->dtype != d || in[1]->dtype != d || as->ndim < 2 ||
        bs->ndim < 2 || os->ndim < 2 || out->device != in[0]->device ||
        in[1]->device != out->device)
        return;
    int64_t m = os->dims[os->ndim - 2], n = os->dims[os->ndim - 1];
    int64_t k = adj_x ? as->dims[as->ndim - 2] : as->dims[as->ndim - 1];
    int64_t ka = adj_x ? as->dims[as->ndim - 1] : as->dims[as->ndim - 2];
    int64_t kb = adj_y ? bs->dims[bs->ndim - 1] : bs->dims[bs->ndim - 2];
    int64_t nb = adj_y ? bs->dims[bs->ndim - 2] : bs->dims[bs->ndim - 1];
    /* The dispatcher checked these when the graph was traced; a
     * mismatch here must not reach cuBLASLt. */
    if (ka != m || kb != k || nb != n || m < 1 || n < 1 || k < 1 ||
        m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
        !fold(as, bs, os, adj_x, &m))
        return;
    if (has_bias(epilogue) &&
        (!bias || bias->dtype != d || tfm_tensor_numel(bias) != n ||
         bias->device != out->device ||
         ((uintptr_t)tfm_tensor_data(bias) & 15)))
        return;
    if (!has_bias(epilogue))
        bias = NULL;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    mm x = {.d = d, .adj_x = adj_x, .adj_y = adj_y, .m = m, .n = n, .k = k,
            .batch = 1, .A = tfm_tensor_data(in[0]),
            .B = tfm_tensor_data(in[1]), .C = tfm_tensor_data(out),
            .epilogue = epilogue,
            .bias = bias ? tfm_tensor_data(bias) : NULL};
    /* gemm_lt errs only for a plain matmul's out of memory: an epilogue
     * it cannot run is left undone. */
    (void)gemm_lt(TFM_OP_MATMUL, g, ctx, &x, done);
}

tfm_code
tfm_cuda_matmul_epilogue(tfm_tensor *const *in, const tfm_attrs *a,
                         int epilogue, const tfm_tensor *bias,
                         tfm_tensor *out, const tfm_kctx *ctx, int *done)
{
    *done = 0;
    if (epilogue == TFM_LT_EPI_NONE || !lt_epilogue_enabled())
        return TFM_OK;
    epilogue_run(in, a, epilogue, bias, out, ctx, done);
    if (!*done)
        __atomic_add_fetch(&calls[4], 1, __ATOMIC_RELAXED);
    return TFM_OK;
}

void
tfm_cuda_kernels_matmul_init(tfm_kernel_fn *table)
{
    table[TFM_OP_MATMUL] = k_matmul;
}
