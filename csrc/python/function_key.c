/* The signature key of a call's arguments (Note [The call path] in
 * function_shared.h): a walk over the arguments that appends their key
 * bytes and collects their tensors (the graph inputs). */
#include "function_shared.h"

PyTypeObject *tfm_py_ndarray_type, *tfm_py_npgeneric_type;
PyObject *tfm_py_spec_type;

void
tfm_py_walk_init(walk *w, PyObject *idents)
{
    w->p = w->local;
    w->n = 0;
    w->cap = sizeof w->local;
    w->leaves = w->local_leaves;
    w->nleaves = 0;
    w->cap_leaves = 16;
    w->idents = idents;
    w->relaxed = 0;
    w->specs = 0;
}

void
tfm_py_walk_free(walk *w)
{
    for (int i = 0; i < w->nleaves; i++)
        if (w->leaves[i])
            tfm_tensor_decref(w->leaves[i]);
    if (w->p != w->local)
        PyMem_Free(w->p);
    if (w->leaves != w->local_leaves)
        PyMem_Free(w->leaves);
}

static int
put(walk *w, const void *src, size_t n)
{
    if (w->n + n > w->cap) {
        size_t cap = w->cap * 2;
        while (cap < w->n + n)
            cap *= 2;
        unsigned char *p = PyMem_Malloc(cap);
        if (!p) {
            PyErr_NoMemory();
            return WALK_ERR;
        }
        memcpy(p, w->p, w->n);
        if (w->p != w->local)
            PyMem_Free(w->p);
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
    return WALK_OK;
}

int
tfm_py_walk_tag(walk *w, char tag, int64_t v)
{
    unsigned char b[9];
    b[0] = (unsigned char)tag;
    memcpy(b + 1, &v, 8);
    return put(w, b, 9);
}

int
tfm_py_walk_leaf(walk *w, tfm_tensor *t)
{
    if (w->nleaves == w->cap_leaves) {
        int cap = w->cap_leaves * 2;
        tfm_tensor **l = PyMem_Malloc(sizeof *l * (size_t)cap);
        if (!l) {
            if (t)
                tfm_tensor_decref(t);
            PyErr_NoMemory();
            return WALK_ERR;
        }
        memcpy(l, w->leaves, sizeof *l * (size_t)w->nleaves);
        if (w->leaves != w->local_leaves)
            PyMem_Free(w->leaves);
        w->leaves = l;
        w->cap_leaves = cap;
    }
    w->leaves[w->nleaves++] = t;
    return WALK_OK;
}

static int
put_meta(walk *w, tfm_dtype dtype, const tfm_shape *s)
{
    unsigned char b[3 + 8 * TFM_MAX_DIMS];
    size_t ndims = w->relaxed ? 0 : (size_t)s->ndim;
    b[0] = 'T';
    b[1] = (unsigned char)dtype;
    b[2] = (unsigned char)s->ndim;
    memcpy(b + 3, s->dims, 8 * ndims);
    return put(w, b, 3 + 8 * ndims);
}

static int
put_tensor(walk *w, tfm_tensor *t)
{
    if (put_meta(w, t->dtype, &t->shape))
        return WALK_ERR;
    tfm_tensor_incref(t);
    return tfm_py_walk_leaf(w, t);
}

/* Whether a tensor subclass instance says it is weak (its `_weak`). */
static int
is_weak(PyObject *o)
{
    PyObject *v = PyObject_GetAttrString(o, "_weak");
    if (!v) {
        PyErr_Clear();
        return 0;
    }
    int r = PyObject_IsTrue(v) == 1;
    Py_DECREF(v);
    return r;
}

/* A TensorSpec keys like a tensor of its shape (None dims as -1); its
 * leaf is NULL (get_concrete_function only). */
static int
put_spec(walk *w, PyObject *o)
{
    if (!w->specs)
        return WALK_SLOW;
    PyObject *d = PyObject_GetAttrString(o, "_dtype_enum");
    PyObject *dims = d ? PyObject_GetAttrString(o, "_dims") : NULL;
    tfm_shape s;
    long dtype = d ? PyLong_AsLong(d) : -1;
    int r = WALK_ERR;
    if (dims && !(dtype == -1 && PyErr_Occurred()) &&
        dtype >= 0 && dtype < TFM_DTYPE_COUNT &&
        tfm_py_parse_shape(dims, &s) == 0)
        r = put_meta(w, (tfm_dtype)dtype, &s);
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "a TensorSpec without dtype/shape");
    Py_XDECREF(d);
    Py_XDECREF(dims);
    if (r)
        return r;
    return tfm_py_walk_leaf(w, NULL);
}

static int
put_ident(walk *w, char tag, PyObject *o)
{
    if (w->idents && PyList_Append(w->idents, o) < 0)
        return WALK_ERR;
    return tfm_py_walk_tag(w, tag, (int64_t)(intptr_t)o);
}

/* An object whose type has __tf_tracing_type__ (TF's custom TraceType
 * protocol) keys by its TraceType's equality, not by its identity: each
 * distinct TraceType is interned here once, and the key holds the
 * interned one's address, so equal types share a trace. The trace keeps
 * the object it was made with as the value, which is what TF's
 * placeholder_value gives back for the guide's types. */
static PyObject *trace_types;     /* {TraceType: TraceType}; only grows */

static int
put_trace_type(walk *w, PyObject *o, PyObject *name)
{
    PyObject *tt = PyObject_CallMethodObjArgs(o, name, Py_None, NULL);
    if (!tt)
        return WALK_ERR;
    if (!trace_types && !(trace_types = PyDict_New())) {
        Py_DECREF(tt);
        return WALK_ERR;
    }
    PyObject *canon = PyDict_SetDefault(trace_types, tt, tt); /* borrowed */
    Py_DECREF(tt);
    if (!canon)
        return WALK_ERR;
    return put_ident(w, 'T', canon);
}

