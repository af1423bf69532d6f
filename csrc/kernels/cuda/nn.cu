// Softmax, LogSoftmax and the two cross entropies on the GPU: one block
// per slice (the elements along the op's axis, `inner` apart), the max
// and the sum of exps reduced across the block. The sum is kept in double
// as the CPU kernels (cpu/nn.c) keep it, so both round alike. float16 and
// bfloat16 elements (logits, labels, outputs) compute as float32 and round
// once when stored (half_elt.cuh): the CPU's float32 kernel between casts.
//
// A sparse label outside [0, classes) gives NaN loss and backprop rows,
// as TF's GPU kernel does (its CPU kernel raises; checking here would
// need the labels on the host, a copy and a wait per call).
#include <cuda_runtime.h>
#include <math.h>

#include "half_elt.cuh"
#include "launch.h"

namespace {

const int THREADS = 256;

__host__ __device__ inline float ex(float x) { return expf(x); }
__host__ __device__ inline double ex(double x) { return exp(x); }

struct Max {
    template <typename T>
    __host__ __device__ T operator()(T a, T b) const
    {
        return b > a ? b : a;
    }
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

__host__ __device__ inline int64_t
base_of(int64_t s, int64_t n, int64_t inner)
{
    return (s / inner) * n * inner + s % inner;
}

// A slice's work in phases between the block's reductions, each for
// thread t of nt over elements t, t + nt, ... (st apart in memory):
// host and device, so that tests/test_half_cuda_host.py runs them.

// Thread t's part of the slice's max: NaN is skipped, as the CPU's
// `x > m ? x : m` from -inf skips it (comparisons with NaN are false).
template <typename S, typename A = typename tfm_math<S>::type>
__host__ __device__ A
part_max(const S *xs, int64_t n, int64_t st, int t, int nt)
{
    A m = (A)-INFINITY;
    for (int64_t i = t; i < n; i += nt)
        m = Max()(m, (A)tfm_widen(xs[i * st]));
    return m;
}

// Thread t's part of the sum of exp(x - m), in double as the CPU's.
template <typename S, typename A>
__host__ __device__ double
part_sum_exp(const S *xs, int64_t n, int64_t st, A m, int t, int nt)
{
    double acc = 0;
    for (int64_t i = t; i < n; i += nt)
        acc += (double)ex(tfm_widen(xs[i * st]) - m);
    return acc;
}

template <typename S, typename A>
__host__ __device__ void
softmax_write(const S *xs, S *ys, int64_t n, int64_t st, A m, double sum,
              int take_log, int t, int nt)
{
    if (take_log) {
        A ls = (A)log(sum);
        for (int64_t i = t; i < n; i += nt)
            ys[i * st] = tfm_narrow<S>((tfm_widen(xs[i * st]) - m) - ls);
    } else {
        A inv = (A)(1.0 / sum);
        for (int64_t i = t; i < n; i += nt)
            ys[i * st] = tfm_narrow<S>(ex(tfm_widen(xs[i * st]) - m) * inv);
    }
}

// A row whose label is outside [0, n): NaN loss and backprop.
template <typename S>
__host__ __device__ void
sparse_bad_write(S *bs, S *loss, int64_t n, int t, int nt)
{
    typedef typename tfm_math<S>::type A;
    for (int64_t i = t; i < n; i += nt)
        bs[i] = tfm_narrow<S>((A)NAN);
    if (t == 0)
        *loss = tfm_narrow<S>((A)NAN);
}

template <typename S, typename A>
__host__ __device__ void
sparse_write(const S *xs, S *bs, S *loss, int64_t n, int64_t label, A m,
             double sum, int t, int nt)
{
    A inv = (A)(1.0 / sum);
    for (int64_t i = t; i < n; i += nt)
        bs[i] = tfm_narrow<S>(ex(tfm_widen(xs[i]) - m) * inv -
                              (i == label ? (A)1 : (A)0));
    if (t == 0)
        *loss = tfm_narrow<S>(
            (A)(log(sum) - (double)(tfm_widen(xs[label]) - m)));
}

// Writes the backprop and returns thread t's part of the loss.
template <typename S, typename A>
__host__ __device__ double
xent_write(const S *xs, const S *ls, S *bs, int64_t n, int64_t st, A m,
           double sum, int t, int nt)
{
    double lse = log(sum);
    A inv = (A)(1.0 / sum);
    double part = 0;
    for (int64_t i = t; i < n; i += nt) {
        A xi = tfm_widen(xs[i * st]), li = tfm_widen(ls[i * st]);
        part += (double)li * (lse - (double)(xi - m));
        bs[i * st] = tfm_narrow<S>(ex(xi - m) * inv - li);
    }
    return part;
}

template <typename S>
__host__ __device__ S
xent_loss(double tot)
{
    return tfm_narrow<S>((typename tfm_math<S>::type)tot);
}

template <typename S>
__global__ void
k_softmax(const S *__restrict__ x, S *__restrict__ y, int64_t slices,
          int64_t n, int64_t inner, int take_log)
{
    int t = threadIdx.x, nt = blockDim.x;
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t b = base_of(s, n, inner);
        auto m = block_max(part_max(x + b, n, inner, t, nt));
        double sum = block_sum(part_sum_exp(x + b, n, inner, m, t, nt));
        softmax_write(x + b, y + b, n, inner, m, sum, take_log, t, nt);
    }
}

template <typename S, typename L>
__global__ void
k_sparse_xent(const S *__restrict__ x, const L *__restrict__ lab,
              S *__restrict__ loss, S *__restrict__ back, int64_t rows,
              int64_t n)
{
    int t = threadIdx.x, nt = blockDim.x;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const S *xs = x + r * n;
        int64_t label = (int64_t)lab[r];
        if (label < 0 || label >= n) {
            sparse_bad_write(back + r * n, loss + r, n, t, nt);
            continue;
        }
        auto m = block_max(part_max(xs, n, (int64_t)1, t, nt));
        double sum = block_sum(part_sum_exp(xs, n, (int64_t)1, m, t, nt));
        sparse_write(xs, back + r * n, loss + r, n, label, m, sum, t, nt);
    }
}

