/* Tracing: while a tf.function is being traced, ops become graph nodes
 * (see DESIGN.md, "Function"). */
#ifndef TFM_TRACE_H
#define TFM_TRACE_H

#include "../ops/op.h"

struct tfm_graph;

/* The graph being traced on this thread, or NULL when executing eagerly. */
struct tfm_graph *tfm_trace_graph(void);

/* Append op as a node of the current graph (concrete inputs are captured
 * as constants) and return its outputs as symbolic tensors. */
tfm_code tfm_trace_add_op(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor **out, int *nout);

struct tfm_variable;
/* Variable access while tracing: graph nodes that read / assign the
 * captured variable when the function runs (see variable.h). */
tfm_code tfm_trace_read_variable(struct tfm_variable *v, tfm_tensor **out);
tfm_code tfm_trace_assign_variable(struct tfm_variable *v, tfm_tensor *value,
                                   int mode);

#endif
