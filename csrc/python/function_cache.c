/* _C.FunctionBase: the function object whose call is the cache lookup
 * (Note [The call path] in function_shared.h). */
#include "function_shared.h"

#include "../runtime/tape.h"

int tfm_py_run_eagerly;

typedef struct {
    PyObject_HEAD
    tfm_fcache *cache;
    /* The binder (Note [The call path]): parameter names (positional,
     * then keyword-only), the defaults of the last positionals, and one
     * default per keyword-only parameter (`missing` when it has none). */
    PyObject *names;
    PyObject *defaults;
    PyObject *kwdefaults;
    PyObject *missing;
    int n_pos, n_posonly, n_kw;
    int has_varargs, has_varkw;
    int fast_ok;
    uint64_t calls;         /* calls since the last trace */
    PyObject *bound;        /* id(instance) -> (Function, weakref) */
} PyTfmFunction;

#define MAX_FAST_PARAMS 64

static PyObject *
function_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    (void)args; (void)kw;
    PyTfmFunction *self = (PyTfmFunction *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    self->cache = tfm_fcache_new();
    self->bound = PyDict_New();
    if (!self->cache || !self->bound) {
        Py_DECREF(self);
        return self->cache ? NULL : tfm_py_raise();
    }
    return (PyObject *)self;
}

static int
function_traverse(PyTfmFunction *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->names);
    Py_VISIT(self->defaults);
    Py_VISIT(self->kwdefaults);
    Py_VISIT(self->missing);
    Py_VISIT(self->bound);
    return 0;
}

static int
function_clear(PyTfmFunction *self)
{
    Py_CLEAR(self->names);
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->kwdefaults);
    Py_CLEAR(self->missing);
    Py_CLEAR(self->bound);
    return 0;
}

static void
function_dealloc(PyTfmFunction *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    function_clear(self);
    if (self->cache)
        tfm_fcache_free(self->cache);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static Py_ssize_t
param_index(PyTfmFunction *self, PyObject *name)
{
    Py_ssize_t n = PyTuple_GET_SIZE(self->names);
    for (Py_ssize_t i = 0; i < n; i++)   /* names are interned */
        if (PyTuple_GET_ITEM(self->names, i) == name)
            return i;
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(self->names, i), name);
        if (eq == 0)
            return i;
        if (eq == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
    }
    return -1;
}

/* The call's canonical argument list (positionals, *args as a tuple,
 * keyword-only parameters, **kwargs as a dict), as _Binder.canonicalize
 * builds it in Python, walked without building it. WALK_SLOW for what
 * needs Python: binding errors, or keywords that land in **kwargs. */
static int
walk_call(PyTfmFunction *self, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kw, walk *w)
{
    PyObject *slot[MAX_FAST_PARAMS];
    int np = self->n_pos, nk = self->n_kw;
    Py_ssize_t ndef = PyTuple_GET_SIZE(self->defaults);
    if (nargs > np && !self->has_varargs)
        return WALK_SLOW;
    for (int i = 0; i < np + nk; i++)
        slot[i] = i < nargs && i < np ? args[i] : NULL;
    if (kw) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kw, &pos, &k, &v)) {
            Py_ssize_t i = PyUnicode_Check(k) ? param_index(self, k) : -1;
            if (i < self->n_posonly || slot[i])
                return WALK_SLOW;
            slot[i] = v;
        }
    }
    for (int i = 0; i < np; i++) {
        if (slot[i])
            continue;
        if (i < np - ndef)
            return WALK_SLOW;               /* missing: TypeError */
        slot[i] = PyTuple_GET_ITEM(self->defaults, i - (np - ndef));
    }
    for (int i = 0; i < nk; i++) {
        if (slot[np + i])
            continue;
        slot[np + i] = PyTuple_GET_ITEM(self->kwdefaults, i);
        if (slot[np + i] == self->missing)
            return WALK_SLOW;
    }
    for (int i = 0; i < np; i++) {
        int r = tfm_py_walk_value(w, slot[i], 0);
        if (r)
            return r;
    }
    if (self->has_varargs) {
        Py_ssize_t extra = nargs > np ? nargs - np : 0;
        int r = tfm_py_walk_items(w, 'U', args + np, extra, 0);
        if (r)
            return r;
    }
    for (int i = 0; i < nk; i++) {
        int r = tfm_py_walk_value(w, slot[np + i], 0);
        if (r)
            return r;
    }
    if (self->has_varkw && tfm_py_walk_tag(w, 'D', 0))
        return WALK_ERR;
    return WALK_OK;
}

static PyObject *
call_slow(PyObject *self, PyObject *args, PyObject *kw)
{
    PyObject *m = PyObject_GetAttrString(self, "_call_slow");
    if (!m)
        return NULL;
    PyObject *r = PyObject_Call(m, args, kw);
    Py_DECREF(m);
    return r;
}

