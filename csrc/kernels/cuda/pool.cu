// MaxPool, AvgPool and their gradients on the GPU, NHWC, float32 and
// float64; and the pad/crop copy the cuDNN convolutions use for TF's
// asymmetric padding.
//
// Why not cuDNN's pooling: it pads symmetrically only (TF's SAME padding
// is often one cell larger at the bottom/right), and its max-pool
// gradient does not promise to route a tie to the first maximum of the
// window, as the CPU kernel does. Ties are common (the zeros after a
// ReLU), so a train step would drift from the CPU's. These kernels
// follow cpu/conv_pool.c cell for cell: same windows, same first-max
// rule, same NaN rule, same order of additions in the gradients (each
// input cell gathers from the windows that cover it, in row-major
// order), so results equal the CPU's but for the compiler's contraction.
//
// Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
// launcher here uses; the 1 (one block an SM at least) keeps ptxas
// from trading registers for occupancy: the bound alone made it spill
// (k_pool_grad on sm_90, k_scan on sm_80).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "launch.h"

namespace {

// Whether v replaces the running maximum m (NaN wins, ties keep m).
template <typename T>
__device__ __forceinline__ bool
beats(T v, T m)
{
    return v > m || (v != v && m == m);
}

// The window of output cell (oy, ox), clipped to the input.
__device__ __forceinline__ void
window(const tfm_cu_pool_geom &g, int64_t oy, int64_t ox, int64_t *h0,
       int64_t *h1, int64_t *w0, int64_t *w1)
{
    int64_t hs = oy * g.sh - g.pt, ws = ox * g.sw - g.pl;
    *h0 = hs < 0 ? 0 : hs;
    *w0 = ws < 0 ? 0 : ws;
    *h1 = hs + g.kh < g.h ? hs + g.kh : g.h;
    *w1 = ws + g.kw < g.w ? ws + g.kw : g.w;
}

// The spatial offset (ih * w + iw) of the first maximum of channel ch in
// the window of (oy, ox) of image xn; -1 for an empty window.
template <typename T>
__device__ int64_t
argmax(const tfm_cu_pool_geom &g, const T *__restrict__ xn, int64_t oy,
       int64_t ox, int64_t ch)
{
    int64_t h0, h1, w0, w1, arg = -1;
    window(g, oy, ox, &h0, &h1, &w0, &w1);
    T best = 0;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            T v = xn[(ih * g.w + iw) * g.c + ch];
            if (arg < 0 || beats(v, best)) {
                best = v;
                arg = ih * g.w + iw;
            }
        }
    return arg;
}

// One output cell per thread: MaxPool, AvgPool, MaxPoolGradGrad.
template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_pool_out(int kind, tfm_cu_pool_geom g, const T *__restrict__ x,
           const T *__restrict__ b, T *__restrict__ y, int64_t total)
{
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t ch = i % g.c, t = i / g.c;
        int64_t ox = t % g.ow;
        t /= g.ow;
        int64_t oy = t % g.oh, n = t / g.oh;
        int64_t img = n * g.h * g.w * g.c;
        if (kind == 4) {
            int64_t arg = argmax(g, x + img, oy, ox, ch);
            y[i] = arg >= 0 ? b[img + arg * g.c + ch] : (T)0;
            continue;
        }
        int64_t h0, h1, w0, w1;
        window(g, oy, ox, &h0, &h1, &w0, &w1);
        T acc = kind == 0 ? (T)-INFINITY : (T)0;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                T v = x[img + (ih * g.w + iw) * g.c + ch];
                if (kind == 0)
                    acc = beats(v, acc) ? v : acc;
                else
                    acc += v;
            }
        if (kind == 1)
            acc *= (T)1 / (T)((h1 - h0) * (w1 - w0));
        y[i] = acc;
    }
}

