/* Building a pass's output graph: see Note [Graph rewrites] and the
 * tfm_rw_* declarations in passes.h. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

int
tfm_node_has_effect(const tfm_node *n)
{
    switch (n->op) {
    case TFM_OP_ASSIGN_VARIABLE:
    case TFM_OP_ASSIGN_ADD_VARIABLE:
    case TFM_OP_ASSIGN_SUB_VARIABLE:
    case TFM_OP_PRINT:
    case TFM_OP_ASSERT:
    case TFM_OP_IF:
    case TFM_OP_WHILE:
        return 1;
    default:
        return (tfm_ops[n->op].flags & TFM_OPF_STATEFUL) != 0 &&
               n->op != TFM_OP_READ_VARIABLE && n->op != TFM_OP_PLACEHOLDER
               && n->op != TFM_OP_CONST;
    }
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

int
tfm_rw_copy(tfm_rw *rw, int k)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    tfm_ref in[TFM_MAX_INPUTS];
    int32_t local[32];
    int32_t *ctrl = n->nctrl <= 32 ? local
                    : malloc(sizeof(int32_t) * (size_t)n->nctrl);
    int nctrl = 0;
    if (!ctrl) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM optimizing a graph");
        return -1;
    }
    for (int i = 0; i < n->nin; i++) {
        in[i] = tfm_rw_ref(rw, n->in[i]);
        if (in[i].node < 0) {
            if (ctrl != local)
                free(ctrl);
            tfm_error(TFM_ERR_INTERNAL, "graph pass: node '%s' lost its "
                      "input %d", n->name, i);
            return -1;
        }
    }
    for (int i = 0; i < n->nctrl; i++) {
        int32_t c = rw->node_map[n->ctrl[i]];
        if (c >= 0)
            ctrl[nctrl++] = c;
    }
    int d = tfm_graph_copy_node(rw->dst, n, in, ctrl, nctrl);
    if (ctrl != local)
        free(ctrl);
    if (d >= 0)
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
