// Where index row k of an [rows, depth] index matrix points (launch_ops.h's
// tfm_cu_nd), for the GatherNd and TensorScatter* kernels (index.cu,
// scatter.cu) and their host builds. A .cuh: only nvcc reads it (see
// half_elt.cuh).
#ifndef TFM_KERNELS_CUDA_ND_OFFSET_CUH
#define TFM_KERNELS_CUDA_ND_OFFSET_CUH

#include <stdint.h>

#include "launch_ops.h"

// Slice offset of index row k, or -1 when an index is out of range.
template <typename I>
__host__ __device__ inline int64_t
tfm_nd_offset(const I *idx, int64_t k, const tfm_cu_nd &p)
{
    int64_t off = 0;
    for (int j = 0; j < p.depth; j++) {
        int64_t v = (int64_t)idx[k * p.depth + j];
        if (v < 0 || v >= p.dims[j])
            return -1;
        off += v * p.st[j];
    }
    return off;
}

#endif
