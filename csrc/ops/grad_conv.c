/* Gradients of the conv family, written with the family's own ops so
 * that they trace and differentiate again. Every op here is linear in
 * each of its differentiable inputs, and each backprop op is the adjoint
 * of the forward op in one argument, so the rules form a closed set:
 *
 *   y   = Conv2D(x, f)                  dx = BPI(x, f, dy)
 *                                       df = BPF(x, f, dy)
 *   dx  = BPI(x, f, dy)                 df  = BPF(ddx, f, dy)
 *                                       ddy = Conv2D(ddx, f)
 *   df  = BPF(x, f, dy)                 dx  = BPI(x, ddf, dy)
 *                                       ddy = Conv2D(x, ddf)
 *   y   = MaxPool(x)                    dx = MaxPoolGrad(x, y, dy)
 *   dx  = MaxPoolGrad(x, y, g)          dg = MaxPoolGradGrad(x, y, ddx)
 *   y   = AvgPool(x)                    dx = AvgPoolGrad(x, dy)
 *   dx  = AvgPoolGrad(x, g)             dg = AvgPool(ddx)
 *
 * (BPI/BPF: Conv2DBackpropInput/Filter in their three-input form, whose
 * first or second input gives only a shape.) The attributes are shared
 * by the whole family (ops_conv.def), so each rule passes its own on.
 * Inputs that give only a shape, and the argmax positions of max
 * pooling, get no gradient (it is zero almost everywhere).
 * DepthwiseConv2dNative and its two backprops form the same closed set
 * (each is linear in x and in f), with the depthwise ops in place of
 * Conv2D, BPI and BPF. */
#include "grads.h"

static void
clear(const tfm_grad_ctx *ctx, tfm_tensor **grad_in)
{
    for (int i = 0; i < ctx->nin; i++)
        grad_in[i] = NULL;
}

/* One single-output op of this family into *out. */
static tfm_code
call(const tfm_grad_ctx *ctx, tfm_op op, tfm_tensor *a, tfm_tensor *b,
     tfm_tensor *c, tfm_tensor **out)
{
    tfm_tensor *in[3] = {a, b, c};
    tfm_tensor *res[1] = {NULL};
    int nin = c ? 3 : b ? 2 : 1, nout = 0;
    tfm_code rc = ctx->call(op, in, nin, ctx->attrs, res, &nout);
    if (rc)
        return rc;
    *out = res[0];
    return TFM_OK;
}

/* After the second of two calls: on failure, drop the first result. */
static tfm_code
both(tfm_code rc, tfm_tensor **first)
{
    if (rc && *first) {
        tfm_tensor_decref(*first);
        *first = NULL;
    }
    return rc;
}

tfm_code
tfm_grad_rule_conv2d(const tfm_grad_ctx *ctx, tfm_tensor *const *grad_out,
                     tfm_tensor **grad_in)
{
    tfm_tensor *x = ctx->in[0], *f = ctx->in[1], *dy = grad_out[0];
    clear(ctx, grad_in);
    if (!dy)
        return TFM_OK;
    tfm_code rc = call(ctx, TFM_OP_CONV2D_BACKPROP_INPUT, x, f, dy,
                       &grad_in[0]);
    if (rc)
        return rc;
    rc = call(ctx, TFM_OP_CONV2D_BACKPROP_FILTER, x, f, dy, &grad_in[1]);
    return both(rc, &grad_in[0]);
}

tfm_code
tfm_grad_rule_conv2d_backprop_input(const tfm_grad_ctx *ctx,
                                    tfm_tensor *const *grad_out,
                                    tfm_tensor **grad_in)
{
    int nin = ctx->nin;
    tfm_tensor *f = ctx->in[nin - 2], *dy = ctx->in[nin - 1];
    tfm_tensor *ddx = grad_out[0];
    clear(ctx, grad_in);
    if (!ddx)
        return TFM_OK;
    tfm_code rc = call(ctx, TFM_OP_CONV2D_BACKPROP_FILTER, ddx, f, dy,
                       &grad_in[nin - 2]);
    if (rc)
        return rc;
    rc = call(ctx, TFM_OP_CONV2D, ddx, f, NULL, &grad_in[nin - 1]);
    return both(rc, &grad_in[nin - 2]);
}

tfm_code
tfm_grad_rule_conv2d_backprop_filter(const tfm_grad_ctx *ctx,
                                     tfm_tensor *const *grad_out,
                                     tfm_tensor **grad_in)
{
    int nin = ctx->nin;
    tfm_tensor *x = ctx->in[0], *dy = ctx->in[nin - 1];
    tfm_tensor *ddf = grad_out[0];
    clear(ctx, grad_in);
    if (!ddf)
        return TFM_OK;
    tfm_code rc = call(ctx, TFM_OP_CONV2D_BACKPROP_INPUT, x, ddf, dy,
                       &grad_in[0]);
    if (rc)
        return rc;
    rc = call(ctx, TFM_OP_CONV2D, x, ddf, NULL, &grad_in[nin - 1]);
    return both(rc, &grad_in[0]);
}

/* The forward op and its two backprops: Conv2D's or the depthwise ones. */
typedef struct conv_ops {
    tfm_op fwd, bpi, bpf;
} conv_ops;

