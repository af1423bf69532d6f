/* tf.cond, tf.while_loop and tf.Assert while tracing: sub-graphs and
 * the If/While/Assert nodes of the graph being traced (Note [Sub-graphs]
 * in runtime/graph.h). */
#include "function_shared.h"


static tfm_graph *
graph_arg(PyObject *o)
{
    if (!PyObject_TypeCheck(o, tfm_py_graph_type)) {
        PyErr_SetString(PyExc_TypeError, "expected a _C.Graph");
        return NULL;
    }
    return ((PyTfmGraph *)o)->g;
}

/* subgraph(name) -> a Graph traced inside the graph being traced. */
static PyObject *
py_subgraph(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    if (!tfm_trace_graph()) {
        PyErr_SetString(PyExc_RuntimeError, "subgraph(): no tf.function is "
                        "being traced");
        return NULL;
    }
    PyTfmGraph *g = (PyTfmGraph *)tfm_py_graph_type->tp_alloc(
        tfm_py_graph_type, 0);
    if (!g)
        return NULL;
    g->g = tfm_graph_new_sub(tfm_trace_graph(), name);
    if (!g->g) {
        Py_DECREF(g);
        return tfm_py_raise();
    }
    return (PyObject *)g;
}

/* capture_log_open() -> mark: see Note [Capture log] in runtime/trace.h. */
static PyObject *
py_capture_log_open(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyLong_FromLong(tfm_trace_capture_log_open());
}

/* capture_log_close(mark, graph) -> the tensors logged since mark that
 * are not of graph or a graph inside it (the outer values its ops used;
 * graph None keeps all),
 * each once, in first-use order; closes the log opened at mark. */
static PyObject *
py_capture_log_close(PyObject *self, PyObject *args)
{
    (void)self;
    int mark, n = 0;
    PyObject *go;
    if (!PyArg_ParseTuple(args, "iO", &mark, &go))
        return NULL;
    tfm_graph *sub = go == Py_None ? NULL : graph_arg(go);
    if (!sub && go != Py_None)
        return NULL;
    tfm_tensor *const *l = tfm_trace_capture_logged(mark, &n);
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < n; i++) {
        tfm_tensor *t = l[i];
        int dup = 0;
        if (sub && tfm_tensor_is_symbolic(t) && t->graph &&
            tfm_graph_within(t->graph, sub))
            continue;
        for (int j = 0; j < i && !dup; j++)
            dup = l[j]->id == t->id;
        if (dup)
            continue;
        tfm_tensor_incref(t);
        PyObject *w = tfm_py_wrap(t);
        if (!w || PyList_Append(out, w) < 0)
            Py_CLEAR(out);
        Py_XDECREF(w);
    }
    tfm_trace_capture_log_close(mark);
    return out;
}

static int trace_ref(PyObject *o, tfm_ref *r);
static PyObject *node_outputs(tfm_graph *g, int node);

/* The loop variables (a sequence of tensors) as refs of the graph being
 * traced, into vr[TFM_MAX_OUTPUTS]: their count, or -1 with the error
 * set. */
static Py_ssize_t
loop_var_refs(PyObject *vars, tfm_ref *vr)
{
    PyObject *seq = PySequence_Fast(vars, "loop_vars must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TFM_MAX_OUTPUTS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many loop variables");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (trace_ref(PySequence_Fast_GET_ITEM(seq, i), &vr[i])) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return n;
}

/* graph_while_again(output of a While, loop_vars) -> the outputs of
 * another While over its sub-graphs (Note [While again]). */
