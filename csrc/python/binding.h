/* Shared pieces of the CPython binding: the only code that knows about
 * Python objects (see DESIGN.md, "Layout"). */
#ifndef TFM_BINDING_H
#define TFM_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../runtime/dispatch.h"

/* The C base of tf.Tensor. Python subclasses it once (tfmini/_tensor.py,
 * `__slots__ = ()`) and registers the subclass; every tensor the binding
 * makes is an instance of that subclass. */
typedef struct {
    PyObject_HEAD
    tfm_tensor *t;
    PyObject *weakrefs;
} PyTfmTensor;

/* Set once at import: single-interpreter module, so plain globals keep
 * the hot paths free of module-state lookups. */
extern PyTypeObject *tfm_py_tensor_base;   /* _C.TensorBase */
extern PyTypeObject *tfm_py_tensor_class;  /* tfmini EagerTensor */
extern PyTypeObject *tfm_py_symbolic_class; /* tfmini SymbolicTensor */
extern PyTypeObject *tfm_py_variable_base; /* _C.VariableBase, or NULL */

static inline int
tfm_py_is_tensor(PyObject *o)
{
    return PyObject_TypeCheck(o, tfm_py_tensor_base);
}

/* Wrap t (steals the reference) in a new tfmini.Tensor. */
PyObject *tfm_py_wrap(tfm_tensor *t);

/* Python object -> new tensor reference, or NULL with a Python error set.
 * dtype < 0: infer (float -> float32, int -> int32, NumPy keeps its
 * dtype). With `dtype` >= 0 the value is converted to it where TF would
 * (Python scalars and lists; NumPy arrays of the same kind), else
 * TypeError. */
tfm_tensor *tfm_py_to_tensor(PyObject *o, int dtype);
/* For binary operators: like tfm_py_to_tensor, but returns NULL with no
 * error set when o is of a type the operator should not handle (so the
 * caller returns NotImplemented). */
tfm_tensor *tfm_py_to_tensor_operand(PyObject *o, int dtype);

/* Raise the Python exception for the core's current error; returns NULL. */
PyObject *tfm_py_raise(void);
/* Exception class for a code (after tfmini registers its errors). */
PyObject *tfm_py_error_type(tfm_code code);

/* tensor -> NumPy array (a copy). */
PyObject *tfm_py_to_numpy(tfm_tensor *t);

/* Variables: read the current value as a tensor, recorded on tapes. */
tfm_tensor *tfm_py_variable_read(PyObject *var);

/* For the saved-model binding (saved_model.c): the C objects behind a
 * ConcreteFunction and a tf.Variable, and making new ones stand for a
 * loaded model's. */
struct tfm_concrete;
struct tfm_variable;
struct tfm_graph;
struct tfm_concrete *tfm_py_concrete_get(PyObject *o);
int tfm_py_concrete_adopt(PyObject *o, struct tfm_concrete *cf, int kind,
                          PyObject *structure);
PyObject *tfm_py_graph_wrap(struct tfm_graph *g);
struct tfm_variable *tfm_py_variable_get(PyObject *o);
int tfm_py_variable_adopt(PyObject *o, struct tfm_variable *v);

/* Method tables of the binding's files, joined in module.c. */
extern PyMethodDef tfm_py_call_methods[];
extern PyMethodDef tfm_py_convert_methods[];
extern PyMethodDef tfm_py_errors_methods[];
extern PyMethodDef tfm_py_saved_model_methods[];
extern PyMethodDef tfm_py_py_func_methods[];
extern PyType_Spec tfm_py_tensor_spec;

int tfm_py_numpy_init(void);

#endif
