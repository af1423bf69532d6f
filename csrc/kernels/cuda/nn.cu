// Softmax, LogSoftmax and the two cross entropies on the GPU: one block
// per slice (the elements along the op's axis, `inner` apart), the max
// and the sum of exps reduced across the block. The sum is kept in double
// as the CPU kernels (cpu/nn.c) keep it, so both round alike.
//
// A sparse label outside [0, classes) gives NaN loss and backprop rows,
// as TF's GPU kernel does (its CPU kernel raises; checking here would
// need the labels on the host, a copy and a wait per call).
#include <cuda_runtime.h>
#include <math.h>

#include "launch.h"

namespace {

const int THREADS = 256;

__device__ inline float ex(float x) { return expf(x); }
__device__ inline double ex(double x) { return exp(x); }

struct Max {
    template <typename T>
    __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};
struct Add {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};

// Block-wide reduction of v by op, from `none` (every thread gets the
// result): across each warp by shuffles, then across the warps' firsts.
template <typename T, typename Op>
__device__ T
block_reduce(T v, T none, Op op)
{
    __shared__ T sh[32];
    __shared__ T res;
    for (int o = 16; o > 0; o >>= 1)
        v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = lane < nw ? sh[lane] : none;
    for (int o = 16; o > 0; o >>= 1)
        v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0)
        res = v;
    __syncthreads();
    return res;
}

template <typename T>
__device__ T
block_max(T v)
{
    return block_reduce(v, (T)-INFINITY, Max());
}

__device__ double
block_sum(double v)
{
    return block_reduce(v, 0.0, Add());
}

__device__ inline int64_t
base_of(int64_t s, int64_t n, int64_t inner)
{
    return (s / inner) * n * inner + s % inner;
}

// NaN-propagating max, as the CPU's `x > m ? x : m` from -inf is not:
// that one skips NaN; here too (comparisons with NaN are false).
template <typename T>
__device__ T
slice_max(const T *xs, int64_t n, int64_t st)
{
    T m = (T)-INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        m = xs[i * st] > m ? xs[i * st] : m;
    return block_max(m);
}

template <typename T>
__global__ void
k_softmax(const T *__restrict__ x, T *__restrict__ y, int64_t slices,
          int64_t n, int64_t inner, int take_log)
{
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t b = base_of(s, n, inner);
        const T *xs = x + b;
        T *ys = y + b;
        T m = slice_max(xs, n, inner);
        double acc = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            acc += (double)ex(xs[i * inner] - m);
        double sum = block_sum(acc);
        if (take_log) {
            T ls = (T)log(sum);
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
                ys[i * inner] = (xs[i * inner] - m) - ls;
        } else {
            T inv = (T)(1.0 / sum);
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
                ys[i * inner] = ex(xs[i * inner] - m) * inv;
        }
    }
}

template <typename T, typename L>
__global__ void
k_sparse_xent(const T *__restrict__ x, const L *__restrict__ lab,
              T *__restrict__ loss, T *__restrict__ back, int64_t rows,
              int64_t n)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xs = x + r * n;
        T *bs = back + r * n;
        int64_t label = (int64_t)lab[r];
        if (label < 0 || label >= n) {
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
                bs[i] = (T)NAN;
            if (threadIdx.x == 0)
                loss[r] = (T)NAN;
            continue;
        }
        T m = slice_max(xs, n, (int64_t)1);
        double acc = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            acc += (double)ex(xs[i] - m);
        double sum = block_sum(acc);
        T inv = (T)(1.0 / sum);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            bs[i] = ex(xs[i] - m) * inv - (i == label ? (T)1 : (T)0);
        if (threadIdx.x == 0)
            loss[r] = (T)(log(sum) - (double)(xs[label] - m));
    }
}

template <typename T>
__global__ void
k_xent(const T *__restrict__ x, const T *__restrict__ lab,
       T *__restrict__ loss, T *__restrict__ back, int64_t slices,
       int64_t n, int64_t inner)
{
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t b = base_of(s, n, inner);
        const T *xs = x + b, *ls = lab + b;
        T *bs = back + b;
        T m = slice_max(xs, n, inner);
        double acc = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            acc += (double)ex(xs[i * inner] - m);
        double sum = block_sum(acc);
        double lse = log(sum);
        T inv = (T)(1.0 / sum);
        double part = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T xi = xs[i * inner], li = ls[i * inner];
            part += (double)li * (lse - (double)(xi - m));
            bs[i * inner] = ex(xi - m) * inv - li;
        }
        double tot = block_sum(part);
        if (threadIdx.x == 0)
            loss[s] = (T)tot;
    }
}

unsigned
grid_for(int64_t slices)
{
    return (unsigned)(slices < 1 ? 1 : slices > 65535 * 8 ? 65535 * 8
                                                          : slices);
}

int
threads_for(int64_t n)
{
    // Enough warps to cover a short slice, never fewer than one.
    int t = 32;
    while (t < THREADS && t < n)
        t <<= 1;
    return t;
}

}  // namespace

extern "C" int
tfm_cu_softmax(int is64, int take_log, const void *x, void *y,
               int64_t outer, int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        k_softmax<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const double *)x, (double *)y, slices, n, inner, take_log);
    else
        k_softmax<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const float *)x, (float *)y, slices, n, inner, take_log);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_sparse_xent(int is64, int label64, const void *x, const void *lab,
                   void *loss, void *back, int64_t rows, int64_t n,
                   void *stream)
{
    if (rows == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned g = grid_for(rows);
    int t = threads_for(n);
#define SX(T, L) k_sparse_xent<<<g, t, 0, s>>>((const T *)x, (const L *)lab, \
                                               (T *)loss, (T *)back, rows, n)
    if (is64 && label64) SX(double, long long);
    else if (is64) SX(double, int);
    else if (label64) SX(float, long long);
    else SX(float, int);
#undef SX
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_xent(int is64, const void *x, const void *lab, void *loss, void *back,
            int64_t outer, int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return (int)cudaMemsetAsync(loss, 0,
                                    (size_t)slices * (is64 ? 8 : 4), s);
    if (is64)
        k_xent<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const double *)x, (const double *)lab, (double *)loss,
            (double *)back, slices, n, inner);
    else
        k_xent<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const float *)x, (const float *)lab, (float *)loss,
            (float *)back, slices, n, inner);
    return (int)cudaGetLastError();
}
