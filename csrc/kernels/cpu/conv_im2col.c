/* Conv2D and its two backprops, NHWC x [kh, kw, in, out], as im2col +
 * GEMM. Output pixels are taken in blocks of rows; each thread unfolds
 * its block's input patches into a private buffer (one row of kh*kw*c
 * values per output pixel, in the filter's own (kh, kw, c) order, so
 * the filter is already the [K, out] matrix) and multiplies it:
 *
 *   Conv2D:               y[P, O]   = cols[P, K] @ f[K, O]
 *   Conv2DBackpropInput:  dcols     = dy[P, O] @ f^T, folded back (col2im)
 *   Conv2DBackpropFilter: df[K, O]  = cols^T @ dy, summed over blocks
 *
 * A 1x1 window with stride 1 and no padding needs no unfolding: the
 * input rows are the patches. */
#include "conv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/bfloat16.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Multiply-adds above which the work is split across threads. */
#define PAR_FLOPS (1 << 18)

static inline int
max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline int
thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Output pixels per block: about 128 KiB of patches, a multiple of 8
 * (the GEMM's tile height). */
static int64_t
block_rows(int64_t K, size_t elem)
{
    int64_t m = (int64_t)(131072 / elem) / (K > 0 ? K : 1);
    m = m < 16 ? 16 : m > 512 ? 512 : m;
    return m & ~(int64_t)7;
}

static int
is_pointwise(const tfm_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
           g->pt == 0 && g->pl == 0 && g->oh == g->h && g->ow == g->w;
}

static tfm_code
out_of_memory(tfm_op op)
{
    return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                     "its work buffers", tfm_ops[op].name);
}

