/* Gradient rules of the conv family (ops/grad_conv.c), for the table in
 * ops/grad_table.c. */
#ifndef TFM_OPS_GRAD_CONV_H
#define TFM_OPS_GRAD_CONV_H

#include "op.h"

tfm_code tfm_grad_rule_conv2d(const tfm_grad_ctx *ctx,
                              tfm_tensor *const *grad_out,
                              tfm_tensor **grad_in);
tfm_code tfm_grad_rule_conv2d_backprop_input(const tfm_grad_ctx *ctx,
                                             tfm_tensor *const *grad_out,
                                             tfm_tensor **grad_in);
tfm_code tfm_grad_rule_conv2d_backprop_filter(const tfm_grad_ctx *ctx,
                                              tfm_tensor *const *grad_out,
                                              tfm_tensor **grad_in);
tfm_code tfm_grad_rule_max_pool(const tfm_grad_ctx *ctx,
                                tfm_tensor *const *grad_out,
                                tfm_tensor **grad_in);
tfm_code tfm_grad_rule_max_pool_grad(const tfm_grad_ctx *ctx,
                                     tfm_tensor *const *grad_out,
                                     tfm_tensor **grad_in);
tfm_code tfm_grad_rule_max_pool_grad_grad(const tfm_grad_ctx *ctx,
                                          tfm_tensor *const *grad_out,
                                          tfm_tensor **grad_in);
tfm_code tfm_grad_rule_avg_pool(const tfm_grad_ctx *ctx,
                                tfm_tensor *const *grad_out,
                                tfm_tensor **grad_in);
tfm_code tfm_grad_rule_avg_pool_grad(const tfm_grad_ctx *ctx,
                                     tfm_tensor *const *grad_out,
                                     tfm_tensor **grad_in);

#endif
