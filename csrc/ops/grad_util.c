#include "grad_util.h"

#include <string.h>

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

/* A constant of t's (fully known) shape filled with v. It reads nothing
 * from t, so it is as valid under tracing (captured as a constant) as in
 * eager mode. */
static tfm_tensor *
filled(tfm_tensor *t, double v)
{
    char s[128];
    if (!tfm_shape_is_known(&t->shape)) {
        tfm_error(TFM_ERR_UNIMPLEMENTED, "gradient: a tensor of shape %s "
                  "(unknown dims) cannot be seeded yet",
                  tfm_shape_str(&t->shape, s, sizeof s));
        return NULL;
    }
    tfm_tensor *o = tfm_tensor_new(t->dtype, &t->shape, TFM_CPU);
    if (!o)
        return NULL;
    int64_t n = tfm_tensor_numel(o);
    if (n == 0)
        return o;
    size_t esz = tfm_dtype_size(o->dtype);
    char *p = tfm_tensor_data(o);
    tfm_tensor_set_f64(o, 0, v);
    /* Replicate the first element by doubling copies. */
    size_t have = esz, total = (size_t)n * esz;
    while (have < total) {
        size_t k = have < total - have ? have : total - have;
        memcpy(p + have, p, k);
        have += k;
    }
    return o;
}

tfm_tensor *
tfm_grad_ones_like(tfm_call_fn call, tfm_tensor *t)
{
    (void)call;
    return t ? filled(t, 1.0) : NULL;
}

tfm_tensor *
tfm_grad_zeros_like(tfm_call_fn call, tfm_tensor *t)
{
    (void)call;
    return t ? filled(t, 0.0) : NULL;
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
tfm_grad_unbroadcast(tfm_call_fn call, tfm_tensor *g, const tfm_tensor *x)
{
    char sa[128], sb[128];
    if (!g)
        return NULL;
    if (same_static_shape(&g->shape, &x->shape))
        return g;
    tfm_grad_drop(g);
    tfm_error(TFM_ERR_UNIMPLEMENTED, "gradient: reducing a gradient of "
              "shape %s to the broadcast input's shape %s needs the Sum op",
              tfm_shape_str(&g->shape, sa, sizeof sa),
              tfm_shape_str(&x->shape, sb, sizeof sb));
    (void)call;
    return NULL;
}

tfm_tensor *
tfm_grad_reshape_like(tfm_call_fn call, tfm_tensor *t,
                      const tfm_tensor *like)
{
    char sa[128], sb[128];
    if (!t)
        return NULL;
    if (same_static_shape(&t->shape, &like->shape))
        return tfm_grad_ref(t);
    tfm_error(TFM_ERR_UNIMPLEMENTED, "gradient: reshaping %s to %s needs "
              "the Reshape op", tfm_shape_str(&t->shape, sa, sizeof sa),
              tfm_shape_str(&like->shape, sb, sizeof sb));
    (void)call;
    return NULL;
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
