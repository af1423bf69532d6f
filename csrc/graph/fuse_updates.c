/* Variable updates made fusable: the first step of the fusion pass.
 *
 * Note [Fusable updates]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * An optimizer step traced from Python updates each weight with a few
 * assigns: SGD's v.assign_sub(lr * g); Adam's m.assign(b1*m + ...),
 * s.assign(...), p.assign_sub(lr_t * m / (sqrt(s) + eps)), whose last
 * line reads m and s again after their assigns. Three rewrites let the
 * fusion pass make one node of each weight's update:
 *
 *   expand:  v.assign_sub(x) -> v.assign(read(v) - x)   (assign_add: +)
 *            when x comes from a fusable op read by nothing else and v is
 *            a float variable of x's static shape. The new read is
 *            ordered only after the last node that may write v (an
 *            assign of v, an If or While, a print, whose stream may be
 *            Python code), not after every earlier effect as the assign
 *            was. AssignSub computes v - x with the
 *            Sub kernel: the same numbers.
 *   sink:    a plain assign of a fusable value ("deferred") is emitted
 *            later: just before the first node that must follow it (one
 *            with a control edge to it, an effect, a read of its
 *            variable, or any op that might fail, so a failing op still
 *            sees the variable as the trace order left it), right after
 *            an expanded update (which usually ends a weight's update),
 *            else at the end. Deferred assigns keep their order.
 *   forward: a read of v whose only control edge is a deferred assign of
 *            v (pending or already emitted), with no print or If/While
 *            between them, read only by fusable ops, is that assign's
 *            value. (Read
 *            by anything else, say returned, it stays a read: the value
 *            then keeps one reader, the assign, and can be written in
 *            place.)
 *
 * On Adam's lines this gives m_new, s_new and p - delta computed first,
 * then the three assigns: the fusion pass grows one group from p's
 * subtraction through delta into m_new and s_new, which become extra
 * outputs read by the assigns after it, and the executor writes all
 * three into their variables in place (Note [Fused writes into
 * variables] in exec_plan.c). Only elementwise float ops, constants,
 * placeholders and reads of known shape are moved past, none of which
 * can fail or observe a variable other than through a read. */
#include "passes.h"

#include <stdlib.h>

#include "fused.h"
#include "../runtime/variable.h"

typedef struct upd {
    tfm_rw rw;
    const tfm_graph *g;
    const int32_t *uses;
    uint8_t *to_fusion;    /* src node read only by fusable ops */
    tfm_ref *value;        /* src deferred assign -> dst ref of its value */
    uint8_t *deferred;     /* src node is a deferred assign */
    uint8_t *pending;      /* ... not yet emitted */
    int32_t *queue;        /* pending, in order */
    int32_t nqueue;
} upd;

static int
is_float_var_of(const tfm_variable *var, const tfm_meta *m)
{
    return (m->dtype == TFM_FLOAT32 || m->dtype == TFM_FLOAT64) &&
           var->value->dtype == m->dtype &&
           tfm_shape_is_known(&var->shape) &&
           tfm_shape_equal(&var->shape, &m->shape);
}

static const tfm_meta *
src_meta(const tfm_graph *g, tfm_ref r)
{
    return &tfm_graph_node(g, r.node)->out[r.out];
}

static int
expandable(const upd *u, const tfm_node *n)
{
    if (n->op != TFM_OP_ASSIGN_ADD_VARIABLE &&
        n->op != TFM_OP_ASSIGN_SUB_VARIABLE)
        return 0;
    const tfm_node *x = tfm_graph_node(u->g, n->in[0].node);
    return u->uses[n->in[0].node] == 1 && x->nout == 1 &&
           tfm_fused_can_fuse(u->g, x) &&
           is_float_var_of(n->var, src_meta(u->g, n->in[0]));
}

/* A plain assign of a fusable float value of the variable's shape. */
static int
deferrable(const upd *u, const tfm_node *n)
{
    return n->op == TFM_OP_ASSIGN_VARIABLE &&
           tfm_fused_can_fuse(u->g, tfm_graph_node(u->g, n->in[0].node)) &&
           is_float_var_of(n->var, src_meta(u->g, n->in[0]));
}

