/* tfmini.distribute._nccl: MirroredStrategy's all-reduce between the
 * GPUs of one process, with NCCL (tfmini/distribute/nccl.py). Built by
 * setup.py only with the CUDA backend and when nccl.h and libnccl are
 * found.
 *
 * The tensors come as DLPack capsules (tf.experimental.dlpack.to_dlpack,
 * which shares the tensor's device memory; the capsules are read, not
 * consumed). tfmini queues its kernels on a stream of its own per device,
 * so each call first waits for the devices (cudaDeviceSynchronize), runs
 * the reduction on a stream of its own, and waits for that before
 * returning: the outputs are complete when tfmini's next kernel reads
 * them. One communicator clique per list of devices, made on first use
 * (ncclCommInitAll) and kept. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <nccl.h>
#include <string.h>

#define MAX_DEV 16

typedef struct {
    int n, devs[MAX_DEV];
    ncclComm_t comms[MAX_DEV];
    cudaStream_t streams[MAX_DEV];
} clique;

static clique cliques[8];
static int n_cliques;

static PyObject *nccl_fail(const char *what, ncclResult_t r)
{
    PyErr_Format(PyExc_RuntimeError, "NCCL %s failed: %s", what,
                 ncclGetErrorString(r));
    return NULL;
}

static PyObject *cuda_fail(const char *what, cudaError_t e)
{
    PyErr_Format(PyExc_RuntimeError, "CUDA %s failed: %s", what,
                 cudaGetErrorString(e));
    return NULL;
}

static clique *clique_for(const int *devs, int n)
{
    for (int i = 0; i < n_cliques; i++)
        if (cliques[i].n == n &&
            !memcmp(cliques[i].devs, devs, sizeof(int) * (size_t)n))
            return &cliques[i];
    if (n_cliques == (int)(sizeof cliques / sizeof cliques[0])) {
        PyErr_SetString(PyExc_RuntimeError, "NCCL: too many device lists "
                        "(at most 8 communicator cliques per process)");
        return NULL;
    }
    clique *c = &cliques[n_cliques];
    c->n = n;
    memcpy(c->devs, devs, sizeof(int) * (size_t)n);
    ncclResult_t r = ncclCommInitAll(c->comms, n, c->devs);
    if (r != ncclSuccess) {
        nccl_fail("ncclCommInitAll", r);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        cudaError_t e = cudaSetDevice(devs[i]);
        if (e == cudaSuccess)
            e = cudaStreamCreateWithFlags(&c->streams[i],
                                          cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            cuda_fail("cudaStreamCreate", e);
            return NULL;
        }
    }
    n_cliques++;
    return c;
}

static int nccl_type(DLDataType t, ncclDataType_t *out)
{
    if (t.lanes != 1)
        return -1;
    if (t.code == kDLFloat && t.bits == 32) *out = ncclFloat32;
    else if (t.code == kDLFloat && t.bits == 64) *out = ncclFloat64;
    else if (t.code == kDLFloat && t.bits == 16) *out = ncclFloat16;
    else if (t.code == kDLInt && t.bits == 32) *out = ncclInt32;
    else if (t.code == kDLInt && t.bits == 64) *out = ncclInt64;
    else return -1;
    return 0;
}

static DLTensor *capsule_tensor(PyObject *cap, const char *which, int i)
{
    if (!PyCapsule_IsValid(cap, "dltensor")) {
        PyErr_Format(PyExc_TypeError, "NCCL all-reduce: %s %d is not an "
                     "unconsumed DLPack capsule", which, i);
        return NULL;
    }
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m->dl_tensor.device.device_type != kDLCUDA) {
        PyErr_Format(PyExc_ValueError, "NCCL all-reduce: %s %d is not in "
                     "GPU memory", which, i);
        return NULL;
    }
    return &m->dl_tensor;
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* allreduce(inputs, outputs, op): outputs[i] (on inputs[i]'s GPU, same
 * shape and dtype) = the reduction of all inputs. */
