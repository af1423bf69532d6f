/* Cast between any two dtypes, one loop per (from, to) pair.
 *
 * Float to int truncates toward zero. NaN, infinities and values out of
 * range have no C meaning (undefined behaviour); we give them the
 * answers x86 hardware, NumPy and TF on x86 give: to int32/int64 the
 * "integer indefinite" value INT_MIN; to narrower ints, the int32 result
 * wrapped. Int to narrower int wraps. Anything to bool is `!= 0` (NaN is
 * true). float16 and bfloat16 go through float32 (so float64 to
 * bfloat16 rounds twice, as TF's Eigen cast does). Floats to uint16 take
 * the int32 path, to uint32 the int64 one (wrapped), and to uint64 what
 * clang's branch-free conversion gives TF: in-range values exact,
 * negatives wrapped from int64, the rest 2**63. Complex to a real type
 * keeps the real part (as TF's tf.cast); to bool it is true when either
 * part is nonzero. */
#include "elementwise.h"

#include <complex.h>

#include "../../core/bfloat16.h"

#include <string.h>

#include "loops.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

typedef void (*unary_fn)(const void *, void *, int64_t);

static inline int32_t
f2i32(double v)
{
    return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}

static inline int64_t
f2i64(double v)
{
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
               ? (int64_t)v : INT64_MIN;
}

/* Source element as a value (bools read as 0/1, halves as float). */
#define SRC_b(x) ((x) != 0)
#define SRC_i8(x) (x)
#define SRC_u8(x) (x)
#define SRC_i16(x) (x)
#define SRC_i32(x) (x)
#define SRC_i64(x) (x)
#define SRC_f16(x) tfm_half_to_float(x)
#define SRC_bf16(x) tfm_bf16_to_float(x)
#define SRC_f32(x) (x)
#define SRC_f64(x) (x)
#define SRC_u16(x) (x)
#define SRC_u32(x) (x)
#define SRC_u64(x) (x)

static inline uint64_t
f2u64(double v)
{
    int64_t lo = f2i64(v);
    return lo >= 0 ? (uint64_t)lo
                   : (uint64_t)lo | (uint64_t)f2i64(v - 9223372036854775808.0);
}

/* To integers, from an integer (I) or float (F) source kind. */
#define NARROW_I(T, v) ((T)(v))
#define NARROW_F(T, v) ((T)f2i32(v))
#define I32_I(v) ((int32_t)(v))
#define I32_F(v) f2i32(v)
#define I64_I(v) ((int64_t)(v))
#define I64_F(v) f2i64(v)
#define U32_I(v) ((uint32_t)(v))
#define U32_F(v) ((uint32_t)f2i64(v))
#define U64_I(v) ((uint64_t)(v))
#define U64_F(v) f2u64(v)

/* Complex sources (kind C) read their real part, as floats do, except to
 * bool and to complex, which see the whole value (WHOLE). */
#define SRC_c64(x) crealf(x)
#define SRC_c128(x) creal(x)
#define NARROW_C NARROW_F
#define I32_C I32_F
#define I64_C I64_F
#define U32_C U32_F
#define U64_C U64_F
#define WHOLE_I(SN, x) SRC_##SN(x)
#define WHOLE_F(SN, x) SRC_##SN(x)
#define WHOLE_C(SN, x) (x)

