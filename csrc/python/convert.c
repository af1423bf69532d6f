/* Python values <-> tensors. NumPy does the parsing of nested lists (one
 * well-tested implementation of rectangular-ness and dtype discovery);
 * we copy its result into a tensor, since NumPy arrays are mutable and
 * tensors are not. */
#include "binding.h"

#include "../kernels/cuda/cuda.h"
#include "../core/bfloat16.h"
#include "../core/tstring.h"
#include "../runtime/device_fake.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tfm_ARRAY_API
#include <numpy/arrayobject.h>

#include <math.h>
#include <string.h>

int
tfm_py_numpy_init(void)
{
    import_array1(-1);
    return 0;
}

static int numpy_typenum(tfm_dtype d);

/* ml_dtypes' bfloat16 (what TF and JAX give NumPy) is a user dtype with
 * no fixed type number: it is known by its scalar type's name. */
static int
is_bfloat16_descr(PyArray_Descr *d)
{
    if (d->kind != 'V' || PyDataType_ELSIZE(d) != 2 || !d->typeobj)
        return 0;
    const char *name = d->typeobj->tp_name;     /* "ml_dtypes.bfloat16" */
    const char *dot = strrchr(name, '.');
    return strcmp(dot ? dot + 1 : name, "bfloat16") == 0;
}

/* NumPy's descriptor for bfloat16 (a new reference), imported from
 * ml_dtypes on first use: tfmini runs without it, and only bfloat16's
 * way into NumPy needs it. */
static PyArray_Descr *
bfloat16_descr(void)
{
    static PyArray_Descr *cached;
    if (!cached) {
        PyObject *mod = PyImport_ImportModule("ml_dtypes");
        if (!mod) {
            if (PyErr_ExceptionMatches(PyExc_ImportError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ImportError, "a bfloat16 tensor's "
                                "NumPy value needs the ml_dtypes package "
                                "(pip install ml_dtypes), which gives "
                                "NumPy its bfloat16 dtype, as in "
                                "TensorFlow");
            }
            return NULL;
        }
        PyObject *type = PyObject_GetAttrString(mod, "bfloat16");
        Py_DECREF(mod);
        if (!type)
            return NULL;
        PyArray_Descr *d = PyArray_DescrFromTypeObject(type);
        Py_DECREF(type);
        if (!d)
            return NULL;
        if (!is_bfloat16_descr(d)) {
            Py_DECREF(d);
            PyErr_SetString(PyExc_ImportError, "ml_dtypes.bfloat16 is not "
                            "the 2-byte NumPy dtype tfmini expects");
            return NULL;
        }
        cached = d;     /* kept for the process, as NumPy keeps it */
    }
    Py_INCREF(cached);
    return cached;
}

/* A new C-contiguous array of tfmini dtype d. */
static PyObject *
new_array(int nd, npy_intp *dims, tfm_dtype d)
{
    if (d != TFM_BFLOAT16)
        return PyArray_SimpleNew(nd, dims, numpy_typenum(d));
    PyArray_Descr *descr = bfloat16_descr();
    if (!descr)
        return NULL;
    return PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, NULL, NULL,
                                0, NULL);   /* steals descr */
}

static int
dtype_from_numpy(PyArray_Descr *d)
{
    int kind = d->kind;
    int size = (int)PyDataType_ELSIZE(d);
    if (is_bfloat16_descr(d))
        return TFM_BFLOAT16;
    if (kind == 'b')
        return TFM_BOOL;
    if (kind == 'i')
        return size == 1 ? TFM_INT8 : size == 2 ? TFM_INT16
             : size == 4 ? TFM_INT32 : size == 8 ? TFM_INT64 : -1;
    if (kind == 'u')
        return size == 1 ? TFM_UINT8 : size == 2 ? TFM_UINT16
             : size == 4 ? TFM_UINT32 : size == 8 ? TFM_UINT64 : -1;
    if (kind == 'f')
        return size == 2 ? TFM_FLOAT16 : size == 4 ? TFM_FLOAT32
             : size == 8 ? TFM_FLOAT64 : -1;
    if (kind == 'c')
        return size == 8 ? TFM_COMPLEX64 : size == 16 ? TFM_COMPLEX128 : -1;
    return -1;
}

static int
numpy_typenum(tfm_dtype d)
{
    switch (d) {
    case TFM_BOOL: return NPY_BOOL;
    case TFM_INT8: return NPY_INT8;
    case TFM_UINT8: return NPY_UINT8;
    case TFM_INT16: return NPY_INT16;
    case TFM_INT32: return NPY_INT32;
    case TFM_INT64: return NPY_INT64;
    case TFM_FLOAT16: return NPY_FLOAT16;
    case TFM_FLOAT32: return NPY_FLOAT32;
    case TFM_COMPLEX64: return NPY_COMPLEX64;
    case TFM_COMPLEX128: return NPY_COMPLEX128;
    case TFM_UINT16: return NPY_UINT16;
    case TFM_UINT32: return NPY_UINT32;
    case TFM_UINT64: return NPY_UINT64;
    default: return NPY_FLOAT64;
    }
}

