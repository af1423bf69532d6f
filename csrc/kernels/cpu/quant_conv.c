/* Note [Direct int8 convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * QuantizedConv2DPacked on AVX512-VNNI without im2col. A small CNN's
 * convolutions (a few input channels, 16 or 32 filters) are cheap in
 * products; through im2col they cost a written and re-read row of
 * KH*KW*C bytes per output pixel and a scalar finish per 16 outputs,
 * which made the digits CNN slower in int8 than oneDNN's float. Here
 * the products read the input where it lies: for each filter tap, each
 * of R output pixels (along a row) points at its input pixel, or at a
 * pixel of the input's zero point where the tap falls in the padding,
 * and vpdpbusd takes the channels four at a time. The filter's packed
 * rows (Note [Packed int8 weights] in qgemm.h) run (kh, kw, c), so when
 * C is a multiple of 4 each quad of k is four channels of one tap and
 * the converter's weights serve as they are; otherwise the input is
 * copied with its channels padded to a multiple of 4, and the weights
 * repacked with zero rows at the padded channels (KH*KW*C4*O bytes a
 * call: small beside the products). An int8 input is read as it is
 * (x ^ 0x80 is x + 128, the uint8 the products take); a float one is
 * quantized into the padded copy. The sums are finished in vectors,
 * with the arithmetic of finish() in qgemm.c step by step, in int32:
 * it applies only when every sum plus its offset provably fits in
 * int32, where the int32 add is exact. So its int8 equals the im2col
 * path's bit for bit (tests/test_quant_conv.py checks it).
 * HybridConv2DPacked (Note [Hybrid convolution] in quant_hybrid.c) runs
 * the same products over its per-image quantized input: each image's
 * padding pixel holds that image's zero point (padstep), and the sums
 * are finished as qgemm.c's TFM_QOUT_HYBRID, in vectors. */
#include "quant_conv.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/status.h"
#include "conv.h"
#include "loops.h"

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__) &&                   \
    (defined(__GNUC__) || defined(__clang__))
#define TFM_QCONV_X86 1
#include <immintrin.h>
#endif

int
tfm_qconv_direct_enabled(void)
{
    static _Atomic int cached = -1;
    int v = atomic_load(&cached);
    if (v >= 0)
        return v;
    const char *env = getenv("TFMINI_QCONV_IM2COL");
    v = tfm_qgemm_uses_vnni() && !(env && *env && *env != '0');
    atomic_store(&cached, v);
    return v;
}

#ifdef TFM_QCONV_X86
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

typedef struct {
    const uint8_t *src;         /* [B, H, W, cs] */
    const uint8_t *padpix;      /* a pixel outside image b: + b * padstep */
    int64_t padstep;
    uint32_t xm;                /* src's bytes ^ xm: the uint8 operand */
    int64_t H, W, cs, OH, OW, O, KH, KW, sh, sw, dh, dw, pt, pl, K4;
    const int8_t *wp;           /* packed over K = KH * KW * cs */
    const int32_t *cb;          /* static: bias - zin * column sums [O];
                                 * hybrid: the column sums */
    const float *mult;          /* [O] */
    int32_t zout;
    float flo, fhi, s_out;
    int int8_out;
    int hybrid;                 /* finish as TFM_QOUT_HYBRID, per image: */
    const float *rs;            /* [B] */
    const int32_t *rz;          /* [B] */
    const float *fbias;         /* [O] or NULL */
    int act;
    void *y;                    /* [B, OH, OW, O] */
} dconv;

/* One pixel's 16 sums (k: its valid lanes) finished into y at column n:
 * finish() in qgemm.c in vectors. min(fhi, d) is d > fhi ? fhi : d and
 * max(d, flo) is d >= flo ? d : flo, NaN included (it lands on flo). */
VNNI __attribute__((always_inline)) static inline void
dfinish(const dconv *d, __m512i acc, int64_t m, int64_t n, __mmask16 k)
{
    __m512i s = _mm512_add_epi32(acc, _mm512_maskz_loadu_epi32(k, d->cb + n));
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s),
                             _mm512_maskz_loadu_ps(k, d->mult + n));
    f = _mm512_min_ps(_mm512_set1_ps(d->fhi), f);
    f = _mm512_max_ps(f, _mm512_set1_ps(d->flo));
    __mmask16 pos = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_GE_OQ);
    __m512 half = _mm512_mask_blend_ps(pos, _mm512_set1_ps(-0.5f),
                                       _mm512_set1_ps(0.5f));
    __m512i q = _mm512_cvttps_epi32(_mm512_add_ps(f, half));
    if (d->int8_out)
        _mm512_mask_cvtepi32_storeu_epi8(
            (int8_t *)d->y + m * d->O + n, k,
            _mm512_add_epi32(q, _mm512_set1_epi32(d->zout)));
    else
        _mm512_mask_storeu_ps((float *)d->y + m * d->O + n, k,
                              _mm512_mul_ps(_mm512_cvtepi32_ps(q),
                                            _mm512_set1_ps(d->s_out)));
}

