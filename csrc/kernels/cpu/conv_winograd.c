/* float32 3x3 stride-1 convolutions by Winograd's minimal filtering,
 * F(4x4, 3x3), with an AVX-512 kernel of its own.
 *
 * Why: the forward and input-gradient convs of a ResNet block already
 * run through oneDNN's brgconv near this core's FMA rate, and oneDNN 3.x
 * has no f32 Winograd on x64 (2.x's wino_conv_4x3 was removed), so the
 * only way to a faster step is fewer multiplies. F(4x4, 3x3) computes a
 * 4x4 output tile from a 6x6 input tile with 36 products per (c, o)
 * pair instead of 144: 4x fewer, at the price of three transforms and
 * float32 errors around 1e-6 relative (cuDNN and oneDNN 2.x ship it;
 * the test measures them against float64).
 *
 * The algebra (Lavin & Gray 2015): Y = A^T [(G g G^T) . (B^T d B)] A per
 * tile and channel pair, summed over input channels. Summed over c, the
 * elementwise product at each of the 36 tile points is one GEMM:
 * M[p] (tiles x O) = V[p] (tiles x C) U[p] (C x O). So: the filter
 * transform U once per call (in double, rounded once); then per block
 * of TB tiles, small enough that V and M stay in L2: input transform
 * -> 36 GEMMs -> output transform with the fused conv's epilogue (bias,
 * residual already in y, activation) written straight into y. Threads
 * take blocks.
 *
 * The input gradient of a stride-1 conv is the same convolution of dy
 * with the filter turned 180 degrees and its in/out channels swapped,
 * padded k - 1 - p on the leading side: the geometry below is generic
 * (input and output sizes and the leading pads are given; any read
 * outside the input is zero), so both directions are one code path.
 *
 * Dispatch (tfm_conv_winograd_takes): 3x3, stride 1, undilated,
 * ungrouped, AVX-512, and the measured rule; TFMINI_CONV=winograd
 * forces it wherever it can run, =dnnl or =im2col turn it off. */
#include "conv.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static atomic_long wino_calls;

long
tfm_conv_winograd_calls(void)
{
    return atomic_load_explicit(&wino_calls, memory_order_relaxed);
}

/* TFMINI_CONV read once (tfm_conv_env_choice, conv.h): MODE_RULE +
 * its -1 / 0 / 1 is off / the measured rule / forced. */
enum { MODE_UNREAD, MODE_OFF, MODE_RULE, MODE_ALWAYS };
static atomic_int mode;

