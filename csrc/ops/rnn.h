/* Shape rules of the recurrent-cell ops (rows in ops_rnn.def). */
#ifndef TFM_OPS_RNN_H
#define TFM_OPS_RNN_H

#include "op.h"

/* LSTMGates(z [B, 4U], c_prev [B, U]) -> (h, c, gates). */
tfm_code tfm_infer_lstm_gates(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
/* LSTMGatesGrad(dh, dc, gates, c_prev, c) -> (dz, dc_prev). */
tfm_code tfm_infer_lstm_gates_grad(tfm_op op, const tfm_meta *in, int nin,
                                   const tfm_attrs *a, tfm_meta *out,
                                   int *nout);
/* _LSTMSequence(xs, h0, c0, r) -> (hs, cs, gates, h, c). */
tfm_code tfm_infer_lstm_sequence(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout);
/* _LSTMSequenceGrad(dh, dc, hs, cs, gates, c, r[, d_out])
 *   -> (dzs, dh0, dc0, dr). */
tfm_code tfm_infer_lstm_sequence_grad(tfm_op op, const tfm_meta *in,
                                      int nin, const tfm_attrs *a,
                                      tfm_meta *out, int *nout);

#endif
