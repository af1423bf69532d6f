/* Building a pass's output graph: see Note [Graph rewrites] and the
 * tfm_rw_* declarations in passes.h. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

int
tfm_node_has_effect(const tfm_node *n)
{
    /* A variable read is stateful (it must not be folded or merged
     * across a write) but has no effect of its own. */
    unsigned f = tfm_ops[n->op].flags;
    return (f & TFM_OPF_STATEFUL) && !(f & TFM_OPF_SOURCE);
}

tfm_code
tfm_graph_mark_live(const tfm_graph *g, const tfm_ref *outs, int nout,
                    int effects, tfm_live_skip_fn no_inputs, uint8_t *live)
{
    int32_t n = tfm_graph_node_count(g), ntodo = 0;
    int32_t *todo = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!todo)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in a graph's "
                         "liveness");
    for (int i = 0; i < nout; i++)
        if (!live[outs[i].node]) {
            live[outs[i].node] = 1;
            todo[ntodo++] = outs[i].node;
        }
    for (int32_t k = 0; effects && k < n; k++)
        if (!live[k] && tfm_node_has_effect(tfm_graph_node(g, k))) {
            live[k] = 1;
            todo[ntodo++] = k;
        }
    while (ntodo) {
        const tfm_node *nd = tfm_graph_node(g, todo[--ntodo]);
        if (no_inputs && no_inputs(g, nd))
            continue;
        for (int i = 0; i < nd->nin; i++)
            if (!live[nd->in[i].node]) {
                live[nd->in[i].node] = 1;
                todo[ntodo++] = nd->in[i].node;
            }
    }
    free(todo);
    return TFM_OK;
}

tfm_code
tfm_rw_begin(tfm_rw *rw, tfm_graph *src)
{
    int32_t n = tfm_graph_node_count(src);
    memset(rw, 0, sizeof *rw);
    rw->src = src;
    rw->base = malloc(sizeof(int32_t) * ((size_t)n + 1));
    rw->node_map = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!rw->base || !rw->node_map)
        goto oom;
    rw->base[0] = 0;
    for (int32_t k = 0; k < n; k++) {
        rw->base[k + 1] = rw->base[k] + tfm_graph_node(src, k)->nout;
        rw->node_map[k] = -1;
    }
    rw->map = malloc(sizeof(tfm_ref) * ((size_t)rw->base[n] + 1));
    if (!rw->map)
        goto oom;
    for (int32_t s = 0; s < rw->base[n]; s++)
        rw->map[s] = (tfm_ref){-1, -1};
    rw->dst = tfm_graph_new(tfm_graph_name(src));
    if (!rw->dst)
        goto fail;
    return TFM_OK;
oom:
    tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing graph %s",
              tfm_graph_name(src));
fail:
    tfm_rw_abort(rw);
    return tfm_error_code();
}

void
tfm_rw_set(tfm_rw *rw, int k, int d)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    rw->node_map[k] = d;
    for (int j = 0; j < n->nout; j++)
        rw->map[rw->base[k] + j] = (tfm_ref){d, j};
}

void
tfm_rw_alias(tfm_rw *rw, int k, int out, tfm_ref r)
{
    rw->map[rw->base[k] + out] = r;
    if (out == 0)
        rw->node_map[k] = r.node;
}

tfm_code
tfm_rw_copy_ctrl(tfm_rw *rw, int k, int d)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    int32_t local[32];
    int32_t *ctrl = n->nctrl <= 32 ? local
                    : malloc(sizeof(int32_t) * (size_t)n->nctrl);
    int nctrl = 0;
    if (!ctrl)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing a "
                         "graph");
    for (int i = 0; i < n->nctrl; i++) {
        int32_t c = rw->node_map[n->ctrl[i]];
        if (c >= 0)
            ctrl[nctrl++] = c;
    }
    tfm_code rc = tfm_graph_add_ctrl(rw->dst, d, ctrl, nctrl);
    if (ctrl != local)
        free(ctrl);
    return rc;
}

