/* Max and average pooling, NHWC, and their gradients. Channels are the
 * contiguous inner dim, so every loop runs over a row of c values.
 *
 * Padding cells never take part: a max ignores them, and an average
 * divides by the number of real cells in its window (TF's SAME
 * pooling). Max pool gradients go to the first maximum of each window
 * in row-major window order; a NaN counts as a maximum. */
#include "conv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"

static void
pool_geom(tfm_conv_geom *g, const tfm_shape *x, const tfm_attrs *a)
{
    tfm_conv_geom_make(g, x, a->ints[TFM_CONV_WIN_H], a->ints[TFM_CONV_WIN_W],
                       x->dims[3], 1, 1, a);
}

/* The window of output pixel (oh, ow), clipped to the input. */
static inline void
window(const tfm_conv_geom *g, int64_t oh, int64_t ow, int64_t *h0,
       int64_t *h1, int64_t *w0, int64_t *w1)
{
    int64_t hs = oh * g->sh - g->pt, ws = ow * g->sw - g->pl;
    *h0 = hs < 0 ? 0 : hs;
    *w0 = ws < 0 ? 0 : ws;
    *h1 = hs + g->kh < g->h ? hs + g->kh : g->h;
    *w1 = ws + g->kw < g->w ? ws + g->kw : g->w;
}

static tfm_code
bad_dtype(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no CPU kernel for "
                     "dtype %s", tfm_ops[op].name, tfm_dtype_name(d));
}

/* Whether v replaces the running maximum m (NaN wins, ties keep m). */
#define BEATS(v, m) ((v) > (m) || ((v) != (v) && (m) == (m)))

#define POOL_IMPL(SUF, T)                                                    \
static void                                                                  \
max_pool_##SUF(const tfm_conv_geom *g, const T *x, T *y)                     \
{                                                                            \
    const int64_t C = g->c, rows = g->n * g->oh;                             \
    const int par = rows * g->ow * C * g->kh * g->kw >= TFM_PAR_MIN;         \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t r = 0; r < rows; r++) {                                     \
        int64_t n = r / g->oh, oh = r % g->oh;                               \
        const T *xn = x + n * g->h * g->w * C;                               \
        for (int64_t ow = 0; ow < g->ow; ow++) {                             \
            T *restrict o = y + (r * g->ow + ow) * C;                        \
            int64_t h0, h1, w0, w1;                                          \
            window(g, oh, ow, &h0, &h1, &w0, &w1);                           \
            for (int64_t c = 0; c < C; c++)                                  \
                o[c] = -INFINITY;                                            \
            for (int64_t ih = h0; ih < h1; ih++)                             \
                for (int64_t iw = w0; iw < w1; iw++) {                       \
                    const T *restrict s = xn + (ih * g->w + iw) * C;         \
                    for (int64_t c = 0; c < C; c++)                          \
                        o[c] = BEATS(s[c], o[c]) ? s[c] : o[c];              \
                }                                                            \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
/* Offsets (within image n) of the first maximum of each channel of the     \
 * window of (oh, ow), into arg[C]; best[C] is scratch. */                   \
static void                                                                  \
argmax_##SUF(const tfm_conv_geom *g, const T *xn, int64_t oh, int64_t ow,    \
             T *best, int64_t *arg)                                          \
{                                                                            \
    const int64_t C = g->c;                                                  \
    int64_t h0, h1, w0, w1;                                                  \
    window(g, oh, ow, &h0, &h1, &w0, &w1);                                   \
    for (int64_t c = 0; c < C; c++)                                          \
        arg[c] = -1;                                                         \
    for (int64_t ih = h0; ih < h1; ih++)                                     \
        for (int64_t iw = w0; iw < w1; iw++) {                               \
            int64_t off = (ih * g->w + iw) * C;                              \
            const T *s = xn + off;                                           \
            for (int64_t c = 0; c < C; c++)                                  \
                if (arg[c] < 0 || BEATS(s[c], best[c])) {                    \
                    best[c] = s[c];                                          \
                    arg[c] = off + c;                                        \
                }                                                            \
        }                                                                    \
}                                                                            \
                                                                             \
/* MaxPoolGrad (to_input) or MaxPoolGradGrad: both follow the argmax. */     \
static int                                                                   \
max_pool_route_##SUF(const tfm_conv_geom *g, const T *x, const T *gin,       \
                     T *gout, int to_input)                                  \
{                                                                            \
    const int64_t C = g->c, xsize = g->h * g->w * C;                         \
    const int64_t ysize = g->oh * g->ow * C;                                 \
    int failed = 0;                                                          \
    if (to_input)                                                            \
        memset(gout, 0, (size_t)(g->n * xsize) * sizeof(T));                 \
    /* Windows of one image may overlap: one image per thread. */           \
    const int par = g->n > 1 && g->n * ysize * g->kh * g->kw >= TFM_PAR_MIN; \
    _Pragma("omp parallel if(par)")                                          \
    {                                                                        \
        T *best = malloc((size_t)(C + 1) * sizeof(T));                       \
        int64_t *arg = malloc((size_t)(C + 1) * sizeof(int64_t));           \
        if (!best || !arg) {                                                 \
            _Pragma("omp atomic write")                                      \
            failed = 1;                                                      \
        }                                                                    \
        _Pragma("omp for schedule(static)")                                  \
        for (int64_t n = 0; n < g->n; n++) {                                 \
            const T *xn = x + n * xsize;                                     \
            for (int64_t q = 0; best && arg && q < g->oh * g->ow; q++) {     \
                argmax_##SUF(g, xn, q / g->ow, q % g->ow, best, arg);        \
                int64_t yo = n * ysize + q * C;                              \
                for (int64_t c = 0; c < C; c++) {                            \
                    if (to_input && arg[c] >= 0)                             \
                        gout[n * xsize + arg[c]] += gin[yo + c];             \
                    else if (!to_input)                                      \
                        gout[yo + c] = arg[c] >= 0                           \
                            ? gin[n * xsize + arg[c]] : (T)0;                \
                }                                                            \
            }                                                                \
        }                                                                    \
        free(best);                                                          \
        free(arg);                                                           \
    }                                                                        \
    return failed;                                                           \
}                                                                            \
                                                                             \
