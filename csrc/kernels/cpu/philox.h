/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11): a counter-based generator, and the conversions of its
 * words into floats that TensorFlow's CPU kernels use, so that a seed
 * gives TF's numbers bit for bit (see Note [Random streams] in random.c).
 * Block b of a stream is a pure function of (key, counter + b), so a
 * tensor of any size is filled in parallel with the same result on any
 * number of threads. */
#ifndef TFM_KERNELS_PHILOX_H
#define TFM_KERNELS_PHILOX_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The block function and the conversions below are compiled for the GPU
 * too (cuda/random.cu), so both devices turn a stream's words into the
 * same numbers: under nvcc they are host-and-device functions; for the
 * C compiler the macro is empty. */
#ifdef __CUDACC__
#define TFM_HOST_DEVICE __host__ __device__
#else
#define TFM_HOST_DEVICE
#endif

#define TFM_PHILOX_M0 0xD2511F53u
#define TFM_PHILOX_M1 0xCD9E8D57u
#define TFM_PHILOX_W0 0x9E3779B9u
#define TFM_PHILOX_W1 0xBB67AE85u

/* A 128-bit counter as two 64-bit halves: words 0,1 are lo, 2,3 hi. */
typedef struct tfm_philox_ctr {
    uint64_t lo, hi;
} tfm_philox_ctr;

static inline TFM_HOST_DEVICE tfm_philox_ctr
tfm_philox_ctr_add(tfm_philox_ctr c, uint64_t n)
{
    uint64_t lo = c.lo + n;
    tfm_philox_ctr r = {lo, c.hi + (lo < c.lo)};
    return r;
}

/* The four words of block `c` under `key` (words 0,1 = key lo, hi). */
static inline TFM_HOST_DEVICE void
tfm_philox(uint64_t key, tfm_philox_ctr ctr, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)ctr.lo, c1 = (uint32_t)(ctr.lo >> 32),
             c2 = (uint32_t)ctr.hi, c3 = (uint32_t)(ctr.hi >> 32);
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)TFM_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)TFM_PHILOX_M1 * c2;
        uint32_t r0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t r2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = r0;
        c1 = (uint32_t)p1;
        c2 = r2;
        c3 = (uint32_t)p0;
        k0 += TFM_PHILOX_W0;
        k1 += TFM_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* [0, 1) from the low 23 bits: the float in [1, 2) with those mantissa
 * bits, minus one (TF's Uint32ToFloat). */
static inline TFM_HOST_DEVICE float
tfm_u32_to_float(uint32_t x)
{
    uint32_t bits = (127u << 23) | (x & 0x7fffffu);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 1.0f;
}

/* [0, 1) from 52 bits: 20 of x0 above the 32 of x1 (TF's
 * Uint64ToDouble). */
static inline TFM_HOST_DEVICE double
tfm_u64_to_double(uint32_t x0, uint32_t x1)
{
    uint64_t bits = (1023ull << 52) |
                    ((uint64_t)(x0 & 0xfffffu) << 32) | x1;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d - 1.0;
}

/* Box-Muller, computed as TF computes it: float logf/sqrtf/sincosf, the
 * angle rounded from a double product, u1 floored at 1e-7. Scalar libm
 * on purpose: vector versions differ in the last bits. */
static inline TFM_HOST_DEVICE void
tfm_box_muller_f(uint32_t x0, uint32_t x1, float *f0, float *f1)
{
    float u1 = tfm_u32_to_float(x0);
    if (u1 < 1.0e-7f)
        u1 = 1.0e-7f;
    float v1 = (float)(2.0 * M_PI * (double)tfm_u32_to_float(x1));
    float u2 = sqrtf(-2.0f * logf(u1));
    sincosf(v1, f0, f1);
    *f0 *= u2;
    *f1 *= u2;
}

static inline TFM_HOST_DEVICE void
tfm_box_muller_d(const uint32_t x[4], double *d0, double *d1)
{
    double u1 = tfm_u64_to_double(x[0], x[1]);
    if (u1 < 1.0e-7)
        u1 = 1.0e-7;
    double v1 = 2.0 * M_PI * tfm_u64_to_double(x[2], x[3]);
    double u2 = sqrt(-2.0 * log(u1));
    sincos(v1, d0, d1);
    *d0 *= u2;
    *d1 *= u2;
}

#endif
