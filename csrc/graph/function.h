/* Concrete functions and the signature-keyed cache (see DESIGN.md,
 * "Function").
 *
 * A concrete function is one trace of a tf.function: a sealed graph and
 * its compiled plan. The cache maps a signature key (bytes the binding
 * computes from a call's arguments: dtypes and shapes of tensors, values
 * of Python primitives, identities of other objects, the nesting) to a
 * concrete function. Several keys may map to one concrete function (a
 * trace with an input_signature or a generalized shape serves many exact
 * keys). Lookups are one hash and one memcmp. */
#ifndef TFM_GRAPH_FUNCTION_H
#define TFM_GRAPH_FUNCTION_H

#include "exec.h"

typedef struct tfm_concrete {
    int64_t refcount;
    tfm_graph *graph;       /* as traced */
    tfm_graph *optimized;   /* after the passes (passes.h) */
    tfm_plan *plan;         /* runs optimized */
    tfm_plan *replay;       /* runs graph under a tape; made on first use */
    /* When it last ran, on tfm_concrete_clock: the binding's trace
     * cache evicts the least recently run trace (README, "tf.function"). */
    uint64_t last_call;
    /* The binding's data (how to pack outputs), freed with the function. */
    void *user;
    void (*user_free)(void *user);
} tfm_concrete;

/* Seal g (inputs and outputs set), optimize it with the passes enabled
 * now (tfm_passes_enabled) and compile the result. Takes its own
 * reference on g. NULL with the error set. */
tfm_concrete *tfm_concrete_new(tfm_graph *g);
static inline void
tfm_concrete_incref(tfm_concrete *cf)
{
    cf->refcount++;
}
void tfm_concrete_decref(tfm_concrete *cf);
int64_t tfm_concrete_live_count(void);
/* Counts tfm_concrete_call()s, process-wide. */
extern uint64_t tfm_concrete_clock;

/* Run with one tensor per graph input; out gets one new reference per
 * graph output. Under an active GradientTape the traced graph (not the
 * optimized one: fused nodes have no gradient rule) is replayed through
 * the dispatcher so that the tape records it (see exec.h). */
tfm_code tfm_concrete_call(tfm_concrete *cf, tfm_tensor *const *in, int nin,
                           tfm_tensor **out);

typedef struct tfm_fcache tfm_fcache;

tfm_fcache *tfm_fcache_new(void);
void tfm_fcache_free(tfm_fcache *c);
uint64_t tfm_fcache_hash(const void *key, size_t n);
/* Borrowed, or NULL. */
tfm_concrete *tfm_fcache_get(const tfm_fcache *c, const void *key, size_t n,
                             uint64_t h);
/* Insert or replace; the cache holds a reference. */
tfm_code tfm_fcache_put(tfm_fcache *c, const void *key, size_t n,
                        uint64_t h, tfm_concrete *cf);
/* 1 if the key was there. */
int tfm_fcache_remove(tfm_fcache *c, const void *key, size_t n, uint64_t h);
int tfm_fcache_size(const tfm_fcache *c);
void tfm_fcache_clear(tfm_fcache *c);

#endif