static PyObject *
py_graph_while_again(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *like, *vars;
    tfm_ref vr[TFM_MAX_OUTPUTS];
    if (!PyArg_ParseTuple(args, "OO", &like, &vars))
        return NULL;
    tfm_graph *g = tfm_trace_graph();
    if (!g) {
        PyErr_SetString(PyExc_RuntimeError, "graph_while_again(): not "
                        "tracing");
        return NULL;
    }
    if (!tfm_py_is_tensor(like) ||
        !tfm_tensor_is_symbolic(((PyTfmTensor *)like)->t) ||
        ((PyTfmTensor *)like)->t->graph != g) {
        PyErr_SetString(PyExc_ValueError, "graph_while_again(): the While "
                        "is not of the graph being traced");
        return NULL;
    }
    Py_ssize_t n = loop_var_refs(vars, vr);
    if (n < 0)
        return NULL;
    int node = tfm_graph_while_again(g, ((PyTfmTensor *)like)->t->node, vr,
                                     (int)n);
    if (node < 0)
        return tfm_py_raise();
    return node_outputs(g, node);
}

static PyObject *
py_traced_assigns(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyLong_FromLong(tfm_trace_assign_count());
}

/* A tensor as a value of the graph being traced. */
static int
trace_ref(PyObject *o, tfm_ref *r)
{
    tfm_tensor *t = tfm_py_to_tensor(o, -1);
    if (!t)
        return -1;
    tfm_code rc = tfm_trace_input(t, r);
    tfm_tensor_decref(t);
    if (rc) {
        tfm_py_raise();
        return -1;
    }
    return 0;
}

static int
set_sub_outputs(tfm_graph *sub, PyObject *outputs)
{
    PyObject *seq = PySequence_Fast(outputs, "outputs must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TFM_MAX_OUTPUTS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %d outputs", TFM_MAX_OUTPUTS);
        return -1;
    }
    tfm_ref refs[TFM_MAX_OUTPUTS];
    for (Py_ssize_t i = 0; i < n; i++)
        if (tfm_py_output_ref(sub, PySequence_Fast_GET_ITEM(seq, i), (int)i,
                              &refs[i])) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    if (tfm_graph_set_outputs(sub, refs, (int)n)) {
        tfm_py_raise();
        return -1;
    }
    return 0;
}

/* The user's line for a node made here rather than by the tracer. */
static void
set_node_site(tfm_graph *g, int node)
{
    char buf[512];
    buf[0] = '\0';
    tfm_py_site_hook(buf, sizeof buf);
    if (buf[0])
        tfm_graph_set_site(g, node, buf);
}

static PyObject *
node_outputs(tfm_graph *g, int node)
{
    set_node_site(g, node);
    const tfm_node *n = tfm_graph_node(g, node);
    PyObject *tup = PyTuple_New(n->nout);
    for (int k = 0; tup && k < n->nout; k++) {
        PyObject *t = tfm_py_wrap(tfm_graph_symbolic(g, node, k));
        if (!t) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, k, t);
    }
    return tup;
}

/* graph_if(pred, then_graph, then_outputs, else_graph, else_outputs) ->
 * the If node's outputs (symbolic, in the graph being traced). */
static PyObject *
py_graph_if(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pred, *tgo, *touts, *fgo, *fouts;
    tfm_ref pr;
    if (!PyArg_ParseTuple(args, "OOOOO", &pred, &tgo, &touts, &fgo, &fouts))
        return NULL;
    tfm_graph *g = tfm_trace_graph(), *tg = graph_arg(tgo),
              *fg = tg ? graph_arg(fgo) : NULL;
    if (!tg || !fg)
        return NULL;
    if (!g) {
        PyErr_SetString(PyExc_RuntimeError, "graph_if(): not tracing");
        return NULL;
    }
    if (trace_ref(pred, &pr) || set_sub_outputs(tg, touts) ||
        set_sub_outputs(fg, fouts))
        return NULL;
    int node = tfm_graph_if(g, pr, tg, fg);
    if (node < 0)
        return tfm_py_raise();
    return node_outputs(g, node);
}

/* graph_while(loop_vars, cond_graph, cond_output, body_graph,
 * body_outputs, maximum_iterations or None) -> the final loop vars. */