static void
borrowed(void *ctx)
{
    (void)ctx;      /* the array outlives the view */
}

/* A CPU tensor over arr's memory (arr outlives it), shaped as t. */
static tfm_tensor *
tfm_tensor_wrap_host(PyObject *arr, const tfm_tensor *t)
{
    tfm_buffer *b = tfm_buffer_wrap(PyArray_DATA((PyArrayObject *)arr),
                                    tfm_tensor_nbytes(t), TFM_CPU,
                                    borrowed, NULL);
    if (!b)
        return NULL;
    tfm_tensor *h = tfm_tensor_view(b, 0, t->dtype, &t->shape, TFM_CPU);
    tfm_buffer_decref(b);
    return h;
}

/* A string tensor as TF gives it: an object array of bytes. */
static PyObject *
strings_to_numpy(tfm_tensor *t, npy_intp *dims)
{
    PyObject *arr = PyArray_SimpleNew(t->shape.ndim, dims, NPY_OBJECT);
    if (!arr)
        return NULL;
    PyObject **o = PyArray_DATA((PyArrayObject *)arr);
    tfm_str *const *v = tfm_tensor_strs(t);
    int64_t n = tfm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(
            tfm_str_data(v[i]), (Py_ssize_t)tfm_str_len(v[i]));
        if (!b) {
            Py_DECREF(arr);
            return NULL;
        }
        Py_XSETREF(o[i], b);
    }
    return arr;
}

/* One Python str (as UTF-8, as TF encodes it) or bytes -> a new string
 * (refcount 0); NULL with a Python error set. */
static tfm_str *
str_from_py(PyObject *x, PyObject *whole)
{
    const char *p;
    Py_ssize_t n;
    if (PyBytes_Check(x)) {
        p = PyBytes_AS_STRING(x);
        n = PyBytes_GET_SIZE(x);
    } else if (PyUnicode_Check(x)) {
        if (!(p = PyUnicode_AsUTF8AndSize(x, &n)))
            return NULL;
    } else {
        PyErr_Format(PyExc_TypeError, "Failed to convert elements of %R to "
                     "Tensor: %R is not a str or bytes (a string tensor "
                     "holds only strings)", whole, x);
        return NULL;
    }
    tfm_str *s = tfm_str_new(p, n);
    if (!s)
        tfm_py_raise();
    return s;
}

/* Nested lists or an array of str/bytes (NumPy 'U', 'S' or object)
 * -> string tensor. NumPy checks the nesting is rectangular. */
static tfm_tensor *
strings_from_py(PyObject *o, int from_list)
{
    tfm_tensor *t = NULL;
    PyArray_Descr *obj = PyArray_DescrFromType(NPY_OBJECT);
    PyArrayObject *src = (PyArrayObject *)PyArray_FromAny(
        o, obj, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_FORCECAST, NULL);
    if (!src) {
        if (from_list && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "Can't convert "
                            "non-rectangular Python sequence to Tensor.");
        }
        return NULL;
    }
    if (from_list) {
        /* An object array stops at ragged nesting (its items are then
         * lists): the depth of the first leaf must be the rank. */
        int depth = 0;
        for (PyObject *p = o; PyList_Check(p) || PyTuple_Check(p); depth++) {
            if (Py_SIZE(p) == 0)
                break;
            p = PyList_Check(p) ? PyList_GET_ITEM(p, 0)
                                : PyTuple_GET_ITEM(p, 0);
        }
        if (depth > PyArray_NDIM(src)) {
            PyErr_SetString(PyExc_ValueError, "Can't convert "
                            "non-rectangular Python sequence to Tensor.");
            goto done;
        }
    }
    if (PyArray_NDIM(src) > TFM_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "tensors have at most %d dims, got "
                     "%d", TFM_MAX_DIMS, PyArray_NDIM(src));
        goto done;
    }
    tfm_shape s;
    s.ndim = PyArray_NDIM(src);
    for (int i = 0; i < s.ndim; i++)
        s.dims[i] = PyArray_DIM(src, i);
    if (!(t = tfm_tensor_new(TFM_STRING, &s, TFM_CPU))) {
        tfm_py_raise();
        goto done;
    }
    PyObject **items = PyArray_DATA(src);
    tfm_str **v = tfm_tensor_strs(t);
    int64_t n = tfm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (!(v[i] = str_from_py(items[i], o))) {
            tfm_tensor_decref(t);   /* owns the ones before: adopted */
            t = NULL;
            goto done;
        }
        tfm_str_incref(v[i]);
    }
done:
    Py_DECREF(src);
    return t;
}

static int
is_string_leaf(PyObject *o)
{
    return PyUnicode_Check(o) || PyBytes_Check(o);
}

