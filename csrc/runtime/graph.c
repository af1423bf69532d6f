#include "graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "variable.h"

/* Note [Symbolic tensor lifetime]: a symbolic tensor points at its graph
 * without holding a reference (tensors live in csrc/core, which knows no
 * graphs). The graph instead holds a reference on every symbolic tensor
 * it made. When the trace ends (seal), it drops the tensors nobody else
 * holds; when the graph is freed, the tensors still alive (leaked through
 * a Python global, say) are pointed at tfm_graph_dead, so using one later
 * is a clear error instead of a dangling pointer. */
tfm_graph tfm_graph_dead;

/* Note [Side-effect order]: the executor runs nodes in creation order,
 * which is program order. So that passes may reorder or delete nodes,
 * the graph also records that order as control edges: a variable read
 * waits for the last assign to that variable; an assign waits for the
 * previous side effect and for the reads of its variable made since its
 * last assign; a print waits for the previous side effect. */

static int64_t live_graphs;
static tfm_attrs default_attrs;
static int default_attrs_ready;

/* ---- arena: node arrays, names and attributes live as long as the
 * graph, so they come from a few big blocks freed together ---- */

static void *
arena_alloc(tfm_graph *g, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk *c = g->arena;
    if (!c || c->used + n > c->cap) {
        size_t cap = n > 16384 ? n : 16384;
        c = malloc(sizeof(chunk) + cap);
        if (!c) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM building a graph");
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        c->next = g->arena;
        g->arena = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static char *
arena_strdup(tfm_graph *g, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(g, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void *
tfm_graph_arena_alloc(tfm_graph *g, size_t n)
{
    return arena_alloc(g, n);
}

/* ---- unique names ---- */

static uint64_t
hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

static name_slot *
name_find(tfm_graph *g, const char *s, uint64_t h)
{
    if (!g->names_cap)
        return NULL;
    uint32_t mask = g->names_cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        name_slot *e = &g->names[i];
        if (!e->name)
            return NULL;
        if (e->hash == h && strcmp(e->name, s) == 0)
            return e;
    }
}

static tfm_code
name_insert(tfm_graph *g, const char *s, uint64_t h)
{
    if ((g->names_n + 1) * 2 > g->names_cap) {
        uint32_t cap = g->names_cap ? g->names_cap * 2 : 64;
        name_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM naming "
                             "graph nodes");
        for (uint32_t k = 0; k < g->names_cap; k++) {
            name_slot *e = &g->names[k];
            if (!e->name)
                continue;
            uint32_t i = (uint32_t)e->hash & (cap - 1);
            while (t[i].name)
                i = (i + 1) & (cap - 1);
            t[i] = *e;
        }
        free(g->names);
        g->names = t;
        g->names_cap = cap;
    }
    uint32_t mask = g->names_cap - 1, i = (uint32_t)h & mask;
    while (g->names[i].name)
        i = (i + 1) & mask;
    g->names[i].name = s;
    g->names[i].hash = h;
    g->names[i].next = 1;
    g->names_n++;
    return TFM_OK;
}

/* base, base_1, base_2, ...: the first not yet taken (TF's scheme). */
static const char *
unique_name(tfm_graph *g, const char *base)
{
    uint64_t h = hash_str(base);
    name_slot *e = name_find(g, base, h);
    if (!e) {
        char *s = arena_strdup(g, base);
        if (!s || name_insert(g, s, h))
            return NULL;
        return s;
    }
    size_t len = strlen(base);
    char buf[320];
    if (len + 12 > sizeof buf) {
        tfm_error(TFM_ERR_VALUE, "graph node name '%.40s...' is too long",
                  base);
        return NULL;
    }
    memcpy(buf, base, len);
    buf[len] = '_';
    for (;;) {
        e = name_find(g, base, h);    /* the table may have moved */
        uint32_t k = (uint32_t)e->next++;
        /* base_k, without printf: this runs once per traced op. */
        char digits[11];
        int nd = 0;
        do {
            digits[nd++] = (char)('0' + k % 10);
            k /= 10;
        } while (k);
        for (int i = 0; i < nd; i++)
            buf[len + 1 + i] = digits[nd - 1 - i];
        buf[len + 1 + nd] = '\0';
        uint64_t hk = hash_str(buf);
        if (name_find(g, buf, hk))
            continue;
        char *s = arena_strdup(g, buf);
        if (!s || name_insert(g, s, hk))
            return NULL;
        return s;
    }
}

/* The name TF gives an op made by the Python operators. */
static const char *
default_name(tfm_op op)
{
    switch (op) {
    case TFM_OP_ADD: return "add";
    case TFM_OP_SUB: return "sub";
    case TFM_OP_MUL: return "mul";
    case TFM_OP_DIV: return "truediv";
    case TFM_OP_FLOORDIV: return "floordiv";
    case TFM_OP_FLOORMOD: return "mod";
    case TFM_OP_POW: return "pow";
    default: return tfm_ops[op].name;
    }
}

/* ---- pointer maps: captured constants and variables ---- */

/* Allocations are aligned and evenly spaced: mix all the bits so that the
 * low ones (the slot) differ. */
static uint32_t
ptr_hash(const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ULL;
    return (uint32_t)(h >> 32);
}

static ptr_slot *
ptr_find(ptr_map *m, const void *key)
{
    if (!m->cap)
        return NULL;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = ptr_hash(key) & mask;; i = (i + 1) & mask) {
        if (!m->slots[i].key)
            return NULL;
        if (m->slots[i].key == key)
            return &m->slots[i];
    }
}

static ptr_slot *
ptr_insert(ptr_map *m, const void *key)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 16;
        ptr_slot *t = calloc(cap, sizeof *t);
        if (!t) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM building a graph");
            return NULL;
        }
        ptr_map nm = {t, cap, 0};
        for (uint32_t k = 0; k < m->cap; k++)
            if (m->slots[k].key) {
                ptr_slot *e = ptr_insert(&nm, m->slots[k].key);
                *e = m->slots[k];
            }
        free(m->slots);
        *m = nm;
    }
    uint32_t mask = m->cap - 1;
    uint32_t i = ptr_hash(key) & mask;
    while (m->slots[i].key)
        i = (i + 1) & mask;
    ptr_slot *e = &m->slots[i];
    memset(e, 0, sizeof *e);
    e->key = key;
    e->node = -1;
    m->n++;
    return e;
}