static const conv_ops depthwise = {TFM_OP_DEPTHWISE_CONV2D,
                                   TFM_OP_DEPTHWISE_CONV2D_BACKPROP_INPUT,
                                   TFM_OP_DEPTHWISE_CONV2D_BACKPROP_FILTER};

/* y = fwd(x, f): dx = bpi(x, f, dy), df = bpf(x, f, dy). */
static tfm_code
fwd_grads(const tfm_grad_ctx *ctx, const conv_ops *o, tfm_tensor *dy,
          tfm_tensor **grad_in)
{
    tfm_tensor *x = ctx->in[0], *f = ctx->in[1];
    clear(ctx, grad_in);
    if (!dy)
        return TFM_OK;
    tfm_code rc = call(ctx, o->bpi, x, f, dy, &grad_in[0]);
    if (rc)
        return rc;
    return both(call(ctx, o->bpf, x, f, dy, &grad_in[1]), &grad_in[0]);
}

/* dx = bpi(x, f, dy): df = bpf(ddx, f, dy), ddy = fwd(ddx, f). */
static tfm_code
bpi_grads(const tfm_grad_ctx *ctx, const conv_ops *o, tfm_tensor *ddx,
          tfm_tensor **grad_in)
{
    tfm_tensor *f = ctx->in[1], *dy = ctx->in[2];
    clear(ctx, grad_in);
    if (!ddx)
        return TFM_OK;
    tfm_code rc = call(ctx, o->bpf, ddx, f, dy, &grad_in[1]);
    if (rc)
        return rc;
    return both(call(ctx, o->fwd, ddx, f, NULL, &grad_in[2]), &grad_in[1]);
}

/* df = bpf(x, f, dy): dx = bpi(x, ddf, dy), ddy = fwd(x, ddf). */
static tfm_code
bpf_grads(const tfm_grad_ctx *ctx, const conv_ops *o, tfm_tensor *ddf,
          tfm_tensor **grad_in)
{
    tfm_tensor *x = ctx->in[0], *dy = ctx->in[2];
    clear(ctx, grad_in);
    if (!ddf)
        return TFM_OK;
    tfm_code rc = call(ctx, o->bpi, x, ddf, dy, &grad_in[0]);
    if (rc)
        return rc;
    return both(call(ctx, o->fwd, x, ddf, NULL, &grad_in[2]), &grad_in[0]);
}

tfm_code
tfm_grad_rule_depthwise_conv2d(const tfm_grad_ctx *ctx,
                               tfm_tensor *const *grad_out,
                               tfm_tensor **grad_in)
{
    return fwd_grads(ctx, &depthwise, grad_out[0], grad_in);
}

tfm_code
tfm_grad_rule_depthwise_backprop_input(const tfm_grad_ctx *ctx,
                                       tfm_tensor *const *grad_out,
                                       tfm_tensor **grad_in)
{
    return bpi_grads(ctx, &depthwise, grad_out[0], grad_in);
}

tfm_code
tfm_grad_rule_depthwise_backprop_filter(const tfm_grad_ctx *ctx,
                                        tfm_tensor *const *grad_out,
                                        tfm_tensor **grad_in)
{
    return bpf_grads(ctx, &depthwise, grad_out[0], grad_in);
}

tfm_code
tfm_grad_rule_max_pool(const tfm_grad_ctx *ctx, tfm_tensor *const *grad_out,
                       tfm_tensor **grad_in)
{
    clear(ctx, grad_in);
    if (!grad_out[0])
        return TFM_OK;
    return call(ctx, TFM_OP_MAX_POOL_GRAD, ctx->in[0], ctx->out[0],
                grad_out[0], &grad_in[0]);
}

tfm_code
tfm_grad_rule_max_pool_grad(const tfm_grad_ctx *ctx,
                            tfm_tensor *const *grad_out, tfm_tensor **grad_in)
{
    clear(ctx, grad_in);
    if (!grad_out[0])
        return TFM_OK;
    return call(ctx, TFM_OP_MAX_POOL_GRAD_GRAD, ctx->in[0], ctx->in[1],
                grad_out[0], &grad_in[2]);
}

tfm_code
tfm_grad_rule_max_pool_grad_grad(const tfm_grad_ctx *ctx,
                                 tfm_tensor *const *grad_out,
                                 tfm_tensor **grad_in)
{
    clear(ctx, grad_in);
    if (!grad_out[0])
        return TFM_OK;
    return call(ctx, TFM_OP_MAX_POOL_GRAD, ctx->in[0], ctx->in[1],
                grad_out[0], &grad_in[2]);
}

tfm_code
tfm_grad_rule_avg_pool(const tfm_grad_ctx *ctx, tfm_tensor *const *grad_out,
                       tfm_tensor **grad_in)
{
    clear(ctx, grad_in);
    if (!grad_out[0])
        return TFM_OK;
    return call(ctx, TFM_OP_AVG_POOL_GRAD, ctx->in[0], grad_out[0], NULL,
                &grad_in[0]);
}

tfm_code
tfm_grad_rule_avg_pool_grad(const tfm_grad_ctx *ctx,
                            tfm_tensor *const *grad_out, tfm_tensor **grad_in)
{
    clear(ctx, grad_in);
    if (!grad_out[0])
        return TFM_OK;
    return call(ctx, TFM_OP_AVG_POOL, grad_out[0], NULL, NULL, &grad_in[1]);
}
