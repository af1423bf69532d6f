/* Generic op calls from Python: _C.call for any op with attributes, and
 * _C.binary / _C.unary for the public elementwise functions (which take
 * Python scalars with the other operand's dtype, like the operators). */
#include "binding.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int
parse_op(PyObject *o, tfm_op *op)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v >= TFM_OP_COUNT) {
        PyErr_Format(PyExc_ValueError, "no op %ld", v);
        return -1;
    }
    *op = (tfm_op)v;
    return 0;
}

static int
parse_int_seq(PyObject *o, int64_t *dst, int cap, int *n, const char *what)
{
    PyObject *seq = PySequence_Fast(o, "attribute must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > cap) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d values, got %zd",
                     what, cap, len);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t k = 0; k < len; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        long long v = PyLong_AsLongLong(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        dst[k] = v;
    }
    if (n)
        *n = (int)len;
    Py_DECREF(seq);
    return 0;
}

static int
parse_attrs(PyObject *ints, PyObject *iv, PyObject *fv, PyObject *dtype,
            tfm_attrs *a)
{
    tfm_attrs_init(a);
    if (ints && ints != Py_None &&
        parse_int_seq(ints, a->ints, TFM_MAX_ATTR_INTS, &a->n_ints, "ints"))
        return -1;
    if (iv && iv != Py_None && parse_int_seq(iv, a->i, 6, NULL, "i"))
        return -1;
    if (fv && fv != Py_None) {
        PyObject *seq = PySequence_Fast(fv, "f must be a sequence");
        if (!seq)
            return -1;
        Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
        if (len > 4) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "f: at most 4 values");
            return -1;
        }
        for (Py_ssize_t k = 0; k < len; k++) {
            a->f[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
            if (a->f[k] == -1.0 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    if (dtype && dtype != Py_None) {
        long d = PyLong_AsLong(dtype);
        if (d == -1 && PyErr_Occurred())
            return -1;
        if (d < 0 || d >= TFM_DTYPE_COUNT) {
            PyErr_Format(PyExc_TypeError, "invalid dtype %ld", d);
            return -1;
        }
        a->dtype = (tfm_dtype)d;
    }
    return 0;
}

static PyObject *
outputs_to_python(tfm_op op, tfm_tensor **out, int nout)
{
    if (tfm_ops[op].n_outputs == 1)
        return tfm_py_wrap(out[0]);
    PyObject *tup = PyTuple_New(nout);
    if (!tup) {
        for (int i = 0; i < nout; i++)
            tfm_tensor_decref(out[i]);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        PyObject *w = tfm_py_wrap(out[i]);
        if (!w) {
            for (int j = i + 1; j < nout; j++)
                tfm_tensor_decref(out[j]);
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, w);
    }
    return tup;
}

/* call(op, inputs, ints=None, i=None, f=None, dtype=None)
 * Vectorcall, with the keywords matched here: every wrapper in tfmini/ops
 * comes through this, and PyArg_ParseTupleAndKeywords alone cost about a
 * sixth of a tiny op's call (a tuple and a dict built per call). */
static const char *const call_kw[] = {"op", "inputs", "ints", "i", "f",
                                      "dtype"};
enum { CALL_NARGS = 6, CALL_REQUIRED = 2 };

static int
call_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
          PyObject **slot)
{
    if (nargs > CALL_NARGS) {
        PyErr_Format(PyExc_TypeError, "call() takes at most %d arguments "
                     "(%zd given)", CALL_NARGS, nargs);
        return -1;
    }
    for (Py_ssize_t k = 0; k < nargs; k++)
        slot[k] = args[k];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < CALL_NARGS &&
               PyUnicode_CompareWithASCIIString(key, call_kw[j]) != 0)
            j++;
        if (j == CALL_NARGS) {
            PyErr_Format(PyExc_TypeError, "call() got an unexpected "
                         "keyword argument '%U'", key);
            return -1;
        }
        if (slot[j]) {
            PyErr_Format(PyExc_TypeError, "argument for call() given by "
                         "name ('%s') and position (%d)", call_kw[j],
                         j + 1);
            return -1;
        }
        slot[j] = args[nargs + k];
    }
    for (int j = 0; j < CALL_REQUIRED; j++)
        if (!slot[j]) {
            PyErr_Format(PyExc_TypeError, "call() missing required "
                         "argument '%s' (pos %d)", call_kw[j], j + 1);
            return -1;
        }
    return 0;
}

