/* Sub-graphs and the control-flow nodes made from them: tf.cond's If,
 * tf.while_loop's While (and a second While over an existing one's
 * sub-graphs, for repeated gradient requests), tf.Assert. The rest of
 * the graph's construction is in graph.c. */
#include "graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sub-graphs and control flow (Note [Sub-graphs]) ---- */

tfm_graph *
tfm_graph_new_sub(tfm_graph *parent, const char *name)
{
    if (!parent || parent->sealed) {
        tfm_error(TFM_ERR_INTERNAL, "a sub-graph needs a graph being "
                  "traced around it");
        return NULL;
    }
    char buf[300];
    snprintf(buf, sizeof buf, "%s/%s", parent->name, name ? name : "sub");
    tfm_graph *g = tfm_graph_new(buf);
    if (g)
        g->parent = parent;
    return g;
}

int
tfm_graph_within(const tfm_graph *g, const tfm_graph *a)
{
    for (; g; g = g->parent)
        if (g == a)
            return 1;
    return 0;
}

static const void *
ref_key(tfm_ref r)
{
    return (const void *)(uintptr_t)((((uint64_t)r.node + 1) << 16) |
                                     (uint64_t)r.out);
}

/* r, a ref in g's parent, as a ref in g (a capture placeholder). */
static tfm_code
capture_from_parent(tfm_graph *g, tfm_ref outer, tfm_ref *r)
{
    ptr_slot *e = tfm_graph_ptr_find(&g->caps, ref_key(outer));
    if (e) {
        r->node = g->cap_node[e->node];
        r->out = 0;
        return TFM_OK;
    }
    const tfm_node *src = &g->parent->nodes[outer.node];
    int node = tfm_graph_placeholder(g, src->out[outer.out].dtype,
                                     &src->out[outer.out].shape, src->name);
    if (node < 0)
        return tfm_error_code();
    if (g->n_cap == g->cap_cap) {
        int32_t cap = g->cap_cap ? g->cap_cap * 2 : 8;
        tfm_ref *o = realloc(g->cap_outer, sizeof *o * (size_t)cap);
        if (o)
            g->cap_outer = o;
        int32_t *n = o ? realloc(g->cap_node, sizeof *n * (size_t)cap)
                       : NULL;
        if (!o || !n)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM capturing");
        g->cap_node = n;
        g->cap_cap = cap;
    }
    e = tfm_graph_ptr_insert(&g->caps, ref_key(outer));
    if (!e)
        return tfm_error_code();
    e->node = g->n_cap;
    g->cap_outer[g->n_cap] = outer;
    g->cap_node[g->n_cap] = node;
    g->n_cap++;
    r->node = node;
    r->out = 0;
    return TFM_OK;
}

static tfm_code
capture_ref(tfm_graph *g, const tfm_graph *owner, tfm_ref ref, tfm_ref *r)
{
    if (g == owner) {
        *r = ref;
        return TFM_OK;
    }
    if (!g->parent)
        return tfm_error(TFM_ERR_INTERNAL, "capture: graph %s is not "
                         "around %s", tfm_graph_name(owner), g->name);
    tfm_ref outer = {-1, 0};    /* set by a successful capture_ref */
    tfm_code rc = capture_ref(g->parent, owner, ref, &outer);
    return rc ? rc : capture_from_parent(g, outer, r);
}

tfm_code
tfm_graph_capture(tfm_graph *g, const tfm_tensor *t, tfm_ref *r)
{
    if (!tfm_tensor_is_symbolic(t) || !t->graph ||
        !tfm_graph_within(g, t->graph))
        return tfm_error(TFM_ERR_INTERNAL, "capture: not a tensor of a "
                         "graph around %s", g->name);
    tfm_ref ref = {t->node, t->out_index};
    return capture_ref(g, t->graph, ref, r);
}

/* The capture index of sub-graph input i, or -1 (an explicit input). */
static int32_t
input_capture(const tfm_graph *sub, int i)
{
    for (int32_t k = 0; k < sub->n_cap; k++)
        if (sub->cap_node[k] == sub->inputs[i])
            return k;
    return -1;
}

/* Add sub's captures to the union u (refs in g); fills map[i] for each
 * of sub's inputs: base + its index in u, or its own index when it is
 * one of the first n_explicit inputs. */
