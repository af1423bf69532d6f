/* A cached tf.function call replayed through a CUDA graph. See Note
 * [CUDA graphs for cached calls].
 *
 * Note [CUDA graphs for cached calls]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A plan on a GPU costs host time per step: the executor's bookkeeping,
 * an allocation per output and a kernel launch. When every step of a
 * plan only queues work on the GPU's one stream, that work is the same
 * on every call with the same input shapes, so the call can be recorded
 * once as a CUDA graph and replayed with one cudaGraphLaunch.
 *
 * Eligibility (tfm_cugraph_eligible, a pure function of the plan, so
 * tests check it on the FAKE device without a GPU): every step placed on
 * one device other than the CPU, a kernel step having a kernel there;
 * no Print, Assert, If or While (each reads a value on the host); no
 * Where, nor any output shape known only from values (Where's kernel
 * reads its count back even when its shape was known at the trace); no
 * random op (its stream is counted on the host per call) and no other
 * stateful kernel; no step whose GPU kernel hands the dtypes it has to
 * the CPU kernel on host copies (a scatter of float16, GatherNd of
 * strings: the copies wait for the stream); a _Copy only of a function
 * input or a constant. Host constants (a
 * _Copy's input, or read straight by a node that a pass after placement
 * made, which a plain run moves to the device before the kernel) get
 * device copies in the record. The verdict is cached on the
 * plan (cugraph_ok); a plan on a device that is not a GPU, or in a build
 * without CUDA, is judged and then never captured.
 *
 * The record (struct tfm_cugraph, one per plan) is made on the first
 * call and captures on the second call with the same input dtypes and
 * shapes, not the first: that one compiled the fused kernels (NVRTC),
 * created the cuBLAS/cuDNN handles and found the algorithms, none of
 * which may happen inside a capture. cuBLAS from CUDA 12.2 on takes its
 * workspace with cudaMallocAsync while the stream captures, so the
 * handle needs no cublasSetWorkspace.
 *
 * Capture runs the plan as usual between cudaStreamBeginCapture (mode
 * ThreadLocal: only this thread's unsafe calls break it) and
 * cudaStreamEndCapture, on inputs the record owns (device tensors the
 * caller's values are copied into) and with device copies of the host
 * constants, so the captured run copies nothing from the host; a graph
 * with a copy node that still touches host memory (a kernel's own small
 * upload) is refused before instantiation, since a replay would read
 * that host address again after its value is gone. Every
 * allocation in it is cudaMallocAsync on the capturing stream (Note [GPU
 * allocator]), which becomes a graph memory node: intermediates are
 * freed inside the graph; outputs are not, and the record keeps them.
 * The graph is instantiated with AutoFreeOnLaunch, so each launch frees
 * the previous launch's outputs and makes them again at the same
 * addresses (a graph allocation's address is fixed for the graph's
 * life). That is why graph memory rather than buffers the record
 * allocates beforehand: no sizes to guess, and the graph reuses its
 * intermediates' memory as the plain run does. Nothing runs during a
 * capture, so the call's own result comes from the first launch, right
 * after instantiation. The caller always gets fresh tensors, copied on
 * the stream from the record's outputs: the next launch overwrites them.
 *
 * Variables: a captured read or assignment uses the variable's buffer
 * address as it was. Before every replay each variable's data pointer,
 * device and shape are compared with those captured (cheap); any change
 * (an assign that made a new buffer, assign of another shape) drops the
 * record, runs the call the plain way, and captures again on the next
 * call; so do other input shapes. After four drops the plan stays plain
 * (a function called with ever new shapes would otherwise capture on
 * every other call), unless TFMINI_CUDA_GRAPHS=1. An assignment inside the
 * capture that gave a variable a new buffer (someone else held the old
 * one) makes the capture fail: that buffer would be graph memory.
 *
 * Indices: TensorScatterAdd/Update/Min/Max and GatherNd check their
 * indices on the GPU, and outside a capture read the verdict back to
 * raise the CPU's error. The record of a plan with such a step owns a
 * device flag that the checks set instead while capturing (Note [Index
 * checks inside a CUDA graph capture], kernels_scatter.c), and reads it
 * with one small copy after each launch. A set flag means the graph ran
 * with bad rows skipped: the record copies back the variables it wrote
 * (their bytes are kept before each launch, one device copy per written
 * variable: the price of rerunning, paid only by such plans), clears
 * the flag and runs the call the plain way, which stops at the bad step
 * with the CPU's exact error, leaving the variables as a plain run
 * would. The graph stays: the next call's indices may be good.
 * Shape, Size and Rank write their host-known values as a kernel's
 * parameter (kernels_shape.c), which the graph keeps.
 *
 * Failure (capture, instantiate, launch): the capture is always ended,
 * the variables are put back to the tensors they held before (a failed
 * capture ran nothing, so their bytes never changed), the last CUDA
 * error is cleared, the reason is logged once (under
 * tf.debugging.set_log_device_placement on a machine with a GPU, or
 * with TFMINI_CUDA_GRAPHS=1), the plan is marked never to capture, and
 * the call runs the plain way. After a launch succeeded, the call's work
 * is done: an error copying the outputs out is returned, never run a
 * second time. TFMINI_CUDA_GRAPHS=0 turns all of it off; =1 forces
 * attempts (no limit on drops: every new shape or variable buffer is
 * captured again) and logs every capture, drop and failure; unset,
 * eligible plans on a GPU capture, within the drop limit.
 *
 * Not covered: another Python thread queueing work on the GPU's stream
 * while a capture runs a big kernel without the interpreter lock would
 * have that work captured too (the stream is shared); the record's busy
 * flag only keeps such a call of the same plan off the record. A
 * function that returns a variable's read hands the caller a view of
 * the variable's buffer; while the caller holds it, an assignment makes
 * a new buffer, so such a capture fails and the plan stays plain. Counters
 * (tfm_cugraph_counters) prove replays happened without a timing. */
