/* Elementwise GPU kernels, expanded from the same rows of
 * ../ew_formulas.def as the CPU loops (Note [Elementwise formulas] in
 * ../ew_formulas.h): each row becomes a functor whose float and double
 * calls are the row's F32 and F64 expressions, compiled as device code.
 * Broadcasting follows cpu/loops.h's plan (tfm_bcast): same shape, a
 * scalar operand, or general strides over merged dims. Also casts and
 * SelectV2, which have no formula row. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define TFM_EW_FN static __device__ __forceinline__
#include "../ew_formulas.h"
#include "launch.h"

namespace {

#define EWF_BINARY(OP, F32, F64)                                             \
    struct F_##OP {                                                          \
        __device__ float operator()(float x, float y) const                  \
        { return (float)(F32); }                                             \
        __device__ double operator()(double x, double y) const               \
        { return (double)(F64); }                                            \
    };
#define EWF_UNARY(OP, F32, F64)                                              \
    struct F_##OP {                                                          \
        __device__ float operator()(float x) const { return (float)(F32); }  \
        __device__ double operator()(double x) const                         \
        { return (double)(F64); }                                            \
    };
#define EWF_HEAVY(OP, F32, F64) EWF_UNARY(OP, F32, F64)
/* PARAM rows read prm (a.f[0], of the element type) and iprm (a.i[0]). */
#define EWF_PARAM(OP, F32, F64)                                              \
    struct F_##OP {                                                          \
        double prm_;                                                         \
        int iprm;                                                            \
        __device__ float operator()(float x) const                           \
        {                                                                    \
            const float prm = (float)prm_;                                   \
            (void)prm;                                                       \
            return (float)(F32);                                             \
        }                                                                    \
        __device__ double operator()(double x) const                         \
        {                                                                    \
            const double prm = prm_;                                         \
            (void)prm;                                                       \
            return (double)(F64);                                            \
        }                                                                    \
    };
#define EWF_OWN(OP, F32, F64)
#define EW(OP, LOOP, F32, F64) EWF_##LOOP(OP, F32, F64)
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW

template <typename T, typename F>
__global__ void
k_unary(const T *__restrict__ x, T *__restrict__ o, int64_t n, F f)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = f(x[i]);
}

template <typename T, typename F>
__global__ void
k_binary_same(const T *__restrict__ x, const T *__restrict__ y,
              T *__restrict__ o, int64_t n, F f)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = f(x[i], y[i]);
}

template <typename T, typename F>
__global__ void
k_binary_xs(const T *__restrict__ x, const T *__restrict__ y,
            T *__restrict__ o, int64_t n, F f)
{
    T a = x[0];
    TFM_CU_GRID_STRIDE(i, n) o[i] = f(a, y[i]);
}

template <typename T, typename F>
__global__ void
k_binary_ys(const T *__restrict__ x, const T *__restrict__ y,
            T *__restrict__ o, int64_t n, F f)
{
    T b = y[0];
    TFM_CU_GRID_STRIDE(i, n) o[i] = f(x[i], b);
}

template <typename T, typename F>
__global__ void
k_binary_gen(const T *__restrict__ x, const T *__restrict__ y,
             T *__restrict__ o, tfm_cu_bcast p, F f)
{
    TFM_CU_GRID_STRIDE(i, p.n) {
        int64_t r = i, a = 0, b = 0;
        for (int d = p.ndim - 1; d >= 0; d--) {
            int64_t k = r % p.dims[d];
            r /= p.dims[d];
            a += k * p.sa[d];
            b += k * p.sb[d];
        }
        o[i] = f(x[a], y[b]);
    }
}