static PyObject *
py_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    (void)self;
    PyObject *slot[CALL_NARGS] = {NULL};
    if (call_args(args, nargs, kwnames, slot))
        return NULL;
    PyObject *opo = slot[0], *inputs = slot[1], *ints = slot[2],
             *iv = slot[3], *fv = slot[4], *dtype = slot[5];
    tfm_op op;
    tfm_attrs a;
    if (parse_op(opo, &op) || parse_attrs(ints, iv, fv, dtype, &a))
        return NULL;
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TFM_MAX_INPUTS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d inputs",
                     tfm_ops[op].name, TFM_MAX_INPUTS);
        return NULL;
    }
    tfm_tensor *in[TFM_MAX_INPUTS];
    Py_ssize_t k;
    for (k = 0; k < n; k++) {
        in[k] = tfm_py_to_tensor(PySequence_Fast_GET_ITEM(seq, k), -1);
        if (!in[k])
            break;
    }
    Py_DECREF(seq);
    PyObject *result = NULL;
    if (k == n) {
        tfm_tensor *out[TFM_MAX_OUTPUTS];
        int nout = 0;
        if (tfm_call(op, in, (int)n, &a, out, &nout))
            tfm_py_raise();
        else
            result = outputs_to_python(op, out, nout);
    }
    while (k-- > 0)
        tfm_tensor_decref(in[k]);
    return result;
}

/* An operand of tf.add & co., converted as the operators do (the other
 * operand's dtype is a hint: compatible kinds only); a value of no
 * convertible type gets tf.convert_to_tensor's error. */
static tfm_tensor *
convert_operand(PyObject *o, int hint)
{
    tfm_tensor *t = tfm_py_to_tensor_operand(o, hint);
    if (!t && !PyErr_Occurred())
        t = tfm_py_to_tensor(o, hint);
    return t;
}

/* binary(op, x, y): x and y as the operators convert them. */
static PyObject *
py_binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    tfm_op op;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "binary(op, x, y)");
        return NULL;
    }
    if (parse_op(args[0], &op))
        return NULL;
    PyObject *x = args[1], *y = args[2];
    int hint = tfm_py_is_tensor(x) ? (int)((PyTfmTensor *)x)->t->dtype
             : tfm_py_is_tensor(y) ? (int)((PyTfmTensor *)y)->t->dtype : -1;
    tfm_tensor *in[2];
    in[0] = convert_operand(x, tfm_py_is_tensor(x) ? -1 : hint);
    if (!in[0])
        return NULL;
    if (hint < 0)
        hint = in[0]->dtype;
    in[1] = convert_operand(y, tfm_py_is_tensor(y) ? -1 : hint);
    if (!in[1]) {
        tfm_tensor_decref(in[0]);
        return NULL;
    }
    tfm_tensor *out = tfm_call1(op, in, 2, NULL);
    tfm_tensor_decref(in[0]);
    tfm_tensor_decref(in[1]);
    return tfm_py_wrap(out);
}

/* unary(op, x) */
static PyObject *
py_unary(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    tfm_op op;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "unary(op, x)");
        return NULL;
    }
    if (parse_op(args[0], &op))
        return NULL;
    tfm_tensor *in = tfm_py_to_tensor(args[1], -1);
    if (!in)
        return NULL;
    tfm_tensor *out = tfm_call1(op, &in, 1, NULL);
    tfm_tensor_decref(in);
    return tfm_py_wrap(out);
}

