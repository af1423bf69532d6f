/* Elementwise GPU kernels, expanded from the same rows of
 * ../ew_formulas.def as the CPU loops (Note [Elementwise formulas] in
 * ../ew_formulas.h): each row becomes a functor whose float and double
 * calls are the row's F32 and F64 expressions, compiled as device code.
 * Broadcasting follows cpu/loops.h's plan (tfm_bcast): same shape, a
 * scalar operand, or general strides over merged dims. Also casts and
 * SelectV2, which have no formula row.
 *
 * float16 and bfloat16 elements are read into float, run through the
 * row's F32 expression and rounded (to nearest even) once on the store
 * (Elt below): the value the CPU gets by casting to float32, running the
 * float32 kernel and casting back (dispatch.c's run_half_upcast), in one
 * pass instead of three.
 *
 * Kernels say __launch_bounds__(TFM_CU_THREADS, 1), the block every
 * launcher here uses (slice.cu says why the 1). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define TFM_EW_FN static __device__ __forceinline__
#include "../ew_formulas.h"
#include "launch.h"

namespace {

/* An element type as the kernels see it: acc is what the formula
 * computes in, load widens an element to it, from narrows any
 * arithmetic value back (through float for the 16-bit types, as the
 * CPU's casts do: cpu/cast.c). */
template <typename T> struct Elt {
    typedef T acc;
    static __device__ __forceinline__ T load(T v) { return v; }
    template <typename U>
    static __device__ __forceinline__ T from(U v) { return (T)v; }
};
template <> struct Elt<__half> {
    typedef float acc;
    static __device__ __forceinline__ float load(__half v)
    {
        return __half2float(v);
    }
    template <typename U>
    static __device__ __forceinline__ __half from(U v)
    {
        return __float2half_rn((float)v);
    }
};
template <> struct Elt<__nv_bfloat16> {
    typedef float acc;
    static __device__ __forceinline__ float load(__nv_bfloat16 v)
    {
        return __bfloat162float(v);
    }
    template <typename U>
    static __device__ __forceinline__ __nv_bfloat16 from(U v)
    {
        return __float2bfloat16_rn((float)v);
    }
};

/* Float to int32 / int64 as cpu/cast.c's f2i32 / f2i64 give it (x86's
 * answer, which NumPy and TF's CPU kernel give too): NaN, infinities and
 * values out of range become INT_MIN. A plain conversion on the device
 * saturates instead (NaN to 0, +inf to INT_MAX): a tensor would cast to
 * other integers on the GPU than on the CPU. */
__host__ __device__ inline int32_t
float_to_i32(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}

__host__ __device__ inline int64_t
float_to_i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0
               ? (int64_t)v : INT64_MIN;
}

template <> struct Elt<int32_t> {
    typedef int32_t acc;
    static __device__ __forceinline__ int32_t load(int32_t v) { return v; }
    template <typename U>
    static __device__ __forceinline__ int32_t from(U v) { return (int32_t)v; }
    static __device__ __forceinline__ int32_t from(float v)
    {
        return float_to_i32(v);
    }
    static __device__ __forceinline__ int32_t from(double v)
    {
        return float_to_i32(v);
    }
};
template <> struct Elt<int64_t> {
    typedef int64_t acc;
    static __device__ __forceinline__ int64_t load(int64_t v) { return v; }
    template <typename U>
    static __device__ __forceinline__ int64_t from(U v) { return (int64_t)v; }
    static __device__ __forceinline__ int64_t from(float v)
    {
        return float_to_i64(v);
    }
    static __device__ __forceinline__ int64_t from(double v)
    {
        return float_to_i64(v);
    }
};

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
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_unary(const T *__restrict__ x, T *__restrict__ o, int64_t n, F f)
{
    typedef Elt<T> E;
    TFM_CU_GRID_STRIDE(i, n) o[i] = E::from(f(E::load(x[i])));
}

template <typename T, typename F>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_binary_same(const T *__restrict__ x, const T *__restrict__ y,
              T *__restrict__ o, int64_t n, F f)
{
    typedef Elt<T> E;
    TFM_CU_GRID_STRIDE(i, n) o[i] = E::from(f(E::load(x[i]), E::load(y[i])));
}

template <typename T, typename F>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_binary_xs(const T *__restrict__ x, const T *__restrict__ y,
            T *__restrict__ o, int64_t n, F f)
{
    typedef Elt<T> E;
    typename E::acc a = E::load(x[0]);
    TFM_CU_GRID_STRIDE(i, n) o[i] = E::from(f(a, E::load(y[i])));
}

template <typename T, typename F>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_binary_ys(const T *__restrict__ x, const T *__restrict__ y,
            T *__restrict__ o, int64_t n, F f)
{
    typedef Elt<T> E;
    typename E::acc b = E::load(y[0]);
    TFM_CU_GRID_STRIDE(i, n) o[i] = E::from(f(E::load(x[i]), b));
}

template <typename T, typename F>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
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
        o[i] = Elt<T>::from(f(Elt<T>::load(x[a]), Elt<T>::load(y[b])));
    }
}

