/* CPU kernels of the fused normalization ops (rows in ops/ops_nn.def):
 * layer normalization over the last axis and its gradient, and the
 * softmax gradient. */
#ifndef TFM_KERNELS_CPU_NORM_H
#define TFM_KERNELS_CPU_NORM_H

#include "../../ops/op.h"

tfm_code tfm_k_layer_norm(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx);
tfm_code tfm_k_layer_norm_grad(tfm_op op, tfm_tensor *const *in, int nin,
                               const tfm_attrs *a, tfm_tensor *const *out,
                               int nout, const tfm_kctx *ctx);
tfm_code tfm_k_softmax_grad(tfm_op op, tfm_tensor *const *in, int nin,
                            const tfm_attrs *a, tfm_tensor *const *out,
                            int nout, const tfm_kctx *ctx);

#endif
