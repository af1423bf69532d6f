// _LayerNorm, _LayerNormGrad and _SoftmaxGrad on the GPU, mirroring
// cpu/norm.c: a block per row (per slice for the softmax gradient), the
// row's sums reduced across the block in double, so they round at least
// as well as the CPU's. dgamma and dbeta are column sums over rows
// (col_sums.h), from each row's mean and 1/stddev kept by the dx pass.
// float16 and bfloat16 compute in float32 and round once when stored
// (half_elt.cuh), as the CPU's float32 kernel between casts; the column
// sums round from double straight to the 16-bit type.
#include <cuda_runtime.h>
#include <math.h>

#include "col_sums.h"
#include "half_elt.cuh"
#include "launch.h"
#include "launch_fused.h"

namespace {

const int THREADS = 256;

// Sum of v over the block; every thread gets it.
__device__ double
block_sum(double v)
{
    __shared__ double sh[32];
    __shared__ double res;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();            // sh and res free from the last call
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = lane < nw ? sh[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0)
        res = v;
    __syncthreads();
    return res;
}

// A row's (a slice's) work in phases between the block's sums, each for
// thread t of nt over elements t, t + nt, ...: host and device, so that
// tests/test_half_cuda_host.py runs them.

// Mean and 1/sqrt(var + eps) of one row in two passes, as the CPU's:
// thread t's part of the sum, then of the squared deviations.
template <typename S>
__host__ __device__ double
part_sum(const S *x, int64_t n, int t, int nt)
{
    double s = 0;
    for (int64_t i = t; i < n; i += nt)
        s += (double)tfm_widen(x[i]);
    return s;
}

template <typename S, typename A>
__host__ __device__ double
part_sq(const S *x, int64_t n, A m, int t, int nt)
{
    double q = 0;
    for (int64_t i = t; i < n; i += nt) {
        double d = (double)(tfm_widen(x[i]) - m);
        q += d * d;
    }
    return q;
}

template <typename A>
__host__ __device__ A
rstd_of(double q, int64_t n, double eps)
{
    return (A)(1.0 / sqrt(q / (double)n + eps));
}

template <typename S, typename A>
__host__ __device__ void
layer_norm_write(const S *x, const S *g, const S *b, S *y, int64_t n, A mu,
                 A rs, int t, int nt)
{
    for (int64_t i = t; i < n; i += nt)
        y[i] = tfm_narrow<S>((tfm_widen(x[i]) - mu) * rs * tfm_widen(g[i]) +
                             tfm_widen(b[i]));
}

// dx = rs * (v - mean(v) - xh * mean(v * xh)), v = gamma * dy, as the
// CPU's: thread t's parts of the sums of v and v * xh, then dx.
template <typename S, typename A>
__host__ __device__ void
ln_grad_parts(const S *dy, const S *x, const S *g, int64_t n, A mu, A rs,
              int t, int nt, double *sv, double *svx)
{
    *sv = *svx = 0;
    for (int64_t i = t; i < n; i += nt) {
        A xh = (tfm_widen(x[i]) - mu) * rs;
        A v = tfm_widen(g[i]) * tfm_widen(dy[i]);
        *sv += (double)v;
        *svx += (double)(v * xh);
    }
}

template <typename S, typename A>
__host__ __device__ void
ln_grad_write(const S *dy, const S *x, const S *g, S *dx, int64_t n, A mu,
              A rs, A mv, A mvx, int t, int nt)
{
    for (int64_t i = t; i < n; i += nt) {
        A xh = (tfm_widen(x[i]) - mu) * rs;
        dx[i] = tfm_narrow<S>(
            rs * (tfm_widen(g[i]) * tfm_widen(dy[i]) - mv - xh * mvx));
    }
}

template <typename S>
__host__ __device__ double
softmax_grad_part(const S *y, const S *dy, int64_t n, int64_t st, int t,
                  int nt)
{
    double acc = 0;
    for (int64_t i = t; i < n; i += nt)
        acc += (double)(tfm_widen(dy[i * st]) * tfm_widen(y[i * st]));
    return acc;
}

template <typename S, typename A>
__host__ __device__ void
softmax_grad_write(const S *y, const S *dy, S *dx, int64_t n, int64_t st,
                   A dot, int t, int nt)
{
    for (int64_t i = t; i < n; i += nt)
        dx[i * st] = tfm_narrow<S>(tfm_widen(y[i * st]) *
                                   (tfm_widen(dy[i * st]) - dot));
}

template <typename S>
__device__ void
row_stats(const S *x, int64_t n, double eps, typename tfm_math<S>::type *mu,
          typename tfm_math<S>::type *rs)
{
    typedef typename tfm_math<S>::type A;
    int t = threadIdx.x, nt = blockDim.x;
    A m = (A)(block_sum(part_sum(x, n, t, nt)) / (double)n);
    *mu = m;
    *rs = rstd_of<A>(block_sum(part_sq(x, n, m, t, nt)), n, eps);
}

template <typename S>
__global__ void
k_layer_norm(const S *__restrict__ x, const S *__restrict__ g,
             const S *__restrict__ b, S *__restrict__ y, int64_t rows,
             int64_t n, double eps)
{
    typedef typename tfm_math<S>::type A;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        A mu, rs;
        row_stats(x + r * n, n, eps, &mu, &rs);
        layer_norm_write(x + r * n, g, b, y + r * n, n, mu, rs,
                         (int)threadIdx.x, (int)blockDim.x);
    }
}

