/* Gradient tapes: recording at dispatch, and the reverse walk.
 * See tape.h and Note [Tape lifetime]. */
#include "tape.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/grad_complex.h"
#include "../ops/grad_util.h"
#include "../ops/grads.h"
#include "dispatch.h"
#include "variable.h"

/* The dtypes gradients flow through: floats, and complex numbers (TF's
 * trainable dtypes). */
static inline bool
differentiable(tfm_dtype d)
{
    return tfm_dtype_is_float(d) || tfm_dtype_is_complex(d);
}

_Thread_local int tfm_tape_active_count;

/* ---- a map from tensor id (never 0) to an int64 ---- */

typedef struct idmap {
    uint64_t *keys;
    int64_t *vals;
    size_t cap;      /* power of two, or 0 */
    size_t n;
} idmap;

static inline size_t
id_hash(uint64_t id, size_t cap)
{
    /* Ids are sequential: spread them with a Fibonacci multiply. */
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int64_t *
idmap_find(const idmap *m, uint64_t id)
{
    if (!m->cap)
        return NULL;
    for (size_t i = id_hash(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == id)
            return &m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static tfm_code
idmap_grow(idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof *keys);
    int64_t *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM growing a tape");
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j])
            continue;
        size_t i = id_hash(m->keys[j], cap);
        while (keys[i])
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return TFM_OK;
}

/* Slot for id, inserted with value `fresh` if absent; NULL on OOM. */
static int64_t *
idmap_get(idmap *m, uint64_t id, int64_t fresh, int *inserted)
{
    if ((m->n + 1) * 2 > m->cap && idmap_grow(m))
        return NULL;
    size_t i = id_hash(id, m->cap);
    while (m->keys[i] && m->keys[i] != id)
        i = (i + 1) & (m->cap - 1);
    if (inserted)
        *inserted = m->keys[i] == 0;
    if (!m->keys[i]) {
        m->keys[i] = id;
        m->vals[i] = fresh;
        m->n++;
    }
    return &m->vals[i];
}

static void
idmap_free(idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- records ---- */

/* Values of a tape's id map for tensors no recorded op produced: watched
 * tensors, and variables (listed in the tape's vars). */
#define WATCHED_LEAF (-1)
#define WATCHED_VARIABLE (-2)

typedef struct record {
    tfm_op op;
    int nin, nout;
    const tfm_tape_fn *fn;   /* custom gradient, or NULL */
    void *fn_ctx;
    /* The attributes, with ints[] stored after the tensors. */
    int n_ints;
    int64_t i[6];
    double f[4];
    tfm_dtype dtype;
    tfm_tensor *t[];         /* nin inputs, then nout outputs, then ints */
} record;

static inline int64_t *
record_ints(record *r)
{
    return (int64_t *)&r->t[r->nin + r->nout];
}

/* Drop what a record holds; its memory belongs to the tape's arena. */
static void
record_release(record *r)
{
    if (!r)
        return;
    for (int k = 0; k < r->nin + r->nout; k++)
        tfm_tensor_decref(r->t[k]);
    if (r->fn)
        r->fn->release(r->fn_ctx);
}

/* Records are bump-allocated from chunks and freed all at once when the
 * tape is cleared: recording is on every op's path. */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
} chunk;

#define CHUNK_BYTES (64 * 1024 - sizeof(chunk))

static void
record_attrs(record *r, tfm_attrs *a)
{
    a->n_ints = r->n_ints;
    memcpy(a->ints, record_ints(r), (size_t)r->n_ints * sizeof(int64_t));
    memcpy(a->i, r->i, sizeof a->i);
    memcpy(a->f, r->f, sizeof a->f);
    a->dtype = r->dtype;
}

struct tape_stack;

struct tfm_tape {
    unsigned flags;
    struct tape_stack *on;   /* the stack it records on, or NULL */
    chunk *chunks;           /* newest first */
    idmap ids;               /* watched/produced id -> record or LEAF */
    record **recs;
    int64_t nrec, caprec;
    int64_t live;            /* records not yet released */
    tfm_variable **vars;     /* watched variables, owned references */
    int nvars, capvars;
};

