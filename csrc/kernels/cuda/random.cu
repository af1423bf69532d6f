// The random ops on the GPU: the CPU's numbers for the same key and
// counter (Note [Random streams] in cpu/random.c). The Philox block and
// the word-to-number conversions are philox.h's own functions, compiled
// here for the device.
//
// RandomUniform, RandomStandardNormal, TruncatedNormal and
// RandomUniformInt: a thread makes one block's outputs (four float32,
// float16 or int32, two float64 or int64, two Box-Muller pairs) or one
// truncated normal group, at the same output positions as the CPU.
// RandomShuffle: the CPU's Fisher-Yates permutation, made on the host,
// then a row gather (see shuffle_perm). Multinomial: each row's CDF as
// the CPU sums it, then one thread per pair of samples (see mn_samples).
//
// The affine steps (u * span + lo, z * sd + mean) are written with the
// _rn intrinsics: nvcc would otherwise contract them into one FMA, while
// the CPU (C11, no contraction) rounds twice. Uniform floats, integers,
// shuffles and samples are then bit for bit the CPU's; normals go
// through CUDA's logf/sincosf, which differ from glibc's by an ulp or
// two on some inputs (TF's own GPU normals differ from its CPU's the
// same way), and a sample reads CUDA's exp, within an ulp of glibc's:
// it differs only where a draw falls within that ulp of a class's
// boundary.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "../cpu/philox.h"
#include "launch.h"
#include "launch_ops.h"

namespace {

struct stream_at {
    uint64_t key;
    tfm_philox_ctr ctr;
};

// z * m + a rounded twice, as the CPU's C11 code rounds it: on the
// device through the _rn intrinsics, which nvcc never contracts into an
// FMA; on the host (tests/test_random_cuda_host.py runs the bodies
// below there) as two plain operations.
TFM_HOST_DEVICE inline float
affine(float z, float m, float a)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(__fmul_rn(z, m), a);
#else
    float p = z * m;
    return p + a;
#endif
}

TFM_HOST_DEVICE inline double
affine(double z, double m, double a)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(__dmul_rn(z, m), a);
#else
    double p = z * m;
    return p + a;
#endif
}

// float16 as cpu/random.c computes it: each float32 step rounded to
// half (its h()), the steps kept apart as in affine().
TFM_HOST_DEVICE inline float
mul_rn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

TFM_HOST_DEVICE inline float
add_rn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

TFM_HOST_DEVICE inline float
round_half(float x)
{
    return __half2float(__float2half_rn(x));
}

// float32 to float16 bits, to nearest even as core/dtype.c's
// tfm_float_to_half; its NaN is 0x7e00 with x's sign, CUDA's 0x7fff.
TFM_HOST_DEVICE inline uint16_t
to_half(float x)
{
    if (x != x) {
        uint32_t bits;
        memcpy(&bits, &x, sizeof bits);
        return (uint16_t)(((bits >> 16) & 0x8000u) | 0x7e00u);
    }
    return __half_as_ushort(__float2half_rn(x));
}

// cpu/random.c's affine_h: z * m + a in half's steps (m and a already
// halves).
TFM_HOST_DEVICE inline uint16_t
affine_h(float z, float m, float a)
{
    return to_half(add_rn(round_half(mul_rn(round_half(z), m)), a));
}

// One output's store: the float32 affine step, or the float16 one.
TFM_HOST_DEVICE inline void
put(float *o, float z, float m, float a)
{
    *o = affine(z, m, a);
}

TFM_HOST_DEVICE inline void
put(uint16_t *o, float z, float m, float a)
{
    *o = affine_h(z, m, a);
}

// ---- one thread's work: block (or group) b's outputs of n ----
// Host-and-device, so that a host build can check them against the CPU
// kernels without a GPU.

TFM_HOST_DEVICE inline void
uniform_f32(const stream_at &s, int64_t b, float lo, float span, float *o,
            int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 4 && 4 * b + k < n; k++)
        o[4 * b + k] = affine(tfm_u32_to_float(w[k]), span, lo);
}