int
tfm_rw_copy(tfm_rw *rw, int k)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    tfm_ref in[TFM_MAX_INPUTS];
    for (int i = 0; i < n->nin; i++) {
        in[i] = tfm_rw_ref(rw, n->in[i]);
        if (in[i].node < 0) {
            tfm_error(TFM_ERR_INTERNAL, "graph pass: node '%s' lost its "
                      "input %d", n->name, i);
            return -1;
        }
    }
    int d = tfm_graph_copy_node(rw->dst, n, in, NULL, 0);
    if (d < 0 || tfm_rw_copy_ctrl(rw, k, d))
        return -1;
    tfm_rw_set(rw, k, d);
    return d;
}

static void
rw_free_tables(tfm_rw *rw)
{
    free(rw->base);
    free(rw->map);
    free(rw->node_map);
    rw->base = rw->node_map = NULL;
    rw->map = NULL;
}

tfm_graph *
tfm_rw_finish(tfm_rw *rw)
{
    int nout = tfm_graph_output_count(rw->src);
    tfm_ref local[16];
    tfm_ref *out = nout <= 16 ? local : malloc(sizeof(tfm_ref) *
                                               (size_t)nout);
    if (!out) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing a graph");
        tfm_rw_abort(rw);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        out[i] = tfm_rw_ref(rw, tfm_graph_output(rw->src, i));
        if (out[i].node < 0) {
            tfm_error(TFM_ERR_INTERNAL, "graph pass dropped output %d of "
                      "%s", i, tfm_graph_name(rw->src));
            if (out != local)
                free(out);
            tfm_rw_abort(rw);
            return NULL;
        }
    }
    tfm_code rc = tfm_graph_set_outputs(rw->dst, out, nout);
    if (out != local)
        free(out);
    if (rc) {
        tfm_rw_abort(rw);
        return NULL;
    }
    if (tfm_graph_input_count(rw->dst) != tfm_graph_input_count(rw->src)) {
        tfm_error(TFM_ERR_INTERNAL, "graph pass changed the inputs of %s",
                  tfm_graph_name(rw->src));
        tfm_rw_abort(rw);
        return NULL;
    }
    tfm_graph_seal(rw->dst);
    tfm_graph *g = rw->dst;
    rw->dst = NULL;
    rw_free_tables(rw);
    return g;
}

void
tfm_rw_abort(tfm_rw *rw)
{
    if (rw->dst)
        tfm_graph_decref(rw->dst);
    rw->dst = NULL;
    rw_free_tables(rw);
}

int
tfm_rw_add(tfm_rw *rw, tfm_op op, const tfm_ref *in, int nin,
           const tfm_attrs *a, const tfm_meta *out, int nout,
           const char *name, const char *site, tfm_tensor *value)
{
    tfm_node tmp;
    tfm_attrs ca;
    tfm_meta cm;
    memset(&tmp, 0, sizeof tmp);
    if (op == TFM_OP_CONST) {
        /* As tfm_graph_const: the state ops' infer reads the attrs. */
        tfm_attrs_init(&ca);
        ca.dtype = value->dtype;
        ca.n_ints = value->shape.ndim;
        for (int d = 0; d < value->shape.ndim; d++)
            ca.ints[d] = value->shape.dims[d];
        cm.dtype = value->dtype;
        cm.shape = value->shape;
        a = &ca;
        out = &cm;
        nout = 1;
        tmp.value = value;
    }
    tmp.op = op;
    tmp.nin = nin;
    tmp.nout = nout;
    tmp.device = -1;    /* its inputs' (Note [Device seam]) */
    tmp.out = (tfm_meta *)out;
    tmp.attrs = a;
    tmp.name = name;
    tmp.site = site;
    return tfm_graph_copy_node(rw->dst, &tmp, in, NULL, 0);
}

/* ---- Note [Distinct outputs] ---- */

/* Whether a node's output tensor comes from outside the plan's own
 * computation: the caller's input, a captured constant, a variable. */
static int
carries_identity(tfm_op op)
{
    return (tfm_ops[op].flags & TFM_OPF_SOURCE) != 0;
}

/* Whether dst ref d may stand for src output s without changing what
 * the caller can tell apart (first == -1: no earlier output took d;
 * else the src slot of the earliest one). */
