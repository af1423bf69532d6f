/* _C.TensorBase: the tensor object and its operators. Operators convert
 * the non-tensor operand with the tensor's dtype (Python scalars adopt
 * it) and go straight to the dispatcher: no Python code on this path. */
#include "binding.h"

#include <structmember.h>

PyTypeObject *tfm_py_tensor_base;
PyTypeObject *tfm_py_tensor_class;
PyTypeObject *tfm_py_symbolic_class;

PyObject *
tfm_py_wrap(tfm_tensor *t)
{
    if (!t)
        return tfm_py_raise();
    /* As TF: a value is an EagerTensor, a traced one a SymbolicTensor,
     * both subclasses of tf.Tensor. */
    PyTypeObject *tp = tfm_tensor_is_symbolic(t) && tfm_py_symbolic_class
                           ? tfm_py_symbolic_class
                           : tfm_py_tensor_class;
    if (!tp)
        tp = tfm_py_tensor_base;
    PyTfmTensor *o = (PyTfmTensor *)tp->tp_alloc(tp, 0);
    if (!o) {
        tfm_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    o->weakrefs = NULL;
    return (PyObject *)o;
}

static void
tensor_dealloc(PyTfmTensor *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->t)
        tfm_tensor_decref(self->t);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int
anchor_dtype(PyObject *a, PyObject *b)
{
    if (tfm_py_is_tensor(a))
        return ((PyTfmTensor *)a)->t->dtype;
    if (tfm_py_is_tensor(b))
        return ((PyTfmTensor *)b)->t->dtype;
    return -1;
}

static tfm_tensor *
cast(tfm_tensor *t, tfm_dtype to)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = to;
    return tfm_call1(TFM_OP_CAST, &t, 1, &a);
}

/* The bool/int choice for & | ^ ~: logical on bool, bitwise on ints. */
static tfm_op
pick(tfm_op bitwise, tfm_op logical, tfm_tensor *t)
{
    return t->dtype == TFM_BOOL ? logical : bitwise;
}

enum { PLAIN, TRUEDIV, AND, OR, XOR };

static PyObject *
binary(PyObject *a, PyObject *b, tfm_op op, int how)
{
    tfm_tensor *in[2] = {NULL, NULL}, *out = NULL;
    int hint = anchor_dtype(a, b);
    in[0] = tfm_py_to_tensor_operand(a, tfm_py_is_tensor(a) ? -1 : hint);
    if (!in[0])
        goto not_handled;
    in[1] = tfm_py_to_tensor_operand(b, tfm_py_is_tensor(b) ? -1 : hint);
    if (!in[1])
        goto not_handled;
    switch (how) {
    case TRUEDIV:
        if (!tfm_dtype_is_float(in[0]->dtype) &&
            !tfm_dtype_is_complex(in[0]->dtype) &&
            in[0]->dtype == in[1]->dtype) {
            tfm_dtype to = tfm_dtype_truediv(in[0]->dtype);
            for (int i = 0; i < 2; i++) {
                tfm_tensor *c = cast(in[i], to);
                if (!c)
                    goto fail;
                tfm_tensor_decref(in[i]);
                in[i] = c;
            }
        }
        break;
    case AND: op = pick(TFM_OP_BITWISE_AND, TFM_OP_LOGICAL_AND, in[0]); break;
    case OR: op = pick(TFM_OP_BITWISE_OR, TFM_OP_LOGICAL_OR, in[0]); break;
    case XOR: op = pick(TFM_OP_BITWISE_XOR, TFM_OP_LOGICAL_XOR, in[0]); break;
    }
    out = tfm_call1(op, in, 2, NULL);
    tfm_tensor_decref(in[0]);
    tfm_tensor_decref(in[1]);
    return tfm_py_wrap(out);
not_handled:
    if (in[0])
        tfm_tensor_decref(in[0]);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NOTIMPLEMENTED;
fail:
    tfm_tensor_decref(in[0]);
    tfm_tensor_decref(in[1]);
    return tfm_py_raise();
}

static PyObject *
unary(PyObject *a, tfm_op op)
{
    tfm_tensor *t = ((PyTfmTensor *)a)->t;
    if (op == TFM_OP_INVERT && t->dtype == TFM_BOOL)
        op = TFM_OP_LOGICAL_NOT;
    return tfm_py_wrap(tfm_call1(op, &t, 1, NULL));
}

#define BINARY_SLOT(name, op, how)                                          \
    static PyObject *name(PyObject *a, PyObject *b)                         \
    {                                                                       \
        return binary(a, b, op, how);                                       \
    }
