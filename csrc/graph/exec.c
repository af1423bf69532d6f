#include "exec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../ops/state.h"
#include "fused.h"
#include "../runtime/dispatch.h"
#include "../runtime/variable.h"
#include "exec_device.h"
#include "memplan.h"
#include "passes.h"

/* Work (elements in + out) from which a kernel goes through
 * tfm_run_kernel, which runs big kernels without the interpreter lock
 * (dispatch.c's UNLOCK_MIN_ELEMENTS). With the memory plan on, such
 * kernels are called into planned outputs through tfm_run_kernel_into,
 * which releases the lock the same way. */
#define DIRECT_MAX_WORK 65536

/* Note [Memory plan]
 * ~~~~~~~~~~~~~~~~~~
 * With the "memory" pass on (TFM_PASS_MEMORY when the plan is compiled),
 * the outputs of kernel steps and fused steps whose shapes are all
 * static live in one arena: each such slot's live range (the step that writes it .. the
 * last step that reads it) and byte size go to tfm_memplan_assign
 * (memplan.c), which gives slots that are never live together the same
 * bytes. A run then makes its intermediates as views into the arena
 * (tfm_tensor_view) instead of a malloc per output.
 *
 * In place: an elementwise step (or a single-output _FusedElementwise,
 * which writes each element after its last read of it: Note [Fused
 * programs]) whose input slot is planned, dies at this step and has the
 * output's dtype and size writes its output into that input's block (the block's live range grows to cover both). Only
 * planned slots qualify: a function input, a Const or a variable read
 * has other holders, and the plan never writes into memory it does not
 * own. The elementwise loops (kernels/cpu/loops.h) read element i
 * before they write element i, and with equal sizes the aliased input
 * is the full-shape operand of any broadcast, so out == in is exact (the
 * same property AssignAdd's in-place update relies on). Cast is left
 * out: its same-dtype path is a memcpy.
 *
 * Left out of the arena, with buffers of their own: graph outputs (they
 * outlive the call), the inputs of If and While steps (a branch may
 * return its input, which then lives on in the step's output slot with
 * a lifetime the plan does not see), values of unknown shape, and
 * everything a recorded run makes (the tape keeps its tensors).
 * Assignments copy the value into the variable's own buffer
 * (tfm_variable_assign_now), prints format it, so neither keeps a view.
 *
 * The arena is allocated on a plan's first run and kept for the next
 * ones (TF's allocator keeps its memory too), so that a call of a
 * static-shape function allocates nothing but its outputs and tensor
 * headers. Two runs of one plan at once (a print callback calling the
 * function again, or another thread while a big kernel runs without the
 * interpreter lock) must not share it: `busy` marks it taken, and a run
 * that finds it taken gets an arena of its own for the call. At the end
 * of a run every slot has been released, so the plan's reference should
 * be the arena's only one; if not, some tensor kept a view (a bug
 * elsewhere), and the plan lets go of the arena rather than reuse memory
 * someone still reads. */

enum { STEP_KERNEL, STEP_READ, STEP_ASSIGN, STEP_PRINT, STEP_IF,
       STEP_WHILE, STEP_ASSERT, STEP_FUSED, STEP_COPY };

typedef struct step {
    const tfm_node *node;
    int32_t index;          /* the node's index, for errors */
    uint8_t kind, direct;
    uint8_t unlock;         /* direct, but big: may release the lock */
    int32_t *in;            /* input slots */
    int32_t out;            /* first output slot */
    int32_t *free;          /* slots whose last use is this step */
    int32_t nfree;
    tfm_plan *sub[2];       /* If: then, else; While: cond, body */
    tfm_native_lazy native;      /* STEP_FUSED: compiled on first run */
    /* STEP_FUSED: per output, the variable it may be written into
     * (Note [Fused writes into variables]); NULL when none. */
    tfm_variable **into;
} step;

struct tfm_plan {
    tfm_graph *g;
    int32_t nslots, nsteps;
    step *steps;
    int32_t nin;
    int32_t *in_slot;       /* -1: input not used */
    const tfm_meta **in_meta;
    const char **in_name;
    int32_t nconst;
    int32_t *const_slot;
    tfm_tensor **const_val;
    int32_t nout;
    int32_t *out_slot;
    int32_t *pool;          /* step inputs and free lists */
    /* Note [Memory plan]: slot -> byte offset in the arena, -1 for a
     * slot with its own buffer; NULL when the plan has none. */
    int64_t *slot_off;
    size_t arena_bytes;
    int32_t ninplace;       /* steps that write over a dying input */
    tfm_buffer *arena;      /* kept between runs; NULL before the first */
    int busy;               /* a run is using arena */
    /* Note [Arena budget]: plans holding an arena, last run first. */
    tfm_plan *lru_prev, *lru_next;
};

static const tfm_meta *
meta_of(const tfm_graph *g, tfm_ref r)
{
    return &tfm_graph_node(g, r.node)->out[r.out];
}

/* The work (elements in + out) of a kernel that can be called straight
 * into planned outputs (static shapes, a CPU kernel for its dtypes), or
 * -1 when it cannot. */
static int64_t
direct_work(const tfm_graph *g, const tfm_node *n)
{
    if (!tfm_ops[n->op].cpu)
        return -1;
    unsigned flags = tfm_ops[n->op].flags;
    int f16_ok = (flags & (TFM_OPF_F16 | TFM_OPF_ANY_DTYPE)) != 0;
    int64_t work = 0;
    for (int i = 0; i < n->nin + n->nout; i++) {
        const tfm_meta *m = i < n->nin ? meta_of(g, n->in[i])
                                       : &n->out[i - n->nin];
        if (!tfm_shape_is_known(&m->shape) ||
            (m->dtype == TFM_FLOAT16 && !f16_ok))
            return -1;
        work += tfm_shape_numel(&m->shape);
    }
    return work;
}