static void                                                                  \
avg_pool_##SUF(const tfm_conv_geom *g, const T *x, T *y)                     \
{                                                                            \
    const int64_t C = g->c, rows = g->n * g->oh;                             \
    const int par = rows * g->ow * C * g->kh * g->kw >= TFM_PAR_MIN;         \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t r = 0; r < rows; r++) {                                     \
        int64_t n = r / g->oh, oh = r % g->oh;                               \
        const T *xn = x + n * g->h * g->w * C;                               \
        for (int64_t ow = 0; ow < g->ow; ow++) {                             \
            T *restrict o = y + (r * g->ow + ow) * C;                        \
            int64_t h0, h1, w0, w1;                                          \
            window(g, oh, ow, &h0, &h1, &w0, &w1);                           \
            for (int64_t c = 0; c < C; c++)                                  \
                o[c] = 0;                                                    \
            for (int64_t ih = h0; ih < h1; ih++)                             \
                for (int64_t iw = w0; iw < w1; iw++) {                       \
                    const T *restrict s = xn + (ih * g->w + iw) * C;         \
                    for (int64_t c = 0; c < C; c++)                          \
                        o[c] += s[c];                                        \
                }                                                            \
            T scale = (T)1 / (T)((h1 - h0) * (w1 - w0));                     \
            for (int64_t c = 0; c < C; c++)                                  \
                o[c] *= scale;                                               \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
static void                                                                  \
avg_pool_grad_##SUF(const tfm_conv_geom *g, const T *dy, T *dx)              \
{                                                                            \
    const int64_t C = g->c, xsize = g->h * g->w * C;                         \
    memset(dx, 0, (size_t)(g->n * xsize) * sizeof(T));                       \
    const int par = g->n > 1 &&                                              \
        g->n * g->oh * g->ow * C * g->kh * g->kw >= TFM_PAR_MIN;             \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t n = 0; n < g->n; n++) {                                     \
        T *dxn = dx + n * xsize;                                             \
        for (int64_t oh = 0; oh < g->oh; oh++)                               \
            for (int64_t ow = 0; ow < g->ow; ow++) {                         \
                const T *restrict s =                                        \
                    dy + ((n * g->oh + oh) * g->ow + ow) * C;                \
                int64_t h0, h1, w0, w1;                                      \
                window(g, oh, ow, &h0, &h1, &w0, &w1);                       \
                T scale = (T)1 / (T)((h1 - h0) * (w1 - w0));                 \
                for (int64_t ih = h0; ih < h1; ih++)                         \
                    for (int64_t iw = w0; iw < w1; iw++) {                   \
                        T *restrict d = dxn + (ih * g->w + iw) * C;          \
                        for (int64_t c = 0; c < C; c++)                      \
                            d[c] += s[c] * scale;                            \
                    }                                                        \
            }                                                                \
    }                                                                        \
}

POOL_IMPL(f32, float)
POOL_IMPL(f64, double)

tfm_code
tfm_k_max_pool(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    tfm_conv_geom g;
    pool_geom(&g, &in[0]->shape, a);
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    switch (in[0]->dtype) {
    case TFM_FLOAT32:
        max_pool_f32(&g, tfm_tensor_data(in[0]), tfm_tensor_data(out[0]));
        return TFM_OK;
    case TFM_FLOAT64:
        max_pool_f64(&g, tfm_tensor_data(in[0]), tfm_tensor_data(out[0]));
        return TFM_OK;
    default:
        return bad_dtype(op, in[0]->dtype);
    }
}

static tfm_code
route(tfm_op op, tfm_tensor *const *in, const tfm_attrs *a, tfm_tensor *out,
      int to_input)
{
    tfm_conv_geom g;
    pool_geom(&g, &in[0]->shape, a);
    if (tfm_tensor_numel(out) == 0)
        return TFM_OK;
    int failed;
    switch (in[0]->dtype) {
    case TFM_FLOAT32:
        failed = max_pool_route_f32(&g, tfm_tensor_data(in[0]),
                                    tfm_tensor_data(in[2]),
                                    tfm_tensor_data(out), to_input);
        break;
    case TFM_FLOAT64:
        failed = max_pool_route_f64(&g, tfm_tensor_data(in[0]),
                                    tfm_tensor_data(in[2]),
                                    tfm_tensor_data(out), to_input);
        break;
    default:
        return bad_dtype(op, in[0]->dtype);
    }
    if (failed)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                         "its work buffers", tfm_ops[op].name);
    return TFM_OK;
}

