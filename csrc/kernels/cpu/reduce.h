/* CPU kernels of the reduce family (rows in ops/ops_reduce.def). */
#ifndef TFM_KERNELS_CPU_REDUCE_H
#define TFM_KERNELS_CPU_REDUCE_H

#include <stdbool.h>

#include "../../ops/op.h"

/* Sum, Mean, Prod, Max, Min, All, Any, ReduceLogSumExp. */
tfm_code tfm_k_reduce(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx);
/* ArgMax, ArgMin. */
tfm_code tfm_k_argreduce(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx);
/* Cumsum, Cumprod. */
tfm_code tfm_k_scan(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);
/* Sort, TopKV2. */
tfm_code tfm_k_sort(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);
tfm_code tfm_k_topk(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx);

/* The reduced dims of a rank-`rank` input under a reduction's attrs (see
 * ops_reduce.def). Returns TFM_REDUCE_MASK_OK, or _RANGE / _DUP with
 * *bad = the offending index into a->ints. Raises nothing: the shape rule
 * (ops/reduce.c) turns failures into errors. */
enum { TFM_REDUCE_MASK_OK, TFM_REDUCE_MASK_RANGE, TFM_REDUCE_MASK_DUP };
int tfm_reduce_mask(int rank, const tfm_attrs *a, bool reduced[TFM_MAX_DIMS],
                    int *bad);

#endif