/* Whether a fused node's inputs and output have static shapes (the
 * memory plan then places its output; see Note [Memory plan]). */
static int
fused_static(const tfm_graph *g, const tfm_node *n)
{
    for (int i = 0; i < n->nin; i++)
        if (!tfm_shape_is_known(&meta_of(g, n->in[i])->shape))
            return 0;
    return tfm_shape_is_known(&n->out[0].shape);
}

static tfm_code
oom(void)
{
    return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM compiling a graph");
}

/* Outputs bigger than this get their own buffer (whose allocation
 * fails cleanly when it cannot be had), so arena offsets stay far from
 * wrapping. */
#define MAX_ARENA_BLOCK ((int64_t)1 << 40)

/* A meta's byte size, or -1 when unknown or past int64 (no arena slot
 * then: the step allocates, and a size that big fails there). */
static int64_t
meta_bytes(const tfm_meta *m)
{
    int64_t n = tfm_shape_numel(&m->shape), bytes;
    if (n < 0 || __builtin_mul_overflow(n, (int64_t)tfm_dtype_size(m->dtype),
                                        &bytes))
        return -1;
    return bytes;
}

/* Note [Memory plan]: offsets for the outputs of direct kernel and fused
 * steps.
 * last[] is each slot's last reading step (INT32_MAX: a graph output).
 * 0, or an error code with the error set. */
static tfm_code
plan_memory(tfm_plan *p, const int32_t *last)
{
    tfm_code rc = TFM_OK;
    int32_t *blk = malloc(sizeof(int32_t) * ((size_t)p->nslots + 1));
    uint8_t *keep = calloc((size_t)p->nslots + 1, 1);
    tfm_mem_block *blocks = malloc(sizeof(tfm_mem_block) *
                                   ((size_t)p->nslots + 1));
    p->slot_off = malloc(sizeof(int64_t) * ((size_t)p->nslots + 1));
    if (!blk || !keep || !blocks || !p->slot_off) {
        rc = oom();
        goto done;
    }
    for (int32_t sl = 0; sl < p->nslots; sl++) {
        blk[sl] = -1;
        p->slot_off[sl] = -1;
    }
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        if (st->kind == STEP_IF || st->kind == STEP_WHILE)
            for (int i = 0; i < st->node->nin; i++)
                keep[st->in[i]] = 1;
    }
    int32_t nblocks = 0;
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        const tfm_node *nd = st->node;
        if ((st->kind != STEP_KERNEL && st->kind != STEP_FUSED) ||
            !st->direct)
            continue;
        /* A matmul's output aliases nothing. */
        int inplace_ok = nd->nout == 1 &&
            (nd->op == TFM_OP_FUSED_ELEMENTWISE ||
             (st->kind == STEP_KERNEL && nd->op != TFM_OP_CAST &&
              (tfm_ops[nd->op].flags & TFM_OPF_ELEMENTWISE)));
        for (int k = 0; k < nd->nout; k++) {
            int32_t sl = st->out + k;
            int64_t size = meta_bytes(&nd->out[k]);
            if (keep[sl] || last[sl] == INT32_MAX || last[sl] < 0 ||
                size <= 0 || size > MAX_ARENA_BLOCK)
                continue;
            for (int i = 0; inplace_ok && i < nd->nin; i++) {
                int32_t in = st->in[i];
                const tfm_meta *m = meta_of(p->g, nd->in[i]);
                if (blk[in] >= 0 && last[in] == s &&
                    m->dtype == nd->out[k].dtype && meta_bytes(m) == size) {
                    blk[sl] = blk[in];
                    blocks[blk[sl]].last = last[sl];
                    p->ninplace++;
                    break;
                }
            }
            if (blk[sl] < 0) {
                blk[sl] = nblocks;
                blocks[nblocks++] = (tfm_mem_block){s, last[sl],
                                                    (size_t)size, 0};
            }
        }
    }
    if (tfm_memplan_assign(blocks, nblocks, 64, &p->arena_bytes)) {
        rc = oom();
        goto done;
    }
    for (int32_t sl = 0; sl < p->nslots; sl++)
        if (blk[sl] >= 0)
            p->slot_off[sl] = (int64_t)blocks[blk[sl]].offset;
    if (nblocks == 0) {
        free(p->slot_off);
        p->slot_off = NULL;
    }
done:
    free(blk);
    free(keep);
    free(blocks);
    return rc;
}

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
static void
arena_drop(tfm_plan *p)
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
            arena_drop(q);
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

void
tfm_plan_free(tfm_plan *p)
{
    if (!p)
        return;
    for (int32_t i = 0; i < p->nconst; i++)
        if (p->const_val && p->const_val[i])
            tfm_tensor_decref(p->const_val[i]);
    for (int32_t s = 0; p->steps && s < p->nsteps; s++) {
        tfm_plan_free(p->steps[s].sub[0]);
        tfm_plan_free(p->steps[s].sub[1]);
        free(p->steps[s].into);
    }
    free(p->steps);
    free(p->in_slot);
    free(p->in_meta);
    free(p->in_name);
    free(p->const_slot);
    free(p->const_val);
    free(p->out_slot);
    free(p->pool);
    free(p->slot_off);
    arena_drop(p);
    if (p->g)
        tfm_graph_decref(p->g);
    free(p);
}

/* The plan that computes outs (and, with effects, every assign and
 * print). use_inputs = 0: a placeholder among them is an error. */
