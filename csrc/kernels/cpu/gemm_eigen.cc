// C++ in tfmini is only the *_eigen.cc files: C interfaces over Eigen,
// here its matrix product kernels. No exceptions cross this
// boundary: Eigen throws none with EIGEN_NO_DEBUG, and the caller has
// checked every size.
//
// Threads are ours, not Eigen's (EIGEN_DONT_PARALLELIZE): a big product
// is cut into one block of rows (or columns) of the result per thread,
// each an independent serial Eigen product. Eigen's own parallel GEMM
// makes its threads wait on each other while packing shared panels,
// which collapses when the machine is busy (measured 2-3x slower than
// independent blocks on a loaded 2-core machine); independent blocks
// only meet at the end of the region.

// Eigen's own headers trip -Wall/-Wextra under AVX-512 (unused locals,
// intrinsics' maybe-uninitialized); they are not ours to fix.
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>
#include <complex>
#include <cstdint>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "linalg.h"

namespace {

using Index = Eigen::Index;

// Products below this many multiply-adds run on one thread. Measured on
// 2 cores: 256x64x64 takes 8.6 us split, 13.7 us on one; 128x32x32 gains
// nothing from a split (its ~1 us of fork/join eats the half it saves).
constexpr int64_t kParallelWork = 128 * 64 * 64;
// Blocks start on multiples of this (rows or columns): whole vectors.
constexpr Index kBlockAlign = 16;

template <typename T, int Order>
using ConstMap =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic,
                                   Order>>;
template <typename T>
using OutMap = Eigen::Map<
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

int
threads_for(int64_t work)
{
#ifdef _OPENMP
    if (work >= kParallelWork && !omp_in_parallel())
        return omp_get_max_threads();
#endif
    (void)work;
    return 1;
}

// C = A @ B with A, B views of any storage order.
template <typename T, typename MA, typename MB>
void
product(OutMap<T> &C, const MA &A, const MB &B)
{
    Index m = C.rows(), n = C.cols(), k = A.cols();
    int nt = threads_for((int64_t)m * n * k);
    bool by_rows = m >= n;
    Index len = by_rows ? m : n;
    if (nt < 2 || len < 2 * kBlockAlign) {
        C.noalias() = A * B;
        return;
    }
#ifdef _OPENMP
    #pragma omp parallel num_threads(nt)
    {
        Index t = omp_get_thread_num(), tn = omp_get_num_threads();
        Index per = (len + tn - 1) / tn;
        per = (per + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
        Index s0 = std::min(len, t * per), s1 = std::min(len, s0 + per);
        if (s0 < s1 && by_rows)
            C.middleRows(s0, s1 - s0).noalias() =
                A.middleRows(s0, s1 - s0) * B;
        else if (s0 < s1)
            C.middleCols(s0, s1 - s0).noalias() =
                A * B.middleCols(s0, s1 - s0);
    }
#endif
}

template <typename T>
void
gemm(int64_t m, int64_t n, int64_t k, const T *a, int ta, const T *b,
     int tb, T *c)
{
    OutMap<T> C(c, (Index)m, (Index)n);
    if (k == 0) {
        C.setZero();
        return;
    }
    // a stored [k, m] row-major is op(a) = [m, k] column-major: the
    // transposes are storage orders of the same memory, never copies.
    constexpr int R = Eigen::RowMajor, L = Eigen::ColMajor;
    if (!ta && !tb)
        product<T>(C, ConstMap<T, R>(a, m, k), ConstMap<T, R>(b, k, n));
    else if (ta && !tb)
        product<T>(C, ConstMap<T, L>(a, m, k), ConstMap<T, R>(b, k, n));
    else if (!ta && tb)
        product<T>(C, ConstMap<T, R>(a, m, k), ConstMap<T, L>(b, k, n));
    else
        product<T>(C, ConstMap<T, L>(a, m, k), ConstMap<T, L>(b, k, n));
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

extern "C" void
tfm_gemm_c64(int64_t m, int64_t n, int64_t k, const void *a, int ta,
             const void *b, int tb, void *c)
{
    using C = std::complex<float>;
    gemm<C>(m, n, k, static_cast<const C *>(a), ta,
            static_cast<const C *>(b), tb, static_cast<C *>(c));
}

extern "C" void
tfm_gemm_c128(int64_t m, int64_t n, int64_t k, const void *a, int ta,
              const void *b, int tb, void *c)
{
    using C = std::complex<double>;
    gemm<C>(m, n, k, static_cast<const C *>(a), ta,
            static_cast<const C *>(b), tb, static_cast<C *>(c));
}
