// LSTMGates and LSTMGatesGrad on the GPU: a thread per (batch row, unit),
// each running the column arithmetic of cpu/rnn_math.h (its
// TFM_LSTM_ROW_BODY / TFM_LSTM_GRAD_ROW_BODY macros, so the formulas are
// the CPU's own text; only exp and tanh are CUDA's, within a few ulps of
// libm's). No pointer is __restrict__: as on the CPU, z and gates (dc
// and dc_prev) may be one buffer; each thread reads its columns before it
// writes them.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// rnn_math.h's host functions call libmvec's vector variants through
// mvec.h, which is gcc's business, not nvcc's: the guard keeps it out.
#define TFM_KERNELS_MVEC_H
#include "../cpu/rnn_math.h"
#include "launch.h"
#include "launch_fused.h"

namespace {

__device__ inline float dexp(float x) { return expf(x); }
__device__ inline double dexp(double x) { return exp(x); }
__device__ inline float dtanh(float x) { return tanhf(x); }
__device__ inline double dtanh(double x) { return tanh(x); }

// The row pointers of element i = (b, j) of a [batch, u] grid, named as
// the row macros read them.
template <typename T>
__global__ void
k_lstm_gates(const T *z_, const T *cp_,
             T *h_, T *c_, T *g_,
             int64_t batch, int64_t u)
{
    int64_t total = batch * u;
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t b = i / u, j = i % u;
        const T *z = z_ + b * 4 * u, *cp = cp_ + b * u;
        T *h = h_ + b * u, *c = c_ + b * u, *g = g_ + b * 4 * u;
        T zi = z[j], zf = z[u + j], zc = z[2 * u + j], zo = z[3 * u + j];
        TFM_LSTM_ROW_BODY(T, dexp, dtanh)
    }
}

template <typename T>
__global__ void
k_lstm_gates_grad(const T *dh_, const T *dc_,
                  const T *g_, const T *cp_,
                  const T *c_, T *dz_,
                  T *dcp_, int64_t batch, int64_t u)
{
    int64_t total = batch * u;
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t b = i / u, j = i % u;
        const T *dh = dh_ + b * u, *dh2 = (const T *)0, *dc = dc_ + b * u;
        const T *g = g_ + b * 4 * u, *cp = cp_ + b * u, *c = c_ + b * u;
        T *dz = dz_ + b * 4 * u, *dcp = dcp_ + b * u;
        TFM_LSTM_GRAD_ROW_BODY(T, dtanh)
    }
}

}  // namespace

extern "C" int
tfm_cu_lstm_gates(int is64, const void *z, const void *cp, void *h, void *c,
                  void *gates, int64_t batch, int64_t u, void *stream)
{
    if (batch * u == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is64)
        k_lstm_gates<<<tfm_cu_blocks_for(batch * u), TFM_CU_THREADS, 0, s>>>(
            (const double *)z, (const double *)cp, (double *)h, (double *)c,
            (double *)gates, batch, u);
    else
        k_lstm_gates<<<tfm_cu_blocks_for(batch * u), TFM_CU_THREADS, 0, s>>>(
            (const float *)z, (const float *)cp, (float *)h, (float *)c,
            (float *)gates, batch, u);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_lstm_gates_grad(int is64, const void *dh, const void *dc,
                       const void *gates, const void *cp, const void *c,
                       void *dz, void *dcp, int64_t batch, int64_t u,
                       void *stream)
{
    if (batch * u == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define GG(T) k_lstm_gates_grad<<<tfm_cu_blocks_for(batch * u), TFM_CU_THREADS, 0, s>>>(       \
        (const T *)dh, (const T *)dc, (const T *)gates, (const T *)cp,       \
        (const T *)c, (T *)dz, (T *)dcp, batch, u)
    if (is64)
        GG(double);
    else
        GG(float);
#undef GG
    return (int)cudaGetLastError();
}
