/* Shape rules of the reshaping and copying ops (ops_shape.def). Unknown
 * dims (-1, symbolic tensors) stay unknown; checks that need a dim's
 * value are skipped when it is unknown and made again when the kernel's
 * concrete shapes are inferred. */
#include "shape.h"

#include <math.h>
#include <string.h>

#define NAME (tfm_ops[op].name)

/* Shape text buffers for messages. */
typedef struct { char s[160]; } shape_text;

static const char *
stext(shape_text *t, const tfm_shape *s)
{
    return tfm_shape_str(s, t->s, sizeof t->s);
}

tfm_code
tfm_check_size(const char *op, const tfm_shape *s, tfm_dtype dt)
{
    int64_t n = (int64_t)tfm_dtype_size(dt);
    for (int d = 0; d < s->ndim; d++) {
        if (s->dims[d] > 0 && __builtin_mul_overflow(n, s->dims[d], &n)) {
            shape_text t1;
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: a %s tensor of "
                             "shape %s would hold more than 2^63 bytes", op,
                             tfm_dtype_name(dt), stext(&t1, s));
        }
    }
    return TFM_OK;
}

static void
one_output(tfm_meta *out, int *nout, tfm_dtype d, const tfm_shape *s)
{
    out[0].dtype = d;
    out[0].shape = *s;
    *nout = 1;
}

static tfm_code
check_rank(tfm_op op, int64_t rank)
{
    if (rank > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: rank %lld exceeds "
                         "the maximum of %d dims", NAME, (long long)rank,
                         TFM_MAX_DIMS);
    return TFM_OK;
}

tfm_code
tfm_infer_identity(tfm_op op, const tfm_meta *in, int nin,
                   const tfm_attrs *a, tfm_meta *out, int *nout)
{
    one_output(out, nout, in[0].dtype, &in[0].shape);
    return TFM_OK;
}

tfm_code
tfm_infer_reshape(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc = check_rank(op, a->n_ints);
    if (rc)
        return rc;
    tfm_shape s = tfm_shape_make(a->n_ints, a->ints);
    int infer_at = -1;
    int64_t known = 1;
    if ((rc = tfm_check_size(NAME, &s, in[0].dtype)))
        return rc;
    for (int d = 0; d < s.ndim; d++) {
        if (s.dims[d] == -1) {
            if (infer_at >= 0)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: only one "
                                 "input size may be -1, not both %d and %d",
                                 NAME, infer_at, d);
            infer_at = d;
        } else if (s.dims[d] < 0) {
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: size %d must be "
                             "non-negative, not %lld", NAME, d,
                             (long long)s.dims[d]);
        } else {
            known *= s.dims[d];
        }
    }
    int64_t n = tfm_shape_numel(&in[0].shape);
    shape_text t1;
    if (infer_at >= 0) {
        if (n < 0) {
            s.dims[infer_at] = -1;
        } else if (known == 0) {
            if (n != 0)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Input to "
                                 "reshape is a tensor with %lld values, but "
                                 "the requested shape has 0", NAME,
                                 (long long)n);
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Reshape cannot "
                             "infer the missing input size for an empty "
                             "tensor unless all specified input sizes are "
                             "non-zero", NAME);
        } else if (n % known != 0) {
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Input to reshape "
                             "is a tensor with %lld values, but the "
                             "requested shape requires a multiple of %lld "
                             "(input shape %s)", NAME, (long long)n,
                             (long long)known, stext(&t1, &in[0].shape));
        } else {
            s.dims[infer_at] = n / known;
        }
    } else if (n >= 0 && n != known) {
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Input to reshape is "
                         "a tensor with %lld values, but the requested "
                         "shape has %lld (input shape %s)", NAME,
                         (long long)n, (long long)known,
                         stext(&t1, &in[0].shape));
    }
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_transpose(tfm_op op, const tfm_meta *in, int nin,
                    const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    shape_text t1;
    if (a->n_ints != x->ndim)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: perm has %d entries "
                         "but the input of shape %s has rank %d", NAME,
                         a->n_ints, stext(&t1, x), x->ndim);
    int seen[TFM_MAX_DIMS] = {0};
    tfm_shape s = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t p = a->ints[d];
        if (p < 0 || p >= x->ndim || seen[p]++)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: perm[%d] = %lld "
                             "is out of range or repeated: perm must be a "
                             "permutation of [0, %d) for input of shape %s",
                             NAME, d, (long long)p, x->ndim, stext(&t1, x));
        s.dims[d] = x->dims[p];
    }
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_expand_dims(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    int r = x->ndim;
    int64_t axis = a->i[0];
    if (axis < -r - 1 || axis > r)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Tried to expand dim "
                         "index %lld for tensor with %d dimensions (axis "
                         "must be in [%d, %d])", NAME, (long long)axis, r,
                         -r - 1, r);
    tfm_code rc = check_rank(op, r + 1);
    if (rc)
        return rc;
    int ax = (int)(axis < 0 ? axis + r + 1 : axis);
    tfm_shape s;
    s.ndim = r + 1;
    for (int d = 0, k = 0; d <= r; d++)
        s.dims[d] = d == ax ? 1 : x->dims[k++];
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_squeeze(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    int drop[TFM_MAX_DIMS] = {0};
    shape_text t1;
    for (int k = 0; k < a->n_ints; k++) {
        int ax;
        tfm_code rc = tfm_shape_axis(NAME, a->ints[k], x->ndim, &ax);
        if (rc)
            return rc;
        if (x->ndim == 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: cannot squeeze "
                             "axis %lld of a scalar", NAME,
                             (long long)a->ints[k]);
        if (x->dims[ax] != 1 && x->dims[ax] >= 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Can not squeeze "
                             "dim[%d], expected a dimension of 1, got %lld "
                             "(input shape %s)", NAME, ax,
                             (long long)x->dims[ax], stext(&t1, x));
        drop[ax] = 1;
    }
    if (a->n_ints == 0)
        for (int d = 0; d < x->ndim; d++)
            drop[d] = x->dims[d] == 1;
    tfm_shape s;
    s.ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!drop[d])
            s.dims[s.ndim++] = x->dims[d];
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