static tfm_code
merge_captures(const tfm_graph *sub, int n_explicit, tfm_ref *u, int *nu,
               int cap, int base, int32_t *map)
{
    for (int i = 0; i < sub->n_inputs; i++) {
        int32_t k = input_capture(sub, i);
        if (i < n_explicit) {
            if (k >= 0)
                return tfm_error(TFM_ERR_INTERNAL, "%s: input %d should "
                                 "be a loop variable", sub->name, i);
            map[i] = i;
            continue;
        }
        if (k < 0)
            return tfm_error(TFM_ERR_INTERNAL, "%s: input %d is neither a "
                             "loop variable nor a capture", sub->name, i);
        tfm_ref o = sub->cap_outer[k];
        int j;
        for (j = 0; j < *nu; j++)
            if (u[j].node == o.node && u[j].out == o.out)
                break;
        if (j == *nu) {
            if (*nu >= cap)
                return tfm_error(TFM_ERR_UNIMPLEMENTED, "control flow "
                                 "capturing more than %d values", cap);
            u[(*nu)++] = o;
        }
        map[i] = base + j;
    }
    return TFM_OK;
}

static tfm_code
check_sub(tfm_graph *g, tfm_graph *sub, const char *what)
{
    if (sub->parent != g || sub->sealed)
        return tfm_error(TFM_ERR_INTERNAL, "%s: %s is not a sub-graph being "
                         "traced in %s", what, sub->name, g->name);
    return TFM_OK;
}

/* Give node its sub-graphs (sealed, owned) and order it as a side
 * effect: what runs inside is not visible from here. */
static int
finish_control(tfm_graph *g, int node, tfm_graph *a, tfm_graph *b,
               int32_t *map_a, int32_t *map_b)
{
    tfm_node *n = &g->nodes[node];
    tfm_graph_seal(a);
    tfm_graph_seal(b);
    tfm_graph_incref(a);
    tfm_graph_incref(b);
    n->sub[0] = a;
    n->sub[1] = b;
    n->submap[0] = map_a;
    n->submap[1] = map_b;
    if (g->last_effect >= 0 &&
        tfm_graph_add_ctrl(g, node, &g->last_effect, 1))
        return -1;
    g->last_effect = node;
    g->last_opaque = node;
    return node;
}

static int32_t *
new_map(tfm_graph *g, const tfm_graph *sub)
{
    return tfm_graph_arena_alloc(g, sizeof(int32_t) *
                                    ((size_t)sub->n_inputs + 1));
}

int
tfm_graph_if(tfm_graph *g, tfm_ref pred, tfm_graph *then_g,
             tfm_graph *else_g)
{
    tfm_ref in[TFM_MAX_INPUTS];
    tfm_meta out[TFM_MAX_OUTPUTS];
    int nu = 0;
    if (check_sub(g, then_g, "If") || check_sub(g, else_g, "If"))
        return -1;
    int nout = then_g->n_outputs;
    if (else_g->n_outputs != nout) {
        tfm_error(TFM_ERR_TYPE, "tf.cond: true_fn returns %d tensors but "
                  "false_fn returns %d", nout, else_g->n_outputs);
        return -1;
    }
    if (nout > TFM_MAX_OUTPUTS) {
        tfm_error(TFM_ERR_UNIMPLEMENTED, "tf.cond: more than %d outputs",
                  TFM_MAX_OUTPUTS);
        return -1;
    }
    for (int k = 0; k < nout; k++) {
        tfm_ref rt = then_g->outputs[k], re = else_g->outputs[k];
        const tfm_meta *a = &then_g->nodes[rt.node].out[rt.out];
        const tfm_meta *b = &else_g->nodes[re.node].out[re.out];
        char sa[128], sb[128];
        if (a->dtype != b->dtype) {
            tfm_error(TFM_ERR_TYPE, "tf.cond: output %d is %s in true_fn "
                      "but %s in false_fn", k, tfm_dtype_name(a->dtype),
                      tfm_dtype_name(b->dtype));
            return -1;
        }
        if (a->shape.ndim != b->shape.ndim) {
            tfm_error(TFM_ERR_VALUE, "tf.cond: output %d has shape %s in "
                      "true_fn but %s in false_fn (tfmini's graphs need "
                      "one rank)", k,
                      tfm_shape_str(&a->shape, sa, sizeof sa),
                      tfm_shape_str(&b->shape, sb, sizeof sb));
            return -1;
        }
        out[k] = *a;
        for (int d = 0; d < a->shape.ndim; d++)
            if (a->shape.dims[d] != b->shape.dims[d])
                out[k].shape.dims[d] = TFM_UNKNOWN_DIM;
    }
    int32_t *map_t = new_map(g, then_g), *map_e = new_map(g, else_g);
    if (!map_t || !map_e)
        return -1;
    in[0] = pred;
    int cap = TFM_MAX_INPUTS - 1;
    if (merge_captures(then_g, 0, in + 1, &nu, cap, 1, map_t) ||
        merge_captures(else_g, 0, in + 1, &nu, cap, 1, map_e))
        return -1;
    int node = tfm_graph_add_node_any(g, TFM_OP_IF, in, 1 + nu, NULL, out,
                                      nout);
    if (node < 0)
        return -1;
    return finish_control(g, node, then_g, else_g, map_t, map_e);
}

