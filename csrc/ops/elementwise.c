#include "elementwise.h"

#include "complex.h"

static tfm_code
same_dtype(tfm_op op, const tfm_meta *in, int nin)
{
    if (nin == 2 && in[0].dtype != in[1].dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: inputs must have the same dtype, got %s and "
                         "%s (tfmini, like TensorFlow, does not promote; "
                         "use tf.cast)", tfm_ops[op].name,
                         tfm_dtype_name(in[0].dtype),
                         tfm_dtype_name(in[1].dtype));
    return TFM_OK;
}

static tfm_code
elementwise(tfm_op op, const tfm_meta *in, int nin, tfm_dtype out_dtype,
            tfm_meta *out, int *nout)
{
    *nout = 1;
    out[0].dtype = out_dtype;
    if (nin == 1) {
        out[0].shape = in[0].shape;
        return TFM_OK;
    }
    return tfm_shape_broadcast(tfm_ops[op].name, &in[0].shape,
                               &in[1].shape, &out[0].shape);
}

static tfm_code
bad_dtype(tfm_op op, tfm_dtype d, const char *want)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects %s inputs, got "
                     "%s", tfm_ops[op].name, want, tfm_dtype_name(d));
}

/* Complex inputs go only to the ops with complex kernels (complex.c). */
static tfm_code
complex_ok(tfm_op op, tfm_dtype d)
{
    if (tfm_dtype_is_complex(d) && !tfm_op_takes_complex(op))
        return bad_dtype(op, d, "real (not complex)");
    return TFM_OK;
}

/* Equal dtypes, and not bool. */
static tfm_code
same_numeric(tfm_op op, const tfm_meta *in, int nin)
{
    tfm_code rc = same_dtype(op, in, nin);
    if (!rc && in[0].dtype == TFM_BOOL)
        rc = bad_dtype(op, in[0].dtype, "numeric");
    if (!rc)
        rc = complex_ok(op, in[0].dtype);
    return rc;
}

tfm_code
tfm_infer_binary(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                 tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = same_numeric(op, in, nin);
    if (rc)
        return rc;
    return elementwise(op, in, nin, in[0].dtype, out, nout);
}

tfm_code
tfm_infer_same_shape(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = same_numeric(op, in, nin);
    if (rc)
        return rc;
    const tfm_shape *s0 = &in[0].shape, *s1 = &in[1].shape;
    int ok = s0->ndim == s1->ndim;
    tfm_shape r = *s0;
    /* An unknown dim (tracing) matches any; the known one wins. */
    for (int d = 0; ok && d < s0->ndim; d++) {
        if (s0->dims[d] < 0)
            r.dims[d] = s1->dims[d];
        else if (s1->dims[d] >= 0 && s1->dims[d] != s0->dims[d])
            ok = 0;
    }
    if (!ok) {
        char b0[128], b1[128];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: inputs must have the same shape, got %s "
                         "and %s (%s)", tfm_ops[op].name,
                         tfm_shape_str(s0, b0, sizeof b0),
                         tfm_shape_str(s1, b1, sizeof b1),
                         tfm_dtype_name(in[0].dtype));
    }
    *nout = 1;
    out[0].dtype = in[0].dtype;
    out[0].shape = r;
    return TFM_OK;
}

static tfm_code
not_float(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects floating-point "
                     "inputs (float16, float32, float64), got %s; use "
                     "tf.cast to convert", tfm_ops[op].name,
                     tfm_dtype_name(d));
}

tfm_code
tfm_infer_binary_float(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = same_dtype(op, in, nin);
    if (rc)
        return rc;
    if (!tfm_dtype_is_float(in[0].dtype) &&
        !(tfm_dtype_is_complex(in[0].dtype) && tfm_op_takes_complex(op)))
        return not_float(op, in[0].dtype);
    return elementwise(op, in, nin, in[0].dtype, out, nout);
}

tfm_code
tfm_infer_compare(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = same_dtype(op, in, nin);
    if (rc)
        return rc;
    if (in[0].dtype == TFM_BOOL && op != TFM_OP_EQUAL &&
        op != TFM_OP_NOT_EQUAL)
        return bad_dtype(op, in[0].dtype, "numeric");
    if ((rc = complex_ok(op, in[0].dtype)))
        return rc;
    return elementwise(op, in, nin, TFM_BOOL, out, nout);
}

tfm_code
tfm_infer_logical(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    for (int i = 0; i < nin; i++)
        if (in[i].dtype != TFM_BOOL)
            return bad_dtype(op, in[i].dtype, "bool");
    return elementwise(op, in, nin, TFM_BOOL, out, nout);
}

tfm_code
tfm_infer_bitwise(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = same_dtype(op, in, nin);
    if (rc)
        return rc;
    if (!tfm_dtype_is_int(in[0].dtype))
        return bad_dtype(op, in[0].dtype, "integer");
    return elementwise(op, in, nin, in[0].dtype, out, nout);
}

tfm_code
tfm_infer_unary(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                tfm_meta *out, int *nout)
{
    (void)a;
    if (in[0].dtype == TFM_BOOL)
        return bad_dtype(op, in[0].dtype, "numeric");
    tfm_code rc = complex_ok(op, in[0].dtype);
    if (rc)
        return rc;
    return elementwise(op, in, nin, in[0].dtype, out, nout);
}

tfm_code
tfm_infer_unary_float(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    if (!tfm_dtype_is_float(in[0].dtype) &&
        !(tfm_dtype_is_complex(in[0].dtype) && tfm_op_takes_complex(op)))
        return not_float(op, in[0].dtype);
    return elementwise(op, in, nin, in[0].dtype, out, nout);
}

tfm_code
tfm_infer_float_pred(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    if (!tfm_dtype_is_float(in[0].dtype))
        return not_float(op, in[0].dtype);
    return elementwise(op, in, nin, TFM_BOOL, out, nout);
}

tfm_code
tfm_infer_cast(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)op; (void)nin;
    if ((unsigned)a->dtype >= TFM_DTYPE_COUNT)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "Cast: invalid dtype %d",
                         (int)a->dtype);
    out[0].dtype = a->dtype;
    out[0].shape = in[0].shape;
    *nout = 1;
    return TFM_OK;
}
