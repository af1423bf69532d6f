/* _C.Tape: the recording object behind tf.GradientTape (the semantics
 * and nesting live in tfmini/backprop.py), and the module functions that
 * tf.custom_gradient and tf.stop_gradient build on. See Note [Tape
 * lifetime] in runtime/tape.h. */
#include "binding.h"

#include <structmember.h>

#include "../runtime/tape.h"
#include "../runtime/variable.h"

typedef struct {
    PyObject_HEAD
    tfm_tape *tape;
    PyObject *weakrefs;
} PyTfmTape;

/* ---- custom gradient records: ctx is a Python callable ----
 * grad_fn(list of output gradients, Tensor or None) -> sequence of input
 * gradients (Tensor, or None), one per input. */

static void
custom_retain(void *ctx)
{
    Py_INCREF((PyObject *)ctx);
}

static void
custom_release(void *ctx)
{
    Py_DECREF((PyObject *)ctx);
}

/* A Python error raised by a custom gradient: the Python exception stays
 * set, and the binding re-raises it instead of the core's message. */
static tfm_code
python_failed(void)
{
    return tfm_error(TFM_ERR_INTERNAL, "a Python gradient function "
                     "raised");
}

static tfm_code
custom_grad(void *ctx, tfm_tensor *const *in, int nin,
            tfm_tensor *const *out, int nout, tfm_tensor *const *gout,
            tfm_tensor **gin)
{
    (void)in; (void)out;
    PyObject *list = PyList_New(nout), *res = NULL, *seq = NULL;
    tfm_code rc = TFM_OK;
    if (!list)
        return python_failed();
    for (int k = 0; k < nout; k++) {
        PyObject *g;
        if (gout[k]) {
            tfm_tensor_incref(gout[k]);
            g = tfm_py_wrap(gout[k]);
            if (!g) {
                rc = python_failed();
                goto done;
            }
        } else {
            g = Py_None;
            Py_INCREF(g);
        }
        PyList_SET_ITEM(list, k, g);
    }
    res = PyObject_CallOneArg((PyObject *)ctx, list);
    if (!res) {
        rc = python_failed();
        goto done;
    }
    seq = PySequence_Fast(res, "a custom gradient function must return "
                          "a sequence of gradients");
    if (!seq) {
        rc = python_failed();
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(seq) != nin) {
        PyErr_Format(PyExc_ValueError, "custom gradient function returned "
                     "%zd gradients, expected %d", 
                     PySequence_Fast_GET_SIZE(seq), nin);
        rc = python_failed();
        goto done;
    }
    for (int k = 0; k < nin; k++) {
        PyObject *g = PySequence_Fast_GET_ITEM(seq, k);
        if (g == Py_None)
            continue;
        gin[k] = tfm_py_to_tensor(g, in[k]->dtype);
        if (!gin[k]) {
            for (int j = 0; j < k; j++)
                if (gin[j]) {
                    tfm_tensor_decref(gin[j]);
                    gin[j] = NULL;
                }
            rc = python_failed();
            goto done;
        }
    }
done:
    Py_XDECREF(seq);
    Py_XDECREF(res);
    Py_DECREF(list);
    return rc;
}

static const tfm_tape_fn custom_fn = {
    custom_grad, custom_retain, custom_release,
};

/* ---- helpers ---- */

static PyObject *
raise_core(void)
{
    if (PyErr_Occurred())
        return NULL;
    return tfm_py_raise();
}

/* A tensor (borrowed pointer) from a Tensor; NULL with TypeError. */
static tfm_tensor *
tensor_of(PyObject *o, const char *what)
{
    if (tfm_py_is_tensor(o))
        return ((PyTfmTensor *)o)->t;
    PyErr_Format(PyExc_TypeError, "%s must be a tf.Tensor, got %.100s",
                 what, Py_TYPE(o)->tp_name);
    return NULL;
}

/* variable.c: the variable behind a VariableBase (NULL, with ValueError,
 * before __init__). */
tfm_variable *tfm_py_variable_get(PyObject *o);

static int
is_variable(PyObject *o)
{
    return tfm_py_variable_base &&
           PyObject_TypeCheck(o, tfm_py_variable_base);
}

