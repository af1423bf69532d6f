/* Shape rules of the random family. */
#include "random.h"

static tfm_code
shape_from_attrs(tfm_op op, const tfm_attrs *a, tfm_shape *s)
{
    if (a->n_ints > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: shape has rank %d, "
                         "more than the %d dims tfmini supports",
                         tfm_ops[op].name, a->n_ints, TFM_MAX_DIMS);
    for (int d = 0; d < a->n_ints; d++)
        if (a->ints[d] < 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: shape dim %d "
                             "is %lld; dims must be >= 0",
                             tfm_ops[op].name, d, (long long)a->ints[d]);
    *s = tfm_shape_make(a->n_ints, a->ints);
    return TFM_OK;
}

/* The sampling ops' optional input: a Philox state read at run time
 * (see ops_random.def). */
static tfm_code
check_state(tfm_op op, const tfm_meta *in, int nin)
{
    if (nin == 0)
        return TFM_OK;
    if (nin == 1 && in[0].dtype == TFM_INT64 && in[0].shape.ndim == 1 &&
        (in[0].shape.dims[0] == 3 || in[0].shape.dims[0] < 0))
        return TFM_OK;
    char shape[64] = "";
    if (nin)
        tfm_shape_str(&in[0].shape, shape, sizeof shape);
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: takes no input or one "
                     "int64 [3] Philox state, got %d inputs%s%s %s",
                     tfm_ops[op].name, nin, nin ? ", the first " : "",
                     nin ? tfm_dtype_name(in[0].dtype) : "", shape);
}

tfm_code
tfm_infer_random(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                 tfm_meta *out, int *nout)
{
    tfm_code rc = check_state(op, in, nin);
    if (rc)
        return rc;
    if (!tfm_dtype_is_float(a->dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dtype must be a "
                         "float type (float16, float32, float64), got %s",
                         tfm_ops[op].name, tfm_dtype_name(a->dtype));
    out[0].dtype = a->dtype;
    *nout = 1;
    return shape_from_attrs(op, a, &out[0].shape);
}

tfm_code
tfm_infer_random_int(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc = check_state(op, in, nin);
    if (rc)
        return rc;
    if (a->dtype != TFM_INT32 && a->dtype != TFM_INT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dtype must be int32 "
                         "or int64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(a->dtype));
    if (a->i[4] >= a->i[5])
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Need minval < "
                         "maxval: %lld >= %lld", tfm_ops[op].name,
                         (long long)a->i[4], (long long)a->i[5]);
    if (a->dtype == TFM_INT32 && (a->i[4] < INT32_MIN || a->i[5] - 1 >
                                  INT32_MAX))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: [%lld, %lld) does "
                         "not fit int32", tfm_ops[op].name,
                         (long long)a->i[4], (long long)a->i[5]);
    out[0].dtype = a->dtype;
    *nout = 1;
    return shape_from_attrs(op, a, &out[0].shape);
}

tfm_code
tfm_infer_shuffle(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                  tfm_meta *out, int *nout)
{
    (void)op; (void)nin; (void)a;
    out[0] = in[0];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_multinomial(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    char shape[64];
    tfm_shape_str(&in[0].shape, shape, sizeof shape);
    if (!tfm_dtype_is_float(in[0].dtype) || in[0].dtype == TFM_BFLOAT16)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: logits must be "
                         "float16, float32 or float64, got %s %s",
                         tfm_ops[op].name, tfm_dtype_name(in[0].dtype),
                         shape);
    if (in[0].shape.ndim != 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: logits should be a "
                         "matrix, got shape %s", tfm_ops[op].name, shape);
    if (in[0].shape.dims[1] == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num_classes should "
                         "be positive, got 0", tfm_ops[op].name);
    if (a->i[4] < 0 || a->i[4] > INT32_MAX)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num_samples should "
                         "be non-negative, got %lld", tfm_ops[op].name,
                         (long long)a->i[4]);
    if (a->dtype != TFM_INT32 && a->dtype != TFM_INT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: output_dtype must "
                         "be int32 or int64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(a->dtype));
    int64_t dims[2] = {in[0].shape.dims[0], a->i[4]};
    out[0].dtype = a->dtype;
    out[0].shape = tfm_shape_make(2, dims);
    *nout = 1;
    return TFM_OK;
}
