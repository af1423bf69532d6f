/* The float32 filter gradient of a stride-1, undilated NHWC convolution
 * as GEMMs over shifted windows, with an AVX-512 kernel of its own.
 *
 * Why not oneDNN: its f32 backward-weights on x64 is the older
 * jit:avx512_core kernel (3.2 and HEAD alike), the slowest pass of a
 * ResNet block's step; dnnl_sgemm per image and tap (64 x 64 x ~1000
 * products) only ties it. benchmarks/conv_filter_grad_bench.c measures
 * the three.
 *
 * The algebra: for filter row i, df[i] (KW*C x O, rows (j, c), which is
 * hwio's layout) = sum over output pixels p of win_i(p)^T dy[p], where
 * win_i(p) is the KW*C input values under the filter row: in NHWC they
 * are contiguous, KW pixels of C channels. So each filter row is one
 * GEMM whose A rows overlap (row stride C, row length KW*C), which no
 * BLAS takes (lda < M), hence the kernel below. The padding is made
 * exact by copying the input rows an item needs into a zero-bordered
 * buffer (at most XP_BYTES, so it stays in L2) whose width is the
 * output width plus KW - 1, so a window never wraps into the next row.
 *
 * Threads split (image, row band) items; each sums into a private
 * filter (KH*KW*C*O floats), added at the end. Results differ from
 * oneDNN's only in summation order. */
#include "conv.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static atomic_long win_calls;

long
tfm_conv_window_calls(void)
{
    return atomic_load_explicit(&win_calls, memory_order_relaxed);
}

/* TFMINI_CONV read once (tfm_conv_env_choice, conv.h): MODE_RULE +
 * its -1 / 0 / 1 is off / the measured rule / forced. */
enum { MODE_UNREAD, MODE_OFF, MODE_RULE, MODE_ALWAYS };
static atomic_int mode;

static int
window_mode(void)
{
    int v = atomic_load_explicit(&mode, memory_order_relaxed);
    if (v == MODE_UNREAD) {
        v = MODE_RULE + tfm_conv_env_choice("window");
        atomic_store_explicit(&mode, v, memory_order_relaxed);
    }
    return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__wasm__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))

/* Pixels per K block (the accumulator tile stays in registers over
 * them): 256 measured best of 32..1024 (conv_filter_grad_bench.c builds
 * with -DKB_PIX=n to try others). */
#ifndef KB_PIX
#define KB_PIX 256
#endif
/* Register tiles: MR x NV vectors for wide outputs (O > 32); for
 * O <= 32, MR2 x 2 (the 6 x 2 shape leaves half the registers idle and
 * loads one broadcast per two FMAs). */
enum { KB = KB_PIX, MR = 6, NV = 4, MR2 = 12, MRX = 12 };
/* The padded rows one item copies, at most (when a row fits). */
enum { XP_BYTES = 512 * 1024 };

/* c[mr x (16*nv)] += sum over rows x cols pixels of a^T b. a: the
 * pixel's window (mr values used), the next pixel C floats on, the next
 * row arow floats on; b: dy, one pixel every o floats, rows contiguous.
 * The last of the nv vectors is masked by tail (O not a multiple of
 * 16). */
