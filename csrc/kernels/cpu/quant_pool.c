/* Int8 pooling and softmax (rows in ops/ops_quant.def), so a full-int8
 * model runs them without leaving int8. TF Lite's semantics: MaxPool and
 * AvgPool keep the input's scale and zero point (a max or a mean of the
 * q is the q of the max or mean), AvgPool rounding half away from zero
 * over the window's valid elements only; Softmax gives scale 1/256, zero
 * point -128. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../core/status.h"
#include "conv.h"
#include "loops.h"
#include "qgemm.h"

/* NHWC pool geometry from x and the window attrs (the padding mode in
 * i[0]: VALID or SAME, the shape rule refuses EXPLICIT). */
static void
read_geom(tfm_tensor *const *in, const tfm_attrs *a, tfm_conv_geom *g)
{
    tfm_conv_geom_make(g, &in[0]->shape, a->ints[TFM_CONV_WIN_H],
                       a->ints[TFM_CONV_WIN_W], in[0]->shape.dims[3], 1, 1,
                       a);
}

/* AvgPool: one mean per (b, oy, ox, c), over the window's valid part. */
static tfm_code
avg_pool(tfm_tensor *const *in, const tfm_attrs *a, tfm_tensor *const *out)
{
    tfm_conv_geom g;
    read_geom(in, a, &g);
    const int64_t B = g.n, H = g.h, W = g.w, C = g.c, OH = g.oh, OW = g.ow;
    const int64_t kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
    const int64_t pt = g.pt, pl = g.pl;
    const int8_t *x = tfm_tensor_data(in[0]);
    int8_t *y = tfm_tensor_data(out[0]);
    TFM_PAR_FOR(B * OH * OW * C > TFM_PAR_MIN, r, B * OH * OW, {
        int64_t b = r / (OH * OW), oy = r / OW % OH, ox = r % OW;
        int64_t y0 = oy * sh - pt, x0 = ox * sw - pl;
        int64_t y1 = y0 + kh < H ? y0 + kh : H, x1 = x0 + kw < W ? x0 + kw : W;
        y0 = y0 > 0 ? y0 : 0;
        x0 = x0 > 0 ? x0 : 0;
        int32_t n = (int32_t)((y1 - y0) * (x1 - x0));
        n = n > 0 ? n : 1;
        int8_t *yr = y + r * C;
        /* Channels innermost, 64 at a time in int32 lanes: the loops
         * over a window's pixels then run down contiguous channels and
         * vectorize. */
        for (int64_t c0 = 0; c0 < C; c0 += 64) {
            int cw = C - c0 < 64 ? (int)(C - c0) : 64;
            int32_t acc[64];
            for (int c = 0; c < cw; c++)
                acc[c] = 0;
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t ix = x0; ix < x1; ix++) {
                    const int8_t *xp = x + ((b * H + iy) * W + ix) * C + c0;
                    for (int c = 0; c < cw; c++)
                        acc[c] += xp[c];
                }
            for (int c = 0; c < cw; c++) {
                int32_t sum = acc[c];
                yr[c0 + c] = (int8_t)(sum >= 0 ? (sum + n / 2) / n
                                               : (sum - n / 2) / n);
            }
        }
    });
    return TFM_OK;
}

/* MaxPool straight in int8 lanes (a max of int8 is an int8, so no
 * widening), one output row (b, oy) per step, the window's rows and
 * columns clipped once per row and pixel rather than from a division
 * per pixel: a general per-pixel loop cost as much as the convolutions
 * around it in a small int8 CNN. An empty window gives -128.
 *
 * Sixteen int8 lanes in GCC's vector extension (clang and emscripten
 * have it too): a loop over 16 channels left to the vectorizer ran as
 * its scalar remainder, after a 64-byte main loop that never ran. */
typedef int8_t v16 __attribute__((vector_size(16)));