template <typename S>
__global__ void
k_xent(const S *__restrict__ x, const S *__restrict__ lab,
       S *__restrict__ loss, S *__restrict__ back, int64_t slices,
       int64_t n, int64_t inner)
{
    int t = threadIdx.x, nt = blockDim.x;
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t b = base_of(s, n, inner);
        auto m = block_max(part_max(x + b, n, inner, t, nt));
        double sum = block_sum(part_sum_exp(x + b, n, inner, m, t, nt));
        double tot = block_sum(xent_write(x + b, lab + b, back + b, n, inner,
                                          m, sum, t, nt));
        if (t == 0)
            loss[s] = xent_loss<S>(tot);
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

/* ty (launch.h's is64): TFM_CU_F32, _F64, _F16 or _BF16. */
template <typename S>
int
softmax(const void *x, void *y, int64_t slices, int64_t n, int64_t inner,
        int take_log, cudaStream_t s)
{
    k_softmax<<<grid_for(slices), threads_for(n), 0, s>>>(
        (const S *)x, (S *)y, slices, n, inner, take_log);
    return (int)cudaGetLastError();
}

template <typename S>
int
sparse_xent(int label64, const void *x, const void *lab, void *loss,
            void *back, int64_t rows, int64_t n, cudaStream_t s)
{
    unsigned g = grid_for(rows);
    int t = threads_for(n);
    if (label64)
        k_sparse_xent<<<g, t, 0, s>>>((const S *)x, (const long long *)lab,
                                      (S *)loss, (S *)back, rows, n);
    else
        k_sparse_xent<<<g, t, 0, s>>>((const S *)x, (const int *)lab,
                                      (S *)loss, (S *)back, rows, n);
    return (int)cudaGetLastError();
}

template <typename S>
int
xent(const void *x, const void *lab, void *loss, void *back, int64_t slices,
     int64_t n, int64_t inner, cudaStream_t s)
{
    if (n == 0)
        return (int)cudaMemsetAsync(loss, 0, (size_t)slices * sizeof(S), s);
    k_xent<<<grid_for(slices), threads_for(n), 0, s>>>(
        (const S *)x, (const S *)lab, (S *)loss, (S *)back, slices, n,
        inner);
    return (int)cudaGetLastError();
}

}  // namespace

#define BY_TYPE(ty, CALL)                                                    \
    switch (ty) {                                                            \
    case TFM_CU_F32: return CALL(float);                                     \
    case TFM_CU_F64: return CALL(double);                                    \
    case TFM_CU_F16: return CALL(__half);                                    \
    case TFM_CU_BF16: return CALL(__nv_bfloat16);                            \
    default: return -1;                                                      \
    }

extern "C" int
tfm_cu_softmax(int ty, int take_log, const void *x, void *y, int64_t outer,
               int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) softmax<S>(x, y, slices, n, inner, take_log, s)
    BY_TYPE(ty, CALL)
#undef CALL
}

extern "C" int
tfm_cu_sparse_xent(int ty, int label64, const void *x, const void *lab,
                   void *loss, void *back, int64_t rows, int64_t n,
                   void *stream)
{
    if (rows == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) sparse_xent<S>(label64, x, lab, loss, back, rows, n, s)
    BY_TYPE(ty, CALL)
#undef CALL
}

extern "C" int
tfm_cu_xent(int ty, const void *x, const void *lab, void *loss, void *back,
            int64_t outer, int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) xent<S>(x, lab, loss, back, slices, n, inner, s)
    BY_TYPE(ty, CALL)
#undef CALL
}
