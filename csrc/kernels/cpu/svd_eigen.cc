// A C interface over Eigen's divide-and-conquer SVD (BDCSVD), for Svd
// (svd.c). TF's CPU kernel uses the same decomposition, so singular
// values agree with TF's to rounding; the vectors are unique only up to
// sign (and rotation within repeated values). One matrix per call; svd.c
// loops over the batch and owns the threads.
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <Eigen/SVD>
#include <cstdint>

#include "linalg.h"

namespace {

template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic,
                             Eigen::RowMajor>;

template <typename T>
void
svd(int64_t m, int64_t n, const T *a, int full, T *s, T *u, T *v)
{
    int64_t p = m < n ? m : n;
    Mat<T> x = Eigen::Map<const RowMat<T>>(a, m, n);
    unsigned int opts = full ? (Eigen::ComputeFullU | Eigen::ComputeFullV)
                             : (Eigen::ComputeThinU | Eigen::ComputeThinV);
    Eigen::BDCSVD<Mat<T>> d(x, opts);
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(s, p) =
        d.singularValues();
    int64_t cu = full ? m : p, cv = full ? n : p;
    Eigen::Map<RowMat<T>>(u, m, cu) = d.matrixU();
    Eigen::Map<RowMat<T>>(v, n, cv) = d.matrixV();
}

}  // namespace

extern "C" {

void
tfm_svd_f32(int64_t m, int64_t n, const float *a, int full, float *s,
            float *u, float *v)
{
    svd<float>(m, n, a, full, s, u, v);
}

void
tfm_svd_f64(int64_t m, int64_t n, const double *a, int full, double *s,
            double *u, double *v)
{
    svd<double>(m, n, a, full, s, u, v);
}

}  // extern "C"
