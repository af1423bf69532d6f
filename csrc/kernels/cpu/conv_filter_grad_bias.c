/* _Conv2DBackpropFilterBias(x, [f,] dy) -> (df, db): a conv's filter
 * gradient and its bias gradient db = Sum(dy, [0, 1, 2]), made by the
 * graph pass in graph/pass_filter_grad_bias.c. Where the float32
 * window kernel runs (conv_filter_grad_gemm.c) it sums each block of dy
 * while the block is in cache from the GEMM tiles, which saves the
 * separate reduction's whole read of dy (8 MB per conv in the ResNet
 * block's step). Elsewhere (oneDNN, im2col, float64, strides) it is
 * Conv2DBackpropFilter's own kernel and a column sum: the same answer
 * as the two ops it replaced. */
#include "conv.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* db[o] = sum over rows of dy[rows][o], in double; threads take row
 * ranges with private sums. Nonzero when out of memory. */
#define BIAS_SUM(SUF, T)                                                     \
    static int bias_sum_##SUF(const T *dy, int64_t rows, int64_t o, T *db)  \
    {                                                                        \
        int nt = 1;                                                          \
        BIAS_THREADS(nt, rows * o);                                          \
        double *acc = calloc((size_t)(nt * o + 1), sizeof(double));          \
        if (!acc)                                                            \
            return 1;                                                        \
        BIAS_PARALLEL(nt)                                                    \
        {                                                                    \
            /* a team smaller than asked still covers every range */        \
            for (int t = BIAS_TID; t < nt; t += BIAS_TEAM) {                 \
                double *s = acc + t * o;                                     \
                int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;        \
                for (int64_t r = r0; r < r1; r++)                            \
                    for (int64_t c = 0; c < o; c++)                          \
                        s[c] += (double)dy[r * o + c];                       \
            }                                                                \
        }                                                                    \
        for (int64_t c = 0; c < o; c++) {                                    \
            double v = 0;                                                    \
            for (int t = 0; t < nt; t++)                                     \
                v += acc[t * o + c];                                         \
            db[c] = (T)v;                                                    \
        }                                                                    \
        free(acc);                                                           \
        return 0;                                                            \
    }

#ifdef _OPENMP
/* Small sums are not worth a team. */
#define BIAS_THREADS(nt, n)                                                  \
    if ((n) >= (1 << 16) && !omp_in_parallel())                              \
        nt = omp_get_max_threads();
#define BIAS_PARALLEL(nt) _Pragma("omp parallel num_threads(nt)")
#define BIAS_TID omp_get_thread_num()
#define BIAS_TEAM omp_get_num_threads()
#else
#define BIAS_THREADS(nt, n)
#define BIAS_PARALLEL(nt)
#define BIAS_TID 0
#define BIAS_TEAM 1
#endif

BIAS_SUM(f32, float)
BIAS_SUM(f64, double)

tfm_code
tfm_k_conv2d_backprop_filter_bias(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx)
{
    (void)nout;
    const tfm_tensor *x = in[0], *dy = in[nin - 1];
    const tfm_shape *fs = &out[0]->shape;
    const int64_t o = dy->shape.dims[3];
    const int64_t rows = o ? tfm_tensor_numel(dy) / o : 0;
    if (x->dtype == TFM_FLOAT32 && rows > 0) {
        tfm_conv_geom g;
        tfm_conv_geom_make(&g, &x->shape, fs->dims[0], fs->dims[1],
                           fs->dims[3], a->ints[TFM_CONV_WIN_H],
                           a->ints[TFM_CONV_WIN_W], a);
        int rc = tfm_conv_filter_grad_bias_window_f32(
            &g, tfm_tensor_data(x), tfm_tensor_data(dy),
            tfm_tensor_data(out[0]), tfm_tensor_data(out[1]));
        if (rc > 0)
            return TFM_OK;
        if (rc < 0)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory "
                             "for its work buffers", tfm_ops[op].name);
    }
    tfm_code c = tfm_k_conv2d_backprop_filter(op, in, nin, a, out, 1, ctx);
    if (c)
        return c;
    int failed;
    switch (x->dtype) {
    case TFM_FLOAT32:
        failed = bias_sum_f32(tfm_tensor_data(dy), rows, o,
                              tfm_tensor_data(out[1]));
        break;
    case TFM_FLOAT64:
        failed = bias_sum_f64(tfm_tensor_data(dy), rows, o,
                              tfm_tensor_data(out[1]));
        break;
    default:
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: only float32 and "
                         "float64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    }
    if (failed)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory for "
                         "its work buffers", tfm_ops[op].name);
    return TFM_OK;
}