TGT static inline __attribute__((always_inline)) void
tile(const float *a, int64_t apx, int64_t arow, const float *b, int64_t o,
     int64_t rows, int64_t cols, float *c, int64_t ldc, const int mr,
     const int nv, __mmask16 tail)
{
    __m512 acc[MRX][NV];
#pragma GCC unroll 12
    for (int m = 0; m < mr; m++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[m][v] = v == nv - 1
                            ? _mm512_maskz_loadu_ps(tail, c + m * ldc + 16 * v)
                            : _mm512_loadu_ps(c + m * ldc + 16 * v);
    for (int64_t r = 0; r < rows; r++) {
        const float *ap = a + r * arow;
        const float *bp = b + r * cols * o;
        for (int64_t w = 0; w < cols; w++, ap += apx, bp += o) {
            __m512 bv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                bv[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(tail, bp + 16 * v)
                                    : _mm512_loadu_ps(bp + 16 * v);
#pragma GCC unroll 12
            for (int m = 0; m < mr; m++) {
                __m512 av = _mm512_set1_ps(ap[m]);
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++)
                    acc[m][v] = _mm512_fmadd_ps(av, bv[v], acc[m][v]);
            }
        }
    }
#pragma GCC unroll 12
    for (int m = 0; m < mr; m++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            if (v == nv - 1)
                _mm512_mask_storeu_ps(c + m * ldc + 16 * v, tail, acc[m][v]);
            else
                _mm512_storeu_ps(c + m * ldc + 16 * v, acc[m][v]);
        }
}

typedef void (*tile_fn)(const float *, int64_t, int64_t, const float *,
                        int64_t, int64_t, int64_t, float *, int64_t,
                        __mmask16);

#define TILE(M, V)                                                        \
    TGT static void tile_##M##_##V(const float *a, int64_t apx,           \
                                   int64_t arow, const float *b,          \
                                   int64_t o, int64_t rows, int64_t cols, \
                                   float *c, int64_t ldc, __mmask16 t)    \
    {                                                                     \
        tile(a, apx, arow, b, o, rows, cols, c, ldc, M, V, t);            \
    }
#define TILES(M) TILE(M, 1) TILE(M, 2) TILE(M, 3) TILE(M, 4)
#define NARROW(M) TILE(M, 1) TILE(M, 2)
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6)
NARROW(7) NARROW(8) NARROW(9) NARROW(10) NARROW(11) NARROW(12)
#define ROW(M) {tile_##M##_1, tile_##M##_2, tile_##M##_3, tile_##M##_4}
#define ROW2(M) {tile_##M##_1, tile_##M##_2, NULL, NULL}
/* [mr - 1][nv - 1]; rows 7..12 only for nv <= 2 (see MR2). */
static const tile_fn tiles[MRX][NV] = {
    ROW(1),  ROW(2),  ROW(3),  ROW(4),  ROW(5),  ROW(6),
    ROW2(7), ROW2(8), ROW2(9), ROW2(10), ROW2(11), ROW2(12)};

/* db[o] += the sum of the pixels' dy rows: rows x ow pixels, o floats
 * each, just streamed by the tiles, so still in L2. A float sum per K
 * block, kept in double across blocks. */
TGT static void
bias_rows(const float *b, int64_t pixels, int64_t o, double *db)
{
    for (int64_t n0 = 0; n0 < o; n0 += 16) {
        int64_t nn = o - n0 < 16 ? o - n0 : 16;
        __mmask16 m = (__mmask16)(nn == 16 ? 0xffffu : (1u << nn) - 1);
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
        int64_t p = 0;
        for (; p + 1 < pixels; p += 2) {
            s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m, b + p * o + n0));
            s1 = _mm512_add_ps(s1,
                               _mm512_maskz_loadu_ps(m, b + (p + 1) * o + n0));
        }
        if (p < pixels)
            s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m, b + p * o + n0));
        float t[16];
        _mm512_storeu_ps(t, _mm512_add_ps(s0, s1));
        for (int64_t k = 0; k < nn; k++)
            db[n0 + k] += t[k];
    }
}

/* Output rows [h0, h1) of one image into the private filter acc (and
 * the bias sums into db, unless NULL). xp: room for (h1 - h0 + kh - 1)
 * padded rows. */
