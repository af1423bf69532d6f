/* Binary arithmetic kernels (and ReluGrad): float dtypes run the loops
 * of ../ew_formulas.def (ew_float.c); integer dtypes, whose wrapping and
 * division errors have no float formula, one loop per (op, dtype) from
 * loops.h with element functions from ew_scalar.h. Comparisons, logical
 * and bitwise ops are in ew_compare.c. */
#include "elementwise.h"
#include "ew_complex.h"

#include "ew_float.h"
#include "ew_scalar.h"
#include "int_loops.h"
#include "string_kernels.h"

typedef void (*binary_fn)(const void *, const void *, void *,
                          const tfm_bcast *);
typedef int (*binary_err_fn)(const void *, const void *, void *,
                             const tfm_bcast *);

TFM_INT_LOOPS(TFM_BINARY_LOOP, add, tfm_wadd(x, y))
TFM_INT_LOOPS(TFM_BINARY_LOOP, sub, tfm_wsub(x, y))
TFM_INT_LOOPS(TFM_BINARY_LOOP, mul, tfm_wmul(x, y))
TFM_INT_LOOPS(TFM_BINARY_LOOP, max, tfm_max(x, y))
TFM_INT_LOOPS(TFM_BINARY_LOOP, min, tfm_min(x, y))
/* TF has no SquaredDifference for uint16/32/64. */
TFM_INT8_64_LOOPS(TFM_BINARY_LOOP, sqdiff, tfm_sqdiff(x, y))
TFM_INT_LOOPS(TFM_BINARY_LOOP, relugrad, y > 0 ? x : 0)

/* Integer division, modulo and power can fail: these loops return an
 * error mask. */
