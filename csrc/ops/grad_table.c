/* Gradient rules, indexed by op. Rules live in grad_<family>.c. */
#include "op.h"

#include "grads.h"

const tfm_grad_fn tfm_op_grads[TFM_OP_COUNT] = {
    [TFM_OP_ADD] = NULL,
};
