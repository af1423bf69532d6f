/* _C.Graph: a graph being traced, or traced (the C IR), as Python sees
 * it: placeholders, push/pop of the trace, and inspection. */
#include "function_shared.h"

#include "../graph/fused.h"

PyTypeObject *tfm_py_graph_type;

static PyObject *
graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    const char *name = "graph";
    static char *kwlist[] = {"name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|s", kwlist, &name))
        return NULL;
    PyTfmGraph *self = (PyTfmGraph *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    self->g = tfm_graph_new(name);
    if (!self->g) {
        Py_DECREF(self);
        return tfm_py_raise();
    }
    return (PyObject *)self;
}

static void
graph_dealloc(PyTfmGraph *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->g)
        tfm_graph_decref(self->g);
    tp->tp_free(self);
    Py_DECREF(tp);
}

int
tfm_py_parse_shape(PyObject *o, tfm_shape *s)
{
    PyObject *seq = PySequence_Fast(o, "shape must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TFM_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "tensors have at most %d dims, got "
                     "%zd", TFM_MAX_DIMS, n);
        return -1;
    }
    s->ndim = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        if (d == Py_None) {
            s->dims[i] = -1;
            continue;
        }
        long long v = PyLong_AsLongLong(d);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < -1) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "invalid dim %lld", v);
            return -1;
        }
        s->dims[i] = v;
    }
    Py_DECREF(seq);
    return 0;
}

/* placeholder(dtype, shape, name) -> symbolic Tensor: the next input. */
static PyObject *
graph_placeholder(PyTfmGraph *self, PyObject *args)
{
    int dtype;
    PyObject *shape;
    const char *name;
    tfm_shape s;
    if (!PyArg_ParseTuple(args, "iOs", &dtype, &shape, &name))
        return NULL;
    if (dtype < 0 || dtype >= TFM_DTYPE_COUNT) {
        PyErr_Format(PyExc_TypeError, "invalid dtype %d", dtype);
        return NULL;
    }
    if (tfm_py_parse_shape(shape, &s))
        return NULL;
    int node = tfm_graph_placeholder(self->g, (tfm_dtype)dtype, &s, name);
    if (node < 0)
        return tfm_py_raise();
    return tfm_py_wrap(tfm_graph_symbolic(self->g, node, 0));
}

static PyObject *
graph_push(PyTfmGraph *self, PyObject *unused)
{
    (void)unused;
    if (tfm_graph_sealed(self->g)) {
        PyErr_SetString(PyExc_RuntimeError, "this graph's trace has ended");
        return NULL;
    }
    if (tfm_trace_push(self->g))
        return tfm_py_raise();
    Py_RETURN_NONE;
}

/* End the trace of this graph, and any context entered in it and not
 * left (an init_scope whose exit an exception skipped). */
static PyObject *
graph_pop(PyTfmGraph *self, PyObject *unused)
{
    (void)unused;
    if (!tfm_trace_contains(self->g)) {
        PyErr_SetString(PyExc_RuntimeError, "graph.pop(): this graph is "
                        "not being traced");
        return NULL;
    }
    while (tfm_trace_graph() != self->g)
        tfm_trace_pop();
    tfm_trace_pop();
    Py_RETURN_NONE;
}

static PyObject *
meta_tuple(const tfm_meta *m)
{
    PyObject *dims = PyTuple_New(m->shape.ndim);
    if (!dims)
        return NULL;
    for (int d = 0; d < m->shape.ndim; d++) {
        PyObject *v = m->shape.dims[d] < 0 ? (Py_INCREF(Py_None), Py_None)
                    : PyLong_FromLongLong(m->shape.dims[d]);
        if (!v) {
            Py_DECREF(dims);
            return NULL;
        }
        PyTuple_SET_ITEM(dims, d, v);
    }
    return Py_BuildValue("(iN)", (int)m->dtype, dims);
}

/* A fused node's program as text, one instruction after another:
 * "r0 = Mul(x:0, Const:0); out0 = Sigmoid(r0)" (Note [Fused programs]:
 * rN are block-sized registers, reused once dead; "matmul" is a
 * _FusedMatMul's product). NULL (no error) for other nodes. */