/* ---- the active stacks; NULL entries are pause barriers ----
 *
 * Note [Tapes and threads]: as in TF, each thread has its own stack of
 * active tapes, so a thread's ops are recorded only on tapes that this
 * thread entered, and a pause (tracing, tf.custom_gradient) stops only
 * this thread's tapes. tfm_tape_active_count is the thread's fast check.
 * A tape remembers the stack it is on, so that it can be taken off from
 * another thread (a tape exited or freed there: TF then forgets the tape
 * in the exiting thread only and leaves it recording, dangling, on the
 * entering thread's tape set; we stop it for real). Such a removal
 * cannot write the owner's thread-local count: it marks the stack stale
 * and the owner recounts at its next look, meanwhile only taking the
 * slow path once. All of it is guarded by the caller's lock (the GIL),
 * as before. A stack is freed when its own thread empties it; a thread
 * that ends with tapes still entered leaves its (small) stack behind
 * for those tapes to be taken off later. */

typedef struct tape_stack {
    tfm_tape **s;
    int n, cap;
    int stale;          /* another thread took a tape off: recount */
} tape_stack;

static _Thread_local tape_stack *my_stack;

static void
recount(tape_stack *st)
{
    int n = 0;
    for (int i = st->n - 1; i >= 0 && st->s[i]; i--)
        n++;
    st->stale = 0;
    tfm_tape_active_count = n;
}

/* This thread's stack, NULL when it has none. */
static inline tape_stack *
current(void)
{
    tape_stack *st = my_stack;
    if (st && st->stale)
        recount(st);
    return st;
}

static tfm_code
stack_push(tfm_tape *t)
{
    tape_stack *st = current();
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED,
                             "OOM pushing a tape");
        my_stack = st;
    }
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 8;
        tfm_tape **s = realloc(st->s, (size_t)cap * sizeof *s);
        if (!s)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED,
                             "OOM pushing a tape");
        st->s = s;
        st->cap = cap;
    }
    st->s[st->n++] = t;
    if (t)
        t->on = st;
    recount(st);
    return TFM_OK;
}

/* Take t (NULL: the topmost barrier) off stack st. */
static void
stack_remove(tape_stack *st, tfm_tape *t)
{
    if (!st)
        return;
    for (int i = st->n - 1; i >= 0; i--) {
        if (st->s[i] == t) {
            memmove(&st->s[i], &st->s[i + 1],
                    (size_t)(st->n - i - 1) * sizeof *st->s);
            st->n--;
            break;
        }
    }
    if (t)
        t->on = NULL;
    if (st != my_stack) {
        st->stale = 1;
        return;
    }
    recount(st);
    if (!st->n) {
        free(st->s);
        free(st);
        my_stack = NULL;
    }
}

tfm_code
tfm_tape_pause_all(void)
{
    return stack_push(NULL);
}

void
tfm_tape_resume_all(void)
{
    stack_remove(current(), NULL);
}

int
tfm_tape_active(void)
{
    current();
    return tfm_tape_active_count;
}

/* ---- tape lifetime ---- */

tfm_tape *
tfm_tape_new(unsigned flags)
{
    tfm_tape *t = calloc(1, sizeof *t);
    if (!t) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM creating a tape");
        return NULL;
    }
    t->flags = flags;
    return t;
}

