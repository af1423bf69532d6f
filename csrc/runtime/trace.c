#include "trace.h"

#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "graph.h"
#include "variable.h"

#define MAX_DEPTH 256

static _Thread_local tfm_graph *stack[MAX_DEPTH];
static _Thread_local int depth;
static tfm_site_fn site_hook;

tfm_graph *
tfm_trace_graph(void)
{
    return depth ? stack[depth - 1] : NULL;
}

tfm_code
tfm_trace_push(tfm_graph *g)
{
    if (depth == MAX_DEPTH)
        return tfm_error(TFM_ERR_RUNTIME, "tf.function traces and "
                         "init_scopes nest more than %d deep (recursive "
                         "tf.functions are not supported)", MAX_DEPTH);
    if (g)
        tfm_graph_incref(g);
    stack[depth++] = g;
    return TFM_OK;
}

void
tfm_trace_pop(void)
{
    if (!depth)
        return;
    tfm_graph *g = stack[--depth];
    if (g)
        tfm_graph_decref(g);
}

int
tfm_trace_depth(void)
{
    return depth;
}

int
tfm_trace_contains(const tfm_graph *g)
{
    for (int i = 0; i < depth; i++)
        if (stack[i] == g)
            return 1;
    return 0;
}

void
tfm_trace_set_site_hook(tfm_site_fn fn)
{
    site_hook = fn;
}

static tfm_code
set_site(tfm_graph *g, int node)
{
    char buf[512];
    if (!site_hook)
        return TFM_OK;
    buf[0] = '\0';
    site_hook(buf, sizeof buf);
    return buf[0] ? tfm_graph_set_site(g, node, buf) : TFM_OK;
}

/* A symbolic tensor used where its graph is not being traced. */
static tfm_code
leaked(const tfm_tensor *t, const tfm_graph *g, const char *what)
{
    char name[300];
    tfm_graph_tensor_name(t, name, sizeof name);
    if (!g)
        return tfm_error(TFM_ERR_TYPE, "%s: the symbolic tensor '%s' of "
                         "tf.function '%s' is used outside that function "
                         "(it leaked out, e.g. through a Python global, a "
                         "list or an attribute). Return it from the "
                         "function instead", what, name,
                         tfm_graph_name(t->graph));
    /* TypeError, as TF's "... is out of scope and cannot be used here" */
    return tfm_error(TFM_ERR_TYPE, "%s: the symbolic tensor '%s' of "
                     "tf.function '%s' is out of scope in tf.function "
                     "'%s': pass it as an argument or return it instead "
                     "of keeping it in Python state", what, name,
                     tfm_graph_name(t->graph), tfm_graph_name(g));
}

/* A symbolic tensor of g, or of a graph around g (captured: see Note
 * [Sub-graphs] in graph.h). */
static int
usable(const tfm_tensor *t, const tfm_graph *g)
{
    return t->graph == g || (g && t->graph && tfm_graph_within(g, t->graph));
}

/* ---- Note [Capture log] (trace.h) ---- */

static _Thread_local tfm_tensor **cap_log;
static _Thread_local int cap_n, cap_size, cap_open;

int
tfm_trace_capture_log_open(void)
{
    cap_open++;
    return cap_n;
}

void
tfm_trace_capture_log(tfm_tensor *t)
{
    if (!cap_open)
        return;
    if (cap_n == cap_size) {
        int size = cap_size ? cap_size * 2 : 16;
        tfm_tensor **l = realloc(cap_log, (size_t)size * sizeof *l);
        if (!l)
            return;     /* a missed entry only loses a gradient path */
        cap_log = l;
        cap_size = size;
    }
    tfm_tensor_incref(t);
    cap_log[cap_n++] = t;
}

tfm_tensor *const *
tfm_trace_capture_logged(int mark, int *n)
{
    *n = mark >= 0 && mark <= cap_n ? cap_n - mark : 0;
    return *n ? cap_log + mark : NULL;
}

void
tfm_trace_capture_log_close(int mark)
{
    if (cap_open > 0)
        cap_open--;
    if (cap_open)
        return;
    (void)mark;
    for (int i = 0; i < cap_n; i++)
        tfm_tensor_decref(cap_log[i]);
    cap_n = 0;
}

