/* DLPack exchange (tf.experimental.dlpack, Tensor.__dlpack__): tensors
 * leave as "dltensor" capsules that share their buffer, and DLPack
 * tensors from NumPy, PyTorch, JAX, ... come in as tensors that share
 * the producer's memory.
 *
 * Note [DLPack lifetimes]
 * Export: the DLManagedTensor holds a reference to the tfmini tensor
 * (hence its buffer); its deleter drops it. A capsule nobody consumed
 * runs the deleter when it dies; a consumer renames the capsule
 * "used_dltensor" and calls the deleter when done, perhaps from a
 * thread of its own without the GIL, so the deleter takes the GIL
 * before touching tfmini refcounts (see buffer.h).
 * Import: a C-contiguous, aligned CPU tensor is wrapped as it is: the
 * tfmini buffer's release hook calls the producer's deleter when the
 * last tfmini tensor over it dies. Anything else (strided, misaligned,
 * empty) is copied into a fresh buffer and the deleter runs at once.
 *
 * The header comes from Debian's libdlpack-dev (<dlpack/dlpack.h>, the
 * unversioned ABI, DLPack 0.6). Built without it, the functions raise
 * a clear error instead. */
#include "binding.h"

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define TFM_HAVE_DLPACK 1
#endif
#endif

#ifdef TFM_HAVE_DLPACK

#include <stdlib.h>
#include <string.h>

/* kDLBool came after DLPack 0.6; NumPy 2 and PyTorch send bool as it. */
#define TFM_DL_BOOL 6

typedef struct {
    DLManagedTensor managed;
    int64_t shape[TFM_MAX_DIMS];
    int64_t strides[TFM_MAX_DIMS];
    tfm_tensor *t;
} export_ctx;

