/* Scalar element functions of the elementwise kernels, shared by the
 * loop instantiations in binary.c, unary.c, ew_*.c.
 *
 * Signed integer arithmetic wraps (two's complement) like TF and NumPy:
 * int32/int64 go through unsigned types because their overflow is
 * undefined in C; narrower types are promoted to int and converted back,
 * which wraps in GCC. Division-like functions report failures through an
 * error bitmask instead of trapping (SIGFPE). Float formulas are in
 * ../ew_formulas.def (Note [Elementwise formulas]). */
#ifndef TFM_KERNELS_EW_SCALAR_H
#define TFM_KERNELS_EW_SCALAR_H

#include <math.h>
#include <stdint.h>

#include "mvec.h"

/* Error bits set by element functions. */
enum {
    TFM_EW_DIV_BY_ZERO = 1,
    TFM_EW_NEGATIVE_POWER = 2,
};

/* ---- wrapping integer arithmetic (no-ops for floats) ---- */

#define TFM_WRAP2_(x, y, OP)                                                 \
    _Generic((x),                                                            \
        int32_t: (int32_t)((uint32_t)(x) OP (uint32_t)(y)),                  \
        int64_t: (int64_t)((uint64_t)(x) OP (uint64_t)(y)),                  \
        default: (x) OP (y))
#define tfm_wadd(x, y) TFM_WRAP2_(x, y, +)
#define tfm_wsub(x, y) TFM_WRAP2_(x, y, -)
#define tfm_wmul(x, y) TFM_WRAP2_(x, y, *)

#define tfm_wneg(x)                                                          \
    _Generic((x),                                                            \
        int32_t: (int32_t)(0u - (uint32_t)(x)),                              \
        int64_t: (int64_t)(0u - (uint64_t)(x)),                              \
        default: -(x))

/* |x|; |INT_MIN| wraps to INT_MIN, as in NumPy and TF. */
#define tfm_abs(x)                                                           \
    _Generic((x),                                                            \
        float: fabsf((float)(x)),                                            \
        double: fabs((double)(x)),                                           \
        uint8_t: (x),                                                        \
        default: ((x) < 0 ? tfm_wneg(x) : (x)))

/* -1, 0, 1; NaN stays NaN and zeros keep their sign, as in NumPy. */
#define tfm_sign(x) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x))

/* (x - y)^2, wrapping for ints. */
#define tfm_sqdiff(x, y) tfm_wmul(tfm_wsub(x, y), tfm_wsub(x, y))

/* NaN-propagating max/min (TF >= 2.4, NumPy). For ints the NaN test
 * folds away. */
#define tfm_max(x, y) (((x) != (x) || (x) > (y)) ? (x) : (y))
#define tfm_min(x, y) (((x) != (x) || (x) < (y)) ? (x) : (y))

/* ---- integer division ---- */

/* One set of functions per signed type: floor and truncating division
 * and modulo. y == 0 sets TFM_EW_DIV_BY_ZERO; MIN / -1 wraps to MIN and
 * MIN % -1 is 0 (NumPy's answers), where C would trap. */
#define TFM_INT_DIV_FNS_(SUF, T, UT)                                         \
static inline T                                                              \
tfm_truncdiv_##SUF(T x, T y, int *err)                                       \
{                                                                            \
    if (y == 0) {                                                            \
        *err |= TFM_EW_DIV_BY_ZERO;                                          \
        return 0;                                                            \
    }                                                                        \
    if (y == -1)                                                             \
        return (T)((UT)0 - (UT)x);                                           \
    return (T)(x / y);                                                       \
}                                                                            \
static inline T                                                              \
tfm_truncmod_##SUF(T x, T y, int *err)                                       \
{                                                                            \
    if (y == 0) {                                                            \
        *err |= TFM_EW_DIV_BY_ZERO;                                          \
        return 0;                                                            \
    }                                                                        \
    if (y == -1)                                                             \
        return 0;                                                            \
    return (T)(x % y);                                                       \
}                                                                            \
static inline T                                                              \
tfm_floordiv_##SUF(T x, T y, int *err)                                       \
{                                                                            \
    if (y == 0) {                                                            \
        *err |= TFM_EW_DIV_BY_ZERO;                                          \
        return 0;                                                            \
    }                                                                        \
    if (y == -1)                                                             \
        return (T)((UT)0 - (UT)x);                                           \
    T q = (T)(x / y), r = (T)(x % y);                                        \
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(q - 1) : q;                \
}                                                                            \
static inline T                                                              \
tfm_floormod_##SUF(T x, T y, int *err)                                       \
{                                                                            \
    if (y == 0) {                                                            \
        *err |= TFM_EW_DIV_BY_ZERO;                                          \
        return 0;                                                            \
    }                                                                        \
    if (y == -1)                                                             \
        return 0;                                                            \
    T r = (T)(x % y);                                                        \
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r;                \
}

TFM_INT_DIV_FNS_(i8, int8_t, uint8_t)
TFM_INT_DIV_FNS_(i16, int16_t, uint16_t)
TFM_INT_DIV_FNS_(i32, int32_t, uint32_t)
TFM_INT_DIV_FNS_(i64, int64_t, uint64_t)
#undef TFM_INT_DIV_FNS_

/* uint8: no signs, no MIN / -1. */
static inline uint8_t
tfm_truncdiv_u8(uint8_t x, uint8_t y, int *err)
{
    if (y == 0) {
        *err |= TFM_EW_DIV_BY_ZERO;
        return 0;
    }
    return (uint8_t)(x / y);
}

static inline uint8_t
tfm_truncmod_u8(uint8_t x, uint8_t y, int *err)
{
    if (y == 0) {
        *err |= TFM_EW_DIV_BY_ZERO;
        return 0;
    }
    return (uint8_t)(x % y);
}

#define tfm_floordiv_u8 tfm_truncdiv_u8
#define tfm_floormod_u8 tfm_truncmod_u8

/* Wider unsigned types: the same, in the operands' own type. */
#define tfm_udiv(x, y, err) ((y) == 0 ? (*(err) |= TFM_EW_DIV_BY_ZERO, 0)   \
                                      : (x) / (y))
#define tfm_umod(x, y, err) ((y) == 0 ? (*(err) |= TFM_EW_DIV_BY_ZERO, 0)   \
                                      : (x) % (y))

/* ---- integer power ---- */

/* x**y by squaring, wrapping like repeated multiplication; the caller
 * truncates to its width (exact modulo 2^width). Negative exponents set
 * TFM_EW_NEGATIVE_POWER, as TF refuses them. */
static inline uint64_t
tfm_ipow_(uint64_t base, int64_t y, int *err)
{
    if (y < 0) {
        *err |= TFM_EW_NEGATIVE_POWER;
        return 0;
    }
    uint64_t r = 1;
    while (y) {
        if (y & 1)
            r *= base;
        base *= base;
        y >>= 1;
    }
    return r;
}

#define tfm_ipow(T, x, y, err) ((T)tfm_ipow_((uint64_t)(int64_t)(x),        \
                                             (int64_t)(y), (err)))

#endif
