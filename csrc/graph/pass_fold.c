/* Constant folding: a node whose inputs are all constants is evaluated
 * once, here, and becomes Const nodes holding its outputs.
 *
 * It runs the same kernels as eager code and the executor
 * (tfm_run_kernel, float16 upcasts included), on the CPU, so a folded
 * value has the bits the executor would have computed. Folding walks
 * the graph in creation order, so chains of constants fold through.
 *
 * What never folds:
 *   - ops with no kernel (Placeholder, Const, ReadVariableOp, the
 *     assigns, PrintV2, If, While, Assert: their values come from
 *     outside the graph or they act on the world), ops flagged stateful
 *     or random (a random op draws anew each run), nodes with control
 *     edges;
 *   - Where whose count is left to run time (Note [Data-dependent
 *     shapes] in exec.c);
 *   - a node any output of which has more than TFM_FOLD_MAX_ELEMENTS
 *     elements: tf.zeros([10000, 10000]) stays a Fill that makes its
 *     400 MB at run time instead of a constant held by the plan for
 *     the function's lifetime. The cap is checked on the inferred
 *     shapes before anything is computed;
 *   - a node whose kernel fails (an out-of-range gather on constants,
 *     say): the error is the program's, so it stays for run time, where
 *     it names the node and the user's line as it did before.
 *
 * Shape, Size and Rank need only their input's shape: they fold when
 * that shape is fully known (Rank: always) and the input is a value
 * that cannot fail to exist (a function input, a constant, a variable
 * read), so no run-time error is skipped along with the input.
 * OnesLike and ZerosLike (what gradients emit: the seed of a loss)
 * likewise fold when their input's shape is known and the input either
 * cannot fail or is still needed by something that is not such a
 * folding op, so it still runs (and raises what it would have).
 *
 * A folded graph output gets an Identity in front (Note [Distinct
 * outputs]): each call still returns a tensor of its own. */
#include "passes.h"

#include <stdlib.h>

#include "../runtime/dispatch.h"

/* 2^16 elements: 256 KiB of float32 per folded output. */
#define TFM_FOLD_MAX_ELEMENTS ((int64_t)1 << 16)

static int
small(const tfm_shape *s)
{
    int64_t n = tfm_shape_numel(s);
    return n >= 0 && n <= TFM_FOLD_MAX_ELEMENTS;
}

static int
may_fold(const tfm_node *n)
{
    unsigned flags = tfm_ops[n->op].flags;
    if (!tfm_ops[n->op].cpu || (flags & (TFM_OPF_STATEFUL | TFM_OPF_RANDOM))
        || tfm_node_has_effect(n) || n->sub[0] || n->nctrl || n->nout < 1)
        return 0;
    if (n->op == TFM_OP_WHERE && n->attrs->i[0] < 0)
        return 0;
    /* Known sizes first: a shape unknown at trace time is checked on the
     * inputs' real shapes below. */
    for (int j = 0; j < n->nout; j++)
        if (tfm_shape_is_known(&n->out[j].shape) && !small(&n->out[j].shape))
            return 0;
    return 1;
}

/* Run n on in[] (concrete, CPU). 1 with out[0..n->nout) new references,
 * 0 (no error set) when it does not fold. */
static int
evaluate(const tfm_node *n, tfm_tensor *const *in, tfm_tensor **out)
{
    tfm_meta meta[TFM_MAX_OUTPUTS];
    int nout = 0;
    if (tfm_infer(n->op, in, n->nin, n->attrs, meta, &nout)) {
        tfm_error_clear();
        return 0;
    }
    if (nout != n->nout)
        return 0;
    for (int j = 0; j < nout; j++)
        if (!small(&meta[j].shape))
            return 0;
    /* The inputs are CPU tensors: with no device scope, or the CPU's,
     * the kernel is the CPU's. (A GPU scope while tracing: left for run
     * time. The scope is not changed here: it is global, and a big
     * kernel runs without the interpreter lock.) */
    if (tfm_device_scope() > 0)
        return 0;
    tfm_code rc = tfm_run_kernel(n->op, in, n->nin, n->attrs, out, &nout);
    if (rc) {
        tfm_error_clear();
        return 0;
    }
    /* A result that does not fit the traced metas would be a bug to
     * keep out of the graph: leave the node to run as traced. */
    int ok = nout == n->nout;
    for (int j = 0; ok && j < nout; j++)
        ok = tfm_meta_admits(&n->out[j], out[j]);
    if (!ok) {
        for (int j = 0; j < nout; j++)
            tfm_tensor_decref(out[j]);
        return 0;
    }
    return 1;
}

/* Shape, Size of an input whose shape is known, Rank of any: 1 with
 * *out a new reference, 0 when not (or on OOM: it surfaces at run
 * time). */
static int
shape_value(const tfm_node *n, const tfm_meta *x, tfm_tensor **out)
{
    const tfm_meta *m = &n->out[0];
    int64_t vals[TFM_MAX_DIMS], count = 1;
    if ((n->op != TFM_OP_RANK && !tfm_shape_is_known(&x->shape)) ||
        !tfm_shape_is_known(&m->shape))
        return 0;
    if (n->op == TFM_OP_SHAPE) {
        count = x->shape.ndim;
        for (int d = 0; d < x->shape.ndim; d++)
            vals[d] = x->shape.dims[d];
    } else {
        vals[0] = n->op == TFM_OP_SIZE ? tfm_shape_numel(&x->shape)
                                       : x->shape.ndim;
    }
    if (tfm_shape_numel(&m->shape) != count ||
        (m->dtype != TFM_INT32 && m->dtype != TFM_INT64))
        return 0;
    for (int64_t k = 0; k < count; k++)
        if (m->dtype == TFM_INT32 && vals[k] > INT32_MAX)
            return 0;           /* the kernel's error, at run time */
    tfm_tensor *t = tfm_tensor_new(m->dtype, &m->shape, 0);
    if (!t) {
        tfm_error_clear();
        return 0;
    }
    for (int64_t k = 0; k < count; k++) {
        if (m->dtype == TFM_INT32)
            ((int32_t *)tfm_tensor_data(t))[k] = (int32_t)vals[k];
        else
            ((int64_t *)tfm_tensor_data(t))[k] = vals[k];
    }
    *out = t;
    return 1;
}