/* New tensor references for a list of Tensors / Variables (handles). */
static int
tensors_of(PyObject *seq, tfm_tensor **out, Py_ssize_t n, const char *what)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
        if (is_variable(o)) {
            tfm_variable *v = tfm_py_variable_get(o);
            out[k] = v ? tfm_variable_handle(v) : NULL;
            if (v && !out[k])
                tfm_py_raise();
        } else {
            out[k] = tensor_of(o, what);
            if (out[k])
                tfm_tensor_incref(out[k]);
        }
        if (!out[k]) {
            while (k-- > 0)
                tfm_tensor_decref(out[k]);
            return -1;
        }
    }
    return 0;
}

static void
release_all(tfm_tensor **t, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k++)
        if (t[k])
            tfm_tensor_decref(t[k]);
}

/* ---- the Tape type ---- */

static PyObject *
tape_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"persistent", "watch_accessed_variables",
                             "variables_only", NULL};
    int persistent = 0, watch = 1, vonly = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ppp", kwlist, &persistent,
                                     &watch, &vonly))
        return NULL;
    PyTfmTape *self = (PyTfmTape *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    unsigned flags = (persistent ? TFM_TAPE_PERSISTENT : 0) |
                     (watch ? TFM_TAPE_WATCH_ACCESSED : 0) |
                     (vonly ? TFM_TAPE_VARIABLES_ONLY : 0);
    self->tape = tfm_tape_new(flags);
    if (!self->tape) {
        Py_DECREF(self);
        return tfm_py_raise();
    }
    return (PyObject *)self;
}

struct visit_args {
    visitproc visit;
    void *arg;
};

static int
visit_ctx(void *ctx, void *arg)
{
    struct visit_args *va = arg;
    return va->visit((PyObject *)ctx, va->arg);
}

static int
tape_traverse(PyTfmTape *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    if (self->tape) {
        struct visit_args va = {visit, arg};
        return tfm_tape_visit(self->tape, visit_ctx, &va);
    }
    return 0;
}

static int
tape_clear(PyTfmTape *self)
{
    if (self->tape)
        tfm_tape_clear_custom(self->tape);
    return 0;
}

