// The elementwise halves of the fused convolution ops on the GPU:
// _FusedConv2D's epilogue after cuDNN's convolution (the CPU's
// epilogue_* in cpu/conv_fused.c: bias, then the residual, then the
// activation), and _FusedMaxPoolGrad's ReluGrad mask and bias gradient
// after pool.cu's MaxPoolGrad (cpu/conv_pool_grad.c's mask_sum_*).
//
// Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
// launcher here uses; the 1 (one block an SM at least) keeps ptxas
// from trading registers for occupancy: the bound alone made it spill
// (k_pool_grad on sm_90, k_scan on sm_80).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "col_sums.h"
#include "launch.h"
#include "launch_fused.h"

namespace {

__device__ inline float dexpm1(float x) { return expm1f(x); }
__device__ inline double dexpm1(double x) { return expm1(x); }

// act as TFM_CONV_ACT_* (cpu/conv.h): 1 Relu, 2 Relu6, 3 Elu; NaN
// passes through Relu and Relu6, as the CPU's comparisons let it.
template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_epilogue(T *__restrict__ y, const T *__restrict__ bias,
           const T *__restrict__ res, int64_t n, int64_t o, int act)
{
    TFM_CU_GRID_STRIDE(i, n) {
        T v = bias ? y[i] + bias[i % o] : y[i];
        if (res)
            v += res[i];
        switch (act) {
        case 1:
            v = v < 0 ? 0 : v;
            break;
        case 2:
            v = v < 0 ? 0 : v > 6 ? 6 : v;
            break;
        case 3:
            v = v > 0 ? v : dexpm1(v);
            break;
        default:
            break;
        }
        y[i] = v;
    }
}

template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_relu_mask(const T *__restrict__ x, T *__restrict__ dx, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n)
        dx[i] = x[i] > 0 ? dx[i] : (T)0;
}

}  // namespace

extern "C" int
tfm_cu_conv_epilogue(int is64, void *y, const void *bias, const void *res,
                     int64_t rows, int64_t o, int act, void *stream)
{
    int64_t n = rows * o;
    if (n == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        k_epilogue<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
            (double *)y, (const double *)bias, (const double *)res, n, o,
            act);
    else
        k_epilogue<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
            (float *)y, (const float *)bias, (const float *)res, n, o, act);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_relu_mask_colsum(int is64, const void *x, void *dx, void *db,
                        int64_t rows, int64_t c, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = rows * c;
    if (is64) {
        if (n)
            k_relu_mask<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
                (const double *)x, (double *)dx, n);
        tfm_col_sums(tfm_cu_rows<double>{(const double *)dx, c},
                     (double *)db, rows, c, s);
    } else {
        if (n)
            k_relu_mask<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
                (const float *)x, (float *)dx, n);
        tfm_col_sums(tfm_cu_rows<float>{(const float *)dx, c}, (float *)db,
                     rows, c, s);
    }
    return (int)cudaGetLastError();
}
