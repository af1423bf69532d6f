/* The GPU's Softmax, LogSoftmax and cross-entropy kernels (nn.cu): the
 * C glue that reads the op's shapes and attributes. float32, float64,
 * float16 and bfloat16 run on the GPU (the 16-bit ones in float32 inside
 * the kernel, kernels.c's takes_half), other dtypes on host copies. */
#include "internal.h"

#include "../cpu/shape.h"
#include "launch.h"

/* launch.h's element type (its is64 argument: TFM_CU_F32 and _F64 are 0
 * and 1), or -1. */
static int
float_type(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return TFM_CU_F32;
    case TFM_FLOAT64: return TFM_CU_F64;
    case TFM_FLOAT16: return TFM_CU_F16;
    case TFM_BFLOAT16: return TFM_CU_BF16;
    default: return -1;
    }
}

/* x's shape as [outer, dims[axis], inner], the axis i[0] (negative
 * from the end) checked against x's rank. */
static tfm_code
split_at_axis(tfm_op op, const tfm_tensor *x, const tfm_attrs *a,
              int64_t *outer, int64_t *n, int64_t *inner)
{
    const tfm_shape *s = &x->shape;
    int axis;
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], s->ndim, &axis);
    if (rc)
        return rc;
    *n = s->dims[axis];
    *outer = tfm_dims_prod(s->dims, 0, axis);
    *inner = tfm_dims_prod(s->dims, axis + 1, s->ndim);
    return TFM_OK;
}

/* Softmax, LogSoftmax and SoftmaxCrossEntropyWithLogits (x, labels) all
 * work along one axis of a float x; the second tensor that must share
 * x's dtype is the output for the softmaxes, the labels for the cross
 * entropy. */
static tfm_code
k_along_axis(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int xent = op == TFM_OP_SOFTMAX_XENT, ty = float_type(d);
    /* infer gives the labels and outputs x's dtype: no 16-bit float,
     * which the CPU kernel would misread, reaches the host copies. */
    if (ty < 0 || (xent ? in[1] : out[0])->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t outer, n, inner;
    tfm_code rc = split_at_axis(op, in[0], a, &outer, &n, &inner);
    if (rc)
        return rc;
    void *stream = tfm_cu_gpu(ctx)->stream;
    const void *x = tfm_tensor_data(in[0]);
    return tfm_cu_launched(op, xent
        ? tfm_cu_xent(ty, x, tfm_tensor_data(in[1]),
                      tfm_tensor_data(out[0]), tfm_tensor_data(out[1]),
                      outer, n, inner, stream)
        : tfm_cu_softmax(ty, op == TFM_OP_LOG_SOFTMAX, x,
                         tfm_tensor_data(out[0]), outer, n, inner, stream));
}

static tfm_code
k_sparse_xent(tfm_op op, tfm_tensor *const *in, int nin,
              const tfm_attrs *a, tfm_tensor *const *out, int nout,
              const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype, ld = in[1]->dtype;
    int ty = float_type(d);
    if (ty < 0 || (ld != TFM_INT32 && ld != TFM_INT64))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    const tfm_shape *fs = &in[0]->shape;
    int64_t n = fs->dims[fs->ndim - 1];
    tfm_gpu *g = tfm_cu_gpu(ctx);
    return tfm_cu_launched(op, tfm_cu_sparse_xent(
        ty, ld == TFM_INT64, tfm_tensor_data(in[0]),
        tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
        tfm_tensor_data(out[1]), tfm_tensor_numel(in[1]), n, g->stream));
}

void
tfm_cuda_kernels_nn_init(tfm_kernel_fn *table)
{
    table[TFM_OP_SOFTMAX] = table[TFM_OP_LOG_SOFTMAX] = k_along_axis;
    table[TFM_OP_SOFTMAX_XENT] = k_along_axis;
    table[TFM_OP_SPARSE_SOFTMAX_XENT] = k_sparse_xent;
    tfm_cuda_kernels_pool_init(table);
    tfm_cuda_kernels_conv_init(table);
    tfm_cuda_kernels_fused_conv_init(table);
    tfm_cuda_kernels_norm_init(table);
    tfm_cuda_kernels_rnn_init(table);
    tfm_cuda_kernels_fill_init(table);
}
