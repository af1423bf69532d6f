/* Shape rules of the elementwise family. */
#ifndef TFM_OPS_ELEMENTWISE_H
#define TFM_OPS_ELEMENTWISE_H

#include "op.h"

/* Numeric binary: equal dtypes (not bool), broadcast shapes. */
tfm_code tfm_infer_binary(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);
/* Numeric binary over equal shapes, no broadcasting (ReluGrad, as TF's
 * activation gradients): equal dtypes (not bool). */
tfm_code tfm_infer_same_shape(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
/* Float binary (RealDiv, DivNoNan, Atan2): equal float dtypes. */
tfm_code tfm_infer_binary_float(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout);
/* Comparison: equal dtypes (bool allowed), bool out. */
tfm_code tfm_infer_compare(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
/* Logical (1 or 2 inputs): bool only. */
tfm_code tfm_infer_logical(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
/* Bitwise (1 or 2 inputs): integer dtypes only. */
tfm_code tfm_infer_bitwise(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
/* Numeric unary: same dtype and shape out. */
tfm_code tfm_infer_unary(tfm_op op, const tfm_meta *in, int nin,
                         const tfm_attrs *a, tfm_meta *out, int *nout);
/* Float unary (Exp, Tanh, Elu, ...): same float dtype and shape out. */
tfm_code tfm_infer_unary_float(tfm_op op, const tfm_meta *in, int nin,
                               const tfm_attrs *a, tfm_meta *out,
                               int *nout);
/* Float predicate (IsNan, ...): float in, bool out. */
tfm_code tfm_infer_float_pred(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
/* Cast: any dtype to a.dtype. */
tfm_code tfm_infer_cast(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);

#endif
