// Fill, ZerosLike and OnesLike on the GPU: every element of o set to one
// es-byte value (1, 2, 4, 8 or 16 bytes: any dtype but strings), taken
// from device memory (Fill's value tensor) or passed by value.
//
// The kernel says __launch_bounds__(TFM_CU_THREADS, 1), the block its
// launcher uses (slice.cu says why the 1).
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "launch.h"
#include "launch_fused.h"

namespace {

struct B16 {
    uint64_t lo, hi;
};

template <typename E>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_fill(E *o, const E *src, E val, int64_t n)
{
    E v = src ? *src : val;
    TFM_CU_GRID_STRIDE(i, n)
        o[i] = v;
}

template <typename E>
void
fill(void *o, const void *src, const void *val, int64_t n, cudaStream_t s)
{
    // val is read only without src (launch_fused.h): a caller giving a
    // device value may pass NULL, which read here crashed the process.
    E v{};
    if (!src)
        memcpy(&v, val, sizeof v);
    k_fill<E><<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        (E *)o, (const E *)src, v, n);
}

}  // namespace

extern "C" int
tfm_cu_fill(int es, const void *src, const void *val, void *o, int64_t n,
            void *stream)
{
    if (n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 1: fill<uint8_t>(o, src, val, n, s); break;
    case 2: fill<uint16_t>(o, src, val, n, s); break;
    case 4: fill<uint32_t>(o, src, val, n, s); break;
    case 8: fill<uint64_t>(o, src, val, n, s); break;
    case 16: fill<B16>(o, src, val, n, s); break;
    default: return -1;
    }
    return (int)cudaGetLastError();
}