// ceil(a / b) for b > 0 and any a.
__device__ __forceinline__ int64_t
ceil_div(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// One input cell per thread: MaxPoolGrad (2) and AvgPoolGrad (3) gather
// from every window that covers the cell.
template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_pool_grad(int kind, tfm_cu_pool_geom g, const T *__restrict__ x,
            const T *__restrict__ dy, T *__restrict__ dx, int64_t total)
{
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t ch = i % g.c, t = i / g.c;
        int64_t iw = t % g.w;
        t /= g.w;
        int64_t ih = t % g.h, n = t / g.h;
        // Windows oy with oy * sh - pt <= ih < oy * sh - pt + kh.
        int64_t y0 = ceil_div(ih + g.pt - g.kh + 1, g.sh);
        int64_t y1 = (ih + g.pt) / g.sh;
        int64_t x0 = ceil_div(iw + g.pl - g.kw + 1, g.sw);
        int64_t x1 = (iw + g.pl) / g.sw;
        y0 = y0 < 0 ? 0 : y0;
        x0 = x0 < 0 ? 0 : x0;
        y1 = y1 > g.oh - 1 ? g.oh - 1 : y1;
        x1 = x1 > g.ow - 1 ? g.ow - 1 : x1;
        const T *xn = x + n * g.h * g.w * g.c;
        const T *dyn = dy + n * g.oh * g.ow * g.c;
        T acc = 0;
        for (int64_t oy = y0; oy <= y1; oy++)
            for (int64_t ox = x0; ox <= x1; ox++) {
                T d = dyn[(oy * g.ow + ox) * g.c + ch];
                if (kind == 2) {
                    if (argmax(g, xn, oy, ox, ch) == ih * g.w + iw)
                        acc += d;
                } else {
                    int64_t h0, h1, w0, w1;
                    window(g, oy, ox, &h0, &h1, &w0, &w1);
                    acc += d * ((T)1 / (T)((h1 - h0) * (w1 - w0)));
                }
            }
        dx[i] = acc;
    }
}

template <typename T>
int
pool_as(int kind, const tfm_cu_pool_geom &g, const void *a, const void *b,
        void *o, cudaStream_t s)
{
    if (kind == 2 || kind == 3) {
        int64_t n = g.n * g.h * g.w * g.c;
        if (n)
            k_pool_grad<T><<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
                kind, g, (const T *)a, (const T *)b, (T *)o, n);
    } else {
        int64_t n = g.n * g.oh * g.ow * g.c;
        if (n)
            k_pool_out<T><<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
                kind, g, (const T *)a, (const T *)b, (T *)o, n);
    }
    return (int)cudaGetLastError();
}

template <typename E>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_pad(const E *__restrict__ src, E *__restrict__ dst, int64_t total,
      int64_t sh, int64_t sw, int64_t c, int64_t dh, int64_t dw,
      int64_t top, int64_t left)
{
    TFM_CU_GRID_STRIDE(i, total) {
        int64_t ch = i % c, t = i / c;
        int64_t j = t % dw;
        t /= dw;
        int64_t r = t % dh, n = t / dh;
        int64_t si = r - top, sj = j - left;
        dst[i] = si >= 0 && si < sh && sj >= 0 && sj < sw
                     ? src[((n * sh + si) * sw + sj) * c + ch] : E{};
    }
}

template <typename E>
int
pad_as(const void *src, void *dst, int64_t total, int64_t sh, int64_t sw,
       int64_t c, int64_t dh, int64_t dw, int64_t top, int64_t left,
       cudaStream_t s)
{
    k_pad<E><<<tfm_cu_blocks_for(total), TFM_CU_THREADS, 0, s>>>(
        (const E *)src, (E *)dst, total, sh, sw, c, dh, dw, top, left);
    return (int)cudaGetLastError();
}

}  // namespace

extern "C" int
tfm_cu_pool(int kind, int is64, const tfm_cu_pool_geom *g, const void *a,
            const void *b, void *o, void *stream)
{
    if (kind < 0 || kind > 4)
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    return is64 ? pool_as<double>(kind, *g, a, b, o, s)
                : pool_as<float>(kind, *g, a, b, o, s);
}

extern "C" int
tfm_cu_pad_nhwc(int es, const void *src, void *dst, int64_t n, int64_t sh,
                int64_t sw, int64_t c, int64_t dh, int64_t dw, int64_t top,
                int64_t left, void *stream)
{
    int64_t total = n * dh * dw * c;
    if (total == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (es) {
    case 2: return pad_as<uint16_t>(src, dst, total, sh, sw, c, dh, dw, top, left, s);
    case 4: return pad_as<uint32_t>(src, dst, total, sh, sw, c, dh, dw, top, left, s);
    case 8: return pad_as<uint64_t>(src, dst, total, sh, sw, c, dh, dw, top, left, s);
    default: return -1;
    }
}
