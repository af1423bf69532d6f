/* Helpers for gradient rules (ops/grad_*.c): calling ops through the
 * runtime's call function, and the one shape helper every broadcasting
 * rule needs (unbroadcast). Rules stay a few lines each, and never look at
 * tensor data: under tracing every tensor is symbolic.
 *
 * Conventions: helpers return a new reference, or NULL with the error
 * set. A NULL tensor argument means "an earlier step failed": the helper
 * returns NULL at once, so a rule can chain calls and check once at the
 * end with tfm_grad_finish. */
#ifndef TFM_GRAD_UTIL_H
#define TFM_GRAD_UTIL_H

#include "op.h"

typedef tfm_code (*tfm_call_fn)(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor **out,
                                int *nout);

/* op(x) / op(x, y) / op(x, y, z), single output; a may be NULL. */
tfm_tensor *tfm_grad_op1(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         const tfm_attrs *a);
tfm_tensor *tfm_grad_op2(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         tfm_tensor *y, const tfm_attrs *a);
tfm_tensor *tfm_grad_op3(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         tfm_tensor *y, tfm_tensor *z, const tfm_attrs *a);

/* Tensors of t's shape and dtype filled with 1 / 0. */
tfm_tensor *tfm_grad_ones_like(tfm_call_fn call, tfm_tensor *t);
tfm_tensor *tfm_grad_zeros_like(tfm_call_fn call, tfm_tensor *t);

/* A scalar of dtype holding v (a constant: no data of any input read). */
tfm_tensor *tfm_grad_scalar(tfm_call_fn call, tfm_dtype dtype, double v);

/* Cast t to dtype (a new reference to t when it already has it). */
tfm_tensor *tfm_grad_cast(tfm_call_fn call, tfm_tensor *t, tfm_dtype dtype);

/* The gradient g of a broadcasting op's output, reduced to the shape of
 * input x: summed over the dims along which x was broadcast. Steals g.
 * Unknown dims (tracing) are taken to match. */
tfm_tensor *tfm_grad_unbroadcast(tfm_call_fn call, tfm_tensor *g,
                                 const tfm_tensor *x);

/* Reshape t to the static shape of `like` (a new reference to t when the
 * shapes already agree). */
tfm_tensor *tfm_grad_reshape_like(tfm_call_fn call, tfm_tensor *t,
                                  const tfm_tensor *like);

static inline tfm_tensor *
tfm_grad_ref(tfm_tensor *t)
{
    if (t)
        tfm_tensor_incref(t);
    return t;
}

static inline void
tfm_grad_drop(tfm_tensor *t)
{
    if (t)
        tfm_tensor_decref(t);
}

/* End of a rule: OK if gin[k] is set for every k in need (a bit mask of
 * inputs that must have a gradient); otherwise release all of gin and
 * return the error an earlier helper set. */
tfm_code tfm_grad_finish(tfm_tensor **gin, int nin, unsigned need);

#endif
