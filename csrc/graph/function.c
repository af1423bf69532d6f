#include "function.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/tape.h"
#include "exec_cugraph.h"
#include "passes.h"

static int64_t live_concretes;
uint64_t tfm_concrete_clock;

tfm_concrete *
tfm_concrete_new(tfm_graph *g)
{
    tfm_graph_seal(g);
    tfm_concrete *cf = calloc(1, sizeof *cf);
    if (!cf) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM making a function");
        return NULL;
    }
    cf->optimized = tfm_graph_optimize(g, tfm_passes_enabled);
    if (!cf->optimized) {
        free(cf);
        return NULL;
    }
    cf->plan = tfm_plan_new(cf->optimized);
    if (!cf->plan) {
        tfm_graph_decref(cf->optimized);
        free(cf);
        return NULL;
    }
    cf->refcount = 1;
    cf->graph = g;
    tfm_graph_incref(g);
    live_concretes++;
    return cf;
}

void
tfm_concrete_decref(tfm_concrete *cf)
{
    if (--cf->refcount > 0)
        return;
    if (cf->user_free)
        cf->user_free(cf->user);
    tfm_plan_free(cf->plan);
    tfm_plan_free(cf->replay);
    tfm_graph_decref(cf->optimized);
    tfm_graph_decref(cf->graph);
    free(cf);
    live_concretes--;
}

int64_t
tfm_concrete_live_count(void)
{
    return live_concretes;
}

tfm_code
tfm_concrete_call(tfm_concrete *cf, tfm_tensor *const *in, int nin,
                  tfm_tensor **out)
{
    cf->last_call = ++tfm_concrete_clock;
    if (tfm_tape_active_count == 0) {
        /* Note [CUDA graphs for cached calls]: a replay, or 0. */
        tfm_code rc;
        if (tfm_cugraph_call(cf->plan, in, nin, out, &rc))
            return rc;
        return tfm_plan_run(cf->plan, in, nin, out, 0);
    }
    if (!cf->replay && !(cf->replay = tfm_plan_new(cf->graph)))
        return tfm_error_code();
    return tfm_plan_run(cf->replay, in, nin, out, 1);
}

/* ---- the cache: chained buckets, keys stored inline ---- */

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    size_t n;
    tfm_concrete *cf;
    unsigned char key[];
} entry;

struct tfm_fcache {
    entry **buckets;
    uint32_t cap, size;
};

uint64_t
tfm_fcache_hash(const void *key, size_t n)
{
    const unsigned char *p = key;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    while (n--)
        h = (h ^ *p++) * 0x100000001B3ULL;
    h ^= h >> 29;
    return h;
}

tfm_fcache *
tfm_fcache_new(void)
{
    tfm_fcache *c = calloc(1, sizeof *c);
    if (!c) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM making a cache");
        return NULL;
    }
    return c;
}

void
tfm_fcache_clear(tfm_fcache *c)
{
    for (uint32_t b = 0; b < c->cap; b++) {
        entry *e = c->buckets[b];
        while (e) {
            entry *next = e->next;
            tfm_concrete_decref(e->cf);
            free(e);
            e = next;
        }
        c->buckets[b] = NULL;
    }
    c->size = 0;
}

void
tfm_fcache_free(tfm_fcache *c)
{
    if (!c)
        return;
    tfm_fcache_clear(c);
    free(c->buckets);
    free(c);
}

tfm_concrete *
tfm_fcache_get(const tfm_fcache *c, const void *key, size_t n, uint64_t h)
{
    if (!c->cap)
        return NULL;
    for (entry *e = c->buckets[h & (c->cap - 1)]; e; e = e->next)
        if (e->hash == h && e->n == n && memcmp(e->key, key, n) == 0)
            return e->cf;
    return NULL;
}

static tfm_code
grow(tfm_fcache *c)
{
    uint32_t cap = c->cap ? c->cap * 2 : 8;
    entry **b = calloc(cap, sizeof *b);
    if (!b)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM growing a cache");
    for (uint32_t i = 0; i < c->cap; i++) {
        entry *e = c->buckets[i];
        while (e) {
            entry *next = e->next;
            e->next = b[e->hash & (cap - 1)];
            b[e->hash & (cap - 1)] = e;
            e = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->cap = cap;
    return TFM_OK;
}

tfm_code
tfm_fcache_put(tfm_fcache *c, const void *key, size_t n, uint64_t h,
               tfm_concrete *cf)
{
    if (c->cap) {
        for (entry *e = c->buckets[h & (c->cap - 1)]; e; e = e->next)
            if (e->hash == h && e->n == n && memcmp(e->key, key, n) == 0) {
                tfm_concrete_incref(cf);
                tfm_concrete_decref(e->cf);
                e->cf = cf;
                return TFM_OK;
            }
    }
    if (c->size + 1 > c->cap) {
        tfm_code rc = grow(c);
        if (rc)
            return rc;
    }
    entry *e = malloc(sizeof *e + n);
    if (!e)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM caching a trace");
    e->hash = h;
    e->n = n;
    memcpy(e->key, key, n);
    tfm_concrete_incref(cf);
    e->cf = cf;
    e->next = c->buckets[h & (c->cap - 1)];
    c->buckets[h & (c->cap - 1)] = e;
    c->size++;
    return TFM_OK;
}

int
tfm_fcache_remove(tfm_fcache *c, const void *key, size_t n, uint64_t h)
{
    if (!c->cap)
        return 0;
    for (entry **pe = &c->buckets[h & (c->cap - 1)]; *pe;
         pe = &(*pe)->next) {
        entry *e = *pe;
        if (e->hash == h && e->n == n && memcmp(e->key, key, n) == 0) {
            *pe = e->next;
            tfm_concrete_decref(e->cf);
            free(e);
            c->size--;
            return 1;
        }
    }
    return 0;
}

int
tfm_fcache_size(const tfm_fcache *c)
{
    return (int)c->size;
}