// TF's Uint16ToHalf: ten bits of each word, k / 1024 (exact in half).
TFM_HOST_DEVICE inline void
uniform_f16(const stream_at &s, int64_t b, float lo, float span, uint16_t *o,
            int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 4 && 4 * b + k < n; k++)
        o[4 * b + k] = affine_h((float)(w[k] & 0x3ffu) * (1.0f / 1024.0f),
                                span, lo);
}

TFM_HOST_DEVICE inline void
uniform_f64(const stream_at &s, int64_t b, double lo, double span, double *o,
            int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 2 && 2 * b + k < n; k++)
        o[2 * b + k] = affine(tfm_u64_to_double(w[2 * k], w[2 * k + 1]),
                              span, lo);
}

// Two float32 Box-Muller pairs, stored as float32 or float16.
template <typename T>
TFM_HOST_DEVICE inline void
normal_pairs(const stream_at &s, int64_t b, float mean, float sd, T *o,
             int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 4 && 4 * b + k < n; k += 2) {
        float z0, z1;
        tfm_box_muller_f(w[k], w[k + 1], &z0, &z1);
        put(&o[4 * b + k], z0, sd, mean);
        if (4 * b + k + 1 < n)
            put(&o[4 * b + k + 1], z1, sd, mean);
    }
}

TFM_HOST_DEVICE inline void
normal_f32(const stream_at &s, int64_t b, float mean, float sd, float *o,
           int64_t n)
{
    normal_pairs(s, b, mean, sd, o, n);
}

TFM_HOST_DEVICE inline void
normal_f16(const stream_at &s, int64_t b, float mean, float sd, uint16_t *o,
           int64_t n)
{
    normal_pairs(s, b, mean, sd, o, n);
}

TFM_HOST_DEVICE inline void
normal_f64(const stream_at &s, int64_t b, double mean, double sd, double *o,
           int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    double z0, z1;
    tfm_box_muller_d(w, &z0, &z1);
    o[2 * b] = affine(z0, sd, mean);
    if (2 * b + 1 < n)
        o[2 * b + 1] = affine(z1, sd, mean);
}

// cpu/random.c's word_reader: the words of consecutive blocks, one at a
// time, from where a truncated normal group starts.
struct word_reader {
    stream_at s;
    uint32_t w[4];
    int used;

    TFM_HOST_DEVICE uint32_t next()
    {
        if (used == 4) {
            tfm_philox(s.key, s.ctr, w);
            s.ctr = tfm_philox_ctr_add(s.ctr, 1);
            used = 0;
        }
        return w[used++];
    }
};

// Group g: four float32 draws with |z| < 2, from block g * 256 on,
// stored as float32 or float16.
template <typename T>
TFM_HOST_DEVICE inline void
truncated_fours(const stream_at &s, int64_t g, float mean, float sd, T *o,
                int64_t n)
{
    word_reader r;
    r.s.key = s.key;
    r.s.ctr = tfm_philox_ctr_add(s.ctr, (uint64_t)g * 256);
    r.used = 4;
    float z[4];
    int got = 0;
    while (got < 4) {
        uint32_t x0 = r.next(), x1 = r.next();
        float f[2];
        tfm_box_muller_f(x0, x1, &f[0], &f[1]);
        for (int i = 0; i < 2 && got < 4; i++)
            if (fabsf(f[i]) < 2.0f)
                z[got++] = f[i];
    }
    for (int k = 0; k < 4 && 4 * g + k < n; k++)
        put(&o[4 * g + k], z[k], sd, mean);
}

TFM_HOST_DEVICE inline void
truncated_f32(const stream_at &s, int64_t g, float mean, float sd, float *o,
              int64_t n)
{
    truncated_fours(s, g, mean, sd, o, n);
}

TFM_HOST_DEVICE inline void
truncated_f16(const stream_at &s, int64_t g, float mean, float sd,
              uint16_t *o, int64_t n)
{
    truncated_fours(s, g, mean, sd, o, n);
}

