// IsNan/IsInf/IsFinite, Range/LinSpace, GatherNd and Where on the GPU
// (launch_index.h), and the small write of host-known values that
// Shape, Size and Rank use (tfm_cu_put_bytes). Each kernel is a
// grid-stride loop over one __host__ __device__ body, so a host build of
// this file runs the very bodies serially against the CPU kernels
// (tests/test_index_cuda_host.py).
//
// Where's output shape depends on its values: the glue reads the count
// back between the two launches (Note on the capture in kernels_index.c).
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <stdint.h>

#include "launch.h"
#include "launch_index.h"
#include "nd_offset.cuh"

namespace {

// 8-byte aligned, as shape.cu's: a complex128 view may start 8 bytes
// into a 16-byte line.
struct b16 { uint64_t a, b; };

// ---- float predicates: the exponent all ones is Inf or NaN ----

template <typename U>
__host__ __device__ inline uint8_t
pred_at(int what, const U *x, int64_t i, U absmask, U inf)
{
    U m = (U)(x[i] & absmask);
    return what == 0 ? m > inf : what == 1 ? m == inf : m < inf;
}

template <typename U>
__global__ void
k_pred(int what, const U *__restrict__ x, uint8_t *__restrict__ o,
       int64_t n, U absmask, U inf)
{
    TFM_CU_GRID_STRIDE(i, n)
        o[i] = pred_at(what, x, i, absmask, inf);
}

template <typename U>
int
pred_as(int what, const void *x, void *o, int64_t n, U absmask, U inf,
        cudaStream_t s)
{
    k_pred<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        what, (const U *)x, (uint8_t *)o, n, absmask, inf);
    return (int)cudaGetLastError();
}

// ---- Range, LinSpace ----

struct seq_plan {
    int kind, es, last;
    int64_t istart, idelta, n;
    double fstart, fdelta, stop;
};

// start + k * delta rounded after each step, as the CPU's C (ISO mode,
// no contraction) computes it; nvcc would fuse a * b + c.
__host__ __device__ inline double
seq_value(const seq_plan &p, int64_t k)
{
    if (p.last && k == p.n - 1)
        return p.stop;
#ifdef __CUDA_ARCH__
    return __dadd_rn(p.fstart, __dmul_rn((double)k, p.fdelta));
#else
    return p.fstart + (double)k * p.fdelta;
#endif
}

__host__ __device__ inline void
seq_at(const seq_plan &p, void *o, int64_t k)
{
    if (p.kind == TFM_CU_SEQ_F32) {
        ((float *)o)[k] = (float)seq_value(p, k);
        return;
    }
    if (p.kind == TFM_CU_SEQ_F64) {
        ((double *)o)[k] = seq_value(p, k);
        return;
    }
    // Unsigned: the CPU's int64 arithmetic wraps (-fwrapv), and so does
    // this; the narrowing keeps the low bytes, as its cast does.
    uint64_t v = (uint64_t)p.istart + (uint64_t)k * (uint64_t)p.idelta;
    switch (p.es) {
    case 1: ((uint8_t *)o)[k] = (uint8_t)v; break;
    case 2: ((uint16_t *)o)[k] = (uint16_t)v; break;
    case 4: ((uint32_t *)o)[k] = (uint32_t)v; break;
    default: ((uint64_t *)o)[k] = v; break;
    }
}

__global__ void
k_sequence(seq_plan p, void *o)
{
    TFM_CU_GRID_STRIDE(k, p.n)
        seq_at(p, o, k);
}

// ---- GatherNd ----

// The glue checked the indices first, except inside a CUDA graph
// capture, where the check only raises a flag read after the replay
// (kernels_scatter.c): a row out of range (tfm_nd_offset -1) then reads
// nothing.
template <typename E, typename I>
__host__ __device__ inline void
gather_nd_at(const E *x, const I *idx, E *o, int64_t len,
             const tfm_cu_nd &p, int64_t i)
{
    int64_t k = i / len, j = i % len, at = tfm_nd_offset(idx, k, p);
    if (at >= 0)
        o[i] = x[at * len + j];
    else
        o[i] = E();
}

template <typename E, typename I>
__global__ void
k_gather_nd(const E *__restrict__ x, const I *__restrict__ idx,
            E *__restrict__ o, int64_t n, int64_t len, tfm_cu_nd p)
{
    TFM_CU_GRID_STRIDE(i, n)
        gather_nd_at(x, idx, o, len, p, i);
}

