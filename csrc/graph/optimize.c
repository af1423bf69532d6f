/* The pass pipeline (passes.h). */
#include "passes.h"

#include <stdlib.h>

const char *const tfm_pass_names[TFM_PASS_COUNT] = {
    "arithmetic", "constant_folding", "cse", "dce", "epilogue", "fusion",
    "memory", "native",
};

unsigned tfm_passes_enabled = TFM_PASS_ALL;

/* Pipeline order: simplification exposes constants and duplicates;
 * folding and CSE shrink the graph; DCE drops what they orphaned; the
 * matmul epilogue claims its bias and activation before elementwise
 * fusion groups what is left. The memory plan is the executor's. */
static const struct {
    unsigned bit;
    tfm_pass_fn fn;
} pipeline[] = {
    {TFM_PASS_SIMPLIFY, tfm_pass_simplify},
    {TFM_PASS_FOLD, tfm_pass_fold},
    {TFM_PASS_CSE, tfm_pass_cse},
    {TFM_PASS_SIMPLIFY, tfm_pass_simplify},
    {TFM_PASS_DCE, tfm_pass_dce},
    {TFM_PASS_EPILOGUE, tfm_pass_conv_epilogue},
    {TFM_PASS_EPILOGUE, tfm_pass_epilogue},
    {TFM_PASS_EPILOGUE, tfm_pass_pool_grad},
    {TFM_PASS_EPILOGUE, tfm_pass_filter_grad_bias},
    {TFM_PASS_FUSE, tfm_pass_fuse},
    {TFM_PASS_DCE, tfm_pass_dce},
};

/* g with each If/While's sub-graphs optimized in turn (g itself, with a
 * new reference, when it has none). */
static tfm_graph *
optimize_subgraphs(tfm_graph *g, unsigned passes)
{
    int32_t n = tfm_graph_node_count(g);
    int any = 0;
    for (int32_t k = 0; k < n && !any; k++)
        any = tfm_graph_node(g, k)->sub[0] != NULL;
    if (!any) {
        tfm_graph_incref(g);
        return g;
    }
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g))
        return NULL;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        int d = tfm_rw_copy(&rw, k);
        if (d < 0)
            goto fail;
        for (int b = 0; b < 2; b++) {
            if (!nd->sub[b])
                continue;
            tfm_graph *sub = tfm_graph_optimize(nd->sub[b], passes);
            if (!sub)
                goto fail;
            tfm_node *dn = tfm_graph_node_mut(rw.dst, d);
            tfm_graph_decref(dn->sub[b]);
            dn->sub[b] = sub;
        }
    }
    return tfm_rw_finish(&rw);
fail:
    tfm_rw_abort(&rw);
    return NULL;
}

tfm_graph *
tfm_graph_optimize(tfm_graph *g, unsigned passes)
{
    tfm_graph *sub = optimize_subgraphs(g, passes);
    if (!sub)
        return NULL;
    /* Placement first: the passes after it keep its copies (see
     * pass_place.c). */
    tfm_graph *cur = tfm_pass_place(sub);
    tfm_graph_decref(sub);
    if (!cur)
        return NULL;
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++) {
        if (!(passes & pipeline[i].bit))
            continue;
        tfm_graph *next = pipeline[i].fn(cur);
        tfm_graph_decref(cur);
        if (!next)
            return NULL;
        cur = next;
    }
    return cur;
}
