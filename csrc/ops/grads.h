/* Declarations of the gradient rules (ops/grad_*.c), indexed by op in
 * grad_table.c. Each rule is a few lines over other ops (see
 * grad_util.h), so gradients are themselves differentiable and traceable.
 */
#ifndef TFM_OPS_GRADS_H
#define TFM_OPS_GRADS_H

#include "op.h"

#define TFM_GRAD(name)                                                    \
    tfm_code name(const tfm_grad_ctx *c, tfm_tensor *const *g,            \
                  tfm_tensor **gin)

/* grad_elementwise.c */
TFM_GRAD(tfm_grad_rule_add);
TFM_GRAD(tfm_grad_rule_sub);
TFM_GRAD(tfm_grad_rule_mul);
TFM_GRAD(tfm_grad_rule_neg);
TFM_GRAD(tfm_grad_rule_cast);

#endif
