/* The graph optimizer (see DESIGN.md, "Graph passes"): a pipeline of
 * passes, each a function from a sealed graph to a new sealed graph, run
 * once per concrete function between the trace and the plan.
 *
 * A pass never edits its input: the trace stays as built, for inspection
 * (ConcreteFunction.graph) and for replays under a GradientTape, which
 * run the traced graph through the dispatcher so that every op is
 * recorded (tfm_concrete_call). Each pass has a bit in the enabled mask,
 * set from Python by tf.config.optimizer.set_experimental_options or the
 * environment variable TFMINI_GRAPH_PASSES_OFF (tfmini/config.py). */
#ifndef TFM_GRAPH_PASSES_H
#define TFM_GRAPH_PASSES_H

#include "../runtime/dispatch.h"
#include "../runtime/graph_impl.h"

/* One bit per pass, in pipeline order. Names: tfm_pass_names. */
enum tfm_pass_bit {
    TFM_PASS_SIMPLIFY = 1u << 0,  /* pass_simplify.c: exact algebra */
    TFM_PASS_FOLD = 1u << 1,      /* pass_fold.c: constant folding */
    TFM_PASS_CSE = 1u << 2,       /* pass_cse.c */
    TFM_PASS_DCE = 1u << 3,       /* pass_dce.c */
    TFM_PASS_EPILOGUE = 1u << 4,  /* matmul + bias + activation */
    TFM_PASS_FUSE = 1u << 5,      /* elementwise fusion */
    TFM_PASS_MEMORY = 1u << 6,    /* memory plan in exec_plan.c */
    TFM_PASS_NATIVE = 1u << 7,    /* big fused nodes as machine code
                                   * (fused_native.c), in exec.c */
    TFM_PASS_ALL = (1u << 8) - 1,
};
#define TFM_PASS_COUNT 8

/* "arithmetic", "constant_folding", "cse", "dce", "epilogue",
 * "fusion", "memory", "native": indexed by bit position. */
extern const char *const tfm_pass_names[TFM_PASS_COUNT];

/* The passes compiled functions use from now on (functions already
 * traced keep their plans). Default: all. */
extern unsigned tfm_passes_enabled;

/* A pass: a new reference to the rewritten graph (g itself, increfed,
 * when nothing changes), or NULL with the error set. */
typedef tfm_graph *(*tfm_pass_fn)(tfm_graph *g);

tfm_graph *tfm_pass_simplify(tfm_graph *g);
tfm_graph *tfm_pass_fold(tfm_graph *g);
tfm_graph *tfm_pass_cse(tfm_graph *g);
tfm_graph *tfm_pass_dce(tfm_graph *g);
/* Conv2D + bias add (+ Relu/Relu6/Elu) -> _FusedConv2D
 * (pass_conv_epilogue.c); under the "epilogue" switch. */
tfm_graph *tfm_pass_conv_epilogue(tfm_graph *g);
tfm_graph *tfm_pass_epilogue(tfm_graph *g);
/* MaxPoolGrad -> ReluGrad (-> bias Sum) -> _FusedMaxPoolGrad
 * (pass_pool_grad.c); under the "epilogue" switch. */
tfm_graph *tfm_pass_pool_grad(tfm_graph *g);
/* Conv2DBackpropFilter + the bias Sum of its dy ->
 * _Conv2DBackpropFilterBias (pass_filter_grad_bias.c); under the
 * "epilogue" switch. */
tfm_graph *tfm_pass_filter_grad_bias(tfm_graph *g);
tfm_graph *tfm_pass_fuse(tfm_graph *g);
/* pass_place.c: devices and _Copy nodes (Note [Device seam]); not a
 * switchable pass: graphs off the CPU need it, others skip it. */
tfm_graph *tfm_pass_place(tfm_graph *g);
/* The fusion pass's first step (fuse_updates.c): assign_add/assign_sub
 * of a fusable value as read, Add/Sub and assign, so the update fuses. */
tfm_graph *tfm_fuse_prepare_updates(tfm_graph *g);

/* Every enabled pass in order, inside If/While sub-graphs too. A new
 * reference, or NULL with the error set. */
tfm_graph *tfm_graph_optimize(tfm_graph *g, unsigned passes);

/* ---- building a pass's output (Note [Graph rewrites]) ----
 *
 * A rewrite copies src into dst in creation order. map[] sends each
 * output of src (by slot: base[node] + out) to a ref in dst; nodes not
 * (yet) copied map to {-1, -1}. A pass walks src's nodes and, for each,
 * copies it (tfm_rw_copy), sends its outputs to existing refs
 * (tfm_rw_alias), drops it, or adds new nodes in its place. */
typedef struct tfm_rw {
    tfm_graph *src;
    tfm_graph *dst;
    int32_t *base;      /* src node -> first output slot */
    tfm_ref *map;       /* src slot -> dst ref */
    int32_t *node_map;  /* src node -> dst node (-1: none), for ctrl */
} tfm_rw;

