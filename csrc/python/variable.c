/* _C.VariableBase: the mutable state behind tf.Variable. Reads share the
 * variable's buffer; a write while a read is alive copies first (see
 * buffer.h), so tensors read earlier keep their value. */
#include "binding.h"

#include <string.h>

PyTypeObject *tfm_py_variable_base;

typedef struct {
    PyObject_HEAD
    tfm_tensor *value;   /* its buffer is the variable's storage */
    PyObject *weakrefs;
} PyTfmVariable;

tfm_tensor *
tfm_py_variable_read(PyObject *var)
{
    tfm_tensor *v = ((PyTfmVariable *)var)->value;
    if (!v) {
        PyErr_SetString(PyExc_ValueError, "the variable has no value yet");
        return NULL;
    }
    tfm_tensor *t = tfm_tensor_view(v->buf, v->offset, v->dtype, &v->shape,
                                    v->device);
    if (!t)
        tfm_py_raise();
    return t;
}

static void
variable_dealloc(PyTfmVariable *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->value)
        tfm_tensor_decref(self->value);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* _init_value(tensor): set the initial value (a private copy). */
static PyObject *
variable_init_value(PyTfmVariable *self, PyObject *arg)
{
    tfm_tensor *src = tfm_py_to_tensor(arg, -1);
    if (!src)
        return NULL;
    tfm_tensor *t = tfm_tensor_new(src->dtype, &src->shape, src->device);
    if (!t) {
        tfm_tensor_decref(src);
        return tfm_py_raise();
    }
    memcpy(tfm_tensor_data(t), tfm_tensor_data(src), tfm_tensor_nbytes(t));
    tfm_tensor_decref(src);
    if (self->value)
        tfm_tensor_decref(self->value);
    self->value = t;
    Py_RETURN_NONE;
}

static PyObject *
variable_read(PyTfmVariable *self, PyObject *unused)
{
    (void)unused;
    tfm_tensor *t = tfm_py_variable_read((PyObject *)self);
    return t ? tfm_py_wrap(t) : NULL;
}

static PyMethodDef variable_methods[] = {
    {"_init_value", (PyCFunction)variable_init_value, METH_O, NULL},
    {"_read", (PyCFunction)variable_read, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot variable_slots[] = {
    {Py_tp_dealloc, variable_dealloc},
    {Py_tp_methods, variable_methods},
    {0, NULL},
};

static PyType_Spec variable_spec = {
    .name = "tfmini._C.VariableBase",
    .basicsize = sizeof(PyTfmVariable),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = variable_slots,
};

int
tfm_py_variable_init(PyObject *m)
{
    PyObject *tp = PyType_FromSpec(&variable_spec);
    if (!tp)
        return -1;
    tfm_py_variable_base = (PyTypeObject *)tp;
    ((PyTypeObject *)tp)->tp_weaklistoffset = offsetof(PyTfmVariable,
                                                       weakrefs);
    return PyModule_AddObject(m, "VariableBase", tp);
}