/* op_table() -> [(name, n_inputs, n_outputs, flags, has_grad), ...] */
static PyObject *
py_op_table(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    PyObject *list = PyList_New(TFM_OP_COUNT);
    if (!list)
        return NULL;
    for (int i = 0; i < TFM_OP_COUNT; i++) {
        const tfm_op_def *d = &tfm_ops[i];
        PyObject *row = Py_BuildValue("(siiIO)", d->name, d->n_inputs,
                                      d->n_outputs, d->flags,
                                      tfm_op_grads[i] ? Py_True : Py_False);
        if (!row) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, row);
    }
    return list;
}

static PyObject *
py_live_counts(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return Py_BuildValue("(LLL)", (long long)tfm_tensor_live_count(),
                         (long long)tfm_buffer_live_count(),
                         (long long)tfm_buffer_live_bytes());
}

/* peak_bytes(reset=False): the most buffer bytes live at once since the
 * last reset; reset=True starts a new window at the bytes live now. */
static PyObject *
py_peak_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int reset = 0;
    if (nargs > 1)
        return PyErr_Format(PyExc_TypeError, "peak_bytes takes at most 1 "
                            "argument (%zd given)", nargs);
    if (nargs == 1 && (reset = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    long long peak = (long long)tfm_buffer_peak_bytes();
    if (reset)
        tfm_buffer_reset_peak();
    return PyLong_FromLongLong(peak);
}

static PyObject *
py_set_num_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
#ifdef _OPENMP
    if (n > 0)
        omp_set_num_threads((int)n);
#endif
    Py_RETURN_NONE;
}

static PyObject *
py_get_num_threads(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
#ifdef _OPENMP
    return PyLong_FromLong(omp_get_max_threads());
#else
    return PyLong_FromLong(1);
#endif
}

static PyObject *
py_set_device_scope(PyObject *self, PyObject *arg)
{
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    int old = tfm_device_scope();
    tfm_device_set_scope((int)d);
    return PyLong_FromLong(old);
}

/* _C.getitem and its views: getitem.c */
PyObject *tfm_py_getitem(PyObject *self, PyObject *const *args,
                         Py_ssize_t nargs);
PyObject *tfm_py_getitem_method(PyObject *self, PyObject *fallback);

PyMethodDef tfm_py_call_methods[] = {
    {"call", (PyCFunction)(void (*)(void))py_call,
     METH_FASTCALL | METH_KEYWORDS,
     "call(op, inputs, ints=None, i=None, f=None, dtype=None)"},
    {"binary", (PyCFunction)(void (*)(void))py_binary, METH_FASTCALL,
     "binary(op, x, y)"},
    {"unary", (PyCFunction)(void (*)(void))py_unary, METH_FASTCALL,
     "unary(op, x)"},
    {"getitem", (PyCFunction)(void (*)(void))tfm_py_getitem, METH_FASTCALL,
     "getitem(tensor, key): tensor[key] for a key of int64 ints and "
     "slices of them, else NotImplemented"},
    {"getitem_method", tfm_py_getitem_method, METH_O,
     "getitem_method(fallback): a Tensor.__getitem__ that tries getitem, "
     "then calls fallback(tensor, key)"},
    {"op_table", py_op_table, METH_NOARGS,
     "[(name, n_inputs, n_outputs, flags, has_grad)] indexed by op"},
    {"live_counts", py_live_counts, METH_NOARGS,
     "(live tensors, live buffers, live buffer bytes)"},
    {"peak_bytes", (PyCFunction)(void (*)(void))py_peak_bytes,
     METH_FASTCALL, "peak_bytes(reset=False): the most buffer bytes live "
     "at once since the last reset (reset=True: then start a new window)"},
    {"set_num_threads", py_set_num_threads, METH_O, NULL},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, NULL},
    {"set_device_scope", py_set_device_scope, METH_O,
     "set the device scope (-1 none, 0 CPU, 1+n CUDA:n); returns the old"},
    {NULL, NULL, 0, NULL},
};
