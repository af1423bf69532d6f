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
 *   PrintV2           tf.print;
 *   If, While         control flow: sub-graphs (Note [Sub-graphs]);
 *   Assert            tf.Assert in a graph.
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

/* Note [State op payloads]: a kernel's only context is its device
 * (tfm_kctx), so the ops that touch something other than their input
 * tensors (a captured value, a variable, the print stream) keep it
 * here, in the node, and the executor runs them itself instead of
 * through a kernel. Their rows in
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
    const char *const *text;   /* PrintV2, Assert: literal pieces */
    struct tfm_graph *sub[2];  /* If: then, else; While: cond, body */
    int32_t *submap[2];        /* sub[b]'s input i is node input
                                * submap[b][i] (While: see graph.c) */
    /* _FusedElementwise, _FusedMatMul: the expression program the
     * fusion passes compiled (graph/fused.h). Opaque here: prog_size
     * bytes with no pointers inside, so a copy is a memcpy. */
    const struct tfm_fused_prog *prog;
    size_t prog_size;
    /* The device it runs on (Note [Device seam] in core/device.h): -1
     * when nobody asked (new nodes take their inputs' device, the first
     * not on the CPU); the trace sets the tf.device scope's; the
     * placement pass (graph/pass_place.c) settles it. A Const is where
     * its value is, a ReadVariableOp where its variable is. */
    int32_t device;
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
/* The device node was asked for (a device table index, -1 none). */
void tfm_graph_set_device(tfm_graph *g, int node, int device);
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

/* Note [Sub-graphs]: the branches of tf.cond and the condition and body
 * of tf.while_loop are traced into sub-graphs of the graph being traced
 * (tfm_graph_new_sub). A sub-graph reaches values of the graphs around
 * it by capture: using one makes a placeholder in the sub-graph (and in
 * every graph between), remembered with the value it stands for. The If
 * or While node then takes the captured values as inputs, and submap
 * says which node input feeds each sub-graph input. Once the node is
 * made, its sub-graphs are sealed and belong to it. */
tfm_graph *tfm_graph_new_sub(tfm_graph *parent, const char *name);
/* Whether a is g or a graph g is (transitively) a sub-graph of. */
int tfm_graph_within(const tfm_graph *g, const tfm_graph *a);
/* t (symbolic, of g or of a graph around it) as a ref in g. */
tfm_code tfm_graph_capture(tfm_graph *g, const tfm_tensor *t, tfm_ref *r);
/* If(pred, captures...): runs then_g or else_g (no explicit inputs; their
 * outputs set) and gives its outputs: same count and dtypes; each shape
 * the most specific one both fit. */
int tfm_graph_if(tfm_graph *g, tfm_ref pred, tfm_graph *then_g,
                 tfm_graph *else_g);
/* While(vars..., captures..., [max_iter]): cond_g and body_g take the
 * loop variables as their first nvars inputs (placeholders with the
 * loop's shape invariants); cond_g gives a scalar bool, body_g the next
 * values. max_iter: NULL or a scalar integer. */
int tfm_graph_while(tfm_graph *g, const tfm_ref *vars, int nvars,
                    tfm_graph *cond_g, tfm_graph *body_g,
                    const tfm_ref *max_iter);
/* Note [While again]: the gradient of a graph tf.cond / tf.while_loop
 * (tfmini/ops/control_flow_grad.py) is a sub-graph traced once, with the
 * forward op, and run by a While node made when tape.gradient asks. A
 * second request (a persistent tape asked twice, tape.jacobian's one
 * request per element) cannot trace it again, as the Python that made
 * it may have moved on, and a sub-graph belongs to the node that sealed
 * it. Sealed graphs are immutable and refcounted, so this node shares
 * them: a copy of While node `like` of g (its sub-graphs, maps, captured
 * inputs and maximum_iterations) with new initial loop variables vars
 * (same count, dtypes and ranks as like's), ordered after g's earlier
 * side effects as every control flow node is. Returns the node or -1
 * with the error set. */
int tfm_graph_while_again(tfm_graph *g, int like, const tfm_ref *vars,
                          int nvars);
/* Assert(cond, data...): InvalidArgumentError with texts[0] data[0] ...
 * texts[n] when cond (a scalar bool) is false at run time. */
int tfm_graph_assert(tfm_graph *g, tfm_ref cond, const tfm_ref *data,
                     int ndata, const char *const *texts, int summarize);

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