PyObject *
tfm_py_to_numpy(tfm_tensor *t)
{
    if (tfm_tensor_is_symbolic(t)) {
        /* AttributeError, as TF's SymbolicTensor has no numpy(): code
         * written for TF catches that. */
        PyErr_SetString(PyExc_AttributeError,
                        "Cannot convert a symbolic tf.Tensor to a numpy "
                        "array. numpy() is only available for eager "
                        "tensors; inside a tf.function, return the tensor "
                        "from the function, or use tf.print");
        return NULL;
    }
    npy_intp dims[TFM_MAX_DIMS];
    for (int i = 0; i < t->shape.ndim; i++)
        dims[i] = (npy_intp)t->shape.dims[i];
    if (t->dtype == TFM_STRING)
        return strings_to_numpy(t, dims);
    PyObject *arr = new_array(t->shape.ndim, dims, t->dtype);
    if (!arr)
        return NULL;
    if (t->device == TFM_CPU) {
        memcpy(PyArray_DATA((PyArrayObject *)arr), tfm_tensor_data(t),
               tfm_tensor_nbytes(t));
        return arr;
    }
    /* Another device's memory: through its copy to the host. */
    tfm_tensor *host = tfm_tensor_wrap_host(arr, t);
    if (!host || tfm_tensor_copy_into(host, t)) {
        if (host)
            tfm_tensor_decref(host);
        Py_DECREF(arr);
        return tfm_py_raise();
    }
    tfm_tensor_decref(host);
    return arr;
}

static tfm_tensor *
raise_convert(PyObject *o, int dtype)
{
    PyErr_Format(PyExc_TypeError, "Cannot convert %R to EagerTensor of "
                 "dtype %s", o, tfm_dtype_name((tfm_dtype)dtype));
    return NULL;
}

static tfm_tensor *
scalar(tfm_dtype d, double v)
{
    tfm_tensor *t = tfm_tensor_scalar(d, v);
    if (!t)
        tfm_py_raise();
    return t;
}

static int
int_fits(long long v, tfm_dtype d)
{
    switch (d) {
    case TFM_INT8: return v >= -128 && v <= 127;
    case TFM_UINT8: return v >= 0 && v <= 255;
    case TFM_INT16: return v >= -32768 && v <= 32767;
    case TFM_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case TFM_UINT16: return v >= 0 && v <= UINT16_MAX;
    case TFM_UINT32: return v >= 0 && v <= UINT32_MAX;
    case TFM_UINT64: return v >= 0;
    default: return 1;
    }
}

/* A Python int past int64's range is still a uint64 when asked for one
 * (up to 2**64 - 1), kept exact. */
static tfm_tensor *
from_python_uint64(PyObject *o)
{
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return raise_convert(o, TFM_UINT64);
    }
    tfm_tensor *t = scalar(TFM_UINT64, 0);
    if (t)
        *(uint64_t *)tfm_tensor_data(t) = u;
    return t;
}

static tfm_tensor *
from_python_int(PyObject *o, int dtype)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (overflow > 0 && dtype == TFM_UINT64)
        return from_python_uint64(o);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "Can't convert Python int %R to "
                     "a tensor: out of range for int64", o);
        return NULL;
    }
    if (dtype < 0)
        dtype = int_fits(v, TFM_INT32) ? TFM_INT32 : TFM_INT64;
    if (dtype == TFM_BOOL || (tfm_dtype_is_int(dtype) && !int_fits(v, dtype)))
        return raise_convert(o, dtype);
    tfm_tensor *t = scalar((tfm_dtype)dtype, (double)v);
    if (t && (dtype == TFM_INT64 || dtype == TFM_UINT64))  /* past 2**53 */
        *(int64_t *)tfm_tensor_data(t) = v;
    return t;
}

/* TF turns a Python float into a float dtype only: 1.0 as int32 is a
 * TypeError, as it is in TensorFlow (no silent truncation). */
static tfm_tensor *
from_python_float(PyObject *o, int dtype)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    if (dtype < 0)
        dtype = TFM_FLOAT32;
    if (!tfm_dtype_is_float(dtype) && !tfm_dtype_is_complex(dtype))
        return raise_convert(o, dtype);
    return scalar((tfm_dtype)dtype, v);
}

/* A Python complex is complex128 unless a complex dtype is asked for (TF
 * never drops an imaginary part on conversion). */
static tfm_tensor *
from_python_complex(PyObject *o, int dtype)
{
    Py_complex v = PyComplex_AsCComplex(o);
    if (v.real == -1.0 && PyErr_Occurred())
        return NULL;
    if (dtype < 0)
        dtype = TFM_COMPLEX128;
    if (!tfm_dtype_is_complex(dtype))
        return raise_convert(o, dtype);
    tfm_tensor *t = scalar((tfm_dtype)dtype, 0);
    if (t && dtype == TFM_COMPLEX64) {
        float *p = tfm_tensor_data(t);
        p[0] = (float)v.real;
        p[1] = (float)v.imag;
    } else if (t) {
        double *p = tfm_tensor_data(t);
        p[0] = v.real;
        p[1] = v.imag;
    }
    return t;
}

static tfm_tensor *
from_python_bool(PyObject *o, int dtype)
{
    /* True as a number is 1, as in TF (its converters accept bools). */
    if (dtype < 0)
        dtype = TFM_BOOL;
    return scalar((tfm_dtype)dtype, o == Py_True);
}