/* Note [Fused writes into variables]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * An optimizer update traced as v.assign(f(v, g)) fuses f into one node
 * whose output the assign then copies into the variable. When the plan
 * shows output k of a compiled fused node read only by an
 * AssignVariableOp of variable V with only assigns of the node's other
 * outputs between them, the node may write output k straight into V's
 * buffer, and the assign finds its
 * value already in place (tfm_variable_assign_now copies nothing when
 * the value is the variable's own tensor). Whether it may is decided per
 * run (claim_variables): V's buffer must be held by V and otherwise only
 * by this node's inputs that die here (reads of V as full-size views,
 * which the compiled loop reads at index i before it writes index i), so
 * no one can see the new values early. Only compiled nodes (they cannot
 * fail halfway), only _FusedElementwise (a matmul's output may not alias
 * its operands), and such a run keeps the interpreter lock, under which
 * variables are always written (another thread must not read a half
 * update). Saves a copy per updated variable. */
static tfm_code
plan_into(tfm_plan *p)
{
    int32_t *readers = calloc((size_t)p->nslots + 1, sizeof(int32_t));
    int32_t *reader = malloc(sizeof(int32_t) * ((size_t)p->nslots + 1));
    if (!readers || !reader) {
        free(readers);
        free(reader);
        return oom();
    }
    for (int32_t s = 0; s < p->nsteps; s++)
        for (int i = 0; i < p->steps[s].node->nin; i++) {
            readers[p->steps[s].in[i]]++;
            reader[p->steps[s].in[i]] = s;
        }
    for (int32_t o = 0; o < p->nout; o++)
        readers[p->out_slot[o]] += 2;
    tfm_code rc = TFM_OK;
    for (int32_t s = 0; s < p->nsteps && !rc; s++) {
        step *st = &p->steps[s];
        if (st->kind != STEP_FUSED || !st->native.state ||
            st->node->op != TFM_OP_FUSED_ELEMENTWISE)
            continue;
        for (int k = 0; k < st->node->nout; k++) {
            int32_t sl = st->out + k;
            if (readers[sl] != 1)
                continue;
            /* Only assigns of this node's outputs may come between
             * (Note [Fusable updates] puts an update's assigns in a
             * row): anything else (an Assert that fails, a print whose
             * stream is Python code, a read) would see the new value
             * early. */
            int32_t a = reader[sl];
            const step *as = &p->steps[a];
            if (as->kind != STEP_ASSIGN ||
                as->node->op != TFM_OP_ASSIGN_VARIABLE)
                continue;
            /* (Two outputs assigned to one variable: the later assign
             * has the earlier between, so only the earlier is taken.) */
            tfm_variable *var = as->node->var;
            int ok = 1;
            for (int32_t j = s + 1; j < a && ok; j++)
                ok = p->steps[j].kind == STEP_ASSIGN &&
                     p->steps[j].node->op == TFM_OP_ASSIGN_VARIABLE &&
                     p->steps[j].node->var != var &&
                     p->steps[j].in[0] >= st->out &&
                     p->steps[j].in[0] < st->out + st->node->nout;
            if (!ok)
                continue;
            if (!st->into &&
                !(st->into = calloc((size_t)st->node->nout,
                                    sizeof(tfm_variable *)))) {
                rc = oom();
                break;
            }
            st->into[k] = var;
        }
    }
    free(readers);
    free(reader);
    return rc;
}

/* Whether slot sl's last reader is step st. */
static int
dies_at(const step *st, int32_t sl)
{
    for (int32_t f = 0; f < st->nfree; f++)
        if (st->free[f] == sl)
            return 1;
    return 0;
}

/* Outputs of fused step st that may go straight into their variables
 * this run become the variables' own tensors (Note [Fused writes into
 * variables]); the others keep what the memory plan placed. Returns how
 * many did. */
static int
claim_variables(const step *st, tfm_tensor **vals)
{
    int claimed = 0;
    const tfm_node *n = st->node;
    for (int k = 0; k < n->nout; k++) {
        tfm_variable *var = st->into[k];
        if (!var)
            continue;
        tfm_tensor *vt = var->value;
        if (vt->refcount != 1 || vt->device != 0 ||
            vt->dtype != n->out[k].dtype ||
            !tfm_shape_equal(&vt->shape, &n->out[k].shape))
            continue;
        int64_t held = 1;
        int ok = 1;
        for (int i = 0; i < n->nin && ok; i++) {
            const tfm_tensor *t = vals[st->in[i]];
            if (t->buf != vt->buf)
                continue;
            int again = 0;
            for (int j = 0; j < i; j++)
                again |= st->in[j] == st->in[i];
            if (again)
                continue;
            ok = t->refcount == 1 && t->offset == vt->offset &&
                 tfm_shape_equal(&t->shape, &vt->shape) &&
                 dies_at(st, st->in[i]);
            held++;
        }
        if (!ok || vt->buf->refcount != held)
            continue;
        if (vals[st->out + k])
            tfm_tensor_decref(vals[st->out + k]);
        tfm_tensor_incref(vt);
        vals[st->out + k] = vt;
        claimed++;
    }
    return claimed;
}

