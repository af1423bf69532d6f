#include "grad_util.h"

#include <string.h>

tfm_tensor *
tfm_grad_op0(tfm_call_fn call, tfm_op op, const tfm_attrs *a)
{
    tfm_tensor *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (call(op, NULL, 0, a, out, &n))
        return NULL;
    for (int i = 1; i < n; i++)
        tfm_tensor_decref(out[i]);
    return out[0];
}

tfm_tensor *
tfm_grad_op1(tfm_call_fn call, tfm_op op, tfm_tensor *x, const tfm_attrs *a)
{
    if (!x)
        return NULL;
    tfm_tensor *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (call(op, &x, 1, a, out, &n))
        return NULL;
    for (int i = 1; i < n; i++)
        tfm_tensor_decref(out[i]);
    return out[0];
}

tfm_tensor *
tfm_grad_op2(tfm_call_fn call, tfm_op op, tfm_tensor *x, tfm_tensor *y,
             const tfm_attrs *a)
{
    if (!x || !y)
        return NULL;
    tfm_tensor *in[2] = {x, y}, *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (call(op, in, 2, a, out, &n))
        return NULL;
    for (int i = 1; i < n; i++)
        tfm_tensor_decref(out[i]);
    return out[0];
}

tfm_tensor *
tfm_grad_op3(tfm_call_fn call, tfm_op op, tfm_tensor *x, tfm_tensor *y,
             tfm_tensor *z, const tfm_attrs *a)
{
    if (!x || !y || !z)
        return NULL;
    tfm_tensor *in[3] = {x, y, z}, *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (call(op, in, 3, a, out, &n))
        return NULL;
    for (int i = 1; i < n; i++)
        tfm_tensor_decref(out[i]);
    return out[0];
}

tfm_tensor *
tfm_grad_ones_like(tfm_call_fn call, tfm_tensor *t)
{
    return tfm_grad_op1(call, TFM_OP_ONES_LIKE, t, NULL);
}

tfm_tensor *
tfm_grad_zeros_like(tfm_call_fn call, tfm_tensor *t)
{
    return tfm_grad_op1(call, TFM_OP_ZEROS_LIKE, t, NULL);
}

tfm_tensor *
tfm_grad_scalar(tfm_call_fn call, tfm_dtype dtype, double v)
{
    (void)call;
    return tfm_tensor_scalar(dtype, v);
}

tfm_tensor *
tfm_grad_cast(tfm_call_fn call, tfm_tensor *t, tfm_dtype dtype)
{
    if (!t)
        return NULL;
    if (t->dtype == dtype)
        return tfm_grad_ref(t);
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = dtype;
    return tfm_grad_op1(call, TFM_OP_CAST, t, &a);
}

static int
same_static_shape(const tfm_shape *a, const tfm_shape *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i] && a->dims[i] >= 0 && b->dims[i] >= 0)
            return 0;
    return 1;
}

tfm_tensor *
tfm_grad_sum(tfm_call_fn call, tfm_tensor *t, const int *axes, int naxes,
             int keepdims)
{
    if (!t)
        return NULL;
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = naxes;
    for (int i = 0; i < naxes; i++)
        a.ints[i] = axes[i];
    a.i[0] = keepdims;
    return tfm_grad_op1(call, TFM_OP_SUM, t, &a);
}

/* Broadcasting right-aligns shapes: g's leading extra dims are summed
 * away, and so are the dims where x has size 1 and g does not (kept, so
 * no reshape is needed and unknown dims stay unknown). */
