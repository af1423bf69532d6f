/* Plans' arenas: made, lent to one run at a time, and released within a
 * budget (Note [Arena budget]). */
#include "exec_impl.h"

#include <sys/mman.h>

/* Note [Arena budget]
 * ~~~~~~~~~~~~~~~~~~~
 * Each plan keeps its arena between runs (Note [Memory plan]), and a
 * function retraced for many shapes has many plans: 100 traces over
 * inputs of 10^6 elements held 750 MB of arenas nobody would use again.
 * So the plans holding an arena form one list, the last run first, and
 * the bytes they hold are counted; when a run ends with more than
 * tfm_plan_arena_budget held, the arenas of the least recently run idle
 * plans are released (they are made again on their plan's next run).
 * The plan that just ran keeps its arena whatever its size, so a single
 * big function, or two that take turns within the budget, allocate
 * nothing per call. Callers hold the interpreter lock, as for `busy`. */
size_t tfm_plan_arena_budget = (size_t)64 << 20;
static tfm_plan *lru_head, *lru_tail;
static size_t arena_held_bytes;

static void
lru_unlink(tfm_plan *p)
{
    if (p->lru_prev)
        p->lru_prev->lru_next = p->lru_next;
    else if (lru_head == p)
        lru_head = p->lru_next;
    if (p->lru_next)
        p->lru_next->lru_prev = p->lru_prev;
    else if (lru_tail == p)
        lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
}

static void
lru_push_front(tfm_plan *p)
{
    p->lru_next = lru_head;
    if (lru_head)
        lru_head->lru_prev = p;
    lru_head = p;
    if (!lru_tail)
        lru_tail = p;
}

/* Let go of p's own arena (a run's views, if any, keep the memory). */
void
tfm_exec_arena_drop(tfm_plan *p)
{
    if (!p->arena)
        return;
    lru_unlink(p);
    arena_held_bytes -= p->arena_bytes;
    tfm_buffer_decref(p->arena);
    p->arena = NULL;
}

static void
arena_trim(const tfm_plan *keep)
{
    tfm_plan *q = lru_tail;
    while (q && arena_held_bytes > tfm_plan_arena_budget) {
        tfm_plan *prev = q->lru_prev;
        if (q != keep && !q->busy)
            tfm_exec_arena_drop(q);
        q = prev;
    }
}

size_t
tfm_plan_arena_held(void)
{
    return arena_held_bytes;
}

/* Big arenas are mapped on their own rather than taken from malloc's
 * heap: an arena lives as long as its plan, and a heap block that long
 * lived among the short-lived tensors of a retracing loop pins the holes
 * around it (glibc's mmap threshold grows past 4 MB once such blocks are
 * freed), so releasing arenas would not give the memory back. */
#define ARENA_MAP_MIN ((size_t)1 << 20)

typedef struct mapped {
    void *p;
    size_t n;
} mapped;

static void
arena_unmap(void *ctx)
{
    mapped *m = ctx;
    munmap(m->p, m->n);
    free(m);
}

static tfm_buffer *
arena_new(size_t nbytes)
{
    if (nbytes < ARENA_MAP_MIN)
        return tfm_buffer_new(nbytes, TFM_CPU);
    mapped *m = malloc(sizeof *m);
    void *p = m ? mmap(NULL, nbytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(m);
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM allocating a %zu-byte "
                  "arena for a tf.function", nbytes);
        return NULL;
    }
    m->p = p;
    m->n = nbytes;
    tfm_buffer *b = tfm_buffer_wrap(p, nbytes, TFM_CPU, arena_unmap, m);
    if (!b)
        arena_unmap(m);
    return b;
}

/* The arena for one run (Note [Memory plan]): the plan's own when free,
 * else one for this run only. NULL (no error) when the run allocates
 * per output; NULL with *rc set when out of memory. */
tfm_buffer *
tfm_exec_arena_take(const tfm_plan *p, int recorded, tfm_code *rc)
{
    /* The arena cache is the plan's only mutable state, like a C++
     * `mutable` member; callers hold the interpreter lock. */
    tfm_plan *mp = (tfm_plan *)p;
    if (!p->slot_off || recorded)
        return NULL;
    if (p->busy) {
        tfm_buffer *b = arena_new(p->arena_bytes);
        if (!b)
            *rc = tfm_error_code();
        return b;
    }
    if (!p->arena) {
        if (!(mp->arena = arena_new(p->arena_bytes))) {
            *rc = tfm_error_code();
            return NULL;
        }
        arena_held_bytes += p->arena_bytes;
        lru_push_front(mp);
    }
    mp->busy = 1;
    return p->arena;
}

void
tfm_exec_arena_give(const tfm_plan *p, tfm_buffer *arena)
{
    tfm_plan *mp = (tfm_plan *)p;
    if (!arena)
        return;
    if (arena != p->arena) {
        tfm_buffer_decref(arena);
        return;
    }
    mp->busy = 0;
    if (arena->refcount != 1) {
        /* A view outlived the run: leave the memory to it. */
        tfm_exec_arena_drop(mp);
        return;
    }
    if (lru_head != mp) {
        lru_unlink(mp);
        lru_push_front(mp);
    }
    if (arena_held_bytes > tfm_plan_arena_budget)
        arena_trim(mp);
}

