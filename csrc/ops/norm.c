/* Shape rules of the fused normalization ops (rows in ops_nn.def). */
#include "nn.h"

static tfm_code
same_float(tfm_op op, const tfm_meta *in, int nin, const char *const *what)
{
    const char *name = tfm_ops[op].name;
    if (!tfm_dtype_is_float(in[0].dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be float16, "
                         "bfloat16, float32 or float64, got %s", name,
                         what[0], tfm_dtype_name(in[0].dtype));
    for (int k = 1; k < nin; k++)
        if (in[k].dtype != in[0].dtype)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s and %s must "
                             "have the same dtype, got %s and %s", name,
                             what[0], what[k], tfm_dtype_name(in[0].dtype),
                             tfm_dtype_name(in[k].dtype));
    return TFM_OK;
}

static int
dims_agree(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

static int
shapes_agree(const tfm_shape *a, const tfm_shape *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (!dims_agree(a->dims[d], b->dims[d]))
            return 0;
    return 1;
}

/* x of rank >= 1; each of in[k] (k in params) a vector of x's last dim. */
static tfm_code
check_params(tfm_op op, const tfm_meta *x, const char *xname,
             const tfm_meta *in, const int *params, int np,
             const char *const *what)
{
    const char *name = tfm_ops[op].name;
    char sx[160], sp[160];
    if (x->shape.ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must have rank "
                         ">= 1, got a scalar", name, xname);
    int64_t n = x->shape.dims[x->shape.ndim - 1];
    for (int j = 0; j < np; j++) {
        const tfm_shape *p = &in[params[j]].shape;
        if (p->ndim != 1 || !dims_agree(p->dims[0], n))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be a "
                             "vector of the normalized (last) dim of %s, got "
                             "%s %s and %s %s", name, what[params[j]],
                             xname, xname,
                             tfm_shape_str(&x->shape, sx, sizeof sx),
                             what[params[j]],
                             tfm_shape_str(p, sp, sizeof sp));
    }
    return TFM_OK;
}

static tfm_code
check_epsilon(tfm_op op, const tfm_attrs *a)
{
    if (!(a->f[0] >= 0))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: epsilon must be a "
                         "number >= 0, got %g", tfm_ops[op].name, a->f[0]);
    return TFM_OK;
}

tfm_code
tfm_infer_layer_norm(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    static const char *const what[] = {"x", "gamma", "beta"};
    static const int params[] = {1, 2};
    tfm_code rc = same_float(op, in, nin, what);
    if (!rc)
        rc = check_params(op, &in[0], "x", in, params, 2, what);
    if (!rc)
        rc = check_epsilon(op, a);
    if (rc)
        return rc;
    out[0] = in[0];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_layer_norm_grad(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout)
{
    static const char *const what[] = {"dy", "x", "gamma"};
    static const int params[] = {2};
    tfm_code rc = same_float(op, in, nin, what);
    if (!rc)
        rc = check_params(op, &in[1], "x", in, params, 1, what);
    if (!rc)
        rc = check_epsilon(op, a);
    if (rc)
        return rc;
    char s0[160], s1[160];
    if (!shapes_agree(&in[0].shape, &in[1].shape))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dy and x must have "
                         "the same shape, got %s and %s", tfm_ops[op].name,
                         tfm_shape_str(&in[0].shape, s0, sizeof s0),
                         tfm_shape_str(&in[1].shape, s1, sizeof s1));
    out[0] = in[1];
    out[1] = in[2];
    out[2] = in[2];
    *nout = 3;
    return TFM_OK;
}

tfm_code
tfm_infer_softmax_grad(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    static const char *const what[] = {"softmax", "grad"};
    const char *name = tfm_ops[op].name;
    tfm_code rc = same_float(op, in, nin, what);
    if (rc)
        return rc;
    char s0[160], s1[160];
    if (!shapes_agree(&in[0].shape, &in[1].shape))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: softmax and grad "
                         "must have the same shape, got %s and %s", name,
                         tfm_shape_str(&in[0].shape, s0, sizeof s0),
                         tfm_shape_str(&in[1].shape, s1, sizeof s1));
    if (in[0].shape.ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: softmax must have "
                         "rank >= 1, got a scalar", name);
    int axis;
    rc = tfm_shape_axis(name, a->i[0], in[0].shape.ndim, &axis);
    if (rc)
        return rc;
    out[0] = in[0];
    for (int d = 0; d < out[0].shape.ndim; d++)
        if (out[0].shape.dims[d] < 0)
            out[0].shape.dims[d] = in[1].shape.dims[d];
    *nout = 1;
    return TFM_OK;
}
