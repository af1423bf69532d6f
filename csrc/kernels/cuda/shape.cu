// Transpose and GatherV2 (with or without batch dims) on the GPU: both move whole elements, so one
// kernel per element size (1, 2, 4, 8, 16 bytes) serves every dtype.
//
// An index outside [0, dim) in GatherV2 writes zeros, as TF's GPU kernel
// does (its CPU kernel raises; checking here would need the indices on
// the host).
//
// Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
// launcher here uses (slice.cu says why the 1).
#include <cuda_runtime.h>
#include <stdint.h>

#include "launch.h"
#include "launch_index.h"

namespace {

// 8-byte aligned, not 16: a complex128 tensor may start 8 bytes into a
// 16-byte line (a view at an odd element offset), and a 16-byte vector
// load there is a misaligned-address fault (fill.cu's B16 is the same).
struct b16 { uint64_t a, b; };

struct perm_plan {
    int ndim;
    int64_t dims[TFM_CU_MAX_DIMS];   // the output's
    int64_t src[TFM_CU_MAX_DIMS];    // input stride for each output dim
};

template <typename E>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_transpose(const E *__restrict__ x, E *__restrict__ o, int64_t n,
            perm_plan p)
{
    TFM_CU_GRID_STRIDE(i, n) {
        int64_t r = i, at = 0;
        for (int d = p.ndim - 1; d >= 0; d--) {
            int64_t k = r % p.dims[d];
            r /= p.dims[d];
            at += k * p.src[d];
        }
        o[i] = x[at];
    }
}

// Output element i of [batch, outer, nidx, inner] (cpu/shape_gather.c's
// row rule): obatch is outer, the rows of one batch before the axis;
// without batch dims every row is in batch 0.
template <typename E, typename I>
__host__ __device__ inline void
gather_at(const E *x, const I *idx, E *o, int64_t nidx, int64_t inner,
          int64_t dim, int64_t obatch, int64_t i)
{
    int64_t c = i % inner, t = i / inner;
    int64_t j = t % nidx, outer = t / nidx, b = t / (nidx * obatch);
    int64_t k = (int64_t)idx[b * nidx + j];
    o[i] = k >= 0 && k < dim ? x[(outer * dim + k) * inner + c] : E{};
}

template <typename E, typename I>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_gather(const E *__restrict__ x, const I *__restrict__ idx,
         E *__restrict__ o, int64_t n, int64_t nidx, int64_t inner,
         int64_t dim, int64_t obatch)
{
    TFM_CU_GRID_STRIDE(i, n)
        gather_at(x, idx, o, nidx, inner, dim, obatch, i);
}

template <typename E>
int
transpose_as(const void *x, void *o, int64_t n, const perm_plan &p,
             cudaStream_t s)
{
    k_transpose<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        (const E *)x, (E *)o, n, p);
    return (int)cudaGetLastError();
}

template <typename E>
int
gather_as(int idx64, const void *x, const void *idx, void *o, int64_t n,
          int64_t nidx, int64_t inner, int64_t dim, int64_t obatch,
          cudaStream_t s)
{
    if (idx64)
        k_gather<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
            (const E *)x, (const long long *)idx, (E *)o, n, nidx, inner,
            dim, obatch);
    else
        k_gather<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
            (const E *)x, (const int *)idx, (E *)o, n, nidx, inner, dim,
            obatch);
    return (int)cudaGetLastError();
}

int
gather_es(int es, int idx64, const void *x, const void *idx, void *o,
          int64_t n, int64_t nidx, int64_t inner, int64_t dim,
          int64_t obatch, cudaStream_t s)
{
    switch (es) {
    case 1: return gather_as<uint8_t>(idx64, x, idx, o, n, nidx, inner, dim, obatch, s);
    case 2: return gather_as<uint16_t>(idx64, x, idx, o, n, nidx, inner, dim, obatch, s);
    case 4: return gather_as<uint32_t>(idx64, x, idx, o, n, nidx, inner, dim, obatch, s);
    case 8: return gather_as<uint64_t>(idx64, x, idx, o, n, nidx, inner, dim, obatch, s);
    case 16: return gather_as<b16>(idx64, x, idx, o, n, nidx, inner, dim, obatch, s);
    default: return -1;
    }
}

}  // namespace

extern "C" int
tfm_cu_transpose(int es, const void *x, void *o, int ndim,
                 const int64_t *odims, const int64_t *src_strides,
                 int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    if (ndim > TFM_CU_MAX_DIMS)
        return -1;
    perm_plan p;
    p.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        p.dims[d] = odims[d];
        p.src[d] = src_strides[d];
    }
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: return transpose_as<uint8_t>(x, o, n, p, s);
    case 2: return transpose_as<uint16_t>(x, o, n, p, s);
    case 4: return transpose_as<uint32_t>(x, o, n, p, s);
    case 8: return transpose_as<uint64_t>(x, o, n, p, s);
    case 16: return transpose_as<b16>(x, o, n, p, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_gather(int es, int idx64, const void *x, const void *idx, void *o,
              int64_t outer, int64_t dim, int64_t inner, int64_t nidx,
              void *stream)
{
    int64_t n = outer * nidx * inner;
    if (n == 0)
        return 0;
    return gather_es(es, idx64, x, idx, o, n, nidx, inner, dim, outer,
                     (cudaStream_t)stream);
}

extern "C" int
tfm_cu_gather_batched(int es, int idx64, const void *x, const void *idx,
                      void *o, int64_t batch, int64_t outer, int64_t dim,
                      int64_t inner, int64_t nidx, void *stream)
{
    int64_t n = batch * outer * nidx * inner;
    if (n == 0)
        return 0;
    return gather_es(es, idx64, x, idx, o, n, nidx, inner, dim, outer,
                     (cudaStream_t)stream);
}
