/* CPU kernels of the linalg family (rows in ops/ops_linalg.def). */
#ifndef TFM_KERNELS_CPU_LINALG_H
#define TFM_KERNELS_CPU_LINALG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One row-major product c[m, n] = op(a) @ op(b) (gemm_eigen.cc): a is
 * stored [m, k], or [k, m] when ta; b is [k, n], or [n, k] when tb. */
void tfm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int ta,
                  const float *b, int tb, float *c);
void tfm_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int ta,
                  const double *b, int tb, double *c);
/* The same over complex64 / complex128 (C's float/double complex, laid
 * out as C++'s std::complex). */
void tfm_gemm_c64(int64_t m, int64_t n, int64_t k, const void *a, int ta,
                  const void *b, int tb, void *c);
void tfm_gemm_c128(int64_t m, int64_t n, int64_t k, const void *a, int ta,
                   const void *b, int tb, void *c);

/* One n x n matrix a (row-major) through its LU factorization
 * (lu_eigen.cc); adjoint: use a's transpose. solve: x[n, k] = a^-1 b;
 * solve and inverse return 1 (and write nothing) when a is singular.
 * slogdet: sign (0 when singular) and log|det|. */
int tfm_lu_solve_f32(int64_t n, int64_t k, const float *a, int adjoint,
                     const float *b, float *x);
int tfm_lu_solve_f64(int64_t n, int64_t k, const double *a, int adjoint,
                     const double *b, double *x);
int tfm_lu_inverse_f32(int64_t n, const float *a, int adjoint, float *out);
int tfm_lu_inverse_f64(int64_t n, const double *a, int adjoint,
                       double *out);
float tfm_lu_det_f32(int64_t n, const float *a);
double tfm_lu_det_f64(int64_t n, const double *a);
void tfm_lu_slogdet_f32(int64_t n, const float *a, float *sign,
                        float *log_abs);
void tfm_lu_slogdet_f64(int64_t n, const double *a, double *sign,
                        double *log_abs);

/* One n x n matrix a (row-major) (triangular_eigen.cc). cholesky: the
 * lower factor of a's lower triangle, all NaN when a is not positive
 * definite. trisolve: x[n, k] = op(T)^-1 b, T a's lower (or upper)
 * triangle, op = transpose when adjoint. */
void tfm_cholesky_f32(int64_t n, const float *a, float *l);
void tfm_cholesky_f64(int64_t n, const double *a, double *l);
void tfm_trisolve_f32(int64_t n, int64_t k, const float *a, int lower,
                      int adjoint, const float *b, float *x);
void tfm_trisolve_f64(int64_t n, int64_t k, const double *a, int lower,
                      int adjoint, const double *b, double *x);

/* One m x n matrix a (row-major) (svd_eigen.cc): s[min(m, n)]
 * descending, u [m, p] and v [n, p] row-major with p = min(m, n), or
 * u [m, m] and v [n, n] when full. */
void tfm_svd_f32(int64_t m, int64_t n, const float *a, int full, float *s,
                 float *u, float *v);
void tfm_svd_f64(int64_t m, int64_t n, const double *a, int full,
                 double *s, double *u, double *v);

#ifdef __cplusplus
}
#else

#include "../../ops/op.h"

/* The error of a linalg kernel given a dtype it has no loop for. */
static inline tfm_code
tfm_linalg_no_kernel(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no CPU kernel for %s",
                     tfm_ops[op].name, tfm_dtype_name(d));
}

/* BatchMatMulV2 (matmul.c). */
tfm_code tfm_k_matmul(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx);

/* MatrixSolve, MatrixInverse, MatrixDeterminant and (the same kernel)
 * LogMatrixDeterminant (lu.c). */
tfm_code tfm_k_matrix_solve(tfm_op op, tfm_tensor *const *in, int nin,
                            const tfm_attrs *a, tfm_tensor *const *out,
                            int nout, const tfm_kctx *ctx);
tfm_code tfm_k_matrix_inverse(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx);
tfm_code tfm_k_matrix_determinant(tfm_op op, tfm_tensor *const *in,
                                  int nin, const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx);

/* MatrixBandPart, Cholesky, MatrixTriangularSolve (triangular.c). */
tfm_code tfm_k_band_part(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx);
tfm_code tfm_k_cholesky(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out,
                        int nout, const tfm_kctx *ctx);
tfm_code tfm_k_triangular_solve(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor *const *out,
                                int nout, const tfm_kctx *ctx);

/* Svd (svd.c). */
tfm_code tfm_k_svd(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx);

#endif

#endif
