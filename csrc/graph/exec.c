/* Running a plan (built by exec_plan.c): the steps in order, over slots,
 * in the plan's arena. */
#include "exec_impl.h"

#include <stdatomic.h>

#include "exec_cugraph.h"

/* Note [Executor counters]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * What a loop costs per iteration beyond its kernels is the steps it
 * runs and the outputs it allocates; both are counted here, so that a
 * test can hold a compiled loop to a fixed amount of work per iteration
 * on any machine (tests/test_loop_overhead.py), where a timing would
 * only hold on a quiet one. One relaxed add per plan run, per output
 * that gets memory of its own (beside its malloc) and per While
 * iteration: nothing per kernel step. */
static _Atomic int64_t count_steps, count_fresh, count_iterations,
    count_views;

static inline void
tally(_Atomic int64_t *c, int64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void
tfm_exec_counters(tfm_exec_counts *out)
{
    out->steps = atomic_load_explicit(&count_steps, memory_order_relaxed);
    out->fresh = atomic_load_explicit(&count_fresh, memory_order_relaxed);
    out->iterations = atomic_load_explicit(&count_iterations,
                                           memory_order_relaxed);
}

int64_t
tfm_exec_view_count(void)
{
    return atomic_load_explicit(&count_views, memory_order_relaxed);
}

static tfm_code plan_run(const tfm_plan *p, tfm_tensor *const *in, int nin,
                         tfm_tensor **out, int recorded,
                         const uint8_t *owned, tfm_tensor *const *consts);

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
    case TFM_BFLOAT16:
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
    tally(&count_fresh, 1);
    return tfm_tensor_new(m->dtype, &m->shape, 0);
}

/* Note [Writing over a loop variable]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Tensors are immutable, so a scatter (TensorScatterUpdate/Add/Min/Max)
 * copies its whole input before it writes a few rows. In a loop that
 * fills a buffer one row per iteration (a TensorArray's writes, or the
 * gradient of x[i] summed into an accumulator: Note [Sparse loop
 * accumulators] in pass_simplify.c) that copy makes the loop O(n^2) in
 * its length. As TF's kernels do (forward_input_or_allocate_output),
 * the scatter writes over its input instead when no one else can see
 * it: the input slot dies at this step, this slot holds the tensor's
 * only reference and the tensor the buffer's only one, the memory is
 * the core's own (not borrowed from NumPy) and on the CPU, and no other
 * input of the step is the same slot. The kernel then skips the copy of
 * an input onto itself. Only for static shapes (the trace checked the
 * inputs, so the kernel is called without the dispatcher) and never in
 * a recorded run, whose tape keeps its inputs.
 *
 * What makes the sole reference happen is run_while: a loop variable's
 * value is handed to the body (its reference moves rather than being
 * shared), so inside the body the variable's placeholder slot holds it
 * alone. The initial value moves too when the While is its slot's last
 * reader (last_reader), so a buffer made just for the loop is written
 * in place from the first iteration; one that others still hold (a
 * function input, a Const, a value read again after the loop) is copied
 * once, by the first iteration. */
int
tfm_exec_writes_over_input(tfm_op op)
{
    return op == TFM_OP_TENSOR_SCATTER_UPDATE ||
           op == TFM_OP_TENSOR_SCATTER_ADD ||
           op == TFM_OP_TENSOR_SCATTER_MIN ||
           op == TFM_OP_TENSOR_SCATTER_MAX;
}

/* Input 0 of st, when st may write its output over it (Note [Writing
 * over a loop variable]); else NULL. */
static tfm_tensor *
input_to_write_over(const step *st, tfm_tensor **vals)
{
    const tfm_node *n = st->node;
    tfm_tensor *t = vals[st->in[0]];
    if (!t || t->refcount != 1 || !t->buf || t->buf->refcount != 1 ||
        t->buf->release || t->buf->strings || t->device != 0 ||
        t->buf->device != 0 || t->dtype != n->out[0].dtype ||
        !tfm_shape_equal(&t->shape, &n->out[0].shape) ||
        !dies_at(st, st->in[0]))
        return NULL;
    for (int i = 1; i < n->nin; i++)
        if (st->in[i] == st->in[0] || vals[st->in[i]]->device != 0)
            return NULL;
    return t;
}

