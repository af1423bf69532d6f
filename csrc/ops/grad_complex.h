/* The tape's entry to complex gradients (Note [Complex gradients] in
 * grad_complex.c). */
#ifndef TFM_OPS_GRAD_COMPLEX_H
#define TFM_OPS_GRAD_COMPLEX_H

#include <stdbool.h>

#include "op.h"

#define TFM_COMPLEX_GRAD_MAX_OUT 8

/* Whether op's gradient over these inputs runs through
 * tfm_grad_complex_run: a holomorphic op with a complex input. */
bool tfm_grad_complex_wraps(tfm_op op, tfm_tensor *const *in, int nin);

/* rule (op's real rule) as conj(rule(conj(g))). */
tfm_code tfm_grad_complex_run(const tfm_grad_ctx *c, tfm_grad_fn rule,
                              tfm_tensor *const *g, tfm_tensor **gin);

#endif