static int
wino_mode(void)
{
    int v = atomic_load_explicit(&mode, memory_order_relaxed);
    if (v == MODE_UNREAD) {
        v = MODE_RULE + tfm_conv_env_choice("winograd");
        atomic_store_explicit(&mode, v, memory_order_relaxed);
    }
    return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__wasm__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define INL inline __attribute__((always_inline))

enum { T = 6, TT = 36, OUT = 4 }; /* input tile, its points, output tile */
/* Tiles per block: 12 measured best of 6..96 (conv_winograd_bench.c,
 * -DWINO_TB=n, ResNet shape, one thread): V and M (108 KB each at
 * C = O = 64) stay in L2 beside U (590 KB), and the 36 points' rows of
 * one tile in L1 between a transform and the GEMM. */
#ifndef WINO_TB
#define WINO_TB 12
#endif
enum { TB = WINO_TB, MR = 6, NV = 4 };
/* Floats from one tile point's rows to the next's in V and M. One cache
 * line more than the rows: a multiple of 2 KB (TB * 64 floats) would put
 * the 36 points of a tile, read or written together by the transforms,
 * in the same two L1 sets. */
#define PSTRIDE(cols) (TB * (cols) + 16)

/* Geometry of one Winograd conv: input [n, ih, iw, ci], output
 * [n, oh, ow, co], output (r, s) reads input rows r - pt .. r - pt + 2. */
typedef struct wgeom {
    int64_t n, ih, iw, ci, oh, ow, co, pt, pl;
    int64_t th, tw, tiles; /* tiles per column, per row, in all */
    int64_t cp, op;        /* ci, co rounded up to 16 */
} wgeom;

/* --- transforms: B^T d (6 -> 6), A^T m (6 -> 4), on 16 channels --- */

TGT static INL void
in_1d(const __m512 d[6], __m512 r[6])
{
    const __m512 k4 = _mm512_set1_ps(4.0f), k5 = _mm512_set1_ps(5.0f),
                 k2 = _mm512_set1_ps(2.0f);
    __m512 a = _mm512_add_ps(d[1], d[2]), b = _mm512_sub_ps(d[1], d[2]);
    __m512 e = _mm512_sub_ps(d[4], d[2]), f = _mm512_sub_ps(d[3], d[1]);
    r[0] = _mm512_fnmadd_ps(k5, d[2], _mm512_fmadd_ps(k4, d[0], d[4]));
    r[1] = _mm512_fnmadd_ps(k4, a, _mm512_add_ps(d[3], d[4]));
    r[2] = _mm512_fmadd_ps(k4, b, _mm512_sub_ps(d[4], d[3]));
    r[3] = _mm512_fmadd_ps(k2, f, e);
    r[4] = _mm512_fnmadd_ps(k2, f, e);
    r[5] = _mm512_fnmadd_ps(k5, d[3], _mm512_fmadd_ps(k4, d[1], d[5]));
}

TGT static INL void
out_1d(const __m512 m[6], __m512 r[4])
{
    const __m512 k2 = _mm512_set1_ps(2.0f), k4 = _mm512_set1_ps(4.0f),
                 k8 = _mm512_set1_ps(8.0f);
    __m512 a = _mm512_add_ps(m[1], m[2]), b = _mm512_sub_ps(m[1], m[2]);
    __m512 c = _mm512_add_ps(m[3], m[4]), d = _mm512_sub_ps(m[3], m[4]);
    r[0] = _mm512_add_ps(_mm512_add_ps(m[0], a), c);
    r[1] = _mm512_fmadd_ps(k2, d, b);
    r[2] = _mm512_fmadd_ps(k4, c, a);
    r[3] = _mm512_add_ps(_mm512_fmadd_ps(k8, d, b), m[5]);
}

/* V[p][t][c] of the tiles [t0, t0 + nt): zero outside the input and in
 * the channel padding. */
TGT static void
input_tf(const wgeom *w, const float *x, int64_t t0, int64_t nt, float *V)
{
    const int64_t ci = w->ci, cp = w->cp, pstride = PSTRIDE(cp);
    for (int64_t t = 0; t < nt; t++) {
        int64_t tile = t0 + t, img = tile / (w->th * w->tw);
        int64_t rem = tile % (w->th * w->tw);
        int64_t r0 = (rem / w->tw) * OUT - w->pt;
        int64_t s0 = (rem % w->tw) * OUT - w->pl;
        const float *xi = x + img * w->ih * w->iw * ci;
        int rowok[T], colok[T];
        for (int i = 0; i < T; i++) {
            rowok[i] = r0 + i >= 0 && r0 + i < w->ih;
            colok[i] = s0 + i >= 0 && s0 + i < w->iw;
        }
        for (int64_t c = 0; c < cp; c += 16) {
            __mmask16 mk = (__mmask16)(ci - c >= 16 ? 0xffffu
                                       : ci - c > 0 ? (1u << (ci - c)) - 1
                                                    : 0);
            __m512 d[T][T], tmp[T][T];
            for (int i = 0; i < T; i++) {
                for (int j = 0; j < T; j++)
                    d[i][j] = rowok[i] && colok[j]
                                  ? _mm512_maskz_loadu_ps(
                                        mk, xi + ((r0 + i) * w->iw + s0 + j) *
                                                     ci + c)
                                  : _mm512_setzero_ps();
                in_1d(d[i], tmp[i]); /* along the row: tmp[i][k] */
            }
            for (int k = 0; k < T; k++) {
                __m512 col[T], r[T];
                for (int i = 0; i < T; i++)
                    col[i] = tmp[i][k];
                in_1d(col, r);
                for (int a = 0; a < T; a++)
                    _mm512_storeu_ps(V + (a * T + k) * pstride + t * cp + c,
                                     r[a]);
            }
        }
    }
}

/* y tiles from M[p][t][o], with the epilogue: + bias, + y's residual
 * (add), activation; only the pixels inside the output are written. */
TGT static void
output_tf(const wgeom *w, const float *M, int64_t t0, int64_t nt,
          const float *bias, int act, int add, float *y)
{
    const int64_t co = w->co, op = w->op, pstride = PSTRIDE(op);
    for (int64_t t = 0; t < nt; t++) {
        int64_t tile = t0 + t, img = tile / (w->th * w->tw);
        int64_t rem = tile % (w->th * w->tw);
        int64_t r0 = (rem / w->tw) * OUT, s0 = (rem % w->tw) * OUT;
        int nr = (int)(w->oh - r0 < OUT ? w->oh - r0 : OUT);
        int ns = (int)(w->ow - s0 < OUT ? w->ow - s0 : OUT);
        float *yi = y + img * w->oh * w->ow * co;
        for (int64_t o = 0; o < co; o += 16) {
            __mmask16 mk = (__mmask16)(co - o >= 16 ? 0xffffu
                                                    : (1u << (co - o)) - 1);
            __m512 tmp[OUT][T];
            for (int k = 0; k < T; k++) {
                __m512 col[T], r[OUT];
                for (int a = 0; a < T; a++)
                    col[a] = _mm512_loadu_ps(M + (a * T + k) * pstride +
                                             t * op + o);
                out_1d(col, r);
                for (int i = 0; i < OUT; i++)
                    tmp[i][k] = r[i];
            }
            __m512 b = bias ? _mm512_maskz_loadu_ps(mk, bias + o)
                            : _mm512_setzero_ps();
            for (int i = 0; i < nr; i++) {
                __m512 r[OUT];
                out_1d(tmp[i], r);
                for (int j = 0; j < ns; j++) {
                    float *p = yi + ((r0 + i) * w->ow + s0 + j) * co + o;
                    __m512 v = _mm512_add_ps(r[j], b);
                    if (add)
                        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, p));
                    if (act == TFM_CONV_ACT_RELU)
                        v = _mm512_max_ps(v, _mm512_setzero_ps());
                    else if (act == TFM_CONV_ACT_RELU6)
                        v = _mm512_min_ps(
                            _mm512_max_ps(v, _mm512_setzero_ps()),
                            _mm512_set1_ps(6.0f));
                    _mm512_mask_storeu_ps(p, mk, v);
                    if (act == TFM_CONV_ACT_ELU) {
                        /* no vector expm1 without SVML; Elu is rare */
                        int n = (int)(co - o < 16 ? co - o : 16);
                        for (int l = 0; l < n; l++)
                            if (p[l] <= 0.0f)
                                p[l] = expm1f(p[l]);
                    }
                }
            }
        }
    }
}

