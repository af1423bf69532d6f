/* Gradients of the elementwise family (ops_elementwise.def), including
 * the activations. Each rule is the textbook derivative written with
 * ops (grad_util.h), so it differentiates again; binary rules reduce to
 * each input's shape with unbroadcast. Where the derivative is cheapest
 * from the output (exp, tanh, sigmoid, ...) the rule uses the output. */
#include "grad_util.h"
#include "grads.h"

/* ---- formula shorthands over a scope ---- */

static inline tfm_tensor *
add(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_ADD, a, b, NULL);
}

static inline tfm_tensor *
sub(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_SUB, a, b, NULL);
}

static inline tfm_tensor *
mul(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_MUL, a, b, NULL);
}

static inline tfm_tensor *
div(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(s, TFM_OP_DIV, a, b, NULL);
}

static inline tfm_tensor *
un(tfm_grad_scope *s, tfm_op op, tfm_tensor *a)
{
    return tfm_gs_op1(s, op, a, NULL);
}

/* a * v for a constant v. */
static inline tfm_tensor *
scale(tfm_grad_scope *s, tfm_tensor *a, double v)
{
    return mul(s, a, tfm_gs_scalar(s, a, v));
}

/* v + a for a constant v. */
static inline tfm_tensor *
plus(tfm_grad_scope *s, double v, tfm_tensor *a)
{
    return add(s, tfm_gs_scalar(s, a, v), a);
}

/* v - a for a constant v. */
static inline tfm_tensor *
minus(tfm_grad_scope *s, double v, tfm_tensor *a)
{
    return sub(s, tfm_gs_scalar(s, a, v), a);
}

/* where(mask, a, 0) and where(mask, 0, a). */
static inline tfm_tensor *
keep_where(tfm_grad_scope *s, tfm_tensor *mask, tfm_tensor *a)
{
    return tfm_gs_op3(s, TFM_OP_SELECT, mask, a, tfm_gs_zeros_like(s, a),
                      NULL);
}

static inline tfm_tensor *
drop_where(tfm_grad_scope *s, tfm_tensor *mask, tfm_tensor *a)
{
    return tfm_gs_op3(s, TFM_OP_SELECT, mask, tfm_gs_zeros_like(s, a), a,
                      NULL);
}

/* x compared with the constant v. */
static inline tfm_tensor *
cmp(tfm_grad_scope *s, tfm_op op, tfm_tensor *x, double v)
{
    return tfm_gs_op2(s, op, x, tfm_gs_scalar(s, x, v), NULL);
}

/* One-input rule: gin[0] = d, then end. */
static tfm_code
unary_done(tfm_grad_scope *s, tfm_tensor **gin, tfm_tensor *d)
{
    gin[0] = tfm_gs_out(s, d);
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 1, 1);
}

/* Two-input rule: each reduced to its input's shape. */
static tfm_code
binary_done(tfm_grad_scope *s, tfm_tensor **gin, tfm_tensor *d0,
            tfm_tensor *d1)
{
    const tfm_grad_ctx *c = s->c;
    gin[0] = tfm_gs_unbroadcast(s, d0, c->in[0]);
    gin[1] = tfm_gs_unbroadcast(s, d1, c->in[1]);
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 2, 3);
}

#define RULE(name)                                                          \
    static tfm_code name##_body(tfm_grad_scope *s, tfm_tensor *g,           \
                                tfm_tensor *x, tfm_tensor *y,               \
                                tfm_tensor **gin);                          \
    TFM_GRAD(tfm_grad_rule_##name)                                          \
    {                                                                       \
        tfm_grad_scope s;                                                   \
        tfm_gs_begin(&s, c);                                                \
        return name##_body(&s, g[0], c->in[0],                              \
                           c->nin > 1 ? c->in[1] : c->out[0], gin);         \
    }                                                                       \
    static tfm_code name##_body(tfm_grad_scope *s, tfm_tensor *g,           \
                                tfm_tensor *x, tfm_tensor *y,               \
                                tfm_tensor **gin)

/* In RULE bodies: x, y are the inputs of a binary op; for a unary op x
 * is the input and y the output. */

/* ---- arithmetic ---- */

RULE(add) { return binary_done(s, gin, g, g); }

RULE(sub) { return binary_done(s, gin, g, un(s, TFM_OP_NEG, g)); }

