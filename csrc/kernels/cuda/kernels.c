/* The GPU's kernel table: which ops run on a GPU and how (Note [Device
 * seam] in core/device.h). Elementwise ops run the rows of
 * ../ew_formulas.def compiled for the GPU (ew.cu), float comparisons a
 * kernel of their own there, reductions reduce.cu,
 * BatchMatMulV2 cuBLAS, the byte-copy shape ops a device copy. Every
 * other op has no entry, so the dispatcher runs it on the CPU with
 * copies (TF's soft placement).
 *
 * An op that has a GPU kernel but not for the dtype it is given (integer
 * AddV2, a cast to int8, ...) runs its CPU kernel here on host copies of
 * its inputs, and its outputs are copied back: the kernel table is per
 * op, not per dtype, and the result is right, only slower. The staged
 * tensors are stack structs over malloc'd memory, since kernels may run
 * without the caller's lock and must not make tensors. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "../cpu/loops.h"
#include "../cpu/reduce.h"
#include "../cpu/shape.h"
#include "launch.h"

static tfm_kernel_fn table[TFM_OP_COUNT];
const void *const tfm_cuda_kernels = table;

tfm_gpu *
tfm_cu_gpu(const tfm_kctx *c)
{
    tfm_gpu *g = tfm_gpu_of(c->device);
    tfm_gpu_use(g);
    return g;
}

tfm_code
tfm_cu_launched(tfm_op op, int rc)
{
    if (rc == 0)
        return TFM_OK;
    cudaGetLastError();
    return tfm_error(rc == cudaErrorMemoryAllocation
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: CUDA error %s", tfm_ops[op].name,
                     cudaGetErrorString((cudaError_t)rc));
}

/* ---- the CPU kernel on host copies ---- */

tfm_code
tfm_cu_on_host(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_kernel_fn k = tfm_ops[op].cpu;
    const tfm_device *d = ctx->device;
    tfm_buffer bufs[TFM_MAX_INPUTS + TFM_MAX_OUTPUTS];
    tfm_tensor ts[TFM_MAX_INPUTS + TFM_MAX_OUTPUTS];
    tfm_tensor *hin[TFM_MAX_INPUTS], *hout[TFM_MAX_OUTPUTS];
    int n = nin + nout, made = 0;
    tfm_code rc = TFM_OK;
    if (!k)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no CPU kernel",
                         tfm_ops[op].name);
    for (made = 0; made < n; made++) {
        const tfm_tensor *t = made < nin ? in[made] : out[made - nin];
        size_t nb = tfm_tensor_nbytes(t);
        void *p = aligned_alloc(64, nb ? (nb + 63) / 64 * 64 : 64);
        if (!p) {
            rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM staging "
                           "%zu bytes on the host", tfm_ops[op].name, nb);
            goto done;
        }
        bufs[made] = (tfm_buffer){.refcount = 1, .data = p, .nbytes = nb};
        ts[made] = *t;
        ts[made].device = 0;
        ts[made].buf = &bufs[made];
        ts[made].offset = 0;
        if (made < nin) {
            hin[made] = &ts[made];
            if (nb && (rc = d->copy_to_host(d, p, tfm_tensor_data(t), nb)))
                goto done_one;
        } else {
            hout[made - nin] = &ts[made];
        }
    }
    rc = k(op, hin, nin, a, hout, nout, &tfm_kctx_cpu);
    for (int j = 0; !rc && j < nout; j++) {
        size_t nb = tfm_tensor_nbytes(out[j]);
        if (nb)
            rc = d->copy_from_host(d, tfm_tensor_data(out[j]),
                                   bufs[nin + j].data, nb);
    }
    /* from_host may return before the DMA leaves a pinned half, never
     * before it has read pageable memory: freeing now is safe. */
    goto done;
done_one:
    made++;
done:
    while (made-- > 0)
        free(bufs[made].data);
    return rc;
}

/* ---- elementwise ---- */

enum { EWK_NONE, EWK_BINARY, EWK_UNARY, EWK_HEAVY, EWK_PARAM, EWK_OWN };

static const unsigned char ew_kind[TFM_OP_COUNT] = {
#define EW(OP, LOOP, F32, F64) [TFM_OP_##OP] = EWK_##LOOP,
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW
#undef EW_NONE
};

/* Row + 1 (0: none). */
static const short ew_row[TFM_OP_COUNT] = {
#define EW(OP, LOOP, F32, F64) [TFM_OP_##OP] = TFM_CU_EW_##OP + 1,
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW
#undef EW_NONE
};

static int
is_float(tfm_dtype d)
{
    return d == TFM_FLOAT32 || d == TFM_FLOAT64;
}

/* The broadcast plan of in[0] op in[1] -> out[0] for the launchers. */
static int64_t
plan(tfm_tensor *const *in, tfm_tensor *const *out, tfm_cu_bcast *c)
{
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out[0]->shape, &p);
    /* tfm_bcast_plan fills ndim and the strides only when general. */
    *c = (tfm_cu_bcast){.kind = (int)p.kind, .n = p.n};
    if (p.kind != TFM_BC_GENERAL)
        return p.n;
    c->ndim = p.ndim;
    for (int k = 0; k < p.ndim; k++) {
        c->dims[k] = p.dims[k];
        c->sa[k] = p.sa[k];
        c->sb[k] = p.sb[k];
    }
    return p.n;
}

