/* CPU kernels of the nn family (rows in ops/ops_nn.def). */
#ifndef TFM_KERNELS_CPU_NN_H
#define TFM_KERNELS_CPU_NN_H

#include "../../ops/op.h"

/* Softmax and LogSoftmax (by op) along i[0]. */
tfm_code tfm_k_softmax(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
tfm_code tfm_k_sparse_xent(tfm_op op, tfm_tensor *const *in, int nin,
                           const tfm_attrs *a, tfm_tensor *const *out,
                           int nout, const tfm_kctx *ctx);
tfm_code tfm_k_xent(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);

#endif
