/* The GPU's LSTMGates and LSTMGatesGrad (rnn.cu): the C glue, reading
 * shapes as cpu/rnn_cell.c does. The shape rule admits float32 and
 * float64 only (one dtype for every operand); both run on the GPU. */
#include "internal.h"

#include "launch_fused.h"

/* (z [B, 4U], c_prev [B, U]) -> (h, c, gates). */
static tfm_code
k_lstm_gates(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    if (d != TFM_FLOAT32 && d != TFM_FLOAT64)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t batch = in[1]->shape.dims[0], u = in[1]->shape.dims[1];
    void *stream = tfm_cu_gpu(ctx)->stream;
    return tfm_cu_launched(op, tfm_cu_lstm_gates(
        d == TFM_FLOAT64, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(out[0]), tfm_tensor_data(out[1]),
        tfm_tensor_data(out[2]), batch, u, stream));
}

/* (dh, dc, gates, c_prev, c) -> (dz, dc_prev). */
static tfm_code
k_lstm_gates_grad(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    if (d != TFM_FLOAT32 && d != TFM_FLOAT64)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t batch = in[0]->shape.dims[0], u = in[0]->shape.dims[1];
    void *stream = tfm_cu_gpu(ctx)->stream;
    return tfm_cu_launched(op, tfm_cu_lstm_gates_grad(
        d == TFM_FLOAT64, tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
        tfm_tensor_data(in[2]), tfm_tensor_data(in[3]),
        tfm_tensor_data(in[4]), tfm_tensor_data(out[0]),
        tfm_tensor_data(out[1]), batch, u, stream));
}

void
tfm_cuda_kernels_rnn_init(tfm_kernel_fn *table)
{
    table[TFM_OP_LSTM_GATES] = k_lstm_gates;
    table[TFM_OP_LSTM_GATES_GRAD] = k_lstm_gates_grad;
}
