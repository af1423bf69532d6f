/* The GPU's fused convolution ops: _FusedConv2D (graph/
 * pass_conv_epilogue.c) as cuDNN's convolution (conv_cudnn.c) and one
 * epilogue kernel for bias, residual and activation (fused_conv.cu);
 * _FusedMaxPoolGrad (graph/pass_pool_grad.c) as pool.cu's MaxPoolGrad,
 * then the ReluGrad mask and the bias gradient in fused_conv.cu. Each
 * mirrors its CPU kernel (cpu/conv_fused.c, cpu/conv_pool_grad.c); what
 * the GPU does not take (float64 convolutions, a geometry cuDNN has no
 * algorithm for, other dtypes) runs that kernel on host copies. */
#include "internal.h"

#include "../cpu/conv.h"
#include "launch.h"
#include "launch_fused.h"

#ifdef TFMINI_WITH_CUDNN
/* (x, f[, bias[, r]]); i[1] the activation. */
static tfm_code
k_fused_conv2d(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_tensor *y = out[0];
    for (int k = 2; k < nin; k++)
        if (in[k]->dtype != y->dtype)
            return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int on_host;
    tfm_code rc = tfm_cu_conv2d_forward(op, in[0], in[1], a, y, ctx,
                                        &on_host);
    if (on_host)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (rc || tfm_tensor_numel(y) == 0)
        return rc;
    int64_t o = in[1]->shape.dims[3];
    return tfm_cu_launched(op, tfm_cu_conv_epilogue(
        0, tfm_tensor_data(y), nin > 2 ? tfm_tensor_data(in[2]) : NULL,
        nin > 3 ? tfm_tensor_data(in[3]) : NULL, tfm_tensor_numel(y) / o, o,
        (int)a->i[1], tfm_cu_gpu(ctx)->stream));
}
#endif

/* (x, y, dy) -> (dx, db); MaxPool's attributes. */
static tfm_code
k_fused_max_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    if ((d != TFM_FLOAT32 && d != TFM_FLOAT64) || in[2]->dtype != d ||
        out[0]->dtype != d || out[1]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *gpu = tfm_cu_gpu(ctx);
    void *dx = tfm_tensor_data(out[0]), *db = tfm_tensor_data(out[1]);
    if (tfm_tensor_numel(out[0]) == 0 || tfm_tensor_numel(in[2]) == 0) {
        /* Nothing routed: the gradients are zeros (as the CPU's). */
        tfm_code rc = tfm_gpu_check(cudaMemsetAsync(
            dx, 0, tfm_tensor_nbytes(out[0]), gpu->stream), tfm_ops[op].name);
        return rc ? rc : tfm_gpu_check(cudaMemsetAsync(
            db, 0, tfm_tensor_nbytes(out[1]), gpu->stream), tfm_ops[op].name);
    }
    const tfm_shape *xs = &in[0]->shape;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, xs, a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], xs->dims[3], 1, 1, a);
    tfm_cu_pool_geom p = {g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw,
                          g.oh, g.ow, g.pt, g.pl};
    int is64 = d == TFM_FLOAT64;
    int rc = tfm_cu_pool(2, is64, &p, tfm_tensor_data(in[0]),
                         tfm_tensor_data(in[2]), dx, gpu->stream);
    if (!rc)
        rc = tfm_cu_relu_mask_colsum(is64, tfm_tensor_data(in[0]), dx, db,
                                     g.n * g.h * g.w, g.c, gpu->stream);
    return tfm_cu_launched(op, rc);
}

void
tfm_cuda_kernels_fused_conv_init(tfm_kernel_fn *table)
{
#ifdef TFMINI_WITH_CUDNN
    table[TFM_OP_FUSED_CONV2D] = k_fused_conv2d;
#endif
    table[TFM_OP_FUSED_MAX_POOL_GRAD] = k_fused_max_pool_grad;
}
