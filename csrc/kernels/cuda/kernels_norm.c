/* The GPU's _LayerNorm, _LayerNormGrad and _SoftmaxGrad (norm.cu): the
 * C glue that reads shapes as cpu/norm.c does. float32/float64 run on
 * the GPU, anything else on host copies. */
#include "internal.h"

#include "../cpu/shape.h"
#include "launch_fused.h"

static int
all_float(tfm_tensor *const *ts, int n, tfm_dtype d)
{
    if (d != TFM_FLOAT32 && d != TFM_FLOAT64)
        return 0;
    for (int k = 0; k < n; k++)
        if (ts[k]->dtype != d)
            return 0;
    return 1;
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
    if (!all_float(in, 3, d) || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t n, rows = rows_of(in[0], &n);
    void *stream = tfm_cu_gpu(ctx)->stream;
    return tfm_cu_launched(op, tfm_cu_layer_norm(
        d == TFM_FLOAT64, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
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
    if (!all_float(in, 3, d) || !all_float(out, 3, d))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t n, rows = rows_of(in[1], &n);
    void *stream = tfm_cu_gpu(ctx)->stream;
    size_t nb = (size_t)(rows ? rows : 1) * 2 * sizeof(double);
    double *stats = ctx->scratch_alloc(ctx, nb);
    if (!stats)
        return tfm_error_code();
    int rc = tfm_cu_layer_norm_grad(
        d == TFM_FLOAT64, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
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
    if (!all_float(in, 2, d) || out[0]->dtype != d)
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
        d == TFM_FLOAT64, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(out[0]), outer, n, inner, stream));
}

void
tfm_cuda_kernels_norm_init(tfm_kernel_fn *table)
{
    table[TFM_OP_LAYER_NORM] = k_layer_norm;
    table[TFM_OP_LAYER_NORM_GRAD] = k_layer_norm_grad;
    table[TFM_OP_SOFTMAX_GRAD] = k_softmax_grad;
}