/* Nodes a deferred assign may be moved past (see the Note). */
static int
passable(const upd *u, const tfm_node *n)
{
    if (n->op == TFM_OP_CONST || n->op == TFM_OP_PLACEHOLDER)
        return 1;
    if (n->op == TFM_OP_READ_VARIABLE)
        return tfm_shape_is_known(&n->out[0].shape);
    return tfm_fused_can_fuse(u->g, n);
}

static int
needs_pending(const upd *u, const tfm_node *n)
{
    for (int i = 0; i < n->nctrl; i++)
        if (u->pending[n->ctrl[i]])
            return 1;
    for (int32_t q = 0; n->var && q < u->nqueue; q++)
        if (tfm_graph_node(u->g, u->queue[q])->var == n->var)
            return 1;
    return 0;
}

/* The dst assign for deferred src node k, whose value is u->value[k]. */
static tfm_code
emit_assign(upd *u, int k)
{
    const tfm_node *n = tfm_graph_node(u->g, k);
    int as = tfm_rw_add(&u->rw, TFM_OP_ASSIGN_VARIABLE, &u->value[k], 1,
                        NULL, NULL, 0, n->name, n->site, NULL);
    if (as < 0 || tfm_rw_copy_ctrl(&u->rw, k, as))
        return tfm_error_code();
    tfm_graph_node_mut(u->rw.dst, as)->var = n->var;
    tfm_variable_incref(n->var);
    tfm_rw_set(&u->rw, k, as);
    return TFM_OK;
}

static tfm_code
flush(upd *u)
{
    for (int32_t q = 0; q < u->nqueue; q++) {
        int k = u->queue[q];
        u->pending[k] = 0;
        if (emit_assign(u, k))
            return tfm_error_code();
    }
    u->nqueue = 0;
    return TFM_OK;
}

/* The last src node before k that may write var: an assign of it, a
 * node with sub-graphs, a print (its stream may be Python code). -1
 * when none. */
static int
last_writer(const tfm_graph *g, int k, const tfm_variable *var)
{
    for (int j = k - 1; j >= 0; j--) {
        const tfm_node *n = tfm_graph_node(g, j);
        if (n->sub[0] || n->op == TFM_OP_PRINT ||
            (n->var == var && n->op != TFM_OP_READ_VARIABLE))
            return j;
    }
    return -1;
}

/* src node k, an expandable assign: read and Add/Sub now, the assign
 * deferred. */
static tfm_code
expand(upd *u, int k)
{
    const tfm_node *n = tfm_graph_node(u->g, k);
    const tfm_meta *m = src_meta(u->g, n->in[0]);
    int w = last_writer(u->g, k, n->var);
    if (w >= 0 && u->pending[w] && flush(u))
        return tfm_error_code();
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = m->dtype;
    a.n_ints = m->shape.ndim;
    for (int d = 0; d < m->shape.ndim; d++)
        a.ints[d] = m->shape.dims[d];
    int read = tfm_rw_add(&u->rw, TFM_OP_READ_VARIABLE, NULL, 0, &a, m, 1,
                          "ReadVariableOp", n->site, NULL);
    if (read < 0)
        return tfm_error_code();
    if (w >= 0 && u->rw.node_map[w] >= 0 &&
        tfm_graph_add_ctrl(u->rw.dst, read, &u->rw.node_map[w], 1))
        return tfm_error_code();
    tfm_graph_node_mut(u->rw.dst, read)->var = n->var;
    tfm_variable_incref(n->var);
    tfm_ref in[2] = {{read, 0}, tfm_rw_ref(&u->rw, n->in[0])};
    int add = n->op == TFM_OP_ASSIGN_ADD_VARIABLE;
    int op = tfm_rw_add(&u->rw, add ? TFM_OP_ADD : TFM_OP_SUB, in, 2, NULL,
                        m, 1, add ? "add" : "sub", n->site, NULL);
    if (op < 0)
        return tfm_error_code();
    u->value[k] = (tfm_ref){op, 0};
    u->deferred[k] = u->pending[k] = 1;
    u->queue[u->nqueue++] = k;
    /* A weight's assign_sub usually ends its update: the assigns go
     * right after it, next to the fused node (the executor writes them
     * in place only when nothing else runs between). */
    return flush(u);
}

