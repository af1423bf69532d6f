/* Declarations of the gradient rules (ops/grad_*.c), listed in
 * grads.def and indexed by op in grad_table.c. Each rule is a few lines
 * over other ops (see grad_util.h), so gradients are themselves
 * differentiable and traceable. */
#ifndef TFM_OPS_GRADS_H
#define TFM_OPS_GRADS_H

#include "op.h"

/* Note [Saved tensors]: what each rule reads of the forward call beyond
 * shapes and dtypes: bit k of `in` / `out` set when the rule passes
 * input / output k to an op. The tape keeps only those tensors' values;
 * for the others it keeps a shape-only stand-in, so that buffers no rule
 * will read are freed as soon as the user drops them. The masks are the
 * last two fields of each G line in grads.def; ops listed there with
 * TFM_SAVES_ALL, and ops without a line, have valid == 0 and keep
 * everything. */
typedef struct tfm_grad_saves {
    unsigned char valid;
    unsigned char in;       /* bit k: input k (k < 8; variadic: none) */
    unsigned char out;      /* bit k: output k */
} tfm_grad_saves;
extern const tfm_grad_saves tfm_op_grad_saves[TFM_OP_COUNT];
#define TFM_SAVES_ALL (-1)

#define TFM_GRAD(name)                                                    \
    tfm_code name(const tfm_grad_ctx *c, tfm_tensor *const *g,            \
                  tfm_tensor **gin)

/* The rules' prototypes, from the G lines (a rule that serves two ops
 * is declared twice, which C allows). */
#define G(ENUM, RULE, SAVED_IN, SAVED_OUT) TFM_GRAD(RULE);
#include "grads.def"
#undef G

#endif
