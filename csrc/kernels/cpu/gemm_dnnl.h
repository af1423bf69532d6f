/* The float32 GEMM that MatMul calls: oneDNN's when the build found it
 * (TFMINI_WITH_DNNL), else Eigen's. */
#ifndef TFM_KERNELS_CPU_GEMM_DNNL_H
#define TFM_KERNELS_CPU_GEMM_DNNL_H

#include <stdint.h>

/* c[m, n] = op(a) @ op(b), row-major, as tfm_gemm_f32 (linalg.h). */
void tfm_gemm_f32_best(int64_t m, int64_t n, int64_t k, const float *a,
                       int ta, const float *b, int tb, float *c);

/* The backend tfm_gemm_f32_best uses in this process: "dnnl" or "eigen".
 * TFMINI_GEMM=eigen in the environment (read once) keeps Eigen even in
 * a build with oneDNN, to compare the two or to rule one out. */
const char *tfm_gemm_backend(void);

#endif
