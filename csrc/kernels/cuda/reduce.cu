/* Sum, Mean, Max, Min and Prod over any set of axes, float32/float64.
 * The C glue (kernels.c) splits x's dims into kept ones (the output's)
 * and reduced ones, each with x's strides. Few reduced elements per
 * output: a thread per output. Many: a block per output, its threads
 * striding over the reduced elements, then a tree in shared memory.
 * Many per output and few outputs (a full reduction): each output's
 * elements split over up to 1024 blocks whose partial results a second
 * pass combines, so that the whole GPU reads.
 * Max/Min propagate NaN (TF >= 2.4, as the CPU kernels); empty
 * reductions give the identity, Mean of nothing NaN. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "launch.h"

namespace {

struct red_plan {
    int nkeep, nred;
    int64_t kdims[TFM_CU_MAX_DIMS], kstr[TFM_CU_MAX_DIMS];
    int64_t rdims[TFM_CU_MAX_DIMS], rstr[TFM_CU_MAX_DIMS];
    int64_t nout, count;
    int64_t divisor;          /* Mean's: the elements per output */
};

template <typename T>
__device__ __forceinline__ T
identity(int kind)
{
    switch (kind) {
    case 2: return (T)-INFINITY;
    case 3: return (T)INFINITY;
    case 4: return (T)1;
    default: return (T)0;
    }
}

template <typename T>
__device__ __forceinline__ T
combine(int kind, T a, T b)
{
    switch (kind) {
    case 2: return (a != a || a > b) ? a : b;
    case 3: return (a != a || a < b) ? a : b;
    case 4: return a * b;
    default: return a + b;
    }
}

__device__ __forceinline__ int64_t
offset(int64_t i, int nd, const int64_t *dims, const int64_t *str)
{
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t k = i % dims[d];
        i /= dims[d];
        off += k * str[d];
    }
    return off;
}

template <typename T>
__device__ __forceinline__ T
finish(int kind, T acc, int64_t divisor)
{
    return kind == 1 ? acc / (T)divisor : acc;
}

template <typename T>
__global__ void
k_reduce_thread(int kind, const T *__restrict__ x, T *__restrict__ o,
                red_plan p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
         i < p.nout; i += (int64_t)gridDim.x * blockDim.x) {
        const T *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
        T acc = identity<T>(kind);
        for (int64_t r = 0; r < p.count; r++)
            acc = combine(kind, acc,
                          base[offset(r, p.nred, p.rdims, p.rstr)]);
        o[i] = finish(kind, acc, p.divisor);
    }
}

const int BLOCK = 256;

/* Block b reduces chunk b % chunks (per elements) of output
 * b / chunks into o[b]; final: finished (Mean divided), else a partial
 * for a second pass. */
template <typename T>
__global__ void
k_reduce_block(int kind, const T *__restrict__ x, T *__restrict__ o,
               red_plan p, int64_t chunks, int64_t per, int final)
{
    __shared__ T part[BLOCK];
    for (int64_t b = blockIdx.x; b < p.nout * chunks; b += gridDim.x) {
        int64_t i = b / chunks, lo = (b % chunks) * per;
        int64_t hi = lo + per < p.count ? lo + per : p.count;
        const T *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
        T acc = identity<T>(kind);
        /* The innermost reduced dim contiguous (the common case): no
         * index arithmetic per element. */
        if (p.nred == 1 && p.rstr[0] == 1) {
            for (int64_t r = lo + threadIdx.x; r < hi; r += BLOCK)
                acc = combine(kind, acc, base[r]);
        } else {
            for (int64_t r = lo + threadIdx.x; r < hi; r += BLOCK)
                acc = combine(kind, acc,
                              base[offset(r, p.nred, p.rdims, p.rstr)]);
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w)
                part[threadIdx.x] = combine(kind, part[threadIdx.x],
                                            part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0)
            o[b] = final ? finish(kind, part[0], p.divisor) : part[0];
        __syncthreads();
    }
}

template <typename T>
int
reduce(int kind, const void *x, void *o, const red_plan &p, cudaStream_t s)
{
    if (p.nout == 0)
        return 0;
    if (p.count < 64 || p.nout >= 4096 * 32) {
        int64_t b = (p.nout + BLOCK - 1) / BLOCK;
        unsigned g = (unsigned)(b > 65535 * 4 ? 65535 * 4 : b);
        k_reduce_thread<T><<<g, BLOCK, 0, s>>>(kind, (const T *)x, (T *)o, p);
        return (int)cudaGetLastError();
    }
    int64_t chunks = 1;
    if (p.count >= 65536 && p.nout < 512) {
        chunks = (p.count + 32767) / 32768;
        int64_t most = 1024 / p.nout;
        chunks = chunks < most ? chunks : most;
    }
    int64_t per = (p.count + chunks - 1) / chunks, blocks = p.nout * chunks;
    unsigned g = (unsigned)(blocks > 65535 * 4 ? 65535 * 4 : blocks);
    if (chunks == 1) {
        k_reduce_block<T><<<g, BLOCK, 0, s>>>(kind, (const T *)x, (T *)o, p,
                                              1, per, 1);
        return (int)cudaGetLastError();
    }
    T *partial = NULL;
    cudaError_t e = cudaMallocAsync((void **)&partial,
                                    (size_t)blocks * sizeof(T), s);
    if (e != cudaSuccess)
        return (int)e;
    k_reduce_block<T><<<g, BLOCK, 0, s>>>(kind, (const T *)x, partial, p,
                                          chunks, per, 0);
    /* Pass two: output i's partials are partial[i * chunks ...]. */
    red_plan q = p;
    q.nkeep = 1;
    q.kdims[0] = p.nout;
    q.kstr[0] = chunks;
    q.nred = 1;
    q.rdims[0] = chunks;
    q.rstr[0] = 1;
    q.count = chunks;
    k_reduce_block<T><<<(unsigned)p.nout, BLOCK, 0, s>>>(
        kind, partial, (T *)o, q, 1, chunks, 1);
    e = cudaGetLastError();
    cudaFreeAsync(partial, s);
    return (int)e;
}

} // namespace

extern "C" int
tfm_cu_reduce(int kind, int is64, const void *x, void *o, int nkeep,
              const int64_t *kdims, const int64_t *kstr, int nred,
              const int64_t *rdims, const int64_t *rstr, void *stream)
{
    if (nkeep > TFM_CU_MAX_DIMS || nred > TFM_CU_MAX_DIMS || kind < 0 ||
        kind > 4)
        return -1;
    red_plan p;
    p.nkeep = nkeep;
    p.nred = nred;
    p.nout = 1;
    p.count = 1;
    for (int d = 0; d < nkeep; d++) {
        p.kdims[d] = kdims[d];
        p.kstr[d] = kstr[d];
        p.nout *= kdims[d];
    }
    for (int d = 0; d < nred; d++) {
        p.rdims[d] = rdims[d];
        p.rstr[d] = rstr[d];
        p.count *= rdims[d];
    }
    p.divisor = p.count;
    cudaStream_t s = (cudaStream_t)stream;
    return is64 ? reduce<double>(kind, x, o, p, s)
                : reduce<float>(kind, x, o, p, s);
}
