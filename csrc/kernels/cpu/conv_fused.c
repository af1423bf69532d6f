/* _FusedConv2D(x, f[, bias[, r]]): act(Conv2D(x, f) [+ bias [+ r]]), the
 * node the conv epilogue pass (graph/pass_conv_epilogue.c) makes of
 * Conv2D, its bias add, a residual add of r (same shape as the output)
 * and activation. With r, y starts as a copy of r and oneDNN's sum
 * post-op adds the conv into it: one copy instead of two full passes
 * (the add, the activation) each reading two tensors. float32 runs as one oneDNN primitive, the bias
 * and activation applied while each output block is still in registers
 * (a bias input and an eltwise post-op), or, for the 3x3 stride-1 convs
 * Winograd takes (conv_winograd.c), in its output transform; elsewhere (float64, no oneDNN,
 * TFMINI_CONV=im2col, a refused shape) the plain Conv2D kernel writes y
 * and one pass over it adds the bias and applies the activation, which
 * still saves the unfused graph's two intermediate tensors. */
#include "conv.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EPILOGUE(SUF, T, EXPM1)                                              \
static void                                                                  \
epilogue_##SUF(T *y, const T *b, const T *res, int64_t rows, int64_t o,      \
               int act)                                                      \
{                                                                            \
    _Pragma("omp parallel for schedule(static) if(rows * o > (1 << 16))")    \
    for (int64_t r = 0; r < rows; r++) {                                     \
        T *p = y + r * o;                                                    \
        const T *q = res ? res + r * o : NULL;                               \
        for (int64_t c = 0; c < o; c++) {                                    \
            T v = b ? p[c] + b[c] : p[c];                                    \
            if (q)                                                           \
                v += q[c];                                                   \
            switch (act) {                                                   \
            case TFM_CONV_ACT_RELU:                                          \
                v = v < 0 ? 0 : v;                                           \
                break;                                                       \
            case TFM_CONV_ACT_RELU6:                                         \
                v = v < 0 ? 0 : v > 6 ? 6 : v;                               \
                break;                                                       \
            case TFM_CONV_ACT_ELU:                                           \
                v = v > 0 ? v : EXPM1(v);                                    \
                break;                                                       \
            default:                                                         \
                break;                                                       \
            }                                                                \
            p[c] = v;                                                        \
        }                                                                    \
    }                                                                        \
}

EPILOGUE(f32, float, expm1f)
EPILOGUE(f64, double, expm1)

tfm_code
tfm_k_fused_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    (void)nout;
    tfm_tensor *y = out[0];
    if (tfm_tensor_numel(y) == 0)
        return TFM_OK;
    const tfm_shape *fs = &in[1]->shape;
    int act = (int)a->i[1];
    int64_t o = fs->dims[3], rows = tfm_tensor_numel(y) / o;
    const void *res = nin > 3 ? tfm_tensor_data(in[3]) : NULL;
    const void *bias = nin > 2 ? tfm_tensor_data(in[2]) : NULL;
    if (y->dtype == TFM_FLOAT32 && tfm_tensor_numel(in[0]) > 0 &&
        tfm_tensor_numel(in[1]) > 0) {
        /* oneDNN's fused primitive always has a bias: zeros when the
         * graph had none (o floats, nothing beside the conv). */
        float *zeros = NULL;
        if (!bias && !(bias = zeros = calloc((size_t)o, sizeof(float))))
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of "
                             "memory for its work buffers",
                             tfm_ops[op].name);
        /* y never shares memory with an input (the memory plan aliases
         * only elementwise outputs), so the copy clobbers nothing. */
        if (res)
            memcpy(tfm_tensor_data(y), res, (size_t)tfm_tensor_nbytes(y));
        tfm_conv_geom g;
        tfm_conv_geom_make(&g, &in[0]->shape, fs->dims[0], fs->dims[1], o,
                           a->ints[TFM_CONV_WIN_H], a->ints[TFM_CONV_WIN_W],
                           a);
        int fact = res ? act | TFM_CONV_ADD_DST : act;
        int rc = tfm_conv_winograd_f32(TFM_CONV_FWD, &g,
                                       tfm_tensor_data(in[0]),
                                       tfm_tensor_data(in[1]), bias, fact,
                                       tfm_tensor_data(y));
        if (!rc)
            rc = tfm_conv_dnnl_fused_f32(&g, tfm_tensor_data(in[0]),
                                         tfm_tensor_data(in[1]), bias, fact,
                                         tfm_tensor_data(y));
        free(zeros);
        if (zeros)
            bias = NULL;
        if (rc < 0)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory "
                             "for its work buffers", tfm_ops[op].name);
        if (rc)
            return TFM_OK;
    }
    /* The plain conv overwrites y, copy or not; the epilogue adds r. */
    tfm_code rc = tfm_k_conv2d(op, in, 2, a, out, 1, ctx);
    if (rc)
        return rc;
    if (y->dtype == TFM_FLOAT32)
        epilogue_f32(tfm_tensor_data(y), bias, res, rows, o, act);
    else
        epilogue_f64(tfm_tensor_data(y), bias, res, rows, o, act);
    return TFM_OK;
}
