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
    int32_t nlive = 0;
    if (!live) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in dead-code "
                  "elimination");
        return NULL;
    }
    if (tfm_graph_mark_live(g, g->outputs, g->n_outputs, 1, NULL, live)) {
        free(live);
        return NULL;
    }
    for (int32_t k = 0; k < n; k++)       /* inputs are kept, dead or not */
        live[k] |= tfm_graph_node(g, k)->op == TFM_OP_PLACEHOLDER;
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