/* Note [Views of live inputs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A reshape (Reshape, ExpandDims, Squeeze) keeps its input's bytes, and
 * GatherV2 of one scalar index on axis 0 is one contiguous row of them:
 * in a run that no tape records, such a step's output is a view of its
 * input's buffer (tfm_tensor_view, which holds a reference to the
 * buffer) rather than a copy. An LSTM's loops read a row of a stack
 * this way at every step (tfmini/keras/layers/rnn_fused.py), and its
 * gradient reshapes stacks that are also returned.
 *
 * A view's bytes must not change while it lives. Nothing writes a
 * tensor's memory after its kernel but three things, and each one
 * first checks that no one else holds the buffer:
 * - a scatter writing over its input (Note [Writing over a loop
 *   variable]) wants the buffer's refcount to be 1, and a live view is
 *   one more;
 * - a fused update written into a variable (claim_variables) counts
 *   every holder of the variable's buffer;
 * - a variable assign writes in place only into a buffer no one shares
 *   (tfm_variable_assign_now).
 * The arena is the exception: its blocks are reused by slots whose
 * lives do not overlap, and written in place by elementwise steps, on
 * the plan's word alone. So the plan makes views only of inputs that
 * are not in the arena (plan_memory); of an arena input the step copies
 * as before. Recorded runs go through tfm_call, whose tape must see the
 * op. The step counts in count_views, so that tests can hold a loop to
 * its views without timing it (tests/test_exec_views.py). */
static tfm_tensor *
view_of_input(const step *st, tfm_tensor **vals)
{
    const tfm_node *n = st->node;
    const tfm_tensor *x = vals[st->in[0]];
    if (!x->buf || x->device != 0 || x->buf->device != 0 ||
        x->dtype != n->out[0].dtype)
        return NULL;
    size_t off = x->offset;
    if (st->view == VIEW_ROW) {
        const tfm_tensor *ix = vals[st->in[1]];
        if (!ix->buf || ix->device != 0)
            return NULL;
        int64_t i;
        if (ix->dtype == TFM_INT32)
            i = *(const int32_t *)tfm_tensor_data(ix);
        else if (ix->dtype == TFM_INT64)
            i = *(const int64_t *)tfm_tensor_data(ix);
        else
            return NULL;
        /* Out of range: the kernel raises TF's error. */
        if (i < 0 || i >= x->shape.dims[0])
            return NULL;
        off += (size_t)i * (size_t)tfm_shape_numel(&n->out[0].shape) *
               tfm_dtype_size(x->dtype);
    } else if (tfm_tensor_numel(x) != tfm_shape_numel(&n->out[0].shape)) {
        return NULL;
    }
    tfm_tensor *v = tfm_tensor_view(x->buf, off, n->out[0].dtype,
                                    &n->out[0].shape, 0);
    if (v)
        tally(&count_views, 1);
    else
        tfm_error_clear();
    return v;
}

/* Note [py_function outputs of unknown shape]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A traced tf.py_function whose Tout leaves a dimension unknown (a bare
 * dtype, as TF allows) cannot have its outputs allocated before the call:
 * their shapes are known only when the Python function returns. Such an
 * EagerPyFunc step passes the kernel no output tensors (NULLs), and the
 * hook (python/py_func.c) hands back the tensors the function returned;
 * here they are checked against the traced dtypes and known dims. The
 * node is NONDIFF, so a recorded run needs nothing from the dispatcher. */
static int
py_func_unknown_shape(const tfm_node *n)
{
    if (n->op != TFM_OP_PY_FUNC)
        return 0;
    for (int k = 0; k < n->nout; k++)
        for (int d = 0; d < n->out[k].shape.ndim; d++)
            if (n->out[k].shape.dims[d] < 0)
                return 1;
    return 0;
}