BINARY_SLOT(nb_add, TFM_OP_ADD, PLAIN)
BINARY_SLOT(nb_sub, TFM_OP_SUB, PLAIN)
BINARY_SLOT(nb_mul, TFM_OP_MUL, PLAIN)
BINARY_SLOT(nb_truediv, TFM_OP_DIV, TRUEDIV)
BINARY_SLOT(nb_floordiv, TFM_OP_FLOORDIV, PLAIN)
BINARY_SLOT(nb_mod, TFM_OP_FLOORMOD, PLAIN)
BINARY_SLOT(nb_and, TFM_OP_BITWISE_AND, AND)
BINARY_SLOT(nb_or, TFM_OP_BITWISE_OR, OR)
BINARY_SLOT(nb_xor, TFM_OP_BITWISE_XOR, XOR)

static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not "
                        "supported for tensors");
        return NULL;
    }
    return binary(a, b, TFM_OP_POW, PLAIN);
}

static PyObject *nb_neg(PyObject *a) { return unary(a, TFM_OP_NEG); }
/* abs() of a complex tensor is its modulus (TF's ComplexAbs). */
static PyObject *
nb_abs(PyObject *a)
{
    tfm_dtype d = ((PyTfmTensor *)a)->t->dtype;
    return unary(a, tfm_dtype_is_complex(d) ? TFM_OP_COMPLEX_ABS
                                            : TFM_OP_ABS);
}
static PyObject *nb_invert(PyObject *a) { return unary(a, TFM_OP_INVERT); }

/* == and != as TF's Tensor.__eq__: elementwise, except that operands
 * whose shapes do not broadcast compare unequal (a bool scalar tensor,
 * TF's incompatible_shape_error=False) instead of raising. Other errors
 * (mixed dtypes, a missing kernel) are raised, never hidden. */
static PyObject *
equality(PyObject *a, PyObject *b, int cmp)
{
    tfm_tensor *in[2] = {NULL, NULL};
    PyObject *r = NULL;
    int hint = anchor_dtype(a, b);
    in[0] = tfm_py_to_tensor_operand(a, tfm_py_is_tensor(a) ? -1 : hint);
    if (in[0])
        in[1] = tfm_py_to_tensor_operand(b, tfm_py_is_tensor(b) ? -1 : hint);
    if (!in[1]) {
        if (in[0])
            tfm_tensor_decref(in[0]);
        if (PyErr_Occurred()) {
            /* a value of the wrong kind (TypeError) or a ragged list
             * (ValueError) is simply not equal, as in Python */
            if (!PyErr_ExceptionMatches(PyExc_TypeError) &&
                !PyErr_ExceptionMatches(PyExc_ValueError))
                return NULL;
            PyErr_Clear();
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    tfm_shape out;
    if (in[0]->dtype == in[1]->dtype &&
        tfm_shape_broadcast("Equal", &in[0]->shape, &in[1]->shape, &out)) {
        tfm_error_clear();
        r = tfm_py_wrap(tfm_tensor_scalar(TFM_BOOL, cmp == Py_NE));
    } else {
        r = tfm_py_wrap(tfm_call1(cmp == Py_EQ ? TFM_OP_EQUAL
                                               : TFM_OP_NOT_EQUAL, in, 2,
                                  NULL));
    }
    tfm_tensor_decref(in[0]);
    tfm_tensor_decref(in[1]);
    return r;
}

static PyObject *
richcompare(PyObject *a, PyObject *b, int cmp)
{
    static const tfm_op ops[] = {
        [Py_LT] = TFM_OP_LESS, [Py_LE] = TFM_OP_LESS_EQUAL,
        [Py_EQ] = TFM_OP_EQUAL, [Py_NE] = TFM_OP_NOT_EQUAL,
        [Py_GT] = TFM_OP_GREATER, [Py_GE] = TFM_OP_GREATER_EQUAL,
    };
    if (cmp == Py_EQ || cmp == Py_NE) {
        if (b == Py_None)
            return PyBool_FromLong(cmp == Py_NE);
        return equality(a, b, cmp);
    }
    return binary(a, b, ops[cmp], PLAIN);
}

/* ---- attributes the Python class builds on ---- */

static PyObject *
get_dtype_enum(PyTfmTensor *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->t->dtype);
}

static PyObject *
get_shape_tuple(PyTfmTensor *self, void *c)
{
    (void)c;
    const tfm_shape *s = &self->t->shape;
    PyObject *tup = PyTuple_New(s->ndim);
    if (!tup)
        return NULL;
    for (int i = 0; i < s->ndim; i++) {
        PyObject *d;
        if (s->dims[i] < 0) {
            d = Py_None;
            Py_INCREF(d);
        } else {
            d = PyLong_FromLongLong(s->dims[i]);
            if (!d) {
                Py_DECREF(tup);
                return NULL;
            }
        }
        PyTuple_SET_ITEM(tup, i, d);
    }
    return tup;
}

static PyObject *
get_ndim(PyTfmTensor *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->t->shape.ndim);
}

static PyObject *
get_symbolic(PyTfmTensor *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tfm_tensor_is_symbolic(self->t));
}

static PyObject *
get_id(PyTfmTensor *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->t->id);
}

