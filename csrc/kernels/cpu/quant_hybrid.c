/* Note [Hybrid convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * HybridConv2DPacked: a dynamic-range model's Conv2D (weights int8,
 * activations float), as TF Lite's hybrid per-channel CONV_2D computes
 * it. Each image of the batch is quantized on the fly to asymmetric
 * uint8 over its own range (holding 0), the rule HybridFullyConnected
 * applies to each row, so one bright image does not flatten the others;
 * the int8 products are summed exactly in int32, the image's zero point
 * taken out with the filter's column sums (padding taps read the zero
 * point, which stands for 0.0, as Conv2D pads with zeros), and each sum
 * is scaled back to float by the image's scale times the filter's
 * per-channel scale; the float bias and Relu/Relu6 follow, in float.
 * The products run in the direct VNNI convolution of quant_conv.c (Note
 * [Direct int8 convolution]), or with TFMINI_QCONV_IM2COL=1 through
 * im2col and the packed VNNI GEMM, finished by qgemm.c's
 * TFM_QOUT_HYBRID step; the direct conv repeats that step's float
 * operations in vectors, so the two give the same floats.
 * Without VNNI (other CPUs, the wasm build, TFMINI_QGEMM_REF=1) the
 * int8 products would run in the GEMM's portable loops, which made the
 * digits CNN's dynamic-range form 5x slower than its float form
 * (benchmarks/RESULTS.md), so there the weights are dequantized and the
 * convolution runs in float (no input quantization: closer to the float
 * model than the int8 paths, within their quantization error of them),
 * as the float Conv2D's im2col and GEMM do. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/status.h"
#include "conv.h"
#include "loops.h"
#include "qgemm.h"
#include "quant_conv.h"

void
tfm_qhybrid_quantize(const float *x, int64_t n, int64_t C, int64_t cs,
                     uint8_t *u, float *scale, int32_t *zero_point)
{
    float lo = 0, hi = 0;
    int64_t len = n * C;
    /* a simd reduction: the order does not change a min or a max of
     * numbers (a NaN may land differently; its outputs mean nothing) */
#pragma omp simd reduction(min : lo) reduction(max : hi)
    for (int64_t k = 0; k < len; k++) {
        lo = x[k] < lo ? x[k] : lo;
        hi = x[k] > hi ? x[k] : hi;
    }
    float s = (hi - lo) / 255.0f;
    if (!(s > 0) || !isfinite(s))
        s = 1.0f;
    int32_t zp = tfm_qclamp32(tfm_qround_away(-lo / s), 0, 255);
    float inv = 1.0f / s;
    if (cs == C) {              /* one flat loop, which vectorizes */
        for (int64_t k = 0; k < len; k++)
            u[k] = (uint8_t)tfm_qclamp32(tfm_qround_away(x[k] * inv) + zp,
                                         0, 255);
    } else {
        for (int64_t p = 0; p < n; p++)
            for (int64_t c = 0; c < C; c++)
                u[p * cs + c] = (uint8_t)tfm_qclamp32(
                    tfm_qround_away(x[p * C + c] * inv) + zp, 0, 255);
    }
    *scale = s;
    *zero_point = zp;
}

/* u [B, H, W, C] as the packed GEMM's rows [M, K4 * 4], zero-padded
 * past K; a tap in the padding reads image b's zero point rz[b]. */
static void
im2col(const uint8_t *u, const tfm_conv_geom *g, const int32_t *rz,
       uint8_t *rows)
{
    int64_t H = g->h, W = g->w, C = g->c, KH = g->kh, KW = g->kw;
    int64_t OH = g->oh, OW = g->ow, K4 = (KH * KW * C + 3) / 4;
    int64_t sh = g->sh, sw = g->sw, dh = g->dh, dw = g->dw;
    int64_t pt = g->pt, pl = g->pl, M = g->n * OH * OW;
    TFM_PAR_FOR(M * K4 > TFM_PAR_MIN, r, M, {
        int64_t b = r / (OH * OW), p = r % (OH * OW);
        int64_t oy = p / OW, ox = p % OW;
        uint8_t *row = rows + r * K4 * 4;
        for (int64_t i = 0; i < KH; i++) {
            int64_t iy = oy * sh + i * dh - pt;
            for (int64_t j = 0; j < KW; j++) {
                int64_t ix = ox * sw + j * dw - pl;
                uint8_t *dst = row + (i * KW + j) * C;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                    memset(dst, (int)rz[b], (size_t)C);
                else
                    memcpy(dst, u + ((b * H + iy) * W + ix) * C, (size_t)C);
            }
        }
    });
}

/* The float convolution of x with the dequantized filter, then bias and
 * activation, as a float model's Conv2D, BiasAdd and Relu compute it:
 * the _FusedConv2D kernel (oneDNN where the build has it, else im2col
 * and the float GEMM) on the filter read back as HWIO floats. */