static tfm_plan *
plan_build(tfm_graph *g, const tfm_ref *outs, int nout, int effects,
           int use_inputs)
{
    int32_t n = tfm_graph_node_count(g);
    int32_t *base = malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint8_t *live = calloc((size_t)n + 1, 1);
    int32_t *last = NULL;
    tfm_plan *p = calloc(1, sizeof *p);
    int memory = (tfm_passes_enabled & TFM_PASS_MEMORY) != 0;
    if (!base || !live || !p) {
        oom();
        goto fail;
    }
    p->g = g;
    tfm_graph_incref(g);
    base[0] = 0;
    for (int32_t k = 0; k < n; k++)
        base[k + 1] = base[k] + tfm_graph_node(g, k)->nout;
    p->nslots = base[n];

    /* Liveness: what the outputs and the side effects need. */
    if (tfm_graph_mark_live(g, outs, nout, effects, NULL, live))
        goto fail;

    /* Steps, constants and inputs. */
    int32_t nsteps = 0, nconst = 0, nin_total = 0;
    for (int32_t k = 0; k < n; k++) {
        if (!live[k])
            continue;
        const tfm_node *nd = tfm_graph_node(g, k);
        if (nd->op == TFM_OP_PLACEHOLDER) {
            if (!use_inputs) {
                tfm_error(TFM_ERR_VALUE, "the value cannot be computed "
                          "outside tf.function '%s': it depends on the "
                          "function's input '%s'", tfm_graph_name(g),
                          nd->name);
                goto fail;
            }
        } else if (nd->op == TFM_OP_CONST) {
            nconst++;
        } else {
            nsteps++;
            nin_total += nd->nin;
        }
    }
    p->nsteps = nsteps;
    p->nconst = nconst;
    p->nout = nout;
    p->nin = use_inputs ? tfm_graph_input_count(g) : 0;
    p->steps = calloc((size_t)nsteps + 1, sizeof(step));
    p->const_slot = malloc(sizeof(int32_t) * ((size_t)nconst + 1));
    p->const_val = calloc((size_t)nconst + 1, sizeof(tfm_tensor *));
    p->out_slot = malloc(sizeof(int32_t) * ((size_t)nout + 1));
    p->in_slot = malloc(sizeof(int32_t) * ((size_t)p->nin + 1));
    p->in_meta = malloc(sizeof(tfm_meta *) * ((size_t)p->nin + 1));
    p->in_name = malloc(sizeof(char *) * ((size_t)p->nin + 1));
    last = malloc(sizeof(int32_t) * ((size_t)p->nslots + 1));
    if (!p->steps || !p->const_slot || !p->const_val || !p->out_slot ||
        !p->in_slot || !p->in_meta || !p->in_name || !last) {
        oom();
        goto fail;
    }
    for (int32_t i = 0; i < p->nin; i++) {
        int32_t k = tfm_graph_input(g, i);
        const tfm_node *nd = tfm_graph_node(g, k);
        p->in_slot[i] = live[k] ? base[k] : -1;
        p->in_meta[i] = &nd->out[0];
        p->in_name[i] = nd->name;
    }
    for (int32_t s = 0; s < p->nslots; s++)
        last[s] = -1;
    int32_t s = 0, c = 0;
    for (int32_t k = 0; k < n; k++) {
        if (!live[k])
            continue;
        const tfm_node *nd = tfm_graph_node(g, k);
        if (nd->op == TFM_OP_PLACEHOLDER)
            continue;
        if (nd->op == TFM_OP_CONST) {
            p->const_slot[c] = base[k];
            p->const_val[c] = nd->value;
            tfm_tensor_incref(nd->value);
            c++;
            continue;
        }
        step *st = &p->steps[s];
        st->node = nd;
        st->index = k;
        st->out = base[k];
        switch (nd->op) {
        case TFM_OP_READ_VARIABLE: st->kind = STEP_READ; break;
        case TFM_OP_ASSIGN_VARIABLE:
        case TFM_OP_ASSIGN_ADD_VARIABLE:
        case TFM_OP_ASSIGN_SUB_VARIABLE: st->kind = STEP_ASSIGN; break;
        case TFM_OP_PRINT: st->kind = STEP_PRINT; break;
        case TFM_OP_COPY: st->kind = STEP_COPY; break;
        case TFM_OP_ASSERT: st->kind = STEP_ASSERT; break;
        case TFM_OP_FUSED_ELEMENTWISE:
        case TFM_OP_FUSED_MATMUL:
            st->kind = STEP_FUSED;
            /* Off the CPU a fused step runs op by op on its device
             * (exec_device.c): no direct path, no native code. */
            st->direct = (uint8_t)(fused_static(g, nd) && nd->device <= 0);
            /* Compiled on the first run (tfm_native_lazy_get), so that
             * building a plan (tracing, loading a model) runs no
             * compiler. */
            if ((tfm_passes_enabled & TFM_PASS_NATIVE) && nd->device <= 0 &&
                tfm_fused_native_wanted(nd))
                st->native.state = TFM_NATIVE_WANTED;
            break;
        case TFM_OP_IF:
        case TFM_OP_WHILE:
            st->kind = nd->op == TFM_OP_IF ? STEP_IF : STEP_WHILE;
            for (int b = 0; b < 2; b++) {
                st->sub[b] = tfm_plan_new(nd->sub[b]);
                if (!st->sub[b]) {
                    s++;        /* so that tfm_plan_free sees this step */
                    p->nsteps = s;
                    goto fail;
                }
            }
            break;
        default:
            /* A graph-only op has no kernel: it needs a case above. */
            if (tfm_ops[nd->op].flags & TFM_OPF_GRAPH_ONLY) {
                tfm_error(TFM_ERR_INTERNAL, "%s: a graph-only op with no "
                          "executor step", tfm_ops[nd->op].name);
                goto fail;
            }
            st->kind = STEP_KERNEL;
            int64_t work = nd->device > 0 ? -1 : direct_work(g, nd);
            st->direct = work >= 0 && (memory || work < DIRECT_MAX_WORK);
            st->unlock = st->direct && work >= DIRECT_MAX_WORK;
        }
        for (int i = 0; i < nd->nin; i++)
            last[base[nd->in[i].node] + nd->in[i].out] = s;
        s++;
    }
    for (int i = 0; i < nout; i++) {
        p->out_slot[i] = base[outs[i].node] + outs[i].out;
        last[p->out_slot[i]] = INT32_MAX;
    }
    /* Slots nobody reads (unused outputs of a multi-output op) go as soon
     * as their op has run. */
    int32_t nfree_total = 0;
    for (int32_t k = 0, ss = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        if (!live[k] || nd->op == TFM_OP_PLACEHOLDER ||
            nd->op == TFM_OP_CONST)
            continue;
        for (int j = 0; j < nd->nout; j++)
            if (last[base[k] + j] < 0)
                last[base[k] + j] = ss;
        ss++;
    }
    for (int32_t sl = 0; sl < p->nslots; sl++)
        if (last[sl] >= 0 && last[sl] != INT32_MAX)
            nfree_total++;
    p->pool = malloc(sizeof(int32_t) * ((size_t)nin_total +
                                        (size_t)nfree_total + 1));
    if (!p->pool) {
        oom();
        goto fail;
    }
    int32_t *q = p->pool;
    for (s = 0; s < nsteps; s++) {
        step *st = &p->steps[s];
        st->in = q;
        for (int i = 0; i < st->node->nin; i++)
            *q++ = base[st->node->in[i].node] + st->node->in[i].out;
    }
    /* Free lists, grouped by step: count, then fill. */
    for (int32_t sl = 0; sl < p->nslots; sl++)
        if (last[sl] >= 0 && last[sl] != INT32_MAX)
            p->steps[last[sl]].nfree++;
    for (s = 0; s < nsteps; s++) {
        p->steps[s].free = q;
        q += p->steps[s].nfree;
        p->steps[s].nfree = 0;
    }
    for (int32_t sl = 0; sl < p->nslots; sl++)
        if (last[sl] >= 0 && last[sl] != INT32_MAX) {
            step *st = &p->steps[last[sl]];
            st->free[st->nfree++] = sl;
        }
    if (memory && plan_memory(p, last))
        goto fail;
    if (plan_into(p))
        goto fail;
    free(base);
    free(live);
    free(last);
    return p;
fail:
    free(base);
    free(live);
    free(last);
    tfm_plan_free(p);
    return NULL;
}