/* finish() in qgemm.c for TFM_QOUT_HYBRID, in vectors, the same float
 * steps in the same order (no fused multiply-add), so the im2col and
 * portable paths give the same floats bit for bit. max(0, f) and
 * min(6, f) keep a NaN, as the scalar compares do. The int32 subtract
 * may wrap in between, but its true value, sum (u - rz) w, is inside
 * int32 (K * 255 * 127 at most), so the wrapped result is exact. */
VNNI __attribute__((always_inline)) static inline void
dfinish_hybrid(const dconv *d, __m512i acc, int64_t b, int64_t m, int64_t n,
               __mmask16 k)
{
    __m512i cs = _mm512_maskz_loadu_epi32(k, d->cb + n);
    __m512i v = _mm512_sub_epi32(
        acc, _mm512_mullo_epi32(cs, _mm512_set1_epi32(d->rz[b])));
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(d->rs[b]));
    f = _mm512_mul_ps(f, _mm512_maskz_loadu_ps(k, d->mult + n));
    if (d->fbias)
        f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(k, d->fbias + n));
    if (d->act != TFM_QACT_NONE)
        f = _mm512_max_ps(_mm512_setzero_ps(), f);
    if (d->act == TFM_QACT_RELU6)
        f = _mm512_min_ps(_mm512_set1_ps(6.0f), f);
    _mm512_mask_storeu_ps((float *)d->y + m * d->O + n, k, f);
}

/* R (1..4) output pixels of row (b, oy) from ox0, times NB (1..4)
 * panels of 16 filters from n0: R*NB accumulators in registers (R and
 * NB are constants at each call, as in qgemm.c's block()), and each
 * filter load feeds R pixels. */
VNNI __attribute__((always_inline)) static inline void
dblock(int R, int NB, const dconv *d, int64_t b, int64_t oy, int64_t ox0,
       int64_t n0)
{
    __m512i acc[4][4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < NB; j++)
            acc[r][j] = _mm512_setzero_si512();
    const int8_t *pan[4];
    int64_t step[4];
    __mmask64 mk[4];
    __mmask16 mk16[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < NB; j++) {
        int64_t w = d->O - n0 - j * 16;
        w = w < 16 ? w : 16;
        pan[j] = d->wp + (n0 / 16 + j) * d->K4 * 64;
        step[j] = w * 4;
        mk[j] = w == 16 ? ~(__mmask64)0 : (((__mmask64)1 << (w * 4)) - 1);
        mk16[j] = (__mmask16)((1u << w) - 1);
    }
    int64_t cq = d->cs / 4;
    int32_t xm = (int32_t)d->xm;
    const uint8_t *pad = d->padpix + b * d->padstep;
    for (int64_t i = 0; i < d->KH; i++) {
        int64_t iy = oy * d->sh + i * d->dh - d->pt;
        int row_in = iy >= 0 && iy < d->H;
        const uint8_t *rowp = row_in ? d->src + (b * d->H + iy) * d->W * d->cs
                                     : NULL;
        for (int64_t j = 0; j < d->KW; j++) {
            const uint8_t *px[4];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < R; r++) {
                int64_t ix = (ox0 + r) * d->sw + j * d->dw - d->pl;
                px[r] = row_in && ix >= 0 && ix < d->W ? rowp + ix * d->cs
                                                       : pad;
            }
            const int64_t kb0 = (i * d->KW + j) * cq;
            for (int64_t c = 0; c < cq; c++) {
                __m512i bv[4];
                _Pragma("GCC unroll 4")
                for (int t = 0; t < NB; t++)
                    bv[t] = _mm512_maskz_loadu_epi8(
                        mk[t], pan[t] + (kb0 + c) * step[t]);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < R; r++) {
                    int32_t a4;
                    memcpy(&a4, px[r] + c * 4, 4);
                    __m512i av = _mm512_set1_epi32(a4 ^ xm);
                    _Pragma("GCC unroll 4")
                    for (int t = 0; t < NB; t++)
                        acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], av, bv[t]);
                }
            }
        }
    }
    int64_t m0 = (b * d->OH + oy) * d->OW + ox0;
    _Pragma("GCC unroll 4")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NB; t++) {
            if (d->hybrid)
                dfinish_hybrid(d, acc[r][t], b, m0 + r, n0 + t * 16,
                               mk16[t]);
            else
                dfinish(d, acc[r][t], m0 + r, n0 + t * 16, mk16[t]);
        }
}

