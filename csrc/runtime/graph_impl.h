/* The graph's representation, private to the code that builds and
 * rewrites graphs (runtime/graph*.c and the passes in csrc/graph/).
 * Everyone else uses the accessors in graph.h. */
#ifndef TFM_GRAPH_IMPL_H
#define TFM_GRAPH_IMPL_H

#include "graph.h"

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
} chunk;

typedef struct name_slot {
    const char *name;    /* NULL: empty */
    uint64_t hash;
    int32_t next;        /* next suffix to try for this base */
} name_slot;

typedef struct ptr_slot {
    const void *key;     /* NULL: empty */
    int32_t node;        /* Const: its node; variables: last assign */
    int32_t n_reads, cap_reads;
    int32_t *reads;      /* variables: reads since the last assign */
} ptr_slot;

typedef struct ptr_map {
    ptr_slot *slots;
    uint32_t cap, n;
} ptr_map;

struct tfm_graph {
    int64_t refcount;
    char *name;
    tfm_node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *inputs;
    int32_t n_inputs, cap_inputs;
    tfm_ref *outputs;
    int32_t n_outputs;
    chunk *arena;
    name_slot *names;
    uint32_t names_cap, names_n;
    ptr_map consts, vars;
    int32_t last_effect;
    int32_t last_opaque;     /* last If/While/Assert: reads wait for it */
    tfm_tensor **sym;
    int32_t n_sym, cap_sym;
    int sealed;
    /* Note [Sub-graphs]: while traced inside parent. */
    tfm_graph *parent;
    tfm_ref *cap_outer;      /* capture k stands for cap_outer[k] ... */
    int32_t *cap_node;       /* ... through placeholder cap_node[k] */
    int32_t n_cap, cap_cap;
    ptr_map caps;            /* outer ref -> capture index */
};

/* Note [Graph rewrites]: a pass (csrc/graph/pass_*.c) builds a new graph
 * from a sealed one, node by node, in the old creation order, so program
 * order (and with it side-effect order) carries over. These two are what
 * it needs beyond the tfm_graph_* constructors. */

/* Copy src (a node of another graph) into g with inputs in[] (refs in g)
 * and control edges ctrl[] (nodes of g): op, attrs, metas, name, site and
 * payload (constants, variables, texts, sub-graphs and their maps, each
 * with its own reference). A Placeholder becomes g's next input. Returns
 * the new node's index or -1 with the error set. */
int tfm_graph_copy_node(tfm_graph *g, const tfm_node *src, const tfm_ref *in,
                        const int32_t *ctrl, int nctrl);
/* Memory that lives as long as g (payloads a pass makes). */
void *tfm_graph_arena_alloc(tfm_graph *g, size_t n);
/* Node k of g, writable: only for a pass filling a node it just made. */
static inline tfm_node *
tfm_graph_node_mut(tfm_graph *g, int k)
{
    return &g->nodes[k];
}

/* graph.c's own helpers that graph_control.c (sub-graphs and control
 * flow) shares: adding a node of any op, graph-only ones included (the
 * caller attaches the payload), text-payload nodes, and the pointer
 * maps. */
int tfm_graph_add_node_any(tfm_graph *g, tfm_op op, const tfm_ref *in,
                           int nin, const tfm_attrs *attrs,
                           const tfm_meta *out, int nout);
/* A node of op (Print, Assert) whose payload is texts[0..ntexts),
 * copied, ordered after the graph's previous side effect. */
int tfm_graph_add_text_node(tfm_graph *g, tfm_op op, const tfm_ref *in,
                            int nin, const tfm_attrs *a,
                            const char *const *texts, int ntexts);
ptr_slot *tfm_graph_ptr_find(ptr_map *m, const void *key);
ptr_slot *tfm_graph_ptr_insert(ptr_map *m, const void *key);

#endif