#define CASTS_FROM(SN, ST, K)                                                \
    TFM_UNARY_LOOP(SN##_to_b, ST, uint8_t, WHOLE_##K(SN, x) != 0)            \
    TFM_UNARY_LOOP(SN##_to_i8, ST, int8_t, NARROW_##K(int8_t, SRC_##SN(x)))  \
    TFM_UNARY_LOOP(SN##_to_u8, ST, uint8_t,                                  \
                   NARROW_##K(uint8_t, SRC_##SN(x)))                         \
    TFM_UNARY_LOOP(SN##_to_i16, ST, int16_t,                                 \
                   NARROW_##K(int16_t, SRC_##SN(x)))                         \
    TFM_UNARY_LOOP(SN##_to_i32, ST, int32_t, I32_##K(SRC_##SN(x)))           \
    TFM_UNARY_LOOP(SN##_to_i64, ST, int64_t, I64_##K(SRC_##SN(x)))           \
    TFM_UNARY_LOOP(SN##_to_f16, ST, uint16_t,                                \
                   tfm_float_to_half((float)SRC_##SN(x)))                    \
    TFM_UNARY_LOOP(SN##_to_bf16, ST, uint16_t,                               \
                   tfm_float_to_bf16((float)SRC_##SN(x)))                    \
    TFM_UNARY_LOOP(SN##_to_f32, ST, float, SRC_##SN(x))                      \
    TFM_UNARY_LOOP(SN##_to_f64, ST, double, SRC_##SN(x))                     \
    TFM_UNARY_LOOP(SN##_to_c64, ST, float complex, WHOLE_##K(SN, x))         \
    TFM_UNARY_LOOP(SN##_to_c128, ST, double complex, WHOLE_##K(SN, x))       \
    TFM_UNARY_LOOP(SN##_to_u16, ST, uint16_t,                                \
                   NARROW_##K(uint16_t, SRC_##SN(x)))                        \
    TFM_UNARY_LOOP(SN##_to_u32, ST, uint32_t, U32_##K(SRC_##SN(x)))          \
    TFM_UNARY_LOOP(SN##_to_u64, ST, uint64_t, U64_##K(SRC_##SN(x)))

CASTS_FROM(b, uint8_t, I)
CASTS_FROM(i8, int8_t, I)
CASTS_FROM(u8, uint8_t, I)
CASTS_FROM(i16, int16_t, I)
CASTS_FROM(i32, int32_t, I)
CASTS_FROM(i64, int64_t, I)
CASTS_FROM(f16, uint16_t, F)
CASTS_FROM(f32, float, F)
CASTS_FROM(f64, double, F)
CASTS_FROM(bf16, uint16_t, F)
CASTS_FROM(u16, uint16_t, I)
CASTS_FROM(u32, uint32_t, I)
CASTS_FROM(u64, uint64_t, I)
CASTS_FROM(c64, float complex, C)
CASTS_FROM(c128, double complex, C)

#define ROW(SN)                                                              \
    { [TFM_BOOL] = SN##_to_b, [TFM_INT8] = SN##_to_i8,                       \
      [TFM_UINT8] = SN##_to_u8, [TFM_INT16] = SN##_to_i16,                   \
      [TFM_INT32] = SN##_to_i32, [TFM_INT64] = SN##_to_i64,                  \
      [TFM_FLOAT16] = SN##_to_f16, [TFM_FLOAT32] = SN##_to_f32,              \
      [TFM_FLOAT64] = SN##_to_f64, [TFM_UINT16] = SN##_to_u16,               \
      [TFM_BFLOAT16] = SN##_to_bf16,                                         \
      [TFM_UINT32] = SN##_to_u32, [TFM_UINT64] = SN##_to_u64,                \
      [TFM_COMPLEX64] = SN##_to_c64, [TFM_COMPLEX128] = SN##_to_c128 }

static const unary_fn casts[TFM_DTYPE_COUNT][TFM_DTYPE_COUNT] = {
    [TFM_BOOL] = ROW(b), [TFM_INT8] = ROW(i8), [TFM_UINT8] = ROW(u8),
    [TFM_INT16] = ROW(i16), [TFM_INT32] = ROW(i32), [TFM_INT64] = ROW(i64),
    [TFM_FLOAT16] = ROW(f16), [TFM_FLOAT32] = ROW(f32),
    [TFM_FLOAT64] = ROW(f64), [TFM_BFLOAT16] = ROW(bf16),
    [TFM_UINT16] = ROW(u16), [TFM_UINT32] = ROW(u32), [TFM_UINT64] = ROW(u64),
    [TFM_COMPLEX64] = ROW(c64), [TFM_COMPLEX128] = ROW(c128),
};

/* float16 <-> float32 with the CPU's conversion instructions (F16C: in
 * every x86-64-v3 build): mixed_float16 casts every layer's inputs and
 * weights, and the bit-twiddling conversion, out of line in dtype.c,
 * cost about 20 ns an element (measured: a 1M-element cast 24 ms vs
 * bfloat16's inline one at 0.1 ms). Same rounding (to nearest even),
 * infinities and subnormals; a NaN keeps its payload's top bits where
 * the portable loop quiets it to a bare NaN. Returns 0 when this build
 * has no F16C (the table's loops run then). */
#if defined(__F16C__)
#define HALF_BLOCK 4096

static void
half_block(const void *src, void *dst, int64_t i0, int64_t i1, int to_half)
{
    int64_t i = i0;
    if (to_half) {
        const float *s = src;
        uint16_t *d = dst;
        for (; i + 8 <= i1; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
                                             _MM_FROUND_TO_NEAREST_INT));
        for (; i < i1; i++)
            d[i] = tfm_float_to_half(s[i]);
    } else {
        const uint16_t *s = src;
        float *d = dst;
        for (; i + 8 <= i1; i += 8)
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(
                _mm_loadu_si128((const __m128i *)(s + i))));
        for (; i < i1; i++)
            d[i] = tfm_half_to_float(s[i]);
    }
}

static int
half_cast_fast(tfm_dtype from, tfm_dtype to, const void *src, void *dst,
               int64_t n)
{
    int to_half = from == TFM_FLOAT32 && to == TFM_FLOAT16;
    if (!to_half && !(from == TFM_FLOAT16 && to == TFM_FLOAT32))
        return 0;
    int64_t blocks = (n + HALF_BLOCK - 1) / HALF_BLOCK;
    TFM_PAR_FOR(n >= TFM_PAR_MIN, b, blocks,
        int64_t i1 = (b + 1) * HALF_BLOCK;
        half_block(src, dst, b * HALF_BLOCK, i1 < n ? i1 : n, to_half);
    );
    return 1;
}
#else
static int
half_cast_fast(tfm_dtype from, tfm_dtype to, const void *src, void *dst,
               int64_t n)
{
    (void)from; (void)to; (void)src; (void)dst; (void)n;
    return 0;
}
#endif

tfm_code
tfm_k_cast(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout;
    tfm_dtype from = in[0]->dtype, to = out[0]->dtype;
    const void *src = tfm_tensor_data(in[0]);
    void *dst = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    if (n == 0)
        return TFM_OK;
    if (from == to && from != TFM_BOOL) {
        memcpy(dst, src, (size_t)n * tfm_dtype_size(from));
        return TFM_OK;
    }
    if (half_cast_fast(from, to, src, dst, n))
        return TFM_OK;
    /* A dtype whose loops have not landed yet is an error, not a call
     * through a null pointer. */
    if (!casts[from][to])
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "Cast: no CPU kernel from "
                         "%s to %s", tfm_dtype_name(from),
                         tfm_dtype_name(to));
    casts[from][to](src, dst, n);
    return TFM_OK;
}