#include "exec_cugraph.h"

#include <stdatomic.h>

#include "exec_impl.h"

static _Atomic int64_t n_capture, n_replay, n_fallback, n_fail, n_yes, n_no;
/* Under the interpreter lock, as every cached call is. */
static int last_ok = -1;
static char last_why[256];

static void
tally(_Atomic int64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void
tfm_cugraph_counters(int64_t out[6])
{
    _Atomic int64_t *c[6] = {&n_capture, &n_replay, &n_fallback, &n_fail,
                             &n_yes, &n_no};
    for (int k = 0; k < 6; k++)
        out[k] = atomic_load_explicit(c[k], memory_order_relaxed);
}

int
tfm_cugraph_last_verdict(char *buf, size_t n)
{
    if (n)
        snprintf(buf, n, "%s", last_why);
    return last_ok;
}

/* 0: off; 1: on, logging every decision; 2: on (the default). */
static int
mode(void)
{
    const char *v = getenv("TFMINI_CUDA_GRAPHS");
    if (!v || !*v)
        return 2;
    if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "false"))
        return 0;
    return strcmp(v, "1") == 0 ? 1 : 2;
}

static int
say_no(char *why, size_t n, const step *st, const char *what)
{
    if (st)
        snprintf(why, n, "node '%s' (%s) %s", st->node->name,
                 tfm_ops[st->node->op].name, what);
    else
        snprintf(why, n, "%s", what);
    return 0;
}

static int
is_input(const tfm_plan *p, int32_t sl)
{
    for (int32_t i = 0; i < p->nin; i++)
        if (p->in_slot[i] == sl)
            return 1;
    return 0;
}

/* The plan constant in slot sl, or NULL. */
static const tfm_tensor *
const_in(const tfm_plan *p, int32_t sl)
{
    for (int32_t c = 0; c < p->nconst; c++)
        if (p->const_slot[c] == sl)
            return p->const_val[c];
    return NULL;
}

static const tfm_meta *
in_meta(const tfm_plan *p, const tfm_node *nd, int i)
{
    return &tfm_graph_node(p->g, nd->in[i].node)->out[nd->in[i].out];
}

static int
is_index_dtype(tfm_dtype d)
{
    return d == TFM_INT32 || d == TFM_INT64;
}

/* Whether nd is a step whose GPU kernel checks indices (Note [Index
 * checks inside a CUDA graph capture], kernels_scatter.c). */
static int
checks_indices(const tfm_node *nd)
{
    switch (nd->op) {
    case TFM_OP_TENSOR_SCATTER_ADD: case TFM_OP_TENSOR_SCATTER_UPDATE:
    case TFM_OP_TENSOR_SCATTER_MIN: case TFM_OP_TENSOR_SCATTER_MAX:
    case TFM_OP_GATHER_ND:
        return 1;
    default:
        return 0;
    }
}

