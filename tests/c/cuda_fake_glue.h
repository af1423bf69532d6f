/* A GPU that is host memory, for the host harnesses that build the CUDA
 * backend's C glue (kernels/cuda/kernels_*.c, graph/exec_cugraph.c)
 * into programs on a machine without a GPU: tests/test_cuda_glue_host.py,
 * test_index_cuda_host.py, test_slice_cuda_host.py,
 * test_random_cuda_host.py and test_cuda_graphs.py. It stands in for
 * internal.h's GPU helpers (tfm_cu_gpu, tfm_cu_launched, tfm_gpu_check,
 * tfm_cu_on_host, the cuBLAS handle) and for the stream's copies; the
 * launchers are each harness's own serial loops.
 *
 * Include it before the glue's source, so that the glue's cudaMemcpyAsync
 * and cudaMemsetAsync calls reach the stand-ins below by a name of their
 * own: a harness that links CUDA's static runtime (to register a .cu
 * file's kernels) would otherwise define them twice.
 *
 * Set FAKE_GLUE_ON_HOST first, to say what the glue's hand-over to the
 * CPU kernel (tfm_cu_on_host) does:
 *   FAKE_GLUE_EXIT     exits with code 10, for a standalone program
 *                      (tfmini's core absent, its symbols unresolved): a
 *                      test reads the exit code as "the CPU kernel would
 *                      have run" and proves no fallback happened where
 *                      it sees another. Errors are bare codes, their
 *                      text only in fake_gpu_error; tfm_shape_numel and
 *                      an empty op table are defined here.
 *   FAKE_GLUE_RUN_CPU  runs the op's CPU kernel on the (host) tensors and
 *                      sets fake_on_host, for a library loaded beside
 *                      tfmini._C (linked -Bsymbolic, so these stand-ins
 *                      win over _C's real ones); errors go through
 *                      tfm_error, naming the op or the call. */
#ifndef TFM_TESTS_CUDA_FAKE_GLUE_H
#define TFM_TESTS_CUDA_FAKE_GLUE_H

#define FAKE_GLUE_EXIT 1
#define FAKE_GLUE_RUN_CPU 2
#if !defined(FAKE_GLUE_ON_HOST) || (FAKE_GLUE_ON_HOST != FAKE_GLUE_EXIT && \
                                    FAKE_GLUE_ON_HOST != FAKE_GLUE_RUN_CPU)
#error "cuda_fake_glue.h: define FAKE_GLUE_ON_HOST as FAKE_GLUE_EXIT or FAKE_GLUE_RUN_CPU first"
#endif

#define cudaMemcpyAsync fake_cuda_memcpy_async
#define cudaMemsetAsync fake_cuda_memset_async

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/internal.h"

/* The last failed check or launch, as "what: code". */
char fake_gpu_error[256];
/* Set by tfm_cu_on_host (FAKE_GLUE_RUN_CPU). */
int fake_on_host;
/* While set, every device-to-host copy fails as after a bad kernel. */
int fake_fail_d2h;
/* Scratch bytes the glue holds: back to 0 once it freed each buffer
 * with the size it asked for. */
long fake_scratch_live;

static tfm_code
fake_copy(const tfm_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    memcpy(dst, src, n);
    return TFM_OK;
}

void *
fake_scratch_alloc(const tfm_kctx *c, size_t n)
{
    (void)c;
    fake_scratch_live += (long)n;
    return malloc(n ? n : 1);
}

void
fake_scratch_free(const tfm_kctx *c, void *p, size_t n)
{
    (void)c;
    fake_scratch_live -= (long)n;
    free(p);
}

tfm_gpu fake_gpu = {.dev = {.index = 1, .kind = "GPU",
                            .copy_to_host = fake_copy,
                            .copy_from_host = fake_copy}};
const tfm_kctx fake_kctx = {.device = &fake_gpu.dev,
                            .scratch_alloc = fake_scratch_alloc,
                            .scratch_free = fake_scratch_free};