static void
tape_dealloc(PyTfmTape *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    tfm_tape_free(self->tape);
    self->tape = NULL;
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
tape_push(PyTfmTape *self, PyObject *unused)
{
    (void)unused;
    if (tfm_tape_push(self->tape))
        return tfm_py_raise();
    Py_RETURN_NONE;
}

static PyObject *
tape_pop(PyTfmTape *self, PyObject *unused)
{
    (void)unused;
    if (tfm_tape_pop(self->tape))
        return tfm_py_raise();
    Py_RETURN_NONE;
}

/* watch(x): a Tensor or a Variable. */
static PyObject *
tape_watch(PyTfmTape *self, PyObject *x)
{
    tfm_code rc;
    if (is_variable(x)) {
        tfm_variable *v = tfm_py_variable_get(x);
        if (!v)
            return NULL;
        rc = tfm_tape_watch_variable(self->tape, v);
    } else {
        tfm_tensor *t = tensor_of(x, "watch()'s argument");
        if (!t)
            return NULL;
        rc = tfm_tape_watch(self->tape, t);
    }
    if (rc)
        return tfm_py_raise();
    Py_RETURN_NONE;
}

/* gradient(targets, sources, output_gradients, zeros, consume) -> list
 * targets: list of Tensors; sources: list of Tensors/Variables;
 * output_gradients: None or a list of Tensor/None, one per target. */
/* gradient()'s on_ready callable (Note [Gradient ready hook] in
 * runtime/tape.h): called as on_ready(j, grad). */
static tfm_code
ready_call(void *fn, int j, tfm_tensor *g)
{
    tfm_tensor_incref(g);
    PyObject *t = tfm_py_wrap(g);
    PyObject *r = t ? PyObject_CallFunction((PyObject *)fn, "iO", j, t)
                    : NULL;
    Py_XDECREF(t);
    if (!r)       /* the Python exception stays set: raise_core keeps it */
        return tfm_error(TFM_ERR_RUNTIME, "gradient(): on_ready raised");
    Py_DECREF(r);
    return TFM_OK;
}

static PyObject *
tape_gradient(PyTfmTape *self, PyObject *args)
{
    PyObject *targets, *sources, *ograds, *result = NULL, *on_ready = NULL;
    PyObject *tseq = NULL, *sseq = NULL, *gseq = NULL;
    int zeros, consume;
    tfm_tensor **tt = NULL, **st = NULL, **gt = NULL, **res = NULL;
    Py_ssize_t nt = 0, ns = 0, ng = 0;
    if (!PyArg_ParseTuple(args, "OOOpp|O", &targets, &sources, &ograds,
                          &zeros, &consume, &on_ready))
        return NULL;
    if (on_ready == Py_None)
        on_ready = NULL;
    if (on_ready && !PyCallable_Check(on_ready)) {
        PyErr_SetString(PyExc_TypeError, "gradient(): on_ready must be "
                        "callable or None");
        return NULL;
    }
    tseq = PySequence_Fast(targets, "targets must be a sequence");
    sseq = tseq ? PySequence_Fast(sources, "sources must be a sequence")
                : NULL;
    if (!sseq)
        goto fail;
    nt = PySequence_Fast_GET_SIZE(tseq);
    ns = PySequence_Fast_GET_SIZE(sseq);
    tt = PyMem_Calloc((size_t)nt + 1, sizeof *tt);
    st = PyMem_Calloc((size_t)ns + 1, sizeof *st);
    res = PyMem_Calloc((size_t)ns + 1, sizeof *res);
    if (!tt || !st || !res) {
        PyErr_NoMemory();
        goto fail;
    }
    if (tensors_of(tseq, tt, nt, "a target")) {
        nt = 0;
        goto fail;
    }
    if (tensors_of(sseq, st, ns, "a source")) {
        ns = 0;
        goto fail;
    }
    if (ograds != Py_None) {
        gseq = PySequence_Fast(ograds, "output_gradients must be a "
                               "sequence");
        if (!gseq)
            goto fail;
        ng = PySequence_Fast_GET_SIZE(gseq);
        if (ng != nt) {
            PyErr_Format(PyExc_ValueError, "output_gradients has %zd "
                         "entries for %zd targets", ng, nt);
            ng = 0;
            goto fail;
        }
        gt = PyMem_Calloc((size_t)ng + 1, sizeof *gt);
        if (!gt) {
            PyErr_NoMemory();
            ng = 0;
            goto fail;
        }
        for (Py_ssize_t k = 0; k < ng; k++) {
            PyObject *o = PySequence_Fast_GET_ITEM(gseq, k);
            if (o == Py_None)
                continue;
            gt[k] = tfm_py_to_tensor(o, tt[k]->dtype);
            if (!gt[k])
                goto fail;
        }
    }
    if (tfm_tape_gradient_hooked(self->tape, tt, (int)nt, gt, st, (int)ns,
                                 zeros, consume, res,
                                 on_ready ? ready_call : NULL, on_ready)) {
        raise_core();
        goto fail;
    }
    result = PyList_New(ns);
    if (!result)
        goto fail;
    for (Py_ssize_t j = 0; j < ns; j++) {
        PyObject *g;
        if (res[j]) {
            g = tfm_py_wrap(res[j]);
            res[j] = NULL;
            if (!g) {
                Py_CLEAR(result);
                goto fail;
            }
        } else {
            g = Py_None;
            Py_INCREF(g);
        }
        PyList_SET_ITEM(result, j, g);
    }
fail:
    if (res)
        release_all(res, ns);
    if (tt)
        release_all(tt, nt);
    if (st)
        release_all(st, ns);
    if (gt)
        release_all(gt, ng);
    PyMem_Free(tt);
    PyMem_Free(st);
    PyMem_Free(gt);
    PyMem_Free(res);
    Py_XDECREF(tseq);
    Py_XDECREF(sseq);
    Py_XDECREF(gseq);
    return result;
}

/* watched_variables() -> tuple, in creation order. */
static PyObject *
tape_watched_variables(PyTfmTape *self, PyObject *unused)
{
    (void)unused;
    tfm_variable *const *vs;
    int n = tfm_tape_variables(self->tape, &vs), k = 0;
    PyObject *tup = PyTuple_New(n);
    if (!tup)
        return NULL;
    for (int i = 0; i < n; i++) {
        /* A variable whose Python object is gone cannot be asked for. */
        if (!vs[i]->owner)
            continue;
        PyObject *o = vs[i]->owner;
        Py_INCREF(o);
        PyTuple_SET_ITEM(tup, k++, o);
    }
    if (k < n && _PyTuple_Resize(&tup, k) < 0)
        return NULL;
    return tup;
}

static PyObject *
tape_reset(PyTfmTape *self, PyObject *unused)
{
    (void)unused;
    tfm_tape_clear(self->tape);
    Py_RETURN_NONE;
}

static PyObject *
get_recording(PyTfmTape *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tfm_tape_is_recording(self->tape));
}

