/* CPU kernels of the elementwise family (rows in
 * ops/ops_elementwise.def). All share the tfm_kernel_fn signature; each
 * picks its loop by op and dtype. */
#ifndef TFM_KERNELS_CPU_ELEMENTWISE_H
#define TFM_KERNELS_CPU_ELEMENTWISE_H

#include "../../ops/op.h"

/* Arithmetic with broadcasting (binary.c). */
tfm_code tfm_k_binary(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx);
/* Comparisons, logical and bitwise ops (ew_compare.c). */
tfm_code tfm_k_compare(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
tfm_code tfm_k_logical(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
tfm_code tfm_k_bitwise(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
/* Numeric unary: Neg, Abs, Sign, Square, Round (unary.c). */
tfm_code tfm_k_unary(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx);
/* Float unary math and float predicates (ew_math.c). */
tfm_code tfm_k_math(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);
/* Activations (ew_activation.c). */
tfm_code tfm_k_activation(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx);
/* Cast (cast.c). */
tfm_code tfm_k_cast(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);

#endif