static PyObject *py_allreduce(PyObject *self, PyObject *args)
{
    PyObject *ins, *outs;
    const char *opname;
    if (!PyArg_ParseTuple(args, "O!O!s", &PyList_Type, &ins, &PyList_Type,
                          &outs, &opname))
        return NULL;
    ncclRedOp_t op;
    if (!strcmp(opname, "sum")) op = ncclSum;
    else if (!strcmp(opname, "max")) op = ncclMax;
    else if (!strcmp(opname, "min")) op = ncclMin;
    else {
        PyErr_Format(PyExc_ValueError, "NCCL all-reduce: unknown op '%s'",
                     opname);
        return NULL;
    }
    int n = (int)PyList_GET_SIZE(ins);
    if (n < 1 || n > MAX_DEV || PyList_GET_SIZE(outs) != n) {
        PyErr_Format(PyExc_ValueError, "NCCL all-reduce: 1 to %d inputs "
                     "and as many outputs expected, got %d and %zd",
                     MAX_DEV, n, PyList_GET_SIZE(outs));
        return NULL;
    }
    DLTensor *in[MAX_DEV], *out[MAX_DEV];
    int devs[MAX_DEV];
    ncclDataType_t type = ncclFloat32;
    for (int i = 0; i < n; i++) {
        in[i] = capsule_tensor(PyList_GET_ITEM(ins, i), "input", i);
        if (!in[i])
            return NULL;
        out[i] = capsule_tensor(PyList_GET_ITEM(outs, i), "output", i);
        if (!out[i])
            return NULL;
        devs[i] = in[i]->device.device_id;
        ncclDataType_t ti;
        if (nccl_type(in[i]->dtype, &ti) < 0) {
            PyErr_Format(PyExc_TypeError, "NCCL all-reduce: input %d has "
                         "DLPack dtype code %d, %d bits; float16/32/64, "
                         "int32 or int64 expected", i, in[i]->dtype.code,
                         in[i]->dtype.bits);
            return NULL;
        }
        if (i == 0)
            type = ti;
        if (ti != type || numel(in[i]) != numel(in[0]) ||
            numel(out[i]) != numel(in[0]) ||
            memcmp(&out[i]->dtype, &in[i]->dtype, sizeof(DLDataType)) ||
            out[i]->device.device_id != devs[i]) {
            PyErr_Format(PyExc_ValueError, "NCCL all-reduce: input %d or "
                         "its output differs from input 0 in dtype, size "
                         "or device", i);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (devs[j] == devs[i]) {
                PyErr_Format(PyExc_ValueError, "NCCL all-reduce: inputs %d "
                             "and %d are both on GPU %d (one per device)",
                             j, i, devs[i]);
                return NULL;
            }
    }
    clique *c = clique_for(devs, n);
    if (!c)
        return NULL;
    size_t count = (size_t)numel(in[0]);
    cudaError_t e = cudaSuccess;
    ncclResult_t r = ncclSuccess;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < n && e == cudaSuccess; i++) {
        e = cudaSetDevice(devs[i]);
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
    }
    if (e == cudaSuccess) {
        r = ncclGroupStart();
        for (int i = 0; i < n && r == ncclSuccess; i++)
            r = ncclAllReduce((char *)in[i]->data + in[i]->byte_offset,
                              (char *)out[i]->data + out[i]->byte_offset,
                              count, type, op, c->comms[i], c->streams[i]);
        ncclResult_t r2 = ncclGroupEnd();
        if (r == ncclSuccess)
            r = r2;
    }
    for (int i = 0; i < n && e == cudaSuccess && r == ncclSuccess; i++) {
        e = cudaSetDevice(devs[i]);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(c->streams[i]);
    }
    Py_END_ALLOW_THREADS
    if (e != cudaSuccess)
        return cuda_fail("synchronize", e);
    if (r != ncclSuccess)
        return nccl_fail("ncclAllReduce", r);
    Py_RETURN_NONE;
}

static PyObject *py_version(PyObject *self, PyObject *args)
{
    int v = 0;
    ncclGetVersion(&v);
    return PyLong_FromLong(v);
}

static PyMethodDef methods[] = {
    {"allreduce", py_allreduce, METH_VARARGS,
     "allreduce(input_capsules, output_capsules, op)."},
    {"version", py_version, METH_NOARGS, "ncclGetVersion."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nccl",
                                    "NCCL all-reduce for tf.distribute", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__nccl(void)
{
    return PyModule_Create(&module);
}
