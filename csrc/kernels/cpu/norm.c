/* Layer normalization over the last axis, its gradient, and the softmax
 * gradient, each one pass over rows that stay in L1. Composed from
 * elementwise ops and reductions, LayerNormalization's forward is about
 * ten passes over the activations and its gradient some twenty; the
 * softmax gradient four. */
#include <math.h>
#include <stdlib.h>

#include "loops.h"
#include "norm.h"

/* dgamma/dbeta are sums over rows: rows go in at most NBLK blocks, each
 * with its own partial sums, added in block order, so results do not
 * depend on the thread count. */
#define NBLK 16

/* mean and 1/sqrt(var + eps) of one row (two passes: no cancellation).
 * Sums in T: a row's partial sums stay short (16 lanes), and double
 * converts would halve the vector width. */
#define ROW_STATS(T)                                                         \
static inline void                                                           \
row_stats_##T(const T *restrict x, int64_t n, double eps, T *mu, T *rs)      \
{                                                                            \
    T s = 0, q = 0;                                                          \
    _Pragma("omp simd reduction(+:s)")                                       \
    for (int64_t i = 0; i < n; i++)                                          \
        s += x[i];                                                           \
    T m = s / (T)n;                                                          \
    _Pragma("omp simd reduction(+:q)")                                       \
    for (int64_t i = 0; i < n; i++) {                                        \
        T d = x[i] - m;                                                      \
        q += d * d;                                                          \
    }                                                                        \
    *mu = m;                                                                 \
    *rs = (T)(1.0 / sqrt((double)q / (double)n + eps));                      \
}

/* Rows summed in T into dgamma/dbeta before those go into the block's
 * double sums: short runs keep T's rounding small. */
#define FLUSH_ROWS 64

#define LAYER_NORM(T)                                                        \
ROW_STATS(T)                                                                 \
static void                                                                  \
layer_norm_##T(const T *x, const T *g, const T *b, T *y, int64_t rows,       \
               int64_t n, double eps)                                        \
{                                                                            \
    TFM_PAR_FOR(rows * n >= TFM_PAR_MIN, r, rows,                            \
        const T *restrict xr = x + r * n;                                    \
        T *restrict yr = y + r * n;                                          \
        T mu, rs;                                                            \
        row_stats_##T(xr, n, eps, &mu, &rs);                                 \
        _Pragma("omp simd")                                                  \
        for (int64_t i = 0; i < n; i++)                                      \
            yr[i] = (xr[i] - mu) * rs * g[i] + b[i];                         \
    );                                                                       \
}                                                                            \
                                                                             \
/* dx = rs * (v - mean(v) - xh * mean(v * xh)), v = gamma * dy;             \
 * part[blk] holds that block's sums of dy * xh (dgamma) and dy (dbeta);    \
 * acc (2n T per block) the current run of FLUSH_ROWS rows. */               \
static void                                                                  \
layer_norm_grad_##T(const T *dy, const T *x, const T *g, T *dx, double *part,\
                    T *accs, int nblk, int64_t rows, int64_t n, double eps)  \
{                                                                            \
    int64_t per = (rows + nblk - 1) / nblk;                                  \
    TFM_PAR_FOR(rows * n >= TFM_PAR_MIN, k, nblk,                            \
        double *restrict dg = part + k * 2 * n;                              \
        T *restrict ag = accs + k * 2 * n, *restrict ab = ag + n;            \
        for (int64_t i = 0; i < 2 * n; i++) {                                \
            dg[i] = 0;                                                       \
            ag[i] = 0;                                                       \
        }                                                                    \
        int64_t r0 = k * per;                                                \
        int64_t r1 = (k + 1) * per < rows ? (k + 1) * per : rows;            \
        for (int64_t r = r0; r < r1; r++) {                                  \
            const T *restrict xr = x + r * n, *restrict gr = dy + r * n;     \
            T *restrict dr = dx + r * n;                                     \
            T mu, rs, sv = 0, svx = 0;                                       \
            row_stats_##T(xr, n, eps, &mu, &rs);                             \
            _Pragma("omp simd reduction(+:sv, svx)")                         \
            for (int64_t i = 0; i < n; i++) {                                \
                T xh = (xr[i] - mu) * rs, v = g[i] * gr[i];                  \
                sv += v;                                                     \
                svx += v * xh;                                               \
                ag[i] += gr[i] * xh;                                         \
                ab[i] += gr[i];                                              \
            }                                                                \
            T mv = sv / (T)n, mvx = svx / (T)n;                              \
            _Pragma("omp simd")                                              \
            for (int64_t i = 0; i < n; i++) {                                \
                T xh = (xr[i] - mu) * rs;                                    \
                dr[i] = rs * (g[i] * gr[i] - mv - xh * mvx);                 \
            }                                                                \
            if ((r - r0) % FLUSH_ROWS == FLUSH_ROWS - 1 || r == r1 - 1)      \
                for (int64_t i = 0; i < 2 * n; i++) {                        \
                    dg[i] += ag[i];                                          \
                    ag[i] = 0;                                               \
                }                                                            \
        }                                                                    \
    );                                                                       \
}