/* A source (Placeholder, Const, a variable read) produces its value
 * without checks that could fail at run time, so a shape read from it
 * may fold. */
static int
cannot_fail(tfm_op op)
{
    return (tfm_ops[op].flags & TFM_OPF_SOURCE) != 0;
}

/* OnesLike/ZerosLike of an input of known shape (see the top): the
 * kernel run on a stand-in of that shape. */
static int
like_value(const tfm_node *n, const tfm_meta *x, int x_stays,
           tfm_tensor **out)
{
    if (!x_stays || !tfm_shape_is_known(&x->shape) || !small(&x->shape))
        return 0;
    tfm_tensor *t = tfm_tensor_new(x->dtype, &x->shape, 0);
    if (!t) {
        tfm_error_clear();
        return 0;
    }
    int folded = evaluate(n, &t, out);
    tfm_tensor_decref(t);
    return folded;
}

/* Fold src node k if it can be: 1 if its outputs are now Consts of
 * dst, 0 if not, -1 on error (building dst). arg: the stays[] of
 * stays_after_likes. */
static int
fold_node(tfm_rw *rw, int k, void *arg)
{
    const uint8_t *stays = arg;
    const tfm_node *n = tfm_graph_node(rw->src, k);
    tfm_tensor *in[TFM_MAX_INPUTS], *out[TFM_MAX_OUTPUTS];
    if (!may_fold(n))
        return 0;
    int folded;
    if ((n->op == TFM_OP_ONES_LIKE || n->op == TFM_OP_ZEROS_LIKE) &&
        n->nin == 1) {
        tfm_ref r = tfm_rw_ref(rw, n->in[0]);
        if (r.node < 0)
            return 0;
        const tfm_node *x = tfm_graph_node(rw->dst, r.node);
        folded = like_value(n, &x->out[r.out],
                            cannot_fail(x->op) || stays[n->in[0].node],
                            out);
    } else if ((n->op == TFM_OP_SHAPE || n->op == TFM_OP_SIZE ||
                n->op == TFM_OP_RANK) && n->nin == 1) {
        tfm_ref r = tfm_rw_ref(rw, n->in[0]);
        if (r.node < 0)
            return 0;
        const tfm_node *x = tfm_graph_node(rw->dst, r.node);
        if (!cannot_fail(x->op))
            return 0;
        folded = shape_value(n, &x->out[r.out], out);
    } else {
        for (int i = 0; i < n->nin; i++) {
            tfm_ref r = tfm_rw_ref(rw, n->in[i]);
            if (r.node < 0)
                return 0;
            const tfm_node *c = tfm_graph_node(rw->dst, r.node);
            if (c->op != TFM_OP_CONST || !c->value ||
                tfm_tensor_is_symbolic(c->value) || c->value->device != 0)
                return 0;
            in[i] = c->value;
        }
        folded = evaluate(n, in, out);
    }
    if (!folded)
        return 0;
    int rc = 1;
    for (int j = 0; j < n->nout; j++) {
        /* The Const keeps the node's name (a second output: name_1, ...)
         * and line, as TF's folding does: the text still reads. */
        int c = rc > 0 ? tfm_rw_add(rw, TFM_OP_CONST, NULL, 0, NULL, NULL,
                                    0, n->name, n->site, out[j]) : -1;
        if (c < 0)
            rc = -1;
        else
            tfm_rw_alias(rw, k, j, (tfm_ref){c, 0});
        tfm_tensor_decref(out[j]);     /* the Const holds its own */
    }
    return rc;
}

/* Whether node n is a OnesLike/ZerosLike that may fold (its input's
 * shape is known): it will not read its input at run time. */
static int
like_of_known(const tfm_graph *g, const tfm_node *n)
{
    if ((n->op != TFM_OP_ONES_LIKE && n->op != TFM_OP_ZEROS_LIKE) ||
        n->nin != 1)
        return 0;
    return tfm_shape_is_known(
        &tfm_graph_node(g, n->in[0].node)->out[n->in[0].out].shape);
}

/* stays[j]: node j of g still runs when every OnesLike/ZerosLike of a
 * known shape has folded: the outputs or a side effect need it other
 * than through those. (Counting readers would not do: two such ops of
 * one value, or one behind an Identity, leave the value dead once they
 * fold.) NULL on OOM. */
static uint8_t *
stays_after_likes(const tfm_graph *g)
{
    uint8_t *stays = calloc((size_t)tfm_graph_node_count(g) + 1, 1);
    if (!stays) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM folding a graph");
        return NULL;
    }
    if (tfm_graph_mark_live(g, g->outputs, g->n_outputs, 1, like_of_known,
                            stays)) {
        free(stays);
        return NULL;
    }
    return stays;
}

tfm_graph *
tfm_pass_fold(tfm_graph *g)
{
    uint8_t *stays = stays_after_likes(g);
    if (!stays)
        return NULL;
    tfm_graph *out = tfm_rw_each_node(g, fold_node, stays);
    free(stays);
    return out;
}
