/* The LSTM cell's gate math, forward and backward, each one pass over
 * the [batch, 4 * units] block: what the generic path does in about a
 * dozen elementwise nodes per step (split, three sigmoids, two tanhs,
 * the products) and twice as many in its gradient. Rows are
 * independent: the row arithmetic is rnn_math.h's, shared with the
 * whole-sequence kernels (rnn_seq.c). */
#include "loops.h"
#include "rnn_cell.h"
#include "rnn_math.h"

#define LSTM_GATES(T)                                                        \
static void                                                                  \
lstm_gates_##T(const T *z, const T *cp, T *h, T *c, T *gates, int64_t batch, \
               int64_t u)                                                    \
{                                                                            \
    int big = batch * 4 * u >= TFM_PAR_MIN_HEAVY;                            \
    TFM_PAR_FOR(big, b, batch,                                               \
        tfm_lstm_row_##T(z + b * 4 * u, NULL, cp + b * u, h + b * u,         \
                         c + b * u, gates + b * 4 * u, u);                   \
    );                                                                       \
}

LSTM_GATES(float)
LSTM_GATES(double)

#define LSTM_GATES_GRAD(T)                                                   \
static void                                                                  \
lstm_gates_grad_##T(const T *dh, const T *dc, const T *gates, const T *cp,   \
                    const T *c, T *dz, T *dcp, int64_t batch, int64_t u)     \
{                                                                            \
    int big = batch * 4 * u >= TFM_PAR_MIN_HEAVY;                            \
    TFM_PAR_FOR(big, b, batch,                                               \
        int64_t o_ = b * u;                                                  \
        tfm_lstm_grad_row_##T(dh + o_, NULL, dc + o_, gates + 4 * o_,        \
                              cp + o_, c + o_, dz + 4 * o_, dcp + o_, u);    \
    );                                                                       \
}

LSTM_GATES_GRAD(float)
LSTM_GATES_GRAD(double)

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
