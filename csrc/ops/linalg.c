/* Shape rules of the linalg family. */
#include "linalg.h"

static tfm_code
size_incompatible(tfm_op op, const tfm_meta *in, const tfm_attrs *a)
{
    char sa[160], sb[160];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                     "%s: Matrix size-incompatible: In[0]: %s, In[1]: %s "
                     "(adj_x=%s, adj_y=%s)", tfm_ops[op].name,
                     tfm_shape_str(&in[0].shape, sa, sizeof sa),
                     tfm_shape_str(&in[1].shape, sb, sizeof sb),
                     a->i[0] ? "true" : "false", a->i[1] ? "true" : "false");
}

tfm_code
tfm_infer_matmul(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                 tfm_meta *out, int *nout)
{
    (void)nin;
    const char *name = tfm_ops[op].name;
    if (in[0].dtype != in[1].dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: inputs must have the same dtype, got %s and "
                         "%s (tfmini, like TensorFlow, does not promote; "
                         "use tf.cast)", name, tfm_dtype_name(in[0].dtype),
                         tfm_dtype_name(in[1].dtype));
    if (in[0].dtype == TFM_BOOL)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s expects numeric inputs, got bool", name);
    const tfm_shape *sa = &in[0].shape, *sb = &in[1].shape;
    for (int k = 0; k < 2; k++) {
        if (in[k].shape.ndim < 2) {
            char s[160];
            return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                             "%s: In[%d] must be a matrix or a batch of "
                             "matrices (rank >= 2), got shape %s (rank %d)",
                             name, k,
                             tfm_shape_str(&in[k].shape, s, sizeof s),
                             in[k].shape.ndim);
        }
    }
    int ra = sa->ndim, rb = sb->ndim;
    int64_t m = sa->dims[ra - (a->i[0] ? 1 : 2)];
    int64_t ka = sa->dims[ra - (a->i[0] ? 2 : 1)];
    int64_t kb = sb->dims[rb - (a->i[1] ? 1 : 2)];
    int64_t n = sb->dims[rb - (a->i[1] ? 2 : 1)];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return size_incompatible(op, in, a);
    tfm_shape ba = tfm_shape_make(ra - 2, sa->dims);
    tfm_shape bb = tfm_shape_make(rb - 2, sb->dims);
    tfm_shape batch;
    if (tfm_shape_broadcast(name, &ba, &bb, &batch)) {
        char s0[160], s1[160];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: In[0] and In[1] must have broadcastable batch "
                         "dimensions: In[0]: %s, In[1]: %s", name,
                         tfm_shape_str(sa, s0, sizeof s0),
                         tfm_shape_str(sb, s1, sizeof s1));
    }
    if (batch.ndim + 2 > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: result rank %d "
                         "exceeds %d", name, batch.ndim + 2, TFM_MAX_DIMS);
    out[0].dtype = in[0].dtype;
    out[0].shape = batch;
    out[0].shape.dims[batch.ndim] = m;
    out[0].shape.dims[batch.ndim + 1] = n;
    out[0].shape.ndim = batch.ndim + 2;
    *nout = 1;
    return TFM_OK;
}

/* The dtypes of the LU family: TF's real ones. */
static tfm_code
lu_dtype(tfm_op op, tfm_dtype d)
{
    if (d == TFM_FLOAT16 || d == TFM_FLOAT32 || d == TFM_FLOAT64)
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects float16, "
                     "float32 or float64 matrices, got %s",
                     tfm_ops[op].name, tfm_dtype_name(d));
}

/* m: [..., M, M] (unknown dims pass). `what` names the input. */
static tfm_code
check_square(tfm_op op, const tfm_meta *m, const char *what)
{
    char s[160];
    int r = m->shape.ndim;
    if (r < 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must have rank "
                         ">= 2, got shape %s (rank %d)", tfm_ops[op].name,
                         what, tfm_shape_str(&m->shape, s, sizeof s), r);
    int64_t a = m->shape.dims[r - 2], b = m->shape.dims[r - 1];
    if (a >= 0 && b >= 0 && a != b)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be a "
                         "square matrix (or a batch of them), got shape %s",
                         tfm_ops[op].name, what,
                         tfm_shape_str(&m->shape, s, sizeof s));
    return lu_dtype(op, m->dtype);
}

tfm_code
tfm_infer_square_matrix(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    tfm_code rc = check_square(op, &in[0], "input");
    if (rc)
        return rc;
    out[0].dtype = in[0].dtype;
    out[0].shape = in[0].shape;
    *nout = 1;
    if (op == TFM_OP_MATRIX_INVERSE || op == TFM_OP_CHOLESKY)
        return TFM_OK;
    out[0].shape.ndim -= 2;                 /* one value per matrix */
    if (op == TFM_OP_LOG_MATRIX_DETERMINANT) {
        out[1] = out[0];
        *nout = 2;
    }
    return TFM_OK;
}

/* The solves: in[0] a square matrix (batch), in[1] of its dtype. */
static tfm_code
check_matrix_rhs(tfm_op op, const tfm_meta *in)
{
    tfm_code rc = check_square(op, &in[0], "matrix");
    if (rc)
        return rc;
    if (in[1].dtype != in[0].dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: matrix and rhs must have the same dtype, got "
                         "%s and %s (tfmini, like TensorFlow, does not "
                         "promote; use tf.cast)", tfm_ops[op].name,
                         tfm_dtype_name(in[0].dtype),
                         tfm_dtype_name(in[1].dtype));
    return TFM_OK;
}

