/* What the files of tf.function's binding share (private to
 * csrc/python/function_*.c):
 *   function_key.c           signature keys: the argument walker
 *   function_graph.c         _C.Graph, the graph being traced
 *   function_concrete.c      _C.ConcreteBase, a compiled trace
 *   function_cache.c         _C.FunctionBase: the binder, the cached call
 *   function_trace.c         tracing state, tf.print, graph passes, init
 *   function_control_flow.c  If/While/Assert nodes, sub-graphs
 * tfmini/function.py subclasses ConcreteBase and FunctionBase and holds
 * everything that is not on the hot path: tracing, the retracing rules,
 * input signatures, printing signatures.
 *
 * Note [The call path]: FunctionBase's tp_call binds a call's arguments
 * to the parameters (as _Binder.canonicalize does in Python: defaults
 * filled in, *args as a tuple, keywords in parameter order), computes
 * the signature key, looks it up in the C cache and runs the plan: no
 * Python code runs on a hit. Anything else (a miss, a binding error,
 * keywords caught by **kwargs, a call while tracing,
 * run_functions_eagerly) goes to the Python method `_call_slow`, which
 * computes the same key through `_key` and fills the cache. The key is a
 * byte string:
 *   tensors (and NumPy arrays, converted): 'T' dtype rank dims,
 *     and the tensor is the next graph input ("leaf");
 *   None 'N', bool 'B', int 'I'/'J', float 'F', str 'S': by value;
 *   tuple 'U', list 'L', dict 'D' (keys sorted), namedtuple 'Q' + type:
 *     their items, recursively;
 *   anything else (variables, models, ...) 'O' + its address; the Python
 *     side holds it weakly and drops the key when it dies. */
#ifndef TFM_PY_FUNCTION_SHARED_H
#define TFM_PY_FUNCTION_SHARED_H

#include "binding.h"

#include <string.h>

#include "../graph/function.h"
#include "../runtime/graph.h"
#include "../runtime/trace.h"

/* ---- signature keys (function_key.c) ---- */

enum { WALK_OK = 0, WALK_SLOW = 1, WALK_ERR = -1 };
#define WALK_MAX_DEPTH 64

typedef struct walk {
    unsigned char *p;
    size_t n, cap;
    tfm_tensor **leaves;
    int nleaves, cap_leaves;
    PyObject *idents;          /* list, or NULL on the fast path */
    int relaxed;               /* tensors by dtype and rank only */
    int specs;                 /* TensorSpecs are leaves (else: slow) */
    unsigned char local[512];
    tfm_tensor *local_leaves[16];
} walk;

void tfm_py_walk_init(walk *w, PyObject *idents);
void tfm_py_walk_free(walk *w);
int tfm_py_walk_tag(walk *w, char tag, int64_t v);
/* Append a leaf (steals t; NULL for a TensorSpec). */
int tfm_py_walk_leaf(walk *w, tfm_tensor *t);
int tfm_py_walk_value(walk *w, PyObject *o, int depth);
int tfm_py_walk_items(walk *w, char tag, PyObject *const *items,
                      Py_ssize_t n, int depth);
/* Each item of a PySequence_Fast as a leaf tensor. */
int tfm_py_walk_tensors(PyObject *seq, walk *w);

extern PyTypeObject *tfm_py_ndarray_type, *tfm_py_npgeneric_type;
extern PyObject *tfm_py_spec_type;   /* tfmini.function.TensorSpec */

/* ---- _C.Graph (function_graph.c) ---- */

typedef struct {
    PyObject_HEAD
    tfm_graph *g;
} PyTfmGraph;

extern PyTypeObject *tfm_py_graph_type;
extern PyType_Spec tfm_py_graph_spec;
int tfm_py_parse_shape(PyObject *o, tfm_shape *s);
int tfm_py_output_ref(tfm_graph *g, PyObject *o, int i, tfm_ref *r);

/* ---- _C.ConcreteBase (function_concrete.c) ---- */

typedef struct {
    PyObject_HEAD
    tfm_concrete *cf;
} PyTfmConcrete;

extern PyTypeObject *tfm_py_concrete_type;
extern PyType_Spec tfm_py_concrete_spec;
extern PyObject *tfm_py_pack_fn;     /* tfmini.function._pack_outputs */
PyObject *tfm_py_run_concrete(tfm_concrete *cf, tfm_tensor *const *leaves,
                              int n);
/* Whether calls of cf under a tape go through Python (the fast path
 * leaves them to _call_slow). */
int tfm_py_concrete_taped_in_python(const tfm_concrete *cf);

/* ---- _C.FunctionBase (function_cache.c) ---- */

extern PyType_Spec tfm_py_function_spec;
extern int tfm_py_run_eagerly;

/* ---- module functions (function_trace.c, function_control_flow.c) ---- */

void tfm_py_site_hook(char *buf, size_t n);
int tfm_py_texts_and_tensors(PyObject *texts, PyObject *tensors,
                             const char ***tx, walk *w);
extern PyMethodDef tfm_py_control_flow_methods[];

#endif