static PyObject *
fused_program_text(const tfm_graph *g, const tfm_node *nd)
{
    const tfm_fused_prog *p = nd->prog;
    if (!p || (nd->op != TFM_OP_FUSED_ELEMENTWISE &&
               nd->op != TFM_OP_FUSED_MATMUL))
        return NULL;
    char buf[8192];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->ninstr && used < sizeof buf; i++) {
        const tfm_fused_instr *ins = &p->code[i];
        char arg[2][160];
        for (int k = 0; k < ins->nin && k < 2; k++) {
            int v = ins->src[k];
            if (v >= 0) {
                snprintf(arg[k], sizeof arg[k], "r%d", v);
            } else if (v == TFM_FUSED_BASE) {
                snprintf(arg[k], sizeof arg[k], "matmul");
            } else {
                int j = p->first_input + TFM_FUSED_INPUT_INDEX(v);
                if (j < 0 || j >= nd->nin)
                    snprintf(arg[k], sizeof arg[k], "in%d", j);
                else
                    snprintf(arg[k], sizeof arg[k], "%s:%d",
                             tfm_graph_node(g, nd->in[j].node)->name,
                             (int)nd->in[j].out);
            }
        }
        char dst[32];
        if (i == p->ninstr - 1)
            snprintf(dst, sizeof dst, "out0");
        else if (ins->out > 0)
            snprintf(dst, sizeof dst, "r%d (out%d)", ins->dst, ins->out);
        else
            snprintf(dst, sizeof dst, "r%d", ins->dst);
        int w = snprintf(buf + used, sizeof buf - used, "%s%s = %s(%s%s%s)",
                         i ? "; " : "", dst, tfm_ops[ins->op].name, arg[0],
                         ins->nin > 1 ? ", " : "",
                         ins->nin > 1 ? arg[1] : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= sizeof buf)
        used = sizeof buf - 1;
    return PyUnicode_FromStringAndSize(buf, (Py_ssize_t)used);
}

/* ops() -> [(name, type, [input "node:k"], [(dtype, dims)], [control
 * input names], site, fused program text or None)], in creation
 * order. */
static PyObject *
graph_ops(PyTfmGraph *self, PyObject *unused)
{
    (void)unused;
    tfm_graph *g = self->g;
    int n = tfm_graph_node_count(g);
    PyObject *list = PyList_New(n);
    if (!list)
        return NULL;
    for (int k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        PyObject *ins = PyList_New(nd->nin), *outs = PyList_New(nd->nout),
                 *ctrl = PyList_New(nd->nctrl), *row = NULL;
        if (!ins || !outs || !ctrl)
            goto fail_row;
        for (int i = 0; i < nd->nin; i++) {
            PyObject *s = PyUnicode_FromFormat(
                "%s:%d", tfm_graph_node(g, nd->in[i].node)->name,
                (int)nd->in[i].out);
            if (!s)
                goto fail_row;
            PyList_SET_ITEM(ins, i, s);
        }
        for (int i = 0; i < nd->nout; i++) {
            PyObject *m = meta_tuple(&nd->out[i]);
            if (!m)
                goto fail_row;
            PyList_SET_ITEM(outs, i, m);
        }
        for (int i = 0; i < nd->nctrl; i++) {
            PyObject *s = PyUnicode_FromString(
                tfm_graph_node(g, nd->ctrl[i])->name);
            if (!s)
                goto fail_row;
            PyList_SET_ITEM(ctrl, i, s);
        }
        PyObject *prog = fused_program_text(g, nd);
        if (!prog && PyErr_Occurred())
            goto fail_row;
        row = Py_BuildValue("(ssOOOzN)", nd->name, tfm_ops[nd->op].name,
                            ins, outs, ctrl, nd->site,
                            prog ? prog : (Py_INCREF(Py_None), Py_None));
        if (!row)
            goto fail_row;
        Py_DECREF(ins);
        Py_DECREF(outs);
        Py_DECREF(ctrl);
        PyList_SET_ITEM(list, k, row);
        continue;
    fail_row:
        Py_XDECREF(ins);
        Py_XDECREF(outs);
        Py_XDECREF(ctrl);
        Py_DECREF(list);
        return NULL;
    }
    return list;
}

/* subgraphs(name) -> (Graph, Graph) of the If (then, else) or While
 * (cond, body) node called name, () for another node (inspection of
 * what the graph passes did inside control flow). */
static PyObject *
graph_subgraphs(PyTfmGraph *self, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    if (!s)
        return NULL;
    for (int k = 0; k < tfm_graph_node_count(self->g); k++) {
        const tfm_node *nd = tfm_graph_node(self->g, k);
        if (strcmp(nd->name, s) != 0)
            continue;
        if (!nd->sub[0])
            return PyTuple_New(0);
        PyObject *out = PyTuple_New(2);
        for (int b = 0; out && b < 2; b++) {
            PyTfmGraph *g = (PyTfmGraph *)tfm_py_graph_type->tp_alloc(
                tfm_py_graph_type, 0);
            if (!g) {
                Py_CLEAR(out);
                break;
            }
            g->g = nd->sub[b];
            tfm_graph_incref(g->g);
            PyTuple_SET_ITEM(out, b, (PyObject *)g);
        }
        return out;
    }
    return PyErr_Format(PyExc_KeyError, "graph '%s' has no node '%s'",
                        tfm_graph_name(self->g), s);
}

/* A tensor as a graph output: symbolic of this graph, or concrete
 * (captured as a Const). */