/* All inputs of one dtype (variadic ops). */
static tfm_code
same_dtypes(tfm_op op, const tfm_meta *in, int nin)
{
    if (nin < 1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects at least one "
                         "input, got none", NAME);
    for (int i = 1; i < nin; i++)
        if (in[i].dtype != in[0].dtype)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: all inputs must "
                             "have the same dtype, but values[0] is %s and "
                             "values[%d] is %s", NAME,
                             tfm_dtype_name(in[0].dtype), i,
                             tfm_dtype_name(in[i].dtype));
    return TFM_OK;
}

/* Merge two dims that must agree; unknown (-1) agrees with anything. */
static int
merge_dim(int64_t x, int64_t y, int64_t *m)
{
    if (x >= 0 && y >= 0 && x != y)
        return -1;
    *m = x >= 0 ? x : y;
    return 0;
}

tfm_code
tfm_infer_concat(tfm_op op, const tfm_meta *in, int nin,
                 const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc = same_dtypes(op, in, nin);
    if (rc)
        return rc;
    const tfm_shape *s0 = &in[0].shape;
    if (s0->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Can't concatenate "
                         "scalars (use tf.stack instead)", NAME);
    int ax;
    rc = tfm_shape_axis(NAME, a->i[0], s0->ndim, &ax);
    if (rc)
        return rc;
    tfm_shape s = *s0;
    shape_text t1, t2;
    for (int i = 1; i < nin; i++) {
        const tfm_shape *si = &in[i].shape;
        if (si->ndim != s0->ndim)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Ranks of all "
                             "input tensors should match: shape[0] = %s vs. "
                             "shape[%d] = %s", NAME, stext(&t1, s0), i,
                             stext(&t2, si));
        for (int d = 0; d < s.ndim; d++) {
            if (d == ax) {
                if (s.dims[d] < 0 || si->dims[d] < 0)
                    s.dims[d] = -1;
                else if (__builtin_add_overflow(s.dims[d], si->dims[d],
                                                &s.dims[d]))
                    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the "
                                     "concatenated dim %d overflows int64 "
                                     "(shape[%d] = %s)", NAME, d, i,
                                     stext(&t2, si));
            } else if (merge_dim(s.dims[d], si->dims[d], &s.dims[d])) {
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Dimension %d "
                                 "in both shapes must be equal: shape[0] = "
                                 "%s vs. shape[%d] = %s (concatenating on "
                                 "axis %d)", NAME, d, stext(&t1, s0), i,
                                 stext(&t2, si), ax);
            }
        }
    }
    if ((rc = tfm_check_size(NAME, &s, in[0].dtype)))
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_pack(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    tfm_code rc = same_dtypes(op, in, nin);
    if (rc)
        return rc;
    const tfm_shape *s0 = &in[0].shape;
    int r = s0->ndim;
    if ((rc = check_rank(op, r + 1)))
        return rc;
    int64_t axis = a->i[0];
    if (axis < -r - 1 || axis > r)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: axis = %lld not in "
                         "[%d, %d]", NAME, (long long)axis, -r - 1, r);
    int ax = (int)(axis < 0 ? axis + r + 1 : axis);
    tfm_shape m = *s0;
    shape_text t1, t2;
    for (int i = 1; i < nin; i++) {
        const tfm_shape *si = &in[i].shape;
        int bad = si->ndim != r;
        for (int d = 0; !bad && d < r; d++)
            bad = merge_dim(m.dims[d], si->dims[d], &m.dims[d]);
        if (bad)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Shapes of all "
                             "inputs must match: values[0].shape = %s != "
                             "values[%d].shape = %s", NAME, stext(&t1, s0),
                             i, stext(&t2, si));
    }
    tfm_shape s;
    s.ndim = r + 1;
    for (int d = 0, k = 0; d <= r; d++)
        s.dims[d] = d == ax ? nin : m.dims[k++];
    if ((rc = tfm_check_size(NAME, &s, in[0].dtype)))
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

