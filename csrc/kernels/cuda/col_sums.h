/* Column sums of a [rows, cols] matrix given by a functor val(r, c),
 * for the .cu files (bias and scale gradients): a 32 x 32 block per 32
 * columns, each thread adding every 32nd row in double, then thread row
 * 0 adding the 32 partial sums in order. No atomics, so a result is the
 * same every run. */
#ifndef TFM_KERNELS_CUDA_COL_SUMS_H
#define TFM_KERNELS_CUDA_COL_SUMS_H

#include <cuda_runtime.h>
#include <stdint.h>

/* Launched with 1024 threads: the bound makes ptxas keep it within 64
 * registers, past which such a launch fails (too many resources). */
template <typename T, typename V>
__global__ void __launch_bounds__(1024)
tfm_k_col_sums(V val, T *__restrict__ out, int64_t rows, int64_t cols)
{
    __shared__ double part[32][33];
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    double s = 0;
    if (c < cols)
        for (int64_t r = threadIdx.y; r < rows; r += 32)
            s += (double)val(r, c);
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        double t = 0;
        for (int k = 0; k < 32; k++)
            t += part[k][threadIdx.x];
        out[c] = (T)t;
    }
}

/* val(r, c) of a row-major matrix with cols columns. */
template <typename T>
struct tfm_cu_rows {
    const T *p;
    int64_t cols;
    __device__ T operator()(int64_t r, int64_t c) const
    {
        return p[r * cols + c];
    }
};

/* out[c] = sum over r of val(r, c); a no-op for no columns. */
template <typename T, typename V>
inline void
tfm_col_sums(V val, T *out, int64_t rows, int64_t cols, cudaStream_t s)
{
    if (cols <= 0)
        return;
    tfm_k_col_sums<<<(unsigned)((cols + 31) / 32), dim3(32, 32), 0, s>>>(
        val, out, rows, cols);
}

#endif
