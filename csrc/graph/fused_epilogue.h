/* Which _FusedMatMul programs cuBLASLt's epilogues compute: see Note
 * [Matmul epilogues on the GPU] in fused_epilogue.c. */
#ifndef TFM_GRAPH_FUSED_EPILOGUE_H
#define TFM_GRAPH_FUSED_EPILOGUE_H

#include "../kernels/cuda/lt_epilogue.h"
#include "fused.h"

/* The epilogue (TFM_LT_EPI_*) that computes program p of a _FusedMatMul
 * whose output is out_dtype/out, given its program inputs' shapes and
 * dtypes (node inputs 2.. : in_shapes[k], in_dtypes[k] for k <
 * p->nin); TFM_LT_EPI_NONE when none does. *bias: the program input
 * that is the bias, or -1. Pure: reads only its arguments. */
int tfm_fused_epilogue(const tfm_fused_prog *p, tfm_dtype out_dtype,
                       const tfm_shape *out, const tfm_shape *in_shapes,
                       const tfm_dtype *in_dtypes, int *bias);

/* Test hook (ctypes, tests/test_fused_epilogue.py): the program built as
 * pass_epilogue.c builds it, from rows of (op, nin, src0, src1, ai)
 * with src as tfm_fused_emit takes it (>= 0 an earlier instruction, -1
 * the product, -2 - k program input k), every instruction of dtype
 * out_dtype; in_dims: TFM_MAX_DIMS entries per input. Returns the
 * epilogue and sets *bias; -1 for rows it cannot build. */
int tfm_fused_epilogue_check(int ninstr, const int64_t *rows, int out_dtype,
                             int out_ndim, const int64_t *out_dims, int nin,
                             const int32_t *in_ndim, const int64_t *in_dims,
                             const int32_t *in_dtypes, int *bias);

#endif
