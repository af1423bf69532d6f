/* The GPU's IsNan/IsInf/IsFinite, Range, LinSpace, GatherNd and Where:
 * the C glue over index.cu's kernels (launch_index.h), each reading
 * shapes and attributes as its CPU kernel does. A dtype or rank the
 * kernels do not take runs the CPU kernel on host copies, which keeps
 * the CPU's results and errors (Range of an unsupported dtype, Where of
 * bfloat16 or complex).
 *
 * Note [Where on the GPU]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * Where's output has as many rows as its condition has nonzero
 * elements. The caller counted them (attribute i[0]: the Python
 * wrapper, or the executor's runtime_attrs) and allocated the output;
 * the GPU counts again, per chunk, sums the counts into each chunk's
 * first output row (CUB's exclusive scan) and copies the total back
 * before writing: a count that differs from the caller's would write
 * past the output, so the CPU kernel runs on host copies instead and
 * raises its error. That read-back waits for the stream, so a plan with
 * Where cannot be captured into a CUDA graph: exec_cugraph.c's rule
 * refuses every Where step, whether its output shape is unknown (as a
 * traced Where's is, [-1, rank]) or was known when traced. GatherNd's
 * index check reads back too, but not inside a capture (Note [Index
 * checks inside a CUDA graph capture], kernels_scatter.c). */
#include "internal.h"

#include "../cpu/shape.h"
#include "launch_index.h"

static int
ew_ty(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return TFM_CU_F32;
    case TFM_FLOAT64: return TFM_CU_F64;
    case TFM_FLOAT16: return TFM_CU_F16;
    case TFM_BFLOAT16: return TFM_CU_BF16;
    default: return -1;
    }
}

static tfm_code
k_float_pred(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int ty = ew_ty(in[0]->dtype);
    if (ty < 0 || out[0]->dtype != TFM_BOOL)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int what = op == TFM_OP_IS_NAN ? 0 : op == TFM_OP_IS_INF ? 1 : 2;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    return tfm_cu_launched(op, tfm_cu_float_pred(
        what, ty, tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
        tfm_tensor_numel(out[0]), g->stream));
}

/* Range: the integer dtypes through int64, the float ones through
 * double, as cpu/shape_fill.c's tfm_k_range; LinSpace: its step and end
 * point as tfm_k_linspace. */
