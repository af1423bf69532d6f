/* Core error codes -> Python exceptions. tfmini/errors.py defines TF's
 * exception classes and registers them here at import. */
#include "binding.h"

#include <stdio.h>
#include <string.h>

#include "../ops/op.h"

static PyObject *error_types[TFM_CODE_COUNT];

PyObject *
tfm_py_error_type(tfm_code code)
{
    if ((unsigned)code < TFM_CODE_COUNT && error_types[code])
        return error_types[code];
    switch (code) {
    case TFM_ERR_VALUE: return PyExc_ValueError;
    case TFM_ERR_TYPE: return PyExc_TypeError;
    case TFM_ERR_RESOURCE_EXHAUSTED: return PyExc_MemoryError;
    default: return PyExc_RuntimeError;
    }
}

/* TF's eager errors end with " [Op:<TfName>]". Op errors here start
 * "<TfName>: " (the convention of every infer rule and kernel), so the
 * name is read back from there: one place, whatever raised. */
static const char *
with_op_suffix(const char *m, char *buf, size_t size)
{
    /* The broadcast error of csrc/core names the op after a prefix. */
    static const char bcast[] = "Incompatible shapes for ";
    const char *start = m;
    if (strncmp(m, bcast, sizeof bcast - 1) == 0)
        start = m + sizeof bcast - 1;
    char name[64];
    size_t n = strcspn(start, ": ");
    if (n == 0 || n >= sizeof name || start[n] != ':' ||
        start[n + 1] != ' ')
        return m;
    memcpy(name, start, n);
    name[n] = '\0';
    if (tfm_op_lookup(name) < 0 || strstr(m, " [Op:"))
        return m;
    int len = snprintf(buf, size, "%s [Op:%s]", m, name);
    return len > 0 && (size_t)len < size ? buf : m;
}

PyObject *
tfm_py_raise(void)
{
    tfm_code code = tfm_error_code();
    if (code == TFM_OK) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "tfmini: error without "
                            "a message");
        return NULL;
    }
    /* Messages are cut to a fixed buffer, maybe inside a multi-byte
     * character of a name (which may come from a file): never let that
     * turn the error into a UnicodeDecodeError. */
    const char *m = tfm_error_message();
    char buf[2048];
    m = with_op_suffix(m, buf, sizeof buf);
    PyObject *msg = PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m),
                                         "replace");
    if (msg) {
        PyErr_SetObject(tfm_py_error_type(code), msg);
        Py_DECREF(msg);
    }
    tfm_error_clear();
    return NULL;
}

/* _register_error(code_name, cls) */
static PyObject *
py_register_error(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    PyObject *cls;
    static const char *const names[TFM_CODE_COUNT] = {
        [TFM_ERR_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
        [TFM_ERR_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
        [TFM_ERR_OUT_OF_RANGE] = "OUT_OF_RANGE",
        [TFM_ERR_UNIMPLEMENTED] = "UNIMPLEMENTED",
        [TFM_ERR_VALUE] = "VALUE",
        [TFM_ERR_TYPE] = "TYPE",
        [TFM_ERR_RUNTIME] = "RUNTIME",
        [TFM_ERR_INTERNAL] = "INTERNAL",
        [TFM_ERR_NOT_FOUND] = "NOT_FOUND",
        [TFM_ERR_DATA_LOSS] = "DATA_LOSS",
    };
    if (!PyArg_ParseTuple(args, "sO", &name, &cls))
        return NULL;
    for (int c = 1; c < TFM_CODE_COUNT; c++) {
        if (names[c] && strcmp(names[c], name) == 0) {
            Py_INCREF(cls);
            Py_XSETREF(error_types[c], cls);
            Py_RETURN_NONE;
        }
    }
    PyErr_Format(PyExc_ValueError, "unknown error code %s", name);
    return NULL;
}

PyMethodDef tfm_py_errors_methods[] = {
    {"_register_error", py_register_error, METH_VARARGS,
     "_register_error(code_name, cls): map a core error code to cls"},
    {NULL, NULL, 0, NULL},
};
