/* CPU kernels of the elementwise family. */
#ifndef TFM_KERNELS_CPU_ELEMENTWISE_H
#define TFM_KERNELS_CPU_ELEMENTWISE_H

#include "../../ops/op.h"

tfm_code tfm_k_binary(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout);
tfm_code tfm_k_unary(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout);
tfm_code tfm_k_cast(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout);

#endif
