/* Max pooling's gradient when no two windows share a cell (strides at
 * least the window: Keras's MaxPooling2D default), and
 * _FusedMaxPoolGrad, the same routing with ReluGrad and the bias
 * gradient folded in.
 *
 * With disjoint windows every input cell gets at most one gradient, so
 * each window writes its cells once, the routed value or 0, and rows of
 * different output rows never meet: no zero fill first (unless some
 * cells lie in no window), no scatter, and the work splits by output
 * row. Channels go in blocks held in small arrays so the max, the
 * argmax and the writes are vector loops. The first maximum of a window
 * in row-major order wins and a NaN counts as a maximum, as in
 * conv_pool.c's general path.
 *
 * A CNN's backward runs MaxPoolGrad(x, y, dy), then ReluGrad(., x) (x is
 * the pooled relu output), then Sum over N, H, W for the bias: three
 * passes over the conv-sized gradient. The routed cell holds the
 * window's maximum m, so ReluGrad keeps the gradient iff m > 0, and the
 * bias gradient is the sum of what was routed: both come from the
 * pool-sized dy while it is in registers. */
#include "conv.h"

#ifdef _OPENMP
#include <omp.h>
#else /* the wasm runtime builds without OpenMP: one thread */
#define omp_get_max_threads() 1
#define omp_get_thread_num() 0
#define omp_get_num_threads() 1
#endif
#include <stdlib.h>
#include <string.h>

#include "loops.h"

enum { BLOCK = 64 };

/* Whether v replaces the running maximum m (NaN wins, ties keep m),
 * without branches so that the channel loops vectorize. */
#define BEATS_V(v, m) (((v) > (m)) | (((v) != (v)) & ((m) == (m))))

int
tfm_pool_windows_disjoint(const tfm_conv_geom *g)
{
    return g->sh >= g->kh && g->sw >= g->kw;
}

/* Whether the disjoint windows also cover every input cell. */
static int
covers_all(const tfm_conv_geom *g)
{
    return g->sh == g->kh && g->sw == g->kw &&
        (g->oh - 1) * g->sh - g->pt + g->kh >= g->h &&
        (g->ow - 1) * g->sw - g->pl + g->kw >= g->w;
}

