/* Building a plan: a graph's nodes as steps over value slots, with the
 * memory plan (Note [Memory plan] in exec_impl.h). */
#include "exec_impl.h"
#include "exec_cugraph.h"

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
    int64_t work = 0;
    for (int i = 0; i < n->nin + n->nout; i++) {
        const tfm_meta *m = i < n->nin ? meta_of(g, n->in[i])
                                       : &n->out[i - n->nin];
        /* Strings go through the dispatcher, which settles their
         * references, and never into the arena (Note [String
         * elements]). */
        if (!tfm_shape_is_known(&m->shape) || m->dtype == TFM_STRING ||
            !tfm_kernel_takes(n->op, m->dtype, TFM_CPU))
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

/* The view (Note [Views of live inputs] in exec.c) that kernel step n's
 * output may be, for static shapes on the CPU; VIEW_NONE if none. */
static uint8_t
view_kind(const tfm_graph *g, const tfm_node *n)
{
    if (n->op != TFM_OP_RESHAPE && n->op != TFM_OP_EXPAND_DIMS &&
        n->op != TFM_OP_SQUEEZE && n->op != TFM_OP_GATHER)
        return VIEW_NONE;
    const tfm_meta *x = meta_of(g, n->in[0]);
    if (x->dtype == TFM_STRING || n->out[0].dtype != x->dtype)
        return VIEW_NONE;
    switch (n->op) {
    case TFM_OP_RESHAPE:
    case TFM_OP_EXPAND_DIMS:
    case TFM_OP_SQUEEZE:
        return VIEW_SAME_BYTES;
    case TFM_OP_GATHER:
        /* params[i] for one scalar index on axis 0: one whole row. */
        return n->attrs->i[0] == 0 && n->attrs->i[1] == 0 &&
                       x->shape.ndim >= 1 &&
                       meta_of(g, n->in[1])->shape.ndim == 0
                   ? VIEW_ROW : VIEW_NONE;
    default:
        return VIEW_NONE;
    }
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
        step *st = &p->steps[s];
        const tfm_node *nd = st->node;
        if ((st->kind != STEP_KERNEL && st->kind != STEP_FUSED) ||
            !st->direct)
            continue;
        /* A view needs no block. Of an input in the arena it would have
         * to keep that input's block from being reused or written in
         * place for as long as it lives, so there the step copies as
         * before (or, for a reshape of a dying input, sits on its
         * block below). */
        if (st->view) {
            if (blk[st->in[0]] < 0)
                continue;
            st->view = VIEW_NONE;
        }
        /* A matmul's output aliases nothing. A reshape's (its kernel a
         * byte copy) may sit on its dying input: the copy is then a
         * no-op. */
        int inplace_ok = nd->nout == 1 &&
            (nd->op == TFM_OP_FUSED_ELEMENTWISE || nd->op == TFM_OP_RESHAPE ||
             nd->op == TFM_OP_EXPAND_DIMS || nd->op == TFM_OP_SQUEEZE ||
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

void
tfm_plan_free(tfm_plan *p)
{
    if (!p)
        return;
    tfm_cugraph_free(p);
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
    tfm_exec_arena_drop(p);
    if (p->g)
        tfm_graph_decref(p->g);
    free(p);
}

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

/* The plan that computes outs (and, with effects, every assign and
 * print). use_inputs = 0: a placeholder among them is an error. */
tfm_plan *
tfm_exec_plan_build(tfm_graph *g, const tfm_ref *outs, int nout,
                    int effects, int use_inputs)
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
            /* Off the CPU a fused step runs on its device
             * (exec_device.c: the device's kernel for the whole program,
             * else op by op): no direct path, no native code. */
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
            /* Static shapes only: the trace checked them, so the kernel
             * may run without the dispatcher's checks. */
            st->over_input = work >= 0 && tfm_exec_writes_over_input(nd->op);
            st->view = work >= 0 ? view_kind(g, nd) : VIEW_NONE;
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
    tfm_plan *p = tfm_exec_plan_build(g, outs, nout, 1, 1);
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