/* Whether the GPU kernel of nd (one of checks_indices') runs the CPU
 * kernel on host copies for these inputs, as the glue in
 * kernels_scatter.c and kernels_index.c decides: those copies wait for
 * the stream, which a capture cannot. (Their index depth, at most the
 * rank, never exceeds what the kernels take.) */
static int
on_host_copies(const tfm_plan *p, const tfm_node *nd)
{
    tfm_dtype d = in_meta(p, nd, 0)->dtype;
    if (!is_index_dtype(in_meta(p, nd, 1)->dtype) || d == TFM_STRING)
        return 1;
    if (nd->op == TFM_OP_GATHER_ND || nd->op == TFM_OP_TENSOR_SCATTER_UPDATE)
        return 0;
    return d != TFM_FLOAT32 && d != TFM_FLOAT64 && !is_index_dtype(d);
}

/* Why step st keeps the plan off a graph (NULL: it does not); *dev is
 * where it runs, 0 for the CPU. */
static const char *
step_blocks(const tfm_plan *p, const step *st, int *dev)
{
    const tfm_node *nd = st->node;
    *dev = nd->device;
    switch (st->kind) {
    case STEP_PRINT:
        return "prints on the host every call";
    case STEP_ASSERT:
        return "reads its condition on the host";
    case STEP_IF:
        return "is a tf.cond whose predicate is read on the host";
    case STEP_WHILE:
        return "is a tf.while_loop whose condition is read on the host";
    case STEP_READ:
        *dev = nd->var->value->device;
        return NULL;
    case STEP_COPY:
        if (!is_input(p, st->in[0]) && !const_in(p, st->in[0]))
            return "copies a value between devices";
        return NULL;
    case STEP_ASSIGN:
        *dev = nd->var->value->device;
        break;
    case STEP_KERNEL:
    case STEP_FUSED: {
        unsigned f = tfm_ops[nd->op].flags;
        if (f & TFM_OPF_RANDOM)
            return "is a random op, whose stream is counted on the host";
        if (f & TFM_OPF_STATEFUL)
            return "has effects outside its outputs";
        for (int k = 0; k < nd->nout; k++)
            if (!tfm_shape_is_known(&nd->out[k].shape))
                return "has an output shape known only from its values";
        if (*dev > 0 && nd->op == TFM_OP_WHERE)
            return "reads its count back on the host, though its output "
                   "shape was known when traced";
        if (*dev > 0 && st->kind == STEP_KERNEL && checks_indices(nd) &&
            on_host_copies(p, nd))
            return "runs on host copies for these dtypes on a GPU";
        if (st->kind == STEP_KERNEL && *dev > 0 &&
            !tfm_kernel_for(nd->op, *dev))
            return "has no kernel on its device";
        break;
    }
    default:
        return "is a step the rule does not know";
    }
    /* A host constant read by a device step (nodes that passes after
     * placement made read them without a _Copy) is moved to the device
     * before the kernel in a plain run; the record gives it the copy. */
    for (int i = 0; *dev > 0 && i < nd->nin; i++) {
        const tfm_tensor *c = const_in(p, st->in[i]);
        if (c && c->device != *dev &&
            (c->device != 0 || c->dtype == TFM_STRING))
            return "reads a constant it cannot have on its device";
    }
    return NULL;
}

int
tfm_cugraph_eligible(const tfm_plan *p, char *why, size_t n)
{
    int dev = 0;
    if (!p->nsteps)
        return say_no(why, n, NULL, "the function runs no step");
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        int d;
        const char *no = step_blocks(p, st, &d);
        if (no)
            return say_no(why, n, st, no);
        if (d <= 0)
            return say_no(why, n, st, "runs on the CPU");
        if (dev && d != dev)
            return say_no(why, n, st, "runs on another device than the "
                          "steps before it");
        dev = d;
    }
    if (!tfm_device_get(dev))
        return say_no(why, n, NULL, "its device is not registered");
    snprintf(why, n, "eligible: %d steps on device %d", (int)p->nsteps, dev);
    return dev;
}

static void
note(const tfm_plan *p, int m, const char *what, const char *why)
{
    if (m == 1 || (tfm_log_placement && tfm_default_device > 0))
        fprintf(stderr, "tfmini: tf.function '%s': CUDA graph %s: %s\n",
                tfm_graph_name(p->g), what, why);
}

#ifdef TFMINI_WITH_CUDA
#include "../kernels/cuda/internal.h"

