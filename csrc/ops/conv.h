/* Shape rules of the conv family (rows in ops_conv.def). */
#ifndef TFM_OPS_CONV_H
#define TFM_OPS_CONV_H

#include "op.h"

tfm_code tfm_infer_conv2d(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);
tfm_code tfm_infer_conv2d_backprop_input(tfm_op op, const tfm_meta *in,
                                         int nin, const tfm_attrs *a,
                                         tfm_meta *out, int *nout);
tfm_code tfm_infer_conv2d_backprop_filter(tfm_op op, const tfm_meta *in,
                                          int nin, const tfm_attrs *a,
                                          tfm_meta *out, int *nout);
tfm_code tfm_infer_conv2d_backprop_filter_bias(tfm_op op,
                                               const tfm_meta *in, int nin,
                                               const tfm_attrs *a,
                                               tfm_meta *out, int *nout);
tfm_code tfm_infer_pool(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);
tfm_code tfm_infer_max_pool_grad(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout);
tfm_code tfm_infer_fused_max_pool_grad(tfm_op op, const tfm_meta *in,
                                       int nin, const tfm_attrs *a,
                                       tfm_meta *out, int *nout);
tfm_code tfm_infer_avg_pool_grad(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout);
tfm_code tfm_infer_depthwise_conv2d(tfm_op op, const tfm_meta *in, int nin,
                                    const tfm_attrs *a, tfm_meta *out,
                                    int *nout);
tfm_code tfm_infer_depthwise_backprop_input(tfm_op op, const tfm_meta *in,
                                            int nin, const tfm_attrs *a,
                                            tfm_meta *out, int *nout);
tfm_code tfm_infer_depthwise_backprop_filter(tfm_op op, const tfm_meta *in,
                                             int nin, const tfm_attrs *a,
                                             tfm_meta *out, int *nout);
tfm_code tfm_infer_fused_conv2d(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout);

#endif
