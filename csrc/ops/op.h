/* The op table: one entry per op, indexed by tfm_op (see ops.def). The
 * runtime, the graph, the tape and the binding all read this table. */
#ifndef TFM_OP_H
#define TFM_OP_H

#include "../core/device.h"
#include "../core/tensor.h"

typedef enum tfm_op {
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS) TFM_OP_##ENUM,
#include "ops.def"
#undef X
    TFM_OP_COUNT
} tfm_op;

/* Attributes: static (trace-time) parameters of an op call. Which slot
 * means what is documented at each op's row in its .def file. */
#define TFM_MAX_ATTR_INTS 64
typedef struct tfm_attrs {
    int n_ints;
    int64_t ints[TFM_MAX_ATTR_INTS];  /* axis lists, perms, shapes, ... */
    int64_t i[6];                     /* scalar ints and bools */
    double f[4];                      /* scalar floats */
    tfm_dtype dtype;                  /* target dtype (cast, fill, ...) */
} tfm_attrs;

/* Output metadata computed by an op's shape rule. */
typedef struct tfm_meta {
    tfm_dtype dtype;
    tfm_shape shape;
} tfm_meta;

#define TFM_MAX_OUTPUTS 256
#define TFM_MAX_INPUTS 256

/* Shape and dtype rule: the only place shape errors are raised. Fills
 * out[0..*nout) (capacity TFM_MAX_OUTPUTS). Works on symbolic inputs
 * (unknown dims are -1). */
typedef tfm_code (*tfm_infer_fn)(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout);

/* Kernel: computes into outputs the dispatcher allocated from infer, on
 * the device ctx names (inputs and outputs are all there; see Note
 * [Device seam] in core/device.h). */
typedef tfm_code (*tfm_kernel_fn)(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a, tfm_tensor *const *out,
                                  int nout, const tfm_kctx *ctx);

/* Gradient rule: given the forward call and the gradients of its outputs
 * (NULL for an output with no gradient), produce the gradients of its
 * inputs (NULL where none) as new references. Rules call ops only through
 * ctx->call, so they are recorded by outer tapes and traced into graphs:
 * gradients of gradients come for free. */
typedef struct tfm_grad_ctx {
    tfm_op op;
    tfm_tensor *const *in;
    int nin;
    tfm_tensor *const *out;
    int nout;
    const tfm_attrs *attrs;
    /* Runs an op (eagerly, traced, recorded: whatever the runtime does). */
    tfm_code (*call)(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor **out, int *nout);
} tfm_grad_ctx;
typedef tfm_code (*tfm_grad_fn)(const tfm_grad_ctx *ctx,
                                tfm_tensor *const *grad_out,
                                tfm_tensor **grad_in);

enum tfm_op_flags {
    TFM_OPF_ELEMENTWISE = 1 << 0, /* out[i] = f(in[i]...): fusable */
    TFM_OPF_F16 = 1 << 1,         /* kernel handles float16 itself */
    TFM_OPF_NONDIFF = 1 << 2,     /* never has a gradient (argmax, ==) */
    TFM_OPF_STATEFUL = 1 << 3,    /* side effects: not folded/CSE'd/DCE'd */
    TFM_OPF_RANDOM = 1 << 4,      /* random: never CSE'd or folded */
    TFM_OPF_ANY_DTYPE = 1 << 5,   /* kernel handles every dtype (copies) */
    /* No kernel and no eager form: a graph node that the executor runs
     * by a step of its own (ops_state.def). Made by its own tfm_graph_*
     * function or by the optimizer, never by tfm_graph_add_node; the
     * tape never sees one, so it needs no gradient rule. */
    TFM_OPF_GRAPH_ONLY = 1 << 6,
    /* A graph-only op whose value comes from outside the computation
     * (the caller's input, a captured constant, a variable): it cannot
     * fail, has no effect, and keeps its identity through rewrites. */
    TFM_OPF_SOURCE = 1 << 7,
};

/* What a graph-only op's node carries besides inputs and attrs (Note
 * [State op payloads] in runtime/graph.h), stored in the row's flags as
 * TFM_OPF_PAYLOAD(kind). The saved-model reader wants exactly this one
 * in the file (PROG nodes are never saved). */
typedef enum tfm_payload {
    TFM_PAYLOAD_NONE,
    TFM_PAYLOAD_CONST,      /* tfm_node.value */
    TFM_PAYLOAD_VAR,        /* tfm_node.var */
    TFM_PAYLOAD_TEXT,       /* tfm_node.text */
    TFM_PAYLOAD_SUB,        /* tfm_node.sub, submap: If, While */
    TFM_PAYLOAD_PROG,       /* tfm_node.prog: the fused ops */
} tfm_payload;
#define TFM_OPF_PAYLOAD_SHIFT 8
#define TFM_OPF_PAYLOAD(kind) ((unsigned)(kind) << TFM_OPF_PAYLOAD_SHIFT)

typedef struct tfm_op_def {
    const char *name;     /* TF's op name: "AddV2", "MatMul", ... */
    int n_inputs;         /* -1: variadic */
    int n_outputs;        /* -1: decided by infer */
    tfm_infer_fn infer;
    tfm_kernel_fn cpu;
    unsigned flags;
} tfm_op_def;

extern const tfm_op_def tfm_ops[TFM_OP_COUNT];
/* Gradient rules, expanded from ops/grads.def (one G line per
 * differentiable op; the rules are in ops/grad_<family>.c); NULL = no
 * gradient. The build fails unless every op has a G line, the NONDIFF
 * flag or the GRAPH_ONLY flag, and only one of them (grad_table.c). */
extern const tfm_grad_fn tfm_op_grads[TFM_OP_COUNT];
/* CUDA kernels by op: no CUDA kernel is built yet, so this is the
 * all-NULL table of kernels/cuda/stub.c. */
extern const tfm_kernel_fn tfm_op_cuda[TFM_OP_COUNT];

static inline tfm_payload
tfm_op_payload(tfm_op op)
{
    return (tfm_payload)((tfm_ops[op].flags >> TFM_OPF_PAYLOAD_SHIFT) & 7);
}

static inline void
tfm_attrs_init(tfm_attrs *a)
{
    a->n_ints = 0;
    for (int k = 0; k < 6; k++)
        a->i[k] = 0;
    for (int k = 0; k < 4; k++)
        a->f[k] = 0;
    a->dtype = TFM_FLOAT32;
}

/* Whether tensor t fits meta m: same dtype and rank, each known dim
 * equal (a value for a traced slot, a folded result for its node). */
static inline int
tfm_meta_admits(const tfm_meta *m, const tfm_tensor *t)
{
    if (t->dtype != m->dtype || t->shape.ndim != m->shape.ndim)
        return 0;
    for (int d = 0; d < m->shape.ndim; d++)
        if (m->shape.dims[d] >= 0 && m->shape.dims[d] != t->shape.dims[d])
            return 0;
    return 1;
}

/* Look up by TF name ("AddV2"); -1 if unknown. */
int tfm_op_lookup(const char *name);

/* Run op's shape rule, then check that every output's byte size (known
 * dims) fits in an int64: buffers and memory plans are sized from these
 * metas, so a rule that lets attributes or a file ask for more would
 * have sizes wrap. Every caller of a rule goes through this. */
tfm_code tfm_op_infer(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout);

#endif
