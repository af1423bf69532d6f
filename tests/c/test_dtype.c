/* dtype tables, truediv promotion and float16 conversion. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "core/dtype.h"

TEST(sizes_and_names)
{
    static const struct { tfm_dtype d; size_t size; const char *name; }
    want[] = {
        {TFM_BOOL, 1, "bool"},       {TFM_INT8, 1, "int8"},
        {TFM_UINT8, 1, "uint8"},     {TFM_INT16, 2, "int16"},
        {TFM_INT32, 4, "int32"},     {TFM_INT64, 8, "int64"},
        {TFM_FLOAT16, 2, "float16"}, {TFM_FLOAT32, 4, "float32"},
        {TFM_FLOAT64, 8, "float64"}, {TFM_STRING, sizeof(void *), "string"},
        {TFM_BFLOAT16, 2, "bfloat16"}, {TFM_UINT16, 2, "uint16"},
        {TFM_UINT32, 4, "uint32"},   {TFM_UINT64, 8, "uint64"},
        {TFM_COMPLEX64, 8, "complex64"}, {TFM_COMPLEX128, 16, "complex128"},
    };
    CHECK_EQ_INT(sizeof want / sizeof want[0], TFM_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK_EQ_INT(tfm_dtype_size(want[i].d), want[i].size);
        CHECK_EQ_STR(tfm_dtype_name(want[i].d), want[i].name);
    }
    /* The enum order is part of the saved-model format. */
    CHECK_EQ_INT(TFM_BOOL, 0);
    CHECK_EQ_INT(TFM_FLOAT64, 8);
    CHECK_EQ_INT(TFM_COMPLEX128, 15);
    CHECK_EQ_STR(tfm_dtype_name((tfm_dtype)TFM_DTYPE_COUNT), "invalid");
    CHECK_EQ_STR(tfm_dtype_name((tfm_dtype)-1), "invalid");
}

TEST(kinds)
{
    for (int d = 0; d < TFM_DTYPE_COUNT; d++) {
        int is_float = d == TFM_FLOAT16 || d == TFM_FLOAT32 ||
                       d == TFM_FLOAT64 || d == TFM_BFLOAT16;
        int is_unsigned = d == TFM_UINT8 || d == TFM_UINT16 ||
                          d == TFM_UINT32 || d == TFM_UINT64;
        int is_int = is_unsigned || d == TFM_INT8 || d == TFM_INT16 ||
                     d == TFM_INT32 || d == TFM_INT64;
        int is_complex = d == TFM_COMPLEX64 || d == TFM_COMPLEX128;
        CHECK_EQ_INT(tfm_dtype_is_float((tfm_dtype)d), is_float);
        CHECK_EQ_INT(tfm_dtype_is_int((tfm_dtype)d), is_int);
        CHECK_EQ_INT(tfm_dtype_is_unsigned((tfm_dtype)d), is_unsigned);
        CHECK_EQ_INT(tfm_dtype_is_complex((tfm_dtype)d), is_complex);
    }
}

TEST(truediv_promotion)
{
    /* TF: small ints -> float32, int32/int64 -> float64, floats keep. */
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_INT8), TFM_FLOAT32);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_UINT8), TFM_FLOAT32);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_INT16), TFM_FLOAT32);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_INT32), TFM_FLOAT64);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_INT64), TFM_FLOAT64);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_UINT16), TFM_FLOAT32);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_UINT32), TFM_FLOAT64);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_UINT64), TFM_FLOAT64);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_FLOAT16), TFM_FLOAT16);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_FLOAT32), TFM_FLOAT32);
    CHECK_EQ_INT(tfm_dtype_truediv(TFM_FLOAT64), TFM_FLOAT64);
}

static uint32_t
float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float
bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

