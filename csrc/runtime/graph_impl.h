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

#endif