template <typename T, typename F>
int
binary(const void *x_, const void *y_, void *o_, const tfm_cu_bcast *p,
       cudaStream_t s, F f)
{
    const T *x = (const T *)x_, *y = (const T *)y_;
    T *o = (T *)o_;
    unsigned g = tfm_cu_blocks_for(p->n);
    switch (p->kind) {
    case 0:
        k_binary_same<<<g, TFM_CU_THREADS, 0, s>>>(x, y, o, p->n, f);
        break;
    case 1:
        k_binary_xs<<<g, TFM_CU_THREADS, 0, s>>>(x, y, o, p->n, f);
        break;
    case 2:
        k_binary_ys<<<g, TFM_CU_THREADS, 0, s>>>(x, y, o, p->n, f);
        break;
    default:
        k_binary_gen<<<g, TFM_CU_THREADS, 0, s>>>(x, y, o, *p, f);
        break;
    }
    return (int)cudaGetLastError();
}

/* ty: TFM_CU_F32, _F64, _F16, _BF16 (launch.h). */
template <typename F>
int
binary_any(int ty, const void *x, const void *y, void *o,
           const tfm_cu_bcast *p, cudaStream_t s, F f)
{
    switch (ty) {
    case TFM_CU_F32: return binary<float>(x, y, o, p, s, f);
    case TFM_CU_F64: return binary<double>(x, y, o, p, s, f);
    case TFM_CU_F16: return binary<__half>(x, y, o, p, s, f);
    case TFM_CU_BF16: return binary<__nv_bfloat16>(x, y, o, p, s, f);
    default: return -1;
    }
}

template <typename T, typename F>
int
unary(const void *x, void *o, int64_t n, cudaStream_t s, F f)
{
    k_unary<<<tfm_cu_blocks_for(n), TFM_CU_THREADS, 0, s>>>(
        (const T *)x, (T *)o, n, f);
    return (int)cudaGetLastError();
}

template <typename F>
int
unary_any(int ty, const void *x, void *o, int64_t n, cudaStream_t s, F f)
{
    switch (ty) {
    case TFM_CU_F32: return unary<float>(x, o, n, s, f);
    case TFM_CU_F64: return unary<double>(x, o, n, s, f);
    case TFM_CU_F16: return unary<__half>(x, o, n, s, f);
    case TFM_CU_BF16: return unary<__nv_bfloat16>(x, o, n, s, f);
    default: return -1;
    }
}

template <typename T>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
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
        typename Elt<T>::acc u = Elt<T>::load(x[a]), v = Elt<T>::load(y[b]);
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

template <typename T>
int
compare(int cmp, const void *x, const void *y, void *o,
        const tfm_cu_bcast *p, cudaStream_t s)
{
    k_compare<<<tfm_cu_blocks_for(p->n), TFM_CU_THREADS, 0, s>>>(
        cmp, (const T *)x, (const T *)y, (uint8_t *)o, *p);
    return (int)cudaGetLastError();
}

template <typename A, typename B>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_cast(const A *__restrict__ x, B *__restrict__ o, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = Elt<B>::from(Elt<A>::load(x[i]));
}

template <typename A>
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_to_bool(const A *__restrict__ x, uint8_t *__restrict__ o, int64_t n)
{
    TFM_CU_GRID_STRIDE(i, n) o[i] = Elt<A>::load(x[i]) != 0;
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
    case 5: k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (__half *)o, n); break;
    case 6:
        k_cast<<<g, TFM_CU_THREADS, 0, s>>>(x, (__nv_bfloat16 *)o, n);
        break;
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
__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
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
tfm_cu_binary(int row, int ty, const void *x, const void *y, void *o,
              const tfm_cu_bcast *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (p->n == 0)
        return 0;
    switch (row) {
#define CASE_BINARY(OP)                                                      \
    case TFM_CU_EW_##OP: return binary_any(ty, x, y, o, p, s, F_##OP{});
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
tfm_cu_unary(int row, int ty, const void *x, void *o, int64_t n,
             double prm, int iprm, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return 0;
    switch (row) {
#define CASE_BINARY(OP)
#define CASE_UNARY(OP)                                                       \
    case TFM_CU_EW_##OP: return unary_any(ty, x, o, n, s, F_##OP{});
#define CASE_HEAVY(OP) CASE_UNARY(OP)
#define CASE_PARAM(OP)                                                       \
    case TFM_CU_EW_##OP:                                                     \
        return unary_any(ty, x, o, n, s, F_##OP{prm, iprm != 0});
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
#include "../ew_formulas.def"
#undef EW
    default: return -1;
    }
}

extern "C" int
tfm_cu_compare(int cmp, int ty, const void *x, const void *y, void *o,
               const tfm_cu_bcast *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (p->n == 0)
        return 0;
    if (cmp < 0 || cmp > 5)
        return -1;
    switch (ty) {
    case TFM_CU_F32: return compare<float>(cmp, x, y, o, p, s);
    case TFM_CU_F64: return compare<double>(cmp, x, y, o, p, s);
    case TFM_CU_F16: return compare<__half>(cmp, x, y, o, p, s);
    case TFM_CU_BF16: return compare<__nv_bfloat16>(cmp, x, y, o, p, s);
    default: return -1;
    }
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
    case 5: return cast_from(to, (const __half *)x, o, n, s);
    case 6: return cast_from(to, (const __nv_bfloat16 *)x, o, n, s);
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
