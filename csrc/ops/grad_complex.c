/* Gradients with complex numbers, by TF's convention: for a real loss L
 * and complex z = x + iy, the gradient is dL/dx + i dL/dy, so a
 * holomorphic f passes g * conj(f'(z)) back (TF's math_grad.py writes
 * grad * conj(y) for Mul, grad / conj(y) for Div, and so on).
 *
 * Note [Complex gradients]: the real rules of the holomorphic ops are
 * written as g * f'(x, y) with ops that are holomorphic themselves, so
 * instead of a second copy of each rule the tape runs the real one as
 * conj(rule(conj(g))) = g * conj(f'): see tfm_grad_complex_run. Only Pow
 * needs its own rule (the real one masks x <= 0, an ordering complex
 * numbers lack). The complex family's own ops (Real, Imag, Complex,
 * Conj, ComplexAbs, Angle) are not holomorphic and have rules below. */
#include "grad_complex.h"

#include "grad_util.h"
#include "grads.h"

static tfm_tensor *
op1(tfm_grad_scope *s, tfm_op op, tfm_tensor *x)
{
    return tfm_gs_op1(s, op, x, NULL);
}

static tfm_tensor *
op2(tfm_grad_scope *s, tfm_op op, tfm_tensor *x, tfm_tensor *y)
{
    return tfm_gs_op2(s, op, x, y, NULL);
}

static tfm_code
one(tfm_grad_scope *s, tfm_tensor **gin, tfm_tensor *d)
{
    gin[0] = tfm_gs_out(s, d);
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 1, 1);
}

/* g real -> complex(g, 0). */
static tfm_tensor *
as_complex(tfm_grad_scope *s, tfm_tensor *g)
{
    return op2(s, TFM_OP_COMPLEX, g, tfm_gs_zeros_like(s, g));
}

TFM_GRAD(tfm_grad_rule_real)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    return one(&s, gin, as_complex(&s, g[0]));
}

TFM_GRAD(tfm_grad_rule_imag)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    return one(&s, gin, op2(&s, TFM_OP_COMPLEX, tfm_gs_zeros_like(&s, g[0]),
                            g[0]));
}

TFM_GRAD(tfm_grad_rule_conj)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    return one(&s, gin, op1(&s, TFM_OP_CONJ, g[0]));
}

/* Complex(re, im): re gets real(g), im gets imag(g), each reduced to its
 * input's shape. */
TFM_GRAD(tfm_grad_rule_complex)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_unbroadcast(&s, op1(&s, TFM_OP_REAL, g[0]), c->in[0]);
    gin[1] = tfm_gs_unbroadcast(&s, op1(&s, TFM_OP_IMAG, g[0]), c->in[1]);
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, 3);
}

/* |z|: g * z / |z|, 0 at z = 0 (TF's div_no_nan). */
TFM_GRAD(tfm_grad_rule_complex_abs)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *num = op2(&s, TFM_OP_MUL, as_complex(&s, g[0]), c->in[0]);
    return one(&s, gin, op2(&s, TFM_OP_DIV_NO_NAN, num,
                            as_complex(&s, c->out[0])));
}

/* angle(z) = atan2(y, x): -g / complex(y, x), as TF's _AngleGrad. */
TFM_GRAD(tfm_grad_rule_angle)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *z = c->in[0];
    tfm_tensor *w = op2(&s, TFM_OP_COMPLEX, op1(&s, TFM_OP_IMAG, z),
                        op1(&s, TFM_OP_REAL, z));
    tfm_tensor *d = op2(&s, TFM_OP_DIV, as_complex(&s, g[0]), w);
    return one(&s, gin, op1(&s, TFM_OP_NEG, d));
}

/* Pow in the real form of Note [Complex gradients]: g*y*x^(y-1) and
 * g*z*log(x), the latter 0 where x == 0 (TF's mask). */