/* Output row `row` (b * OH + oy), all of its pixels and filters. */
VNNI static void
drow(const dconv *d, int64_t row)
{
    int64_t b = row / d->OH, oy = row % d->OH;
    for (int64_t n0 = 0; n0 < d->O; n0 += 64) {
        int nb = d->O - n0 >= 64 ? 4 : (int)((d->O - n0 + 15) / 16);
        for (int64_t ox0 = 0; ox0 < d->OW; ox0 += 4) {
            int R = d->OW - ox0 < 4 ? (int)(d->OW - ox0) : 4;
#define NBS(R)                                                            \
    switch (nb) {                                                         \
    case 4: dblock(R, 4, d, b, oy, ox0, n0); break;                       \
    case 3: dblock(R, 3, d, b, oy, ox0, n0); break;                       \
    case 2: dblock(R, 2, d, b, oy, ox0, n0); break;                       \
    default: dblock(R, 1, d, b, oy, ox0, n0); break;                      \
    }
            switch (R) {
            case 4: NBS(4); break;
            case 3: NBS(3); break;
            case 2: NBS(2); break;
            default: NBS(1); break;
            }
#undef NBS
        }
    }
}

/* The converter's packing over K = T*C (T taps) as one over T*C4, with
 * zero rows at each tap's channels C..C4-1. */
static void
repack(const int8_t *wp, int64_t T, int64_t C, int64_t C4, int64_t O,
       int8_t *out)
{
    int64_t K4o = (T * C + 3) / 4, K4n = T * C4 / 4;
    memset(out, 0, (size_t)TFM_QPACK_BYTES(T * C4, O));
    for (int64_t p = 0; p * 16 < O; p++) {
        int64_t w = O - p * 16 < 16 ? O - p * 16 : 16;
        const int8_t *src = wp + p * K4o * 64;
        int8_t *dst = out + p * K4n * 64;
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++) {
                int64_t ko = t * C + c, kn = t * C4 + c;
                for (int64_t n = 0; n < w; n++)
                    dst[((kn / 4) * w + n) * 4 + kn % 4] =
                        src[((ko / 4) * w + n) * 4 + ko % 4];
            }
    }
}
#endif

/* Where the direct conv cannot run (no VNNI, or declined), its entries
 * report it through *done (static) or the caller asks
 * tfm_qconv_direct_enabled() first (hybrid). */
tfm_code
tfm_qconv2d_direct_run(tfm_op op, const tfm_attrs *a, const int64_t *xd,
                       const int64_t *yd, const tfm_qconv_src *x,
                       const int8_t *wp, const tfm_qout *o)
{
#ifdef TFM_QCONV_X86
    tfm_shape xs = {.ndim = 4, .dims = {xd[0], xd[1], xd[2], xd[3]}};
    tfm_conv_geom g;
    tfm_qconv_geom(&g, &xs, a);
    int64_t B = g.n, H = g.h, W = g.w, C = g.c;
    int64_t KH = g.kh, KW = g.kw, O = g.o;
    int64_t OH = yd[1], OW = yd[2], cs = x->cs;
    int64_t M = B * OH * OW;
    if (M == 0 || O == 0)
        return TFM_OK;
    int hybrid = o->kind == TFM_QOUT_HYBRID;
    int8_t *wr = cs != C ? malloc((size_t)TFM_QPACK_BYTES(KH * KW * cs, O)
                                  + 1) : NULL;
    int32_t *cb = hybrid ? NULL : malloc((size_t)O * sizeof *cb + 1);
    if ((cs != C && !wr) || (!hybrid && !cb)) {
        free(wr);
        free(cb);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                         "its scratch buffers", tfm_ops[op].name);
    }
    if (cs != C)
        repack(wp, KH * KW, C, cs, O, wr);
    /* the callers checked that every offset fits its int32 add */
    for (int64_t n = 0; !hybrid && n < O; n++)
        cb[n] = (int32_t)o->cb[n];
    dconv d = {.src = x->src, .padpix = x->padpix, .padstep = x->padstep,
               .xm = x->xm, .H = H, .W = W, .cs = cs, .OH = OH, .OW = OW,
               .O = O, .KH = KH, .KW = KW,
               .sh = g.sh, .sw = g.sw, .dh = g.dh, .dw = g.dw,
               .pt = g.pt, .pl = g.pl, .K4 = KH * KW * cs / 4,
               .wp = cs != C ? wr : wp, .cb = hybrid ? o->cs : cb,
               .mult = o->mult, .zout = o->zout, .flo = o->flo,
               .fhi = o->fhi, .s_out = o->s_out,
               .int8_out = o->kind == TFM_QOUT_INT8, .hybrid = hybrid,
               .rs = o->rs, .rz = o->rz, .fbias = o->fbias, .act = o->act,
               .y = o->y};
    int64_t K = KH * KW * cs;
    TFM_PAR_FOR(M * O * K > (1 << 22), row, B * OH, { drow(&d, row); });
    free(wr);
    free(cb);
    return TFM_OK;
