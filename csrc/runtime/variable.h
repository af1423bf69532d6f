/* Variables: mutable state that ops read and assign.
 *
 * Note [Variable ids]: every read of a variable, eager or symbolic, is a
 * tensor carrying the variable's own id. Tapes key gradients by tensor
 * id, so "gradient with respect to v" is the gradient with respect to
 * that id, and a read costs no recorded op.
 *
 * Eager reads share the variable's buffer. An eager assign writes in
 * place while the variable holds the only reference to its buffer, and
 * into a fresh buffer otherwise (copy-on-write), so tensors read earlier
 * never change. While tracing, reads and assigns become graph nodes. */
#ifndef TFM_VARIABLE_H
#define TFM_VARIABLE_H

#include "../ops/op.h"

typedef struct tfm_variable {
    int64_t refcount;
    uint64_t id;
    tfm_tensor *value;     /* concrete; never NULL after creation */
    int trainable;
    /* The declared shape (tf.Variable(shape=...)): value's shape, or a
     * less specific one (-1 dims) that assign() may change value within;
     * any_rank: the declared shape is TensorShape(None). */
    tfm_shape shape;
    int any_rank;
    /* The binding's object for this variable (borrowed; NULL once it is
     * gone): how a tape's watched variables get back to Python. */
    void *owner;
} tfm_variable;

typedef enum { TFM_ASSIGN = 0, TFM_ASSIGN_ADD, TFM_ASSIGN_SUB }
    tfm_assign_mode;

/* New variable holding a private copy of init (concrete). */
tfm_variable *tfm_variable_new(tfm_tensor *init, int trainable);
/* Declare a less specific shape (shape=... in tf.Variable): it must be
 * compatible with the current value (ValueError otherwise). */
tfm_code tfm_variable_set_shape(tfm_variable *v, const tfm_shape *shape,
                                int any_rank);
static inline void
tfm_variable_incref(tfm_variable *v)
{
    v->refcount++;
}
void tfm_variable_decref(tfm_variable *v);

/* Current value: a view (eager) or a graph node (tracing). Tells the
 * active tapes the variable was accessed (they may watch it). */
tfm_code tfm_variable_read(tfm_variable *v, tfm_tensor **out);

/* The current value as a tensor carrying the variable's id, without
 * telling the tapes (a gradient source, not a use). Eager only. */
tfm_tensor *tfm_variable_handle(tfm_variable *v);

/* v = value / v += value / v -= value. value must have v's dtype and
 * shape (ValueError naming both otherwise); assign (only) may change the
 * shape within a less specific declared shape. */
tfm_code tfm_variable_assign(tfm_variable *v, tfm_tensor *value,
                             tfm_assign_mode mode);

/* The eager write itself (no tracing check): what the graph executor
 * calls for an assign node. */
tfm_code tfm_variable_assign_now(tfm_variable *v, tfm_tensor *value,
                                 tfm_assign_mode mode);

#endif
