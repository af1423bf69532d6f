/* MatrixBandPart, Cholesky and MatrixTriangularSolve on the CPU. The
 * factorization and the solves go through Eigen (triangular_eigen.cc),
 * one matrix per call; float16 reaches Cholesky and the solve as float32
 * (the dispatcher widens ops without TFM_OPF_F16). */
#include <string.h>

#include "linalg.h"
#include "loops.h"

/* Below this much work (batch * n^3) one thread does the whole batch. */
#define TRI_PAR_MIN (64 * 64 * 64)

/* Copies the band of each matrix and zeros the rest; any dtype (bytes). */
tfm_code
tfm_k_band_part(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int r = x->shape.ndim;
    int64_t m = x->shape.dims[r - 2], n = x->shape.dims[r - 1];
    int64_t lo = a->i[0] < 0 ? m : a->i[0];
    int64_t up = a->i[1] < 0 ? n : a->i[1];
    if (tfm_tensor_numel(x) == 0)
        return TFM_OK;
    int64_t rows = tfm_tensor_numel(x) / n;     /* matrix rows, all */
    size_t es = tfm_dtype_size(x->dtype);
    const char *px = tfm_tensor_data(x);
    char *po = tfm_tensor_data(out[0]);
    TFM_PAR_FOR(rows * n >= TFM_PAR_MIN, t, rows, {
        int64_t i = t % m;
        /* columns j kept: i - lo <= j <= i + up */
        int64_t j0 = i - lo < 0 ? 0 : i - lo;
        int64_t j1 = i + up + 1 > n ? n : i + up + 1;
        const char *src = px + (size_t)(t * n) * es;
        char *dst = po + (size_t)(t * n) * es;
        if (j0 >= j1) {
            memset(dst, 0, (size_t)n * es);
        } else {
            memset(dst, 0, (size_t)j0 * es);
            memcpy(dst + j0 * es, src + j0 * es, (size_t)(j1 - j0) * es);
            memset(dst + j1 * es, 0, (size_t)(n - j1) * es);
        }
    });
    return TFM_OK;
}

tfm_code
tfm_k_cholesky(tfm_op op, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, tfm_tensor *const *out, int nout,
               const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)a;
    const tfm_tensor *x = in[0];
    int f64 = x->dtype == TFM_FLOAT64;
    if (x->dtype != TFM_FLOAT32 && !f64)
        return tfm_linalg_no_kernel(op, x->dtype);
    int r = x->shape.ndim;
    int64_t n = x->shape.dims[r - 1];
    if (tfm_tensor_numel(x) == 0)
        return TFM_OK;
    int64_t nb = tfm_tensor_numel(x) / (n * n);
    size_t step = (size_t)(n * n) * tfm_dtype_size(x->dtype);
    const char *px = tfm_tensor_data(x);
    char *po = tfm_tensor_data(out[0]);
    TFM_PAR_FOR(nb > 1 && nb * n * n * n >= TRI_PAR_MIN, b, nb, {
        if (f64)
            tfm_cholesky_f64(n, (const double *)(px + b * step),
                             (double *)(po + b * step));
        else
            tfm_cholesky_f32(n, (const float *)(px + b * step),
                             (float *)(po + b * step));
    });
    return TFM_OK;
}

tfm_code
tfm_k_triangular_solve(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *m = in[0], *rhs = in[1], *o = out[0];
    int f64 = m->dtype == TFM_FLOAT64;
    if (m->dtype != TFM_FLOAT32 && !f64)
        return tfm_linalg_no_kernel(op, m->dtype);
    if (tfm_tensor_numel(o) == 0)
        return TFM_OK;
    int rm = m->shape.ndim, rr = rhs->shape.ndim, ro = o->shape.ndim;
    int64_t n = m->shape.dims[rm - 1], k = rhs->shape.dims[rr - 1];
    /* Each output matrix finds its matrix and rhs through broadcast
     * strides counted in matrices. */
    tfm_shape bm = tfm_shape_make(rm - 2, m->shape.dims);
    tfm_shape br = tfm_shape_make(rr - 2, rhs->shape.dims);
    tfm_shape bo = tfm_shape_make(ro - 2, o->shape.dims);
    int64_t sm[TFM_MAX_DIMS], sr[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&bm, &bo, sm);
    tfm_shape_broadcast_strides(&br, &bo, sr);
    int64_t nb = tfm_shape_numel(&bo);
    size_t es = tfm_dtype_size(m->dtype);
    const char *pm = tfm_tensor_data(m), *pr = tfm_tensor_data(rhs);
    char *po = tfm_tensor_data(o);
    int lower = a->i[0] != 0, adj = a->i[1] != 0;
    TFM_PAR_FOR(nb > 1 && nb * n * n * k >= TRI_PAR_MIN, t, nb, {
        int64_t im, ir;
        tfm_batch_inputs(bo.ndim, bo.dims, sm, sr, t, &im, &ir);
        const char *am = pm + (size_t)(im * n * n) * es;
        const char *ar = pr + (size_t)(ir * n * k) * es;
        char *ao = po + (size_t)(t * n * k) * es;
        if (f64)
            tfm_trisolve_f64(n, k, (const double *)am, lower, adj,
                             (const double *)ar, (double *)ao);
        else
            tfm_trisolve_f32(n, k, (const float *)am, lower, adj,
                             (const float *)ar, (float *)ao);
    });
    return TFM_OK;
}
