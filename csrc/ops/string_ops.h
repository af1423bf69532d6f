/* Shape rules of the string family (ops_string.def). */
#ifndef TFM_OPS_STRING_OPS_H
#define TFM_OPS_STRING_OPS_H

#include "op.h"

#define TFM_STRING_INFER(name)                                              \
    tfm_code name(tfm_op op, const tfm_meta *in, int nin,                   \
                  const tfm_attrs *a, tfm_meta *out, int *nout);
TFM_STRING_INFER(tfm_infer_string_length)
TFM_STRING_INFER(tfm_infer_string_join)
TFM_STRING_INFER(tfm_infer_substr)
TFM_STRING_INFER(tfm_infer_string_unary)
TFM_STRING_INFER(tfm_infer_regex)
TFM_STRING_INFER(tfm_infer_string_to_number)
TFM_STRING_INFER(tfm_infer_as_string)
TFM_STRING_INFER(tfm_infer_reduce_join)
TFM_STRING_INFER(tfm_infer_string_hash)
TFM_STRING_INFER(tfm_infer_unicode_script)
TFM_STRING_INFER(tfm_infer_string_split)
TFM_STRING_INFER(tfm_infer_unicode_decode)
TFM_STRING_INFER(tfm_infer_unicode_encode)
TFM_STRING_INFER(tfm_infer_decode_raw)
TFM_STRING_INFER(tfm_infer_string_format)
#undef TFM_STRING_INFER

/* StringFormat's kernel (string_format.c): it formats with tf.print's
 * formatter (state.c), so it lives beside it in the ops layer. */
tfm_code tfm_k_string_format(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);

/* Whether op may see or make string tensors: the string family, Equal
 * and NotEqual, the copy ops (their kernels move elements by size,
 * which Note [String elements] makes sound for strings) and the graph's
 * own nodes. Every other op refuses strings in tfm_op_infer
 * (InvalidArgumentError), so no kernel reads a string slot as a number. */
int tfm_op_takes_strings(tfm_op op);

#endif