/* c[mr x 16nv] = a[mr x K] b[K x 16nv]; a rows lda apart, b and c rows
 * ldb apart. Broadcast a, four vectors of b: 24 accumulators. */
TGT static INL void
gemm_tile(const float *a, int64_t lda, const float *b, int64_t ldb,
          int64_t K, float *c, const int mr, const int nv)
{
    __m512 acc[MR][NV];
#pragma GCC unroll 6
    for (int m = 0; m < mr; m++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[m][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
#pragma GCC unroll 6
        for (int m = 0; m < mr; m++) {
            __m512 av = _mm512_set1_ps(a[m * lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[m][v] = _mm512_fmadd_ps(av, bv[v], acc[m][v]);
        }
    }
#pragma GCC unroll 6
    for (int m = 0; m < mr; m++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(c + m * ldb + 16 * v, acc[m][v]);
}

typedef void (*tile_fn)(const float *, int64_t, const float *, int64_t,
                        int64_t, float *);
#define TILE(M_, V_)                                                        \
    TGT static void tile_##M_##_##V_(const float *a, int64_t lda,           \
                                     const float *b, int64_t ldb, int64_t K, \
                                     float *c)                               \
    {                                                                        \
        gemm_tile(a, lda, b, ldb, K, c, M_, V_);                             \
    }
#define TILES(M_) TILE(M_, 1) TILE(M_, 2) TILE(M_, 3) TILE(M_, 4)
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6)
#define ROW(M_) {tile_##M_##_1, tile_##M_##_2, tile_##M_##_3, tile_##M_##_4}
static const tile_fn tiles[MR][NV] = {ROW(1), ROW(2), ROW(3), ROW(4),
                                      ROW(5), ROW(6)};

/* M[p] = V[p] U[p] for the 36 points of nt tiles. */
static void
block_gemm(const wgeom *w, const float *V, const float *U, int64_t nt,
           float *M)
{
    const int64_t cp = w->cp, op = w->op;
    for (int p = 0; p < TT; p++) {
        const float *a = V + p * PSTRIDE(cp), *u = U + p * cp * op;
        float *c = M + p * PSTRIDE(op);
        for (int64_t n0 = 0; n0 < op; n0 += 16 * NV) {
            int nv = (int)((op - n0 < 16 * NV ? op - n0 : 16 * NV) / 16);
            for (int64_t m0 = 0; m0 < nt; m0 += MR) {
                int mr = (int)(nt - m0 < MR ? nt - m0 : MR);
                tiles[mr - 1][nv - 1](a + m0 * cp, cp, u + n0, op, cp,
                                      c + m0 * op + n0);
            }
        }
    }
}

/* U[p][c][o] (zeroed beforehand) = (G g G^T)[p] of the HWIO filter f
 * [3, 3, ci, co], eight output channels at a time in double, rounded
 * once. Threads split the input channels. */
TGT static void
filter_tf(const wgeom *w, const float *f, float *U)
{
    static const double G[T][3] = {
        {1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
        {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
        {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
    const int64_t ci = w->ci, co = w->co, cp = w->cp, op = w->op;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t c = 0; c < ci; c++)
        for (int64_t o = 0; o < co; o += 8) {
            __mmask16 mk = (__mmask16)(co - o >= 8 ? 0xffu
                                                   : (1u << (co - o)) - 1);
            __m512d g[3][3], tmp[T][3];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    g[i][j] = _mm512_cvtps_pd(_mm512_castps512_ps256(
                        _mm512_maskz_loadu_ps(
                            mk, f + (i * 3 + j) * ci * co + c * co + o)));
            for (int a = 0; a < T; a++)
                for (int j = 0; j < 3; j++)
                    tmp[a][j] = _mm512_fmadd_pd(
                        _mm512_set1_pd(G[a][2]), g[2][j],
                        _mm512_fmadd_pd(
                            _mm512_set1_pd(G[a][1]), g[1][j],
                            _mm512_mul_pd(_mm512_set1_pd(G[a][0]), g[0][j])));
            for (int a = 0; a < T; a++)
                for (int b = 0; b < T; b++) {
                    __m512d u = _mm512_fmadd_pd(
                        _mm512_set1_pd(G[b][2]), tmp[a][2],
                        _mm512_fmadd_pd(
                            _mm512_set1_pd(G[b][1]), tmp[a][1],
                            _mm512_mul_pd(_mm512_set1_pd(G[b][0]),
                                          tmp[a][0])));
                    _mm512_mask_storeu_ps(
                        U + (a * T + b) * cp * op + c * op + o, mk,
                        _mm512_castps256_ps512(_mm512_cvtpd_ps(u)));
                }
        }
}

/* The input gradient's filter: f [3, 3, co, ci] (forward HWIO, its
 * channels named for this conv) turned 180 degrees with the channels
 * swapped, into r [3, 3, ci, co]. */
static void
flip_filter(const wgeom *w, const float *f, float *r)
{
    const int64_t ci = w->ci, co = w->co;
    for (int64_t k = 0; k < 9; k++)
        for (int64_t o = 0; o < co; o++)
            for (int64_t c = 0; c < ci; c++)
                r[k * ci * co + c * co + o] = f[(8 - k) * ci * co + o * ci + c];
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
tfm_conv_winograd_takes(int kind, const tfm_conv_geom *g)
{
    if (kind == TFM_CONV_BWD_WEIGHTS || wino_mode() == MODE_OFF ||
        !have_avx512() || g->kh != 3 || g->kw != 3 || g->sh != 1 ||
        g->sw != 1 || g->dh != 1 || g->dw != 1 || g->groups > 1 ||
        g->n <= 0 || g->oh <= 0 || g->ow <= 0 || g->c <= 0 || g->o <= 0)
        return 0;
    if (wino_mode() == MODE_ALWAYS)
        return 1;
    /* Where it measured faster than oneDNN's brgconv
     * (conv_winograd_bench.c, one thread, CPU time; RESULTS.md): 1.5-2x
     * from 16 -> 64 or 32 -> 32 channels and 1024 output pixels up;
     * a tie at 16 -> 16, 3x slower at 3 -> 32 (the transforms then cost
     * more than the GEMMs save). */
    return g->c >= 16 && g->o >= 16 && g->c + g->o >= 64 &&
           g->n * g->oh * g->ow >= 1024;
}

int
tfm_conv_winograd_f32(int kind, const tfm_conv_geom *g, const float *a,
                      const float *b, const float *bias, int act, float *out)
{
    if (!tfm_conv_winograd_takes(kind, g))
        return 0;
    wgeom w;
    const float *x, *f;
    int flip = kind == TFM_CONV_BWD_DATA;
    if (flip) {
        /* dx (n, h, w, c) from dy (n, oh, ow, o): leading pad 2 - p. */
        w = (wgeom){g->n, g->oh, g->ow, g->o, g->h, g->w, g->c,
                    2 - g->pt, 2 - g->pl, 0, 0, 0, 0, 0};
        x = b;
        f = a;
    } else {
        w = (wgeom){g->n, g->h, g->w, g->c, g->oh, g->ow, g->o,
                    g->pt, g->pl, 0, 0, 0, 0, 0};
        x = a;
        f = b;
    }
    int add = act >= 0 && (act & TFM_CONV_ADD_DST);
    act = act < 0 ? TFM_CONV_ACT_NONE : act & ~TFM_CONV_ADD_DST;
    w.th = (w.oh + OUT - 1) / OUT;
    w.tw = (w.ow + OUT - 1) / OUT;
    w.tiles = w.n * w.th * w.tw;
    w.cp = (w.ci + 15) / 16 * 16;
    w.op = (w.co + 15) / 16 * 16;
    const int64_t blocks = (w.tiles + TB - 1) / TB;
    int nt = 1;
#ifdef _OPENMP
    if (!omp_in_parallel())
        nt = omp_get_max_threads();
#endif
    if (nt > blocks)
        nt = (int)blocks;
    const int64_t usz = TT * w.cp * w.op, vsz = TT * PSTRIDE(w.cp),
                  msz = TT * PSTRIDE(w.op);
    float *U = malloc((size_t)usz * sizeof(float));
    float *work = malloc((size_t)(nt * (vsz + msz)) * sizeof(float));
    float *ff = flip ? malloc((size_t)(9 * w.ci * w.co) * sizeof(float))
                     : NULL;
    if (!U || !work || (flip && !ff)) {
        free(U);
        free(work);
        free(ff);
        return -1;
    }
    if (flip) {
        flip_filter(&w, f, ff);
        f = ff;
    }
    memset(U, 0, (size_t)usz * sizeof(float)); /* the channel padding */
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        float *V = work + t * (vsz + msz), *M = V + vsz;
        filter_tf(&w, f, U); /* an omp for: ends in a barrier */
        /* Blocks handed out as threads come free: on a shared machine
         * a descheduled thread's static share would hold the others at
         * the barrier; each block writes its own pixels, so the answer
         * does not depend on who runs it. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t blk = 0; blk < blocks; blk++) {
            int64_t t0 = blk * TB;
            int64_t n = w.tiles - t0 < TB ? w.tiles - t0 : TB;
            input_tf(&w, x, t0, n, V);
            block_gemm(&w, V, U, n, M);
            output_tf(&w, M, t0, n, bias, act, add, out);
        }
    }
    free(U);
    free(work);
    free(ff);
    atomic_fetch_add_explicit(&wino_calls, 1, memory_order_relaxed);
    return 1;
}

#else

int
tfm_conv_winograd_takes(int kind, const tfm_conv_geom *g)
{
    (void)kind; (void)g;
    (void)wino_mode;
    return 0;
}

int
tfm_conv_winograd_f32(int kind, const tfm_conv_geom *g, const float *a,
                      const float *b, const float *bias, int act, float *out)
{
    (void)kind; (void)g; (void)a; (void)b; (void)bias; (void)act;
    (void)out;
    return 0;
}

#endif