RULE(mul) { return binary_done(s, gin, mul(s, g, y), mul(s, x, g)); }

/* d(x/y) = g/y, -g*x/y^2 */
RULE(div)
{
    return binary_done(s, gin, div(s, g, y),
                       mul(s, g, div(s, div(s, un(s, TFM_OP_NEG, x), y), y)));
}

RULE(div_no_nan)
{
    tfm_op dnn = TFM_OP_DIV_NO_NAN;
    tfm_tensor *t = tfm_gs_op2(s, dnn, un(s, TFM_OP_NEG, x), y, NULL);
    return binary_done(s, gin, tfm_gs_op2(s, dnn, g, y, NULL),
                       mul(s, g, tfm_gs_op2(s, dnn, t, y, NULL)));
}

/* x mod y = x - floor(x/y) * y */
RULE(floormod)
{
    tfm_tensor *q = tfm_gs_op2(s, TFM_OP_FLOORDIV, x, y, NULL);
    return binary_done(s, gin, g, mul(s, g, un(s, TFM_OP_NEG, q)));
}

/* d(x^y) = g*y*x^(y-1), g*x^y*log(x) (0 where x <= 0, as TF) */
RULE(pow)
{
    tfm_tensor *z = s->c->out[0];
    tfm_tensor *ym1 = sub(s, y, tfm_gs_scalar(s, y, 1.0));
    tfm_tensor *dx = mul(s, g, mul(s, y, tfm_gs_op2(s, TFM_OP_POW, x, ym1,
                                                    NULL)));
    tfm_tensor *pos = cmp(s, TFM_OP_GREATER, x, 0.0);
    /* log of a safe value where x <= 0, then masked out. */
    tfm_tensor *safe = tfm_gs_op3(s, TFM_OP_SELECT, pos, x,
                                  tfm_gs_ones_like(s, x), NULL);
    tfm_tensor *logx = keep_where(s, pos, un(s, TFM_OP_LOG, safe));
    return binary_done(s, gin, dx, mul(s, g, mul(s, z, logx)));
}

/* Ties go to x (as TF). */
RULE(maximum)
{
    tfm_tensor *m = tfm_gs_op2(s, TFM_OP_GREATER_EQUAL, x, y, NULL);
    return binary_done(s, gin, keep_where(s, m, g), drop_where(s, m, g));
}

RULE(minimum)
{
    tfm_tensor *m = tfm_gs_op2(s, TFM_OP_LESS_EQUAL, x, y, NULL);
    return binary_done(s, gin, keep_where(s, m, g), drop_where(s, m, g));
}

/* (x - y)^2 */
RULE(squared_difference)
{
    tfm_tensor *d = scale(s, mul(s, g, sub(s, x, y)), 2.0);
    return binary_done(s, gin, d, un(s, TFM_OP_NEG, d));
}

/* atan2(a, b): d/da = b/(a^2+b^2), d/db = -a/(a^2+b^2) */
RULE(atan2)
{
    tfm_tensor *r = div(s, g, add(s, mul(s, x, x), mul(s, y, y)));
    return binary_done(s, gin, mul(s, y, r),
                       mul(s, un(s, TFM_OP_NEG, x), r));
}

/* ---- unary ---- */

RULE(neg) { return unary_done(s, gin, un(s, TFM_OP_NEG, g)); }

RULE(abs) { return unary_done(s, gin, mul(s, g, un(s, TFM_OP_SIGN, x))); }

RULE(sign) { return unary_done(s, gin, tfm_gs_zeros_of(s, x)); }

RULE(square) { return unary_done(s, gin, mul(s, g, scale(s, x, 2.0))); }

RULE(exp) { return unary_done(s, gin, mul(s, g, y)); }

RULE(expm1) { return unary_done(s, gin, mul(s, g, un(s, TFM_OP_EXP, x))); }

RULE(log) { return unary_done(s, gin, div(s, g, x)); }

RULE(log1p) { return unary_done(s, gin, div(s, g, plus(s, 1.0, x))); }

/* d sqrt(x) = 0.5 / y */
RULE(sqrt) { return unary_done(s, gin, div(s, scale(s, g, 0.5), y)); }