tfm_plan *
tfm_plan_new(tfm_graph *g)
{
    if (!tfm_graph_sealed(g)) {
        tfm_error(TFM_ERR_INTERNAL, "tfm_plan_new: graph %s is still being "
                  "traced", tfm_graph_name(g));
        return NULL;
    }
    int nout = tfm_graph_output_count(g);
    tfm_ref *outs = malloc(sizeof(tfm_ref) * ((size_t)nout + 1));
    if (!outs) {
        oom();
        return NULL;
    }
    for (int i = 0; i < nout; i++)
        outs[i] = tfm_graph_output(g, i);
    tfm_plan *p = plan_build(g, outs, nout, 1, 1);
    free(outs);
    return p;
}

int
tfm_plan_step_count(const tfm_plan *p)
{
    return p->nsteps;
}

int
tfm_plan_native_count(const tfm_plan *p, int into)
{
    int n = 0;
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        if (!into)
            n += st->native.state == TFM_NATIVE_DONE && st->native.fn;
        for (int k = 0; into && st->into && k < st->node->nout; k++)
            n += st->into[k] != NULL;
        for (int b = 0; b < 2; b++)
            if (st->sub[b])
                n += tfm_plan_native_count(st->sub[b], into);
    }
    return n;
}

void
tfm_plan_memory_stats(const tfm_plan *p, tfm_plan_memory *out)
{
    out->arena_bytes = (int64_t)p->arena_bytes;
    out->arena_slots = 0;
    out->inplace_steps = p->ninplace;
    out->arena_held = p->arena != NULL;
    for (int32_t sl = 0; p->slot_off && sl < p->nslots; sl++)
        out->arena_slots += p->slot_off[sl] >= 0;
}

/* Append where the failing op came from to the current error. */
static tfm_code
annotate(const tfm_plan *p, const step *st)
{
    tfm_code code = tfm_error_code();
    if (code == TFM_OK)
        code = TFM_ERR_INTERNAL;
    char msg[640];
    snprintf(msg, sizeof msg, "%s", tfm_error_message());
    const tfm_node *n = st->node;
    if (n->site)
        return tfm_error(code, "%s\n\nNode '%s' (%s) of tf.function '%s', "
                         "defined at:\n  %s", msg, n->name,
                         tfm_ops[n->op].name, tfm_graph_name(p->g),
                         n->site);
    return tfm_error(code, "%s\n\nNode '%s' (%s) of tf.function '%s'", msg,
                     n->name, tfm_ops[n->op].name, tfm_graph_name(p->g));
}

static int
is_nested_error(const step *st)
{
    return (st->kind == STEP_IF || st->kind == STEP_WHILE) &&
           strstr(tfm_error_message(), "\n\nNode '") != NULL;
}

static tfm_code
check_input(const tfm_plan *p, int i, const tfm_tensor *t)
{
    const tfm_meta *m = p->in_meta[i];
    int ok = !tfm_tensor_is_symbolic(t) && t->dtype == m->dtype &&
             t->shape.ndim == m->shape.ndim;
    for (int d = 0; ok && d < m->shape.ndim; d++)
        ok = m->shape.dims[d] < 0 || m->shape.dims[d] == t->shape.dims[d];
    if (ok)
        return TFM_OK;
    char a[128], b[128];
    if (tfm_tensor_is_symbolic(t))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.function '%s': "
                         "input '%s' is a symbolic tensor",
                         tfm_graph_name(p->g), p->in_name[i]);
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.function '%s': input "
                     "'%s' must be a %s tensor of shape %s, got %s of "
                     "shape %s", tfm_graph_name(p->g), p->in_name[i],
                     tfm_dtype_name(m->dtype),
                     tfm_shape_str(&m->shape, a, sizeof a),
                     tfm_dtype_name(t->dtype),
                     tfm_shape_str(&t->shape, b, sizeof b));
}