#if FAKE_GLUE_ON_HOST == FAKE_GLUE_RUN_CPU
#define FAKE_GLUE_FAIL(...) tfm_error(TFM_ERR_INTERNAL, __VA_ARGS__)
#define FAKE_GLUE_OP_NAME(op) tfm_ops[op].name

/* For the tests' ctypes calls: a dtype's enum from its name, or -1. */
int
dtype_of(const char *name)
{
    for (int d = 0; d < TFM_DTYPE_COUNT; d++)
        if (tfm_dtype_names[d] && !strcmp(tfm_dtype_names[d], name))
            return d;
    return -1;
}

/* *t, with its buffer *b, as a tensor of dtype dt and shape dims[0..nd)
 * over data: host memory, which this GPU's kernels read and write. */
tfm_tensor *
fake_tensor(tfm_tensor *t, tfm_buffer *b, int dt, int nd,
            const int64_t *dims, void *data)
{
    memset(t, 0, sizeof *t);
    t->dtype = (tfm_dtype)dt;
    t->shape = tfm_shape_make(nd, dims);
    *b = (tfm_buffer){.refcount = 1, .data = data,
                      .nbytes = tfm_tensor_nbytes(t)};
    t->buf = b;
    return t;
}
#else
#define FAKE_GLUE_FAIL(...) TFM_ERR_INTERNAL
/* The empty table's names are NULL. */
#define FAKE_GLUE_OP_NAME(op) "op"
const tfm_op_def tfm_ops[TFM_OP_COUNT];

int64_t
tfm_shape_numel(const tfm_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= s->dims[d];
    return n;
}
#endif

tfm_gpu *
tfm_cu_gpu(const tfm_kctx *c)
{
    (void)c;
    return &fake_gpu;
}

tfm_code
tfm_gpu_check(cudaError_t e, const char *what)
{
    if (!e)
        return TFM_OK;
    snprintf(fake_gpu_error, sizeof fake_gpu_error, "%s: %d", what, (int)e);
    return FAKE_GLUE_FAIL("%s: cuda %d", what, (int)e);
}

tfm_code
tfm_cu_launched(tfm_op op, int rc)
{
    if (!rc)
        return TFM_OK;
    snprintf(fake_gpu_error, sizeof fake_gpu_error, "%s launch: %d",
             FAKE_GLUE_OP_NAME(op), rc);
    return FAKE_GLUE_FAIL("%s: launch %d", FAKE_GLUE_OP_NAME(op), rc);
}

tfm_code
tfm_cu_on_host(tfm_op op, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, tfm_tensor *const *out, int nout,
               const tfm_kctx *ctx)
{
    (void)ctx;
#if FAKE_GLUE_ON_HOST == FAKE_GLUE_RUN_CPU
    /* The real one copies to the host first; these are host memory. */
    fake_on_host = 1;
    return tfm_ops[op].cpu(op, in, nin, a, out, nout, &tfm_kctx_cpu);
#else
    (void)op; (void)in; (void)nin; (void)a; (void)out; (void)nout;
    exit(10);
#endif
}

/* A GPU's copy of overlapping ranges is undefined; the host's memcpy
 * would hide a glue that asks for one. */
cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k,
                cudaStream_t s)
{
    (void)s;
    if (fake_fail_d2h && k == cudaMemcpyDeviceToHost)
        return cudaErrorIllegalAddress;
    const char *d = dst, *o = src;
    if (d != o && d < o + n && o < d + n)
        return cudaErrorInvalidValue;
    if (d != o)
        memcpy(dst, src, n);
    return cudaSuccess;
}

cudaError_t
cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s)
{
    (void)s;
    memset(dst, v, n);
    return cudaSuccess;
}

/* cuBLAS: a handle no call dereferences, TF32 off; a harness whose glue
 * multiplies defines the GEMMs it calls. */
cublasHandle_t
tfm_gpu_blas(tfm_gpu *g)
{
    return (cublasHandle_t)g;
}

cublasStatus_t
cublasSetMathMode(cublasHandle_t h, cublasMath_t m)
{
    (void)h; (void)m;
    return CUBLAS_STATUS_SUCCESS;
}

int
tfm_cuda_tf32(void)
{
    return 0;
}

#endif