static void
ptr_map_free(ptr_map *m)
{
    for (uint32_t k = 0; k < m->cap; k++)
        free(m->slots[k].reads);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* ---- the graph ---- */

tfm_graph *
tfm_graph_new(const char *name)
{
    if (!default_attrs_ready) {
        tfm_attrs_init(&default_attrs);
        default_attrs_ready = 1;
    }
    tfm_graph *g = calloc(1, sizeof *g);
    if (!g) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM making a graph");
        return NULL;
    }
    g->refcount = 1;
    g->last_effect = -1;
    g->last_opaque = -1;
    g->name = strdup(name ? name : "graph");
    if (!g->name) {
        free(g);
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM making a graph");
        return NULL;
    }
    live_graphs++;
    return g;
}

void
tfm_graph_incref(tfm_graph *g)
{
    g->refcount++;
}

static void
release_tracked(tfm_graph *g, int all)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < g->n_sym; i++) {
        tfm_tensor *t = g->sym[i];
        if (t->refcount == 1 || all) {
            if (all && t->refcount > 1)
                t->graph = &tfm_graph_dead;
            tfm_tensor_decref(t);
        } else {
            g->sym[kept++] = t;
        }
    }
    g->n_sym = kept;
}

void
tfm_graph_decref(tfm_graph *g)
{
    if (g == &tfm_graph_dead || --g->refcount > 0)
        return;
    release_tracked(g, 1);
    free(g->sym);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        tfm_node *n = &g->nodes[i];
        if (n->value)
            tfm_tensor_decref(n->value);
        if (n->var)
            tfm_variable_decref(n->var);
        for (int b = 0; b < 2; b++)
            if (n->sub[b])
                tfm_graph_decref(n->sub[b]);
    }
    free(g->nodes);
    free(g->cap_outer);
    free(g->cap_node);
    ptr_map_free(&g->caps);
    free(g->inputs);
    free(g->outputs);
    free(g->names);
    ptr_map_free(&g->consts);
    ptr_map_free(&g->vars);
    while (g->arena) {
        chunk *c = g->arena;
        g->arena = c->next;
        free(c);
    }
    free(g->name);
    free(g);
    live_graphs--;
}

