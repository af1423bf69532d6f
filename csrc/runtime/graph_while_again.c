/* Note [While again] in graph_while_again.h. */
#include "graph_while_again.h"

#include "graph_impl.h"

int
tfm_graph_while_again(tfm_graph *g, int like, const tfm_ref *vars,
                      int nvars)
{
    if (g->sealed || like < 0 || like >= g->n_nodes ||
        g->nodes[like].op != TFM_OP_WHILE) {
        tfm_error(TFM_ERR_INTERNAL, "While again: node %d of %s is not a "
                  "While of a graph being traced", like, g->name);
        return -1;
    }
    /* A copy: adding the node may move g->nodes. */
    tfm_node src = g->nodes[like];
    if (nvars != src.attrs->i[0] || nvars > src.nin) {
        tfm_error(TFM_ERR_INTERNAL, "While again: %d loop variables for a "
                  "While of %d", nvars, (int)src.attrs->i[0]);
        return -1;
    }
    tfm_ref in[TFM_MAX_INPUTS];
    for (int k = 0; k < src.nin; k++) {
        if (k >= nvars) {
            in[k] = src.in[k];          /* captures, maximum_iterations */
            continue;
        }
        if (vars[k].node < 0 || vars[k].node >= g->n_nodes ||
            vars[k].out < 0 || vars[k].out >= g->nodes[vars[k].node].nout) {
            tfm_error(TFM_ERR_INTERNAL, "While again: loop variable %d "
                      "refers to no node output", k);
            return -1;
        }
        const tfm_meta *want = &src.out[k];
        const tfm_meta *got = &g->nodes[vars[k].node].out[vars[k].out];
        if (got->dtype != want->dtype ||
            got->shape.ndim != want->shape.ndim) {
            tfm_error(TFM_ERR_TYPE, "While again: loop variable %d has "
                      "another dtype or rank", k);
            return -1;
        }
        in[k] = vars[k];
    }
    int32_t ctrl = g->last_effect;
    int node = tfm_graph_copy_node(g, &src, in, &ctrl, ctrl >= 0 ? 1 : 0);
    if (node < 0)
        return -1;
    g->last_effect = node;
    g->last_opaque = node;
    return node;
}
