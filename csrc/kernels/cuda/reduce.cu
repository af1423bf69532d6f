/* Sum, Mean, Max, Min and Prod over any set of axes, float32/float64.
 * The C glue (kernels.c) splits x's dims into kept ones (the output's)
 * and reduced ones, each with x's strides. Few reduced elements per
 * output: a thread per output. Many: a block per output, its threads
 * striding over the reduced elements, then a tree in shared memory.
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
finish(int kind, T acc, int64_t count)
{
    return kind == 1 ? acc / (T)count : acc;
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
        o[i] = finish(kind, acc, p.count);
    }
}

const int BLOCK = 256;

template <typename T>
__global__ void
k_reduce_block(int kind, const T *__restrict__ x, T *__restrict__ o,
               red_plan p)
{
    __shared__ T part[BLOCK];
    for (int64_t i = blockIdx.x; i < p.nout; i += gridDim.x) {
        const T *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
        T acc = identity<T>(kind);
        /* The innermost reduced dim contiguous (the common case): no
         * index arithmetic per element. */
        if (p.nred == 1 && p.rstr[0] == 1) {
            for (int64_t r = threadIdx.x; r < p.count; r += BLOCK)
                acc = combine(kind, acc, base[r]);
        } else {
            for (int64_t r = threadIdx.x; r < p.count; r += BLOCK)
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
            o[i] = finish(kind, part[0], p.count);
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
    } else {
        unsigned g = (unsigned)(p.nout > 65535 * 4 ? 65535 * 4 : p.nout);
        k_reduce_block<T><<<g, BLOCK, 0, s>>>(kind, (const T *)x, (T *)o, p);
    }
    return (int)cudaGetLastError();
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
    cudaStream_t s = (cudaStream_t)stream;
    return is64 ? reduce<double>(kind, x, o, p, s)
                : reduce<float>(kind, x, o, p, s);
}