/* Note [Data-dependent shapes]: an op whose output size depends on its
 * input values (Where: the number of true elements) takes that size as
 * an attribute its Python caller counts eagerly; traced, the count is
 * unknown (-1), so the executor counts it here, on the concrete input. */
static int64_t
count_nonzero(const tfm_tensor *t)
{
    int64_t n = tfm_tensor_numel(t), count = 0;
    const void *p = tfm_tensor_data(t);
    switch (t->dtype) {
    case TFM_FLOAT32:
        for (int64_t k = 0; k < n; k++)
            count += ((const float *)p)[k] != 0;
        break;
    case TFM_FLOAT64:
        for (int64_t k = 0; k < n; k++)
            count += ((const double *)p)[k] != 0;
        break;
    case TFM_FLOAT16:
        for (int64_t k = 0; k < n; k++)
            count += (((const uint16_t *)p)[k] & 0x7fff) != 0;
        break;
    default: {
        size_t sz = tfm_dtype_size(t->dtype);
        const unsigned char *b = p;
        for (int64_t k = 0; k < n; k++) {
            int nz = 0;
            for (size_t j = 0; j < sz; j++)
                nz |= b[(size_t)k * sz + j];
            count += nz != 0;
        }
    }
    }
    return count;
}

static const tfm_attrs *
runtime_attrs(const tfm_node *n, tfm_tensor *const *ins, tfm_attrs *tmp)
{
    if (n->op == TFM_OP_WHERE && n->attrs->i[0] < 0 &&
        !tfm_tensor_is_symbolic(ins[0])) {
        tfm_tensor *h = tfm_tensor_to_host(ins[0]);
        if (!h)
            return NULL;
        *tmp = *n->attrs;
        tmp->i[0] = count_nonzero(h);
        tfm_tensor_decref(h);
        return tmp;
    }
    return n->attrs;
}

/* A step output: a view into the run's arena when the memory plan
 * placed the slot there, else a buffer of its own. */
static tfm_tensor *
new_output(const tfm_plan *p, tfm_buffer *arena, int32_t slot,
           const tfm_meta *m)
{
    if (arena && p->slot_off[slot] >= 0)
        return tfm_tensor_view(arena, (size_t)p->slot_off[slot], m->dtype,
                               &m->shape, 0);
    return tfm_tensor_new(m->dtype, &m->shape, 0);
}

static tfm_code
run_kernel_step(const tfm_plan *p, const step *st, tfm_tensor **vals,
                int recorded, tfm_buffer *arena)
{
    const tfm_node *n = st->node;
    tfm_tensor *ins[TFM_MAX_INPUTS];
    tfm_tensor *outs[TFM_MAX_OUTPUTS];
    tfm_attrs tmp;
    int nout = 0;
    tfm_code rc;
    for (int i = 0; i < n->nin; i++)
        ins[i] = vals[st->in[i]];
    const tfm_attrs *attrs = runtime_attrs(n, ins, &tmp);
    if (!attrs)
        return tfm_error_code();
    int direct = !recorded && st->direct;
    for (int i = 0; direct && i < n->nin; i++)
        direct = ins[i]->device == 0;
    if (direct) {
        for (int k = 0; k < n->nout; k++) {
            vals[st->out + k] = new_output(p, arena, st->out + k,
                                           &n->out[k]);
            if (!vals[st->out + k])
                return tfm_error_code();
        }
        if (tfm_log_placement)
            tfm_log_device_placement(n->op, 0);
        if (st->unlock)
            return tfm_run_kernel_into(n->op, ins, n->nin, n->attrs,
                                       &vals[st->out], n->nout);
        return tfm_ops[n->op].cpu(n->op, ins, n->nin, n->attrs,
                                  &vals[st->out], n->nout, &tfm_kctx_cpu);
    }
    /* The placed device (Note [Device seam]); a recorded run goes
     * through tfm_call, which runs where the inputs are. */
    int dev = n->device < 0 ? 0 : n->device;
    rc = recorded ? tfm_call(n->op, ins, n->nin, attrs, outs, &nout)
                  : tfm_run_kernel_on(n->op, dev, ins, n->nin, attrs, outs,
                                      &nout);
    if (rc)
        return rc;
    for (int k = 0; k < nout; k++) {
        if (k < n->nout)
            vals[st->out + k] = outs[k];
        else
            tfm_tensor_decref(outs[k]);
    }
    if (nout != n->nout)
        return tfm_error(TFM_ERR_INTERNAL, "%s made %d outputs when run "
                         "but %d when traced", tfm_ops[n->op].name, nout,
                         n->nout);
    return TFM_OK;
}

/* A scalar condition's value: 1 / 0, or -1 with the error set. */
static int
truth(tfm_tensor *t, const char *what)
{
    if (tfm_tensor_is_symbolic(t) || tfm_tensor_numel(t) != 1) {
        char s[128];
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s must be a scalar, got "
                  "shape %s", what, tfm_shape_str(&t->shape, s, sizeof s));
        return -1;
    }
    return tfm_exec_scalar(t) != 0;
}

/* The inputs of sub-graph b: node input map[i] for each, where the node
 * inputs are vals[] through in[] (If), or cur[] for the first nvars and
 * vals[] through in[] after (While). */
static void
sub_inputs(const step *st, int b, tfm_tensor **vals, tfm_tensor **cur,
           int nvars, tfm_tensor **out)
{
    const tfm_node *n = st->node;
    int nin = tfm_graph_input_count(n->sub[b]);
    for (int i = 0; i < nin; i++) {
        int32_t k = n->submap[b][i];
        out[i] = k < nvars ? cur[k] : vals[st->in[k]];
    }
}

