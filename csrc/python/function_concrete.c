/* _C.ConcreteBase: a compiled trace (tfm_concrete) and how its flat
 * outputs become the Python result. */
#include "function_shared.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

PyTypeObject *tfm_py_concrete_type;
PyObject *tfm_py_pack_fn;

/* How a concrete function's flat outputs become the Python result. */
enum { OUT_NONE, OUT_SINGLE, OUT_TUPLE, OUT_LIST, OUT_GENERIC };

typedef struct {
    int kind;
    PyObject *structure;     /* OUT_GENERIC: for tfm_py_pack_fn */
    /* Under a tape the call goes to Python's _run (function.py's Note
     * [Custom gradients under a tape around the call]). */
    int taped_in_python;
} out_info;

static void
out_info_free(void *p)
{
    out_info *o = p;
    Py_XDECREF(o->structure);
    PyMem_Free(o);
}

static PyObject *
concrete_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    (void)args; (void)kw;
    PyTfmConcrete *self = (PyTfmConcrete *)tp->tp_alloc(tp, 0);
    if (self)
        self->cf = NULL;
    return (PyObject *)self;
}

static void
concrete_dealloc(PyTfmConcrete *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->cf)
        tfm_concrete_decref(self->cf);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* A function retraced for ever new shapes leaves malloc's heap full of
 * holes: each trace's long-lived graph and plan land among the freed
 * inputs of the calls around it, and glibc returns none of those pages
 * (100 traces over 4 MB inputs kept 400 MB of free heap). Every few
 * traces the free pages go back to the system: a trace costs
 * milliseconds, the trim a fraction of that. */
static void
trim_heap_now_and_then(void)
{
#ifdef __GLIBC__
    static unsigned builds;
    if (++builds % 8 == 0)
        malloc_trim(0);
#endif
}