/* May data of dtype `have` become `want`? TF's rule for values it must
 * cast after converting them (IsCompatible): ints to ints, ints and floats
 * to floats, and nothing else (bools stay bools). */
static int
compatible(int have, int want)
{
    if (have == want)
        return 1;
    if (tfm_dtype_is_int(want))
        return tfm_dtype_is_int(have);
    if (tfm_dtype_is_float(want))
        return tfm_dtype_is_int(have) || tfm_dtype_is_float(have);
    if (tfm_dtype_is_complex(want))
        return tfm_dtype_is_int(have) || tfm_dtype_is_float(have) ||
               tfm_dtype_is_complex(have);
    return 0;
}

/* Python lists: every integer fits the requested integer dtype (TF
 * refuses to wrap them). A uint64 source is read as such: through int64
 * its top half would pass as negatives. */
static int
ints_fit(PyArrayObject *src, int want)
{
    /* By kind and size: NumPy has two 64-bit unsigned type numbers. */
    int from_u64 = PyArray_DESCR(src)->kind == 'u' &&
                   PyArray_ITEMSIZE(src) == 8;
    if (!tfm_dtype_is_int(want) || want == (from_u64 ? TFM_UINT64 : TFM_INT64))
        return 1;
    PyArrayObject *c = (PyArrayObject *)PyArray_FROM_OTF(
        (PyObject *)src, from_u64 ? NPY_UINT64 : NPY_INT64,
        NPY_ARRAY_CARRAY_RO);
    if (!c)
        return -1;
    const int64_t *p = PyArray_DATA(c);
    int64_t n = PyArray_SIZE(c);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
        ok = (!from_u64 || p[i] >= 0) && int_fits(p[i], (tfm_dtype)want);
    Py_DECREF(c);
    return ok;
}

/* Note [Mixed Python sequences]: TF infers a list's dtype from its first
 * leaf and then requires the rest to fit. A number may absorb bools
 * ([1, True] is int32 [1 1]) but a leading bool admits only bools, and
 * strings never mix with numbers: TF's ValueError "Can't convert Python
 * sequence with mixed types to Tensor." NumPy would quietly promote
 * both, so we check here. */
static int
is_bool_leaf(PyObject *o)
{
    return PyBool_Check(o) || PyArray_IsScalar(o, Bool) ||
           (PyArray_Check(o) &&
            PyArray_TYPE((PyArrayObject *)o) == NPY_BOOL);
}

static PyObject *
first_leaf(PyObject *o)
{
    while ((PyList_Check(o) || PyTuple_Check(o)) && PySequence_Size(o) > 0)
        o = PyList_Check(o) ? PyList_GET_ITEM(o, 0) : PyTuple_GET_ITEM(o, 0);
    return o;
}

/* Does any leaf of nested lists/tuples o fail to be a str or bytes? */
static int
has_non_string_leaf(PyObject *o)
{
    if (PyList_Check(o) || PyTuple_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (has_non_string_leaf(PySequence_Fast_GET_ITEM(o, i)))
                return 1;
        return 0;
    }
    /* NumPy's str_ and bytes_ scalars subclass str and bytes. */
    return !(PyUnicode_Check(o) || PyBytes_Check(o));
}

static void *
raise_mixed(void)
{
    PyErr_SetString(PyExc_ValueError, "Can't convert Python sequence with "
                    "mixed types to Tensor.");
    return NULL;
}

/* NumPy reads ints that mix int64's range with uint64's ([2**64 - 1, 5])
 * as float64. Asked for uint64, a list of Python ints is read as uint64
 * instead (NumPy raises for negatives); NULL with no error: not such a
 * list. */
static PyObject *
uint64_list(PyObject *o)
{
    PyObject *objs = PyArray_FromAny(o, PyArray_DescrFromType(NPY_OBJECT),
                                     0, 0, 0, NULL);
    if (!objs) {
        PyErr_Clear();
        return NULL;
    }
    PyObject **p = PyArray_DATA((PyArrayObject *)objs);
    int64_t n = PyArray_SIZE((PyArrayObject *)objs);
    int ints = 1;
    for (int64_t i = 0; i < n && ints; i++)
        ints = PyLong_Check(p[i]) && !PyBool_Check(p[i]);
    Py_DECREF(objs);
    if (!ints)
        return NULL;
    PyObject *u = PyArray_FromAny(o, PyArray_DescrFromType(NPY_UINT64), 0, 0,
                                  0, NULL);
    if (!u) {
        PyErr_Clear();
        raise_convert(o, TFM_UINT64);
    }
    return u;
}

/* Fills bfloat16 tensor t from array src of dtype have: bits copied
 * from bfloat16, else rounded from float32 here (so that making bfloat16
 * tensors needs no ml_dtypes). float64 rounds through float32, as TF's
 * conversion does. */
