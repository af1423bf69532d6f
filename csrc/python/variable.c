/* _C.VariableBase: the Python face of a tfm_variable (runtime/variable.h).
 * tfmini.Variable subclasses it; every op accepts it as an input (the
 * binding reads it through tfm_py_variable_read, which tapes see). */
#include "binding.h"

#include "../runtime/variable.h"

PyTypeObject *tfm_py_variable_base;

typedef struct {
    PyObject_HEAD
    tfm_variable *v;
    PyObject *weakrefs;
} PyTfmVariable;

tfm_variable *tfm_py_variable_get(PyObject *o);

tfm_variable *
tfm_py_variable_get(PyObject *o)
{
    tfm_variable *v = ((PyTfmVariable *)o)->v;
    if (!v)
        PyErr_SetString(PyExc_ValueError, "the variable is not initialized "
                        "(tf.Variable.__init__ was not called)");
    return v;
}

/* Make the Python variable o stand for v (a loaded model's variable,
 * which its functions' graphs use), dropping the one it had. */
int
tfm_py_variable_adopt(PyObject *o, tfm_variable *v)
{
    if (!PyObject_TypeCheck(o, tfm_py_variable_base)) {
        PyErr_SetString(PyExc_TypeError, "expected a tf.Variable");
        return -1;
    }
    PyTfmVariable *self = (PyTfmVariable *)o;
    if (v->owner && v->owner != o) {
        PyErr_SetString(PyExc_RuntimeError, "this loaded variable already "
                        "has a tf.Variable");
        return -1;
    }
    tfm_variable_incref(v);
    if (self->v) {
        if (self->v->owner == o)
            self->v->owner = NULL;
        tfm_variable_decref(self->v);
    }
    v->owner = o;
    self->v = v;
    return 0;
}

tfm_tensor *
tfm_py_variable_read(PyObject *var)
{
    tfm_variable *v = tfm_py_variable_get(var);
    tfm_tensor *t = NULL;
    if (!v)
        return NULL;
    if (tfm_variable_read(v, &t)) {
        tfm_py_raise();
        return NULL;
    }
    return t;
}

/* The variable as its current value, or another object unchanged: new
 * references. What the operators below run on. */
static PyObject *
as_operand(PyObject *o)
{
    if (PyObject_TypeCheck(o, tfm_py_variable_base)) {
        tfm_tensor *t = tfm_py_variable_read(o);
        return t ? tfm_py_wrap(t) : NULL;
    }
    Py_INCREF(o);
    return o;
}