static tfm_code
k_binary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    if (!is_float(d) || in[1]->dtype != d || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    tfm_cu_bcast c;
    if (plan(in, out, &c) == 0)
        return TFM_OK;
    int rc = tfm_cu_binary(ew_row[op] - 1, d == TFM_FLOAT64,
                           tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                           tfm_tensor_data(out[0]), &c, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_compare(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int cmp = op == TFM_OP_EQUAL ? 0 : op == TFM_OP_NOT_EQUAL ? 1
            : op == TFM_OP_LESS ? 2 : op == TFM_OP_LESS_EQUAL ? 3
            : op == TFM_OP_GREATER ? 4 : 5;
    if (!is_float(d) || in[1]->dtype != d || out[0]->dtype != TFM_BOOL)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    tfm_cu_bcast c;
    if (plan(in, out, &c) == 0)
        return TFM_OK;
    int rc = tfm_cu_compare(cmp, d == TFM_FLOAT64, tfm_tensor_data(in[0]),
                            tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
                            &c, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_unary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    if (!is_float(d) || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_unary(ew_row[op] - 1, d == TFM_FLOAT64,
                          tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
                          tfm_tensor_numel(out[0]), a ? a->f[0] : 0.0,
                          a ? (int)a->i[0] : 0, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static int
cast_code(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return 0;
    case TFM_FLOAT64: return 1;
    case TFM_INT32: return 2;
    case TFM_INT64: return 3;
    case TFM_BOOL: return 4;
    default: return -1;
    }
}

static tfm_code
k_cast(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int from = cast_code(in[0]->dtype), to = cast_code(out[0]->dtype);
    /* Float to integer: the CPU's conversion of out-of-range values and
     * NaN is what TF gives; the GPU's saturates. Only the exact ways
     * run here. */
    if (from < 0 || to < 0 || (from <= 1 && (to == 2 || to == 3)))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    if (from == to)
        return tfm_gpu_check(cudaMemcpyAsync(
            tfm_tensor_data(out[0]), tfm_tensor_data(in[0]),
            tfm_tensor_nbytes(in[0]), cudaMemcpyDeviceToDevice, g->stream),
            "Cast");
    int rc = tfm_cu_cast(from, to, tfm_tensor_data(in[0]),
                         tfm_tensor_data(out[0]), tfm_tensor_numel(out[0]),
                         g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_select(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    if (in[0]->dtype != TFM_BOOL || os->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int64_t sc[TFM_MAX_DIMS], sx[TFM_MAX_DIMS], sy[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, sc);
    tfm_shape_broadcast_strides(&in[1]->shape, os, sx);
    tfm_shape_broadcast_strides(&in[2]->shape, os, sy);
    int rc = tfm_cu_select((int)tfm_dtype_size(out[0]->dtype),
                           tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                           tfm_tensor_data(in[2]), tfm_tensor_data(out[0]),
                           os->ndim, os->dims, sc, sx, sy,
                           tfm_tensor_numel(out[0]), g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* ---- reductions ---- */

static tfm_code
k_reduce(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    int kind = op == TFM_OP_SUM ? 0 : op == TFM_OP_MEAN ? 1
             : op == TFM_OP_MAX ? 2 : op == TFM_OP_MIN ? 3 : 4;
    if (!is_float(x->dtype))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    bool red[TFM_MAX_DIMS];
    int bad;
    tfm_reduce_mask(x->shape.ndim, a, red, &bad);   /* checked by infer */
    int64_t st[TFM_MAX_DIMS], kd[TFM_MAX_DIMS], ks[TFM_MAX_DIMS];
    int64_t rd[TFM_MAX_DIMS], rs[TFM_MAX_DIMS];
    int nk = 0, nr = 0;
    tfm_row_strides(&x->shape, st);
    for (int d = 0; d < x->shape.ndim; d++) {
        if (x->shape.dims[d] == 1)
            continue;
        if (red[d]) {
            rd[nr] = x->shape.dims[d];
            rs[nr++] = st[d];
        } else {
            kd[nk] = x->shape.dims[d];
            ks[nk++] = st[d];
        }
    }
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_reduce(kind, x->dtype == TFM_FLOAT64, tfm_tensor_data(x),
                           tfm_tensor_data(out[0]), nk, kd, ks, nr, rd, rs,
                           g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* ---- BatchMatMulV2 through cuBLAS ---- */

static tfm_code
blas_status(tfm_op op, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return TFM_OK;
    return tfm_error(s == CUBLAS_STATUS_ALLOC_FAILED
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: cuBLAS error %d", tfm_ops[op].name, (int)s);
}

/* Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T: cuBLAS
 * gets B as its first operand and A as its second, with m and n
 * swapped, and reads each row-major matrix as its column-major
 * transpose. */
static cublasStatus_t
gemm(cublasHandle_t h, int f64, int adj_x, int adj_y, int m, int n, int k,
     const void *A, long long sA, const void *B, long long sB, void *C,
     long long sC, int batch)
{
    cublasOperation_t ta = adj_y ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = adj_x ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb_ = adj_y ? k : n, lda_ = adj_x ? m : k;
    if (f64) {
        const double one = 1.0, zero = 0.0;
        return cublasDgemmStridedBatched(h, ta, tb, n, m, k, &one, B, ldb_,
                                         sB, A, lda_, sA, &zero, C, n, sC,
                                         batch);
    }
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemmStridedBatched(h, ta, tb, n, m, k, &one, B, ldb_, sB,
                                     A, lda_, sA, &zero, C, n, sC, batch);
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
    if (!is_float(d) || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (no == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    size_t es = tfm_dtype_size(d);
    if (k == 0)
        return tfm_gpu_check(cudaMemsetAsync(tfm_tensor_data(out[0]), 0,
                                             (size_t)no * es, g->stream),
                             "BatchMatMulV2");
    cublasHandle_t h = tfm_gpu_blas(g);
    if (!h)
        return tfm_error_code();
    cublasSetMathMode(h, tfm_cuda_tf32() && d == TFM_FLOAT32
                             ? CUBLAS_TF32_TENSOR_OP_MATH
                             : CUBLAS_DEFAULT_MATH);
    int64_t bo = no / (m * n), ba = na / (m * k), bb = nb / (k * n);
    const char *A = tfm_tensor_data(in[0]), *B = tfm_tensor_data(in[1]);
    char *C = tfm_tensor_data(out[0]);
    /* Batch dims the same, or one side a single matrix: one strided
     * call (stride 0 reuses that matrix). */
    if ((ba == bo || ba == 1) && (bb == bo || bb == 1) && bo <= INT32_MAX)
        return blas_status(op, gemm(h, d == TFM_FLOAT64, adj_x, adj_y,
                                    (int)m, (int)n, (int)k, A,
                                    ba == 1 ? 0 : m * k, B,
                                    bb == 1 ? 0 : k * n, C, m * n,
                                    (int)bo));
    /* Batch dims that broadcast both ways: a call per output matrix. */
    int nbd = os->ndim - 2;
    tfm_shape oa = *as, ob = *bs, ob_ = *os;
    oa.ndim = as->ndim - 2;
    ob.ndim = bs->ndim - 2;
    ob_.ndim = nbd;
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&oa, &ob_, sa);
    tfm_shape_broadcast_strides(&ob, &ob_, sb);
    for (int64_t t = 0; t < bo; t++) {
        int64_t ia, ib;
        tfm_batch_inputs(nbd, os->dims, sa, sb, t, &ia, &ib);
        tfm_code rc = blas_status(op, gemm(
            h, d == TFM_FLOAT64, adj_x, adj_y, (int)m, (int)n, (int)k,
            A + (size_t)(ia * m * k) * es, 0, B + (size_t)(ib * k * n) * es,
            0, C + (size_t)(t * m * n) * es, 0, 1));
        if (rc)
            return rc;
    }
    return TFM_OK;
}

/* ---- shape ops that move bytes unchanged ---- */

static tfm_code
k_copy(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_gpu *g = tfm_cu_gpu(ctx);
    size_t n = tfm_tensor_nbytes(out[0]);
    if (!n || tfm_tensor_data(out[0]) == tfm_tensor_data(in[0]))
        return TFM_OK;
    return tfm_gpu_check(cudaMemcpyAsync(tfm_tensor_data(out[0]),
                                         tfm_tensor_data(in[0]), n,
                                         cudaMemcpyDeviceToDevice,
                                         g->stream), tfm_ops[op].name);
}

void
tfm_cuda_kernels_init(void)
{
    for (int op = 0; op < TFM_OP_COUNT; op++) {
        switch (ew_kind[op]) {
        case EWK_BINARY: table[op] = k_binary; break;
        case EWK_UNARY:
        case EWK_HEAVY:
        case EWK_PARAM: table[op] = k_unary; break;
        default: break;
        }
    }
    table[TFM_OP_EQUAL] = table[TFM_OP_NOT_EQUAL] = table[TFM_OP_LESS] =
        table[TFM_OP_LESS_EQUAL] = table[TFM_OP_GREATER] =
        table[TFM_OP_GREATER_EQUAL] = k_compare;
    table[TFM_OP_CAST] = k_cast;
    table[TFM_OP_SELECT] = k_select;
    table[TFM_OP_SUM] = table[TFM_OP_MEAN] = table[TFM_OP_MAX] =
        table[TFM_OP_MIN] = table[TFM_OP_PROD] = k_reduce;
    table[TFM_OP_MATMUL] = k_matmul;
    table[TFM_OP_RESHAPE] = table[TFM_OP_EXPAND_DIMS] =
        table[TFM_OP_SQUEEZE] = table[TFM_OP_IDENTITY] = k_copy;
    tfm_cuda_kernels_nn_init(table);
    tfm_cuda_kernels_shape_init(table);
    tfm_cuda_kernels_random_init(table);
    tfm_cuda_kernels_scatter_init(table);
}
