/* CPU kernels of the quantized ops (ops/ops_quant.def), over the int8
 * GEMM of qgemm.c. The arithmetic is Note [Quantized arithmetic] in
 * ops/quant.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/status.h"
#include "conv.h"
#include "loops.h"
#include "qgemm.h"
#include "quant_conv.h"

static inline int32_t
clampi(int64_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

static tfm_code
oom(tfm_op op)
{
    return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                     "its scratch buffers", tfm_ops[op].name);
}

tfm_code
tfm_k_quantize(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    const float *x = tfm_tensor_data(in[0]);
    int8_t *q = tfm_tensor_data(out[0]);
    float inv = (float)(1.0 / a->f[0]);
    int64_t zp = a->i[1];
    TFM_PAR_FOR(tfm_tensor_numel(in[0]) > TFM_PAR_MIN, i,
                tfm_tensor_numel(in[0]), {
        q[i] = (int8_t)clampi(tfm_qround_away(x[i] * inv) + zp, -128,
                              127);
    });
    return TFM_OK;
}

tfm_code
tfm_k_dequantize(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)op; (void)nout; (void)ctx;
    const int8_t *q = tfm_tensor_data(in[0]);
    float *y = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    if (nin == 1) {
        float s = (float)a->f[0];
        int32_t zp = (int32_t)a->i[1];
        TFM_PAR_FOR(n > TFM_PAR_MIN, i, n, { y[i] = (q[i] - zp) * s; });
        return TFM_OK;
    }
    const float *s = tfm_tensor_data(in[1]);
    int64_t c = in[1]->shape.dims[0];
    if (c > 0)
        TFM_PAR_FOR(n > TFM_PAR_MIN, i, n, { y[i] = q[i] * s[i % c]; });
    return TFM_OK;
}

tfm_code
tfm_k_qmatmul_accum(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    int64_t M = in[0]->shape.dims[0], K = in[0]->shape.dims[1];
    int64_t N = in[1]->shape.dims[1];
    const int8_t *x = tfm_tensor_data(in[0]), *w = tfm_tensor_data(in[1]);
    int32_t *c = tfm_tensor_data(out[0]);
    uint8_t *u = malloc((size_t)(M * K) + 1);
    int32_t *cs = malloc((size_t)N * sizeof *cs + 1);
    if (!u || !cs) {
        free(u);
        free(cs);
        return oom(op);
    }
    for (int64_t i = 0; i < M * K; i++)
        u[i] = (uint8_t)(x[i] + 128);
    tfm_qgemm_u8s8_sums(M, N, K, u, K, w, c, cs);
    int32_t zp = (int32_t)a->i[1] + 128;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            c[m * N + n] -= zp * cs[n];
    free(u);
    free(cs);
    return TFM_OK;
}

tfm_code
tfm_k_hybrid_fc(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout; (void)ctx;
    int64_t K = in[1]->shape.dims[0], N = in[1]->shape.dims[1];
    int64_t M = K > 0 ? tfm_tensor_numel(in[0]) / K : 0;
    const float *x = tfm_tensor_data(in[0]), *ws = tfm_tensor_data(in[2]);
    const int8_t *w = tfm_tensor_data(in[1]);
    float *y = tfm_tensor_data(out[0]);
    if (K == 0) {
        memset(y, 0, (size_t)(tfm_tensor_numel(out[0])) * sizeof *y);
        return TFM_OK;
    }
    uint8_t *u = malloc((size_t)(M * K) + 1);
    int32_t *acc = malloc((size_t)(M * N) * sizeof *acc + 1);
    int32_t *cs = malloc((size_t)N * sizeof *cs + 1);
    float *rs = malloc((size_t)M * sizeof *rs + 1);
    int32_t *rz = malloc((size_t)M * sizeof *rz + 1);
    tfm_code rc = TFM_OK;
    if (!u || !acc || !cs || !rs || !rz) {
        rc = oom(op);
        goto done;
    }
    /* Each row its own asymmetric uint8 range, holding 0 (TF Lite's
     * asymmetric_quantize_inputs): one large row does not flatten the
     * others. */
    for (int64_t m = 0; m < M; m++)
        tfm_qhybrid_quantize(x + m * K, 1, K, K, u + m * K, &rs[m], &rz[m]);
    tfm_qgemm_u8s8_sums(M, N, K, u, K, w, acc, cs);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            y[m * N + n] = (float)(acc[m * N + n] - rz[m] * cs[n])
                           * rs[m] * ws[n];