/* Four drops (changed shapes or variables), then the plan stays plain. */
#define MAX_DROPS 4

struct tfm_cugraph {
    int dev;
    int busy;               /* a capture or replay is under way */
    int warm;               /* a plain call had this signature */
    int drops;
    int nin, nvar, nout, nconst;
    tfm_dtype *dtype;       /* the signature: per input */
    tfm_shape *shape;
    tfm_tensor **in;        /* the graph's inputs (device tensors) */
    tfm_tensor **consts;    /* per plan constant: its device copy, or NULL */
    tfm_tensor **out;       /* the graph's outputs (graph memory) */
    tfm_variable **var;     /* every variable the plan reads or assigns */
    tfm_tensor **snap;      /* their tensors while a capture runs */
    const void **var_data;  /* their data when captured */
    tfm_shape *var_shape;
    /* A plan with a step that checks indices: the flag (device memory,
     * made at the first capture), the variables the graph writes and
     * their bytes as they were before the latest launch. */
    int checks;
    int *flag;
    int nkeep;
    tfm_variable **keep_var;
    tfm_tensor **kept;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

static tfm_gpu *
gpu(const struct tfm_cugraph *r)
{
    return tfm_gpu_of(tfm_device_get(r->dev));
}

static void
drop_all(tfm_tensor **t, int n)
{
    for (int i = 0; t && i < n; i++)
        if (t[i]) {
            tfm_tensor_decref(t[i]);
            t[i] = NULL;
        }
}

/* Lets go of the captured graph and its buffers; the signature stays. */
static void
clear(struct tfm_cugraph *r)
{
    if (r->exec) {
        /* No launch may still read what is freed below. */
        cudaStreamSynchronize(gpu(r)->stream);
    }
    drop_all(r->out, r->nout);
    drop_all(r->in, r->nin);
    drop_all(r->consts, r->nconst);
    drop_all(r->kept, r->nkeep);
    if (r->exec)
        cudaGraphExecDestroy(r->exec);
    if (r->graph)
        cudaGraphDestroy(r->graph);
    r->exec = NULL;
    r->graph = NULL;
    r->warm = 0;
    cudaGetLastError();
}

static void
add_var(tfm_variable **set, int *n, tfm_variable *v)
{
    for (int k = 0; k < *n; k++)
        if (set[k] == v)
            return;
    set[(*n)++] = v;
}

static struct tfm_cugraph *
record_new(const tfm_plan *p, int dev)
{
    struct tfm_cugraph *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t ni = (size_t)p->nin + 1, ns = (size_t)p->nsteps + 1;
    r->dev = dev;
    r->nin = p->nin;
    r->nout = p->nout;
    r->nconst = p->nconst;
    r->dtype = calloc(ni, sizeof *r->dtype);
    r->shape = calloc(ni, sizeof *r->shape);
    r->in = calloc(ni, sizeof *r->in);
    r->consts = calloc((size_t)p->nconst + 1, sizeof *r->consts);
    r->out = calloc((size_t)p->nout + 1, sizeof *r->out);
    r->var = calloc(ns, sizeof *r->var);
    r->snap = calloc(ns, sizeof *r->snap);
    r->var_data = calloc(ns, sizeof *r->var_data);
    r->var_shape = calloc(ns, sizeof *r->var_shape);
    size_t nw = ns;
    for (int32_t s = 0; s < p->nsteps; s++)
        if (p->steps[s].kind == STEP_FUSED)
            nw += (size_t)p->steps[s].node->nout;
    r->keep_var = calloc(nw, sizeof *r->keep_var);
    r->kept = calloc(nw, sizeof *r->kept);
    if (!r->dtype || !r->shape || !r->in || !r->consts || !r->out ||
        !r->var || !r->snap || !r->var_data || !r->var_shape ||
        !r->keep_var || !r->kept) {
        tfm_cugraph_free(&(tfm_plan){.cugraph = r});
        return NULL;
    }
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        if (st->kind == STEP_READ || st->kind == STEP_ASSIGN)
            add_var(r->var, &r->nvar, st->node->var);
        if (st->kind == STEP_KERNEL && checks_indices(st->node))
            r->checks = 1;
    }
    /* Written: by an assignment, or by a fused step straight into the
     * variable's buffer (Note [Fused writes into variables]). */
    for (int32_t s = 0; r->checks && s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        if (st->kind == STEP_ASSIGN)
            add_var(r->keep_var, &r->nkeep, st->node->var);
        for (int k = 0; st->kind == STEP_FUSED && st->into &&
                        k < st->node->nout; k++)
            if (st->into[k])
                add_var(r->keep_var, &r->nkeep, st->into[k]);
    }
    return r;
}

