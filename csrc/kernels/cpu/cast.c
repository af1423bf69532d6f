/* Cast between any two dtypes, one loop per (from, to) pair.
 *
 * Float to int truncates toward zero. NaN, infinities and values out of
 * range have no C meaning (undefined behaviour); we give them the
 * answers x86 hardware, NumPy and TF on x86 give: to int32/int64 the
 * "integer indefinite" value INT_MIN; to narrower ints, the int32 result
 * wrapped. Int to narrower int wraps. Anything to bool is `!= 0` (NaN is
 * true). float16 and bfloat16 go through float32 (so float64 to
 * bfloat16 rounds twice, as TF's Eigen cast does). */
#include "elementwise.h"

#include "../../core/bfloat16.h"

#include <string.h>

#include "loops.h"

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

/* To integers, from an integer (I) or float (F) source kind. */
#define NARROW_I(T, v) ((T)(v))
#define NARROW_F(T, v) ((T)f2i32(v))
#define I32_I(v) ((int32_t)(v))
#define I32_F(v) f2i32(v)
#define I64_I(v) ((int64_t)(v))
#define I64_F(v) f2i64(v)

#define CASTS_FROM(SN, ST, K)                                                \
    TFM_UNARY_LOOP(SN##_to_b, ST, uint8_t, SRC_##SN(x) != 0)                 \
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
    TFM_UNARY_LOOP(SN##_to_f64, ST, double, SRC_##SN(x))

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

#define ROW(SN)                                                              \
    { [TFM_BOOL] = SN##_to_b, [TFM_INT8] = SN##_to_i8,                       \
      [TFM_UINT8] = SN##_to_u8, [TFM_INT16] = SN##_to_i16,                   \
      [TFM_INT32] = SN##_to_i32, [TFM_INT64] = SN##_to_i64,                  \
      [TFM_FLOAT16] = SN##_to_f16, [TFM_FLOAT32] = SN##_to_f32,              \
      [TFM_FLOAT64] = SN##_to_f64, [TFM_BFLOAT16] = SN##_to_bf16 }

static const unary_fn casts[TFM_DTYPE_COUNT][TFM_DTYPE_COUNT] = {
    [TFM_BOOL] = ROW(b), [TFM_INT8] = ROW(i8), [TFM_UINT8] = ROW(u8),
    [TFM_INT16] = ROW(i16), [TFM_INT32] = ROW(i32), [TFM_INT64] = ROW(i64),
    [TFM_FLOAT16] = ROW(f16), [TFM_FLOAT32] = ROW(f32),
    [TFM_FLOAT64] = ROW(f64), [TFM_BFLOAT16] = ROW(bf16),
};

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
    casts[from][to](src, dst, n);
    return TFM_OK;
}
