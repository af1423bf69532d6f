/* Complex elementwise kernels (ew_complex.c). */
#ifndef TFM_KERNELS_CPU_EW_COMPLEX_H
#define TFM_KERNELS_CPU_EW_COMPLEX_H

#include "../../ops/op.h"

/* The complex family's ops (ops_complex.def). */
tfm_code tfm_k_complex(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
/* Arithmetic, math and ==/!= on complex inputs: the real kernels
 * (binary.c, unary.c, ew_math.c, ew_compare.c) call it for them. */
tfm_code tfm_k_complex_ew(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx);

#endif
