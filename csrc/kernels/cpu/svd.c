/* Svd on the CPU: each matrix of the batch through Eigen's BDCSVD
 * (svd_eigen.cc); float16 arrives as float32 (the dispatcher widens ops
 * without TFM_OPF_F16). */
#include <string.h>

#include "linalg.h"
#include "loops.h"

/* Matrix b of a batch of k x k matrices set to the identity. */
static void
eye(void *base, int64_t b, int64_t k, size_t es, int f64)
{
    char *p = (char *)base + (size_t)(b * k * k) * es;
    memset(p, 0, (size_t)(k * k) * es);
    for (int64_t i = 0; i < k; i++) {
        if (f64)
            ((double *)p)[i * k + i] = 1.0;
        else
            ((float *)p)[i * k + i] = 1.0f;
    }
}

/* Below this much work (batch * m * n * min(m, n)) one thread runs the
 * whole batch. */
#define SVD_PAR_MIN (64 * 64 * 64)

tfm_code
tfm_k_svd(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int f64 = x->dtype == TFM_FLOAT64;
    if (x->dtype != TFM_FLOAT32 && !f64)
        return tfm_linalg_no_kernel(op, x->dtype);
    int r = x->shape.ndim;
    int64_t m = x->shape.dims[r - 2], n = x->shape.dims[r - 1];
    int64_t p = m < n ? m : n;
    int full = a->i[0] != 0;
    int64_t cu = full ? m : p, cv = full ? n : p;
    int64_t nb = 1;
    for (int d = 0; d < r - 2; d++)
        nb *= x->shape.dims[d];
    size_t es = tfm_dtype_size(x->dtype);
    if (p == 0) {
        /* No values; the full U and V of an empty side are identities
         * (TF's too), the thin ones empty. */
        if (full)
            for (int64_t b = 0; b < nb; b++) {
                eye(tfm_tensor_data(out[1]), b, m, es, f64);
                eye(tfm_tensor_data(out[2]), b, n, es, f64);
            }
        return TFM_OK;
    }
    const char *px = tfm_tensor_data(x);
    char *ps = tfm_tensor_data(out[0]), *pu = tfm_tensor_data(out[1]);
    char *pv = tfm_tensor_data(out[2]);
    TFM_PAR_FOR(nb > 1 && nb * m * n * p >= SVD_PAR_MIN, b, nb, {
        const char *ab = px + (size_t)(b * m * n) * es;
        char *sb = ps + (size_t)(b * p) * es;
        char *ub = pu + (size_t)(b * m * cu) * es;
        char *vb = pv + (size_t)(b * n * cv) * es;
        if (f64)
            tfm_svd_f64(m, n, (const double *)ab, full, (double *)sb,
                        (double *)ub, (double *)vb);
        else
            tfm_svd_f32(m, n, (const float *)ab, full, (float *)sb,
                        (float *)ub, (float *)vb);
    });
    return TFM_OK;
}