static PyObject *
get_persistent(PyTfmTape *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tfm_tape_flags(self->tape) & TFM_TAPE_PERSISTENT);
}

static PyObject *
get_record_count(PyTfmTape *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(tfm_tape_record_count(self->tape));
}

static PyMethodDef tape_methods[] = {
    {"push", (PyCFunction)tape_push, METH_NOARGS, "start recording"},
    {"pop", (PyCFunction)tape_pop, METH_NOARGS, "stop recording"},
    {"watch", (PyCFunction)tape_watch, METH_O,
     "watch(tensor_or_variable)"},
    {"gradient", (PyCFunction)tape_gradient, METH_VARARGS,
     "gradient(targets, sources, output_gradients, zeros, consume)"},
    {"watched_variables", (PyCFunction)tape_watched_variables, METH_NOARGS,
     NULL},
    {"reset", (PyCFunction)tape_reset, METH_NOARGS,
     "forget every record and watch"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tape_getset[] = {
    {"recording", (getter)get_recording, NULL, NULL, NULL},
    {"persistent", (getter)get_persistent, NULL, NULL, NULL},
    {"record_count", (getter)get_record_count, NULL,
     "op records held (memory tests)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef tape_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PyTfmTape, weakrefs),
     READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot tape_slots[] = {
    {Py_tp_new, tape_new},
    {Py_tp_dealloc, tape_dealloc},
    {Py_tp_traverse, tape_traverse},
    {Py_tp_clear, tape_clear},
    {Py_tp_methods, tape_methods},
    {Py_tp_getset, tape_getset},
    {Py_tp_members, tape_members},
    {Py_tp_doc, "Tape(persistent=False, watch_accessed_variables=True, "
                "variables_only=False): records ops for gradients."},
    {0, NULL},
};

static PyType_Spec tape_spec = {
    .name = "tfmini._C.Tape",
    .basicsize = sizeof(PyTfmTape),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = tape_slots,
};

/* ---- module functions ---- */

/* record_custom(inputs, outputs, grad_fn): record a custom-gradient op
 * on every active tape that watches an input. */
static PyObject *
py_record_custom(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *inputs, *outputs, *fn, *iseq = NULL, *oseq = NULL;
    PyObject *result = NULL;
    tfm_tensor **in = NULL, **out = NULL;
    Py_ssize_t ni = 0, no = 0;
    if (!PyArg_ParseTuple(args, "OOO", &inputs, &outputs, &fn))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "grad_fn must be callable");
        return NULL;
    }
    iseq = PySequence_Fast(inputs, "inputs must be a sequence");
    oseq = iseq ? PySequence_Fast(outputs, "outputs must be a sequence")
                : NULL;
    if (!oseq)
        goto done;
    ni = PySequence_Fast_GET_SIZE(iseq);
    no = PySequence_Fast_GET_SIZE(oseq);
    in = PyMem_Calloc((size_t)ni + 1, sizeof *in);
    out = PyMem_Calloc((size_t)no + 1, sizeof *out);
    if (!in || !out) {
        PyErr_NoMemory();
        ni = no = 0;
        goto done;
    }
    if (tensors_of(iseq, in, ni, "an input")) {
        ni = 0;
        no = 0;
        goto done;
    }
    if (tensors_of(oseq, out, no, "an output")) {
        no = 0;
        goto done;
    }
    if (tfm_tape_record_custom(&custom_fn, fn, in, (int)ni, out, (int)no)) {
        tfm_py_raise();
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (in)
        release_all(in, ni);
    if (out)
        release_all(out, no);
    PyMem_Free(in);
    PyMem_Free(out);
    Py_XDECREF(iseq);
    Py_XDECREF(oseq);
    return result;
}

/* should_record(inputs) -> bool */
static PyObject *
py_should_record(PyObject *self, PyObject *inputs)
{
    (void)self;
    if (tfm_tape_active_count == 0)
        Py_RETURN_FALSE;
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    tfm_tensor **in = PyMem_Calloc((size_t)n + 1, sizeof *in);
    if (!in || tensors_of(seq, in, n, "an input")) {
        if (!in)
            PyErr_NoMemory();
        PyMem_Free(in);
        Py_DECREF(seq);
        return NULL;
    }
    int r = tfm_tape_should_record(in, (int)n);
    release_all(in, n);
    PyMem_Free(in);
    Py_DECREF(seq);
    return PyBool_FromLong(r);
}

static PyObject *
py_pause_tapes(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    if (tfm_tape_pause_all())
        return tfm_py_raise();
    Py_RETURN_NONE;
}

static PyObject *
py_resume_tapes(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    tfm_tape_resume_all();
    Py_RETURN_NONE;
}

/* fresh_tensor(x) -> the same value as a new tensor (a new id): what the
 * tapes cannot see through (tf.stop_gradient, custom_gradient outputs).
 * Shares the buffer, or the graph node when symbolic. */
static PyObject *
py_fresh_tensor(PyObject *self, PyObject *x)
{
    (void)self;
    tfm_tensor *src;
    if (is_variable(x)) {
        src = tfm_py_variable_read(x);
        if (!src)
            return NULL;
    } else {
        src = tensor_of(x, "the argument");
        if (!src)
            return NULL;
        tfm_tensor_incref(src);
    }
    tfm_tensor *t;
    if (tfm_tensor_is_symbolic(src))
        t = tfm_tensor_symbolic(src->dtype, &src->shape, src->graph,
                                src->node, src->out_index);
    else
        t = tfm_tensor_view(src->buf, src->offset, src->dtype, &src->shape,
                            src->device);
    tfm_tensor_decref(src);
    return tfm_py_wrap(t);
}

static PyObject *
py_tapes_active(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyLong_FromLong(tfm_tape_active());
}

static PyObject *
py_set_tape_stub_min(PyObject *self, PyObject *arg)
{
    (void)self;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    tfm_tape_set_stub_min(n);
    Py_RETURN_NONE;
}

static PyMethodDef tape_module_methods[] = {
    {"set_tape_stub_min", py_set_tape_stub_min, METH_O,
     "tensors of at least n elements that no gradient rule reads are kept "
     "shape-only on tapes (default 1024; tests use 0)"},
    {"record_custom", py_record_custom, METH_VARARGS,
     "record_custom(inputs, outputs, grad_fn)"},
    {"should_record", py_should_record, METH_O,
     "whether an active tape watches one of these inputs"},
    {"pause_tapes", py_pause_tapes, METH_NOARGS,
     "stop every active tape until resume_tapes()"},
    {"resume_tapes", py_resume_tapes, METH_NOARGS, NULL},
    {"fresh_tensor", py_fresh_tensor, METH_O,
     "the same value under a new id (no gradient flows through)"},
    {"tapes_active", py_tapes_active, METH_NOARGS,
     "number of tapes recording"},
    {NULL, NULL, 0, NULL},
};

int
tfm_py_tape_init(PyObject *m)
{
    PyObject *tp = PyType_FromSpec(&tape_spec);
    if (!tp)
        return -1;
    if (PyModule_AddObject(m, "Tape", tp) < 0) {
        Py_DECREF(tp);
        return -1;
    }
    return PyModule_AddFunctions(m, tape_module_methods);
}