static void
variable_dealloc(PyTfmVariable *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->v) {
        if (self->v->owner == self)
            self->v->owner = NULL;
        tfm_variable_decref(self->v);
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int
parse_shape(PyObject *o, tfm_shape *s, int *any_rank)
{
    *any_rank = 0;
    if (o == Py_None) {
        *any_rank = 1;
        s->ndim = 0;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "shape must be a sequence or None");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TFM_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "tensors have at most %d dims",
                     TFM_MAX_DIMS);
        return -1;
    }
    s->ndim = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        if (d == Py_None) {
            s->dims[i] = -1;
            continue;
        }
        s->dims[i] = PyLong_AsLongLong(d);
        if (s->dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* _init(value, dtype, trainable, shape=<unset>): dtype is an enum or -1;
 * shape a sequence with None dims, None (any shape), or omitted (the
 * value's). */
static PyObject *
variable_init(PyTfmVariable *self, PyObject *args)
{
    PyObject *value, *shape = NULL;
    int dtype, trainable;
    if (!PyArg_ParseTuple(args, "Oip|O", &value, &dtype, &trainable, &shape))
        return NULL;
    if (dtype >= TFM_DTYPE_COUNT) {
        PyErr_Format(PyExc_TypeError, "invalid dtype %d", dtype);
        return NULL;
    }
    tfm_tensor *init = tfm_py_to_tensor(value, dtype);
    if (!init)
        return NULL;
    if (dtype >= 0 && init->dtype != (tfm_dtype)dtype) {
        PyErr_Format(PyExc_ValueError, "Tensor conversion requested dtype "
                     "%s for Tensor with dtype %s",
                     tfm_dtype_name((tfm_dtype)dtype),
                     tfm_dtype_name(init->dtype));
        tfm_tensor_decref(init);
        return NULL;
    }
    tfm_variable *v = tfm_variable_new(init, trainable);
    tfm_tensor_decref(init);
    if (!v)
        return tfm_py_raise();
    if (shape) {
        tfm_shape s;
        int any_rank;
        if (parse_shape(shape, &s, &any_rank)) {
            tfm_variable_decref(v);
            return NULL;
        }
        if (tfm_variable_set_shape(v, &s, any_rank)) {
            tfm_variable_decref(v);
            return tfm_py_raise();
        }
    }
    if (self->v) {
        if (self->v->owner == self)
            self->v->owner = NULL;
        tfm_variable_decref(self->v);
    }
    v->owner = self;
    self->v = v;
    Py_RETURN_NONE;
}

/* _alias(var): make self a second Python face of var's variable (TF's
 * UnreadVariable, what assign returns). var stays the owner: tapes and
 * watched_variables name it, never the alias. */
static PyObject *
variable_alias(PyTfmVariable *self, PyObject *var)
{
    if (!PyObject_TypeCheck(var, tfm_py_variable_base)) {
        PyErr_SetString(PyExc_TypeError, "expected a tf.Variable");
        return NULL;
    }
    tfm_variable *v = tfm_py_variable_get(var);
    if (!v)
        return NULL;
    tfm_variable_incref(v);
    if (self->v) {
        if (self->v->owner == self)
            self->v->owner = NULL;
        tfm_variable_decref(self->v);
    }
    self->v = v;
    Py_RETURN_NONE;
}

static PyObject *
variable_read(PyTfmVariable *self, PyObject *unused)
{
    (void)unused;
    tfm_tensor *t = tfm_py_variable_read((PyObject *)self);
    return t ? tfm_py_wrap(t) : NULL;
}

/* _assign(value, mode): 0 assign, 1 assign_add, 2 assign_sub. Python
 * values take the variable's dtype. */
static PyObject *
variable_assign(PyTfmVariable *self, PyObject *args)
{
    PyObject *value;
    int mode;
    if (!PyArg_ParseTuple(args, "Oi", &value, &mode))
        return NULL;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    if (!v)
        return NULL;
    if (mode < TFM_ASSIGN || mode > TFM_ASSIGN_SUB) {
        PyErr_Format(PyExc_ValueError, "bad assign mode %d", mode);
        return NULL;
    }
    tfm_tensor *t = tfm_py_to_tensor(value, v->value->dtype);
    if (!t)
        return NULL;
    tfm_code rc = tfm_variable_assign(v, t, (tfm_assign_mode)mode);
    tfm_tensor_decref(t);
    if (rc)
        return tfm_py_raise();
    Py_RETURN_NONE;
}

/* _handle(): the value with the variable's id, unseen by tapes. */
static PyObject *
variable_handle(PyTfmVariable *self, PyObject *unused)
{
    (void)unused;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? tfm_py_wrap(tfm_variable_handle(v)) : NULL;
}

static PyObject *
variable_numpy(PyTfmVariable *self, PyObject *unused)
{
    (void)unused;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    PyObject *a = v ? tfm_py_to_numpy(v->value) : NULL;
    if (!a || v->value->shape.ndim != 0)
        return a;
    /* A scalar variable gives a NumPy scalar, as a scalar tensor does
       (TF reads the value, then takes its numpy()). */
    PyObject *empty = PyTuple_New(0), *item = NULL;
    if (empty)
        item = PyObject_GetItem(a, empty);
    Py_XDECREF(empty);
    Py_DECREF(a);
    return item;
}

static PyObject *
get_trainable(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? PyBool_FromLong(v->trainable) : NULL;
}

static PyObject *
get_dtype_enum(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? PyLong_FromLong(v->value->dtype) : NULL;
}

static PyObject *
dims_tuple(const tfm_shape *s)
{
    PyObject *tup = PyTuple_New(s->ndim);
    if (!tup)
        return NULL;
    for (int i = 0; i < s->ndim; i++) {
        PyObject *d = s->dims[i] < 0 ? (Py_INCREF(Py_None), Py_None)
                                     : PyLong_FromLongLong(s->dims[i]);
        if (!d) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, d);
    }
    return tup;
}

/* The declared shape: None for any rank, None dims where unknown. */
static PyObject *
get_shape_tuple(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    if (!v)
        return NULL;
    if (v->any_rank)
        Py_RETURN_NONE;
    return dims_tuple(&v->shape);
}

static PyObject *
get_value_shape(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? dims_tuple(&v->value->shape) : NULL;
}

static PyObject *
get_id(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? PyLong_FromUnsignedLongLong(v->id) : NULL;
}

static PyObject *
get_device_index(PyTfmVariable *self, void *c)
{
    (void)c;
    tfm_variable *v = tfm_py_variable_get((PyObject *)self);
    return v ? PyLong_FromLong(v->value->device) : NULL;
}

static PyObject *
get_initialized(PyTfmVariable *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->v != NULL);
}