int
tfm_py_output_ref(tfm_graph *g, PyObject *o, int i, tfm_ref *r)
{
    if (!tfm_py_is_tensor(o)) {
        PyErr_Format(PyExc_TypeError, "graph output %d is not a tensor", i);
        return -1;
    }
    tfm_tensor *t = ((PyTfmTensor *)o)->t;
    if (tfm_tensor_is_symbolic(t)) {
        if (t->graph != g && t->graph && tfm_graph_within(g, t->graph)) {
            if (tfm_graph_capture(g, t, r)) {   /* Note [Sub-graphs] */
                tfm_py_raise();
                return -1;
            }
            return 0;
        }
        if (t->graph != g) {
            char name[300];
            PyErr_Format(PyExc_ValueError, "output %d of tf.function '%s' "
                         "is the symbolic tensor '%s' of another function "
                         "('%s')", i, tfm_graph_name(g),
                         tfm_graph_tensor_name(t, name, sizeof name),
                         tfm_graph_name(t->graph));
            return -1;
        }
        r->node = t->node;
        r->out = t->out_index;
        return 0;
    }
    int c = tfm_graph_const(g, t);
    if (c < 0) {
        tfm_py_raise();
        return -1;
    }
    r->node = c;
    r->out = 0;
    return 0;
}

/* lift(tensor) -> concrete tensor: evaluate a symbolic tensor of this
 * graph now (see tfm_graph_eval). */
static PyObject *
graph_lift(PyTfmGraph *self, PyObject *o)
{
    if (!tfm_py_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "lift() takes a tensor");
        return NULL;
    }
    tfm_tensor *t = ((PyTfmTensor *)o)->t;
    if (!tfm_tensor_is_symbolic(t)) {
        tfm_tensor_incref(t);
        return tfm_py_wrap(t);
    }
    if (t->graph != self->g) {
        PyErr_SetString(PyExc_ValueError, "lift(): the tensor belongs to "
                        "another graph");
        return NULL;
    }
    tfm_ref r = {t->node, t->out_index};
    tfm_tensor *out = NULL;
    if (tfm_graph_eval(self->g, r, &out))
        return tfm_py_raise();
    return tfm_py_wrap(out);
}

static PyObject *
graph_owns(PyTfmGraph *self, PyObject *o)
{
    return PyBool_FromLong(tfm_py_is_tensor(o) &&
                           tfm_tensor_is_symbolic(((PyTfmTensor *)o)->t) &&
                           ((PyTfmTensor *)o)->t->graph == self->g);
}

static PyObject *
graph_get_name(PyTfmGraph *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(tfm_graph_name(self->g));
}

static PyObject *
graph_get_sealed(PyTfmGraph *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tfm_graph_sealed(self->g));
}

static PyObject *
graph_get_inputs(PyTfmGraph *self, void *c)
{
    (void)c;
    int n = tfm_graph_input_count(self->g);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(
            tfm_graph_node(self->g, tfm_graph_input(self->g, i))->name);
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyMethodDef graph_methods[] = {
    {"placeholder", (PyCFunction)graph_placeholder, METH_VARARGS,
     "placeholder(dtype, shape, name) -> the next input, symbolic"},
    {"push", (PyCFunction)graph_push, METH_NOARGS,
     "make this the graph ops are traced into"},
    {"pop", (PyCFunction)graph_pop, METH_NOARGS, "end push()"},
    {"ops", (PyCFunction)graph_ops, METH_NOARGS,
     "[(name, type, inputs, outputs, control_inputs, site)]"},
    {"lift", (PyCFunction)graph_lift, METH_O,
     "evaluate a symbolic tensor of this graph now"},
    {"owns", (PyCFunction)graph_owns, METH_O,
     "whether a tensor is a symbolic tensor of this graph"},
    {"subgraphs", (PyCFunction)graph_subgraphs, METH_O,
     "subgraphs(node name) -> If's (then, else), While's (cond, body)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"name", (getter)graph_get_name, NULL, NULL, NULL},
    {"sealed", (getter)graph_get_sealed, NULL, NULL, NULL},
    {"input_names", (getter)graph_get_inputs, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_doc, "A graph being traced, or traced (the C IR)."},
    {0, NULL},
};

PyType_Spec tfm_py_graph_spec = {
    .name = "tfmini._C.Graph",
    .basicsize = sizeof(PyTfmGraph),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = graph_slots,
};

/* A _C.Graph for g (a new reference to g). */
PyObject *
tfm_py_graph_wrap(tfm_graph *g)
{
    PyTfmGraph *w = (PyTfmGraph *)tfm_py_graph_type->tp_alloc(
        tfm_py_graph_type, 0);
    if (!w)
        return NULL;
    w->g = g;
    tfm_graph_incref(g);
    return (PyObject *)w;
}