static int
output_keeps_identity(const tfm_rw *rw, tfm_ref s, tfm_ref d, int64_t first)
{
    const tfm_node *sn = tfm_graph_node(rw->src, s.node);
    const tfm_node *dn = tfm_graph_node(rw->dst, d.node);
    int64_t slot = rw->base[s.node] + s.out;
    switch (sn->op) {
    case TFM_OP_PLACEHOLDER:
        return dn->op == TFM_OP_PLACEHOLDER;
    case TFM_OP_CONST:
        return dn->op == TFM_OP_CONST && dn->value == sn->value;
    case TFM_OP_READ_VARIABLE:
        /* Every read carries the variable's id: reads of one variable
         * with no write between are interchangeable. */
        return dn->op == TFM_OP_READ_VARIABLE && dn->var == sn->var;
    default:
        return !carries_identity(dn->op) && (first < 0 || first == slot);
    }
}

tfm_code
tfm_rw_distinct_outputs(tfm_rw *rw)
{
    int nout = tfm_graph_output_count(rw->src);
    int32_t nd = tfm_graph_node_count(rw->dst);
    if (nout == 0)
        return TFM_OK;
    /* dst slot -> src slot of the first output that took it. Nodes the
     * loop below adds are never looked up (each is one output's own). */
    int32_t *dbase = malloc(sizeof(int32_t) * ((size_t)nd + 1));
    if (!dbase)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing a "
                         "graph");
    dbase[0] = 0;
    for (int32_t k = 0; k < nd; k++)
        dbase[k + 1] = dbase[k] + tfm_graph_node(rw->dst, k)->nout;
    int64_t *owner = malloc(sizeof(int64_t) * ((size_t)dbase[nd] + 1));
    if (!owner) {
        free(dbase);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing a "
                         "graph");
    }
    for (int32_t sl = 0; sl < dbase[nd]; sl++)
        owner[sl] = -1;
    tfm_code rc = TFM_OK;
    for (int i = 0; i < nout && !rc; i++) {
        tfm_ref s = tfm_graph_output(rw->src, i);
        tfm_ref d = tfm_rw_ref(rw, s);
        int64_t slot = rw->base[s.node] + s.out;
        if (d.node < 0)
            continue;           /* tfm_rw_finish reports it */
        if (d.node < nd) {
            int64_t first = owner[dbase[d.node] + d.out];
            if (output_keeps_identity(rw, s, d, first)) {
                if (first < 0)
                    owner[dbase[d.node] + d.out] = slot;
                continue;
            }
        } else {
            continue;           /* a copy made for an earlier output */
        }
        const tfm_node *sn = tfm_graph_node(rw->src, s.node);
        /* The new node takes the name the trace gave the output. */
        const tfm_meta *m = &tfm_graph_node(rw->dst, d.node)->out[d.out];
        int k = sn->op == TFM_OP_CONST
                ? tfm_rw_add(rw, TFM_OP_CONST, NULL, 0, NULL, NULL, 0,
                             sn->name, sn->site, sn->value)
                : tfm_rw_add(rw, TFM_OP_IDENTITY, &d, 1, NULL, m, 1,
                             sn->name, sn->site, NULL);
        if (k < 0) {
            rc = tfm_error_code();
            break;
        }
        /* Later outputs of the same src slot (the trace returned one
         * tensor twice) share the copy, as they shared the tensor. */
        tfm_rw_alias(rw, s.node, s.out, (tfm_ref){k, 0});
    }
    free(owner);
    free(dbase);
    return rc;
}

tfm_graph *
tfm_rw_end(tfm_rw *rw, tfm_graph *g, int changed)
{
    if (!changed) {
        tfm_rw_abort(rw);
        tfm_graph_incref(g);
        return g;
    }
    if (tfm_rw_distinct_outputs(rw)) {
        tfm_rw_abort(rw);
        return NULL;
    }
    return tfm_rw_finish(rw);
}

tfm_graph *
tfm_rw_each_node(tfm_graph *g, tfm_rw_node_fn fn, void *arg)
{
    int32_t n = tfm_graph_node_count(g);
    tfm_rw rw;
    int changed = 0;
    if (tfm_rw_begin(&rw, g))
        return NULL;
    for (int32_t k = 0; k < n; k++) {
        int r = fn(&rw, k, arg);
        if (r > 0) {
            changed = 1;
            continue;
        }
        if (r < 0 || tfm_rw_copy(&rw, k) < 0) {
            tfm_rw_abort(&rw);
            return NULL;
        }
    }
    return tfm_rw_end(&rw, g, changed);
}