static tfm_code
run_if(const step *st, tfm_tensor **vals, int recorded)
{
    tfm_tensor *in[TFM_MAX_INPUTS];
    int which = truth(vals[st->in[0]], "tf.cond's predicate");
    if (which < 0)
        return tfm_error_code();
    int b = which ? 0 : 1;
    sub_inputs(st, b, vals, NULL, 0, in);
    return tfm_plan_run(st->sub[b], in,
                        tfm_graph_input_count(st->node->sub[b]),
                        &vals[st->out], recorded);
}

static tfm_code
loop_var_changed(const tfm_node *n, int k, const tfm_tensor *t)
{
    char a[128], b[128];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.while_loop: loop "
                     "variable %d is %s of shape %s after an iteration, but "
                     "the loop was traced for %s of shape %s", k,
                     tfm_dtype_name(t->dtype),
                     tfm_shape_str(&t->shape, a, sizeof a),
                     tfm_dtype_name(n->out[k].dtype),
                     tfm_shape_str(&n->out[k].shape, b, sizeof b));
}

static tfm_code
run_while(const step *st, tfm_tensor **vals, int recorded)
{
    const tfm_node *n = st->node;
    int nvars = (int)n->attrs->i[0];
    tfm_tensor *cur[TFM_MAX_OUTPUTS], *next[TFM_MAX_OUTPUTS];
    tfm_tensor *in[TFM_MAX_INPUTS], *c = NULL;
    int64_t max_iter = -1;
    tfm_code rc = TFM_OK;
    if (n->attrs->i[1]) {
        tfm_tensor *m = vals[st->in[n->nin - 1]];
        if (tfm_tensor_numel(m) != 1 || tfm_dtype_is_float(m->dtype))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.while_loop: "
                             "maximum_iterations must be an integer scalar");
        max_iter = (int64_t)tfm_exec_scalar(m);
        /* A negative limit runs no iteration, as TF's i < limit; -1
         * below means "no limit". */
        if (max_iter < 0)
            max_iter = 0;
    }
    for (int k = 0; k < nvars; k++) {
        cur[k] = vals[st->in[k]];
        tfm_tensor_incref(cur[k]);
    }
    for (int64_t iter = 0; max_iter < 0 || iter < max_iter; iter++) {
        sub_inputs(st, 0, vals, cur, nvars, in);
        rc = tfm_plan_run(st->sub[0], in,
                          tfm_graph_input_count(n->sub[0]), &c, recorded);
        if (rc)
            goto done;
        int go = truth(c, "tf.while_loop's condition");
        tfm_tensor_decref(c);
        if (go < 0) {
            rc = tfm_error_code();
            goto done;
        }
        if (!go)
            break;
        sub_inputs(st, 1, vals, cur, nvars, in);
        rc = tfm_plan_run(st->sub[1], in,
                          tfm_graph_input_count(n->sub[1]), next, recorded);
        if (rc)
            goto done;
        /* The body's outputs may be less specific than the loop
         * variables (or, from a hostile file, other shapes): the next
         * condition would check them, but a last iteration that
         * maximum_iterations ends hands them straight to the ops after
         * the loop, whose buffers are sized from the While's outputs. */
        for (int k = 0; k < nvars && !rc; k++)
            if (!tfm_meta_admits(&n->out[k], next[k]))
                rc = loop_var_changed(n, k, next[k]);
        for (int k = 0; k < nvars; k++) {
            tfm_tensor_decref(rc ? next[k] : cur[k]);
            if (!rc)
                cur[k] = next[k];
        }
        if (rc)
            goto done;
    }
done:
    for (int k = 0; k < nvars; k++) {
        if (rc)
            tfm_tensor_decref(cur[k]);
        else
            vals[st->out + k] = cur[k];
    }
    return rc;
}

static tfm_code
run_assert(const step *st, tfm_tensor **vals)
{
    const tfm_node *n = st->node;
    tfm_tensor *data[TFM_MAX_INPUTS];
    int ok = truth(vals[st->in[0]], "tf.Assert's condition");
    if (ok != 0)
        return ok < 0 ? tfm_error_code() : TFM_OK;
    for (int i = 1; i < n->nin; i++)
        data[i - 1] = vals[st->in[i]];
    return tfm_exec_assert_failed(n, data);
}

static tfm_code
read_mismatch(const tfm_plan *p, const tfm_node *n, const tfm_tensor *v)
{
    char a[128], b[128];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.function '%s': the "
                     "variable read by %s is now %s of shape %s, but the "
                     "function was traced for %s of shape %s (graphs "
                     "have a known rank: trace a new tf.function for the "
                     "new value)", tfm_graph_name(p->g), n->name,
                     tfm_dtype_name(v->dtype),
                     tfm_shape_str(&v->shape, a, sizeof a),
                     tfm_dtype_name(n->out[0].dtype),
                     tfm_shape_str(&n->out[0].shape, b, sizeof b));
}

