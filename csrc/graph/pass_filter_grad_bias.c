/* The filter-gradient pass: in a conv layer's backward,
 *
 *     df = Conv2DBackpropFilter(x, f, dy)
 *     db = Sum(dy, axes [0, 1, 2])        the bias gradient
 *
 * become one _Conv2DBackpropFilterBias(x, f, dy) -> (df, db) node
 * (kernels/cpu/conv_filter_grad_bias.c), whose window kernel sums dy's
 * blocks while they are in cache: one read of dy fewer (8 MB per conv
 * in the ResNet block's step). dy's other readers (the input gradient)
 * are untouched. Only a Sum that is exactly the bias gradient matches
 * (keepdims off, axes N, H, W, same dtype); Mean, keepdims or other
 * axes stay separate ops.
 *
 * The fused node takes the place of whichever of the two comes first,
 * so readers of either output between them see it; that needs the
 * filter gradient's inputs to exist there, else no match. Runs after
 * the pool gradient pass (pass_pool_grad.c), which takes the bias Sum
 * of a conv -> relu -> max pool layer into its own node first. CPU
 * nodes of float32 or float64 only; under the "epilogue" switch. */
#include "passes.h"

#include <stdlib.h>

#include "../core/shape.h"
#include "../kernels/cpu/reduce.h"
#include "fused.h"

static int
same_ref(tfm_ref a, tfm_ref b)
{
    return a.node == b.node && a.out == b.out;
}

/* Whether node s sums dy (rank 4) over N, H, W to [channels],
 * keepdims off, on the CPU. */
static int
is_bias_sum(const tfm_graph *g, int32_t s, tfm_ref dy)
{
    const tfm_node *sn = tfm_graph_node(g, s);
    const tfm_meta *dm = &tfm_graph_node(g, dy.node)->out[dy.out];
    if (sn->op != TFM_OP_SUM || sn->nin != 1 || sn->nctrl ||
        sn->device > 0 || !same_ref(sn->in[0], dy) || sn->attrs->i[0] ||
        sn->out[0].dtype != dm->dtype || dm->shape.ndim != 4)
        return 0;
    bool red[TFM_MAX_DIMS];
    int bad;
    if (tfm_reduce_mask(4, sn->attrs, red, &bad) != TFM_REDUCE_MASK_OK)
        return 0;
    return red[0] && red[1] && red[2] && !red[3];
}

/* Whether filter-gradient node k has a bias Sum of its dy that can
 * join it: that Sum into *sum. */
static int
find(const tfm_graph *g, const int32_t *role, int32_t k, int32_t *sum)
{
    const tfm_node *fg = tfm_graph_node(g, k);
    if (fg->op != TFM_OP_CONV2D_BACKPROP_FILTER || fg->nout != 1 ||
        (fg->nin != 2 && fg->nin != 3) || fg->nctrl || fg->device > 0 ||
        (fg->out[0].dtype != TFM_FLOAT32 && fg->out[0].dtype != TFM_FLOAT64)
        || fg->out[0].shape.ndim != 4)
        return 0;
    tfm_ref dy = fg->in[fg->nin - 1];
    int32_t n = tfm_graph_node_count(g);
    for (int32_t s = dy.node + 1; s < n; s++) {
        if (s == k || role[s] != -1 || !is_bias_sum(g, s, dy))
            continue;
        /* the fused node stands at min(s, k): k's inputs must be there */
        for (int i = 0; i < fg->nin; i++)
            if (fg->in[i].node >= s)
                return 0;
        *sum = s;
        return 1;
    }
    return 0;
}

typedef struct match {
    int32_t fg, sum;
} match;

static tfm_code
emit(tfm_rw *rw, const match *m)
{
    const tfm_graph *g = rw->src;
    const tfm_node *fg = tfm_graph_node(g, m->fg);
    const tfm_node *sn = tfm_graph_node(g, m->sum);
    tfm_ref in[3];
    for (int i = 0; i < fg->nin; i++)
        in[i] = tfm_rw_ref(rw, fg->in[i]);
    tfm_meta out[2] = {fg->out[0], sn->out[0]};
    int d = tfm_rw_add(rw, TFM_OP_CONV2D_BACKPROP_FILTER_BIAS, in, fg->nin,
                       fg->attrs, out, 2, fg->name, fg->site, NULL);
    if (d < 0)
        return tfm_error_code();
    tfm_rw_alias(rw, m->fg, 0, (tfm_ref){d, 0});
    tfm_rw_alias(rw, m->sum, 0, (tfm_ref){d, 1});
    return TFM_OK;
}

/* role >= 0: the match's first node, which emits it; -2: its second,
 * dropped (both outputs are mapped by then). */
static tfm_code
emit_role(tfm_rw *rw, int32_t k, int32_t role, void *ms)
{
    (void)k;
    return role >= 0 ? emit(rw, &((const match *)ms)[role]) : TFM_OK;
}

tfm_graph *
tfm_pass_filter_grad_bias(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    int32_t *role = s.role;
    match *ms = malloc(sizeof(match) * ((size_t)n + 1));
    tfm_graph *out = NULL;
    int nm = 0;
    if (!ms) {
        tfm_fuse_oom();
        goto done;
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t sum;
        if (role[k] != -1 || !find(g, role, k, &sum))
            continue;
        role[k < sum ? k : sum] = nm;
        role[k < sum ? sum : k] = -2;
        ms[nm++] = (match){k, sum};
    }
    out = tfm_fuse_rewrite(g, role, nm, emit_role, ms);
done:
    tfm_fuse_scratch_free(&s);
    free(ms);
    return out;
}
