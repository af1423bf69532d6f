/* The GPUs in the device table (Note [Device seam] in core/device.h):
 * registration, memory, copies.
 *
 * Note [GPU allocator]
 * ~~~~~~~~~~~~~~~~~~~~
 * Buffers come from CUDA's stream-ordered allocator (cudaMallocAsync /
 * cudaFreeAsync on the GPU's one stream) over the device's default pool,
 * whose release threshold is set to "never": freed blocks stay in the
 * pool, split and reused for later requests of other sizes, and a block
 * freed while kernels queued before the free still read it is handed
 * out again only once the stream has passed the free. That is the
 * caching allocator PyTorch and TF write by hand, kept by the driver.
 * When a request fails the pool is trimmed (after a synchronize, so
 * every pending free has landed) and the request tried once more, except
 * while the stream is being captured into a CUDA graph; a second
 * failure is ResourceExhaustedError, which the dispatcher
 * prefixes with the op's name. Never managed memory. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies above this go through pinned staging (two halves, so the host
 * memcpy of one chunk overlaps the DMA of the next). */
#define STAGE_MIN ((size_t)1 << 20)
#define STAGE_HALF ((size_t)8 << 20)

static tfm_gpu gpus[TFM_MAX_DEVICES];
static int ngpu = -1;
static char why_none[256] = "not initialized";
static int tf32_on = 1;
static _Thread_local int current_ordinal = -1;

tfm_code
tfm_gpu_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return TFM_OK;
    cudaGetLastError();     /* clear it: the next call starts afresh */
    return tfm_error(e == cudaErrorMemoryAllocation
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: CUDA error %s (%s)", what, cudaGetErrorName(e),
                     cudaGetErrorString(e));
}

void
tfm_gpu_use(const tfm_gpu *g)
{
    if (current_ordinal != g->ordinal) {
        cudaSetDevice(g->ordinal);
        current_ordinal = g->ordinal;
    }
}

cublasHandle_t
tfm_gpu_blas(tfm_gpu *g)
{
    pthread_mutex_lock(&g->lock);
    if (!g->blas) {
        cublasHandle_t h;
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
            pthread_mutex_unlock(&g->lock);
            tfm_error(TFM_ERR_INTERNAL, "GPU:%d: cublasCreate failed",
                      g->ordinal);
            return NULL;
        }
        cublasSetStream(h, g->stream);
        g->blas = h;
    }
    pthread_mutex_unlock(&g->lock);
    return g->blas;
}

/* Whether g's stream is being captured into a CUDA graph (an unknown
 * answer counts as yes: the caller then skips what a capture forbids). */
static int
capturing(const tfm_gpu *g)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(g->stream, &cap) != cudaSuccess) {
        cudaGetLastError();
        return 1;
    }
    return cap != cudaStreamCaptureStatusNone;
}

/* Frees refused while the stream was captured into a CUDA graph: there
 * cudaFreeAsync takes only the graph's own allocations, so a buffer
 * made before the capture and dropped during it (by the captured run,
 * or by another thread) would leak. Such buffers wait here, under
 * g->lock, and go on the stream at the first allocation or free after
 * the capture. */
static struct {
    void **p;
    size_t n, cap;
} late[TFM_MAX_DEVICES];

/* g->lock held. */
static void
free_late(tfm_gpu *g)
{
    size_t k = (size_t)(g - gpus);
    if (!late[k].n || capturing(g))
        return;
    for (size_t i = 0; i < late[k].n; i++)
        if (cudaFreeAsync(late[k].p[i], g->stream) != cudaSuccess)
            cudaGetLastError();
    late[k].n = 0;
}

/* g->lock held. Without memory for the list the buffer leaks, as it
 * did before the list. */
static void
keep_late(tfm_gpu *g, void *p)
{
    size_t k = (size_t)(g - gpus);
    if (late[k].n == late[k].cap) {
        size_t cap = late[k].cap ? 2 * late[k].cap : 16;
        void **q = realloc(late[k].p, cap * sizeof *q);
        if (!q)
            return;
        late[k].p = q;
        late[k].cap = cap;
    }
    late[k].p[late[k].n++] = p;
}