tfm_code tfm_rw_begin(tfm_rw *rw, tfm_graph *src);
/* The dst ref of src output r ({-1, -1} when dropped). */
static inline tfm_ref
tfm_rw_ref(const tfm_rw *rw, tfm_ref r)
{
    return rw->map[rw->base[r.node] + r.out];
}
/* Copy src node k with its inputs and control edges mapped (edges to
 * dropped nodes are dropped). Returns the dst node or -1. */
int tfm_rw_copy(tfm_rw *rw, int k);
/* src output (k, out) is dst ref r from now on. */
void tfm_rw_alias(tfm_rw *rw, int k, int out, tfm_ref r);
/* src node k became dst node d (outputs one to one). */
void tfm_rw_set(tfm_rw *rw, int k, int d);
/* Map the outputs, seal dst and return it (a new reference); frees the
 * rewrite's tables. NULL with the error set if an output was dropped. */
tfm_graph *tfm_rw_finish(tfm_rw *rw);
/* Give up (after an error): frees dst and the tables. */
void tfm_rw_abort(tfm_rw *rw);

/* A new node in dst (not a copy of a src node): op on in[] (dst refs)
 * with attributes a (NULL: defaults) and outputs out[], named name
 * (made unique), from the user's line site (may be NULL), holding value
 * when op is Const (the node takes its own reference; its attributes
 * then come from value's dtype and shape). The node's index or -1. */
int tfm_rw_add(tfm_rw *rw, tfm_op op, const tfm_ref *in, int nin,
               const tfm_attrs *a, const tfm_meta *out, int nout,
               const char *name, const char *site, tfm_tensor *value);

/* Note [Distinct outputs]: a tensor's identity shows in Python: tapes
 * key gradients by tensor id (Note [Variable ids]), so a function that
 * returns one tensor twice, or its own input, or a constant every call
 * returns, differs from eager code that made distinct tensors. A pass
 * that sends graph outputs to other refs (simplify, fold, CSE) calls
 * this after its last node, before tfm_rw_finish: an output the rewrite
 * made a Placeholder, a Const or a ReadVariableOp, or made share its
 * tensor with another output, where the source's outputs did not, gets
 * an Identity (a copy) in front, or, when the source returned a
 * captured constant, that constant back. Returns TFM_OK or the error. */
tfm_code tfm_rw_distinct_outputs(tfm_rw *rw);

/* The usual end of a pass that may alias outputs (simplify, fold):
 * unchanged, drop the rewrite and return g with a new reference; else
 * tfm_rw_distinct_outputs, then tfm_rw_finish. */
tfm_graph *tfm_rw_end(tfm_rw *rw, tfm_graph *g, int changed);

/* A pass that rewrites node by node (simplify, fold): fn sees each src
 * node k in order and returns 1 when it replaced k (aliased its outputs
 * or added nodes in its place), 0 to have k copied as it is, -1 on an
 * error. Ends as tfm_rw_end; NULL with the error set. */
typedef int (*tfm_rw_node_fn)(tfm_rw *rw, int k, void *arg);
tfm_graph *tfm_rw_each_node(tfm_graph *g, tfm_rw_node_fn fn, void *arg);

/* Add src node k's control edges, mapped (edges to dropped nodes are
 * dropped), to dst node d. */
tfm_code tfm_rw_copy_ctrl(tfm_rw *rw, int k, int d);

/* Whether node n must run even when no output needs it: writes to
 * variables, prints, asserts, control flow (its sub-graphs may do any of
 * these) and ops flagged stateful. */
int tfm_node_has_effect(const tfm_node *n);

/* live[k] = 1 for every node that outs[] (and, with effects, every node
 * with an effect) needs through data inputs; live[] has g's node count
 * of entries, zeroed by the caller. A node for which `no_inputs` (may be
 * NULL) says 1 is taken as needing none of its inputs (constant folding
 * asks what stays live once such nodes fold). 0, or an error code (out
 * of memory) with the error set. Dead-code elimination, the executor's
 * plan and constant folding share it. */
typedef int (*tfm_live_skip_fn)(const tfm_graph *g, const tfm_node *n);
tfm_code tfm_graph_mark_live(const tfm_graph *g, const tfm_ref *outs,
                             int nout, int effects, tfm_live_skip_fn no_inputs,
                             uint8_t *live);

/* Whether a fusion pass may make fused op `op` of nodes placed on
 * device (0, or -1 unplaced: the CPU): the CPU always, another device
 * (a GPU) when its kernel table has op, so the fused node runs there. */
static inline int
tfm_fuse_on_device(tfm_op op, int device)
{
    return device <= 0 || tfm_kernel_for(op, device) != NULL;
}

/* Whether two nodes run on one device: -1 (unplaced) and 0 are both the
 * CPU. */
static inline int
tfm_same_device(int a, int b)
{
    return a == b || (a <= 0 && b <= 0);
}

#endif
