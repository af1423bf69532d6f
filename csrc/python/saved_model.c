/* _C.saved_model_*: the binding of graph/saved_model.h. The file format
 * and its checks are all C; this file only moves Python objects in and
 * out. tfmini/saved_model/ builds the meta blob (the Python structure of
 * inputs and outputs, as JSON) and the loaded object from what these
 * return. */
#include "binding.h"

#include "../graph/file_write.h"
#include "../graph/saved_model.h"

#define CAPSULE "tfmini.saved_model"

static void
capsule_free(PyObject *cap)
{
    tfm_saved_model_free(PyCapsule_GetPointer(cap, CAPSULE));
}

/* save(export_dir, meta, [(name, Variable)], [(name, ConcreteFunction)]):
 * each function's graph as traced. meta None: no META section, as a C
 * program writes. */
static PyObject *
py_save(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir, *vars, *fns;
    Py_buffer meta;
    if (!PyArg_ParseTuple(args, "O&z*O!O!", PyUnicode_FSConverter, &dir,
                          &meta, &PyList_Type, &vars, &PyList_Type, &fns))
        return NULL;
    Py_ssize_t nv = PyList_GET_SIZE(vars), nf = PyList_GET_SIZE(fns);
    tfm_saved_variable *sv = PyMem_Calloc((size_t)nv + 1, sizeof *sv);
    tfm_saved_function *sf = PyMem_Calloc((size_t)nf + 1, sizeof *sf);
    PyObject *r = NULL;
    if (!sv || !sf) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *name, *v;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(vars, i), "UO", &name, &v))
            goto done;
        if (!PyObject_TypeCheck(v, tfm_py_variable_base)) {
            PyErr_SetString(PyExc_TypeError, "expected a tf.Variable");
            goto done;
        }
        sv[i].name = PyUnicode_AsUTF8(name);
        sv[i].var = tfm_py_variable_get(v);
        if (!sv[i].name || !sv[i].var)
            goto done;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *name, *c;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(fns, i), "UO", &name, &c))
            goto done;
        tfm_concrete *cf = tfm_py_concrete_get(c);
        sf[i].name = PyUnicode_AsUTF8(name);
        if (!cf || !sf[i].name)
            goto done;
        sf[i].graph = cf->graph;
    }
    if (tfm_saved_model_save(PyBytes_AS_STRING(dir), sf, (int)nf, sv,
                             (int)nv, meta.buf, (size_t)meta.len))
        tfm_py_raise();
    else
        r = Py_NewRef(Py_None);
done:
    PyMem_Free(sv);
    PyMem_Free(sf);
    PyBuffer_Release(&meta);
    Py_DECREF(dir);
    return r;
}

