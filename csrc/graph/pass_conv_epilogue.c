/* The conv epilogue: Conv2D, then its bias add (AddV2 with a vector
 * [out_channels], as tf.nn.bias_add and Keras's Conv2D make it), then
 * optionally a residual AddV2 with a tensor r of the output's shape (a
 * ResNet block's skip connection), then optionally Relu, Relu6 or Elu,
 * becomes one _FusedConv2D(x, f, bias[, r]) node, which oneDNN runs as
 * one primitive with a bias and sum/eltwise post-ops
 * (kernels/cpu/conv_fused.c): no tensor for the pre-bias, pre-residual
 * or pre-activation value, and the output written once. A conv with
 * no bias add (Keras's use_bias=False) whose single reader is the
 * activation becomes _FusedConv2D(x, f) the same way.
 *
 * Gradients stay right because each link must be the only reader of
 * the one before it (uses == 1: a graph output, a control edge or any
 * other reader pins it). In a training graph Relu's and Relu6's
 * gradients read the activation's output, which the fused node still
 * gives, so they fuse; Elu's reads its input too, so there only the
 * bias add joins the conv. The conv's inputs, which its own gradients
 * read, are the fused node's inputs and stay alive; so does r, whose
 * other readers are untouched (the add's gradient reads neither
 * operand).
 *
 * Runs before the matmul epilogue and elementwise fusion (which would
 * otherwise take the bias add into a _FusedElementwise node), on nodes
 * of float32 or float64 only, on the CPU or placed on a device whose
 * kernel table has _FusedConv2D (tfm_fuse_on_device: a GPU with cuDNN),
 * every link on the conv's device. */
#include "passes.h"

#include <stdlib.h>

#include "../kernels/cpu/conv.h"
#include "../core/shape.h"
#include "fused.h"

static int
same_meta(const tfm_meta *a, const tfm_meta *b)
{
    return a->dtype == b->dtype && tfm_shape_equal(&a->shape, &b->shape);
}

static int
activation(tfm_op op)
{
    switch (op) {
    case TFM_OP_RELU: return TFM_CONV_ACT_RELU;
    case TFM_OP_RELU6: return TFM_CONV_ACT_RELU6;
    case TFM_OP_ELU: return TFM_CONV_ACT_ELU;
    default: return -1;
    }
}

/* One match: the conv, its bias add, the residual add and the
 * activation (-1: none; no bias add means no residual add either). */
typedef struct match {
    int32_t conv, add, res_add, act;
    tfm_ref bias, res;
    int code;
} match;

/* When node k is an Add of prev's output 0 (once) and another value,
 * with prev's shape and dtype: that value's meta, its ref in *other;
 * else NULL. */
static const tfm_meta *
add_other(const tfm_graph *g, int32_t prev, int32_t k, tfm_ref *other)
{
    const tfm_node *ad = tfm_graph_node(g, k);
    const tfm_node *pn = tfm_graph_node(g, prev);
    if (ad->op != TFM_OP_ADD || ad->nin != 2 || ad->nctrl ||
        !same_meta(&ad->out[0], &pn->out[0]))
        return NULL;
    int side = ad->in[0].node == prev ? 1 : 0;
    if (ad->in[side].node == prev || ad->in[1 - side].out != 0)
        return NULL;
    *other = ad->in[side];
    return &tfm_graph_node(g, other->node)->out[other->out];
}

/* Whether node k (the bias add's single reader) adds a residual of the
 * same shape and dtype to it; fills m->res_add and m->res. */
static int
find_residual(const tfm_graph *g, int32_t prev, int32_t k, match *m)
{
    tfm_ref res;
    const tfm_meta *rm = add_other(g, prev, k, &res);
    if (!rm || !same_meta(rm, &tfm_graph_node(g, prev)->out[0]))
        return 0;
    m->res_add = k;
    m->res = res;
    return 1;
}

