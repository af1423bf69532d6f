/* The graph IR that tracing builds (see DESIGN.md, "Function").
 *
 * A graph is a list of nodes in creation order. A node is one op call:
 * its op, attributes, inputs (node, output) and output metas (dtype and
 * shape, -1 for an unknown dim). Because a node can only use nodes made
 * before it, creation order is a topological order; it is also program
 * order, which is what side effects need (see Note [Side-effect order]).
 *
 * Values that are not computed by ops are nodes of the state ops
 * (ops_state.def) with a payload (Note [State op payloads]):
 *   Placeholder       a function input;
 *   Const             a concrete tensor captured while tracing;
 *   ReadVariableOp    the current value of a captured tf.Variable;
 *   Assign*VariableOp a write to a captured tf.Variable;
 *   PrintV2           tf.print.
 *
 * Graphs are refcounted: the trace that builds one, the concrete function
 * that runs it and its compiled plan each hold a reference. A graph pass
 * (issue 5) is a function graph -> new graph; nodes are never edited in
 * place once the trace that built them has ended (tfm_graph_seal). */
#ifndef TFM_GRAPH_H
#define TFM_GRAPH_H

#include "../ops/op.h"

struct tfm_variable;

/* Output `out` of node `node`. */
typedef struct tfm_ref {
    int32_t node;
    int32_t out;
} tfm_ref;

/* Note [State op payloads]: kernels take no context pointer, so the ops
 * that touch something other than their input tensors (a captured value,
 * a variable, the print stream) keep it here, in the node, and the
 * executor runs them itself instead of through a kernel. Their rows in
 * ops_state.def still give them a name, an infer rule and flags, so that
 * passes, printing and saved models treat every node alike. */
typedef struct tfm_node {
    tfm_op op;
    int32_t nin, nout, nctrl;
    tfm_ref *in;
    tfm_meta *out;
    int32_t *ctrl;             /* nodes that must run before this one */
    const tfm_attrs *attrs;    /* never NULL */
    const char *name;          /* unique in the graph: "add", "add_1" */
    const char *site;          /* "file.py:12 in f" (the user's line) */
    tfm_tensor *value;         /* Const */
    struct tfm_variable *var;  /* ReadVariableOp, Assign*VariableOp */
    const char *const *text;   /* PrintV2: nin + 1 literal pieces */
} tfm_node;

typedef struct tfm_graph tfm_graph;

/* The graph leaked symbolic tensors point at once theirs is freed (see
 * Note [Symbolic tensor lifetime] in graph.c). */
extern tfm_graph tfm_graph_dead;

tfm_graph *tfm_graph_new(const char *name);
void tfm_graph_incref(tfm_graph *g);
void tfm_graph_decref(tfm_graph *g);
int64_t tfm_graph_live_count(void);

const char *tfm_graph_name(const tfm_graph *g);
int tfm_graph_node_count(const tfm_graph *g);
const tfm_node *tfm_graph_node(const tfm_graph *g, int i);
/* Sealed: the trace that built it has ended; no more nodes. */
int tfm_graph_sealed(const tfm_graph *g);

/* Append a node; returns its index, or -1 with the error set. Copies in,
 * attrs (NULL: defaults), out and ctrl. The name is the op's default
 * name ("add" for AddV2, else the TF op name), made unique. */
int tfm_graph_add_node(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
                       const tfm_attrs *attrs, const tfm_meta *out,
                       int nout);
/* Extra control edges of the last node added. */
tfm_code tfm_graph_add_ctrl(tfm_graph *g, int node, const int32_t *ctrl,
                            int nctrl);
/* The user's Python line that made node (copied; NULL clears). */
tfm_code tfm_graph_set_site(tfm_graph *g, int node, const char *site);
/* Rename node (made unique). */
tfm_code tfm_graph_set_name(tfm_graph *g, int node, const char *base);

/* State nodes. Each returns the node index or -1. */
int tfm_graph_placeholder(tfm_graph *g, tfm_dtype dtype,
                          const tfm_shape *shape, const char *name);
/* A concrete tensor as a Const node; the same tensor gives the same
 * node. The node holds a reference. */
int tfm_graph_const(tfm_graph *g, tfm_tensor *t);
int tfm_graph_read_variable(tfm_graph *g, struct tfm_variable *v);
int tfm_graph_assign_variable(tfm_graph *g, struct tfm_variable *v,
                              tfm_ref value, int mode);
/* tf.print: texts[0] in[0] texts[1] ... in[n-1] texts[n]. stream: 1
 * stdout, 2 stderr, more: a stream the binding registered. */
int tfm_graph_print(tfm_graph *g, const tfm_ref *in, int nin,
                    const char *const *texts, int stream, int summarize);

/* Function inputs (placeholders, in order) and outputs. */
int tfm_graph_input_count(const tfm_graph *g);
int tfm_graph_input(const tfm_graph *g, int i);
tfm_code tfm_graph_set_outputs(tfm_graph *g, const tfm_ref *out, int n);
int tfm_graph_output_count(const tfm_graph *g);
tfm_ref tfm_graph_output(const tfm_graph *g, int i);

/* A new symbolic tensor for output `out` of node; the graph tracks it
 * (Note [Symbolic tensor lifetime]). */
tfm_tensor *tfm_graph_symbolic(tfm_graph *g, int node, int out);
/* End of the trace that built g. */
void tfm_graph_seal(tfm_graph *g);

/* "add:0" into buf (the node's name and output index). */
char *tfm_graph_tensor_name(const tfm_tensor *t, char *buf, size_t n);

#endif
