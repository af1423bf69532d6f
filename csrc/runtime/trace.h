/* Tracing: while a tf.function is being traced, ops become graph nodes
 * (see DESIGN.md, "Function", and graph.h for the IR).
 *
 * Each thread has a stack of trace contexts. The top is the graph that
 * ops go to, or NULL for an init_scope (tf.init_scope lifts code out of
 * the trace: ops in it run eagerly). */
#ifndef TFM_TRACE_H
#define TFM_TRACE_H

#include "../ops/op.h"

struct tfm_graph;

/* The graph being traced on this thread, or NULL when executing eagerly
 * (no trace, or inside an init_scope). */
struct tfm_graph *tfm_trace_graph(void);

/* Enter a trace of g (holds a reference until the pop), or, with NULL,
 * an init_scope. */
tfm_code tfm_trace_push(struct tfm_graph *g);
void tfm_trace_pop(void);
/* Contexts on this thread's stack (traces and init_scopes). */
int tfm_trace_depth(void);
/* Whether g is on this thread's stack. */
int tfm_trace_contains(const struct tfm_graph *g);

/* Append op as a node of the current graph (concrete inputs are captured
 * as constants) and return its outputs as symbolic tensors. Errors if an
 * input is a symbolic tensor of another graph (it leaked out of the
 * function that made it). */
tfm_code tfm_trace_add_op(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor **out, int *nout);

struct tfm_ref;
/* t as a value of the current graph: its node output, a capture (a
 * tensor of a graph around it), or a Const (a concrete tensor). */
tfm_code tfm_trace_input(tfm_tensor *t, struct tfm_ref *r);

struct tfm_variable;
/* Variable access while tracing: graph nodes that read / assign the
 * captured variable when the function runs (see variable.h). A read is a
 * symbolic tensor carrying the variable's id (Note [Variable ids]). */
tfm_code tfm_trace_read_variable(struct tfm_variable *v, tfm_tensor **out);
tfm_code tfm_trace_assign_variable(struct tfm_variable *v, tfm_tensor *value,
                                   int mode);
/* Assignments traced so far on this thread: a differentiated tf.cond or
 * tf.while_loop whose branch assigned cannot be recomputed (Note
 * [Control flow gradients] in tfmini/ops/control_flow_grad.py). */
long tfm_trace_assign_count(void);

/* Note [Capture log]: a tape recording around tf.cond / tf.while_loop
 * in a traced function records the whole If / While as one op whose
 * inputs must include every outer tensor its sub-graphs use (Python sees
 * no list of them: a capture is made deep in input_ref). While the log is
 * open, each tensor that an op of a graph uses from outside that graph
 * (a capture, or a concrete tensor becoming a Const) is kept, with a
 * reference, in order. Opens nest: close(mark) returns what was logged
 * since its open, and only the outermost close empties the log, so an
 * outer sub-graph also sees what its inner ones captured. */
int tfm_trace_capture_log_open(void);             /* -> mark */
void tfm_trace_capture_log(tfm_tensor *t);         /* no-op when closed */
/* The tensors logged since mark (borrowed until the matching close). */
tfm_tensor *const *tfm_trace_capture_logged(int mark, int *n);
void tfm_trace_capture_log_close(int mark);

/* tf.print while tracing: a PrintV2 node (see ops/state.h). */
tfm_code tfm_trace_print(const char *const *texts, tfm_tensor *const *t,
                         int n, int stream, int summarize);

/* Where the user's code is: the binding writes "file.py:12 in f" for the
 * innermost frame outside tfmini into buf. Each node keeps it, so errors
 * at run time name the line that made the failing op. */
typedef void (*tfm_site_fn)(char *buf, size_t n);
void tfm_trace_set_site_hook(tfm_site_fn fn);

#endif