// Group g: two float64 draws with |z| < 2, from block g * 128 on.
TFM_HOST_DEVICE inline void
truncated_f64(const stream_at &s, int64_t g, double mean, double sd,
              double *o, int64_t n)
{
    word_reader r;
    r.s.key = s.key;
    r.s.ctr = tfm_philox_ctr_add(s.ctr, (uint64_t)g * 128);
    r.used = 4;
    double z[2];
    int got = 0;
    while (got < 2) {
        uint32_t x[4];
        for (int i = 0; i < 4; i++)
            x[i] = r.next();
        double d[2];
        tfm_box_muller_d(x, &d[0], &d[1]);
        for (int i = 0; i < 2 && got < 2; i++)
            if (fabs(d[i]) < 2.0)
                z[got++] = d[i];
    }
    for (int k = 0; k < 2 && 2 * g + k < n; k++)
        o[2 * g + k] = affine(z[k], sd, mean);
}

TFM_HOST_DEVICE inline void
uniform_i32(const stream_at &s, int64_t b, uint32_t lo, uint32_t sp,
            int32_t *o, int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 4 && 4 * b + k < n; k++)
        o[4 * b + k] = (int32_t)(lo + (sp ? w[k] % sp : w[k]));
}

TFM_HOST_DEVICE inline void
uniform_i64(const stream_at &s, int64_t b, uint64_t lo, uint64_t span,
            int64_t *o, int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 2 && 2 * b + k < n; k++) {
        uint64_t r = w[2 * k] | ((uint64_t)w[2 * k + 1] << 32);
        o[2 * b + k] = (int64_t)(lo + (span ? r % span : r));
    }
}

// ---- RandomShuffle ----