static tfm_code
run_py_func_step(const step *st, tfm_tensor **vals)
{
    const tfm_node *n = st->node;
    tfm_tensor *ins[TFM_MAX_INPUTS];
    tfm_tensor *made[TFM_MAX_OUTPUTS] = {0};
    for (int i = 0; i < n->nin; i++)
        ins[i] = vals[st->in[i]];
    if (tfm_log_placement)
        tfm_log_device_placement(n->op, 0);
    tfm_code rc = tfm_ops[n->op].cpu(n->op, ins, n->nin, n->attrs, made,
                                     n->nout, &tfm_kctx_cpu);
    for (int k = 0; !rc && k < n->nout; k++) {
        const tfm_meta *m = &n->out[k];
        int ok = made[k] && made[k]->dtype == m->dtype &&
                 made[k]->shape.ndim == m->shape.ndim;
        for (int d = 0; ok && d < m->shape.ndim; d++)
            ok = m->shape.dims[d] < 0 ||
                 m->shape.dims[d] == made[k]->shape.dims[d];
        if (!ok) {
            char a[128];
            rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "EagerPyFunc: output "
                           "%d is not a %s tensor of shape %s", k,
                           tfm_dtype_name(m->dtype),
                           tfm_shape_str(&m->shape, a, sizeof a));
        }
    }
    for (int k = 0; k < n->nout; k++) {
        if (rc && made[k])
            tfm_tensor_decref(made[k]);
        else if (!rc)
            vals[st->out + k] = made[k];
    }
    return rc;
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
    if (st->view && !recorded &&
        (vals[st->out] = view_of_input(st, vals))) {
        if (tfm_log_placement)
            tfm_log_device_placement(n->op, 0);
        return TFM_OK;
    }
    if (py_func_unknown_shape(n))
        return run_py_func_step(st, vals);
    for (int i = 0; i < n->nin; i++)
        ins[i] = vals[st->in[i]];
    const tfm_attrs *attrs = runtime_attrs(n, ins, &tmp);
    if (!attrs)
        return tfm_error_code();
    tfm_tensor *over = recorded || !st->over_input
                           ? NULL : input_to_write_over(st, vals);
    if (over) {
        tfm_tensor_incref(over);
        vals[st->out] = over;       /* a scatter's only output */
        if (tfm_log_placement)
            tfm_log_device_placement(n->op, 0);
        /* The work is the updates now, not the whole tensor. */
        if (tfm_tensor_numel(ins[n->nin - 1]) >= DIRECT_MAX_WORK)
            return tfm_run_kernel_into(n->op, ins, n->nin, n->attrs,
                                       &vals[st->out], n->nout);
        return tfm_ops[n->op].cpu(n->op, ins, n->nin, n->attrs,
                                  &vals[st->out], n->nout, &tfm_kctx_cpu);
    }
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
    tally(&count_fresh, nout);
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

/* Whether While step st is the last reader of loop variable k's initial
 * value, through that input alone: then the loop takes the slot's
 * reference over instead of sharing it, so that a value nobody else
 * holds reaches the body as its sole reference and a scatter writes
 * over it from the first iteration on (Note [Writing over a loop
 * variable]), not only from the second. */
static int
last_reader(const step *st, int k)
{
    int32_t sl = st->in[k];
    if (!dies_at(st, sl))
        return 0;
    for (int i = 0; i < st->node->nin; i++)
        if (i != k && st->in[i] == sl)
            return 0;
    return 1;
}

static tfm_code
run_while(const step *st, tfm_tensor **vals, int recorded)
{
    const tfm_node *n = st->node;
    int nvars = (int)n->attrs->i[0];
    tfm_tensor *cur[TFM_MAX_OUTPUTS], *next[TFM_MAX_OUTPUTS];
    tfm_tensor *in[TFM_MAX_INPUTS], *c = NULL;
    uint8_t owned[TFM_MAX_INPUTS];
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
        if (recorded || !last_reader(st, k))
            tfm_tensor_incref(cur[k]);
        else
            vals[st->in[k]] = NULL;
    }
    /* The body takes over each loop variable's reference (Note [Writing
     * over a loop variable]); one fed to two body inputs stays shared. */
    int nb = tfm_graph_input_count(n->sub[1]);
    for (int i = 0; i < nb; i++) {
        int32_t k = n->submap[1][i];
        int uses = 0;
        for (int j = 0; k < nvars && j < nb; j++)
            uses += n->submap[1][j] == k;
        owned[i] = uses == 1;
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
        for (int i = 0; i < nb; i++)
            if (owned[i])
                cur[n->submap[1][i]] = NULL;
        rc = plan_run(st->sub[1], in, nb, next, recorded, owned, NULL);
        if (rc)
            goto done;
        tally(&count_iterations, 1);
        /* The body's outputs may be less specific than the loop
         * variables (or, from a hostile file, other shapes): the next
         * condition would check them, but a last iteration that
         * maximum_iterations ends hands them straight to the ops after
         * the loop, whose buffers are sized from the While's outputs. */
        for (int k = 0; k < nvars && !rc; k++)
            if (!tfm_meta_admits(&n->out[k], next[k]))
                rc = loop_var_changed(n, k, next[k]);
        for (int k = 0; k < nvars; k++) {
            if (rc)
                tfm_tensor_decref(next[k]);
            else if (cur[k])
                tfm_tensor_decref(cur[k]);
            if (!rc)
                cur[k] = next[k];
        }
        if (rc)
            goto done;
    }
