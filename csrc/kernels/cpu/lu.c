/* MatrixSolve, MatrixInverse, MatrixDeterminant and LogMatrixDeterminant
 * on the CPU: one LU factorization per matrix of the batch, through
 * Eigen (lu_eigen.cc). float16 reaches here as float32 (the dispatcher
 * widens ops without TFM_OPF_F16).
 *
 * Matrices of a batch are independent, so the batch is split over the
 * cores when there is enough work. A singular matrix fails the op; the
 * first one found (lowest index) is reported after the loop, since
 * threads must not set the error themselves. */
#include "linalg.h"
#include "loops.h"

/* Below this much work (batch * n^3) one thread does the whole batch. */
#define LU_PAR_MIN (64 * 64 * 64)

static int
is_f64(const tfm_tensor *t)
{
    return t->dtype == TFM_FLOAT64;
}

static int64_t
batch_count(const tfm_tensor *t, int64_t *n)
{
    int r = t->shape.ndim;
    *n = t->shape.dims[r - 1];
    int64_t nb = 1;
    for (int d = 0; d < r - 2; d++)
        nb *= t->shape.dims[d];
    return nb;
}

/* for b in [0, NB): BODY, an expression that is nonzero for a singular
 * matrix, on as many threads as WORK deserves. FAILED (an int64_t of
 * the caller) ends as the lowest such b, or -1. */
#define FOR_EACH_MATRIX(NB, WORK, FAILED, BODY)                              \
    do {                                                                     \
        int64_t nb_ = (NB);                                                  \
        FAILED = -1;                                                         \
        if (nb_ > 1 && (WORK) >= LU_PAR_MIN) {                               \
            _Pragma("omp parallel for schedule(dynamic, 1)")                 \
            for (int64_t b = 0; b < nb_; b++) {                              \
                if (BODY) {                                                  \
                    _Pragma("omp critical(tfm_lu_failed)")                   \
                    if (FAILED < 0 || b < FAILED)                            \
                        FAILED = b;                                          \
                }                                                            \
            }                                                                \
        } else {                                                             \
            for (int64_t b = 0; b < nb_ && FAILED < 0; b++)                  \
                if (BODY)                                                    \
                    FAILED = b;                                              \
        }                                                                    \
    } while (0)

static tfm_code
not_invertible(tfm_op op, const char *what, int64_t b, int64_t nb)
{
    if (nb > 1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s is not "
                         "invertible (matrix %lld of the batch).",
                         tfm_ops[op].name, what, (long long)b);
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s is not invertible.",
                     tfm_ops[op].name, what);
}

tfm_code
tfm_k_matrix_solve(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *m = in[0], *rhs = in[1];
    if (m->dtype != TFM_FLOAT32 && !is_f64(m))
        return tfm_linalg_no_kernel(op, m->dtype);
    int64_t n, nb = batch_count(m, &n);
    int64_t k = rhs->shape.dims[rhs->shape.ndim - 1];
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int adj = a->i[0] != 0;
    size_t esz = tfm_dtype_size(m->dtype);
    const char *pm = tfm_tensor_data(m), *pr = tfm_tensor_data(rhs);
    char *po = tfm_tensor_data(out[0]);
    int64_t failed;
    if (is_f64(m))
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            tfm_lu_solve_f64(n, k, (const double *)(pm + b * n * n * esz),
                             adj, (const double *)(pr + b * n * k * esz),
                             (double *)(po + b * n * k * esz)));
    else
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            tfm_lu_solve_f32(n, k, (const float *)(pm + b * n * n * esz),
                             adj, (const float *)(pr + b * n * k * esz),
                             (float *)(po + b * n * k * esz)));
    return failed < 0 ? TFM_OK
                       : not_invertible(op, "Input matrix", failed, nb);
}

tfm_code
tfm_k_matrix_inverse(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *m = in[0];
    if (m->dtype != TFM_FLOAT32 && !is_f64(m))
        return tfm_linalg_no_kernel(op, m->dtype);
    int64_t n, nb = batch_count(m, &n);
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int adj = a->i[0] != 0;
    size_t step = (size_t)(n * n) * tfm_dtype_size(m->dtype);
    const char *pm = tfm_tensor_data(m);
    char *po = tfm_tensor_data(out[0]);
    int64_t failed;
    if (is_f64(m))
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            tfm_lu_inverse_f64(n, (const double *)(pm + b * step), adj,
                               (double *)(po + b * step)));
    else
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            tfm_lu_inverse_f32(n, (const float *)(pm + b * step), adj,
                               (float *)(po + b * step)));
    return failed < 0 ? TFM_OK : not_invertible(op, "Input", failed, nb);
}

/* MatrixDeterminant: det per matrix; LogMatrixDeterminant: sign and
 * log|det| per matrix. The determinant of an empty (0x0) matrix is 1,
 * as in TF and NumPy; Eigen gives that too, so no case of its own. */
tfm_code
tfm_k_matrix_determinant(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)a;
    const tfm_tensor *m = in[0];
    if (m->dtype != TFM_FLOAT32 && !is_f64(m))
        return tfm_linalg_no_kernel(op, m->dtype);
    int64_t n, nb = batch_count(m, &n);
    size_t step = (size_t)(n * n) * tfm_dtype_size(m->dtype);
    const char *pm = tfm_tensor_data(m);
    void *p0 = tfm_tensor_data(out[0]);
    int64_t failed;
    if (op == TFM_OP_LOG_MATRIX_DETERMINANT) {
        void *p1 = tfm_tensor_data(out[1]);
        if (is_f64(m))
            FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
                (tfm_lu_slogdet_f64(n, (const double *)(pm + b * step),
                                    (double *)p0 + b, (double *)p1 + b),
                 0));
        else
            FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
                (tfm_lu_slogdet_f32(n, (const float *)(pm + b * step),
                                    (float *)p0 + b, (float *)p1 + b), 0));
    } else if (is_f64(m)) {
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            (((double *)p0)[b] = tfm_lu_det_f64(
                 n, (const double *)(pm + b * step)), 0));
    } else {
        FOR_EACH_MATRIX(nb, nb * n * n * n, failed,
            (((float *)p0)[b] = tfm_lu_det_f32(
                 n, (const float *)(pm + b * step)), 0));
    }
    (void)failed;
    return TFM_OK;
}