static int
bfloat16_from_array(tfm_tensor *t, PyObject *src, int have)
{
    int typenum = have == TFM_BFLOAT16 ? -1 : NPY_FLOAT32;
    PyObject *c = typenum < 0
        ? (PyObject *)PyArray_GETCONTIGUOUS((PyArrayObject *)src)
        : PyArray_FROM_OTF(src, typenum,
                           NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (!c)
        return -1;
    int64_t n = tfm_tensor_numel(t);
    uint16_t *dst = tfm_tensor_data(t);
    if (typenum < 0) {
        memcpy(dst, PyArray_DATA((PyArrayObject *)c), (size_t)n * 2);
    } else {
        const float *f = PyArray_DATA((PyArrayObject *)c);
        for (int64_t i = 0; i < n; i++)
            dst[i] = tfm_float_to_bf16(f[i]);
    }
    Py_DECREF(c);
    return 0;
}

enum { FROM_ARRAY, FROM_LIST };
enum { AS_HINT, AS_REQUESTED };

/* A NumPy array (or anything NumPy turns into one) -> tensor.
 *
 * Python lists follow TF's defaults for Python data (float -> float32,
 * int -> int32 unless a value needs int64) and its rules for a requested
 * dtype (floats never become ints, ints must fit). NumPy arrays keep
 * their dtype; a requested dtype casts them as NumPy's astype would
 * (TF's tf.constant(array, dtype)), while a dtype hint (the other
 * operand's dtype, for operators) converts only compatible kinds. */
static tfm_tensor *
from_array(PyObject *o, int dtype, int source, int how)
{
    PyArrayObject *arr = NULL;
    tfm_tensor *t = NULL;
    /* Strings: a list whose first leaf is one, or a NumPy array of
     * strings or objects. */
    int strings = source == FROM_LIST ? is_string_leaf(first_leaf(o))
                : PyArray_Check(o)
                    ? strchr("USO", PyArray_DESCR((PyArrayObject *)o)->kind)
                          != NULL
                    : PyArray_IsScalar(o, String) ||
                      PyArray_IsScalar(o, Unicode);
    if (strings || dtype == TFM_STRING) {
        if (!strings || (dtype >= 0 && dtype != TFM_STRING))
            return raise_convert(o, dtype);
        if (source == FROM_LIST && has_non_string_leaf(o))
            return raise_mixed();
        return strings_from_py(o, source == FROM_LIST);
    }
    PyObject *src = PyArray_FromAny(o, NULL, 0, 0, 0, NULL);
    if (!src) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) && source == FROM_LIST) {
            PyErr_Clear();
            /* NumPy stops at 64 dims with its own error: deeper nesting
             * is the rank limit too, not raggedness. */
            int depth = 0;
            for (PyObject *p = o; (PyList_Check(p) || PyTuple_Check(p)) &&
                                  Py_SIZE(p) > 0 && depth <= 100000;
                 depth++)
                p = PyList_Check(p) ? PyList_GET_ITEM(p, 0)
                                    : PyTuple_GET_ITEM(p, 0);
            if (depth > TFM_MAX_DIMS)
                PyErr_Format(PyExc_ValueError, "tensors have at most %d "
                             "dims, got a Python sequence nested %d deep",
                             TFM_MAX_DIMS, depth);
            else
                PyErr_SetString(PyExc_ValueError, "Can't convert "
                                "non-rectangular Python sequence to "
                                "Tensor.");
        }
        return NULL;
    }
    if (source == FROM_LIST && dtype == TFM_UINT64 &&
        PyArray_TYPE((PyArrayObject *)src) == NPY_DOUBLE) {
        PyObject *u = uint64_list(o);
        if (u) {
            Py_SETREF(src, u);
        } else if (PyErr_Occurred()) {
            Py_DECREF(src);
            return NULL;
        }
    }
    PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)src);
    int have = dtype_from_numpy(descr);
    /* See Note [Mixed Python sequences]. */
    if (source == FROM_LIST && (descr->kind == 'U' || descr->kind == 'S') &&
        has_non_string_leaf(o)) {
        raise_mixed();
        goto done;
    }
    if (source == FROM_LIST && have != TFM_BOOL &&
        (dtype < 0 || dtype == TFM_BOOL) && is_bool_leaf(first_leaf(o))) {
        raise_mixed();
        goto done;
    }
    /* [1, 2j] too: a leading real number does not absorb complex ones. */
    if (source == FROM_LIST && dtype < 0 && tfm_dtype_is_complex(have) &&
        !PyComplex_Check(first_leaf(o))) {
        raise_mixed();
        goto done;
    }
    if (have < 0) {
        if (source == FROM_LIST && (descr->kind == 'u' || descr->kind == 'O'))
            PyErr_Format(PyExc_ValueError, "Can't convert Python sequence "
                         "%R to a Tensor: it holds integers out of range for "
                         "int64, or objects that are not numbers", o);
        else
            PyErr_Format(PyExc_TypeError, "Cannot convert a NumPy array of "
                         "dtype %R to a tensor: tfmini supports bool, int8, "
                         "uint8, uint16, uint32, uint64, int16, int32, int64, "
                         "float16, bfloat16, float32, float64, complex64 and "
                         "complex128", (PyObject *)descr);
        goto done;
    }
    if (PyArray_NDIM((PyArrayObject *)src) > TFM_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "tensors have at most %d dims, got "
                     "%d", TFM_MAX_DIMS,
                     PyArray_NDIM((PyArrayObject *)src));
        goto done;
    }
    if (have == TFM_BFLOAT16 && dtype >= 0 && dtype != TFM_BFLOAT16) {
        /* Other dtypes come from bfloat16 through float32, which holds
         * every bfloat16 exactly. */
        PyObject *wide = PyArray_FROM_OTF(src, NPY_FLOAT32,
                                          NPY_ARRAY_CARRAY_RO);
        if (!wide)
            goto done;
        Py_SETREF(src, wide);
        have = TFM_FLOAT32;
    }
    int want = dtype;
    if (want < 0) {
        want = have;
        if (source == FROM_LIST && have == TFM_FLOAT64)
            want = TFM_FLOAT32;
        /* NumPy reads a list of ints past int64 as uint64: TF refuses
         * them unless asked for uint64. */
        if (source == FROM_LIST && have == TFM_UINT64) {
            PyErr_Format(PyExc_ValueError, "Can't convert Python sequence "
                         "%R to a Tensor: it holds integers out of range for "
                         "int64", o);
            goto done;
        }
        if (source == FROM_LIST && have == TFM_INT64) {
            int fits = ints_fit((PyArrayObject *)src, TFM_INT32);
            if (fits < 0)
                goto done;
            want = fits ? TFM_INT32 : TFM_INT64;
        }
    } else if (have != want) {
        int ok;
        if (source == FROM_LIST) {
            /* Python bools are numbers too (TF accepts True as 1). */
            ok = compatible(have, want) ||
                 (have == TFM_BOOL && want != TFM_BOOL);
            if (ok) {
                ok = ints_fit((PyArrayObject *)src, want);
                if (ok < 0)
                    goto done;
            }
        } else {
            ok = how == AS_REQUESTED || compatible(have, want);
            /* Integers must fit: a wrapped value is a silently wrong
             * number. */
            if (ok && tfm_dtype_is_int(have) && tfm_dtype_is_int(want)) {
                ok = ints_fit((PyArrayObject *)src, want);
                if (ok < 0)
                    goto done;
            }
        }
        if (!ok) {
            raise_convert(o, want);
            goto done;
        }
    }
    /* Allocate the tensor first and let NumPy copy (and cast, and
     * gather strided or broadcast input) straight into it: one pass, and
     * an absurd size is our ResourceExhaustedError before any work. */
    tfm_shape s;
    s.ndim = PyArray_NDIM((PyArrayObject *)src);
    npy_intp dims[TFM_MAX_DIMS];
    for (int i = 0; i < s.ndim; i++)
        dims[i] = s.dims[i] = PyArray_DIM((PyArrayObject *)src, i);
    t = tfm_tensor_new((tfm_dtype)want, &s, TFM_CPU);
    if (!t) {
        tfm_py_raise();
        goto done;
    }
    if (want == TFM_BFLOAT16) {
        if (bfloat16_from_array(t, src, have)) {
            tfm_tensor_decref(t);
            t = NULL;
        }
        goto done;
    }
    arr = (PyArrayObject *)PyArray_New(&PyArray_Type, s.ndim, dims,
                                       numpy_typenum(want), NULL,
                                       tfm_tensor_data(t), 0,
                                       NPY_ARRAY_CARRAY, NULL);
    if (!arr || PyArray_CopyInto(arr, (PyArrayObject *)src) < 0) {
        tfm_tensor_decref(t);
        t = NULL;
    }