// cpu/random.c's Fisher-Yates: row i swaps with i + word % (rows - i),
// one word each in stream order (two past 2^32 rows left). Each swap
// reads the last, so the draws cannot be spread over threads; the
// permutation depends only on the stream and the row count, and the
// launcher makes it on the host: a host loop does a step in a few
// nanoseconds, one GPU thread in a dependent global-memory round trip
// per swap (hundreds of times slower past a few thousand rows), and the
// rows then move in parallel as a gather.
TFM_HOST_DEVICE inline void
shuffle_perm(const stream_at &s, int64_t rows, int64_t *perm)
{
    for (int64_t i = 0; i < rows; i++)
        perm[i] = i;
    word_reader r;
    r.s = s;
    r.used = 4;
    for (int64_t i = 0; i < rows - 1; i++) {
        uint64_t left = (uint64_t)(rows - i);
        uint64_t w = r.next();
        if (left > UINT32_MAX)
            w = (w << 32) | r.next();
        int64_t j = i + (int64_t)(w % left);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

// ---- Multinomial ----
// cpu/random.c's tfm_k_multinomial in four passes over [batch, classes]
// logits of type ty (launch.h's TFM_CU_F32 / F64 / F16): each row's
// shift (its largest finite logit, 0 with none), every class's weight
// exp(logit - shift) (0 for a non-finite logit), each row's running sum
// in class order (the CPU's additions, so its CDF bit for bit), then the
// samples. Sample m = b * n + k reads words 2m and 2m + 1 of the one
// stream the CPU reads row after row, which lie in block m / 2: the
// samples are independent, one thread per block.
// Rows run in parallel in every pass. Inside a row, the running sum must
// add in class order (another order rounds differently, and a sample on
// a rounded boundary would change); the shift need not: a row wider than
// MN_CHUNK classes takes the largest finite logit of each MN_CHUNK
// classes in parallel, then the largest of those (mn_shift_part,
// mn_shift_join). A maximum is one of the values whatever the grouping,
// and the first of equal ones is kept as the CPU keeps it, so the shift
// is the CPU's bit for bit (+0 and -0, the only equal values that
// differ, give the same weights).
#define MN_CHUNK 256

TFM_HOST_DEVICE inline double
logit_at(const void *x, int ty, int64_t k)
{
    switch (ty) {
    case TFM_CU_F16:
        return __half2float(__ushort_as_half(((const uint16_t *)x)[k]));
    case TFM_CU_F32:
        return ((const float *)x)[k];
    default:
        return ((const double *)x)[k];
    }
}

TFM_HOST_DEVICE inline void
mn_shift(const void *x, int ty, int64_t b, int64_t classes, double *shift)
{
    double max = 0;
    int any = 0;
    for (int64_t j = 0; j < classes; j++) {
        double v = logit_at(x, ty, b * classes + j);
        if (isfinite(v) && (!any || v > max)) {
            max = v;
            any = 1;
        }
    }
    shift[b] = max;
}

// Element e of the row-major [batch, chunks]: the largest finite logit
// among classes [c * MN_CHUNK, (c + 1) * MN_CHUNK) of row b, -inf with
// none (mn_shift's rule: the first of equal ones).
TFM_HOST_DEVICE inline void
mn_shift_part(const void *x, int ty, int64_t e, int64_t classes,
              int64_t chunks, double *part)
{
    int64_t b = e / chunks, lo = (e % chunks) * MN_CHUNK;
    int64_t hi = lo + MN_CHUNK < classes ? lo + MN_CHUNK : classes;
    double max = -HUGE_VAL;
    for (int64_t j = lo; j < hi; j++) {
        double v = logit_at(x, ty, b * classes + j);
        if (isfinite(v) && v > max)
            max = v;
    }
    part[e] = max;
}

// Row b's shift from its chunks' maxima, in chunk order.
TFM_HOST_DEVICE inline void
mn_shift_join(const double *part, int64_t b, int64_t chunks, double *shift)
{
    double max = -HUGE_VAL;
    for (int64_t c = 0; c < chunks; c++)
        if (part[b * chunks + c] > max)
            max = part[b * chunks + c];
    shift[b] = max == -HUGE_VAL ? 0 : max;
}

// An infinite or NaN logit adds nothing: total + 0 is total.
TFM_HOST_DEVICE inline void
mn_weight(const void *x, int ty, int64_t e, int64_t classes,
          const double *shift, double *cdf)
{
    double v = logit_at(x, ty, e);
    cdf[e] = isfinite(v) ? exp(v - shift[e / classes]) : 0.0;
}

TFM_HOST_DEVICE inline void
mn_scan(double *cdf, int64_t b, int64_t classes, double *total)
{
    double *c = cdf + b * classes;
    double t = 0;
    for (int64_t j = 0; j < classes; j++) {
        t += c[j];
        c[j] = t;
    }
    total[b] = t;
}

// Samples 2t and 2t + 1 of the batch * n: SimplePhilox's RandDouble
// (52 bits of two words) times the row's total, then the first class
// whose CDF exceeds it (upper_bound; classes when none does).
TFM_HOST_DEVICE inline void
mn_samples(const stream_at &s, int64_t t, const double *cdf,
           const double *total, int64_t classes, int64_t n, int64_t m_end,
           int wide, void *o)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)t), w);
    for (int h = 0; h < 2 && 2 * t + h < m_end; h++) {
        int64_t m = 2 * t + h, b = m / n;
        double find = tfm_u64_to_double(w[2 * h], w[2 * h + 1]) * total[b];
        const double *c = cdf + b * classes;
        int64_t lo = 0, hi = classes;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (find < c[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        if (wide)
            ((int64_t *)o)[m] = lo;
        else
            ((int32_t *)o)[m] = (int32_t)lo;
    }
}

// One kernel per body: thread b runs body(s, b, p0, p1, o, n) for each
// of the `threads` blocks or groups. Every kernel here says
// __launch_bounds__(TFM_CU_THREADS, 1), the block its launcher uses
// (slice.cu says why the 1).
#define RANDOM_KERNEL(NAME, T, P)                                          \
    __global__ void __launch_bounds__(TFM_CU_THREADS, 1)                   \
    k_##NAME(stream_at s, P p0, P p1, T *o, int64_t n, int64_t threads)    \
    {                                                                      \
        TFM_CU_GRID_STRIDE(b, threads) { NAME(s, b, p0, p1, o, n); }       \
    }
RANDOM_KERNEL(uniform_f32, float, float)
RANDOM_KERNEL(uniform_f64, double, double)
RANDOM_KERNEL(normal_f32, float, float)
RANDOM_KERNEL(normal_f64, double, double)
RANDOM_KERNEL(truncated_f32, float, float)
RANDOM_KERNEL(truncated_f64, double, double)
RANDOM_KERNEL(uniform_i32, int32_t, uint32_t)
RANDOM_KERNEL(uniform_i64, int64_t, uint64_t)
RANDOM_KERNEL(uniform_f16, uint16_t, float)
RANDOM_KERNEL(normal_f16, uint16_t, float)
RANDOM_KERNEL(truncated_f16, uint16_t, float)
#undef RANDOM_KERNEL

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_shift(const void *x, int ty, int64_t batch, int64_t classes,
           double *shift)
{
    TFM_CU_GRID_STRIDE(b, batch) { mn_shift(x, ty, b, classes, shift); }
}

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_shift_part(const void *x, int ty, int64_t n, int64_t classes,
                int64_t chunks, double *part)
{
    TFM_CU_GRID_STRIDE(e, n) {
        mn_shift_part(x, ty, e, classes, chunks, part);
    }
}

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_shift_join(const double *part, int64_t batch, int64_t chunks,
                double *shift)
{
    TFM_CU_GRID_STRIDE(b, batch) { mn_shift_join(part, b, chunks, shift); }
}

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_weight(const void *x, int ty, int64_t n, int64_t classes,
            const double *shift, double *cdf)
{
    TFM_CU_GRID_STRIDE(e, n) { mn_weight(x, ty, e, classes, shift, cdf); }
}

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_scan(double *cdf, int64_t batch, int64_t classes, double *total)
{
    TFM_CU_GRID_STRIDE(b, batch) { mn_scan(cdf, b, classes, total); }
}

__global__ void __launch_bounds__(TFM_CU_THREADS, 1)
k_mn_samples(stream_at s, const double *cdf, const double *total,
             int64_t classes, int64_t n, int64_t m_end, int wide, void *o,
             int64_t threads)
{
    TFM_CU_GRID_STRIDE(t, threads) {
        mn_samples(s, t, cdf, total, classes, n, m_end, wide, o);
    }
}

}  // namespace