tfm_code
tfm_infer_matrix_solve(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    const char *name = tfm_ops[op].name;
    tfm_code rc = check_matrix_rhs(op, in);
    if (rc)
        return rc;
    const tfm_shape *sm = &in[0].shape, *sr = &in[1].shape;
    char s0[160], s1[160];
    int incompatible = sr->ndim != sm->ndim;
    for (int d = 0; d < sm->ndim - 1 && !incompatible; d++) {
        int64_t x = sm->dims[d], y = sr->dims[d];
        incompatible = x >= 0 && y >= 0 && x != y;
    }
    if (incompatible)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: matrix and rhs are incompatible: matrix %s, "
                         "rhs %s (rhs must be [..., M, K] for a matrix "
                         "[..., M, M], with the same batch dims)", name,
                         tfm_shape_str(sm, s0, sizeof s0),
                         tfm_shape_str(sr, s1, sizeof s1));
    out[0].dtype = in[0].dtype;
    out[0].shape = *sr;
    if (sr->dims[sr->ndim - 2] < 0)         /* M known from the matrix */
        out[0].shape.dims[sr->ndim - 2] = sm->dims[sm->ndim - 1];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_band_part(tfm_op op, const tfm_meta *in, int nin,
                    const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    char s[160];
    const tfm_shape *sh = &in[0].shape;
    if (sh->ndim < 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input must be at "
                         "least 2-dim, received shape: %s", tfm_ops[op].name,
                         tfm_shape_str(sh, s, sizeof s));
    /* TF bounds each band by the matrix: at most M below, N above. */
    int64_t rows = sh->dims[sh->ndim - 2], cols = sh->dims[sh->ndim - 1];
    if (rows >= 0 && a->i[0] > rows)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num_lower must be "
                         "negative or less or equal to number of rows (%lld)"
                         " got: %lld", tfm_ops[op].name, (long long)rows,
                         (long long)a->i[0]);
    if (cols >= 0 && a->i[1] > cols)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: num_upper must be "
                         "negative or less or equal to number of columns "
                         "(%lld) got: %lld", tfm_ops[op].name,
                         (long long)cols, (long long)a->i[1]);
    out[0] = in[0];
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_triangular_solve(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    const char *name = tfm_ops[op].name;
    tfm_code rc = check_matrix_rhs(op, in);
    if (rc)
        return rc;
    const tfm_shape *sm = &in[0].shape, *sr = &in[1].shape;
    char s0[160], s1[160];
    if (sr->ndim < 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: rhs must have rank "
                         ">= 2, got shape %s (rank %d)", name,
                         tfm_shape_str(sr, s0, sizeof s0), sr->ndim);
    int64_t m = sm->dims[sm->ndim - 1], mr = sr->dims[sr->ndim - 2];
    if (m >= 0 && mr >= 0 && m != mr)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: In[0] mismatch "
                         "In[1] shape: %lld vs. %lld: %s %s (lower=%s, "
                         "adjoint=%s)", name, (long long)m, (long long)mr,
                         tfm_shape_str(sm, s0, sizeof s0),
                         tfm_shape_str(sr, s1, sizeof s1),
                         a->i[0] ? "true" : "false",
                         a->i[1] ? "true" : "false");
    tfm_shape bm = tfm_shape_make(sm->ndim - 2, sm->dims);
    tfm_shape br = tfm_shape_make(sr->ndim - 2, sr->dims);
    tfm_shape batch;
    if (tfm_shape_broadcast(name, &bm, &br, &batch))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: matrix and rhs must have broadcastable batch "
                         "dimensions: matrix %s, rhs %s", name,
                         tfm_shape_str(sm, s0, sizeof s0),
                         tfm_shape_str(sr, s1, sizeof s1));
    if (batch.ndim + 2 > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: result rank %d "
                         "exceeds %d", name, batch.ndim + 2, TFM_MAX_DIMS);
    out[0].dtype = in[0].dtype;
    out[0].shape = batch;
    out[0].shape.dims[batch.ndim] = mr >= 0 ? mr : m;
    out[0].shape.dims[batch.ndim + 1] = sr->dims[sr->ndim - 1];
    out[0].shape.ndim = batch.ndim + 2;
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_svd(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
              tfm_meta *out, int *nout)
{
    (void)nin;
    char buf[160];
    const tfm_meta *x = &in[0];
    int r = x->shape.ndim;
    if (r < 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input must have "
                         "rank >= 2, got shape %s (rank %d)",
                         tfm_ops[op].name,
                         tfm_shape_str(&x->shape, buf, sizeof buf), r);
    tfm_code rc = lu_dtype(op, x->dtype);
    if (rc)
        return rc;
    int64_t m = x->shape.dims[r - 2], n = x->shape.dims[r - 1];
    /* An unknown dim leaves P unknown unless the other is 0. */
    int64_t p = (m >= 0 && n >= 0) ? (m < n ? m : n)
              : (m == 0 || n == 0) ? 0 : -1;
    int full = a->i[0] != 0;
    for (int k = 0; k < 3; k++) {
        out[k].dtype = x->dtype;
        out[k].shape = x->shape;
    }
    out[0].shape.ndim = r - 1;
    out[0].shape.dims[r - 2] = p;
    out[1].shape.dims[r - 1] = full ? m : p;
    out[2].shape.dims[r - 2] = n;
    out[2].shape.dims[r - 1] = full ? n : p;
    *nout = 3;
    return TFM_OK;
}