static inline int
python_is_ending(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsInitialized() || Py_IsFinalizing();
#else
    return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

static void
export_deleter(DLManagedTensor *m)
{
    export_ctx *ctx = (export_ctx *)m->manager_ctx;
    if (python_is_ending()) {
        free(ctx);     /* the process is ending: the memory goes with it */
        return;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    tfm_tensor_decref(ctx->t);
    PyGILState_Release(g);
    free(ctx);
}

static void
capsule_destructor(PyObject *capsule)
{
    /* Consumed capsules were renamed; only an unused one still owns. */
    if (!PyCapsule_IsValid(capsule, "dltensor"))
        return;
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
    if (m && m->deleter)
        m->deleter(m);
}

static int
dl_dtype_of(tfm_dtype d, DLDataType *out)
{
    out->lanes = 1;
    out->bits = (uint8_t)(8 * tfm_dtype_sizes[d]);
    switch (d) {
    case TFM_BOOL: out->code = TFM_DL_BOOL; return 0;
    case TFM_INT8: case TFM_INT16: case TFM_INT32: case TFM_INT64:
        out->code = kDLInt; return 0;
    case TFM_UINT8: case TFM_UINT16: case TFM_UINT32: case TFM_UINT64:
        out->code = kDLUInt; return 0;
    case TFM_FLOAT16: case TFM_FLOAT32: case TFM_FLOAT64:
        out->code = kDLFloat; return 0;
    default: return -1;
    }
}

static int
tfm_dtype_of(DLDataType dt, tfm_dtype *out)
{
    if (dt.lanes != 1)
        return -1;
    switch (dt.code) {
    case kDLFloat:
        if (dt.bits == 16) { *out = TFM_FLOAT16; return 0; }
        if (dt.bits == 32) { *out = TFM_FLOAT32; return 0; }
        if (dt.bits == 64) { *out = TFM_FLOAT64; return 0; }
        return -1;
    case kDLInt:
        if (dt.bits == 8) { *out = TFM_INT8; return 0; }
        if (dt.bits == 16) { *out = TFM_INT16; return 0; }
        if (dt.bits == 32) { *out = TFM_INT32; return 0; }
        if (dt.bits == 64) { *out = TFM_INT64; return 0; }
        return -1;
    case kDLUInt:
        if (dt.bits == 8) { *out = TFM_UINT8; return 0; }
        if (dt.bits == 16) { *out = TFM_UINT16; return 0; }
        if (dt.bits == 32) { *out = TFM_UINT32; return 0; }
        if (dt.bits == 64) { *out = TFM_UINT64; return 0; }
        return -1;
    case TFM_DL_BOOL:
        if (dt.bits == 8) { *out = TFM_BOOL; return 0; }
        return -1;
    default:
        return -1;
    }
}

/* to_dlpack(tensor) -> "dltensor" capsule sharing the tensor's buffer. */
static PyObject *
py_to_dlpack(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!tfm_py_is_tensor(arg)) {
        PyErr_Format(PyExc_TypeError, "to_dlpack: expected a tf.Tensor, "
                     "got %s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    tfm_tensor *t = ((PyTfmTensor *)arg)->t;
    if (tfm_tensor_is_symbolic(t)) {
        PyErr_SetString(PyExc_TypeError, "to_dlpack: a symbolic tensor "
                        "(inside tf.function) has no memory to share; "
                        "call it eagerly");
        return NULL;
    }
    export_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return PyErr_NoMemory();
    DLTensor *dl = &ctx->managed.dl_tensor;
    if (dl_dtype_of(t->dtype, &dl->dtype) < 0) {
        free(ctx);
        PyErr_Format(PyExc_TypeError, "to_dlpack: dtype %s has no DLPack "
                     "code", tfm_dtype_name(t->dtype));
        return NULL;
    }
    int nd = t->shape.ndim;
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
        ctx->shape[i] = t->shape.dims[i];
        ctx->strides[i] = stride;
        stride *= t->shape.dims[i] > 0 ? t->shape.dims[i] : 1;
    }
    dl->data = t->buf->data;
    dl->byte_offset = t->offset;
    dl->ndim = nd;
    dl->shape = ctx->shape;
    dl->strides = ctx->strides;
    if (t->device == 0) {
        dl->device.device_type = kDLCPU;
        dl->device.device_id = 0;
    } else {
        dl->device.device_type = kDLCUDA;
        dl->device.device_id = t->device - 1;
    }
    ctx->managed.manager_ctx = ctx;
    ctx->managed.deleter = export_deleter;
    ctx->t = t;
    tfm_tensor_incref(t);
    PyObject *cap = PyCapsule_New(&ctx->managed, "dltensor",
                                  capsule_destructor);
    if (!cap) {
        tfm_tensor_decref(t);
        free(ctx);
    }
    return cap;
}

static void
import_release(void *p)
{
    DLManagedTensor *m = p;
    if (m->deleter)
        m->deleter(m);
}

/* Element-strided copy of src (ndim dims, strides in elements) into the
 * row-major dst. */
static void
strided_copy(char *dst, const char *src, int nd, const int64_t *shape,
             const int64_t *strides, size_t item)
{
    int64_t idx[TFM_MAX_DIMS] = {0};
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int i = 0; i < nd; i++)
            off += idx[i] * strides[i];
        memcpy(dst + (size_t)k * item, src + off * (int64_t)item, item);
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < shape[i])
                break;
            idx[i] = 0;
        }
    }
}

/* from_dlpack(capsule) -> tensor (zero-copy where it can; see Note
 * [DLPack lifetimes]). Returns (tensor, copied). */