static tfm_code
set_outputs(tfm_op op, tfm_meta *out, int *nout, int64_t n, tfm_dtype d)
{
    if (n > TFM_MAX_OUTPUTS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %lld outputs exceed "
                         "the maximum of %d", NAME, (long long)n,
                         TFM_MAX_OUTPUTS);
    *nout = (int)n;
    for (int k = 0; k < n; k++)
        out[k].dtype = d;
    return TFM_OK;
}

tfm_code
tfm_infer_unpack(tfm_op op, const tfm_meta *in, int nin,
                 const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    shape_text t1;
    if (x->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: cannot unstack a "
                         "scalar", NAME);
    int ax;
    tfm_code rc = tfm_shape_axis(NAME, a->i[0], x->ndim, &ax);
    if (rc)
        return rc;
    int64_t num = a->i[1], dim = x->dims[ax];
    if (num < -1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num must be "
                         "non-negative (or -1: the dim's size), got %lld",
                         NAME, (long long)num);
    if (num < 0 && dim < 0)
        return tfm_error(TFM_ERR_VALUE, "%s: Cannot infer argument `num` "
                         "from shape %s", NAME, stext(&t1, x));
    if (num >= 0 && dim >= 0 && num != dim)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Input shape axis %d "
                         "must equal %lld, got shape %s", NAME, ax,
                         (long long)num, stext(&t1, x));
    if (num < 0)
        num = dim;
    if ((rc = set_outputs(op, out, nout, num, in[0].dtype)))
        return rc;
    tfm_shape s;
    s.ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != ax)
            s.dims[s.ndim++] = x->dims[d];
    for (int k = 0; k < num; k++)
        out[k].shape = s;
    return TFM_OK;
}