#define DIV_LOOPS(OPNAME)                                                    \
    TFM_BINARY_LOOP_ERR(OPNAME##_i8, int8_t, int8_t,                         \
                        tfm_##OPNAME##_i8(x, y, &err))                       \
    TFM_BINARY_LOOP_ERR(OPNAME##_u8, uint8_t, uint8_t,                       \
                        tfm_##OPNAME##_u8(x, y, &err))                       \
    TFM_BINARY_LOOP_ERR(OPNAME##_i16, int16_t, int16_t,                      \
                        tfm_##OPNAME##_i16(x, y, &err))                      \
    TFM_BINARY_LOOP_ERR(OPNAME##_i32, int32_t, int32_t,                      \
                        tfm_##OPNAME##_i32(x, y, &err))                      \
    TFM_BINARY_LOOP_ERR(OPNAME##_i64, int64_t, int64_t,                      \
                        tfm_##OPNAME##_i64(x, y, &err))

#define UDIV_LOOPS(OPNAME)                                                   \
    TFM_BINARY_LOOP_ERR(OPNAME##_u16, uint16_t, uint16_t,                    \
                        tfm_udiv(x, y, &err))                                \
    TFM_BINARY_LOOP_ERR(OPNAME##_u32, uint32_t, uint32_t,                    \
                        tfm_udiv(x, y, &err))                                \
    TFM_BINARY_LOOP_ERR(OPNAME##_u64, uint64_t, uint64_t,                    \
                        tfm_udiv(x, y, &err))
#define UMOD_LOOPS(OPNAME)                                                   \
    TFM_BINARY_LOOP_ERR(OPNAME##_u16, uint16_t, uint16_t,                    \
                        tfm_umod(x, y, &err))                                \
    TFM_BINARY_LOOP_ERR(OPNAME##_u32, uint32_t, uint32_t,                    \
                        tfm_umod(x, y, &err))                                \
    TFM_BINARY_LOOP_ERR(OPNAME##_u64, uint64_t, uint64_t,                    \
                        tfm_umod(x, y, &err))

DIV_LOOPS(floordiv)
DIV_LOOPS(floormod)
DIV_LOOPS(truncdiv)
DIV_LOOPS(truncmod)
/* Unsigned floor and truncation agree; TF has no TruncateMod (nor Pow)
 * for uint16/32/64. */
UDIV_LOOPS(floordiv)
UMOD_LOOPS(floormod)
UDIV_LOOPS(truncdiv)

#define INT_POW_LOOP(SUF, T)                                                 \
    TFM_BINARY_LOOP_ERR(pow_##SUF, T, T, tfm_ipow(T, x, y, &err))
INT_POW_LOOP(i8, int8_t)
INT_POW_LOOP(u8, uint8_t)
INT_POW_LOOP(i16, int16_t)
INT_POW_LOOP(i32, int32_t)
INT_POW_LOOP(i64, int64_t)

/* Loops that cannot fail. */
static binary_fn
lookup(tfm_op op, tfm_dtype d)
{
    if (d == TFM_FLOAT32 || d == TFM_FLOAT64)
        return tfm_ew_float_binary(op, d);
    static const binary_fn add[TFM_DTYPE_COUNT] = TFM_INT_TABLE(add);
    static const binary_fn sub[TFM_DTYPE_COUNT] = TFM_INT_TABLE(sub);
    static const binary_fn mul[TFM_DTYPE_COUNT] = TFM_INT_TABLE(mul);
    static const binary_fn max[TFM_DTYPE_COUNT] = TFM_INT_TABLE(max);
    static const binary_fn min[TFM_DTYPE_COUNT] = TFM_INT_TABLE(min);
    static const binary_fn sqdiff[TFM_DTYPE_COUNT] =
        TFM_INT8_64_TABLE(sqdiff);
    static const binary_fn relugrad[TFM_DTYPE_COUNT] = TFM_INT_TABLE(relugrad);
    switch (op) {
    case TFM_OP_ADD: return add[d];
    case TFM_OP_SUB: return sub[d];
    case TFM_OP_MUL: return mul[d];
    case TFM_OP_MAXIMUM: return max[d];
    case TFM_OP_MINIMUM: return min[d];
    case TFM_OP_SQUARED_DIFFERENCE: return sqdiff[d];
    case TFM_OP_RELU_GRAD: return relugrad[d];
    default: return NULL;
    }
}

#define ERR_TABLE(OPNAME) TFM_INT_TABLE(OPNAME)

/* Integer loops that can fail. */
static binary_err_fn
lookup_err(tfm_op op, tfm_dtype d)
{
    static const binary_err_fn floordiv[TFM_DTYPE_COUNT] =
        ERR_TABLE(floordiv);
    static const binary_err_fn floormod[TFM_DTYPE_COUNT] =
        ERR_TABLE(floormod);
    static const binary_err_fn truncdiv[TFM_DTYPE_COUNT] =
        ERR_TABLE(truncdiv);
    static const binary_err_fn truncmod[TFM_DTYPE_COUNT] =
        TFM_INT8_64_TABLE(truncmod);
    static const binary_err_fn pow[TFM_DTYPE_COUNT] = TFM_INT8_64_TABLE(pow);
    switch (op) {
    case TFM_OP_FLOORDIV: return floordiv[d];
    case TFM_OP_FLOORMOD: return floormod[d];
    case TFM_OP_TRUNCATEDIV: return truncdiv[d];
    case TFM_OP_TRUNCATEMOD: return truncmod[d];
    case TFM_OP_POW: return pow[d];
    default: return NULL;
    }
}

tfm_code
tfm_k_binary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout;
    if (tfm_dtype_is_complex(in[0]->dtype))
        return tfm_k_complex_ew(op, in, nin, a, out, nout, ctx);
    tfm_dtype d = in[0]->dtype;
    if (d == TFM_STRING && op == TFM_OP_ADD)
        return tfm_k_string_add(op, in, nin, a, out, nout, ctx);
    binary_fn f = lookup(op, d);
    binary_err_fn fe = f ? NULL : lookup_err(op, d);
    if (!f && !fe)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out[0]->shape, &p);
    if (p.n == 0)
        return TFM_OK;
    const void *x = tfm_tensor_data(in[0]), *y = tfm_tensor_data(in[1]);
    void *o = tfm_tensor_data(out[0]);
    if (f) {
        f(x, y, o, &p);
        return TFM_OK;
    }
    int err = fe(x, y, o, &p);
    if (err & TFM_EW_DIV_BY_ZERO)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: Integer division by zero", tfm_ops[op].name);
    if (err & TFM_EW_NEGATIVE_POWER)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: Integers to negative integer powers are not "
                         "allowed", tfm_ops[op].name);
    return TFM_OK;
}
