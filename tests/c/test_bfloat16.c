/* bfloat16 conversion (core/bfloat16.h): known values, ties to even,
 * NaN kept with its sign, and a reference rounding written the slow way
 * (through float64: nearest of the two neighbours, ties to even). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/bfloat16.h"

static float
bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The bfloat16 nearest f (both neighbours compared in float64). */
static uint16_t
reference_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    if (isinf(f))
        return lo;
    double dlo = tfm_bf16_to_float(lo);
    double dhi = (hi & 0x7f80u) == 0x7f80u && (lo & 0x7fffu) == 0x7f7fu
                     ? (f < 0 ? -1.0 : 1.0) * ldexp(1.0, 128)  /* to inf */
                     : tfm_bf16_to_float(hi);
    double x = f, a = fabs(x - dlo), b = fabs(dhi - x);
    if (a < b || (a == b && !(lo & 1)))
        return lo;
    return hi;
}

TEST(known_values)
{
    CHECK_EQ_INT(tfm_float_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(tfm_float_to_bf16(-2.0f), 0xc000);
    CHECK_EQ_INT(tfm_float_to_bf16(1.00390625f), 0x3f80);  /* tie: even */
    CHECK_EQ_INT(tfm_float_to_bf16(1.01171875f), 0x3f82);  /* tie: up */
    CHECK_EQ_INT(tfm_float_to_bf16(3.4e38f), 0x7f80);      /* to inf */
    CHECK_EQ_INT(tfm_float_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(tfm_float_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(tfm_float_to_bf16(bits_float(0x7f800001u)), 0x7fc0);
    CHECK_EQ_INT(tfm_float_to_bf16(bits_float(0xffffffffu)), 0xffc0);
    CHECK(tfm_bf16_to_float(0x4049) == 3.140625f);
    CHECK(tfm_dtype_is_half16(TFM_BFLOAT16) &&
          tfm_dtype_is_half16(TFM_FLOAT16) &&
          !tfm_dtype_is_half16(TFM_FLOAT32));
}

TEST(round_trip_exhaustive)
{
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        float f = tfm_bf16_to_float((uint16_t)h);
        if (isnan(f))
            continue;
        CHECK_EQ_INT(tfm_float_to_bf16(f), h);
    }
}

TEST(rounding_sampled)
{
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65521) {
        float f = bits_float((uint32_t)u);
        if (isnan(f)) {
            uint16_t h = tfm_float_to_bf16(f);
            CHECK(isnan(tfm_bf16_to_float(h)));
            CHECK_EQ_INT(h >> 15, (uint32_t)u >> 31);
            continue;
        }
        uint16_t got = tfm_float_to_bf16(f), want = reference_to_bf16(f);
        if (got != want) {
            char m[160];
            snprintf(m, sizeof m, "float %a -> bf16 0x%04x, want 0x%04x",
                     f, got, want);
            check_fail(__FILE__, __LINE__, m);
            return;
        }
    }
}

RUN_TESTS(T(known_values), T(round_trip_exhaustive), T(rounding_sampled))