/* Split (i[1] = num) and SplitV (ints = sizes, one may be -1). */
tfm_code
tfm_infer_split(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    shape_text t1;
    int ax;
    tfm_code rc = tfm_shape_axis(NAME, a->i[0], x->ndim, &ax);
    if (rc)
        return rc;
    if (x->ndim == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: cannot split a "
                         "scalar", NAME);
    int64_t dim = x->dims[ax];
    int64_t sizes[TFM_MAX_ATTR_INTS];
    int64_t n;
    if (op == TFM_OP_SPLIT) {
        n = a->i[1];
        if (n <= 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num_split must "
                             "be positive, got %lld", NAME, (long long)n);
        if (dim >= 0 && dim % n != 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Number of ways "
                             "to split should evenly divide the split "
                             "dimension, but got split_dim %d (size = %lld) "
                             "and num_split %lld (input shape %s)", NAME, ax,
                             (long long)dim, (long long)n, stext(&t1, x));
        if ((rc = set_outputs(op, out, nout, n, in[0].dtype)))
            return rc;
        for (int k = 0; k < n; k++)
            sizes[k] = dim < 0 ? -1 : dim / n;
    } else {
        n = a->n_ints;
        if (n == 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: size_splits "
                             "must not be empty", NAME);
        int infer_at = -1;
        int64_t total = 0;
        for (int k = 0; k < n; k++) {
            sizes[k] = a->ints[k];
            if (sizes[k] == -1 && infer_at < 0) {
                infer_at = k;
            } else if (sizes[k] < 0) {
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: size_splits "
                                 "must be non-negative with at most one -1, "
                                 "but size_splits[%d] = %lld", NAME, k,
                                 (long long)sizes[k]);
            } else if (__builtin_add_overflow(total, sizes[k], &total)) {
                total = INT64_MAX;  /* more than any dim: refused below */
            }
        }
        if (dim >= 0 && (infer_at < 0 ? total != dim : total > dim))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Determined shape "
                             "must either match input shape along split_dim "
                             "exactly if fully specified, or be less than "
                             "the size of the input along split_dim if not "
                             "fully specified. Got: %lld (split_dim %d of "
                             "shape %s)", NAME, (long long)total, ax,
                             stext(&t1, x));
        if (infer_at >= 0)
            sizes[infer_at] = dim < 0 ? -1 : dim - total;
        if ((rc = set_outputs(op, out, nout, n, in[0].dtype)))
            return rc;
    }
    for (int k = 0; k < n; k++) {
        out[k].shape = *x;
        out[k].shape.dims[ax] = sizes[k];
    }
    return TFM_OK;
}

tfm_code
tfm_infer_tile(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    shape_text t1;
    if (a->n_ints != x->ndim)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Expected multiples "
                         "argument to be a vector of length %d but got "
                         "length %d (input shape %s)", NAME, x->ndim,
                         a->n_ints, stext(&t1, x));
    tfm_shape s = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t m = a->ints[d];
        if (m < 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Expected "
                             "multiples[%d] >= 0, but got %lld", NAME, d,
                             (long long)m);
        if (m == 0)
            s.dims[d] = 0;
        else if (x->dims[d] < 0)
            s.dims[d] = -1;
        else if (__builtin_mul_overflow(x->dims[d], m, &s.dims[d]))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dim %d of size "
                             "%lld tiled %lld times overflows int64", NAME,
                             d, (long long)x->dims[d], (long long)m);
    }
    tfm_code rc = tfm_check_size(NAME, &s, in[0].dtype);
    if (rc)
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