done:
    Py_XDECREF(arr);
    Py_DECREF(src);
    return t;
}

static tfm_tensor *
to_tensor(PyObject *o, int dtype, int how)
{
    if (tfm_py_is_tensor(o)) {
        tfm_tensor *t = ((PyTfmTensor *)o)->t;
        tfm_tensor_incref(t);
        return t;
    }
    if (tfm_py_variable_base && PyObject_TypeCheck(o, tfm_py_variable_base))
        return tfm_py_variable_read(o);
    if (PyUnicode_Check(o) || PyBytes_Check(o))
        return from_array(o, dtype, FROM_LIST, how);
    if (dtype == TFM_STRING &&
        (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) ||
         PyComplex_Check(o)))
        return raise_convert(o, dtype);
    if (PyBool_Check(o))
        return from_python_bool(o, dtype);
    if (PyLong_CheckExact(o))
        return from_python_int(o, dtype);
    if (PyFloat_CheckExact(o))
        return from_python_float(o, dtype);
    if (PyComplex_CheckExact(o))
        return from_python_complex(o, dtype);
    if (PyArray_Check(o) || PyArray_IsScalar(o, Generic))
        return from_array(o, dtype, FROM_ARRAY, how);
    if (PyLong_Check(o))
        return from_python_int(o, dtype);
    if (PyFloat_Check(o))
        return from_python_float(o, dtype);
    if (PyComplex_Check(o))
        return from_python_complex(o, dtype);
    if (PyList_Check(o) || PyTuple_Check(o))
        return from_array(o, dtype, FROM_LIST, how);
    if (PyRange_Check(o)) {
        /* TF reads a range as the list it spells: int32 unless a value
         * needs int64, and an empty one is float32 like []. */
        PyObject *list = PySequence_List(o);
        if (!list)
            return NULL;
        tfm_tensor *t = from_array(list, dtype, FROM_LIST, how);
        Py_DECREF(list);
        return t;
    }
    if (PyObject_HasAttrString(o, "__tf_tensor__")) {
        /* TF's TensorProtocol: the object makes its own tensor (or, as a
         * Keras symbolic input does, raises its own error). */
        PyObject *r = PyObject_CallMethod(o, "__tf_tensor__", "OO",
                                          Py_None, Py_None);
        if (!r)
            return NULL;
        if (!tfm_py_is_tensor(r)) {
            PyErr_Format(PyExc_TypeError, "%R.__tf_tensor__() returned "
                         "%R, not a tensor", (PyObject *)Py_TYPE(o),
                         (PyObject *)Py_TYPE(r));
            Py_DECREF(r);
            return NULL;
        }
        tfm_tensor *t = ((PyTfmTensor *)r)->t;
        tfm_tensor_incref(t);
        Py_DECREF(r);
        return t;
    }
    if (PyObject_HasAttrString(o, "__array__"))
        return from_array(o, dtype, FROM_ARRAY, how);
    /* The type as TF prints it: <class '__main__.MaskedTensor'>. */
    PyErr_Format(PyExc_ValueError, "Attempt to convert a value (%R) with "
                 "an unsupported type (%R) to a Tensor.", o,
                 (PyObject *)Py_TYPE(o));
    return NULL;
}

