/* CPU kernels of the random family (rows in ops/ops_random.def). */
#ifndef TFM_KERNELS_CPU_RANDOM_H
#define TFM_KERNELS_CPU_RANDOM_H

#include "../../ops/op.h"

tfm_code tfm_k_random_normal(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_uniform(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_uniform_int(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx);
tfm_code tfm_k_truncated_normal(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor *const *out,
                                int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_shuffle(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx);
tfm_code tfm_k_multinomial(tfm_op op, tfm_tensor *const *in, int nin,
                           const tfm_attrs *a, tfm_tensor *const *out,
                           int nout, const tfm_kctx *ctx);

#endif
