// The element types of the GPU kernels that take float16 and bfloat16
// themselves (reduce.cu, nn.cu, norm.cu): each element widens to the
// type the kernel computes in, float for the 16-bit floats, and each
// result narrows back with one rounding, as the CPU computes them
// (float32 around its kernel, dispatch.c's run_half_upcast). Host and
// device, so that host builds of the kernels' bodies
// (tests/test_half_cuda_host.py) run the same conversions. A .cuh, not
// a .h: only nvcc reads it, so editing it rebuilds only the .cu files
// that include it (setup.py's quoted_includes).
#ifndef TFM_KERNELS_CUDA_HALF_ELT_CUH
#define TFM_KERNELS_CUDA_HALF_ELT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename S> struct tfm_math { typedef S type; };
template <> struct tfm_math<__half> { typedef float type; };
template <> struct tfm_math<__nv_bfloat16> { typedef float type; };

__host__ __device__ inline float tfm_widen(float v) { return v; }
__host__ __device__ inline double tfm_widen(double v) { return v; }
__host__ __device__ inline float tfm_widen(__half v)
{
    return __half2float(v);
}
__host__ __device__ inline float tfm_widen(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <typename S, typename A>
__host__ __device__ inline S tfm_narrow(A v) { return (S)v; }
template <>
__host__ __device__ inline __half tfm_narrow<__half, float>(float v)
{
    return __float2half_rn(v);
}
template <>
__host__ __device__ inline __nv_bfloat16
tfm_narrow<__nv_bfloat16, float>(float v)
{
    return __float2bfloat16_rn(v);
}

#endif