static PyObject *
py_graph_while(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *vars, *cgo, *cout, *bgo, *bouts, *maxo;
    tfm_ref vr[TFM_MAX_OUTPUTS], mr;
    if (!PyArg_ParseTuple(args, "OOOOOO", &vars, &cgo, &cout, &bgo, &bouts,
                          &maxo))
        return NULL;
    tfm_graph *g = tfm_trace_graph(), *cg = graph_arg(cgo),
              *bg = cg ? graph_arg(bgo) : NULL;
    if (!cg || !bg)
        return NULL;
    if (!g) {
        PyErr_SetString(PyExc_RuntimeError, "graph_while(): not tracing");
        return NULL;
    }
    Py_ssize_t n = loop_var_refs(vars, vr);
    if (n < 0)
        return NULL;
    PyObject *cl = PyList_New(1);
    if (!cl)
        return NULL;
    PyList_SET_ITEM(cl, 0, Py_NewRef(cout));
    int bad = set_sub_outputs(cg, cl) || set_sub_outputs(bg, bouts) ||
              (maxo != Py_None && trace_ref(maxo, &mr));
    Py_DECREF(cl);
    if (bad)
        return NULL;
    int node = tfm_graph_while(g, vr, (int)n, cg, bg,
                               maxo != Py_None ? &mr : NULL);
    if (node < 0)
        return tfm_py_raise();
    return node_outputs(g, node);
}

/* graph_assert(cond, texts, tensors, summarize): an Assert node. */
static PyObject *
py_graph_assert(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cond, *texts, *tensors;
    int summarize;
    tfm_ref cr, refs[TFM_MAX_INPUTS];
    if (!PyArg_ParseTuple(args, "OO!O!i", &cond, &PyList_Type, &texts,
                          &PyList_Type, &tensors, &summarize))
        return NULL;
    tfm_graph *g = tfm_trace_graph();
    if (!g) {
        PyErr_SetString(PyExc_RuntimeError, "graph_assert(): not tracing");
        return NULL;
    }
    const char **tx = NULL;
    walk w;
    tfm_py_walk_init(&w, NULL);
    PyObject *r = NULL;
    if (trace_ref(cond, &cr) ||
        tfm_py_texts_and_tensors(texts, tensors, &tx, &w) ||
        w.nleaves >= TFM_MAX_INPUTS)
        goto done;
    for (int i = 0; i < w.nleaves; i++)
        if (tfm_trace_input(w.leaves[i], &refs[i])) {
            tfm_py_raise();
            goto done;
        }
    int node = tfm_graph_assert(g, cr, refs, w.nleaves, tx, summarize);
    if (node < 0) {
        tfm_py_raise();
    } else {
        set_node_site(g, node);
        r = Py_NewRef(Py_None);
    }
done:
    if (!r && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "graph_assert: bad arguments");
    PyMem_Free(tx);
    tfm_py_walk_free(&w);
    return r;
}


PyMethodDef tfm_py_control_flow_methods[] = {
    {"subgraph", py_subgraph, METH_VARARGS,
     "subgraph(name): a graph traced inside the current one"},
    {"capture_log_open", py_capture_log_open, METH_NOARGS,
     "capture_log_open() -> mark (Note [Capture log])"},
    {"capture_log_close", py_capture_log_close, METH_VARARGS,
     "capture_log_close(mark, graph) -> outer tensors graph's ops used"},
    {"graph_while_again", py_graph_while_again, METH_VARARGS,
     "graph_while_again(while_output, loop_vars) (Note [While again])"},
    {"traced_assigns", py_traced_assigns, METH_NOARGS,
     "variable assignments traced so far on this thread"},
    {"graph_if", py_graph_if, METH_VARARGS,
     "graph_if(pred, then_graph, then_outs, else_graph, else_outs)"},
    {"graph_while", py_graph_while, METH_VARARGS,
     "graph_while(vars, cond_graph, cond_out, body_graph, body_outs, "
     "max_iter)"},
    {"graph_assert", py_graph_assert, METH_VARARGS,
     "graph_assert(cond, texts, tensors, summarize)"},
    {NULL, NULL, 0, NULL},
};
