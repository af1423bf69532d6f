/* _C.getitem: tensor[key] for the common keys (ints and int slices) as
 * one StridedSlice, built here rather than in Python; and, where the
 * result is a contiguous run of the input, as a view of its buffer
 * (Note [Views for basic indexing]). */
#include "binding.h"

#include "../runtime/tape.h"
#include "../runtime/trace.h"

/* A Python int (not a bool or an int subclass) that int64 holds, into
 * *v: 0; 1 for anything else, with no error set. */
static int
plain_int64(PyObject *o, int64_t *v)
{
    int overflow;
    if (!PyLong_CheckExact(o))
        return 1;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow)
        return 1;
    *v = x;
    return 0;
}

/* Note [Views for basic indexing]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * x[0], x[1:3], x[2, :] and their like take a contiguous run of x's
 * row-major elements: dims cut to one index (ints, or slices of one),
 * then at most one dim cut short, then whole dims. Eagerly on the CPU
 * such a result is a view of x's buffer (tfm_tensor_view: the same
 * buffer at an offset, one more reference on it) instead of a
 * StridedSlice copy; TF's CPU StridedSlice likewise hands back an alias
 * of its input for a slice of dim 0. Tensors are immutable, and each
 * of the few things that write a buffer in place first checks that no
 * one else holds it (Note [Views of live inputs] in graph/exec.c), so
 * a view never sees its bytes change. Like that executor's views, it
 * keeps the whole buffer alive while it lives (as NumPy's views and
 * TF's aliases do). A tape still records the StridedSlice, whose
 * gradient reads only attributes and the input's shape. Everything
 * else takes the kernel: tracing, tensors off the CPU, a tf.device
 * scope or a default GPU that would place the op elsewhere, placement
 * logging (which names the op), strings, empty results, strides other
 * than 1, and any index the kernel refuses (its error names it). */
static int64_t
clamp_bound(int64_t v, int64_t dim)
{
    if (v < 0)
        v += dim;
    return v < 0 ? 0 : v > dim ? dim : v;
}

static int
view_placed_on_cpu(const tfm_tensor *x)
{
    if (!x->buf || x->device != TFM_CPU || x->buf->device != TFM_CPU ||
        tfm_log_placement || tfm_trace_graph())
        return 0;
    int scope = tfm_device_scope();
    if (scope >= 0)
        return scope == TFM_CPU;
    return !(tfm_default_device > 0 &&
             tfm_kernel_for(TFM_OP_STRIDED_SLICE, tfm_default_device));
}

/* The view x[key] for the StridedSlice attributes a (n entries, no
 * ellipsis or new axes), or NULL (no error set) when the kernel must
 * run. */
static tfm_tensor *
basic_view(tfm_tensor *x, int n, const tfm_attrs *a)
{
    const int64_t *begin = a->ints, *end = a->ints + n,
                  *stride = a->ints + 2 * n;
    int64_t bmask = a->i[0], emask = a->i[1], shrink = a->i[4];
    int nd = x->shape.ndim;
    if (n > nd || x->dtype == TFM_STRING || !view_placed_on_cpu(x))
        return NULL;
    int64_t inner[TFM_MAX_DIMS], numel = 1;
    for (int d = nd - 1; d >= 0; d--) {
        inner[d] = numel;
        numel *= x->shape.dims[d];
    }
    if (numel == 0)
        return NULL;
    tfm_shape s;
    s.ndim = 0;
    int64_t off = 0;
    int spread = 0;         /* a dim of more than one index came before */
    for (int d = 0; d < nd; d++) {
        int64_t dim = x->shape.dims[d], bit = (int64_t)1 << d;
        int64_t lo = 0, len = dim;
        int drop = d < n && (shrink & bit);
        if (drop) {
            lo = begin[d] < 0 ? begin[d] + dim : begin[d];
            if (lo < 0 || lo >= dim)
                return NULL;
            len = 1;
        } else if (d < n) {
            if (stride[d] != 1)
                return NULL;
            lo = (bmask & bit) ? 0 : clamp_bound(begin[d], dim);
            int64_t hi = (emask & bit) ? dim : clamp_bound(end[d], dim);
            if (hi <= lo)
                return NULL;
            len = hi - lo;
        }
        if (spread && len != dim)
            return NULL;
        spread |= len > 1;
        off += lo * inner[d];
        if (!drop)
            s.dims[s.ndim++] = len;
    }
    tfm_tensor *v = tfm_tensor_view(
        x->buf, x->offset + (size_t)off * tfm_dtype_size(x->dtype),
        x->dtype, &s, TFM_CPU);
    if (!v)
        tfm_error_clear();
    return v;
}