static PyObject *
dims_or_none(const tfm_shape *s, int any_rank)
{
    if (any_rank)
        Py_RETURN_NONE;
    PyObject *t = PyTuple_New(s->ndim);
    for (int d = 0; t && d < s->ndim; d++) {
        PyObject *v = s->dims[d] < 0 ? Py_NewRef(Py_None)
                                     : PyLong_FromLongLong(s->dims[d]);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* load(export_dir) -> (meta or None, [(name, trainable, value, shape)],
 * [(name, Graph, [(dtype, dims) per output])], handle). The functions run once adopt() has given
 * them their Python objects. */
static PyObject *
py_load(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *dir;
    if (!PyUnicode_FSConverter(arg, &dir))
        return NULL;
    tfm_saved_model *m = tfm_saved_model_load(PyBytes_AS_STRING(dir));
    Py_DECREF(dir);
    if (!m)
        return tfm_py_raise();
    PyObject *cap = PyCapsule_New(m, CAPSULE, capsule_free);
    if (!cap) {
        tfm_saved_model_free(m);
        return NULL;
    }
    PyObject *vars = PyList_New(m->nvars), *fns = PyList_New(m->nfuncs);
    PyObject *meta = m->meta ? PyBytes_FromStringAndSize(
                                   (const char *)m->meta,
                                   (Py_ssize_t)m->meta_len)
                             : Py_NewRef(Py_None);
    if (!vars || !fns || !meta)
        goto fail;
    for (int i = 0; i < m->nvars; i++) {
        tfm_variable *v = m->vars[i];
        tfm_tensor_incref(v->value);
        PyObject *item = Py_BuildValue("(sNNN)", m->var_names[i],
                                       PyBool_FromLong(v->trainable),
                                       tfm_py_wrap(v->value),
                                       dims_or_none(&v->shape, v->any_rank));
        if (!item)
            goto fail;
        PyList_SET_ITEM(vars, i, item);
    }
    for (int i = 0; i < m->nfuncs; i++) {
        tfm_graph *g = m->funcs[i]->graph;
        int nout = tfm_graph_output_count(g);
        PyObject *outs = PyList_New(nout);
        for (int k = 0; outs && k < nout; k++) {
            tfm_ref r = tfm_graph_output(g, k);
            const tfm_meta *mt = &tfm_graph_node(g, r.node)->out[r.out];
            PyObject *o = Py_BuildValue("(iN)", (int)mt->dtype,
                                        dims_or_none(&mt->shape, 0));
            if (!o)
                Py_CLEAR(outs);
            else
                PyList_SET_ITEM(outs, k, o);
        }
        PyObject *item = Py_BuildValue("(sNN)", m->func_names[i],
                                       tfm_py_graph_wrap(g), outs);
        if (!item)
            goto fail;
        PyList_SET_ITEM(fns, i, item);
    }
    return Py_BuildValue("(NNNN)", meta, vars, fns, cap);
fail:
    Py_XDECREF(vars);
    Py_XDECREF(fns);
    Py_XDECREF(meta);
    Py_DECREF(cap);
    return NULL;
}

/* adopt(handle, variables, [(index, ConcreteFunction, kind, structure)]):
 * variables[i] (a tf.Variable) becomes the model's variable i, which its
 * functions read and assign; each ConcreteFunction runs function index. */
static PyObject *
py_adopt(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *vars, *fns;
    if (!PyArg_ParseTuple(args, "OO!O!", &cap, &PyList_Type, &vars,
                          &PyList_Type, &fns))
        return NULL;
    tfm_saved_model *m = PyCapsule_GetPointer(cap, CAPSULE);
    if (!m)
        return NULL;
    if (PyList_GET_SIZE(vars) != m->nvars) {
        PyErr_Format(PyExc_ValueError, "the model has %d variables, got %zd",
                     m->nvars, PyList_GET_SIZE(vars));
        return NULL;
    }
    for (int i = 0; i < m->nvars; i++)
        if (tfm_py_variable_adopt(PyList_GET_ITEM(vars, i), m->vars[i]))
            return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fns); i++) {
        int index, kind;
        PyObject *c, *structure;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(fns, i), "iOiO", &index, &c,
                              &kind, &structure))
            return NULL;
        if (index < 0 || index >= m->nfuncs) {
            PyErr_Format(PyExc_ValueError, "the model has no function %d",
                         index);
            return NULL;
        }
        if (tfm_py_concrete_adopt(c, m->funcs[index], kind, structure))
            return NULL;
    }
    Py_RETURN_NONE;
}

/* write_file_atomic(path, data, who): Note [Atomic file write], for the
 * files Python writes (weights, checkpoints); errors as tf.errors. */
static PyObject *
py_write_file_atomic(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *path;
    Py_buffer data;
    const char *who = "write";
    if (!PyArg_ParseTuple(args, "O&y*|s", PyUnicode_FSConverter, &path,
                          &data, &who))
        return NULL;
    tfm_code rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tfm_file_write_atomic(PyBytes_AS_STRING(path), data.buf,
                               (size_t)data.len, who);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    Py_DECREF(path);
    if (rc)
        return tfm_py_raise();
    Py_RETURN_NONE;
}

PyMethodDef tfm_py_saved_model_methods[] = {
    {"write_file_atomic", py_write_file_atomic, METH_VARARGS,
     "write_file_atomic(path, data, who): see Note [Atomic file write]"},
    {"saved_model_save", py_save, METH_VARARGS,
     "saved_model_save(dir, meta, [(name, var)], [(name, concrete)])"},
    {"saved_model_load", py_load, METH_O,
     "saved_model_load(dir) -> (meta, variables, functions, handle)"},
    {"saved_model_adopt", py_adopt, METH_VARARGS,
     "saved_model_adopt(handle, variables, [(i, concrete, kind, "
     "structure)])"},
    {NULL, NULL, 0, NULL},
};
