/* Gradients of the elementwise family (ops_elementwise.def). */
#include "grad_util.h"
#include "grads.h"

/* Shorthands over the ctx's call function. */
static inline tfm_tensor *
op1(const tfm_grad_ctx *c, tfm_op op, tfm_tensor *x)
{
    return tfm_grad_op1(c->call, op, x, NULL);
}

static inline tfm_tensor *
op2(const tfm_grad_ctx *c, tfm_op op, tfm_tensor *x, tfm_tensor *y)
{
    return tfm_grad_op2(c->call, op, x, y, NULL);
}

/* unbroadcast(t, input k), stealing t. */
static inline tfm_tensor *
to_input(const tfm_grad_ctx *c, tfm_tensor *t, int k)
{
    return tfm_grad_unbroadcast(c->call, t, c->in[k]);
}

TFM_GRAD(tfm_grad_rule_add)
{
    gin[0] = to_input(c, tfm_grad_ref(g[0]), 0);
    gin[1] = to_input(c, tfm_grad_ref(g[0]), 1);
    return tfm_grad_finish(gin, 2, 3);
}

TFM_GRAD(tfm_grad_rule_sub)
{
    gin[0] = to_input(c, tfm_grad_ref(g[0]), 0);
    gin[1] = to_input(c, op1(c, TFM_OP_NEG, g[0]), 1);
    return tfm_grad_finish(gin, 2, 3);
}

TFM_GRAD(tfm_grad_rule_mul)
{
    gin[0] = to_input(c, op2(c, TFM_OP_MUL, g[0], c->in[1]), 0);
    gin[1] = to_input(c, op2(c, TFM_OP_MUL, c->in[0], g[0]), 1);
    return tfm_grad_finish(gin, 2, 3);
}

TFM_GRAD(tfm_grad_rule_neg)
{
    gin[0] = op1(c, TFM_OP_NEG, g[0]);
    return tfm_grad_finish(gin, 1, 1);
}

/* Only float -> float casts carry a gradient (as in TF). */
TFM_GRAD(tfm_grad_rule_cast)
{
    if (!tfm_dtype_is_float(c->in[0]->dtype) ||
        !tfm_dtype_is_float(c->out[0]->dtype))
        return TFM_OK;
    gin[0] = tfm_grad_cast(c->call, g[0], c->in[0]->dtype);
    return tfm_grad_finish(gin, 1, 1);
}
