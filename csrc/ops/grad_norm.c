/* Gradients of the fused normalization ops (ops_nn.def): _LayerNorm's
 * is the fused _LayerNormGrad; _LayerNormGrad's and _SoftmaxGrad's (the
 * second order) are composed from plain ops, so they differentiate
 * again. */
#include "grad_util.h"
#include "grads.h"

static tfm_tensor *
op2(tfm_grad_scope *s, tfm_op op, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, op, a, b, NULL);
}

#define MUL(a, b) op2(s, TFM_OP_MUL, (a), (b))
#define SUB(a, b) op2(s, TFM_OP_SUB, (a), (b))
#define ADD(a, b) op2(s, TFM_OP_ADD, (a), (b))

/* Reduction of t over its last axis (keepdims) or, all = 1, over every
 * axis but the last. */
static tfm_tensor *
reduce_last(tfm_grad_scope *s, tfm_op op, tfm_tensor *t, int all)
{
    if (!t)
        return NULL;
    tfm_attrs a;
    tfm_attrs_init(&a);
    int nd = t->shape.ndim;
    if (all) {
        for (int d = 0; d < nd - 1; d++)
            a.ints[d] = d;
        a.n_ints = nd - 1;
    } else {
        a.ints[0] = nd - 1;
        a.n_ints = 1;
        a.i[0] = 1;
    }
    return tfm_gs_op1(s, op, t, &a);
}

static tfm_tensor *
mean_row(tfm_grad_scope *s, tfm_tensor *t)
{
    return reduce_last(s, TFM_OP_MEAN, t, 0);
}

TFM_GRAD(tfm_grad_rule_layer_norm)
{
    tfm_tensor *in[3] = {g[0], c->in[0], c->in[1]}, *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (c->call(TFM_OP_LAYER_NORM_GRAD, in, 3, c->attrs, out, &n))
        return tfm_grad_finish(gin, 3, 0x7);
    for (int k = 0; k < 3; k++)
        gin[k] = out[k];
    return tfm_grad_finish(gin, 3, 0x7);
}

/* _LayerNormGrad(dy, x, gamma) -> (dx, dgamma, dbeta), per row of n with
 * d = x - mean(x), r = rsqrt(mean(d^2) + eps), xh = d r, v = gamma dy:
 *   dx = r (v - mean(v)) - r^3 d mean(v d), dgamma = sum(dy xh),
 *   dbeta = sum(dy).
 * With upstream gradients A (dx), Bg (dgamma), Bb (dbeta):
 *   w = r P(A), P(A) = A - mean(A) - xh mean(A xh)   (P is symmetric)
 *   d dy    = gamma w + xh Bg + Bb
 *   d gamma = sum over rows of dy w
 *   d x     = gd - mean(gd), gd = -r^3 (S3 A + M2 v + K d) + r dy Bg,
 * where M2 = mean(A d), S3 = mean(v d) and K = mean(A v) - mean(A)
 * mean(v) - 3 r^2 M2 S3 + mean(d dy Bg) is the row's d/dr over n. */
/* d = x - mean(x) and r = rsqrt(mean(d^2) + eps) of each row. */
static void
row_stats(tfm_grad_scope *s, tfm_tensor *x, double eps, tfm_tensor **d,
          tfm_tensor **r)
{
    *d = SUB(x, mean_row(s, x));
    *r = tfm_gs_op1(s, TFM_OP_RSQRT, ADD(mean_row(s, MUL(*d, *d)),
                                         tfm_gs_scalar(s, x, eps)), NULL);
}

/* Two scopes: the whole formula has more temporaries than one holds. */
TFM_GRAD(tfm_grad_rule_layer_norm_grad)
{
    tfm_grad_scope sc, *s = &sc;
    tfm_tensor *dy = c->in[0], *x = c->in[1], *gamma = c->in[2];
    tfm_tensor *Bg = g[1], *Bb = g[2], *A, *d, *r;
    double eps = c->attrs->f[0];

    tfm_gs_begin(s, c);
    A = g[0] ? g[0] : tfm_gs_zeros_like(s, x);
    row_stats(s, x, eps, &d, &r);
    tfm_tensor *xh = MUL(d, r);
    tfm_tensor *w = MUL(r, SUB(SUB(A, mean_row(s, A)),
                               MUL(xh, mean_row(s, MUL(A, xh)))));
    tfm_tensor *gdy = MUL(gamma, w);
    if (Bg)
        gdy = ADD(gdy, MUL(xh, Bg));
    if (Bb)
        gdy = ADD(gdy, Bb);
    gin[0] = tfm_gs_out(s, gdy);
    gin[2] = tfm_gs_out(s, reduce_last(s, TFM_OP_SUM, MUL(dy, w), 1));
    tfm_gs_end(s);

    tfm_gs_begin(s, c);
    A = g[0] ? g[0] : tfm_gs_zeros_like(s, x);
    row_stats(s, x, eps, &d, &r);
    tfm_tensor *v = MUL(gamma, dy);
    tfm_tensor *m2 = mean_row(s, MUL(A, d)), *s3 = mean_row(s, MUL(v, d));
    tfm_tensor *r2 = MUL(r, r);
    tfm_tensor *k = SUB(SUB(mean_row(s, MUL(A, v)),
                            MUL(mean_row(s, A), mean_row(s, v))),
                        MUL(tfm_gs_scalar(s, x, 3.0), MUL(r2, MUL(m2, s3))));
    tfm_tensor *dyb = Bg ? MUL(dy, Bg) : NULL;
    if (dyb)
        k = ADD(k, mean_row(s, MUL(d, dyb)));
    tfm_tensor *gd = tfm_gs_op1(s, TFM_OP_NEG, MUL(MUL(r2, r),
        ADD(ADD(MUL(s3, A), MUL(m2, v)), MUL(k, d))), NULL);
    if (dyb)
        gd = ADD(gd, MUL(r, dyb));
    gin[1] = tfm_gs_out(s, SUB(gd, mean_row(s, gd)));
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 3, 0x7);
}

/* _SoftmaxGrad(y, dy) = y (dy - t), t = sum(dy y) along the axis; with
 * upstream A: d dy = _SoftmaxGrad(y, A), d y = A (dy - t) - dy sum(A y). */
TFM_GRAD(tfm_grad_rule_softmax_grad)
{
    tfm_grad_scope sc, *s = &sc;
    tfm_gs_begin(s, c);
    tfm_tensor *y = c->in[0], *dy = c->in[1], *A = g[0];
    int axis;
    if (tfm_shape_axis(tfm_ops[c->op].name, c->attrs->i[0], y->shape.ndim,
                       &axis)) {
        tfm_gs_end(s);
        return tfm_grad_finish(gin, 2, 0x3);
    }
    tfm_tensor *t = tfm_gs_sum(s, MUL(dy, y), &axis, 1, 1);
    tfm_tensor *u = tfm_gs_sum(s, MUL(A, y), &axis, 1, 1);
    gin[0] = tfm_gs_out(s, SUB(MUL(A, SUB(dy, t)), MUL(dy, u)));
    gin[1] = tfm_gs_out(s, tfm_gs_op2(s, TFM_OP_SOFTMAX_GRAD, y, A,
                                      c->attrs));
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 2, 0x3);
}