static void
item(const tfm_conv_geom *g, const float *x, const float *dy, int64_t h0,
     int64_t h1, float *xp, float *acc, double *db)
{
    const int64_t C = g->c, O = g->o, wp = g->ow + g->kw - 1;
    const int64_t prow = h1 - h0 + g->kh - 1, M = g->kw * C;
    for (int64_t r = 0; r < prow; r++) {
        float *d = xp + r * wp * C;
        int64_t hi = h0 + r - g->pt;
        if (hi < 0 || hi >= g->h) {
            memset(d, 0, (size_t)(wp * C) * sizeof(float));
            continue;
        }
        /* columns [pl, pl + w) hold the row; the rest is padding */
        int64_t l = g->pl < wp ? g->pl : wp;
        int64_t n = g->w < wp - l ? g->w : wp - l;
        memset(d, 0, (size_t)(l * C) * sizeof(float));
        memcpy(d + l * C, x + hi * g->w * C, (size_t)(n * C) * sizeof(float));
        memset(d + (l + n) * C, 0, (size_t)((wp - l - n) * C) * sizeof(float));
    }
    const int64_t ow = g->ow;
    int64_t kb = KB / ow > 1 ? KB / ow : 1;
    for (int64_t b0 = h0; b0 < h1; b0 += kb) {
        int64_t rows = h1 - b0 < kb ? h1 - b0 : kb;
        const float *b = dy + b0 * ow * O;
        for (int64_t i = 0; i < g->kh; i++) {
            const float *a = xp + (b0 - h0 + i) * wp * C;
            float *c = acc + i * M * O;
            for (int64_t n0 = 0; n0 < O; n0 += 16 * NV) {
                int64_t nn = O - n0 < 16 * NV ? O - n0 : 16 * NV;
                int nv = (int)((nn + 15) / 16);
                int64_t mrx = nv <= 2 ? MR2 : MR;
                __mmask16 tail = (__mmask16)(nn % 16 ? (1u << (nn % 16)) - 1
                                                     : 0xffffu);
                for (int64_t m0 = 0; m0 < M; m0 += mrx) {
                    int mr = (int)(M - m0 < mrx ? M - m0 : mrx);
                    tiles[mr - 1][nv - 1](a + m0, C, wp * C, b + n0, O, rows,
                                          ow, c + m0 * O + n0, O, tail);
                }
            }
        }
        if (db)
            bias_rows(b, rows * ow, O, db);
    }
}

static int
have_avx512(void)
{
    static atomic_int v;
    int r = atomic_load_explicit(&v, memory_order_relaxed);
    if (r == 0) {
        __builtin_cpu_init();
        r = __builtin_cpu_supports("avx512f") ? 1 : 2;
        atomic_store_explicit(&v, r, memory_order_relaxed);
    }
    return r == 1;
}

int
tfm_conv_filter_grad_window_takes(const tfm_conv_geom *g)
{
    if (window_mode() == MODE_OFF || !have_avx512() || g->sh != 1 ||
        g->sw != 1 || g->dh != 1 || g->dw != 1 || g->groups > 1 || g->n <= 0 ||
        g->oh <= 0 || g->ow <= 0)
        return 0;
    /* Where it measured faster than oneDNN (conv_filter_grad_bench.c,
     * one thread, CPU time; RESULTS.md): whole 64-wide output blocks
     * (fewer leave the 6 x 4 register tile part empty) and at least
     * eight full channel tiles per filter row; not 1x1 filters, which
     * oneDNN serves with its own 1x1 kernel. O = 32 (the 12 x 2 tile)
     * won only with rows at least 32 wide and KW*C >= 96 (3-4%); at
     * 16 x 16, or the CNN's first conv (C = 3), oneDNN was faster. */
    if (window_mode() == MODE_ALWAYS)
        return 1;
    if (g->kh * g->kw == 1)
        return 0;
    return (g->o % 64 == 0 && g->kw * g->c >= 48) ||
           (g->o == 32 && g->ow >= 32 && g->kw * g->c >= 96);
}

