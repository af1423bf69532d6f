/* Shape rules of the nn family (rows in ops_nn.def). */
#ifndef TFM_OPS_NN_H
#define TFM_OPS_NN_H

#include "op.h"

/* Softmax, LogSoftmax: float input, same shape; i[0] = axis. */
tfm_code tfm_infer_softmax(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
/* SparseSoftmaxCrossEntropyWithLogits: (loss, backprop). */
tfm_code tfm_infer_sparse_xent(tfm_op op, const tfm_meta *in, int nin,
                               const tfm_attrs *a, tfm_meta *out,
                               int *nout);
/* SoftmaxCrossEntropyWithLogits: (loss, backprop); i[0] = axis. */
tfm_code tfm_infer_xent(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);

/* _LayerNorm, _LayerNormGrad, _SoftmaxGrad (ops/norm.c). */
tfm_code tfm_infer_layer_norm(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
tfm_code tfm_infer_layer_norm_grad(tfm_op op, const tfm_meta *in, int nin,
                                   const tfm_attrs *a, tfm_meta *out,
                                   int *nout);
tfm_code tfm_infer_softmax_grad(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout);

#endif