done:
    for (int k = 0; k < nvars; k++) {
        if (rc) {
            if (cur[k])
                tfm_tensor_decref(cur[k]);
        } else {
            vals[st->out + k] = cur[k];
        }
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
        tally(&count_fresh, st->kind == STEP_COPY);
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
        int fresh = 0;
        for (int k = 0; k < n->nout; k++)
            fresh += vals[st->out + k] == NULL;
        tally(&count_fresh, fresh);
        return tfm_fused_run(n, ins, &vals[st->out], recorded, native,
                             keep_lock);
    }
    }
    return tfm_error(TFM_ERR_INTERNAL, "bad plan step");
}

/* tfm_plan_run, where owned[i] (owned may be NULL) says that the run
 * takes over the caller's reference to in[i] rather than adding one of
 * its own (run_while's loop variables: Note [Writing over a loop
 * variable]); those references are dropped on every path. consts (may
 * be NULL): tfm_plan_run_consts's. */
static tfm_code
plan_run(const tfm_plan *p, tfm_tensor *const *in, int nin,
         tfm_tensor **out, int recorded, const uint8_t *owned,
         tfm_tensor *const *consts)
{
    tfm_tensor *local[64];
    tfm_tensor **vals = local;
    tfm_buffer *arena = NULL;
    tfm_code rc = TFM_OK;
    if (nin != p->nin)
        rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.function '%s' takes "
                       "%d tensor inputs, got %d", tfm_graph_name(p->g),
                       p->nin, nin);
    for (int i = 0; i < nin && !rc; i++)
        rc = check_input(p, i, in[i]);
    if (!rc && p->nslots > 64) {
        vals = calloc((size_t)p->nslots, sizeof *vals);
        if (!vals)
            rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM running "
                           "tf.function '%s'", tfm_graph_name(p->g));
    } else if (!rc) {
        memset(vals, 0, sizeof(tfm_tensor *) * (size_t)p->nslots);
    }
    if (rc) {
        for (int i = 0; owned && i < nin; i++)
            if (owned[i])
                tfm_tensor_decref(in[i]);
        return rc;
    }
    for (int i = 0; i < nin; i++) {
        int mine = owned && owned[i];
        if (p->in_slot[i] >= 0) {
            if (!mine)
                tfm_tensor_incref(in[i]);
            vals[p->in_slot[i]] = in[i];
        } else if (mine) {
            tfm_tensor_decref(in[i]);
        }
    }
    for (int32_t c = 0; c < p->nconst; c++) {
        tfm_tensor *v = consts && consts[c] ? consts[c] : p->const_val[c];
        tfm_tensor_incref(v);
        vals[p->const_slot[c]] = v;
    }
    arena = tfm_exec_arena_take(p, recorded, &rc);
    if (rc)
        goto done;
    tally(&count_steps, p->nsteps);
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
    tfm_exec_arena_give(p, arena);
    if (vals != local)
        free(vals);
    return rc;
}

tfm_code
tfm_plan_run(const tfm_plan *p, tfm_tensor *const *in, int nin,
             tfm_tensor **out, int recorded)
{
    return plan_run(p, in, nin, out, recorded, NULL, NULL);
}

tfm_code
tfm_plan_run_consts(const tfm_plan *p, tfm_tensor *const *in, int nin,
                    tfm_tensor **out, tfm_tensor *const *consts)
{
    return plan_run(p, in, nin, out, 0, NULL, consts);
}

tfm_code
tfm_graph_eval(tfm_graph *g, tfm_ref r, tfm_tensor **out)
{
    tfm_plan *p = tfm_exec_plan_build(g, &r, 1, 0, 0);
    if (!p)
        return tfm_error_code();
    tfm_code rc = tfm_plan_run(p, NULL, 0, out, 0);
    tfm_plan_free(p);
    return rc;
}