done:
    free(u);
    free(acc);
    free(cs);
    free(rs);
    free(rz);
    return rc;
}

/* acc (int32 [M, N], sums of u * w) -> int8 y, with the input's zero
 * point taken out, bias added, requantized and activated. mult is N
 * floats of scratch. The clamp comes before the rounding, in float, so
 * the loop has no library calls and vectorizes; a NaN (from a NaN
 * scale) lands on the low end. */
static void
requantize(const tfm_attrs *a, const int32_t *acc, const int32_t *cs,
           const int32_t *bias, const float *ws, int64_t M, int64_t N,
           int8_t *y, float *mult)
{
    int32_t zin = (int32_t)a->i[1] + 128, zout = (int32_t)a->i[2];
    double ratio = a->f[0] / a->f[1];
    int32_t lo = -128, hi = 127;
    if (a->i[3] == TFM_QACT_RELU || a->i[3] == TFM_QACT_RELU6)
        lo = zout > lo ? zout : lo;
    if (a->i[3] == TFM_QACT_RELU6) {
        double six = zout + 6.0 / a->f[1];
        hi = six < hi ? (int32_t)(six + 0.5) : hi;
        hi = hi < lo ? lo : hi;
    }
    for (int64_t n = 0; n < N; n++)
        mult[n] = (float)(ratio * ws[n]);
    float flo = (float)(lo - zout), fhi = (float)(hi - zout);
    for (int64_t m = 0; m < M; m++) {
        const int32_t *ar = acc + m * N;
        int8_t *yr = y + m * N;
        for (int64_t n = 0; n < N; n++) {
            int64_t v = (int64_t)ar[n] - (int64_t)zin * cs[n]
                        + (bias ? bias[n] : 0);
            float d = (float)v * mult[n];
            d = d > fhi ? fhi : d;
            d = d >= flo ? d : flo;
            yr[n] = (int8_t)((int32_t)(d + (d >= 0 ? 0.5f : -0.5f)) + zout);
        }
    }
}

/* The scratch of one quantized GEMM: x shifted to uint8 [M,K], the
 * int32 accumulators [M,N], the filter's column sums and the per-
 * channel multipliers [N]. */
typedef struct {
    uint8_t *u;
    int32_t *acc, *cs;
    float *mult;
} qscratch;

static void
qscratch_free(qscratch *q)
{
    free(q->u);
    free(q->acc);
    free(q->cs);
    free(q->mult);
}

static int
qscratch_alloc(qscratch *q, int64_t M, int64_t N, int64_t K)
{
    q->u = malloc((size_t)(M * K) + 1);
    q->acc = malloc((size_t)(M * N) * sizeof *q->acc + 1);
    q->cs = malloc((size_t)N * sizeof *q->cs + 1);
    q->mult = malloc((size_t)N * sizeof *q->mult + 1);
    if (q->u && q->acc && q->cs && q->mult)
        return 1;
    qscratch_free(q);
    return 0;
}

/* q->u filled: multiply by the int8 filter w [K,N], requantize into
 * out[0] with the scales (in[2]) and the optional bias (in[3]). */
static tfm_code
qgemm_finish(qscratch *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
             tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out)
{
    tfm_qgemm_u8s8_sums(M, N, K, q->u, K, w, q->acc, q->cs);
    requantize(a, q->acc, q->cs, nin == 4 ? tfm_tensor_data(in[3]) : NULL,
               tfm_tensor_data(in[2]), M, N, tfm_tensor_data(out[0]),
               q->mult);
    qscratch_free(q);
    return TFM_OK;
}