/* Whether conv node k starts a match; fills *m. */
static int
find(const tfm_graph *g, const int32_t *uses, const int32_t *consumer,
     int32_t k, match *m)
{
    const tfm_node *cv = tfm_graph_node(g, k);
    if (cv->op != TFM_OP_CONV2D || cv->nout != 1 ||
        !tfm_fuse_on_device(TFM_OP_FUSED_CONV2D, cv->device) ||
        (cv->out[0].dtype != TFM_FLOAT32 && cv->out[0].dtype != TFM_FLOAT64)
        || cv->out[0].shape.ndim != 4 || uses[k] != 1 || consumer[k] < 0)
        return 0;
    int64_t o = cv->out[0].shape.dims[3];
    const tfm_node *ad = tfm_graph_node(g, consumer[k]);
    if (o < 0)
        return 0;
    m->conv = k;
    m->add = m->act = m->res_add = -1;
    m->bias = (tfm_ref){-1, 0};
    m->code = TFM_CONV_ACT_NONE;
    /* No bias (Keras use_bias=False, tf.nn.relu(tf.nn.conv2d(...))):
     * the activation alone joins the conv. */
    if (activation(ad->op) > 0 && !ad->nctrl && ad->nin == 1 &&
        same_meta(&ad->out[0], &cv->out[0])) {
        m->act = consumer[k];
        m->code = activation(ad->op);
        return 1;
    }
    tfm_ref bias;
    const tfm_meta *bm = add_other(g, k, consumer[k], &bias);
    if (!bm || bm->dtype != cv->out[0].dtype || bm->shape.ndim != 1 ||
        bm->shape.dims[0] != o)
        return 0;
    m->add = consumer[k];
    m->bias = bias;
    int32_t last = m->add;
    if (uses[last] == 1 && consumer[last] >= 0 &&
        find_residual(g, last, consumer[last], m))
        last = m->res_add;
    if (uses[last] == 1 && consumer[last] >= 0) {
        const tfm_node *an = tfm_graph_node(g, consumer[last]);
        int code = activation(an->op);
        if (code > 0 && !an->nctrl && an->nin == 1 &&
            same_meta(&an->out[0], &cv->out[0])) {
            m->act = consumer[last];
            m->code = code;
        }
    }
    /* Placed nodes (a GPU graph): every link where the conv is. */
    int32_t links[3] = {m->add, m->res_add, m->act};
    for (int i = 0; i < 3; i++)
        if (links[i] >= 0 &&
            !tfm_same_device(tfm_graph_node(g, links[i])->device,
                             cv->device))
            return 0;
    return 1;
}

/* The node the fused node stands for: the match's last link. */
static int32_t
last_of(const match *m)
{
    return m->act >= 0 ? m->act : m->res_add >= 0 ? m->res_add : m->add;
}

static tfm_code
emit(tfm_rw *rw, const match *m)
{
    const tfm_graph *g = rw->src;
    const tfm_node *cv = tfm_graph_node(g, m->conv);
    const tfm_node *last = tfm_graph_node(g, last_of(m));
    tfm_ref in[4] = {tfm_rw_ref(rw, cv->in[0]), tfm_rw_ref(rw, cv->in[1]),
                     {0, 0}, {0, 0}};
    int nin = 2;
    if (m->add >= 0)
        in[nin++] = tfm_rw_ref(rw, m->bias);
    if (m->res_add >= 0)
        in[nin++] = tfm_rw_ref(rw, m->res);
    tfm_attrs a = *cv->attrs;
    a.i[1] = m->code;
    int d = tfm_rw_add(rw, TFM_OP_FUSED_CONV2D, in, nin, &a, last->out, 1,
                       last->name, cv->site, NULL);
    if (d < 0)
        return tfm_error_code();
    if (cv->device > 0)
        tfm_graph_set_device(rw->dst, d, cv->device);
    tfm_code rc = tfm_rw_copy_ctrl(rw, m->conv, d);
    if (!rc)
        tfm_rw_set(rw, last_of(m), d);
    return rc;
}

/* The links are dropped; the last emits the node, when the conv's
 * inputs and the bias are all in place. */
static tfm_code
emit_role(tfm_rw *rw, int32_t k, int32_t role, void *ms)
{
    const match *m = &((const match *)ms)[role];
    return k == last_of(m) ? emit(rw, m) : TFM_OK;
}

tfm_graph *
tfm_pass_conv_epilogue(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    int32_t *role = s.role; /* -1, or match index */
    match *ms = malloc(sizeof(match) * ((size_t)n + 1));
    tfm_graph *out = NULL;
    int nm = 0;
    if (!ms) {
        tfm_fuse_oom();
        goto done;
    }
    for (int32_t k = 0; k < n; k++) {
        match m;
        if (role[k] >= 0 || !find(g, s.uses, s.consumer, k, &m) ||
            (m.add >= 0 && role[m.add] >= 0) ||
            (m.act >= 0 && role[m.act] >= 0) ||
            (m.res_add >= 0 && role[m.res_add] >= 0))
            continue;
        role[m.conv] = nm;
        if (m.add >= 0)
            role[m.add] = nm;
        if (m.res_add >= 0)
            role[m.res_add] = nm;
        if (m.act >= 0)
            role[m.act] = nm;
        ms[nm++] = m;
    }
    out = tfm_fuse_rewrite(g, role, nm, emit_role, ms);
done:
    tfm_fuse_scratch_free(&s);
    free(ms);
    return out;
}