void
tfm_cugraph_free(tfm_plan *p)
{
    struct tfm_cugraph *r = p->cugraph;
    if (!r)
        return;
    clear(r);
    if (r->flag)
        cudaFree(r->flag);
    free(r->keep_var);
    free(r->kept);
    free(r->dtype);
    free(r->shape);
    free(r->in);
    free(r->consts);
    free(r->out);
    free(r->var);
    free(r->snap);
    free(r->var_data);
    free(r->var_shape);
    free(r);
    p->cugraph = NULL;
}

static int
same_signature(const struct tfm_cugraph *r, tfm_tensor *const *in)
{
    for (int i = 0; i < r->nin; i++)
        if (in[i]->dtype != r->dtype[i] ||
            !tfm_shape_equal(&in[i]->shape, &r->shape[i]))
            return 0;
    return 1;
}

static void
set_signature(struct tfm_cugraph *r, tfm_tensor *const *in)
{
    for (int i = 0; i < r->nin; i++) {
        r->dtype[i] = in[i]->dtype;
        r->shape[i] = in[i]->shape;
    }
    r->warm = 1;
}

static int
vars_unchanged(const struct tfm_cugraph *r)
{
    for (int k = 0; k < r->nvar; k++) {
        const tfm_tensor *v = r->var[k]->value;
        if (v->device != r->dev || tfm_tensor_data(v) != r->var_data[k] ||
            !tfm_shape_equal(&v->shape, &r->var_shape[k]))
            return 0;
    }
    return 1;
}

/* What a plain run returns for output slot sl without computing it (a
 * function input or a constant, as they are), else NULL. */
static tfm_tensor *
passed_through(const tfm_plan *p, int32_t sl, tfm_tensor *const *in)
{
    for (int32_t i = 0; i < p->nin; i++)
        if (p->in_slot[i] == sl)
            return in[i];
    for (int32_t c = 0; c < p->nconst; c++)
        if (p->const_slot[c] == sl)
            return p->const_val[c];
    return NULL;
}

/* out[] as fresh copies of the graph's outputs, queued on the stream
 * before any later launch can overwrite them. */
static tfm_code
copy_out(const tfm_plan *p, const struct tfm_cugraph *r,
         tfm_tensor *const *in, tfm_tensor **out)
{
    tfm_code rc = TFM_OK;
    int32_t i;
    for (i = 0; i < p->nout && !rc; i++) {
        tfm_tensor *same = passed_through(p, p->out_slot[i], in);
        const tfm_tensor *g = r->out[i];
        if (same) {
            tfm_tensor_incref(same);
            out[i] = same;
        } else if (!(out[i] = tfm_tensor_new(g->dtype, &g->shape,
                                             g->device)) ||
                   (rc = tfm_tensor_copy_into(out[i], g))) {
            rc = tfm_error_code();
            if (out[i])
                tfm_tensor_decref(out[i]);
            out[i] = NULL;
            break;
        }
    }
    if (rc)
        for (int32_t j = 0; j < i; j++) {
            tfm_tensor_decref(out[j]);
            out[j] = NULL;
        }
    return rc;
}

/* Drops the graph and keeps the plan plain from now on. */
static void
give_up(tfm_plan *p, int m, const char *why)
{
    tally(&n_fail);
    note(p, m, "off", why);
    clear(p->cugraph);
    p->cugraph_ok = -1;
    tfm_error_clear();
}

/* Whether copy endpoint p (memory or array) of a captured copy of kind
 * k is device memory. */
static int
device_side(enum cudaMemcpyKind k, const void *p, cudaArray_t arr)
{
    if (k == cudaMemcpyDeviceToDevice || (!p && arr))
        return 1;
    if (k != cudaMemcpyDefault)
        return 0;               /* to, from or within the host */
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice;
}

/* Whether every copy in a captured graph stays in device memory (0 with
 * why set otherwise). A kernel may queue a copy from host memory without
 * synchronizing (a small value from its own stack, or pinned staging):
 * the graph would replay it from that address on every launch, long
 * after the value is gone, giving wrong numbers silently, so such a
 * graph is never kept. Only a copy node can touch host memory here. */