tfm_code
tfm_k_quantized_fc(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    int64_t K = in[1]->shape.dims[0], N = in[1]->shape.dims[1];
    int64_t M = K > 0 ? tfm_tensor_numel(in[0]) / K
                      : tfm_tensor_numel(out[0]) / (N > 0 ? N : 1);
    const int8_t *x = tfm_tensor_data(in[0]), *w = tfm_tensor_data(in[1]);
    qscratch q;
    if (!qscratch_alloc(&q, M, N, K))
        return oom(op);
    for (int64_t i = 0; i < M * K; i++)
        q.u[i] = (uint8_t)(x[i] + 128);
    return qgemm_finish(&q, w, M, N, K, in, nin, a, out);
}

tfm_code
tfm_k_quantized_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    const int64_t *wd = in[1]->shape.dims, *yd = out[0]->shape.dims;
    tfm_conv_geom g;
    tfm_conv_geom_make(&g, &in[0]->shape, wd[0], wd[1], wd[3],
                       a->ints[TFM_CONV_WIN_H], a->ints[TFM_CONV_WIN_W], a);
    int64_t B = g.n, H = g.h, W = g.w, C = g.c, KH = g.kh, KW = g.kw;
    int64_t O = g.o, OH = yd[1], OW = yd[2];
    int64_t sh = g.sh, sw = g.sw, dh = g.dh, dw = g.dw, pt = g.pt, pl = g.pl;
    int64_t K = KH * KW * C, M = B * OH * OW;
    const int8_t *x = tfm_tensor_data(in[0]), *w = tfm_tensor_data(in[1]);
    qscratch q;
    if (!qscratch_alloc(&q, M, O, K))
        return oom(op);
    uint8_t *u = q.u;
    /* im2col in uint8; padding holds the input's zero point, the value
     * that stands for 0.0, as Conv2D pads with zeros. The columns run
     * (kh, kw, c), the order of the filter's rows. */
    uint8_t pad = (uint8_t)(a->i[1] + 128);
    TFM_PAR_FOR(M * K > TFM_PAR_MIN, r, M, {
        int64_t b = r / (OH * OW), p = r % (OH * OW);
        int64_t oy = p / OW, ox = p % OW;
        uint8_t *row = u + r * K;
        for (int64_t i = 0; i < KH; i++) {
            int64_t iy = oy * sh + i * dh - pt;
            for (int64_t j = 0; j < KW; j++) {
                int64_t ix = ox * sw + j * dw - pl;
                uint8_t *dst = row + (i * KW + j) * C;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) {
                    memset(dst, pad, (size_t)C);
                    continue;
                }
                const int8_t *src = x + ((b * H + iy) * W + ix) * C;
                for (int64_t c = 0; c < C; c++)
                    dst[c] = (uint8_t)(src[c] + 128);
            }
        }
    });
    return qgemm_finish(&q, w, M, O, K, in, nin, a, out);
}

/* ---- the packed forms: weights as the converter stores them (Note
 * [Packed int8 weights] in qgemm.h), so no packing, no cache and no
 * compare on any call; the input's quantization and the output's
 * requantization (and dequantization) run in the GEMM's passes. ---- */

/* x [M, K] (int8, or float32 quantized with f[0] and i[1]) as the
 * packed GEMM's uint8 rows, zero-padded to K4*4; NULL out of memory. */
static uint8_t *
packed_rows(const tfm_tensor *x, int64_t M, int64_t K, const tfm_attrs *a)
{
    int64_t K4 = (K + 3) / 4;
    uint8_t *u = calloc((size_t)(M * K4 * 4) + 1, 1);
    if (!u)
        return NULL;
    if (x->dtype == TFM_INT8) {
        const int8_t *q = tfm_tensor_data((tfm_tensor *)x);
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < K; k++)
                u[m * K4 * 4 + k] = (uint8_t)(q[m * K + k] + 128);
        return u;
    }
    const float *f = tfm_tensor_data((tfm_tensor *)x);
    float inv = (float)(1.0 / a->f[0]);
    int32_t zp = (int32_t)a->i[1];
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            u[m * K4 * 4 + k] = (uint8_t)(tfm_qclamp32(
                tfm_qround_away(f[m * K + k] * inv) + zp, -128, 127) + 128);
    return u;
}