extern "C" int
tfm_cu_random(int dist, int kind, uint64_t key, uint64_t ctr_lo,
              uint64_t ctr_hi, double p0, double p1, uint64_t ilo,
              uint64_t ispan, void *o, int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    stream_at s;
    s.key = key;
    s.ctr.lo = ctr_lo;
    s.ctr.hi = ctr_hi;
    cudaStream_t st = (cudaStream_t)stream;
    // Threads: one per block (a truncated group per thread makes as
    // many outputs as a block does).
    int64_t per = kind == TFM_CU_OUT_F32 || kind == TFM_CU_OUT_I32 ? 4 : 2;
    int64_t threads = (n + per - 1) / per;
    unsigned grid = tfm_cu_blocks_for(threads);
    float f0 = (float)p0, f1 = (float)p1;
#define LAUNCH(NAME, T, A, B)                                              \
    k_##NAME<<<grid, TFM_CU_THREADS, 0, st>>>(s, A, B, (T *)o, n, threads)
    switch (dist * 4 + kind) {
    case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F32:
        LAUNCH(uniform_f32, float, f0, f1);
        break;
    case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F64:
        LAUNCH(uniform_f64, double, p0, p1);
        break;
    case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F32:
        LAUNCH(normal_f32, float, f0, f1);
        break;
    case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F64:
        LAUNCH(normal_f64, double, p0, p1);
        break;
    case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F32:
        LAUNCH(truncated_f32, float, f0, f1);
        break;
    case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F64:
        LAUNCH(truncated_f64, double, p0, p1);
        break;
    case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I32:
        LAUNCH(uniform_i32, int32_t, (uint32_t)ilo, (uint32_t)ispan);
        break;
    case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I64:
        LAUNCH(uniform_i64, int64_t, ilo, ispan);
        break;
    default:
        return -1;
    }
#undef LAUNCH
    return (int)cudaGetLastError();
}

