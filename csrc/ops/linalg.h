/* Shape rules of the linalg family (rows in ops_linalg.def). */
#ifndef TFM_OPS_LINALG_H
#define TFM_OPS_LINALG_H

#include "op.h"

/* BatchMatMulV2: rank >= 2, inner dims agree, batch dims broadcast. */
tfm_code tfm_infer_matmul(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);

/* MatrixInverse, Cholesky, MatrixDeterminant, LogMatrixDeterminant: [..., M, M]
 * float16/32/64 -> the same shape, or one value per matrix. */
tfm_code tfm_infer_square_matrix(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout);
/* MatrixSolve: matrix [..., M, M], rhs [..., M, K] -> [..., M, K]. */
tfm_code tfm_infer_matrix_solve(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout);
/* MatrixBandPart: [..., M, N] -> the same; bounds in i[0], i[1]. */
tfm_code tfm_infer_band_part(tfm_op op, const tfm_meta *in, int nin,
                             const tfm_attrs *a, tfm_meta *out, int *nout);
/* MatrixTriangularSolve: matrix [..., M, M], rhs [..., M, K] with batch
 * dims that broadcast -> [broadcast..., M, K]. */
tfm_code tfm_infer_triangular_solve(tfm_op op, const tfm_meta *in, int nin,
                                    const tfm_attrs *a, tfm_meta *out,
                                    int *nout);
/* Svd: [..., M, N] float16/32/64 -> s [..., P], u [..., M, P or M],
 * v [..., N, P or N]; P = min(M, N), i[0] full_matrices. */
tfm_code tfm_infer_svd(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout);

#endif