int64_t
tfm_graph_live_count(void)
{
    return live_graphs;
}

const char *
tfm_graph_name(const tfm_graph *g)
{
    if (!g)
        return "<no graph>";
    return g == &tfm_graph_dead ? "<freed>" : g->name;
}

int
tfm_graph_node_count(const tfm_graph *g)
{
    return g->n_nodes;
}

const tfm_node *
tfm_graph_node(const tfm_graph *g, int i)
{
    return &g->nodes[i];
}

int
tfm_graph_sealed(const tfm_graph *g)
{
    return g->sealed;
}

static int
attrs_are_default(const tfm_attrs *a)
{
    if (a->n_ints || a->dtype != TFM_FLOAT32)
        return 0;
    for (int k = 0; k < 6; k++)
        if (a->i[k])
            return 0;
    for (int k = 0; k < 4; k++)
        if (a->f[k] != 0)
            return 0;
    return 1;
}

static int
add_node(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
         const tfm_attrs *attrs, const tfm_meta *out, int nout);

int
tfm_graph_add_node(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
                   const tfm_attrs *attrs, const tfm_meta *out, int nout)
{
    /* Graph-only ops need their payload: state ops are made by their own
     * functions, fused ops by the optimizer. */
    if ((unsigned)op >= TFM_OP_COUNT ||
        (tfm_ops[op].flags & TFM_OPF_GRAPH_ONLY)) {
        tfm_error(TFM_ERR_INTERNAL, "tfm_graph_add_node: op %d is made "
                  "with its own tfm_graph_* function", (int)op);
        return -1;
    }
    return add_node(g, op, in, nin, attrs, out, nout);
}

static int
add_node_named(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
               const tfm_attrs *attrs, const tfm_meta *out, int nout,
               const char *base);

static int
add_node(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
         const tfm_attrs *attrs, const tfm_meta *out, int nout)
{
    return add_node_named(g, op, in, nin, attrs, out, nout,
                          default_name(op));
}

