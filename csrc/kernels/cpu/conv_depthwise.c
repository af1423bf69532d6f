/* DepthwiseConv2dNative and its two backprops, NHWC, filter [kh, kw, in,
 * multiplier]: output channel c * M + m sees only input channel c.
 *
 * float32 runs through oneDNN's grouped convolution (groups = in
 * channels, conv_dnnl.c), whose JIT depthwise kernels keep the channel
 * loop in vector registers. The direct loops below are the fallback:
 * float64, a build without oneDNN, TFMINI_CONV=im2col, and shapes
 * oneDNN serves only with its reference code. They are a few
 * multiply-adds per output value, so they are written for a contiguous
 * inner loop over (c, m) that the compiler vectorizes, not for reuse:
 *
 *   forward:  each output row (n, oh) is owned by one thread;
 *   BPI:      gathers into each input row (n, ih), so no two threads
 *             write one value (a scatter from dy would race);
 *   BPF:      each thread owns the filter taps (i, j) it sums, over
 *             every (n, oh, ow). */
#include "conv.h"

#include <stdint.h>
#include <string.h>

/* Multiply-adds above which a loop is split across threads. */
#define PAR_FLOPS (1 << 16)

#define DW_IMPL(SUF, T)                                                      \
static void                                                                  \
fwd_##SUF(const tfm_conv_geom *g, const T *x, const T *f, T *y)              \
{                                                                            \
    const int64_t C = g->c, M = g->o / (g->c ? g->c : 1), CM = g->o;         \
    const int64_t rows = g->n * g->oh;                                       \
    const int par = rows * g->ow * g->kh * g->kw * CM > PAR_FLOPS;           \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const int64_t n = r / g->oh, oh = r % g->oh;                         \
        T *yrow = y + r * g->ow * CM;                                        \
        memset(yrow, 0, (size_t)(g->ow * CM) * sizeof(T));                   \
        for (int64_t i = 0; i < g->kh; i++) {                                \
            const int64_t ih = oh * g->sh - g->pt + i * g->dh;               \
            if (ih < 0 || ih >= g->h)                                        \
                continue;                                                    \
            const T *xrow = x + (n * g->h + ih) * g->w * C;                  \
            for (int64_t j = 0; j < g->kw; j++) {                            \
                const T *fp = f + (i * g->kw + j) * CM;                      \
                for (int64_t ow = 0; ow < g->ow; ow++) {                     \
                    const int64_t iw = ow * g->sw - g->pl + j * g->dw;       \
                    if (iw < 0 || iw >= g->w)                                \
                        continue;                                            \
                    const T *restrict xp = xrow + iw * C;                    \
                    T *restrict yp = yrow + ow * CM;                         \
                    if (M == 1) {                                            \
                        for (int64_t c = 0; c < C; c++)                      \
                            yp[c] += xp[c] * fp[c];                          \
                    } else {                                                 \
                        for (int64_t c = 0; c < C; c++)                      \
                            for (int64_t m = 0; m < M; m++)                  \
                                yp[c * M + m] += xp[c] * fp[c * M + m];      \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
static void                                                                  \
bpi_##SUF(const tfm_conv_geom *g, const T *f, const T *dy, T *dx)            \
{                                                                            \
    const int64_t C = g->c, M = g->o / (g->c ? g->c : 1), CM = g->o;         \
    const int64_t rows = g->n * g->h;                                        \
    const int par = g->n * g->oh * g->ow * g->kh * g->kw * CM > PAR_FLOPS;   \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const int64_t n = r / g->h, ih = r % g->h;                           \
        T *dxrow = dx + r * g->w * C;                                        \
        memset(dxrow, 0, (size_t)(g->w * C) * sizeof(T));                    \
        for (int64_t i = 0; i < g->kh; i++) {                                \
            const int64_t t = ih + g->pt - i * g->dh;                        \
            if (t < 0 || t % g->sh)                                          \
                continue;                                                    \
            const int64_t oh = t / g->sh;                                    \
            if (oh >= g->oh)                                                 \
                continue;                                                    \
            const T *dyrow = dy + (n * g->oh + oh) * g->ow * CM;             \
            for (int64_t j = 0; j < g->kw; j++) {                            \
                const T *fp = f + (i * g->kw + j) * CM;                      \
                for (int64_t iw = 0; iw < g->w; iw++) {                      \
                    const int64_t u = iw + g->pl - j * g->dw;                \
                    if (u < 0 || u % g->sw)                                  \
                        continue;                                            \
                    const int64_t ow = u / g->sw;                            \
                    if (ow >= g->ow)                                         \
                        continue;                                            \
                    const T *restrict dp = dyrow + ow * CM;                  \
                    T *restrict xp = dxrow + iw * C;                         \
                    if (M == 1) {                                            \
                        for (int64_t c = 0; c < C; c++)                      \
                            xp[c] += dp[c] * fp[c];                          \
                        continue;                                            \
                    }                                                        \
                    for (int64_t c = 0; c < C; c++) {                        \
                        T s = 0;                                             \
                        for (int64_t m = 0; m < M; m++)                      \
                            s += dp[c * M + m] * fp[c * M + m];              \
                        xp[c] += s;                                          \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
static void                                                                  \
bpf_##SUF(const tfm_conv_geom *g, const T *x, const T *dy, T *df)            \
{                                                                            \
    const int64_t C = g->c, M = g->o / (g->c ? g->c : 1), CM = g->o;         \
    const int64_t taps = g->kh * g->kw;                                      \
    const int par = g->n * g->oh * g->ow * taps * CM > PAR_FLOPS;            \
    _Pragma("omp parallel for schedule(static) if(par)")                     \
    for (int64_t t = 0; t < taps; t++) {                                     \
        const int64_t i = t / g->kw, j = t % g->kw;                          \
        T *fp = df + t * CM;                                                 \
        memset(fp, 0, (size_t)CM * sizeof(T));                               \
        for (int64_t n = 0; n < g->n; n++)                                   \
            for (int64_t oh = 0; oh < g->oh; oh++) {                         \
                const int64_t ih = oh * g->sh - g->pt + i * g->dh;           \
                if (ih < 0 || ih >= g->h)                                    \
                    continue;                                                \
                const T *xrow = x + (n * g->h + ih) * g->w * C;              \
                const T *dyrow = dy + (n * g->oh + oh) * g->ow * CM;         \
                for (int64_t ow = 0; ow < g->ow; ow++) {                     \
                    const int64_t iw = ow * g->sw - g->pl + j * g->dw;       \
                    if (iw < 0 || iw >= g->w)                                \
                        continue;                                            \
                    const T *restrict xp = xrow + iw * C;                    \
                    const T *restrict dp = dyrow + ow * CM;                  \
                    T *restrict acc = fp;                                    \
                    if (M == 1) {                                            \
                        for (int64_t c = 0; c < C; c++)                      \
                            acc[c] += xp[c] * dp[c];                         \
                        continue;                                            \
                    }                                                        \
                    for (int64_t c = 0; c < C; c++)                          \
                        for (int64_t m = 0; m < M; m++)                      \
                            acc[c * M + m] += xp[c] * dp[c * M + m];         \
                }                                                            \
            }                                                                \
    }                                                                        \
}                                                                            \
                                                                             \
static void                                                                  \
loops_##SUF(int kind, const tfm_conv_geom *g, const T *a, const T *b,        \
            T *out)                                                          \
{                                                                            \
    if (kind == TFM_CONV_FWD)                                                \
        fwd_##SUF(g, a, b, out);                                             \
    else if (kind == TFM_CONV_BWD_DATA)                                      \
        bpi_##SUF(g, a, b, out);                                             \
    else                                                                     \
        bpf_##SUF(g, a, b, out);                                             \
}

DW_IMPL(f32, float)
DW_IMPL(f64, double)

/* The three ops take (x, f), (x, f, dy) and (x, f, dy) and share their
 * geometry, from x's and f's shapes (the backprops read no more of their
 * first or second operand); they differ in which two operands the loops
 * read: (x, f) -> y, (f, dy) -> dx, (x, dy) -> df. */
static tfm_code
run(tfm_op op, int kind, tfm_tensor *const *in, const tfm_attrs *attrs,
    tfm_tensor *out)
{
    const tfm_shape *xs = &in[0]->shape, *fs = &in[1]->shape;
    const tfm_tensor *a = in[kind == TFM_CONV_BWD_DATA];
    const tfm_tensor *b = in[kind == TFM_CONV_FWD ? 1 : 2];
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, xs, fs->dims[0], fs->dims[1],
                       fs->dims[2] * fs->dims[3],
                       attrs->ints[TFM_CONV_WIN_H],
                       attrs->ints[TFM_CONV_WIN_W], attrs);
    g.groups = g.c;
    if (tfm_tensor_numel(out) == 0)
        return TFM_OK;
    const void *pa = tfm_tensor_data(a), *pb = tfm_tensor_data(b);
    void *po = tfm_tensor_data(out);
    /* An empty input or filter with a non-empty output: all zeros (the
     * sums are empty). */
    if (tfm_tensor_numel(a) == 0 || tfm_tensor_numel(b) == 0) {
        memset(po, 0, (size_t)tfm_tensor_numel(out) *
                          tfm_dtype_size(out->dtype));
        return TFM_OK;
    }
    switch (a->dtype) {
    case TFM_FLOAT32: {
        int rc = tfm_conv_dnnl_f32(kind, &g, pa, pb, po);
        if (rc < 0)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory "
                             "for its work buffers", tfm_ops[op].name);
        if (rc == 0)
            loops_f32(kind, &g, pa, pb, po);
        return TFM_OK;
    }
    case TFM_FLOAT64:
        loops_f64(kind, &g, pa, pb, po);
        return TFM_OK;
    default:
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no CPU kernel "
                         "for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(a->dtype));
    }
}

tfm_code
tfm_k_depthwise_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    return run(op, TFM_CONV_FWD, in, a, out[0]);
}

tfm_code
tfm_k_depthwise_backprop_input(tfm_op op, tfm_tensor *const *in, int nin,
                               const tfm_attrs *a, tfm_tensor *const *out,
                               int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    return run(op, TFM_CONV_BWD_DATA, in, a, out[0]);
}

tfm_code
tfm_k_depthwise_backprop_filter(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor *const *out,
                                int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    return run(op, TFM_CONV_BWD_WEIGHTS, in, a, out[0]);
}