static int
copies_stay_on_device(cudaGraph_t graph, char *why, size_t n)
{
    size_t count = 0;
    cudaGraphNode_t *nodes = NULL;
    cudaError_t e = cudaGraphGetNodes(graph, NULL, &count);
    if (e == cudaSuccess && count &&
        !(nodes = malloc(count * sizeof *nodes)))
        e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess && count)
        e = cudaGraphGetNodes(graph, nodes, &count);
    for (size_t i = 0; e == cudaSuccess && i < count; i++) {
        enum cudaGraphNodeType t;
        struct cudaMemcpy3DParms c;
        if ((e = cudaGraphNodeGetType(nodes[i], &t)) != cudaSuccess ||
            t != cudaGraphNodeTypeMemcpy ||
            (e = cudaGraphMemcpyNodeGetParams(nodes[i], &c)) != cudaSuccess)
            continue;
        if (!device_side(c.kind, c.srcPtr.ptr, c.srcArray) ||
            !device_side(c.kind, c.dstPtr.ptr, c.dstArray)) {
            snprintf(why, n, "a captured copy (kind %d, %zu bytes) reads or "
                     "writes host memory, which a replay would read again",
                     (int)c.kind, c.extent.width * c.extent.height *
                                      c.extent.depth);
            free(nodes);
            return 0;
        }
    }
    free(nodes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, n, "reading the captured graph's nodes: %s",
                 cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

/* Before a capture of a plan that checks indices: the flag, zeroed on
 * the stream, and room for the written variables' bytes. */
static int
checks_ready(struct tfm_cugraph *r, char *why, size_t n)
{
    cudaError_t e = cudaSuccess;
    if (!r->flag && (e = cudaMalloc((void **)&r->flag, sizeof *r->flag))) {
        r->flag = NULL;
    } else {
        e = cudaMemsetAsync(r->flag, 0, sizeof *r->flag, gpu(r)->stream);
    }
    if (e) {
        cudaGetLastError();
        snprintf(why, n, "the index flag: %s", cudaGetErrorString(e));
        return 0;
    }
    for (int k = 0; k < r->nkeep; k++) {
        const tfm_tensor *v = r->keep_var[k]->value;
        if (!(r->kept[k] = tfm_tensor_new(v->dtype, &v->shape, r->dev))) {
            snprintf(why, n, "room to keep a variable: %s",
                     tfm_error_message());
            return 0;
        }
    }
    return 1;
}

/* Keeps the written variables' bytes (queued before the launch). */
static tfm_code
keep_vars(const struct tfm_cugraph *r)
{
    tfm_code rc = TFM_OK;
    for (int k = 0; k < r->nkeep && !rc; k++)
        rc = tfm_tensor_copy_into(r->kept[k], r->keep_var[k]->value);
    return rc;
}

/* After a launch of a plan that checks indices: 0 when every index was
 * in range; 1 when one was not, with the variables put back and the
 * flag cleared, for the plain run to raise the error; -1 with the error
 * set when reading the flag or putting back failed. */
static int
index_error(const struct tfm_cugraph *r)
{
    cudaStream_t s = gpu(r)->stream;
    int bad = 0;
    cudaError_t e = cudaMemcpyAsync(&bad, r->flag, sizeof bad,
                                    cudaMemcpyDeviceToHost, s);
    if (!e)
        e = cudaStreamSynchronize(s);
    if (!e && bad)
        e = cudaMemsetAsync(r->flag, 0, sizeof *r->flag, s);
    if (e) {
        tfm_gpu_check(e, "reading the CUDA graph's index flag");
        return -1;
    }
    if (!bad)
        return 0;
    for (int k = 0; k < r->nkeep; k++)
        if (tfm_tensor_copy_into(r->keep_var[k]->value, r->kept[k]))
            return -1;
    return 1;
}

/* The end of a launch that succeeded: 1 with *rc the call's result, or
 * 0 (an index out of range, the variables as before the call) for the
 * plain run to raise the error. */
static int
launched(tfm_plan *p, struct tfm_cugraph *r, int m, tfm_tensor *const *in,
         tfm_tensor **out, tfm_code *rc)
{
    if (r->checks) {
        int bad = index_error(r);
        if (bad < 0) {
            *rc = tfm_error_code();
            return 1;
        }
        if (bad) {
            tally(&n_fallback);
            note(p, m, "replayed with an index out of range",
                 "the call runs the plain way for its error");
            return 0;
        }
    }
    *rc = copy_out(p, r, in, out);
    return 1;
}

/* Capture the call, instantiate, launch: 1 with *rc the call's result,
 * or 0 to run it the plain way: the plan marked plain and nothing
 * changed, or (launched()) the graph kept and an index out of range. */
static int
capture(tfm_plan *p, struct tfm_cugraph *r, int m, tfm_tensor *const *in,
        tfm_tensor **out, tfm_code *rc)
{
    tfm_gpu *g = gpu(r);
    tfm_tensor **snap = r->snap;
    char why[400] = "";
    cudaGraph_t graph = NULL;
    cudaError_t e;
    int nsnap = 0, captured = 0;
    for (int i = 0; i < r->nin; i++)
        if (!(r->in[i] = tfm_tensor_new(in[i]->dtype, &in[i]->shape,
                                        r->dev)) ||
            (p->in_slot[i] >= 0 && tfm_tensor_copy_into(r->in[i], in[i]))) {
            snprintf(why, sizeof why, "input copy: %s", tfm_error_message());
            goto fail;
        }
    for (int c = 0; c < r->nconst; c++)
        if (p->const_val[c]->device == 0 &&
            p->const_val[c]->dtype != TFM_STRING &&
            !(r->consts[c] = tfm_tensor_to_device(p->const_val[c], r->dev))) {
            snprintf(why, sizeof why, "constant copy: %s",
                     tfm_error_message());
            goto fail;
        }
    for (; nsnap < r->nvar; nsnap++) {
        tfm_tensor *v = r->var[nsnap]->value;
        tfm_tensor_incref(v);
        snap[nsnap] = v;
        r->var_data[nsnap] = tfm_tensor_data(v);
        r->var_shape[nsnap] = v->shape;
    }
    tfm_gpu_use(g);
    if (r->checks && !checks_ready(r, why, sizeof why))
        goto fail;
    e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        snprintf(why, sizeof why, "cudaStreamBeginCapture: %s",
                 cudaGetErrorString(e));
        goto fail;
    }
    captured = 1;
    tfm_cu_capture_flag(r->checks ? r->flag : NULL);
    tfm_code run = tfm_plan_run_consts(p, r->in, r->nin, r->out, r->consts);
    tfm_cu_capture_flag(NULL);
    if (run)
        snprintf(why, sizeof why, "the captured run failed: %s",
                 tfm_error_message());
    e = cudaStreamEndCapture(g->stream, &graph);
    captured = 0;
    if (run)
        goto fail;
    if (e != cudaSuccess || !graph) {
        snprintf(why, sizeof why, "cudaStreamEndCapture: %s",
                 cudaGetErrorString(e));
        goto fail;
    }
    for (int k = 0; k < nsnap; k++)
        if (r->var[k]->value != snap[k]) {
            snprintf(why, sizeof why, "an assignment gave a variable a new "
                     "buffer while capturing (another tensor held its old "
                     "one)");
            goto fail;
        }
    if (!copies_stay_on_device(graph, why, sizeof why))
        goto fail;
    e = cudaGraphInstantiateWithFlags(&r->exec, graph,
                                      cudaGraphInstantiateFlagAutoFreeOnLaunch);
    if (e != cudaSuccess) {
        r->exec = NULL;
        snprintf(why, sizeof why, "cudaGraphInstantiate: %s",
                 cudaGetErrorString(e));
        goto fail;
    }
    r->graph = graph;
    graph = NULL;
    if (keep_vars(r)) {
        snprintf(why, sizeof why, "keeping the variables: %s",
                 tfm_error_message());
        goto fail;
    }
    e = cudaGraphLaunch(r->exec, g->stream);
    if (e != cudaSuccess) {
        snprintf(why, sizeof why, "cudaGraphLaunch: %s",
                 cudaGetErrorString(e));
        goto fail;
    }
    for (int k = 0; k < nsnap; k++)
        tfm_tensor_decref(snap[k]);
    tally(&n_capture);
    note(p, m, "captured", "the call replays from now on");
    /* The work is done: from here an error is the call's, not a retry. */
    return launched(p, r, m, in, out, rc);
fail:
    if (captured) {
        cudaGraph_t left = NULL;
        cudaStreamEndCapture(g->stream, &left);
        if (left)
            cudaGraphDestroy(left);
    }
    if (graph)
        cudaGraphDestroy(graph);
    /* Nothing ran: each variable gets back the tensor it held, whose
     * bytes no captured assignment ever wrote. */
    for (int k = 0; k < nsnap; k++) {
        tfm_variable *v = r->var[k];
        if (v->value != snap[k]) {
            tfm_tensor_decref(v->value);
            v->value = snap[k];
        } else {
            tfm_tensor_decref(snap[k]);
        }
    }
    give_up(p, m, why);
    return 0;
}