/* _build(graph, outputs, kind, structure): seal and compile. */
static PyObject *
concrete_build(PyTfmConcrete *self, PyObject *args)
{
    PyObject *graph, *outputs, *structure;
    int kind;
    if (!PyArg_ParseTuple(args, "O!OiO", tfm_py_graph_type, &graph, &outputs,
                          &kind, &structure))
        return NULL;
    if (self->cf) {
        PyErr_SetString(PyExc_RuntimeError, "already built");
        return NULL;
    }
    if (kind < OUT_NONE || kind > OUT_GENERIC) {
        PyErr_Format(PyExc_ValueError, "bad output kind %d", kind);
        return NULL;
    }
    tfm_graph *g = ((PyTfmGraph *)graph)->g;
    if (tfm_graph_sealed(g)) {
        PyErr_SetString(PyExc_RuntimeError, "the graph is already sealed");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(outputs, "outputs must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    tfm_ref *refs = PyMem_Malloc(sizeof(tfm_ref) * ((size_t)n + 1));
    if (!refs) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (tfm_py_output_ref(g, PySequence_Fast_GET_ITEM(seq, i), (int)i,
                              &refs[i])) {
            PyMem_Free(refs);
            Py_DECREF(seq);
            return NULL;
        }
    Py_DECREF(seq);
    tfm_code rc = tfm_graph_set_outputs(g, refs, (int)n);
    PyMem_Free(refs);
    if (rc)
        return tfm_py_raise();
    out_info *info = PyMem_Malloc(sizeof *info);
    if (!info)
        return PyErr_NoMemory();
    info->kind = kind;
    info->structure = structure;
    info->taped_in_python = 0;
    Py_INCREF(structure);
    tfm_concrete *cf = tfm_concrete_new(g);
    if (!cf) {
        out_info_free(info);
        return tfm_py_raise();
    }
    cf->user = info;
    cf->user_free = out_info_free;
    self->cf = cf;
    trim_heap_now_and_then();
    Py_RETURN_NONE;
}

static PyObject *
pack_outputs(tfm_concrete *cf, tfm_tensor **outs, int n)
{
    out_info *info = cf->user;
    PyObject *r = NULL;
    int i = 0;
    switch (info->kind) {
    case OUT_NONE:
        for (i = 0; i < n; i++)
            tfm_tensor_decref(outs[i]);
        Py_RETURN_NONE;
    case OUT_SINGLE:
        for (i = 1; i < n; i++)
            tfm_tensor_decref(outs[i]);
        return tfm_py_wrap(outs[0]);
    case OUT_TUPLE:
        r = PyTuple_New(n);
        break;
    default:
        r = PyList_New(n);
    }
    if (!r)
        goto fail;
    for (i = 0; i < n; i++) {
        PyObject *w = tfm_py_wrap(outs[i]);
        if (!w) {
            i++;
            goto fail;
        }
        if (info->kind == OUT_TUPLE)
            PyTuple_SET_ITEM(r, i, w);
        else
            PyList_SET_ITEM(r, i, w);
    }
    if (info->kind == OUT_GENERIC) {
        PyObject *packed = PyObject_CallFunctionObjArgs(
            tfm_py_pack_fn, info->structure, r, NULL);
        Py_DECREF(r);
        return packed;
    }
    return r;
fail:
    for (; i < n; i++)
        tfm_tensor_decref(outs[i]);
    Py_XDECREF(r);
    return NULL;
}

/* Run cf on n leaves (borrowed) and pack its outputs. */
PyObject *
tfm_py_run_concrete(tfm_concrete *cf, tfm_tensor *const *leaves, int n)
{
    tfm_tensor *local[16];
    int nout = tfm_graph_output_count(cf->graph);
    tfm_tensor **outs = nout <= 16 ? local
                        : PyMem_Malloc(sizeof *outs * (size_t)nout);
    if (!outs)
        return PyErr_NoMemory();
    /* The cache (or a Python reference) may drop cf while it runs: print
     * streams and big kernels let other Python code run. */
    tfm_concrete_incref(cf);
    tfm_code rc = tfm_concrete_call(cf, leaves, n, outs);
    PyObject *r = rc ? tfm_py_raise() : pack_outputs(cf, outs, nout);
    tfm_concrete_decref(cf);
    if (outs != local)
        PyMem_Free(outs);
    return r;
}

/* _run(tensors) -> the packed outputs. */
static PyObject *
concrete_run(PyTfmConcrete *self, PyObject *tensors)
{
    if (!self->cf) {
        PyErr_SetString(PyExc_RuntimeError, "concrete function not built");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(tensors, "_run takes a sequence");
    if (!seq)
        return NULL;
    walk w;
    tfm_py_walk_init(&w, NULL);
    PyObject *r = NULL;
    if (!tfm_py_walk_tensors(seq, &w))
        r = tfm_py_run_concrete(self->cf, w.leaves, w.nleaves);
    tfm_py_walk_free(&w);
    Py_DECREF(seq);
    return r;
}

static PyObject *
concrete_get_steps(PyTfmConcrete *self, void *c)
{
    (void)c;
    if (!self->cf)
        Py_RETURN_NONE;
    return PyLong_FromLong(tfm_plan_step_count(self->cf->plan));
}

/* c: NULL for the compiled fused nodes, non-NULL for their outputs
 * planned into variables (exec.h's tfm_plan_native_count). */
static PyObject *
concrete_get_native(PyTfmConcrete *self, void *c)
{
    if (!self->cf)
        Py_RETURN_NONE;
    return PyLong_FromLong(tfm_plan_native_count(self->cf->plan, c != NULL));
}

/* The plan's memory plan, as a dict (inspection and tests). */
static PyObject *
concrete_get_memory(PyTfmConcrete *self, void *c)
{
    (void)c;
    if (!self->cf)
        Py_RETURN_NONE;
    tfm_plan_memory m;
    tfm_plan_memory_stats(self->cf->plan, &m);
    return Py_BuildValue("{sLsisisO}", "arena_bytes",
                         (long long)m.arena_bytes, "arena_slots",
                         (int)m.arena_slots, "inplace_steps",
                         (int)m.inplace_steps, "arena_held",
                         m.arena_held ? Py_True : Py_False);
}

/* When it last ran, on a process-wide call counter (0: never): the
 * trace cache's LRU order. */
static PyObject *
concrete_get_last_call(PyTfmConcrete *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->cf ? self->cf->last_call : 0);
}

/* The graph after the passes, as a Graph object (inspection only). */
static PyObject *
concrete_get_optimized(PyTfmConcrete *self, void *c)
{
    (void)c;
    if (!self->cf)
        Py_RETURN_NONE;
    PyTfmGraph *g = (PyTfmGraph *)tfm_py_graph_type->tp_alloc(
        tfm_py_graph_type, 0);
    if (!g)
        return NULL;
    g->g = self->cf->optimized;
    tfm_graph_incref(g->g);
    return (PyObject *)g;
}

/* ---- for the saved-model binding (saved_model.c) ---- */

/* o's concrete function (borrowed), or NULL with TypeError. */
tfm_concrete *
tfm_py_concrete_get(PyObject *o)
{
    if (!PyObject_TypeCheck(o, tfm_py_concrete_type) ||
        !((PyTfmConcrete *)o)->cf) {
        PyErr_Format(PyExc_TypeError, "expected a built ConcreteFunction, "
                     "got %R", o);
        return NULL;
    }
    return ((PyTfmConcrete *)o)->cf;
}

/* Make o (a new, unbuilt ConcreteBase) run cf, a loaded function, packing
 * its outputs by kind and structure as _build would. */
int
tfm_py_concrete_adopt(PyObject *o, tfm_concrete *cf, int kind,
                      PyObject *structure)
{
    if (!PyObject_TypeCheck(o, tfm_py_concrete_type) ||
        ((PyTfmConcrete *)o)->cf) {
        PyErr_SetString(PyExc_TypeError, "expected an unbuilt "
                        "ConcreteFunction");
        return -1;
    }
    if (kind < OUT_NONE || kind > OUT_GENERIC) {
        PyErr_Format(PyExc_ValueError, "bad output kind %d", kind);
        return -1;
    }
    if (cf->user) {
        PyErr_SetString(PyExc_RuntimeError, "this loaded function already "
                        "has a ConcreteFunction");
        return -1;
    }
    /* The kind comes from the file: pack_outputs reads outs[0] for a
     * single output, which a graph without outputs never fills. */
    int nout = tfm_graph_output_count(cf->graph);
    if ((kind == OUT_SINGLE && nout != 1) || (kind == OUT_NONE && nout)) {
        PyErr_Format(PyExc_ValueError, "output kind %d does not fit a "
                     "function with %d outputs", kind, nout);
        return -1;
    }
    out_info *info = PyMem_Malloc(sizeof *info);
    if (!info) {
        PyErr_NoMemory();
        return -1;
    }
    info->kind = kind;
    info->structure = structure;
    info->taped_in_python = 0;
    Py_INCREF(structure);
    cf->user = info;
    cf->user_free = out_info_free;
    tfm_concrete_incref(cf);
    ((PyTfmConcrete *)o)->cf = cf;
    return 0;
}

int
tfm_py_concrete_taped_in_python(const tfm_concrete *cf)
{
    const out_info *info = cf->user;
    return info && info->taped_in_python;
}

static PyObject *
concrete_set_taped_in_python(PyTfmConcrete *self, PyObject *unused)
{
    (void)unused;
    if (!self->cf || !self->cf->user) {
        PyErr_SetString(PyExc_RuntimeError, "concrete function not built");
        return NULL;
    }
    ((out_info *)self->cf->user)->taped_in_python = 1;
    Py_RETURN_NONE;
}

static PyMethodDef concrete_methods[] = {
    {"_set_taped_in_python", (PyCFunction)concrete_set_taped_in_python,
     METH_NOARGS, "calls under a tape go to the Python method _run"},
    {"_build", (PyCFunction)concrete_build, METH_VARARGS,
     "_build(graph, outputs, kind, structure): seal and compile"},
    {"_run", (PyCFunction)concrete_run, METH_O,
     "_run(tensors) -> outputs, packed"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef concrete_getset[] = {
    {"_plan_steps", (getter)concrete_get_steps, NULL,
     "ops the compiled plan runs per call", NULL},
    {"_native_steps", (getter)concrete_get_native, NULL,
     "fused nodes the plan runs as compiled machine code", NULL},
    {"_variable_writes", (getter)concrete_get_native, NULL,
     "outputs of those it may write straight into variables", "into"},
    {"_memory_plan", (getter)concrete_get_memory, NULL,
     "the plan's arena: bytes, slots in it, in-place steps, held", NULL},
    {"_last_call", (getter)concrete_get_last_call, NULL,
     "when it last ran, on a process-wide call counter", NULL},
    {"_optimized_graph", (getter)concrete_get_optimized, NULL,
     "the graph the plan runs: the trace after the graph passes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot concrete_slots[] = {
    {Py_tp_new, concrete_new},
    {Py_tp_dealloc, concrete_dealloc},
    {Py_tp_methods, concrete_methods},
    {Py_tp_getset, concrete_getset},
    {Py_tp_doc, "C base of ConcreteFunction: a compiled trace."},
    {0, NULL},
};

PyType_Spec tfm_py_concrete_spec = {
    .name = "tfmini._C.ConcreteBase",
    .basicsize = sizeof(PyTfmConcrete),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = concrete_slots,
};