static void *
arena_alloc(tfm_tape *t, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk *c = t->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = t->chunks;
        t->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static void
release_records(tfm_tape *t)
{
    for (int64_t i = 0; i < t->nrec; i++)
        record_release(t->recs[i]);
    free(t->recs);
    t->recs = NULL;
    t->nrec = t->caprec = t->live = 0;
    while (t->chunks) {
        chunk *next = t->chunks->next;
        free(t->chunks);
        t->chunks = next;
    }
}

void
tfm_tape_clear(tfm_tape *t)
{
    release_records(t);
    idmap_free(&t->ids);
    for (int i = 0; i < t->nvars; i++)
        tfm_variable_decref(t->vars[i]);
    free(t->vars);
    t->vars = NULL;
    t->nvars = t->capvars = 0;
}

void
tfm_tape_free(tfm_tape *t)
{
    if (!t)
        return;
    if (t->on)
        stack_remove(t->on, t);
    tfm_tape_clear(t);
    free(t);
}

tfm_code
tfm_tape_push(tfm_tape *t)
{
    if (t->on)
        return tfm_error(TFM_ERR_VALUE, "Tape is still recording, This can "
                         "happen if you try to re-enter an already-active "
                         "tape.");
    return stack_push(t);
}

tfm_code
tfm_tape_pop(tfm_tape *t)
{
    if (!t->on)
        return tfm_error(TFM_ERR_VALUE, "Tape is not recording.");
    stack_remove(t->on, t);
    return TFM_OK;
}

int
tfm_tape_is_recording(const tfm_tape *t)
{
    return t->on != NULL;
}

unsigned
tfm_tape_flags(const tfm_tape *t)
{
    return t->flags;
}

int64_t
tfm_tape_record_count(const tfm_tape *t)
{
    return t->live;
}

/* ---- watching ---- */

tfm_code
tfm_tape_watch(tfm_tape *t, const tfm_tensor *x)
{
    if (!idmap_get(&t->ids, x->id, WATCHED_LEAF, NULL))
        return tfm_error_code();
    return TFM_OK;
}

tfm_code
tfm_tape_watch_variable(tfm_tape *t, tfm_variable *v)
{
    int fresh = 0;
    int64_t *slot = idmap_get(&t->ids, v->id, WATCHED_VARIABLE, &fresh);
    if (!slot)
        return tfm_error_code();
    if (!fresh && *slot == WATCHED_VARIABLE)
        return TFM_OK;                  /* listed already */
    *slot = WATCHED_LEAF;               /* watched, not yet listed */
    if (t->nvars == t->capvars) {
        int cap = t->capvars ? t->capvars * 2 : 8;
        tfm_variable **vs = realloc(t->vars, (size_t)cap * sizeof *vs);
        if (!vs)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM watching a "
                             "variable");
        t->vars = vs;
        t->capvars = cap;
    }
    *slot = WATCHED_VARIABLE;
    /* Keep creation order (ids grow with creation): insertion sort. */
    int i = t->nvars++;
    while (i > 0 && t->vars[i - 1]->id > v->id) {
        t->vars[i] = t->vars[i - 1];
        i--;
    }
    t->vars[i] = v;
    tfm_variable_incref(v);
    return TFM_OK;
}

int
tfm_tape_variables(tfm_tape *t, tfm_variable *const **out)
{
    *out = t->vars;
    return t->nvars;
}

void
tfm_tape_variable_accessed(tfm_variable *v)
{
    tape_stack *st = current();
    if (!v->trainable || !st)
        return;
    for (int i = st->n - 1; i >= 0 && st->s[i]; i--) {
        tfm_tape *t = st->s[i];
        if (t->flags & TFM_TAPE_WATCH_ACCESSED)
            /* On OOM the variable is simply not watched; the error
             * surfaces as a None gradient, like an unwatched variable. */
            if (tfm_tape_watch_variable(t, v))
                tfm_error_clear();
    }
}

/* ---- recording ---- */

static int
tape_wants(const tfm_tape *t, tfm_tensor *const *in, int nin)
{
    if (t->flags & TFM_TAPE_VARIABLES_ONLY)
        return 0;
    for (int k = 0; k < nin; k++)
        if (differentiable(in[k]->dtype) && idmap_find(&t->ids,
                                                           in[k]->id))
            return 1;
    return 0;
}

/* Tensors of at least this many elements that a rule only needs the
 * shape of are kept as shape-only stand-ins (Note [Saved tensors] in
 * ops/grads.h); smaller ones are simply referenced, which is cheaper. */
static int64_t stub_min = 1024;

void
tfm_tape_set_stub_min(int64_t n)
{
    stub_min = n;
}

/* What a record keeps of t: t itself, or a buffer-less tensor with its
 * id, dtype, shape and device (a new reference either way). */