static int
replay(tfm_plan *p, struct tfm_cugraph *r, int m, tfm_tensor *const *in,
       tfm_tensor **out, tfm_code *rc)
{
    for (int i = 0; i < r->nin; i++)
        if (p->in_slot[i] >= 0 && tfm_tensor_copy_into(r->in[i], in[i])) {
            /* Nothing launched yet: the plain run raises it properly. */
            tfm_error_clear();
            tally(&n_fallback);
            return 0;
        }
    if (keep_vars(r)) {
        tfm_error_clear();
        tally(&n_fallback);
        return 0;
    }
    cudaError_t e = cudaGraphLaunch(r->exec, gpu(r)->stream);
    if (e != cudaSuccess) {
        char why[200];
        snprintf(why, sizeof why, "cudaGraphLaunch: %s",
                 cudaGetErrorString(e));
        give_up(p, m, why);
        return 0;
    }
    tally(&n_replay);
    return launched(p, r, m, in, out, rc);
}

static int
call_gpu(tfm_plan *p, int m, tfm_tensor *const *in, int nin,
         tfm_tensor **out, tfm_code *rc)
{
    struct tfm_cugraph *r = p->cugraph;
    /* busy: a call on another thread while a capture's big kernel runs
     * without the interpreter lock; it must not touch the record. */
    if (!r || r->busy || p->busy || nin != p->nin)
        return 0;
    for (int i = 0; i < nin; i++)
        if (tfm_tensor_is_symbolic(in[i]))
            return 0;       /* the plain run raises */
    if (r->exec) {
        int vars = vars_unchanged(r);
        if (vars && same_signature(r, in)) {
            r->busy = 1;
            int done = replay(p, r, m, in, out, rc);
            r->busy = 0;
            return done;
        }
        clear(r);
        tally(&n_fallback);
        if (++r->drops >= MAX_DROPS && m != 1) {
            note(p, m, "off", "its inputs or variables kept changing");
            p->cugraph_ok = -1;
        } else {
            note(p, m, "dropped", vars ? "the input shapes changed"
                                       : "a variable changed its buffer");
        }
        set_signature(r, in);
        return 0;
    }
    if (!r->warm || !same_signature(r, in)) {
        set_signature(r, in);
        return 0;
    }
    r->busy = 1;
    int done = capture(p, r, m, in, out, rc);
    r->busy = 0;
    return done;
}
#else
void
tfm_cugraph_free(tfm_plan *p)
{
    p->cugraph = NULL;
}
#endif