#else
    (void)a; (void)xd; (void)yd; (void)x; (void)wp; (void)o;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: the direct int8 "
                     "convolution is not in this build", tfm_ops[op].name);
#endif
}

tfm_code
tfm_qconv2d_direct(tfm_op op, tfm_tensor *const *in, const tfm_attrs *a,
                   tfm_tensor *const *out, int *done)
{
    *done = 0;
    if (!tfm_qconv_direct_enabled())
        return TFM_OK;
    const int64_t *xd = in[0]->shape.dims, *fd = a->ints + TFM_CONV_SIZES;
    int64_t B = xd[0], H = xd[1], W = xd[2], C = xd[3];
    int64_t KH = fd[0], KW = fd[1], O = fd[3], C4 = (C + 3) / 4 * 4;
    int64_t K = KH * KW * C;
    /* Each sum is at most K * 255 * 128 in size; with the largest
     * offset it must stay inside int32 for the int32 add to be exact. */
    const int32_t *off = tfm_tensor_data(in[3]);
    int64_t big = 0;
    for (int64_t n = 0; n < O; n++) {
        int64_t v = off[n] < 0 ? -(int64_t)off[n] : off[n];
        big = v > big ? v : big;
    }
    if (K * 255 * 128 + big >= INT32_MAX)
        return TFM_OK;
    *done = 1;
    int copy = in[0]->dtype != TFM_INT8 || C4 != C;
    int64_t nx = B * H * W;
    /* zeroed once: channels past C hold zeros (their weights are zero
     * too), written by no per-pixel memset */
    uint8_t *u = copy ? calloc((size_t)(nx * C4) + 1, 1) : NULL;
    uint8_t *padpix = malloc((size_t)C4 + 1);
    int64_t *cb64 = malloc((size_t)O * sizeof *cb64 + 1);
    float *mult = malloc((size_t)O * sizeof *mult + 1);
    tfm_code rc = TFM_OK;
    if ((copy && !u) || !padpix || !cb64 || !mult) {
        rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                       "its scratch buffers", tfm_ops[op].name);
        goto done;
    }
    int32_t zin = (int32_t)a->i[1];
    if (copy) {
        if (in[0]->dtype == TFM_INT8) {
            const int8_t *q = tfm_tensor_data(in[0]);
            for (int64_t p = 0; p < nx; p++)
                for (int64_t c = 0; c < C; c++)
                    u[p * C4 + c] = (uint8_t)(q[p * C + c] + 128);
        } else {
            const float *f = tfm_tensor_data(in[0]);
            float inv = (float)(1.0 / a->f[0]);
            for (int64_t p = 0; p < nx; p++)
                for (int64_t c = 0; c < C; c++)
                    u[p * C4 + c] = (uint8_t)(tfm_qclamp32(
                        tfm_qround_away(f[p * C + c] * inv) + zin, -128,
                        127) + 128);
        }
        memset(padpix, zin + 128, (size_t)C4);
    } else {
        memset(padpix, (uint8_t)(int8_t)zin, (size_t)C4);
    }
    tfm_qout o;
    tfm_qstatic_out(&o, a, in, O, out[0], cb64, mult);
    tfm_qconv_src src = {.src = copy ? u
                                     : (const uint8_t *)tfm_tensor_data(in[0]),
                         .cs = C4, .xm = copy ? 0u : 0x80808080u,
                         .padpix = padpix, .padstep = 0};
    rc = tfm_qconv2d_direct_run(op, a, xd, out[0]->shape.dims, &src,
                                tfm_tensor_data(in[1]), &o);
done:
    free(u);
    free(padpix);
    free(cb64);
    free(mult);
    return rc;
}