static tfm_tensor *
saved(tfm_tensor *t, int keep)
{
    if (keep || tfm_tensor_is_symbolic(t) || tfm_tensor_numel(t) < stub_min) {
        tfm_tensor_incref(t);
        return t;
    }
    tfm_tensor *s = tfm_tensor_symbolic(t->dtype, &t->shape, NULL, -1, 0);
    if (s) {
        s->id = t->id;
        s->device = t->device;
    }
    return s;
}

static tfm_code
tape_append(tfm_tape *t, tfm_op op, const tfm_tape_fn *fn, void *fn_ctx,
            tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout)
{
    int n_ints = a ? a->n_ints : 0;
    if (t->nrec == t->caprec) {
        int64_t cap = t->caprec ? t->caprec * 2 : 16;
        record **rs = realloc(t->recs, (size_t)cap * sizeof *rs);
        if (!rs)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM recording "
                             "an op on a tape");
        t->recs = rs;
        t->caprec = cap;
    }
    record *r = arena_alloc(t, sizeof *r
                            + (size_t)(nin + nout) * sizeof(tfm_tensor *)
                            + (size_t)n_ints * sizeof(int64_t));
    if (!r)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM recording an op "
                         "on a tape");
    /* Register the outputs first: the only step that can fail. */
    for (int k = 0; k < nout; k++) {
        int fresh = 0;
        int64_t *slot = idmap_get(&t->ids, out[k]->id, t->nrec, &fresh);
        if (!slot)
            return tfm_error_code();   /* r stays in the arena, unused */
        /* An id produced by an op is never a variable's: outputs are new
         * tensors. A re-watched leaf keeps pointing at its producer. */
        if (!fresh && *slot == WATCHED_LEAF)
            *slot = t->nrec;
    }
    r->op = op;
    r->nin = nin;
    r->nout = nout;
    r->fn = fn;
    r->fn_ctx = fn_ctx;
    if (fn)
        fn->retain(fn_ctx);
    if (a) {
        r->n_ints = n_ints;
        memcpy(record_ints(r), a->ints, (size_t)n_ints * sizeof(int64_t));
        memcpy(r->i, a->i, sizeof r->i);
        memcpy(r->f, a->f, sizeof r->f);
        r->dtype = a->dtype;
    } else {
        r->n_ints = 0;
        memset(r->i, 0, sizeof r->i);
        memset(r->f, 0, sizeof r->f);
        r->dtype = TFM_FLOAT32;
    }
    /* Custom records hand their function only dtypes and shapes. */
    tfm_grad_saves sv = fn ? (tfm_grad_saves){1, 0, 0}
                           : tfm_op_grad_saves[op];
    for (int k = 0; k < nin + nout; k++) {
        int keep = !sv.valid ||
                   (k < nin ? k < 8 && (sv.in >> k & 1)
                            : k - nin < 8 && (sv.out >> (k - nin) & 1));
        r->t[k] = saved(k < nin ? in[k] : out[k - nin], keep);
        if (!r->t[k]) {
            while (k-- > 0)
                tfm_tensor_decref(r->t[k]);
            if (fn)
                fn->release(fn_ctx);
            return tfm_error_code();
        }
    }
    t->recs[t->nrec++] = r;
    t->live++;
    return TFM_OK;
}

tfm_code
tfm_tape_record(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    /* Ops without a gradient are not kept: their outputs are simply not
     * watched, which gives None downstream. */
    tape_stack *st = current();
    if ((tfm_ops[op].flags & TFM_OPF_NONDIFF) || !tfm_op_grads[op] || !st)
        return TFM_OK;
    for (int i = st->n - 1; i >= 0 && st->s[i]; i--) {
        tfm_tape *t = st->s[i];
        if (tape_wants(t, in, nin)) {
            tfm_code rc = tape_append(t, op, NULL, NULL, in, nin, a, out,
                                      nout);
            if (rc)
                return rc;
        }
    }
    return TFM_OK;
}

int
tfm_tape_should_record(tfm_tensor *const *in, int nin)
{
    tape_stack *st = current();
    for (int i = st ? st->n - 1 : -1; i >= 0 && st->s[i]; i--)
        if (tape_wants(st->s[i], in, nin))
            return 1;
    return 0;
}