template <typename E>
int
gather_nd_as(int idx64, const void *x, const void *idx, void *o, int64_t n,
             int64_t len, const tfm_cu_nd &p, cudaStream_t s)
{
    unsigned g = tfm_cu_blocks_for(n);
    if (idx64)
        k_gather_nd<<<g, TFM_CU_THREADS, 0, s>>>(
            (const E *)x, (const long long *)idx, (E *)o, n, len, p);
    else
        k_gather_nd<<<g, TFM_CU_THREADS, 0, s>>>(
            (const E *)x, (const int *)idx, (E *)o, n, len, p);
    return (int)cudaGetLastError();
}

// ---- Where ----

__host__ __device__ inline bool
nonzero_at(int es, int is_float, const void *x, int64_t i)
{
    switch (es) {
    case 1: return ((const uint8_t *)x)[i] != 0;
    case 2: return (((const uint16_t *)x)[i] & (is_float ? 0x7fffu : 0xffffu))
                   != 0;
    case 4: return (((const uint32_t *)x)[i] &
                    (is_float ? 0x7fffffffu : 0xffffffffu)) != 0;
    default: return (((const uint64_t *)x)[i] &
                      (is_float ? 0x7fffffffffffffffull : ~0ull)) != 0;
    }
}

__host__ __device__ inline int64_t
where_count_chunk(int es, int is_float, const void *x, int64_t n, int64_t c)
{
    int64_t lo = c * TFM_CU_WHERE_CHUNK, hi = lo + TFM_CU_WHERE_CHUNK, m = 0;
    for (int64_t i = lo; i < hi && i < n; i++)
        m += nonzero_at(es, is_float, x, i);
    return m;
}

struct where_plan {
    int es, is_float, rank;
    int64_t n;
    int64_t dims[TFM_CU_MAX_DIMS];
};

// Chunk c's nonzero elements, from output row offs[c] on: the first
// element's coordinates by division, then counted up as the CPU does.
__host__ __device__ inline void
where_emit_chunk(const where_plan &p, const void *x, const int64_t *offs,
                 int64_t *o, int64_t c)
{
    int64_t lo = c * TFM_CU_WHERE_CHUNK, hi = lo + TFM_CU_WHERE_CHUNK;
    int64_t at[TFM_CU_MAX_DIMS], r = lo, row = offs[c];
    if (hi > p.n)
        hi = p.n;
    for (int j = p.rank - 1; j >= 0; j--) {
        at[j] = r % p.dims[j];
        r /= p.dims[j];
    }
    for (int64_t i = lo; i < hi; i++) {
        if (nonzero_at(p.es, p.is_float, x, i)) {
            for (int j = 0; j < p.rank; j++)
                o[row * p.rank + j] = at[j];
            row++;
        }
        for (int j = p.rank - 1; j >= 0; j--) {
            if (++at[j] < p.dims[j])
                break;
            at[j] = 0;
        }
    }
}

// counts[c] for every chunk, and 0 past the last so that the exclusive
// sum's last entry is the total.
__global__ void
k_where_count(int es, int is_float, const void *x, int64_t n,
              int64_t nchunks, int64_t *counts)
{
    TFM_CU_GRID_STRIDE(c, nchunks + 1)
        counts[c] = c < nchunks ? where_count_chunk(es, is_float, x, n, c)
                                : 0;
}

__global__ void
k_where_emit(where_plan p, const void *x, int64_t nchunks,
             const int64_t *offs, int64_t *o)
{
    TFM_CU_GRID_STRIDE(c, nchunks)
        where_emit_chunk(p, x, offs, o, c);
}

inline int64_t
chunks_of(int64_t n)
{
    return (n + TFM_CU_WHERE_CHUNK - 1) / TFM_CU_WHERE_CHUNK;
}

inline size_t
aligned(size_t b)
{
    return (b + 255) / 256 * 256;
}

// ---- small values known on the host ----

// Up to 64 bytes passed by value: a kernel's parameters are copied into
// a captured graph's node, so a replay writes them again with no host
// memory behind it (Shape, Size and Rank, kernels_shape.c).
struct bytes64 { unsigned char b[64]; };

__host__ __device__ inline void
put_byte_at(const bytes64 &v, unsigned char *o, int64_t i)
{
    o[i] = v.b[i];
}

__global__ void
k_put_bytes(bytes64 v, unsigned char *o, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n)
        put_byte_at(v, o, i);
}

}  // namespace