static void *
gpu_alloc(const tfm_device *d, size_t nbytes)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    pthread_mutex_lock(&g->lock);
    free_late(g);
    pthread_mutex_unlock(&g->lock);
    void *p = NULL;
    size_t n = nbytes ? nbytes : 1;
    cudaError_t e = cudaMallocAsync(&p, n, g->stream);
    /* No retry while capturing: the synchronize would invalidate the
     * capture, and the frees queued in it cannot land before it ends. */
    int cap = 0;
    if (e != cudaSuccess) {
        cudaGetLastError();
        cap = capturing(g);
        if (!cap) {
            cudaStreamSynchronize(g->stream);
            cudaMemPoolTrimTo(g->pool, 0);
            e = cudaMallocAsync(&p, n, g->stream);
        }
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        if (cap)
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM when allocating %zu "
                      "bytes on GPU:%d while capturing a CUDA graph",
                      nbytes, g->ordinal);
        else {
            cudaMemGetInfo(&free_b, &total_b);
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM when allocating %zu "
                      "bytes on GPU:%d (%zu of %zu bytes free)", nbytes,
                      g->ordinal, free_b, total_b);
        }
        return NULL;
    }
    pthread_mutex_lock(&g->lock);
    g->current += (int64_t)nbytes;
    if (g->current > g->peak)
        g->peak = g->current;
    pthread_mutex_unlock(&g->lock);
    return p;
}

static void
gpu_free(const tfm_device *d, void *p, size_t nbytes)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    cudaError_t e = cudaFreeAsync(p, g->stream);
    if (e != cudaSuccess)
        cudaGetLastError();
    pthread_mutex_lock(&g->lock);
    if (e != cudaSuccess && capturing(g))
        keep_late(g, p);
    else
        free_late(g);
    g->current -= (int64_t)nbytes;
    pthread_mutex_unlock(&g->lock);
}

static tfm_code
to_host(const tfm_device *d, void *dst, const void *src, size_t n)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    if (n < STAGE_MIN || !g->staging[0]) {
        tfm_code rc = tfm_gpu_check(cudaMemcpyAsync(dst, src, n,
                                    cudaMemcpyDeviceToHost, g->stream),
                                    "copy to host");
        return rc ? rc : tfm_gpu_check(cudaStreamSynchronize(g->stream),
                                       "copy to host");
    }
    tfm_code rc = TFM_OK;
    pthread_mutex_lock(&g->lock);
    size_t chunks = (n + STAGE_HALF - 1) / STAGE_HALF;
    const char *s = src;
    char *o = dst;
    cudaError_t e = cudaMemcpyAsync(g->staging[0], s,
                                    n < STAGE_HALF ? n : STAGE_HALF,
                                    cudaMemcpyDeviceToHost, g->stream);
    if (!e)
        e = cudaStreamSynchronize(g->stream);
    for (size_t k = 0; !e && k < chunks; k++) {
        size_t at = k * STAGE_HALF, len = n - at < STAGE_HALF ? n - at
                                                              : STAGE_HALF;
        if (k + 1 < chunks) {
            size_t nat = at + STAGE_HALF;
            size_t nlen = n - nat < STAGE_HALF ? n - nat : STAGE_HALF;
            e = cudaMemcpyAsync(g->staging[(k + 1) % 2], s + nat, nlen,
                                cudaMemcpyDeviceToHost, g->stream);
        }
        memcpy(o + at, g->staging[k % 2], len);
        if (!e)
            e = cudaStreamSynchronize(g->stream);
    }
    pthread_mutex_unlock(&g->lock);
    if (e)
        rc = tfm_gpu_check(e, "copy to host");
    return rc;
}

static tfm_code
from_host(const tfm_device *d, void *dst, const void *src, size_t n)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    if (n < STAGE_MIN || !g->staging[0])
        /* From pageable memory the call returns once src is staged, so
         * the caller may free it at once. */
        return tfm_gpu_check(cudaMemcpyAsync(dst, src, n,
                                             cudaMemcpyHostToDevice,
                                             g->stream), "copy to GPU");
    pthread_mutex_lock(&g->lock);
    cudaError_t e = cudaSuccess;
    const char *s = src;
    char *o = dst;
    for (size_t at = 0, k = 0; !e && at < n; at += STAGE_HALF, k++) {
        size_t len = n - at < STAGE_HALF ? n - at : STAGE_HALF;
        /* The half used two chunks ago must have reached the GPU. */
        if (k >= 2)
            e = cudaStreamSynchronize(g->stream);
        if (e)
            break;
        memcpy(g->staging[k % 2], s + at, len);
        e = cudaMemcpyAsync(o + at, g->staging[k % 2], len,
                            cudaMemcpyHostToDevice, g->stream);
    }
    /* The staging halves are reused by the next copy. */
    if (!e)
        e = cudaStreamSynchronize(g->stream);
    pthread_mutex_unlock(&g->lock);
    return tfm_gpu_check(e, "copy to GPU");
}

