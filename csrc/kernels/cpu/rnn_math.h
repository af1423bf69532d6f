/* The LSTM cell's arithmetic on one row of the batch, shared by the
 * one-step ops (rnn_cell.c) and the whole-sequence ops (rnn_seq.c), so
 * that both give the same values bit for bit. Within a row the four gate
 * blocks (Keras' order i, f, c~, o) are read at the same column, so the
 * inner loop is a plain `omp simd` over the units and libmvec gives the
 * vector exp and tanh. sigmoid is written as the elementwise Sigmoid's
 * formula (ew_formulas.def), so the fused cell and the generic one agree.
 *
 * In place on purpose: z and gates may be the same row (the sequence
 * kernel writes the GEMM's product into the gates' stack and activates
 * it there), as may dc and dc_prev. Each iteration j reads its four
 * columns before writing them, so no pointer here is restrict. */
#ifndef TFM_KERNELS_CPU_RNN_MATH_H
#define TFM_KERNELS_CPU_RNN_MATH_H

#include <math.h>
#include <stdint.h>

#include "mvec.h"

/* h, c, gates of one row from z (+ x when x is not NULL: the projected
 * input, added as the unfused x + h @ R adds it) and c_prev. */
#define TFM_LSTM_ROW(T, EXP, TANH)                                           \
static inline void                                                           \
tfm_lstm_row_##T(const T *z, const T *x, const T *cp, T *h, T *c, T *g,      \
                 int64_t u)                                                  \
{                                                                            \
    if (x) {                                                                 \
        _Pragma("omp simd")                                                  \
        for (int64_t j = 0; j < u; j++) {                                    \
            T zi = x[j] + z[j], zf = x[u + j] + z[u + j],                    \
              zc = x[2 * u + j] + z[2 * u + j],                              \
              zo = x[3 * u + j] + z[3 * u + j];                              \
            TFM_LSTM_ROW_BODY(T, EXP, TANH)                                  \
        }                                                                    \
    } else {                                                                 \
        _Pragma("omp simd")                                                  \
        for (int64_t j = 0; j < u; j++) {                                    \
            T zi = z[j], zf = z[u + j], zc = z[2 * u + j],                   \
              zo = z[3 * u + j];                                             \
            TFM_LSTM_ROW_BODY(T, EXP, TANH)                                  \
        }                                                                    \
    }                                                                        \
}

/* Column j of the row (also the GPU kernel's body, cuda/rnn.cu). */
#define TFM_LSTM_ROW_BODY(T, EXP, TANH)                                      \
    T gi = (T)1 / ((T)1 + EXP(-zi));                                         \
    T gf = (T)1 / ((T)1 + EXP(-zf));                                         \
    T gc = TANH(zc);                                                         \
    T go = (T)1 / ((T)1 + EXP(-zo));                                         \
    T cn = gf * cp[j] + gi * gc;                                             \
    c[j] = cn;                                                               \
    h[j] = go * TANH(cn);                                                    \
    g[j] = gi;                                                               \
    g[u + j] = gf;                                                           \
    g[2 * u + j] = gc;                                                       \
    g[3 * u + j] = go;

TFM_LSTM_ROW(float, expf, tanhf)
TFM_LSTM_ROW(double, exp, tanh)

/* The row's vector-Jacobian product. dh2 (NULL: none) is a second
 * output gradient of h added to dh (a layer returning sequences adds
 * its per-step output's gradient so). With tc = tanh(c): dc_total =
 * dc + dh * o * (1 - tc^2) carries the gradient of both outputs into
 * the cell state; the gate blocks take the activation derivatives from
 * the saved activations (s' = s(1 - s), tanh' = 1 - tanh^2). */
#define TFM_LSTM_GRAD_ROW(T, TANH)                                           \
static inline void                                                           \
tfm_lstm_grad_row_##T(const T *dh, const T *dh2, const T *dc, const T *g,    \
                      const T *cp, const T *c, T *dz, T *dcp, int64_t u)     \
{                                                                            \
    _Pragma("omp simd")                                                      \
    for (int64_t j = 0; j < u; j++) {                                        \
        TFM_LSTM_GRAD_ROW_BODY(T, TANH)                                      \
    }                                                                        \
}

/* Column j of the row's product; also the GPU kernel's body (cuda/rnn.cu),
 * so both devices run the same arithmetic. */
#define TFM_LSTM_GRAD_ROW_BODY(T, TANH)                                      \
    T gi = g[j], gf = g[u + j], gc = g[2 * u + j], go = g[3 * u + j];        \
    T tc = TANH(c[j]), dhj = dh2 ? dh[j] + dh2[j] : dh[j];                   \
    T dct = dc[j] + dhj * go * ((T)1 - tc * tc);                             \
    dz[j] = dct * gc * gi * ((T)1 - gi);                                     \
    dz[u + j] = dct * cp[j] * gf * ((T)1 - gf);                              \
    dz[2 * u + j] = dct * gi * ((T)1 - gc * gc);                             \
    dz[3 * u + j] = dhj * tc * go * ((T)1 - go);                             \
    dcp[j] = dct * gf;

TFM_LSTM_GRAD_ROW(float, tanhf)
TFM_LSTM_GRAD_ROW(double, tanh)

#endif