extern "C" int
tfm_cu_float_pred(int what, int ty, const void *x, void *o, int64_t n,
                  void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (ty) {
    case TFM_CU_F32:
        return pred_as<uint32_t>(what, x, o, n, 0x7fffffffu, 0x7f800000u, s);
    case TFM_CU_F64:
        return pred_as<uint64_t>(what, x, o, n, 0x7fffffffffffffffull,
                                 0x7ff0000000000000ull, s);
    case TFM_CU_F16:
        return pred_as<uint16_t>(what, x, o, n, 0x7fff, 0x7c00, s);
    case TFM_CU_BF16:
        return pred_as<uint16_t>(what, x, o, n, 0x7fff, 0x7f80, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_sequence(int kind, int es, int64_t istart, int64_t idelta,
                double fstart, double fdelta, int last, double stop,
                void *o, int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    if (kind == TFM_CU_SEQ_INT && es != 1 && es != 2 && es != 4 && es != 8)
        return -1;
    seq_plan p = {kind, es, last, istart, idelta, n, fstart, fdelta, stop};
    k_sequence<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0,
                 (cudaStream_t)stream>>>(p, o);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_gather_nd(int es, int idx64, const void *x, const void *idx, void *o,
                 int64_t rows, int64_t len, const tfm_cu_nd *p, void *stream)
{
    int64_t n = rows * len;
    if (n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: return gather_nd_as<uint8_t>(idx64, x, idx, o, n, len, *p, s);
    case 2: return gather_nd_as<uint16_t>(idx64, x, idx, o, n, len, *p, s);
    case 4: return gather_nd_as<uint32_t>(idx64, x, idx, o, n, len, *p, s);
    case 8: return gather_nd_as<uint64_t>(idx64, x, idx, o, n, len, *p, s);
    case 16: return gather_nd_as<b16>(idx64, x, idx, o, n, len, *p, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_where_offsets(int es, int is_float, const void *x, int64_t n,
                     int64_t *offs, void *tmp, size_t *tmp_bytes,
                     void *stream)
{
    int64_t nc = chunks_of(n);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return -1;
    if (nc + 1 > INT32_MAX)
        return -1;
    size_t cub_bytes = 0, counts_bytes = aligned((size_t)(nc + 1) * 8);
    cudaError_t e = cub::DeviceScan::ExclusiveSum(
        nullptr, cub_bytes, (int64_t *)nullptr, (int64_t *)nullptr,
        (int)(nc + 1));
    if (e)
        return (int)e;
    if (!tmp) {
        *tmp_bytes = counts_bytes + cub_bytes;
        return 0;
    }
    if (*tmp_bytes < counts_bytes + cub_bytes)
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    int64_t *counts = (int64_t *)tmp;
    k_where_count<<<tfm_cu_blocks_for(nc + 1), TFM_CU_THREADS, 0, s>>>(
        es, is_float, x, n, nc, counts);
    if ((e = cudaGetLastError()))
        return (int)e;
    return (int)cub::DeviceScan::ExclusiveSum(
        (char *)tmp + counts_bytes, cub_bytes, counts, offs, (int)(nc + 1),
        s);
}

extern "C" int
tfm_cu_where_coords(int es, int is_float, const void *x, int rank,
                    const int64_t *dims, int64_t n, const int64_t *offs,
                    int64_t *o, void *stream)
{
    if (rank < 0 || rank > TFM_CU_MAX_DIMS ||
        (es != 1 && es != 2 && es != 4 && es != 8))
        return -1;
    int64_t nc = chunks_of(n);
    if (nc == 0 || rank == 0)
        return 0;
    where_plan p;
    p.es = es;
    p.is_float = is_float;
    p.rank = rank;
    p.n = n;
    for (int j = 0; j < rank; j++)
        p.dims[j] = dims[j];
    k_where_emit<<<tfm_cu_blocks_for(nc), TFM_CU_THREADS, 0,
                   (cudaStream_t)stream>>>(p, x, nc, offs, o);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_put_bytes(void *o, const void *bytes, size_t n, void *stream)
{
    bytes64 v = {};
    if (n > sizeof v.b)
        return -1;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        v.b[i] = ((const unsigned char *)bytes)[i];
    k_put_bytes<<<1, 64, 0, (cudaStream_t)stream>>>(v, (unsigned char *)o,
                                                     (int64_t)n);
    return (int)cudaGetLastError();
}
