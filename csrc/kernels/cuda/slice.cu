// The GPU's strided scatter (StridedSliceGrad, PadV2's interior) and
// ArgMax/ArgMin. The gathers (StridedSlice, Slice, ReverseV2, Tile) are
// shape.cu's strided gather; kernels_slice.c computes every view on the
// host from the CPU's own plans.
#include <cuda_runtime.h>
#include <stdint.h>

#include "launch.h"
#include "launch_ops.h"

namespace {

// 8-byte aligned, as shape.cu's: a complex128 destination may start at
// an odd 8-byte offset (a slice's first element).
struct b16 { uint64_t a, b; };

struct view {
    int ndim;
    int64_t dims[TFM_CU_MAX_DIMS];
    int64_t st[TFM_CU_MAX_DIMS];     // destination step of each dim
};

// Element i of the dense source lands at sum(k_d * st[d]): the view's
// positions are distinct (a slice or an interior), so no two threads
// write one element.
template <typename E>
__global__ void
k_scatter(const E *__restrict__ x, E *__restrict__ o, int64_t n, view v)
{
    TFM_CU_GRID_STRIDE(i, n) {
        int64_t r = i, at = 0;
        for (int d = v.ndim - 1; d >= 0; d--) {
            int64_t k = r % v.dims[d];
            r /= v.dims[d];
            at += k * v.st[d];
        }
        o[at] = x[i];
    }
}

template <typename E>
int
scatter_as(const void *x, void *o, int64_t n, const view &v, cudaStream_t s)
{
    k_scatter<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        (const E *)x, (E *)o, n, v);
    return (int)cudaGetLastError();
}

// cpu/reduce_arg.c's rule: a value replaces the best so far when it is
// larger (smaller), or a NaN over a number; so the first NaN wins and
// ties keep the first index.
template <typename T>
__device__ inline bool
better(T v, T b, bool is_min)
{
    return (is_min ? v < b : v > b) || (v != v && b == b);
}

// One thread per output: x viewed as [A, R, B], a serial pass over R
// (the CPU's order, so the same index on ties and NaNs).
template <typename T, typename I>
__global__ void
k_argreduce(const T *__restrict__ x, I *__restrict__ o, int64_t A,
            int64_t R, int64_t B, bool is_min)
{
    TFM_CU_GRID_STRIDE(i, A * B) {
        int64_t a = i / B, b = i % B;
        const T *p = x + a * R * B + b;
        T best = p[0];
        int64_t at = 0;
        for (int64_t r = 1; r < R; r++) {
            T v = p[r * B];
            if (better(v, best, is_min)) {
                best = v;
                at = r;
            }
        }
        o[i] = (I)at;
    }
}

template <typename T>
int
argreduce_as(int wide, int is_min, const void *x, void *o, int64_t A,
             int64_t R, int64_t B, cudaStream_t s)
{
    unsigned nb = tfm_cu_blocks_for(A * B);
    if (wide)
        k_argreduce<<<nb, TFM_CU_THREADS, 0, s>>>(
            (const T *)x, (long long *)o, A, R, B, is_min != 0);
    else
        k_argreduce<<<nb, TFM_CU_THREADS, 0, s>>>(
            (const T *)x, (int *)o, A, R, B, is_min != 0);
    return (int)cudaGetLastError();
}

}  // namespace

extern "C" int
tfm_cu_strided_scatter(int es, const void *x, void *o, int ndim,
                       const int64_t *dims, const int64_t *dst_strides,
                       int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    if (ndim < 0 || ndim > TFM_CU_MAX_DIMS)
        return -1;
    view v;
    v.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        v.dims[d] = dims[d];
        v.st[d] = dst_strides[d];
    }
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: return scatter_as<uint8_t>(x, o, n, v, s);
    case 2: return scatter_as<uint16_t>(x, o, n, v, s);
    case 4: return scatter_as<uint32_t>(x, o, n, v, s);
    case 8: return scatter_as<uint64_t>(x, o, n, v, s);
    case 16: return scatter_as<b16>(x, o, n, v, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_argreduce(int is_min, int kind, int wide, const void *x, void *o,
                 int64_t A, int64_t R, int64_t B, void *stream)
{
    if (A * B == 0)
        return 0;
    if (R < 1)
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    switch (kind) {
    case TFM_CU_OUT_F32: return argreduce_as<float>(wide, is_min, x, o, A, R, B, s);
    case TFM_CU_OUT_F64: return argreduce_as<double>(wide, is_min, x, o, A, R, B, s);
    case TFM_CU_OUT_I32: return argreduce_as<int>(wide, is_min, x, o, A, R, B, s);
    case TFM_CU_OUT_I64: return argreduce_as<long long>(wide, is_min, x, o, A, R, B, s);
    default: return -1;
    }
}
