// The GPU's strided scatter (StridedSliceGrad, PadV2's interior),
// ArgMax/ArgMin, Cumsum/Cumprod, OneHot and MirrorPad. The gathers (StridedSlice, Slice, ReverseV2, Tile) are
// shape.cu's strided gather; kernels_slice.c computes every view on the
// host from the CPU's own plans.
//
// Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
// launcher here uses; the 1 (one block an SM at least) keeps ptxas
// from trading registers for occupancy: the bound alone made it spill
// (k_pool_grad on sm_90, k_scan on sm_80).
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
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
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
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
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

// cpu/scan.c's order: one thread per column walks R serially, floats
// accumulating in double and integers in uint64 (wrapping), so every
// output equals the CPU's bit for bit.
template <typename T, typename AT>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_scan(const T *__restrict__ x, T *__restrict__ y, int64_t A, int64_t R,
       int64_t B, bool prod, bool excl, bool rev)
{
    TFM_CU_GRID_STRIDE(i, A * B) {
        int64_t a = i / B, b = i % B;
        int64_t step = rev ? -B : B, o = a * R * B + b + (rev ? (R - 1) * B : 0);
        AT acc = prod ? (AT)1 : (AT)0;
        for (int64_t k = 0; k < R; k++, o += step) {
            AT v = (AT)x[o];
            if (excl)
                y[o] = (T)acc;
            acc = prod ? acc * v : acc + v;
            if (!excl)
                y[o] = (T)acc;
        }
    }
}

template <typename T, typename AT>
int
scan_as(const void *x, void *y, int64_t A, int64_t R, int64_t B, int prod,
        int excl, int rev, cudaStream_t s)
{
    k_scan<T, AT><<<tfm_cu_blocks_for(A * B), TFM_CU_THREADS, 0, s>>>(
        (const T *)x, (T *)y, A, R, B, prod != 0, excl != 0, rev != 0);
    return (int)cudaGetLastError();
}

// OneHot's `on` writes over the off fill; an index outside [0, depth)
// leaves its row off (cpu/shape_fill.c). Each index owns its positions.
template <typename E, typename I>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_one_hot(const I *__restrict__ idx, const E *__restrict__ on,
          E *__restrict__ o, int64_t m, int64_t depth, int64_t suffix)
{
    TFM_CU_GRID_STRIDE(k, m) {
        int64_t v = (int64_t)idx[k];
        if (v >= 0 && v < depth)
            o[((k / suffix) * depth + v) * suffix + k % suffix] = *on;
    }
}

template <typename E>
int
one_hot_as(int idx64, const void *idx, const void *on, void *o, int64_t m,
           int64_t depth, int64_t suffix, cudaStream_t s)
{
    unsigned nb = tfm_cu_blocks_for(m);
    if (idx64)
        k_one_hot<<<nb, TFM_CU_THREADS, 0, s>>>(
            (const long long *)idx, (const E *)on, (E *)o, m, depth, suffix);
    else
        k_one_hot<<<nb, TFM_CU_THREADS, 0, s>>>(
            (const int *)idx, (const E *)on, (E *)o, m, depth, suffix);
    return (int)cudaGetLastError();
}

struct mirror {
    int ndim, symmetric;
    int64_t odims[TFM_CU_MAX_DIMS], idims[TFM_CU_MAX_DIMS];
    int64_t lo[TFM_CU_MAX_DIMS], ist[TFM_CU_MAX_DIMS];
};

// MirrorPad: each output element reads the input element it mirrors,
// reflected once per dim as cpu/shape_pad.c's mirror_index (the shape
// rule keeps every pad within one reflection).
template <typename E>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mirror_pad(const E *__restrict__ x, E *__restrict__ o, int64_t n,
             mirror m)
{
    TFM_CU_GRID_STRIDE(i, n) {
        int64_t r = i, at = 0;
        for (int d = m.ndim - 1; d >= 0; d--) {
            int64_t k = r % m.odims[d] - m.lo[d], len = m.idims[d];
            r /= m.odims[d];
            if (k < 0)
                k = m.symmetric ? -k - 1 : -k;
            else if (k >= len)
                k = m.symmetric ? 2 * len - 1 - k : 2 * len - 2 - k;
            at += k * m.ist[d];
        }
        o[i] = x[at];
    }
}

template <typename E>
int
mirror_as(const void *x, void *o, int64_t n, const mirror &m, cudaStream_t s)
{
    k_mirror_pad<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        (const E *)x, (E *)o, n, m);
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

extern "C" int
tfm_cu_scan(int prod, int kind, const void *x, void *y, int64_t A, int64_t R,
            int64_t B, int excl, int rev, void *stream)
{
    if (A * R * B == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (kind) {
    case TFM_CU_OUT_F32: return scan_as<float, double>(x, y, A, R, B, prod, excl, rev, s);
    case TFM_CU_OUT_F64: return scan_as<double, double>(x, y, A, R, B, prod, excl, rev, s);
    case TFM_CU_OUT_I32: return scan_as<int, unsigned long long>(x, y, A, R, B, prod, excl, rev, s);
    case TFM_CU_OUT_I64: return scan_as<long long, unsigned long long>(x, y, A, R, B, prod, excl, rev, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_one_hot(int es, int idx64, const void *idx, const void *on, void *o,
               int64_t m, int64_t depth, int64_t suffix, void *stream)
{
    if (m == 0 || depth == 0)
        return 0;
    if (suffix < 1)
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: return one_hot_as<uint8_t>(idx64, idx, on, o, m, depth, suffix, s);
    case 2: return one_hot_as<uint16_t>(idx64, idx, on, o, m, depth, suffix, s);
    case 4: return one_hot_as<uint32_t>(idx64, idx, on, o, m, depth, suffix, s);
    case 8: return one_hot_as<uint64_t>(idx64, idx, on, o, m, depth, suffix, s);
    case 16: return one_hot_as<b16>(idx64, idx, on, o, m, depth, suffix, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_mirror_pad(int es, int symmetric, const void *x, void *o, int ndim,
                  const int64_t *odims, const int64_t *idims,
                  const int64_t *lo, int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    if (ndim < 0 || ndim > TFM_CU_MAX_DIMS)
        return -1;
    mirror m;
    m.ndim = ndim;
    m.symmetric = symmetric != 0;
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (idims[d] < 1)
            return -1;
        m.odims[d] = odims[d];
        m.idims[d] = idims[d];
        m.lo[d] = lo[d];
        m.ist[d] = st;
        st *= idims[d];
    }
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: return mirror_as<uint8_t>(x, o, n, m, s);
    case 2: return mirror_as<uint16_t>(x, o, n, m, s);
    case 4: return mirror_as<uint32_t>(x, o, n, m, s);
    case 8: return mirror_as<uint64_t>(x, o, n, m, s);
    case 16: return mirror_as<b16>(x, o, n, m, s);
    default: return -1;
    }
}