/* As requantize() above, in tfm_qout's terms (quant_conv.h). */
void
tfm_qstatic_out(tfm_qout *o, const tfm_attrs *a, tfm_tensor *const *in,
                int64_t N, tfm_tensor *y, int64_t *cb, float *mult)
{
    int32_t zout = (int32_t)a->i[2];
    double ratio = a->f[0] / a->f[1];
    int32_t lo = -128, hi = 127;
    if (a->i[3] == TFM_QACT_RELU || a->i[3] == TFM_QACT_RELU6)
        lo = zout > lo ? zout : lo;
    if (a->i[3] == TFM_QACT_RELU6) {
        double six = zout + 6.0 / a->f[1];
        hi = six < hi ? (int32_t)(six + 0.5) : hi;
        hi = hi < lo ? lo : hi;
    }
    const float *ws = tfm_tensor_data(in[2]);
    const int32_t *off = tfm_tensor_data(in[3]);
    for (int64_t n = 0; n < N; n++) {
        mult[n] = (float)(ratio * ws[n]);
        cb[n] = off[n];
    }
    *o = (tfm_qout){.kind = y->dtype == TFM_INT8 ? TFM_QOUT_INT8
                                                 : TFM_QOUT_FLOAT,
                    .y = tfm_tensor_data(y), .cb = cb, .mult = mult,
                    .zout = zout, .flo = (float)(lo - zout),
                    .fhi = (float)(hi - zout), .s_out = (float)a->f[1]};
}

/* rows (freed here) times the packed weights in[1], finished into
 * out[0] as a static-range layer. */
static tfm_code
packed_static(tfm_op op, uint8_t *rows, int64_t M, int64_t N, int64_t K,
              tfm_tensor *const *in, const tfm_attrs *a,
              tfm_tensor *const *out)
{
    int64_t *cb = malloc((size_t)N * sizeof *cb + 1);
    float *mult = malloc((size_t)N * sizeof *mult + 1);
    if (!rows || !cb || !mult) {
        free(rows);
        free(cb);
        free(mult);
        return oom(op);
    }
    tfm_qout o;
    tfm_qstatic_out(&o, a, in, N, out[0], cb, mult);
    tfm_qgemm_packed(M, N, K, rows, tfm_tensor_data(in[1]), &o);
    free(rows);
    free(cb);
    free(mult);
    return TFM_OK;
}

tfm_code
tfm_k_quantized_fc_packed(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    int64_t N = in[2]->shape.dims[0];
    int64_t K = in[0]->shape.dims[in[0]->shape.ndim - 1];
    int64_t M = N > 0 ? tfm_tensor_numel(out[0]) / N : 0;
    return packed_static(op, packed_rows(in[0], M, K, a), M, N, K, in, a,
                         out);
}

