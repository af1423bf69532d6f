/* Variable updates made fusable, the first step of the fusion pass:
 *
 *   v.assign_sub(x)  ->  v.assign(read(v) - x)
 *   v.assign_add(x)  ->  v.assign(read(v) + x)
 *
 * when x is computed by a fusable elementwise op read by nothing else,
 * and v is a float variable of x's static shape. The Sub (Add) then
 * joins x's fused group, and the plan lets the compiled group write
 * straight into v (Note [Fused writes into variables] in exec.c): an
 * SGD or Adam step updates each weight in one pass over memory instead
 * of computing x and then running the in-place AssignSub kernel. The
 * numbers are the same: AssignSub computes v - x with the Sub kernel.
 *
 * The new read and assign take the old assign's control edges: the read
 * then runs after every effect before it (so it sees the value the
 * assign would have updated) and the assign after every read of v it
 * must not overtake; later nodes ordered after the old assign are
 * ordered after the new one (it takes the old node's place). */
#include "passes.h"

#include <stdlib.h>

#include "fused.h"
#include "../runtime/variable.h"

static int
expandable(const tfm_graph *g, const tfm_node *n, const int32_t *uses)
{
    if (n->op != TFM_OP_ASSIGN_ADD_VARIABLE &&
        n->op != TFM_OP_ASSIGN_SUB_VARIABLE)
        return 0;
    const tfm_node *x = tfm_graph_node(g, n->in[0].node);
    const tfm_meta *m = &x->out[n->in[0].out];
    const tfm_tensor *v = n->var->value;
    return uses[n->in[0].node] == 1 && x->nout == 1 &&
           tfm_fused_can_fuse(g, x) && m->dtype == v->dtype &&
           tfm_shape_is_known(&n->var->shape) &&
           tfm_shape_equal(&n->var->shape, &m->shape);
}

/* src node k, an expandable assign, as read, Add/Sub and assign. */
static tfm_code
expand(tfm_rw *rw, int k)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    const tfm_meta *m =
        &tfm_graph_node(rw->src, n->in[0].node)->out[n->in[0].out];
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = m->dtype;
    a.n_ints = m->shape.ndim;
    for (int d = 0; d < m->shape.ndim; d++)
        a.ints[d] = m->shape.dims[d];
    int read = tfm_rw_add(rw, TFM_OP_READ_VARIABLE, NULL, 0, &a, m, 1,
                          "ReadVariableOp", n->site, NULL);
    if (read < 0 || tfm_rw_copy_ctrl(rw, k, read))
        return tfm_error_code();
    tfm_graph_node_mut(rw->dst, read)->var = n->var;
    tfm_variable_incref(n->var);
    tfm_ref in[2] = {{read, 0}, tfm_rw_ref(rw, n->in[0])};
    int add = n->op == TFM_OP_ASSIGN_ADD_VARIABLE;
    int op = tfm_rw_add(rw, add ? TFM_OP_ADD : TFM_OP_SUB, in, 2, NULL, m,
                        1, add ? "add" : "sub", n->site, NULL);
    if (op < 0)
        return tfm_error_code();
    tfm_ref val = {op, 0};
    int as = tfm_rw_add(rw, TFM_OP_ASSIGN_VARIABLE, &val, 1, NULL, NULL, 0,
                        n->name, n->site, NULL);
    if (as < 0 || tfm_rw_copy_ctrl(rw, k, as))
        return tfm_error_code();
    tfm_graph_node_mut(rw->dst, as)->var = n->var;
    tfm_variable_incref(n->var);
    tfm_rw_set(rw, k, as);
    return TFM_OK;
}

tfm_graph *
tfm_fuse_prepare_updates(tfm_graph *g)
{
    int32_t n = tfm_graph_node_count(g);
    int32_t *uses = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *consumer = malloc(sizeof(int32_t) * ((size_t)n + 1));
    tfm_graph *out = NULL;
    if (!uses || !consumer) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM fusing a graph");
        goto done;
    }
    tfm_fused_uses(g, uses, consumer);
    int any = 0;
    for (int32_t k = 0; k < n && !any; k++)
        any = expandable(g, tfm_graph_node(g, k), uses);
    if (!any) {
        tfm_graph_incref(g);
        out = g;
        goto done;
    }
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g))
        goto done;
    for (int32_t k = 0; k < n; k++) {
        tfm_code rc = expandable(g, tfm_graph_node(g, k), uses)
                      ? expand(&rw, k) : tfm_rw_copy(&rw, k) < 0;
        if (rc) {
            tfm_rw_abort(&rw);
            goto done;
        }
    }
    out = tfm_rw_finish(&rw);
done:
    free(uses);
    free(consumer);
    return out;
}
