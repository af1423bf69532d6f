/* Shape rules of the reduce family (rows in ops_reduce.def), and the
 * axis helpers that gradient rules of that family need. */
#ifndef TFM_OPS_REDUCE_H
#define TFM_OPS_REDUCE_H

#include <stdbool.h>

#include "op.h"

/* Sum, Mean, Prod, Max, Min, All, Any, ReduceLogSumExp. */
tfm_code tfm_infer_reduce(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);
/* ArgMax, ArgMin. */
tfm_code tfm_infer_argreduce(tfm_op op, const tfm_meta *in, int nin,
                             const tfm_attrs *a, tfm_meta *out, int *nout);
/* Cumsum, Cumprod. */
tfm_code tfm_infer_scan(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);
/* Sort (values, indices). */
tfm_code tfm_infer_sort(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);
/* TopKV2 (values, indices). */
tfm_code tfm_infer_topk(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);

/* The dims of `in` that a reduction with attrs `a` reduces
 * (reduced[d] = true), or an InvalidArgumentError naming op, the axes
 * and the shape. */
tfm_code tfm_reduce_axes(tfm_op op, const tfm_shape *in, const tfm_attrs *a,
                         bool reduced[TFM_MAX_DIMS]);

/* The output shape of a reduction with keepdims=True: `in` with each
 * reduced dim set to 1. A gradient rule reshapes the output gradient to
 * it and broadcasts back to `in`. */
tfm_code tfm_reduce_kept_shape(tfm_op op, const tfm_shape *in,
                               const tfm_attrs *a, tfm_shape *kept);

#endif