/* ---- operators: on the current value, through the tensor's slots ---- */

#define BINARY_SLOT(name, call)                                             \
    static PyObject *name(PyObject *a, PyObject *b)                         \
    {                                                                       \
        PyObject *x = as_operand(a), *y = NULL, *r = NULL;                  \
        if (x && (y = as_operand(b)))                                       \
            r = call(x, y);                                                 \
        Py_XDECREF(x);                                                      \
        Py_XDECREF(y);                                                      \
        return r;                                                           \
    }
BINARY_SLOT(nb_add, PyNumber_Add)
BINARY_SLOT(nb_sub, PyNumber_Subtract)
BINARY_SLOT(nb_mul, PyNumber_Multiply)
BINARY_SLOT(nb_truediv, PyNumber_TrueDivide)
BINARY_SLOT(nb_floordiv, PyNumber_FloorDivide)
BINARY_SLOT(nb_mod, PyNumber_Remainder)
BINARY_SLOT(nb_matmul, PyNumber_MatrixMultiply)
BINARY_SLOT(nb_and, PyNumber_And)
BINARY_SLOT(nb_or, PyNumber_Or)
BINARY_SLOT(nb_xor, PyNumber_Xor)

static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *m)
{
    PyObject *x = as_operand(a), *y = NULL, *r = NULL;
    if (x && (y = as_operand(b)))
        r = PyNumber_Power(x, y, m);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

#define UNARY_SLOT(name, call)                                              \
    static PyObject *name(PyObject *a)                                      \
    {                                                                       \
        PyObject *x = as_operand(a), *r = NULL;                             \
        if (x)                                                              \
            r = call(x);                                                    \
        Py_XDECREF(x);                                                      \
        return r;                                                           \
    }
UNARY_SLOT(nb_neg, PyNumber_Negative)
UNARY_SLOT(nb_abs, PyNumber_Absolute)
UNARY_SLOT(nb_invert, PyNumber_Invert)

static PyObject *
richcompare(PyObject *a, PyObject *b, int cmp)
{
    PyObject *x = as_operand(a), *y = NULL, *r = NULL;
    if (x && (y = as_operand(b)))
        r = PyObject_RichCompare(x, y, cmp);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static PyMethodDef variable_methods[] = {
    {"_init", (PyCFunction)variable_init, METH_VARARGS,
     "_init(value, dtype, trainable[, shape])"},
    {"_alias", (PyCFunction)variable_alias, METH_O, NULL},
    {"_read", (PyCFunction)variable_read, METH_NOARGS,
     "the current value as a Tensor (a read the tapes see)"},
    {"_assign", (PyCFunction)variable_assign, METH_VARARGS,
     "_assign(value, mode): 0 assign, 1 add, 2 sub"},
    {"_handle", (PyCFunction)variable_handle, METH_NOARGS, NULL},
    {"numpy", (PyCFunction)variable_numpy, METH_NOARGS,
     "A NumPy copy of the variable's value."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef variable_getset[] = {
    {"trainable", (getter)get_trainable, NULL, NULL, NULL},
    {"_dtype_enum", (getter)get_dtype_enum, NULL, NULL, NULL},
    {"_shape_tuple", (getter)get_shape_tuple, NULL, NULL, NULL},
    {"_value_shape", (getter)get_value_shape, NULL, NULL, NULL},
    {"_id", (getter)get_id, NULL, NULL, NULL},
    {"_device_index", (getter)get_device_index, NULL, NULL, NULL},
    {"_initialized", (getter)get_initialized, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot variable_slots[] = {
    {Py_tp_dealloc, variable_dealloc},
    {Py_tp_methods, variable_methods},
    {Py_tp_getset, variable_getset},
    {Py_tp_richcompare, richcompare},
    {Py_nb_add, nb_add},
    {Py_nb_subtract, nb_sub},
    {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_truediv},
    {Py_nb_floor_divide, nb_floordiv},
    {Py_nb_remainder, nb_mod},
    {Py_nb_matrix_multiply, nb_matmul},
    {Py_nb_power, nb_pow},
    {Py_nb_negative, nb_neg},
    {Py_nb_absolute, nb_abs},
    {Py_nb_invert, nb_invert},
    {Py_nb_and, nb_and},
    {Py_nb_or, nb_or},
    {Py_nb_xor, nb_xor},
    {Py_tp_doc, "C base of tf.Variable: a mutable tensor value."},
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
    Py_INCREF(tp);
    return PyModule_AddObject(m, "VariableBase", tp);
}