static int
add_node_named(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
               const tfm_attrs *attrs, const tfm_meta *out, int nout,
               const char *base)
{
    if (g->sealed) {
        tfm_error(TFM_ERR_INTERNAL, "graph %s is sealed: its trace has "
                  "ended", g->name);
        return -1;
    }
    for (int i = 0; i < nin; i++)
        if (in[i].node < 0 || in[i].node >= g->n_nodes ||
            in[i].out < 0 || in[i].out >= g->nodes[in[i].node].nout) {
            tfm_error(TFM_ERR_INTERNAL, "%s: input %d refers to no node "
                      "output", tfm_ops[op].name, i);
            return -1;
        }
    if (g->n_nodes == g->cap_nodes) {
        int32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 32;
        tfm_node *t = realloc(g->nodes, sizeof *t * (size_t)cap);
        if (!t) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM building a graph");
            return -1;
        }
        g->nodes = t;
        g->cap_nodes = cap;
    }
    tfm_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.nin = nin;
    n.nout = nout;
    n.device = -1;
    for (int i = 0; i < nin && n.device <= 0; i++)
        if (g->nodes[in[i].node].device >= 0)
            n.device = g->nodes[in[i].node].device;
    if (nin) {
        n.in = arena_alloc(g, sizeof(tfm_ref) * (size_t)nin);
        if (!n.in)
            return -1;
        memcpy(n.in, in, sizeof(tfm_ref) * (size_t)nin);
    }
    if (nout) {
        n.out = arena_alloc(g, sizeof(tfm_meta) * (size_t)nout);
        if (!n.out)
            return -1;
        memcpy(n.out, out, sizeof(tfm_meta) * (size_t)nout);
    }
    if (!attrs || attrs_are_default(attrs)) {
        n.attrs = &default_attrs;
    } else {
        tfm_attrs *a = arena_alloc(g, sizeof *a);
        if (!a)
            return -1;
        *a = *attrs;
        n.attrs = a;
    }
    n.name = unique_name(g, base);
    if (!n.name)
        return -1;
    g->nodes[g->n_nodes] = n;
    return g->n_nodes++;
}

tfm_code
tfm_graph_add_ctrl(tfm_graph *g, int node, const int32_t *ctrl, int nctrl)
{
    if (nctrl <= 0)
        return TFM_OK;
    tfm_node *n = &g->nodes[node];
    int32_t *c = arena_alloc(g, sizeof(int32_t) * (size_t)(n->nctrl + nctrl));
    if (!c)
        return tfm_error_code();
    if (n->nctrl)
        memcpy(c, n->ctrl, sizeof(int32_t) * (size_t)n->nctrl);
    memcpy(c + n->nctrl, ctrl, sizeof(int32_t) * (size_t)nctrl);
    n->ctrl = c;
    n->nctrl += nctrl;
    return TFM_OK;
}

void
tfm_graph_set_device(tfm_graph *g, int node, int device)
{
    g->nodes[node].device = device;
}

tfm_code
tfm_graph_set_site(tfm_graph *g, int node, const char *site)
{
    tfm_node *n = &g->nodes[node];
    if (!site) {
        n->site = NULL;
        return TFM_OK;
    }
    /* Consecutive ops usually come from one line: share the string. */
    if (node > 0 && g->nodes[node - 1].site &&
        strcmp(g->nodes[node - 1].site, site) == 0) {
        n->site = g->nodes[node - 1].site;
        return TFM_OK;
    }
    n->site = arena_strdup(g, site);
    return n->site ? TFM_OK : tfm_error_code();
}

tfm_code
tfm_graph_set_name(tfm_graph *g, int node, const char *base)
{
    const char *s = unique_name(g, base && *base ? base : "input");
    if (!s)
        return tfm_error_code() ? tfm_error_code()
               : tfm_error(TFM_ERR_VALUE, "node name too long");
    g->nodes[node].name = s;
    return TFM_OK;
}

static void
meta_from(tfm_meta *m, tfm_dtype dtype, const tfm_shape *shape)
{
    m->dtype = dtype;
    m->shape = *shape;
}

/* The state ops' infer rules read dtype and shape from the attrs. */
static void
attrs_for_meta(tfm_attrs *a, tfm_dtype dtype, const tfm_shape *shape)
{
    tfm_attrs_init(a);
    a->dtype = dtype;
    a->n_ints = shape->ndim;
    for (int i = 0; i < shape->ndim; i++)
        a->ints[i] = shape->dims[i];
}

/* node becomes g's next function input; node, or -1. */
static int
push_input(tfm_graph *g, int node)
{
    if (g->n_inputs == g->cap_inputs) {
        int32_t cap = g->cap_inputs ? g->cap_inputs * 2 : 8;
        int32_t *t = realloc(g->inputs, sizeof *t * (size_t)cap);
        if (!t) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM building a graph");
            return -1;
        }
        g->inputs = t;
        g->cap_inputs = cap;
    }
    g->inputs[g->n_inputs++] = node;
    return node;
}