extern "C" int
tfm_cu_random_half(int dist, uint64_t key, uint64_t ctr_lo, uint64_t ctr_hi,
                   float p0, float p1, uint16_t *o, int64_t n, void *stream)
{
    if (n == 0)
        return 0;
    stream_at s;
    s.key = key;
    s.ctr.lo = ctr_lo;
    s.ctr.hi = ctr_hi;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t threads = (n + 3) / 4;
    unsigned grid = tfm_cu_blocks_for(threads);
    switch (dist) {
    case TFM_CU_UNIFORM:
        k_uniform_f16<<<grid, TFM_CU_THREADS, 0, st>>>(s, p0, p1, o, n,
                                                        threads);
        break;
    case TFM_CU_NORMAL:
        k_normal_f16<<<grid, TFM_CU_THREADS, 0, st>>>(s, p0, p1, o, n,
                                                       threads);
        break;
    case TFM_CU_TRUNCATED:
        k_truncated_f16<<<grid, TFM_CU_THREADS, 0, st>>>(s, p0, p1, o, n,
                                                          threads);
        break;
    default:
        return -1;
    }
    return (int)cudaGetLastError();
}

// On the host, into host memory: see shuffle_perm.
extern "C" void
tfm_cu_shuffle_perm(uint64_t key, uint64_t ctr_lo, uint64_t ctr_hi,
                    int64_t rows, int64_t *perm)
{
    stream_at s;
    s.key = key;
    s.ctr.lo = ctr_lo;
    s.ctr.hi = ctr_hi;
    shuffle_perm(s, rows, perm);
}

extern "C" int
tfm_cu_multinomial(int ty, int wide, uint64_t key, uint64_t ctr_lo,
                   uint64_t ctr_hi, const void *x, int64_t batch,
                   int64_t classes, int64_t n, double *scratch, void *o,
                   void *stream)
{
    if (batch == 0 || n == 0)
        return 0;
    if (ty != TFM_CU_F32 && ty != TFM_CU_F64 && ty != TFM_CU_F16)
        return -1;
    stream_at s;
    s.key = key;
    s.ctr.lo = ctr_lo;
    s.ctr.hi = ctr_hi;
    cudaStream_t st = (cudaStream_t)stream;
    double *cdf = scratch, *shift = scratch + batch * classes,
           *total = shift + batch;
    unsigned rows = tfm_cu_blocks_for(batch);
    if (classes > MN_CHUNK) {
        // The chunks' maxima wait in cdf, which the weights fill after.
        int64_t chunks = (classes + MN_CHUNK - 1) / MN_CHUNK;
        k_mn_shift_part<<<tfm_cu_blocks_for(batch * chunks), TFM_CU_THREADS,
                          0, st>>>(x, ty, batch * chunks, classes, chunks,
                                   cdf);
        k_mn_shift_join<<<rows, TFM_CU_THREADS, 0, st>>>(cdf, batch, chunks,
                                                         shift);
    } else {
        k_mn_shift<<<rows, TFM_CU_THREADS, 0, st>>>(x, ty, batch, classes,
                                                    shift);
    }
    k_mn_weight<<<tfm_cu_blocks_for(batch * classes), TFM_CU_THREADS, 0,
                  st>>>(x, ty, batch * classes, classes, shift, cdf);
    k_mn_scan<<<rows, TFM_CU_THREADS, 0, st>>>(cdf, batch, classes, total);
    int64_t m_end = batch * n, threads = (m_end + 1) / 2;
    k_mn_samples<<<tfm_cu_blocks_for(threads), TFM_CU_THREADS, 0, st>>>(
        s, cdf, total, classes, n, m_end, wide, o, threads);
    return (int)cudaGetLastError();
}
