/* Cast between any two dtypes. Float to int truncates toward zero (C and
 * TF agree); to bool is `!= 0`; float16 goes through float32. */
#include "elementwise.h"

#include <string.h>

#include "loops.h"

#define LOAD(T, p, i) ((double)((const T *)(p))[i])

static double
load(tfm_dtype d, const void *p, int64_t i)
{
    switch (d) {
    case TFM_BOOL: return ((const uint8_t *)p)[i] != 0;
    case TFM_INT8: return LOAD(int8_t, p, i);
    case TFM_UINT8: return LOAD(uint8_t, p, i);
    case TFM_INT16: return LOAD(int16_t, p, i);
    case TFM_INT32: return LOAD(int32_t, p, i);
    case TFM_INT64: return LOAD(int64_t, p, i);
    case TFM_FLOAT16: return tfm_half_to_float(((const uint16_t *)p)[i]);
    case TFM_FLOAT32: return LOAD(float, p, i);
    default: return LOAD(double, p, i);
    }
}

/* Fast paths for the casts training code does all the time. */
TFM_UNARY_LOOP(f32_to_f64, float, double, x)
TFM_UNARY_LOOP(f64_to_f32, double, float, x)
TFM_UNARY_LOOP(i32_to_f32, int32_t, float, x)
TFM_UNARY_LOOP(i64_to_f32, int64_t, float, x)
TFM_UNARY_LOOP(i32_to_i64, int32_t, int64_t, x)
TFM_UNARY_LOOP(i64_to_i32, int64_t, int32_t, x)
TFM_UNARY_LOOP(bool_to_f32, uint8_t, float, x != 0)
TFM_UNARY_LOOP(f32_to_i32, float, int32_t, x)

tfm_code
tfm_k_cast(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout)
{
    (void)op; (void)nin; (void)a; (void)nout;
    tfm_dtype from = in[0]->dtype, to = out[0]->dtype;
    const void *src = tfm_tensor_data(in[0]);
    void *dst = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    if (from == to) {
        memcpy(dst, src, (size_t)n * tfm_dtype_size(from));
        return TFM_OK;
    }
#define FAST(F, T, fn) if (from == F && to == T) { fn(src, dst, n); return TFM_OK; }
    FAST(TFM_FLOAT32, TFM_FLOAT64, f32_to_f64)
    FAST(TFM_FLOAT64, TFM_FLOAT32, f64_to_f32)
    FAST(TFM_INT32, TFM_FLOAT32, i32_to_f32)
    FAST(TFM_INT64, TFM_FLOAT32, i64_to_f32)
    FAST(TFM_INT32, TFM_INT64, i32_to_i64)
    FAST(TFM_INT64, TFM_INT32, i64_to_i32)
    FAST(TFM_BOOL, TFM_FLOAT32, bool_to_f32)
    FAST(TFM_FLOAT32, TFM_INT32, f32_to_i32)
#undef FAST
    for (int64_t i = 0; i < n; i++) {
        double v = load(from, src, i);
        switch (to) {
        case TFM_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
        case TFM_INT8: ((int8_t *)dst)[i] = (int8_t)(int64_t)v; break;
        case TFM_UINT8: ((uint8_t *)dst)[i] = (uint8_t)(int64_t)v; break;
        case TFM_INT16: ((int16_t *)dst)[i] = (int16_t)(int64_t)v; break;
        case TFM_INT32: ((int32_t *)dst)[i] = (int32_t)(int64_t)v; break;
        case TFM_INT64: ((int64_t *)dst)[i] = (int64_t)v; break;
        case TFM_FLOAT16:
            ((uint16_t *)dst)[i] = tfm_float_to_half((float)v);
            break;
        case TFM_FLOAT32: ((float *)dst)[i] = (float)v; break;
        default: ((double *)dst)[i] = v; break;
        }
    }
    return TFM_OK;
}
