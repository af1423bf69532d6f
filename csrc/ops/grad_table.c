/* Gradient rules, indexed by op. Rules live in grad_<family>.c. An op
 * missing here has no gradient yet (None, like a non-differentiable op);
 * tests/test_gradients.py lists which differentiable ops lack one. */
#include "op.h"

#include "grads.h"

const tfm_grad_fn tfm_op_grads[TFM_OP_COUNT] = {
    /* elementwise */
    [TFM_OP_ADD] = tfm_grad_rule_add,
    [TFM_OP_SUB] = tfm_grad_rule_sub,
    [TFM_OP_MUL] = tfm_grad_rule_mul,
    [TFM_OP_NEG] = tfm_grad_rule_neg,
    [TFM_OP_CAST] = tfm_grad_rule_cast,
};