static void
max_pool(tfm_tensor *const *in, const tfm_attrs *a, tfm_tensor *const *out)
{
    tfm_conv_geom g;
    read_geom(in, a, &g);
    const int64_t B = g.n, H = g.h, W = g.w, C = g.c, OH = g.oh, OW = g.ow;
    const int64_t kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
    const int64_t pt = g.pt, pl = g.pl;
    const int8_t *x = tfm_tensor_data(in[0]);
    int8_t *y = tfm_tensor_data(out[0]);
    TFM_PAR_FOR(B * OH * OW * C > TFM_PAR_MIN, row, B * OH, {
        int64_t b = row / OH, oy = row % OH;
        int64_t y0 = oy * sh - pt, y1 = y0 + kh < H ? y0 + kh : H;
        y0 = y0 > 0 ? y0 : 0;
        for (int64_t ox = 0; ox < OW; ox++) {
            int64_t x0 = ox * sw - pl, x1 = x0 + kw < W ? x0 + kw : W;
            x0 = x0 > 0 ? x0 : 0;
            int8_t *yr = y + (row * OW + ox) * C;
            const int8_t *xw = x + ((b * H + y0) * W + x0) * C;
            /* Each 16 channels' max in a register, stored once: the
             * output is never read back. */
            int64_t c = 0;
            for (; c + 16 <= C; c += 16) {
                v16 m = (v16){0} + (int8_t)INT8_MIN, u;
                for (int64_t iy = 0; iy < y1 - y0; iy++)
                    for (int64_t ix = 0; ix < x1 - x0; ix++) {
                        memcpy(&u, xw + (iy * W + ix) * C + c, 16);
                        v16 gt = u > m;
                        m = (u & gt) | (m & ~gt);
                    }
                memcpy(yr + c, &m, 16);
            }
            for (; c < C; c++) {
                int8_t m = -128;
                for (int64_t iy = 0; iy < y1 - y0; iy++)
                    for (int64_t ix = 0; ix < x1 - x0; ix++) {
                        int8_t v = xw[(iy * W + ix) * C + c];
                        m = v > m ? v : m;
                    }
                yr[c] = m;
            }
        }
    });
}

tfm_code
tfm_k_quantized_max_pool(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    max_pool(in, a, out);
    return TFM_OK;
}

tfm_code
tfm_k_quantized_avg_pool(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    return avg_pool(in, a, out);
}

/* TF Lite's int8 softmax, as its optimized kernel computes it: a table
 * of exp(-beta * scale * d) for the 256 distances d of a value below its
 * row's max, then q = round(e / sum * 256) - 128, clamped
 * (tests/test_quant_pool.py compares with TF 2.21's tf.lite). */
tfm_code
tfm_k_quantized_softmax(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out,
                        int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    int64_t n = tfm_tensor_numel(in[0]);
    int64_t C = in[0]->shape.dims[in[0]->shape.ndim - 1];
    if (n == 0 || C == 0)
        return TFM_OK;
    float table[256];
    double bs = a->f[0] * a->f[1];
    for (int d = 0; d < 256; d++)
        table[d] = (float)exp(-bs * d);
    const int8_t *x = tfm_tensor_data(in[0]);
    int8_t *y = tfm_tensor_data(out[0]);
    int64_t rows = n / C;
    TFM_PAR_FOR(n > TFM_PAR_MIN, r, rows, {
        const int8_t *xr = x + r * C;
        int8_t *yr = y + r * C;
        int32_t mx = -128;
        for (int64_t c = 0; c < C; c++)
            mx = xr[c] > mx ? xr[c] : mx;
        float sum = 0;
        for (int64_t c = 0; c < C; c++)
            sum += table[mx - xr[c]];
        float k = 256.0f / sum;
        for (int64_t c = 0; c < C; c++) {
            float v = table[mx - xr[c]] * k;
            int32_t q = (int32_t)(v + 0.5f) - 128;
            yr[c] = (int8_t)(q > 127 ? 127 : q);
        }
    });
    return TFM_OK;
}
