/* CPU kernels of the recurrent-cell ops (rows in ops/ops_rnn.def). */
#ifndef TFM_KERNELS_CPU_RNN_CELL_H
#define TFM_KERNELS_CPU_RNN_CELL_H

#include "../../ops/op.h"

tfm_code tfm_k_lstm_gates(tfm_op op, tfm_tensor *const *in, int nin,
                          const tfm_attrs *a, tfm_tensor *const *out,
                          int nout, const tfm_kctx *ctx);
tfm_code tfm_k_lstm_gates_grad(tfm_op op, tfm_tensor *const *in, int nin,
                               const tfm_attrs *a, tfm_tensor *const *out,
                               int nout, const tfm_kctx *ctx);
/* The whole time loop (rnn_seq.c). */
tfm_code tfm_k_lstm_sequence(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);
tfm_code tfm_k_lstm_sequence_grad(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx);

#endif