tfm_code
tfm_k_hybrid_fc_packed(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out,
                       int nout, const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    int64_t N = in[2]->shape.dims[0];
    int64_t K = in[0]->shape.dims[in[0]->shape.ndim - 1];
    int64_t M = N > 0 ? tfm_tensor_numel(out[0]) / N : 0, K4 = (K + 3) / 4;
    const float *x = tfm_tensor_data(in[0]);
    uint8_t *u = calloc((size_t)(M * K4 * 4) + 1, 1);
    float *rs = malloc((size_t)M * sizeof *rs + 1);
    int32_t *rz = malloc((size_t)M * sizeof *rz + 1);
    if (!u || !rs || !rz) {
        free(u);
        free(rs);
        free(rz);
        return oom(op);
    }
    /* Each row its own asymmetric uint8 range holding 0, as
     * tfm_k_hybrid_fc does. */
    for (int64_t m = 0; m < M; m++)
        tfm_qhybrid_quantize(x + m * K, 1, K, K, u + m * K4 * 4, &rs[m],
                             &rz[m]);
    tfm_qout o = {.kind = TFM_QOUT_HYBRID, .y = tfm_tensor_data(out[0]),
                  .cs = tfm_tensor_data(in[3]),
                  .mult = tfm_tensor_data(in[2]), .rs = rs, .rz = rz,
                  .fbias = nin == 5 ? tfm_tensor_data(in[4]) : NULL,
                  .act = (int)a->i[3]};
    tfm_qgemm_packed(M, N, K, u, tfm_tensor_data(in[1]), &o);
    free(u);
    free(rs);
    free(rz);
    return TFM_OK;
}

tfm_code
tfm_k_quantized_conv2d_packed(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    int done;
    tfm_code rc = tfm_qconv2d_direct(op, in, a, out, &done);
    if (done || rc != TFM_OK)
        return rc;
    const int64_t *yd = out[0]->shape.dims;
    tfm_conv_geom g;
    tfm_qconv_geom(&g, &in[0]->shape, a);
    int64_t B = g.n, H = g.h, W = g.w, C = g.c, KH = g.kh, KW = g.kw;
    int64_t O = g.o, OH = yd[1], OW = yd[2];
    int64_t sh = g.sh, sw = g.sw, dh = g.dh, dw = g.dw, pt = g.pt, pl = g.pl;
    int64_t K = KH * KW * C, M = B * OH * OW, K4 = (K + 3) / 4;
    int64_t nx = tfm_tensor_numel(in[0]);
    /* A float input is quantized once (each value lands in up to KH*KW
     * rows); then im2col as in tfm_k_quantized_conv2d, into rows padded
     * to K4*4. */
    uint8_t *ux = malloc((size_t)nx + 1);
    uint8_t *u = calloc((size_t)(M * K4 * 4) + 1, 1);
    if (!ux || !u) {
        free(ux);
        free(u);
        return oom(op);
    }
    if (in[0]->dtype == TFM_INT8) {
        const int8_t *q = tfm_tensor_data(in[0]);
        for (int64_t i = 0; i < nx; i++)
            ux[i] = (uint8_t)(q[i] + 128);
    } else {
        const float *f = tfm_tensor_data(in[0]);
        float inv = (float)(1.0 / a->f[0]);
        int32_t zp = (int32_t)a->i[1];
        for (int64_t i = 0; i < nx; i++)
            ux[i] = (uint8_t)(tfm_qclamp32(tfm_qround_away(f[i] * inv)
                                           + zp, -128, 127) + 128);
    }
    uint8_t pad = (uint8_t)(a->i[1] + 128);
    TFM_PAR_FOR(M * K > TFM_PAR_MIN, r, M, {
        int64_t b = r / (OH * OW), p = r % (OH * OW);
        int64_t oy = p / OW, ox = p % OW;
        uint8_t *row = u + r * K4 * 4;
        for (int64_t i = 0; i < KH; i++) {
            int64_t iy = oy * sh + i * dh - pt;
            for (int64_t j = 0; j < KW; j++) {
                int64_t ix = ox * sw + j * dw - pl;
                uint8_t *dst = row + (i * KW + j) * C;
                int out = iy < 0 || iy >= H || ix < 0 || ix >= W;
                const uint8_t *src = out ? NULL
                                         : ux + ((b * H + iy) * W + ix) * C;
                /* One channel (a first layer on grey images) is one
                 * byte: a call to memcpy for it costs more than the
                 * products. */
                if (C == 1)
                    *dst = out ? pad : *src;
                else if (out)
                    memset(dst, pad, (size_t)C);
                else
                    memcpy(dst, src, (size_t)C);
            }
        }
    });
    free(ux);
    return packed_static(op, u, M, O, K, in, a, out);
}