template <typename T, typename F>
int
binary(const void *x_, const void *y_, void *o_, const tfm_cu_bcast *p,
       cudaStream_t s, F f)
{
    const T *x = (const T *)x_, *y = (const T *)y_;
    T *o = (T *)o_;
    unsigned g = tfm_cu_blocks_for(p->n), t = TFM_CU_THREADS;
    switch (p->kind) {
    case 0: k_binary_same<<<g, t, 0, s>>>(x, y, o, p->n, f); break;
    case 1: k_binary_xs<<<g, t, 0, s>>>(x, y, o, p->n, f); break;
    case 2: k_binary_ys<<<g, t, 0, s>>>(x, y, o, p->n, f); break;
    default: k_binary_gen<<<g, t, 0, s>>>(x, y, o, *p, f); break;
    }
    return (int)cudaGetLastError();
}

template <typename F>
int
binary_any(int is64, const void *x, const void *y, void *o,
           const tfm_cu_bcast *p, cudaStream_t s, F f)
{
    return is64 ? binary<double>(x, y, o, p, s, f)
                : binary<float>(x, y, o, p, s, f);
}

template <typename F>
int
unary_any(int is64, const void *x, void *o, int64_t n, cudaStream_t s, F f)
{
    unsigned g = tfm_cu_blocks_for(n), t = TFM_CU_THREADS;
    if (is64)
        k_unary<<<g, t, 0, s>>>((const double *)x, (double *)o, n, f);
    else
        k_unary<<<g, t, 0, s>>>((const float *)x, (float *)o, n, f);
    return (int)cudaGetLastError();
}

template <typename T>
__global__ void
k_compare(int cmp, const T *__restrict__ x, const T *__restrict__ y,
          uint8_t *__restrict__ o, tfm_cu_bcast p)
{
    TFM_CU_GRID_STRIDE(i, p.n) {
        int64_t a = p.kind == 1 ? 0 : i, b = p.kind == 2 ? 0 : i;
        if (p.kind == 3) {
            int64_t r = i;
            a = b = 0;
            for (int d = p.ndim - 1; d >= 0; d--) {
                int64_t k = r % p.dims[d];
                r /= p.dims[d];
                a += k * p.sa[d];
                b += k * p.sb[d];
            }
        }
        T u = x[a], v = y[b];
        bool r;
        switch (cmp) {
        case 0: r = u == v; break;
        case 1: r = u != v; break;
        case 2: r = u < v; break;
        case 3: r = u <= v; break;
        case 4: r = u > v; break;
        default: r = u >= v; break;
        }
        o[i] = r;
    }
}

template <typename A, typename B>
__global__ void
k_cast(const A *__restrict__ x, B *__restrict__ o, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = (B)x[i];
}

template <typename A>
__global__ void
k_to_bool(const A *__restrict__ x, uint8_t *__restrict__ o, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = x[i] != (A)0;
}

template <typename A>
int
cast_from(int to, const A *x, void *o, int64_t n, cudaStream_t s)
{
    unsigned g = tfm_cu_blocks_for(n);
    switch (to) {
    case 0: k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (float *)o, n); break;
    case 1: k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (double *)o, n); break;
    case 2: k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (int32_t *)o, n); break;
    case 3: k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (int64_t *)o, n); break;
    case 4: k_to_bool<<<g, TFM_CU_THREADS, 0, s>>>(x, (uint8_t *)o, n); break;
    default: return -1;
    }
    return (int)cudaGetLastError();
}

struct sel_plan {
    int ndim;
    int64_t dims[TFM_CU_MAX_DIMS];
    int64_t sc[TFM_CU_MAX_DIMS], sx[TFM_CU_MAX_DIMS], sy[TFM_CU_MAX_DIMS];
};

template <typename T>
__global__ void
k_select(const uint8_t *__restrict__ c, const T *__restrict__ x,
         const T *__restrict__ y, T *__restrict__ o, sel_plan p, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n) {
        int64_t r = i, a = 0, b = 0, q = 0;
        for (int d = p.ndim - 1; d >= 0; d--) {
            int64_t k = r % p.dims[d];
            r /= p.dims[d];
            q += k * p.sc[d];
            a += k * p.sx[d];
            b += k * p.sy[d];
        }
        o[i] = c[q] ? x[a] : y[b];
    }
}

} // namespace

