/* Shape rules of the reduce family: reductions, arg-reductions, scans and
 * sorting (rows in ops_reduce.def, whose comment gives the attributes). */
#include "reduce.h"

#include <stdio.h>

#include "../kernels/cpu/reduce.h"

static const char *
axes_str(const tfm_attrs *a, char *buf, size_t n)
{
    if (a->i[1])
        return "None";
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < a->n_ints && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld",
                              (long long)a->ints[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

tfm_code
tfm_reduce_axes(tfm_op op, const tfm_shape *in, const tfm_attrs *a,
                bool reduced[TFM_MAX_DIMS])
{
    int bad = 0;
    int rc = tfm_reduce_mask(in->ndim, a, reduced, &bad);
    if (rc == TFM_REDUCE_MASK_OK)
        return TFM_OK;
    char sb[128], ab[512];
    tfm_shape_str(in, sb, sizeof sb);
    axes_str(a, ab, sizeof ab);
    if (rc == TFM_REDUCE_MASK_RANGE)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: Invalid reduction dimension %lld for input "
                         "with %d dimensions (shape %s, axis %s)",
                         tfm_ops[op].name, (long long)a->ints[bad],
                         in->ndim, sb, ab);
    return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                     "%s: Invalid reduction arguments: axes contain the "
                     "duplicate dimension %lld (shape %s, axis %s)",
                     tfm_ops[op].name, (long long)a->ints[bad], sb, ab);
}

tfm_code
tfm_reduce_kept_shape(tfm_op op, const tfm_shape *in, const tfm_attrs *a,
                      tfm_shape *kept)
{
    bool red[TFM_MAX_DIMS];
    tfm_code rc = tfm_reduce_axes(op, in, a, red);
    if (rc)
        return rc;
    *kept = *in;
    for (int d = 0; d < in->ndim; d++)
        if (red[d])
            kept->dims[d] = 1;
    return TFM_OK;
}

static tfm_code
bad_dtype(tfm_op op, tfm_dtype d, const char *want)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects %s input, got "
                     "%s", tfm_ops[op].name, want, tfm_dtype_name(d));
}

static tfm_code
check_index_dtype(tfm_op op, tfm_dtype d)
{
    if (d != TFM_INT32 && d != TFM_INT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the index dtype "
                         "must be int32 or int64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    return TFM_OK;
}

tfm_code
tfm_infer_reduce(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                 tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_dtype d = in[0].dtype;
    if (op == TFM_OP_ALL || op == TFM_OP_ANY) {
        if (d != TFM_BOOL)
            return bad_dtype(op, d, "bool");
    } else if (op == TFM_OP_REDUCE_LOGSUMEXP) {
        if (!tfm_dtype_is_float(d))
            return bad_dtype(op, d, "floating-point");
    } else if (d == TFM_BOOL) {
        return bad_dtype(op, d, "numeric");
    } else if (tfm_dtype_is_complex(d) && op != TFM_OP_SUM &&
               op != TFM_OP_MEAN && op != TFM_OP_PROD) {
        return bad_dtype(op, d, "real (not complex)");
    }
    bool red[TFM_MAX_DIMS];
    tfm_code rc = tfm_reduce_axes(op, &in[0].shape, a, red);
    if (rc)
        return rc;
    tfm_shape s = {0};
    for (int k = 0; k < in[0].shape.ndim; k++) {
        if (!red[k])
            s.dims[s.ndim++] = in[0].shape.dims[k];
        else if (a->i[0])
            s.dims[s.ndim++] = 1;
    }
    out[0].dtype = d;
    out[0].shape = s;
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_argreduce(tfm_op op, const tfm_meta *in, int nin,
                    const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    const tfm_shape *is = &in[0].shape;
    int axis;
    tfm_code rc = check_index_dtype(op, a->dtype);
    if (rc)
        return rc;
    if (is->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: expected a tensor "
                         "of rank >= 1 (there is no axis %lld of a scalar)",
                         tfm_ops[op].name, (long long)a->i[0]);
    if ((rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], is->ndim, &axis)))
        return rc;
    if (is->dims[axis] == 0) {
        char sb[128];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Reduction axis %d "
                         "is empty in shape %s", tfm_ops[op].name, axis,
                         tfm_shape_str(is, sb, sizeof sb));
    }
    tfm_shape s = {0};
    for (int k = 0; k < is->ndim; k++)
        if (k != axis)
            s.dims[s.ndim++] = is->dims[k];
    out[0].dtype = a->dtype;
    out[0].shape = s;
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_scan(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)nin;
    int axis;
    if (in[0].dtype == TFM_BOOL)
        return bad_dtype(op, in[0].dtype, "numeric");
    if (in[0].shape.ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: expected a tensor "
                         "of rank >= 1, got a scalar", tfm_ops[op].name);
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0],
                                 in[0].shape.ndim, &axis);
    if (rc)
        return rc;
    out[0] = in[0];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_sort(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)nin;
    int axis;
    if (in[0].dtype == TFM_BOOL)
        return bad_dtype(op, in[0].dtype, "numeric");
    tfm_code rc = check_index_dtype(op, a->dtype);
    if (rc)
        return rc;
    if (in[0].shape.ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: expected a tensor "
                         "of rank >= 1, got a scalar", tfm_ops[op].name);
    if ((rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], in[0].shape.ndim,
                             &axis)))
        return rc;
    out[0] = in[0];
    out[1].dtype = a->dtype;
    out[1].shape = in[0].shape;
    *nout = 2;
    return TFM_OK;
}

tfm_code
tfm_infer_topk(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)nin;
    const tfm_shape *is = &in[0].shape;
    char sb[128];
    if (in[0].dtype == TFM_BOOL)
        return bad_dtype(op, in[0].dtype, "numeric");
    tfm_code rc = check_index_dtype(op, a->dtype);
    if (rc)
        return rc;
    if (is->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input must be at "
                         "least 1-D, got shape []", tfm_ops[op].name);
    int64_t k = a->i[0], n = is->dims[is->ndim - 1];
    if (k < 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Need k >= 0, got "
                         "%lld", tfm_ops[op].name, (long long)k);
    if (n >= 0 && k > n)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input must have at "
                         "least k=%lld columns, had %lld (shape %s)",
                         tfm_ops[op].name, (long long)k, (long long)n,
                         tfm_shape_str(is, sb, sizeof sb));
    out[0].dtype = in[0].dtype;
    out[0].shape = *is;
    out[0].shape.dims[is->ndim - 1] = k;
    out[1].dtype = a->dtype;
    out[1].shape = out[0].shape;
    *nout = 2;
    return TFM_OK;
}
