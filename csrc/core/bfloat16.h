/* bfloat16 storage: the top 16 bits of an IEEE float32, in a uint16_t.
 * Kernels compute in float32 (the dispatcher casts around kernels that
 * lack bfloat16; see tfm_kernel_takes in runtime/dispatch.h). */
#ifndef TFM_BFLOAT16_H
#define TFM_BFLOAT16_H

#include <stdint.h>
#include <string.h>

#include "dtype.h"

static inline float
tfm_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest, ties to even, as TF (Eigen) and ml_dtypes do. A NaN
 * would be rounded into an infinity (or lose its payload bits to zero),
 * so it becomes the quiet NaN of its sign instead. */
static inline uint16_t
tfm_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* The 16-bit floats, which most kernels compute in float32. */
static inline int
tfm_dtype_is_half16(tfm_dtype d)
{
    return d == TFM_FLOAT16 || d == TFM_BFLOAT16;
}

#endif
