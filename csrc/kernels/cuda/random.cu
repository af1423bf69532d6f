// RandomUniform, RandomStandardNormal, TruncatedNormal and
// RandomUniformInt on the GPU: the CPU's numbers for the same key and
// counter (Note [Random streams] in cpu/random.c). The Philox block and
// the word-to-number conversions are philox.h's own functions, compiled
// here for the device. A thread makes one block's outputs (four float32
// or int32, two float64 or int64, two Box-Muller pairs) or one truncated
// normal group, at the same output positions as the CPU.
//
// The affine steps (u * span + lo, z * sd + mean) are written with the
// _rn intrinsics: nvcc would otherwise contract them into one FMA, while
// the CPU (C11, no contraction) rounds twice. Uniform floats and
// integers are then bit for bit the CPU's; normals go through CUDA's
// logf/sincosf, which differ from glibc's by an ulp or two on some
// inputs (TF's own GPU normals differ from its CPU's the same way).
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

TFM_HOST_DEVICE inline void
normal_f32(const stream_at &s, int64_t b, float mean, float sd, float *o,
           int64_t n)
{
    uint32_t w[4];
    tfm_philox(s.key, tfm_philox_ctr_add(s.ctr, (uint64_t)b), w);
    for (int k = 0; k < 4 && 4 * b + k < n; k += 2) {
        float z0, z1;
        tfm_box_muller_f(w[k], w[k + 1], &z0, &z1);
        o[4 * b + k] = affine(z0, sd, mean);
        if (4 * b + k + 1 < n)
            o[4 * b + k + 1] = affine(z1, sd, mean);
    }
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

// Group g: four float32 draws with |z| < 2, from block g * 256 on.
TFM_HOST_DEVICE inline void
truncated_f32(const stream_at &s, int64_t g, float mean, float sd, float *o,
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
        o[4 * g + k] = affine(z[k], sd, mean);
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

// One kernel per body: thread b runs body(s, b, p0, p1, o, n) for each
// of the `threads` blocks or groups.
#define RANDOM_KERNEL(NAME, T, P)                                          \
    __global__ void k_##NAME(stream_at s, P p0, P p1, T *o, int64_t n,     \
                             int64_t threads)                              \
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
#undef RANDOM_KERNEL

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
