/* The pool gradient pass: in a conv -> relu -> max pool layer's
 * backward,
 *
 *     g  = MaxPoolGrad(x, y, dy)      x: the pool's input (relu output)
 *     dx = ReluGrad(g, x)
 *     db = Sum(dx, axes [0, 1, 2])    the bias gradient (optional)
 *
 * becomes one _FusedMaxPoolGrad(x, y, dy) -> (dx, db) node
 * (kernels/cpu/conv_pool_grad.c): dx written once instead of three
 * passes over it. ReluGrad must read the very tensor MaxPoolGrad pooled
 * (then the routed cell is the window's maximum and its sign decides),
 * and g must have no other reader (uses == 1: a graph output or control
 * edge pins it). dx keeps its other readers (the conv's input and filter
 * gradients); db replaces the first Sum of dx over N, H, W, if any.
 *
 * The forward's Relu is usually inside a _FusedConv2D by now
 * (pass_conv_epilogue.c runs first): nothing here depends on who made
 * x. Nodes of float32 or float64 only, on the CPU or on a device whose
 * kernel table has _FusedMaxPoolGrad (tfm_fuse_on_device), every link
 * on MaxPoolGrad's; under the "epilogue" switch. */
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

/* Whether Sum node s reduces output 0 of node rg over N, H, W to
 * [channels], keepdims off. */
static int
is_bias_sum(const tfm_graph *g, int32_t s, int32_t rg)
{
    const tfm_node *sn = tfm_graph_node(g, s);
    const tfm_node *rn = tfm_graph_node(g, rg);
    if (sn->op != TFM_OP_SUM || sn->nin != 1 || sn->nctrl ||
        sn->in[0].node != rg || sn->in[0].out != 0 || sn->attrs->i[0] ||
        sn->out[0].dtype != rn->out[0].dtype)
        return 0;
    bool red[TFM_MAX_DIMS];
    int bad;
    if (tfm_reduce_mask(4, sn->attrs, red, &bad) != TFM_REDUCE_MASK_OK)
        return 0;
    return red[0] && red[1] && red[2] && !red[3];
}

/* Whether MaxPoolGrad node k starts a match: its ReluGrad into *rg,
 * the bias Sum (or -1) into *sum. */
static int
find(const tfm_graph *g, const int32_t *uses, const int32_t *consumer,
     int32_t k, int32_t *rg, int32_t *sum)
{
    const tfm_node *mp = tfm_graph_node(g, k);
    if (mp->op != TFM_OP_MAX_POOL_GRAD || mp->nout != 1 || mp->nin != 3 ||
        !tfm_fuse_on_device(TFM_OP_FUSED_MAX_POOL_GRAD, mp->device) ||
        mp->out[0].shape.ndim != 4 ||
        (mp->out[0].dtype != TFM_FLOAT32 && mp->out[0].dtype != TFM_FLOAT64)
        || uses[k] != 1 || consumer[k] < 0)
        return 0;
    const tfm_node *rn = tfm_graph_node(g, consumer[k]);
    if (rn->op != TFM_OP_RELU_GRAD || rn->nin != 2 || rn->nctrl ||
        !tfm_same_device(rn->device, mp->device) ||
        rn->in[0].node != k || !same_ref(rn->in[1], mp->in[0]) ||
        rn->out[0].dtype != mp->out[0].dtype ||
        !tfm_shape_equal(&rn->out[0].shape, &mp->out[0].shape))
        return 0;
    *rg = consumer[k];
    *sum = -1;
    int32_t n = tfm_graph_node_count(g);
    for (int32_t s = *rg + 1; s < n && *sum < 0; s++)
        if (is_bias_sum(g, s, *rg) &&
            tfm_same_device(tfm_graph_node(g, s)->device, mp->device))
            *sum = s;
    return 1;
}

static tfm_code
emit(tfm_rw *rw, int32_t k, int32_t rg, int32_t sum)
{
    const tfm_graph *g = rw->src;
    const tfm_node *mp = tfm_graph_node(g, k);
    const tfm_node *rn = tfm_graph_node(g, rg);
    tfm_ref in[3];
    for (int i = 0; i < 3; i++)
        in[i] = tfm_rw_ref(rw, mp->in[i]);
    tfm_meta out[2] = {rn->out[0], {rn->out[0].dtype, {0}}};
    int64_t c = rn->out[0].shape.dims[3];
    out[1].shape = tfm_shape_make(1, &c);
    int d = tfm_rw_add(rw, TFM_OP_FUSED_MAX_POOL_GRAD, in, 3, mp->attrs, out,
                       2, rn->name, mp->site, NULL);
    if (d < 0)
        return tfm_error_code();
    if (mp->device > 0)
        tfm_graph_set_device(rw->dst, d, mp->device);
    tfm_code rc = tfm_rw_copy_ctrl(rw, k, d);
    if (rc)
        return rc;
    tfm_rw_set(rw, rg, d);
    if (sum >= 0)
        tfm_rw_alias(rw, sum, 0, (tfm_ref){d, 1});
    return TFM_OK;
}

/* role >= 0: k is a match's ReluGrad and role its MaxPoolGrad; -2: a
 * match's MaxPoolGrad or Sum, dropped. */
static tfm_code
emit_role(tfm_rw *rw, int32_t k, int32_t role, void *sum_of)
{
    return role >= 0 ? emit(rw, role, k, ((const int32_t *)sum_of)[role])
                     : TFM_OK;
}

tfm_graph *
tfm_pass_pool_grad(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    /* role[k]: -1 copied; -2 dropped (a match's MaxPoolGrad or Sum);
     * else the MaxPoolGrad of the match whose ReluGrad k is. */
    int32_t *role = s.role;
    int32_t *sum_of = malloc(sizeof(int32_t) * ((size_t)n + 1));
    tfm_graph *out = NULL;
    int nm = 0;
    if (!sum_of) {
        tfm_fuse_oom();
        goto done;
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t rg, sum;
        if (role[k] != -1 || !find(g, s.uses, s.consumer, k, &rg, &sum) ||
            role[rg] != -1 || (sum >= 0 && role[sum] != -1))
            continue;
        role[k] = -2;
        role[rg] = k;
        sum_of[k] = sum;
        if (sum >= 0)
            role[sum] = -2;
        nm++;
    }
    out = tfm_fuse_rewrite(g, role, nm, emit_role, sum_of);
done:
    tfm_fuse_scratch_free(&s);
    free(sum_of);
    return out;
}
