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

/* op() / op(x) / op(x, y) / op(x, y, z), single output; a may be NULL. */
tfm_tensor *tfm_grad_op0(tfm_call_fn call, tfm_op op, const tfm_attrs *a);
tfm_tensor *tfm_grad_op1(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         const tfm_attrs *a);
tfm_tensor *tfm_grad_op2(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         tfm_tensor *y, const tfm_attrs *a);
tfm_tensor *tfm_grad_op3(tfm_call_fn call, tfm_op op, tfm_tensor *x,
                         tfm_tensor *y, tfm_tensor *z, const tfm_attrs *a);

/* Tensors of t's shape and dtype filled with 1 / 0 (OnesLike/ZerosLike:
 * valid for symbolic t of unknown dims too). */
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

/* Sum t over axes (non-negative, ascending). */
tfm_tensor *tfm_grad_sum(tfm_call_fn call, tfm_tensor *t, const int *axes,
                         int naxes, int keepdims);

/* Reshape t to shape (at most one unknown dim) / to the static shape of
 * `like` (a new reference to t when the shapes already agree). */
tfm_tensor *tfm_grad_reshape(tfm_call_fn call, tfm_tensor *t,
                             const tfm_shape *shape);
tfm_tensor *tfm_grad_reshape_like(tfm_call_fn call, tfm_tensor *t,
                                  const tfm_tensor *like);

/* Note [Needed gradients]: the tape tells a rule which input gradients
 * it will use (inputs on a path from a source), so that costly rules
 * (matmul) skip the others, as TF's skip_input_indices. The mask is keyed
 * by the ctx it was set for: any other ctx (a rule called from elsewhere)
 * sees every input as needed. */
void tfm_grad_set_needed(const tfm_grad_ctx *c, uint64_t mask,
                         const tfm_grad_ctx **saved_ctx,
                         uint64_t *saved_mask);
void tfm_grad_restore_needed(const tfm_grad_ctx *saved_ctx,
                             uint64_t saved_mask);
int tfm_grad_wants(const tfm_grad_ctx *c, int k);

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

/* ---- scopes: temporaries released together ----
 * A rule opens a scope, builds its formula from scoped helpers (each
 * result is owned by the scope, NULL propagates), takes new references
 * to its results with tfm_gs_out / tfm_gs_unbroadcast, and ends the
 * scope. */
#define TFM_GRAD_SCOPE_MAX 48
typedef struct tfm_grad_scope {
    const tfm_grad_ctx *c;
    int n;
    tfm_tensor *t[TFM_GRAD_SCOPE_MAX];
} tfm_grad_scope;

static inline void
tfm_gs_begin(tfm_grad_scope *s, const tfm_grad_ctx *c)
{
    s->c = c;
    s->n = 0;
}

/* Hand t (a new reference or NULL) to the scope; returns t. */
tfm_tensor *tfm_gs_keep(tfm_grad_scope *s, tfm_tensor *t);
void tfm_gs_end(tfm_grad_scope *s);

tfm_tensor *tfm_gs_op0(tfm_grad_scope *s, tfm_op op, const tfm_attrs *a);
tfm_tensor *tfm_gs_op1(tfm_grad_scope *s, tfm_op op, tfm_tensor *x,
                       const tfm_attrs *a);
tfm_tensor *tfm_gs_op2(tfm_grad_scope *s, tfm_op op, tfm_tensor *x,
                       tfm_tensor *y, const tfm_attrs *a);
tfm_tensor *tfm_gs_op3(tfm_grad_scope *s, tfm_op op, tfm_tensor *x,
                       tfm_tensor *y, tfm_tensor *z, const tfm_attrs *a);
/* A scalar constant with like's dtype. */
tfm_tensor *tfm_gs_scalar(tfm_grad_scope *s, const tfm_tensor *like,
                          double v);
tfm_tensor *tfm_gs_zeros_like(tfm_grad_scope *s, tfm_tensor *t);
/* Zeros of t's shape and dtype that read only t's shape when it is known
 * (t may be a shape-only stand-in, see Note [Saved tensors] in grads.h). */
tfm_tensor *tfm_gs_zeros_of(tfm_grad_scope *s, tfm_tensor *t);
tfm_tensor *tfm_gs_ones_like(tfm_grad_scope *s, tfm_tensor *t);
tfm_tensor *tfm_gs_sum(tfm_grad_scope *s, tfm_tensor *t, const int *axes,
                       int naxes, int keepdims);
tfm_tensor *tfm_gs_reshape(tfm_grad_scope *s, tfm_tensor *t,
                           const tfm_shape *shape);
tfm_tensor *tfm_gs_cast(tfm_grad_scope *s, tfm_tensor *t, tfm_dtype d);

/* Results: a new reference to t / to t reduced to x's shape. */
static inline tfm_tensor *
tfm_gs_out(tfm_grad_scope *s, tfm_tensor *t)
{
    (void)s;
    return tfm_grad_ref(t);
}
tfm_tensor *tfm_gs_unbroadcast(tfm_grad_scope *s, tfm_tensor *t,
                               const tfm_tensor *x);

/* End of a rule: OK if gin[k] is set for every k in need (a bit mask of
 * inputs that must have a gradient); otherwise release all of gin and
 * return the error an earlier helper set. */
tfm_code tfm_grad_finish(tfm_tensor **gin, int nin, unsigned need);

#endif