tfm_code
tfm_tape_record_custom(const tfm_tape_fn *fn, void *ctx,
                       tfm_tensor *const *in, int nin,
                       tfm_tensor *const *out, int nout)
{
    tape_stack *st = current();
    for (int i = st ? st->n - 1 : -1; i >= 0 && st->s[i]; i--) {
        tfm_tape *t = st->s[i];
        if (tape_wants(t, in, nin)) {
            tfm_code rc = tape_append(t, (tfm_op)-1, fn, ctx, in, nin, NULL,
                                      out, nout);
            if (rc)
                return rc;
        }
    }
    return TFM_OK;
}

int
tfm_tape_visit(tfm_tape *t, int (*visit)(void *ctx, void *arg), void *arg)
{
    for (int64_t i = 0; i < t->nrec; i++) {
        record *r = t->recs[i];
        if (r && r->fn) {
            int rv = visit(r->fn_ctx, arg);
            if (rv)
                return rv;
        }
    }
    return 0;
}

void
tfm_tape_clear_custom(tfm_tape *t)
{
    for (int64_t i = 0; i < t->nrec; i++) {
        record *r = t->recs[i];
        if (r && r->fn) {
            t->recs[i] = NULL;
            t->live--;
            record_release(r);
        }
    }
}

/* ---- the reverse walk ---- */

/* Pending gradients by tensor id: an index into a growing array. */
typedef struct grads {
    idmap index;
    tfm_tensor **g;
    int64_t n, cap;
} grads;

static tfm_tensor **
grads_slot(grads *gs, uint64_t id, int create)
{
    if (!create) {
        int64_t *k = idmap_find(&gs->index, id);
        return k ? &gs->g[*k] : NULL;
    }
    if (gs->n == gs->cap) {
        int64_t cap = gs->cap ? gs->cap * 2 : 16;
        tfm_tensor **g = realloc(gs->g, (size_t)cap * sizeof *g);
        if (!g) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in gradient()");
            return NULL;
        }
        gs->g = g;
        gs->cap = cap;
    }
    int fresh = 0;
    int64_t *k = idmap_get(&gs->index, id, gs->n, &fresh);
    if (!k)
        return NULL;
    if (fresh)
        gs->g[gs->n++] = NULL;
    return &gs->g[*k];
}

static void
grads_free(grads *gs)
{
    for (int64_t i = 0; i < gs->n; i++)
        if (gs->g[i])
            tfm_tensor_decref(gs->g[i]);
    free(gs->g);
    idmap_free(&gs->index);
}

/* g[id] += x (steals x). */
static tfm_code
accumulate(grads *gs, uint64_t id, tfm_tensor *x)
{
    tfm_tensor **slot = grads_slot(gs, id, 1);
    if (!slot) {
        tfm_tensor_decref(x);
        return tfm_error_code();
    }
    if (!*slot) {
        *slot = x;
        return TFM_OK;
    }
    tfm_tensor *in[2] = {*slot, x};
    tfm_tensor *sum = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    tfm_tensor_decref(x);
    if (!sum)
        return tfm_error_code();
    tfm_tensor_decref(*slot);
    *slot = sum;
    return TFM_OK;
}

static const char *
record_name(const record *r)
{
    return r->fn ? "a custom gradient" : tfm_ops[r->op].name;
}

/* A rule that returns a gradient of the wrong shape or dtype is a bug in
 * the rule: say which, instead of failing in a later op. */
