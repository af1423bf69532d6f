/* The direct int8 convolution behind QuantizedConv2DPacked (Note [Direct
 * int8 convolution] in quant_conv.c), and what it shares with the
 * im2col path of quant_ops.c. */
#ifndef TFM_KERNELS_CPU_QUANT_CONV_H
#define TFM_KERNELS_CPU_QUANT_CONV_H

#include <stdint.h>

#include "conv.h"
#include "qgemm.h"

/* clamp for int32 values (tfm_qround_away's range): 32-bit lanes, twice
 * as many per vector as int64 ones. */
static inline int32_t
tfm_qclamp32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Round half away from zero (TF Lite's rule), in plain arithmetic the
 * compiler vectorizes (roundf and lroundf are library calls). NaN gives
 * 0; values past +-1e6 saturate, far outside any int8 range. */
static inline int32_t
tfm_qround_away(float v)
{
    v = v > 1e6f ? 1e6f : v;
    v = v >= -1e6f ? v : (v == v ? -1e6f : 0.0f);
    return (int32_t)(v + (v >= 0 ? 0.5f : -0.5f));
}

/* The finishing of a static-range layer (quant_ops.c): o requantizes
 * (the offset input in[3] already holds bias - zin * column sums) and
 * dequantizes when y is float. cb and mult are N each, owned by the
 * caller. */
void tfm_qstatic_out(tfm_qout *o, const tfm_attrs *a, tfm_tensor *const *in,
                     int64_t N, tfm_tensor *y, int64_t *cb, float *mult);

/* The dynamic-range (hybrid) quantization of n groups of C floats x
 * (one row of a HybridFullyConnectedPacked, one image of a
 * HybridConv2DPacked): asymmetric uint8 over their own range, holding
 * 0, written to u with groups cs bytes apart; the scale and the zero
 * point (0..255) come back. A range that is 0, or not finite, takes
 * scale 1. */
void tfm_qhybrid_quantize(const float *x, int64_t n, int64_t C, int64_t cs,
                          uint8_t *u, float *scale, int32_t *zero_point);

/* The geometry of a packed int8 convolution from its input's shape: the
 * attributes are QuantizedConv2DPacked's (filter sizes in ints[4..7],
 * the filter itself packed), shared by HybridConv2DPacked. */
static inline void
tfm_qconv_geom(tfm_conv_geom *g, const tfm_shape *x, const tfm_attrs *a)
{
    const int64_t *fd = a->ints + TFM_CONV_SIZES;
    tfm_conv_geom_make(g, x, fd[0], fd[1], fd[3], a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], a);
}

/* The uint8 input of a direct convolution, as its caller laid it out. */
typedef struct {
    const uint8_t *src;         /* [B, H, W, cs], read as bytes ^ xm */
    int64_t cs;                 /* channels per pixel: C, or C rounded up
                                 * to 4 with zeros (then the filter is
                                 * repacked to match, per call) */
    uint32_t xm;                /* 0x80808080 for int8 bytes, else 0 */
    const uint8_t *padpix;      /* what a tap in the padding reads, cs
                                 * bytes: image b's at b * padstep */
    int64_t padstep;            /* 0 (one pixel for all) or cs */
} tfm_qconv_src;

/* The direct convolution proper, for QuantizedConv2DPacked and
 * HybridConv2DPacked: the attributes are QuantizedConv2DPacked's
 * (filter sizes in ints[4..7]); xd, yd the input's and output's NHWC
 * dims; wp the filter packed over K = KH*KW*C (Note [Packed int8
 * weights]); o the finishing, as tfm_qgemm_packed's but with
 * TFM_QOUT_HYBRID's rs and rz indexed by image, not by output row.
 * The caller has checked that it may run (tfm_qconv_direct_enabled)
 * and that every int32 sum with its offset is exact. */
tfm_code tfm_qconv2d_direct_run(tfm_op op, const tfm_attrs *a,
                                const int64_t *xd, const int64_t *yd,
                                const tfm_qconv_src *x, const int8_t *wp,
                                const tfm_qout *o);

/* QuantizedConv2DPacked without im2col, where it applies (AVX512-VNNI
 * present and chosen, and every sum provably inside int32); sets *done
 * to 0 and does nothing otherwise, so the caller runs the im2col path.
 * The environment variable TFMINI_QCONV_IM2COL=1 (read once) declines
 * it always, so tests and benchmarks can compare the two. */
tfm_code tfm_qconv2d_direct(tfm_op op, tfm_tensor *const *in,
                            const tfm_attrs *a, tfm_tensor *const *out,
                            int *done);

/* 1 when tfm_qconv2d_direct may run (VNNI chosen, not declined by the
 * environment). */
int tfm_qconv_direct_enabled(void);

#endif