/* d x^-1/2 = -0.5 * y^3 */
RULE(rsqrt)
{
    return unary_done(s, gin, mul(s, scale(s, g, -0.5),
                                  mul(s, y, mul(s, y, y))));
}

/* d 1/x = -y^2 */
RULE(reciprocal)
{
    return unary_done(s, gin, mul(s, un(s, TFM_OP_NEG, g), mul(s, y, y)));
}

RULE(sin) { return unary_done(s, gin, mul(s, g, un(s, TFM_OP_COS, x))); }

RULE(cos)
{
    return unary_done(s, gin, mul(s, un(s, TFM_OP_NEG, g),
                                  un(s, TFM_OP_SIN, x)));
}

/* d tan = 1 / cos^2 */
RULE(tan)
{
    tfm_tensor *cx = un(s, TFM_OP_COS, x);
    return unary_done(s, gin, div(s, g, mul(s, cx, cx)));
}

/* 1 / sqrt(1 - x^2) */
static tfm_tensor *
inv_sqrt_one_minus_sq(tfm_grad_scope *s, tfm_tensor *x)
{
    return un(s, TFM_OP_RSQRT, minus(s, 1.0, mul(s, x, x)));
}

RULE(asin)
{
    return unary_done(s, gin, mul(s, g, inv_sqrt_one_minus_sq(s, x)));
}

RULE(acos)
{
    return unary_done(s, gin, mul(s, un(s, TFM_OP_NEG, g),
                                  inv_sqrt_one_minus_sq(s, x)));
}

RULE(atan)
{
    return unary_done(s, gin, div(s, g, plus(s, 1.0, mul(s, x, x))));
}

RULE(sinh) { return unary_done(s, gin, mul(s, g, un(s, TFM_OP_COSH, x))); }

RULE(cosh) { return unary_done(s, gin, mul(s, g, un(s, TFM_OP_SINH, x))); }

/* d tanh = 1 - y^2 */
RULE(tanh)
{
    return unary_done(s, gin, mul(s, g, minus(s, 1.0, mul(s, y, y))));
}

/* d asinh(x) = 1 / cosh(y); d acosh(x) = 1 / sinh(y) */
RULE(asinh) { return unary_done(s, gin, div(s, g, un(s, TFM_OP_COSH, y))); }

RULE(acosh) { return unary_done(s, gin, div(s, g, un(s, TFM_OP_SINH, y))); }

RULE(atanh)
{
    return unary_done(s, gin, div(s, g, minus(s, 1.0, mul(s, x, x))));
}

/* d sigmoid = y * (1 - y) */
RULE(sigmoid)
{
    return unary_done(s, gin, mul(s, g, mul(s, y, minus(s, 1.0, y))));
}

/* d erf = 2/sqrt(pi) * exp(-x^2) */
#define TWO_OVER_SQRT_PI 1.1283791670955126
RULE(erf)
{
    tfm_tensor *e = un(s, TFM_OP_EXP, un(s, TFM_OP_NEG, mul(s, x, x)));
    return unary_done(s, gin, mul(s, scale(s, g, TWO_OVER_SQRT_PI), e));
}

RULE(erfc)
{
    tfm_tensor *e = un(s, TFM_OP_EXP, un(s, TFM_OP_NEG, mul(s, x, x)));
    return unary_done(s, gin, mul(s, scale(s, g, -TWO_OVER_SQRT_PI), e));
}

/* ---- activations ---- */

/* Relu and Relu6 test their output (0 < y iff 0 < x; y < 6 iff x < 6),
 * so the tape need not keep the input. */
RULE(relu)
{
    return unary_done(s, gin, tfm_gs_op2(s, TFM_OP_RELU_GRAD, g, y, NULL));
}

/* ReluGrad(x, y) is linear in x and flat in y (TF's _ReluGradGrad). An
 * input whose gradient the tape will not use is skipped. */
RULE(relu_grad)
{
    const tfm_grad_ctx *c = s->c;
    int wx = tfm_grad_wants(c, 0), wy = tfm_grad_wants(c, 1);
    gin[0] = wx ? tfm_gs_out(s, tfm_gs_op2(s, TFM_OP_RELU_GRAD, g, y, NULL))
                : NULL;
    gin[1] = wy ? tfm_gs_out(s, tfm_gs_zeros_of(s, y)) : NULL;
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 2, (unsigned)(wx | wy << 1));
}