static tfm_code
on_device(const tfm_device *d, void *dst, const void *src, size_t n)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    return tfm_gpu_check(cudaMemcpyAsync(dst, src, n,
                                         cudaMemcpyDeviceToDevice,
                                         g->stream), "copy on GPU");
}

static tfm_code
gpu_sync(const tfm_device *d)
{
    tfm_gpu *g = tfm_gpu_of(d);
    tfm_gpu_use(g);
    return tfm_gpu_check(cudaStreamSynchronize(g->stream), "synchronize");
}

static int
init_one(int i)
{
    tfm_gpu *g = &gpus[1 + i];
    memset(g, 0, sizeof *g);
    g->ordinal = i;
    if (cudaSetDevice(i) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) !=
            cudaSuccess ||
        cudaDeviceGetDefaultMemPool(&g->pool, i) != cudaSuccess) {
        snprintf(why_none, sizeof why_none, "GPU %d: %s", i,
                 cudaGetErrorString(cudaGetLastError()));
        return 0;
    }
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(g->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    for (int h = 0; h < 2; h++)
        if (cudaMallocHost(&g->staging[h], STAGE_HALF) != cudaSuccess) {
            cudaGetLastError();
            g->staging[h] = NULL;
        }
    if (!g->staging[0] || !g->staging[1]) {
        cudaFreeHost(g->staging[0]);
        cudaFreeHost(g->staging[1]);
        g->staging[0] = g->staging[1] = NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    g->dev = (tfm_device){
        .index = 1 + i, .kind = "GPU", .kind_index = i, .host_memory = 0,
        .alloc = gpu_alloc, .free = gpu_free, .copy_to_host = to_host,
        .copy_from_host = from_host, .copy_device_to_device = on_device,
        .synchronize = gpu_sync, .stream = g->stream,
        .kernels = tfm_cuda_kernels,
    };
    return tfm_device_register(1 + i, &g->dev) == TFM_OK;
}

int
tfm_cuda_init(void)
{
    if (ngpu >= 0)
        return ngpu;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    ngpu = 0;
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why_none, sizeof why_none, "cudaGetDeviceCount: %s",
                 cudaGetErrorString(e));
        return 0;
    }
    if (n == 0) {
        snprintf(why_none, sizeof why_none, "cudaGetDeviceCount found no "
                 "GPU");
        return 0;
    }
    /* Index 0 is the CPU, the last the tests' fake device. */
    if (n > TFM_MAX_DEVICES - 2)
        n = TFM_MAX_DEVICES - 2;
    tfm_cuda_kernels_init();
    for (int i = 0; i < n && init_one(i); i++)
        ngpu = i + 1;
    current_ordinal = -1;
    return ngpu;
}

int
tfm_cuda_available(void)
{
    return 1;
}

int
tfm_cuda_device_count(void)
{
    return ngpu < 0 ? 0 : ngpu;
}

const char *
tfm_cuda_why_none(void)
{
    return why_none;
}

static tfm_gpu *
gpu_n(int n)
{
    if (n < 0 || n >= tfm_cuda_device_count()) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "No GPU:%d (%d GPU(s): %s)", n,
                  tfm_cuda_device_count(),
                  tfm_cuda_device_count() ? "tfmini sees them" : why_none);
        return NULL;
    }
    return &gpus[1 + n];
}

tfm_code
tfm_cuda_memory_info(int n, int64_t *current, int64_t *peak,
                     int64_t *reserved)
{
    tfm_gpu *g = gpu_n(n);
    if (!g)
        return tfm_error_code();
    pthread_mutex_lock(&g->lock);
    *current = g->current;
    *peak = g->peak;
    pthread_mutex_unlock(&g->lock);
    uint64_t r = 0;
    tfm_gpu_use(g);
    if (cudaMemPoolGetAttribute(g->pool, cudaMemPoolAttrReservedMemCurrent,
                                &r) != cudaSuccess)
        cudaGetLastError();
    *reserved = (int64_t)r;
    return TFM_OK;
}

tfm_code
tfm_cuda_reset_peak(int n)
{
    tfm_gpu *g = gpu_n(n);
    if (!g)
        return tfm_error_code();
    pthread_mutex_lock(&g->lock);
    g->peak = g->current;
    pthread_mutex_unlock(&g->lock);
    return TFM_OK;
}

void
tfm_cuda_set_tf32(int on)
{
    tf32_on = on != 0;
}

int
tfm_cuda_tf32(void)
{
    return tf32_on;
}