#define CONV_IMPL(SUF, T)                                                    \
/* Patches of output pixels p0 .. p0+m-1 into cols[m, K]. */                 \
static void                                                                  \
im2col_##SUF(const tfm_conv_geom *g, const T *x, int64_t p0, int64_t m,      \
             T *cols)                                                        \
{                                                                            \
    const int64_t C = g->c, K = g->kh * g->kw * C;                           \
    const size_t rowb = (size_t)C * sizeof(T);                               \
    for (int64_t i = 0; i < m; i++) {                                        \
        int64_t p = p0 + i, ow = p % g->ow, t = p / g->ow;                   \
        int64_t oh = t % g->oh, n = t / g->oh;                               \
        const T *xn = x + n * g->h * g->w * C;                               \
        int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;          \
        T *row = cols + i * K;                                               \
        for (int64_t kh = 0; kh < g->kh; kh++) {                             \
            int64_t ih = ih0 + kh * g->dh;                                   \
            T *dst = row + kh * g->kw * C;                                   \
            if (ih < 0 || ih >= g->h) {                                      \
                memset(dst, 0, (size_t)g->kw * rowb);                        \
                continue;                                                    \
            }                                                                \
            const T *xr = xn + ih * g->w * C;                                \
            if (g->dw == 1 && iw0 >= 0 && iw0 + g->kw <= g->w) {             \
                memcpy(dst, xr + iw0 * C, (size_t)g->kw * rowb);             \
                continue;                                                    \
            }                                                                \
            for (int64_t kw = 0; kw < g->kw; kw++) {                         \
                int64_t iw = iw0 + kw * g->dw;                               \
                if (iw < 0 || iw >= g->w)                                    \
                    memset(dst + kw * C, 0, rowb);                           \
                else                                                         \
                    memcpy(dst + kw * C, xr + iw * C, rowb);                 \
            }                                                                \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
/* Adds the patch gradients of pixels q0 .. q0+m-1 of image xn back. */      \
static void                                                                  \
col2im_##SUF(const tfm_conv_geom *g, const T *cols, int64_t q0, int64_t m,   \
             T *xn)                                                          \
{                                                                            \
    const int64_t C = g->c, K = g->kh * g->kw * C;                           \
    for (int64_t i = 0; i < m; i++) {                                        \
        int64_t q = q0 + i, ow = q % g->ow, oh = q / g->ow;                  \
        int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;          \
        const T *row = cols + i * K;                                         \
        for (int64_t kh = 0; kh < g->kh; kh++) {                             \
            int64_t ih = ih0 + kh * g->dh;                                   \
            if (ih < 0 || ih >= g->h)                                        \
                continue;                                                    \
            for (int64_t kw = 0; kw < g->kw; kw++) {                         \
                int64_t iw = iw0 + kw * g->dw;                               \
                if (iw < 0 || iw >= g->w)                                    \
                    continue;                                                \
                T *restrict d = xn + (ih * g->w + iw) * C;                   \
                const T *restrict s = row + (kh * g->kw + kw) * C;           \
                for (int64_t c = 0; c < C; c++)                              \
                    d[c] += s[c];                                            \
            }                                                                \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
static int                                                                   \
conv2d_##SUF(const tfm_conv_geom *g, const T *x, const T *f, T *y)           \
{                                                                            \
    const int64_t K = g->kh * g->kw * g->c, O = g->o;                        \
    const int64_t P = g->n * g->oh * g->ow;                                  \
    const int64_t mb = block_rows(K, sizeof(T));                             \
    const int64_t nblocks = (P + mb - 1) / mb;                               \
    const int direct = is_pointwise(g);                                      \
    int failed = 0;                                                          \
    _Pragma("omp parallel if(P * K * O >= PAR_FLOPS && nblocks > 1)")        \
    {                                                                        \
        T *cols = direct ? NULL                                              \
                         : malloc((size_t)(mb * K + 1) * sizeof(T));         \
        if (!direct && !cols) {                                              \
            _Pragma("omp atomic write")                                      \
            failed = 1;                                                      \
        }                                                                    \
        _Pragma("omp for schedule(static)")                                  \
        for (int64_t b = 0; b < nblocks; b++) {                              \
            int64_t p0 = b * mb, m = P - p0 < mb ? P - p0 : mb;              \
            if (direct) {                                                    \
                tfm_conv_gemm_##SUF(0, m, O, K, x + p0 * K, K, f, O,         \
                                    y + p0 * O, O, 0);                       \
            } else if (cols) {                                               \
                im2col_##SUF(g, x, p0, m, cols);                             \
                tfm_conv_gemm_##SUF(0, m, O, K, cols, K, f, O, y + p0 * O,   \
                                    O, 0);                                   \
            }                                                                \
        }                                                                    \
        free(cols);                                                          \
    }                                                                        \
    return failed;                                                           \
}                                                                            \
                                                                             \
static int                                                                   \
backprop_input_##SUF(const tfm_conv_geom *g, const T *f, const T *dy,        \
                     T *dx)                                                  \
{                                                                            \
    const int64_t K = g->kh * g->kw * g->c, O = g->o;                        \
    const int64_t Q = g->oh * g->ow, P = g->n * Q;                           \
    const int64_t mb = block_rows(K, sizeof(T));                             \
    const int par = P * K * O >= PAR_FLOPS;                                  \
    /* f^T: [O, K], so that dcols = dy @ f^T is a plain product. */          \
    T *ft = malloc((size_t)(K * O + 1) * sizeof(T));                         \
    if (!ft)                                                                 \
        return 1;                                                            \
    for (int64_t k = 0; k < K; k++)                                          \
        for (int64_t o = 0; o < O; o++)                                      \
            ft[o * K + k] = f[k * O + o];                                    \
    int failed = 0;                                                          \
    if (is_pointwise(g)) {                                                   \
        const int64_t nblocks = (P + mb - 1) / mb;                           \
        _Pragma("omp parallel for schedule(static) if(par && nblocks > 1)")  \
        for (int64_t b = 0; b < nblocks; b++) {                              \
            int64_t p0 = b * mb, m = P - p0 < mb ? P - p0 : mb;              \
            tfm_conv_gemm_##SUF(0, m, K, O, dy + p0 * O, O, ft, K,           \
                                dx + p0 * K, K, 0);                          \
        }                                                                    \
        free(ft);                                                            \
        return 0;                                                            \
    }                                                                        \
    const int64_t xsize = g->h * g->w * g->c;                                \
    memset(dx, 0, (size_t)(g->n * xsize) * sizeof(T));                       \
    /* Patches of one image overlap: each image belongs to one thread. */    \
    _Pragma("omp parallel if(par && g->n > 1)")                              \
    {                                                                        \
        T *dcols = malloc((size_t)(mb * K + 1) * sizeof(T));                 \
        if (!dcols) {                                                        \
            _Pragma("omp atomic write")                                      \
            failed = 1;                                                      \
        }                                                                    \
        _Pragma("omp for schedule(static)")                                  \
        for (int64_t n = 0; n < g->n; n++) {                                 \
            for (int64_t q0 = 0; dcols && q0 < Q; q0 += mb) {                \
                int64_t m = Q - q0 < mb ? Q - q0 : mb;                       \
                tfm_conv_gemm_##SUF(0, m, K, O, dy + (n * Q + q0) * O, O,    \
                                    ft, K, dcols, K, 0);                     \
                col2im_##SUF(g, dcols, q0, m, dx + n * xsize);               \
            }                                                                \
        }                                                                    \
        free(dcols);                                                         \
    }                                                                        \
    free(ft);                                                                \
    return failed;                                                           \
}                                                                            \
                                                                             \