/* No print (whose stream may be Python code assigning the variable a
 * forwarded read would skip) and no If/While between src nodes a and b.
 * (An assign of the same variable between would be the read's control
 * edge instead.) */
static int
no_effect_between(const tfm_graph *g, int a, int b)
{
    for (int j = a + 1; j < b; j++) {
        const tfm_node *n = tfm_graph_node(g, j);
        if (n->op == TFM_OP_PRINT || n->sub[0])
            return 0;
    }
    return 1;
}

/* One src node. */
static tfm_code
step(upd *u, int k)
{
    const tfm_node *n = tfm_graph_node(u->g, k);
    if (n->op == TFM_OP_READ_VARIABLE && n->nctrl == 1 &&
        u->to_fusion[k] && u->deferred[n->ctrl[0]] &&
        tfm_graph_node(u->g, n->ctrl[0])->var == n->var &&
        tfm_shape_is_known(&n->out[0].shape) &&
        no_effect_between(u->g, n->ctrl[0], k)) {
        /* forward: the read is the value the assign stores */
        tfm_rw_alias(&u->rw, k, 0, u->value[n->ctrl[0]]);
        return TFM_OK;
    }
    if (expandable(u, n))
        return expand(u, k);
    if (deferrable(u, n)) {
        u->value[k] = tfm_rw_ref(&u->rw, n->in[0]);
        u->deferred[k] = u->pending[k] = 1;
        u->queue[u->nqueue++] = k;
        return TFM_OK;
    }
    if (u->nqueue && (!passable(u, n) || needs_pending(u, n)) && flush(u))
        return tfm_error_code();
    return tfm_rw_copy(&u->rw, k) < 0 ? tfm_error_code() : TFM_OK;
}

tfm_graph *
tfm_fuse_prepare_updates(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    size_t sz = (size_t)n + 1;
    upd u = {.g = g, .uses = s.uses, .value = malloc(sizeof(tfm_ref) * sz),
             .deferred = calloc(sz, 1), .pending = calloc(sz, 1),
             .queue = malloc(sizeof(int32_t) * sz),
             .to_fusion = malloc(sz)};
    tfm_graph *out = NULL;
    if (!u.value || !u.deferred || !u.pending || !u.queue || !u.to_fusion) {
        tfm_fuse_oom();
        goto done;
    }
    for (int32_t k = 0; k < n; k++)
        u.to_fusion[k] = 1;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        int fusable = tfm_fused_can_fuse(g, nd);
        for (int i = 0; i < nd->nin; i++)
            u.to_fusion[nd->in[i].node] &= (uint8_t)fusable;
    }
    for (int i = 0; i < tfm_graph_output_count(g); i++)
        u.to_fusion[tfm_graph_output(g, i).node] = 0;
    int any = 0;
    for (int32_t k = 0; k < n && !any; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        any = expandable(&u, nd) || deferrable(&u, nd);
    }
    if (!any) {
        tfm_graph_incref(g);
        out = g;
        goto done;
    }
    if (tfm_rw_begin(&u.rw, g))
        goto done;
    for (int32_t k = 0; k < n; k++)
        if (step(&u, k)) {
            tfm_rw_abort(&u.rw);
            goto done;
        }
    if (flush(&u) || tfm_rw_distinct_outputs(&u.rw)) {
        tfm_rw_abort(&u.rw);
        goto done;
    }
    out = tfm_rw_finish(&u.rw);
done:
    tfm_fuse_scratch_free(&s);
    free(u.value);
    free(u.deferred);
    free(u.pending);
    free(u.queue);
    free(u.to_fusion);
    return out;
}
