/* tf.function's module functions: the hooks the core calls (the user's
 * source line, tf.print's streams), the tracing state, tf.print, the
 * graph passes, and the init that makes the function types. */
#include "function_shared.h"

#include <frameobject.h>

#include "../graph/passes.h"
#include "../ops/state.h"

static char *package_dir;            /* frames here are not the user's */
static size_t package_dir_len;
static PyObject *streams;            /* registered print streams (3, ...) */

/* ---- hooks the core calls ---- */

/* "File "x.py", line 12, in f": the innermost frame outside tfmini. */
void
tfm_py_site_hook(char *buf, size_t n)
{
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        const char *file = PyUnicode_AsUTF8(code->co_filename);
        if (!file) {
            PyErr_Clear();
            file = "?";
        }
        if (!package_dir ||
            strncmp(file, package_dir, package_dir_len) != 0) {
            const char *fn = PyUnicode_AsUTF8(code->co_name);
            if (!fn) {
                PyErr_Clear();
                fn = "?";
            }
            snprintf(buf, n, "File \"%s\", line %d, in %s", file,
                     PyFrame_GetLineNumber(f), fn);
            Py_DECREF(code);
            Py_DECREF(f);
            return;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
}

static int
print_hook(const char *text, int stream)
{
    PyObject *f;
    if (stream == 1 || stream == 2) {
        f = PySys_GetObject(stream == 1 ? "stdout" : "stderr");
    } else if (streams && stream >= 3 &&
               stream - 3 < PyList_GET_SIZE(streams)) {
        f = PyList_GET_ITEM(streams, stream - 3);
    } else {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "PrintV2: unknown stream %d",
                  stream);
        return -1;
    }
    if (!f || f == Py_None)
        return 0;
    PyObject *r = PyObject_CallMethod(f, "write", "s", text);
    if (!r) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *s = value ? PyObject_Str(value) : NULL;
        const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
        tfm_error(TFM_ERR_INTERNAL, "tf.print: writing to the output "
                  "stream failed: %s", msg ? msg : "?");
        Py_XDECREF(s);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* ---- module functions ---- */

static PyObject *
py_tracing(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyBool_FromLong(tfm_trace_graph() != NULL);
}

static PyObject *
py_init_scope_enter(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    if (tfm_trace_push(NULL))
        return tfm_py_raise();
    Py_RETURN_NONE;
}

static PyObject *
py_init_scope_exit(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    if (!tfm_trace_depth() || tfm_trace_graph()) {
        PyErr_SetString(PyExc_RuntimeError, "init_scope exit without enter");
        return NULL;
    }
    tfm_trace_pop();
    Py_RETURN_NONE;
}

static PyObject *
py_symbolic_name(PyObject *self, PyObject *o)
{
    (void)self;
    char buf[320];
    if (!tfm_py_is_tensor(o)) {
        PyErr_SetString(PyExc_TypeError, "symbolic_name takes a tensor");
        return NULL;
    }
    tfm_tensor *t = ((PyTfmTensor *)o)->t;
    if (!tfm_tensor_is_symbolic(t)) {
        PyErr_SetString(PyExc_ValueError, "not a symbolic tensor");
        return NULL;
    }
    return PyUnicode_FromString(tfm_graph_tensor_name(t, buf, sizeof buf));
}

/* graph_of(t) -> name of the tf.function graph a symbolic tensor is of */
static PyObject *
py_graph_of(PyObject *self, PyObject *o)
{
    (void)self;
    if (!tfm_py_is_tensor(o) ||
        !tfm_tensor_is_symbolic(((PyTfmTensor *)o)->t))
        Py_RETURN_NONE;
    return PyUnicode_FromString(
        tfm_graph_name(((PyTfmTensor *)o)->t->graph));
}

/* in_current_graph(t): t is concrete, or symbolic of the graph being
 * traced now. */
static PyObject *
py_in_current_graph(PyObject *self, PyObject *o)
{
    (void)self;
    if (!tfm_py_is_tensor(o))
        Py_RETURN_FALSE;
    tfm_tensor *t = ((PyTfmTensor *)o)->t;
    return PyBool_FromLong(!tfm_tensor_is_symbolic(t) ||
                           t->graph == tfm_trace_graph());
}

static PyObject *
py_set_run_eagerly(PyObject *self, PyObject *arg)
{
    (void)self;
    int v = PyObject_IsTrue(arg);
    if (v < 0)
        return NULL;
    tfm_py_run_eagerly = v;
    Py_RETURN_NONE;
}

/* _set_function_hooks(pack, package_dir, TensorSpec) */
static PyObject *
py_set_function_hooks(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pack, *spec;
    const char *dir;
    if (!PyArg_ParseTuple(args, "OsO!", &pack, &dir, &PyType_Type, &spec))
        return NULL;
    Py_INCREF(spec);
    Py_XSETREF(tfm_py_spec_type, spec);
    Py_INCREF(pack);
    Py_XSETREF(tfm_py_pack_fn, pack);
    char *d = PyMem_Malloc(strlen(dir) + 1);
    if (!d)
        return PyErr_NoMemory();
    strcpy(d, dir);
    PyMem_Free(package_dir);
    package_dir = d;
    package_dir_len = strlen(d);
    Py_RETURN_NONE;
}

int
tfm_py_texts_and_tensors(PyObject *texts, PyObject *tensors,
                         const char ***tx, walk *w)
{
    Py_ssize_t nt = PyList_Size(texts), n = PyList_Size(tensors);
    if (nt < 0 || n < 0)
        return -1;
    if (nt != n + 1) {
        PyErr_SetString(PyExc_ValueError, "print: one more text piece than "
                        "tensors");
        return -1;
    }
    if (n > TFM_MAX_INPUTS) {
        PyErr_Format(PyExc_ValueError, "tf.print: at most %d tensors",
                     TFM_MAX_INPUTS);
        return -1;
    }
    *tx = PyMem_Malloc(sizeof(char *) * (size_t)nt);
    if (!*tx) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        (*tx)[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(texts, i));
        if (!(*tx)[i])
            return -1;
    }
    return tfm_py_walk_tensors(tensors, w);
}

