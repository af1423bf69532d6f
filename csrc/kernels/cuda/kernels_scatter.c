/* The GPU's TensorScatterAdd, TensorScatterUpdate, TensorScatterMin
 * and TensorScatterMax (scatter.cu): the C glue, reading shapes as cpu/
 * shape_gather.c's tfm_k_scatter does. The index check runs first and
 * its flag is read back (one small copy and a wait per call, the price
 * of the CPU's error): on a bad index the CPU kernel runs on host copies
 * and raises its own InvalidArgumentError, naming the op, the index row
 * and the shape, and nothing was written. Adds, mins and maxes take
 * float32, float64, int32 and int64 (CUDA's atomics); other dtypes run
 * on the CPU.
 *
 * Note [Index checks inside a CUDA graph capture]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A capture records work without running it, so the flag cannot be read
 * back there, and a replay must not wait on the host mid-graph. While
 * exec_cugraph.c captures a plan, it hands this thread a sticky flag of
 * its own (tfm_cu_capture_flag): the check then sets that flag and
 * nothing else, the scatters and GatherNd run anyway and skip every row
 * whose index is out of range (scatter.cu, index.cu), so a bad index
 * writes and reads nothing outside the tensors. After each launch the
 * record reads the flag once; when set it puts back the variables the
 * graph assigned and reruns the call the plain way, where this check
 * reads back as before and the CPU kernel raises its exact error. The
 * flag is per thread because the capture is (mode ThreadLocal), and
 * only a capture sets it, so every other call keeps the read-back. */
#include "internal.h"

#include "launch_index.h"
#include "launch_ops.h"

static _Thread_local int *capture_flag;

void
tfm_cu_capture_flag(int *flag)
{
    capture_flag = flag;
}

tfm_code
tfm_cu_nd_check(tfm_op op, const tfm_tensor *idx, int64_t rows,
                const tfm_cu_nd *p, const tfm_kctx *ctx, int *bad)
{
    *bad = 0;
    if (rows <= 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    if (capture_flag)
        return tfm_cu_launched(op, tfm_cu_scatter_check(
            idx->dtype == TFM_INT64, tfm_tensor_data(idx), rows, p,
            capture_flag, g->stream));
    int *flag = ctx->scratch_alloc(ctx, sizeof *flag);
    if (!flag)
        return tfm_error_code();
    tfm_code rc = tfm_gpu_check(cudaMemsetAsync(flag, 0, sizeof *flag,
                                                g->stream),
                                tfm_ops[op].name);
    if (!rc)
        rc = tfm_cu_launched(op, tfm_cu_scatter_check(
            idx->dtype == TFM_INT64, tfm_tensor_data(idx), rows, p, flag,
            g->stream));
    if (!rc)
        rc = ctx->device->copy_to_host(ctx->device, bad, flag, sizeof *bad);
    ctx->scratch_free(ctx, flag, sizeof *flag);
    return rc;
}

/* tensor [dims], indices [rows, depth], updates [rows, len]. */
static tfm_code
k_scatter(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *ts = &in[0]->shape, *is = &in[1]->shape;
    tfm_dtype d = in[0]->dtype, idt = in[1]->dtype;
    int depth = (int)is->dims[is->ndim - 1];
    size_t es = tfm_dtype_size(d);
    int kind = tfm_cu_out_kind(d);
    if ((op != TFM_OP_TENSOR_SCATTER_UPDATE && kind < 0) ||
        (op == TFM_OP_TENSOR_SCATTER_UPDATE && d == TFM_STRING) ||
        (idt != TFM_INT32 && idt != TFM_INT64) || depth > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_cu_nd p = {.depth = depth};
    int64_t len = 1, rows = 1, acc = 1;
    for (int k = depth; k < ts->ndim; k++)
        len *= ts->dims[k];
    for (int k = depth - 1; k >= 0; k--) {
        p.dims[k] = ts->dims[k];
        p.st[k] = acc;
        acc *= ts->dims[k];
    }
    for (int k = 0; k < is->ndim - 1; k++)
        rows *= is->dims[k];
    tfm_gpu *g = tfm_cu_gpu(ctx);
    const void *idx = tfm_tensor_data(in[1]);
    int bad = 0;
    tfm_code rc = tfm_cu_nd_check(op, in[1], rows, &p, ctx, &bad);
    if (rc)
        return rc;
    if (bad)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    void *o = tfm_tensor_data(out[0]);
    size_t nb = tfm_tensor_nbytes(out[0]);
    /* The executor may hand in the input as the output. */
    if (nb && o != tfm_tensor_data(in[0])) {
        rc = tfm_gpu_check(cudaMemcpyAsync(
            o, tfm_tensor_data(in[0]), nb, cudaMemcpyDeviceToDevice,
            g->stream), tfm_ops[op].name);
        if (rc)
            return rc;
    }
    if (rows == 0 || len == 0)
        return TFM_OK;
    const void *u = tfm_tensor_data(in[2]);
    if (op == TFM_OP_TENSOR_SCATTER_ADD)
        return tfm_cu_launched(op, tfm_cu_scatter_add(
            kind, idt == TFM_INT64, idx, u, o, rows, len, &p, g->stream));
    if (op != TFM_OP_TENSOR_SCATTER_UPDATE)
        return tfm_cu_launched(op, tfm_cu_scatter_minmax(
            op == TFM_OP_TENSOR_SCATTER_MAX, kind, idt == TFM_INT64, idx, u,
            o, rows, len, &p, g->stream));
    int64_t nslices = tfm_tensor_numel(out[0]) / len;
    size_t wb = (size_t)nslices * sizeof(long long);
    long long *win = ctx->scratch_alloc(ctx, wb);
    if (!win)
        return tfm_error_code();
    int e = tfm_cu_scatter_update((int)es, idt == TFM_INT64, idx, u, o, rows,
                                  len, &p, win, nslices, g->stream);
    ctx->scratch_free(ctx, win, wb);
    if (e < 0)
        return tfm_error(TFM_ERR_INTERNAL, "%s: no GPU kernel for %s",
                         tfm_ops[op].name, tfm_dtype_name(d));
    return tfm_cu_launched(op, e);
}

void
tfm_cuda_kernels_scatter_init(tfm_kernel_fn *table)
{
    table[TFM_OP_TENSOR_SCATTER_ADD] = k_scatter;
    table[TFM_OP_TENSOR_SCATTER_UPDATE] = k_scatter;
    table[TFM_OP_TENSOR_SCATTER_MIN] = k_scatter;
    table[TFM_OP_TENSOR_SCATTER_MAX] = k_scatter;
}