int
tfm_graph_while(tfm_graph *g, const tfm_ref *vars, int nvars,
                tfm_graph *cond_g, tfm_graph *body_g,
                const tfm_ref *max_iter)
{
    tfm_ref in[TFM_MAX_INPUTS];
    tfm_meta out[TFM_MAX_OUTPUTS];
    int nu = 0;
    if (check_sub(g, cond_g, "While") || check_sub(g, body_g, "While"))
        return -1;
    if (nvars < 0 || nvars > TFM_MAX_OUTPUTS || nvars >= TFM_MAX_INPUTS - 2
        || cond_g->n_inputs < nvars || body_g->n_inputs < nvars) {
        tfm_error(TFM_ERR_INTERNAL, "While: %d loop variables", nvars);
        return -1;
    }
    if (cond_g->n_outputs != 1 ||
        cond_g->nodes[cond_g->outputs[0].node]
            .out[cond_g->outputs[0].out].dtype != TFM_BOOL) {
        tfm_error(TFM_ERR_TYPE, "tf.while_loop: cond must return one bool "
                  "tensor");
        return -1;
    }
    if (body_g->n_outputs != nvars) {
        tfm_error(TFM_ERR_VALUE, "tf.while_loop: body returns %d tensors "
                  "for %d loop variables", body_g->n_outputs, nvars);
        return -1;
    }
    for (int k = 0; k < nvars; k++) {
        const tfm_meta *want = &body_g->nodes[body_g->inputs[k]].out[0];
        tfm_ref r = body_g->outputs[k];
        const tfm_meta *got = &body_g->nodes[r.node].out[r.out];
        const tfm_meta *init = &g->nodes[vars[k].node].out[vars[k].out];
        if (got->dtype != want->dtype || init->dtype != want->dtype ||
            got->shape.ndim != want->shape.ndim ||
            init->shape.ndim != want->shape.ndim) {
            tfm_error(TFM_ERR_TYPE, "tf.while_loop: loop variable %d "
                      "changes dtype or rank in the body", k);
            return -1;
        }
        out[k] = *want;
        in[k] = vars[k];
    }
    int32_t *map_c = new_map(g, cond_g), *map_b = new_map(g, body_g);
    if (!map_c || !map_b)
        return -1;
    int cap = TFM_MAX_INPUTS - 1 - nvars;   /* one left for max_iter */
    if (merge_captures(cond_g, nvars, in + nvars, &nu, cap, nvars, map_c) ||
        merge_captures(body_g, nvars, in + nvars, &nu, cap, nvars, map_b))
        return -1;
    int nin = nvars + nu;
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = nvars;
    if (max_iter) {
        in[nin++] = *max_iter;
        a.i[1] = 1;
    }
    int node = tfm_graph_add_node_any(g, TFM_OP_WHILE, in, nin, &a, out,
                                      nvars);
    if (node < 0)
        return -1;
    return finish_control(g, node, cond_g, body_g, map_c, map_b);
}

int
tfm_graph_assert(tfm_graph *g, tfm_ref cond, const tfm_ref *data, int ndata,
                 const char *const *texts, int summarize)
{
    tfm_ref in[TFM_MAX_INPUTS];
    if (ndata < 0 || ndata >= TFM_MAX_INPUTS) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.Assert: at most %d tensors",
                  TFM_MAX_INPUTS - 1);
        return -1;
    }
    in[0] = cond;
    for (int i = 0; i < ndata; i++)
        in[i + 1] = data[i];
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[1] = summarize;
    int node = tfm_graph_add_text_node(g, TFM_OP_ASSERT, in, ndata + 1, &a,
                                       texts, ndata + 1);
    if (node >= 0)
        g->last_opaque = node;
    return node;
}

/* Note [While again] in graph.h. */
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