/* print_v2(texts, tensors, stream, summarize): traced as a PrintV2 node
 * while tracing, printed now otherwise. */
static PyObject *
py_print_v2(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *texts, *tensors;
    int stream, summarize;
    if (!PyArg_ParseTuple(args, "O!O!ii", &PyList_Type, &texts,
                          &PyList_Type, &tensors, &stream, &summarize))
        return NULL;
    const char **tx = NULL;
    walk w;
    tfm_py_walk_init(&w, NULL);
    PyObject *r = NULL;
    if (tfm_py_texts_and_tensors(texts, tensors, &tx, &w) == 0) {
        int symbolic = tfm_trace_graph() != NULL;
        for (int i = 0; !symbolic && i < w.nleaves; i++)
            symbolic = tfm_tensor_is_symbolic(w.leaves[i]);
        tfm_code rc = symbolic
            ? tfm_trace_print(tx, w.leaves, w.nleaves, stream, summarize)
            : tfm_print_tensors(tx, w.leaves, w.nleaves, stream, summarize);
        if (rc)
            tfm_py_raise();
        else
            r = Py_NewRef(Py_None);
    }
    PyMem_Free(tx);
    tfm_py_walk_free(&w);
    return r;
}

static PyObject *
py_format_tensor(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o;
    int summarize = 3;
    if (!PyArg_ParseTuple(args, "O|i", &o, &summarize))
        return NULL;
    tfm_tensor *t = tfm_py_to_tensor(o, -1);
    if (!t)
        return NULL;
    char *s = tfm_format_tensor(t, summarize);
    tfm_tensor_decref(t);
    if (!s)
        return tfm_py_raise();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

static PyObject *
py_register_stream(PyObject *self, PyObject *stream)
{
    (void)self;
    Py_ssize_t n = PyList_GET_SIZE(streams);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(streams, i) == stream)
            return PyLong_FromSsize_t(i + 3);
    if (PyList_Append(streams, stream) < 0)
        return NULL;
    return PyLong_FromSsize_t(n + 3);
}

static PyObject *
py_function_live_counts(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return Py_BuildValue("(LL)", (long long)tfm_graph_live_count(),
                         (long long)tfm_concrete_live_count());
}

/* graph_passes() -> {name: enabled} */
static PyObject *
py_graph_passes(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < TFM_PASS_COUNT; i++)
        if (PyDict_SetItemString(d, tfm_pass_names[i],
                                 (tfm_passes_enabled >> i) & 1
                                 ? Py_True : Py_False)) {
            Py_CLEAR(d);
        }
    return d;
}