static int                                                                   \
backprop_filter_##SUF(const tfm_conv_geom *g, const T *x, const T *dy,       \
                      T *df)                                                 \
{                                                                            \
    const int64_t K = g->kh * g->kw * g->c, O = g->o;                        \
    const int64_t P = g->n * g->oh * g->ow;                                  \
    const int64_t mb = block_rows(K, sizeof(T));                             \
    const int64_t nblocks = (P + mb - 1) / mb;                               \
    const int direct = is_pointwise(g);                                      \
    int nt = P * K * O >= PAR_FLOPS && nblocks > 1 ? max_threads() : 1;      \
    if (nt > nblocks && nblocks > 0)                                         \
        nt = (int)nblocks;                                                   \
    /* One partial sum per thread, added in thread order afterwards so      \
     * that the result does not depend on timing. */                         \
    T *part = calloc((size_t)nt * (size_t)(K * O) + 1, sizeof(T));           \
    if (!part)                                                               \
        return 1;                                                            \
    int failed = 0;                                                          \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                       \
    {                                                                        \
        T *mine = part + (size_t)thread_num() * (size_t)(K * O);             \
        T *cols = direct ? NULL                                              \
                         : malloc((size_t)(mb * K + 1) * sizeof(T));         \
        if (!direct && !cols) {                                              \
            _Pragma("omp atomic write")                                      \
            failed = 1;                                                      \
        }                                                                    \
        _Pragma("omp for schedule(static)")                                  \
        for (int64_t b = 0; b < nblocks; b++) {                              \
            int64_t p0 = b * mb, m = P - p0 < mb ? P - p0 : mb;              \
            const T *src = x + p0 * K;                                       \
            if (!direct) {                                                   \
                if (!cols)                                                   \
                    continue;                                                \
                im2col_##SUF(g, x, p0, m, cols);                             \
                src = cols;                                                  \
            }                                                                \
            /* df += src^T @ dy: src is [m, K], read transposed. */          \
            tfm_conv_gemm_##SUF(1, K, O, m, src, K, dy + p0 * O, O, mine, O, \
                                1);                                          \
        }                                                                    \
        free(cols);                                                          \
    }                                                                        \
    memcpy(df, part, (size_t)(K * O) * sizeof(T));                           \
    for (int t = 1; t < nt; t++) {                                           \
        const T *s = part + (size_t)t * (size_t)(K * O);                     \
        for (int64_t k = 0; k < K * O; k++)                                  \
            df[k] += s[k];                                                   \
    }                                                                        \
    free(part);                                                              \
    return failed;                                                           \
}

CONV_IMPL(f32, float)
CONV_IMPL(f64, double)

/* One float32 conv of the given kind (operands as for
 * tfm_conv_dnnl_f32): oneDNN where it takes the shape, im2col otherwise.
 * Nonzero when out of memory. */
static int
conv_f32(int kind, const tfm_conv_geom *g, const float *a, const float *b,
         float *out)
{
    /* The filter gradient of a stride-1 conv beats oneDNN's
     * backward-weights kernel (conv_filter_grad_gemm.c); Winograd its
     * 3x3 forward and input gradient (conv_winograd.c). */
    int rc = kind == TFM_CONV_BWD_WEIGHTS
                 ? tfm_conv_filter_grad_window_f32(g, a, b, out)
                 : tfm_conv_winograd_f32(kind, g, a, b, NULL, -1, out);
    if (rc)
        return rc < 0;
    rc = tfm_conv_dnnl_f32(kind, g, a, b, out);
    if (rc)
        return rc < 0;
    switch (kind) {
    case TFM_CONV_FWD:
        return conv2d_f32(g, a, b, out);
    case TFM_CONV_BWD_DATA:
        return backprop_input_f32(g, a, b, out);
    default:
        return backprop_filter_f32(g, a, b, out);
    }
}