tfm_tensor *
tfm_py_to_tensor(PyObject *o, int dtype)
{
    return to_tensor(o, dtype, AS_REQUESTED);
}

tfm_tensor *
tfm_py_to_tensor_operand(PyObject *o, int dtype)
{
    if (tfm_py_is_tensor(o) || PyBool_Check(o) || PyLong_Check(o) ||
        PyUnicode_Check(o) || PyBytes_Check(o) ||
        PyFloat_Check(o) || PyComplex_Check(o) || PyList_Check(o) ||
        PyTuple_Check(o) || PyArray_Check(o) || PyArray_IsScalar(o, Generic) ||
        (tfm_py_variable_base &&
         PyObject_TypeCheck(o, tfm_py_variable_base)))
        return to_tensor(o, dtype, AS_HINT);
    return NULL;
}

/* _C.constant(value, dtype=-1) -> Tensor */
static PyObject *
py_constant(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "constant(value, dtype=-1)");
        return NULL;
    }
    int dtype = -1;
    if (nargs == 2 && args[1] != Py_None) {
        dtype = (int)PyLong_AsLong(args[1]);
        if (dtype == -1 && PyErr_Occurred())
            return NULL;
        if (dtype >= TFM_DTYPE_COUNT) {
            PyErr_Format(PyExc_TypeError, "invalid dtype %d", dtype);
            return NULL;
        }
    }
    tfm_tensor *t = tfm_py_to_tensor(args[0], dtype);
    return t ? tfm_py_wrap(t) : NULL;
}

/* ---- devices (Note [Device seam] in core/device.h) ---- */

static PyObject *
py_enable_fake_device(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    int on = n < 1 ? 1 : PyObject_IsTrue(args[0]);
    if (on < 0 || tfm_fake_device_enable(on))
        return on < 0 ? NULL : tfm_py_raise();
    return PyLong_FromLong(on ? TFM_FAKE_DEVICE : -1);
}

static PyObject *
py_fake_device_stats(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    int reset = n < 1 ? 0 : PyObject_IsTrue(args[0]);
    if (reset < 0)
        return NULL;
    tfm_fake_stats s;
    tfm_fake_device_stats(&s, reset);
    return Py_BuildValue("{sLsLsLsLsLsL}", "to_host", (long long)s.to_host,
                         "from_host", (long long)s.from_host,
                         "device_to_device", (long long)s.device_to_device,
                         "bytes_to_host", (long long)s.bytes_to_host,
                         "bytes_from_host", (long long)s.bytes_from_host,
                         "live_buffers", (long long)s.live_buffers);
}

static PyObject *
py_fake_device_deny(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    int op = tfm_op_lookup(name);
    if (op < 0) {
        PyErr_Format(PyExc_ValueError, "no op named %s", name);
        return NULL;
    }
    tfm_fake_device_deny((tfm_op)op);
    Py_RETURN_NONE;
}

static PyObject *
py_device_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    char buf[128];
    return PyUnicode_FromString(tfm_device_name((int)d, buf, sizeof buf));
}

