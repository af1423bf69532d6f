/* The float32 GEMM that MatMul calls: oneDNN's when the build found it
 * (TFMINI_WITH_DNNL), else Eigen's. */
#ifndef TFM_KERNELS_CPU_GEMM_DNNL_H
#define TFM_KERNELS_CPU_GEMM_DNNL_H

#include <stdint.h>

/* c[m, n] = op(a) @ op(b), row-major, as tfm_gemm_f32 (linalg.h). */
void tfm_gemm_f32_best(int64_t m, int64_t n, int64_t k, const float *a,
                       int ta, const float *b, int tb, float *c);

/* The im2col convolutions' product (tfm_conv_gemm_f32's contract, conv.h:
 * C[M,N] (+)= op(A) @ B with row strides) through oneDNN on the calling
 * thread. Returns 1 when it ran, 0 when the caller must (no oneDNN, or
 * TFMINI_GEMM=eigen). */
int tfm_gemm_f32_conv(int trans_a, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, const float *B,
                      int64_t ldb, float *C, int64_t ldc, int accumulate);

/* c[m, n] = op(a) @ op(b) over bfloat16 (uint16_t bits), accumulated in
 * float32 and rounded once: oneDNN's matmul primitive (AVX512_BF16
 * instructions where the CPU has them), else widening loops around
 * tfm_gemm_f32_best. 0, or -1 with the core's error set (no memory). */
int tfm_gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a,
                  int ta, const uint16_t *b, int tb, uint16_t *c);

/* The bfloat16 GEMM's path in this process: "dnnl" or "convert". */
const char *tfm_gemm_bf16_backend(void);

/* The backend tfm_gemm_f32_best uses in this process: "dnnl" or "eigen".
 * TFMINI_GEMM=eigen in the environment (read once) keeps Eigen (and the
 * convolutions' own product) even in a build with oneDNN, to compare
 * the two or to rule one out. */
const char *tfm_gemm_backend(void);

/* How many float32 products of this process went through oneDNN's
 * matmul primitive rather than dnnl_sgemm (Note [Big float32 products]
 * in gemm_dnnl.c): for tests. TFMINI_GEMM=sgemm or =matmul (read once)
 * forces one of the two for every float32 product. */
long long tfm_gemm_f32_prim_calls(void);

#endif
