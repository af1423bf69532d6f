#include "dtype.h"

#include <string.h>

const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT] = {
    [TFM_BOOL] = 1,    [TFM_INT8] = 1,    [TFM_UINT8] = 1,
    [TFM_INT16] = 2,   [TFM_INT32] = 4,   [TFM_INT64] = 8,
    [TFM_FLOAT16] = 2, [TFM_FLOAT32] = 4, [TFM_FLOAT64] = 8,
    [TFM_STRING] = sizeof(void *),
    [TFM_BFLOAT16] = 2, [TFM_UINT16] = 2, [TFM_UINT32] = 4, [TFM_UINT64] = 8,
    [TFM_COMPLEX64] = 8, [TFM_COMPLEX128] = 16,
};

const char *const tfm_dtype_names[TFM_DTYPE_COUNT] = {
    [TFM_BOOL] = "bool",       [TFM_INT8] = "int8",
    [TFM_UINT8] = "uint8",     [TFM_INT16] = "int16",
    [TFM_INT32] = "int32",     [TFM_INT64] = "int64",
    [TFM_FLOAT16] = "float16", [TFM_FLOAT32] = "float32",
    [TFM_FLOAT64] = "float64", [TFM_STRING] = "string",
    [TFM_BFLOAT16] = "bfloat16", [TFM_UINT16] = "uint16",
    [TFM_UINT32] = "uint32",   [TFM_UINT64] = "uint64",
    [TFM_COMPLEX64] = "complex64", [TFM_COMPLEX128] = "complex128",
};

tfm_dtype
tfm_dtype_truediv(tfm_dtype d)
{
    switch (d) {
    case TFM_INT8: case TFM_UINT8: case TFM_INT16: case TFM_UINT16:
        return TFM_FLOAT32;
    case TFM_INT32: case TFM_INT64: case TFM_UINT32: case TFM_UINT64:
        return TFM_FLOAT64;
    default:
        return d;
    }
}

/* Half conversion by bit manipulation (round to nearest even), so the
 * core needs no compiler support for _Float16. */
float
tfm_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {            /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t
tfm_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)            /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u)            /* overflow to inf */
        return (uint16_t)(sign | 0x7c00);
    if (absx < 0x38800000u) {           /* subnormal or zero in half */
        if (absx < 0x33000000u)
            return (uint16_t)sign;
        uint32_t man = (absx & 0x7fffff) | 0x800000;
        int shift = 113 - (int)(absx >> 23) + 13;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx >> 13) - ((127 - 15) << 10));
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++;
    return (uint16_t)(sign | half);
}