TEST(half_known_values)
{
    CHECK_EQ_INT(tfm_float_to_half(0.0f), 0x0000);
    CHECK_EQ_INT(tfm_float_to_half(-0.0f), 0x8000);
    CHECK_EQ_INT(tfm_float_to_half(1.0f), 0x3c00);
    CHECK_EQ_INT(tfm_float_to_half(-2.0f), 0xc000);
    CHECK_EQ_INT(tfm_float_to_half(0.5f), 0x3800);
    CHECK_EQ_INT(tfm_float_to_half(65504.0f), 0x7bff);   /* largest */
    CHECK_EQ_INT(tfm_float_to_half(65520.0f), 0x7c00);   /* rounds to inf */
    CHECK_EQ_INT(tfm_float_to_half(1e10f), 0x7c00);
    CHECK_EQ_INT(tfm_float_to_half(-1e10f), 0xfc00);
    CHECK_EQ_INT(tfm_float_to_half(INFINITY), 0x7c00);
    CHECK_EQ_INT(tfm_float_to_half(0.1f), 0x2e66);
    /* smallest subnormal 2^-24, and half of it (tie to even: 0) */
    CHECK_EQ_INT(tfm_float_to_half(ldexpf(1.0f, -24)), 0x0001);
    CHECK_EQ_INT(tfm_float_to_half(ldexpf(1.0f, -25)), 0x0000);
    CHECK_EQ_INT(tfm_float_to_half(ldexpf(1.5f, -25)), 0x0001);
    CHECK_EQ_INT(tfm_float_to_half(ldexpf(1.0f, -14)), 0x0400); /* min norm */
    /* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
    CHECK_EQ_INT(tfm_float_to_half(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    CHECK_EQ_INT(tfm_float_to_half(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    uint16_t nan = tfm_float_to_half(NAN);
    CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
    CHECK(tfm_half_to_float(0x3c00) == 1.0f);
    CHECK(tfm_half_to_float(0x7bff) == 65504.0f);
    CHECK(tfm_half_to_float(0x0001) == ldexpf(1.0f, -24));
    CHECK(isinf(tfm_half_to_float(0xfc00)) &&
          tfm_half_to_float(0xfc00) < 0);
    CHECK(isnan(tfm_half_to_float(0x7e00)));
    CHECK(signbit(tfm_half_to_float(0x8000)));
}

/* Every half value survives half -> float -> half exactly. */
TEST(half_round_trip_exhaustive)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = tfm_half_to_float((uint16_t)h);
        uint16_t back = tfm_float_to_half(f);
        int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan) {
            if (!isnan(f) || (back & 0x7c00) != 0x7c00 || !(back & 0x3ff))
                check_fail(__FILE__, __LINE__, "NaN survives");
        } else if (back != h) {
            char m[128];
            snprintf(m, sizeof m, "half 0x%04x -> %g -> 0x%04x", h, f, back);
            check_fail(__FILE__, __LINE__, m);
            return;
        }
    }
}

/* float -> half rounds to nearest even, checked against the compiler's
 * own _Float16 where it has one, else against a reference built on the
 * half -> float direction (exact) over many float bit patterns. */
static uint16_t
reference_to_half(float f)
{
#ifdef __FLT16_MAX__
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
#else
    /* nearest of the two neighbouring halves, ties to even */
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float g = tfm_half_to_float((uint16_t)h);
        if (isnan(g) || signbit(g) != signbit(f))
            continue;
        double d = fabs((double)g - (double)f);
        if (d < bd || (d == bd && !(h & 1))) {
            bd = d;
            best = (uint16_t)h;
        }
    }
    return best;
#endif
}

TEST(half_rounding_sampled)
{
#ifdef __FLT16_MAX__
    const uint64_t step = 4099;     /* ~1M samples over all floats */
#else
    const uint64_t step = 40000009; /* the reference is slow */
#endif
    for (uint64_t u = 0; u <= 0xffffffffu; u += step) {
        float f = bits_float((uint32_t)u);
        if (isnan(f))
            continue;
        uint16_t got = tfm_float_to_half(f), want = reference_to_half(f);
        if (got != want) {
            char m[160];
            snprintf(m, sizeof m, "float %a (0x%08x) -> half 0x%04x, want "
                     "0x%04x", f, float_bits(f), got, want);
            check_fail(__FILE__, __LINE__, m);
            return;
        }
    }
}

RUN_TESTS(T(sizes_and_names), T(kinds), T(truediv_promotion),
          T(half_known_values), T(half_round_trip_exhaustive),
          T(half_rounding_sampled))