tfm_tensor *
tfm_grad_unbroadcast(tfm_call_fn call, tfm_tensor *g, const tfm_tensor *x)
{
    if (!g)
        return NULL;
    if (same_static_shape(&g->shape, &x->shape))
        return g;
    int lead = g->shape.ndim - x->shape.ndim;
    int kept[TFM_MAX_DIMS], nkept = 0, dropped[TFM_MAX_DIMS];
    if (lead < 0) {
        char sa[128], sb[128];
        tfm_grad_drop(g);
        tfm_error(TFM_ERR_INTERNAL, "gradient: a gradient of shape %s "
                  "cannot belong to an input of shape %s",
                  tfm_shape_str(&g->shape, sa, sizeof sa),
                  tfm_shape_str(&x->shape, sb, sizeof sb));
        return NULL;
    }
    for (int d = 0; d < x->shape.ndim; d++)
        if (x->shape.dims[d] == 1 && g->shape.dims[lead + d] != 1)
            kept[nkept++] = lead + d;
    tfm_tensor *t = g;
    if (nkept) {
        t = tfm_grad_sum(call, g, kept, nkept, 1);
        tfm_grad_drop(g);
    }
    if (lead && t) {
        for (int d = 0; d < lead; d++)
            dropped[d] = d;
        tfm_tensor *s = tfm_grad_sum(call, t, dropped, lead, 0);
        tfm_grad_drop(t);
        t = s;
    }
    return t;
}

tfm_tensor *
tfm_grad_reshape(tfm_call_fn call, tfm_tensor *t, const tfm_shape *shape)
{
    char sa[128], sb[128];
    if (!t)
        return NULL;
    if (same_static_shape(&t->shape, shape))
        return tfm_grad_ref(t);
    tfm_attrs a;
    tfm_attrs_init(&a);
    int unknown = 0;
    a.n_ints = shape->ndim;
    for (int d = 0; d < shape->ndim; d++) {
        a.ints[d] = shape->dims[d];
        unknown += shape->dims[d] < 0;
    }
    if (unknown > 1) {
        tfm_error(TFM_ERR_UNIMPLEMENTED, "gradient: cannot reshape %s to "
                  "%s, which has more than one unknown dim",
                  tfm_shape_str(&t->shape, sa, sizeof sa),
                  tfm_shape_str(shape, sb, sizeof sb));
        return NULL;
    }
    return tfm_grad_op1(call, TFM_OP_RESHAPE, t, &a);
}

tfm_tensor *
tfm_grad_reshape_like(tfm_call_fn call, tfm_tensor *t,
                      const tfm_tensor *like)
{
    return tfm_grad_reshape(call, t, &like->shape);
}

/* Per thread: another thread's gradient may run while a rule of this
 * one waits in a big kernel (without the GIL), and its restore would
 * hand this rule a stale mask. */
static _Thread_local const tfm_grad_ctx *needed_ctx;
static _Thread_local uint64_t needed_mask;

void
tfm_grad_set_needed(const tfm_grad_ctx *c, uint64_t mask,
                    const tfm_grad_ctx **saved_ctx, uint64_t *saved_mask)
{
    *saved_ctx = needed_ctx;
    *saved_mask = needed_mask;
    needed_ctx = c;
    needed_mask = mask;
}

void
tfm_grad_restore_needed(const tfm_grad_ctx *saved_ctx, uint64_t saved_mask)
{
    needed_ctx = saved_ctx;
    needed_mask = saved_mask;
}

int
tfm_grad_wants(const tfm_grad_ctx *c, int k)
{
    if (c != needed_ctx || k >= 64)
        return 1;
    return (int)(needed_mask >> k & 1);
}

tfm_code
tfm_grad_finish(tfm_tensor **gin, int nin, unsigned need)
{
    int ok = 1;
    for (int k = 0; k < nin; k++)
        if ((need >> k & 1) && !gin[k])
            ok = 0;
    if (ok)
        return TFM_OK;
    for (int k = 0; k < nin; k++) {
        tfm_grad_drop(gin[k]);
        gin[k] = NULL;
    }
    tfm_code rc = tfm_error_code();
    return rc ? rc : tfm_error(TFM_ERR_INTERNAL, "a gradient rule failed "
                               "without an error");
}

/* ---- scopes ---- */