/* getitem(tensor, key): tensor[key] as one StridedSlice when key is an
 * int, a slice, or a tuple of ints and slices, whose ints int64 holds
 * (x[0], x[:, 1], x[1:]); NotImplemented for any other key, which
 * array_ops._getitem then converts (clamping bounds, tensors, masks,
 * ellipses, new axes) or refuses with its own error. Building the
 * attributes in Python cost more than the slice itself. */
PyObject *
tfm_py_getitem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "getitem(tensor, key)");
        return NULL;
    }
    PyObject *key = args[1];
    PyObject *const *items = &key;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    } else if (!PySlice_Check(key) && !PyLong_CheckExact(key)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (n * 3 > TFM_MAX_ATTR_INTS)
        Py_RETURN_NOTIMPLEMENTED;
    tfm_attrs a;
    tfm_attrs_init(&a);
    int64_t *begin = a.ints, *end = a.ints + n, *stride = a.ints + 2 * n;
    int64_t bmask = 0, emask = 0, shrink = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = items[k];
        int64_t bit = (int64_t)1 << k;
        begin[k] = end[k] = 0;
        stride[k] = 1;
        if (PyLong_CheckExact(s)) {
            /* INT64_MAX + 1 overflows: _getitem takes that index. */
            if (plain_int64(s, &begin[k]) || begin[k] == INT64_MAX)
                Py_RETURN_NOTIMPLEMENTED;
            end[k] = begin[k] + 1;
            shrink |= bit;
        } else if (PySlice_Check(s)) {
            PySliceObject *sl = (PySliceObject *)s;
            if (sl->start == Py_None)
                bmask |= bit;
            else if (plain_int64(sl->start, &begin[k]))
                Py_RETURN_NOTIMPLEMENTED;
            if (sl->stop == Py_None)
                emask |= bit;
            else if (plain_int64(sl->stop, &end[k]))
                Py_RETURN_NOTIMPLEMENTED;
            if (sl->step != Py_None && plain_int64(sl->step, &stride[k]))
                Py_RETURN_NOTIMPLEMENTED;
        } else {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    a.n_ints = (int)(3 * n);
    a.i[0] = bmask;
    a.i[1] = emask;
    a.i[4] = shrink;
    tfm_tensor *in = tfm_py_to_tensor(args[0], -1);
    if (!in)
        return NULL;
    tfm_tensor *out[TFM_MAX_OUTPUTS];
    int nout = 0;
    PyObject *result = NULL;
    tfm_tensor *v = basic_view(in, (int)n, &a);
    if (v) {
        if (tfm_tape_active_count > 0 &&
            tfm_tape_record(TFM_OP_STRIDED_SLICE, &in, 1, &a, &v, 1)) {
            tfm_tensor_decref(v);
            tfm_py_raise();
        } else {
            result = tfm_py_wrap(v);
        }
    } else if (tfm_call(TFM_OP_STRIDED_SLICE, &in, 1, &a, out, &nout)) {
        tfm_py_raise();
    } else {
        result = tfm_py_wrap(out[0]);
    }
    tfm_tensor_decref(in);
    return result;
}


/* Tensor.__getitem__: getitem above, and for the keys it leaves,
 * fallback(tensor, key) (array_ops._getitem_general). A builtin whose
 * self is the fallback, made a method by PyInstanceMethod so that
 * x[key] binds x as a Python function would; the slot then calls C
 * directly. */
static PyObject *
getitem_or_fallback(PyObject *fallback, PyObject *const *args,
                    Py_ssize_t nargs)
{
    PyObject *r = tfm_py_getitem(NULL, args, nargs);
    if (r != Py_NotImplemented)
        return r;
    Py_DECREF(r);
    return PyObject_Vectorcall(fallback, args, (size_t)nargs, NULL);
}

static PyMethodDef getitem_def = {
    "__getitem__", (PyCFunction)(void (*)(void))getitem_or_fallback,
    METH_FASTCALL, "x[key] (tfmini/ops/array_ops.py: _getitem)"};

PyObject *
tfm_py_getitem_method(PyObject *self, PyObject *fallback)
{
    (void)self;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "getitem_method(fallback): "
                        "fallback must be callable");
        return NULL;
    }
    PyObject *f = PyCFunction_New(&getitem_def, fallback);
    if (!f)
        return NULL;
    PyObject *m = PyInstanceMethod_New(f);
    Py_DECREF(f);
    return m;
}