static PyObject *
py_device_find(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "device_find(kind, index)");
        return NULL;
    }
    const char *kind = PyUnicode_AsUTF8(args[0]);
    long k = PyLong_AsLong(args[1]);
    if (!kind || (k == -1 && PyErr_Occurred()))
        return NULL;
    return PyLong_FromLong(tfm_device_find(kind, (int)k));
}

static PyObject *
py_set_log_device_placement(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    int old = tfm_log_placement;
    tfm_log_placement = on;
    return PyBool_FromLong(old);
}

/* The CUDA backend (kernels/cuda/cuda.h): the same calls whether it was
 * built or is the stub. */
static PyObject *
py_cuda_init(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(iis)", tfm_cuda_available(), tfm_cuda_init(),
                         tfm_cuda_why_none());
}

static PyObject *
py_cuda_built(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(tfm_cuda_available());
}

static PyObject *
py_gpu_memory_info(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n < 1 || n > 2) {
        PyErr_SetString(PyExc_TypeError, "gpu_memory_info(n, reset=False)");
        return NULL;
    }
    long g = PyLong_AsLong(args[0]);
    int reset = n > 1 ? PyObject_IsTrue(args[1]) : 0;
    if ((g == -1 && PyErr_Occurred()) || reset < 0)
        return NULL;
    int64_t cur = 0, peak = 0, reserved = 0;
    if (reset ? tfm_cuda_reset_peak((int)g)
              : tfm_cuda_memory_info((int)g, &cur, &peak, &reserved))
        return tfm_py_raise();
    if (reset)
        Py_RETURN_NONE;
    return Py_BuildValue("{sLsLsL}", "current", (long long)cur, "peak",
                         (long long)peak, "reserved", (long long)reserved);
}

/* tf.test.experimental.sync_devices: wait for every device's queued
 * work, so that a timer read after it measures the work itself. */
static PyObject *
py_sync_devices(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    for (int i = 0; i < TFM_MAX_DEVICES; i++) {
        const tfm_device *d = tfm_device_get(i);
        tfm_code rc;
        if (!d || !d->synchronize)
            continue;
        Py_BEGIN_ALLOW_THREADS
        rc = d->synchronize(d);
        Py_END_ALLOW_THREADS
        if (rc)
            return tfm_py_raise();
    }
    Py_RETURN_NONE;
}

static PyObject *
py_set_tf32(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    int old = tfm_cuda_tf32();
    tfm_cuda_set_tf32(on);
    return PyBool_FromLong(old);
}

static PyObject *
py_set_default_device(PyObject *self, PyObject *arg)
{
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    if (d > 0 && !tfm_device_get((int)d)) {
        PyErr_Format(PyExc_ValueError, "no device with index %ld", d);
        return NULL;
    }
    int old = tfm_default_device;
    tfm_default_device = (int)d;
    return PyLong_FromLong(old);
}

PyMethodDef tfm_py_convert_methods[] = {
    {"_enable_fake_device",
     (PyCFunction)(void (*)(void))py_enable_fake_device, METH_FASTCALL,
     "_enable_fake_device(on=True): the test-only FAKE:0 device; returns "
     "its index (-1 when turned off)"},
    {"_fake_device_stats", (PyCFunction)(void (*)(void))py_fake_device_stats,
     METH_FASTCALL, "_fake_device_stats(reset=False): its copy counters"},
    {"_fake_device_deny", py_fake_device_deny, METH_O,
     "_fake_device_deny(op_name): take an op's kernel off FAKE:0"},
    {"device_name", py_device_name, METH_O,
     "device_name(index): TF's full name of a device"},
    {"device_find", (PyCFunction)(void (*)(void))py_device_find,
     METH_FASTCALL, "device_find(kind, n): the index of /device:KIND:n, "
     "or -1"},
    {"set_log_device_placement", py_set_log_device_placement, METH_O,
     "log where each op runs (TF's format, on stderr); returns the old"},
    {"cuda_init", py_cuda_init, METH_NOARGS,
     "cuda_init(): register the GPUs; (built, gpu_count, why_none)"},
    {"cuda_built", py_cuda_built, METH_NOARGS,
     "cuda_built(): whether this build has the CUDA backend"},
    {"gpu_memory_info", (PyCFunction)(void (*)(void))py_gpu_memory_info,
     METH_FASTCALL, "gpu_memory_info(n, reset=False): {'current', 'peak', "
     "'reserved'}: bytes of GPU n held by tensors, and by its pool; "
     "reset=True resets the peak"},
    {"sync_devices", py_sync_devices, METH_NOARGS,
     "sync_devices(): wait for the work queued on every device"},
    {"set_tf32", py_set_tf32, METH_O,
     "set_tf32(on): TF32 tensor cores for float32 GPU matmuls; returns "
     "the old"},
    {"set_default_device", py_set_default_device, METH_O,
     "set_default_device(index): where ops with no scope go (-1: the "
     "CPU); returns the old"},
    {"constant", (PyCFunction)(void (*)(void))py_constant, METH_FASTCALL,
     "constant(value, dtype=-1): convert a Python or NumPy value"},
    {NULL, NULL, 0, NULL},
};
