/* The launchers of the fused ops' GPU kernels (norm.cu, rnn.cu,
 * fused_conv.cu) and of the fills (fill.cu), for their C glue: plain C types only, so both
 * compilers read it. As in launch.h, each returns 0 or a cudaError_t
 * (> 0). is64: float64 elements, else float32; ty (the layer norm and
 * softmax gradient): launch.h's TFM_CU_F32/F64/F16/BF16, the 16-bit
 * floats computed in float32. Each mirrors its CPU kernel, named beside
 * it. */
#ifndef TFM_KERNELS_CUDA_LAUNCH_FUSED_H
#define TFM_KERNELS_CUDA_LAUNCH_FUSED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* _LayerNorm over rows of n (cpu/norm.c): y = (x - mean) * rsqrt(var +
 * eps) * g + b, one block per row. */
int tfm_cu_layer_norm(int ty, const void *x, const void *g, const void *b,
                      void *y, int64_t rows, int64_t n, double eps,
                      void *stream);

/* _LayerNormGrad: dx per row; dg, db the column sums of dy * xhat and
 * dy (col_sums.h: in double, in a fixed order). stats: scratch of 2 *
 * rows doubles from the caller (each row's mean and 1/stddev). */
int tfm_cu_layer_norm_grad(int ty, const void *dy, const void *x,
                           const void *g, void *dx, void *dg, void *db,
                           int64_t rows, int64_t n, double eps,
                           double *stats, void *stream);

/* _SoftmaxGrad over the middle dim of [outer, n, inner]: dx = y * (dy -
 * sum(dy * y)), the sum in double. */
int tfm_cu_softmax_grad(int ty, const void *y, const void *dy, void *dx,
                        int64_t outer, int64_t n, int64_t inner,
                        void *stream);

/* LSTMGates and LSTMGatesGrad (cpu/rnn_cell.c), a thread per (row,
 * unit), the column arithmetic of cpu/rnn_math.h. */
int tfm_cu_lstm_gates(int is64, const void *z, const void *cp, void *h,
                      void *c, void *gates, int64_t batch, int64_t u,
                      void *stream);
int tfm_cu_lstm_gates_grad(int is64, const void *dh, const void *dc,
                           const void *gates, const void *cp, const void *c,
                           void *dz, void *dcp, int64_t batch, int64_t u,
                           void *stream);

/* _FusedConv2D's epilogue in place over y [rows, o] (cpu/conv_fused.c):
 * y = act(y [+ bias] [+ res]), act TFM_CONV_ACT_* (0 none, 1 Relu, 2
 * Relu6, 3 Elu); bias and res may be NULL. */
int tfm_cu_conv_epilogue(int is64, void *y, const void *bias,
                         const void *res, int64_t rows, int64_t o, int act,
                         void *stream);

/* _FusedMaxPoolGrad's ReluGrad against x and bias gradient
 * (cpu/conv_pool_grad.c): dx[r, c] = x[r, c] > 0 ? dx[r, c] : 0 in
 * place, then db[c] = the sum over rows of dx[., c] in double. */
int tfm_cu_relu_mask_colsum(int is64, const void *x, void *dx, void *db,
                            int64_t rows, int64_t c, void *stream);

/* Fill, ZerosLike, OnesLike: o's n elements of es bytes (1, 2, 4, 8,
 * 16; -1 otherwise) set to *src, a device pointer, or when src is NULL
 * to the es bytes at val (host memory, read before the launch). */
int tfm_cu_fill(int es, const void *src, const void *val, void *o,
                int64_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
