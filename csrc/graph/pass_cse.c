/* Common-subexpression elimination: a node with the same op, the same
 * attributes and the same inputs as an earlier one is that node.
 *
 * One walk in creation order with a hash table of the nodes kept so
 * far (linear time). Inputs are compared after mapping, so a chain of
 * duplicates collapses in the same walk. Attributes compare whole: the
 * n_ints list entries, i[], f[] bit for bit (so 0.0 and -0.0 differ,
 * and a NaN equals itself), the dtype.
 *
 * What never merges:
 *   - anything with an effect (tfm_node_has_effect: assigns, prints,
 *     asserts, If, While) and any other op flagged stateful;
 *   - random ops: a traced random op draws new numbers on every run
 *     (Note [Random streams] in random.c), so two calls differ even with
 *     one seed;
 *   - Placeholders (each is an input of its own);
 *   - nodes with control edges, except variable reads.
 * Variable reads merge when they read one variable after the same
 * control edges: the graph gives each read an edge to the variable's
 * last assign and to the last If/While/Assert before it (Note
 * [Side-effect order]), so equal edges mean no write between them.
 * Consts merge when their dtype, shape and bytes are equal (at most
 * TFM_CSE_MAX_CONST_BYTES of them, to bound the hashing).
 *
 * Graph outputs stay distinct tensors (Note [Distinct outputs]). */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define TFM_CSE_MAX_CONST_BYTES ((size_t)1 << 18)

static uint64_t
mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDULL;
}

static uint64_t
hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = mix(h, w);
        b += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, b, n);
    return mix(h, w ^ n);
}

static uint64_t
hash_attrs(uint64_t h, const tfm_attrs *a)
{
    h = mix(h, (uint64_t)a->n_ints);
    h = hash_bytes(h, a->ints, sizeof(int64_t) * (size_t)a->n_ints);
    h = hash_bytes(h, a->i, sizeof a->i);
    h = hash_bytes(h, a->f, sizeof a->f);
    return mix(h, (uint64_t)a->dtype);
}

static int
attrs_equal(const tfm_attrs *a, const tfm_attrs *b)
{
    return a == b ||
           (a->n_ints == b->n_ints && a->dtype == b->dtype &&
            memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n_ints)
                == 0 &&
            memcmp(a->i, b->i, sizeof a->i) == 0 &&
            memcmp(a->f, b->f, sizeof a->f) == 0);
}

/* Which nodes may merge with an equal one. */
static int
may_merge(const tfm_node *n)
{
    if (n->op == TFM_OP_READ_VARIABLE)
        return n->var != NULL;
    if (n->op == TFM_OP_CONST) {
        const tfm_tensor *t = n->value;
        return t && !tfm_tensor_is_symbolic(t) && t->device == 0 &&
               tfm_tensor_nbytes(t) <= TFM_CSE_MAX_CONST_BYTES;
    }
    unsigned flags = tfm_ops[n->op].flags;
    return n->op != TFM_OP_PLACEHOLDER && !tfm_node_has_effect(n) &&
           !(flags & (TFM_OPF_STATEFUL | TFM_OPF_RANDOM)) && !n->nctrl &&
           !n->sub[0] && !n->text;
}

