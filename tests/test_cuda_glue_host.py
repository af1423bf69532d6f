"""kernels_rnn.c's cuBLAS call, checked on the host (issue 21): the
LSTM sequence ops' GEMMs (h @ R, dz @ R^T, hs^T @ dzs) go through one
row-major wrapper over cuBLAS's column-major GEMM, whose operand order
and leading dimensions no GPU has run yet. This builds kernels_rnn.c
into a host program whose cublasSgemm/cublasDgemm are the documented
column-major reference (checking the leading dimensions as cuBLAS
does), links it with every other symbol left unresolved (only the
wrapper runs), and compares the wrapper's products with row-major
products for every transpose pair and odd sizes."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HARNESS = r"""
#include "kernels/cuda/kernels_rnn.c"
#include <stdio.h>
#include <stdlib.h>

/* cuBLAS's column-major GEMM, as documented, on host memory. */
#define REF_GEMM(NAME, T)                                                    \
cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta,                  \
                    cublasOperation_t tb, int m, int n, int k,               \
                    const T *alpha, const T *A, int lda, const T *B,         \
                    int ldb, const T *beta, T *C, int ldc)                   \
{                                                                            \
    (void)h;                                                                 \
    if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) \
        || ldc < m)                                                          \
        return CUBLAS_STATUS_INVALID_VALUE;                                  \
    for (int i = 0; i < m; i++)                                              \
        for (int j = 0; j < n; j++) {                                        \
            double s = 0;                                                    \
            for (int l = 0; l < k; l++)                                      \
                s += (double)(ta == CUBLAS_OP_N ? A[i + l * lda]             \
                                                : A[l + i * lda]) *          \
                     (double)(tb == CUBLAS_OP_N ? B[l + j * ldb]             \
                                                : B[j + l * ldb]);           \
            C[i + j * ldc] = (T)(*alpha * s + *beta * 0);                    \
        }                                                                    \
    return CUBLAS_STATUS_SUCCESS;                                            \
}
REF_GEMM(cublasSgemm_v2, float)
REF_GEMM(cublasDgemm_v2, double)

int main(void)
{
    int bad = 0;
    for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
    for (int m = 1; m < 6; m += 2)
    for (int n = 1; n < 7; n += 3)
    for (int k = 1; k < 5; k++) {
        double A[64], B[64], C[64];
        for (int i = 0; i < 64; i++) {
            A[i] = rand() % 7 - 3;
            B[i] = rand() % 5 - 2;
        }
        if (gemm(0, NULL, 1, ta, tb, m, n, k, A, B, C))
            return 2;
        /* row-major: A is [m, k] or, when ta, [k, m]; B [k, n] or [n, k] */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int l = 0; l < k; l++)
                    s += (ta ? A[l * m + i] : A[i * k + l]) *
                         (tb ? B[j * k + l] : B[l * n + j]);
                bad += s != C[i * n + j];
            }
        float Af[64], Bf[64], Cf[64];
        for (int i = 0; i < 64; i++) {
            Af[i] = (float)A[i];
            Bf[i] = (float)B[i];
        }
        if (gemm(0, NULL, 0, ta, tb, m, n, k, Af, Bf, Cf))
            return 3;
        for (int i = 0; i < m * n; i++)
            bad += Cf[i] != (float)C[i];
    }
    printf("bad %d\n", bad);
    return bad != 0;
}
"""


def _cuda_include():
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "include", "cublas_v2.h")):
            return os.path.join(d, "include")
    return None


def test_row_major_gemm_wrapper_is_cublas_column_major(tmp_path):
    inc = _cuda_include()
    if not inc or not shutil.which("gcc") or not sys.platform.startswith(
            "linux"):
        pytest.skip("needs the CUDA toolkit's headers and gcc/GNU ld")
    (tmp_path / "h.c").write_text(HARNESS)
    # No PIE: the unresolved symbols (never called) must not need
    # dynamic relocations.
    r = subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-no-pie",
                        "-fno-pic", "-I", os.path.join(ROOT, "csrc"), "-I",
                        inc, str(tmp_path / "h.c"), "-o",
                        str(tmp_path / "h"),
                        "-Wl,--unresolved-symbols=ignore-all"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    run = subprocess.run([str(tmp_path / "h")], capture_output=True,
                         text=True)
    assert run.returncode == 0 and run.stdout.strip() == "bad 0", (
        run.returncode, run.stdout, run.stderr)