static tfm_code
hybrid_float(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out)
{
    const int64_t *fd = a->ints + TFM_CONV_SIZES;
    int64_t KH = fd[0], KW = fd[1], C = in[0]->shape.dims[3], O = fd[3];
    int64_t K = KH * KW * C, K4 = (K + 3) / 4;
    tfm_shape fs = {.ndim = 4, .dims = {KH, KW, C, O}};
    tfm_tensor *f = tfm_tensor_new(TFM_FLOAT32, &fs, 0);
    if (!f)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory "
                         "for its scratch buffers", tfm_ops[op].name);
    /* Note [Packed int8 weights] read back as [K, O] floats */
    float *wf = tfm_tensor_data(f);
    const int8_t *wp = tfm_tensor_data(in[1]);
    const float *ws = tfm_tensor_data(in[2]);
    for (int64_t p = 0; p * 16 < O; p++) {
        int64_t w = O - p * 16 < 16 ? O - p * 16 : 16;
        const int8_t *pan = wp + p * K4 * 64;
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < w; n++)
                wf[k * O + p * 16 + n] =
                    pan[((k / 4) * w + n) * 4 + k % 4] * ws[p * 16 + n];
    }
    /* _FusedConv2D's attributes are these but for the activation's slot
     * (the TFM_QACT codes are TFM_CONV_ACT's) */
    tfm_attrs fa = *a;
    fa.i[1] = a->i[3];
    tfm_tensor *fin[3] = {in[0], f, nin == 5 ? in[4] : NULL};
    tfm_code rc = tfm_k_fused_conv2d(op, fin, nin == 5 ? 3 : 2, &fa, out, 1,
                                     NULL);
    tfm_tensor_decref(f);
    return rc;
}

tfm_code
tfm_k_hybrid_conv2d_packed(tfm_op op, tfm_tensor *const *in, int nin,
                           const tfm_attrs *a, tfm_tensor *const *out,
                           int nout, const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    const int64_t *xd = in[0]->shape.dims, *fd = a->ints + TFM_CONV_SIZES;
    const int64_t *yd = out[0]->shape.dims;
    int64_t B = xd[0], H = xd[1], W = xd[2], C = xd[3];
    int64_t KH = fd[0], KW = fd[1], O = fd[3];
    int64_t M = B * yd[1] * yd[2], K = KH * KW * C, K4 = (K + 3) / 4;
    if (M == 0 || O == 0)
        return TFM_OK;
    if (!tfm_qgemm_uses_vnni())
        return hybrid_float(op, in, nin, a, out);
    /* The direct conv takes channels four at a time: the copy pads
     * them with zeros (calloc), and it repacks the filter to match. */
    int direct = tfm_qconv_direct_enabled();
    int64_t cs = direct ? (C + 3) / 4 * 4 : C, hw = H * W;
    uint8_t *u = calloc((size_t)(B * hw * cs) + 1, 1);
    uint8_t *rows = direct ? NULL : calloc((size_t)(M * K4 * 4) + 1, 1);
    uint8_t *padpix = malloc((size_t)(B * cs) + 1);
    float *rs = malloc((size_t)(direct ? B : M) * sizeof *rs + 1);
    int32_t *rz = malloc((size_t)(direct ? B : M) * sizeof *rz + 1);
    tfm_code rc = TFM_OK;
    if (!u || (!direct && !rows) || !padpix || !rs || !rz) {
        rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                       "its scratch buffers", tfm_ops[op].name);
        goto done;
    }
    const float *x = tfm_tensor_data(in[0]);
    TFM_PAR_FOR(B * hw * C > TFM_PAR_MIN, b, B, {
        tfm_qhybrid_quantize(x + b * hw * C, hw, C, cs, u + b * hw * cs,
                             &rs[b], &rz[b]);
        memset(padpix + b * cs, (int)rz[b], (size_t)cs);
    });
    tfm_qout o = {.kind = TFM_QOUT_HYBRID, .y = tfm_tensor_data(out[0]),
                  .cs = tfm_tensor_data(in[3]),
                  .mult = tfm_tensor_data(in[2]), .rs = rs, .rz = rz,
                  .fbias = nin == 5 ? tfm_tensor_data(in[4]) : NULL,
                  .act = (int)a->i[3]};
    if (direct) {
        tfm_qconv_src src = {.src = u, .cs = cs, .xm = 0, .padpix = padpix,
                             .padstep = cs};
        rc = tfm_qconv2d_direct_run(op, a, xd, yd, &src,
                                    tfm_tensor_data(in[1]), &o);
        goto done;
    }
    tfm_conv_geom g;
    tfm_qconv_geom(&g, &in[0]->shape, a);
    im2col(u, &g, rz, rows);
    /* (the VNNI GEMM, with the direct conv declined) the GEMM's finish reads a scale and zero point per output row:
     * each row takes its image's (filled from the back, in place) */
    int64_t per = M / B;
    for (int64_t r = M - 1; r >= 0; r--) {
        rs[r] = rs[r / per];
        rz[r] = rz[r / per];
    }
    tfm_qgemm_packed(M, O, K, rows, tfm_tensor_data(in[1]), &o);
done:
    free(u);
    free(rows);
    free(padpix);
    free(rs);
    free(rz);
    return rc;
}