int
tfm_graph_placeholder(tfm_graph *g, tfm_dtype dtype, const tfm_shape *shape,
                      const char *name)
{
    tfm_attrs a;
    tfm_meta m;
    attrs_for_meta(&a, dtype, shape);
    meta_from(&m, dtype, shape);
    int node = add_node(g, TFM_OP_PLACEHOLDER, NULL, 0, &a, &m, 1);
    if (node < 0)
        return -1;
    if (tfm_graph_set_name(g, node, name))
        return -1;
    return push_input(g, node);
}

int
tfm_graph_const(tfm_graph *g, tfm_tensor *t)
{
    ptr_slot *e = ptr_find(&g->consts, t);
    if (e)
        return e->node;
    tfm_attrs a;
    tfm_meta m;
    attrs_for_meta(&a, t->dtype, &t->shape);
    meta_from(&m, t->dtype, &t->shape);
    int node = add_node(g, TFM_OP_CONST, NULL, 0, &a, &m, 1);
    if (node < 0)
        return -1;
    e = ptr_insert(&g->consts, t);
    if (!e)
        return -1;
    e->node = node;
    tfm_tensor_incref(t);
    g->nodes[node].value = t;
    g->nodes[node].device = t->device;
    return node;
}

static ptr_slot *
var_state(tfm_graph *g, tfm_variable *v)
{
    ptr_slot *e = ptr_find(&g->vars, v);
    return e ? e : ptr_insert(&g->vars, v);
}

int
tfm_graph_read_variable(tfm_graph *g, tfm_variable *v)
{
    ptr_slot *e = var_state(g, v);
    if (!e)
        return -1;
    tfm_attrs a;
    tfm_meta m;
    /* The read has the declared shape, not the value's: assign may
     * change the value within it (shape=[None, 3]) after the trace, and
     * the plan must not take the old dims as known. Graphs have a known
     * rank, so TensorShape(None) reads as the value's rank with every
     * dim unknown; the executor rejects a value of another rank. */
    tfm_shape s = v->shape;
    if (v->any_rank) {
        s = v->value->shape;
        for (int d = 0; d < s.ndim; d++)
            s.dims[d] = -1;
    }
    attrs_for_meta(&a, v->value->dtype, &s);
    meta_from(&m, v->value->dtype, &s);
    int node = add_node(g, TFM_OP_READ_VARIABLE, NULL, 0, &a, &m,
                                  1);
    if (node < 0)
        return -1;
    e = var_state(g, v);
    if (e->node >= 0 && tfm_graph_add_ctrl(g, node, &e->node, 1))
        return -1;
    if (g->last_opaque > e->node &&
        tfm_graph_add_ctrl(g, node, &g->last_opaque, 1))
        return -1;
    if (e->n_reads == e->cap_reads) {
        int32_t cap = e->cap_reads ? e->cap_reads * 2 : 4;
        int32_t *r = realloc(e->reads, sizeof *r * (size_t)cap);
        if (!r) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM building a graph");
            return -1;
        }
        e->reads = r;
        e->cap_reads = cap;
    }
    e->reads[e->n_reads++] = node;
    tfm_variable_incref(v);
    g->nodes[node].var = v;
    g->nodes[node].device = v->value->device;
    return node;
}

