/* The GPU's _LayerNorm, _LayerNormGrad and _SoftmaxGrad (norm.cu): the
 * C glue that reads shapes as cpu/norm.c does. float32, float64,
 * float16 and bfloat16 run on the GPU (the 16-bit ones in float32 inside
 * the kernel, kernels.c's takes_half), anything else on host copies. */
#include "internal.h"

#include "../cpu/shape.h"
#include "launch.h"
#include "launch_fused.h"

/* launch.h's element type of d (launch_fused.h's is64: TFM_CU_F32 and
 * _F64 are 0 and 1) when the n tensors all have it, else -1. */
static int
float_type(tfm_tensor *const *ts, int n, tfm_dtype d)
{
    int ty = d == TFM_FLOAT32 ? TFM_CU_F32 : d == TFM_FLOAT64 ? TFM_CU_F64
           : d == TFM_FLOAT16 ? TFM_CU_F16 : d == TFM_BFLOAT16 ? TFM_CU_BF16
           : -1;
    for (int k = 0; k < n; k++)
        if (ts[k]->dtype != d)
            return -1;
    return ty;
}

/* A tensor's rows of its last dim: *n that dim, the rows 0 when it is. */
static int64_t
rows_of(const tfm_tensor *t, int64_t *n)
{
    *n = t->shape.dims[t->shape.ndim - 1];
    return *n ? tfm_tensor_numel(t) / *n : 0;
}

static tfm_code
k_layer_norm(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int ty = float_type(in, 3, d);
    if (ty < 0 || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t n, rows = rows_of(in[0], &n);
    void *stream = tfm_cu_gpu(ctx)->stream;
    return tfm_cu_launched(op, tfm_cu_layer_norm(
        ty, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(in[2]), tfm_tensor_data(out[0]), rows, n, a->f[0],
        stream));
}

/* (dy, x, gamma) -> (dx, dgamma, dbeta). */
static tfm_code
k_layer_norm_grad(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    tfm_dtype d = in[1]->dtype;
    int ty = float_type(in, 3, d);
    if (ty < 0 || float_type(out, 3, d) < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t n, rows = rows_of(in[1], &n);
    void *stream = tfm_cu_gpu(ctx)->stream;
    size_t nb = (size_t)(rows ? rows : 1) * 2 * sizeof(double);
    double *stats = ctx->scratch_alloc(ctx, nb);
    if (!stats)
        return tfm_error_code();
    int rc = tfm_cu_layer_norm_grad(
        ty, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(in[2]), tfm_tensor_data(out[0]),
        tfm_tensor_data(out[1]), tfm_tensor_data(out[2]), rows, n, a->f[0],
        stats, stream);
    /* Stream-ordered: the kernels queued before the free still see it. */
    ctx->scratch_free(ctx, stats, nb);
    return tfm_cu_launched(op, rc);
}

/* (softmax y, dy; i[0] axis). */
static tfm_code
k_softmax_grad(tfm_op op, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, tfm_tensor *const *out, int nout,
               const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int ty = float_type(in, 2, d);
    if (ty < 0 || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    const tfm_shape *s = &in[0]->shape;
    int axis;
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], s->ndim, &axis);
    if (rc)
        return rc;
    int64_t n = s->dims[axis];
    int64_t outer = tfm_dims_prod(s->dims, 0, axis);
    int64_t inner = tfm_dims_prod(s->dims, axis + 1, s->ndim);
    void *stream = tfm_cu_gpu(ctx)->stream;
    return tfm_cu_launched(op, tfm_cu_softmax_grad(
        ty, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(out[0]), outer, n, inner, stream));
}

void
tfm_cuda_kernels_norm_init(tfm_kernel_fn *table)
{
    table[TFM_OP_LAYER_NORM] = k_layer_norm;
    table[TFM_OP_LAYER_NORM_GRAD] = k_layer_norm_grad;
    table[TFM_OP_SOFTMAX_GRAD] = k_softmax_grad;
}