static tfm_code
check_grad(const record *r, int k, const tfm_tensor *g)
{
    const tfm_tensor *x = r->t[k];
    char sa[128], sb[128];
    if (g->dtype != x->dtype)
        return tfm_error(r->fn ? TFM_ERR_INVALID_ARGUMENT : TFM_ERR_INTERNAL,
                         "the gradient of %s for input %d has dtype %s, but "
                         "the input has dtype %s", record_name(r), k,
                         tfm_dtype_name(g->dtype), tfm_dtype_name(x->dtype));
    int ok = g->shape.ndim == x->shape.ndim;
    for (int d = 0; ok && d < g->shape.ndim; d++)
        ok = g->shape.dims[d] < 0 || x->shape.dims[d] < 0 ||
             g->shape.dims[d] == x->shape.dims[d];
    if (!ok)
        return tfm_error(r->fn ? TFM_ERR_INVALID_ARGUMENT : TFM_ERR_INTERNAL,
                         "the gradient of %s for input %d has shape %s, but "
                         "the input has shape %s", record_name(r), k,
                         tfm_shape_str(&g->shape, sa, sizeof sa),
                         tfm_shape_str(&x->shape, sb, sizeof sb));
    return TFM_OK;
}

/* needed: bit k set when input k's gradient will be used (see Note
 * [Needed gradients] in ops/grad_util.h). */
static tfm_code
run_rule(record *r, tfm_tensor *const *gout, tfm_tensor **gin,
         uint64_t needed)
{
    tfm_tensor *const *in = r->t, *const *out = r->t + r->nin;
    if (r->fn)
        return r->fn->grad(r->fn_ctx, in, r->nin, out, r->nout, gout, gin);
    tfm_attrs a;
    record_attrs(r, &a);
    tfm_grad_ctx ctx = {
        .op = r->op, .in = in, .nin = r->nin, .out = out, .nout = r->nout,
        .attrs = &a, .call = tfm_call,
    };
    const tfm_grad_ctx *saved_ctx;
    uint64_t saved_mask;
    tfm_grad_set_needed(&ctx, needed, &saved_ctx, &saved_mask);
    tfm_code rc = tfm_grad_complex_wraps(r->op, in, r->nin)
                      ? tfm_grad_complex_run(&ctx, tfm_op_grads[r->op], gout,
                                             gin)
                      : tfm_op_grads[r->op](&ctx, gout, gin);
    tfm_grad_restore_needed(saved_ctx, saved_mask);
    return rc;
}

/* The backward step for one record: gradients of its outputs in, of its
 * (reachable) inputs out. */
static tfm_code
backprop_record(record *r, grads *gs, const idmap *reach,
                const idmap *sources)
{
    tfm_tensor *gout_buf[64], *gin_buf[64];
    tfm_tensor **gout = gout_buf, **gin = gin_buf;
    tfm_code rc = TFM_OK;
    int any = 0;
    if (r->nout > 64 || r->nin > 64) {
        gout = calloc((size_t)r->nout + 1, sizeof *gout);
        gin = calloc((size_t)r->nin + 1, sizeof *gin);
        if (!gout || !gin) {
            rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in gradient()");
            goto done;
        }
    }
    for (int k = 0; k < r->nout; k++) {
        tfm_tensor **slot = grads_slot(gs, r->t[r->nin + k]->id, 0);
        gout[k] = slot ? *slot : NULL;
        any |= gout[k] != NULL;
    }
    if (!any)
        goto done;
    uint64_t needed = 0;
    for (int k = 0; k < r->nin; k++) {
        gin[k] = NULL;
        if (k >= 64 || (differentiable(r->t[k]->dtype) &&
                        idmap_find(reach, r->t[k]->id)))
            needed |= k < 64 ? (uint64_t)1 << k : 0;
    }
    rc = run_rule(r, gout, gin, needed);
    /* Every consumer of these outputs came later and has run: their
     * gradients are complete and, unless asked for, no longer needed. */
    for (int k = 0; !rc && k < r->nout; k++) {
        uint64_t id = r->t[r->nin + k]->id;
        tfm_tensor **slot = grads_slot(gs, id, 0);
        if (slot && *slot && !idmap_find(sources, id)) {
            tfm_tensor_decref(*slot);
            *slot = NULL;
        }
    }
    for (int k = 0; k < r->nin; k++) {
        tfm_tensor *g = gin[k];
        gin[k] = NULL;
        if (!g)
            continue;
        if (rc || !idmap_find(reach, r->t[k]->id) ||
            !differentiable(r->t[k]->dtype)) {
            tfm_tensor_decref(g);
            continue;
        }
        rc = check_grad(r, k, g);
        if (rc) {
            tfm_tensor_decref(g);
            continue;
        }
        rc = accumulate(gs, r->t[k]->id, g);
    }
done:
    if (gin != gin_buf) {
        if (gin)
            for (int k = 0; k < r->nin; k++)
                if (gin[k])
                    tfm_tensor_decref(gin[k]);
        free(gin);
        free(gout);
    }
    return rc;
}