RULE(relu6)
{
    tfm_tensor *in = tfm_gs_op2(s, TFM_OP_LOGICAL_AND,
                                cmp(s, TFM_OP_GREATER, y, 0.0),
                                cmp(s, TFM_OP_LESS, y, 6.0), NULL);
    return unary_done(s, gin, keep_where(s, in, g));
}

/* x > 0: g; else g * (y + 1) */
RULE(elu)
{
    tfm_tensor *pos = cmp(s, TFM_OP_GREATER, x, 0.0);
    return unary_done(s, gin, tfm_gs_op3(s, TFM_OP_SELECT, pos, g,
                                         mul(s, g, plus(s, 1.0, y)), NULL));
}

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717
/* y < 0: g * (y + scale * alpha); else g * scale. As TF's SeluGrad, on
 * the output: at x = 0 the slope is scale (1.0507), not scale * alpha. */
RULE(selu)
{
    tfm_tensor *neg_side = cmp(s, TFM_OP_LESS, y, 0.0);
    tfm_tensor *neg = mul(s, g, plus(s, SELU_SCALE * SELU_ALPHA, y));
    return unary_done(s, gin, tfm_gs_op3(s, TFM_OP_SELECT, neg_side, neg,
                                         scale(s, g, SELU_SCALE), NULL));
}

RULE(softplus)
{
    return unary_done(s, gin, mul(s, g, un(s, TFM_OP_SIGMOID, x)));
}

/* d x/(1+|x|) = 1/(1+|x|)^2 */
RULE(softsign)
{
    tfm_tensor *d = plus(s, 1.0, un(s, TFM_OP_ABS, x));
    return unary_done(s, gin, div(s, g, mul(s, d, d)));
}

RULE(leaky_relu)
{
    tfm_tensor *pos = cmp(s, TFM_OP_GREATER, x, 0.0);
    return unary_done(s, gin, tfm_gs_op3(s, TFM_OP_SELECT, pos, g,
                                         scale(s, g, s->c->attrs->f[0]),
                                         NULL));
}

#define INV_SQRT_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794
#define SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_C 0.044715
RULE(gelu)
{
    tfm_tensor *d;
    if (!s->c->attrs->i[0]) {
        /* 0.5 (1 + erf(x/sqrt2)) + x exp(-x^2/2) / sqrt(2 pi) */
        tfm_tensor *cdf = scale(s, plus(s, 1.0, un(s, TFM_OP_ERF,
                                                   scale(s, x, INV_SQRT_2))),
                                0.5);
        tfm_tensor *pdf = scale(s, un(s, TFM_OP_EXP,
                                      scale(s, mul(s, x, x), -0.5)),
                                INV_SQRT_2PI);
        d = add(s, cdf, mul(s, x, pdf));
    } else {
        /* u = sqrt(2/pi) (x + c x^3), t = tanh(u):
         * 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2) */
        tfm_tensor *x2 = mul(s, x, x);
        tfm_tensor *u = scale(s, mul(s, x, plus(s, 1.0,
                                                scale(s, x2, GELU_C))),
                              SQRT_2_OVER_PI);
        tfm_tensor *t = un(s, TFM_OP_TANH, u);
        tfm_tensor *du = scale(s, plus(s, 1.0, scale(s, x2, 3 * GELU_C)),
                               SQRT_2_OVER_PI);
        tfm_tensor *a = scale(s, plus(s, 1.0, t), 0.5);
        tfm_tensor *b = mul(s, scale(s, x, 0.5),
                            mul(s, minus(s, 1.0, mul(s, t, t)), du));
        d = add(s, a, b);
    }
    return unary_done(s, gin, mul(s, g, d));
}

/* Only casts between floats and complex numbers carry a gradient (as in
 * TF); complex -> float passes back a real gradient, float <- complex
 * keeps its real part. */
static inline bool
cast_diff(tfm_dtype d)
{
    return tfm_dtype_is_float(d) || tfm_dtype_is_complex(d);
}

TFM_GRAD(tfm_grad_rule_cast)
{
    if (!cast_diff(c->in[0]->dtype) || !cast_diff(c->out[0]->dtype))
        return TFM_OK;
    gin[0] = tfm_grad_cast(c->call, g[0], c->in[0]->dtype);
    return tfm_grad_finish(gin, 1, 1);
}