static PyObject *
get_device_index(PyTfmTensor *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->t->device);
}

/* A NumPy copy; rank 0 gives a NumPy scalar (np.float32(6.0)), as TF. */
static PyObject *
tensor_numpy(PyTfmTensor *self, PyObject *unused)
{
    (void)unused;
    PyObject *a = tfm_py_to_numpy(self->t);
    if (!a || self->t->shape.ndim != 0)
        return a;
    PyObject *empty = PyTuple_New(0), *item = NULL;
    if (empty)
        item = PyObject_GetItem(a, empty);      /* a[()]: the scalar */
    Py_XDECREF(empty);
    Py_DECREF(a);
    return item;
}

static PyGetSetDef tensor_getset[] = {
    {"_dtype_enum", (getter)get_dtype_enum, NULL, NULL, NULL},
    {"_shape_tuple", (getter)get_shape_tuple, NULL, NULL, NULL},
    {"ndim", (getter)get_ndim, NULL, "rank of the tensor", NULL},
    {"_symbolic", (getter)get_symbolic, NULL, NULL, NULL},
    {"_id", (getter)get_id, NULL, NULL, NULL},
    {"_device_index", (getter)get_device_index, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef tensor_methods[] = {
    {"numpy", (PyCFunction)tensor_numpy, METH_NOARGS,
     "A NumPy copy of the tensor's value."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef tensor_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PyTfmTensor, weakrefs),
     READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* ---- buffer protocol: a read-only view of a concrete CPU tensor ---- */

static int
tensor_getbuffer(PyTfmTensor *self, Py_buffer *view, int flags)
{
    static const char *formats[TFM_DTYPE_COUNT] = {
        [TFM_BOOL] = "?", [TFM_INT8] = "b", [TFM_UINT8] = "B",
        [TFM_INT16] = "h", [TFM_INT32] = "i", [TFM_INT64] = "q",
        [TFM_FLOAT16] = "e", [TFM_FLOAT32] = "f", [TFM_FLOAT64] = "d",
        [TFM_COMPLEX64] = "Zf", [TFM_COMPLEX128] = "Zd",
        [TFM_UINT16] = "H", [TFM_UINT32] = "I", [TFM_UINT64] = "Q",
    };
    tfm_tensor *t = self->t;
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "tensors are immutable");
        return -1;
    }
    if (tfm_tensor_is_symbolic(t) || t->device != TFM_CPU) {
        PyErr_SetString(PyExc_BufferError, "only concrete CPU tensors "
                        "expose a buffer");
        return -1;
    }
    if (!formats[t->dtype]) {
        /* A string tensor's slots are the core's pointers (Note [String
         * elements]): numpy() gives its bytes. */
        PyErr_Format(PyExc_BufferError, "a %s tensor exposes no buffer; "
                     "use .numpy()", tfm_dtype_name(t->dtype));
        return -1;
    }
    int nd = t->shape.ndim;
    Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (nd + 1));
    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *strides = dims + nd + 1;
    Py_ssize_t st = (Py_ssize_t)tfm_dtype_size(t->dtype);
    for (int i = nd - 1; i >= 0; i--) {
        dims[i] = (Py_ssize_t)t->shape.dims[i];
        strides[i] = st;
        st *= dims[i];
    }
    view->buf = tfm_tensor_data(t);
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->len = (Py_ssize_t)tfm_tensor_nbytes(t);
    view->readonly = 1;
    view->itemsize = (Py_ssize_t)tfm_dtype_size(t->dtype);
    view->format = (flags & PyBUF_FORMAT) ? (char *)formats[t->dtype] : NULL;
    view->ndim = nd;
    view->shape = dims;
    view->strides = strides;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void
tensor_releasebuffer(PyTfmTensor *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

static PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_richcompare, richcompare},
    {Py_tp_getset, tensor_getset},
    {Py_tp_methods, tensor_methods},
    {Py_tp_members, tensor_members},
    {Py_bf_getbuffer, tensor_getbuffer},
    {Py_bf_releasebuffer, tensor_releasebuffer},
    {Py_nb_add, nb_add},
    {Py_nb_subtract, nb_sub},
    {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_truediv},
    {Py_nb_floor_divide, nb_floordiv},
    {Py_nb_remainder, nb_mod},
    {Py_nb_power, nb_pow},
    {Py_nb_negative, nb_neg},
    {Py_nb_absolute, nb_abs},
    {Py_nb_invert, nb_invert},
    {Py_nb_and, nb_and},
    {Py_nb_or, nb_or},
    {Py_nb_xor, nb_xor},
    {Py_tp_doc, "C base of tf.Tensor: value, dtype, shape, operators."},
    {0, NULL},
};

PyType_Spec tfm_py_tensor_spec = {
    .name = "tfmini._C.TensorBase",
    .basicsize = sizeof(PyTfmTensor),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = tensor_slots,
};
