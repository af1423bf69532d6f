/* The LSTM cell's gate math, forward and backward, each one pass over
 * the [batch, 4 * units] block: what the generic path does in about a
 * dozen elementwise nodes per step (split, three sigmoids, two tanhs,
 * the products) and twice as many in its gradient. Rows are
 * independent; within a row the four gate blocks are read at the same
 * column, so the inner loop is a plain `omp simd` over the units and
 * libmvec gives the vector exp and tanh. sigmoid is written as the
 * elementwise Sigmoid's formula (ew_formulas.def), so the fused cell
 * and the generic one give the same values. */
#include <math.h>

#include "loops.h"
#include "rnn_cell.h"
#include "shape.h"

#include "mvec.h"

#define LSTM_GATES(T, EXP, TANH)                                             \
static void                                                                  \
lstm_gates_##T(const T *restrict z, const T *restrict cp, T *restrict h,     \
               T *restrict c, T *restrict gates, int64_t batch, int64_t u)   \
{                                                                            \
    int big = batch * 4 * u >= TFM_PAR_MIN_HEAVY;                            \
    TFM_PAR_FOR(big, b, batch,                                               \
        const T *zr = z + b * 4 * u;                                         \
        T *gr = gates + b * 4 * u;                                           \
        const T *cpr = cp + b * u;                                           \
        T *hr = h + b * u, *cr = c + b * u;                                  \
        _Pragma("omp simd")                                                  \
        for (int64_t j = 0; j < u; j++) {                                    \
            T gi = (T)1 / ((T)1 + EXP(-zr[j]));                              \
            T gf = (T)1 / ((T)1 + EXP(-zr[u + j]));                          \
            T gc = TANH(zr[2 * u + j]);                                      \
            T go = (T)1 / ((T)1 + EXP(-zr[3 * u + j]));                      \
            T cn = gf * cpr[j] + gi * gc;                                    \
            cr[j] = cn;                                                      \
            hr[j] = go * TANH(cn);                                           \
            gr[j] = gi;                                                      \
            gr[u + j] = gf;                                                  \
            gr[2 * u + j] = gc;                                              \
            gr[3 * u + j] = go;                                              \
        }                                                                    \
    );                                                                       \
}

LSTM_GATES(float, expf, tanhf)
LSTM_GATES(double, exp, tanh)

/* With tc = tanh(c): dc_total = dc + dh * o * (1 - tc^2) carries the
 * gradient of both outputs into the cell state; the gate blocks take
 * the activation derivatives from the saved activations (s' = s(1 - s),
 * tanh' = 1 - tanh^2). */
#define LSTM_GATES_GRAD(T, TANH)                                             \
static void                                                                  \
lstm_gates_grad_##T(const T *restrict dh, const T *restrict dc,              \
                    const T *restrict gates, const T *restrict cp,           \
                    const T *restrict c, T *restrict dz, T *restrict dcp,    \
                    int64_t batch, int64_t u)                                \
{                                                                            \
    int big = batch * 4 * u >= TFM_PAR_MIN_HEAVY;                            \
    TFM_PAR_FOR(big, b, batch,                                               \
        const T *gr = gates + b * 4 * u;                                     \
        T *dzr = dz + b * 4 * u;                                             \
        int64_t o_ = b * u;                                                  \
        _Pragma("omp simd")                                                  \
        for (int64_t j = 0; j < u; j++) {                                    \
            T gi = gr[j], gf = gr[u + j], gc = gr[2 * u + j],                \
              go = gr[3 * u + j];                                            \
            T tc = TANH(c[o_ + j]), dhj = dh[o_ + j];                        \
            T dct = dc[o_ + j] + dhj * go * ((T)1 - tc * tc);                \
            dzr[j] = dct * gc * gi * ((T)1 - gi);                            \
            dzr[u + j] = dct * cp[o_ + j] * gf * ((T)1 - gf);                \
            dzr[2 * u + j] = dct * gi * ((T)1 - gc * gc);                    \
            dzr[3 * u + j] = dhj * tc * go * ((T)1 - go);                    \
            dcp[o_ + j] = dct * gf;                                          \
        }                                                                    \
    );                                                                       \
}

LSTM_GATES_GRAD(float, tanhf)
LSTM_GATES_GRAD(double, tanh)

tfm_code
tfm_k_lstm_gates(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout; (void)ctx;
    int64_t batch = in[1]->shape.dims[0], u = in[1]->shape.dims[1];
    if (in[0]->dtype == TFM_FLOAT32)
        lstm_gates_float(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                         tfm_tensor_data(out[0]), tfm_tensor_data(out[1]),
                         tfm_tensor_data(out[2]), batch, u);
    else
        lstm_gates_double(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                          tfm_tensor_data(out[0]), tfm_tensor_data(out[1]),
                          tfm_tensor_data(out[2]), batch, u);
    return TFM_OK;
}

tfm_code
tfm_k_lstm_gates_grad(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout; (void)ctx;
    int64_t batch = in[0]->shape.dims[0], u = in[0]->shape.dims[1];
    if (in[0]->dtype == TFM_FLOAT32)
        lstm_gates_grad_float(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                              tfm_tensor_data(in[2]), tfm_tensor_data(in[3]),
                              tfm_tensor_data(in[4]), tfm_tensor_data(out[0]),
                              tfm_tensor_data(out[1]), batch, u);
    else
        lstm_gates_grad_double(tfm_tensor_data(in[0]),
                               tfm_tensor_data(in[1]),
                               tfm_tensor_data(in[2]),
                               tfm_tensor_data(in[3]),
                               tfm_tensor_data(in[4]),
                               tfm_tensor_data(out[0]),
                               tfm_tensor_data(out[1]), batch, u);
    return TFM_OK;
}

tfm_code
tfm_k_lstm_gates_into(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout; (void)ctx;
    const tfm_tensor *gs = in[0], *ti = in[1];
    int64_t n = gs->shape.dims[0];
    int64_t t = ti->dtype == TFM_INT32 ? *(const int32_t *)tfm_tensor_data(ti)
                                       : *(const int64_t *)tfm_tensor_data(ti);
    if (t < 0 || t >= n)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: t = %lld is not in "
                         "[0, %lld)", tfm_ops[op].name, (long long)t,
                         (long long)n);
    /* Written over its input by the executor when it may: then there is
     * nothing to copy. */
    if (tfm_tensor_data(out[0]) != tfm_tensor_data(gs))
        tfm_memcpy_par(tfm_tensor_data(out[0]), tfm_tensor_data(gs),
                       tfm_tensor_nbytes(gs));
    int64_t batch = in[3]->shape.dims[0], u = in[3]->shape.dims[1];
    size_t row = (size_t)(batch * 4 * u) * tfm_dtype_size(gs->dtype);
    char *g = (char *)tfm_tensor_data(out[0]) + (size_t)t * row;
    if (gs->dtype == TFM_FLOAT32)
        lstm_gates_float(tfm_tensor_data(in[2]), tfm_tensor_data(in[3]),
                         tfm_tensor_data(out[1]), tfm_tensor_data(out[2]),
                         (float *)g, batch, u);
    else
        lstm_gates_double(tfm_tensor_data(in[2]), tfm_tensor_data(in[3]),
                          tfm_tensor_data(out[1]), tfm_tensor_data(out[2]),
                          (double *)g, batch, u);
    return TFM_OK;
}

tfm_code
tfm_k_empty_rows(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    /* Nothing to do: the caller writes every row before reading it. */
    (void)op; (void)in; (void)nin; (void)a; (void)out; (void)nout;
    (void)ctx;
    return TFM_OK;
}
