/* The GPU's MaxPool, AvgPool and their gradients (pool.cu): the C glue
 * that reads the window geometry as the CPU kernels do. float32 and
 * float64 run on the GPU, other dtypes on host copies. */
#include "internal.h"

#include "../cpu/conv.h"
#include "launch.h"

/* kind as tfm_cu_pool takes it; x: the tensor whose shape is the pooled
 * input; a, b: the launcher's operands. */
static tfm_code
run(tfm_op op, int kind, const tfm_tensor *x, const tfm_tensor *a,
    const tfm_tensor *b, tfm_tensor *const *in, int nin, const tfm_attrs *at,
    tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = out[0]->dtype;
    if ((d != TFM_FLOAT32 && d != TFM_FLOAT64) || a->dtype != d ||
        b->dtype != d)
        return tfm_cu_on_host(op, in, nin, at, out, nout, ctx);
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &x->shape, at->ints[TFM_CONV_WIN_H],
                       at->ints[TFM_CONV_WIN_W], x->shape.dims[3], 1, 1, at);
    tfm_cu_pool_geom p = {g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw,
                     g.oh, g.ow, g.pt, g.pl};
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    tfm_gpu *gpu = tfm_cu_gpu(ctx);
    return tfm_cu_launched(op, tfm_cu_pool(
        kind, d == TFM_FLOAT64, &p, tfm_tensor_data(a), tfm_tensor_data(b),
        tfm_tensor_data(out[0]), gpu->stream));
}

static tfm_code
k_pool(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    switch (op) {
    case TFM_OP_MAX_POOL:
        return run(op, 0, in[0], in[0], in[0], in, nin, a, out, nout, ctx);
    case TFM_OP_AVG_POOL:
        return run(op, 1, in[0], in[0], in[0], in, nin, a, out, nout, ctx);
    case TFM_OP_MAX_POOL_GRAD:      /* (x, y, dy): routed by x's argmax */
        return run(op, 2, in[0], in[0], in[2], in, nin, a, out, nout, ctx);
    case TFM_OP_AVG_POOL_GRAD:      /* (x, dy): only x's shape is read */
        return run(op, 3, out[0], in[1], in[1], in, nin, a, out, nout, ctx);
    case TFM_OP_MAX_POOL_GRAD_GRAD: /* (x, y, ddx) */
        return run(op, 4, in[0], in[0], in[2], in, nin, a, out, nout, ctx);
    default:
        return tfm_error(TFM_ERR_INTERNAL, "%s has no GPU pooling kernel",
                         tfm_ops[op].name);
    }
}

void
tfm_cuda_kernels_pool_init(tfm_kernel_fn *table)
{
    table[TFM_OP_MAX_POOL] = table[TFM_OP_AVG_POOL] = k_pool;
    table[TFM_OP_MAX_POOL_GRAD] = table[TFM_OP_AVG_POOL_GRAD] = k_pool;
    table[TFM_OP_MAX_POOL_GRAD_GRAD] = k_pool;
}