static tfm_code
input_ref(tfm_graph *g, tfm_tensor *t, const char *what, tfm_ref *r)
{
    if (t->graph != g)
        tfm_trace_capture_log(t);
    if (tfm_tensor_is_symbolic(t)) {
        if (!usable(t, g))
            return leaked(t, g, what);
        if (t->graph != g)
            return tfm_graph_capture(g, t, r);
        r->node = t->node;
        r->out = t->out_index;
        return TFM_OK;
    }
    if (!g)
        return tfm_error(TFM_ERR_INTERNAL, "%s: not tracing", what);
    int c = tfm_graph_const(g, t);
    if (c < 0)
        return tfm_error_code();
    r->node = c;
    r->out = 0;
    return TFM_OK;
}

tfm_code
tfm_trace_input(tfm_tensor *t, tfm_ref *r)
{
    return input_ref(tfm_trace_graph(), t, "tf.function", r);
}

tfm_code
tfm_trace_add_op(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor **out, int *nout)
{
    tfm_graph *g = tfm_trace_graph();
    tfm_ref refs[TFM_MAX_INPUTS];
    tfm_meta meta[TFM_MAX_OUTPUTS];
    const char *name = tfm_ops[op].name;
    if (nin < 0 || nin > TFM_MAX_INPUTS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %d inputs is out "
                         "of range", name, nin);
    /* Leaks first: an op on a leaked tensor is that error, even when
     * the shapes would not match either. */
    for (int i = 0; i < nin; i++)
        if (tfm_tensor_is_symbolic(in[i]) && !usable(in[i], g))
            return leaked(in[i], g, name);
    tfm_code rc = tfm_infer(op, in, nin, a, meta, nout);
    if (rc)
        return rc;
    for (int i = 0; i < nin; i++)
        if ((rc = input_ref(g, in[i], name, &refs[i])))
            return rc;
    int node = tfm_graph_add_node(g, op, refs, nin, a, meta, *nout);
    if (node < 0 || set_site(g, node))
        return tfm_error_code();
    if (tfm_device_scope() >= 0)
        tfm_graph_set_device(g, node, tfm_device_scope());
    for (int k = 0; k < *nout; k++) {
        out[k] = tfm_graph_symbolic(g, node, k);
        if (!out[k]) {
            while (k-- > 0)
                tfm_tensor_decref(out[k]);
            *nout = 0;
            return tfm_error_code();
        }
    }
    return TFM_OK;
}

tfm_code
tfm_trace_read_variable(tfm_variable *v, tfm_tensor **out)
{
    tfm_graph *g = tfm_trace_graph();
    if (!g)
        return tfm_error(TFM_ERR_INTERNAL, "ReadVariableOp: not tracing");
    int node = tfm_graph_read_variable(g, v);
    if (node < 0 || set_site(g, node))
        return tfm_error_code();
    tfm_tensor *t = tfm_graph_symbolic(g, node, 0);
    if (!t)
        return tfm_error_code();
    t->id = v->id;          /* see Note [Variable ids] */
    *out = t;
    return TFM_OK;
}

static _Thread_local long assign_count;

long
tfm_trace_assign_count(void)
{
    return assign_count;
}

tfm_code
tfm_trace_assign_variable(tfm_variable *v, tfm_tensor *value, int mode)
{
    tfm_graph *g = tfm_trace_graph();
    assign_count++;
    tfm_ref r;
    tfm_code rc = input_ref(g, value, "AssignVariableOp", &r);
    if (rc)
        return rc;
    int node = tfm_graph_assign_variable(g, v, r, mode);
    if (node < 0 || set_site(g, node))
        return tfm_error_code();
    return TFM_OK;
}

tfm_code
tfm_trace_print(const char *const *texts, tfm_tensor *const *t, int n,
                int stream, int summarize)
{
    tfm_graph *g = tfm_trace_graph();
    tfm_ref refs[TFM_MAX_INPUTS];
    if (n < 0 || n > TFM_MAX_INPUTS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "tf.print: at most %d "
                         "tensors", TFM_MAX_INPUTS);
    for (int i = 0; i < n; i++) {
        tfm_code rc = input_ref(g, t[i], "PrintV2", &refs[i]);
        if (rc)
            return rc;
    }
    int node = tfm_graph_print(g, refs, n, texts, stream, summarize);
    if (node < 0 || set_site(g, node))
        return tfm_error_code();
    return TFM_OK;
}