static tfm_code
check_seed(const tfm_tensor *target, const tfm_tensor *seed, int k)
{
    char sa[128], sb[128];
    if (seed->dtype != target->dtype)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "output_gradients[%d] "
                         "has dtype %s, but its target has dtype %s", k,
                         tfm_dtype_name(seed->dtype),
                         tfm_dtype_name(target->dtype));
    int ok = seed->shape.ndim == target->shape.ndim;
    for (int d = 0; ok && d < seed->shape.ndim; d++)
        ok = seed->shape.dims[d] < 0 || target->shape.dims[d] < 0 ||
             seed->shape.dims[d] == target->shape.dims[d];
    if (!ok)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "output_gradients[%d] "
                         "has shape %s, but its target has shape %s", k,
                         tfm_shape_str(&seed->shape, sa, sizeof sa),
                         tfm_shape_str(&target->shape, sb, sizeof sb));
    return TFM_OK;
}

/* For Note [Gradient ready hook]: when each source's gradient is done. */
typedef struct {
    int64_t at;        /* the earliest record reading the source */
    int j;
} ready_at;

static int
later_first(const void *a, const void *b)
{
    int64_t x = ((const ready_at *)a)->at, y = ((const ready_at *)b)->at;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The sources read by a relevant record, sorted by the backward step
 * after which their gradient is complete (latest record first). */
static ready_at *
ready_order(const tfm_tape *t, int64_t n, const unsigned char *relevant,
            const idmap *srcs, tfm_tensor *const *sources, int nsources,
            int *count)
{
    ready_at *order = malloc(sizeof *order * (size_t)(nsources + 1));
    if (!order) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in gradient()");
        return NULL;
    }
    for (int j = 0; j < nsources; j++)
        order[j] = (ready_at){-1, j};
    for (int64_t i = 0; i < n; i++) {
        const record *r = t->recs[i];
        if (!r || !relevant[i])
            continue;
        for (int k = 0; k < r->nin; k++) {
            uint64_t id = r->t[k]->id;
            if (!idmap_find(srcs, id))
                continue;
            for (int j = 0; j < nsources; j++)
                if (order[j].at < 0 && sources[j]->id == id)
                    order[j].at = i;
        }
    }
    int m = 0;
    for (int j = 0; j < nsources; j++)
        if (order[j].at >= 0)
            order[m++] = order[j];
    qsort(order, (size_t)m, sizeof *order, later_first);
    *count = m;
    return order;
}

tfm_code
tfm_tape_gradient(tfm_tape *t, tfm_tensor *const *targets, int ntargets,
                  tfm_tensor *const *out_grads, tfm_tensor *const *sources,
                  int nsources, int zeros_for_unconnected, int consume,
                  tfm_tensor **result)
{
    return tfm_tape_gradient_hooked(t, targets, ntargets, out_grads, sources,
                                    nsources, zeros_for_unconnected,
                                    consume, result, NULL, NULL);
}