static PyObject *
py_from_dlpack(PyObject *self, PyObject *cap)
{
    (void)self;
    if (!PyCapsule_IsValid(cap, "dltensor")) {
        PyErr_SetString(PyExc_ValueError,
                        PyCapsule_CheckExact(cap) &&
                        PyCapsule_IsValid(cap, "used_dltensor")
                        ? "from_dlpack: this DLPack capsule was already "
                          "consumed (a capsule can be read once)"
                        : "from_dlpack: expected a 'dltensor' DLPack "
                          "capsule");
        return NULL;
    }
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m)
        return NULL;
    DLTensor *dl = &m->dl_tensor;
    tfm_dtype dtype;
    if (dl->device.device_type != kDLCPU &&
        dl->device.device_type != kDLCUDAHost) {
        PyErr_Format(PyExc_ValueError, "from_dlpack: the tensor lives on "
                     "DLPack device type %d (id %d); tfmini imports host "
                     "memory only: move it to the CPU first",
                     (int)dl->device.device_type,
                     (int)dl->device.device_id);
        return NULL;
    }
    if (tfm_dtype_of(dl->dtype, &dtype) < 0) {
        PyErr_Format(PyExc_TypeError, "from_dlpack: DLPack dtype (code "
                     "%d, %d bits, %d lanes) has no tfmini dtype",
                     (int)dl->dtype.code, (int)dl->dtype.bits,
                     (int)dl->dtype.lanes);
        return NULL;
    }
    if (dl->ndim < 0 || dl->ndim > TFM_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "from_dlpack: rank %d is over "
                     "tfmini's limit of %d dims", (int)dl->ndim,
                     TFM_MAX_DIMS);
        return NULL;
    }
    int nd = dl->ndim;
    int64_t strides[TFM_MAX_DIMS];
    int64_t n = 1, expect = 1;
    int contiguous = 1;
    for (int i = nd - 1; i >= 0; i--) {
        if (dl->shape[i] < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "from_dlpack: negative dimension");
            return NULL;
        }
        strides[i] = dl->strides ? dl->strides[i] : expect;
        if (dl->shape[i] != 1 && strides[i] != expect)
            contiguous = 0;
        expect *= dl->shape[i];
        n *= dl->shape[i];
    }
    tfm_shape shape = tfm_shape_make(nd, dl->shape);
    size_t item = tfm_dtype_sizes[dtype];
    char *src = (char *)dl->data + dl->byte_offset;
    int aligned = ((uintptr_t)src % item) == 0;
    tfm_tensor *t;
    int copied = !(contiguous && aligned && n > 0);
    if (!copied) {
        tfm_buffer *b = tfm_buffer_wrap(src, (size_t)n * item, 0,
                                        import_release, m);
        if (!b)
            return tfm_py_raise();
        t = tfm_tensor_view(b, 0, dtype, &shape, 0);
        if (!t)
            b->release = NULL;  /* the capsule still owns the memory */
        tfm_buffer_decref(b);   /* the view holds it */
        if (!t)
            return tfm_py_raise();
        /* tfmini owns it now; the capsule must not free it again. */
        if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
            tfm_tensor_decref(t);
            return NULL;
        }
    } else {
        t = tfm_tensor_new(dtype, &shape, 0);
        if (!t)
            return tfm_py_raise();
        if (n > 0)
            strided_copy(tfm_tensor_data(t), src, nd, dl->shape, strides,
                         item);
        if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
            tfm_tensor_decref(t);
            return NULL;
        }
        if (m->deleter)
            m->deleter(m);
    }
    PyObject *out = tfm_py_wrap(t);
    if (!out)
        return NULL;
    return Py_BuildValue("(Ni)", out, copied);
}

#else  /* no dlpack.h */

static PyObject *
no_dlpack(PyObject *self, PyObject *arg)
{
    (void)self;
    (void)arg;
    PyErr_SetString(PyExc_NotImplementedError, "tfmini was built without "
                    "<dlpack/dlpack.h> (Debian: libdlpack-dev); rebuild "
                    "with it for DLPack exchange");
    return NULL;
}
#define py_to_dlpack no_dlpack
#define py_from_dlpack no_dlpack

#endif

PyMethodDef tfm_py_dlpack_methods[] = {
    {"to_dlpack", py_to_dlpack, METH_O, NULL},
    {"from_dlpack", py_from_dlpack, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};