tfm_code
tfm_k_max_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    tfm_conv_geom g;
    pool_geom(&g, &in[0]->shape, a);
    if (tfm_tensor_numel(out[0]) > 0 &&
        tfm_max_pool_grad_tiled(&g, in[0]->dtype, tfm_tensor_data(in[0]),
                                tfm_tensor_data(in[2]),
                                tfm_tensor_data(out[0]), 0, NULL) == 0)
        return TFM_OK;
    return route(op, in, a, out[0], 1);
}

tfm_code
tfm_k_max_pool_grad_grad(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    return route(op, in, a, out[0], 0);
}

tfm_code
tfm_k_avg_pool(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    tfm_conv_geom g;
    pool_geom(&g, &in[0]->shape, a);
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    switch (in[0]->dtype) {
    case TFM_FLOAT32:
        avg_pool_f32(&g, tfm_tensor_data(in[0]), tfm_tensor_data(out[0]));
        return TFM_OK;
    case TFM_FLOAT64:
        avg_pool_f64(&g, tfm_tensor_data(in[0]), tfm_tensor_data(out[0]));
        return TFM_OK;
    default:
        return bad_dtype(op, in[0]->dtype);
    }
}

tfm_code
tfm_k_avg_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    tfm_conv_geom g;
    pool_geom(&g, &in[0]->shape, a);
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    switch (in[0]->dtype) {
    case TFM_FLOAT32:
        avg_pool_grad_f32(&g, tfm_tensor_data(in[1]),
                          tfm_tensor_data(out[0]));
        return TFM_OK;
    case TFM_FLOAT64:
        avg_pool_grad_f64(&g, tfm_tensor_data(in[1]),
                          tfm_tensor_data(out[0]));
        return TFM_OK;
    default:
        return bad_dtype(op, in[0]->dtype);
    }
}
