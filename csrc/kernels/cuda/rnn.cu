// LSTMGates and LSTMGatesGrad on the GPU, and the per-step kernels of
// _LSTMSequence(Grad) (kernels_rnn.c runs their time loop): a thread per
// (batch row, unit), each running the column arithmetic of
// cpu/rnn_math.h (its TFM_LSTM_ROW_BODY / TFM_LSTM_GRAD_ROW_BODY macros,
// so the formulas are the CPU's own text; only exp and tanh are CUDA's,
// within a few ulps of libm's). No pointer is __restrict__: as on the
// CPU, z and gates (dc and dc_prev) may be one buffer; each thread reads
// its columns before it writes them.
//
// Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
// launcher here uses; the 1 (one block an SM at least) keeps ptxas
// from trading registers for occupancy: the bound alone made it spill
// (k_pool_grad on sm_90, k_scan on sm_80).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// rnn_math.h's host functions call libmvec's vector variants through
// mvec.h, which is gcc's business, not nvcc's: the guard keeps it out.
#define TFM_KERNELS_MVEC_H
#include "../cpu/rnn_math.h"
#include "launch.h"
#include "launch_fused.h"
#include "launch_ops.h"

namespace {

__device__ inline float dexp(float x) { return expf(x); }
__device__ inline double dexp(double x) { return exp(x); }
__device__ inline float dtanh(float x) { return tanhf(x); }
__device__ inline double dtanh(double x) { return tanh(x); }

// The row pointers of element i = (b, j) of a [batch, u] grid, named as
// the row macros read them. x_ (NULL: none) is a sequence step's
// projected input, added first as cpu/rnn_math.h's tfm_lstm_row adds it;
// z_ and g_ are then one buffer.
template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_lstm_gates(const T *z_, const T *x_, const T *cp_,
             T *h_, T *c_, T *g_,
             int64_t batch, int64_t u)
{
    int64_t total = batch * u;
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t b = i / u, j = i % u;
        const T *z = z_ + b * 4 * u, *cp = cp_ + b * u;
        T *h = h_ + b * u, *c = c_ + b * u, *g = g_ + b * 4 * u;
        T zi = z[j], zf = z[u + j], zc = z[2 * u + j], zo = z[3 * u + j];
        if (x_) {
            const T *x = x_ + b * 4 * u;
            zi = x[j] + zi;
            zf = x[u + j] + zf;
            zc = x[2 * u + j] + zc;
            zo = x[3 * u + j] + zo;
        }
        TFM_LSTM_ROW_BODY(T, dexp, dtanh)
    }
}

template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_lstm_gates_grad(const T *dh_, const T *dh2_, const T *dc_,
                  const T *g_, const T *cp_,
                  const T *c_, T *dz_,
                  T *dcp_, int64_t batch, int64_t u)
{
    int64_t total = batch * u;
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t b = i / u, j = i % u;
        const T *dh = dh_ + b * u, *dc = dc_ + b * u;
        const T *dh2 = dh2_ ? dh2_ + b * u : (const T *)0;
        const T *g = g_ + b * 4 * u, *cp = cp_ + b * u, *c = c_ + b * u;
        T *dz = dz_ + b * 4 * u, *dcp = dcp_ + b * u;
        TFM_LSTM_GRAD_ROW_BODY(T, dtanh)
    }
}

}  // namespace

namespace {

int
gates_launch(int is64, const void *z, const void *x, const void *cp,
             void *h, void *c, void *gates, int64_t batch, int64_t u,
             cudaStream_t s)
{
    if (batch * u == 0)
        return 0;
#define GF(T) k_lstm_gates<<<tfm_cu_blocks_for(batch * u), TFM_CU_THREADS,  \
                             0, s>>>(                                       \
        (const T *)z, (const T *)x, (const T *)cp, (T *)h, (T *)c,           \
        (T *)gates, batch, u)
    if (is64)
        GF(double);
    else
        GF(float);
#undef GF
    return (int)cudaGetLastError();
}

int
grad_launch(int is64, const void *dh, const void *dh2, const void *dc,
            const void *gates, const void *cp, const void *c, void *dz,
            void *dcp, int64_t batch, int64_t u, cudaStream_t s)
{
    if (batch * u == 0)
        return 0;
#define GG(T) k_lstm_gates_grad<<<tfm_cu_blocks_for(batch * u),            \
                                  TFM_CU_THREADS, 0, s>>>(                  \
        (const T *)dh, (const T *)dh2, (const T *)dc, (const T *)gates,      \
        (const T *)cp, (const T *)c, (T *)dz, (T *)dcp, batch, u)
    if (is64)
        GG(double);
    else
        GG(float);
#undef GG
    return (int)cudaGetLastError();
}

}  // namespace

extern "C" int
tfm_cu_lstm_gates(int is64, const void *z, const void *cp, void *h, void *c,
                  void *gates, int64_t batch, int64_t u, void *stream)
{
    return gates_launch(is64, z, NULL, cp, h, c, gates, batch, u,
                        (cudaStream_t)stream);
}

extern "C" int
tfm_cu_lstm_gates_grad(int is64, const void *dh, const void *dc,
                       const void *gates, const void *cp, const void *c,
                       void *dz, void *dcp, int64_t batch, int64_t u,
                       void *stream)
{
    return grad_launch(is64, dh, NULL, dc, gates, cp, c, dz, dcp, batch, u,
                       (cudaStream_t)stream);
}

extern "C" int
tfm_cu_lstm_seq_step(int is64, const void *x, void *z, const void *cp,
                     void *h, void *c, int64_t batch, int64_t u,
                     void *stream)
{
    return gates_launch(is64, z, x, cp, h, c, z, batch, u,
                        (cudaStream_t)stream);
}

extern "C" int
tfm_cu_lstm_seq_grad_step(int is64, const void *dh, const void *dh2,
                          void *dc, const void *g, const void *cp,
                          const void *c, void *dz, int64_t batch, int64_t u,
                          void *stream)
{
    return grad_launch(is64, dh, dh2, dc, g, cp, c, dz, dc, batch, u,
                       (cudaStream_t)stream);
}