/* set_graph_passes({name: bool}): the passes later traces use. */
static PyObject *
py_set_graph_passes(PyObject *self, PyObject *d)
{
    (void)self;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    unsigned mask = tfm_passes_enabled;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "set_graph_passes takes a dict");
        return NULL;
    }
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        int i = 0;
        while (name && i < TFM_PASS_COUNT && strcmp(name, tfm_pass_names[i]))
            i++;
        if (!name || i == TFM_PASS_COUNT) {
            PyErr_Format(PyExc_ValueError, "unknown graph pass %R", k);
            return NULL;
        }
        int on = PyObject_IsTrue(v);
        if (on < 0)
            return NULL;
        mask = on ? mask | (1u << i) : mask & ~(1u << i);
    }
    tfm_passes_enabled = mask;
    Py_RETURN_NONE;
}

/* plan_arena_budget(bytes=None) -> (budget, held): Note [Arena budget]
 * in graph/exec.c; a new budget applies from the next run on. */
static PyObject *
py_plan_arena_budget(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &o))
        return NULL;
    PyObject *r = Py_BuildValue("(nn)", (Py_ssize_t)tfm_plan_arena_budget,
                                (Py_ssize_t)tfm_plan_arena_held());
    if (r && o != Py_None) {
        Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
        if (v == -1 && PyErr_Occurred())
            Py_CLEAR(r);
        else if (v < 0) {
            PyErr_SetString(PyExc_ValueError, "the arena budget is a "
                            "number of bytes >= 0");
            Py_CLEAR(r);
        } else {
            tfm_plan_arena_budget = (size_t)v;
        }
    }
    return r;
}

static PyMethodDef module_methods[] = {
    {"plan_arena_budget", py_plan_arena_budget, METH_VARARGS,
     "plan_arena_budget(bytes=None) -> (budget, held) (Note [Arena "
     "budget])"},
    {"graph_passes", py_graph_passes, METH_NOARGS,
     "graph_passes() -> {pass name: enabled}"},
    {"set_graph_passes", py_set_graph_passes, METH_O,
     "set_graph_passes({pass name: enabled}) for functions traced later"},
    {"tracing", py_tracing, METH_NOARGS,
     "whether ops on this thread are being traced into a graph"},
    {"init_scope_enter", py_init_scope_enter, METH_NOARGS, NULL},
    {"init_scope_exit", py_init_scope_exit, METH_NOARGS, NULL},
    {"symbolic_name", py_symbolic_name, METH_O, "'add:0'"},
    {"graph_of", py_graph_of, METH_O, NULL},
    {"in_current_graph", py_in_current_graph, METH_O, NULL},
    {"set_run_eagerly", py_set_run_eagerly, METH_O, NULL},
    {"_set_function_hooks", py_set_function_hooks, METH_VARARGS, NULL},
    {"print_v2", py_print_v2, METH_VARARGS,
     "print_v2(texts, tensors, stream, summarize)"},
    {"format_tensor", py_format_tensor, METH_VARARGS,
     "format_tensor(t, summarize=3): tf.print's text of t"},
    {"register_stream", py_register_stream, METH_O, NULL},
    {"function_live_counts", py_function_live_counts, METH_NOARGS,
     "(live graphs, live concrete functions)"},
    {NULL, NULL, 0, NULL},
};

static int
add_type(PyObject *m, PyType_Spec *spec, PyTypeObject **out)
{
    PyObject *tp = PyType_FromSpec(spec);
    if (!tp)
        return -1;
    *out = (PyTypeObject *)tp;
    Py_INCREF(tp);
    const char *name = strrchr(spec->name, '.') + 1;
    return PyModule_AddObject(m, name, tp);
}

int
tfm_py_function_init(PyObject *m)
{
    static PyTypeObject *function_type;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np)
        return -1;
    tfm_py_ndarray_type =
        (PyTypeObject *)PyObject_GetAttrString(np, "ndarray");
    tfm_py_npgeneric_type =
        (PyTypeObject *)PyObject_GetAttrString(np, "generic");
    Py_DECREF(np);
    if (!tfm_py_ndarray_type || !tfm_py_npgeneric_type)
        return -1;
    streams = PyList_New(0);
    if (!streams)
        return -1;
    if (add_type(m, &tfm_py_graph_spec, &tfm_py_graph_type) ||
        add_type(m, &tfm_py_concrete_spec, &tfm_py_concrete_type) ||
        add_type(m, &tfm_py_function_spec, &function_type))
        return -1;
    if (PyModule_AddFunctions(m, module_methods) < 0 ||
        PyModule_AddFunctions(m, tfm_py_control_flow_methods) < 0)
        return -1;
    tfm_trace_set_site_hook(tfm_py_site_hook);
    tfm_print_set_hook(print_hook);
    return 0;
}