static PyObject *
function_call(PyTfmFunction *self, PyObject *args, PyObject *kw)
{
    if (!self->fast_ok || tfm_py_run_eagerly || tfm_trace_graph())
        return call_slow((PyObject *)self, args, kw);
    walk w;
    tfm_py_walk_init(&w, NULL);
    int r = walk_call(self, &PyTuple_GET_ITEM(args, 0),
                      PyTuple_GET_SIZE(args),
                      kw && PyDict_GET_SIZE(kw) ? kw : NULL, &w);
    if (r) {
        tfm_py_walk_free(&w);
        if (r == WALK_ERR)
            PyErr_Clear();   /* the slow path raises it with context */
        return call_slow((PyObject *)self, args, kw);
    }
    tfm_concrete *cf = tfm_fcache_get(self->cache, w.p, w.n,
                                      tfm_fcache_hash(w.p, w.n));
    if (!cf || (tfm_tape_active_count > 0 &&
                tfm_py_concrete_taped_in_python(cf))) {
        tfm_py_walk_free(&w);
        return call_slow((PyObject *)self, args, kw);
    }
    self->calls++;
    PyObject *result = tfm_py_run_concrete(cf, w.leaves, w.nleaves);
    tfm_py_walk_free(&w);
    return result;
}

/* Methods: instance.method is one Function per instance (one cache),
 * looked up here; `_bind` (Python) makes it the first time. */
static PyObject *
function_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    PyTfmFunction *f = (PyTfmFunction *)self;
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (!key)
        return NULL;
    PyObject *entry = PyDict_GetItemWithError(f->bound, key);
    Py_DECREF(key);
    if (entry && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2) {
        PyObject *ref = PyTuple_GET_ITEM(entry, 1);
        if (ref == Py_None ||
            (PyWeakref_Check(ref) && PyWeakref_GetObject(ref) == obj))
            return Py_NewRef(PyTuple_GET_ITEM(entry, 0));
    }
    if (PyErr_Occurred())
        return NULL;
    return PyObject_CallMethod(self, "_bind", "O", obj);
}

static PyObject *
function_get_bound(PyTfmFunction *self, void *c)
{
    (void)c;
    return Py_NewRef(self->bound);
}

/* _configure(names, n_pos, n_posonly, defaults, kwdefaults, missing,
 * has_varargs, has_varkw): the binder of the C call path. */
static PyObject *
function_configure(PyTfmFunction *self, PyObject *args)
{
    int n_pos, n_posonly, has_varargs, has_varkw;
    PyObject *names, *defaults, *kwdefaults, *missing;
    if (!PyArg_ParseTuple(args, "O!iiO!O!Opp", &PyTuple_Type, &names,
                          &n_pos, &n_posonly, &PyTuple_Type, &defaults,
                          &PyTuple_Type, &kwdefaults, &missing,
                          &has_varargs, &has_varkw))
        return NULL;
    Py_ssize_t nn = PyTuple_GET_SIZE(names);
    if (n_pos < 0 || n_posonly < 0 || n_posonly > n_pos || n_pos > nn ||
        PyTuple_GET_SIZE(defaults) > n_pos ||
        PyTuple_GET_SIZE(kwdefaults) != nn - n_pos) {
        PyErr_SetString(PyExc_ValueError, "inconsistent parameters");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nn; i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "parameter names are str");
            return NULL;
        }
    Py_XSETREF(self->names, Py_NewRef(names));
    Py_XSETREF(self->defaults, Py_NewRef(defaults));
    Py_XSETREF(self->kwdefaults, Py_NewRef(kwdefaults));
    Py_XSETREF(self->missing, Py_NewRef(missing));
    self->n_pos = n_pos;
    self->n_posonly = n_posonly;
    self->n_kw = (int)(nn - n_pos);
    self->has_varargs = has_varargs;
    self->has_varkw = has_varkw;
    self->fast_ok = nn <= MAX_FAST_PARAMS;
    Py_RETURN_NONE;
}

/* _key(canonical, relaxed=False) -> (key bytes, leaf tensors (None for a
 * TensorSpec), identity-keyed objects). relaxed: tensors by dtype and
 * rank only (to find traces with compatible shapes). */
