/* The LSTM layer's whole time loop as one kernel each way (rows
 * _LSTMSequence and _LSTMSequenceGrad in ops/ops_rnn.def).
 *
 * Note [One parallel region per sequence]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A step of an LSTM is a GEMM (h @ R, forward; dz @ R^T, backward) and
 * the cell's elementwise math; run as a While loop of ops, every step
 * forks and joins the OpenMP team two or three times (the GEMM's split,
 * the add, the cell), 80 steps a train step at the benchmark's shape,
 * and a busy second core turns each join into a wait for its time
 * slice. But batch rows never mix: row b of h at step t needs only row
 * b of h at t - 1, of xs[t] and all of R (and the same backward). So
 * each thread takes a block of rows through every step with no barrier
 * at all, calling the GEMM on its rows alone (serial inside the region:
 * gemm_dnnl.c), and a train step forks twice. Serial (one thread, or
 * too little work to share) it is the same loop over all rows, without
 * the executor's per-step ops, and its GEMM splits as any MatMul does.
 * What is left across steps, the recurrent kernel's gradient, is one
 * GEMM over all steps after the row blocks, split as any MatMul.
 * The cell's arithmetic is rnn_math.h's, the GEMM MatMul's, summed in
 * the same order (x + h @ R; dh + d_out[t]): values agree with the
 * op-by-op loop to the GEMM's rounding. */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm_dnnl.h"
#include "linalg.h"
#include "rnn_cell.h"
#include "rnn_math.h"

/* Rows a thread takes at least, and multiply-adds a sequence must have
 * (all steps) before a second thread joins: below either, a fork costs
 * more than the rows save, and a GEMM over a few rows runs far below
 * the machine's rate. */
#define MIN_ROWS 8
#define MIN_WORK (1 << 20)

static int
threads_for(int64_t n, int64_t batch, int64_t u)
{
#ifdef _OPENMP
    if (omp_in_parallel())
        return 1;
    int64_t nt = omp_get_max_threads();
    if (nt > batch / MIN_ROWS)
        nt = batch / MIN_ROWS;
    double work = (double)n * (double)batch * 4.0 * (double)u * (double)u;
    return nt > 1 && work >= MIN_WORK ? (int)nt : 1;
#else
    (void)n; (void)batch; (void)u;
    return 1;
#endif
}

/* Rows [b0, b1) of the forward. hs, cs: the states entering each step
 * (hs[0] = h0); gs: the activated gates, written first with h @ R and
 * activated in place; h, c: the states leaving the last step. */
#define LSTM_SEQ_ROWS(T, GEMM)                                               \
static void                                                                  \
lstm_seq_rows_##T(const T *xs, const T *h0, const T *c0, const T *r, T *hs,  \
                  T *cs, T *gs, T *h, T *c, int64_t n, int64_t batch,        \
                  int64_t u, int64_t b0, int64_t b1)                         \
{                                                                            \
    int64_t rows = b1 - b0, hb = batch * u, gb = 4 * hb;                     \
    size_t bytes = (size_t)(rows * u) * sizeof(T);                           \
    if (n == 0) {                                                            \
        memcpy(h + b0 * u, h0 + b0 * u, bytes);                              \
        memcpy(c + b0 * u, c0 + b0 * u, bytes);                              \
        return;                                                              \
    }                                                                        \
    memcpy(hs + b0 * u, h0 + b0 * u, bytes);                                 \
    memcpy(cs + b0 * u, c0 + b0 * u, bytes);                                 \
    for (int64_t t = 0; t < n; t++) {                                        \
        const T *hp = hs + t * hb + b0 * u, *cp = cs + t * hb + b0 * u;      \
        const T *x = xs + t * gb + b0 * 4 * u;                               \
        T *z = gs + t * gb + b0 * 4 * u;                                     \
        T *hn = (t + 1 < n ? hs + (t + 1) * hb : h) + b0 * u;                \
        T *cn = (t + 1 < n ? cs + (t + 1) * hb : c) + b0 * u;                \
        GEMM(rows, 4 * u, u, hp, 0, r, 0, z);                                \
        for (int64_t i = 0; i < rows; i++)                                   \
            tfm_lstm_row_##T(z + i * 4 * u, x + i * 4 * u, cp + i * u,       \
                             hn + i * u, cn + i * u, z + i * 4 * u, u);      \
    }                                                                        \
}

/* Rows [b0, b1) of the backward, t = n - 1 .. 0: dh and dc are carried
 * in dh0 and dc0 (their final values), dz goes into its stack and
 * dh = dz @ R^T. dout (NULL: none) is the gradient of each step's
 * output h, added to the carried dh. */
