/* The GPU's Transpose, GatherV2, ConcatV2, Pack, BroadcastTo, Shape,
 * Size and Rank: the C glue over shape.cu's kernels and CUDA's copies.
 * Every dtype runs here (they move whole elements). */
#include "internal.h"

#include "../cpu/shape.h"
#include "launch.h"
#include "launch_index.h"

static tfm_code
k_transpose(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    if (x->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t st[TFM_MAX_DIMS], src[TFM_MAX_DIMS];
    tfm_row_strides(x, st);
    for (int d = 0; d < x->ndim; d++)
        src[d] = st[a->ints[d]];
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_transpose((int)tfm_dtype_size(in[0]->dtype),
                              tfm_tensor_data(in[0]),
                              tfm_tensor_data(out[0]), x->ndim,
                              out[0]->shape.dims, src,
                              tfm_tensor_numel(out[0]), g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* BroadcastTo is shape.cu's strided gather (its transpose) with the
 * input's broadcast strides: 0 along every dim it is repeated on. */
static tfm_code
k_broadcast_to(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    if (os->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t ss[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, ss);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_transpose((int)tfm_dtype_size(in[0]->dtype),
                              tfm_tensor_data(in[0]),
                              tfm_tensor_data(out[0]), os->ndim, os->dims,
                              ss, tfm_tensor_numel(out[0]), g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* Shape, Size and Rank read only their input's shape, which the host
 * knows: the CPU kernel (its values, its int32 overflow error) fills a
 * host buffer, and a kernel writes those few bytes, taking them as its
 * parameter rather than copying them from the host: a CUDA graph
 * captures the parameter's value, so a replay needs no host memory, as
 * a captured copy from this stack frame would (the value is the same
 * on every replay: a capture is made for one set of input shapes). (TF
 * keeps Shape's output in host memory; here it lives on the GPU like
 * every output of a GPU op, and its consumers read it there.) */
static tfm_code
k_shape_of(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int64_t vals[TFM_MAX_DIMS];
    tfm_tensor *o = out[0];
    size_t nb = tfm_tensor_nbytes(o);
    if (nb > sizeof vals)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_buffer b = {.refcount = 1, .data = vals, .nbytes = nb};
    tfm_tensor t = *o;
    t.device = 0;
    t.buf = &b;
    t.offset = 0;
    tfm_tensor *ht = &t;
    tfm_code rc = tfm_ops[op].cpu(op, in, nin, a, &ht, 1, &tfm_kctx_cpu);
    if (rc || !nb)
        return rc;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    return tfm_cu_launched(op, tfm_cu_put_bytes(tfm_tensor_data(o), vals,
                                                nb, g->stream));
}

static tfm_code
k_gather(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *ps = &in[0]->shape;
    tfm_dtype id = in[1]->dtype;
    int axis = (int)a->i[0], bd = (int)a->i[1];
    if (bd < 0 || bd > axis || bd > in[1]->shape.ndim ||
        (id != TFM_INT32 && id != TFM_INT64) || axis >= ps->ndim)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    /* cpu/shape_gather.c's tfm_k_gather: [batch, outer, dim, inner]
     * params, [batch, m] indices. */
    const tfm_shape *is = &in[1]->shape;
    int rc = tfm_cu_gather_batched(
        (int)tfm_dtype_size(in[0]->dtype), id == TFM_INT64,
        tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(out[0]), tfm_dims_prod(ps->dims, 0, bd),
        tfm_dims_prod(ps->dims, bd, axis), ps->dims[axis],
        tfm_dims_prod(ps->dims, axis + 1, ps->ndim),
        tfm_dims_prod(is->dims, bd, is->ndim), g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* Each output row (the dims before the axis) is the inputs' rows one
 * after another: one 2-D copy per input. */
static tfm_code
k_concat(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int64_t outer, row;
    tfm_concat_rows(&out[0]->shape, a->i[0], &outer, &row);
    size_t es = tfm_dtype_size(out[0]->dtype);
    if (outer == 0 || row == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    char *o = tfm_tensor_data(out[0]);
    int64_t off = 0;
    for (int i = 0; i < nin; i++) {
        int64_t chunk = tfm_tensor_numel(in[i]) / outer;
        if (chunk) {
            cudaError_t e = cudaMemcpy2DAsync(
                o + (size_t)off * es, (size_t)row * es,
                tfm_tensor_data(in[i]), (size_t)chunk * es,
                (size_t)chunk * es, (size_t)outer, cudaMemcpyDeviceToDevice,
                g->stream);
            if (e)
                return tfm_cu_launched(op, (int)e);
        }
        off += chunk;
    }
    return TFM_OK;
}

void
tfm_cuda_kernels_shape_init(tfm_kernel_fn *table)
{
    table[TFM_OP_TRANSPOSE] = k_transpose;
    table[TFM_OP_GATHER] = k_gather;
    table[TFM_OP_CONCAT] = table[TFM_OP_PACK] = k_concat;
    table[TFM_OP_BROADCAST_TO] = k_broadcast_to;
    table[TFM_OP_SHAPE] = table[TFM_OP_SIZE] = table[TFM_OP_RANK] =
        k_shape_of;
}