static PyObject *
function_key(PyTfmFunction *self, PyObject *args)
{
    (void)self;
    PyObject *canonical;
    int relaxed = 0;
    if (!PyArg_ParseTuple(args, "O|p", &canonical, &relaxed))
        return NULL;
    PyObject *seq = PySequence_Fast(canonical, "_key takes a sequence");
    if (!seq)
        return NULL;
    PyObject *idents = PyList_New(0), *leaves = NULL, *key = NULL;
    PyObject *r = NULL;
    walk w;
    tfm_py_walk_init(&w, idents);
    w.relaxed = relaxed;
    w.specs = 1;
    if (!idents)
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (tfm_py_walk_value(&w, PySequence_Fast_GET_ITEM(seq, i), 0)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "cannot key arguments");
            goto done;
        }
    key = PyBytes_FromStringAndSize((const char *)w.p, (Py_ssize_t)w.n);
    leaves = PyList_New(w.nleaves);
    if (!key || !leaves)
        goto done;
    for (int i = 0; i < w.nleaves; i++) {
        if (!w.leaves[i]) {
            PyList_SET_ITEM(leaves, i, Py_NewRef(Py_None));
            continue;
        }
        tfm_tensor_incref(w.leaves[i]);
        PyObject *t = tfm_py_wrap(w.leaves[i]);
        if (!t)
            goto done;
        PyList_SET_ITEM(leaves, i, t);
    }
    r = PyTuple_Pack(3, key, leaves, idents);
done:
    tfm_py_walk_free(&w);
    Py_XDECREF(key);
    Py_XDECREF(leaves);
    Py_XDECREF(idents);
    Py_DECREF(seq);
    return r;
}

static int
key_arg(PyObject *key, const char **p, Py_ssize_t *n)
{
    if (!PyBytes_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "a key is bytes");
        return -1;
    }
    *p = PyBytes_AS_STRING(key);
    *n = PyBytes_GET_SIZE(key);
    return 0;
}

/* _cache_put(key, concrete) */
static PyObject *
function_cache_put(PyTfmFunction *self, PyObject *args)
{
    PyObject *key, *concrete;
    const char *p;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OO!", &key, tfm_py_concrete_type,
                          &concrete) ||
        key_arg(key, &p, &n))
        return NULL;
    tfm_concrete *cf = ((PyTfmConcrete *)concrete)->cf;
    if (!cf) {
        PyErr_SetString(PyExc_RuntimeError, "concrete function not built");
        return NULL;
    }
    if (tfm_fcache_put(self->cache, p, (size_t)n,
                       tfm_fcache_hash(p, (size_t)n), cf))
        return tfm_py_raise();
    Py_RETURN_NONE;
}

static PyObject *
function_cache_remove(PyTfmFunction *self, PyObject *key)
{
    const char *p;
    Py_ssize_t n;
    if (key_arg(key, &p, &n))
        return NULL;
    return PyBool_FromLong(tfm_fcache_remove(
        self->cache, p, (size_t)n, tfm_fcache_hash(p, (size_t)n)));
}

static PyObject *
function_cache_clear(PyTfmFunction *self, PyObject *unused)
{
    (void)unused;
    tfm_fcache_clear(self->cache);
    Py_RETURN_NONE;
}

static PyObject *
function_cache_size(PyTfmFunction *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(tfm_fcache_size(self->cache));
}

/* _take_calls() -> cache hits since the last call of this method. */
static PyObject *
function_take_calls(PyTfmFunction *self, PyObject *unused)
{
    (void)unused;
    uint64_t c = self->calls;
    self->calls = 0;
    return PyLong_FromUnsignedLongLong(c);
}

static PyMethodDef function_methods[] = {
    {"_configure", (PyCFunction)function_configure, METH_VARARGS,
     "_configure(names, n_pos, n_posonly, defaults, kwdefaults, missing, "
     "has_varargs, has_varkw)"},
    {"_key", (PyCFunction)function_key, METH_VARARGS,
     "_key(canonical, relaxed=False) -> (key, leaves, idents)"},
    {"_cache_put", (PyCFunction)function_cache_put, METH_VARARGS, NULL},
    {"_cache_remove", (PyCFunction)function_cache_remove, METH_O, NULL},
    {"_cache_clear", (PyCFunction)function_cache_clear, METH_NOARGS, NULL},
    {"_cache_size", (PyCFunction)function_cache_size, METH_NOARGS, NULL},
    {"_take_calls", (PyCFunction)function_take_calls, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef function_getset[] = {
    {"_descriptor_cache", (getter)function_get_bound, NULL,
     "id(instance) -> (bound Function, weakref to the instance)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot function_slots[] = {
    {Py_tp_new, function_new},
    {Py_tp_descr_get, function_descr_get},
    {Py_tp_getset, function_getset},
    {Py_tp_dealloc, function_dealloc},
    {Py_tp_traverse, function_traverse},
    {Py_tp_clear, function_clear},
    {Py_tp_call, function_call},
    {Py_tp_methods, function_methods},
    {Py_tp_doc, "C base of tf.function's Function: the cached call."},
    {0, NULL},
};

PyType_Spec tfm_py_function_spec = {
    .name = "tfmini._C.FunctionBase",
    .basicsize = sizeof(PyTfmFunction),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = function_slots,
};
