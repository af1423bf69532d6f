// TensorScatterAdd, Update, Min and Max on the GPU (cpu/
// shape_gather.c's tfm_k_scatter). The indices are checked first by
// their own kernel, whose flag the C glue reads back before anything is
// written: the output may be the input itself (the executor's in-place
// scatter), and a bad index must leave it untouched and raise the
// CPU's error. Inside a CUDA graph capture nothing is read back (Note
// [Index checks inside a CUDA graph capture], kernels_scatter.c), so
// the scatters run whatever the flag says: each skips a row with an
// index out of range rather than write outside the output. Adds are
// atomic, so repeated indices sum in no fixed order (floats may differ
// from the CPU's index-order sum in the last bits; integers are
// exact). Updates keep the CPU's rule, the last repeated index row
// wins: each slice's winning row is found first (atomicMax over row
// numbers), then only winners write. Mins and maxes
// are atomic too (a compare-and-swap loop for floats) and keep the CPU's
// rule, under which the order does not matter: an update wins only when
// strictly less (greater), so a NaN update never wins and a NaN already
// there stays. (Equal values of another bit pattern, -0.0 and 0.0 from
// repeated indices, may keep another one than the CPU's first.)
#include <cuda_runtime.h>
#include <stdint.h>

#include "launch.h"
#include "launch_index.h"
#include "launch_ops.h"
#include "nd_offset.cuh"

namespace {

// 8-byte aligned, as shape.cu's: a complex128 may start 8 bytes into
// a 16-byte line.
struct b16 { uint64_t a, b; };

template <typename I>
__global__ void
k_check(const I *idx, int64_t rows, tfm_cu_nd p, int *flag)
{
    TFM_CU_GRID_STRIDE(k, rows) {
        if (tfm_nd_offset(idx, k, p) < 0)
            *flag = 1;
    }
}

__device__ inline void add_to(float *a, float v) { atomicAdd(a, v); }
__device__ inline void add_to(double *a, double v) { atomicAdd(a, v); }
__device__ inline void
add_to(int32_t *a, int32_t v)
{
    atomicAdd((int *)a, (int)v);
}
// Two's complement: an unsigned 64-bit add is the int64 add.
__device__ inline void
add_to(int64_t *a, int64_t v)
{
    atomicAdd((unsigned long long *)a, (unsigned long long)v);
}

template <typename T, typename I>
__global__ void
k_add(const I *idx, const T *u, T *o, int64_t rows, int64_t len,
      tfm_cu_nd p)
{
    TFM_CU_GRID_STRIDE(i, rows * len) {
        int64_t k = i / len, j = i % len, at = tfm_nd_offset(idx, k, p);
        if (at >= 0)
            add_to(o + at * len + j, u[i]);
    }
}

// Whether update b replaces a (cpu/shape_gather.c's SCATTER_MIN/MAX).
template <typename T>
__host__ __device__ inline bool
wins(int is_max, T b, T a)
{
    return is_max ? b > a : b < a;
}

__device__ inline void
minmax_to(int is_max, int32_t *a, int32_t v)
{
    if (is_max)
        atomicMax((int *)a, (int)v);
    else
        atomicMin((int *)a, (int)v);
}

__device__ inline void
minmax_to(int is_max, int64_t *a, int64_t v)
{
    if (is_max)
        atomicMax((long long *)a, (long long)v);
    else
        atomicMin((long long *)a, (long long)v);
}

__device__ inline void
minmax_to(int is_max, float *a, float v)
{
    unsigned *p = (unsigned *)a, old = *(volatile unsigned *)p;
    while (wins(is_max, v, __uint_as_float(old))) {
        unsigned seen = atomicCAS(p, old, __float_as_uint(v));
        if (seen == old)
            break;
        old = seen;
    }
}

__device__ inline void
minmax_to(int is_max, double *a, double v)
{
    unsigned long long *p = (unsigned long long *)a;
    unsigned long long old = *(volatile unsigned long long *)p;
    while (wins(is_max, v, __longlong_as_double((long long)old))) {
        unsigned long long seen = atomicCAS(
            p, old, (unsigned long long)__double_as_longlong(v));
        if (seen == old)
            break;
        old = seen;
    }
}

template <typename T, typename I>
__global__ void
k_minmax(int is_max, const I *idx, const T *u, T *o, int64_t rows,
         int64_t len, tfm_cu_nd p)
{
    TFM_CU_GRID_STRIDE(i, rows * len) {
        int64_t k = i / len, j = i % len, at = tfm_nd_offset(idx, k, p);
        if (at >= 0)
            minmax_to(is_max, o + at * len + j, u[i]);
    }
}

template <typename T>
int
minmax_as(int is_max, int idx64, const void *idx, const void *u, void *o,
          int64_t rows, int64_t len, const tfm_cu_nd &p, cudaStream_t s)
{
    unsigned g = tfm_cu_blocks_for(rows * len);
    if (idx64)
        k_minmax<<<g, TFM_CU_THREADS, 0, s>>>(is_max, (const long long *)idx,
                                              (const T *)u, (T *)o, rows,
                                              len, p);
    else
        k_minmax<<<g, TFM_CU_THREADS, 0, s>>>(is_max, (const int *)idx,
                                              (const T *)u, (T *)o, rows,
                                              len, p);
    return (int)cudaGetLastError();
}

template <typename I>
__global__ void
k_winners(const I *idx, int64_t rows, tfm_cu_nd p, long long *win)
{
    TFM_CU_GRID_STRIDE(k, rows) {
        int64_t at = tfm_nd_offset(idx, k, p);
        if (at >= 0)
            atomicMax(win + at, (long long)k);
    }
}

template <typename E, typename I>
__global__ void
k_update(const I *idx, const E *u, E *o, int64_t rows, int64_t len,
         tfm_cu_nd p, const long long *win)
{
    TFM_CU_GRID_STRIDE(i, rows * len) {
        int64_t k = i / len, j = i % len, at = tfm_nd_offset(idx, k, p);
        if (at >= 0 && win[at] == k)
            o[at * len + j] = u[i];
    }
}

template <typename T>
int
add_as(int idx64, const void *idx, const void *u, void *o, int64_t rows,
       int64_t len, const tfm_cu_nd &p, cudaStream_t s)
{
    unsigned g = tfm_cu_blocks_for(rows * len);
    if (idx64)
        k_add<<<g, TFM_CU_THREADS, 0, s>>>((const long long *)idx,
                                           (const T *)u, (T *)o, rows, len,
                                           p);
    else
        k_add<<<g, TFM_CU_THREADS, 0, s>>>((const int *)idx, (const T *)u,
                                           (T *)o, rows, len, p);
    return (int)cudaGetLastError();
}

template <typename E>
int
update_as(int idx64, const void *idx, const void *u, void *o, int64_t rows,
          int64_t len, const tfm_cu_nd &p, const long long *win,
          cudaStream_t s)
{
    unsigned g = tfm_cu_blocks_for(rows * len);
    if (idx64)
        k_update<<<g, TFM_CU_THREADS, 0, s>>>((const long long *)idx,
                                              (const E *)u, (E *)o, rows,
                                              len, p, win);
    else
        k_update<<<g, TFM_CU_THREADS, 0, s>>>((const int *)idx,
                                              (const E *)u, (E *)o, rows,
                                              len, p, win);
    return (int)cudaGetLastError();
}

}  // namespace