static int
run(const tfm_conv_geom *g, const float *x, const float *dy, float *df,
    float *db)
{
    if (!tfm_conv_filter_grad_window_takes(g))
        return 0;
    const int64_t fsz = g->kh * g->kw * g->c * g->o;
    int nt = 1;
#ifdef _OPENMP
    if (!omp_in_parallel())
        nt = omp_get_max_threads();
#endif
    /* Small gradients are not worth a team. */
    double flops = 2.0 * (double)fsz * (double)(g->n * g->oh * g->ow);
    if (flops < 4e6)
        nt = 1;
    /* Items: whole images when there are enough of them, else row
     * bands so that every thread has work; and never more rows than
     * keep the padded copy within about half of L2. */
    const int64_t wp = g->ow + g->kw - 1;
    int64_t bands = g->n >= 4 * nt ? 1 : (4 * nt + g->n - 1) / g->n;
    int64_t band = (g->oh + bands - 1) / bands;
    int64_t fit = XP_BYTES / (wp * g->c * (int64_t)sizeof(float)) -
                  (g->kh - 1);
    if (band > fit)
        band = fit > 1 ? fit : 1;
    bands = (g->oh + band - 1) / band;
    const int64_t items = g->n * bands;
    if (nt > items)
        nt = (int)items;
    const int64_t xpsz = (band + g->kh - 1) * wp * g->c;
    const int64_t O = g->o;
    float *part = malloc((size_t)(nt * fsz) * sizeof(float));
    float *xps = malloc((size_t)(nt * xpsz) * sizeof(float));
    double *bparts = db ? calloc((size_t)(nt * O), sizeof(double)) : NULL;
    if (!part || !xps || (db && !bparts)) {
        free(part);
        free(xps);
        free(bparts);
        return -1;
    }
    int used = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
        /* the team may be smaller than asked (nested or dynamic
         * OpenMP): only its partial sums are written */
        if (t == 0)
            used = omp_get_num_threads();
#endif
        float *acc = part + t * fsz, *xp = xps + t * xpsz;
        memset(acc, 0, (size_t)fsz * sizeof(float));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t it = 0; it < items; it++) {
            int64_t n = it / bands, h0 = (it % bands) * band;
            int64_t h1 = h0 + band < g->oh ? h0 + band : g->oh;
            if (h0 < h1)
                item(g, x + n * g->h * g->w * g->c,
                     dy + n * g->oh * g->ow * g->o, h0, h1, xp, acc,
                     bparts ? bparts + t * O : NULL);
        }
    }
    memcpy(df, part, (size_t)fsz * sizeof(float));
    for (int t = 1; t < used; t++) {
        const float *s = part + t * fsz;
        for (int64_t k = 0; k < fsz; k++)
            df[k] += s[k];
    }
    for (int64_t o = 0; db && o < O; o++) {
        double v = 0;
        for (int t = 0; t < used; t++)
            v += bparts[t * O + o];
        db[o] = (float)v;
    }
    free(part);
    free(xps);
    free(bparts);
    atomic_fetch_add_explicit(&win_calls, 1, memory_order_relaxed);
    return 1;
}

int
tfm_conv_filter_grad_window_f32(const tfm_conv_geom *g, const float *x,
                                const float *dy, float *df)
{
    return run(g, x, dy, df, NULL);
}

int
tfm_conv_filter_grad_bias_window_f32(const tfm_conv_geom *g, const float *x,
                                     const float *dy, float *df, float *db)
{
    return run(g, x, dy, df, db);
}

#else

int
tfm_conv_filter_grad_window_takes(const tfm_conv_geom *g)
{
    (void)g;
    (void)window_mode;
    return 0;
}

int
tfm_conv_filter_grad_window_f32(const tfm_conv_geom *g, const float *x,
                                const float *dy, float *df)
{
    (void)g; (void)x; (void)dy; (void)df;
    return 0;
}

int
tfm_conv_filter_grad_bias_window_f32(const tfm_conv_geom *g, const float *x,
                                     const float *dy, float *df, float *db)
{
    (void)g; (void)x; (void)dy; (void)df; (void)db;
    return 0;
}

#endif
