/* The EagerPyFunc hook: a traced tf.py_function's node calls back into
 * Python on each run. The runner (tfmini/ops/script_ops.py) looks the
 * function up by token, calls it, and returns tensors of the traced
 * dtypes and shapes, or raises; this file copies them into the outputs
 * the executor allocated. The node may run with the GIL released (a
 * kernel step that unlocks), so the hook takes it. */
#include "binding.h"

#include <string.h>

#include "../ops/state.h"

static PyObject *runner;    /* runner(token, inputs tuple) -> sequence */

/* The tf.errors class of an exception the runner raised (it maps the
 * function's own exceptions to them, as TF's py_func.cc does), as the
 * core's code; anything else is InvalidArgument. */
static tfm_code
code_of(PyObject *type)
{
    static const tfm_code codes[] = {
        TFM_ERR_INVALID_ARGUMENT, TFM_ERR_RESOURCE_EXHAUSTED,
        TFM_ERR_OUT_OF_RANGE, TFM_ERR_UNIMPLEMENTED, TFM_ERR_NOT_FOUND,
        TFM_ERR_DATA_LOSS, TFM_ERR_INTERNAL,
    };
    for (size_t k = 0; type && k < sizeof codes / sizeof codes[0]; k++)
        if (PyErr_GivenExceptionMatches(type, tfm_py_error_type(codes[k])))
            return codes[k];
    return TFM_ERR_INVALID_ARGUMENT;
}

/* The Python exception now set, as the core's error (the runner has
 * already named the function and the op). */
static int
exception_to_error(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    if (!msg)
        PyErr_Clear();
    tfm_error(code_of(type), "%s",
              msg ? msg : "EagerPyFunc: the Python function failed");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return -1;
}

static int
copy_outputs(PyObject *res, tfm_tensor *const *out, int nout)
{
    PyObject *seq = PySequence_Fast(res, "EagerPyFunc: the runner must "
                                    "return a sequence");
    if (!seq)
        return exception_to_error();
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != nout) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "EagerPyFunc: %zd outputs, "
                  "traced with %d", PySequence_Fast_GET_SIZE(seq), nout);
        rc = -1;
    }
    for (int k = 0; !rc && k < nout; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        tfm_tensor *t = tfm_py_is_tensor(o) ? ((PyTfmTensor *)o)->t : NULL;
        if (!out[k] && t && !tfm_tensor_is_symbolic(t) && t->device == 0) {
            /* An output of unknown shape: the executor passed no tensor
             * and checks this one (Note [py_function outputs of unknown
             * shape] in graph/exec.c); its out[] is writable. */
            tfm_tensor_incref(t);
            ((tfm_tensor **)out)[k] = t;
            continue;
        }
        if (!t || !out[k] || tfm_tensor_is_symbolic(t) || t->device != 0 ||
            t->dtype != out[k]->dtype ||
            !tfm_shape_equal(&t->shape, &out[k]->shape)) {
            tfm_error(TFM_ERR_INVALID_ARGUMENT, "EagerPyFunc: output %d is "
                      "not a CPU tensor of the traced dtype and shape", k);
            rc = -1;
            break;
        }
        memcpy(tfm_tensor_data(out[k]), tfm_tensor_data(t),
               tfm_tensor_nbytes(t));
    }
    Py_DECREF(seq);
    return rc;
}

static int
py_func_hook(int64_t token, tfm_tensor *const *in, int nin,
             tfm_tensor *const *out, int nout)
{
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *args = NULL, *res = NULL;
    int rc = -1;
    if (!runner) {
        tfm_error(TFM_ERR_UNIMPLEMENTED, "EagerPyFunc: no runner set");
        goto done;
    }
    args = PyTuple_New(nin);
    if (!args)
        goto fail;
    for (int i = 0; i < nin; i++) {
        tfm_tensor_incref(in[i]);
        PyObject *w = tfm_py_wrap(in[i]);
        if (!w)
            goto fail;
        PyTuple_SET_ITEM(args, i, w);
    }
    res = PyObject_CallFunction(runner, "LO", (long long)token, args);
    if (!res)
        goto fail;
    rc = copy_outputs(res, out, nout);
    goto done;
fail:
    exception_to_error();
done:
    Py_XDECREF(args);
    Py_XDECREF(res);
    PyGILState_Release(gs);
    return rc;
}

/* set_py_func_runner(fn): fn(token, inputs) runs a traced py_function. */
static PyObject *
py_set_py_func_runner(PyObject *self, PyObject *fn)
{
    (void)self;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "runner must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(runner, fn);
    tfm_py_func_set_hook(py_func_hook);
    Py_RETURN_NONE;
}

PyMethodDef tfm_py_py_func_methods[] = {
    {"set_py_func_runner", py_set_py_func_runner, METH_O,
     "set_py_func_runner(fn): fn(token, inputs) runs tf.py_function "
     "nodes"},
    {NULL, NULL, 0, NULL},
};
