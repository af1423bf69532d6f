/* CPU kernels of the linalg family (rows in ops/ops_linalg.def). */
#ifndef TFM_KERNELS_CPU_LINALG_H
#define TFM_KERNELS_CPU_LINALG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One row-major product c[m, n] = op(a) @ op(b) (gemm_eigen.cc): a is
 * stored [m, k], or [k, m] when ta; b is [k, n], or [n, k] when tb. */
void tfm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int ta,
                  const float *b, int tb, float *c);
void tfm_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int ta,
                  const double *b, int tb, double *c);

#ifdef __cplusplus
}
#else

#include "../../ops/op.h"

/* BatchMatMulV2 (matmul.c). */
tfm_code tfm_k_matmul(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout);

#endif

#endif