static tfm_code
k_sequence(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = out[0]->dtype;
    int64_t n = tfm_tensor_numel(out[0]);
    int kind = d == TFM_FLOAT32 ? TFM_CU_SEQ_F32
             : d == TFM_FLOAT64 ? TFM_CU_SEQ_F64 : TFM_CU_SEQ_INT;
    int ints = d == TFM_INT8 || d == TFM_UINT8 || d == TFM_INT16 ||
               d == TFM_INT32 || d == TFM_INT64;
    if (kind == TFM_CU_SEQ_INT && (op != TFM_OP_RANGE || !ints))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    double start = a->f[0], step = a->f[2], stop = 0;
    int last = 0;
    if (op == TFM_OP_LIN_SPACE) {
        stop = a->f[1];
        step = n > 1 ? (stop - start) / (double)(n - 1) : 0;
        last = n > 1;
    }
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_sequence(kind, (int)tfm_dtype_size(d), a->i[0], a->i[2],
                             start, step, last, stop,
                             tfm_tensor_data(out[0]), n, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* As tfm_k_gather_nd: params [dims[:depth], slice], indices [rows,
 * depth]; the indices checked on the GPU before the gather. */
static tfm_code
k_gather_nd(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *ps = &in[0]->shape, *is = &in[1]->shape;
    tfm_dtype idt = in[1]->dtype;
    int depth = (int)is->dims[is->ndim - 1];
    if (in[0]->dtype == TFM_STRING || (idt != TFM_INT32 && idt != TFM_INT64)
        || depth > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_cu_nd p = {.depth = depth};
    int64_t len = tfm_dims_prod(ps->dims, depth, ps->ndim), acc = 1;
    for (int k = depth - 1; k >= 0; k--) {
        p.dims[k] = ps->dims[k];
        p.st[k] = acc;
        acc *= ps->dims[k];
    }
    int64_t rows = tfm_dims_prod(is->dims, 0, is->ndim - 1);
    int bad = 0;
    tfm_code rc = tfm_cu_nd_check(op, in[1], rows, &p, ctx, &bad);
    if (rc)
        return rc;
    if (bad)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int e = tfm_cu_gather_nd((int)tfm_dtype_size(in[0]->dtype),
                             idt == TFM_INT64, tfm_tensor_data(in[0]),
                             tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
                             rows, len, &p, g->stream);
    if (e < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, e);
}

/* The element size and floatness the GPU's nonzero test reads, as
 * cpu/shape_select.c's nonzero() for the dtypes it takes; 0 for the
 * rest (the CPU kernel runs them). */
static int
nonzero_size(tfm_dtype d, int *is_float)
{
    *is_float = d == TFM_FLOAT16 || d == TFM_BFLOAT16 || d == TFM_FLOAT32 ||
                d == TFM_FLOAT64;
    switch (d) {
    case TFM_BOOL: case TFM_INT8: case TFM_UINT8: return 1;
    case TFM_INT16: case TFM_UINT16: case TFM_FLOAT16:
    case TFM_BFLOAT16: return 2;
    case TFM_INT32: case TFM_UINT32: case TFM_FLOAT32: return 4;
    case TFM_INT64: case TFM_UINT64: case TFM_FLOAT64: return 8;
    default: return 0;
    }
}

/* See Note [Where on the GPU]. */
static tfm_code
k_where(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *s = &in[0]->shape;
    int is_float, es = nonzero_size(in[0]->dtype, &is_float);
    int64_t n = tfm_tensor_numel(in[0]);
    if (!es || s->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    const void *x = tfm_tensor_data(in[0]);
    size_t tb = 0, ob = ((size_t)n / TFM_CU_WHERE_CHUNK + 2) * 8;
    int e = tfm_cu_where_offsets(es, is_float, x, n, NULL, NULL, &tb,
                                 g->stream);
    if (e < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (e)
        return tfm_cu_launched(op, e);
    void *tmp = ctx->scratch_alloc(ctx, tb);
    int64_t *offs = tmp ? ctx->scratch_alloc(ctx, ob) : NULL;
    if (!offs) {
        if (tmp)
            ctx->scratch_free(ctx, tmp, tb);
        return tfm_error_code();
    }
    int64_t count = -1, nc = (n + TFM_CU_WHERE_CHUNK - 1) / TFM_CU_WHERE_CHUNK;
    tfm_code rc = tfm_cu_launched(op, tfm_cu_where_offsets(
        es, is_float, x, n, offs, tmp, &tb, g->stream));
    if (!rc)
        rc = ctx->device->copy_to_host(ctx->device, &count, offs + nc,
                                       sizeof count);
    int wrong = !rc && count != out[0]->shape.dims[0];
    if (!rc && !wrong)
        rc = tfm_cu_launched(op, tfm_cu_where_coords(
            es, is_float, x, s->ndim, s->dims, n, offs,
            tfm_tensor_data(out[0]), g->stream));
    ctx->scratch_free(ctx, offs, ob);
    ctx->scratch_free(ctx, tmp, tb);
    if (wrong)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return rc;
}

void
tfm_cuda_kernels_index_init(tfm_kernel_fn *table)
{
    table[TFM_OP_IS_NAN] = table[TFM_OP_IS_INF] = table[TFM_OP_IS_FINITE] =
        k_float_pred;
    table[TFM_OP_RANGE] = table[TFM_OP_LIN_SPACE] = k_sequence;
    table[TFM_OP_GATHER_ND] = k_gather_nd;
    table[TFM_OP_WHERE] = k_where;
}
