// The only C++ in tfmini: a C interface over Eigen's matrix product, so
// the C kernels get a tuned, OpenMP-parallel GEMM (Eigen splits one
// product over all cores itself, and stays serial when called from inside
// a parallel region). No exceptions cross this boundary: Eigen throws
// none with EIGEN_NO_DEBUG and the caller has checked every size.
// Eigen's own headers trip -Wall/-Wextra under AVX-512 (unused locals,
// intrinsics' maybe-uninitialized); they are not ours to fix.
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <cstdint>

#include "linalg.h"

namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic,
                             Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>>;
template <typename T>
using Map = Eigen::Map<RowMat<T>>;

template <typename T>
void
gemm(int64_t m, int64_t n, int64_t k, const T *a, int ta, const T *b,
     int tb, T *c)
{
    using Index = Eigen::Index;
    Map<T> C(c, (Index)m, (Index)n);
    if (k == 0) {
        C.setZero();
        return;
    }
    // Stored shapes: a is [m, k] (or [k, m] when transposed), b [k, n]
    // (or [n, k]); a transposed row-major map is Eigen's column-major
    // view of the same memory, so no copy is made.
    ConstMap<T> A(a, (Index)(ta ? k : m), (Index)(ta ? m : k));
    ConstMap<T> B(b, (Index)(tb ? n : k), (Index)(tb ? k : n));
    if (!ta && !tb)
        C.noalias() = A * B;
    else if (ta && !tb)
        C.noalias() = A.transpose() * B;
    else if (!ta && tb)
        C.noalias() = A * B.transpose();
    else
        C.noalias() = A.transpose() * B.transpose();
}

}  // namespace

extern "C" void
tfm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int ta,
             const float *b, int tb, float *c)
{
    gemm<float>(m, n, k, a, ta, b, tb, c);
}

extern "C" void
tfm_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int ta,
             const double *b, int tb, double *c)
{
    gemm<double>(m, n, k, a, ta, b, tb, c);
}
