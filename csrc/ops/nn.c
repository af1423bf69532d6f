/* Shape rules of the nn family. */
#include "nn.h"

static tfm_code
float_logits(tfm_op op, const tfm_meta *m, const char *what)
{
    if (!tfm_dtype_is_float(m->dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be float16, "
                         "float32 or float64, got %s", tfm_ops[op].name,
                         what, tfm_dtype_name(m->dtype));
    return TFM_OK;
}

tfm_code
tfm_infer_softmax(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                  tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = float_logits(op, &in[0], "logits");
    if (rc)
        return rc;
    if (in[0].shape.ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: logits must have "
                         "rank >= 1, got a scalar", tfm_ops[op].name);
    int axis;
    rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], in[0].shape.ndim, &axis);
    if (rc)
        return rc;
    out[0] = in[0];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_sparse_xent(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    const char *name = tfm_ops[op].name;
    tfm_code rc = float_logits(op, &in[0], "logits");
    if (rc)
        return rc;
    if (in[1].dtype != TFM_INT32 && in[1].dtype != TFM_INT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: labels must be int32 "
                         "or int64, got %s", name,
                         tfm_dtype_name(in[1].dtype));
    const tfm_shape *f = &in[0].shape, *l = &in[1].shape;
    char sf[160], sl[160];
    if (f->ndim == 0 || l->ndim != f->ndim - 1)
        return tfm_error(TFM_ERR_VALUE, "%s: Rank mismatch: Rank of labels "
                         "(received %d) should equal rank of logits minus 1 "
                         "(received %d); labels %s, logits %s", name,
                         l->ndim, f->ndim, tfm_shape_str(l, sl, sizeof sl),
                         tfm_shape_str(f, sf, sizeof sf));
    for (int d = 0; d < l->ndim; d++)
        if (l->dims[d] >= 0 && f->dims[d] >= 0 && l->dims[d] != f->dims[d])
            return tfm_error(TFM_ERR_VALUE, "%s: Shape mismatch: The shape "
                             "of labels (received %s) should equal the shape "
                             "of logits except for the last dimension "
                             "(received %s).", name,
                             tfm_shape_str(l, sl, sizeof sl),
                             tfm_shape_str(f, sf, sizeof sf));
    out[0].dtype = in[0].dtype;
    out[0].shape = *l;
    for (int d = 0; d < l->ndim; d++)      /* known wherever either is */
        if (out[0].shape.dims[d] < 0)
            out[0].shape.dims[d] = f->dims[d];
    out[1] = in[0];
    *nout = 2;
    return TFM_OK;
}

tfm_code
tfm_infer_xent(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)nin;
    const char *name = tfm_ops[op].name;
    tfm_code rc = float_logits(op, &in[0], "logits");
    if (rc)
        return rc;
    if (in[1].dtype != in[0].dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: labels and logits "
                         "must have the same dtype, got %s and %s", name,
                         tfm_dtype_name(in[1].dtype),
                         tfm_dtype_name(in[0].dtype));
    const tfm_shape *f = &in[0].shape, *l = &in[1].shape;
    char sf[160], sl[160];
    int same = f->ndim == l->ndim;
    for (int d = 0; same && d < f->ndim; d++)
        same = f->dims[d] < 0 || l->dims[d] < 0 || f->dims[d] == l->dims[d];
    if (!same)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: logits and labels "
                         "must have the same shape, got logits %s and "
                         "labels %s", name, tfm_shape_str(f, sf, sizeof sf),
                         tfm_shape_str(l, sl, sizeof sl));
    if (f->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: logits must have "
                         "rank >= 1, got a scalar", name);
    int axis;
    rc = tfm_shape_axis(name, a->i[0], f->ndim, &axis);
    if (rc)
        return rc;
    tfm_shape full = *f;
    for (int d = 0; d < f->ndim; d++)
        if (full.dims[d] < 0)
            full.dims[d] = l->dims[d];
    out[0].dtype = in[0].dtype;
    out[0].shape.ndim = f->ndim - 1;
    for (int d = 0, k = 0; d < f->ndim; d++)
        if (d != axis)
            out[0].shape.dims[k++] = full.dims[d];
    out[1].dtype = in[0].dtype;
    out[1].shape = full;
    *nout = 2;
    return TFM_OK;
}