#define LSTM_SEQ_GRAD_ROWS(T, GEMM)                                          \
static void                                                                  \
lstm_seq_grad_rows_##T(const T *dout, const T *dh, const T *dc, const T *cs, \
                       const T *gs, const T *c, const T *r, T *dzs, T *dh0,  \
                       T *dc0, int64_t n, int64_t batch, int64_t u,          \
                       int64_t b0, int64_t b1)                               \
{                                                                            \
    int64_t rows = b1 - b0, hb = batch * u, gb = 4 * hb;                     \
    size_t bytes = (size_t)(rows * u) * sizeof(T);                           \
    T *dhr = dh0 + b0 * u, *dcr = dc0 + b0 * u;                              \
    memcpy(dhr, dh + b0 * u, bytes);                                         \
    memcpy(dcr, dc + b0 * u, bytes);                                         \
    for (int64_t t = n - 1; t >= 0; t--) {                                   \
        const T *cp = cs + t * hb + b0 * u;                                  \
        const T *cn = (t + 1 < n ? cs + (t + 1) * hb : c) + b0 * u;          \
        const T *g = gs + t * gb + b0 * 4 * u;                               \
        const T *d2 = dout ? dout + t * hb + b0 * u : NULL;                  \
        T *dz = dzs + t * gb + b0 * 4 * u;                                   \
        for (int64_t i = 0; i < rows; i++)                                   \
            tfm_lstm_grad_row_##T(dhr + i * u, d2 ? d2 + i * u : NULL,       \
                                  dcr + i * u, g + i * 4 * u, cp + i * u,    \
                                  cn + i * u, dz + i * 4 * u, dcr + i * u,   \
                                  u);                                        \
        GEMM(rows, u, 4 * u, dz, 0, r, 1, dhr);                              \
    }                                                                        \
}

LSTM_SEQ_ROWS(float, tfm_gemm_f32_best)
LSTM_SEQ_ROWS(double, tfm_gemm_f64)
LSTM_SEQ_GRAD_ROWS(float, tfm_gemm_f32_best)
LSTM_SEQ_GRAD_ROWS(double, tfm_gemm_f64)

/* Runs CALL(b0, b1) over row blocks: one per thread (Note [One parallel
 * region per sequence]) or all rows on this one. */
#ifdef _OPENMP
#define OVER_ROW_BLOCKS(NT, BATCH, CALL)                                     \
    do {                                                                     \
        int nt_ = (NT);                                                      \
        if (nt_ > 1) {                                                       \
            _Pragma("omp parallel num_threads(nt_)")                         \
            {                                                                \
                int64_t k_ = omp_get_num_threads(),                          \
                        id_ = omp_get_thread_num();                          \
                int64_t b0 = (BATCH) * id_ / k_,                             \
                        b1 = (BATCH) * (id_ + 1) / k_;                       \
                CALL;                                                        \
            }                                                                \
        } else {                                                             \
            int64_t b0 = 0, b1 = (BATCH);                                    \
            CALL;                                                            \
        }                                                                    \
    } while (0)
#else
#define OVER_ROW_BLOCKS(NT, BATCH, CALL)                                     \
    do {                                                                     \
        (void)(NT);                                                          \
        int64_t b0 = 0, b1 = (BATCH);                                        \
        CALL;                                                                \
    } while (0)
#endif

#define D(k) tfm_tensor_data(in[k])
#define O(k) tfm_tensor_data(out[k])

tfm_code
tfm_k_lstm_sequence(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout; (void)ctx;
    int64_t n = in[0]->shape.dims[0], batch = in[1]->shape.dims[0],
            u = in[1]->shape.dims[1];
    if (batch == 0 || u == 0)
        return TFM_OK;
    int nt = threads_for(n, batch, u);
    if (in[0]->dtype == TFM_FLOAT32)
        OVER_ROW_BLOCKS(nt, batch, lstm_seq_rows_float(
            D(0), D(1), D(2), D(3), O(0), O(1), O(2), O(3), O(4), n, batch,
            u, b0, b1));
    else
        OVER_ROW_BLOCKS(nt, batch, lstm_seq_rows_double(
            D(0), D(1), D(2), D(3), O(0), O(1), O(2), O(3), O(4), n, batch,
            u, b0, b1));
    return TFM_OK;
}

/* dr = hs^T @ dzs over all steps: the [T * B, U] and [T * B, 4U] stacks
 * as they lie, one GEMM on every thread (outside the row blocks). */
static void
recurrent_grad(const tfm_tensor *hs, const tfm_tensor *dzs, tfm_tensor *dr,
               int64_t rows, int64_t u)
{
    if (rows == 0) {
        memset(tfm_tensor_data(dr), 0, tfm_tensor_nbytes(dr));
        return;
    }
    if (dr->dtype == TFM_FLOAT32)
        tfm_gemm_f32_best(u, 4 * u, rows, tfm_tensor_data(hs), 1,
                          tfm_tensor_data(dzs), 0, tfm_tensor_data(dr));
    else
        tfm_gemm_f64(u, 4 * u, rows, tfm_tensor_data(hs), 1,
                     tfm_tensor_data(dzs), 0, tfm_tensor_data(dr));
}

tfm_code
tfm_k_lstm_sequence_grad(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)a; (void)nout; (void)ctx;
    int64_t n = in[2]->shape.dims[0], batch = in[0]->shape.dims[0],
            u = in[0]->shape.dims[1];
    if (u == 0)
        return TFM_OK;
    if (batch > 0) {
        int nt = threads_for(n, batch, u);
        const void *dout = nin > 7 ? D(7) : NULL;
        if (in[0]->dtype == TFM_FLOAT32)
            OVER_ROW_BLOCKS(nt, batch, lstm_seq_grad_rows_float(
                dout, D(0), D(1), D(3), D(4), D(5), D(6), O(0), O(1), O(2),
                n, batch, u, b0, b1));
        else
            OVER_ROW_BLOCKS(nt, batch, lstm_seq_grad_rows_double(
                dout, D(0), D(1), D(3), D(4), D(5), D(6), O(0), O(1), O(2),
                n, batch, u, b0, b1));
    }
    recurrent_grad(in[2], out[0], out[3], n * batch, u);
    return TFM_OK;
}
