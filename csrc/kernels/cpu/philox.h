/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11): a counter-based generator. Block b of a stream is a pure
 * function of (key, counter = b), so a tensor of any size is filled in
 * parallel and gives the same numbers on any number of threads. */
#ifndef TFM_KERNELS_PHILOX_H
#define TFM_KERNELS_PHILOX_H

#include <stdint.h>

typedef struct tfm_philox_key {
    uint32_t k[2];
} tfm_philox_key;

static inline void
tfm_philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t r0 = hi1 ^ c[1] ^ k[0];
    uint32_t r2 = hi0 ^ c[3] ^ k[1];
    c[0] = r0;
    c[1] = lo1;
    c[2] = r2;
    c[3] = lo0;
}

/* Four random 32-bit words for counter (block, stream). */
static inline void
tfm_philox(tfm_philox_key key, uint64_t block, uint64_t stream,
           uint32_t out[4])
{
    uint32_t c[4] = {(uint32_t)block, (uint32_t)(block >> 32),
                     (uint32_t)stream, (uint32_t)(stream >> 32)};
    uint32_t k[2] = {key.k[0], key.k[1]};
    for (int r = 0; r < 10; r++) {
        tfm_philox_round(c, k);
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
    out[3] = c[3];
}

/* splitmix64's finalizer: a bijective 64-bit mix, to derive streams. */
static inline uint64_t
tfm_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* [0, 1) with 24 / 53 random bits. */
static inline float
tfm_u01f(uint32_t x)
{
    return (float)(x >> 8) * 0x1.0p-24f;
}

static inline double
tfm_u01d(uint32_t hi, uint32_t lo)
{
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1.0p-53;
}

#endif