// Each row's (mean, rs) go to stats for the column sums.
template <typename S>
__global__ void
k_layer_norm_dx(const S *__restrict__ dy, const S *__restrict__ x,
                const S *__restrict__ g, S *__restrict__ dx,
                double *__restrict__ stats, int64_t rows, int64_t n,
                double eps)
{
    typedef typename tfm_math<S>::type A;
    int t = threadIdx.x, nt = blockDim.x;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const S *xr = x + r * n, *gr = dy + r * n;
        A mu, rs;
        row_stats(xr, n, eps, &mu, &rs);
        double sv, svx;
        ln_grad_parts(gr, xr, g, n, mu, rs, t, nt, &sv, &svx);
        A mv = (A)(block_sum(sv) / (double)n);
        A mvx = (A)(block_sum(svx) / (double)n);
        ln_grad_write(gr, xr, g, dx + r * n, n, mu, rs, mv, mvx, t, nt);
        if (t == 0) {
            stats[2 * r] = (double)mu;
            stats[2 * r + 1] = (double)rs;
        }
    }
}

// dy * xhat at (r, c), for dgamma's column sums.
template <typename S>
struct DyXhat {
    const S *dy, *x;
    const double *stats;
    int64_t n;
    __host__ __device__ typename tfm_math<S>::type
    operator()(int64_t r, int64_t c) const
    {
        typedef typename tfm_math<S>::type A;
        A mu = (A)stats[2 * r], rs = (A)stats[2 * r + 1];
        return tfm_widen(dy[r * n + c]) * ((tfm_widen(x[r * n + c]) - mu) *
                                           rs);
    }
};

// Element (r, c) of a row-major [rows, n] matrix, widened: dbeta's.
template <typename S>
struct Rows {
    const S *p;
    int64_t n;
    __host__ __device__ typename tfm_math<S>::type
    operator()(int64_t r, int64_t c) const
    {
        return tfm_widen(p[r * n + c]);
    }
};

template <typename S>
__global__ void
k_softmax_grad(const S *__restrict__ y, const S *__restrict__ dy,
               S *__restrict__ dx, int64_t slices, int64_t n, int64_t inner)
{
    typedef typename tfm_math<S>::type A;
    int t = threadIdx.x, nt = blockDim.x;
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t base = (s / inner) * n * inner + s % inner;
        A dot = (A)block_sum(softmax_grad_part(y + base, dy + base, n, inner,
                                               t, nt));
        softmax_grad_write(y + base, dy + base, dx + base, n, inner, dot, t,
                           nt);
    }
}

unsigned
grid_for(int64_t rows)
{
    return (unsigned)(rows < 1 ? 1 : rows > 65535 * 8 ? 65535 * 8 : rows);
}

int
threads_for(int64_t n)
{
    int t = 32;
    while (t < THREADS && t < n)
        t <<= 1;
    return t;
}

template <typename S>
int
layer_norm(const void *x, const void *g, const void *b, void *y,
           int64_t rows, int64_t n, double eps, cudaStream_t s)
{
    k_layer_norm<<<grid_for(rows), threads_for(n), 0, s>>>(
        (const S *)x, (const S *)g, (const S *)b, (S *)y, rows, n, eps);
    return (int)cudaGetLastError();
}

template <typename S>
int
layer_norm_grad(const void *dy_, const void *x_, const void *g_, void *dx,
                void *dg, void *db, int64_t rows, int64_t n, double eps,
                double *stats, cudaStream_t s)
{
    const S *dy = (const S *)dy_, *x = (const S *)x_, *g = (const S *)g_;
    if (rows > 0)
        k_layer_norm_dx<<<grid_for(rows), threads_for(n), 0, s>>>(
            dy, x, g, (S *)dx, stats, rows, n, eps);
    tfm_col_sums(DyXhat<S>{dy, x, stats, n}, (S *)dg, rows, n, s);
    tfm_col_sums(Rows<S>{dy, n}, (S *)db, rows, n, s);
    return (int)cudaGetLastError();
}

template <typename S>
int
softmax_grad(const void *y, const void *dy, void *dx, int64_t slices,
             int64_t n, int64_t inner, cudaStream_t s)
{
    k_softmax_grad<<<grid_for(slices), threads_for(n), 0, s>>>(
        (const S *)y, (const S *)dy, (S *)dx, slices, n, inner);
    return (int)cudaGetLastError();
}

}  // namespace

// ty (launch_fused.h's is64): TFM_CU_F32, _F64, _F16 or _BF16.
#define BY_TYPE(ty, CALL)                                                    \
    switch (ty) {                                                            \
    case TFM_CU_F32: return CALL(float);                                     \
    case TFM_CU_F64: return CALL(double);                                    \
    case TFM_CU_F16: return CALL(__half);                                    \
    case TFM_CU_BF16: return CALL(__nv_bfloat16);                            \
    default: return -1;                                                      \
    }

extern "C" int
tfm_cu_layer_norm(int ty, const void *x, const void *g, const void *b,
                  void *y, int64_t rows, int64_t n, double eps, void *stream)
{
    if (rows == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) layer_norm<S>(x, g, b, y, rows, n, eps, s)
    BY_TYPE(ty, CALL)
#undef CALL
}

extern "C" int
tfm_cu_layer_norm_grad(int ty, const void *dy, const void *x,
                       const void *g, void *dx, void *dg, void *db,
                       int64_t rows, int64_t n, double eps, double *stats,
                       void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) layer_norm_grad<S>(dy, x, g, dx, dg, db, rows, n, eps, \
                                   stats, s)
    BY_TYPE(ty, CALL)
#undef CALL
}

extern "C" int
tfm_cu_softmax_grad(int ty, const void *y, const void *dy, void *dx,
                    int64_t outer, int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define CALL(S) softmax_grad<S>(y, dy, dx, slices, n, inner, s)
    BY_TYPE(ty, CALL)
#undef CALL
}
