/* Gradients of the nn family (ops_nn.def): softmaxes and the fused
 * cross entropies. */
#include "grad_util.h"
#include "grads.h"

static tfm_tensor *
mul(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_MUL, a, b, NULL);
}

static tfm_tensor *
sub(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_SUB, a, b, NULL);
}

/* The attribute axis of x, as a non-negative dim; -1 on error. */
static int
norm_axis(const tfm_grad_ctx *c, const tfm_tensor *x, int64_t axis)
{
    int out;
    if (tfm_shape_axis(tfm_ops[c->op].name, axis, x->shape.ndim, &out))
        return -1;
    return out;
}

/* sum(t, axis, keepdims) */
static tfm_tensor *
sum_kept(tfm_grad_scope *s, tfm_tensor *t, int axis)
{
    return axis < 0 ? NULL : tfm_gs_sum(s, t, &axis, 1, 1);
}

/* d softmax: (g - sum(g * y)) * y, one fused op */
TFM_GRAD(tfm_grad_rule_softmax)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *y = c->out[0];
    int axis = norm_axis(c, y, c->attrs->i[0]);
    gin[0] = axis < 0 ? NULL : tfm_gs_out(&s, tfm_gs_op2(
        &s, TFM_OP_SOFTMAX_GRAD, y, g[0], c->attrs));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* d log_softmax: g - sum(g) * exp(y) */
TFM_GRAD(tfm_grad_rule_log_softmax)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *y = c->out[0];
    int axis = norm_axis(c, y, c->attrs->i[0]);
    tfm_tensor *p = tfm_gs_op1(&s, TFM_OP_EXP, y, NULL);
    gin[0] = tfm_gs_out(&s, sub(&s, g[0], mul(&s, sum_kept(&s, g[0], axis),
                                               p)));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* The gradient of the features of a fused cross entropy, whose outputs
 * are (loss, backprop = d loss / d features) over class axis `axis`:
 * g_loss (expanded on the axis) * backprop, plus, when backprop itself
 * has a gradient (second order), that gradient through the softmax. */
static tfm_tensor *
xent_features(tfm_grad_scope *s, tfm_tensor *const *g, int axis)
{
    const tfm_grad_ctx *c = s->c;
    tfm_tensor *x = c->in[0], *d = NULL;
    if (axis < 0)
        return NULL;
    if (g[0]) {
        tfm_attrs a;
        tfm_attrs_init(&a);
        a.i[0] = axis;
        d = mul(s, tfm_gs_op1(s, TFM_OP_EXPAND_DIMS, g[0], &a), c->out[1]);
    }
    if (g[1]) {
        tfm_attrs a;
        tfm_attrs_init(&a);
        a.i[0] = axis;
        tfm_tensor *p = tfm_gs_op1(s, TFM_OP_SOFTMAX, x, &a);
        tfm_tensor *t = mul(s, sub(s, g[1], sum_kept(s, mul(s, g[1], p),
                                                     axis)), p);
        d = d ? tfm_gs_op2(s, TFM_OP_ADD, d, t, NULL) : t;
    }
    return d;
}

TFM_GRAD(tfm_grad_rule_sparse_softmax_xent)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    int axis = c->in[0]->shape.ndim - 1;
    gin[0] = tfm_gs_out(&s, xent_features(&s, g, axis));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, 1);
}

/* Labels: g_loss * -log_softmax(features), and -g_backprop (backprop =
 * softmax - labels). */
TFM_GRAD(tfm_grad_rule_softmax_xent)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0], *dl = NULL;
    int axis = norm_axis(c, x, c->attrs->i[0]);
    gin[0] = tfm_gs_out(&s, xent_features(&s, g, axis));
    if (g[0] && axis >= 0) {
        tfm_attrs a;
        tfm_attrs_init(&a);
        a.i[0] = axis;
        tfm_tensor *ls = tfm_gs_op1(&s, TFM_OP_LOG_SOFTMAX, x, &a);
        dl = mul(&s, tfm_gs_op1(&s, TFM_OP_EXPAND_DIMS, g[0], &a),
                 tfm_gs_op1(&s, TFM_OP_NEG, ls, NULL));
    }
    if (g[1])
        dl = dl ? sub(&s, dl, g[1]) : tfm_gs_op1(&s, TFM_OP_NEG, g[1], NULL);
    gin[1] = tfm_gs_out(&s, dl);
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, 3);
}
