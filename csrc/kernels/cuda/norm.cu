// _LayerNorm, _LayerNormGrad and _SoftmaxGrad on the GPU, mirroring
// cpu/norm.c: a block per row (per slice for the softmax gradient), the
// row's sums reduced across the block in double, so they round at least
// as well as the CPU's. dgamma and dbeta are column sums over rows
// (col_sums.h), from each row's mean and 1/stddev kept by the dx pass.
#include <cuda_runtime.h>
#include <math.h>

#include "col_sums.h"
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

// Mean and 1/sqrt(var + eps) of one row: two passes, as the CPU's.
template <typename T>
__device__ void
row_stats(const T *x, int64_t n, double eps, T *mu, T *rs)
{
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        s += (double)x[i];
    T m = (T)(block_sum(s) / (double)n);
    double q = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        double d = (double)(x[i] - m);
        q += d * d;
    }
    *mu = m;
    *rs = (T)(1.0 / sqrt(block_sum(q) / (double)n + eps));
}

template <typename T>
__global__ void
k_layer_norm(const T *__restrict__ x, const T *__restrict__ g,
             const T *__restrict__ b, T *__restrict__ y, int64_t rows,
             int64_t n, double eps)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n;
        T *yr = y + r * n;
        T mu, rs;
        row_stats(xr, n, eps, &mu, &rs);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            yr[i] = (xr[i] - mu) * rs * g[i] + b[i];
    }
}

// dx = rs * (v - mean(v) - xh * mean(v * xh)), v = gamma * dy, as the
// CPU's; each row's (mean, rs) go to stats for the column sums.
template <typename T>
__global__ void
k_layer_norm_dx(const T *__restrict__ dy, const T *__restrict__ x,
                const T *__restrict__ g, T *__restrict__ dx,
                double *__restrict__ stats, int64_t rows, int64_t n,
                double eps)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n, *gr = dy + r * n;
        T *dr = dx + r * n;
        T mu, rs;
        row_stats(xr, n, eps, &mu, &rs);
        double sv = 0, svx = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T xh = (xr[i] - mu) * rs, v = g[i] * gr[i];
            sv += (double)v;
            svx += (double)(v * xh);
        }
        T mv = (T)(block_sum(sv) / (double)n);
        T mvx = (T)(block_sum(svx) / (double)n);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T xh = (xr[i] - mu) * rs;
            dr[i] = rs * (g[i] * gr[i] - mv - xh * mvx);
        }
        if (threadIdx.x == 0) {
            stats[2 * r] = (double)mu;
            stats[2 * r + 1] = (double)rs;
        }
    }
}

// dy * xhat at (r, c), for dgamma's column sums.
template <typename T>
struct DyXhat {
    const T *dy, *x;
    const double *stats;
    int64_t n;
    __device__ T operator()(int64_t r, int64_t c) const
    {
        T mu = (T)stats[2 * r], rs = (T)stats[2 * r + 1];
        return dy[r * n + c] * ((x[r * n + c] - mu) * rs);
    }
};

template <typename T>
__global__ void
k_softmax_grad(const T *__restrict__ y, const T *__restrict__ dy,
               T *__restrict__ dx, int64_t slices, int64_t n, int64_t inner)
{
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
        int64_t base = (s / inner) * n * inner + s % inner;
        const T *ys = y + base, *gs = dy + base;
        T *xs = dx + base;
        double acc = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            acc += (double)(gs[i * inner] * ys[i * inner]);
        T t = (T)block_sum(acc);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            xs[i * inner] = ys[i * inner] * (gs[i * inner] - t);
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

template <typename T>
void
layer_norm_grad(const T *dy, const T *x, const T *g, T *dx, T *dg, T *db,
                int64_t rows, int64_t n, double eps, double *stats,
                cudaStream_t s)
{
    if (rows > 0)
        k_layer_norm_dx<<<grid_for(rows), threads_for(n), 0, s>>>(
            dy, x, g, dx, stats, rows, n, eps);
    tfm_col_sums(DyXhat<T>{dy, x, stats, n}, dg, rows, n, s);
    tfm_col_sums(tfm_cu_rows<T>{dy, n}, db, rows, n, s);
}

}  // namespace

extern "C" int
tfm_cu_layer_norm(int is64, const void *x, const void *g, const void *b,
                  void *y, int64_t rows, int64_t n, double eps, void *stream)
{
    if (rows == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        k_layer_norm<<<grid_for(rows), threads_for(n), 0, s>>>(
            (const double *)x, (const double *)g, (const double *)b,
            (double *)y, rows, n, eps);
    else
        k_layer_norm<<<grid_for(rows), threads_for(n), 0, s>>>(
            (const float *)x, (const float *)g, (const float *)b,
            (float *)y, rows, n, eps);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_layer_norm_grad(int is64, const void *dy, const void *x,
                       const void *g, void *dx, void *dg, void *db,
                       int64_t rows, int64_t n, double eps, double *stats,
                       void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        layer_norm_grad((const double *)dy, (const double *)x,
                        (const double *)g, (double *)dx, (double *)dg,
                        (double *)db, rows, n, eps, stats, s);
    else
        layer_norm_grad((const float *)dy, (const float *)x,
                        (const float *)g, (float *)dx, (float *)dg,
                        (float *)db, rows, n, eps, stats, s);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_softmax_grad(int is64, const void *y, const void *dy, void *dx,
                    int64_t outer, int64_t n, int64_t inner, void *stream)
{
    int64_t slices = outer * inner;
    if (slices == 0 || n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        k_softmax_grad<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const double *)y, (const double *)dy, (double *)dx, slices, n,
            inner);
    else
        k_softmax_grad<<<grid_for(slices), threads_for(n), 0, s>>>(
            (const float *)y, (const float *)dy, (float *)dx, slices, n,
            inner);
    return (int)cudaGetLastError();
}