static int
conv_f64(int kind, const tfm_conv_geom *g, const double *a, const double *b,
         double *out)
{
    switch (kind) {
    case TFM_CONV_FWD:
        return conv2d_f64(g, a, b, out);
    case TFM_CONV_BWD_DATA:
        return backprop_input_f64(g, a, b, out);
    default:
        return backprop_filter_f64(g, a, b, out);
    }
}

static void
widen(const uint16_t *h, int64_t n, float *f)
{
    for (int64_t i = 0; i < n; i++)
        f[i] = tfm_bf16_to_float(h[i]);
}

/* bfloat16 reaches this kernel only where oneDNN has native bf16
 * convolutions (tfm_kernel_takes); a shape its JIT code refuses still
 * gets the dispatcher's answer: widen, compute in float32, round once. */
static int
conv_bf16(int kind, const tfm_conv_geom *g, const uint16_t *a,
          const uint16_t *b, uint16_t *out)
{
    int rc = tfm_conv_dnnl_bf16(kind, g, a, b, out);
    if (rc)
        return rc < 0;
    const int64_t nx = g->n * g->h * g->w * g->c;
    const int64_t nf = g->kh * g->kw * g->c * g->o;
    const int64_t ny = g->n * g->oh * g->ow * g->o;
    const int64_t na = kind == TFM_CONV_BWD_DATA ? nf : nx;
    const int64_t nb = kind == TFM_CONV_FWD ? nf : ny;
    const int64_t no = kind == TFM_CONV_FWD ? ny
                       : kind == TFM_CONV_BWD_DATA ? nx : nf;
    float *fa = malloc((size_t)(na + nb + no + 1) * sizeof(float));
    if (!fa)
        return 1;
    float *fb = fa + na, *fo = fb + nb;
    widen(a, na, fa);
    widen(b, nb, fb);
    int failed = conv_f32(kind, g, fa, fb, fo);
    for (int64_t i = 0; !failed && i < no; i++)
        out[i] = tfm_float_to_bf16(fo[i]);
    free(fa);
    return failed;
}

static tfm_code
bad_dtype(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no CPU kernel for "
                     "dtype %s", tfm_ops[op].name, tfm_dtype_name(d));
}

/* The three kernels after their geometry: a, b, out as for
 * tfm_conv_dnnl_f32; a's dtype is the op's. */
static tfm_code
conv_run(tfm_op op, int kind, const tfm_conv_geom *g, const tfm_tensor *a,
         const tfm_tensor *b, tfm_tensor *out)
{
    if (tfm_tensor_numel(out) == 0)
        return TFM_OK;
    const void *pa = tfm_tensor_data(a);
    const void *pb = tfm_tensor_data(b);
    void *po = tfm_tensor_data(out);
    int failed;
    switch (a->dtype) {
    case TFM_FLOAT32:
        failed = conv_f32(kind, g, pa, pb, po);
        break;
    case TFM_FLOAT64:
        failed = conv_f64(kind, g, pa, pb, po);
        break;
    case TFM_BFLOAT16:
        failed = conv_bf16(kind, g, pa, pb, po);
        break;
    default:
        return bad_dtype(op, a->dtype);
    }
    return failed ? out_of_memory(op) : TFM_OK;
}

tfm_code
tfm_k_conv2d(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    const tfm_shape *fs = &in[1]->shape;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &in[0]->shape, fs->dims[0], fs->dims[1],
                       fs->dims[3], a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], a);
    return conv_run(op, TFM_CONV_FWD, &g, in[0], in[1], out[0]);
}

tfm_code
tfm_k_conv2d_backprop_input(tfm_op op, tfm_tensor *const *in, int nin,
                            const tfm_attrs *a, tfm_tensor *const *out,
                            int nout, const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    const tfm_tensor *f = in[nin - 2], *dy = in[nin - 1];
    const tfm_shape *fs = &f->shape;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &out[0]->shape, fs->dims[0], fs->dims[1],
                       fs->dims[3], a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], a);
    return conv_run(op, TFM_CONV_BWD_DATA, &g, f, dy, out[0]);
}

tfm_code
tfm_k_conv2d_backprop_filter(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    const tfm_tensor *x = in[0], *dy = in[nin - 1];
    const tfm_shape *fs = &out[0]->shape;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &x->shape, fs->dims[0], fs->dims[1], fs->dims[3],
                       a->ints[TFM_CONV_WIN_H], a->ints[TFM_CONV_WIN_W], a);
    return conv_run(op, TFM_CONV_BWD_WEIGHTS, &g, x, dy, out[0]);
}