static int
put_text(walk *w, char tag, PyObject *s)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u)
        return WALK_ERR;
    if (tfm_py_walk_tag(w, tag, (int64_t)n))
        return WALK_ERR;
    return put(w, u, (size_t)n);
}

int
tfm_py_walk_items(walk *w, char tag, PyObject *const *items,
                  Py_ssize_t n, int depth)
{
    if (tfm_py_walk_tag(w, tag, (int64_t)n))
        return WALK_ERR;
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = tfm_py_walk_value(w, items[i], depth + 1);
        if (r)
            return r;
    }
    return WALK_OK;
}

static int
walk_dict(walk *w, PyObject *d, int depth)
{
    PyObject *keys = PyDict_Keys(d);
    if (!keys)
        return WALK_ERR;
    /* TF orders dict entries by key; unorderable keys keep insertion
     * order (the Python side does the same). */
    if (PyList_Sort(keys) < 0)
        PyErr_Clear();
    int r = tfm_py_walk_tag(w, 'D', PyList_GET_SIZE(keys));
    for (Py_ssize_t i = 0; !r && i < PyList_GET_SIZE(keys); i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        PyObject *v = PyDict_GetItemWithError(d, k);
        if (!v) {
            r = PyErr_Occurred() ? WALK_ERR : WALK_SLOW;
            break;
        }
        Py_INCREF(v);
        r = tfm_py_walk_value(w, k, depth + 1);
        if (!r)
            r = tfm_py_walk_value(w, v, depth + 1);
        Py_DECREF(v);
    }
    Py_DECREF(keys);
    return r;
}

static int
is_namedtuple(PyObject *o)
{
    return PyTuple_Check(o) && !PyTuple_CheckExact(o) &&
           PyObject_HasAttrString((PyObject *)Py_TYPE(o), "_fields");
}

int
tfm_py_walk_value(walk *w, PyObject *o, int depth)
{
    if (depth > WALK_MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "tf.function: arguments are "
                        "nested too deeply (or contain a cycle)");
        return WALK_ERR;
    }
    if (tfm_py_is_tensor(o)) {
        /* A weak tensor (Note [One weak flag] in tfmini/experimental/
         * numpy/weak_tensor.py) keys apart from a strong one of its
         * dtype, as TF's trace types do. Its class is a subclass, so a
         * plain tensor pays two pointer compares. */
        PyTypeObject *ty = Py_TYPE(o);
        if (ty != tfm_py_tensor_class && ty != tfm_py_symbolic_class &&
            is_weak(o) && tfm_py_walk_tag(w, 'W', 0))
            return WALK_ERR;
        return put_tensor(w, ((PyTfmTensor *)o)->t);
    }
    if (o == Py_None)
        return put(w, "N", 1);
    if (PyBool_Check(o))
        return tfm_py_walk_tag(w, 'B', o == Py_True);
    /* NumPy values become tensors, as in TF. */
    if ((tfm_py_ndarray_type &&
         PyObject_TypeCheck(o, tfm_py_ndarray_type)) ||
        (tfm_py_npgeneric_type &&
         PyObject_TypeCheck(o, tfm_py_npgeneric_type))) {
        tfm_tensor *t = tfm_py_to_tensor(o, -1);
        if (!t)
            return WALK_ERR;
        int r = put_tensor(w, t);
        tfm_tensor_decref(t);
        return r;
    }
    if (PyFloat_Check(o)) {
        double v = PyFloat_AS_DOUBLE(o);
        int64_t bits;
        memcpy(&bits, &v, 8);
        return tfm_py_walk_tag(w, 'F', bits);
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return WALK_ERR;
        if (!overflow)
            return tfm_py_walk_tag(w, 'I', v);
        PyObject *s = PyObject_Str(o);
        if (!s)
            return WALK_ERR;
        int r = put_text(w, 'J', s);
        Py_DECREF(s);
        return r;
    }
    if (PyUnicode_Check(o))
        return put_text(w, 'S', o);
    if (PyTuple_CheckExact(o))
        return tfm_py_walk_items(w, 'U', &PyTuple_GET_ITEM(o, 0),
                                 PyTuple_GET_SIZE(o), depth);
    if (PyList_CheckExact(o))
        return tfm_py_walk_items(w, 'L', &PyList_GET_ITEM(o, 0),
                                 PyList_GET_SIZE(o), depth);
    if (PyDict_CheckExact(o))
        return walk_dict(w, o, depth);
    if (tfm_py_spec_type &&
        PyObject_TypeCheck(o, (PyTypeObject *)tfm_py_spec_type))
        return put_spec(w, o);
    if (is_namedtuple(o)) {
        if (put_ident(w, 'Q', (PyObject *)Py_TYPE(o)))
            return WALK_ERR;
        return tfm_py_walk_items(w, 'U', &PyTuple_GET_ITEM(o, 0),
                                 PyTuple_GET_SIZE(o), depth);
    }
    static PyObject *tracing_type;
    if (!tracing_type &&
        !(tracing_type = PyUnicode_InternFromString("__tf_tracing_type__")))
        return WALK_ERR;
    /* A type lookup (cached by CPython), so other objects pay no failed
     * attribute lookup on the call path. */
    if (_PyType_Lookup(Py_TYPE(o), tracing_type))
        return put_trace_type(w, o, tracing_type);
    return put_ident(w, 'O', o);
}

int
tfm_py_walk_tensors(PyObject *seq, walk *w)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        tfm_tensor *t = tfm_py_to_tensor(o, -1);
        if (!t || tfm_py_walk_leaf(w, t))
            return -1;
    }
    return 0;
}
