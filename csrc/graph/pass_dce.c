/* Dead-code elimination: keep what an output or a side effect needs.
 *
 * Roots are the graph's outputs and every node with an effect
 * (tfm_node_has_effect); liveness follows data inputs. Control edges
 * only order: an edge to a dropped node (a variable read nobody uses)
 * is dropped with it. Placeholders stay, dead or not: they are the
 * function's inputs. */
#include "passes.h"

#include <stdlib.h>

tfm_graph *
tfm_pass_dce(tfm_graph *g)
{
    int32_t n = tfm_graph_node_count(g);
    uint8_t *live = calloc((size_t)n + 1, 1);
    int32_t *todo = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t ntodo = 0, nlive = 0;
    if (!live || !todo) {
        free(live);
        free(todo);
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in dead-code "
                  "elimination");
        return NULL;
    }
    for (int i = 0; i < tfm_graph_output_count(g); i++) {
        int32_t k = tfm_graph_output(g, i).node;
        if (!live[k]) {
            live[k] = 1;
            todo[ntodo++] = k;
        }
    }
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        if (!live[k] && (tfm_node_has_effect(nd) ||
                         nd->op == TFM_OP_PLACEHOLDER)) {
            live[k] = 1;
            todo[ntodo++] = k;
        }
    }
    while (ntodo) {
        const tfm_node *nd = tfm_graph_node(g, todo[--ntodo]);
        for (int i = 0; i < nd->nin; i++)
            if (!live[nd->in[i].node]) {
                live[nd->in[i].node] = 1;
                todo[ntodo++] = nd->in[i].node;
            }
    }
    free(todo);
    for (int32_t k = 0; k < n; k++)
        nlive += live[k];
    if (nlive == n) {
        free(live);
        tfm_graph_incref(g);
        return g;
    }
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g)) {
        free(live);
        return NULL;
    }
    for (int32_t k = 0; k < n; k++)
        if (live[k] && tfm_rw_copy(&rw, k) < 0) {
            free(live);
            tfm_rw_abort(&rw);
            return NULL;
        }
    free(live);
    return tfm_rw_finish(&rw);
}