/* PadV2 and MirrorPad. */
tfm_code
tfm_infer_pad(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
              tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    shape_text t1;
    if (a->n_ints != 2 * x->ndim)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: paddings must be a "
                         "matrix of shape [%d,2] for input of shape %s, got "
                         "%d values", NAME, x->ndim, stext(&t1, x),
                         a->n_ints);
    int mirror = op == TFM_OP_MIRROR_PAD;
    tfm_dtype dt = in[0].dtype;
    if (!mirror && tfm_dtype_is_int(dt)) {
        /* The kernel stores the constant in dt: it must be a value of
         * dt, or it would wrap (or, from a double, be undefined). */
        double f = a->f[0];
        int ok = a->i[1] ? tfm_int_fits(a->i[2], dt)
                         : f == floor(f) && f >= -9223372036854775808.0 &&
                               f < 9223372036854775808.0 &&
                               tfm_int_fits((int64_t)f, dt);
        if (!ok)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: constant_values "
                             "%.17g is not a value of dtype %s", NAME,
                             a->i[1] ? (double)a->i[2] : f,
                             tfm_dtype_name(dt));
    }
    if (mirror && a->i[0] != 0 && a->i[0] != 1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: mode must be 0 "
                         "(REFLECT) or 1 (SYMMETRIC), got %lld", NAME,
                         (long long)a->i[0]);
    tfm_shape s = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t lo = a->ints[2 * d], hi = a->ints[2 * d + 1];
        int64_t dim = x->dims[d];
        if (lo < 0 || hi < 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Paddings must be "
                             "non-negative: %lld %lld (dim %d)", NAME,
                             (long long)lo, (long long)hi, d);
        if (mirror && dim >= 0) {
            int64_t lim = a->i[0] == 0 ? dim - 1 : dim;
            if (lo > lim || hi > lim)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: paddings "
                                 "must be no greater than the dimension "
                                 "size%s: %lld, %lld greater than %lld "
                                 "(dim %d of shape %s, mode %s)", NAME,
                                 a->i[0] == 0 ? " minus 1" : "",
                                 (long long)lo, (long long)hi,
                                 (long long)lim, d, stext(&t1, x),
                                 a->i[0] == 0 ? "REFLECT" : "SYMMETRIC");
        }
        if (dim < 0)
            s.dims[d] = -1;
        else if (__builtin_add_overflow(dim, lo, &s.dims[d]) ||
                 __builtin_add_overflow(s.dims[d], hi, &s.dims[d]))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dim %d of size "
                             "%lld padded by %lld and %lld overflows int64",
                             NAME, d, (long long)dim, (long long)lo,
                             (long long)hi);
    }
    tfm_code rc = tfm_check_size(NAME, &s, in[0].dtype);
    if (rc)
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

tfm_code
tfm_infer_reverse(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    int seen[TFM_MAX_DIMS] = {0};
    for (int k = 0; k < a->n_ints; k++) {
        int ax;
        tfm_code rc = tfm_shape_axis(NAME, a->ints[k], x->ndim, &ax);
        if (rc)
            return rc;
        if (x->ndim == 0 || seen[ax]++)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: axis %d "
                             "specified more than once (or input is a "
                             "scalar)", NAME, ax);
    }
    one_output(out, nout, in[0].dtype, x);
    return TFM_OK;
}

tfm_code
tfm_infer_broadcast_to(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    const tfm_shape *x = &in[0].shape;
    tfm_code rc = check_rank(op, a->n_ints);
    if (rc)
        return rc;
    tfm_shape s = tfm_shape_make(a->n_ints, a->ints);
    shape_text t1, t2;
    int bad = x->ndim > s.ndim;
    for (int d = 0; !bad && d < s.ndim; d++) {
        int k = x->ndim - s.ndim + d;
        if (s.dims[d] < 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: target shape "
                             "%s has a negative dim", NAME, stext(&t1, &s));
        if (k >= 0 && x->dims[k] >= 0 && x->dims[k] != 1 &&
            x->dims[k] != s.dims[d])
            bad = 1;
    }
    if (bad)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Incompatible shapes: "
                         "%s vs. %s (cannot broadcast the input to the "
                         "target shape)", NAME, stext(&t1, x),
                         stext(&t2, &s));
    if ((rc = tfm_check_size(NAME, &s, in[0].dtype)))
        return rc;
    one_output(out, nout, in[0].dtype, &s);
    return TFM_OK;
}

/* Shape, Size, Rank. */
tfm_code
tfm_infer_shape_of(tfm_op op, const tfm_meta *in, int nin,
                   const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_dtype d = op == TFM_OP_RANK ? TFM_INT32 : a->dtype;
    if (d != TFM_INT32 && d != TFM_INT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: out_type must be "
                         "int32 or int64, got %s", NAME, tfm_dtype_name(d));
    tfm_shape s;
    s.ndim = op == TFM_OP_SHAPE ? 1 : 0;
    s.dims[0] = in[0].shape.ndim;
    one_output(out, nout, d, &s);
    return TFM_OK;
}
