/* The GPU's LSTMGates and LSTMGatesGrad (rnn.cu), and _LSTMSequence and
 * _LSTMSequenceGrad: the C glue, reading shapes as cpu/rnn_cell.c and
 * cpu/rnn_seq.c do. The shape rules admit float32 and float64 only (one
 * dtype for every operand); both run on the GPU. */
#include "internal.h"

#include <string.h>

#include "launch_fused.h"
#include "launch_ops.h"

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

/* ---- the sequence ops: the time loop on the host ----
 *
 * Each step queues a cuBLAS GEMM and one cell kernel on the GPU's
 * stream, with the layouts and outputs of cpu/rnn_seq.c (Note [One
 * parallel region per sequence]): forward, gates[t] = h @ R, then the
 * cell adds xs[t] and activates it in place; backward, the cell kernel,
 * then dh = dz @ R^T; dR = hs^T @ dzs over all steps in one GEMM. The
 * GEMMs are BatchMatMulV2's (tfm_cu_gemm in kernels_matmul.c: TF32 for
 * float32 when enabled, the cached cuBLASLt algorithm). The host waits
 * for nothing: the loop only queues work. */

static tfm_code
d2d(tfm_op op, tfm_gpu *g, void *dst, const void *src, size_t nb)
{
    if (!nb)
        return TFM_OK;
    return tfm_gpu_check(cudaMemcpyAsync(dst, src, nb,
                                         cudaMemcpyDeviceToDevice,
                                         g->stream), tfm_ops[op].name);
}

/* Too big for cuBLAS's int sizes: the CPU kernel on host copies. */
static int
too_big(int64_t rows, int64_t u)
{
    return rows > INT32_MAX || 4 * u > INT32_MAX;
}

/* (xs [T, B, 4U], h0, c0 [B, U], r [U, 4U]) -> (hs, cs [T, B, U], gates
 * [T, B, 4U], h, c [B, U]). */
static tfm_code
k_lstm_sequence(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int64_t n = in[0]->shape.dims[0], batch = in[1]->shape.dims[0],
            u = in[1]->shape.dims[1];
    if ((d != TFM_FLOAT32 && d != TFM_FLOAT64) || too_big(n * batch, u))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (batch == 0 || u == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int f64 = d == TFM_FLOAT64;
    size_t es = tfm_dtype_size(d), hb = (size_t)(batch * u) * es;
    const char *xs = tfm_tensor_data(in[0]), *r = tfm_tensor_data(in[3]);
    char *hs = tfm_tensor_data(out[0]), *cs = tfm_tensor_data(out[1]);
    char *gs = tfm_tensor_data(out[2]);
    char *h = tfm_tensor_data(out[3]), *c = tfm_tensor_data(out[4]);
    if (n == 0) {
        tfm_code rc = d2d(op, g, h, tfm_tensor_data(in[1]), hb);
        return rc ? rc : d2d(op, g, c, tfm_tensor_data(in[2]), hb);
    }
    tfm_code rc = d2d(op, g, hs, tfm_tensor_data(in[1]), hb);
    if (!rc)
        rc = d2d(op, g, cs, tfm_tensor_data(in[2]), hb);
    for (int64_t t = 0; !rc && t < n; t++) {
        char *z = gs + 4 * t * hb;
        char *hn = t + 1 < n ? hs + (t + 1) * hb : h;
        char *cn = t + 1 < n ? cs + (t + 1) * hb : c;
        rc = tfm_cu_gemm(op, g, ctx, d, 0, 0, batch, 4 * u, u, hs + t * hb,
                         r, z);
        if (!rc)
            rc = tfm_cu_launched(op, tfm_cu_lstm_seq_step(
                f64, xs + 4 * t * hb, z, cs + t * hb, hn, cn, batch, u,
                g->stream));
    }
    return rc;
}

/* (dh, dc [B, U], hs, cs [T, B, U], gates [T, B, 4U], c [B, U], r [U,
 * 4U][, d_out [T, B, U]]) -> (dzs [T, B, 4U], dh0, dc0 [B, U], dr [U,
 * 4U]). dh0 and dc0 carry dh and dc back through the steps. */
static tfm_code
k_lstm_sequence_grad(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int64_t n = in[2]->shape.dims[0], batch = in[0]->shape.dims[0],
            u = in[0]->shape.dims[1];
    if ((d != TFM_FLOAT32 && d != TFM_FLOAT64) || too_big(n * batch, u))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (u == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int f64 = d == TFM_FLOAT64;
    size_t es = tfm_dtype_size(d), hb = (size_t)(batch * u) * es;
    const char *cs = tfm_tensor_data(in[3]), *gs = tfm_tensor_data(in[4]);
    const char *c = tfm_tensor_data(in[5]), *r = tfm_tensor_data(in[6]);
    const char *dout = nin > 7 ? tfm_tensor_data(in[7]) : NULL;
    char *dzs = tfm_tensor_data(out[0]), *dh = tfm_tensor_data(out[1]);
    char *dc = tfm_tensor_data(out[2]), *dr = tfm_tensor_data(out[3]);
    tfm_code rc = d2d(op, g, dh, tfm_tensor_data(in[0]), hb);
    if (!rc)
        rc = d2d(op, g, dc, tfm_tensor_data(in[1]), hb);
    if (rc)
        return rc;
    if (n * batch == 0)     /* dr sums over no rows */
        return tfm_gpu_check(cudaMemsetAsync(dr, 0, tfm_tensor_nbytes(out[3]),
                                             g->stream), tfm_ops[op].name);
    for (int64_t t = n - 1; !rc && t >= 0; t--) {
        const char *cn = t + 1 < n ? cs + (t + 1) * hb : c;
        char *dz = dzs + 4 * t * hb;
        rc = tfm_cu_launched(op, tfm_cu_lstm_seq_grad_step(
            f64, dh, dout ? dout + t * hb : NULL, dc, gs + 4 * t * hb,
            cs + t * hb, cn, dz, batch, u, g->stream));
        if (!rc)
            rc = tfm_cu_gemm(op, g, ctx, d, 0, 1, batch, u, 4 * u, dz, r,
                             dh);
    }
    /* dr [U, 4U] = hs^T [U, T*B] @ dzs [T*B, 4U]. */
    if (!rc)
        rc = tfm_cu_gemm(op, g, ctx, d, 1, 0, u, 4 * u, n * batch,
                         tfm_tensor_data(in[2]), dzs, dr);
    return rc;
}

void
tfm_cuda_kernels_rnn_init(tfm_kernel_fn *table)
{
    table[TFM_OP_LSTM_GATES] = k_lstm_gates;
    table[TFM_OP_LSTM_GATES_GRAD] = k_lstm_gates_grad;
    table[TFM_OP_LSTM_SEQUENCE] = k_lstm_sequence;
    table[TFM_OP_LSTM_SEQUENCE_GRAD] = k_lstm_sequence_grad;
}