int
tfm_graph_assign_variable(tfm_graph *g, tfm_variable *v, tfm_ref value,
                          int mode)
{
    static const tfm_op ops[] = {TFM_OP_ASSIGN_VARIABLE,
                                 TFM_OP_ASSIGN_ADD_VARIABLE,
                                 TFM_OP_ASSIGN_SUB_VARIABLE};
    if (mode < 0 || mode > 2) {
        tfm_error(TFM_ERR_INTERNAL, "bad assign mode %d", mode);
        return -1;
    }
    ptr_slot *e = var_state(g, v);
    if (!e)
        return -1;
    int node = add_node(g, ops[mode], &value, 1, NULL, NULL, 0);
    if (node < 0)
        return -1;
    e = var_state(g, v);
    if (g->last_effect >= 0 &&
        tfm_graph_add_ctrl(g, node, &g->last_effect, 1))
        return -1;
    if (tfm_graph_add_ctrl(g, node, e->reads, e->n_reads))
        return -1;
    e->n_reads = 0;
    e->node = node;
    g->last_effect = node;
    tfm_variable_incref(v);
    g->nodes[node].var = v;
    return node;
}

int
tfm_graph_add_text_node(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
                        const tfm_attrs *a, const char *const *texts,
                        int ntexts)
{
    int node = add_node(g, op, in, nin, a, NULL, 0);
    if (node < 0)
        return -1;
    const char **t = arena_alloc(g, sizeof(char *) * (size_t)ntexts);
    if (!t)
        return -1;
    for (int i = 0; i < ntexts; i++) {
        t[i] = arena_strdup(g, texts[i] ? texts[i] : "");
        if (!t[i])
            return -1;
    }
    g->nodes[node].text = t;
    if (g->last_effect >= 0 &&
        tfm_graph_add_ctrl(g, node, &g->last_effect, 1))
        return -1;
    g->last_effect = node;
    return node;
}

int
tfm_graph_print(tfm_graph *g, const tfm_ref *in, int nin,
                const char *const *texts, int stream, int summarize)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = stream;
    a.i[1] = summarize;
    return tfm_graph_add_text_node(g, TFM_OP_PRINT, in, nin, &a, texts,
                                   nin + 1);
}

int
tfm_graph_input_count(const tfm_graph *g)
{
    return g->n_inputs;
}

int
tfm_graph_input(const tfm_graph *g, int i)
{
    return g->inputs[i];
}

tfm_code
tfm_graph_set_outputs(tfm_graph *g, const tfm_ref *out, int n)
{
    for (int i = 0; i < n; i++)
        if (out[i].node < 0 || out[i].node >= g->n_nodes ||
            out[i].out < 0 || out[i].out >= g->nodes[out[i].node].nout)
            return tfm_error(TFM_ERR_INTERNAL, "graph output %d refers to "
                             "no node output", i);
    tfm_ref *o = n ? malloc(sizeof *o * (size_t)n) : NULL;
    if (n && !o)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM");
    if (n)
        memcpy(o, out, sizeof *o * (size_t)n);
    free(g->outputs);
    g->outputs = o;
    g->n_outputs = n;
    return TFM_OK;
}

int
tfm_graph_output_count(const tfm_graph *g)
{
    return g->n_outputs;
}

tfm_ref
tfm_graph_output(const tfm_graph *g, int i)
{
    return g->outputs[i];
}

tfm_tensor *
tfm_graph_symbolic(tfm_graph *g, int node, int out)
{
    const tfm_meta *m = &g->nodes[node].out[out];
    if (g->n_sym == g->cap_sym) {
        /* Drop what only we hold before growing: a long trace keeps
         * just the tensors Python still refers to. */
        release_tracked(g, 0);
        if (g->n_sym * 2 >= g->cap_sym) {
            int32_t cap = g->cap_sym ? g->cap_sym * 2 : 64;
            tfm_tensor **t = realloc(g->sym, sizeof *t * (size_t)cap);
            if (!t) {
                tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM tracing");
                return NULL;
            }
            g->sym = t;
            g->cap_sym = cap;
        }
    }
    tfm_tensor *t = tfm_tensor_symbolic(m->dtype, &m->shape, g, node, out);
    if (!t)
        return NULL;
    tfm_tensor_incref(t);
    g->sym[g->n_sym++] = t;
    return t;
}

