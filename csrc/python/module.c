/* tfmini._C: the module. Each binding file contributes a method table or
 * an init function; this file only joins them. */
#include "binding.h"

int tfm_py_variable_init(PyObject *m);
int tfm_py_tape_init(PyObject *m);
int tfm_py_function_init(PyObject *m);
extern PyMethodDef tfm_py_dlpack_methods[];     /* dlpack.c */

static void *
unlock(void)
{
    return PyEval_SaveThread();
}

static void
relock(void *token)
{
    PyEval_RestoreThread((PyThreadState *)token);
}

/* _set_tensor_class(eager_cls, symbolic_cls): the Python subclasses
 * tensors are made as (concrete values, traced ones). */
static int
check_tensor_class(PyObject *cls)
{
    if (!PyType_Check(cls) ||
        !PyType_IsSubtype((PyTypeObject *)cls, tfm_py_tensor_base)) {
        PyErr_SetString(PyExc_TypeError, "expected a TensorBase subclass");
        return -1;
    }
    if (((PyTypeObject *)cls)->tp_basicsize != sizeof(PyTfmTensor)) {
        PyErr_SetString(PyExc_TypeError, "the tensor class must declare "
                        "__slots__ = ()");
        return -1;
    }
    return 0;
}

static PyObject *
py_set_tensor_class(PyObject *self, PyObject *args)
{
    PyObject *eager, *symbolic;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &eager, &symbolic))
        return NULL;
    if (check_tensor_class(eager) || check_tensor_class(symbolic))
        return NULL;
    Py_INCREF(eager);
    Py_XSETREF(tfm_py_tensor_class, (PyTypeObject *)eager);
    Py_INCREF(symbolic);
    Py_XSETREF(tfm_py_symbolic_class, (PyTypeObject *)symbolic);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_set_tensor_class", py_set_tensor_class, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static int
add_methods(PyObject *m, PyMethodDef *defs)
{
    return PyModule_AddFunctions(m, defs);
}

static int
module_exec(PyObject *m)
{
    if (tfm_py_tensor_base) {
        PyErr_SetString(PyExc_ImportError, "tfmini._C can be loaded once "
                        "per process");
        return -1;
    }
    if (tfm_py_numpy_init() < 0)
        return -1;
    PyObject *tp = PyType_FromSpec(&tfm_py_tensor_spec);
    if (!tp)
        return -1;
    tfm_py_tensor_base = (PyTypeObject *)tp;
    Py_INCREF(tp);
    if (PyModule_AddObject(m, "TensorBase", tp) < 0)
        return -1;
    if (add_methods(m, tfm_py_call_methods) ||
        add_methods(m, tfm_py_convert_methods) ||
        add_methods(m, tfm_py_errors_methods) ||
        add_methods(m, tfm_py_saved_model_methods) ||
        add_methods(m, tfm_py_py_func_methods) ||
        add_methods(m, tfm_py_dlpack_methods) ||
        tfm_py_variable_init(m) || tfm_py_tape_init(m) ||
        tfm_py_function_init(m))
        return -1;
    if (PyModule_AddIntConstant(m, "OP_COUNT", TFM_OP_COUNT) ||
        PyModule_AddIntConstant(m, "MAX_DIMS", TFM_MAX_DIMS))
        return -1;
    tfm_set_lock_hooks(unlock, relock);
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tfmini._C",
    .m_doc = "tfmini's C core: tensors, ops, tapes, traced functions.",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = module_slots,
};

PyMODINIT_FUNC
PyInit__C(void)
{
    return PyModuleDef_Init(&module_def);
}