int
tfm_cugraph_call(tfm_plan *p, tfm_tensor *const *in, int nin,
                 tfm_tensor **out, tfm_code *rc)
{
    if (p->cugraph_ok < 0)
        return 0;
    int m = mode();
    if (!m)
        return 0;
    if (!p->cugraph_ok) {
        char why[256];
        int dev = tfm_cugraph_eligible(p, why, sizeof why);
        const tfm_device *d = dev ? tfm_device_get(dev) : NULL;
        last_ok = dev > 0;
        snprintf(last_why, sizeof last_why, "%s", why);
        tally(dev ? &n_yes : &n_no);
#ifdef TFMINI_WITH_CUDA
        if (d && strcmp(d->kind, "GPU") == 0 &&
            !(p->cugraph = record_new(p, dev)))
            snprintf(why, sizeof why, "out of memory for its record");
        else if (d && strcmp(d->kind, "GPU") != 0)
            snprintf(why, sizeof why, "its device is %s, not a GPU",
                     d->kind);
#else
        if (d)
            snprintf(why, sizeof why, "built without CUDA");
#endif
        if (!p->cugraph) {
            p->cugraph_ok = -1;
            if (dev)
                note(p, m, "off", why);
            return 0;
        }
        p->cugraph_ok = 1;
    }
#ifdef TFMINI_WITH_CUDA
    return call_gpu(p, m, in, nin, out, rc);
#else
    (void)in;
    (void)nin;
    (void)out;
    (void)rc;
    return 0;
#endif
}