static tfm_code
pow_rule(const tfm_grad_ctx *c, tfm_tensor *const *g, tfm_tensor **gin)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0], *y = c->in[1], *z = c->out[0];
    tfm_tensor *ym1 = op2(&s, TFM_OP_SUB, y, tfm_gs_scalar(&s, y, 1.0));
    tfm_tensor *dx = op2(&s, TFM_OP_MUL, g[0],
                         op2(&s, TFM_OP_MUL, y,
                             op2(&s, TFM_OP_POW, x, ym1)));
    tfm_tensor *zero = tfm_gs_zeros_like(&s, x);
    tfm_tensor *nz = op2(&s, TFM_OP_NOT_EQUAL, x, zero);
    tfm_tensor *safe = tfm_gs_op3(&s, TFM_OP_SELECT, nz, x,
                                  tfm_gs_ones_like(&s, x), NULL);
    tfm_tensor *logx = tfm_gs_op3(&s, TFM_OP_SELECT, nz,
                                  op1(&s, TFM_OP_LOG, safe), zero, NULL);
    tfm_tensor *dy = op2(&s, TFM_OP_MUL, g[0], op2(&s, TFM_OP_MUL, z, logx));
    gin[0] = tfm_gs_unbroadcast(&s, dx, x);
    gin[1] = tfm_gs_unbroadcast(&s, dy, y);
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, 3);
}

static bool
holomorphic(tfm_op op)
{
    switch (op) {
    case TFM_OP_MUL: case TFM_OP_DIV: case TFM_OP_DIV_NO_NAN:
    case TFM_OP_POW: case TFM_OP_SQUARE:
    case TFM_OP_EXP: case TFM_OP_EXPM1: case TFM_OP_LOG: case TFM_OP_LOG1P:
    case TFM_OP_SQRT: case TFM_OP_RSQRT: case TFM_OP_RECIPROCAL:
    case TFM_OP_SIN: case TFM_OP_COS: case TFM_OP_TAN:
    case TFM_OP_SINH: case TFM_OP_COSH: case TFM_OP_TANH:
    case TFM_OP_SIGMOID: case TFM_OP_PROD: case TFM_OP_CUMPROD:
    case TFM_OP_MATMUL:
        return true;
    default:
        return false;
    }
}

bool
tfm_grad_complex_wraps(tfm_op op, tfm_tensor *const *in, int nin)
{
    if (!holomorphic(op))
        return false;
    for (int k = 0; k < nin; k++)
        if (tfm_dtype_is_complex(in[k]->dtype))
            return true;
    return false;
}

/* conj(t), or a new reference to t when it is real or NULL. */
static tfm_tensor *
conj_of(const tfm_grad_ctx *c, tfm_tensor *t)
{
    if (!t || !tfm_dtype_is_complex(t->dtype))
        return tfm_grad_ref(t);
    return tfm_grad_op1(c->call, TFM_OP_CONJ, t, NULL);
}

tfm_code
tfm_grad_complex_run(const tfm_grad_ctx *c, tfm_grad_fn rule,
                     tfm_tensor *const *g, tfm_tensor **gin)
{
    tfm_tensor *cg[TFM_COMPLEX_GRAD_MAX_OUT] = {NULL};
    int nout = c->nout;
    if (nout > TFM_COMPLEX_GRAD_MAX_OUT)
        return tfm_error(TFM_ERR_INTERNAL, "%s: too many outputs for the "
                         "complex gradient", tfm_ops[c->op].name);
    tfm_code rc = TFM_OK;
    for (int k = 0; k < nout && !rc; k++)
        if (g[k] && !(cg[k] = conj_of(c, g[k])))
            rc = tfm_error_code();
    if (!rc)
        rc = c->op == TFM_OP_POW ? pow_rule(c, cg, gin) : rule(c, cg, gin);
    for (int k = 0; k < nout; k++)
        tfm_grad_drop(cg[k]);
    for (int k = 0; k < c->nin && !rc; k++) {
        tfm_tensor *t = conj_of(c, gin[k]);
        if (gin[k] && !t)
            rc = tfm_error_code();
        tfm_grad_drop(gin[k]);
        gin[k] = t;
    }
    if (rc)
        for (int k = 0; k < c->nin; k++) {
            tfm_grad_drop(gin[k]);
            gin[k] = NULL;
        }
    return rc;
}