tfm_code
tfm_tape_gradient_hooked(tfm_tape *t, tfm_tensor *const *targets,
                         int ntargets, tfm_tensor *const *out_grads,
                         tfm_tensor *const *sources, int nsources,
                         int zeros_for_unconnected, int consume,
                         tfm_tensor **result, tfm_grad_ready_fn ready,
                         void *arg)
{
    idmap reach = {0}, srcs = {0};
    grads gs = {0};
    unsigned char *relevant = NULL;
    ready_at *order = NULL;
    int nready = 0, next_ready = 0;
    tfm_code rc = TFM_OK;
    /* Ops recorded while we run (this tape recording its own gradient)
     * are not part of this walk. */
    int64_t n = t->nrec;
    for (int j = 0; j < nsources; j++)
        result[j] = NULL;

    /* Forward: which records lie on a path from a source. A source the
     * tape neither watches nor produced (a constant or a non-trainable
     * variable fed to a recorded op) is unconnected, as in TF, even
     * though a rule could compute its gradient; a source that is also a
     * target still gets its seed. */
    for (int j = 0; j < nsources; j++) {
        if (!differentiable(sources[j]->dtype))
            continue;
        if (!idmap_find(&t->ids, sources[j]->id)) {
            int is_target = 0;
            for (int k = 0; k < ntargets && !is_target; k++)
                is_target = targets[k]->id == sources[j]->id;
            if (!is_target)
                continue;
        }
        if (!idmap_get(&reach, sources[j]->id, 0, NULL) ||
            !idmap_get(&srcs, sources[j]->id, 0, NULL)) {
            rc = tfm_error_code();
            goto done;
        }
    }
    relevant = calloc((size_t)n + 1, 1);
    if (!relevant) {
        rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM in gradient()");
        goto done;
    }
    for (int64_t i = 0; reach.n && i < n; i++) {
        record *r = t->recs[i];
        if (!r)
            continue;
        for (int k = 0; k < r->nin && !relevant[i]; k++)
            relevant[i] = idmap_find(&reach, r->t[k]->id) != NULL;
        for (int k = 0; relevant[i] && k < r->nout; k++)
            if (!idmap_get(&reach, r->t[r->nin + k]->id, 0, NULL)) {
                rc = tfm_error_code();
                goto done;
            }
    }

    /* Seeds: output_gradients, else ones. */
    for (int k = 0; k < ntargets; k++) {
        if (!idmap_find(&reach, targets[k]->id) ||
            !differentiable(targets[k]->dtype))
            continue;
        tfm_tensor *seed = out_grads ? out_grads[k] : NULL;
        if (seed) {
            rc = check_seed(targets[k], seed, k);
            if (rc)
                goto done;
            tfm_tensor_incref(seed);
        } else {
            seed = tfm_grad_ones_like(tfm_call, targets[k]);
            if (!seed) {
                rc = tfm_error_code();
                goto done;
            }
        }
        rc = accumulate(&gs, targets[k]->id, seed);
        if (rc)
            goto done;
    }

    if (ready) {
        order = ready_order(t, n, relevant, &srcs, sources, nsources,
                            &nready);
        if (!order) {
            rc = tfm_error_code();
            goto done;
        }
    }

    /* Backward, in reverse order of execution. */
    for (int64_t i = n - 1; i >= 0 && gs.n; i--) {
        record *r = t->recs[i];
        if (r && relevant[i]) {
            rc = backprop_record(r, &gs, &reach, &srcs);
            if (rc)
                goto done;
        }
        for (; next_ready < nready && order[next_ready].at == i;
             next_ready++) {
            int j = order[next_ready].j;
            tfm_tensor **slot = grads_slot(&gs, sources[j]->id, 0);
            if (slot && *slot && (rc = ready(arg, j, *slot)) != TFM_OK)
                goto done;
        }
        if (consume && r) {
            t->recs[i] = NULL;
            t->live--;
            record_release(r);
        }
    }

    for (int j = 0; j < nsources; j++) {
        tfm_tensor **slot = differentiable(sources[j]->dtype)
                            ? grads_slot(&gs, sources[j]->id, 0) : NULL;
        if (slot && *slot) {
            result[j] = *slot;
            tfm_tensor_incref(result[j]);
        } else if (zeros_for_unconnected) {
            result[j] = tfm_grad_zeros_like(tfm_call, sources[j]);
            if (!result[j]) {
                rc = tfm_error_code();
                goto done;
            }
        }
    }
done:
    if (rc)
        for (int j = 0; j < nsources; j++)
            if (result[j]) {
                tfm_tensor_decref(result[j]);
                result[j] = NULL;
            }
    if (consume)
        tfm_tape_clear(t);
    grads_free(&gs);
    idmap_free(&reach);
    idmap_free(&srcs);
    free(relevant);
    free(order);
    return rc;
}