extern "C" int
tfm_cu_scatter_check(int idx64, const void *idx, int64_t rows,
                     const tfm_cu_nd *p, int *flag, void *stream)
{
    if (rows == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (idx64)
        k_check<<<tfm_cu_blocks_for(rows), TFM_CU_THREADS, 0, s>>>(
            (const long long *)idx, rows, *p, flag);
    else
        k_check<<<tfm_cu_blocks_for(rows), TFM_CU_THREADS, 0, s>>>(
            (const int *)idx, rows, *p, flag);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_scatter_add(int kind, int idx64, const void *idx, const void *u,
                   void *o, int64_t rows, int64_t len, const tfm_cu_nd *p,
                   void *stream)
{
    if (rows * len == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (kind) {
    case TFM_CU_OUT_F32: return add_as<float>(idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_F64: return add_as<double>(idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_I32: return add_as<int32_t>(idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_I64: return add_as<int64_t>(idx64, idx, u, o, rows, len, *p, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_scatter_minmax(int is_max, int kind, int idx64, const void *idx,
                      const void *u, void *o, int64_t rows, int64_t len,
                      const tfm_cu_nd *p, void *stream)
{
    if (rows * len == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (kind) {
    case TFM_CU_OUT_F32:
        return minmax_as<float>(is_max, idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_F64:
        return minmax_as<double>(is_max, idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_I32:
        return minmax_as<int32_t>(is_max, idx64, idx, u, o, rows, len, *p, s);
    case TFM_CU_OUT_I64:
        return minmax_as<int64_t>(is_max, idx64, idx, u, o, rows, len, *p, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_scatter_update(int es, int idx64, const void *idx, const void *u,
                      void *o, int64_t rows, int64_t len, const tfm_cu_nd *p,
                      long long *win, int64_t nslices, void *stream)
{
    if (rows * len == 0)
        return 0;
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    // All bytes 0xff: every slice's winner starts at -1, below any row.
    cudaError_t e = cudaMemsetAsync(win, 0xff,
                                    (size_t)nslices * sizeof *win, s);
    if (e)
        return (int)e;
    unsigned g = tfm_cu_blocks_for(rows);
    if (idx64)
        k_winners<<<g, TFM_CU_THREADS, 0, s>>>((const long long *)idx, rows,
                                               *p, win);
    else
        k_winners<<<g, TFM_CU_THREADS, 0, s>>>((const int *)idx, rows, *p,
                                               win);
    if ((e = cudaGetLastError()))
        return (int)e;
    switch (es) {
    case 1: return update_as<uint8_t>(idx64, idx, u, o, rows, len, *p, win, s);
    case 2: return update_as<uint16_t>(idx64, idx, u, o, rows, len, *p, win, s);
    case 4: return update_as<uint32_t>(idx64, idx, u, o, rows, len, *p, win, s);
    case 8: return update_as<uint64_t>(idx64, idx, u, o, rows, len, *p, win, s);
    default: return update_as<b16>(idx64, idx, u, o, rows, len, *p, win, s);
    }
}