void
tfm_graph_seal(tfm_graph *g)
{
    if (g->sealed)
        return;
    g->sealed = 1;
    release_tracked(g, 0);
    free(g->names);
    g->names = NULL;
    g->names_cap = g->names_n = 0;
    ptr_map_free(&g->consts);
    ptr_map_free(&g->vars);
    ptr_map_free(&g->caps);
    g->parent = NULL;
}

char *
tfm_graph_tensor_name(const tfm_tensor *t, char *buf, size_t n)
{
    const tfm_graph *g = t->graph;
    if (!g || g == &tfm_graph_dead || t->node < 0 || t->node >= g->n_nodes)
        snprintf(buf, n, "<freed>:%d", (int)t->out_index);
    else
        snprintf(buf, n, "%s:%d", g->nodes[t->node].name,
                 (int)t->out_index);
    return buf;
}

/* ---- what graph_control.c shares (declared in graph_impl.h) ---- */

int
tfm_graph_add_node_any(tfm_graph *g, tfm_op op, const tfm_ref *in, int nin,
                       const tfm_attrs *attrs, const tfm_meta *out, int nout)
{
    return add_node(g, op, in, nin, attrs, out, nout);
}

ptr_slot *
tfm_graph_ptr_find(ptr_map *m, const void *key)
{
    return ptr_find(m, key);
}

ptr_slot *
tfm_graph_ptr_insert(ptr_map *m, const void *key)
{
    return ptr_insert(m, key);
}


/* ---- copying nodes between graphs (Note [Graph rewrites]) ---- */

static const char *const *
copy_texts(tfm_graph *g, const char *const *texts, int n)
{
    const char **t = arena_alloc(g, sizeof(char *) * (size_t)(n + 1));
    if (!t)
        return NULL;
    for (int i = 0; i <= n; i++) {
        t[i] = arena_strdup(g, texts[i] ? texts[i] : "");
        if (!t[i])
            return NULL;
    }
    return t;
}

int
tfm_graph_copy_node(tfm_graph *g, const tfm_node *src, const tfm_ref *in,
                    const int32_t *ctrl, int nctrl)
{
    int node = add_node_named(g, src->op, in, src->nin, src->attrs,
                              src->out, src->nout, src->name);
    if (node < 0)
        return -1;
    if (tfm_graph_set_site(g, node, src->site) ||
        tfm_graph_add_ctrl(g, node, ctrl, nctrl))
        return -1;
    tfm_node *n = &g->nodes[node];
    if (src->device >= 0)
        n->device = src->device;
    else if (src->value)
        n->device = src->value->device;
    if (src->op == TFM_OP_PLACEHOLDER && push_input(g, node) < 0)
        return -1;
    if (src->text) {
        /* PrintV2: nin pieces between the inputs; Assert: data inputs. */
        int pieces = src->op == TFM_OP_ASSERT ? src->nin - 1 : src->nin;
        n->text = copy_texts(g, src->text, pieces);
        if (!n->text)
            return -1;
    }
    for (int b = 0; b < 2; b++) {
        if (!src->sub[b])
            continue;
        int m = tfm_graph_input_count(src->sub[b]);
        int32_t *map = arena_alloc(g, sizeof(int32_t) * ((size_t)m + 1));
        if (!map)
            return -1;
        memcpy(map, src->submap[b], sizeof(int32_t) * (size_t)m);
        n->submap[b] = map;
        n->sub[b] = src->sub[b];
        tfm_graph_incref(n->sub[b]);
    }
    if (src->value) {
        n->value = src->value;
        tfm_tensor_incref(n->value);
    }
    if (src->var) {
        n->var = src->var;
        tfm_variable_incref(n->var);
    }
    if (src->prog) {
        void *prog = arena_alloc(g, src->prog_size);
        if (!prog)
            return -1;
        memcpy(prog, src->prog, src->prog_size);
        n->prog = prog;
        n->prog_size = src->prog_size;
    }
    return node;
}