static tfm_code
run_step(const tfm_plan *p, const step *st, tfm_tensor **vals, int recorded,
         tfm_buffer *arena)
{
    const tfm_node *n = st->node;
    switch (st->kind) {
    case STEP_KERNEL:
        return run_kernel_step(p, st, vals, recorded, arena);
    case STEP_READ: {
        /* A variable declared with unknown dims may have been assigned
         * a value of another shape since the trace; the plan relies on
         * the dims it saw as known, so any other value is an error. */
        tfm_tensor *v = n->var->value;
        if (!tfm_meta_admits(&n->out[0], v))
            return read_mismatch(p, n, v);
        if (recorded)
            return tfm_variable_read(n->var, &vals[st->out]);
        tfm_tensor *t = tfm_tensor_view(v->buf, v->offset, v->dtype,
                                        &v->shape, v->device);
        if (!t)
            return tfm_error_code();
        t->id = n->var->id;     /* see Note [Variable ids] */
        vals[st->out] = t;
        return TFM_OK;
    }
    case STEP_ASSIGN: {
        tfm_assign_mode mode = (tfm_assign_mode)(n->op -
                                                 TFM_OP_ASSIGN_VARIABLE);
        tfm_tensor *value = vals[st->in[0]];
        return recorded ? tfm_variable_assign(n->var, value, mode)
                        : tfm_variable_assign_now(n->var, value, mode);
    }
    case STEP_PRINT:
    case STEP_COPY: {
        tfm_tensor *ins[TFM_MAX_INPUTS];
        for (int i = 0; i < n->nin; i++)
            ins[i] = vals[st->in[i]];
        return st->kind == STEP_PRINT
                   ? tfm_exec_print(n, ins)
                   : tfm_exec_copy(n, ins[0], &vals[st->out], recorded);
    }
    case STEP_IF:
        return run_if(st, vals, recorded);
    case STEP_WHILE:
        return run_while(st, vals, recorded);
    case STEP_ASSERT:
        return run_assert(st, vals);
    case STEP_FUSED: {
        /* graph/fused.c: a fused group of elementwise ops, block by
         * block (Note [Fused programs]). */
        tfm_tensor *ins[TFM_MAX_INPUTS];
        for (int i = 0; i < n->nin; i++)
            ins[i] = vals[st->in[i]];
        if (n->device > 0)
            return tfm_exec_fused_on_device(n, ins, &vals[st->out],
                                            recorded);
        for (int k = 0; arena && k < n->nout; k++)
            if (p->slot_off[st->out + k] >= 0 &&
                !(vals[st->out + k] = new_output(p, arena, st->out + k,
                                                 &n->out[k])))
                return tfm_error_code();
        /* (The lazy program is a cache inside the const plan, written
         * once under tfm_native_lazy_get's lock.) */
        tfm_fused_native_fn native =
            recorded ? NULL
                     : tfm_native_lazy_get((tfm_native_lazy *)&st->native,
                                           p->g, n);
        int keep_lock = native && st->into && claim_variables(st, vals);
        return tfm_fused_run(n, ins, &vals[st->out], recorded, native,
                             keep_lock);
    }
    }
    return tfm_error(TFM_ERR_INTERNAL, "bad plan step");
}

/* The arena for one run (Note [Memory plan]): the plan's own when free,
 * else one for this run only. NULL (no error) when the run allocates
 * per output; NULL with *rc set when out of memory. */
static tfm_buffer *
arena_take(const tfm_plan *p, int recorded, tfm_code *rc)
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

static void
arena_give(const tfm_plan *p, tfm_buffer *arena)
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
        arena_drop(mp);
        return;
    }
    if (lru_head != mp) {
        lru_unlink(mp);
        lru_push_front(mp);
    }
    if (arena_held_bytes > tfm_plan_arena_budget)
        arena_trim(mp);
}

tfm_code
tfm_plan_run(const tfm_plan *p, tfm_tensor *const *in, int nin,
             tfm_tensor **out, int recorded)
{
    tfm_tensor *local[64];
    tfm_tensor **vals = local;
    tfm_buffer *arena = NULL;
    tfm_code rc = TFM_OK;
    if (nin != p->nin)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.function '%s' takes "
                         "%d tensor inputs, got %d", tfm_graph_name(p->g),
                         p->nin, nin);
    for (int i = 0; i < nin; i++)
        if ((rc = check_input(p, i, in[i])))
            return rc;
    if (p->nslots > 64) {
        vals = calloc((size_t)p->nslots, sizeof *vals);
        if (!vals)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM running "
                             "tf.function '%s'", tfm_graph_name(p->g));
    } else {
        memset(vals, 0, sizeof(tfm_tensor *) * (size_t)p->nslots);
    }
    for (int i = 0; i < nin; i++)
        if (p->in_slot[i] >= 0) {
            tfm_tensor_incref(in[i]);
            vals[p->in_slot[i]] = in[i];
        }
    for (int32_t c = 0; c < p->nconst; c++) {
        tfm_tensor_incref(p->const_val[c]);
        vals[p->const_slot[c]] = p->const_val[c];
    }
    arena = arena_take(p, recorded, &rc);
    if (rc)
        goto done;
    for (int32_t s = 0; s < p->nsteps; s++) {
        const step *st = &p->steps[s];
        if ((rc = run_step(p, st, vals, recorded, arena))) {
            /* Errors inside a sub-graph already name their node. */
            if (!is_nested_error(st))
                rc = annotate(p, st);
            goto done;
        }
        for (int32_t f = 0; f < st->nfree; f++) {
            tfm_tensor *t = vals[st->free[f]];
            if (t) {
                tfm_tensor_decref(t);
                vals[st->free[f]] = NULL;
            }
        }
    }
    for (int32_t i = 0; i < p->nout; i++) {
        out[i] = vals[p->out_slot[i]];
        if (!out[i]) {
            for (int32_t j = 0; j < i; j++) {
                tfm_tensor_decref(out[j]);
                out[j] = NULL;
            }
            rc = tfm_error(TFM_ERR_INTERNAL, "tf.function '%s': output %d "
                           "was not computed", tfm_graph_name(p->g), i);
            goto done;
        }
        tfm_tensor_incref(out[i]);
    }
done:
    for (int32_t sl = 0; sl < p->nslots; sl++)
        if (vals[sl])
            tfm_tensor_decref(vals[sl]);
    arena_give(p, arena);
    if (vals != local)
        free(vals);
    return rc;
}

tfm_code
tfm_graph_eval(tfm_graph *g, tfm_ref r, tfm_tensor **out)
{
    tfm_plan *p = plan_build(g, &r, 1, 0, 0);
    if (!p)
        return tfm_error_code();
    tfm_code rc = tfm_plan_run(p, NULL, 0, out, 0);
    tfm_plan_free(p);
    return rc;
}