extern "C" int
tfm_cu_binary(int row, int is64, const void *x, const void *y, void *o,
              const tfm_cu_bcast *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (p->n == 0)
        return 0;
    switch (row) {
#define CASE_BINARY(OP)                                                      \
    case TFM_CU_EW_##OP: return binary_any(is64, x, y, o, p, s, F_##OP{});
#define CASE_UNARY(OP)
#define CASE_HEAVY(OP)
#define CASE_PARAM(OP)
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
#include "../ew_formulas.def"
#undef EW
#undef CASE_BINARY
#undef CASE_UNARY
#undef CASE_HEAVY
#undef CASE_PARAM
#undef CASE_OWN
    default: return -1;
    }
}

extern "C" int
tfm_cu_unary(int row, int is64, const void *x, void *o, int64_t n,
             double prm, int iprm, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    switch (row) {
#define CASE_BINARY(OP)
#define CASE_UNARY(OP)                                                       \
    case TFM_CU_EW_##OP: return unary_any(is64, x, o, n, s, F_##OP{});
#define CASE_HEAVY(OP) CASE_UNARY(OP)
#define CASE_PARAM(OP)                                                       \
    case TFM_CU_EW_##OP:                                                     \
        return unary_any(is64, x, o, n, s, F_##OP{prm, iprm != 0});
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
#include "../ew_formulas.def"
#undef EW
    default: return -1;
    }
}

extern "C" int
tfm_cu_compare(int cmp, int is64, const void *x, const void *y, void *o,
               const tfm_cu_bcast *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (p->n == 0)
        return 0;
    if (cmp < 0 || cmp > 5)
        return -1;
    unsigned g = tfm_cu_blocks_for(p->n);
    if (is64)
        k_compare<<<g, TFM_CU_THREADS, 0, s>>>(cmp, (const double *)x,
                                        (const double *)y, (uint8_t *)o, *p);
    else
        k_compare<<<g, TFM_CU_THREADS, 0, s>>>(cmp, (const float *)x,
                                        (const float *)y, (uint8_t *)o, *p);
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_cast(int from, int to, const void *x, void *o, int64_t n,
            void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    switch (from) {
    case 0: return cast_from(to, (const float *)x, o, n, s);
    case 1: return cast_from(to, (const double *)x, o, n, s);
    case 2: return cast_from(to, (const int32_t *)x, o, n, s);
    case 3: return cast_from(to, (const int64_t *)x, o, n, s);
    case 4: return cast_from(to, (const uint8_t *)x, o, n, s);
    default: return -1;
    }
}

extern "C" int
tfm_cu_select(int es, const void *c, const void *x, const void *y, void *o,
              int ndim, const int64_t *dims, const int64_t *sc,
              const int64_t *sx, const int64_t *sy, int64_t n, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    if (ndim > TFM_CU_MAX_DIMS)
        return -1;
    sel_plan p;
    p.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        p.dims[d] = dims[d];
        p.sc[d] = sc[d];
        p.sx[d] = sx[d];
        p.sy[d] = sy[d];
    }
    unsigned g = tfm_cu_blocks_for(n);
    const uint8_t *cc = (const uint8_t *)c;
    switch (es) {
    case 1: k_select<<<g, TFM_CU_THREADS, 0, s>>>(cc, (const uint8_t *)x,
            (const uint8_t *)y, (uint8_t *)o, p, n); break;
    case 2: k_select<<<g, TFM_CU_THREADS, 0, s>>>(cc, (const uint16_t *)x,
            (const uint16_t *)y, (uint16_t *)o, p, n); break;
    case 4: k_select<<<g, TFM_CU_THREADS, 0, s>>>(cc, (const uint32_t *)x,
            (const uint32_t *)y, (uint32_t *)o, p, n); break;
    case 8: k_select<<<g, TFM_CU_THREADS, 0, s>>>(cc, (const uint64_t *)x,
            (const uint64_t *)y, (uint64_t *)o, p, n); break;
    default: return -1;
    }
    return (int)cudaGetLastError();
}
