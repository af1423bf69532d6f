/* Shape rules of the ops that make tensors from attributes: Fill, Range,
 * LinSpace, OneHot. */
#include "shape.h"

#include <math.h>
#include <stdio.h>

#define NAME (tfm_ops[op].name)

static void
one_output(tfm_meta *out, int *nout, tfm_dtype d, const tfm_shape *s)
{
    out[0].dtype = d;
    out[0].shape = *s;
    *nout = 1;
}

tfm_code
tfm_infer_fill(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    char t1[160];
    if (in[0].shape.ndim != 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: value must be a "
                         "scalar, got shape %s", NAME,
                         tfm_shape_str(&in[0].shape, t1, sizeof t1));
    if (a->n_ints > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dims has %d "
                         "entries, more than %d", NAME, a->n_ints,
                         TFM_MAX_DIMS);
    tfm_shape s = tfm_shape_make(a->n_ints, a->ints);
    for (int d = 0; d < s.ndim; d++) {
        if (s.dims[d] < 0) {
            /* Not tfm_shape_str: it prints negative dims as unknown. */
            size_t used = (size_t)snprintf(t1, sizeof t1, "[");
            for (int k = 0; k < s.ndim && used < sizeof t1; k++)
                used += (size_t)snprintf(t1 + used, sizeof t1 - used,
                                         "%s%lld", k ? "," : "",
                                         (long long)s.dims[k]);
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dims must be "
                             "non-negative, got %s]", NAME, t1);
        }
    }
    tfm_code rc = tfm_check_size(NAME, &s, in[0].dtype);
    if (rc)
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

static tfm_code
range_count_int(tfm_op op, int64_t start, int64_t limit, int64_t delta,
                int64_t *n)
{
    if (delta == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires delta != "
                         "0: 0", NAME);
    if (delta > 0 && start > limit)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires start <= "
                         "limit when delta > 0: %lld/%lld", NAME,
                         (long long)start, (long long)limit);
    if (delta < 0 && start < limit)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires start >= "
                         "limit when delta < 0: %lld/%lld", NAME,
                         (long long)start, (long long)limit);
    /* Unsigned arithmetic: |limit - start| can exceed INT64_MAX. */
    uint64_t span = delta > 0 ? (uint64_t)limit - (uint64_t)start
                              : (uint64_t)start - (uint64_t)limit;
    uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    uint64_t count = span / step + (span % step != 0);
    if (count > (uint64_t)INT64_MAX)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: too many values",
                         NAME);
    *n = (int64_t)count;
    return TFM_OK;
}

static tfm_code
range_count_float(tfm_op op, double start, double limit, double delta,
                  int64_t *n)
{
    if (delta == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires delta != "
                         "0: 0", NAME);
    if (!isfinite(start) || !isfinite(limit) || !isfinite(delta))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: start, limit and "
                         "delta must be finite, got %g, %g, %g", NAME, start,
                         limit, delta);
    if (delta > 0 && start > limit)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires start <= "
                         "limit when delta > 0: %g/%g", NAME, start, limit);
    if (delta < 0 && start < limit)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires start >= "
                         "limit when delta < 0: %g/%g", NAME, start, limit);
    double c = ceil(fabs((limit - start) / delta));
    if (c > 9.2e18)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: too many values",
                         NAME);
    *n = (int64_t)c;
    return TFM_OK;
}

tfm_code
tfm_infer_range(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                tfm_meta *out, int *nout)
{
    static const char *const what[3] = {"start", "limit", "delta"};
    tfm_dtype d = a->dtype;
    int64_t n = 0;
    tfm_code rc;
    /* Out-of-range bounds would wrap in the kernel: refused, as TF
     * refuses to convert them to the dtype. */
    for (int k = 0; tfm_dtype_is_int(d) && k < 3; k++)
        if (!tfm_int_fits(a->i[k], d))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s = %lld is "
                             "out of range for dtype %s", NAME, what[k],
                             (long long)a->i[k], tfm_dtype_name(d));
    if (tfm_dtype_is_int(d))
        rc = range_count_int(op, a->i[0], a->i[1], a->i[2], &n);
    else if (tfm_dtype_is_float(d))
        rc = range_count_float(op, a->f[0], a->f[1], a->f[2], &n);
    else
        rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dtype must be an "
                       "integer or float type, got %s", NAME,
                       tfm_dtype_name(d));
    if (rc)
        return rc;
    tfm_shape s;
    s.ndim = 1;
    s.dims[0] = n;
    one_output(out, nout, d, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_linspace(tfm_op op, const tfm_meta *in, int nin,
                   const tfm_attrs *a, tfm_meta *out, int *nout)
{
    if (!tfm_dtype_is_float(a->dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dtype must be a "
                         "float type, got %s", NAME,
                         tfm_dtype_name(a->dtype));
    if (a->i[0] <= 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Requires num > 0: "
                         "%lld", NAME, (long long)a->i[0]);
    tfm_shape s;
    s.ndim = 1;
    s.dims[0] = a->i[0];
    one_output(out, nout, a->dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_one_hot(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    char t1[160], t2[160];
    const tfm_shape *is = &in[0].shape;
    if (!tfm_dtype_is_int(in[0].dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: indices must be an "
                         "integer tensor, got %s", NAME,
                         tfm_dtype_name(in[0].dtype));
    if (in[1].shape.ndim != 0 || in[2].shape.ndim != 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: on_value and "
                         "off_value must be scalars, got shapes %s and %s",
                         NAME, tfm_shape_str(&in[1].shape, t1, sizeof t1),
                         tfm_shape_str(&in[2].shape, t2, sizeof t2));
    if (in[1].dtype != in[2].dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: on_value and "
                         "off_value must have the same dtype, got %s and %s",
                         NAME, tfm_dtype_name(in[1].dtype),
                         tfm_dtype_name(in[2].dtype));
    int64_t depth = a->i[0], axis = a->i[1];
    if (depth < 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: depth must be "
                         "non-negative, got: %lld", NAME, (long long)depth);
    if (axis < -1 || axis > is->ndim)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Expected axis to be "
                         "-1 or between [0, %d]. But received: %lld", NAME,
                         is->ndim, (long long)axis);
    if (is->ndim + 1 > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the result would "
                         "have more than %d dims", NAME, TFM_MAX_DIMS);
    int ax = axis < 0 ? is->ndim : (int)axis;
    tfm_shape s;
    s.ndim = is->ndim + 1;
    for (int d = 0, k = 0; d < s.ndim; d++)
        s.dims[d] = d == ax ? depth : is->dims[k++];
    tfm_code rc = tfm_check_size(NAME, &s, in[1].dtype);
    if (rc)
        return rc;
    one_output(out, nout, in[1].dtype, &s);
    return TFM_OK;
}