LAYER_NORM(float)
LAYER_NORM(double)

static int64_t
last_dim(const tfm_tensor *t)
{
    return t->shape.dims[t->shape.ndim - 1];
}

tfm_code
tfm_k_layer_norm(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    int64_t n = last_dim(in[0]);
    int64_t rows = n ? tfm_tensor_numel(in[0]) / n : 0;
    if (in[0]->dtype == TFM_FLOAT32)
        layer_norm_float(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                         tfm_tensor_data(in[2]), tfm_tensor_data(out[0]),
                         rows, n, a->f[0]);
    else
        layer_norm_double(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                          tfm_tensor_data(in[2]), tfm_tensor_data(out[0]),
                          rows, n, a->f[0]);
    return TFM_OK;
}

tfm_code
tfm_k_layer_norm_grad(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    int64_t n = last_dim(in[1]);
    int64_t rows = n ? tfm_tensor_numel(in[1]) / n : 0;
    int nblk = rows * n >= TFM_PAR_MIN ? NBLK : 1;
    if (rows < nblk)
        nblk = rows ? (int)rows : 1;
    size_t cells = (size_t)nblk * 2 * (size_t)(n ? n : 1);
    double *part = calloc(cells, sizeof *part);
    void *accs = malloc(cells * tfm_dtype_size(in[1]->dtype));
    if (!part || !accs) {
        free(part);
        free(accs);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory "
                         "for %d x %lld partial sums", tfm_ops[op].name,
                         nblk, (long long)(2 * n));
    }
    if (rows) {
        if (in[1]->dtype == TFM_FLOAT32)
            layer_norm_grad_float(tfm_tensor_data(in[0]),
                                  tfm_tensor_data(in[1]),
                                  tfm_tensor_data(in[2]),
                                  tfm_tensor_data(out[0]), part, accs, nblk,
                                  rows, n, a->f[0]);
        else
            layer_norm_grad_double(tfm_tensor_data(in[0]),
                                   tfm_tensor_data(in[1]),
                                   tfm_tensor_data(in[2]),
                                   tfm_tensor_data(out[0]), part, accs,
                                   nblk, rows, n, a->f[0]);
    }
    for (int k = 1; k < nblk; k++)
        for (int64_t i = 0; i < 2 * n; i++)
            part[i] += part[k * 2 * n + i];
    if (in[1]->dtype == TFM_FLOAT32) {
        float *dg = tfm_tensor_data(out[1]), *db = tfm_tensor_data(out[2]);
        for (int64_t i = 0; i < n; i++) {
            dg[i] = (float)part[i];
            db[i] = (float)part[n + i];
        }
    } else {
        double *dg = tfm_tensor_data(out[1]), *db = tfm_tensor_data(out[2]);
        for (int64_t i = 0; i < n; i++) {
            dg[i] = part[i];
            db[i] = part[n + i];
        }
    }
    free(part);
    free(accs);
    return TFM_OK;
}

/* ---- softmax gradient: dx = y * (dy - sum(dy * y)) along an axis ------ */

#define SOFTMAX_GRAD(T)                                                      \
static void                                                                  \
softmax_grad_##T(const T *y, const T *dy, T *dx, int64_t outer, int64_t n,   \
                 int64_t inner)                                              \
{                                                                            \
    int64_t count = outer * inner;                                           \
    TFM_PAR_FOR(count * n >= TFM_PAR_MIN, s, count,                          \
        int64_t base = (s / inner) * n * inner + s % inner;                  \
        const T *restrict ys = y + base, *restrict gs = dy + base;           \
        T *restrict xs = dx + base;                                          \
        double acc = 0;                                                      \
        if (inner == 1) {                                                    \
            _Pragma("omp simd reduction(+:acc)")                             \
            for (int64_t i = 0; i < n; i++)                                  \
                acc += gs[i] * ys[i];                                        \
            T t = (T)acc;                                                    \
            _Pragma("omp simd")                                              \
            for (int64_t i = 0; i < n; i++)                                  \
                xs[i] = ys[i] * (gs[i] - t);                                 \
        } else {                                                             \
            for (int64_t i = 0; i < n; i++)                                  \
                acc += gs[i * inner] * ys[i * inner];                        \
            T t = (T)acc;                                                    \
            for (int64_t i = 0; i < n; i++)                                  \
                xs[i * inner] = ys[i * inner] * (gs[i * inner] - t);         \
        }                                                                    \
    );                                                                       \
}

SOFTMAX_GRAD(float)
SOFTMAX_GRAD(double)

tfm_code
tfm_k_softmax_grad(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    const tfm_shape *s = &in[0]->shape;
    int axis;
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0], s->ndim, &axis);
    if (rc)
        return rc;
    int64_t outer = 1, inner = 1, n = s->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= s->dims[d];
    for (int d = axis + 1; d < s->ndim; d++)
        inner *= s->dims[d];
    if (in[0]->dtype == TFM_FLOAT32)
        softmax_grad_float(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                           tfm_tensor_data(out[0]), outer, n, inner);
    else
        softmax_grad_double(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                            tfm_tensor_data(out[0]), outer, n, inner);
    return TFM_OK;
}