tfm_tensor *
tfm_gs_keep(tfm_grad_scope *s, tfm_tensor *t)
{
    if (!t)
        return NULL;
    if (s->n == TFM_GRAD_SCOPE_MAX) {
        tfm_tensor_decref(t);
        tfm_error(TFM_ERR_INTERNAL, "%s: gradient rule uses more than %d "
                  "temporaries", tfm_ops[s->c->op].name,
                  TFM_GRAD_SCOPE_MAX);
        return NULL;
    }
    s->t[s->n++] = t;
    return t;
}

void
tfm_gs_end(tfm_grad_scope *s)
{
    while (s->n > 0)
        tfm_tensor_decref(s->t[--s->n]);
}

tfm_tensor *
tfm_gs_op0(tfm_grad_scope *s, tfm_op op, const tfm_attrs *a)
{
    return tfm_gs_keep(s, tfm_grad_op0(s->c->call, op, a));
}

tfm_tensor *
tfm_gs_op1(tfm_grad_scope *s, tfm_op op, tfm_tensor *x, const tfm_attrs *a)
{
    return tfm_gs_keep(s, tfm_grad_op1(s->c->call, op, x, a));
}

tfm_tensor *
tfm_gs_op2(tfm_grad_scope *s, tfm_op op, tfm_tensor *x, tfm_tensor *y,
           const tfm_attrs *a)
{
    return tfm_gs_keep(s, tfm_grad_op2(s->c->call, op, x, y, a));
}

tfm_tensor *
tfm_gs_op3(tfm_grad_scope *s, tfm_op op, tfm_tensor *x, tfm_tensor *y,
           tfm_tensor *z, const tfm_attrs *a)
{
    return tfm_gs_keep(s, tfm_grad_op3(s->c->call, op, x, y, z, a));
}

tfm_tensor *
tfm_gs_scalar(tfm_grad_scope *s, const tfm_tensor *like, double v)
{
    if (!like)
        return NULL;
    return tfm_gs_keep(s, tfm_grad_scalar(s->c->call, like->dtype, v));
}

tfm_tensor *
tfm_gs_zeros_like(tfm_grad_scope *s, tfm_tensor *t)
{
    return tfm_gs_keep(s, tfm_grad_zeros_like(s->c->call, t));
}

tfm_tensor *
tfm_gs_zeros_of(tfm_grad_scope *s, tfm_tensor *t)
{
    if (!t)
        return NULL;
    if (!tfm_shape_is_known(&t->shape))
        return tfm_gs_zeros_like(s, t);
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = t->shape.ndim;
    for (int d = 0; d < t->shape.ndim; d++)
        a.ints[d] = t->shape.dims[d];
    return tfm_gs_op1(s, TFM_OP_FILL, tfm_gs_scalar(s, t, 0.0), &a);
}

tfm_tensor *
tfm_gs_ones_like(tfm_grad_scope *s, tfm_tensor *t)
{
    return tfm_gs_keep(s, tfm_grad_ones_like(s->c->call, t));
}

tfm_tensor *
tfm_gs_sum(tfm_grad_scope *s, tfm_tensor *t, const int *axes, int naxes,
           int keepdims)
{
    return tfm_gs_keep(s, tfm_grad_sum(s->c->call, t, axes, naxes,
                                       keepdims));
}

tfm_tensor *
tfm_gs_reshape(tfm_grad_scope *s, tfm_tensor *t, const tfm_shape *shape)
{
    return tfm_gs_keep(s, tfm_grad_reshape(s->c->call, t, shape));
}

tfm_tensor *
tfm_gs_cast(tfm_grad_scope *s, tfm_tensor *t, tfm_dtype d)
{
    return tfm_gs_keep(s, tfm_grad_cast(s->c->call, t, d));
}

tfm_tensor *
tfm_gs_unbroadcast(tfm_grad_scope *s, tfm_tensor *t, const tfm_tensor *x)
{
    return tfm_grad_unbroadcast(s->c->call, tfm_grad_ref(t), x);
}