static int
cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A node's control edges as a sorted set (of dst nodes). */
static int
ctrl_set(const int32_t *ctrl, int n, int32_t *out)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        out[m++] = ctrl[i];
    qsort(out, (size_t)m, sizeof *out, cmp_i32);
    int u = 0;
    for (int i = 0; i < m; i++)
        if (u == 0 || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

typedef struct cse_key {
    const tfm_node *n;        /* the src node */
    const tfm_ref *in;        /* its inputs in dst */
    const int32_t *ctrl;      /* reads: its control edges in dst, a set */
    int nctrl;
} cse_key;

static uint64_t
key_hash(const cse_key *k)
{
    const tfm_node *n = k->n;
    uint64_t h = mix(0, (uint64_t)n->op);
    if (n->op == TFM_OP_CONST) {
        const tfm_tensor *t = n->value;
        h = mix(h, (uint64_t)t->dtype);
        h = hash_bytes(h, t->shape.dims,
                       sizeof(int64_t) * (size_t)t->shape.ndim);
        return hash_bytes(h, tfm_tensor_data(t), tfm_tensor_nbytes(t));
    }
    h = hash_attrs(h, n->attrs);
    for (int i = 0; i < n->nin; i++)
        h = mix(h, ((uint64_t)(uint32_t)k->in[i].node << 32) |
                       (uint32_t)k->in[i].out);
    if (n->op == TFM_OP_READ_VARIABLE) {
        h = mix(h, (uint64_t)(uintptr_t)n->var);
        for (int i = 0; i < k->nctrl; i++)
            h = mix(h, (uint64_t)k->ctrl[i]);
    }
    return h;
}

/* Whether dst node d computes what key k does. */
static int
key_equal(const cse_key *k, const tfm_node *d, int32_t *scratch)
{
    const tfm_node *n = k->n;
    if (d->op != n->op || d->nin != n->nin || d->nout != n->nout)
        return 0;
    if (n->op == TFM_OP_CONST) {
        const tfm_tensor *a = n->value, *b = d->value;
        return a == b ||
               (b && !tfm_tensor_is_symbolic(b) && b->device == 0 &&
                a->dtype == b->dtype && tfm_shape_equal(&a->shape, &b->shape)
                && memcmp(tfm_tensor_data(a), tfm_tensor_data(b),
                          tfm_tensor_nbytes(a)) == 0);
    }
    if (!attrs_equal(n->attrs, d->attrs))
        return 0;
    for (int i = 0; i < n->nin; i++)
        if (d->in[i].node != k->in[i].node || d->in[i].out != k->in[i].out)
            return 0;
    for (int j = 0; j < n->nout; j++)
        if (d->out[j].dtype != n->out[j].dtype ||
            !tfm_shape_equal(&d->out[j].shape, &n->out[j].shape))
            return 0;
    if (n->op == TFM_OP_READ_VARIABLE) {
        if (d->var != n->var)
            return 0;
        int m = ctrl_set(d->ctrl, d->nctrl, scratch);
        return m == k->nctrl &&
               memcmp(scratch, k->ctrl, sizeof(int32_t) * (size_t)m) == 0;
    }
    return 1;
}

typedef struct table {
    uint64_t *hash;
    int32_t *node;            /* dst node; -1: empty */
    uint32_t mask;
} table;

tfm_graph *
tfm_pass_cse(tfm_graph *g)
{
    int32_t n = tfm_graph_node_count(g);
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n + 2u)
        cap *= 2;
    table t = {malloc(sizeof(uint64_t) * cap), malloc(sizeof(int32_t) * cap),
               cap - 1};
    int32_t *ctrl = NULL, *scratch = NULL;
    int32_t max_ctrl = 1;
    for (int32_t k = 0; k < n; k++)
        if (tfm_graph_node(g, k)->nctrl > max_ctrl)
            max_ctrl = tfm_graph_node(g, k)->nctrl;
    ctrl = malloc(sizeof(int32_t) * (size_t)max_ctrl);
    scratch = malloc(sizeof(int32_t) * (size_t)max_ctrl);
    tfm_rw rw;
    int changed = 0, began = 0;
    if (!t.hash || !t.node || !ctrl || !scratch) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in common-subexpression "
                  "elimination");
        goto fail;
    }
    for (uint32_t s = 0; s < cap; s++)
        t.node[s] = -1;
    if (tfm_rw_begin(&rw, g))
        goto fail;
    began = 1;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        tfm_ref in[TFM_MAX_INPUTS];
        int ok = may_merge(nd);
        for (int i = 0; ok && i < nd->nin; i++) {
            in[i] = tfm_rw_ref(&rw, nd->in[i]);
            ok = in[i].node >= 0;
        }
        if (!ok) {
            if (tfm_rw_copy(&rw, k) < 0)
                goto fail;
            continue;
        }
        cse_key key = {nd, in, ctrl, 0};
        if (nd->op == TFM_OP_READ_VARIABLE) {
            int m = 0;
            for (int i = 0; i < nd->nctrl; i++) {
                int32_t c = rw.node_map[nd->ctrl[i]];
                if (c >= 0)
                    scratch[m++] = c;
            }
            key.nctrl = ctrl_set(scratch, m, ctrl);
        }
        uint64_t h = key_hash(&key);
        uint32_t s = (uint32_t)h & t.mask;
        int32_t found = -1;
        for (; t.node[s] >= 0; s = (s + 1) & t.mask)
            if (t.hash[s] == h &&
                key_equal(&key, tfm_graph_node(rw.dst, t.node[s]), scratch)) {
                found = t.node[s];
                break;
            }
        if (found >= 0) {
            for (int j = 0; j < nd->nout; j++)
                tfm_rw_alias(&rw, k, j, (tfm_ref){found, j});
            changed = 1;
            continue;
        }
        int d = tfm_rw_copy(&rw, k);
        if (d < 0)
            goto fail;
        t.hash[s] = h;          /* s: the empty slot the probe ended on */
        t.node[s] = d;
    }
    free(t.hash);
    free(t.node);
    free(ctrl);
    free(scratch);
    return tfm_rw_end(&rw, g, changed);
fail:
    free(t.hash);
    free(t.node);
    free(ctrl);
    free(scratch);
    if (began)
        tfm_rw_abort(&rw);
    return NULL;
}