#define TILED_IMPL(SUF, T, IT)                                               \
static void                                                                  \
tiled_row_##SUF(const tfm_conv_geom *g, const T *x, const T *dy, T *dx,      \
                int relu, double *acc, int64_t r)                            \
{                                                                            \
    const int64_t C = g->c, n = r / g->oh, oh = r % g->oh;                   \
    const T *xn = x + n * g->h * g->w * C;                                   \
    T *dxn = dx + n * g->h * g->w * C;                                       \
    int64_t hs = oh * g->sh - g->pt;                                         \
    int64_t h0 = hs < 0 ? 0 : hs;                                            \
    int64_t h1 = hs + g->kh < g->h ? hs + g->kh : g->h;                      \
    int64_t off[64];                                                         \
    T m[BLOCK], gm[BLOCK];                                                   \
    IT a[BLOCK];                                                             \
    for (int64_t ow = 0; ow < g->ow; ow++) {                                 \
        int64_t ws = ow * g->sw - g->pl;                                     \
        int64_t w0 = ws < 0 ? 0 : ws;                                        \
        int64_t w1 = ws + g->kw < g->w ? ws + g->kw : g->w;                  \
        int nc = 0;                                                          \
        for (int64_t ih = h0; ih < h1; ih++)                                 \
            for (int64_t iw = w0; iw < w1; iw++)                             \
                off[nc++] = (ih * g->w + iw) * C;                            \
        const T *gy = dy + (r * g->ow + ow) * C;                             \
        for (int64_t c0 = 0; nc && c0 < C; c0 += BLOCK) {                    \
            const int64_t nb = C - c0 < BLOCK ? C - c0 : BLOCK;              \
            const T *restrict s = xn + off[0] + c0;                          \
            for (int64_t c = 0; c < nb; c++) {                               \
                m[c] = s[c];                                                 \
                a[c] = 0;                                                    \
            }                                                                \
            for (int k = 1; k < nc; k++) {                                   \
                s = xn + off[k] + c0;                                        \
                for (int64_t c = 0; c < nb; c++) {                           \
                    IT b = BEATS_V(s[c], m[c]);                              \
                    m[c] = b ? s[c] : m[c];                                  \
                    a[c] = b ? (IT)k : a[c];                                 \
                }                                                            \
            }                                                                \
            for (int64_t c = 0; c < nb; c++)                                 \
                gm[c] = relu && !(m[c] > 0) ? (T)0 : gy[c0 + c];             \
            if (acc)                                                         \
                for (int64_t c = 0; c < nb; c++)                             \
                    acc[c0 + c] += gm[c];                                    \
            for (int k = 0; k < nc; k++) {                                   \
                T *restrict d = dxn + off[k] + c0;                           \
                for (int64_t c = 0; c < nb; c++)                             \
                    d[c] = a[c] == (IT)k ? gm[c] : (T)0;                     \
            }                                                                \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
static int                                                                   \
tiled_##SUF(const tfm_conv_geom *g, const T *x, const T *dy, T *dx,          \
            int relu, T *db)                                                 \
{                                                                            \
    const int64_t C = g->c, rows = g->n * g->oh;                             \
    if (!covers_all(g))                                                      \
        memset(dx, 0, (size_t)(g->n * g->h * g->w * C) * sizeof(T));         \
    const int par = rows > 1 &&                                              \
        rows * g->ow * C * g->kh * g->kw >= TFM_PAR_MIN;                     \
    const int nt = par ? omp_get_max_threads() : 1;                          \
    /* Per-thread sums, added in thread order: the same bits every run */    \
    /* for a given thread count. */                                          \
    double *acc = db ? calloc((size_t)(nt * C + 1), sizeof(double)) : NULL;  \
    if (db && !acc)                                                          \
        return 1;                                                            \
    int used = 1;                                                            \
    _Pragma("omp parallel if(par) num_threads(nt)")                          \
    {                                                                        \
        int t = omp_get_thread_num();                                        \
        if (t == 0) /* no barrier: the region's end is one */                \
            used = omp_get_num_threads();                                    \
        double *mine = acc ? acc + t * C : NULL;                             \
        _Pragma("omp for schedule(static)")                                  \
        for (int64_t r = 0; r < rows; r++)                                   \
            tiled_row_##SUF(g, x, dy, dx, relu, mine, r);                    \
    }                                                                        \
    if (db) {                                                                \
        for (int64_t c = 0; c < C; c++) {                                    \
            double s = 0;                                                    \
            for (int t = 0; t < used; t++)                                   \
                s += acc[t * C + c];                                         \
            db[c] = (T)s;                                                    \
        }                                                                    \
        free(acc);                                                           \
    }                                                                        \
    return 0;                                                                \
}

TILED_IMPL(f32, float, int32_t)
TILED_IMPL(f64, double, int64_t)

int
tfm_max_pool_grad_tiled(const tfm_conv_geom *g, tfm_dtype dt, const void *x,
                        const void *dy, void *dx, int relu, void *db)
{
    if (!tfm_pool_windows_disjoint(g) || g->kh * g->kw > 64)
        return -1;
    if (dt == TFM_FLOAT32)
        return tiled_f32(g, x, dy, dx, relu, db);
    if (dt == TFM_FLOAT64)
        return tiled_f64(g, x, dy, dx, relu, db);
    return -1;
}

/* Overlapping windows: MaxPoolGrad's scatter has filled dx; ReluGrad
 * against x and the channel sums follow in one more pass. */
#define MASK_IMPL(SUF, T)                                                    \
static int                                                                   \
mask_sum_##SUF(const tfm_conv_geom *g, const T *x, T *dx, T *db)             \
{                                                                            \
    const int64_t C = g->c, rows = g->n * g->h * g->w;                       \
    double *acc = calloc((size_t)C + 1, sizeof(double));                     \
    if (!acc)                                                                \
        return 1;                                                            \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const T *xr = x + r * C;                                             \
        T *d = dx + r * C;                                                   \
        for (int64_t c = 0; c < C; c++) {                                    \
            d[c] = xr[c] > 0 ? d[c] : (T)0;                                  \
            acc[c] += d[c];                                                  \
        }                                                                    \
    }                                                                        \
    for (int64_t c = 0; c < C; c++)                                          \
        db[c] = (T)acc[c];                                                   \
    free(acc);                                                               \
    return 0;                                                                \
}

MASK_IMPL(f32, float)
MASK_IMPL(f64, double)

tfm_code
tfm_k_fused_max_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &in[0]->shape, a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], in[0]->shape.dims[3], 1, 1,
                       a);
    tfm_dtype dt = in[0]->dtype;
    void *dx = tfm_tensor_data(out[0]), *db = tfm_tensor_data(out[1]);
    if (tfm_tensor_numel(out[0]) == 0 || tfm_tensor_numel(in[2]) == 0) {
        /* Nothing routed: the gradients are zeros. */
        memset(dx, 0, (size_t)tfm_tensor_nbytes(out[0]));
        memset(db, 0, (size_t)tfm_tensor_nbytes(out[1]));
        return TFM_OK;
    }
    int rc = tfm_max_pool_grad_tiled(&g, dt, tfm_tensor_data(in[0]),
                                     tfm_tensor_data(in[2]), dx, 1, db);
    if (rc < 0) {
        tfm_code c = tfm_k_max_pool_grad(op, in, 3, a, out, 1, ctx);
        if (c)
            return c;
        rc = dt == TFM_FLOAT32
            ? mask_sum_f32(&g, tfm_tensor_data(in[0]), dx, db)
            : mask_sum_f64(&g, tfm_tensor_data(in[0]), dx, db);
    }
    if (rc)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                         "its work buffers", tfm_ops[op].name);
    return TFM_OK;
}
