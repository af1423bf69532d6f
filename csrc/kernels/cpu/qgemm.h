/* Int8 GEMM and the CPU kernels of the quantized ops (rows in
 * ops/ops_quant.def). See Note [Quantized arithmetic] in ops/quant.h. */
#ifndef TFM_KERNELS_CPU_QGEMM_H
#define TFM_KERNELS_CPU_QGEMM_H

#include <stdint.h>

#include "../../ops/op.h"

/* Fused activations of the quantized ops (attribute i[3]). */
enum { TFM_QACT_NONE = 0, TFM_QACT_RELU = 1, TFM_QACT_RELU6 = 2 };
/* The deepest dot product the int32 accumulator holds exactly:
 * K * 255 * 128 plus a bias stays below 2^31. */
#define TFM_QGEMM_MAX_K 65000

/* C[m, n] = sum_k A[m, k] * B[k, n], exactly, in int32: A is uint8
 * [M, K] (row stride lda), B int8 [K, N] row-major, C int32 [M, N].
 * Exact for K <= TFM_QGEMM_MAX_K; callers check. */
void tfm_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                    int64_t lda, const int8_t *B, int32_t *C);

/* The same, and cs[n] = sum_k B[k, n] (when cs is not NULL). With
 * VNNI, B's packed form and column sums are kept between calls for as
 * long as B's bytes stay the same (Note [Packed weights] in qgemm.c):
 * the callers pass constant weights as B. */
void tfm_qgemm_u8s8_sums(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                         int64_t lda, const int8_t *B, int32_t *C,
                         int32_t *cs);

/* Which path tfm_qgemm_u8s8 takes: 1 AVX512-VNNI, 0 the portable loops.
 * VNNI needs the compiler to know it and the CPU to have it; the
 * environment variable TFMINI_QGEMM_REF=1 (read once) forces the
 * portable loops, so tests can check both on one machine. */
int tfm_qgemm_uses_vnni(void);

#define TFM_QK(name)                                                      \
    tfm_code name(tfm_op op, tfm_tensor *const *in, int nin,              \
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,   \
                  const tfm_kctx *ctx)
TFM_QK(tfm_k_quantize);
TFM_QK(tfm_k_dequantize);
TFM_QK(tfm_k_qmatmul_accum);
TFM_QK(tfm_k_hybrid_fc);
TFM_QK(tfm_k_quantized_fc);
TFM_QK(tfm_k_quantized_conv2d);

#endif
